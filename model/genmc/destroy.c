/*
 * destroy.c - N threads arrive and wait; thread 0 then destroys the
 * barrier at once and, if the destroy says 0, initialises the memory again
 * (destroy + init: a fresh barrier), which writes its fields plainly.  A
 * destroy that says 0 while another thread still touches the barrier (its
 * wait registered in a hazard slot, a completer still publishing) makes
 * that touch race with those plain writes, and GenMC reports the race.
 * (Freeing the memory would say it as directly, but GenMC's heap starts
 * uninitialised and abar_init's memset is left out: shim.h.)
 *
 *   N=2  the pair (the ticket path's hazard slot and carry)
 *   N=3  the general path
 *   SPLIT  abar_arrive, then abar_wait: the wait registers after its
 *          arrival, so its hazard slot store can be concurrent with the
 *          destroy (the fence pair of abar__enter and abar_destroy), where
 *          arrive_and_wait registers before its arrival is counted
 *   FLAGS=ABAR_PSHARED|ABAR_WAIT_PARK  a process-shared barrier: waiters
 *          count themselves in `inside` (abar__leave's release) instead
 */
#include "client.h"

static abar_t bar_mem;
static abar_t *const bar = &bar_mem;
static int data[N];
static bool reused;

static void *thread(void *arg)
{
    const int i = (int)(intptr_t)arg;
    data[i] = 1;
#ifdef SPLIT
    const abar_token_t t = abar_arrive(bar);
    CHECK(abar_token_error(t) == 0);
    CHECK(abar_wait(bar, t) == 0);
#else
    CHECK(abar_arrive_and_wait(bar) == 0);
#endif
    for (int j = 0; j < N; j++) CHECK(data[j] == 1);
    if (i == 0) {
        const int r = abar_destroy(bar);
        CHECK(r == 0 || r == EBUSY);
        if (r == 0) {
            abar_attr_t attr = { NULL, NULL, FLAGS };
            CHECK(abar_init(bar, N, &attr) == 0);
            reused = true;
        }
    }
    return NULL;
}

int main(void)
{
    client_setup();
    abar_attr_t attr = { NULL, NULL, FLAGS };
    CHECK(abar_init(bar, N, &attr) == 0);
    spawn_all(thread);
    join_all();
    (void)reused;
    CHECK(abar_destroy(bar) == 0);
    return 0;
}
