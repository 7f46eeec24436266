/*
 * env.c - what the interposer looks up once: the C library's own
 * pthread_barrier_* functions, the environment (ABAR_PTHREAD,
 * ABAR_PTHREAD_DEBUG, ABAR_SPIN_NS), the CPUs; and its one-line messages.
 * Each is read on first use, from any thread: the same answer each time, so
 * a race only looks twice.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "interposer.h"

/* The C library's functions: looked up on first use, from any thread (the
 * same answer each time; a race only looks twice). */
static _Atomic(void *) libc_fn[3];
void *pt_libc(int i)
{
    static const char *const names[3] = {"pthread_barrier_init", "pthread_barrier_wait",
                                         "pthread_barrier_destroy"};
    void *f = atomic_load_explicit(&libc_fn[i], memory_order_acquire);
    if (f == NULL) {
        f = dlsym(RTLD_NEXT, names[i]);
        if (f != NULL) atomic_store_explicit(&libc_fn[i], f, memory_order_release);
    }
    return f;
}

/* The environment, read on first use (getenv works in any constructor). */
static _Atomic int env_bits;
int pt_env(void)
{
    int v = atomic_load_explicit(&env_bits, memory_order_relaxed);
    if (v != ENV_UNREAD) return v;
    v = ENV_READ;
    const char *e = getenv("ABAR_PTHREAD");
    if (e && strcmp(e, "0") == 0) v |= ENV_OFF;
    e = getenv("ABAR_PTHREAD_DEBUG");
    if (e && strcmp(e, "1") == 0) v |= ENV_DEBUG;
    atomic_store_explicit(&env_bits, v, memory_order_relaxed);
    return v;
}

void pt_say(_Atomic int *once, const char *what, bool always)
{
    if ((always || (pt_env() & ENV_DEBUG)) && !atomic_exchange_explicit(once, 1, memory_order_relaxed))
        fprintf(stderr, "abar-pthread: %s\n", what);
}

/* The spin budget (ABAR_SPIN_NS, as abar's) and the CPUs, read on first use. */
_Atomic uint64_t pt_spin_ns_cache = UINT64_MAX; /* UINT64_MAX: not read yet */
uint64_t pt_spin_ns(void)
{
    uint64_t v = atomic_load_explicit(&pt_spin_ns_cache, memory_order_relaxed);
    if (v != UINT64_MAX) return v;
    v = 50000;
    const char *e = getenv("ABAR_SPIN_NS");
    if (e && *e) {
        char *end;
        unsigned long long x = strtoull(e, &end, 10);
        if (*end == '\0' && x < UINT64_MAX) v = x;
    }
    atomic_store_explicit(&pt_spin_ns_cache, v, memory_order_relaxed);
    return v;
}
static _Atomic unsigned ncpu_cache;
unsigned pt_ncpu(void)
{
    unsigned n = atomic_load_explicit(&ncpu_cache, memory_order_relaxed);
    if (n) return n;
    cpu_set_t set;
    n = sched_getaffinity(0, sizeof set, &set) == 0 ? (unsigned)CPU_COUNT(&set) : 0;
    if (n == 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        n = c > 0 ? (unsigned)c : 1;
    }
    atomic_store_explicit(&ncpu_cache, n, memory_order_relaxed);
    return n;
}
uint64_t pt_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
