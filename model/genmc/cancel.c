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
    CHECK(abar_token_error(abar_arrive(&bar)) == ECANCELED);
    CHECK(abar_destroy(&bar) == 0);
    return 0;
}
