/* team_bench.c - teams and clusters: launch overhead and barrier latency.
 *
 *   launch   an empty abar_run of one team of P threads, against an empty
 *            `#pragma omp parallel num_threads(P)` region (when built with
 *            OpenMP: gcc -fopenmp for libgomp, clang -fopenmp=libomp for libomp)
 *   barrier  one phase of: a flat abar_t over the P threads of a launch
 *            (abar_arrive_and_wait), abar_team_sync over one team of P,
 *            abar_cluster_sync over 2 teams of P/2 and over
 *            teams of 8 (P rounded down to a multiple of 8, when that makes
 *            two teams or more; the flat barrier over the same threads
 *            beside it), and `#pragma omp barrier` over P OpenMP threads
 *   oversub  more threads than CPUs (n in the affinity mask), on the default
 *            pool (which grows to fit): abar_team_sync over a team of 2n,
 *            abar_cluster_sync over clusters of 4 teams of n (4n) and of 2n
 *            (8n), against `#pragma omp barrier` over as many OpenMP threads;
 *            each as wall time a phase (unit ns) and the process's CPU time
 *            a phase (unit cpu-ns: user + system, every thread)
 *
 * Each figure is measured in `rounds` rounds, interleaved between the
 * implementations (so a noisy neighbour hits them alike); a round is the mean
 * over its iterations; the row gives the median, min and max over rounds.
 * In a round the OpenMP rows come last and are followed by a pause of
 * OMP_SETTLE_MS: after a region an OpenMP runtime's threads spin before
 * they sleep (libomp for KMP_BLOCKTIME, 200 ms; libgomp for GOMP_SPINCOUNT),
 * and rows measured meanwhile would share every CPU with them.
 * Output: CSV rows (the format of bench/common/common.h):
 *   scenario,impl,threads,param,median,min,max,rounds,phases,unit,flags
 *
 * Usage: team-bench [threads] [rounds]   (default: the pool's size, 15; the
 * oversub rows take at most 5 rounds) */
#define _GNU_SOURCE
#include <abar_team.h>

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#ifndef OMP_IMPL_NAME
#define OMP_IMPL_NAME "omp"
#endif

enum { MAX_ROUNDS = 64, LAUNCHES = 4000, PHASES = 20000 };

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

struct series { const char *scenario, *impl; unsigned threads; const char *param; double v[MAX_ROUNDS]; int n; long iters; const char *unit; };

static void row(struct series *s)
{
    if (s->n == 0) return;
    double v[MAX_ROUNDS];
    memcpy(v, s->v, sizeof v);
    qsort(v, (size_t)s->n, sizeof v[0], cmp_d);
    printf("%s,%s,%u,%s,%.1f,%.1f,%.1f,%d,%ld,%s,\n", s->scenario, s->impl, s->threads, s->param,
           v[s->n / 2], v[0], v[s->n - 1], s->n, s->iters, s->unit ? s->unit : "ns");
    fflush(stdout);
}

static double median(const struct series *s)
{
    double v[MAX_ROUNDS];
    memcpy(v, s->v, sizeof v);
    qsort(v, (size_t)s->n, sizeof v[0], cmp_d);
    return v[s->n / 2];
}

/* ---- launch ------------------------------------------------------------------ */

static _Atomic unsigned sink;
static void empty_kernel(abar_thread_t *self, void *arg)
{
    (void)arg;
    /* relaxed: only keeps the kernel from being empty to the compiler */
    atomic_store_explicit(&sink, abar_thread_rank(self), memory_order_relaxed);
}

static double abar_launch_round(unsigned P)
{
    abar_launch_t cfg = { 1, P, 1, 0 };
    uint64_t t0 = now_ns();
    for (int i = 0; i < LAUNCHES; i++)
        if (abar_run(&cfg, empty_kernel, NULL) != 0) { fprintf(stderr, "abar_run failed\n"); exit(1); }
    return (double)(now_ns() - t0) / LAUNCHES;
}

#ifdef _OPENMP
enum { OMP_SETTLE_MS = 300 };

/* Lets the OpenMP runtime's threads stop spinning and sleep. */
static void settle(void)
{
    struct timespec d = { 0, OMP_SETTLE_MS * 1000000L };
    while (nanosleep(&d, &d) != 0) {}
}

static double omp_launch_round(unsigned P)
{
    uint64_t t0 = now_ns();
    for (int i = 0; i < LAUNCHES; i++) {
#pragma omp parallel num_threads(P)
        atomic_store_explicit(&sink, (unsigned)omp_get_thread_num(), memory_order_relaxed);
    }
    return (double)(now_ns() - t0) / LAUNCHES;
}

static double omp_barrier_round(unsigned P)
{
    uint64_t t0 = 0, t1 = 0;
#pragma omp parallel num_threads(P)
    {
#pragma omp barrier
#pragma omp master
        t0 = now_ns();
        for (int i = 0; i < PHASES; i++) {
#pragma omp barrier
        }
#pragma omp master
        t1 = now_ns();
    }
    return (double)(t1 - t0) / PHASES;
}
#endif

/* ---- barrier latency inside a launch -------------------------------------------- */

enum { FLAT, TEAM, CLUSTER, CLUSTER8 };
static abar_t flat;
static _Atomic uint64_t t_begin, t_end;

static void barrier_kernel(abar_thread_t *self, void *arg)
{
    int kind = *(int *)arg;
    int lead = abar_team_rank(self) == 0 && abar_thread_rank(self) == 0;
    /* warm up, and line everyone up before the clock starts */
    for (int i = 0; i < 100; i++) (void)abar_arrive_and_wait(&flat);
    if (lead) atomic_store_explicit(&t_begin, now_ns(), memory_order_relaxed);
    int r = 0;
    switch (kind) {
    case FLAT:
        for (int i = 0; i < PHASES; i++) r |= abar_arrive_and_wait(&flat);
        break;
    case TEAM:
        for (int i = 0; i < PHASES; i++) r |= abar_team_sync(self);
        break;
    case CLUSTER:
    case CLUSTER8:
        for (int i = 0; i < PHASES; i++) r |= abar_cluster_sync(self);
        break;
    }
    if (r) { fprintf(stderr, "barrier failed: %d\n", r); exit(1); }
    if (lead) atomic_store_explicit(&t_end, now_ns(), memory_order_relaxed);
}

static double barrier_round(unsigned P, int kind)
{
    abar_launch_t cfg = kind == CLUSTER    ? (abar_launch_t){ 2, P / 2, 2, 0 }
                        : kind == CLUSTER8 ? (abar_launch_t){ P / 8, 8, P / 8, 0 }
                                           : (abar_launch_t){ 1, P, 1, 0 };
    if (abar_init(&flat, P, NULL) != 0) exit(1);
    if (abar_run(&cfg, barrier_kernel, &kind) != 0) { fprintf(stderr, "abar_run failed\n"); exit(1); }
    (void)abar_destroy(&flat);
    /* the lead's last phase ends when every thread has passed it */
    return (double)(atomic_load(&t_end) - atomic_load(&t_begin)) / PHASES;
}

/* ---- oversubscribed: more threads than CPUs, the default pool ------------------- */

enum { OVER_PHASES = 2000 };

static uint64_t cpu_ns(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return ((uint64_t)u.ru_utime.tv_sec + (uint64_t)u.ru_stime.tv_sec) * 1000000000u +
           ((uint64_t)u.ru_utime.tv_usec + (uint64_t)u.ru_stime.tv_usec) * 1000u;
}

static void over_kernel(abar_thread_t *self, void *arg)
{
    int cluster = *(int *)arg, r = 0;
    for (int i = 0; i < OVER_PHASES; i++) r |= cluster ? abar_cluster_sync(self) : abar_team_sync(self);
    if (r) { fprintf(stderr, "barrier failed: %d\n", r); exit(1); }
}

/* One launch of one cluster of cs teams of ts (the launch's cost is in the
 * figure: a few microseconds against thousands of phases). */
static void abar_over_round(unsigned ts, unsigned cs, double *wall, double *cpu)
{
    abar_launch_t cfg = { cs, ts, cs, 0 };
    int cluster = cs > 1;
    uint64_t t0 = now_ns(), c0 = cpu_ns();
    if (abar_run(&cfg, over_kernel, &cluster) != 0) { fprintf(stderr, "abar_run failed\n"); exit(1); }
    *wall = (double)(now_ns() - t0) / OVER_PHASES;
    *cpu = (double)(cpu_ns() - c0) / OVER_PHASES;
}

#ifdef _OPENMP
static void omp_over_round(unsigned T, double *wall, double *cpu)
{
    uint64_t t0 = now_ns(), c0 = cpu_ns();
#pragma omp parallel num_threads(T)
    for (int i = 0; i < OVER_PHASES; i++) {
#pragma omp barrier
    }
    *wall = (double)(now_ns() - t0) / OVER_PHASES;
    *cpu = (double)(cpu_ns() - c0) / OVER_PHASES;
}
#endif

static void oversubscribed(int rounds)
{
    cpu_set_t set;
    unsigned n = sched_getaffinity(0, sizeof set, &set) == 0 ? (unsigned)CPU_COUNT(&set) : 1;
    if (abar_pool_configure(0, 0) != 0) exit(1); /* the default pool: it grows to each launch */
    static const struct { const char *param; unsigned ts_n, cs; } shape[] = {
        { "team-2x", 2, 1 }, { "cluster-4x", 1, 4 }, { "cluster-8x", 2, 4 },
    };
    enum { NS = sizeof shape / sizeof shape[0] };
    struct series aw[NS], ac[NS];
#ifdef _OPENMP
    struct series ow[NS], oc[NS];
#endif
    for (unsigned k = 0; k < NS; k++) {
        unsigned T = shape[k].ts_n * n * shape[k].cs;
        const char *impl = shape[k].cs > 1 ? "abar_cluster_sync" : "abar_team_sync";
        aw[k] = (struct series){ "oversub", impl, T, shape[k].param, { 0 }, 0, OVER_PHASES, "ns" };
        ac[k] = (struct series){ "oversub", impl, T, shape[k].param, { 0 }, 0, OVER_PHASES, "cpu-ns" };
#ifdef _OPENMP
        ow[k] = (struct series){ "oversub", OMP_IMPL_NAME, T, shape[k].param, { 0 }, 0, OVER_PHASES, "ns" };
        oc[k] = (struct series){ "oversub", OMP_IMPL_NAME, T, shape[k].param, { 0 }, 0, OVER_PHASES, "cpu-ns" };
#endif
        double w, c; /* warm-up: the pool grows, the OpenMP team starts */
        abar_over_round(shape[k].ts_n * n, shape[k].cs, &w, &c);
#ifdef _OPENMP
        omp_over_round(T, &w, &c);
#endif
    }
#ifdef _OPENMP
    settle();
#endif
    for (int r = 0; r < rounds; r++)
        for (unsigned k = 0; k < NS; k++) {
            abar_over_round(shape[k].ts_n * n, shape[k].cs, &aw[k].v[aw[k].n++], &ac[k].v[ac[k].n++]);
#ifdef _OPENMP
            omp_over_round(aw[k].threads, &ow[k].v[ow[k].n++], &oc[k].v[oc[k].n++]);
            settle();
#endif
        }
    for (unsigned k = 0; k < NS; k++) {
        row(&aw[k]);
        row(&ac[k]);
#ifdef _OPENMP
        row(&ow[k]);
        row(&oc[k]);
#endif
    }
    for (unsigned k = 0; k < NS; k++) {
        printf("# oversub %s: %u threads on %u CPUs, abar: %.1f us wall, %.1f us CPU a phase", shape[k].param,
               aw[k].threads, n, median(&aw[k]) / 1e3, median(&ac[k]) / 1e3);
#ifdef _OPENMP
        printf("; %s: %.1f us wall, %.1f us CPU", OMP_IMPL_NAME, median(&ow[k]) / 1e3, median(&oc[k]) / 1e3);
#endif
        printf("\n");
    }
}

int main(int argc, char **argv)
{
    unsigned P = argc > 1 ? (unsigned)atoi(argv[1]) : 0;
    int rounds = argc > 2 ? atoi(argv[2]) : 15;
    if (rounds < 1 || rounds > MAX_ROUNDS) rounds = 15;
    if (P == 0) P = abar_pool_threads();
    if (P > abar_pool_threads() && abar_pool_configure(P, 0) != 0) return 1;
    unsigned Pc = P & ~1u; /* the cluster rows need an even count */
    unsigned P8 = P & ~7u;  /* teams of 8: a multiple of 8 */
    const int same8 = P8 == 16 && Pc == 16; /* 2 teams of 8: the 2x row itself */

    struct series la = { "launch", "abar_run", P, "empty", { 0 }, 0, LAUNCHES, NULL };
    struct series bf = { "barrier", "abar-flat", P, "in-launch", { 0 }, 0, PHASES, NULL };
    struct series bt = { "barrier", "abar_team_sync", P, "1x", { 0 }, 0, PHASES, NULL };
    struct series bf2 = { "barrier", "abar-flat", Pc, "in-launch", { 0 }, 0, PHASES, NULL };
    struct series bc = { "barrier", "abar_cluster_sync", Pc, "2x", { 0 }, 0, PHASES, NULL };
    struct series bf8 = { "barrier", "abar-flat", P8, "in-launch", { 0 }, 0, PHASES, NULL };
    struct series b8 = { "barrier", "abar_cluster_sync", P8, "x8", { 0 }, 0, PHASES, NULL };
#ifdef _OPENMP
    struct series lo = { "launch", OMP_IMPL_NAME, P, "empty", { 0 }, 0, LAUNCHES, NULL };
    struct series bo = { "barrier", OMP_IMPL_NAME, P, "omp-barrier", { 0 }, 0, PHASES, NULL };
    (void)omp_launch_round(P); /* start the OpenMP team */
#endif
    (void)abar_launch_round(P); /* start the pool */
    char bc_param[32];
    snprintf(bc_param, sizeof bc_param, "2x%u", Pc / 2);
    bc.param = bc_param;
    char bt_param[32];
    snprintf(bt_param, sizeof bt_param, "1x%u", P);
    bt.param = bt_param;
    char b8_param[32];
    snprintf(b8_param, sizeof b8_param, "%ux8", P8 / 8);
    b8.param = b8_param;

    printf("scenario,impl,threads,param,median,min,max,rounds,phases,unit,flags\n");
#ifdef _OPENMP
    settle();
#endif
    for (int r = 0; r < rounds; r++) {
        la.v[la.n++] = abar_launch_round(P);
        bf.v[bf.n++] = barrier_round(P, FLAT);
        bt.v[bt.n++] = barrier_round(P, TEAM);
        if (Pc >= 2) {
            bf2.v[bf2.n++] = Pc == P ? bf.v[bf.n - 1] : barrier_round(Pc, FLAT);
            bc.v[bc.n++] = barrier_round(Pc, CLUSTER);
        }
        if (P8 >= 16 && !same8) {
            bf8.v[bf8.n++] = P8 == P ? bf.v[bf.n - 1] : P8 == Pc ? bf2.v[bf2.n - 1] : barrier_round(P8, FLAT);
            b8.v[b8.n++] = barrier_round(P8, CLUSTER8);
        }
#ifdef _OPENMP
        lo.v[lo.n++] = omp_launch_round(P);
        bo.v[bo.n++] = omp_barrier_round(P);
        settle();
#endif
    }
    row(&la);
#ifdef _OPENMP
    row(&lo);
#endif
    row(&bf);
    row(&bt);
#ifdef _OPENMP
    row(&bo);
#endif
    if (Pc >= 2 && Pc != P) row(&bf2);
    if (Pc >= 2) row(&bc);
    if (P8 >= 16 && P8 != P && P8 != Pc) row(&bf8);
    if (P8 >= 16 && !same8) row(&b8);
    /* the targets, as comments */
#ifdef _OPENMP
    printf("# launch: abar_run / %s parallel = %.2f (target <= 0.8)\n", OMP_IMPL_NAME,
           median(&la) / median(&lo));
#endif
    if (Pc >= 2)
        printf("# barrier: cluster_sync(2 teams) / flat = %.2f (target <= 1.3); team_sync / flat = %.2f\n",
               median(&bc) / median(&bf2), median(&bt) / median(&bf));
    if (P8 >= 16)
        printf("# barrier: cluster_sync(%u teams of 8) / flat = %.2f (target <= 1)\n", P8 / 8,
               same8 ? median(&bc) / median(&bf2) : median(&b8) / median(&bf8));
    oversubscribed(rounds < 5 ? rounds : 5);
    return 0;
}
