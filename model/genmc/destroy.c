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
 *          arrive_and_wait registers before its arrival is counted.  A
 *          wait may then start after the destroy, which is the caller's
 *          race on every field a call reads first (ident, flags, phase):
 *          so the destroyer writes only the state word after a destroy
 *          that says 0, which a wait reads only once registered.  A wait
 *          that got past its registration unseen by that destroy races
 *          with the write; one the destroy saw made it say EBUSY; one
 *          that came later sees the barrier dead (EINVAL).
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
    const int w = abar_wait(bar, t);
    CHECK(w == 0 || (i != 0 && w == EINVAL)); /* EINVAL: destroyed first */
    if (w != 0) return NULL;
#else
    CHECK(abar_arrive_and_wait(bar) == 0);
#endif
    for (int j = 0; j < N; j++) CHECK(data[j] == 1);
    if (i == 0) {
        const int r = abar_destroy(bar);
        CHECK(r == 0 || r == EBUSY);
        if (r == 0) {
#ifdef SPLIT
            atomic_init(&impl(bar)->state, 0); /* a plain write */
#else
            abar_attr_t attr = { NULL, NULL, FLAGS };
            CHECK(abar_init(bar, N, &attr) == 0);
#endif
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
#ifdef SPLIT
    CHECK(abar_destroy(bar) == (reused ? EINVAL : 0));
#else
    (void)reused;
    CHECK(abar_destroy(bar) == 0);
#endif
    return 0;
}
