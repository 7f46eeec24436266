/*
 * interposer.c - pthread_barrier_init, _wait and _destroy on abar, for
 * programs that were never written for it: LD_PRELOAD=libabar-pthread.so.
 *
 * pthread_barrier_t is 32 bytes on 64-bit glibc and abar_t is 256, so the
 * abar_t lives out of line, on the heap: the pthread_barrier_t holds its
 * address in its first word and a mark in its last (bytes 24..31, which
 * glibc's own barrier, five 32-bit words, leaves unused).  The mark says
 * which implementation owns the object:
 *   ABAR   our heap abar_t, private to this process;
 *   LIBC   the C library's barrier, in the object itself: a barrier with
 *          PTHREAD_PROCESS_SHARED (its memory is shared, our heap is not),
 *          one counting past ABAR_EXPECTED_MAX, or every barrier while the
 *          interposer is turned off (ABAR_PTHREAD=0 in the environment).
 * Anything else (never initialised, destroyed) goes to the C library, as
 * an unmodified program would.
 *
 * POSIX results: one thread a phase gets PTHREAD_BARRIER_SERIAL_THREAD (the
 * one whose arrival completed it), the others 0; count 0 is EINVAL.
 * Destroy does what glibc does where POSIX leaves room: it waits for threads
 * that were released but have not yet left pthread_barrier_wait, and
 * returns EBUSY (as POSIX allows) instead of hanging when threads are still
 * blocked in an incomplete round.
 * ABAR_PTHREAD_DEBUG=1 prints one line to stderr on the first barrier each
 * implementation gets (how a test sees that the interposer was used).
 */
#define _GNU_SOURCE
#include "abar_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define API __attribute__((visibility("default")))

_Static_assert(sizeof(pthread_barrier_t) >= 32, "pthread_barrier_t must have room for the mark");

enum { MARK_OFF = 24 };
#define MARK_ABAR UINT64_C(0x6162617270746872) /* "abarpthr" */
#define MARK_LIBC UINT64_C(0x6c69626370746872) /* "libcpthr" */

/* The marks are mixed with the object's address: a barrier copied
 * elsewhere (undefined in POSIX) is not taken for ours. */
static uint64_t mark_of(const pthread_barrier_t *pb, uint64_t kind)
{
    return kind ^ (uint64_t)(uintptr_t)pb;
}
static _Atomic uint64_t *mark(pthread_barrier_t *pb)
{
    return (_Atomic uint64_t *)(void *)((char *)pb + MARK_OFF);
}
static abar_t **home(pthread_barrier_t *pb) { return (abar_t **)(void *)pb; }

typedef int init_fn(pthread_barrier_t *, const pthread_barrierattr_t *, unsigned);
typedef int wait_fn(pthread_barrier_t *);
typedef int destroy_fn(pthread_barrier_t *);
static struct {
    init_fn *init;
    wait_fn *wait;
    destroy_fn *destroy;
    int off;   /* ABAR_PTHREAD=0: every barrier is the C library's */
    int debug; /* ABAR_PTHREAD_DEBUG=1 */
} libc;
static _Atomic int said_abar, said_libc;

__attribute__((constructor)) static void setup(void)
{
    libc.init = (init_fn *)dlsym(RTLD_NEXT, "pthread_barrier_init");
    libc.wait = (wait_fn *)dlsym(RTLD_NEXT, "pthread_barrier_wait");
    libc.destroy = (destroy_fn *)dlsym(RTLD_NEXT, "pthread_barrier_destroy");
    const char *e = getenv("ABAR_PTHREAD");
    libc.off = e && strcmp(e, "0") == 0;
    e = getenv("ABAR_PTHREAD_DEBUG");
    libc.debug = e && strcmp(e, "1") == 0;
}

static void say(_Atomic int *once, const char *what)
{
    if (libc.debug && !atomic_exchange_explicit(once, 1, memory_order_relaxed))
        fprintf(stderr, "abar-pthread: %s\n", what);
}

API int pthread_barrier_init(pthread_barrier_t *pb, const pthread_barrierattr_t *attr, unsigned count)
{
    if (count == 0) return EINVAL; /* (pb is declared nonnull by the C library) */
    if (libc.init == NULL) return ENOSYS; /* no C library barrier to fall back on */
    int pshared = PTHREAD_PROCESS_PRIVATE;
    if (attr != NULL && pthread_barrierattr_getpshared(attr, &pshared) != 0) return EINVAL;
    if (libc.off || pshared == PTHREAD_PROCESS_SHARED || count > ABAR_EXPECTED_MAX) {
        int r = libc.init(pb, attr, count);
        if (r == 0) {
            atomic_store_explicit(mark(pb), mark_of(pb, MARK_LIBC), memory_order_relaxed);
            say(&said_libc, libc.off ? "off (ABAR_PTHREAD=0): the C library's barriers"
                                     : "a process-shared or very large barrier: the C library's");
        }
        return r;
    }
    abar_t *b = aligned_alloc(_Alignof(abar_t), sizeof(abar_t));
    if (b == NULL) return ENOMEM;
    memset(b, 0, sizeof *b);
    int r = abar_init(b, count, NULL);
    if (r != 0) {
        free(b);
        return r;
    }
    *home(pb) = b;
    /* relaxed: handing the barrier to other threads is the program's own
     * synchronisation (thread creation, a mutex), as for any object */
    atomic_store_explicit(mark(pb), mark_of(pb, MARK_ABAR), memory_order_relaxed);
    say(&said_abar, "barriers on abar");
    return 0;
}

static abar_t *ours(pthread_barrier_t *pb)
{
    return atomic_load_explicit(mark(pb), memory_order_relaxed) == mark_of(pb, MARK_ABAR) ? *home(pb)
                                                                                         : NULL;
}

API int pthread_barrier_wait(pthread_barrier_t *pb)
{
    abar_t *b = ours(pb);
    if (b == NULL) return libc.wait ? libc.wait(pb) : EINVAL;
    bool last;
    int r = abar__arrive_and_wait_last(b, &last);
    if (r != 0) return r; /* EINVAL: not a live barrier (destroyed under us) */
    return last ? PTHREAD_BARRIER_SERIAL_THREAD : 0;
}

API int pthread_barrier_destroy(pthread_barrier_t *pb)
{
    abar_t *b = ours(pb);
    if (b == NULL) {
        if (libc.destroy == NULL) return EINVAL;
        int r = libc.destroy(pb);
        if (r == 0) atomic_store_explicit(mark(pb), 0, memory_order_relaxed);
        return r;
    }
    for (;;) {
        int r = abar_destroy(b);
        if (r == 0) break;
        if (r != EBUSY) return r;
        /* Threads still inside: if some arrived in the open phase they are
         * blocked in an incomplete round (POSIX: undefined; we say EBUSY);
         * otherwise they were released and are leaving: wait for them. */
        struct abar_impl *bi = impl(b);
        uint64_t s = atomic_load_explicit(&bi->state, memory_order_acquire);
        if (st_pending(s) > 0 &&
            (uint32_t)st_pending(s) < atomic_load_explicit(&bi->expected, memory_order_relaxed))
            return EBUSY;
        sched_yield();
    }
    atomic_store_explicit(mark(pb), 0, memory_order_relaxed);
    *home(pb) = NULL;
    free(b);
    return 0;
}
