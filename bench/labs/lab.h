/*
 * lab.h - what the hand-built labs (bench/labs/quadlab.c, linelab.c,
 * homelab.c) share: their command line (T [ROUNDS] [CPU ...]), c11-twoline,
 * a timed team of pinned threads, and the interleaved rounds of every
 * variant, reported as min / median / max ns per phase.  Header-only;
 * include after common.h.
 */
#ifndef ABAR_BENCH_LAB_H
#define ABAR_BENCH_LAB_H

/* c11-twoline, the bare counter the labs measure against: the count and the
 * generation each where the caller puts them; the last of n arrivals stores
 * the count back and bumps the generation, the others poll it.  acq_rel:
 * the arrivals form a release sequence the last one acquires. */
static inline void lab_twoline(_Atomic uint32_t *count, _Atomic uint32_t *gen, uint32_t n)
{
    uint32_t g = atomic_load_explicit(gen, memory_order_relaxed);
    if (atomic_fetch_sub_explicit(count, 1, memory_order_acq_rel) == 1) {
        atomic_store_explicit(count, n, memory_order_relaxed);
        atomic_store_explicit(gen, g + 1, memory_order_release);
    } else {
        while (atomic_load_explicit(gen, memory_order_acquire) == g) cpu_relax();
    }
}

/* T, ROUNDS (default 7) and T CPUs (default 0 .. T-1) from argv; 0, or 2
 * after a usage line. */
static int lab_args(int argc, char **argv, const char *lab, unsigned tmax, unsigned *T, int *rounds,
                    int *cpus)
{
    *T = argc > 1 ? (unsigned)atoi(argv[1]) : 4;
    *rounds = argc > 2 ? atoi(argv[2]) : 7;
    if (*T < 2 || *T > tmax || *rounds < 1 || *rounds > 64) {
        fprintf(stderr, "usage: %s T(2..%u) [ROUNDS(1..64)] [CPU ...]\n", lab, tmax);
        return 2;
    }
    for (unsigned i = 0; i < *T; i++) cpus[i] = argc > 3 + (int)i ? atoi(argv[3 + i]) : (int)i;
    return 0;
}

/* n phases of step on T threads, thread i pinned to cpus[i] (this one is
 * thread 0); ns per phase, as thread 0 saw it. */
struct lab_team { unsigned tid; uint64_t n; void (*step)(unsigned tid); const int *cpus; pthread_barrier_t *start; };
static void *lab_member(void *arg)
{
    struct lab_team *m = arg;
    pin_cpu(m->cpus[m->tid]);
    pthread_barrier_wait(m->start);
    for (uint64_t i = 0; i < m->n; i++) m->step(m->tid);
    return NULL;
}
static double lab_time(unsigned T, const int *cpus, uint64_t n, void (*step)(unsigned tid))
{
    pthread_barrier_t start;
    pthread_t th[64];
    struct lab_team m[64];
    if (T > 64) abort();
    pthread_barrier_init(&start, NULL, T);
    for (unsigned i = 0; i < T; i++) m[i] = (struct lab_team){ i, n, step, cpus, &start };
    for (unsigned i = 1; i < T; i++) pthread_create(&th[i], NULL, lab_member, &m[i]);
    pin_cpu(cpus[0]);
    pthread_barrier_wait(&start);
    const uint64_t t0 = now_ns();
    for (uint64_t i = 0; i < n; i++) step(0);
    for (unsigned i = 1; i < T; i++) pthread_join(th[i], NULL);
    const uint64_t t1 = now_ns();
    pthread_barrier_destroy(&start);
    return (double)(t1 - t0) / (double)n;
}

/* A warm-up of every variant, then `rounds` rounds of 100000 phases, each
 * round every variant in turn; prints the table. */
static void lab_run(const char *lab, unsigned T, const int *cpus, int rounds, int nv, const char *const *names,
                    double (*measure)(int v, uint64_t n))
{
    double r[32][64];
    if (nv > 32) abort();
    for (int v = 0; v < nv; v++) measure(v, 20000);
    for (int k = 0; k < rounds; k++)
        for (int v = 0; v < nv; v++) r[v][k] = measure(v, 100000);
    printf("%s T=%u cpus", lab, T);
    for (unsigned i = 0; i < T; i++) printf("%c%d", i ? ',' : ' ', cpus[i]);
    printf(", %d interleaved rounds of 100000 phases: ns/phase min median max\n", rounds);
    for (int v = 0; v < nv; v++) {
        qsort(r[v], (size_t)rounds, sizeof(double), cmp_double);
        printf("  %-12s %7.1f %7.1f %7.1f\n", names[v], r[v][0], r[v][rounds / 2], r[v][rounds - 1]);
    }
}

#endif
