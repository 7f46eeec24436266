/*
 * ahead.c - a phase completed by a thread that did not wait for the one
 * before: on a barrier of 3 with a completion, thread 1 arrives 2 at once
 * (abar_arrive_n) and thread 0 arrives once, then at once 3 more, which
 * is all of the next phase (or refused with EINVAL while the first phase
 * is still open).  When thread 1 completes the first phase and thread 0
 * the second, no arrival of the second phase waited for the first, so
 * only the completers' own orders (abar__complete's wait for the previous
 * release, acquire, and its reopening CAS, release) put the first
 * completion before the second: both completions write a plain count.
 */
#include "client.h"

static abar_t bar;
static int runs; /* completions so far: completers alone touch it */

static void completion(void *arg)
{
    (void)arg;
    runs++;
}

static void *thread(void *arg)
{
    const int i = (int)(intptr_t)arg;
    if (i == 1) {
        CHECK(abar_token_error(abar_arrive_n(&bar, 2)) == 0);
        return NULL;
    }
    CHECK(abar_token_error(abar_arrive(&bar)) == 0);
    const int r = abar_token_error(abar_arrive_n(&bar, 3));
    CHECK(r == 0 || r == EINVAL);
    return NULL;
}

int main(void)
{
    client_setup();
    abar_attr_t attr = { completion, NULL, FLAGS };
    CHECK(abar_init(&bar, 3, &attr) == 0);
    spawn_all(thread);
    join_all();
    const uint64_t p = abar_phase(&bar);
    CHECK(p == 1 || p == 2);
    CHECK(runs == (int)p);
    CHECK(abar_destroy(&bar) == 0);
    return 0;
}
