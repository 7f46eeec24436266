/* recover - does a barrier come back to spinning after its waiters parked?
 * T pinned threads run arrive_and_wait; every K phases thread 0 sleeps 1 ms
 * first, long enough for the others to park.  A barrier that recovers runs
 * the phases in between at its spinning speed; one that stays parked runs
 * each as slow as a futex wake-up.  Prints ns per phase with the sleeps
 * taken out, and the context switches per phase.
 *
 *   recover T [PHASES] [K]
 *
 * Built by hand (scripts/bench_device.sh prepare builds it too):
 *   gcc -O2 -Iinclude bench/labs/recover.c src/core/{arrive,tree,wait,lifecycle,hazard,futex}.c -static -pthread -o recover
 */
#define _GNU_SOURCE
#include "abar.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static abar_t bar;
static unsigned T, PHASES, K;
static long csw_total;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static uint64_t now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *worker(void *arg)
{
    unsigned id = (unsigned)(uintptr_t)arg;
    cpu_set_t cs;
    CPU_ZERO(&cs);
    CPU_SET(id, &cs);
    pthread_setaffinity_np(pthread_self(), sizeof cs, &cs);
    struct rusage r0, r1;
    getrusage(RUSAGE_THREAD, &r0);
    for (unsigned k = 1; k <= PHASES; k++) {
        if (id == 0 && k % K == 0) {
            struct timespec ts = { 0, 1000000 };
            nanosleep(&ts, NULL);
        }
        abar_arrive_and_wait(&bar);
    }
    getrusage(RUSAGE_THREAD, &r1);
    pthread_mutex_lock(&mu);
    csw_total += (r1.ru_nvcsw - r0.ru_nvcsw) + (r1.ru_nivcsw - r0.ru_nivcsw);
    pthread_mutex_unlock(&mu);
    return NULL;
}

int main(int argc, char **argv)
{
    T = argc > 1 ? (unsigned)atoi(argv[1]) : 8;
    PHASES = argc > 2 ? (unsigned)atoi(argv[2]) : 200000;
    K = argc > 3 ? (unsigned)atoi(argv[3]) : 20000;
    if (abar_init(&bar, T, NULL)) return 1;
    pthread_t th[256];
    uint64_t t0 = now();
    for (unsigned i = 0; i < T; i++) pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)i);
    for (unsigned i = 0; i < T; i++) pthread_join(th[i], NULL);
    uint64_t el = now() - t0;
    unsigned kicks = PHASES / K;
    double per = ((double)el - kicks * 1.1e6) / PHASES;
    printf("T=%u phases=%u sleeps=%u: %.0f ns per phase (sleeps taken out), %.3f context switches per phase\n",
           T, PHASES, kicks, per, (double)csw_total / PHASES);
    return 0;
}
