/*
 * adversary.c - pthread barrier uses that press on the edges a compact,
 * spinning barrier could get wrong, written with no knowledge of abar:
 *  - the serial thread destroys and re-initialises the barrier right after
 *    its wait, while the others may still be leaving it;
 *  - the barrier's memory is unmapped right after destroy (munmap), so a
 *    thread still reading it would fault;
 *  - more threads than the count, the count changing by re-init without
 *    destroy between runs;
 *  - signals delivered all along.
 * CTest runs it against the C library, under LD_PRELOAD (verdicts
 * compared), and linked with the interposer, with its default spin and with
 * ABAR_SPIN_NS=0 (every waiter parks at once).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define SERIAL PTHREAD_BARRIER_SERIAL_THREAD
#include "cases.h"

/* Signals all along, to every worker (a handler, no SA_RESTART). */
enum { T = 3 };
static pthread_t workers[T];
static int nworkers; /* workers[0..nworkers) live; under workers_lock */
static pthread_mutex_t workers_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int stop_signals;
static void on_usr1(int sig) { (void)sig; }
static void *signaller(void *arg)
{
    (void)arg;
    struct timespec ts = {0, 200000};
    while (!atomic_load(&stop_signals)) {
        pthread_mutex_lock(&workers_lock);
        for (int i = 0; i < nworkers; i++) pthread_kill(workers[i], SIGUSR1);
        pthread_mutex_unlock(&workers_lock);
        nanosleep(&ts, NULL);
    }
    return NULL;
}
static void set_workers(int n)
{
    pthread_mutex_lock(&workers_lock);
    nworkers = n;
    pthread_mutex_unlock(&workers_lock);
}
static pthread_t sig_thread;
static void signals_start(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    pthread_create(&sig_thread, NULL, signaller, NULL);
}
static void signals_stop(void)
{
    atomic_store(&stop_signals, 1);
    pthread_join(sig_thread, NULL);
}

/* Two barriers used in turn; the serial thread of each round destroys the
 * one it just left and initialises it again at once (others may still be
 * inside its wait).  The next use of that memory comes after the other
 * barrier's round, which the re-initialiser joins only after its init. */
enum { ROUNDS = 3000 };
static pthread_barrier_t pair_of[2];
static _Atomic int gen, reuse_bad;
static void *reuse_body(void *arg)
{
    (void)arg;
    for (int k = 0; k < ROUNDS; k++) {
        pthread_barrier_t *b = &pair_of[k & 1];
        int r = pthread_barrier_wait(b);
        if (r == SERIAL) {
            atomic_fetch_add(&gen, 1);
            if (pthread_barrier_destroy(b) != 0) atomic_store(&reuse_bad, 1);
            if (pthread_barrier_init(b, NULL, T) != 0) atomic_store(&reuse_bad, 2);
        } else if (r != 0) {
            atomic_store(&reuse_bad, 3);
        }
        /* every round's serial thread has counted by the next round's end */
        if (k > 0 && atomic_load(&gen) < k) atomic_store(&reuse_bad, 4);
    }
    return NULL;
}
static int destroy_reinit_while_leaving(void)
{
    atomic_store(&gen, 0);
    atomic_store(&reuse_bad, 0);
    for (int i = 0; i < 2; i++) REQUIRE(pthread_barrier_init(&pair_of[i], NULL, T) == 0, "init");
    pthread_mutex_lock(&workers_lock);
    for (int i = 0; i < T; i++) pthread_create(&workers[i], NULL, reuse_body, NULL);
    nworkers = T;
    pthread_mutex_unlock(&workers_lock);
    for (int i = 0; i < T; i++) pthread_join(workers[i], NULL);
    set_workers(0);
    REQUIRE(atomic_load(&reuse_bad) == 0, "failure %d (1 destroy, 2 init, 3 wait, 4 order)", atomic_load(&reuse_bad));
    REQUIRE(atomic_load(&gen) == ROUNDS, "%d serial for %d rounds", atomic_load(&gen), ROUNDS);
    for (int i = 0; i < 2; i++) REQUIRE(pthread_barrier_destroy(&pair_of[i]) == 0, "destroy");
    return 1;
}

/* Each round on a fresh page: the main thread destroys the barrier right
 * after its own wait and unmaps the page. */
enum { PAGES = 400 };
static pthread_barrier_t ctl;
static pthread_barrier_t *_Atomic page_bar;
static _Atomic int unmap_bad;
static void *unmap_body(void *arg)
{
    (void)arg;
    for (int k = 0; k < PAGES; k++) {
        pthread_barrier_wait(&ctl); /* page_bar is set */
        int r = pthread_barrier_wait(atomic_load(&page_bar));
        if (r != 0 && r != SERIAL) atomic_store(&unmap_bad, 1);
        pthread_barrier_wait(&ctl); /* main may unmap from here on */
    }
    return NULL;
}
static int unmap_right_after_destroy(void)
{
    long pg = sysconf(_SC_PAGESIZE);
    REQUIRE(pthread_barrier_init(&ctl, NULL, T) == 0, "init ctl");
    atomic_store(&unmap_bad, 0);
    pthread_mutex_lock(&workers_lock);
    workers[0] = pthread_self();
    for (int i = 1; i < T; i++) pthread_create(&workers[i], NULL, unmap_body, NULL);
    nworkers = T;
    pthread_mutex_unlock(&workers_lock);
    for (int k = 0; k < PAGES; k++) {
        pthread_barrier_t *b = mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        REQUIRE(b != MAP_FAILED, "mmap");
        REQUIRE(pthread_barrier_init(b, NULL, T) == 0, "init");
        atomic_store(&page_bar, b);
        pthread_barrier_wait(&ctl);
        int r = pthread_barrier_wait(b);
        REQUIRE(r == 0 || r == SERIAL, "wait %d", r);
        REQUIRE(pthread_barrier_destroy(b) == 0, "destroy right after the wait");
        munmap(b, (size_t)pg);
        pthread_barrier_wait(&ctl);
    }
    set_workers(0);
    for (int i = 1; i < T; i++) pthread_join(workers[i], NULL);
    REQUIRE(atomic_load(&unmap_bad) == 0, "a wait returned an error");
    REQUIRE(pthread_barrier_destroy(&ctl) == 0, "destroy ctl");
    return 1;
}

/* More threads than the count, the count changed by init without destroy;
 * arrivals shared out so that every round fills. */
static pthread_barrier_t vb;
static _Atomic long vbudget, vserial, vbad;
static void *vary_body(void *arg)
{
    (void)arg;
    while (atomic_fetch_sub(&vbudget, 1) > 0) {
        int r = pthread_barrier_wait(&vb);
        if (r == SERIAL) atomic_fetch_add(&vserial, 1);
        else if (r != 0) atomic_fetch_add(&vbad, 1);
    }
    return NULL;
}
static int varying_counts(void)
{
    pthread_t th[8];
    for (unsigned count = 1; count <= 4; count++) {
        unsigned threads = count + 2 + count % 2;
        long total = 600L * count;
        REQUIRE(pthread_barrier_init(&vb, NULL, count) == 0, "init %u", count); /* no destroy between */
        atomic_store(&vbudget, total);
        atomic_store(&vserial, 0);
        atomic_store(&vbad, 0);
        for (unsigned i = 0; i < threads; i++) pthread_create(&th[i], NULL, vary_body, NULL);
        for (unsigned i = 0; i < threads; i++) pthread_join(th[i], NULL);
        REQUIRE(atomic_load(&vbad) == 0, "count %u, %u threads: %ld errors", count, threads, atomic_load(&vbad));
        REQUIRE(atomic_load(&vserial) == total / count, "count %u, %u threads: %ld serial for %ld rounds",
                count, threads, atomic_load(&vserial), total / count);
    }
    REQUIRE(pthread_barrier_destroy(&vb) == 0, "destroy");
    return 1;
}

int main(void)
{
    signals_start();
    run("destroy_and_reinit_while_others_leave", destroy_reinit_while_leaving);
    run("unmap_right_after_destroy", unmap_right_after_destroy);
    run("varying_counts_more_threads", varying_counts);
    signals_stop();
    return cases_end();
}
