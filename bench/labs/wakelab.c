/*
 * wakelab.c - how should the last arrival of a phase wake T - 1 parked
 * threads: all at once, or woken threads waking others (a tree)?
 *
 * Every thread parks at once (no spin, as abar's ABAR_WAIT_PARK and glibc's
 * pthread_barrier_wait when the phase is long), on a counter of T; the last
 * arrival releases the phase.  The ways to wake the others:
 *   all      one FUTEX_WAKE of every sleeper on the generation word: one
 *            system call, in which the kernel wakes the sleepers one by one
 *            (what abar and glibc do)
 *   treeF    each thread parks on a word of its own; the last arrival wakes
 *            rank 0, and every thread, once it is released, wakes its F
 *            children in the F-ary heap of ranks (r's children are
 *            rF + 1 .. rF + F; the last arrival wakes its own children too)
 *   relayK   one word, as `all`, but the last arrival wakes only K sleepers;
 *            every woken sleeper that finds its phase released wakes K more
 *            before it goes on (the kernel keeps sleepers of a word in the
 *            order they slept, so a relay reaches this phase's first)
 *   greedy   as relay1, but the last arrival and every woken sleeper go on
 *            waking one at a time until FUTEX_WAKE finds no one: every
 *            thread awake wakes, the quickest broadcast when a wake-up's
 *            latency is several times its cost to the waker
 *   spin     c11-twoline, nobody parks: for scale
 * A phase's time is the time until every thread has run again and arrived
 * at the next: what a barrier of parked threads costs.
 *
 * Build (scripts/bench_device.sh prepare does):
 *   gcc -O2 -std=gnu11 -Ibench/common bench/labs/wakelab.c -pthread -o wakelab
 * Run: wakelab [TMAX] [ROUNDS]: T = 2, 4, 8, 16, ... up to TMAX (default
 * every CPU), and TMAX; threads pinned to CPUs 0 .. T - 1; each cell the
 * median of ROUNDS (default 5) interleaved rounds of about 50 ms.
 */
#define _GNU_SOURCE
#include "common.h"

#include <limits.h>
#include <linux/futex.h>

#define TMAX_LAB 256

struct word { _Atomic uint32_t v, sleeping; } __attribute__((aligned(64)));

static struct {
    _Atomic uint32_t count __attribute__((aligned(64)));
    _Atomic uint32_t gen __attribute__((aligned(64)));
    _Atomic uint32_t sleepers;
    struct word w[TMAX_LAB];
    unsigned T, fan, mode; /* mode 0 spin, 1 all, 2 tree, 3 relay (fan K), 4 greedy */
    uint64_t n;
    pthread_barrier_t start;
    int cpus[TMAX_LAB];
} L;

/* Release rank c for generation g: its word, then a wake if it sleeps.
 * seq_cst on both sides (the waiter: sleeping, then the word): one of the
 * two sees the other's store. */
static void tree_release(unsigned c, uint32_t g)
{
    atomic_store(&L.w[c].v, g);
    if (atomic_load(&L.w[c].sleeping)) hv_futex(&L.w[c].v, FUTEX_WAKE, 1);
}

static void tree_children(unsigned r, uint32_t g)
{
    for (unsigned k = 1; k <= L.fan; k++) {
        const unsigned c = r * L.fan + k;
        if (c >= L.T) break;
        tree_release(c, g);
    }
}

/* relayK and greedy sleep with a bit for the phase's parity, and wake only
 * sleepers of theirs: a thread that is already back parks for the next
 * phase, which a relay must neither wake nor count. */
static long futex_bits(int op, uint32_t v, uint32_t g)
{
    return syscall(SYS_futex, (void *)&L.gen, op | FUTEX_PRIVATE_FLAG, v, NULL, NULL, 1u << (g & 1));
}

/* Wake sleepers of phase g: K (greedy: one at a time, until none is left) */
static void relay(uint32_t g)
{
    if (L.mode == 3) {
        futex_bits(FUTEX_WAKE_BITSET, L.fan, g);
        return;
    }
    while (futex_bits(FUTEX_WAKE_BITSET, 1, g) > 0) {}
}

static void phase(unsigned r)
{
    const uint32_t g = atomic_load_explicit(&L.gen, memory_order_relaxed);
    if (atomic_fetch_sub_explicit(&L.count, 1, memory_order_acq_rel) == 1) {
        atomic_store_explicit(&L.count, L.T, memory_order_relaxed);
        if (L.mode == 2) {
            atomic_store_explicit(&L.gen, g + 1, memory_order_relaxed);
            if (r != 0) tree_release(0, g + 1);
            tree_children(r, g + 1);
            return;
        }
        atomic_store(&L.gen, g + 1);
        if (L.mode == 1 && atomic_load(&L.sleepers)) hv_futex(&L.gen, FUTEX_WAKE, INT_MAX);
        if (L.mode >= 3 && atomic_load(&L.sleepers)) relay(g);
        return;
    }
    if (L.mode == 0) {
        while (atomic_load_explicit(&L.gen, memory_order_acquire) == g) cpu_relax();
    } else if (L.mode == 1 || L.mode >= 3) {
        atomic_fetch_add(&L.sleepers, 1);
        while (atomic_load(&L.gen) == g) {
            if (L.mode == 1) hv_futex(&L.gen, FUTEX_WAIT, g);
            else futex_bits(FUTEX_WAIT_BITSET, g, g);
        }
        atomic_fetch_sub(&L.sleepers, 1);
        if (L.mode >= 3) relay(g);
    } else {
        /* the word holds the generation this rank was last released for
         * (older than g where the last arrival was this rank) */
        atomic_store(&L.w[r].sleeping, 1);
        for (uint32_t seen; (seen = atomic_load(&L.w[r].v)) != g + 1;) hv_futex(&L.w[r].v, FUTEX_WAIT, seen);
        atomic_store(&L.w[r].sleeping, 0);
        tree_children(r, g + 1);
    }
}

static void *member(void *arg)
{
    const unsigned r = (unsigned)(uintptr_t)arg;
    pin_cpu(L.cpus[r]);
    pthread_barrier_wait(&L.start);
    for (uint64_t i = 0; i < L.n; i++) phase(r);
    return NULL;
}

/* ns per phase of n phases in mode m (fan f) on T threads */
static double measure(unsigned T, unsigned m, unsigned f, uint64_t n)
{
    pthread_t th[TMAX_LAB];
    L.T = T; L.mode = m; L.fan = f; L.n = n;
    atomic_store(&L.count, T);
    atomic_store(&L.gen, 0);
    atomic_store(&L.sleepers, 0);
    for (unsigned i = 0; i < T; i++) { atomic_store(&L.w[i].v, 0); atomic_store(&L.w[i].sleeping, 0); }
    pthread_barrier_init(&L.start, NULL, T);
    for (unsigned i = 1; i < T; i++) pthread_create(&th[i], NULL, member, (void *)(uintptr_t)i);
    pin_cpu(L.cpus[0]);
    pthread_barrier_wait(&L.start);
    const uint64_t t0 = now_ns();
    for (uint64_t i = 0; i < n; i++) phase(0);
    for (unsigned i = 1; i < T; i++) pthread_join(th[i], NULL);
    const uint64_t t1 = now_ns();
    pthread_barrier_destroy(&L.start);
    return (double)(t1 - t0) / (double)n;
}

int main(int argc, char **argv)
{
    const unsigned ncpu = (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
    unsigned tmax = argc > 1 ? (unsigned)atoi(argv[1]) : ncpu;
    const int rounds = argc > 2 ? atoi(argv[2]) : 5;
    if (tmax < 2 || tmax > TMAX_LAB || tmax > ncpu || rounds < 1 || rounds > 64) {
        fprintf(stderr, "usage: wakelab [TMAX(2..%u)] [ROUNDS(1..64)]\n", ncpu < TMAX_LAB ? ncpu : TMAX_LAB);
        return 2;
    }
    for (unsigned i = 0; i < TMAX_LAB; i++) L.cpus[i] = (int)(i % ncpu);
    static const struct { const char *name; unsigned mode, fan; } v[] = {
        { "spin", 0, 0 }, { "all", 1, 0 }, { "tree2", 2, 2 }, { "tree4", 2, 4 }, { "tree8", 2, 8 },
        { "relay1", 3, 1 }, { "relay2", 3, 2 }, { "relay4", 3, 4 }, { "greedy", 4, 1 },
    };
    const int nv = (int)(sizeof v / sizeof v[0]);
    printf("# wakelab: ns per phase, every thread parked at once (spin: none parks); median of %d rounds (min-max)\n",
           rounds);
    printf("%-6s", "T");
    for (int k = 0; k < nv; k++) printf(" %22s", v[k].name);
    printf("   best tree / all   best relay / all\n");
    unsigned Ts[16], nT = 0;
    for (unsigned t = 2; t < tmax && nT < 15; t *= 2) Ts[nT++] = t;
    Ts[nT++] = tmax;
    for (unsigned i = 0; i < nT; i++) {
        const unsigned T = Ts[i];
        uint64_t n[16];
        double r[16][64];
        for (int k = 0; k < nv; k++) { /* calibrate: about 50 ms a round */
            const double ns = measure(T, v[k].mode, v[k].fan, 200);
            const double want = 50e6 / (ns > 1 ? ns : 1);
            n[k] = want < 200 ? 200 : want > 2e6 ? 2000000 : (uint64_t)want;
        }
        for (int j = 0; j < rounds; j++)
            for (int k = 0; k < nv; k++) r[k][j] = measure(T, v[k].mode, v[k].fan, n[k]);
        printf("%-6u", T);
        double med[16];
        for (int k = 0; k < nv; k++) {
            qsort(r[k], (size_t)rounds, sizeof r[k][0], cmp_double);
            med[k] = r[k][rounds / 2];
            char cell[64];
            snprintf(cell, sizeof cell, "%.0f (%.0f-%.0f)", med[k], r[k][0], r[k][rounds - 1]);
            printf(" %22s", cell);
        }
        double best = med[2], bestr = med[5];
        for (int k = 3; k < 5; k++) if (med[k] < best) best = med[k];
        for (int k = 6; k < nv; k++) if (med[k] < bestr) bestr = med[k];
        printf("   %.2f   %.2f\n", best / med[1], bestr / med[1]);
        fflush(stdout);
    }
    return 0;
}
