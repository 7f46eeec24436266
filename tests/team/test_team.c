/* test_team.c - abar_run: shapes, ranks, waves, co-residency, errors, the pool,
 * shared memory. */
#include "harness.h"
#include <abar_team.h>

#include "abar_internal.h"
#include "policy.h" /* abar__calm_until: whether a park-soon stretch is on */

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

/* ---- every (team, thread) runs once, with consistent ranks -------------------- */

enum { MAXT = 4096 };
static _Atomic int seen[MAXT];
static _Atomic int bad_rank;
static _Atomic int running, max_running;

struct shape { unsigned teams, ts, cs; };

static void record_kernel(abar_thread_t *self, void *arg)
{
    const struct shape *sh = arg;
    int now = atomic_fetch_add(&running, 1) + 1;
    int m = atomic_load(&max_running);
    while (now > m && !atomic_compare_exchange_weak(&max_running, &m, now)) {}
    unsigned tr = abar_team_rank(self), th = abar_thread_rank(self);
    if (abar_team_size(self) != sh->ts || abar_team_count(self) != sh->teams ||
        abar_cluster_size(self) != sh->cs || abar_cluster_count(self) != sh->teams / sh->cs ||
        th >= sh->ts || tr >= sh->teams ||
        abar_cluster_rank(self) != tr % sh->cs || abar_cluster_index(self) != tr / sh->cs)
        atomic_store(&bad_rank, 1);
    else
        atomic_fetch_add(&seen[tr * sh->ts + th], 1);
    atomic_fetch_sub(&running, 1);
}

static void run_shape(unsigned pool, unsigned teams, unsigned ts, unsigned cs)
{
    struct shape sh = { teams, ts, cs };
    CHECK_EQ(abar_pool_configure(pool, 0), 0);
    CHECK_EQ(abar_pool_threads(), pool);
    for (unsigned i = 0; i < MAXT; i++) atomic_store(&seen[i], 0);
    atomic_store(&max_running, 0);
    abar_launch_t cfg = { teams, ts, cs, 0 };
    CHECK_EQ(abar_run(&cfg, record_kernel, &sh), 0);
    CHECK_EQ(atomic_load(&bad_rank), 0);
    for (unsigned i = 0; i < teams * ts; i++) CHECK_EQ(atomic_load(&seen[i]), 1);
    CHECK(atomic_load(&max_running) <= (int)pool);
}

TEST(ranks_single_team) { run_shape(2, 1, 2, 1); }
TEST(ranks_many_teams) { run_shape(4, 12, 2, 1); }
TEST(ranks_clusters) { run_shape(6, 12, 2, 3); }
TEST(ranks_waves_one_slot) { run_shape(4, 40, 2, 2); }     /* 20 clusters, 1 at a time */
TEST(ranks_waves_pool_not_multiple) { run_shape(5, 30, 1, 2); } /* 2 slots, 1 idle worker */
TEST(ranks_one_thread) { run_shape(1, 7, 1, 1); }

/* ---- co-residency: a cluster's threads all run at once ----------------------------- */

static _Atomic int arrived_n;
static _Atomic int coresident_fail;

static void coresident_kernel(abar_thread_t *self, void *arg)
{
    (void)arg;
    int want = (int)(abar_team_size(self) * abar_cluster_size(self));
    /* Wait (bounded) until every thread of the cluster has started: only
     * possible if they all run at the same time. */
    atomic_fetch_add(&arrived_n, 1);
    double t0 = harness_now();
    while (atomic_load(&arrived_n) < want) {
        if (harness_now() - t0 > 5) { atomic_store(&coresident_fail, 1); return; }
        sched_yield();
    }
}

TEST(cluster_coresident)
{
    CHECK_EQ(abar_pool_configure(8, 0), 0);
    abar_launch_t cfg = { 2, 4, 2, 0 }; /* one cluster of 8 threads on a 2-core machine */
    CHECK_EQ(abar_run(&cfg, coresident_kernel, NULL), 0);
    CHECK_EQ(atomic_load(&arrived_n), 8);
    CHECK_EQ(atomic_load(&coresident_fail), 0);
}

/* ---- errors: nothing runs ------------------------------------------------------------ */

static _Atomic int ran;
static void count_kernel(abar_thread_t *self, void *arg) { (void)self; (void)arg; atomic_fetch_add(&ran, 1); }

static int try_run(unsigned teams, unsigned ts, unsigned cs, size_t shm)
{
    abar_launch_t cfg = { teams, ts, cs, shm };
    return abar_run(&cfg, count_kernel, NULL);
}

TEST(errors_run_nothing)
{
    CHECK_EQ(abar_pool_configure(4, 0), 0);
    CHECK_EQ(abar_run(NULL, count_kernel, NULL), EINVAL);
    abar_launch_t ok = { 1, 1, 1, 0 };
    CHECK_EQ(abar_run(&ok, NULL, NULL), EINVAL);
    CHECK_EQ(try_run(0, 1, 1, 0), EINVAL);
    CHECK_EQ(try_run(1, 0, 1, 0), EINVAL);
    CHECK_EQ(try_run(1, 1, 0, 0), EINVAL);
    CHECK_EQ(try_run(3, 1, 2, 0), EINVAL);           /* cluster_size does not divide teams */
    CHECK_EQ(try_run(2, 5, 1, 0), E2BIG);            /* a team larger than the configured pool (a cap) */
    CHECK_EQ(try_run(4, 2, 4, 0), E2BIG);            /* a cluster of 8 threads on a pool of 4 */
    CHECK_EQ(try_run(UINT_MAX, UINT_MAX, UINT_MAX, 0), E2BIG); /* no overflow */
    CHECK_EQ(try_run(1, 1, 1, SIZE_MAX), ENOMEM);
    CHECK_EQ(try_run(4, 1, 4, SIZE_MAX / 2), ENOMEM); /* stride * teams overflows */
    CHECK_EQ(try_run(2, 1, 1, (size_t)1 << 60), ENOMEM);
    CHECK_EQ(atomic_load(&ran), 0);
    CHECK_EQ(try_run(4, 2, 2, 64), 0);               /* and the pool still works */
    CHECK_EQ(atomic_load(&ran), 8);
}

/* ---- the pool ---------------------------------------------------------------------------- */

static pthread_t tids[64];
static _Atomic int ntids;
static void tid_kernel(abar_thread_t *self, void *arg)
{
    (void)arg;
    tids[abar_team_rank(self) * abar_team_size(self) + abar_thread_rank(self)] = pthread_self();
    atomic_fetch_add(&ntids, 1);
}

static int same_threads(const pthread_t *a, const pthread_t *b, int n)
{
    for (int i = 0; i < n; i++) {
        int found = 0;
        for (int j = 0; j < n; j++) found |= pthread_equal(a[i], b[j]);
        if (!found) return 0;
    }
    return 1;
}

TEST(pool_reused_between_launches)
{
    CHECK_EQ(abar_pool_configure(4, 0), 0);
    abar_launch_t cfg = { 1, 4, 1, 0 };
    pthread_t first[4];
    CHECK_EQ(abar_run(&cfg, tid_kernel, NULL), 0);
    memcpy(first, tids, sizeof first);
    for (int i = 0; i < 4; i++) /* distinct threads, the caller among them */
        for (int j = i + 1; j < 4; j++) CHECK(!pthread_equal(first[i], first[j]));
    int caller_in = 0;
    for (int i = 0; i < 4; i++) caller_in |= pthread_equal(first[i], pthread_self());
    CHECK(caller_in);
    for (int k = 0; k < 100; k++) {
        CHECK_EQ(abar_run(&cfg, tid_kernel, NULL), 0);
        CHECK(same_threads(first, tids, 4));
    }
    CHECK_EQ(atomic_load(&ntids), 4 * 101);
}

static long usable_cpus(void)
{
#if defined(_WIN32)
    DWORD_PTR proc, sys;
    CHECK(GetProcessAffinityMask(GetCurrentProcess(), &proc, &sys));
    return __builtin_popcountll(proc);
#else
    cpu_set_t set;
    CHECK_EQ(sched_getaffinity(0, sizeof set, &set), 0);
    return CPU_COUNT(&set);
#endif
}

TEST(pool_default_size_is_cpus)
{
    unsetenv("ABAR_POOL_THREADS");
    CHECK_EQ(abar_pool_threads(), usable_cpus());
}

TEST(pool_default_size_follows_affinity)
{
    unsetenv("ABAR_POOL_THREADS");
#if defined(_WIN32)
    DWORD_PTR proc, sys;
    CHECK(GetProcessAffinityMask(GetCurrentProcess(), &proc, &sys));
    CHECK(SetProcessAffinityMask(GetCurrentProcess(), proc & -proc)); /* its lowest CPU */
#else
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    CHECK_EQ(sched_setaffinity(0, sizeof one, &one), 0);
#endif
    CHECK_EQ(abar_pool_threads(), 1);
    abar_launch_t cfg = { 3, 1, 1, 0 };
    CHECK_EQ(abar_run(&cfg, count_kernel, NULL), 0);
    CHECK_EQ(atomic_load(&ran), 3);
}

TEST(pool_size_from_env)
{
    setenv("ABAR_POOL_THREADS", "3", 1);
    CHECK_EQ(abar_pool_threads(), 3);
    abar_launch_t cfg = { 1, 3, 1, 0 };
    CHECK_EQ(abar_run(&cfg, count_kernel, NULL), 0);
    CHECK_EQ(atomic_load(&ran), 3);
    cfg.team_size = 4; /* the environment sets a size, not a cap: the pool grows */
    CHECK_EQ(abar_run(&cfg, count_kernel, NULL), 0);
    CHECK_EQ(atomic_load(&ran), 3 + 4);
    CHECK_EQ(abar_pool_threads(), 4);
    setenv("ABAR_POOL_THREADS", "junk", 1); /* ignored: the default */
    CHECK_EQ(abar_pool_configure(0, 0), 0);
    CHECK_EQ(abar_pool_threads(), usable_cpus());
}

TEST(pool_configure_errors)
{
    CHECK_EQ(abar_pool_configure(0, 0x80), EINVAL);
    CHECK_EQ(abar_pool_configure(ABAR_POOL_THREADS_MAX + 1, 0), EINVAL);
    CHECK_EQ(abar_pool_configure(3, 0), 0);
    CHECK_EQ(abar_pool_threads(), 3);
}

TEST(pool_resize_and_shutdown)
{
    abar_launch_t cfg = { 2, 2, 1, 0 };
    CHECK_EQ(abar_pool_configure(2, 0), 0);
    CHECK_EQ(abar_run(&cfg, count_kernel, NULL), 0);
    CHECK_EQ(abar_pool_configure(6, 0), 0); /* joins the old pool, starts a new one */
    cfg.team_size = 6;
    CHECK_EQ(abar_run(&cfg, count_kernel, NULL), 0);
    CHECK_EQ(abar_pool_shutdown(), 0);
    CHECK_EQ(abar_pool_shutdown(), 0); /* idempotent */
    CHECK_EQ(abar_run(&cfg, count_kernel, NULL), 0);
    CHECK_EQ(atomic_load(&ran), 4 + 12 + 12);
    CHECK_EQ(abar_pool_shutdown(), 0);
}

static _Atomic int nested_r = -1, conf_r = -1, shut_r = -1, size_r = -1;
static void nested_kernel(abar_thread_t *self, void *arg)
{
    (void)arg;
    if (abar_thread_rank(self) != 0) return;
    abar_launch_t cfg = { 1, 1, 1, 0 };
    atomic_store(&nested_r, abar_run(&cfg, count_kernel, NULL));
    atomic_store(&conf_r, abar_pool_configure(1, 0));
    atomic_store(&shut_r, abar_pool_shutdown());
    atomic_store(&size_r, (int)abar_pool_threads()); /* allowed: no deadlock */
}

TEST(nested_calls_are_edeadlk)
{
    CHECK_EQ(abar_pool_configure(2, 0), 0);
    abar_launch_t cfg = { 1, 2, 1, 0 };
    CHECK_EQ(abar_run(&cfg, nested_kernel, NULL), 0);
    CHECK_EQ(atomic_load(&nested_r), EDEADLK);
    CHECK_EQ(atomic_load(&conf_r), EDEADLK);
    CHECK_EQ(atomic_load(&shut_r), EDEADLK);
    CHECK_EQ(atomic_load(&size_r), 2);
    CHECK_EQ(atomic_load(&ran), 0);
    CHECK_EQ(abar_pool_threads(), 2);
}

static void *launcher(void *arg)
{
    abar_launch_t cfg = { 4, 2, 2, 128 };
    for (int i = 0; i < 200; i++)
        if (abar_run(&cfg, count_kernel, NULL) != 0) *(int *)arg = 1;
    return NULL;
}

TEST(concurrent_launches_serialise)
{
    CHECK_EQ(abar_pool_configure(4, 0), 0);
    int err[3] = { 0 };
    pthread_t th[3];
    for (int i = 0; i < 3; i++) pthread_create(&th[i], NULL, launcher, &err[i]);
    for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < 3; i++) CHECK_EQ(err[i], 0);
    CHECK_EQ(atomic_load(&ran), 3 * 200 * 8);
}

#if defined(_WIN32)
TEST_NOT_HERE(fork_after_launch, "fork: Windows has none")
#else
TEST(fork_after_launch)
{
    /* qemu-user aborts in the child of a fork taken while other guest
     * threads exist (its own assertions: cpu == current_cpu); not abar's */
    SKIP_IF(harness_qemu_user(), "qemu-user cannot fork a threaded guest");
    CHECK_EQ(abar_pool_configure(2, 0), 0);
    abar_launch_t cfg = { 2, 2, 1, 0 };
    CHECK_EQ(abar_run(&cfg, count_kernel, NULL), 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) { /* a fresh pool in the child */
        int r = abar_run(&cfg, count_kernel, NULL);
        _exit(r == 0 && atomic_load(&ran) == 8 ? 0 : 1);
    }
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_EQ(abar_run(&cfg, count_kernel, NULL), 0);
    CHECK_EQ(atomic_load(&ran), 8);
}
#endif

/* ---- shared memory ------------------------------------------------------------------------- */

enum { SHM = 1000 };
static _Atomic int shm_fail;
static void shm_kernel(abar_thread_t *self, void *arg)
{
    (void)arg;
    unsigned char *m = abar_team_shared(self);
    unsigned team = abar_team_rank(self), ts = abar_team_size(self);
    if (m == NULL || (uintptr_t)m % ABAR_TEAM_SHARED_ALIGN != 0) { atomic_store(&shm_fail, 1); return; }
    for (unsigned i = abar_thread_rank(self); i < SHM; i += ts) m[i] = (unsigned char)(team * 31 + i);
    if (abar_cluster_sync(self) != 0) { atomic_store(&shm_fail, 2); return; }
    for (unsigned r = 0; r < abar_cluster_size(self); r++) {
        unsigned char *peer = abar_cluster_map_shared(self, m, r);
        unsigned pteam = team - abar_cluster_rank(self) + r;
        if (peer == NULL || (uintptr_t)peer % ABAR_TEAM_SHARED_ALIGN) { atomic_store(&shm_fail, 3); return; }
        if (r == abar_cluster_rank(self) && peer != m) atomic_store(&shm_fail, 4);
        if (abar_cluster_map_shared(self, m + SHM - 1, r) != peer + SHM - 1) atomic_store(&shm_fail, 5);
        for (unsigned i = abar_thread_rank(self); i < SHM; i += ts)
            if (peer[i] != (unsigned char)(pteam * 31 + i)) atomic_store(&shm_fail, 6);
    }
    errno = 0;
    if (abar_cluster_map_shared(self, m, abar_cluster_size(self)) != NULL || errno != EINVAL)
        atomic_store(&shm_fail, 7);
    if (abar_cluster_map_shared(self, m + SHM, 0) != NULL || abar_cluster_map_shared(self, m - 1, 0) != NULL ||
        abar_cluster_map_shared(self, &shm_fail, 0) != NULL)
        atomic_store(&shm_fail, 8);
    if (abar_cluster_sync(self) != 0) atomic_store(&shm_fail, 9); /* peers done reading */
}

TEST(shared_memory_per_team_and_mapped)
{
    CHECK_EQ(abar_pool_configure(6, 0), 0);
    abar_launch_t cfg = { 12, 2, 3, SHM };
    CHECK_EQ(abar_run(&cfg, shm_kernel, NULL), 0);
    CHECK_EQ(atomic_load(&shm_fail), 0);
}

static void noshm_kernel(abar_thread_t *self, void *arg)
{
    (void)arg;
    int x;
    if (abar_team_shared(self) != NULL || abar_cluster_map_shared(self, &x, 0) != NULL)
        atomic_store(&shm_fail, 1);
}

TEST(no_shared_memory)
{
    CHECK_EQ(abar_pool_configure(2, 0), 0);
    abar_launch_t cfg = { 2, 1, 2, 0 };
    CHECK_EQ(abar_run(&cfg, noshm_kernel, NULL), 0);
    CHECK_EQ(atomic_load(&shm_fail), 0);
}

TEST(inspectors_outside_a_kernel)
{
    CHECK_EQ(abar_thread_rank(NULL), 0);
    CHECK_EQ(abar_team_size(NULL), 0);
    CHECK_EQ(abar_team_rank(NULL), 0);
    CHECK_EQ(abar_team_count(NULL), 0);
    CHECK_EQ(abar_cluster_rank(NULL), 0);
    CHECK_EQ(abar_cluster_size(NULL), 0);
    CHECK_EQ(abar_cluster_index(NULL), 0);
    CHECK_EQ(abar_cluster_count(NULL), 0);
    CHECK(abar_team_shared(NULL) == NULL);
    CHECK(abar_cluster_map_shared(NULL, "", 0) == NULL);
    CHECK_EQ(abar_aborted(NULL), 0);
}

/* ---- the launch's join stays out of the core's wait policy ---------------------------- */

/* Thread 1 works 3 ms, thread 0 none: the caller waits the whole 3 ms for
 * the join, parks after its spin, and is released milliseconds later.  Had
 * that wait been heard, each launch would be a stall sign (policy.c), and
 * three in a row start a park-soon stretch for every barrier of the
 * process.  Nothing else in these launches waits on a core barrier. */
static void uneven_kernel(abar_thread_t *self, void *arg)
{
    (void)arg;
    if (abar_thread_rank(self) != 1) return;
    double t0 = harness_now();
    while (harness_now() - t0 < 3e-3) {}
}

TEST(uneven_launches_start_no_park_soon_stretch)
{
    CHECK_EQ(abar_pool_configure(2, 0), 0);
    abar_launch_t cfg = { 1, 2, 1, 0 };
    for (int i = 0; i < 8; i++) CHECK_EQ(abar_run(&cfg, uneven_kernel, NULL), 0);
    CHECK_EQ(atomic_load(&abar__calm_until), 0);
}

/* ---- nothing leaks: launches, aborts, pools come and go -------------------------------- */

#if defined(_WIN32)
TEST_NOT_HERE(nothing_leaks, "counts the heap with glibc's mallinfo2")
#else
#include <malloc.h>
int __lsan_do_recoverable_leak_check(void) __attribute__((weak));

static void abort_kernel(abar_thread_t *self, void *arg)
{
    (void)arg;
    if (abar_team_rank(self) == 1) (void)abar_abort(self, 5);
    else (void)abar_cluster_sync(self);
}

static void pool_cycle(void)
{
    CHECK_EQ(abar_pool_configure(4, 0), 0);
    abar_launch_t cfg = { 8, 2, 2, SHM };
    CHECK_EQ(abar_run(&cfg, shm_kernel, NULL), 0);
    CHECK_EQ(abar_run(&cfg, abort_kernel, NULL), 5);
    CHECK_EQ(abar_run(&cfg, count_kernel, NULL), 0);
    CHECK_EQ(abar_pool_shutdown(), 0);
}

TEST(nothing_leaks)
{
    /* warm up: libc keeps some memory per thread it has seen (stacks, TLS,
     * arenas); it stops growing within a few cycles, but on a loaded machine
     * it may still take a step later (seen in CI, about one run in ten:
     * +80 bytes or +4.7 KB in one window, with or without arrival trees).
     * A leak of the pools grows in every window of 15 cycles; so one window
     * of the four that does not grow at all passes, four that grow fail. */
    for (int i = 0; i < 15; i++) pool_cycle();
    int still = 0;
    for (int w = 0; w < 4 && !still; w++) {
        struct mallinfo2 a = mallinfo2();
        for (int i = 0; i < 15; i++) pool_cycle();
        struct mallinfo2 b = mallinfo2();
        still = b.uordblks == a.uordblks;
        if (!still) fprintf(stderr, "  window %d: %zu bytes more in use\n", w, b.uordblks - a.uordblks);
    }
    CHECK(still); /* every byte the pools took was given back */
    if (__lsan_do_recoverable_leak_check) CHECK_EQ(__lsan_do_recoverable_leak_check(), 0);
    CHECK_EQ(atomic_load(&shm_fail), 0);
}
#endif

/* The ENOMEM cases ask for impossible sizes: under ASan, return NULL as libc does. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }
/* ...and under TSan, which also must let fork_after_launch fork a process
 * that has pool threads. */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void) { return "allocator_may_return_null=1 die_after_fork=0"; }

int main(int argc, char **argv) { return harness_main(argc, argv); }
