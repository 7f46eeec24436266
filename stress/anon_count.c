/*
 * anon_count.c - anonymous arrivals, counted: every arrival that returns a
 * valid token is counted in exactly one phase, and a phase completes after
 * exactly `expected` of them.
 *
 *   anon_count [-n ARRIVALS] [-e EXPECTED] [-t THREADS] [-m wait|arrive] [-w default|spin|park]
 *
 * THREADS threads (default 3) share a barrier of EXPECTED (default 2, no
 * completion function: the pair's path) and together make ARRIVALS arrivals
 * (default 10^8): with -m wait each arrives and waits (abar_arrive, then
 * abar_wait_until with a short deadline, so the last ones never hang), with
 * -m arrive they only arrive.  At the end, quiescent:
 *
 *     counted = EXPECTED x completed phases + the open phase's arrivals
 *
 * no arrival was refused (a barrier without drops or completion refuses
 * none: a pair's phase completes in one CAS; a wider one refuses those that
 * race its completion, counted apart), no wait returned early (a waiter
 * checks the completed-phase count against its token), and destroy returns
 * 0.  Exit 0 on success, 1 with a message otherwise.
 */
#define _GNU_SOURCE
#include <abar.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static abar_t bar;
static uint64_t target;
static int wait_mode;
static _Atomic uint64_t issued, counted, refused, early;

static struct timespec in_ms(long ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += ms * 1000000L;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    return ts;
}

static void *worker(void *arg)
{
    (void)arg;
    uint64_t ok = 0, bad = 0, ea = 0;
    while (atomic_fetch_add_explicit(&issued, 1, memory_order_relaxed) < target) {
        abar_token_t t = abar_arrive(&bar);
        if (abar_token_error(t)) {
            bad++;
            continue;
        }
        ok++;
        if (wait_mode) {
            struct timespec ts = in_ms(50);
            int r = abar_wait_until(&bar, t, &ts);
            /* released: the phase count must be past the token's phase */
            if (r == 0 && abar_test(&bar, t) != 0) ea++;
        }
    }
    atomic_fetch_add(&counted, ok);
    atomic_fetch_add(&refused, bad);
    atomic_fetch_add(&early, ea);
    return NULL;
}

int main(int argc, char **argv)
{
    uint64_t n = 100000000;
    unsigned expected = 2, threads = 3, flags = 0;
    int c;
    while ((c = getopt(argc, argv, "n:e:t:m:w:")) != -1) {
        switch (c) {
        case 'n': n = strtoull(optarg, NULL, 10); break;
        case 'e': expected = (unsigned)atoi(optarg); break;
        case 't': threads = (unsigned)atoi(optarg); break;
        case 'm': wait_mode = strcmp(optarg, "wait") == 0; break;
        case 'w':
            flags = strcmp(optarg, "spin") == 0 ? ABAR_WAIT_SPIN : strcmp(optarg, "park") == 0 ? ABAR_WAIT_PARK : 0;
            break;
        default:
            fprintf(stderr, "usage: %s [-n ARRIVALS] [-e EXPECTED] [-t THREADS] [-m wait|arrive] [-w default|spin|park]\n",
                    argv[0]);
            return 2;
        }
    }
    if (threads < 1 || threads > 256 || expected < 1) return 2;
    target = n;
    abar_attr_t at = { NULL, NULL, flags };
    if (abar_init(&bar, expected, &at) != 0) return 1;
    pthread_t th[256];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned i = 0; i < threads; i++) pthread_create(&th[i], NULL, worker, NULL);
    for (unsigned i = 0; i < threads; i++) pthread_join(th[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    /* quiescent: the open phase's arrivals are what the next phase lacks */
    const uint64_t phases = abar_phase(&bar);
    const uint64_t cnt = atomic_load(&counted);
    uint64_t open = cnt - expected * phases;
    int ok = cnt >= expected * phases && open < expected;
    /* complete the open phase: exactly expected - open more arrivals do it */
    for (uint64_t i = open; ok && i < expected; i++)
        if (abar_token_error(abar_arrive(&bar))) ok = 0;
    if (ok && abar_phase(&bar) != phases + 1) ok = 0;
    const int d = abar_destroy(&bar);
    const double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("anon_count: expected %u, %u threads, %s: %llu arrivals counted, %llu refused, %llu phases, "
           "%llu in the open one, %llu early releases, destroy %d, %.1f M arrivals/s\n",
           expected, threads, wait_mode ? "arrive+wait" : "arrive only", (unsigned long long)cnt,
           (unsigned long long)atomic_load(&refused), (unsigned long long)phases, (unsigned long long)open,
           (unsigned long long)atomic_load(&early), d, (double)cnt / s / 1e6);
    if (!ok || d != 0 || atomic_load(&early) || (expected <= 2 && atomic_load(&refused))) {
        printf("anon_count: FAIL\n");
        return 1;
    }
    printf("anon_count: OK\n");
    return 0;
}
