/*
 * posix_barrier.c - POSIX pthread_barrier_* cases, written with no knowledge
 * of abar: CTest runs this one program against the C library, against
 * libabar-pthread.so under LD_PRELOAD, and linked with the interposer, and
 * the verdicts must agree (tests/pthread/run_twice.sh).
 * Prints "case NAME: ok" or "case NAME: FAIL (why)" per case, then
 * "N passed, M failed"; exits 1 on any failure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cases.h"

static int count_zero(void)
{
    pthread_barrier_t b;
    REQUIRE(pthread_barrier_init(&b, NULL, 0) == EINVAL, "count 0 not EINVAL");
    return 1;
}

static int attr_pshared(void)
{
    pthread_barrierattr_t a;
    int v = -1;
    REQUIRE(pthread_barrierattr_init(&a) == 0, "attr init");
    REQUIRE(pthread_barrierattr_getpshared(&a, &v) == 0 && v == PTHREAD_PROCESS_PRIVATE, "default not private");
    REQUIRE(pthread_barrierattr_setpshared(&a, PTHREAD_PROCESS_SHARED) == 0, "set shared");
    REQUIRE(pthread_barrierattr_getpshared(&a, &v) == 0 && v == PTHREAD_PROCESS_SHARED, "get shared");
    REQUIRE(pthread_barrierattr_setpshared(&a, 12345) == EINVAL, "bad pshared value accepted");
    pthread_barrier_t b;
    REQUIRE(pthread_barrier_init(&b, &a, 1) == 0, "init with attr");
    REQUIRE(pthread_barrier_wait(&b) == PTHREAD_BARRIER_SERIAL_THREAD, "count 1 not serial");
    REQUIRE(pthread_barrier_destroy(&b) == 0, "destroy");
    REQUIRE(pthread_barrierattr_destroy(&a) == 0, "attr destroy");
    return 1;
}

static int count_one(void)
{
    pthread_barrier_t b;
    REQUIRE(pthread_barrier_init(&b, NULL, 1) == 0, "init");
    for (int i = 0; i < 1000; i++)
        REQUIRE(pthread_barrier_wait(&b) == PTHREAD_BARRIER_SERIAL_THREAD, "phase %d: not serial", i);
    REQUIRE(pthread_barrier_destroy(&b) == 0, "destroy");
    return 1;
}

/* T threads, P phases: exactly one serial return a phase, and every write
 * made before a wait is seen by every thread after it. */
enum { MAXT = 64, PHASES = 2000 };
static pthread_barrier_t team_bar;
static unsigned team_T;
static _Atomic int serials[PHASES];
static int slots[MAXT];
static _Atomic int seen_bad;

static void *team_body(void *arg)
{
    unsigned me = (unsigned)(uintptr_t)arg;
    for (int p = 0; p < PHASES; p++) {
        slots[me] = p + 1;
        int r = pthread_barrier_wait(&team_bar);
        if (r == PTHREAD_BARRIER_SERIAL_THREAD) atomic_fetch_add(&serials[p], 1);
        else if (r != 0) atomic_store(&seen_bad, 1);
        for (unsigned t = 0; t < team_T; t++)
            if (slots[t] < p + 1) atomic_store(&seen_bad, 2);
        r = pthread_barrier_wait(&team_bar); /* nobody writes slots until all read */
        if (r != 0 && r != PTHREAD_BARRIER_SERIAL_THREAD) atomic_store(&seen_bad, 1);
    }
    return NULL;
}

static int team(unsigned T)
{
    team_T = T;
    memset(slots, 0, sizeof slots);
    for (int p = 0; p < PHASES; p++) atomic_store(&serials[p], 0);
    atomic_store(&seen_bad, 0);
    REQUIRE(pthread_barrier_init(&team_bar, NULL, T) == 0, "init %u", T);
    pthread_t th[MAXT];
    for (unsigned t = 0; t < T; t++)
        REQUIRE(pthread_create(&th[t], NULL, team_body, (void *)(uintptr_t)t) == 0, "create");
    for (unsigned t = 0; t < T; t++) pthread_join(th[t], NULL);
    REQUIRE(atomic_load(&seen_bad) != 1, "a wait returned an error");
    REQUIRE(atomic_load(&seen_bad) != 2, "a write before the wait was not seen after it");
    for (int p = 0; p < PHASES; p++)
        REQUIRE(atomic_load(&serials[p]) == 1, "phase %d: %d serial threads", p, atomic_load(&serials[p]));
    REQUIRE(pthread_barrier_destroy(&team_bar) == 0, "destroy");
    return 1;
}
static int team2(void) { return team(2); }
static int team4(void) { return team(4); }
static int team_oversubscribed(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned T = (unsigned)(n > 0 ? n : 1) * 4;
    return team(T > MAXT ? MAXT : T);
}

static int reinit(void)
{
    for (int k = 0; k < 3; k++) {
        if (!team(3)) return 0;
    }
    return 1;
}

/* The last thread out destroys right after its own wait, while the others
 * may still be leaving: glibc waits for them and returns 0. */
static pthread_barrier_t quick_bar;
static void *quick_body(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&quick_bar);
    return NULL;
}
static int destroy_after_wait(void)
{
    for (int k = 0; k < 200; k++) {
        REQUIRE(pthread_barrier_init(&quick_bar, NULL, 4) == 0, "init");
        pthread_t th[3];
        for (int t = 0; t < 3; t++) pthread_create(&th[t], NULL, quick_body, NULL);
        int r = pthread_barrier_wait(&quick_bar);
        REQUIRE(r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD, "wait %d", r);
        r = pthread_barrier_destroy(&quick_bar);
        REQUIRE(r == 0, "round %d: destroy right after the wait returned %d", k, r);
        for (int t = 0; t < 3; t++) pthread_join(th[t], NULL);
    }
    return 1;
}

/* A process-shared barrier in a shared mapping, across fork. */
struct shared { pthread_barrier_t b; _Atomic int serial[100]; };
static int pshared_fork(void)
{
    struct shared *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    REQUIRE(s != MAP_FAILED, "mmap");
    pthread_barrierattr_t a;
    pthread_barrierattr_init(&a);
    pthread_barrierattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    REQUIRE(pthread_barrier_init(&s->b, &a, 2) == 0, "init shared");
    pthread_barrierattr_destroy(&a);
    pid_t pid = fork();
    REQUIRE(pid >= 0, "fork");
    for (int p = 0; p < 100; p++) {
        int r = pthread_barrier_wait(&s->b);
        if (r == PTHREAD_BARRIER_SERIAL_THREAD) atomic_fetch_add(&s->serial[p], 1);
        else if (r != 0) {
            if (pid == 0) _exit(3);
            REQUIRE(0, "wait %d", r);
        }
        pthread_barrier_wait(&s->b);
    }
    if (pid == 0) _exit(0);
    int st;
    waitpid(pid, &st, 0);
    REQUIRE(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child failed");
    for (int p = 0; p < 100; p++) REQUIRE(atomic_load(&s->serial[p]) == 1, "phase %d: %d serial", p, atomic_load(&s->serial[p]));
    REQUIRE(pthread_barrier_destroy(&s->b) == 0, "destroy shared");
    munmap(s, sizeof *s);
    return 1;
}

int main(void)
{
    run("count_zero_einval", count_zero);
    run("attr_pshared", attr_pshared);
    run("count_one_always_serial", count_one);
    run("two_threads_serial_once_a_phase", team2);
    run("four_threads_serial_once_a_phase", team4);
    run("four_times_the_cpus", team_oversubscribed);
    run("destroy_and_reinit", reinit);
    run("destroy_right_after_wait", destroy_after_wait);
    run("process_shared_across_fork", pshared_fork);
    return cases_end();
}
