/* test_ring.c - producer/consumer rings: hand-off, counts, misuse, cancel, time. */
#include "harness.h"
#include "ring_internal.h" /* white box: the poll budget */
#include <abar_ring.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>

/* Under ThreadSanitizer a report fails the case (the harness ends each case
 * with _exit, which would skip TSan's exit-status check). */
#if defined(__SANITIZE_THREAD__)
#define RING_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RING_TSAN 1
#endif
#endif
#ifdef RING_TSAN
const char *__tsan_default_options(void);
const char *__tsan_default_options(void) { return "halt_on_error=1"; }
#endif

/* ---- a stream through a ring, every value checked ------------------------- */

enum { WORDS = 4 };                 /* words each producer writes per slot */

struct stream {
    abar_ring_t ring;
    uint32_t stages, P, C;
    long items;
    unsigned yield_mask;            /* stress: yield when (item & mask) == 0 */
    uint64_t *buf;                  /* stages * P * WORDS */
    _Atomic long bad;               /* values that did not match */
    _Atomic long seen;              /* items seen, summed over consumers */
    _Atomic int errs;               /* calls that returned an error */
};

static uint64_t value(long item, uint32_t p, int w)
{
    return (uint64_t)item * 1000003u + p * 64u + (uint64_t)w + 1;
}

static void *producer(void *arg)
{
    struct stream *s = arg;
    abar_ring_pos_t pos;
    if (abar_ring_producer_start(&s->ring, &pos)) { atomic_fetch_add(&s->errs, 1); return NULL; }
    for (long i = 0; i < s->items; i++) {
        if (abar_ring_producer_acquire(&s->ring, &pos)) { atomic_fetch_add(&s->errs, 1); return NULL; }
        if ((uint64_t)i % s->stages != pos.index || (uint64_t)i / s->stages != pos.phase)
            atomic_fetch_add(&s->bad, 1);
        uint64_t *slot = s->buf + ((size_t)pos.index * s->P + pos.rank) * WORDS;
        for (int w = 0; w < WORDS; w++) slot[w] = value(i, pos.rank, w);
        if (s->yield_mask && (i & s->yield_mask) == 0) sched_yield();
        if (abar_ring_producer_commit(&s->ring, &pos)) { atomic_fetch_add(&s->errs, 1); return NULL; }
    }
    return NULL;
}

static void *consumer(void *arg)
{
    struct stream *s = arg;
    abar_ring_pos_t pos;
    if (abar_ring_consumer_start(&s->ring, &pos)) { atomic_fetch_add(&s->errs, 1); return NULL; }
    long bad = 0;
    for (long i = 0; i < s->items; i++) {
        if (abar_ring_consumer_wait(&s->ring, &pos)) { atomic_fetch_add(&s->errs, 1); return NULL; }
        const uint64_t *slot = s->buf + (size_t)pos.index * s->P * WORDS;
        /* every producer's part, of this item: not an older lap, not a newer */
        for (uint32_t p = 0; p < s->P; p++)
            for (int w = 0; w < WORDS; w++)
                bad += slot[p * WORDS + w] != value(i, p, w);
        if (s->yield_mask && (i & s->yield_mask) == 0) sched_yield();
        /* still intact at release: no producer wrote it while we held it */
        for (uint32_t p = 0; p < s->P; p++) bad += slot[p * WORDS] != value(i, p, 0);
        if (abar_ring_consumer_release(&s->ring, &pos)) { atomic_fetch_add(&s->errs, 1); return NULL; }
    }
    atomic_fetch_add(&s->bad, bad);
    atomic_fetch_add(&s->seen, s->items);
    return NULL;
}

/* White box: 1 makes run_stream's ring fence in every give (the handshake
 * where the waiters have no process-wide barrier), as on a system without
 * membarrier. */
static int stream_giver_fences;

static void run_stream(uint32_t stages, uint32_t P, uint32_t C, long items, unsigned flags,
                       unsigned yield_mask)
{
    static struct stream s;
    memset(&s, 0, sizeof s);
    s.stages = stages; s.P = P; s.C = C; s.items = items; s.yield_mask = yield_mask;
    s.buf = calloc((size_t)stages * P * WORDS, sizeof(uint64_t));
    CHECK(s.buf != NULL);
    abar_attr_t a = { NULL, NULL, flags };
    CHECK_EQ(abar_ring_init(&s.ring, stages, P, C, &a), 0);
    if (stream_giver_fences) rimpl(&s.ring)->asym = 0;
    pthread_t th[64];
    CHECK(P + C <= 64);
    for (uint32_t i = 0; i < C; i++) CHECK_EQ(pthread_create(&th[i], NULL, consumer, &s), 0);
    for (uint32_t i = 0; i < P; i++) CHECK_EQ(pthread_create(&th[C + i], NULL, producer, &s), 0);
    for (uint32_t i = 0; i < P + C; i++) pthread_join(th[i], NULL);
    CHECK_EQ(atomic_load(&s.errs), 0);
    CHECK_EQ(atomic_load(&s.bad), 0);
    CHECK_EQ(atomic_load(&s.seen), (long)C * items);
    CHECK_EQ(abar_ring_destroy(&s.ring), 0);
    free(s.buf);
}

/* White box: a ring whose threads outnumber the CPUs the process may run on
 * (the main thread's affinity mask, at most the online CPUs) polls only
 * RING_CROWDED_NS before it parks (ring.c); under `taskset -c 0` (CTest
 * test_ring_1cpu) a ring of one producer and one consumer is crowded. */
TEST(crowded_counts_the_process_cpus)
{
    unsetenv("ABAR_SPIN_NS");
#if defined(_WIN32)
    DWORD_PTR proc, sys;
    CHECK(GetProcessAffinityMask(GetCurrentProcess(), &proc, &sys));
    long cpus = __builtin_popcountll(proc);
#else
    cpu_set_t set;
    CHECK_EQ(sched_getaffinity(getpid(), sizeof set, &set), 0);
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    long cpus = CPU_COUNT(&set) < online ? CPU_COUNT(&set) : online;
#endif
    abar_ring_t r;
    CHECK_EQ(abar_ring_init(&r, 2, 1, 1, NULL), 0);
    CHECK_EQ(rimpl(&r)->spin_ns, 2 > cpus ? RING_CROWDED_NS : RING_SPIN_NS);
    CHECK_EQ(abar_ring_destroy(&r), 0);
}

TEST(spsc_stream) { run_stream(4, 1, 1, 50000, 0, 0); }
TEST(spsc_one_stage) { run_stream(1, 1, 1, 10000, 0, 0); }
TEST(multi_producer) { run_stream(3, 4, 1, 20000, 0, 0); }
TEST(multi_consumer) { run_stream(2, 1, 5, 20000, 0, 0); }
TEST(mpmc_spin) { run_stream(4, 2, 3, 5000, ABAR_WAIT_SPIN, 0); }
TEST(mpmc_park) { run_stream(4, 2, 3, 20000, ABAR_WAIT_PARK, 0); }
TEST(stress_many_threads) { run_stream(2, 3, 8, 10000, 0, 7); }
TEST(stress_long_ring) { run_stream(64, 2, 2, 50000, 0, 63); }

/* Every hand-off through the bells: one slot, both sides park at once, so
 * each item is a park and a wake on each side; a lost wake hangs the case. */
TEST(spsc_park) { run_stream(1, 1, 1, 20000, ABAR_WAIT_PARK, 0); }
TEST(spsc_park_giver_fences)
{
    stream_giver_fences = 1;
    run_stream(1, 1, 1, 20000, ABAR_WAIT_PARK, 0);
    run_stream(2, 2, 3, 5000, ABAR_WAIT_PARK, 0);
    stream_giver_fences = 0;
}
/* Short polls, then parks: the poll and the park racing the give. */
TEST(spsc_short_poll)
{
    setenv("ABAR_SPIN_NS", "200", 1);
    run_stream(2, 1, 1, 20000, 0, 0);
    run_stream(2, 1, 3, 5000, 0, 0);
    unsetenv("ABAR_SPIN_NS");
}

/* ---- positions, counts, life cycle ---------------------------------------- */

TEST(init_errors)
{
    abar_ring_t r;
    memset(&r, 0, sizeof r);
    abar_attr_t cb = { (abar_completion_fn *)free, NULL, 0 };
    abar_attr_t ps = { NULL, NULL, ABAR_PSHARED };
    abar_attr_t both = { NULL, NULL, ABAR_WAIT_SPIN | ABAR_WAIT_PARK };
    abar_attr_t unk = { NULL, NULL, 0x100 };
    CHECK_EQ(abar_ring_init(NULL, 2, 1, 1, NULL), EINVAL);
    CHECK_EQ(abar_ring_init(&r, 0, 1, 1, NULL), EINVAL);
    CHECK_EQ(abar_ring_init(&r, ABAR_RING_STAGES_MAX + 1, 1, 1, NULL), EINVAL);
    CHECK_EQ(abar_ring_init(&r, 2, 0, 1, NULL), EINVAL);
    CHECK_EQ(abar_ring_init(&r, 2, 1, 0, NULL), EINVAL);
    CHECK_EQ(abar_ring_init(&r, 2, ABAR_EXPECTED_MAX + 1, 1, NULL), EINVAL);
    CHECK_EQ(abar_ring_init(&r, 2, 1, ABAR_EXPECTED_MAX + 1, NULL), EINVAL);
    CHECK_EQ(abar_ring_init(&r, 2, 1, 1, &cb), EINVAL);
    CHECK_EQ(abar_ring_init(&r, 2, 1, 1, &ps), EINVAL);
    CHECK_EQ(abar_ring_init(&r, 2, 1, 1, &both), EINVAL);
    CHECK_EQ(abar_ring_init(&r, 2, 1, 1, &unk), EINVAL);
    /* nothing was made: the zeroed ring is still not a ring */
    CHECK_EQ(abar_ring_destroy(&r), EINVAL);
    CHECK_EQ(abar_ring_stages(&r), 0);
    CHECK_EQ(abar_ring_init(&r, 2, 1, 1, NULL), 0);
    CHECK_EQ(abar_ring_stages(&r), 2);
    CHECK_EQ(abar_ring_init(&r, 3, 1, 1, NULL), EBUSY);  /* live: destroy first */
    CHECK_EQ(abar_ring_stages(&r), 2);
    CHECK_EQ(abar_ring_destroy(&r), 0);
    CHECK_EQ(abar_ring_destroy(&r), EINVAL);
    CHECK_EQ(abar_ring_destroy(NULL), EINVAL);
    CHECK_EQ(abar_ring_cancel(&r), EINVAL);
    CHECK_EQ(abar_ring_init(&r, ABAR_RING_STAGES_MAX, 1, 1, NULL), 0);
    CHECK_EQ(abar_ring_destroy(&r), 0);
}

TEST(positions_counted)
{
    abar_ring_t r, other;
    abar_ring_pos_t p[3], c[4], x;
    CHECK_EQ(abar_ring_init(&r, 2, 3, 4, NULL), 0);
    CHECK_EQ(abar_ring_init(&other, 2, 1, 1, NULL), 0);
    for (uint32_t i = 0; i < 3; i++) {
        CHECK_EQ(abar_ring_producer_start(&r, &p[i]), 0);
        CHECK_EQ(p[i].rank, i);
        CHECK_EQ(p[i].index, 0);
        CHECK_EQ(p[i].phase, 0);
    }
    CHECK_EQ(abar_ring_producer_start(&r, &x), EAGAIN);
    for (uint32_t i = 0; i < 4; i++) {
        CHECK_EQ(abar_ring_consumer_start(&r, &c[i]), 0);
        CHECK_EQ(c[i].rank, i);
    }
    CHECK_EQ(abar_ring_consumer_start(&r, &x), EAGAIN);
    CHECK_EQ(abar_ring_producer_start(&r, NULL), EINVAL);
    CHECK_EQ(abar_ring_producer_start(NULL, &x), EINVAL);
    /* the wrong side, another ring, no position */
    CHECK_EQ(abar_ring_producer_acquire(&r, &c[0]), EINVAL);
    CHECK_EQ(abar_ring_consumer_wait(&r, &p[0]), EINVAL);
    CHECK_EQ(abar_ring_producer_acquire(&other, &p[0]), EINVAL);
    CHECK_EQ(abar_ring_producer_acquire(&r, NULL), EINVAL);
    CHECK_EQ(abar_ring_consumer_release(&r, NULL), EINVAL);
    memset(&x, 0, sizeof x);
    CHECK_EQ(abar_ring_producer_acquire(&r, &x), EINVAL);   /* never started */
    CHECK_EQ(p[0].index, 0);
    CHECK_EQ(abar_ring_destroy(&other), 0);
    /* a position of a destroyed and re-made ring is refused */
    CHECK_EQ(abar_ring_destroy(&r), 0);
    CHECK_EQ(abar_ring_init(&r, 2, 3, 4, NULL), 0);
    CHECK_EQ(abar_ring_producer_acquire(&r, &p[0]), EINVAL);
    CHECK_EQ(abar_ring_destroy(&r), 0);
}

/* One thread walks both sides: the phase arithmetic, step by step. */
TEST(single_thread_walk)
{
    abar_ring_t r;
    abar_ring_pos_t p, c;
    CHECK_EQ(abar_ring_init(&r, 3, 1, 1, NULL), 0);
    CHECK_EQ(abar_ring_producer_start(&r, &p), 0);
    CHECK_EQ(abar_ring_consumer_start(&r, &c), 0);
    CHECK_EQ(abar_ring_consumer_try_wait(&r, &c), EBUSY);   /* nothing filled */
    /* one phase ahead: the first `stages` acquires pass */
    for (uint32_t k = 0; k < 3; k++) {
        CHECK_EQ(p.index, k);
        CHECK_EQ(abar_ring_producer_try_acquire(&r, &p), 0);
        CHECK_EQ(abar_ring_producer_commit(&r, &p), 0);
    }
    CHECK_EQ(p.index, 0);
    CHECK_EQ(p.phase, 1);
    CHECK_EQ(abar_ring_producer_try_acquire(&r, &p), EBUSY); /* slot 0 not released */
    for (int lap = 1; lap < 5; lap++) {
        for (uint32_t k = 0; k < 3; k++) {
            CHECK_EQ(c.index, k);
            CHECK_EQ(c.phase, (uint64_t)lap - 1);
            CHECK_EQ(abar_ring_consumer_try_wait(&r, &c), 0);
            CHECK_EQ(abar_ring_consumer_release(&r, &c), 0);
            /* slot k is free again: the producer refills it */
            CHECK_EQ(abar_ring_producer_try_acquire(&r, &p), 0);
            CHECK_EQ(p.index, k);
            CHECK_EQ(abar_ring_producer_commit(&r, &p), 0);
        }
        CHECK_EQ(abar_ring_producer_try_acquire(&r, &p), EBUSY);
    }
    CHECK_EQ(abar_ring_destroy(&r), 0);
}

TEST(misuse_is_an_error)
{
    abar_ring_t r;
    abar_ring_pos_t p, c;
    CHECK_EQ(abar_ring_init(&r, 2, 1, 1, NULL), 0);
    CHECK_EQ(abar_ring_producer_start(&r, &p), 0);
    CHECK_EQ(abar_ring_consumer_start(&r, &c), 0);
    CHECK_EQ(abar_ring_producer_commit(&r, &p), EPERM);     /* not acquired */
    CHECK_EQ(p.index, 0);
    CHECK_EQ(abar_ring_consumer_try_wait(&r, &c), EBUSY);   /* and nothing was filled */
    CHECK_EQ(abar_ring_consumer_release(&r, &c), EPERM);    /* not waited */
    CHECK_EQ(abar_ring_producer_acquire(&r, &p), 0);
    CHECK_EQ(abar_ring_producer_acquire(&r, &p), EPERM);    /* acquired twice */
    CHECK_EQ(abar_ring_producer_commit(&r, &p), 0);
    CHECK_EQ(abar_ring_producer_commit(&r, &p), EPERM);     /* committed twice */
    CHECK_EQ(p.index, 1);
    CHECK_EQ(abar_ring_consumer_wait(&r, &c), 0);
    CHECK_EQ(abar_ring_consumer_wait(&r, &c), EPERM);       /* waited twice */
    CHECK_EQ(abar_ring_consumer_release(&r, &c), 0);
    CHECK_EQ(abar_ring_consumer_release(&r, &c), EPERM);    /* released twice */
    CHECK_EQ(c.index, 1);
    /* the refused calls counted nothing: the stream goes on exactly */
    CHECK_EQ(abar_ring_consumer_try_wait(&r, &c), EBUSY);
    for (int i = 0; i < 10; i++) {
        CHECK_EQ(abar_ring_producer_try_acquire(&r, &p), 0);
        CHECK_EQ(abar_ring_producer_commit(&r, &p), 0);
        CHECK_EQ(abar_ring_consumer_try_wait(&r, &c), 0);
        CHECK_EQ(abar_ring_consumer_release(&r, &c), 0);
        CHECK_EQ(abar_ring_consumer_try_wait(&r, &c), EBUSY);
    }
    CHECK_EQ(abar_ring_destroy(&r), 0);
    /* every call on a destroyed ring */
    CHECK_EQ(abar_ring_producer_acquire(&r, &p), EINVAL);
    CHECK_EQ(abar_ring_producer_commit(&r, &p), EINVAL);
    CHECK_EQ(abar_ring_consumer_wait(&r, &c), EINVAL);
    CHECK_EQ(abar_ring_consumer_release(&r, &c), EINVAL);
}

/* A stale copy of a position is refused (its lap is over), not counted in
 * a later phase. */
TEST(copied_position_refused)
{
    abar_ring_t r;
    abar_ring_pos_t p, copy, c;
    CHECK_EQ(abar_ring_init(&r, 1, 1, 1, NULL), 0);
    CHECK_EQ(abar_ring_producer_start(&r, &p), 0);
    CHECK_EQ(abar_ring_consumer_start(&r, &c), 0);
    CHECK_EQ(abar_ring_producer_acquire(&r, &p), 0);
    copy = p;
    CHECK_EQ(abar_ring_producer_commit(&r, &p), 0);
    CHECK_EQ(abar_ring_producer_commit(&r, &copy), EINVAL);  /* lap 0 is over */
    CHECK_EQ(abar_ring_consumer_wait(&r, &c), 0);
    abar_ring_pos_t ccopy = c;
    CHECK_EQ(abar_ring_consumer_release(&r, &c), 0);
    CHECK_EQ(abar_ring_consumer_release(&r, &ccopy), EINVAL); /* released already */
    CHECK_EQ(abar_ring_consumer_try_wait(&r, &c), EBUSY);    /* lap 1 not filled by the copy */
    CHECK_EQ(abar_ring_producer_acquire(&r, &p), 0);         /* lap 1 needs exactly one release */
    CHECK_EQ(abar_ring_producer_commit(&r, &p), 0);
    CHECK_EQ(abar_ring_consumer_try_wait(&r, &c), 0);
    CHECK_EQ(abar_ring_destroy(&r), 0);
}

/* A copy of a position taken in the same lap is as stale as one a lap
 * behind: whichever gives first counts, and every other copy is refused
 * and counts nothing.  Here consumer 0 releases twice (through its
 * position and a copy): ready[k] must not complete without consumer 1. */
TEST(copy_in_same_lap_refused)
{
    abar_ring_t r;
    abar_ring_pos_t p, c0, c1;
    CHECK_EQ(abar_ring_init(&r, 2, 1, 2, NULL), 0);
    CHECK_EQ(abar_ring_producer_start(&r, &p), 0);
    CHECK_EQ(abar_ring_consumer_start(&r, &c0), 0);
    CHECK_EQ(abar_ring_consumer_start(&r, &c1), 0);
    for (int k = 0; k < 2; k++) {                         /* fill both slots */
        CHECK_EQ(abar_ring_producer_try_acquire(&r, &p), 0);
        CHECK_EQ(abar_ring_producer_commit(&r, &p), 0);
    }
    CHECK_EQ(abar_ring_consumer_wait(&r, &c0), 0);
    CHECK_EQ(abar_ring_consumer_wait(&r, &c1), 0);
    abar_ring_pos_t held = c0;                            /* a held copy */
    CHECK_EQ(abar_ring_consumer_release(&r, &c0), 0);
    CHECK_EQ(abar_ring_consumer_release(&r, &held), EINVAL);
    CHECK_EQ(held.index, 0);                              /* nothing moved */
    /* a copy that is not held yet, in the same lap: it takes nothing */
    abar_ring_pos_t fresh = held;
    fresh._state &= ~(uint32_t)POS_HOLD;
    CHECK_EQ(abar_ring_consumer_try_wait(&r, &fresh), EINVAL);
    CHECK_EQ(abar_ring_consumer_release(&r, &fresh), EINVAL);
    /* slot 0 still waits for consumer 1 */
    CHECK_EQ(abar_ring_producer_try_acquire(&r, &p), EBUSY);
    CHECK_EQ(abar_ring_consumer_release(&r, &c1), 0);
    CHECK_EQ(abar_ring_producer_try_acquire(&r, &p), 0);
    CHECK_EQ(abar_ring_producer_commit(&r, &p), 0);
    /* the producer side, the same: a held copy commits nothing twice */
    CHECK_EQ(abar_ring_consumer_wait(&r, &c0), 0);
    CHECK_EQ(abar_ring_consumer_wait(&r, &c1), 0);
    CHECK_EQ(abar_ring_consumer_release(&r, &c0), 0);
    CHECK_EQ(abar_ring_consumer_release(&r, &c1), 0);
    CHECK_EQ(abar_ring_producer_try_acquire(&r, &p), 0);
    abar_ring_pos_t pcopy = p;
    CHECK_EQ(abar_ring_producer_commit(&r, &pcopy), 0);   /* the copy gives first */
    CHECK_EQ(abar_ring_producer_commit(&r, &p), EINVAL);  /* then the original is stale */
    /* the stream goes on exactly, through the copy that gave */
    for (int i = 0; i < 6; i++) {
        CHECK_EQ(abar_ring_consumer_try_wait(&r, &c0), 0);
        CHECK_EQ(abar_ring_consumer_try_wait(&r, &c1), 0);
        CHECK_EQ(abar_ring_consumer_release(&r, &c0), 0);
        CHECK_EQ(abar_ring_producer_try_acquire(&r, &pcopy), EBUSY); /* c1 holds it */
        CHECK_EQ(abar_ring_consumer_release(&r, &c1), 0);
        CHECK_EQ(abar_ring_producer_try_acquire(&r, &pcopy), 0);
        CHECK_EQ(abar_ring_producer_commit(&r, &pcopy), 0);
    }
    CHECK_EQ(abar_ring_destroy(&r), 0);
}

/* Two threads give through copies of one held position at once: exactly
 * one is counted, every round. */
static abar_ring_t race_ring;
static abar_ring_pos_t race_pos;
static _Atomic int race_go, race_ok;
static void *race_release(void *arg)
{
    (void)arg;
    abar_ring_pos_t mine = race_pos;
    while (atomic_load(&race_go) == 0) ring_pause();
    if (abar_ring_consumer_release(&race_ring, &mine) == 0) atomic_fetch_add(&race_ok, 1);
    return NULL;
}

TEST(racing_copies_count_once)
{
    for (int round = 0; round < 200; round++) {
        abar_ring_pos_t p, c1;
        CHECK_EQ(abar_ring_init(&race_ring, 1, 1, 2, NULL), 0);
        CHECK_EQ(abar_ring_producer_start(&race_ring, &p), 0);
        CHECK_EQ(abar_ring_consumer_start(&race_ring, &race_pos), 0);
        CHECK_EQ(abar_ring_consumer_start(&race_ring, &c1), 0);
        CHECK_EQ(abar_ring_producer_try_acquire(&race_ring, &p), 0);
        CHECK_EQ(abar_ring_producer_commit(&race_ring, &p), 0);
        CHECK_EQ(abar_ring_consumer_wait(&race_ring, &race_pos), 0);
        atomic_store(&race_go, 0);
        atomic_store(&race_ok, 0);
        pthread_t t[3];
        for (int i = 0; i < 3; i++) CHECK_EQ(pthread_create(&t[i], NULL, race_release, NULL), 0);
        atomic_store(&race_go, 1);
        for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
        CHECK_EQ(atomic_load(&race_ok), 1);
        CHECK_EQ(abar_ring_producer_try_acquire(&race_ring, &p), EBUSY); /* c1 still out */
        CHECK_EQ(abar_ring_consumer_wait(&race_ring, &c1), 0);
        CHECK_EQ(abar_ring_consumer_release(&race_ring, &c1), 0);
        CHECK_EQ(abar_ring_producer_try_acquire(&race_ring, &p), 0);
        CHECK_EQ(abar_ring_destroy(&race_ring), 0);
    }
}

/* ---- time ---------------------------------------------------------------- */

static struct timespec in_ms(long ms)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) { t.tv_sec++; t.tv_nsec -= 1000000000L; }
    return t;
}

TEST(timed_variants)
{
    abar_ring_t r;
    abar_ring_pos_t p, c;
    CHECK_EQ(abar_ring_init(&r, 1, 1, 1, NULL), 0);
    CHECK_EQ(abar_ring_producer_start(&r, &p), 0);
    CHECK_EQ(abar_ring_consumer_start(&r, &c), 0);
    struct timespec bad = in_ms(10);
    bad.tv_nsec = 1000000000L;
    CHECK_EQ(abar_ring_consumer_wait_until(&r, &c, NULL), EINVAL);
    CHECK_EQ(abar_ring_consumer_wait_until(&r, &c, &bad), EINVAL);
    bad.tv_nsec = -1;
    CHECK_EQ(abar_ring_producer_acquire_until(&r, &p, &bad), EINVAL);
    CHECK_EQ(abar_ring_producer_acquire_until(&r, &p, NULL), EINVAL);
    /* empty ring: the consumer times out, about on time */
    struct timespec dl = in_ms(60);
    double t0 = harness_now();
    CHECK_EQ(abar_ring_consumer_wait_until(&r, &c, &dl), ETIMEDOUT);
    double dt = harness_now() - t0;
    CHECK(dt >= 0.055 && dt < 2.0);
    struct timespec past = { 0, 0 };
    CHECK_EQ(abar_ring_consumer_wait_until(&r, &c, &past), ETIMEDOUT);
    CHECK_EQ(c.index, 0);
    /* a past deadline still succeeds where nothing must be waited for */
    CHECK_EQ(abar_ring_producer_acquire_until(&r, &p, &past), 0);
    CHECK_EQ(abar_ring_producer_commit(&r, &p), 0);
    CHECK_EQ(abar_ring_consumer_wait_until(&r, &c, &past), 0);
    /* a time before the epoch is a past deadline too, as abar_wait_until
     * reads one (not EINVAL), and one beyond 2^64 ns never comes */
    const struct timespec before = { -1, 0 }, never = { INT64_MAX, 0 };
    CHECK_EQ(abar_ring_consumer_release(&r, &c), 0);
    CHECK_EQ(abar_ring_consumer_wait_until(&r, &c, &before), ETIMEDOUT);
    CHECK_EQ(abar_ring_producer_acquire_until(&r, &p, &before), 0);
    CHECK_EQ(abar_ring_producer_commit(&r, &p), 0);
    CHECK_EQ(abar_ring_consumer_wait_until(&r, &c, &never), 0);
    /* full ring: the producer times out */
    dl = in_ms(30);
    CHECK_EQ(abar_ring_producer_acquire_until(&r, &p, &dl), ETIMEDOUT);
    CHECK_EQ(abar_ring_consumer_release(&r, &c), 0);
    dl = in_ms(1000);
    CHECK_EQ(abar_ring_producer_acquire_until(&r, &p, &dl), 0);
    CHECK_EQ(abar_ring_destroy(&r), 0);
}

/* ABAR_WAIT_SPIN never parks: the deadline is kept by the poll itself. */
TEST(timed_spin_ring)
{
    abar_ring_t r;
    abar_ring_pos_t p, c;
    abar_attr_t a = { NULL, NULL, ABAR_WAIT_SPIN };
    CHECK_EQ(abar_ring_init(&r, 1, 1, 1, &a), 0);
    CHECK_EQ(abar_ring_producer_start(&r, &p), 0);
    CHECK_EQ(abar_ring_consumer_start(&r, &c), 0);
    struct timespec dl = in_ms(40);
    double t0 = harness_now();
    CHECK_EQ(abar_ring_consumer_wait_until(&r, &c, &dl), ETIMEDOUT);
    double dt = harness_now() - t0;
    CHECK(dt >= 0.035 && dt < 2.0);
    CHECK_EQ(abar_ring_producer_acquire(&r, &p), 0);
    CHECK_EQ(abar_ring_producer_commit(&r, &p), 0);
    dl = in_ms(30);
    CHECK_EQ(abar_ring_producer_acquire_until(&r, &p, &dl), ETIMEDOUT);
    CHECK_EQ(abar_ring_consumer_wait_until(&r, &c, &dl), 0);
    CHECK_EQ(abar_ring_destroy(&r), 0);
}

/* A timed wait that a commit ends in time returns 0. */
static abar_ring_t tr;
static void *late_producer(void *arg)
{
    (void)arg;
    abar_ring_pos_t p;
    if (abar_ring_producer_start(&tr, &p)) _exit(2);
    usleep(20000);
    if (abar_ring_producer_acquire(&tr, &p) || abar_ring_producer_commit(&tr, &p)) _exit(3);
    return NULL;
}

TEST(timed_wait_woken)
{
    abar_ring_pos_t c;
    CHECK_EQ(abar_ring_init(&tr, 2, 1, 1, NULL), 0);
    CHECK_EQ(abar_ring_consumer_start(&tr, &c), 0);
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, late_producer, NULL), 0);
    struct timespec dl = in_ms(5000);
    CHECK_EQ(abar_ring_consumer_wait_until(&tr, &c, &dl), 0);
    pthread_join(th, NULL);
    CHECK_EQ(abar_ring_consumer_release(&tr, &c), 0);
    CHECK_EQ(abar_ring_destroy(&tr), 0);
}

/* ---- cancellation ---------------------------------------------------------- */

static abar_ring_t cr;
static _Atomic int cancel_rc[16];
static _Atomic long cancel_items[16];

static void *cancel_producer(void *arg)
{
    int id = (int)(intptr_t)arg;
    abar_ring_pos_t p;
    if (abar_ring_producer_start(&cr, &p)) _exit(2);
    int r;
    for (;;) {
        if ((r = abar_ring_producer_acquire(&cr, &p))) break;
        if ((r = abar_ring_producer_commit(&cr, &p))) break;
        atomic_fetch_add(&cancel_items[id], 1);
    }
    atomic_store(&cancel_rc[id], r);
    return NULL;
}

static void *cancel_consumer(void *arg)
{
    int id = (int)(intptr_t)arg;
    abar_ring_pos_t c;
    if (abar_ring_consumer_start(&cr, &c)) _exit(2);
    int r;
    for (;;) {
        if ((r = abar_ring_consumer_wait(&cr, &c))) break;
        if ((r = abar_ring_consumer_release(&cr, &c))) break;
        atomic_fetch_add(&cancel_items[id], 1);
    }
    atomic_store(&cancel_rc[id], r);
    return NULL;
}

static void cancel_mid_stream(unsigned flags)
{
    enum { P = 2, C = 3 };
    abar_attr_t a = { NULL, NULL, flags };
    CHECK_EQ(abar_ring_init(&cr, 4, P, C, &a), 0);
    pthread_t th[P + C];
    for (int i = 0; i < P; i++)
        CHECK_EQ(pthread_create(&th[i], NULL, cancel_producer, (void *)(intptr_t)i), 0);
    for (int i = P; i < P + C; i++)
        CHECK_EQ(pthread_create(&th[i], NULL, cancel_consumer, (void *)(intptr_t)i), 0);
    /* let the stream run */
    while (atomic_load(&cancel_items[P]) < 2000) usleep(1000);
    CHECK_EQ(abar_ring_cancel(&cr), 0);
    CHECK_EQ(abar_ring_cancel(&cr), 0);                     /* idempotent */
    for (int i = 0; i < P + C; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < P + C; i++) CHECK_EQ(atomic_load(&cancel_rc[i]), ECANCELED);
    /* everyone made progress before the cancel, and the counts stayed in step:
     * no consumer ran more than `stages` ahead of the producers' slowest */
    for (int i = P; i < P + C; i++) {
        CHECK(atomic_load(&cancel_items[i]) >= 1);
        CHECK(atomic_load(&cancel_items[i]) <= atomic_load(&cancel_items[0]) + 1);
    }
    /* every later call: ECANCELED */
    abar_ring_pos_t x;
    CHECK_EQ(abar_ring_producer_start(&cr, &x), EAGAIN);
    CHECK_EQ(abar_ring_destroy(&cr), 0);
}

TEST(cancel_mid_stream) { cancel_mid_stream(0); }
TEST(cancel_mid_stream_park) { cancel_mid_stream(ABAR_WAIT_PARK); }
TEST(cancel_mid_stream_spin) { cancel_mid_stream(ABAR_WAIT_SPIN); }

#if defined(_WIN32)
#define gettid() GetCurrentThreadId()
#endif
static _Atomic int blocked_rc = -1;
static _Atomic int blocked_tid;
static void *blocked_consumer(void *arg)
{
    abar_ring_pos_t *c = arg;
    atomic_store(&blocked_tid, (int)gettid());
    atomic_store(&blocked_rc, abar_ring_consumer_wait(&cr, c));
    return NULL;
}
static void *blocked_producer(void *arg)
{
    abar_ring_pos_t *p = arg;
    atomic_store(&blocked_tid, (int)gettid());
    atomic_store(&blocked_rc, abar_ring_producer_acquire(&cr, p));
    return NULL;
}

/* Waits until the blocked thread sleeps in the kernel (parked in the ring's
 * wait, hence counted by destroy): a fixed sleep is not enough on a crowded
 * machine, where the thread may not have run yet. */
static void wait_parked(void)
{
    int tid;
    while ((tid = atomic_load(&blocked_tid)) == 0) usleep(1000);
#if defined(_WIN32)
    /* No thread state to read: half a second for it to get to its park. */
    (void)tid;
    usleep(500000);
    return;
#endif
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    for (int i = 0; i < 5000; i++) {
        FILE *f = fopen(path, "r");
        CHECK(f != NULL);
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = 0;
        const char *st = strrchr(buf, ')');
        if (st && st[1] == ' ' && st[2] == 'S') return;
        usleep(1000);
    }
    CHECK(!"the blocked thread never slept");
}

/* Each side, blocked alone: destroy is EBUSY, cancel wakes it, then every
 * call is ECANCELED and destroy succeeds. */
TEST(cancel_wakes_blocked_consumer)
{
    abar_ring_pos_t c, p;
    CHECK_EQ(abar_ring_init(&cr, 2, 1, 1, NULL), 0);
    CHECK_EQ(abar_ring_consumer_start(&cr, &c), 0);
    CHECK_EQ(abar_ring_producer_start(&cr, &p), 0);
    pthread_t th;
    atomic_store(&blocked_tid, 0);
    CHECK_EQ(pthread_create(&th, NULL, blocked_consumer, &c), 0);
    wait_parked();
    CHECK_EQ(atomic_load(&blocked_rc), -1);
    CHECK_EQ(abar_ring_destroy(&cr), EBUSY);
    CHECK_EQ(abar_ring_cancel(&cr), 0);
    pthread_join(th, NULL);
    CHECK_EQ(atomic_load(&blocked_rc), ECANCELED);
    CHECK_EQ(c.index, 0);
    CHECK_EQ(abar_ring_producer_acquire(&cr, &p), ECANCELED);
    CHECK_EQ(abar_ring_producer_try_acquire(&cr, &p), ECANCELED);
    CHECK_EQ(abar_ring_consumer_try_wait(&cr, &c), ECANCELED);
    struct timespec dl = in_ms(1000);
    CHECK_EQ(abar_ring_consumer_wait_until(&cr, &c, &dl), ECANCELED);
    CHECK_EQ(abar_ring_destroy(&cr), 0);
}

TEST(cancel_wakes_blocked_producer)
{
    abar_ring_pos_t c, p;
    CHECK_EQ(abar_ring_init(&cr, 2, 1, 1, NULL), 0);
    CHECK_EQ(abar_ring_consumer_start(&cr, &c), 0);
    CHECK_EQ(abar_ring_producer_start(&cr, &p), 0);
    for (int i = 0; i < 2; i++) {
        CHECK_EQ(abar_ring_producer_acquire(&cr, &p), 0);
        CHECK_EQ(abar_ring_producer_commit(&cr, &p), 0);
    }
    CHECK_EQ(abar_ring_consumer_wait(&cr, &c), 0);          /* held: not released */
    pthread_t th;
    atomic_store(&blocked_tid, 0);
    CHECK_EQ(pthread_create(&th, NULL, blocked_producer, &p), 0);
    wait_parked();
    CHECK_EQ(atomic_load(&blocked_rc), -1);
    CHECK_EQ(abar_ring_destroy(&cr), EBUSY);
    CHECK_EQ(abar_ring_cancel(&cr), 0);
    pthread_join(th, NULL);
    CHECK_EQ(atomic_load(&blocked_rc), ECANCELED);
    CHECK_EQ(abar_ring_consumer_release(&cr, &c), ECANCELED);
    CHECK_EQ(abar_ring_destroy(&cr), 0);
    /* destroy + init: a fresh ring */
    CHECK_EQ(abar_ring_init(&cr, 2, 1, 1, NULL), 0);
    CHECK_EQ(abar_ring_producer_start(&cr, &p), 0);
    CHECK_EQ(abar_ring_producer_acquire(&cr, &p), 0);
    CHECK_EQ(abar_ring_destroy(&cr), 0);
}

int main(int argc, char **argv) { return harness_main(argc, argv); }
