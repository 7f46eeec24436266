/*
 * tree1.c - the arrival tree at its smallest: a barrier with two leaves and
 * two threads, one phase.  The main thread takes units before it starts
 * the threads (those arrivals are ordered before everything the threads
 * do), so that what the threads race on is one leaf's CAS and its forward,
 * or two forwards:
 *
 *   FORWARDS=1  expected 4, leaves of quota 2 and 2: main fills leaf 0 and
 *               forwards it; the two threads share leaf 1, whose filler
 *               forwards it and completes (a leaf's CAS passing the other
 *               thread's writes to its filler, one forward)
 *   FORWARDS=2  expected 3, leaves of quota 2 and 1: main takes one unit
 *               of leaf 0; each thread fills a leaf and forwards it, and
 *               the later forward completes (a forward's acquire of the
 *               other forward's release)
 *   ARRIVE_N    expected 4, leaves of quota 2 and 2: main takes one unit
 *               of leaf 0; thread 0 asks for 2 units at once (abar_arrive_n:
 *               it locks both leaves), thread 1 arrives once.  Where thread
 *               0 comes first it fills leaf 0 and takes one unit of leaf 1,
 *               which thread 1 then fills: thread 0's writes reach the
 *               completer through its lock CAS and unlock store on leaf 1
 *   CANCEL      expected 3, leaves of quota 2 and 1: main fills leaf 0;
 *               thread 0 writes a plain word and cancels, thread 1 asks
 *               for 2 units at once (abar_arrive_n) where one is left: it
 *               is refused, with ECANCELED (then it sees thread 0's word)
 *               or EINVAL, never counted
 *
 * Each thread writes a plain word, then arrive_and_wait; the completion
 * reads both words and writes its own, which both released threads read.
 */
#include "client.h"

#ifndef FORWARDS
#define FORWARDS 1
#endif
#if defined(ARRIVE_N)
#define EXPECTED 4
#define MAIN_UNITS 1
#elif defined(CANCEL)
#define EXPECTED 3
#define MAIN_UNITS 2
#elif FORWARDS == 1
#define EXPECTED 4
#define MAIN_UNITS 2
#else
#define EXPECTED 3
#define MAIN_UNITS 1
#endif

static abar_t bar;
static int data[N];
static int ran;

static void completion(void *arg)
{
    (void)arg;
    for (int j = 0; j < N; j++) CHECK(data[j] == 1);
    ran = 1;
}

#ifdef CANCEL
static int before_cancel;
#endif

static void *thread(void *arg)
{
    const int i = (int)(intptr_t)arg;
#ifdef CANCEL
    if (i == 0) {
        before_cancel = 1;
        CHECK(abar_cancel(&bar) == 0);
    } else {
        const int r = abar_token_error(abar_arrive_n(&bar, 2));
        CHECK(r == ECANCELED || r == EINVAL);
        if (r == ECANCELED) CHECK(before_cancel == 1);
    }
    return NULL;
#endif
    data[i] = 1;
#ifdef ARRIVE_N
    if (i == 0) {
        const abar_token_t t = abar_arrive_n(&bar, 2);
        CHECK(abar_token_error(t) == 0);
        CHECK(abar_wait(&bar, t) == 0);
    } else
#endif
        CHECK(abar_arrive_and_wait(&bar) == 0);
    for (int j = 0; j < N; j++) CHECK(data[j] == 1);
    CHECK(ran == 1);
    return NULL;
}

int main(void)
{
    client_setup();
    atomic_store_explicit(&tree_min_cache, 2u, memory_order_relaxed);
    abar_attr_t attr = { completion, NULL, FLAGS };
    CHECK(abar_init(&bar, EXPECTED, &attr) == 0);
    CHECK(impl(&bar)->leaves != NULL && abar__nleaves(impl(&bar)) == 2);
    abar_token_t mine[MAIN_UNITS];
    for (int k = 0; k < MAIN_UNITS; k++) {
        mine[k] = abar_arrive(&bar);
        CHECK(abar_token_error(mine[k]) == 0);
    }
    spawn_all(thread);
    join_all();
#ifdef CANCEL
    for (int k = 0; k < MAIN_UNITS; k++) CHECK(abar_wait(&bar, mine[k]) == ECANCELED);
    CHECK(abar_phase(&bar) == 0);
#else
    for (int k = 0; k < MAIN_UNITS; k++) CHECK(abar_wait(&bar, mine[k]) == 0);
    CHECK(abar_phase(&bar) == 1);
#endif
    CHECK(abar_destroy(&bar) == 0);
    return 0;
}
