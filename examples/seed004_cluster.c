/* seed004_cluster.c - seed 004's cluster_kernel, line for line, on CPU threads.
 *
 * Each team initialises its shared memory, arrives on the cluster barrier,
 * does local work to hide the latency, maps the next team's shared memory,
 * waits, then reads every element of the peer's data and checks it.  The
 * final cluster sync keeps each team's shared memory alive until its peer
 * has read it.  Exits 1 if any element is wrong or any call fails. */
#include <abar_team.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

enum { TEAMS = 8, TEAM_SIZE = 2, CLUSTER_SIZE = 2, N = 1024, ROUNDS = 50 };

static _Atomic long bad;      /* wrong elements seen */
static _Atomic long checked;  /* elements checked */
static _Atomic long failures; /* calls that returned an error */
static unsigned round_no;     /* changes the data every launch */

static int value(unsigned team, unsigned i) { return (int)(team * 100003u + i * 7u + round_no); }

/* Use this team to initialise some shared state. */
static void init_shared_data(const abar_thread_t *block, int *data)
{
    for (unsigned i = abar_thread_rank(block); i < N; i += abar_team_size(block))
        data[i] = value(abar_team_rank(block), i);
}

/* Some local processing to hide the synchronisation latency. */
static void local_processing(const abar_thread_t *block)
{
    volatile unsigned x = abar_thread_rank(block);
    for (int i = 0; i < 1000; i++) x = x * 1664525u + 1013904223u;
}

/* Consume the data in distributed shared memory: every element this thread
 * reads must be what the peer team wrote. */
static void process_shared_data(const abar_thread_t *block, const int *data)
{
    unsigned peer = abar_team_rank(block) - abar_cluster_rank(block) +
                    (abar_cluster_rank(block) + 1) % abar_cluster_size(block);
    for (unsigned i = abar_thread_rank(block); i < N; i += abar_team_size(block)) {
        if (data[i] != value(peer, i)) {
            if (atomic_fetch_add(&bad, 1) < 5)
                fprintf(stderr, "team %u: peer %u element %u is %d, expected %d\n",
                        abar_team_rank(block), peer, i, data[i], value(peer, i));
        }
        atomic_fetch_add_explicit(&checked, 1, memory_order_relaxed);
    }
}

static void cluster_kernel(abar_thread_t *self, void *arg)
{
    (void)arg;
    int *array = abar_team_shared(self);   /* extern __shared__ int array[]; */
    unsigned block_rank = abar_cluster_rank(self), num_blocks = abar_cluster_size(self);

    /* Use this thread block to initialize some shared state */
    init_shared_data(self, &array[0]);

    /* Let other blocks know this block is running and data was initialized */
    abar_token_t token = abar_cluster_arrive(self);

    /* Do some local processing to hide the synchronization latency */
    local_processing(self);

    /* Map data in shared memory from the next block in the cluster */
    int *dsmem = abar_cluster_map_shared(self, &array[0], (block_rank + 1) % num_blocks);

    /* Make sure all other blocks in the cluster are running and initialized shared data before accessing dsmem */
    if (abar_cluster_wait(self, token) != 0 || dsmem == NULL) {
        atomic_fetch_add(&failures, 1);
        return;
    }

    /* Consume data in distributed shared memory */
    process_shared_data(self, dsmem);
    if (abar_cluster_sync(self) != 0) atomic_fetch_add(&failures, 1);
}

int main(void)
{
    if (abar_pool_threads() < TEAM_SIZE * CLUSTER_SIZE &&
        abar_pool_configure(TEAM_SIZE * CLUSTER_SIZE, 0) != 0)
        return 1;
    abar_launch_t cfg = { .teams = TEAMS, .team_size = TEAM_SIZE,
                          .cluster_size = CLUSTER_SIZE, .shared_bytes = N * sizeof(int) };
    for (round_no = 0; round_no < ROUNDS; round_no++) {
        int r = abar_run(&cfg, cluster_kernel, NULL);
        if (r != 0) {
            fprintf(stderr, "abar_run: error %d\n", r);
            return 1;
        }
    }
    long want = (long)ROUNDS * TEAMS * N;
    printf("seed004_cluster: %ld elements checked (%ld expected), %ld wrong, %ld failed calls\n",
           atomic_load(&checked), want, atomic_load(&bad), atomic_load(&failures));
    return atomic_load(&bad) == 0 && atomic_load(&failures) == 0 && atomic_load(&checked) == want ? 0 : 1;
}
