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
 *   gcc -O2 -Iinclude -Isrc/core -Ibench/common bench/core/homelab.c src/core/[a-z]*.c -static -pthread -o homelab
 *
 * Candidates: NC addresses in a 16 MiB region, one a MiB, each at another
 * 128-byte offset in its page.  Two tables: abar_t placed at each candidate
 * (abar_init there), and c11-twoline with its count and generation in the
 * candidate's first two lines.
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
#define NC 16

static unsigned char *R;
static unsigned T;
static int cpus[TMAX];
static unsigned char *cand[NC];
static unsigned char *cur;
static int use_abar;

static void step(unsigned tid)
{
    (void)tid;
    if (use_abar) {
        if (abar_arrive_and_wait((abar_t *)(void *)cur)) abort();
        return;
    }
    _Atomic uint32_t *count = (_Atomic uint32_t *)(void *)cur;
    _Atomic uint32_t *gen = (_Atomic uint32_t *)(void *)(cur + 64);
    uint32_t g = atomic_load_explicit(gen, memory_order_relaxed);
    if (atomic_fetch_sub_explicit(count, 1, memory_order_acq_rel) == 1) {
        atomic_store_explicit(count, T, memory_order_relaxed);
        atomic_store_explicit(gen, g + 1, memory_order_release);
    } else {
        while (atomic_load_explicit(gen, memory_order_acquire) == g) cpu_relax();
    }
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
    use_abar = 1;
    printf("abar_t at each candidate\n");
    lab_run("homelab", T, cpus, rounds, NC, names, measure);
    use_abar = 0;
    printf("c11-twoline at each candidate\n");
    lab_run("homelab", T, cpus, rounds, NC, names, measure);
    return 0;
}
