/*
 * core_api.h - what the core API tests share: clocks, white-box views of a
 * barrier (its registered waiters, its state word), a thread that makes one
 * blocking call, and a counting completion function.
 *
 * Cases that need another thread to be *blocked* inside a call wait until
 * the barrier says so (its private `inside` count, or the PARKED bit of the
 * state word), then give it a short grace period: no case relies on a sleep
 * alone for correctness.
 */
#ifndef ABAR_TEST_CORE_API_H
#define ABAR_TEST_CORE_API_H

#include "harness.h"
#include "abar_internal.h" /* abar__test_set_phase, and the state word to watch */
#include <abar.h>

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#if !defined(_WIN32)
#include <sys/mman.h>
#endif


__attribute__((unused)) static const unsigned POLICIES[3] = {0, ABAR_WAIT_SPIN, ABAR_WAIT_PARK};
static inline const char *policy_name(unsigned f)
{
    return f & ABAR_WAIT_SPIN ? "spin" : f & ABAR_WAIT_PARK ? "park" : "default";
}

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC now + delta_ns (delta may be negative). */
static inline struct timespec ts_in(int64_t delta_ns)
{
    int64_t t = (int64_t)now_ns() + delta_ns;
    if (t < 0) t = 0;
    return (struct timespec){ .tv_sec = t / 1000000000, .tv_nsec = t % 1000000000 };
}

static inline void msleep(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

static inline struct abar_impl *I(abar_t *b) { return (struct abar_impl *)(void *)b; }

static inline unsigned inside_of(abar_t *b)
{
    return abar__test_waiters(b);
}

/* Waits (up to 5 s) until n threads are registered inside a wait on b. */
static inline void await_inside(abar_t *b, unsigned n)
{
    uint64_t t0 = now_ns();
    while (inside_of(b) < n) {
        if (now_ns() - t0 > 5000000000u) {
            fprintf(stderr, "no thread entered the wait within 5 s (inside=%u, want %u)\n",
                    inside_of(b), n);
            _exit(1);
        }
        sched_yield();
    }
}

/* Waits (up to 5 s) until the current phase has exactly n arrivals pending
 * (white box: the state word and the leaves), e.g. until another thread's
 * arrival counted. */
static inline void await_pending(abar_t *b, uint32_t n)
{
    uint64_t t0 = now_ns();
    while (abar__test_pending(b) != (int32_t)n) {
        if (now_ns() - t0 > 5000000000u) {
            fprintf(stderr, "pending never reached %u\n", n);
            _exit(1);
        }
        sched_yield();
    }
}

static inline bool tok_ok(abar_token_t t) { return abar_token_error(t) == 0; }

/* A thread's first wait claims its hazard record (the general path); a
 * pair's own path (arrive_wait.c pair_arrive_and_wait) serves the waits after it.
 * A wait on a barrier of one, for a thread that must take that path. */
static inline void claim_hazard_record(void)
{
    abar_t one;
    CHECK_EQ(abar_init(&one, 1, NULL), 0);
    CHECK_EQ(abar_arrive_and_wait(&one), 0);
    CHECK_EQ(abar_destroy(&one), 0);
}

static inline bool same_token(abar_token_t a, abar_token_t b) { return a.raw == b.raw && a.id == b.id; }

/* A thread that makes one blocking call on a barrier. */
enum call_kind { C_WAIT, C_WAIT_UNTIL, C_ARRIVE_AND_WAIT, C_CURRENT_WAIT, C_NKINDS };
static inline const char *kind_name(int k)
{
    static const char *n[] = {"wait", "wait_until", "arrive_and_wait", "current+wait"};
    return n[k];
}

struct caller {
    abar_t *b;
    int kind;
    abar_token_t t;          /* for C_WAIT, C_WAIT_UNTIL */
    struct timespec abstime; /* for C_WAIT_UNTIL */
    _Atomic int started, done;
    int ret;
    uint64_t returned_ns;
    pthread_t th;
};

static inline void *caller_main(void *arg)
{
    struct caller *c = arg;
    atomic_store(&c->started, 1);
    int r;
    switch (c->kind) {
    case C_WAIT: r = abar_wait(c->b, c->t); break;
    case C_WAIT_UNTIL: r = abar_wait_until(c->b, c->t, &c->abstime); break;
    case C_ARRIVE_AND_WAIT: r = abar_arrive_and_wait(c->b); break;
    default: {
        abar_token_t t = abar_current(c->b);
        r = tok_ok(t) ? abar_wait(c->b, t) : abar_token_error(t);
    }
    }
    c->ret = r;
    c->returned_ns = now_ns();
    atomic_store(&c->done, 1);
    return NULL;
}

static inline void caller_start(struct caller *c, abar_t *b, int kind, abar_token_t t)
{
    memset(c, 0, sizeof *c);
    c->b = b;
    c->kind = kind;
    c->t = t;
    c->abstime = ts_in(30 * 1000000000LL); /* far: these waits are released otherwise */
    CHECK_EQ(pthread_create(&c->th, NULL, caller_main, c), 0);
}

/* Joins c, failing by name if it does not return within 5 s. */
static inline int caller_join(struct caller *c)
{
    uint64_t t0 = now_ns();
    while (!atomic_load(&c->done)) {
        if (now_ns() - t0 > 5000000000u) {
            fprintf(stderr, "blocked %s did not return within 5 s\n", kind_name(c->kind));
            _exit(1);
        }
        msleep(1);
    }
    pthread_join(c->th, NULL);
    return c->ret;
}

/* Completion functions used below. */
__attribute__((unused)) static _Atomic int ncompl;
static inline void count_completion(void *arg)
{
    (void)arg;
    atomic_fetch_add(&ncompl, 1);
}

#endif
