/*
 * seed002_ring.c - seed 002 (spatial partitioning / warp specialisation),
 * twice:
 *
 *   1. as written: four barriers, ready[0..1] and filled[0..1], each
 *      expecting every thread of the "block"; every thread takes part in all
 *      four (producers abar_arrive_and_wait on ready and abar_arrive on
 *      filled, consumers the other way round);
 *   2. with abar_ring_t: the same double buffer, one-sided - producers only
 *      ever touch ready through producer_acquire and filled through
 *      producer_commit, consumers the other way round, and the counts
 *      (P on filled, C on ready) come from the ring.
 *
 * The block: PRODUCERS threads fill each buffer (each its share of the
 * elements), CONSUMERS threads read it.  Every consumer checks every value of
 * every buffer it consumes against in[] (a stale or unfilled buffer is
 * caught) and writes its share of out[] = 2 * in[] + 1; main then checks all
 * of out[].  Exit status 0 only if both forms pass.
 */
#include <abar.h>
#include <abar_ring.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PRODUCERS = 2, CONSUMERS = 3, BLOCK = PRODUCERS + CONSUMERS };
enum { BUFFER_LEN = 256, ROUNDS = 3000, N = BUFFER_LEN * ROUNDS };

static float in[N], out[N];
static float buffer[2 * BUFFER_LEN];   /* buffer_0 = buffer, buffer_1 = buffer + BUFFER_LEN */
static _Atomic long errors;

static void fail(const char *form, const char *what, int i, int err)
{
    if (atomic_fetch_add(&errors, 1) < 10)
        fprintf(stderr, "seed002_ring: %s: %s at i=%d (%d)\n", form, what, i, err);
}

static void produce(float *buf, int i, int rank)
{
    for (int j = rank; j < BUFFER_LEN; j += PRODUCERS) buf[j] = in[i * BUFFER_LEN + j];
}

/* Checks the whole buffer (every value this consumer sees), writes its share. */
static void consume(const char *form, const float *buf, int i, int rank)
{
    long bad = 0;
    for (int j = 0; j < BUFFER_LEN; j++) bad += buf[j] != in[i * BUFFER_LEN + j];
    if (bad) fail(form, "a consumer read a value of the wrong round", i, (int)bad);
    for (int j = rank; j < BUFFER_LEN; j += CONSUMERS) out[i * BUFFER_LEN + j] = 2 * buf[j] + 1;
}

/* ---- 1. as written ----------------------------------------------------------- */

static abar_t bar[4];                  /* ready = bar, filled = bar + 2 */

static void *seed_producer(void *arg)
{
    int rank = (int)(intptr_t)arg;
    abar_t *ready = bar, *filled = bar + 2;
    for (int i = 0; i < ROUNDS; i++) {
        int r = abar_arrive_and_wait(&ready[i % 2]);   /* wait for buffer_(i%2) to be ready */
        if (r) { fail("seed", "ready wait", i, r); return NULL; }
        produce(buffer + (i % 2) * BUFFER_LEN, i, rank);
        abar_token_t t = abar_arrive(&filled[i % 2]);  /* buffer_(i%2) is filled */
        if (abar_token_error(t)) { fail("seed", "filled arrive", i, abar_token_error(t)); return NULL; }
    }
    return NULL;
}

static void *seed_consumer(void *arg)
{
    int rank = (int)(intptr_t)arg;
    abar_t *ready = bar, *filled = bar + 2;
    /* buffers 0 and 1 are ready for the initial fill */
    if (abar_token_error(abar_arrive(&ready[0])) || abar_token_error(abar_arrive(&ready[1]))) {
        fail("seed", "initial ready arrive", -1, 0);
        return NULL;
    }
    for (int i = 0; i < ROUNDS; i++) {
        int r = abar_arrive_and_wait(&filled[i % 2]);  /* wait for buffer_(i%2) to be filled */
        if (r) { fail("seed", "filled wait", i, r); return NULL; }
        consume("seed", buffer + (i % 2) * BUFFER_LEN, i, rank);
        abar_token_t t = abar_arrive(&ready[i % 2]);   /* buffer_(i%2) may be refilled */
        if (abar_token_error(t)) { fail("seed", "ready arrive", i, abar_token_error(t)); return NULL; }
    }
    return NULL;
}

/* ---- 2. with the ring ----------------------------------------------------------- */

static abar_ring_t ring;

static void *ring_producer(void *arg)
{
    (void)arg;
    abar_ring_pos_t pos;
    int r = abar_ring_producer_start(&ring, &pos);     /* its rank picks its share */
    if (r) { fail("ring", "producer_start", -1, r); return NULL; }
    for (int i = 0; i < ROUNDS; i++) {
        if ((r = abar_ring_producer_acquire(&ring, &pos))) { fail("ring", "acquire", i, r); return NULL; }
        if (pos.index != (uint32_t)(i % 2)) fail("ring", "slot index", i, (int)pos.index);
        produce(buffer + pos.index * BUFFER_LEN, i, (int)pos.rank);
        if ((r = abar_ring_producer_commit(&ring, &pos))) { fail("ring", "commit", i, r); return NULL; }
    }
    return NULL;
}

static void *ring_consumer(void *arg)
{
    (void)arg;
    abar_ring_pos_t pos;
    int r = abar_ring_consumer_start(&ring, &pos);
    if (r) { fail("ring", "consumer_start", -1, r); return NULL; }
    for (int i = 0; i < ROUNDS; i++) {
        if ((r = abar_ring_consumer_wait(&ring, &pos))) { fail("ring", "wait", i, r); return NULL; }
        consume("ring", buffer + pos.index * BUFFER_LEN, i, (int)pos.rank);
        if ((r = abar_ring_consumer_release(&ring, &pos))) { fail("ring", "release", i, r); return NULL; }
    }
    return NULL;
}

/* ---- driver ------------------------------------------------------------------------ */

static int check_out(const char *form)
{
    long bad = 0;
    for (int i = 0; i < N; i++) bad += out[i] != 2 * in[i] + 1;
    if (bad) fail(form, "out[] differs from 2*in[]+1", -1, (int)bad);
    return bad == 0;
}

static void run(void *(*producer)(void *), void *(*consumer)(void *))
{
    pthread_t th[BLOCK];
    memset(out, 0, sizeof out);
    memset(buffer, 0, sizeof buffer);
    for (int t = 0; t < BLOCK; t++) {
        int rank = t < PRODUCERS ? t : t - PRODUCERS;
        if (pthread_create(&th[t], NULL, t < PRODUCERS ? producer : consumer, (void *)(intptr_t)rank)) {
            fprintf(stderr, "seed002_ring: pthread_create failed\n");
            exit(1);
        }
    }
    for (int t = 0; t < BLOCK; t++) pthread_join(th[t], NULL);
}

int main(void)
{
    for (int i = 0; i < N; i++) in[i] = (float)(i % 9973) * 0.5f + 1.0f;

    /* 1. as written: every barrier expects the whole block */
    for (int k = 0; k < 4; k++)
        if (abar_init(&bar[k], BLOCK, NULL)) { fprintf(stderr, "abar_init failed\n"); return 1; }
    run(seed_producer, seed_consumer);
    int ok_seed = errors == 0 && check_out("seed");
    for (int k = 0; k < 4; k++) abar_destroy(&bar[k]);
    printf("seed 002 as written (4 barriers x %d threads): %s\n", BLOCK, ok_seed ? "ok" : "FAILED");

    /* 2. the ring: 2 stages, counts from the producer and consumer numbers */
    long before = errors;
    if (abar_ring_init(&ring, 2, PRODUCERS, CONSUMERS, NULL)) { fprintf(stderr, "abar_ring_init failed\n"); return 1; }
    run(ring_producer, ring_consumer);
    int ok_ring = errors == before && check_out("ring");
    if (abar_ring_destroy(&ring)) { fail("ring", "destroy", -1, 0); ok_ring = 0; }
    printf("seed 002 with abar_ring (%d producers, %d consumers, 2 stages): %s\n", PRODUCERS,
           CONSUMERS, ok_ring ? "ok" : "FAILED");
    printf("%d rounds of %d values, every value checked by each of %d consumers\n", ROUNDS,
           BUFFER_LEN, CONSUMERS);
    return ok_seed && ok_ring ? 0 : 1;
}
