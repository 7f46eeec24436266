/*
 * interposer.h - what the interposer's files share (src/pthread).  The
 * design, and the compact barrier these serve, are in interposer.c.
 * Every symbol here is hidden: the library exports the three
 * pthread_barrier_* functions alone.
 */
#ifndef ABAR_PTHREAD_INTERPOSER_H
#define ABAR_PTHREAD_INTERPOSER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* env.c: the C library's function i (LIBC_INIT, _WAIT, _DESTROY) or NULL;
 * the environment's bits; a message printed once per `once` (always, or
 * under ABAR_PTHREAD_DEBUG=1); ABAR_SPIN_NS; the CPUs; the clock. */
enum { LIBC_INIT, LIBC_WAIT, LIBC_DESTROY };
typedef int init_fn(pthread_barrier_t *, const pthread_barrierattr_t *, unsigned);
typedef int wait_fn(pthread_barrier_t *);
typedef int destroy_fn(pthread_barrier_t *);
void *pt_libc(int i);
enum { ENV_UNREAD = 0, ENV_READ = 1, ENV_OFF = 2, ENV_DEBUG = 4 };
int pt_env(void);
void pt_say(_Atomic int *once, const char *what, bool always);
uint64_t pt_spin_ns(void);
extern _Atomic uint64_t pt_spin_ns_cache; /* its value once read (tests set it) */
unsigned pt_ncpu(void);
uint64_t pt_now_ns(void);

/* inside.c: this thread's slot, claimed on first use; NULL when none is left. */
#define HZ_SLOTS 512
struct pt_slot {
    _Alignas(64) _Atomic(void *) p; /* the barrier this thread waits on, or NULL */
    _Atomic int taken;
};
extern struct pt_slot pt_slots[HZ_SLOTS];
extern _Thread_local __attribute__((tls_model("initial-exec"))) int pt_mine; /* slot + 1; 0: not claimed yet, -1: none left */
int pt_claim(void);
static inline _Atomic(void *) *pt_slot_of_mine(void)
{
    int m = pt_mine;
    if (__builtin_expect(m == 0, 0)) m = pt_claim();
    return m > 0 ? &pt_slots[m - 1].p : NULL;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

#endif
