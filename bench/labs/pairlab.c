/* pairlab - where a barrier of two spends its time: protocol steps added one
 * at a time to a plain sense-reversing counter, every variant on the same
 * two pinned CPUs, interleaved rounds, ns per phase (min and median).
 *
 *   pairlab [CPU_A CPU_B] [ROUNDS]
 *
 * Built by hand (it links the core's sources, to reach its internals):
 *   gcc -O2 -Iinclude -Isrc/core -Ibench/common bench/labs/pairlab.c \
 *       src/core/?*.c -static -pthread -o pairlab
 *
 * Variants (each a barrier of two, arrive-and-wait in a loop):
 *   central     c11-central: fetch_sub; the last stores count and gen; the
 *               other polls gen (pause)
 *   central-np  the same, polling without pause
 *   central-lf  the same, polling with lfence between loads instead of pause
 *   st-load     one 64-bit word with the phase in its high bits: the arrival
 *               loads it, then CASes (count, or count and open the next phase);
 *               the waiter polls the word itself
 *   st-own      the same, but the line is first owned by a CAS that cannot
 *               succeed (no plain load)
 *   st-own-pub  st-own plus a separate 64-bit phase word on the same line,
 *               stored by the last arrival after its CAS; the waiter polls it
 *   st-load-pub st-load plus that phase word
 *   st-blind-pub  fetch_sub; the last CASes the reset from its own result
 *               and stores the phase word; the waiter polls the phase word
 *   central-hz  central inside abar's hazard announcement (wait.c enter/leave)
 *   lad-hz      st-load-pub inside the hazard announcement, the wait out of line
 *   lad-hz-pre  + the phase word read before the state, and re-read with
 *               `expected` (another line) by the last arrival before its CAS
 *   lad-all     + the waiter polls as block() does (futex word, counters, clock)
 *   abar        abar_arrive_and_wait (the library)
 *   ticket      one fetch-and-add per arrival on a count that never resets;
 *               the arrival that makes it a multiple of 2 stores the phase
 *               word (same line), which the other polls
 *   ticket-hz   the same inside the hazard announcement
 *   tk-c30, tk-c100  ticket-hz with 30 or 100 rounds of an empty loop after
 *               the carrier's store (the library's path after a release)
 *   tk-w30, tk-w100  the same after the waiter sees its release instead
 *               (the path from a release to the next arrival)
 *   abar-split  abar_wait(abar_arrive()) (the library, split)
 */
#define _GNU_SOURCE
#include "abar.h"
#include "abar_internal.h"
#include "common.h" /* now_ns, cpu_relax, cmp_double, pin_cpu */

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct lab {
    _Alignas(64) _Atomic uint32_t count;
    _Atomic uint32_t gen;
    _Alignas(64) _Atomic uint64_t st; /* phase << 8 | pending */
    _Atomic uint64_t ph;              /* completed phases */
    _Atomic uint64_t tk;              /* ticket: arrivals ever made */
    _Alignas(64) abar_t bar;
};
static struct lab L;

/* One load in flight at a time: the next poll waits for this one, so the
 * spin has no machine clear to pay when the line changes, and no pause. */
static inline void lfence(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_lfence();
#endif
}

/* np: 0 polls with pause, 1 with nothing between loads, 2 with lfence */
static void central(int np)
{
    uint32_t g = atomic_load_explicit(&L.gen, memory_order_relaxed);
    if (atomic_fetch_sub_explicit(&L.count, 1, memory_order_acq_rel) == 1) {
        atomic_store_explicit(&L.count, 2, memory_order_relaxed);
        atomic_store_explicit(&L.gen, g + 1, memory_order_release);
    } else {
        while (atomic_load_explicit(&L.gen, memory_order_acquire) == g)
            if (np == 2) lfence();
            else if (!np) cpu_relax();
    }
}

/* st: phase in bits 8.., pending in 0..7 */
static void st(int own, int pub)
{
    uint64_t s;
    if (own) {
        s = 0;
        atomic_compare_exchange_strong_explicit(&L.st, &s, 0, memory_order_acquire, memory_order_acquire);
    } else {
        s = atomic_load_explicit(&L.st, memory_order_acquire);
    }
    for (;;) {
        uint64_t ph = s >> 8;
        int last = (s & 0xff) == 1;
        uint64_t ns = last ? ((ph + 1) << 8 | 2) : s - 1;
        if (atomic_compare_exchange_weak_explicit(&L.st, &s, ns, memory_order_acq_rel, memory_order_acquire)) {
            if (last) {
                if (pub) atomic_store_explicit(&L.ph, ph + 1, memory_order_release);
                return;
            }
            if (pub) {
                while (atomic_load_explicit(&L.ph, memory_order_acquire) <= ph) cpu_relax();
            } else {
                while ((atomic_load_explicit(&L.st, memory_order_acquire) >> 8) == ph) cpu_relax();
            }
            return;
        }
    }
}

/* fetch_sub; the last CASes the reset (from its own result) and stores ph */
static void st_blind_pub(void)
{
    uint64_t s = atomic_fetch_sub_explicit(&L.st, 1, memory_order_acq_rel);
    uint64_t ph = s >> 8;
    if ((s & 0xff) == 1) {
        uint64_t cur = s - 1;
        while (!atomic_compare_exchange_weak_explicit(&L.st, &cur, (ph + 1) << 8 | 2, memory_order_release,
                                                      memory_order_relaxed)) {}
        atomic_store_explicit(&L.ph, ph + 1, memory_order_release);
        return;
    }
    while (atomic_load_explicit(&L.ph, memory_order_acquire) <= ph) cpu_relax();
}

/* ticket: one fetch-and-add per arrival on a count that never resets; the
 * arrival that makes it a multiple of 2 completes the phase and stores the
 * phase word (same line), which the other polls */
static void spin_work(unsigned k)
{
    for (unsigned i = 0; i < k; i++) __asm__ __volatile__("" ::: "memory");
}
static void ticket_dly(unsigned k, int who);
static void ticket(int hz)
{
    struct abar__hazard *h = NULL;
    if (hz) {
        h = abar__hazard_mine();
        atomic_store_explicit(&h->slot[h->depth++], &L, memory_order_relaxed);
        abar__hazard_fence_light();
    }
    uint64_t t = atomic_fetch_add_explicit(&L.tk, 1, memory_order_acq_rel);
    uint64_t ph = t / 2;
    if (t % 2 == 1) atomic_store_explicit(&L.ph, ph + 1, memory_order_release);
    else
        while (atomic_load_explicit(&L.ph, memory_order_acquire) <= ph) cpu_relax();
    if (hz) atomic_store_explicit(&h->slot[--h->depth], NULL, memory_order_release);
}

/* ticket-hz with k rounds of local work after the carrier's store (who=1)
 * or after the waiter sees the release (who=2): the library's path length */
static void ticket_dly(unsigned k, int who)
{
    struct abar__hazard *h = abar__hazard_mine();
    atomic_store_explicit(&h->slot[h->depth++], &L, memory_order_relaxed);
    abar__hazard_fence_light();
    uint64_t t = atomic_fetch_add_explicit(&L.tk, 1, memory_order_acq_rel);
    uint64_t ph = t / 2;
    if (t % 2 == 1) {
        atomic_store_explicit(&L.ph, ph + 1, memory_order_release);
        if (who == 1) spin_work(k);
    } else {
        while (atomic_load_explicit(&L.ph, memory_order_acquire) <= ph) cpu_relax();
        if (who == 2) spin_work(k);
    }
    atomic_store_explicit(&h->slot[--h->depth], NULL, memory_order_release);
}

/* central inside abar's hazard announcement (wait.c enter/leave) */
static void central_hz(void)
{
    struct abar__hazard *h = abar__hazard_mine();
    atomic_store_explicit(&h->slot[h->depth++], &L, memory_order_relaxed);
    abar__hazard_fence_light();
    central(0);
    atomic_store_explicit(&h->slot[--h->depth], NULL, memory_order_release);
}

/* The ladder from st-load-pub to abar's pair path (prev protocol):
 * lad(hz, pre, poll2): hz  = inside the hazard announcement;
 * pre = the arrival reads the phase word before it reads the state, and the
 * last one re-reads it and reads `expected` (a line of its own) before its CAS;
 * poll2 = the waiter polls as block() does (phase, the futex word, a
 * counter, a clock read every 64 rounds). */
static _Atomic uint32_t fut;
static struct { _Alignas(64) _Atomic uint32_t expected; } far_line = { 2 };
static __attribute__((noinline)) void lad_wait(uint64_t ph, int poll2)
{
    if (!poll2) {
        while (atomic_load_explicit(&L.ph, memory_order_acquire) <= ph) cpu_relax();
        return;
    }
    uint64_t t0 = 0;
    for (unsigned i = 1;; i++) {
        if (atomic_load_explicit(&L.ph, memory_order_acquire) > ph) return;
        if ((atomic_load_explicit(&fut, memory_order_relaxed) & 0x80000000u) || i % 1024 == 0)
            (void)atomic_load_explicit(&L.st, memory_order_acquire); /* block()'s look */
        cpu_relax();
        if (i % 64 == 0) {
            uint64_t n = now_ns();
            if (t0 == 0) t0 = n;
        }
    }
}
static __attribute__((noinline)) void lad(int hz, int pre, int poll2)
{
    struct abar__hazard *h = NULL;
    if (hz) {
        h = abar__hazard_mine();
        atomic_store_explicit(&h->slot[h->depth++], &L, memory_order_relaxed);
        abar__hazard_fence_light();
    }
    uint64_t before = pre ? atomic_load_explicit(&L.ph, memory_order_acquire) : 0;
    uint64_t s = atomic_load_explicit(&L.st, memory_order_acquire);
    for (;;) {
        uint64_t ph = s >> 8;
        int last = (s & 0xff) == 1;
        if (last && pre) {
            while (atomic_load_explicit(&L.ph, memory_order_acquire) != ph) cpu_relax(); /* in order */
            (void)atomic_load_explicit(&far_line.expected, memory_order_relaxed);
        }
        uint64_t ns = last ? ((ph + 1) << 8 | 2) : s - 1;
        if (atomic_compare_exchange_weak_explicit(&L.st, &s, ns, memory_order_acq_rel, memory_order_acquire)) {
            if (last) atomic_store_explicit(&L.ph, ph + 1, memory_order_release);
            else lad_wait(ph, poll2);
            break;
        }
    }
    (void)before;
    if (hz) atomic_store_explicit(&h->slot[--h->depth], NULL, memory_order_release);
}

enum { V_CENTRAL, V_CENTRAL_NP, V_ST_LOAD, V_ST_OWN, V_ST_OWN_PUB, V_ST_LOAD_PUB, V_ST_BLIND_PUB, V_CENTRAL_HZ, V_LAD_HZ, V_LAD_HZ_PRE, V_LAD_ALL, V_ABAR, V_TICKET, V_TICKET_HZ, V_TD1_30, V_TD1_100, V_TD2_30, V_TD2_100, V_SPLIT, V_CENTRAL_LF, NV };
static const char *names[NV] = { "central", "central-np", "st-load", "st-own", "st-own-pub", "st-load-pub", "st-blind-pub", "central-hz", "lad-hz", "lad-hz-pre", "lad-all", "abar", "ticket", "ticket-hz", "tk-c30", "tk-c100", "tk-w30", "tk-w100", "abar-split", "central-lf" };

static int variant;
static uint64_t iters;
static pthread_barrier_t start;
static int cpus[2];

static void step(void)
{
    switch (variant) {
    case V_CENTRAL: central(0); break;
    case V_CENTRAL_NP: central(1); break;
    case V_ST_LOAD: st(0, 0); break;
    case V_ST_OWN: st(1, 0); break;
    case V_ST_OWN_PUB: st(1, 1); break;
    case V_ST_LOAD_PUB: st(0, 1); break;
    case V_ST_BLIND_PUB: st_blind_pub(); break;
    case V_CENTRAL_HZ: central_hz(); break;
    case V_LAD_HZ: lad(1, 0, 0); break;
    case V_LAD_HZ_PRE: lad(1, 1, 0); break;
    case V_LAD_ALL: lad(1, 1, 1); break;
    case V_ABAR: abar_arrive_and_wait(&L.bar); break;
    case V_TICKET: ticket(0); break;
    case V_TICKET_HZ: ticket(1); break;
    case V_TD1_30: ticket_dly(30, 1); break;
    case V_TD1_100: ticket_dly(100, 1); break;
    case V_TD2_30: ticket_dly(30, 2); break;
    case V_TD2_100: ticket_dly(100, 2); break;
    case V_SPLIT: abar_wait(&L.bar, abar_arrive(&L.bar)); break;
    case V_CENTRAL_LF: central(2); break;
    }
}

static void *run(void *arg)
{
    pin_cpu(cpus[(intptr_t)arg]);
    pthread_barrier_wait(&start);
    for (uint64_t i = 0; i < iters; i++) step();
    return NULL;
}

static double measure(int v, uint64_t n)
{
    variant = v;
    iters = n;
    atomic_store(&L.count, 2);
    atomic_store(&L.gen, 0);
    atomic_store(&L.st, 2);
    atomic_store(&L.ph, 0);
    atomic_store(&L.tk, 0);
    abar_init(&L.bar, 2, NULL);
    pthread_barrier_init(&start, NULL, 2);
    pthread_t t;
    pthread_create(&t, NULL, run, (void *)(intptr_t)1);
    pin_cpu(cpus[0]);
    pthread_barrier_wait(&start);
    const uint64_t t0 = now_ns();
    for (uint64_t i = 0; i < n; i++) step();
    pthread_join(t, NULL);
    uint64_t t1 = now_ns();
    pthread_barrier_destroy(&start);
    abar_destroy(&L.bar);
    return (double)(t1 - t0) / (double)n;
}

int main(int argc, char **argv)
{
    cpus[0] = argc > 2 ? atoi(argv[1]) : 0;
    cpus[1] = argc > 2 ? atoi(argv[2]) : 1;
    int rounds = argc > 3 ? atoi(argv[3]) : 7;
    double r[NV][64];
    for (int v = 0; v < NV; v++) measure(v, 20000); /* warm up */
    for (int k = 0; k < rounds && k < 64; k++)
        for (int v = 0; v < NV; v++) r[v][k] = measure(v, 200000);
    printf("hazard fence: %s\n", abar__hazard_asym ? "asymmetric (membarrier)" : "seq_cst fence");
    printf("pairlab cpus %d,%d, %d interleaved rounds of 200000 phases: ns/phase min median max\n",
           cpus[0], cpus[1], rounds);
    for (int v = 0; v < NV; v++) {
        qsort(r[v], (size_t)rounds, sizeof(double), cmp_double);
        printf("  %-12s %7.1f %7.1f %7.1f\n", names[v], r[v][0], r[v][rounds / 2], r[v][rounds - 1]);
    }
    return 0;
}
