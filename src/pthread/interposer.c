/*
 * interposer.c - pthread_barrier_init, _wait and _destroy for programs that
 * were never written for abar: LD_PRELOAD=libabar-pthread.so.
 *
 * A private barrier lives entirely in the 32-byte pthread_barrier_t it was
 * given: no allocation, no pointer to resolve, nothing to free, so init works
 * from the first instruction of any constructor and an init without destroy
 * costs nothing.  The bytes (64-bit glibc):
 *
 *   0..19  a valid glibc barrier of the same count, as glibc's own init
 *          writes it: in 0, current_round 0, count, shared 0 (private), out 0.
 *          The interposer reads only count (offset 8); the rest is there for
 *          a path that bypasses it (below).
 *   20..23 the mark: MARK mixed with the object's address (a copy elsewhere,
 *          undefined in POSIX, is not taken for ours).
 *   24..31 the state word, one 64-bit atomic:
 *            bits 0..14   sleepers: waiters registered to park (futex)
 *            bit  15      the epoch (flips when the arrival count restarts)
 *            bits 16..63  arrivals in this epoch
 *
 * Wait: one fetch_add of ARRIVE on the state word.  Arrival number a (from
 * 0) belongs to round a / count; the arrival with a % count == count - 1
 * completes its round and returns PTHREAD_BARRIER_SERIAL_THREAD, the others
 * return 0 once the arrivals reach their round's end (or the epoch flips).
 * More threads than count simply start the next round, as under glibc: an
 * arrival is never refused.  The completer's own fetch_add is the release
 * (waiters load the word with acquire; the arrivals' RMWs form one release
 * sequence), and it brings back the sleeper count with it, so the completer
 * never touches the object after releasing it.  A waiter spins for
 * ABAR_SPIN_NS (50 us by default; less after waits that spun in vain, see
 * spin_down; yielding instead while count exceeds the CPUs), then registers as a
 * sleeper (+1, an RMW that also says whether it was released meanwhile) and
 * parks on the word's low 32 bits (FUTEX_WAIT_PRIVATE); a completer that saw
 * sleepers wakes them all (the word's low bits change with every arrival, so
 * a wait that raced with one returns at once and looks again).
 * Restart: the first arrival of a round once 2^46 arrivals are counted
 * swaps the word for "1 arrival, epoch flipped" (a CAS, tried once; a busy
 * word leaves it to a later round): waiters of the rounds before see the
 * epoch change and leave.  No arrival of a later round exists then, so a
 * flipped epoch always means "your round completed".
 *
 * Destroy: 0 once the last round is complete and every sleeper has left
 * (released threads still leaving are waited for, as glibc does, so the
 * last thread out may destroy right after its own wait); EBUSY while a round
 * is incomplete (threads blocked in it: undefined in POSIX).  It clears the
 * mark; the glibc barrier in bytes 0..19 remains.
 *
 * Process-shared barriers (their memory is shared, futex words too, but a
 * peer process may not have the interposer), barriers of more than
 * SLEEPERS_MAX threads, and every barrier while ABAR_PTHREAD=0 go to the C
 * library, whose functions are looked up (dlsym RTLD_NEXT) on first use.
 *
 * A barrier reached through a path that bypasses the interposer:
 *  - the C library's pthread_barrier_wait on a barrier the interposer
 *    initialised (a library loaded with RTLD_DEEPBIND binds to the C
 *    library directly): it finds bytes 0..19, a valid glibc barrier of the
 *    same count; threads that all come that way synchronise among
 *    themselves, a round that mixes both paths never completes (each counts
 *    only its own arrivals).  A parking waiter that sees glibc's arrival
 *    count move prints one line on stderr saying so.
 *  - a wait or destroy after destroy: the mark is gone; the call goes to the
 *    C library's function on bytes 0..19, as if glibc had served it all
 *    along (a wait there is a barrier of the same count; destroy returns 0).
 *  - never initialised (count 0 at offset 8): EINVAL, where glibc's own
 *    code would divide by zero.
 * ABAR_PTHREAD_DEBUG=1 prints one line to stderr on the first barrier each
 * implementation gets (how a test sees that the interposer was used).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "interposer.h"

#define API __attribute__((visibility("default")))

_Static_assert(sizeof(pthread_barrier_t) >= 32, "pthread_barrier_t must hold the compact barrier");
_Static_assert(_Alignof(pthread_barrier_t) >= 8, "the state word needs 8-byte alignment");

/* glibc's struct pthread_barrier (nptl), the first 20 bytes. */
struct glibc_barrier {
    unsigned int in;
    unsigned int current_round;
    unsigned int count;
    int shared;
    unsigned int out;
};

struct compact {
    struct glibc_barrier g; /* 0..19 */
    _Atomic uint32_t mark;  /* 20..23 */
    _Atomic uint64_t state; /* 24..31 */
};
_Static_assert(sizeof(struct compact) == 32, "the compact barrier is 32 bytes");
_Static_assert(offsetof(struct compact, g.count) == 8, "count where glibc reads it");
_Static_assert(offsetof(struct compact, mark) == 20, "mark after glibc's five words");
_Static_assert(offsetof(struct compact, state) == 24, "state word in the last 8 bytes");

#define SLEEPERS_MAX 0x7fffu
#define EPOCH (UINT64_C(1) << 15)
#define ARRIVE (UINT64_C(1) << 16)
#define RESTART_AT (UINT64_C(1) << 46) /* arrivals; the field holds 2^48 */
#define MARK 0x61626172u             /* "abar" */
#define MARK_DEAD 0x64656164u        /* "dead": ours, destroyed */

static _Atomic int said_abar, said_libc, said_mixed; /* pt_say: once each */

static inline uint64_t arrivals(uint64_t s) { return s >> 16; }
static inline uint32_t sleepers(uint64_t s) { return (uint32_t)(s & SLEEPERS_MAX); }

static struct compact *cb(pthread_barrier_t *pb) { return (struct compact *)(void *)pb; }
static uint32_t mark_of(const pthread_barrier_t *pb, uint32_t kind)
{
    const uint64_t a = (uint64_t)(uintptr_t)pb;
    return kind ^ (uint32_t)(a >> 3) ^ (uint32_t)(a >> 35);
}

/* The futex word: the state word's low 32 bits (sleepers, epoch and the low
 * 16 bits of the arrivals). */
static _Atomic uint32_t *futex_word(struct compact *c)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return (_Atomic uint32_t *)(void *)&c->state;
#else
    return (_Atomic uint32_t *)(void *)((char *)&c->state + 4);
#endif
}
static void futex_wait(_Atomic uint32_t *w, uint32_t v)
{
    syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
}
static void futex_wake_all(_Atomic uint32_t *w)
{
    /* A private wake touches no user memory: harmless after the object is
     * freed (the kernel keys it by address only). */
    syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* Whether the round ending at `end` arrivals of epoch `epoch` is complete. */
static inline bool released(uint64_t s, uint64_t epoch, uint64_t end)
{
    return (s & EPOCH) != epoch || arrivals(s) >= end;
}

static inline uint64_t mod(uint64_t a, uint32_t count)
{
    return a <= UINT32_MAX ? (uint32_t)a % count : a % count;
}

/* The spin budget adapts, process-wide: each wait that spun its whole
 * budget in vain and parked halves the next waits' budget (down to 1/64:
 * 0.8 us of the default), each wait released while spinning doubles it
 * back (up to ABAR_SPIN_NS).  Where waits are short the budget stays whole;
 * where partners are often off their CPUs (a host busier than its CPUs)
 * spinning stops paying, and waiters park soon.  A hint: relaxed, racy. */
#define SPIN_DOWN_MAX 6u
static _Atomic unsigned spin_down;

static __attribute__((noinline)) int wait_slow(struct compact *c, uint64_t epoch, uint64_t end, bool counted)
{
    const uint32_t count = c->g.count;
    /* spin: pause while every thread may have a CPU, yield while not */
    const bool crowded = count > pt_ncpu();
    const unsigned down = atomic_load_explicit(&spin_down, memory_order_relaxed);
    const uint64_t budget = pt_spin_ns() >> down;
    uint64_t start = 0;
    for (unsigned i = 1;; i++) {
        uint64_t s = atomic_load_explicit(&c->state, memory_order_acquire);
        if (released(s, epoch, end)) {
            if (down > 0) atomic_store_explicit(&spin_down, down - 1, memory_order_relaxed);
            return 0;
        }
        if (crowded) sched_yield();
        else cpu_relax();
        if ((i & 63) == 0) {
            uint64_t t = pt_now_ns();
            if (start == 0) start = t;
            else if (t - start >= budget) break;
        }
        if (budget == 0) break;
    }
    if (down < SPIN_DOWN_MAX) atomic_store_explicit(&spin_down, down + 1, memory_order_relaxed);
    /* park: register (a thread counted since its arrival already is),
     * then sleep while the word is as we saw it */
    _Atomic uint32_t *fw = futex_word(c);
    uint64_t s;
    if (counted) {
        s = atomic_load_explicit(&c->state, memory_order_acquire);
    } else {
        s = atomic_load_explicit(&c->state, memory_order_relaxed);
        while (sleepers(s) >= SLEEPERS_MAX - HZ_SLOTS) { /* no room to register: yield */
            if (released(s, epoch, end)) {
                atomic_thread_fence(memory_order_acquire);
                return 0;
            }
            sched_yield();
            s = atomic_load_explicit(&c->state, memory_order_relaxed);
        }
        s = atomic_fetch_add_explicit(&c->state, 1, memory_order_acq_rel) + 1;
    }
    while (!released(s, epoch, end)) {
        if (__atomic_load_n(&c->g.in, __ATOMIC_RELAXED) != 0) /* glibc's arrivals: a hint */
            pt_say(&said_mixed,
                "a barrier the interposer serves was also waited on through the C library's "
                "pthread_barrier_wait (RTLD_DEEPBIND?): a round that mixes both never completes",
                true);
        futex_wait(fw, (uint32_t)s);
        s = atomic_load_explicit(&c->state, memory_order_acquire);
    }
    /* leave: destroy waits for the sleepers count to drop (release: our
     * reads of the object come before its reuse) */
    atomic_fetch_sub_explicit(&c->state, 1, memory_order_release);
    return 1;
}

static inline int compact_wait(struct compact *c)
{
    const uint32_t count = c->g.count;
    _Atomic(void *) *hp = pt_slot_of_mine();
    if (hp) atomic_store_explicit(hp, c, memory_order_relaxed); /* ordered by the RMW below */
    const uint64_t add = hp ? ARRIVE : ARRIVE + 1; /* no slot: counted in the sleepers field */
    uint64_t s = atomic_fetch_add_explicit(&c->state, add, memory_order_acq_rel);
    uint64_t a = arrivals(s);
    if (__builtin_expect(a >= RESTART_AT, 0) && mod(a, count) == 0) {
        /* first of a round, far along: restart the count, flipping the
         * epoch, if no one else touched the word since our arrival */
        uint64_t want = s + add;
        uint64_t fresh = ARRIVE | ((s & EPOCH) ^ EPOCH) | sleepers(s + add);
        if (atomic_compare_exchange_strong_explicit(&c->state, &want, fresh, memory_order_acq_rel,
                                                    memory_order_relaxed)) {
            s = fresh - add; /* as if our fetch_add had found it */
            a = 0;
        }
    }
    const uint64_t pos = mod(a, count);
    int r = 0;
    if (pos == count - 1) { /* we complete the round */
        if (sleepers(s)) futex_wake_all(futex_word(c));
        if (!hp) atomic_fetch_sub_explicit(&c->state, 1, memory_order_release);
        r = PTHREAD_BARRIER_SERIAL_THREAD;
    } else {
        const uint64_t end = a - pos + count;
        const uint64_t epoch = s & EPOCH;
        /* the first look, inline: released while we added? */
        s = atomic_load_explicit(&c->state, memory_order_acquire);
        bool out = false; /* counted out of the sleepers field already */
        if (!released(s, epoch, end)) out = wait_slow(c, epoch, end, !hp);
        if (!hp && !out) atomic_fetch_sub_explicit(&c->state, 1, memory_order_release);
    }
    if (hp) atomic_store_explicit(hp, NULL, memory_order_release);
    return r;
}

static inline bool ours(pthread_barrier_t *pb)
{
    /* relaxed: handing the barrier to other threads is the program's own
     * synchronisation (thread creation, a mutex), as for any object */
    return atomic_load_explicit(&cb(pb)->mark, memory_order_relaxed) == mark_of(pb, MARK) &&
           cb(pb)->g.count != 0;
}

API int pthread_barrier_init(pthread_barrier_t *pb, const pthread_barrierattr_t *attr, unsigned count)
{
    if (count == 0) return EINVAL; /* (pb is declared nonnull by the C library) */
    int pshared = PTHREAD_PROCESS_PRIVATE;
    if (attr != NULL && pthread_barrierattr_getpshared(attr, &pshared) != 0) return EINVAL;
    if ((pt_env() & ENV_OFF) || pshared == PTHREAD_PROCESS_SHARED || count > SLEEPERS_MAX) {
        init_fn *f = (init_fn *)pt_libc(LIBC_INIT);
        if (f == NULL) return ENOSYS; /* no C library barrier to fall back on */
        int r = f(pb, attr, count);
        if (r == 0) {
            atomic_store_explicit(&cb(pb)->mark, 0, memory_order_relaxed);
            pt_say(&said_libc,
                (pt_env() & ENV_OFF) ? "off (ABAR_PTHREAD=0): the C library's barriers"
                                  : "a process-shared or very large barrier: the C library's",
                false);
        }
        return r;
    }
    struct compact *c = cb(pb);
    const uint32_t m = atomic_load_explicit(&c->mark, memory_order_relaxed);
    if (m == mark_of(pb, MARK) || m == mark_of(pb, MARK_DEAD)) {
        /* ours before, live or destroyed: a thread of an earlier round may
         * not have seen its release yet, or still be counted as a sleeper;
         * flip the epoch (it then leaves) and keep the sleepers count */
        uint64_t old = atomic_load_explicit(&c->state, memory_order_relaxed), fresh;
        do fresh = ((old & EPOCH) ^ EPOCH) | sleepers(old);
        while (!atomic_compare_exchange_weak_explicit(&c->state, &old, fresh, memory_order_release,
                                                      memory_order_relaxed));
        if (sleepers(old)) futex_wake_all(futex_word(c));
    } else {
        atomic_store_explicit(&c->state, 0, memory_order_relaxed);
    }
    c->g = (struct glibc_barrier){.in = 0, .current_round = 0, .count = count, .shared = 0, .out = 0};
    atomic_store_explicit(&c->mark, mark_of(pb, MARK), memory_order_relaxed);
    pt_say(&said_abar, "barriers on abar", false);
    return 0;
}

API int pthread_barrier_wait(pthread_barrier_t *pb)
{
    if (__builtin_expect(ours(pb), 1)) return compact_wait(cb(pb));
    if (cb(pb)->g.count == 0) return EINVAL; /* never initialised: glibc would divide by 0 */
    wait_fn *f = (wait_fn *)pt_libc(LIBC_WAIT);
    return f ? f(pb) : EINVAL;
}

API int pthread_barrier_destroy(pthread_barrier_t *pb)
{
    struct compact *c = cb(pb);
    if (!ours(pb)) {
        if (c->g.count == 0) return EINVAL; /* never initialised: glibc would divide by 0 */
        destroy_fn *f = (destroy_fn *)pt_libc(LIBC_DESTROY);
        return f ? f(pb) : EINVAL;
    }
    const uint32_t count = c->g.count;
    for (;;) {
        uint64_t s = atomic_load_explicit(&c->state, memory_order_acquire);
        if (mod(arrivals(s), count) != 0) return EBUSY; /* threads blocked in an open round */
        if (sleepers(s) == 0) break;
        sched_yield(); /* released sleepers still leaving */
    }
    for (int i = 0; i < HZ_SLOTS; i++) /* released spinners still leaving */
        while (atomic_load_explicit(&pt_slots[i].p, memory_order_acquire) == c) sched_yield();
    atomic_store_explicit(&c->mark, mark_of(pb, MARK_DEAD), memory_order_relaxed);
    return 0;
}
