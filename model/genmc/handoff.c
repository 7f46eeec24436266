/*
 * handoff.c - the ring's slot hand-off (src/ring on the core): one producer
 * and one consumer on a ring of STAGES slots (1 by default), LAPS laps.
 * The producer writes the slot's plain word between acquire and commit;
 * the consumer reads it between wait and release.  A read that the commit
 * does not order before it, or a refill that the release does not order
 * after the last read, is a data race GenMC reports; the asserts check the
 * values.  Cancel is the consumer's last step (RING_CANCEL): the producer's
 * next acquire then returns 0 or ECANCELED, never blocks for good.
 */
#include "client.h"
#include "abar_ring.h"

#include "ring.c"
#include "ring_steps.c"

#ifndef STAGES
#define STAGES 1
#endif
#ifndef LAPS
#define LAPS 2
#endif

static abar_ring_t rg;
static int slot[STAGES];
static abar_ring_pos_t ppos, cpos; /* static: zero (shim.h: memset) */

static void *producer(void *arg)
{
    (void)arg;
    abar_ring_pos_t *const pos = &ppos;
    CHECK(abar_ring_producer_start(&rg, pos) == 0);
    for (int s = 0; s < LAPS * STAGES; s++) {
        CHECK(abar_ring_producer_acquire(&rg, pos) == 0);
        slot[pos->index] = s + 1;
        CHECK(abar_ring_producer_commit(&rg, pos) == 0);
    }
    return NULL;
}

static void *consumer(void *arg)
{
    (void)arg;
    abar_ring_pos_t *const pos = &cpos;
    CHECK(abar_ring_consumer_start(&rg, pos) == 0);
    for (int s = 0; s < LAPS * STAGES; s++) {
        CHECK(abar_ring_consumer_wait(&rg, pos) == 0);
        CHECK(slot[pos->index] == s + 1);
        CHECK(abar_ring_consumer_release(&rg, pos) == 0);
    }
    return NULL;
}

int main(void)
{
    client_setup();
    abar_attr_t attr = { NULL, NULL, FLAGS };
    CHECK(abar_ring_init(&rg, STAGES, 1, 1, &attr) == 0);
    pthread_t p, c;
    pthread_create(&p, NULL, producer, NULL);
    pthread_create(&c, NULL, consumer, NULL);
    pthread_join(p, NULL);
    pthread_join(c, NULL);
    CHECK(abar_ring_destroy(&rg) == 0);
    return 0;
}
