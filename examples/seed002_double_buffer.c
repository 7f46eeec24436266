/*
 * seed002_double_buffer.c - seed 002, "Spatial Partitioning (Warp
 * Specialization)": the producer/consumer double buffer on CPU threads.
 *
 * Exactly the seed's scheme: four barriers, bar[0..1] = ready[] (buffer_0 /
 * buffer_1 may be filled) and bar[2..3] = filled[] (buffer_0 / buffer_1 is
 * filled), each expecting every thread of the "block", and every thread
 * taking part in all four.  The seed's first warp becomes one producer
 * thread; the other warps become CONSUMERS consumer threads.  Synchronisation
 * is one-sided: the producer waits only on ready[], the consumers only on
 * filled[]; each side merely arrives on the other side's barrier.
 *
 * Checks (exit 1 if any fails): every consumer checks every value it takes
 * from the buffer against the input it must come from (a value of the wrong
 * round, or not yet written, is caught); afterwards out[] is compared with
 * in[] element by element; every abar call returns 0.
 */
#include <abar.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CONSUMERS = 3, BLOCK = 1 + CONSUMERS };
enum { BUFFER_LEN = 240, N = BUFFER_LEN * 3000 };  /* N is the total number of floats in in and out */

static float in[N], out[N];
static float buffer[2 * BUFFER_LEN];   /* buffer_0 = buffer, buffer_1 = buffer + buffer_len */
static abar_t bar[4];                  /* __shared__ barrier bar[4]; */
static _Atomic unsigned errors;
static _Atomic unsigned long consumed;

static void fail(const char *who, int i, const char *what, int err)
{
    fprintf(stderr, "seed002: %s, i=%d: %s (%d)\n", who, i, what, err);
    atomic_fetch_add(&errors, 1);
}

/* What the producer writes for element k of the input. */
static float produce(float x) { return 2.0f * x + 1.0f; }

static void producer(abar_t ready[], abar_t filled[], float *buffer, const float *in, int N_, int buffer_len)
{
    int r;
    for (int i = 0; i < (N_ / buffer_len); ++i) {
        /* ready[i%2].arrive_and_wait();  wait for buffer_(i%2) to be ready to be filled */
        if ((r = abar_arrive_and_wait(&ready[i % 2])) != 0) fail("producer", i, "ready arrive_and_wait", r);
        /* produce, i.e., fill in, buffer_(i%2) */
        float *b = buffer + (i % 2) * buffer_len;
        for (int k = 0; k < buffer_len; k++) b[k] = produce(in[i * buffer_len + k]);
        /* barrier::arrival_token token = filled[i%2].arrive();  buffer_(i%2) is filled */
        abar_token_t token = abar_arrive(&filled[i % 2]);
        if ((r = abar_token_error(token)) != 0) fail("producer", i, "filled arrive", r);
    }
}

static void consumer(abar_t ready[], abar_t filled[], const float *buffer, float *out, int N_, int buffer_len,
                     int me)
{
    int r;
    char who[32];
    snprintf(who, sizeof who, "consumer %d", me);
    /* each consumer takes its own slice of the buffer */
    int lo = buffer_len * me / CONSUMERS, hi = buffer_len * (me + 1) / CONSUMERS;

    /* barrier::arrival_token token1 = ready[0].arrive();  buffer_0 is ready for initial fill */
    abar_token_t token1 = abar_arrive(&ready[0]);
    /* barrier::arrival_token token2 = ready[1].arrive();  buffer_1 is ready for initial fill */
    abar_token_t token2 = abar_arrive(&ready[1]);
    if ((r = abar_token_error(token1)) != 0 || (r = abar_token_error(token2)) != 0)
        fail(who, -1, "initial ready arrive", r);

    for (int i = 0; i < (N_ / buffer_len); ++i) {
        /* filled[i%2].arrive_and_wait();  wait for buffer_(i%2) to be filled */
        if ((r = abar_arrive_and_wait(&filled[i % 2])) != 0) fail(who, i, "filled arrive_and_wait", r);
        /* consume buffer_(i%2) */
        const float *b = buffer + (i % 2) * buffer_len;
        for (int k = lo; k < hi; k++) {
            int j = i * buffer_len + k;
            if (b[k] != produce(in[j])) fail(who, i, "wrong value in the buffer", k);
            out[j] = b[k];
        }
        atomic_fetch_add_explicit(&consumed, (unsigned long)(hi - lo), memory_order_relaxed);
        /* barrier::arrival_token token = ready[i%2].arrive();  buffer_(i%2) is ready to be re-filled */
        abar_token_t token = abar_arrive(&ready[i % 2]);
        if ((r = abar_token_error(token)) != 0) fail(who, i, "ready arrive", r);
    }
}

static void *thread_main(void *p)
{
    int rank = (int)(long)p;   /* block.thread_rank() */
    /* if (block.thread_rank() < warpSize) producer(bar, bar+2, ...); else consumer(bar, bar+2, ...); */
    if (rank == 0)
        producer(bar, bar + 2, buffer, in, N, BUFFER_LEN);
    else
        consumer(bar, bar + 2, buffer, out, N, BUFFER_LEN, rank - 1);
    return NULL;
}

int main(void)
{
    int r;
    for (int k = 0; k < N; k++) in[k] = (float)(k % 100003);   /* exact in a float */

    /* init(bar + block.thread_rank(), block.size()) for ranks 0..3, then
     * block.sync(): here the main thread initialises all four before it
     * starts the threads. */
    for (int i = 0; i < 4; i++)
        if ((r = abar_init(&bar[i], BLOCK, NULL)) != 0) {
            fprintf(stderr, "seed002: abar_init: %s\n", strerror(r));
            return 1;
        }

    pthread_t th[BLOCK];
    for (long t = 0; t < BLOCK; t++)
        if ((r = pthread_create(&th[t], NULL, thread_main, (void *)t)) != 0) {
            fprintf(stderr, "seed002: pthread_create: %s\n", strerror(r));
            return 1;
        }
    for (int t = 0; t < BLOCK; t++) pthread_join(th[t], NULL);

    int bad = 0;
    for (int k = 0; k < N; k++)
        if (out[k] != produce(in[k]) && bad++ < 5) fprintf(stderr, "seed002: out[%d] = %g, want %g\n",
                                                           k, (double)out[k], (double)produce(in[k]));
    if (bad) fail("main", -1, "out[] differs from in[]", bad);

    /* The consumers' last two ready[] arrivals open phases the producer
     * never joins; nothing waits on them, so the barriers may be destroyed. */
    uint64_t phases[4];
    for (int i = 0; i < 4; i++) {
        phases[i] = abar_phase(&bar[i]);
        if ((r = abar_destroy(&bar[i])) != 0) fail("main", -1, "abar_destroy", r);
    }

    int rounds = N / BUFFER_LEN;
    printf("seed 002: double buffer, 1 producer and %d consumer threads, %d floats in %d rounds\n"
           "of %d; four barriers (ready[0], ready[1], filled[0], filled[1]), each expecting %d.\n",
           CONSUMERS, N, rounds, BUFFER_LEN, BLOCK);
    printf("  phases completed: ready %llu + %llu, filled %llu + %llu; %lu values consumed, %d wrong\n",
           (unsigned long long)phases[0], (unsigned long long)phases[1], (unsigned long long)phases[2],
           (unsigned long long)phases[3], atomic_load(&consumed), bad);
    if (phases[0] + phases[1] != (uint64_t)rounds || phases[2] + phases[3] != (uint64_t)rounds)
        fail("main", -1, "phase counts", (int)(phases[0] + phases[1]));
    if (atomic_load(&consumed) != (unsigned long)N) fail("main", -1, "values consumed", (int)atomic_load(&consumed));

    unsigned e = atomic_load(&errors);
    if (e) {
        printf("seed 002: FAIL (%u errors)\n", e);
        return 1;
    }
    printf("seed 002: OK: every value was consumed once, after it was produced and before it was overwritten\n");
    return 0;
}
