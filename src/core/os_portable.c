/* os_portable.c - the portable backend (os.h), for any POSIX system:
 * waits on a table of mutex + condition variable pairs hashed by address.
 *
 * A wait takes its bucket's mutex, counts itself in the bucket, checks the
 * word and sleeps on the bucket's condition variable while the word holds
 * its value; a wake locks the same mutex and broadcasts.  A waker changes
 * the word before it wakes, so a waiter either sees the change when it
 * checks under the mutex, or is already asleep when the broadcast comes:
 * no lost wake-up.  The count lets a wake with no waiter in the bucket
 * skip the mutex: the waiter counts itself before it reads the word and
 * the waker reads the count after changing the word, with a seq_cst fence
 * between each pair, so one of them sees the other.  A broadcast wakes
 * every waiter of the bucket, those on other words too: each re-checks
 * (the futex's contract allows spurious wake-ups).  A wake touches only
 * the bucket, never the word.
 *
 * Process-shared words are polled (os.h abar__os_poll_wait): the table is
 * this process's. */
#define _GNU_SOURCE
#include "abar_internal.h"
#include "os.h"

#if defined(ABAR_WAIT_PORTABLE)

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <unistd.h>

#define NBUCKETS 256 /* a power of 2 */

struct bucket {
    _Alignas(64) pthread_mutex_t m;
    pthread_cond_t cv;
    _Atomic uint32_t waiters; /* threads between counting themselves and leaving */
};
static struct bucket table[NBUCKETS];

static struct bucket *bucket_of(const void *word)
{
    uint64_t a = (uint64_t)(uintptr_t)word >> 2;
    a *= 0x9e3779b97f4a7c15u;
    return &table[a >> (64 - 8)];
}
_Static_assert(NBUCKETS == 1u << 8, "bucket_of takes 8 bits");

/* Timed waits measure CLOCK_MONOTONIC, as the futex does, where the
 * condition variable can be told so (POSIX clock selection; macOS has none
 * and a relative wait instead). */
static void table_init(void)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
#if !defined(__APPLE__)
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
#endif
    for (unsigned i = 0; i < NBUCKETS; i++) {
        pthread_mutex_init(&table[i].m, NULL);
        pthread_cond_init(&table[i].cv, &ca);
        atomic_init(&table[i].waiters, 0);
    }
    pthread_condattr_destroy(&ca);
}

/* A fork child has only the forking thread: the table starts anew there
 * (a bucket may have been held, or waited on, by a thread the child does
 * not have). */
__attribute__((constructor)) static void table_setup(void)
{
    table_init();
    pthread_atfork(NULL, NULL, table_init);
}

void abar__futex_wake_all(_Atomic uint32_t *word, bool pshared)
{
    if (pshared) return; /* pollers see the change */
    struct bucket *k = bucket_of((const void *)word);
    /* the other half of the count's pair (above) */
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&k->waiters, memory_order_relaxed) == 0) return;
    int saved = errno;
    pthread_mutex_lock(&k->m);
    pthread_cond_broadcast(&k->cv);
    pthread_mutex_unlock(&k->m);
    errno = saved;
}

int abar__futex_wait(_Atomic uint32_t *word, uint32_t val, bool pshared,
                     const struct timespec *abstime)
{
    if (pshared) return abar__os_poll_wait(word, val, abstime);
    struct bucket *k = bucket_of((const void *)word);
    int saved = errno, r = 0;
    pthread_mutex_lock(&k->m);
    atomic_fetch_add_explicit(&k->waiters, 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(word, memory_order_relaxed) == val) {
        /* A wait is not a cancellation point (the futex is not one); the
         * condition variable's wait is: cancellation is held off there. */
        int cs;
        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cs);
        if (abstime == NULL) {
            pthread_cond_wait(&k->cv, &k->m);
        } else {
#if defined(__APPLE__)
            const uint64_t now = abar__now_ns(), at = abar__os_deadline_ns(abstime);
            const uint64_t left = at > now ? at - now : 0;
            const struct timespec rel = { (time_t)(left / 1000000000u), (long)(left % 1000000000u) };
            r = pthread_cond_timedwait_relative_np(&k->cv, &k->m, &rel);
#else
            r = pthread_cond_timedwait(&k->cv, &k->m, abstime);
#endif
        }
        pthread_setcancelstate(cs, NULL);
    }
    atomic_fetch_sub_explicit(&k->waiters, 1, memory_order_relaxed);
    pthread_mutex_unlock(&k->m);
    errno = saved;
    if (r == ETIMEDOUT && abar__now_ns() < abar__os_deadline_ns(abstime))
        r = 0; /* early by the clock's rounding: the caller re-checks and waits again */
    return r == ETIMEDOUT ? ETIMEDOUT : 0;
}

bool abar__os_membarrier_register(void) { return false; }
void abar__os_membarrier(void) {}

#if !defined(__linux__) /* on Linux, os_linux.c's */
unsigned abar__os_ncpu(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1;
}

int abar__os_cpus(int *cpus, int max)
{
    const int n = (int)abar__os_ncpu();
    if (cpus == NULL) return n;
    for (int c = 0; c < n && c < max; c++) cpus[c] = c;
    return n < max ? n : max;
}

bool abar__os_pin(void *pthread_attr, int cpu)
{
    (void)pthread_attr, (void)cpu;
    return false;
}
#endif

void abar__os_nap(uint64_t ns)
{
    struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
    nanosleep(&ts, NULL);
}

#endif
