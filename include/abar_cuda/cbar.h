/*
 * abar_cuda/cbar.h - the block barrier with a completion function (seed 001) and ABAR_CUDA_CBAR_DEFINE.
 *
 * Part of abar_cuda.h: include <abar_cuda.h>, not this file.
 */
#ifndef ABAR_CUDA_CBAR_H
#define ABAR_CUDA_CBAR_H

#ifndef ABAR_CUDA_H
#error "include <abar_cuda.h>, not <abar_cuda/cbar.h>"
#endif

/* ------------------------------------------------------------------------ */
/* Block barrier with a completion function                                 */
/* ------------------------------------------------------------------------ */

/* One thread; then __syncthreads.  fn may be NULL.  The mbarrier expects
 * expected + 1 arrivals: the participants arrive with .noComplete, so none of
 * them can complete the phase; the one whose arrival leaves only the reserved
 * arrival pending is the last, runs fn, and completes the phase with it. */
ABAR_CUDA__INL int abar_cuda_cbar_init(abar_cuda_cbar_t *b, unsigned expected,
                                       abar_cuda_completion_fn *fn, void *arg)
{
    if (expected == 0 || expected >= ABAR_CUDA_EXPECTED_MAX)
        return ABAR_CUDA_EINVAL;
    abar_cuda_ptx_mbarrier_init(abar_cuda__smem(&b->mbar), expected + 1);
    b->fn = fn;
    b->arg = arg;
    b->phase = 0;
    abar_cuda_ptx_fence_mbarrier_init();
    return 0;
}

/* After a noComplete arrival of n in phase ph: the last arriver (pending was
 * n + 1) acquires every earlier arrival's writes (their arrivals are
 * releases; fence.acq_rel.cta after reading the count makes it an acquire:
 * not membar.cta, the sequentially consistent fence __threadfence_block
 * emits, which the completion does not need), runs fn, and completes the
 * phase with a release arrival that every waiter's wait acquires: what fn
 * wrote is visible to every released thread (seed 001).  The next phase
 * number is ph + 1 from the token: no second read of b->phase. */
ABAR_CUDA__INL void abar_cuda__cbar_after(abar_cuda_cbar_t *b, unsigned long long st, unsigned n,
                                          unsigned ph, abar_cuda_completion_fn *fn, void *arg)
{
    unsigned pending = abar_cuda_ptx_mbarrier_pending_count(st);
    if (pending == n + 1) {
        abar_cuda_ptx_fence_acq_rel_cta();
        *(volatile unsigned *)&b->phase = ph + 1;   /* released by the arrival below */
        if (fn)
            fn(arg);
        (void)abar_cuda_ptx_mbarrier_arrive1(abar_cuda__smem(&b->mbar));
    } else if (pending < n + 1) {
        abar_cuda__fail("more arrivals in a phase than expected "
                        "(an arrive when the countdown is already zero)", b, ph);
    }
}

/* The token is the phase number, read before arriving (it cannot change
 * until this arrival is counted; the completer's increment was released by
 * the arrival that completed the previous phase, which this thread's wait
 * acquired).  Waits are parity waits: try_wait on the state a noComplete
 * arrival returns wakes later than a parity wait (docs/cuda.md). */
ABAR_CUDA__INL abar_cuda_token_t abar_cuda__cbar_arrive(abar_cuda_cbar_t *b, unsigned n,
                                                        abar_cuda_completion_fn *fn, void *arg)
{
#ifdef ABAR_CHECKED
    if (n == 0 || n > ABAR_CUDA_EXPECTED_MAX)
        abar_cuda__fail("arrival count must be 1 .. 2^20-1", b, 0);
#endif
    unsigned ph = *(volatile unsigned *)&b->phase;
    unsigned long long st = abar_cuda_ptx_mbarrier_arrive_nocomplete(abar_cuda__smem(&b->mbar), n);
    abar_cuda__cbar_after(b, st, n, ph, fn, arg);
    return abar_cuda__token(ph, b, ph);
}

/* n arrivals; the last arriver runs the completion given at init, through
 * a pointer (an indirect call: on an H100 it costs more than the whole
 * barrier; ABAR_CUDA_CBAR_DEFINE gives the same form with a direct call). */
ABAR_CUDA__INL abar_cuda_token_t abar_cuda_cbar_arrive_n(abar_cuda_cbar_t *b, unsigned n)
{
    return abar_cuda__cbar_arrive(b, n, b->fn, b->arg);
}

ABAR_CUDA__INL abar_cuda_token_t abar_cuda_cbar_arrive(abar_cuda_cbar_t *b)
{
    return abar_cuda__cbar_arrive(b, 1, b->fn, b->arg);
}

/* One arrival whose completion, if this arrival is the last, is fn(arg)
 * instead of the one given at init.  With fn a function's name the call is
 * direct and inlined (no indirect call).  Every arrival of a phase must name
 * the same completion. */
ABAR_CUDA__INL abar_cuda_token_t abar_cuda_cbar_arrive_with(abar_cuda_cbar_t *b,
                                                            abar_cuda_completion_fn *fn, void *arg)
{
    return abar_cuda__cbar_arrive(b, 1, fn, arg);
}

/* Arrives, and expects one fewer arrival from the next phase on. */
ABAR_CUDA__INL void abar_cuda__cbar_arrive_and_drop(abar_cuda_cbar_t *b, abar_cuda_completion_fn *fn,
                                                   void *arg)
{
    unsigned ph = *(volatile unsigned *)&b->phase;
    unsigned long long st = abar_cuda_ptx_mbarrier_arrive_drop_nocomplete(abar_cuda__smem(&b->mbar));
    abar_cuda__cbar_after(b, st, 1, ph, fn, arg);
}

ABAR_CUDA__INL void abar_cuda_cbar_arrive_and_drop(abar_cuda_cbar_t *b)
{
    abar_cuda__cbar_arrive_and_drop(b, b->fn, b->arg);
}

ABAR_CUDA__INL void abar_cuda__cbar_check_token(abar_cuda_cbar_t *b, abar_cuda_token_t t)
{
#ifdef ABAR_CHECKED
    if (t.bar != (const void *)b)
        abar_cuda__fail("token of another barrier", b, t.phase);
    if (*(volatile unsigned *)&b->phase - t.phase >= 2)
        abar_cuda__fail("wait with a token two or more phases old "
                        "(only the current or the preceding phase may be named)", b, t.phase);
#else
    (void)b;
    (void)t;
#endif
}

ABAR_CUDA__INL void abar_cuda_cbar_wait(abar_cuda_cbar_t *b, abar_cuda_token_t t)
{
    unsigned addr = abar_cuda__smem(&b->mbar);
    abar_cuda__cbar_check_token(b, t);
#if ABAR_CUDA__SM90
    abar_cuda_ptx_mbarrier_wait_parity_loop(addr, (unsigned)t.raw & 1);
#else
    while (!abar_cuda_ptx_mbarrier_test_wait_parity(addr, (unsigned)t.raw & 1))
        ;
#endif
}

ABAR_CUDA__INL int abar_cuda_cbar_test(abar_cuda_cbar_t *b, abar_cuda_token_t t)
{
    abar_cuda__cbar_check_token(b, t);
    return abar_cuda_ptx_mbarrier_test_wait_parity(abar_cuda__smem(&b->mbar), (unsigned)t.raw & 1)
        ? 0 : ABAR_CUDA_EBUSY;
}

ABAR_CUDA__INL void abar_cuda_cbar_arrive_and_wait(abar_cuda_cbar_t *b)
{
    abar_cuda_cbar_wait(b, abar_cuda_cbar_arrive(b));
}

ABAR_CUDA__INL void abar_cuda_cbar_arrive_and_wait_with(abar_cuda_cbar_t *b, abar_cuda_completion_fn *fn,
                                                        void *arg)
{
    abar_cuda_cbar_wait(b, abar_cuda_cbar_arrive_with(b, fn, arg));
}

/* A completion barrier type whose completion is fixed when it is declared:
 *
 *   ABAR_CUDA_CBAR_DEFINE(psum_bar, psum_completion)   // at file scope
 *   __shared__ psum_bar_t bar;
 *   if (threadIdx.x == 0) psum_bar_init(&bar, blockDim.x, &ctx);
 *   __syncthreads();
 *   psum_bar_wait(&bar, psum_bar_arrive(&bar));
 *
 * Seed 001's form (the completion given once, before the first arrival) with
 * a direct, inlined call instead of a call through a pointer.  Declares
 * name_t and name_init(b, expected, arg), name_arrive, name_arrive_n,
 * name_arrive_and_drop, name_wait, name_test, name_arrive_and_wait, which
 * behave as the abar_cuda_cbar_* functions of the same suffix (and check the
 * same rules under ABAR_CHECKED); name_cbar(b) is the underlying
 * abar_cuda_cbar_t. */
#define ABAR_CUDA_CBAR_DEFINE(name, fn)                                                        \
    typedef struct name##_s { abar_cuda_cbar_t cb; } name##_t;                                 \
    ABAR_CUDA__INL_DECL abar_cuda_cbar_t *name##_cbar(name##_t *b) { return &b->cb; }               \
    ABAR_CUDA__INL_DECL int name##_init(name##_t *b, unsigned expected, void *arg)                  \
    { return abar_cuda_cbar_init(&b->cb, expected, fn, arg); }                                 \
    ABAR_CUDA__INL_DECL abar_cuda_token_t name##_arrive_n(name##_t *b, unsigned n)                  \
    { return abar_cuda__cbar_arrive(&b->cb, n, fn, b->cb.arg); }                               \
    ABAR_CUDA__INL_DECL abar_cuda_token_t name##_arrive(name##_t *b)                                \
    { return abar_cuda__cbar_arrive(&b->cb, 1, fn, b->cb.arg); }                               \
    ABAR_CUDA__INL_DECL void name##_arrive_and_drop(name##_t *b)                                    \
    { abar_cuda__cbar_arrive_and_drop(&b->cb, fn, b->cb.arg); }                                \
    ABAR_CUDA__INL_DECL void name##_wait(name##_t *b, abar_cuda_token_t t)                          \
    { abar_cuda_cbar_wait(&b->cb, t); }                                                        \
    ABAR_CUDA__INL_DECL int name##_test(name##_t *b, abar_cuda_token_t t)                           \
    { return abar_cuda_cbar_test(&b->cb, t); }                                                 \
    ABAR_CUDA__INL_DECL void name##_arrive_and_wait(name##_t *b)                                    \
    { abar_cuda_cbar_wait(&b->cb, name##_arrive(b)); }                                         \
    typedef int name##_defined_

#endif /* ABAR_CUDA_CBAR_H */
