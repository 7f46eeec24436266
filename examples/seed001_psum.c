/*
 * seed001_psum.c - seed 001, "Completion Function": the psum kernel on 128
 * CPU threads.
 *
 * Each thread writes its element into smem[rank] and arrives; the last
 * arrival of the phase runs the completion function, which sums smem[] into
 * *acc; only then is any thread released from its wait, and every released
 * thread reads the new *acc.  smem[] is safe to reuse in the next iteration
 * because every thread, including the one that ran the reduction, is done
 * with it.
 *
 * Two deliberate differences from the CUDA text:
 *  - the seed reads data[i] in every thread; each thread here takes its own
 *    element, data[i + rank], which is what a block-wide sum means;
 *  - the values are unsigned, so the growth of acc (each element adds the
 *    running acc, as in the seed) wraps around with defined behaviour
 *    instead of overflowing an int.
 *
 * Checks (exit 1 if any fails): after every wait, every thread compares *acc
 * with a serial computation of the same recurrence; the completion runs
 * exactly once per phase, sees all 128 writes of its phase, and sees
 * abar_phase() equal to the phase it completes; the final *acc equals the
 * serial result.
 */
#include <abar.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BlockSize = 128, N = 128 * 512 };   /* constexpr int BlockSize = 128; n % 128 == 0 */

static unsigned data[N];
static unsigned smem[BlockSize];           /* __shared__ int smem[BlockSize]; */
static unsigned acc_storage;
static unsigned expect[N / BlockSize + 1]; /* *acc after each phase, computed serially */
static abar_t bar;                         /* the barrier storage */
static _Atomic unsigned errors;
static unsigned completions;               /* written only by the completion function */

static void fail(const char *what, unsigned rank, unsigned i, long long got, long long want)
{
    fprintf(stderr, "seed001: thread %u, i=%u: %s: got %lld, want %lld\n", rank, i, what, got, want);
    atomic_fetch_add(&errors, 1);
}

/* auto completion_fn = [&] {
 *   int sum = 0;
 *   for (int i = 0; i < 128; ++i) sum += smem[i];
 *   *acc += sum;
 * };
 * The lambda's captures (smem, acc) become the attr's arg. */
struct psum_ctx { unsigned *smem; unsigned *acc; };

static void completion_fn(void *arg)
{
    struct psum_ctx *c = arg;
    unsigned sum = 0;
    for (int i = 0; i < BlockSize; ++i) sum += c->smem[i];
    *c->acc += sum;

    /* Not in the seed: the completion runs once per phase, inside it, and
     * the phase has not advanced yet. */
    if (abar_phase(&bar) != completions) fail("abar_phase in the completion", 0, completions,
                                              (long long)abar_phase(&bar), completions);
    completions++;
}

struct psum_args { unsigned rank; const unsigned *data; unsigned n; unsigned *acc; };

/* __global__ void psum(int *data, int n, int *acc), for one thread */
static void *psum(void *p)
{
    const struct psum_args *a = p;
    const unsigned rank = a->rank;     /* block.thread_rank() */
    const unsigned *data = a->data;
    unsigned *acc = a->acc;
    int r;

    // Main loop
    for (unsigned i = 0; i < a->n; i += BlockSize) {
        /* smem[block.thread_rank()] = data[i] + *acc; */
        smem[rank] = data[i + rank] + *acc;
        /* auto t = bar->arrive(); */
        abar_token_t t = abar_arrive(&bar);
        // We can do independent computation here
        /* bar->wait(std::move(t)); */
        if ((r = abar_wait(&bar, t)) != 0) fail("abar_wait", rank, i, r, 0);
        // shared-memory is safe to re-use in the next iteration
        // since all threads are done with it, including the one
        // that did the reduction

        /* Not in the seed: what the completion wrote is visible here. */
        if (*acc != expect[i / BlockSize + 1])
            fail("*acc after the wait", rank, i, *acc, expect[i / BlockSize + 1]);
    }
    return NULL;
}

int main(void)
{
    unsigned *acc = &acc_storage;
    int r;

    for (unsigned k = 0; k < N; k++) data[k] = (k * 37u + 11u) % 1000u;

    /* The serial reference: the same recurrence, one block at a time. */
    expect[0] = 0;
    for (unsigned b = 0; b < N / BlockSize; b++) {
        unsigned sum = 0;
        for (unsigned t = 0; t < BlockSize; t++) sum += data[b * BlockSize + t] + expect[b];
        expect[b + 1] = expect[b] + sum;
    }

    /* if (block.thread_rank() == 0) {
     *   assert(*acc == 0);
     *   new (bar) barrier_t{block.size(), completion_fn};
     * }
     * block.sync();
     * Here the main thread initialises the barrier before it starts the
     * threads (pthread_create orders the init before everything they do). */
    if (*acc != 0) return 1;
    struct psum_ctx ctx = { smem, acc };
    abar_attr_t attr = { .completion = completion_fn, .arg = &ctx, .flags = 0 };
    if ((r = abar_init(&bar, BlockSize, &attr)) != 0) {
        fprintf(stderr, "seed001: abar_init: %s\n", strerror(r));
        return 1;
    }

    pthread_t th[BlockSize];
    struct psum_args args[BlockSize];
    for (unsigned t = 0; t < BlockSize; t++) {
        args[t] = (struct psum_args){ t, data, N, acc };
        if ((r = pthread_create(&th[t], NULL, psum, &args[t])) != 0) {
            fprintf(stderr, "seed001: pthread_create: %s\n", strerror(r));
            return 1;
        }
    }
    for (unsigned t = 0; t < BlockSize; t++) pthread_join(th[t], NULL);

    if (completions != N / BlockSize) fail("completions", 0, 0, completions, N / BlockSize);
    if (abar_phase(&bar) != N / BlockSize) fail("abar_phase", 0, 0, (long long)abar_phase(&bar), N / BlockSize);
    if (*acc != expect[N / BlockSize]) fail("final *acc", 0, N, *acc, expect[N / BlockSize]);
    if ((r = abar_destroy(&bar)) != 0) fail("abar_destroy", 0, 0, r, 0);

    printf("seed 001: psum of %u values on %u threads, %u phases; the completion function\n"
           "summed smem[] into *acc once per phase, before any wait returned.\n",
           N, BlockSize, N / BlockSize);
    printf("  *acc = %u (serial: %u); completion ran %u times; %u threads x %u phases read *acc after the wait\n",
           *acc, expect[N / BlockSize], completions, BlockSize, N / BlockSize);
    unsigned e = atomic_load(&errors);
    if (e) {
        printf("seed 001: FAIL (%u errors)\n", e);
        return 1;
    }
    printf("seed 001: OK: every thread saw the completion's result after every wait\n");
    return 0;
}
