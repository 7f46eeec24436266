/* homelab - does it matter where in memory a barrier's lines are?  On a
 * mesh CPU every line has a home (the L3 slice whose directory tracks it),
 * picked by a hash of its physical address; a transfer between two cores
 * goes through that home.  If the home's distance shows, the same barrier
 * on the same CPUs runs at different speeds at different addresses.  Every
 * candidate address on the same pinned CPUs, interleaved rounds, ns per
 * phase.
 *
 *   homelab T [ROUNDS] [CPU ...]
 *
 * Built by hand (it links the core's sources):
 *   gcc -O2 -Iinclude -Isrc/core -Ibench/common bench/labs/homelab.c src/core/[a-z]*.c -static -pthread -o homelab
 *
 * Candidates: NC addresses in a 16 MiB region, one a MiB, each at another
 * 128-byte offset in its page.  Two tables: abar_t placed at each candidate
 * (abar_init there), and c11-twoline with its count and generation in the
 * candidate's first two lines.  A third runs, at each of the first NB
 * candidates, the protocols of bench/labs/quadlab.c on the same two lines
 * (the count or state word in the first, the release in the second, as
 * abar_t has them): which of abar's steps make it slower than c11-twoline
 * where both sit, all interleaved.
 *   twoline   c11-twoline
 *   flat      abar's flat protocol, bare: fetch_sub on phase|pending; the
 *             last re-reads the release and the state, CASes the next phase
 *             in and stores the release
 *   flat-hz   the same inside abar's hazard announcement
 *   ticket    one fetch_add an arrival on a count that never resets
 *   abar      abar_arrive_and_wait, abar_t at the candidate
 * Built by bench/labs/homelab_variant.sh with a second copy of the core
 * (a patched one), its row runs that core's abar_arrive_and_wait too, at the
 * same lines: a change to the core priced without the placement lottery.
 * HOMELAB_SAME_LINES_ONLY=1 in the environment runs that last table alone.
 */
#define _GNU_SOURCE
#include "abar.h"
#include "abar_internal.h"
#include "common.h" /* now_ns, cpu_relax, cmp_double, pin_cpu (bench/common) */
#include "lab.h"    /* lab_args, lab_run */

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TMAX 16
#define NC 16
#ifdef HOMELAB_VARIANT
/* A second core, its symbols prefixed v_ (bench/labs/homelab_variant.sh) */
int v_abar_init(abar_t *b, uint32_t expected, const abar_attr_t *attr);
int v_abar_arrive_and_wait(abar_t *b);
int v_abar_destroy(abar_t *b);
#define NB 5
#else
#define NB 6
#endif

static unsigned char *R;
static unsigned T;
static int cpus[TMAX];
static unsigned char *cand[NC];
static unsigned char *cur;
static int use_abar;
static int proto = -1; /* the bisect table's protocol, or -1 */
#ifdef HOMELAB_VARIANT
enum { P_TWOLINE, P_FLAT, P_FLAT_HZ, P_TICKET, P_ABAR, P_ABARV, NP };
static const char *const pnames[NP] = { "twoline", "flat", "flat-hz", "ticket", "abar", HOMELAB_VARIANT };
#else
enum { P_TWOLINE, P_FLAT, P_FLAT_HZ, P_TICKET, P_ABAR, NP };
static const char *const pnames[NP] = { "twoline", "flat", "flat-hz", "ticket", "abar" };
#endif

static _Atomic uint64_t *w64(unsigned line) { return (_Atomic uint64_t *)(void *)(cur + 64 * line); }

static void flat(void)
{
    _Atomic uint64_t *st = w64(0), *ph = w64(1);
    uint64_t before = atomic_load_explicit(ph, memory_order_acquire);
    uint64_t s = atomic_fetch_sub_explicit(st, 1, memory_order_acq_rel);
    uint64_t p = s >> 8;
    if ((s & 0xff) == 1) {
        while (atomic_load_explicit(ph, memory_order_acquire) != p) cpu_relax();
        uint64_t c = atomic_load_explicit(st, memory_order_relaxed);
        while (!atomic_compare_exchange_weak_explicit(st, &c, (p + 1) << 8 | T, memory_order_release,
                                                      memory_order_relaxed)) {}
        atomic_store_explicit(ph, p + 1, memory_order_release);
    } else {
        while (atomic_load_explicit(ph, memory_order_acquire) <= p) cpu_relax();
    }
    (void)before;
}

static void ticket(void)
{
    _Atomic uint64_t *tk = w64(0), *ph = w64(1);
    uint64_t t = atomic_fetch_add_explicit(tk, 1, memory_order_acq_rel);
    uint64_t p = t / T;
    if (t % T == T - 1) atomic_store_explicit(ph, p + 1, memory_order_release);
    else
        while (atomic_load_explicit(ph, memory_order_acquire) <= p) cpu_relax();
}

static void twoline(void)
{
    lab_twoline((_Atomic uint32_t *)(void *)cur, (_Atomic uint32_t *)(void *)(cur + 64), T);
}

static void proto_step(void)
{
    struct abar__hazard *h;
    switch (proto) {
    case P_TWOLINE: twoline(); break;
    case P_FLAT: flat(); break;
    case P_FLAT_HZ:
        h = abar__hazard_mine();
        atomic_store_explicit(&h->slot[h->depth++], cur, memory_order_relaxed);
        abar__hazard_fence_light();
        flat();
        atomic_store_explicit(&h->slot[--h->depth], NULL, memory_order_release);
        break;
    case P_TICKET: ticket(); break;
    case P_ABAR:
        if (abar_arrive_and_wait((abar_t *)(void *)cur)) abort();
        break;
#ifdef HOMELAB_VARIANT
    case P_ABARV:
        if (v_abar_arrive_and_wait((abar_t *)(void *)cur)) abort();
        break;
#endif
    }
}

static void step(unsigned tid)
{
    (void)tid;
    if (proto >= 0) proto_step();
    else if (use_abar) {
        if (abar_arrive_and_wait((abar_t *)(void *)cur)) abort();
    } else {
        twoline();
    }
}

static double measure_proto(int v, uint64_t n)
{
    cur = cand[v / NP];
    proto = v % NP;
    memset(cur, 0, 256);
    if (proto == P_ABAR && abar_init((abar_t *)(void *)cur, T, NULL)) abort();
#ifdef HOMELAB_VARIANT
    if (proto == P_ABARV && v_abar_init((abar_t *)(void *)cur, T, NULL)) abort();
#endif
    if (proto == P_TWOLINE) atomic_store((_Atomic uint32_t *)(void *)cur, T);
    if (proto == P_FLAT || proto == P_FLAT_HZ) atomic_store(w64(0), T);
    const double ns = lab_time(T, cpus, n, step);
    if (proto == P_ABAR) abar_destroy((abar_t *)(void *)cur);
#ifdef HOMELAB_VARIANT
    if (proto == P_ABARV) v_abar_destroy((abar_t *)(void *)cur);
#endif
    proto = -1;
    return ns;
}

static double measure(int v, uint64_t n)
{
    cur = cand[v];
    memset(cur, 0, 256);
    if (use_abar) {
        if (abar_init((abar_t *)(void *)cur, T, NULL)) abort();
    } else {
        atomic_store((_Atomic uint32_t *)(void *)cur, T);
    }
    const double ns = lab_time(T, cpus, n, step);
    if (use_abar) abar_destroy((abar_t *)(void *)cur);
    return ns;
}

int main(int argc, char **argv)
{
    int rounds;
    if (lab_args(argc, argv, "homelab", TMAX, &T, &rounds, cpus)) return 2;
    R = aligned_alloc(1 << 21, (size_t)NC << 20);
    if (!R) return 1;
    memset(R, 0, (size_t)NC << 20);
    static char names_buf[NC][16];
    const char *names[NC];
    for (int c = 0; c < NC; c++) {
        cand[c] = R + ((size_t)c << 20) + (size_t)((c * 7) % 32) * 128;
        snprintf(names_buf[c], sizeof names_buf[c], "at+%02d/%04zx", c,
                 (size_t)(cand[c] - R) & 0xfff);
        names[c] = names_buf[c];
    }
    /* HOMELAB_SAME_LINES_ONLY=1: the last table alone */
    const int sweep = getenv("HOMELAB_SAME_LINES_ONLY") == NULL;
    use_abar = 1;
    if (sweep) printf("abar_t at each candidate\n");
    if (sweep) lab_run("homelab", T, cpus, rounds, NC, names, measure);
    use_abar = 0;
    if (sweep) printf("c11-twoline at each candidate\n");
    if (sweep) lab_run("homelab", T, cpus, rounds, NC, names, measure);
    static char bnames_buf[NB * NP][24];
    const char *bnames[NB * NP];
    for (int v = 0; v < NB * NP; v++) {
        snprintf(bnames_buf[v], sizeof bnames_buf[v], "%02d/%s", v / NP, pnames[v % NP]);
        bnames[v] = bnames_buf[v];
    }
    printf("protocols on the same two lines, at each of the first %d candidates\n", NB);
    lab_run("homelab", T, cpus, rounds, NB * NP, bnames, measure_proto);
    return 0;
}
