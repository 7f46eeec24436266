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

/* atom.acq_rel.cta.shared.add.u32: adds v to a shared word, returns the old
 * value; release (this thread's writes before it) and acquire (the writes
 * before every earlier such add on the word: one release sequence).  (The
 * 64-bit form is several times slower in shared memory on an H100.) */
ABAR_CUDA__INL unsigned abar_cuda__atom_add_acq_rel_cta(unsigned addr, unsigned v)
{
    unsigned old;
    asm volatile("atom.acq_rel.cta.shared.add.u32 %0, [%1], %2;" : "=r"(old) : "r"(addr), "r"(v) : "memory");
    return old;
}

/* One thread; then __syncthreads.  fn may be NULL. */
ABAR_CUDA__INL int abar_cuda_cbar_init(abar_cuda_cbar_t *b, unsigned expected,
                                       abar_cuda_completion_fn *fn, void *arg)
{
    if (expected == 0 || expected >= ABAR_CUDA_EXPECTED_MAX)
        return ABAR_CUDA_EINVAL;
    abar_cuda_ptx_mbarrier_init(abar_cuda__smem(&b->mbar), 1);
    b->count = 0;
    b->phase = expected;   /* phase 0 */
    b->fn = fn;
    b->arg = arg;
    abar_cuda_ptx_fence_mbarrier_init();
    return 0;
}

/* n arrivals (one of them a drop if drop) in the open phase; returns its
 * number (modulo 2^12), the token.
 *
 * Two words.  `phase` holds the completed phases (bits 20..31) and the
 * open phase's expected count (bits 0..19, < 2^20), so one load gives an
 * arrival both.  `count` holds the open phase's arrivals (bits 0..19) and
 * drops (bits 20..31: at most one per thread of the block), so the one
 * atom.acq_rel add that counts an arrival also tells the last arrival the
 * phase's drops.  The arrival that brings the arrivals to the expected
 * count is the last: its add acquired every earlier add of the phase (one
 * release sequence on `count`), so the completion sees what every
 * participant wrote before arriving -- no separate fence.  Until it
 * releases the phase nobody else may touch the barrier (every participant
 * has arrived), so it resets `count` and writes the next `phase` word with
 * plain stores, runs fn, and completes the phase with the mbarrier's one
 * arrival (a release that every waiter's parity wait acquires: fn's
 * writes included, seed 001).
 *
 * `direct`: fn is a function's name, so the call is inlined; then fn runs
 * before the stores, its loads issue first and the arithmetic and stores
 * run in their shadow (8 ns a phase less on an H100).  Through a pointer
 * the call is a real one, and the stores go before it (after it, 38 ns
 * more).  Measured: docs/cuda.md.
 *
 * `phase` is read before the add: the previous completer wrote it before
 * its release, which this thread's own wait acquired (or it is that
 * completer; before the first phase, init and a __syncthreads).  Measured
 * against an mbarrier .noComplete count, warp-aggregated counts, and the
 * same words with a branch or a load more: docs/cuda.md. */
ABAR_CUDA__INL abar_cuda_token_t abar_cuda__cbar_arrive(abar_cuda_cbar_t *b, unsigned n, int drop,
                                                        abar_cuda_completion_fn *fn, void *arg, int direct)
{
#ifdef ABAR_CHECKED
    if (n == 0 || n > ABAR_CUDA_EXPECTED_MAX)
        abar_cuda__fail("arrival count must be 1 .. 2^20-1", b, 0);
#endif
    const unsigned w = *(volatile unsigned *)&b->phase;
    const unsigned ph = w >> 20, e = w & 0xFFFFFu;
    const unsigned add = n | (drop ? 1u << 20 : 0u);
    const unsigned old = abar_cuda__atom_add_acq_rel_cta(abar_cuda__smem(&b->count), add);
    const unsigned arrived = (old & 0xFFFFFu) + n;
    if (arrived == e) {
        /* the next phase, expecting the drops fewer; released by the arrival below */
        const unsigned next = ((ph + 1) << 20) | (e - ((old + add) >> 20));
        if (direct && fn)
            fn(arg);
        *(volatile unsigned *)&b->count = 0;
        *(volatile unsigned *)&b->phase = next;
        if (!direct && fn)
            fn(arg);
        (void)abar_cuda_ptx_mbarrier_arrive1(abar_cuda__smem(&b->mbar));
    }
#ifdef ABAR_CHECKED
    else if (e == 0) {
        abar_cuda__fail("arrival on a barrier every participant has dropped", b, ph);
    } else if (arrived > e) {
        abar_cuda__fail("more arrivals in a phase than expected "
                        "(an arrive when the countdown is already zero)", b, ph);
    }
#endif
    return abar_cuda__token(ph, b, ph);
}

/* The completion and its argument given at init, read before the arrival:
 * volatile keeps the loads ahead of the atomic add instead of in the last
 * arrival's branch after it (on an H100 the two measured the same). */
ABAR_CUDA__INL void *abar_cuda__cbar_arg(abar_cuda_cbar_t *b)
{
    return *(void *const volatile *)&b->arg;
}
ABAR_CUDA__INL abar_cuda_completion_fn *abar_cuda__cbar_fn(abar_cuda_cbar_t *b)
{
    return *(abar_cuda_completion_fn *const volatile *)&b->fn;
}

/* n arrivals; the last arriver runs the completion given at init, through
 * a pointer (ABAR_CUDA_CBAR_DEFINE gives the same form with a direct call). */
ABAR_CUDA__INL abar_cuda_token_t abar_cuda_cbar_arrive_n(abar_cuda_cbar_t *b, unsigned n)
{
    return abar_cuda__cbar_arrive(b, n, 0, abar_cuda__cbar_fn(b), abar_cuda__cbar_arg(b), 0);
}

ABAR_CUDA__INL abar_cuda_token_t abar_cuda_cbar_arrive(abar_cuda_cbar_t *b)
{
    return abar_cuda__cbar_arrive(b, 1, 0, abar_cuda__cbar_fn(b), abar_cuda__cbar_arg(b), 0);
}

/* One arrival whose completion, if this arrival is the last, is fn(arg)
 * instead of the one given at init.  Meant for fn a function's name: the
 * call is then direct and inlined, and runs before the resetting stores
 * (abar_cuda__cbar_arrive); a pointer variable works too, at the cost of an
 * indirect call.  Every arrival of a phase must name the same completion. */
ABAR_CUDA__INL abar_cuda_token_t abar_cuda_cbar_arrive_with(abar_cuda_cbar_t *b,
                                                            abar_cuda_completion_fn *fn, void *arg)
{
    return abar_cuda__cbar_arrive(b, 1, 0, fn, arg, 1);
}

/* Arrives, and expects one fewer arrival from the next phase on. */
ABAR_CUDA__INL void abar_cuda_cbar_arrive_and_drop(abar_cuda_cbar_t *b)
{
    (void)abar_cuda__cbar_arrive(b, 1, 1, abar_cuda__cbar_fn(b), abar_cuda__cbar_arg(b), 0);
}

ABAR_CUDA__INL void abar_cuda__cbar_check_token(abar_cuda_cbar_t *b, abar_cuda_token_t t)
{
#ifdef ABAR_CHECKED
    if (t.bar != (const void *)b)
        abar_cuda__fail("token of another barrier", b, t.phase);
    if ((((*(volatile unsigned *)&b->phase) >> 20) - t.phase) % (1u << 12) >= 2)
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
    { return abar_cuda__cbar_arrive(&b->cb, n, 0, fn, abar_cuda__cbar_arg(&b->cb), 1); }         \
    ABAR_CUDA__INL_DECL abar_cuda_token_t name##_arrive(name##_t *b)                                \
    { return abar_cuda__cbar_arrive(&b->cb, 1, 0, fn, abar_cuda__cbar_arg(&b->cb), 1); }         \
    ABAR_CUDA__INL_DECL void name##_arrive_and_drop(name##_t *b)                                    \
    { (void)abar_cuda__cbar_arrive(&b->cb, 1, 1, fn, abar_cuda__cbar_arg(&b->cb), 1); }          \
    ABAR_CUDA__INL_DECL void name##_wait(name##_t *b, abar_cuda_token_t t)                          \
    { abar_cuda_cbar_wait(&b->cb, t); }                                                        \
    ABAR_CUDA__INL_DECL int name##_test(name##_t *b, abar_cuda_token_t t)                           \
    { return abar_cuda_cbar_test(&b->cb, t); }                                                 \
    ABAR_CUDA__INL_DECL void name##_arrive_and_wait(name##_t *b)                                    \
    { abar_cuda_cbar_wait(&b->cb, name##_arrive(b)); }                                         \
    typedef int name##_defined_

#endif /* ABAR_CUDA_CBAR_H */
