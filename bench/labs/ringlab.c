/*
 * ringlab.c - where does the ring's one-way hand-off time go?  The latency
 * row of bench/ring (two 1P1C rings of 2 stages, a round trip per item)
 * rebuilt from bare atomics, one cost added at a time, against the
 * two-line ping-pong, alternating in one process on the same two CPUs:
 *
 *   pingpong    two lines: A stores line1 and polls line2, B the reverse
 *   fill        each ring's fill word only (the consumer never releases,
 *               the producer never checks: unsafe, the floor of the layout)
 *   fill_rel    + the consumer's release store of the free word, which the
 *               producer never reads (unsafe)
 *   proto       + the producer reads the free word when its cached value
 *               says it must (the ring's protocol, no library code)
 *   proto_same  proto, the free word in the fill word's line
 *   proto_late  proto, the consumer's release stored only at its next
 *               wait (after the commit it gates has gone out)
 *   proto_chk   proto, each of the four steps first reading the word its
 *               side gives (the fill word for the producer, the free word
 *               for the consumer), as a ring that kept a side's step count
 *               in its progress word did to check a position
 *   proto_own   proto_chk, the count read from a word of the thread's own
 *               line instead, and stored there by each give
 *   own_wake    proto_own, each give then reading a sleeper count in the
 *               line of the word it stored (the ring's check for parked
 *               waiters)
 *   own_wake2   own_wake, the sleeper count on a line of its own
 *
 * Build: cc -O2 -std=c11 -D_GNU_SOURCE -pthread bench/labs/ringlab.c -o ringlab
 * Run:   ./ringlab [ROUNDS] [CPU_A CPU_B]
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void pin(int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

enum { PP, FILL, FILL_REL, PROTO, PROTO_SAME, PROTO_LATE, PROTO_CHK, PROTO_OWN, OWN_WAKE, OWN_WAKE2, NV };
static const char *const names[NV] = { "pingpong", "fill", "fill_rel", "proto", "proto_same",
                                       "proto_late", "proto_chk", "proto_own", "own_wake", "own_wake2" };

/* Each word on its own 128-byte block, unless proto_same. */
struct mem {
    _Alignas(128) _Atomic uint64_t w[4][16];
    _Alignas(128) _Atomic uint64_t s[4][16];   /* own_wake2's sleeper counts */
};
struct ring { _Atomic uint64_t *fill, *free, *fsleep, *rsleep; };
/* proto_own: each thread's counts, one 128-byte block each */
static _Alignas(128) _Atomic uint64_t own[2][16];

/* proto_chk / proto_own: a step's check of the side's count (a misused
 * position would be refused here); the lab only counts the mismatches. */
static _Atomic long bad;
static inline void chk(int v, _Atomic uint64_t *w, _Atomic uint64_t *o, uint64_t want)
{
    if (v == PROTO_CHK && atomic_load_explicit(w, memory_order_relaxed) != want) bad++;
    if (v >= PROTO_OWN && atomic_load_explicit(o, memory_order_relaxed) != want) bad++;
}
struct lab { int v; long iters; int cpu[2]; struct ring r1, r2; pthread_barrier_t go; uint64_t t[2][2]; };

#define STAGES 2

static inline void spin_ge(_Atomic uint64_t *w, uint64_t need, uint64_t *seen)
{
    uint64_t d;
    while ((d = atomic_load_explicit(w, memory_order_acquire)) < need) relax();
    *seen = d;
}

/* One side: produce on `out`, consume on `in`.  A starts with a commit. */
static void side(const struct lab *L, const struct ring *out, const struct ring *in, int a)
{
    const int v = L->v;
    uint64_t pseen = 0, cseen = 0, late = 0;
    const long n = L->iters;
    if (v == PP) {
        for (uint64_t i = 1; i <= (uint64_t)n; i++) {
            if (a) {
                atomic_store_explicit(out->fill, i, memory_order_release);
                spin_ge(in->fill, i, &cseen);
            } else {
                spin_ge(in->fill, i, &cseen);
                atomic_store_explicit(out->fill, i, memory_order_release);
            }
        }
        return;
    }
    /* A: commit step 0 first; then per item: acquire out (step s), wait in,
     * commit out, release in.  B: the same without the first commit. */
    uint64_t s = 0, c = 0;  /* produced, consumed steps */
    _Atomic uint64_t *po = &own[!a][0], *co = &own[!a][8];  /* this thread's producer, consumer counts */
    atomic_store_explicit(po, 0, memory_order_relaxed);
    atomic_store_explicit(co, 0, memory_order_relaxed);
    if (a) { atomic_store_explicit(out->fill, 1, memory_order_release); s = 1; atomic_store_explicit(po, 1, memory_order_relaxed); }
    for (long i = a; i < n + a; i++) {
        if (i < n) chk(v, out->fill, po, s);
        if (v >= PROTO && s + 1 > STAGES && pseen < s + 1 - STAGES)
            spin_ge(out->free, s + 1 - STAGES, &pseen);
        if (v == PROTO_LATE && late) atomic_store_explicit(in->free, late, memory_order_release);
        chk(v, in->free, co, c);
        if (cseen < c + 1) spin_ge(in->fill, c + 1, &cseen);
        if (i < n) {
            chk(v, out->fill, po, s);
            if (v >= PROTO_OWN) atomic_store_explicit(po, s + 1, memory_order_relaxed);
            atomic_store_explicit(out->fill, s + 1, memory_order_release);
            if (v >= OWN_WAKE && atomic_load_explicit(out->fsleep, memory_order_relaxed)) bad++;
            s++;
        }
        chk(v, in->free, co, c);
        c++;
        if (v >= PROTO_OWN) atomic_store_explicit(co, c, memory_order_relaxed);
        if (v == PROTO_LATE) late = c;
        else if (v >= FILL_REL) atomic_store_explicit(in->free, c, memory_order_release);
        if (v >= OWN_WAKE && atomic_load_explicit(in->rsleep, memory_order_relaxed)) bad++;
    }
}

static void *thr(void *arg)
{
    struct lab *L = ((struct lab **)arg)[0];
    int a = (int)(intptr_t)((void **)arg)[1];
    pin(L->cpu[!a]);
    pthread_barrier_wait(&L->go);
    L->t[!a][0] = now_ns();
    if (a) side(L, &L->r1, &L->r2, 1);
    else side(L, &L->r2, &L->r1, 0);
    L->t[!a][1] = now_ns();
    return NULL;
}

static double measure(int v, long iters, int c0, int c1)
{
    struct mem *m = aligned_alloc(128, sizeof *m);
    memset(m, 0, sizeof *m);
    struct lab L = { .v = v, .iters = iters, .cpu = { c0, c1 } };
    L.r1 = (struct ring){ &m->w[0][0], v == PROTO_SAME ? &m->w[0][8] : &m->w[1][0], &m->w[0][1], &m->w[1][1] };
    L.r2 = (struct ring){ &m->w[2][0], v == PROTO_SAME ? &m->w[2][8] : &m->w[3][0], &m->w[2][1], &m->w[3][1] };
    if (v == OWN_WAKE2) {
        L.r1.fsleep = &m->s[0][0]; L.r1.rsleep = &m->s[1][0];
        L.r2.fsleep = &m->s[2][0]; L.r2.rsleep = &m->s[3][0];
    }
    pthread_barrier_init(&L.go, NULL, 2);
    void *arg[2][2] = { { &L, (void *)1 }, { &L, (void *)0 } };
    pthread_t th[2];
    for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, thr, arg[i]);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&L.go);
    free(m);
    uint64_t t0 = L.t[0][0] < L.t[1][0] ? L.t[0][0] : L.t[1][0];
    uint64_t t1 = L.t[0][1] > L.t[1][1] ? L.t[0][1] : L.t[1][1];
    return (double)(t1 - t0) / (2.0 * (double)iters);
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 9;
    int c0 = argc > 3 ? atoi(argv[2]) : 0, c1 = argc > 3 ? atoi(argv[3]) : 1;
    if (rounds < 1 || rounds > 64) return 2;
    double r[NV][64];
    for (int v = 0; v < NV; v++) measure(v, 20000, c0, c1);
    for (int k = 0; k < rounds; k++)
        for (int v = 0; v < NV; v++) r[v][k] = measure(v, 200000, c0, c1);
    printf("# ringlab: ns per one-way hand-off, %d rounds alternating, CPUs %d %d\n", rounds, c0, c1);
    printf("%-11s %7s %7s %7s %7s\n", "variant", "min", "median", "max", "/pp");
    qsort(r[PP], (size_t)rounds, sizeof(double), cmp);
    for (int v = 0; v < NV; v++) {
        if (v) qsort(r[v], (size_t)rounds, sizeof(double), cmp);
        printf("%-11s %7.1f %7.1f %7.1f %6.2fx\n", names[v], r[v][0], r[v][rounds / 2],
               r[v][rounds - 1], r[v][rounds / 2] / r[PP][rounds / 2]);
    }
    if (bad) printf("# %ld checks failed (a bug in the lab)\n", (long)bad);
    return bad != 0;
}
