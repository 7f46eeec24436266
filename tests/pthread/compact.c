/*
 * compact.c - the interposer's compact barrier from inside (white-box: it
 * includes src/pthread/interposer.c): the bytes glibc's own code sees, a
 * barrier never initialised, glibc's wait and destroy on one of ours, the
 * arrival count's restart (2^46) under more threads than the count, destroy
 * while a round is open, parked waiters.
 */
#include "interposer.c"

#include <stdio.h>
#include <string.h>

#include "cases.h"
#define SERIAL PTHREAD_BARRIER_SERIAL_THREAD

/* Bytes 0..19 are what glibc's own init writes for the same count. */
static int layout_is_glibcs(void)
{
    pthread_barrier_t a, g;
    memset(&a, 0xee, sizeof a);
    memset(&g, 0xee, sizeof g);
    REQUIRE(pthread_barrier_init(&a, NULL, 5) == 0, "init");
    init_fn *gi = (init_fn *)pt_libc(LIBC_INIT);
    REQUIRE(gi && gi(&g, NULL, 5) == 0, "glibc's init");
    REQUIRE(memcmp(&a, &g, 20) == 0, "bytes 0..19 differ from glibc's");
    REQUIRE(cb(&a)->g.count == 5 && cb(&a)->g.shared == 0, "count or shared");
    REQUIRE(ours(&a), "not marked");
    REQUIRE(atomic_load(&cb(&a)->state) == 0, "state not 0");
    return 1;
}

/* Never initialised (zeroed): EINVAL, where glibc's code divides by 0. */
static int never_initialised(void)
{
    pthread_barrier_t z;
    memset(&z, 0, sizeof z);
    REQUIRE(pthread_barrier_wait(&z) == EINVAL, "wait");
    REQUIRE(pthread_barrier_destroy(&z) == EINVAL, "destroy");
    return 1;
}

/* The C library's wait and destroy (what a library bound with RTLD_DEEPBIND
 * calls) on a barrier the interposer initialised: glibc's barrier of the same
 * count, apart from ours; ours goes on unchanged. */
static pthread_barrier_t gl;
static void *glibc_waiter(void *arg)
{
    (void)arg;
    wait_fn *gw = (wait_fn *)pt_libc(LIBC_WAIT);
    long serial = 0;
    for (int i = 0; i < 200; i++) serial += gw(&gl) == SERIAL;
    return (void *)serial;
}
static int glibc_calls_on_ours(void)
{
    wait_fn *gw = (wait_fn *)pt_libc(LIBC_WAIT);
    destroy_fn *gd = (destroy_fn *)pt_libc(LIBC_DESTROY);
    REQUIRE(gw && gd, "dlsym");
    pthread_barrier_t b;
    REQUIRE(pthread_barrier_init(&b, NULL, 1) == 0, "init");
    for (int i = 0; i < 3; i++) REQUIRE(gw(&b) == SERIAL, "glibc's wait at count 1");
    REQUIRE(pthread_barrier_wait(&b) == SERIAL, "ours after glibc's");
    REQUIRE(gd(&b) == 0, "glibc's destroy");
    REQUIRE(ours(&b) && pthread_barrier_wait(&b) == SERIAL, "ours after glibc's destroy");
    REQUIRE(pthread_barrier_init(&gl, NULL, 2) == 0, "init 2");
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, glibc_waiter, NULL);
    long serial = 0;
    for (int i = 0; i < 2; i++) {
        void *r;
        pthread_join(t[i], &r);
        serial += (long)r;
    }
    REQUIRE(serial == 200, "%ld serial returns of glibc's wait for 200 rounds", serial);
    REQUIRE(atomic_load(&cb(&gl)->state) == 0, "glibc's waits moved our state");
    REQUIRE(pthread_barrier_destroy(&gl) == 0, "destroy");
    return 1;
}

/* Threads, rounds, one serial a round, writes before a wait seen after it;
 * more threads than count share out a budget of arrivals (every round
 * fills).  The state starts `before` arrivals short of the restart. */
enum { MAXT = 8 };
static pthread_barrier_t rb;
static _Atomic long budget, serial_n, bad;
static void *round_body(void *arg)
{
    (void)arg;
    while (atomic_fetch_sub(&budget, 1) > 0) {
        int r = pthread_barrier_wait(&rb);
        if (r == SERIAL) atomic_fetch_add(&serial_n, 1);
        else if (r != 0) atomic_fetch_add(&bad, 1);
    }
    return NULL;
}
static int rounds_across_restart(unsigned threads, unsigned count, long arrivals_total, uint64_t before)
{
    REQUIRE(pthread_barrier_init(&rb, NULL, count) == 0, "init");
    uint64_t start = (RESTART_AT - before) / count * count; /* a round boundary */
    atomic_store(&cb(&rb)->state, start << 16);
    atomic_store(&budget, arrivals_total);
    atomic_store(&serial_n, 0);
    atomic_store(&bad, 0);
    pthread_t t[MAXT];
    for (unsigned i = 0; i < threads; i++) pthread_create(&t[i], NULL, round_body, NULL);
    for (unsigned i = 0; i < threads; i++) pthread_join(t[i], NULL);
    uint64_t s = atomic_load(&cb(&rb)->state);
    printf("  %u threads, count %u: %ld serial, state: %llu arrivals, epoch %d, %u sleepers\n", threads,
           count, atomic_load(&serial_n), (unsigned long long)arrivals(s), (s & EPOCH) != 0, sleepers(s));
    REQUIRE(atomic_load(&bad) == 0, "%ld waits returned an error", atomic_load(&bad));
    REQUIRE(atomic_load(&serial_n) == arrivals_total / count, "%ld serial for %ld rounds",
            atomic_load(&serial_n), arrivals_total / count);
    REQUIRE(sleepers(s) == 0, "sleepers left registered");
    REQUIRE((s & EPOCH) && arrivals(s) < (uint64_t)arrivals_total, "the count did not restart");
    REQUIRE(pthread_barrier_destroy(&rb) == 0, "destroy");
    return 1;
}
static int restart(void)
{
    return rounds_across_restart(2, 2, 4000, 1000) && rounds_across_restart(3, 2, 3000, 999) &&
           rounds_across_restart(5, 3, 3000, 1500) && rounds_across_restart(1, 1, 100, 50);
}

/* Parked waiters (no spin): the sleepers count returns to 0, destroy right
 * after the last wait waits for them to leave. */
static int parked(void)
{
    uint64_t saved = atomic_exchange(&pt_spin_ns_cache, 0);
    int ok = rounds_across_restart(3, 3, 3000, 1500) && rounds_across_restart(4, 2, 2000, 1000);
    atomic_store(&pt_spin_ns_cache, saved);
    return ok;
}

/* Destroy while a thread is blocked in an open round: EBUSY; once it is
 * released, 0, and the mark is gone (a later call goes to glibc's barrier
 * in bytes 0..19). */
static pthread_barrier_t db;
static void *one_wait(void *arg)
{
    (void)arg;
    return (void *)(long)pthread_barrier_wait(&db);
}
static int destroy_open_round(void)
{
    REQUIRE(pthread_barrier_init(&db, NULL, 2) == 0, "init");
    pthread_t t;
    pthread_create(&t, NULL, one_wait, NULL);
    while (arrivals(atomic_load(&cb(&db)->state)) == 0) sched_yield();
    REQUIRE(pthread_barrier_destroy(&db) == EBUSY, "destroy with a thread blocked");
    int r = pthread_barrier_wait(&db);
    void *tr;
    pthread_join(t, &tr);
    REQUIRE((r == SERIAL) + ((long)tr == SERIAL) == 1, "serial %d %ld", r, (long)tr);
    REQUIRE(pthread_barrier_destroy(&db) == 0, "destroy");
    REQUIRE(!ours(&db), "still marked after destroy");
    return 1;
}

int main(void)
{
    run("layout_is_glibcs", layout_is_glibcs);
    run("never_initialised_einval", never_initialised);
    run("glibc_calls_on_ours", glibc_calls_on_ours);
    run("restart_at_2_46", restart);
    run("parked_waiters", parked);
    run("destroy_open_round_ebusy", destroy_open_round);
    return cases_end();
}
