/*
 * handoff.c - the ring's slot hand-off (src/ring on the core): one producer
 * and one consumer on a ring of one slot (STAGES=1: the static heap block
 * below has that ring's layout), LAPS laps.
 * The producer writes the slot's plain word between acquire and commit;
 * the consumer reads it between wait and release.  A read that the commit
 * does not order before it, or a refill that the release does not order
 * after the last read, is a data race GenMC reports; the asserts check the
 * values.  GenMC's spin-assume pass does not end on the ring's poll loop
 * (abar__ring_wait_done: it enumerates the loop's paths), so this client is
 * run with it off and its loops bounded (clients.txt: -unroll): an
 * execution that needs more rounds is cut, not checked.
 */
#include "client.h"
#include "abar_ring.h"
#include "ring_internal.h"

/* The ring's heap block (ring.c: the bells, the done words, the ranks, the
 * busy shards), here for one slot, one producer and one consumer: static,
 * zeroed memory of the block's layout, as the clients' barriers are.
 * GenMC's heap starts uninitialised and shim.h leaves memset out, so the
 * bells' abar_init would read a `magic` never written. */
static struct {
    abar_t bars[2];
    struct ring_done done[2];
    struct ring_rank rank[2];
    struct ring_busy busy[2];
} ring_heap;
#define aligned_alloc(align, n) ((void)(align), (n) == sizeof ring_heap ? (void *)&ring_heap : NULL)
#define free(p) ((void)(p))
#include "ring.c"
#include "ring_steps.c"
#undef aligned_alloc
#undef free

#define STAGES 1
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
