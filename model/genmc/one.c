/*
 * one.c - a barrier of one (abar__one_carry: the arrival that counts,
 * completes and opens the next phase in one CAS), with two threads
 * arriving on it anonymously: each arrive_and_wait completes a phase of
 * its own.  Each thread writes a plain word first; a thread that then
 * sees both phases completed (abar_phase == 2) reads the other's word:
 * the later phase's completion carries the earlier one's writes (the
 * phases publish in order, each completer acquiring the one before).
 * FLAGS=ABAR_WAIT_SPIN: the path of a barrier that does not park at once.
 * A warm-up wait on a barrier of its own gives each thread its hazard
 * record first (the one-CAS path is taken by a thread that has one).
 */
#include "client.h"

static abar_t bar, warm[2];
static int data[2];

static void *thread(void *arg)
{
    const int i = (int)(intptr_t)arg;
    CHECK(abar_arrive_and_wait(&warm[i]) == 0);
    data[i] = 1;
    CHECK(abar_arrive_and_wait(&bar) == 0);
    const uint64_t p = abar_phase(&bar);
    CHECK(p >= 1 && p <= 2);
    if (p == 2) CHECK(data[1 - i] == 1);
    return NULL;
}

int main(void)
{
    client_setup();
    abar_attr_t attr = { NULL, NULL, ABAR_WAIT_SPIN };
    CHECK(abar_init(&bar, 1, &attr) == 0);
    for (int i = 0; i < 2; i++) CHECK(abar_init(&warm[i], 1, &attr) == 0);
    spawn_all(thread);
    join_all();
    CHECK(abar_phase(&bar) == 2);
    CHECK(abar_destroy(&bar) == 0);
    return 0;
}
