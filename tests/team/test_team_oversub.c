/* test_team_oversub.c - launches larger than the machine, on the default
 * pool: the pool grows to the largest cluster a launch needs, the launch's
 * barriers park instead of spinning, every phase is right; a size given to
 * abar_pool_configure stays a hard cap.  Sizes are multiples of the CPUs in
 * the affinity mask: a team of 2x, clusters of 4x and 8x. */
#include "harness.h"
#include "team_internal.h"
#include <abar_team.h>

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/resource.h>

static unsigned cpus(void)
{
    cpu_set_t set;
    CHECK_EQ(sched_getaffinity(0, sizeof set, &set), 0);
    return (unsigned)CPU_COUNT(&set);
}

static void default_pool(void)
{
    unsetenv("ABAR_POOL_THREADS");
    CHECK_EQ(abar_pool_configure(0, 0), 0);
}

struct job {
    unsigned phases;
    bool cluster;              /* the cluster barrier (else the team's) */
    _Atomic int bad;           /* a phase saw a wrong count */
    _Atomic int spinning;      /* a thread found its launch's barriers not parking */
    _Atomic unsigned ran;      /* threads that finished */
};

/* Each phase: every thread adds 1 to a counter in the shared memory of its
 * cluster's first team (or its own team's), syncs, checks the total, syncs. */
static void count_kernel(abar_thread_t *self, void *arg)
{
    struct job *j = arg;
    _Atomic uint64_t *mine = abar_team_shared(self);
    _Atomic uint64_t *c = j->cluster ? abar_cluster_map_shared(self, mine, 0) : mine;
    uint64_t group = j->cluster ? (uint64_t)abar_team_size(self) * abar_cluster_size(self)
                                : abar_team_size(self);
    if (!(self->L->wait_flags & ABAR_WAIT_PARK)) atomic_store(&j->spinning, 1);
    if (abar_thread_rank(self) == 0) atomic_store(mine, 0);
    int (*sync)(abar_thread_t *) = j->cluster ? abar_cluster_sync : abar_team_sync;
    if (sync(self) != 0) atomic_store(&j->bad, 1);
    for (unsigned p = 0; p < j->phases; p++) {
        atomic_fetch_add(c, 1);
        if (p % 2) {
            /* split arrive/wait on odd phases */
            abar_token_t t = j->cluster ? abar_cluster_arrive(self) : abar_team_arrive(self);
            if ((j->cluster ? abar_cluster_wait(self, t) : abar_team_wait(self, t)) != 0)
                atomic_store(&j->bad, 1);
        } else if (sync(self) != 0) {
            atomic_store(&j->bad, 1);
        }
        if (atomic_load(c) != (p + 1) * group) atomic_store(&j->bad, 1);
        if (sync(self) != 0) atomic_store(&j->bad, 1);
    }
    atomic_fetch_add(&j->ran, 1);
}

static double cpu_s(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + (double)u.ru_stime.tv_sec +
           ((double)u.ru_utime.tv_usec + (double)u.ru_stime.tv_usec) * 1e-6;
}

static double wall_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Runs teams x team_size in clusters of cs on the default pool; the pool
 * must grow to team_size * cs. */
static void oversubscribed(const char *what, unsigned teams, unsigned ts, unsigned cs, bool cluster)
{
    default_pool();
    struct job j = { .phases = 200, .cluster = cluster };
    abar_launch_t cfg = { teams, ts, cs, 64 };
    double w0 = wall_s(), c0 = cpu_s();
    CHECK_EQ(abar_run(&cfg, count_kernel, &j), 0);
    double w = wall_s() - w0, c = cpu_s() - c0;
    /* Two syncs a phase, every wave; the figures go to the log (team_bench
     * measures them properly). */
    unsigned phases = 2 * j.phases * (teams / cs);
    printf("    %s: %u threads a cluster on %u CPUs: %.1f us wall, %.1f us CPU a phase\n", what, ts * cs,
           cpus(), w / phases * 1e6, c / phases * 1e6);
    fflush(stdout);
    CHECK_EQ(atomic_load(&j.ran), teams * ts);
    CHECK_EQ(atomic_load(&j.bad), 0);
    CHECK_EQ(atomic_load(&j.spinning), 0);
    CHECK(abar_pool_threads() >= ts * cs);
}

TEST(team_of_2x_cpus)
{
    unsigned n = cpus();
    oversubscribed("team 2x", 3, 2 * n, 1, false);
    CHECK_EQ(abar_pool_threads(), 2 * n);
}

TEST(cluster_of_4x_cpus)
{
    unsigned n = cpus();
    oversubscribed("cluster 4x", 8, n, 4, true);
    CHECK_EQ(abar_pool_threads(), 4 * n);
}

TEST(cluster_of_8x_cpus)
{
    unsigned n = cpus();
    oversubscribed("cluster 8x", 8, 2 * n, 4, true);
    CHECK_EQ(abar_pool_threads(), 8 * n);
}

TEST(pool_grows_only)
{
    unsigned n = cpus();
    default_pool();
    CHECK_EQ(abar_pool_threads(), n);
    struct job j = { .phases = 10 };
    abar_launch_t big = { 1, 2 * n, 1, 64 }, small = { 4, 1, 1, 64 };
    CHECK_EQ(abar_run(&big, count_kernel, &j), 0);
    CHECK_EQ(abar_pool_threads(), 2 * n);
    atomic_store(&j.ran, 0);
    CHECK_EQ(abar_run(&small, count_kernel, &j), 0); /* the grown pool runs small launches */
    CHECK_EQ(atomic_load(&j.ran), 4);
    CHECK_EQ(abar_pool_threads(), 2 * n);
    CHECK_EQ(atomic_load(&j.bad), 0);
    CHECK_EQ(abar_pool_shutdown(), 0); /* and the next pool starts at the default size */
    CHECK_EQ(abar_pool_threads(), n);
}

TEST(pool_within_cpus_spins)
{
    /* A launch that fits the CPUs keeps the barriers' default policy. */
    default_pool();
    struct job j = { .phases = 10 };
    abar_launch_t cfg = { 2, 1, 1, 64 };
    CHECK_EQ(abar_run(&cfg, count_kernel, &j), 0);
    CHECK_EQ(atomic_load(&j.ran), 2);
    CHECK_EQ(atomic_load(&j.spinning), 2 <= cpus() ? 1 : 0);
}

TEST(configured_size_is_a_hard_cap)
{
    unsigned n = cpus();
    CHECK_EQ(abar_pool_configure(n, 0), 0);
    struct job j = { .phases = 1 };
    abar_launch_t team = { 1, n + 1, 1, 64 }, cluster = { 2, n, 2, 64 };
    CHECK_EQ(abar_run(&team, count_kernel, &j), E2BIG);
    CHECK_EQ(abar_run(&cluster, count_kernel, &j), E2BIG);
    CHECK_EQ(atomic_load(&j.ran), 0);
    CHECK_EQ(abar_pool_threads(), n);
    /* A configured size above the CPUs is oversubscribed too, and parks. */
    CHECK_EQ(abar_pool_configure(2 * n, 0), 0);
    CHECK_EQ(abar_run(&team, count_kernel, &j), 0);
    CHECK_EQ(atomic_load(&j.ran), n + 1);
    CHECK_EQ(atomic_load(&j.spinning), 0);
    CHECK_EQ(atomic_load(&j.bad), 0);
    default_pool(); /* and without a size, the launch runs */
    atomic_store(&j.ran, 0);
    CHECK_EQ(abar_run(&cluster, count_kernel, &j), 0);
    CHECK_EQ(atomic_load(&j.ran), 2 * n);
}

TEST(above_the_maximum_is_e2big)
{
    default_pool();
    struct job j = { .phases = 1 };
    abar_launch_t cfg = { 2, ABAR_POOL_THREADS_MAX / 2 + 1, 2, 0 };
    CHECK_EQ(abar_run(&cfg, count_kernel, &j), E2BIG);
    CHECK_EQ(atomic_load(&j.ran), 0);
    CHECK_EQ(abar_pool_threads(), cpus()); /* no pool grew */
}

int main(int argc, char **argv) { return harness_main(argc, argv); }
