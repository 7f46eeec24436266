/*
 * inside.c - who is inside a wait.  A waiter that has not yet seen its
 * release still reads the object; destroy must not return before it is out
 * (glibc counts them out with a second atomic an arrival; so as not to pay
 * that on the shared line, each thread names the barrier it waits on in a
 * slot of its own, and destroy looks through the slots).  A thread claims a
 * slot on its first wait and gives it back when it exits; past HZ_SLOTS
 * threads, a thread without one counts itself in the barrier's sleepers
 * field for the length of its wait instead (same word as its arrival: one
 * RMW more).  The slot is set before the arrival's RMW (release) and
 * cleared, with release, after the last read: a destroyer that saw the
 * round complete (acquire) sees the slot of every thread still inside.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>

#include "interposer.h"

struct pt_slot pt_slots[HZ_SLOTS];
_Thread_local __attribute__((tls_model("initial-exec"))) int pt_mine;
static pthread_key_t hz_key;
static pthread_once_t hz_once = PTHREAD_ONCE_INIT;
static void hz_release(void *slot)
{
    int i = (int)(intptr_t)slot - 1;
    pt_mine = -1; /* a wait in a later thread-exit destructor counts itself in */
    atomic_store_explicit(&pt_slots[i].p, NULL, memory_order_release);
    atomic_store_explicit(&pt_slots[i].taken, 0, memory_order_release);
}
static void hz_after_fork_child(void)
{
    /* only the forking thread lives on */
    for (int i = 0; i < HZ_SLOTS; i++)
        if (i != pt_mine - 1) {
            atomic_store_explicit(&pt_slots[i].p, NULL, memory_order_relaxed);
            atomic_store_explicit(&pt_slots[i].taken, 0, memory_order_relaxed);
        }
}
static void hz_setup(void)
{
    if (pthread_key_create(&hz_key, hz_release) != 0) hz_key = (pthread_key_t)-1;
    pthread_atfork(NULL, NULL, hz_after_fork_child);
}
__attribute__((noinline)) int pt_claim(void)
{
    pthread_once(&hz_once, hz_setup);
    if (hz_key != (pthread_key_t)-1)
        for (int i = 0; i < HZ_SLOTS; i++) {
            int z = 0;
            if (atomic_load_explicit(&pt_slots[i].taken, memory_order_relaxed) == 0 &&
                atomic_compare_exchange_strong_explicit(&pt_slots[i].taken, &z, 1, memory_order_acquire,
                                                        memory_order_relaxed)) {
                if (pthread_setspecific(hz_key, (void *)(intptr_t)(i + 1)) != 0) {
                    atomic_store_explicit(&pt_slots[i].taken, 0, memory_order_relaxed);
                    break;
                }
                return pt_mine = i + 1;
            }
        }
    return pt_mine = -1;
}
