/* treelab - a flat counter against a combining arrival tree of anonymous
 * arrivals (leaf quotas), T pinned threads, interleaved rounds, ns per phase.
 *
 *   treelab T [ROUNDS] [PHASES]
 *
 * Built by hand (it links the core's sources, for the `abar` row):
 *   gcc -O2 -Iinclude -Isrc/core bench/labs/treelab.c \
 *       src/core/{arrive,tree,wait,lifecycle,hazard,futex}.c -static -pthread -o treelab
 *
 * Variants (arrive-and-wait in a loop):
 *   flat      one counter (fetch_sub) on its own line; the last resets it and
 *             stores the generation, on another line, that the others poll
 *   tree-F    leaves of F units (one line each); an arrival takes a unit of
 *             its home leaf by CAS on a word tagged with the phase (a stale
 *             tag is a full leaf of the last phase: the first arrival resets
 *             it); the one that takes a leaf's last unit subtracts the
 *             leaf's quota from the root; the root's last is the flat one's
 *   abar      abar_arrive_and_wait
 */
#define _GNU_SOURCE
#include "abar.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static inline void relax(void) { __builtin_ia32_pause(); }
static uint64_t now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#define MAXL 64
struct line { _Alignas(64) _Atomic uint64_t w; };
static struct {
    struct line root;         /* pending units */
    struct line gen;          /* completed phases */
    struct line leaf[MAXL];   /* tag << 32 | quota << 16 | taken */
    abar_t bar;
} S;
static unsigned T, F, NL, PHASES;
static pthread_barrier_t start, stop;
static int variant;

static void flat_wait(uint64_t *p)
{
    if (atomic_fetch_sub_explicit(&S.root.w, 1, memory_order_acq_rel) == 1) {
        atomic_store_explicit(&S.root.w, T, memory_order_relaxed);
        atomic_store_explicit(&S.gen.w, *p + 1, memory_order_release);
    } else {
        while (atomic_load_explicit(&S.gen.w, memory_order_acquire) == *p) relax();
    }
    ++*p;
}

static inline uint32_t quota(unsigned i) { return T / NL + (i < T % NL); }

static void tree_wait(uint64_t *p, unsigned home)
{
    const uint64_t P = *p;
    unsigned i = home;
    for (;;) {
        uint64_t w = atomic_load_explicit(&S.leaf[i].w, memory_order_relaxed);
        for (;;) {
            uint64_t nw;
            if ((w >> 32) == (uint32_t)P) {
                if ((w & 0xffff) == ((w >> 16) & 0xffff)) break; /* full */
                nw = w + 1;
            } else {
                nw = (P << 32) | ((uint64_t)quota(i) << 16) | 1;
            }
            if (atomic_compare_exchange_weak_explicit(&S.leaf[i].w, &w, nw, memory_order_acq_rel,
                                                      memory_order_relaxed)) {
                uint32_t q = (nw >> 16) & 0xffff;
                if ((nw & 0xffff) == q &&
                    atomic_fetch_sub_explicit(&S.root.w, q, memory_order_acq_rel) == q) {
                    atomic_store_explicit(&S.root.w, T, memory_order_relaxed);
                    atomic_store_explicit(&S.gen.w, P + 1, memory_order_release);
                } else {
                    while (atomic_load_explicit(&S.gen.w, memory_order_acquire) == P) relax();
                }
                ++*p;
                return;
            }
        }
        i = (i + 1) % NL;
    }
}

struct arg { unsigned id; double ns; long csw; };
static void *worker(void *a_)
{
    struct arg *a = a_;
    cpu_set_t cs;
    CPU_ZERO(&cs);
    CPU_SET(a->id, &cs);
    pthread_setaffinity_np(pthread_self(), sizeof cs, &cs);
    for (;;) {
        pthread_barrier_wait(&start);
        if (variant < 0) return NULL;
        unsigned home = a->id / F;
        uint64_t p = atomic_load(&S.gen.w);
        struct rusage ru0, ru1;
        getrusage(RUSAGE_THREAD, &ru0);
        uint64_t t0 = now();
        for (unsigned k = 0; k < PHASES; k++) {
            if (variant == 0) flat_wait(&p);
            else if (variant == 1) tree_wait(&p, home);
            else abar_arrive_and_wait(&S.bar);
        }
        a->ns = (double)(now() - t0) / PHASES;
        getrusage(RUSAGE_THREAD, &ru1);
        a->csw = ru1.ru_nvcsw - ru0.ru_nvcsw + ru1.ru_nivcsw - ru0.ru_nivcsw;
        pthread_barrier_wait(&stop);
    }
}

static int cmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

int main(int argc, char **argv)
{
    T = argc > 1 ? (unsigned)atoi(argv[1]) : 16;
    unsigned rounds = argc > 2 ? (unsigned)atoi(argv[2]) : 7;
    PHASES = argc > 3 ? (unsigned)atoi(argv[3]) : 100000;
    unsigned fans[] = { 2, 3, 4, 6, 8 };
    enum { NF = sizeof fans / sizeof fans[0] };
    const unsigned NV = 2 + NF;
    double res[2 + NF][64];
    pthread_barrier_init(&start, NULL, T + 1);
    pthread_barrier_init(&stop, NULL, T + 1);
    pthread_t th[256];
    struct arg args[256];
    for (unsigned i = 0; i < T; i++) {
        args[i].id = i;
        pthread_create(&th[i], NULL, worker, &args[i]);
    }
    for (unsigned r = 0; r < rounds; r++) {
        for (unsigned v = 0; v < NV; v++) {
            memset(&S, 0, sizeof S);
            S.root.w = T;
            abar_init(&S.bar, T, NULL);
            if (v == 0) { variant = 0; F = T; }
            else if (v == 1) { variant = 2; F = T; }
            else { variant = 1; F = fans[v - 2]; }
            NL = (T + F - 1) / F;
            for (unsigned i = 0; i < NL; i++) S.leaf[i].w = UINT64_C(0xffffffff) << 32;
            pthread_barrier_wait(&start);
            pthread_barrier_wait(&stop);
            double mx = 0;
            long csw = 0;
            for (unsigned i = 0; i < T; i++) {
                if (args[i].ns > mx) mx = args[i].ns;
                csw += args[i].csw;
            }
            if (v == 1 || csw > 100) fprintf(stderr, "round %u variant %u: %ld context switches\n", r, v, csw);
            res[v][r] = mx;
            abar_destroy(&S.bar);
        }
    }
    variant = -1;
    pthread_barrier_wait(&start);
    for (unsigned i = 0; i < T; i++) pthread_join(th[i], NULL);
    printf("T=%u rounds=%u phases=%u (ns per phase: median [min])\n", T, rounds, PHASES);
    for (unsigned v = 0; v < NV; v++) {
        qsort(res[v], rounds, sizeof(double), cmp);
        char name[32];
        if (v == 0) snprintf(name, sizeof name, "flat");
        else if (v == 1) snprintf(name, sizeof name, "abar");
        else snprintf(name, sizeof name, "tree-%u", fans[v - 2]);
        printf("  %-8s %8.0f [%6.0f]\n", name, res[v][rounds / 2], res[v][0]);
    }
    return 0;
}
