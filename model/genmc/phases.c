/*
 * phases.c - N threads, two phases: the first by abar_arrive + abar_wait,
 * the second by abar_arrive_and_wait.  Each thread writes its own plain
 * word before it arrives and reads every thread's after its wait; with
 * COMPLETION the completion function reads them all too (every arrival is
 * visible to the last arriver) and marks its phase done in a plain word
 * that every released waiter reads (the completion is visible to all).
 *
 *   N=2             the pair without completion: the ticket path (HALF carry)
 *   N=2 COMPLETION  the pair's release words, arrivals by fetch-and-sub
 *   N=3 COMPLETION  the general path: its own release line
 *   N=3 TREE        the arrival tree: two leaves (quotas 2, 1), their forwards
 *   ARRIVE_N        thread 0 arrives twice at once (abar_arrive_n(2)) in
 *                   each phase, on a barrier expecting N+1: the CAS path,
 *                   or with TREE the leaves' lock-and-take
 *   OBSERVER        one more thread, which only reads abar_phase: a phase
 *                   it sees completed shows its arrivals' writes and its
 *                   completion's
 *   PHASES=1        the first phase only (three threads' two phases are
 *                   more executions than a run can explore in minutes)
 */
#include "client.h"

#ifndef PHASES
#define PHASES 2
#endif

#ifdef ARRIVE_N
#define EXPECTED (N + 1)
#else
#define EXPECTED N
#endif

static abar_t bar;
static int data[2][N];
#ifdef COMPLETION
static int runs;   /* completions run so far: completers alone touch it */
static int ran[2]; /* phase k's completion ran: written once, by it */
static void completion(void *arg)
{
    (void)arg;
    for (int j = 0; j < N; j++) CHECK(data[runs][j] == 1);
    ran[runs] = 1;
    runs++;
}
#endif

static void seen(int phase)
{
    for (int j = 0; j < N; j++) CHECK(data[phase][j] == 1);
#ifdef COMPLETION
    CHECK(ran[phase] == 1);
#endif
}

static abar_token_t arrive_phase(int i)
{
#ifdef ARRIVE_N
    if (i == 0) return abar_arrive_n(&bar, 2);
#endif
    (void)i;
    return abar_arrive(&bar);
}

static void *thread(void *arg)
{
    const int i = (int)(intptr_t)arg;
    data[0][i] = 1;
    abar_token_t t = arrive_phase(i);
    CHECK(abar_token_error(t) == 0);
    CHECK(abar_wait(&bar, t) == 0);
    seen(0);
    if (PHASES == 1) return NULL;
    data[1][i] = 1;
#ifdef ARRIVE_N
    if (i == 0) {
        t = arrive_phase(i);
        CHECK(abar_token_error(t) == 0);
        CHECK(abar_wait(&bar, t) == 0);
    } else
#endif
        CHECK(abar_arrive_and_wait(&bar) == 0);
    seen(1);
    return NULL;
}

#ifdef OBSERVER
static void *observer(void *arg)
{
    (void)arg;
    const uint64_t p = abar_phase(&bar);
    CHECK(p <= PHASES);
    for (uint64_t k = 0; k < p; k++) seen((int)k);
    return NULL;
}
#endif

int main(void)
{
    client_setup();
#ifdef COMPLETION
    abar_attr_t attr = { completion, NULL, FLAGS };
#else
    abar_attr_t attr = { NULL, NULL, FLAGS };
#endif
    CHECK(abar_init(&bar, EXPECTED, &attr) == 0);
#ifdef TREE
    CHECK(impl(&bar)->leaves != NULL);
#endif
#ifdef OBSERVER
    pthread_t obs;
    pthread_create(&obs, NULL, observer, NULL);
#endif
    spawn_all(thread);
    join_all();
#ifdef OBSERVER
    pthread_join(obs, NULL);
#endif
    CHECK(abar_phase(&bar) == PHASES);
#ifdef COMPLETION
    CHECK(runs == PHASES);
#endif
    CHECK(abar_destroy(&bar) == 0);
    return 0;
}
