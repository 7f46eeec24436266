/* linelab - does a barrier's layout within 128-byte blocks matter?  Intel
 * cores since Sandy Bridge pair lines: the L2's spatial prefetcher fetches
 * a 64-byte line's buddy in its aligned 128-byte block.  Two hot lines of a
 * barrier in one block may then cost transfers neither needs.  Every
 * variant on the same pinned CPUs, interleaved rounds, ns per phase.
 *
 *   linelab T [ROUNDS] [CPU ...]
 *
 * Built by hand (it links the core's sources):
 *   gcc -O2 -Iinclude -Isrc/core -Ibench/common bench/labs/linelab.c src/core/[a-z]*.c -static -pthread -o linelab
 *
 * Variants (arrive-and-wait in a loop; R is 4096-aligned):
 *   tl-pair      c11-twoline, count at R, generation at R+64: one block
 *   tl-apart     the same, generation at R+128: blocks of their own
 *   abar-blk0    abar_t at a 128-aligned address: its state line and its
 *                release line share a block
 *   abar-blk64   abar_t 64 bytes past one: state and release in two blocks
 *   lv-pair      an arrival tree, bare: leaves of 2 threads (by thread
 *                number) at a 64-byte stride, a root, the generation
 *   lv-apart     the same, leaves at a 128-byte stride
 *   scan         no shared count: each thread adds to a line of its own (by
 *                thread number), then reads every thread's line; one that
 *                finds them all arrived releases, by CAS on the generation
 *                (several may find it: the CAS picks one).  Anonymous
 *                arrivals would need the lines picked by thread, not by rank.
 *   scan-128     the same, lines at a 128-byte stride
 */
#define _GNU_SOURCE
#include "abar.h"
#include "common.h" /* now_ns, cpu_relax, cmp_double, pin_cpu (bench/common) */
#include "lab.h"    /* lab_args, lab_run */

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TMAX 16

static unsigned char *R;
static unsigned T, NL;

static _Atomic uint32_t *at32(size_t off) { return (_Atomic uint32_t *)(void *)(R + off); }

static void twoline(size_t gen_off) { lab_twoline(at32(0), at32(gen_off), T); }

/* leaves from R+1024 at `stride`, the root at R+3072, the generation at R+3584 */
static unsigned leaf_size(unsigned l) { return l + 1 < NL ? 2 : T - 2 * (NL - 1); }
static void leaves(unsigned tid, size_t stride)
{
    const unsigned l = tid / 2 < NL ? tid / 2 : NL - 1;
    _Atomic uint32_t *leaf = at32(1024 + l * stride), *root = at32(3072), *gen = at32(3584);
    uint32_t g = atomic_load_explicit(gen, memory_order_relaxed);
    if (atomic_fetch_sub_explicit(leaf, 1, memory_order_acq_rel) == 1) {
        atomic_store_explicit(leaf, leaf_size(l), memory_order_relaxed);
        if (atomic_fetch_sub_explicit(root, 1, memory_order_acq_rel) == 1) {
            atomic_store_explicit(root, NL, memory_order_relaxed);
            atomic_store_explicit(gen, g + 1, memory_order_release);
            return;
        }
    }
    while (atomic_load_explicit(gen, memory_order_acquire) == g) cpu_relax();
}

/* lines from R+1024 at `stride` (the leaves' place), the generation at R+3584 */
static void scan(unsigned tid, size_t stride)
{
    _Atomic uint32_t *gen = at32(3584);
    const uint32_t g = atomic_load_explicit(gen, memory_order_acquire);
    atomic_fetch_add_explicit(at32(1024 + tid * stride), 1, memory_order_acq_rel);
    uint32_t sum = 0;
    for (unsigned j = 0; j < T; j++) sum += atomic_load_explicit(at32(1024 + j * stride), memory_order_acquire);
    if (sum >= (g + 1) * T) {
        uint32_t e = g;
        atomic_compare_exchange_strong_explicit(gen, &e, g + 1, memory_order_acq_rel, memory_order_acquire);
        return;
    }
    while (atomic_load_explicit(gen, memory_order_acquire) == g) cpu_relax();
}

enum { V_TL_PAIR, V_TL_APART, V_ABAR0, V_ABAR64, V_LV_PAIR, V_LV_APART, V_SCAN, V_SCAN128, NV };
static const char *names[NV] = { "tl-pair", "tl-apart", "abar-blk0", "abar-blk64", "lv-pair", "lv-apart",
                                 "scan", "scan-128" };
#define ABAR0_OFF 4096
#define ABAR64_OFF (4096 + 512 + 64)

static int variant;
static int cpus[TMAX];

static void step(unsigned tid)
{
    switch (variant) {
    case V_TL_PAIR: twoline(64); break;
    case V_TL_APART: twoline(128); break;
    case V_ABAR0: abar_arrive_and_wait((abar_t *)(void *)(R + ABAR0_OFF)); break;
    case V_ABAR64: abar_arrive_and_wait((abar_t *)(void *)(R + ABAR64_OFF)); break;
    case V_LV_PAIR: leaves(tid, 64); break;
    case V_LV_APART: leaves(tid, 128); break;
    case V_SCAN: scan(tid, 64); break;
    case V_SCAN128: scan(tid, 128); break;
    }
}

static double measure(int v, uint64_t n)
{
    variant = v;
    memset(R, 0, 8192);
    atomic_store(at32(0), T);
    const size_t stride = v == V_LV_APART ? 128 : 64;
    if (v == V_LV_PAIR || v == V_LV_APART) /* the scans' lines start at 0 */
        for (unsigned l = 0; l < NL; l++) atomic_store(at32(1024 + l * stride), leaf_size(l));
    atomic_store(at32(3072), NL);
    abar_t *b = v == V_ABAR0 ? (abar_t *)(void *)(R + ABAR0_OFF)
              : v == V_ABAR64 ? (abar_t *)(void *)(R + ABAR64_OFF) : NULL;
    if (b && abar_init(b, T, NULL)) abort();
    const double ns = lab_time(T, cpus, n, step);
    if (b) abar_destroy(b);
    return ns;
}

int main(int argc, char **argv)
{
    int rounds;
    if (lab_args(argc, argv, "linelab", TMAX, &T, &rounds, cpus)) return 2;
    NL = T / 2;
    R = aligned_alloc(4096, 8192);
    if (!R) return 1;
    lab_run("linelab", T, cpus, rounds, NV, names, measure);
    return 0;
}
