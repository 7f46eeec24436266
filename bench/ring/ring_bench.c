/*
 * ring_bench.c - the producer/consumer ring against its rivals.
 *
 * Throughput: one producer, C consumers, every item written in place by the
 * producer (bytes of payload, its sequence number in the first and last
 * word) and copied out and checked by each consumer that receives it.
 *
 *   abar_ring       abar_ring_t: one-sided, every consumer sees every item
 *   seed_4bar       seed 002 as written, generalised to `stages` slots: every
 *                   thread arrives on every ready and filled barrier
 *                   (abar_arrive_and_wait), counts 1 + C
 *   mutex_cv        bounded queue on one pthread mutex and two condition
 *                   variables; broadcast (a slot is freed when all C read it);
 *                   copies under the lock, the textbook bounded buffer
 *   ck_spsc         Concurrency Kit ck_ring, SPSC, typed slots, used as a ck
 *                   user would: the producer builds the item in a local and
 *                   the enqueue copies it in, the dequeue copies it out; for
 *                   C > 1 one SPSC ring per consumer (fan-out: the item is
 *                   built once and copied into each consumer's ring)
 *   ck_spsc_inplace the same rings, the producer writing the item in place
 *                   (enqueue_reserve + commit; dequeue copies out)
 *   ck_spmc_dist    ck_ring SPMC: each item goes to ONE consumer (work
 *                   distribution, not broadcast: a different contract, shown
 *                   for reference; items/s counts each item once)
 *   ck_mpmc_dist    ck_ring MPMC, typed, copied in and out: each item to ONE
 *                   consumer, as ck_spmc_dist
 *
 * ck_* never block: they poll (pause, then sched_yield once polling fails
 * for a while) - the usual way to run ck_ring.
 *
 * Latency: a round trip over two channels, halved = the one-way hand-off
 * (commit -> the waiting consumer's return; each hop an acquire, commit, wait
 * and release), against a cache-line ping-pong of the same run (pure spin)
 * and the same ping-pong polling with the ck rows' backoff.
 *
 * -A NAME labels the abar_ring rows (e.g. to run two builds of the library
 * side by side and tell their rows apart).
 *
 * Each throughput round runs -n (-N) items, or fewer where a short
 * calibration run shows that would take longer than -t seconds (0.5).
 *
 * Output: CSV rows
 *   scenario,impl,threads,param,median,min,max,rounds,phases,unit,flags
 * then a summary against the targets.  Exit status 1 if any consumer
 * saw a wrong value or a call failed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <abar.h>
#include <abar_ring.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef RING_BENCH_HAVE_CK
#include <ck_ring.h>
#endif

#define MAX_C 64

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Poll backoff for the non-blocking rivals: pause, then yield. */
static inline void backoff(unsigned *n)
{
    if (++*n < 128) relax();
    else sched_yield();
}

static int opt_pin = -1;        /* -1: pin when threads <= CPUs */
static long ncpu;
static _Atomic long errors;

static void pin(unsigned threads, unsigned i)
{
    if (opt_pin == 0 || (opt_pin < 0 && threads > (unsigned)ncpu)) return;
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(i % (unsigned)ncpu, &s);
    pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

/* ---- payload: written in place, copied out and checked --------------------- */

static unsigned char pattern[4096];

static inline void fill(void *slot, size_t bytes, uint64_t seq)
{
    if (bytes == 64) memcpy(slot, pattern, 64);
    else memcpy(slot, pattern, 4096);
    uint64_t *w = slot;
    w[0] = seq;
    w[bytes / 8 - 1] = seq;
}

static inline long check(const void *slot, size_t bytes, uint64_t seq, void *local)
{
    if (bytes == 64) memcpy(local, slot, 64);
    else memcpy(local, slot, 4096);
    const uint64_t *w = local;
    return (w[0] != seq) + (w[bytes / 8 - 1] != seq);
}

struct cfg {
    size_t bytes;
    unsigned consumers, stages;
    long items;
};

/* Runs producer + C consumers; returns seconds from the start line to the
 * last join. */
struct run {
    const struct cfg *c;
    void *(*producer)(void *);
    void *(*consumer)(void *);
    void *state;
    pthread_barrier_t start;
};
struct targ { struct run *run; unsigned id; uint64_t t0, t1; };

/* Each thread times itself: the run lasts from the first start to the last
 * end (a main thread that reads the clock after the start line may be
 * descheduled there on a crowded machine and see almost nothing). */
static void *tramp(void *a)
{
    struct targ *t = a;
    pin(t->run->c->consumers + 1, t->id);
    pthread_barrier_wait(&t->run->start);
    t->t0 = now_ns();
    void *r = t->id == 0 ? t->run->producer(a) : t->run->consumer(a);
    t->t1 = now_ns();
    return r;
}

static double run_threads(struct run *r)
{
    unsigned n = r->c->consumers + 1;
    pthread_t th[MAX_C + 1];
    struct targ ta[MAX_C + 1];
    pthread_barrier_init(&r->start, NULL, n + 1);
    for (unsigned i = 0; i < n; i++) {
        ta[i] = (struct targ){ r, i, 0, 0 };
        pthread_create(&th[i], NULL, tramp, &ta[i]);
    }
    pthread_barrier_wait(&r->start);
    uint64_t t0 = UINT64_MAX, t1 = 0;
    for (unsigned i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        if (ta[i].t0 < t0) t0 = ta[i].t0;
        if (ta[i].t1 > t1) t1 = ta[i].t1;
    }
    pthread_barrier_destroy(&r->start);
    return (double)(t1 - t0) * 1e-9;
}

/* ---- abar_ring -------------------------------------------------------------- */

struct ring_state { abar_ring_t ring; unsigned char *buf; };

static void *ring_producer(void *a)
{
    struct targ *t = a;
    struct ring_state *s = t->run->state;
    const struct cfg *c = t->run->c;
    abar_ring_pos_t pos;
    if (abar_ring_producer_start(&s->ring, &pos)) { errors++; return NULL; }
    for (long i = 0; i < c->items; i++) {
        if (abar_ring_producer_acquire(&s->ring, &pos)) { errors++; return NULL; }
        fill(s->buf + (size_t)pos.index * c->bytes, c->bytes, (uint64_t)i);
        if (abar_ring_producer_commit(&s->ring, &pos)) { errors++; return NULL; }
    }
    return NULL;
}

static void *ring_consumer(void *a)
{
    struct targ *t = a;
    struct ring_state *s = t->run->state;
    const struct cfg *c = t->run->c;
    _Alignas(64) unsigned char local[4096];
    abar_ring_pos_t pos;
    long bad = 0;
    if (abar_ring_consumer_start(&s->ring, &pos)) { errors++; return NULL; }
    for (long i = 0; i < c->items; i++) {
        if (abar_ring_consumer_wait(&s->ring, &pos)) { errors++; return NULL; }
        bad += check(s->buf + (size_t)pos.index * c->bytes, c->bytes, (uint64_t)i, local);
        if (abar_ring_consumer_release(&s->ring, &pos)) { errors++; return NULL; }
    }
    errors += bad;
    return NULL;
}

static double bench_ring(const struct cfg *c)
{
    struct ring_state s;
    memset(&s, 0, sizeof s);
    s.buf = aligned_alloc(64, c->stages * c->bytes);
    if (abar_ring_init(&s.ring, c->stages, 1, c->consumers, NULL)) { errors++; return 0; }
    struct run r = { c, ring_producer, ring_consumer, &s, { { 0 } } };
    double sec = run_threads(&r);
    abar_ring_destroy(&s.ring);
    free(s.buf);
    return c->items / sec;
}

/* ---- seed 002 as written: every thread on all barriers ----------------------- */

struct seed_state { abar_t *ready, *filled; unsigned char *buf; };

static void *seed_producer(void *a)
{
    struct targ *t = a;
    struct seed_state *s = t->run->state;
    const struct cfg *c = t->run->c;
    for (long i = 0; i < c->items; i++) {
        unsigned k = (unsigned)(i % c->stages);
        if (abar_arrive_and_wait(&s->ready[k])) { errors++; return NULL; }
        fill(s->buf + (size_t)k * c->bytes, c->bytes, (uint64_t)i);
        if (abar_token_error(abar_arrive(&s->filled[k]))) { errors++; return NULL; }
    }
    return NULL;
}

static void *seed_consumer(void *a)
{
    struct targ *t = a;
    struct seed_state *s = t->run->state;
    const struct cfg *c = t->run->c;
    _Alignas(64) unsigned char local[4096];
    long bad = 0;
    for (unsigned k = 0; k < c->stages; k++)
        if (abar_token_error(abar_arrive(&s->ready[k]))) { errors++; return NULL; }
    for (long i = 0; i < c->items; i++) {
        unsigned k = (unsigned)(i % c->stages);
        if (abar_arrive_and_wait(&s->filled[k])) { errors++; return NULL; }
        bad += check(s->buf + (size_t)k * c->bytes, c->bytes, (uint64_t)i, local);
        /* the last lap's arrivals open phases nobody finishes: harmless */
        if (abar_token_error(abar_arrive(&s->ready[k]))) { errors++; return NULL; }
    }
    errors += bad;
    return NULL;
}

static double bench_seed(const struct cfg *c)
{
    struct seed_state s;
    s.ready = aligned_alloc(64, c->stages * sizeof(abar_t));
    s.filled = aligned_alloc(64, c->stages * sizeof(abar_t));
    s.buf = aligned_alloc(64, c->stages * c->bytes);
    for (unsigned k = 0; k < c->stages; k++) {
        abar_init(&s.ready[k], 1 + c->consumers, NULL);
        abar_init(&s.filled[k], 1 + c->consumers, NULL);
    }
    struct run r = { c, seed_producer, seed_consumer, &s, { { 0 } } };
    double sec = run_threads(&r);
    for (unsigned k = 0; k < c->stages; k++) {
        abar_destroy(&s.ready[k]);
        abar_destroy(&s.filled[k]);
    }
    free(s.ready); free(s.filled); free(s.buf);
    return c->items / sec;
}

/* ---- bounded broadcast queue on a mutex and condition variables --------------- */

struct mq {
    pthread_mutex_t m;
    pthread_cond_t not_full, not_empty;
    uint64_t head, tail;        /* head: oldest slot not yet read by all */
    unsigned *remaining;        /* readers still to read each slot */
    unsigned char *buf;
};

static void *mq_producer(void *a)
{
    struct targ *t = a;
    struct mq *q = t->run->state;
    const struct cfg *c = t->run->c;
    for (long i = 0; i < c->items; i++) {
        pthread_mutex_lock(&q->m);
        while (q->tail - q->head == c->stages) pthread_cond_wait(&q->not_full, &q->m);
        unsigned k = (unsigned)(q->tail % c->stages);
        fill(q->buf + (size_t)k * c->bytes, c->bytes, (uint64_t)i);
        q->remaining[k] = c->consumers;
        q->tail++;
        if (c->consumers == 1) pthread_cond_signal(&q->not_empty);
        else pthread_cond_broadcast(&q->not_empty);
        pthread_mutex_unlock(&q->m);
    }
    return NULL;
}

static void *mq_consumer(void *a)
{
    struct targ *t = a;
    struct mq *q = t->run->state;
    const struct cfg *c = t->run->c;
    _Alignas(64) unsigned char local[4096];
    long bad = 0;
    for (long i = 0; i < c->items; i++) {
        pthread_mutex_lock(&q->m);
        while (q->tail == (uint64_t)i) pthread_cond_wait(&q->not_empty, &q->m);
        unsigned k = (unsigned)(i % c->stages);
        bad += check(q->buf + (size_t)k * c->bytes, c->bytes, (uint64_t)i, local);
        if (--q->remaining[k] == 0) {   /* slots are freed in order */
            q->head++;
            pthread_cond_signal(&q->not_full);
        }
        pthread_mutex_unlock(&q->m);
    }
    errors += bad;
    return NULL;
}

static double bench_mq(const struct cfg *c)
{
    struct mq q;
    pthread_mutex_init(&q.m, NULL);
    pthread_cond_init(&q.not_full, NULL);
    pthread_cond_init(&q.not_empty, NULL);
    q.head = q.tail = 0;
    q.remaining = calloc(c->stages, sizeof(unsigned));
    q.buf = aligned_alloc(64, c->stages * c->bytes);
    struct run r = { c, mq_producer, mq_consumer, &q, { { 0 } } };
    double sec = run_threads(&r);
    pthread_mutex_destroy(&q.m);
    pthread_cond_destroy(&q.not_full);
    pthread_cond_destroy(&q.not_empty);
    free(q.remaining); free(q.buf);
    return c->items / sec;
}

#ifdef RING_BENCH_HAVE_CK
/* ---- Concurrency Kit ck_ring ---------------------------------------------------- */

struct item64 { _Alignas(64) unsigned char b[64]; };
struct item4k { _Alignas(64) unsigned char b[4096]; };
CK_RING_PROTOTYPE(i64, item64)
CK_RING_PROTOTYPE(i4k, item4k)

struct ck_state {
    struct ck_ring ring[MAX_C];
    void *buf[MAX_C];
    unsigned size;              /* power of two >= 2 * stages (capacity size - 1) */
    int mpmc;                   /* the _dist consumers dequeue with _mpmc, else _spmc */
    _Alignas(64) _Atomic long taken;
};

/* One macro per slot type, so each copy has a compile-time size, as ck's
 * typed interface intends. */
#define CK_FUNCS(T, NAME)                                                          \
static void *ck_spsc_producer_##T(void *a)                                         \
{                                                                                  \
    struct targ *t = a;                                                            \
    struct ck_state *s = t->run->state;                                            \
    const struct cfg *c = t->run->c;                                               \
    static _Thread_local struct NAME item;                                         \
    for (long i = 0; i < c->items; i++) {                                          \
        fill(item.b, sizeof item.b, (uint64_t)i);                                  \
        for (unsigned q = 0; q < c->consumers; q++) {                              \
            unsigned n = 0;                                                        \
            while (!ck_ring_enqueue_spsc_##T(&s->ring[q], s->buf[q], &item))       \
                backoff(&n);                                                       \
        }                                                                          \
    }                                                                              \
    return NULL;                                                                   \
}                                                                                  \
static void *ck_inplace_producer_##T(void *a)                                      \
{                                                                                  \
    struct targ *t = a;                                                            \
    struct ck_state *s = t->run->state;                                            \
    const struct cfg *c = t->run->c;                                               \
    for (long i = 0; i < c->items; i++)                                            \
        for (unsigned q = 0; q < c->consumers; q++) {                              \
            struct NAME *slot;                                                     \
            unsigned n = 0;                                                        \
            while ((slot = ck_ring_enqueue_reserve_spsc_##T(&s->ring[q], s->buf[q])) == NULL) \
                backoff(&n);                                                       \
            fill(slot->b, sizeof slot->b, (uint64_t)i);                            \
            ck_ring_enqueue_commit_spsc(&s->ring[q]);                              \
        }                                                                          \
    return NULL;                                                                   \
}                                                                                  \
static void *ck_spsc_consumer_##T(void *a)                                         \
{                                                                                  \
    struct targ *t = a;                                                            \
    struct ck_state *s = t->run->state;                                            \
    const struct cfg *c = t->run->c;                                               \
    unsigned q = t->id - 1;                                                        \
    static _Thread_local struct NAME local, chk;                                   \
    long bad = 0;                                                                  \
    for (long i = 0; i < c->items; i++) {                                          \
        unsigned n = 0;                                                            \
        while (!ck_ring_dequeue_spsc_##T(&s->ring[q], s->buf[q], &local)) backoff(&n); \
        bad += check(local.b, sizeof local.b, (uint64_t)i, chk.b);                 \
    }                                                                              \
    errors += bad;                                                                 \
    return NULL;                                                                   \
}                                                                                  \
static void *ck_spmc_producer_##T(void *a)                                         \
{                                                                                  \
    struct targ *t = a;                                                            \
    struct ck_state *s = t->run->state;                                            \
    const struct cfg *c = t->run->c;                                               \
    for (long i = 0; i < c->items + (long)c->consumers; i++) {                     \
        struct NAME *slot;                                                         \
        unsigned n = 0;                                                            \
        while ((slot = ck_ring_enqueue_reserve_spmc_##T(&s->ring[0], s->buf[0])) == NULL) \
            backoff(&n);                                                           \
        /* past the items: one end marker per consumer */                          \
        fill(slot->b, sizeof slot->b, i < c->items ? (uint64_t)i : UINT64_MAX);    \
        ck_ring_enqueue_commit_spmc(&s->ring[0]);                                  \
    }                                                                              \
    return NULL;                                                                   \
}                                                                                  \
static void *ck_mpmc_producer_##T(void *a)                                         \
{                                                                                  \
    struct targ *t = a;                                                            \
    struct ck_state *s = t->run->state;                                            \
    const struct cfg *c = t->run->c;                                               \
    static _Thread_local struct NAME item;                                         \
    for (long i = 0; i < c->items + (long)c->consumers; i++) {                     \
        unsigned n = 0;                                                            \
        /* past the items: one end marker per consumer */                          \
        fill(item.b, sizeof item.b, i < c->items ? (uint64_t)i : UINT64_MAX);      \
        while (!ck_ring_enqueue_mpmc_##T(&s->ring[0], s->buf[0], &item))           \
            backoff(&n);                                                           \
    }                                                                              \
    return NULL;                                                                   \
}                                                                                  \
static void *ck_spmc_consumer_##T(void *a)                                         \
{                                                                                  \
    struct targ *t = a;                                                            \
    struct ck_state *s = t->run->state;                                            \
    static _Thread_local struct NAME local;                                        \
    long bad = 0, took = 0;                                                        \
    uint64_t last = 0;                                                             \
    for (;;) {                                                                     \
        unsigned n = 0;                                                            \
        while (!(s->mpmc ? ck_ring_dequeue_mpmc_##T(&s->ring[0], s->buf[0], &local)    \
                         : ck_ring_dequeue_spmc_##T(&s->ring[0], s->buf[0], &local)))  \
            backoff(&n);                                                           \
        const uint64_t *w = (const uint64_t *)(void *)local.b;                     \
        if (w[0] == UINT64_MAX) break;                                             \
        /* each consumer sees increasing numbers, first == last word */            \
        bad += (took && w[0] <= last) + (w[0] != w[sizeof local.b / 8 - 1]);       \
        last = w[0];                                                               \
        took++;                                                                    \
    }                                                                              \
    s->taken += took;                                                              \
    errors += bad;                                                                 \
    return NULL;                                                                   \
}

CK_FUNCS(i64, item64)
CK_FUNCS(i4k, item4k)

enum { CK_SPSC, CK_INPLACE, CK_SPMC, CK_MPMC };

static double bench_ck(const struct cfg *c, int kind)
{
    int spmc = kind == CK_SPMC || kind == CK_MPMC;   /* one ring, items distributed */
    struct ck_state *s = aligned_alloc(64, sizeof *s);
    memset(s, 0, sizeof *s);
    s->mpmc = kind == CK_MPMC;
    s->size = 2;
    while (s->size < 2 * c->stages) s->size *= 2;
    unsigned rings = spmc ? 1 : c->consumers;
    for (unsigned q = 0; q < rings; q++) {
        ck_ring_init(&s->ring[q], s->size);
        s->buf[q] = aligned_alloc(64, s->size * c->bytes);
    }
    struct run r = { c, NULL, NULL, s, { { 0 } } };
    int b64 = c->bytes == 64;
    switch (kind) {
    case CK_SPSC: r.producer = b64 ? ck_spsc_producer_i64 : ck_spsc_producer_i4k; break;
    case CK_INPLACE: r.producer = b64 ? ck_inplace_producer_i64 : ck_inplace_producer_i4k; break;
    case CK_SPMC: r.producer = b64 ? ck_spmc_producer_i64 : ck_spmc_producer_i4k; break;
    default: r.producer = b64 ? ck_mpmc_producer_i64 : ck_mpmc_producer_i4k; break;
    }
    if (spmc) r.consumer = b64 ? ck_spmc_consumer_i64 : ck_spmc_consumer_i4k;
    else r.consumer = b64 ? ck_spsc_consumer_i64 : ck_spsc_consumer_i4k;
    double sec = run_threads(&r);
    if (spmc && s->taken != c->items) errors++;
    for (unsigned q = 0; q < rings; q++) free(s->buf[q]);
    free(s);
    return c->items / sec;
}
static double bench_ck_spsc(const struct cfg *c) { return bench_ck(c, CK_SPSC); }
static double bench_ck_inplace(const struct cfg *c) { return bench_ck(c, CK_INPLACE); }
static double bench_ck_spmc(const struct cfg *c) { return bench_ck(c, CK_SPMC); }
static double bench_ck_mpmc(const struct cfg *c) { return bench_ck(c, CK_MPMC); }
#endif

/* ---- latency: round trips over two channels ------------------------------------- */

struct lat {
    long iters;
    pthread_barrier_t start;
    void *(*a)(void *), *(*b)(void *);
    _Alignas(64) _Atomic uint64_t line1;
    _Alignas(64) _Atomic uint64_t line2;
    _Alignas(64) abar_ring_t r1;
    abar_ring_t r2;
    _Alignas(64) pthread_mutex_t m1, m2;
    pthread_cond_t c1, c2;
    int full1, full2;
#ifdef RING_BENCH_HAVE_CK
    struct ck_ring k1, k2;
    struct ck_ring_buffer kb1[16], kb2[16];
#endif
};

static void *pp_a(void *arg)
{
    struct lat *l = arg;
    for (uint64_t i = 1; i <= (uint64_t)l->iters; i++) {
        /* release/acquire: a hand-off carries data, as the ring's does */
        atomic_store_explicit(&l->line1, i, memory_order_release);
        while (atomic_load_explicit(&l->line2, memory_order_acquire) != i) relax();
    }
    return NULL;
}
static void *pp_b(void *arg)
{
    struct lat *l = arg;
    for (uint64_t i = 1; i <= (uint64_t)l->iters; i++) {
        while (atomic_load_explicit(&l->line1, memory_order_acquire) != i) relax();
        atomic_store_explicit(&l->line2, i, memory_order_release);
    }
    return NULL;
}

/* The same ping-pong with the ck rows' poll backoff (pause, then yield):
 * the floor for a waiter that lets the CPU go on a crowded machine. */
static void *ppy_a(void *arg)
{
    struct lat *l = arg;
    for (uint64_t i = 1; i <= (uint64_t)l->iters; i++) {
        atomic_store_explicit(&l->line1, i, memory_order_release);
        unsigned n = 0;
        while (atomic_load_explicit(&l->line2, memory_order_acquire) != i) backoff(&n);
    }
    return NULL;
}
static void *ppy_b(void *arg)
{
    struct lat *l = arg;
    for (uint64_t i = 1; i <= (uint64_t)l->iters; i++) {
        unsigned n = 0;
        while (atomic_load_explicit(&l->line1, memory_order_acquire) != i) backoff(&n);
        atomic_store_explicit(&l->line2, i, memory_order_release);
    }
    return NULL;
}

static void *ring_a(void *arg)
{
    struct lat *l = arg;
    abar_ring_pos_t p1, c2;
    if (abar_ring_producer_start(&l->r1, &p1) || abar_ring_consumer_start(&l->r2, &c2)) { errors++; return NULL; }
    /* Acquires come before the wait and releases after the next send, off
     * the critical path, as in B. */
    int e = abar_ring_producer_acquire(&l->r1, &p1);
    e |= abar_ring_producer_commit(&l->r1, &p1);            /* -> B */
    for (long i = 1; i < l->iters && !e; i++) {
        e |= abar_ring_producer_acquire(&l->r1, &p1);       /* free: released 2 items ago */
        e |= abar_ring_consumer_wait(&l->r2, &c2);          /* <- B */
        e |= abar_ring_producer_commit(&l->r1, &p1);        /* -> B */
        e |= abar_ring_consumer_release(&l->r2, &c2);
    }
    e |= abar_ring_consumer_wait(&l->r2, &c2);
    e |= abar_ring_consumer_release(&l->r2, &c2);
    if (e) errors++;
    return NULL;
}
static void *ring_b(void *arg)
{
    struct lat *l = arg;
    abar_ring_pos_t c1, p2;
    if (abar_ring_consumer_start(&l->r1, &c1) || abar_ring_producer_start(&l->r2, &p2)) { errors++; return NULL; }
    for (long i = 0; i < l->iters; i++) {
        int e = abar_ring_producer_acquire(&l->r2, &p2);    /* off the critical path */
        e |= abar_ring_consumer_wait(&l->r1, &c1);          /* <- A */
        e |= abar_ring_producer_commit(&l->r2, &p2);        /* -> A */
        e |= abar_ring_consumer_release(&l->r1, &c1);
        if (e) { errors++; return NULL; }
    }
    return NULL;
}

static void *mq_a(void *arg)
{
    struct lat *l = arg;
    for (long i = 0; i < l->iters; i++) {
        pthread_mutex_lock(&l->m1); l->full1 = 1; pthread_cond_signal(&l->c1); pthread_mutex_unlock(&l->m1);
        pthread_mutex_lock(&l->m2);
        while (!l->full2) pthread_cond_wait(&l->c2, &l->m2);
        l->full2 = 0;
        pthread_mutex_unlock(&l->m2);
    }
    return NULL;
}
static void *mq_b(void *arg)
{
    struct lat *l = arg;
    for (long i = 0; i < l->iters; i++) {
        pthread_mutex_lock(&l->m1);
        while (!l->full1) pthread_cond_wait(&l->c1, &l->m1);
        l->full1 = 0;
        pthread_mutex_unlock(&l->m1);
        pthread_mutex_lock(&l->m2); l->full2 = 1; pthread_cond_signal(&l->c2); pthread_mutex_unlock(&l->m2);
    }
    return NULL;
}

#ifdef RING_BENCH_HAVE_CK
static void *ck_a(void *arg)
{
    struct lat *l = arg;
    for (uintptr_t i = 1; i <= (uintptr_t)l->iters; i++) {
        void *v;
        unsigned n = 0;
        while (!ck_ring_enqueue_spsc(&l->k1, l->kb1, (void *)i)) backoff(&n);
        n = 0;
        while (!ck_ring_dequeue_spsc(&l->k2, l->kb2, &v)) backoff(&n);
        if ((uintptr_t)v != i) errors++;
    }
    return NULL;
}
static void *ck_b(void *arg)
{
    struct lat *l = arg;
    for (uintptr_t i = 1; i <= (uintptr_t)l->iters; i++) {
        void *v;
        unsigned n = 0;
        while (!ck_ring_dequeue_spsc(&l->k1, l->kb1, &v)) backoff(&n);
        if ((uintptr_t)v != i) errors++;
        n = 0;
        while (!ck_ring_enqueue_spsc(&l->k2, l->kb2, v)) backoff(&n);
    }
    return NULL;
}
#endif

struct lat_targ { struct lat *l; int id; uint64_t t0, t1; };
static void *lat_tramp(void *arg)
{
    struct lat_targ *t = arg;
    pin(2, (unsigned)t->id);
    pthread_barrier_wait(&t->l->start);
    t->t0 = now_ns();
    void *r = t->id == 0 ? t->l->a(t->l) : t->l->b(t->l);
    t->t1 = now_ns();
    return r;
}

/* ns per one-way hand-off */
static double bench_lat(void *(*a)(void *), void *(*b)(void *), long iters)
{
    struct lat *l = aligned_alloc(64, sizeof *l);
    memset(l, 0, sizeof *l);
    l->iters = iters; l->a = a; l->b = b;
    abar_ring_init(&l->r1, 2, 1, 1, NULL);
    abar_ring_init(&l->r2, 2, 1, 1, NULL);
    pthread_mutex_init(&l->m1, NULL); pthread_mutex_init(&l->m2, NULL);
    pthread_cond_init(&l->c1, NULL); pthread_cond_init(&l->c2, NULL);
#ifdef RING_BENCH_HAVE_CK
    ck_ring_init(&l->k1, 16);
    ck_ring_init(&l->k2, 16);
#endif
    pthread_barrier_init(&l->start, NULL, 3);
    pthread_t th[2];
    struct lat_targ ta[2] = { { l, 0, 0, 0 }, { l, 1, 0, 0 } };
    for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, lat_tramp, &ta[i]);
    pthread_barrier_wait(&l->start);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    uint64_t t0 = ta[0].t0 < ta[1].t0 ? ta[0].t0 : ta[1].t0;
    uint64_t t1 = ta[0].t1 > ta[1].t1 ? ta[0].t1 : ta[1].t1;
    abar_ring_destroy(&l->r1);
    abar_ring_destroy(&l->r2);
    pthread_barrier_destroy(&l->start);
    free(l);
    return (double)(t1 - t0) / (2.0 * (double)iters);
}

/* ---- driver ---------------------------------------------------------------------- */

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

struct stat3 { double med, min, max; };
static struct stat3 stats(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return (struct stat3){ v[n / 2], v[0], v[n - 1] };
}

struct impl { const char *name; double (*fn)(const struct cfg *); };

static struct impl impls[] = {
    { "abar_ring", bench_ring },
    { "seed_4bar", bench_seed },
    { "mutex_cv", bench_mq },
#ifdef RING_BENCH_HAVE_CK
    { "ck_spsc", bench_ck_spsc },
    { "ck_spsc_inplace", bench_ck_inplace },
    { "ck_spmc_dist", bench_ck_spmc },
    { "ck_mpmc_dist", bench_ck_mpmc },
#endif
};
#define NIMPL (sizeof impls / sizeof impls[0])

static double tput[NIMPL][2][3];   /* [impl][bytes 64, 4096][consumers 1, 3, 8] */
static double lat[5];

/* The row of impl `name`, -1 if it is not built. */
static int impl_ix(const char *name)
{
    for (size_t m = 0; m < NIMPL; m++)
        if (strcmp(impls[m].name, name) == 0) return (int)m;
    return -1;
}

/* Best of the named rows' figures at [bi][ci] (0 where none ran). */
static double best_of(const char *const *names, int bi, int ci)
{
    double b = 0;
    for (; *names; names++) {
        int m = impl_ix(*names);
        if (m >= 0 && tput[m][bi][ci] > b) b = tput[m][bi][ci];
    }
    return b;
}

static double ratio(double a, double b) { return b > 0 ? a / b : 0; }

/* -m: a comma-separated list of rows (NULL: every row). */
static int picked(const char *only, const char *name)
{
    if (only == NULL) return 1;
    size_t n = strlen(name);
    for (const char *p = only; (p = strstr(p, name)) != NULL; p += n)
        if ((p == only || p[-1] == ',') && (p[n] == '\0' || p[n] == ',')) return 1;
    return 0;
}

static void usage(const char *p)
{
    fprintf(stderr,
            "usage: %s [-r rounds] [-n items64] [-N items4k] [-s stages] [-l iters] [-p 0|1]\n"
            "          [-T] (throughput only) [-L] (latency only)\n"
            "          [-c consumers] [-b bytes] [-m impl,...]: run only these\n"
            "          [-t seconds]: target length of a throughput round (items capped to fit)\n"
            "          [-A name]: the name the abar_ring rows carry\n", p);
    exit(2);
}

int main(int argc, char **argv)
{
    int rounds = 5, stages = 16, do_t = 1, do_l = 1, only_c = 0, only_b = 0;
    double round_s = 0.5;
    const char *only_m = NULL;
    long items64 = 400000, items4k = 100000, liters = 200000;
    int o;
    const char *ring_name = "abar_ring";
    while ((o = getopt(argc, argv, "r:n:N:s:l:p:TLc:b:m:t:A:")) != -1) {
        switch (o) {
        case 'r': rounds = atoi(optarg); break;
        case 'n': items64 = atol(optarg); break;
        case 'N': items4k = atol(optarg); break;
        case 's': stages = atoi(optarg); break;
        case 'l': liters = atol(optarg); break;
        case 'p': opt_pin = atoi(optarg); break;
        case 'T': do_l = 0; break;
        case 'c': only_c = atoi(optarg); break;
        case 'b': only_b = atoi(optarg); break;
        case 'm': only_m = optarg; break;
        case 't': round_s = atof(optarg); break;
        case 'L': do_t = 0; break;
        case 'A': ring_name = optarg; break;
        default: usage(argv[0]);
        }
    }
    if (rounds < 1 || rounds > 64 || stages < 1 || items64 < 1 || items4k < 1 || liters < 1) usage(argv[0]);
    ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t aff;
    if (sched_getaffinity(0, sizeof aff, &aff) == 0 && CPU_COUNT(&aff) < ncpu) ncpu = CPU_COUNT(&aff);
    for (size_t i = 0; i < sizeof pattern; i++) pattern[i] = (unsigned char)(i * 131u);

    impls[0].name = ring_name;
    printf("# ring_bench: %ld CPUs, stages %d, rounds %d (median, min, max)\n", ncpu, stages, rounds);
    printf("scenario,impl,threads,param,median,min,max,rounds,phases,unit,flags\n");
    static const size_t sizes[2] = { 64, 4096 };
    static const unsigned cons[3] = { 1, 3, 8 };
    double v[64];
    static double lv[8][64];                  /* latency rows, round by round */
    if (do_t) {
        for (int bi = 0; bi < 2; bi++)
            for (int ci = 0; ci < 3; ci++)
                for (size_t m = 0; m < NIMPL; m++) {
                    if ((only_c && (unsigned)only_c != cons[ci]) || (only_b && (size_t)only_b != sizes[bi]) ||
                        !picked(only_m, impls[m].name))
                        continue;
                    struct cfg c = { sizes[bi], cons[ci], (unsigned)stages,
                                     bi == 0 ? items64 : items4k };
                    long e0 = errors;
                    /* Calibrate: a short run sets the item count so that a
                     * round lasts about round_s (slow rivals on a crowded
                     * machine would otherwise take minutes). */
                    struct cfg c0 = c;
                    c0.items = c.items < 2000 ? c.items : 2000;
                    double rate = impls[m].fn(&c0);
                    long want = (long)(rate * round_s);
                    if (want < c.items) c.items = want > c0.items ? want : c0.items;
                    for (int r = 0; r < rounds; r++) v[r] = impls[m].fn(&c);
                    struct stat3 s = stats(v, rounds);
                    tput[m][bi][ci] = s.med;
                    printf("tput_%zuB,%s,%u,%u,%.0f,%.0f,%.0f,%d,%ld,items/s,%s\n", sizes[bi],
                           impls[m].name, cons[ci] + 1, cons[ci], s.med, s.min, s.max, rounds,
                           c.items, errors != e0 ? "ERR" : "");
                    fflush(stdout);
                }
    }
    struct { const char *name; void *(*a)(void *), *(*b)(void *); } lats[] = {
        { "pingpong", pp_a, pp_b },
        { "pingpong_yield", ppy_a, ppy_b },
        { ring_name, ring_a, ring_b },
#ifdef RING_BENCH_HAVE_CK
        { "ck_spsc", ck_a, ck_b },
#endif
        { "mutex_cv", mq_a, mq_b },
    };
    int nlat = (int)(sizeof lats / sizeof lats[0]);
    if (do_l) {
        /* round by round, every row in turn: drift hits them alike */
        for (int r = 0; r < rounds; r++)
            for (int m = 0; m < nlat; m++) {
                if (!picked(only_m, lats[m].name)) continue;
                long it = strcmp(lats[m].name, "mutex_cv") == 0 ? liters / 10 : liters;
                lv[m][r] = bench_lat(lats[m].a, lats[m].b, it);
            }
        for (int m = 0; m < nlat; m++) {
            if (!picked(only_m, lats[m].name)) continue;
            long it = strcmp(lats[m].name, "mutex_cv") == 0 ? liters / 10 : liters;
            memcpy(v, lv[m], (size_t)rounds * sizeof *v);     /* lv keeps the round order */
            struct stat3 s = stats(v, rounds);
            lat[m] = s.med;
            printf("latency,%s,2,0,%.1f,%.1f,%.1f,%d,%ld,ns/handoff,\n", lats[m].name, s.med,
                   s.min, s.max, rounds, it);
            fflush(stdout);
        }
    }

    printf("# targets (ratios within this run)\n");
    if (do_t) {
        int mq = impl_ix("mutex_cv");
        printf("# %s / mutex_cv, 64 B:  1C %.2fx  3C %.2fx  8C %.2fx\n", ring_name,
               ratio(tput[0][0][0], tput[mq][0][0]), ratio(tput[0][0][1], tput[mq][0][1]),
               ratio(tput[0][0][2], tput[mq][0][2]));
#ifdef RING_BENCH_HAVE_CK
        static const char *const spsc[] = { "ck_spsc", NULL };
        static const char *const bcast[] = { "ck_spsc", "ck_spsc_inplace", NULL };
        static const char *const any[] = { "ck_spsc", "ck_spsc_inplace", "ck_spmc_dist",
                                           "ck_mpmc_dist", NULL };
        printf("# %s / ck_spsc, 1P1C:  64 B %.2fx (target >= 0.8x)  4 KiB %.2fx (target >= 1.0x)\n",
               ring_name, ratio(tput[0][0][0], best_of(spsc, 0, 0)),
               ratio(tput[0][1][0], best_of(spsc, 1, 0)));
        for (int bi = 0; bi < 2; bi++)
            printf("# %s / ck's best broadcast (spsc, spsc_inplace), %s:  1P3C %.2fx  1P8C %.2fx"
                   " (target >= 1.5x); / ck's best of all, distributing too: %.2fx  %.2fx\n",
                   ring_name, bi ? "4 KiB" : "64 B", ratio(tput[0][bi][1], best_of(bcast, bi, 1)),
                   ratio(tput[0][bi][2], best_of(bcast, bi, 2)),
                   ratio(tput[0][bi][1], best_of(any, bi, 1)),
                   ratio(tput[0][bi][2], best_of(any, bi, 2)));
#endif
    }
    if (do_l) {
        printf("# %s hand-off / pingpong: %.2fx (target <= 1.1x), / pingpong_yield: %.2fx\n",
               ring_name, ratio(lat[2], lat[0]), ratio(lat[2], lat[1]));
        /* each round's ring over the ping-pong run just before it: where the
         * two threads' CPUs change between processes or rounds (a VM), the
         * pairs still share them */
        if (lat[0] > 0 && lat[2] > 0) {
            for (int r = 0; r < rounds; r++) v[r] = ratio(lv[2][r], lv[0][r]);
            struct stat3 s = stats(v, rounds);
            printf("# %s hand-off / pingpong, round by round: median %.2fx (%.2f-%.2f)\n",
                   ring_name, s.med, s.min, s.max);
        }
    }
    if (errors) {
        printf("# ERRORS: %ld wrong values or failed calls\n", (long)errors);
        return 1;
    }
    return 0;
}
