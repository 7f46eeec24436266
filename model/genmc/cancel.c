/*
 * cancel.c - thread 0 writes a plain word and cancels; threads 1..N-1
 * arrive and wait on a barrier expecting N-1.  Every wait returns 0 (the
 * phase completed before the cancel was ordered after its last arrival)
 * or ECANCELED, never blocks for good (a lost wake-up: GenMC reports the
 * blocked thread); an arrival after the cancel is refused with ECANCELED.
 * A wait that returns 0 sees every arrival's write; one that returns
 * ECANCELED sees what the canceller wrote before abar_cancel (its RMW on
 * the state word releases, the waiter's look acquires).
 *
 *   N=3             the pair (two waiters) and the canceller
 *   N=3 EXPECTED=3  a barrier of three that never completes (two waiters
 *                   and the canceller): the general path's release words
 *   N=2 EXPECTED=2 DESTROY  one waiter on a pair that never completes; told
 *                   ECANCELED, it destroys the barrier and initialises the
 *                   memory again (plain writes, and atomic_init of the futex
 *                   word), which races with the cancel's last write (the
 *                   futex word's cancel bit) unless the destroy waited for
 *                   it (abar_destroy's acquire, abar_cancel's release)
 */
#include "client.h"

#ifndef EXPECTED
#define EXPECTED (N - 1)
#endif

static abar_t bar;
static int data[N];
static int before_cancel;

static void *thread(void *arg)
{
    const int i = (int)(intptr_t)arg;
    if (i == 0) {
        before_cancel = 1;
        CHECK(abar_cancel(&bar) == 0);
        return NULL;
    }
    data[i] = 1;
    abar_token_t t = abar_arrive(&bar);
    int r = abar_token_error(t);
    if (r == 0) r = abar_wait(&bar, t);
    if (r == 0) {
        CHECK(EXPECTED == N - 1);
        for (int j = 1; j < N; j++) CHECK(data[j] == 1);
    } else {
        CHECK(r == ECANCELED);
        CHECK(before_cancel == 1);
#ifdef DESTROY
        CHECK(abar_destroy(&bar) == 0);
        abar_attr_t attr = { NULL, NULL, FLAGS };
        CHECK(abar_init(&bar, EXPECTED, &attr) == 0);
#endif
    }
    return NULL;
}

int main(void)
{
    client_setup();
    abar_attr_t attr = { NULL, NULL, FLAGS };
    CHECK(abar_init(&bar, EXPECTED, &attr) == 0);
    spawn_all(thread);
    join_all();
#ifdef DESTROY
    /* the waiter's fresh barrier: not cancelled */
    CHECK(abar_phase(&bar) == 0);
#else
    CHECK(abar_token_error(abar_arrive(&bar)) == ECANCELED);
#endif
    CHECK(abar_destroy(&bar) == 0);
    return 0;
}
