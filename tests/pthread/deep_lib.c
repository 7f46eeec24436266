/*
 * deep_lib.c - libdeep_barrier.so: pthread_barrier_* calls made from inside
 * a library, which dropin.c opens with dlopen, once plainly and once with
 * RTLD_DEEPBIND (its calls then bind to the C library first, past any
 * preloaded library).
 */
#define _GNU_SOURCE
#include <pthread.h>

int deep_init(pthread_barrier_t *b, unsigned count) { return pthread_barrier_init(b, NULL, count); }
int deep_wait(pthread_barrier_t *b) { return pthread_barrier_wait(b); }
int deep_destroy(pthread_barrier_t *b) { return pthread_barrier_destroy(b); }
