/*
 * dropin.c - what a real program may do with pthread barriers beyond
 * posix_barrier.c's cases, written with no knowledge of abar: a barrier in a
 * library's constructor, init again and again without destroy, more threads
 * than the count, libraries opened with dlopen (plainly and with
 * RTLD_DEEPBIND), calls after destroy, fork, signals, cancellation.
 * CTest runs it against the C library, under LD_PRELOAD of the interposer
 * (run_twice.sh: the verdicts must agree) and linked with it.
 * Usage: dropin LIBDEEP (the path of libdeep_barrier.so).  DROPIN_SANITIZER=1
 * in the environment (sanitizer builds): no RTLD_DEEPBIND case, 8 MB for the
 * resident set's growth instead of 1 MB.
 * Prints "case NAME: ok|not run|FAIL (why)", then "N passed, M failed" (cases.h).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern int ctor_barrier_results[8];
extern int ctor_barrier_ran;

static const char *libdeep;
#include "cases.h"

static int ok_result(int r) { return r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD; }
#define SERIAL PTHREAD_BARRIER_SERIAL_THREAD

/* The library's constructor ran before main, with the results glibc gives. */
static int ctor_library(void)
{
    const int *r = ctor_barrier_results;
    REQUIRE(ctor_barrier_ran, "the constructor did not run");
    REQUIRE(r[0] == 0, "init at count 1 returned %d", r[0]);
    REQUIRE(r[1] == SERIAL, "wait at count 1 returned %d", r[1]);
    REQUIRE(r[2] == 0, "destroy returned %d", r[2]);
    REQUIRE(r[3] == 0, "init at count 2 returned %d", r[3]);
    REQUIRE(r[4] == 0, "pthread_create returned %d", r[4]);
    REQUIRE(ok_result(r[5]) && ok_result(r[6]) && (r[5] == SERIAL) + (r[6] == SERIAL) == 1,
            "waits at count 2 returned %d and %d", r[5], r[6]);
    REQUIRE(r[7] == 0, "destroy returned %d", r[7]);
    return 1;
}

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, res = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &size, &res) != 2) res = 0;
        fclose(f);
    }
    return res * (sysconf(_SC_PAGESIZE) / 1024);
}

static pthread_barrier_t same_memory;
static __attribute__((noinline)) int on_a_stack_frame(void)
{
    pthread_barrier_t b;
    pthread_barrier_t *volatile p = &b;
    if (pthread_barrier_init(p, NULL, 1) != 0) return 0;
    return pthread_barrier_wait(p) == SERIAL;
}

/* 10^5 inits without a destroy, on the same memory, on a stack frame and on
 * 10^5 different objects: the resident set grows by at most 1 MB (glibc's
 * barrier holds nothing outside the object). */
static int reinit_without_destroy(void)
{
    enum { N = 100000 };
    pthread_barrier_t *many = mmap(NULL, N * sizeof *many, PROT_READ | PROT_WRITE,
                                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(many != MAP_FAILED, "mmap");
    memset(many, 0, N * sizeof *many); /* its own pages count before */
    long before = rss_kb();
    for (int i = 0; i < N; i++) {
        REQUIRE(pthread_barrier_init(&same_memory, NULL, 2) == 0, "init %d on the same memory", i);
        REQUIRE(on_a_stack_frame(), "init and wait %d on a stack frame", i);
        REQUIRE(pthread_barrier_init(&many[i], NULL, 3) == 0, "init of object %d", i);
    }
    long grew = rss_kb() - before;
    /* a sanitizer's runtime keeps its own records of the objects' atomics */
    long limit = getenv("DROPIN_SANITIZER") ? 8192 : 1024;
    printf("  3 x 10^5 inits without destroy: resident set %+ld kB (at most %ld)\n", grew, limit);
    munmap(many, N * sizeof *many);
    REQUIRE(grew <= limit, "the resident set grew by %ld kB", grew);
    return 1;
}

/* More threads than the count: an arrival past the count starts the next
 * round, never an error; one serial thread a round. */
static pthread_barrier_t over_bar;
static _Atomic long over_budget, over_bad, over_serial;
static void *over_body(void *arg)
{
    (void)arg;
    /* the calls are shared out as the threads come: every thread that takes
     * one is free to make it, so all rounds fill (a fixed share per thread
     * could leave the last thread alone in a round) */
    while (atomic_fetch_sub_explicit(&over_budget, 1, memory_order_relaxed) > 0) {
        int r = pthread_barrier_wait(&over_bar);
        if (r == SERIAL) atomic_fetch_add_explicit(&over_serial, 1, memory_order_relaxed);
        else if (r != 0) atomic_fetch_add_explicit(&over_bad, 1, memory_order_relaxed);
    }
    return NULL;
}
static int over(unsigned threads, unsigned count, long calls)
{
    /* threads * calls is a multiple of count: every round completes */
    atomic_store(&over_budget, (long)threads * calls);
    atomic_store(&over_bad, 0);
    atomic_store(&over_serial, 0);
    REQUIRE(pthread_barrier_init(&over_bar, NULL, count) == 0, "init");
    pthread_t th[8];
    for (unsigned t = 0; t < threads; t++) pthread_create(&th[t], NULL, over_body, NULL);
    for (unsigned t = 0; t < threads; t++) pthread_join(th[t], NULL);
    long rounds = (long)threads * calls / count;
    REQUIRE(atomic_load(&over_bad) == 0, "%ld of %ld waits returned an error (%u threads, count %u)",
            atomic_load(&over_bad), (long)threads * calls, threads, count);
    REQUIRE(atomic_load(&over_serial) == rounds, "%ld serial returns for %ld rounds",
            atomic_load(&over_serial), rounds);
    REQUIRE(pthread_barrier_destroy(&over_bar) == 0, "destroy");
    return 1;
}
static int more_threads_than_count(void)
{
    return over(3, 2, 4000) && over(5, 3, 600) && over(7, 2, 400);
}

/* Two threads, PHASES phases through a wait function: every write before a
 * wait is seen after it, one serial a phase. */
typedef int wait_fn(pthread_barrier_t *);
struct pair {
    pthread_barrier_t *b;
    wait_fn *wait[2];
    int slot[2];
    _Atomic int serial, bad;
};
enum { PHASES = 300 };
struct pair_arg {
    struct pair *p;
    int me;
};
static void *pair_body(void *arg)
{
    struct pair_arg *a = arg;
    struct pair *p = a->p;
    for (int k = 0; k < PHASES; k++) {
        __atomic_store_n(&p->slot[a->me], k + 1, __ATOMIC_RELAXED);
        int r = p->wait[a->me](p->b);
        if (r == SERIAL) atomic_fetch_add(&p->serial, 1);
        else if (r != 0) atomic_store(&p->bad, 1);
        if (__atomic_load_n(&p->slot[!a->me], __ATOMIC_RELAXED) < k + 1) atomic_store(&p->bad, 2);
        r = p->wait[a->me](p->b); /* nobody writes a slot until both read */
        if (r == SERIAL) atomic_fetch_add(&p->serial, 1);
        else if (r != 0) atomic_store(&p->bad, 1);
    }
    return NULL;
}
static int pair_run(pthread_barrier_t *b, wait_fn *w0, wait_fn *w1)
{
    struct pair p = {.b = b, .wait = {w0, w1}};
    struct pair_arg a[2] = {{&p, 0}, {&p, 1}};
    pthread_t t;
    pthread_create(&t, NULL, pair_body, &a[1]);
    pair_body(&a[0]);
    pthread_join(t, NULL);
    REQUIRE(atomic_load(&p.bad) != 1, "a wait returned an error");
    REQUIRE(atomic_load(&p.bad) != 2, "a write before the wait was not seen after it");
    REQUIRE(atomic_load(&p.serial) == 2 * PHASES, "%d serial returns for %d phases",
            atomic_load(&p.serial), 2 * PHASES);
    return 1;
}

static wait_fn *deep_wait;
static int (*deep_init)(pthread_barrier_t *, unsigned);
static int (*deep_destroy)(pthread_barrier_t *);
static void *open_deep(int flags)
{
    void *h = dlopen(libdeep, RTLD_NOW | RTLD_LOCAL | flags);
    if (h == NULL) return NULL;
    deep_wait = (wait_fn *)dlsym(h, "deep_wait");
    *(void **)&deep_init = dlsym(h, "deep_init");
    *(void **)&deep_destroy = dlsym(h, "deep_destroy");
    return deep_wait && deep_init && deep_destroy ? h : NULL;
}

/* A library opened with dlopen: its calls and the program's meet on one
 * barrier. */
static int dlopen_library(void)
{
    void *h = open_deep(0);
    REQUIRE(h, "dlopen %s: %s", libdeep, dlerror());
    pthread_barrier_t b;
    REQUIRE(pthread_barrier_init(&b, NULL, 2) == 0, "init");
    if (!pair_run(&b, pthread_barrier_wait, deep_wait)) return 0;
    REQUIRE(deep_destroy(&b) == 0, "the library's destroy");
    REQUIRE(deep_init(&b, 2) == 0, "the library's init");
    if (!pair_run(&b, deep_wait, pthread_barrier_wait)) return 0;
    REQUIRE(pthread_barrier_destroy(&b) == 0, "destroy");
    dlclose(h);
    return 1;
}

/* A library opened with RTLD_DEEPBIND binds its calls to the C library
 * first: a barrier the program initialised, waited on only by the library;
 * destroyed by it; one the library initialised, waited on by the program. */
static int deepbind_library(void)
{
    if (getenv("DROPIN_SANITIZER")) {
        snprintf(why, sizeof why, "DROPIN_SANITIZER: a sanitizer runtime refuses RTLD_DEEPBIND");
        return SKIP;
    }
    void *h = open_deep(RTLD_DEEPBIND);
    REQUIRE(h, "dlopen %s with RTLD_DEEPBIND: %s", libdeep, dlerror());
    pthread_barrier_t b;
    REQUIRE(pthread_barrier_init(&b, NULL, 1) == 0, "init 1");
    for (int i = 0; i < 100; i++) REQUIRE(deep_wait(&b) == SERIAL, "the library's wait at count 1");
    REQUIRE(pthread_barrier_wait(&b) == SERIAL, "the program's wait at count 1");
    REQUIRE(deep_destroy(&b) == 0, "the library's destroy");
    REQUIRE(pthread_barrier_init(&b, NULL, 2) == 0, "init 2");
    if (!pair_run(&b, deep_wait, deep_wait)) return 0;
    REQUIRE(deep_destroy(&b) == 0, "the library's destroy");
    pthread_barrier_t c;
    REQUIRE(deep_init(&c, 2) == 0, "the library's init");
    if (!pair_run(&c, pthread_barrier_wait, pthread_barrier_wait)) return 0;
    REQUIRE(pthread_barrier_destroy(&c) == 0, "destroy");
    dlclose(h);
    return 1;
}

/* Calls after destroy, and destroy twice: glibc's barrier keeps working. */
static int after_destroy(void)
{
    pthread_barrier_t b;
    REQUIRE(pthread_barrier_init(&b, NULL, 1) == 0, "init");
    REQUIRE(pthread_barrier_wait(&b) == SERIAL, "wait");
    REQUIRE(pthread_barrier_destroy(&b) == 0, "destroy");
    REQUIRE(pthread_barrier_wait(&b) == SERIAL, "a wait after destroy");
    REQUIRE(pthread_barrier_destroy(&b) == 0, "destroy again");
    REQUIRE(pthread_barrier_destroy(&b) == 0, "destroy a third time");
    pthread_barrier_t c;
    REQUIRE(pthread_barrier_init(&c, NULL, 2) == 0, "init 2");
    REQUIRE(pthread_barrier_destroy(&c) == 0, "destroy 2");
    if (!pair_run(&c, pthread_barrier_wait, pthread_barrier_wait)) return 0;
    REQUIRE(pthread_barrier_destroy(&c) == 0, "destroy 2 again");
    return 1;
}

/* fork: the child has one thread and a copy of the barriers. */
static int fork_child(void)
{
    pthread_barrier_t b, one;
    REQUIRE(pthread_barrier_init(&b, NULL, 2) == 0, "init");
    REQUIRE(pthread_barrier_init(&one, NULL, 1) == 0, "init 1");
    if (!pair_run(&b, pthread_barrier_wait, pthread_barrier_wait)) return 0;
    fflush(stdout);
    pid_t pid = fork();
    REQUIRE(pid >= 0, "fork");
    if (pid == 0) {
        int ok = pthread_barrier_wait(&one) == SERIAL && pair_run(&b, pthread_barrier_wait, pthread_barrier_wait);
        pthread_barrier_t c;
        ok = ok && pthread_barrier_init(&c, NULL, 2) == 0 && pair_run(&c, pthread_barrier_wait, pthread_barrier_wait);
        _exit(ok ? 0 : 1);
    }
    if (!pair_run(&b, pthread_barrier_wait, pthread_barrier_wait)) return 0;
    int st;
    REQUIRE(waitpid(pid, &st, 0) == pid, "waitpid");
    REQUIRE(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child failed (status %#x)", st);
    REQUIRE(pthread_barrier_destroy(&b) == 0 && pthread_barrier_destroy(&one) == 0, "destroy");
    return 1;
}

/* Signals (a handler, no SA_RESTART) delivered to threads inside waits:
 * the waits go on and return as always (POSIX: never EINTR). */
static _Atomic int stop_signalling;
static _Atomic long handled;
static void on_usr1(int sig)
{
    (void)sig;
    atomic_fetch_add_explicit(&handled, 1, memory_order_relaxed);
}
struct sig_target {
    pthread_t t[2];
};
static void *signaller(void *arg)
{
    struct sig_target *s = arg;
    struct timespec ts = {0, 50000};
    while (!atomic_load(&stop_signalling)) {
        pthread_kill(s->t[0], SIGUSR1);
        pthread_kill(s->t[1], SIGUSR1);
        nanosleep(&ts, NULL);
    }
    return NULL;
}
/* The pair starts its waits once the signaller has signalled each thread
 * (else on a quiet host it is done before the signaller first runs). */
static void *sig_body(void *arg)
{
    while (atomic_load(&handled) < 2) sched_yield();
    return pair_body(arg);
}
static pthread_barrier_t sig_bar;
static struct pair sig_pair;
static struct pair_arg sig_args[2];
static int signals(void)
{
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1; /* no SA_RESTART */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, &old);
    REQUIRE(pthread_barrier_init(&sig_bar, NULL, 2) == 0, "init");
    memset(&sig_pair, 0, sizeof sig_pair);
    sig_pair.b = &sig_bar;
    sig_pair.wait[0] = sig_pair.wait[1] = pthread_barrier_wait;
    sig_args[0] = (struct pair_arg){&sig_pair, 0};
    sig_args[1] = (struct pair_arg){&sig_pair, 1};
    struct sig_target st;
    atomic_store(&handled, 0);
    /* The pair may finish its phases before the signaller first runs (a
     * busy host): rounds again, up to 20, until signals met the waits. */
    for (int round = 0; round < 20 && atomic_load(&handled) == 0; round++) {
        atomic_store(&stop_signalling, 0);
        sig_pair.slot[0] = sig_pair.slot[1] = 0; /* the threads of the last round are joined */
        pthread_create(&st.t[0], NULL, sig_body, &sig_args[0]);
        pthread_create(&st.t[1], NULL, sig_body, &sig_args[1]);
        pthread_t sg;
        pthread_create(&sg, NULL, signaller, &st);
        pthread_join(st.t[0], NULL);
        pthread_join(st.t[1], NULL);
        atomic_store(&stop_signalling, 1);
        pthread_join(sg, NULL);
        REQUIRE(atomic_load(&sig_pair.bad) == 0, "a wait returned an error or let a write be missed (%d)",
                atomic_load(&sig_pair.bad));
        REQUIRE(atomic_load(&sig_pair.serial) == 2 * PHASES * (round + 1), "%d serial returns",
                atomic_load(&sig_pair.serial));
    }
    sigaction(SIGUSR1, &old, NULL);
    REQUIRE(atomic_load(&handled) > 0, "no signal was handled");
    REQUIRE(pthread_barrier_destroy(&sig_bar) == 0, "destroy");
    return 1;
}

/* pthread_barrier_wait is no cancellation point: a thread cancelled while
 * blocked in one stays there until its round completes, and is cancelled
 * at the next cancellation point. */
static pthread_barrier_t cancel_bar;
static _Atomic int cancel_left;
static void *cancel_body(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&cancel_bar);
    atomic_store(&cancel_left, 1);
    for (;;) pthread_testcancel();
    return NULL;
}
static int cancel(void)
{
    REQUIRE(pthread_barrier_init(&cancel_bar, NULL, 2) == 0, "init");
    atomic_store(&cancel_left, 0);
    pthread_t t;
    pthread_create(&t, NULL, cancel_body, NULL);
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL); /* most likely inside the wait by now */
    REQUIRE(pthread_cancel(t) == 0, "pthread_cancel");
    nanosleep(&ts, NULL);
    REQUIRE(atomic_load(&cancel_left) == 0, "the cancelled thread left the wait before its round completed");
    int r = pthread_barrier_wait(&cancel_bar);
    REQUIRE(ok_result(r), "wait %d", r);
    void *ret;
    REQUIRE(pthread_join(t, &ret) == 0 && ret == PTHREAD_CANCELED, "the thread was not cancelled");
    REQUIRE(atomic_load(&cancel_left) == 1, "the cancelled thread did not complete its wait");
    REQUIRE(pthread_barrier_destroy(&cancel_bar) == 0, "destroy");
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s LIBDEEP\n", argv[0]);
        return 2;
    }
    libdeep = argv[1];
    run("constructor_of_a_linked_library", ctor_library);
    run("reinit_without_destroy_rss", reinit_without_destroy);
    run("more_threads_than_count", more_threads_than_count);
    run("dlopen_library", dlopen_library);
    run("rtld_deepbind_library", deepbind_library);
    run("calls_after_destroy", after_destroy);
    run("fork", fork_child);
    run("signals_during_waits", signals);
    run("cancel_while_blocked", cancel);
    return cases_end();
}
