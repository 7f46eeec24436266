/*
 * bench_mpi.c - latency per phase of abar_mpi against MPI_Barrier and
 * MPI_Ibarrier + MPI_Wait, hierarchical mode, and the overlap of a phase with
 * W microseconds of computation between arrive and wait.
 *
 *   mpiexec -n 2 ./abar_mpi_bench [--quick] [--iters N] [--reps R] [--threads T] [--fresh-threads]
 *                                 [--settle S]
 *
 * Every measurement is repeated R times, interleaved with the others so a
 * noisy moment hits them all; the median of the R runs is reported (the slowest
 * rank's time each run).  Rows are machine-readable:
 *   lat  <name> <ranks> <threads/rank> <us per phase> <ratio to MPI_Barrier>
 *   ovl  <name> <ranks> <W us> <us per iteration> <exposed us> <hidden %>
 *        <hidden vs MPI_Barrier %> <work us>
 *   sched <name> <ranks> <threads/rank> <us per phase> <voluntary switches>
 *        <involuntary switches> <CPU changes>, per phase, summed over every
 *        thread of every rank (the hierarchical row run once more), then
 *        the CPUs the threads ended on and the most threads on one of them
 * hidden % = 100 * (1 - exposed / L), exposed = iteration - work, L = the
 * method's own latency per phase with no work; hidden_vs_barrier uses
 * MPI_Barrier's latency for L.  The work is W us of dependent multiplies
 * (work_us: no clock read inside it), and `work` is what the same loop of
 * work alone took, measured between the runs of each row (as OSU's
 * overlap benchmarks measure their compute time).  --threads T: threads per rank of the
 * hierarchical rows (default 2), created once and kept for all their runs;
 * --fresh-threads creates them anew for every run instead.  --settle S: the
 * kept team's latency and sched runs first run S phases untimed (the
 * scheduler needs some 0.2 s to spread unbound threads over the CPUs of an
 * oversubscribed node: docs/mpi.md).  The p2p,test row does its W in 1 us slices
 * with an abar_mpi_test between them (progress driven by the caller).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getcpu, RUSAGE_THREAD */
#endif
#include <abar_mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static int rank, size, iters = 20000, reps = 7;
static int split;                /* measure(): time arrive and wait separately */
static double t_arrive, t_wait;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The computation between arrive and wait: a chain of dependent multiplies,
 * loops_per_us of them a microsecond (calibrate()).  It reads no clock: on
 * the 16-core device host a clock_gettime takes 40-odd ns, and a work loop
 * that ends on a clock read overshoots W by about that much, which an
 * overlap figure would count as barrier time left exposed. */
static double loops_per_us;
/* each thread's own (the hierarchical rows run work_us on several threads:
 * one shared word would be a data race, and a line they pass around) */
static _Thread_local volatile uint64_t sink;
static void work_us(double us)
{
    const uint64_t n = (uint64_t)(us * loops_per_us + 0.5);
    uint64_t x = n;
    for (uint64_t i = 0; i < n; i++) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        __asm__ volatile("" : "+r"(x)); /* one dependent step per loop, not folded */
    }
    sink = x;
}

/* loops_per_us, from the fastest of 7 runs of 100,000 loops; and the cost
 * of one clock read (printed: the cpu rows subtract it). */
static double clock_ns;
static void calibrate(void)
{
    loops_per_us = 1;
    double best = 1e9;
    for (int i = 0; i < 7; i++) {
        double t0 = now();
        work_us(100000);
        double dt = now() - t0;
        if (dt < best) best = dt;
    }
    loops_per_us = 100000 / (best * 1e6);
    double t0 = now();
    for (int i = 0; i < 100000; i++) (void)now();
    clock_ns = (now() - t0) / 100000 * 1e9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return v[n / 2];
}

/* ---- the methods: each runs `n` phases with `w` us of work between arrive and wait */

enum { M_BARRIER, M_IBARRIER, M_ABAR, M_ABAR_P2P, M_ABAR_IBAR, M_ABAR_COMPL, M_ABAR_COMPL_P2P,
       M_ABAR_PROG, M_HIER, M_HIER_P2P, M_ABAR_TEST, M_ABAR_PROG_SHM, M_COUNT };
static const char *mname[M_COUNT] = { "MPI_Barrier", "MPI_Ibarrier+MPI_Wait", "abar_mpi(shm)",
                                      "abar_mpi(p2p)", "abar_mpi(IBARRIER)", "abar_mpi(shm,compl)",
                                      "abar_mpi(p2p,compl)", "abar_mpi(p2p,progress)",
                                      "abar_mpi(shm,hier)", "abar_mpi(p2p,hier)", "abar_mpi(p2p,test)",
                                      "abar_mpi(shm,progress)" };
static int nthreads[M_COUNT] = { 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 1, 1 };
static abar_mpi_t bars[M_COUNT];
static uint64_t result;
static void on_complete(void *arg) { (*(uint64_t *)arg)++; }

/* A run of n phases of method m with w us of work, the first `skip` of them
 * untimed (--settle); `lead`: the thread that notes when the timed ones begin. */
struct hier_arg { int n, m; double w; int skip, lead; };
static int settle;        /* --settle N: untimed phases before a kept team's latency runs */
static double t_settled;  /* when the lead thread began the timed phases */
/* Where a hierarchical phase's time goes when threads outnumber CPUs
 * (the `sched` rows): with `sched_diag` set, each thread of a run counts
 * its context switches (getrusage: voluntary, as a yield or a sleep that
 * gave the CPU away, and involuntary, preempted) and how often it found
 * itself on another CPU than at its last phase (sched_getcpu). */
static int sched_diag;
static _Atomic long d_vol, d_invol, d_moves;
static _Atomic int d_cpus[1024]; /* threads of this rank on each CPU at the end */
static void *hier_thread(void *p)
{
    struct hier_arg *h = p;
    struct rusage r0, r1;
    int cpu = 0;
    long moves = 0;
    for (int i = 0; i < h->n; i++) {
        if (i == h->skip) { /* the timed phases begin */
            if (h->lead) t_settled = now();
            if (sched_diag) {
                getrusage(RUSAGE_THREAD, &r0);
                cpu = sched_getcpu();
            }
        }
        abar_token_t t = abar_mpi_arrive(&bars[h->m]);
        if (h->w > 0) work_us(h->w);
        int r = abar_mpi_wait(&bars[h->m], t);
        if (r != 0) {
            fprintf(stderr, "rank %d: hierarchical wait: %s (arrive: %d)\n", rank, strerror(r), abar_token_error(t));
            MPI_Abort(MPI_COMM_WORLD, 5);
        }
        if (sched_diag && i >= h->skip) {
            const int c = sched_getcpu();
            moves += c != cpu;
            cpu = c;
        }
    }
    if (sched_diag) {
        getrusage(RUSAGE_THREAD, &r1);
        atomic_fetch_add(&d_vol, r1.ru_nvcsw - r0.ru_nvcsw);
        atomic_fetch_add(&d_invol, r1.ru_nivcsw - r0.ru_nivcsw);
        atomic_fetch_add(&d_moves, moves);
        if (cpu >= 0 && cpu < 1024) atomic_fetch_add(&d_cpus[cpu], 1);
    }
    return NULL;
}

/* The hierarchical rows' other threads: created once per rank and kept for
 * every run of those rows, as an application keeps its team.  A run of 2000
 * phases lasts about 16 ms; threads created anew for each run (--fresh-threads)
 * measure how the scheduler first places them, and unbound on an
 * oversubscribed node it took it 0.2 s and more to spread them over the CPUs
 * (docs/mpi.md).  Between runs they sleep on a condition variable. */
static int fresh_threads;
static struct {
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    unsigned gen, busy;
    int stop, n;
    struct hier_arg h;
    pthread_t th[64];
} crew = { .mu = PTHREAD_MUTEX_INITIALIZER, .go = PTHREAD_COND_INITIALIZER, .done = PTHREAD_COND_INITIALIZER };

static void *crew_thread(void *unused)
{
    (void)unused;
    unsigned seen = 0;
    pthread_mutex_lock(&crew.mu);
    for (;;) {
        while (crew.gen == seen && !crew.stop) pthread_cond_wait(&crew.go, &crew.mu);
        if (crew.stop) break;
        seen = crew.gen;
        struct hier_arg h = crew.h;
        pthread_mutex_unlock(&crew.mu);
        hier_thread(&h);
        pthread_mutex_lock(&crew.mu);
        if (--crew.busy == 0) pthread_cond_signal(&crew.done);
    }
    pthread_mutex_unlock(&crew.mu);
    return NULL;
}
static void crew_start(int n)
{
    crew.n = n;
    for (int k = 0; k < n; k++)
        if (pthread_create(&crew.th[k], NULL, crew_thread, NULL) != 0) MPI_Abort(MPI_COMM_WORLD, 7);
}
/* One run: every crew thread and this one run h's phases. */
static void crew_run(struct hier_arg h)
{
    pthread_mutex_lock(&crew.mu);
    crew.h = h;
    crew.h.lead = 0;
    crew.busy = (unsigned)crew.n;
    crew.gen++;
    pthread_cond_broadcast(&crew.go);
    pthread_mutex_unlock(&crew.mu);
    hier_thread(&h);
    pthread_mutex_lock(&crew.mu);
    while (crew.busy) pthread_cond_wait(&crew.done, &crew.mu);
    pthread_mutex_unlock(&crew.mu);
}
static void crew_stop(void)
{
    pthread_mutex_lock(&crew.mu);
    crew.stop = 1;
    pthread_cond_broadcast(&crew.go);
    pthread_mutex_unlock(&crew.mu);
    for (int k = 0; k < crew.n; k++) pthread_join(crew.th[k], NULL);
}

/* Seconds for n runs of the work alone (the slowest rank's). */
static double measure_work(int n, double w)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now();
    for (int i = 0; i < n; i++) work_us(w);
    double dt = now() - t0, worst;
    MPI_Allreduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return worst;
}

/* Seconds for n phases (the slowest rank's). */
static double measure(int m, int n, double w)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now();
    switch (m) {
    case M_BARRIER:
        for (int i = 0; i < n; i++) {
            if (w > 0) work_us(w);
            MPI_Barrier(MPI_COMM_WORLD);
        }
        break;
    case M_IBARRIER:
        for (int i = 0; i < n; i++) {
            MPI_Request q;
            MPI_Ibarrier(MPI_COMM_WORLD, &q);
            if (w > 0) work_us(w);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
        }
        break;
    case M_HIER:
    case M_HIER_P2P: {
        /* the latency and sched rows of a kept team first run `settle`
         * untimed phases (docs/mpi.md) */
        const int skip = settle && w == 0 && !fresh_threads ? settle : 0;
        struct hier_arg h = { n + skip, m, w, skip, 1 };
        if (fresh_threads) {
            pthread_t th[64];
            struct hier_arg other = h;
            other.lead = 0;
            for (int k = 1; k < nthreads[m]; k++) pthread_create(&th[k], NULL, hier_thread, &other);
            hier_thread(&h);
            for (int k = 1; k < nthreads[m]; k++) pthread_join(th[k], NULL);
        } else {
            crew_run(h);
        }
        if (skip) t0 = t_settled;
        break;
    }
    case M_ABAR_TEST:
        for (int i = 0; i < n; i++) {
            abar_token_t t = abar_mpi_arrive(&bars[m]);
            for (double done = 0; done < w; done += 1.0) {
                work_us(w - done < 1.0 ? w - done : 1.0);
                (void)abar_mpi_test(&bars[m], t);
            }
            if (abar_mpi_wait(&bars[m], t) != 0) MPI_Abort(MPI_COMM_WORLD, 6);
        }
        break;
    default:
        for (int i = 0; i < n; i++) {
            double a0 = split ? now() : 0;
            abar_token_t t = abar_mpi_arrive(&bars[m]);
            double a1 = split ? now() : 0;
            if (w > 0) work_us(w);
            double w0 = split ? now() : 0;
            if (abar_mpi_wait(&bars[m], t) != 0) MPI_Abort(MPI_COMM_WORLD, 6);
            if (split) {
                t_arrive += a1 - a0;
                t_wait += now() - w0;
            }
        }
    }
    double dt = now() - t0, worst;
    MPI_Allreduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return worst;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) { iters = 200; reps = 1; }
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
            reps = atoi(argv[++i]);
            reps = reps < 1 ? 1 : reps > 64 ? 64 : reps;
        }
        else if (!strcmp(argv[i], "--fresh-threads")) fresh_threads = 1;
        else if (!strcmp(argv[i], "--settle") && i + 1 < argc) settle = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            int t = atoi(argv[++i]);
            nthreads[M_HIER] = nthreads[M_HIER_P2P] = t < 2 ? 2 : t > 64 ? 64 : t;
        }
    }
    if (provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0) fprintf(stderr, "needs MPI_THREAD_MULTIPLE\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    calibrate();
    /* How MPI groups the ranks into nodes: abar_mpi's default engine is
     * shared memory only where every rank shares one (engine_shm.c), so
     * across hosts the "abar_mpi(shm)" rows run the message engine. */
    MPI_Comm node;
    int local_rank = 0, nodes = 1;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Comm_rank(node, &local_rank);
        MPI_Comm_free(&node);
        int leader = local_rank == 0;
        MPI_Allreduce(&leader, &nodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    }
    if (rank == 0)
        printf("# %d ranks on %d node(s) as MPI_COMM_TYPE_SHARED sees them: the default engine "
               "(abar_mpi(shm) rows) is %s\n", size, nodes, nodes == 1 ? "shared memory" : "messages");
    abar_mpi_attr_t a[M_COUNT] = { 0 };
    a[M_ABAR_P2P].flags = ABAR_MPI_P2P;
    a[M_ABAR_IBAR].flags = ABAR_MPI_IBARRIER;
    for (int m = M_ABAR_COMPL; m <= M_ABAR_COMPL_P2P; m++) {
        a[m].completion = on_complete;
        a[m].arg = &result;
        a[m].result = &result;
        a[m].result_size = sizeof result;
    }
    a[M_ABAR_COMPL_P2P].flags = ABAR_MPI_P2P;
    a[M_ABAR_PROG].flags = ABAR_MPI_PROGRESS_THREAD | ABAR_MPI_P2P;
    a[M_ABAR_PROG_SHM].flags = ABAR_MPI_PROGRESS_THREAD; /* the default engine: on one node, no MPI to drive */
    a[M_HIER].threads = a[M_HIER_P2P].threads = (unsigned)nthreads[M_HIER];
    a[M_ABAR_TEST].flags = ABAR_MPI_P2P;
    a[M_HIER_P2P].flags = ABAR_MPI_P2P;
    for (int m = M_ABAR; m < M_COUNT; m++)
        if (abar_mpi_init(&bars[m], MPI_COMM_WORLD, &a[m]) != 0) MPI_Abort(MPI_COMM_WORLD, 3);
    if (!fresh_threads) crew_start(nthreads[M_HIER] - 1);

    /* warm up every path */
    for (int m = 0; m < M_COUNT; m++) measure(m, iters / 10 + 1, 0);

    /* latency: interleaved repetitions, median */
    double lat[M_COUNT], *samp = malloc(sizeof(double) * (size_t)reps * M_COUNT);
    for (int r = 0; r < reps; r++)
        for (int m = 0; m < M_COUNT; m++) samp[m * reps + r] = measure(m, iters, 0) / iters * 1e6;
    for (int m = 0; m < M_COUNT; m++) lat[m] = median(&samp[m * reps], reps);
    if (rank == 0) {
        printf("# latency per phase, %d ranks, %d phases x %d runs, median\n", size, iters, reps);
        printf("# lat name ranks threads us ratio_to_MPI_Barrier\n");
        for (int m = 0; m < M_COUNT; m++)
            printf("lat %-24s %d %d %8.3f %6.2f\n", mname[m], size, nthreads[m], lat[m],
                   lat[m] / lat[M_BARRIER]);
    }

    /* overlap: W as multiples of each method's own latency */
    const double mult[] = { 0.5, 1, 2, 4, 8 };
    const int ovm[] = { M_IBARRIER, M_ABAR, M_ABAR_P2P, M_ABAR_TEST, M_ABAR_PROG, M_ABAR_PROG_SHM, M_HIER, M_HIER_P2P };
    int on = iters / 4 + 1;
    if (rank == 0) printf("# overlap: arrive, W us of work, wait; %d iterations x %d runs, median; exposed =\n"
                          "# us_per_iter - work_us, work_us the same work alone (rank 0: %.0f loops a us)\n"
                          "# ovl name ranks W_us us_per_iter exposed_us hidden_pct hidden_vs_barrier_pct work_us\n",
                          on, reps, loops_per_us);
    for (unsigned j = 0; j < sizeof ovm / sizeof *ovm; j++) {
        for (unsigned k = 0; k < sizeof mult / sizeof *mult; k++) {
            int m = ovm[j];
            double W = mult[k] * lat[m];
            W = (double)(int)(W * 100 + 0.5) / 100;
            MPI_Bcast(&W, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD); /* same on every rank */
            double wsamp[64];
            for (int r = 0; r < reps; r++) {
                samp[r] = measure(m, on, W) / on * 1e6;
                wsamp[r] = measure_work(on, W) / on * 1e6;
            }
            double it = median(samp, reps), work = median(wsamp, reps), exposed = it - work;
            double hidden = 100.0 * (1.0 - exposed / lat[m]);
            double hb = 100.0 * (1.0 - exposed / lat[M_BARRIER]);
            hidden = hidden < 0 ? 0 : hidden > 100 ? 100 : hidden;
            hb = hb < 0 ? 0 : hb > 100 ? 100 : hb;
            if (rank == 0)
                printf("ovl %-24s %d %7.2f %8.3f %8.3f %6.1f %6.1f %8.3f  (W = %.1f x latency)\n", mname[m], size, W,
                       it, exposed, hidden, hb, work, mult[k]);
        }
    }
    /* where the exposed time goes with W = 8 x latency: the CPU time of the
     * arrive call, and of the wait call (which finds the phase complete if
     * the latency was hidden) */
    if (rank == 0) printf("# cost of the calls at W = 8 x latency (rank 0, mean; one clock read, %.1f ns,\n"
                          "# taken off each)\n"
                          "# cpu name ranks arrive_us wait_us\n", clock_ns);
    const int cpm[] = { M_ABAR, M_ABAR_P2P, M_ABAR_PROG, M_ABAR_PROG_SHM };
    for (unsigned j = 0; j < sizeof cpm / sizeof *cpm; j++) {
        int m = cpm[j];
        double W = 8 * lat[m];
        MPI_Bcast(&W, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        split = 1;
        t_arrive = t_wait = 0;
        measure(m, on, W);
        split = 0;
        if (rank == 0) printf("cpu %-24s %d %8.3f %8.3f\n", mname[m], size, t_arrive / on * 1e6 - clock_ns / 1e3,
                              t_wait / on * 1e6 - clock_ns / 1e3);
    }
    /* the hierarchical row once more, counting switches and CPU changes:
     * per phase, summed over every thread of every rank */
    if (rank == 0) printf("# where a hierarchical phase goes (%d threads a rank): per phase, all threads of all ranks\n"
                          "# sched name ranks threads us_per_phase voluntary_switches involuntary_switches cpu_changes\n"
                          "#       cpus_used most_threads_on_a_cpu (where the threads ended, one node)\n",
                          nthreads[M_HIER]);
    sched_diag = 1;
    d_vol = d_invol = d_moves = 0;
    for (int c = 0; c < 1024; c++) d_cpus[c] = 0;
    double dt = measure(M_HIER, iters, 0);
    sched_diag = 0;
    long loc[3] = { d_vol, d_invol, d_moves }, tot[3];
    MPI_Reduce(loc, tot, 3, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    int cl[1024], ct[1024], used = 0, most = 0;
    for (int c = 0; c < 1024; c++) cl[c] = d_cpus[c];
    MPI_Reduce(cl, ct, 1024, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    for (int c = 0; c < 1024 && rank == 0; c++) {
        used += ct[c] > 0;
        most = ct[c] > most ? ct[c] : most;
    }
    if (rank == 0)
        printf("sched %-24s %d %d %8.3f %8.2f %8.2f %8.2f %d %d\n", mname[M_HIER], size, nthreads[M_HIER],
               dt / iters * 1e6, (double)tot[0] / iters, (double)tot[1] / iters, (double)tot[2] / iters, used, most);
    if (!fresh_threads) crew_stop();
    for (int m = M_ABAR; m < M_COUNT; m++) abar_mpi_destroy(&bars[m]);
    free(samp);
    MPI_Finalize();
    return 0;
}
