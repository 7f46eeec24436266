/*
 * drop.c - N threads on a barrier expecting N: thread 0 arrives and drops
 * (abar_arrive_and_drop), the others arrive and wait, twice.  Phase 0
 * counts the drop as an arrival (its writes are seen after the wait);
 * phase 1 expects N-1 and completes with the others alone.
 *
 *   N=2  the pair: phase 1 is a barrier of one (the ticket's slow path)
 *   N=3  the general path
 */
#include "client.h"

static abar_t bar;
static int data[2][N];

static void *thread(void *arg)
{
    const int i = (int)(intptr_t)arg;
    data[0][i] = 1;
    if (i == 0) {
        CHECK(abar_arrive_and_drop(&bar) == 0);
        return NULL;
    }
    CHECK(abar_arrive_and_wait(&bar) == 0);
    for (int j = 0; j < N; j++) CHECK(data[0][j] == 1);
    data[1][i] = 1;
    CHECK(abar_arrive_and_wait(&bar) == 0);
    for (int j = 1; j < N; j++) CHECK(data[1][j] == 1);
    return NULL;
}

int main(void)
{
    client_setup();
    abar_attr_t attr = { NULL, NULL, FLAGS };
    CHECK(abar_init(&bar, N, &attr) == 0);
    spawn_all(thread);
    join_all();
    CHECK(abar_phase(&bar) == 2);
    CHECK(atomic_load(&impl(&bar)->expected) == N - 1);
    CHECK(abar_destroy(&bar) == 0);
    return 0;
}
