/*
 * common.h - what every abar benchmark binary shares: the clock, CPU time,
 * pinning, calibrated work, time-bounded measurement rounds and the raw
 * machine-readable output rows.  Header-only (static functions), so the C
 * benchmark and the two OpenMP binaries measure with exactly the same code.
 *
 * A row is one CSV line:
 *   scenario,impl,threads,param,median,min,max,rounds,phases,unit,flags
 * median/min/max are over the measured rounds (each round: the mean over its
 * phases); `flags` is empty or "lb": the measurement hit its wall-time limit,
 * so the figure covers only the phases that finished in time and the true
 * cost is at least this.
 */
#ifndef ABAR_BENCH_COMMON_H
#define ABAR_BENCH_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define CSV_HEADER "scenario,impl,threads,param,median,min,max,rounds,phases,unit,flags"
#define BENCH_MAX_ROUNDS 64
#define BENCH_MAX_THREADS 1024

/* ---- clock, CPU time ------------------------------------------------------ */
static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPU time (user + system) of the calling thread. */
static inline uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void sleep_ns(uint64_t ns)
{
    struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {}
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

/* The jitter scenario (abar-bench, abar-bench-omp): every JITTER_EVERY-th
 * phase one thread, each in turn, is JITTER_NS late, busy (as a vCPU its
 * host preempts). */
#define JITTER_EVERY 256u
#define JITTER_NS 100000u

static inline void busy_ns(uint64_t ns)
{
    const uint64_t end = now_ns() + ns;
    while (now_ns() < end) cpu_relax();
}

static inline void die(const char *what, int err)
{
    fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what, strerror(err));
    exit(2);
}

/* ---- pinning ------------------------------------------------------------- */
/* The CPUs this process may run on, in order; thread i is pinned to cpus[i]. */
static int bench_cpus[CPU_SETSIZE];
static unsigned bench_ncpus;
static cpu_set_t bench_allowed;
static _Atomic int steal_tid[CPU_SETSIZE]; /* the last bench thread pinned to each CPU */

static inline unsigned cpus_init(void)
{
    if (sched_getaffinity(0, sizeof bench_allowed, &bench_allowed) != 0)
        die("sched_getaffinity", errno);
    bench_ncpus = 0;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &bench_allowed)) bench_cpus[bench_ncpus++] = c;
    return bench_ncpus;
}

/* Names the calling thread, pinned to the i-th allowed CPU, as the one the
 * stealer (below) signals for that CPU.  relaxed: it only needs some
 * recent thread of that CPU. */
static inline void steal_register(unsigned i)
{
    atomic_store_explicit(&steal_tid[bench_cpus[i % bench_ncpus]], (int)syscall(SYS_gettid),
                          memory_order_relaxed);
}

/* Pins the calling thread to CPU `cpu` (the labs name CPUs themselves). */
static inline void pin_cpu(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    int r = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    if (r) {
        char what[64];
        snprintf(what, sizeof what, "pinning a thread to CPU %d", cpu);
        die(what, r);
    }
}

/* Pins the calling thread to the i-th allowed CPU (pinned) or lets it run on
 * every allowed CPU (unpinned: the scheduler places it). */
static inline void pin_self(unsigned i, int pinned)
{
    if (!pinned) {
        int r = pthread_setaffinity_np(pthread_self(), sizeof bench_allowed, &bench_allowed);
        if (r) die("pthread_setaffinity_np", r);
        return;
    }
    pin_cpu(bench_cpus[i % bench_ncpus]);
    steal_register(i);
}

/* ---- a host that steals vCPUs, emulated (ABAR_BENCH_STEAL) ---------------- */
/* ABAR_BENCH_STEAL="BMIN,BMAX,GMIN,GMAX" (µs): a thread sleeps a random gap
 * in GMIN..GMAX, then signals the pinned bench thread of a random allowed
 * CPU, whose handler spins for a random burst in BMIN..BMAX: the thread
 * stops mid-whatever it was doing (polling, between its count and its
 * release, parking), as when the host runs something else on its vCPU.
 * The CPU stays busy meanwhile, as a stolen vCPU is to its guest.  Off
 * unless set; the header line says when it is on. */
static _Atomic uint64_t steal_burst_ns;
static _Atomic uint64_t steal_count, steal_total_ns;
static uint64_t steal_b[2], steal_g[2];

static void steal_handler(int sig)
{
    (void)sig;
    const uint64_t t0 = now_ns(), d = atomic_load_explicit(&steal_burst_ns, memory_order_relaxed);
    while (now_ns() - t0 < d)
        ;
    atomic_fetch_add_explicit(&steal_count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&steal_total_ns, d, memory_order_relaxed);
}

static uint64_t steal_pick(unsigned *seed, const uint64_t r[2])
{
    return r[1] > r[0] ? r[0] + (uint64_t)rand_r(seed) % (r[1] - r[0] + 1) : r[0];
}

static void *steal_main(void *arg)
{
    (void)arg;
    unsigned seed = 20261126u;
    for (;;) {
        sleep_ns(steal_pick(&seed, steal_g));
        const int tid = atomic_load_explicit(&steal_tid[bench_cpus[(unsigned)rand_r(&seed) % bench_ncpus]],
                                             memory_order_relaxed);
        if (tid == 0) continue;
        atomic_store_explicit(&steal_burst_ns, steal_pick(&seed, steal_b), memory_order_relaxed);
        syscall(SYS_tgkill, getpid(), tid, SIGURG); /* ESRCH once that thread is gone: fine */
    }
    return NULL;
}

static void steal_report(void)
{
    printf("# ABAR_BENCH_STEAL: %llu bursts, %.1f ms stolen in all\n",
           (unsigned long long)atomic_load(&steal_count), atomic_load(&steal_total_ns) / 1e6);
}

/* Starts the stealer if ABAR_BENCH_STEAL is set; returns 1 if it did. */
static inline int steal_start(void)
{
    const char *e = getenv("ABAR_BENCH_STEAL");
    if (e == NULL || *e == '\0') return 0;
    unsigned long long v[4];
    if (sscanf(e, "%llu,%llu,%llu,%llu", &v[0], &v[1], &v[2], &v[3]) != 4 || v[1] < v[0] ||
        v[3] < v[2] || v[2] == 0) {
        fprintf(stderr, "ABAR_BENCH_STEAL: want BMIN,BMAX,GMIN,GMAX in µs (GMIN > 0), got '%s'\n", e);
        exit(2);
    }
    steal_b[0] = v[0] * 1000u, steal_b[1] = v[1] * 1000u;
    steal_g[0] = v[2] * 1000u, steal_g[1] = v[3] * 1000u;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = steal_handler;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGURG, &sa, NULL) != 0) die("sigaction", errno);
    pthread_t th;
    int r = pthread_create(&th, NULL, steal_main, NULL);
    if (r) die("pthread_create", r);
    pthread_detach(th);
    atexit(steal_report);
    return 1;
}

/* ---- a hypervisor that takes CPUs, emulated (the steal scenarios) ----------- *
 * A director starts bursts at random intervals whose mean keeps `hv_cpus`
 * CPUs taken on average, each 1..5 ms (uniform) on one CPU not taken
 * already.  Two ways to take a CPU (ABAR_BENCH_STEAL_MODE):
 *
 * freeze (the default): as a host does.  The director looks at the bench
 * thread pinned to each CPU (/proc/self/task/TID/stat) and takes an idle
 * one first (asleep: its vCPU would be halted), else a running one, and
 * signals it (SIGWINCH).  A running victim's handler spins for the whole
 * burst: the thread stops wherever it was (spinning, between its count
 * and its release), as a vCPU does while its host runs something else on
 * its physical CPU, and nothing else of the guest runs there meanwhile.  An
 * idle victim's handler spins 20..100 µs only: a halted vCPU's physical
 * CPU is the one the host takes, and when the guest wakes that vCPU the
 * host preempts its other work for it (a wake-up's preemption, tens of µs),
 * so the host's burst costs the guest only that delay.
 *
 * nice: one thief thread pinned to each CPU at nice -20 (or the lowest
 * nice allowed), woken for each burst (on the CPU that was most idle in
 * the last 40 ms, /proc/stat), burning its CPU.  The scheduler still gives
 * the bench thread there a slice now and then, and a woken one waits for
 * it: a busier process of the same machine, not a host.
 *
 * hv_stop() returns the CPUs-worth the bursts took (the handlers' or the
 * thieves' time over the wall time). */
#define HV_BURST_MIN_NS 1000000u
#define HV_BURST_MAX_NS 5000000u
#define HV_WINDOW 4u /* refreshes of /proc/stat the idle ranking spans */

struct hv_thief {
    pthread_t th;
    int cpu;
    _Atomic uint32_t go;        /* bursts handed out (futex word) */
    _Atomic uint64_t burst_ns;  /* the next burst's length */
    _Atomic int busy;           /* in a burst, or handed one */
    uint64_t cpu_ns;            /* its CPU time, written as it exits */
} __attribute__((aligned(64)));

static struct hv_thief *hv_t;
static unsigned hv_n;
static double hv_cpus;
static _Atomic int hv_quit;
static pthread_t hv_dir;
static uint64_t hv_t0;
static int hv_nice = 0; /* the nice the thieves got */
static int hv_freeze;    /* the freeze mode (else nice) */
static int hv_idx[CPU_SETSIZE]; /* freeze: hv_t's slot of each CPU */
static _Atomic uint64_t hv_frozen_ns;

/* freeze: the victim's handler spins for its slot's burst */
static void hv_freeze_handler(int sig)
{
    (void)sig;
    const int c = sched_getcpu();
    if (c < 0 || c >= CPU_SETSIZE || hv_t == NULL) return;
    struct hv_thief *t = &hv_t[hv_idx[c]];
    const uint64_t t0 = now_ns(), d = atomic_load_explicit(&t->burst_ns, memory_order_relaxed);
    while (now_ns() - t0 < d)
        ;
    atomic_fetch_add_explicit(&hv_frozen_ns, d, memory_order_relaxed);
    atomic_store_explicit(&t->busy, 0, memory_order_release);
}

/* freeze: whether thread tid is asleep (state S or D); -1 if gone */
static int hv_asleep(int tid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    if (!p || p[1] != ' ') return -1;
    return p[2] == 'S' || p[2] == 'D';
}

/* freeze: one burst on an idle CPU's thread first, else a running one's */
static void hv_freeze_one(unsigned *seed)
{
    const unsigned start = (unsigned)rand_r(seed) % hv_n;
    int busy_pick = -1, busy_tid = 0;
    for (unsigned k = 0; k < hv_n; k++) {
        struct hv_thief *t = &hv_t[(start + k) % hv_n];
        if (atomic_load_explicit(&t->busy, memory_order_acquire)) continue;
        const int tid = atomic_load_explicit(&steal_tid[t->cpu], memory_order_relaxed);
        if (tid == 0) continue;
        const int a = hv_asleep(tid);
        if (a < 0) continue;
        if (a == 0) {
            if (busy_pick < 0) busy_pick = (int)((start + k) % hv_n), busy_tid = tid;
            continue;
        }
        atomic_store_explicit(&t->burst_ns, 20000u + (uint64_t)rand_r(seed) % 80001u, memory_order_relaxed);
        atomic_store_explicit(&t->busy, 1, memory_order_relaxed);
        if (syscall(SYS_tgkill, getpid(), tid, SIGWINCH) != 0) atomic_store(&t->busy, 0);
        return;
    }
    if (busy_pick < 0) return;
    struct hv_thief *t = &hv_t[busy_pick];
    atomic_store_explicit(&t->burst_ns,
                          HV_BURST_MIN_NS + (uint64_t)rand_r(seed) % (HV_BURST_MAX_NS - HV_BURST_MIN_NS + 1),
                          memory_order_relaxed);
    atomic_store_explicit(&t->busy, 1, memory_order_relaxed);
    if (syscall(SYS_tgkill, getpid(), busy_tid, SIGWINCH) != 0) atomic_store(&t->busy, 0);
}

static long hv_futex(_Atomic uint32_t *w, int op, uint32_t v)
{
    return syscall(SYS_futex, (void *)w, op | 128 /* FUTEX_PRIVATE_FLAG */, v, NULL, NULL, 0);
}

static void *hv_thief_main(void *p)
{
    struct hv_thief *t = p;
    pin_cpu(t->cpu);
    static const int nices[] = { -20, -15, -10, -5, 0 };
    for (unsigned k = 0; k < sizeof nices / sizeof nices[0]; k++)
        if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), nices[k]) == 0) {
            if (t == hv_t) hv_nice = nices[k];
            break;
        }
    uint32_t seen = 0;
    for (;;) {
        uint32_t g;
        while ((g = atomic_load_explicit(&t->go, memory_order_acquire)) == seen &&
               !atomic_load_explicit(&hv_quit, memory_order_relaxed))
            hv_futex(&t->go, 0 /* FUTEX_WAIT */, seen);
        if (atomic_load_explicit(&hv_quit, memory_order_relaxed)) break;
        seen = g;
        busy_ns(atomic_load_explicit(&t->burst_ns, memory_order_relaxed));
        atomic_store_explicit(&t->busy, 0, memory_order_release);
    }
    t->cpu_ns = thread_cpu_ns();
    return NULL;
}

/* Idle jiffies of every CPU (/proc/stat, idle + iowait), by CPU number;
 * 0 where unreadable (then every CPU looks the same: picks are uniform). */
static void hv_idle(uint64_t *idle, unsigned ncpu)
{
    memset(idle, 0, ncpu * sizeof *idle);
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        unsigned c;
        unsigned long long v[5];
        if (strncmp(line, "cpu", 3) != 0 || line[3] < '0' || line[3] > '9') continue;
        if (sscanf(line + 3, "%u %llu %llu %llu %llu %llu", &c, &v[0], &v[1], &v[2], &v[3], &v[4]) == 6 &&
            c < ncpu)
            idle[c] = v[3] + v[4];
    }
    fclose(f);
}

static void *hv_director(void *arg)
{
    (void)arg;
    unsigned seed = 20261127u;
    enum { MAXC = CPU_SETSIZE };
    static uint64_t ring[HV_WINDOW + 1][MAXC];
    unsigned head = 0;
    for (unsigned k = 0; k <= HV_WINDOW; k++) hv_idle(ring[k], MAXC);
    const double mean_gap = (HV_BURST_MIN_NS + HV_BURST_MAX_NS) / 2.0 / hv_cpus;
    uint64_t next = now_ns(), refresh = next;
    while (!atomic_load_explicit(&hv_quit, memory_order_relaxed)) {
        uint64_t now = now_ns();
        if (now >= refresh) {
            head = (head + 1) % (HV_WINDOW + 1);
            hv_idle(ring[head], MAXC);
            refresh = now + 10000000u;
        }
        if (now < next) {
            uint64_t d = next - now;
            sleep_ns(d < 1000000u ? d : 1000000u);
            continue;
        }
        /* gaps uniform in 0..2x their mean */
        next += (uint64_t)(2.0 * mean_gap * rand_r(&seed) / (double)RAND_MAX);
        if (hv_freeze) {
            hv_freeze_one(&seed);
            continue;
        }
        const unsigned old = (head + 1) % (HV_WINDOW + 1);
        int best = -1;
        uint64_t bi = 0;
        unsigned ties = 0;
        for (unsigned i = 0; i < hv_n; i++) {
            if (atomic_load_explicit(&hv_t[i].busy, memory_order_acquire)) continue;
            const int c = hv_t[i].cpu;
            const uint64_t idle = ring[head][c] - ring[old][c];
            if (best < 0 || idle > bi) best = (int)i, bi = idle, ties = 1;
            else if (idle == bi && (unsigned)rand_r(&seed) % ++ties == 0) best = (int)i;
        }
        if (best < 0) continue; /* every CPU stolen already */
        struct hv_thief *t = &hv_t[best];
        atomic_store_explicit(&t->burst_ns,
                              HV_BURST_MIN_NS + (uint64_t)rand_r(&seed) % (HV_BURST_MAX_NS - HV_BURST_MIN_NS + 1),
                              memory_order_relaxed);
        atomic_store_explicit(&t->busy, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&t->go, 1, memory_order_release);
        hv_futex(&t->go, 1 /* FUTEX_WAKE */, 1);
    }
    return NULL;
}

/* Starts the thieves and their director: `cpus` CPUs-worth on average. */
static inline void hv_start(double cpus)
{
    /* Forget the threads of earlier rows: the victims are the threads the
     * row about to run pins (an OpenMP runtime keeps its pool's idle
     * threads, pinned where an earlier, wider team put them, and a burst
     * frozen on one of those took nothing from the row: libomp's rows at
     * T < the CPUs ran as good as unstolen). */
    for (unsigned i = 0; i < bench_ncpus; i++)
        atomic_store_explicit(&steal_tid[bench_cpus[i]], 0, memory_order_relaxed);
    hv_n = bench_ncpus;
    hv_cpus = cpus;
    hv_t = aligned_alloc(64, hv_n * sizeof *hv_t);
    if (!hv_t) abort();
    memset(hv_t, 0, hv_n * sizeof *hv_t);
    atomic_store(&hv_quit, 0);
    atomic_store(&hv_frozen_ns, 0);
    const char *m = getenv("ABAR_BENCH_STEAL_MODE");
    hv_freeze = !(m && strcmp(m, "nice") == 0);
    if (hv_freeze) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = hv_freeze_handler;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGWINCH, &sa, NULL) != 0) die("sigaction", errno);
    }
    for (unsigned i = 0; i < hv_n; i++) {
        hv_t[i].cpu = bench_cpus[i];
        hv_idx[bench_cpus[i]] = (int)i;
        if (hv_freeze) continue;
        int r = pthread_create(&hv_t[i].th, NULL, hv_thief_main, &hv_t[i]);
        if (r) die("pthread_create (thief)", r);
    }
    hv_t0 = now_ns();
    int r = pthread_create(&hv_dir, NULL, hv_director, NULL);
    if (r) die("pthread_create (director)", r);
    setpriority(PRIO_PROCESS, 0, 0); /* the calling thread keeps its own nice */
}

/* A steal row's rounds: 50 ms each, whatever --quick says (a round must
 * span many bursts of 1..5 ms), 4 of them (--quick) or 8, within 1 s. */
typedef struct bopts bopts_t;
static inline bopts_t steal_opts(const bopts_t *o);

/* Stops them; returns the CPUs-worth they took. */
static inline double hv_stop(void)
{
    atomic_store(&hv_quit, 1);
    pthread_join(hv_dir, NULL);
    const uint64_t wall = now_ns() - hv_t0;
    uint64_t cpu = 0;
    if (hv_freeze) {
        /* bursts still running end before the slots go */
        for (unsigned i = 0; i < hv_n; i++)
            while (atomic_load(&hv_t[i].busy)) {
                if (hv_asleep(atomic_load(&steal_tid[hv_t[i].cpu])) < 0) break; /* its thread is gone */
                sleep_ns(100000);
            }
        cpu = atomic_load(&hv_frozen_ns);
        free(hv_t);
        hv_t = NULL;
        return wall ? (double)cpu / (double)wall : 0;
    }
    for (unsigned i = 0; i < hv_n; i++) {
        atomic_fetch_add(&hv_t[i].go, 1);
        hv_futex(&hv_t[i].go, 1, 1);
        pthread_join(hv_t[i].th, NULL);
        cpu += hv_t[i].cpu_ns;
    }
    free(hv_t);
    hv_t = NULL;
    return wall ? (double)cpu / (double)wall : 0;
}

/* ---- calibrated independent work ----------------------------------------- */
static double work_iters_per_ns = 1.0;

static __attribute__((noinline, unused)) void work_spin(uint64_t iters)
{
    for (uint64_t i = 0; i < iters; i++) __asm__ __volatile__("" ::: "memory");
}

static inline uint64_t work_iters(uint64_t ns) { return (uint64_t)((double)ns * work_iters_per_ns + 0.5); }

static inline void work_calibrate(void)
{
    double best = 0;
    for (int k = 0; k < 5; k++) {
        uint64_t n = 2000000, t0 = now_ns();
        work_spin(n);
        double r = (double)n / (double)(now_ns() - t0);
        if (r > best) best = r; /* fastest run: least disturbed */
    }
    work_iters_per_ns = best;
}

/* ---- statistics and rows -------------------------------------------------- */
static __attribute__((unused)) int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct stats { double med, min, max; unsigned n; } stats_t;

static inline stats_t stats_of(const double *v, unsigned n)
{
    double s[BENCH_MAX_ROUNDS];
    stats_t r = { 0, 0, 0, n };
    if (n == 0) return r;
    memcpy(s, v, n * sizeof *v);
    qsort(s, n, sizeof *s, cmp_double);
    r.min = s[0];
    r.max = s[n - 1];
    r.med = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    return r;
}

static FILE *bench_csv; /* --csv FILE, or NULL */

static inline void row(const char *scen, const char *impl, unsigned threads, const char *param,
                       stats_t st, uint64_t phases, const char *unit, const char *flags)
{
    char line[512];
    snprintf(line, sizeof line, "%s,%s,%u,%s,%.1f,%.1f,%.1f,%u,%llu,%s,%s\n", scen, impl, threads,
             param, st.med, st.min, st.max, st.n, (unsigned long long)phases, unit, flags);
    fputs(line, stdout);
    fflush(stdout);
    if (bench_csv) {
        fputs(line, bench_csv);
        fflush(bench_csv);
    }
}

/* ---- the steal the machine itself showed ------------------------------------ *
 * The steal column of /proc/stat's cpu line (its 8th field) over a stretch,
 * as CPUs-worth: delta steal / delta total * the CPUs the line counts.  A
 * guest sees it only where its host reports steal (KVM does). */
typedef struct hsteal { unsigned long long steal, total; unsigned ncpu; int ok; } hsteal_t;

static inline hsteal_t hsteal_now(void)
{
    hsteal_t h = { 0, 0, 0, 0 };
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return h;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "cpu ", 4) == 0) {
            unsigned long long v[8] = { 0 };
            int n = sscanf(line + 4, "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                           &v[4], &v[5], &v[6], &v[7]);
            if (n == 8) {
                h.ok = 1;
                h.steal = v[7];
                for (int k = 0; k < 8; k++) h.total += v[k];
            }
        } else if (strncmp(line, "cpu", 3) == 0 && line[3] >= '0' && line[3] <= '9') {
            h.ncpu++;
        }
    }
    fclose(f);
    return h;
}

/* The row that says how much the machine stole while scenario `scen` ran
 * (impl: the binary); -1 where /proc/stat could not tell. */
static inline void hsteal_row(const char *binary, const char *scen, hsteal_t a)
{
    hsteal_t b = hsteal_now();
    double v = -1;
    if (a.ok && b.ok && b.total > a.total) v = (double)(b.steal - a.steal) / (double)(b.total - a.total) * b.ncpu;
    stats_t st = { v, v, v, 1 };
    row("hoststeal", binary, b.ncpu, scen, st, 0, "cpus", "");
}

/* The thread counts a latency table measures: 1..16, then 24, 32, 48, 56,
 * 60, 64 and every CPU (where no more than max).  0 after the last. */
static inline unsigned lat_next_t(unsigned T, unsigned max)
{
    static const unsigned above[] = { 24, 32, 48, 56, 60, 64 };
    unsigned n = T < 16 ? T + 1 : 0;
    for (unsigned k = 0; n == 0 && k < sizeof above / sizeof above[0]; k++)
        if (above[k] > T) n = above[k];
    if (n == 0 || n > max) n = T < max ? max : 0;
    return n;
}

/* ---- time-bounded measurement rounds -------------------------------------- *
 * Every thread runs the same loop of phases; thread 0 alone reads the clock,
 * at geometrically spaced phase counts, and ends a round by publishing the
 * phase count at which every thread leaves it (stop[r] = k + 1: written
 * before thread 0's arrival at phase k + 1, read by the others after that
 * phase, so the barrier under test itself orders it and all leave together).
 * A round lasts about round_ns; the whole measurement at most cap_ns, after
 * which the round in progress is the last one and the row is flagged "lb". */
typedef struct rctl {
    unsigned warm, rounds;           /* warm-up rounds (not recorded), measured rounds */
    uint64_t round_ns, cap_ns;
    uint64_t start_ns;
    _Atomic uint64_t stop[BENCH_MAX_ROUNDS];
    _Atomic unsigned last_round;
    double per_phase[BENCH_MAX_ROUNDS];
    unsigned nrec;
    uint64_t phases;                 /* phases measured in recorded rounds */
    uint64_t total_phases;           /* all phases, warm-up included */
    int capped;
} rctl_t;

static inline void rctl_init(rctl_t *rc, unsigned warm, unsigned rounds, uint64_t round_ns, uint64_t cap_ns)
{
    memset(rc, 0, sizeof *rc);
    if (warm + rounds > BENCH_MAX_ROUNDS) rounds = BENCH_MAX_ROUNDS - warm;
    rc->warm = warm;
    rc->rounds = rounds;
    rc->round_ns = round_ns;
    rc->cap_ns = cap_ns;
    for (unsigned i = 0; i < BENCH_MAX_ROUNDS; i++) atomic_init(&rc->stop[i], UINT64_MAX);
    atomic_init(&rc->last_round, warm + rounds - 1);
    rc->start_ns = now_ns();
}

/* Thread 0, after k phases of round r begun at t0: ends the round or returns
 * the phase count of the next clock check. */
static inline uint64_t rctl_check(rctl_t *rc, unsigned r, uint64_t k, uint64_t t0)
{
    uint64_t now = now_ns(), e = now - t0;
    if (now - rc->start_ns >= rc->cap_ns) {
        rc->capped = 1;
        atomic_store_explicit(&rc->last_round, r, memory_order_release);
    } else if (e < rc->round_ns) {
        if (e == 0) e = 1;
        double more = (double)(rc->round_ns - e) * (double)k / (double)e / 2;
        if (more > (double)k) more = (double)k;
        return k + (more < 1 ? 1 : (uint64_t)more);
    }
    atomic_store_explicit(&rc->stop[r], k + 1, memory_order_release);
    return UINT64_MAX;
}

static inline void rctl_record(rctl_t *rc, unsigned r, uint64_t k, uint64_t elapsed)
{
    rc->total_phases += k;
    if (r < rc->warm && !rc->capped) return;
    rc->per_phase[rc->nrec++] = (double)elapsed / (double)k;
    rc->phases += k;
}

/* The loop every thread runs; PHASE is one phase of the barrier under test
 * (it may use `k`, the number of phases this thread completed in the round,
 * and `r`, the round).  Thread 0 reads the clock and publishes stop[r]: a
 * thread that is ahead leaves at once, one that is behind finishes its
 * stop[r] phases first.  RCTL_LOOP_EACH also has every thread time its own
 * rounds: own[r] = its ns per phase in round r (for a team that runs PHASE
 * with no barrier between its threads: the work alone). */
#define RCTL_LOOP(rc, tid, PHASE) RCTL_LOOP_EACH(rc, tid, (double *)NULL, PHASE)
#define RCTL_LOOP_EACH(rc, tid, own, PHASE)                                              \
    do {                                                                                 \
        double *own_ = (own);                                                            \
        for (unsigned r = 0;; r++) {                                                     \
            uint64_t k = 0, next_ = 1, t0_ = (tid) == 0 || own_ ? now_ns() : 0;          \
            for (;;) {                                                                   \
                PHASE;                                                                   \
                k++;                                                                     \
                if ((tid) == 0 && k == next_) next_ = rctl_check((rc), r, k, t0_);       \
                if (k >= atomic_load_explicit(&(rc)->stop[r], memory_order_acquire)) break; \
            }                                                                            \
            if ((tid) == 0 || own_) {                                                    \
                uint64_t e_ = now_ns() - t0_;                                            \
                if (own_) own_[r] = (double)e_ / (double)k;                              \
                if ((tid) == 0) rctl_record((rc), r, k, e_);                             \
            }                                                                            \
            if (r >= atomic_load_explicit(&(rc)->last_round, memory_order_acquire)) break; \
        }                                                                                \
    } while (0)

/* The rounds rctl_record kept (the measured ones; a capped warm-up round too),
 * given the rounds thread 0 ran (last_round + 1). */
static inline int rctl_kept(const rctl_t *rc, unsigned r, unsigned nrounds)
{
    return r >= rc->warm || (rc->capped && r + 1 == nrounds);
}

static inline void rctl_row(const rctl_t *rc, const char *scen, const char *impl, unsigned threads,
                            const char *param)
{
    stats_t st = stats_of(rc->per_phase, rc->nrec);
    row(scen, impl, threads, param, st, rc->phases, "ns/phase", rc->capped ? "lb" : "");
}

/* ---- options shared by every binary ---------------------------------------- */
struct bopts {
    int quick;
    unsigned max_threads;   /* 0: all allowed CPUs */
    const char *only;       /* comma-separated scenario names, or NULL */
    unsigned warm, rounds;
    uint64_t round_ns, cap_ns, oversub_cap_ns;
    unsigned burn_reps;
    const char *tag;        /* --tag NAME: abar rows named NAME-default/-spin/-park */
    int abar_only;          /* --abar-only: no rivals */
};

static inline bopts_t steal_opts(const bopts_t *o)
{
    bopts_t s = *o;
    s.round_ns = 50000000u;
    s.rounds = o->quick ? 4 : 8;
    s.cap_ns = 1000000000u;
    return s;
}

static inline int scen_on(const bopts_t *o, const char *name)
{
    if (o->only == NULL) return 1;
    size_t n = strlen(name);
    for (const char *p = o->only; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0) return 1;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

static inline void usage(const char *prog, const char *scens)
{
    fprintf(stderr,
            "usage: %s [--quick] [--csv FILE] [--threads N] [--only LIST] [--rounds N]\n"
            "  --quick      a few seconds in all (fewer, shorter rounds)\n"
            "  --csv FILE   also write the rows, with a header, to FILE\n"
            "  --threads N  measure T = 1..N pinned (default: every allowed CPU)\n"
            "  --only LIST  comma-separated scenarios among: %s\n"
            "  --rounds N   measured rounds per row (default 11, quick 5)\n"
            "  --tag NAME   name abar's rows NAME-default, NAME-spin, NAME-park\n"
            "  --abar-only  measure abar alone (with --tag: a variant run)\n"
            "Rows go to stdout: " CSV_HEADER "\n",
            prog, scens);
}

static inline bopts_t parse_opts(int argc, char **argv, const char *scens)
{
    bopts_t o = { 0 };
    const char *csv = NULL;
    unsigned rounds = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--quick") == 0) o.quick = 1;
        else if (strcmp(a, "--csv") == 0 && i + 1 < argc) csv = argv[++i];
        else if (strcmp(a, "--threads") == 0 && i + 1 < argc) o.max_threads = (unsigned)atoi(argv[++i]);
        else if (strcmp(a, "--only") == 0 && i + 1 < argc) o.only = argv[++i];
        else if (strcmp(a, "--rounds") == 0 && i + 1 < argc) rounds = (unsigned)atoi(argv[++i]);
        else if (strcmp(a, "--tag") == 0 && i + 1 < argc) o.tag = argv[++i];
        else if (strcmp(a, "--abar-only") == 0) o.abar_only = 1;
        else {
            usage(argv[0], scens);
            exit(strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0 ? 0 : 2);
        }
    }
    o.warm = 1;
    o.rounds = rounds ? rounds : o.quick ? 5 : 11;
    if (o.rounds + o.warm > BENCH_MAX_ROUNDS) o.rounds = BENCH_MAX_ROUNDS - o.warm;
    o.round_ns = o.quick ? 1000000u : 20000000u;         /* 1 ms / 20 ms a round */
    o.cap_ns = o.quick ? 25000000u : 1000000000u;         /* wall limit of one row */
    o.oversub_cap_ns = o.quick ? 25000000u : 1500000000u;
    o.burn_reps = o.quick ? 3 : 11;
    if (cpus_init() == 0) die("no CPU", EINVAL);
    if (o.max_threads == 0 || o.max_threads > bench_ncpus) o.max_threads = bench_ncpus;
    if (csv) {
        bench_csv = fopen(csv, "w");
        if (!bench_csv) die(csv, errno);
        fputs(CSV_HEADER "\n", bench_csv);
    }
    work_calibrate();
    printf("# " CSV_HEADER "\n# cpus=%u quick=%d rounds=%u round_ms=%.0f work_iters_per_ns=%.3f\n",
           bench_ncpus, o.quick, o.rounds, (double)o.round_ns / 1e6, work_iters_per_ns);
    if (steal_start())
        printf("# ABAR_BENCH_STEAL=%s: bursts of %.0f..%.0f us on a random CPU every %.0f..%.0f us\n",
               getenv("ABAR_BENCH_STEAL"), steal_b[0] / 1e3, steal_b[1] / 1e3, steal_g[0] / 1e3,
               steal_g[1] / 1e3);
    return o;
}

#endif
