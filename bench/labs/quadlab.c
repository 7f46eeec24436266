/* quadlab - where a barrier of a few threads (T = 3, 4) spends its time: the
 * single-counter protocols side by side with the library, every variant on
 * the same pinned CPUs, interleaved rounds, ns per phase (min and median).
 *
 *   quadlab T [ROUNDS] [CPU ...]
 *
 * Built by hand (it links the core's sources, to reach its internals):
 *   gcc -O2 -Iinclude -Isrc/core -Ibench/common bench/labs/quadlab.c src/core/[a-z]*.c -static -pthread -o quadlab
 *
 * Variants (each a barrier of T, arrive-and-wait in a loop; the release on a
 * line of its own, which the waiters poll, as abar's `wide` words):
 *   twoline     c11-twoline: fetch_sub; the last stores the count back and
 *               the generation
 *   flat-cas    abar's flat protocol, bare: fetch_sub on a word phase|pending;
 *               the last re-reads the release and the state, CASes the next
 *               phase in, and stores the release
 *   flat-cas-hz the same inside abar's hazard announcement
 *   flat-hz-c30, flat-hz-w30  flat-cas-hz with 30 rounds of an empty loop
 *               after the completer's release store, or after a waiter sees
 *               its release (what path length costs there)
 *   ticket      one fetch_add per arrival on a count that never resets; the
 *               add that makes it a multiple of T stores the release (no
 *               second RMW, nothing to reset)
 *   ticket-hz   the same inside abar's hazard announcement
 *   abar        abar_arrive_and_wait (the library)
 */
#define _GNU_SOURCE
#include "abar.h"
#include "abar_internal.h"
#include "common.h" /* now_ns, cpu_relax, cmp_double (bench/common) */
#include "lab.h"    /* lab_args, lab_run */

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TMAX 16

struct lab {
    _Alignas(64) _Atomic uint32_t count;
    _Alignas(64) _Atomic uint32_t gen;
    _Alignas(64) _Atomic uint64_t st; /* phase << 8 | pending */
    _Alignas(64) _Atomic uint64_t ph; /* completed phases (the release) */
    _Alignas(64) _Atomic uint64_t tk; /* ticket: arrivals ever made */
    _Alignas(64) abar_t bar;
};
static struct lab L;
static unsigned T;

static void twoline(void) { lab_twoline(&L.count, &L.gen, T); }

static inline struct abar__hazard *hz_enter(void)
{
    struct abar__hazard *h = abar__hazard_mine();
    atomic_store_explicit(&h->slot[h->depth++], &L, memory_order_relaxed);
    abar__hazard_fence_light();
    return h;
}
static inline void hz_leave(struct abar__hazard *h)
{
    atomic_store_explicit(&h->slot[--h->depth], NULL, memory_order_release);
}

static void spin_work(unsigned k)
{
    for (unsigned i = 0; i < k; i++) __asm__ __volatile__("" ::: "memory");
}

/* k rounds of an empty loop after the completer's release store (who = 1)
 * or after a waiter sees its release (who = 2): the price of path length */
static inline void flat_cas_dly(unsigned k, int who)
{
    uint64_t before = atomic_load_explicit(&L.ph, memory_order_acquire);
    uint64_t s = atomic_fetch_sub_explicit(&L.st, 1, memory_order_acq_rel);
    uint64_t p = s >> 8;
    if ((s & 0xff) == 1) {
        while (atomic_load_explicit(&L.ph, memory_order_acquire) != p) cpu_relax();
        uint64_t cur = atomic_load_explicit(&L.st, memory_order_relaxed);
        while (!atomic_compare_exchange_weak_explicit(&L.st, &cur, (p + 1) << 8 | T, memory_order_release,
                                                      memory_order_relaxed)) {}
        atomic_store_explicit(&L.ph, p + 1, memory_order_release);
        if (who == 1) spin_work(k);
    } else {
        while (atomic_load_explicit(&L.ph, memory_order_acquire) <= p) cpu_relax();
        if (who == 2) spin_work(k);
    }
    (void)before;
}
static inline void flat_cas(void) { flat_cas_dly(0, 0); }

static inline void ticket(void)
{
    uint64_t t = atomic_fetch_add_explicit(&L.tk, 1, memory_order_acq_rel);
    uint64_t p = t / T;
    if (t % T == T - 1) atomic_store_explicit(&L.ph, p + 1, memory_order_release);
    else
        while (atomic_load_explicit(&L.ph, memory_order_acquire) <= p) cpu_relax();
}

enum { V_TWOLINE, V_FLAT, V_FLAT_HZ, V_FLAT_C30, V_FLAT_W30, V_TICKET, V_TICKET_HZ, V_ABAR, NV };
static const char *names[NV] = { "twoline", "flat-cas", "flat-cas-hz", "flat-hz-c30", "flat-hz-w30",
                                 "ticket", "ticket-hz", "abar" };

static int variant;
static int cpus[TMAX];

static void step(unsigned tid)
{
    (void)tid;
    struct abar__hazard *h;
    switch (variant) {
    case V_TWOLINE: twoline(); break;
    case V_FLAT: flat_cas(); break;
    case V_FLAT_HZ: h = hz_enter(); flat_cas(); hz_leave(h); break;
    case V_FLAT_C30: h = hz_enter(); flat_cas_dly(30, 1); hz_leave(h); break;
    case V_FLAT_W30: h = hz_enter(); flat_cas_dly(30, 2); hz_leave(h); break;
    case V_TICKET: ticket(); break;
    case V_TICKET_HZ: h = hz_enter(); ticket(); hz_leave(h); break;
    case V_ABAR: abar_arrive_and_wait(&L.bar); break;
    }
}

static double measure(int v, uint64_t n)
{
    variant = v;
    atomic_store(&L.count, T);
    atomic_store(&L.gen, 0);
    atomic_store(&L.st, T);
    atomic_store(&L.ph, 0);
    atomic_store(&L.tk, 0);
    abar_init(&L.bar, T, NULL);
    const double ns = lab_time(T, cpus, n, step);
    abar_destroy(&L.bar);
    return ns;
}

int main(int argc, char **argv)
{
    int rounds;
    if (lab_args(argc, argv, "quadlab", TMAX, &T, &rounds, cpus)) return 2;
    lab_run("quadlab", T, cpus, rounds, NV, names, measure);
    return 0;
}
