/*
 * abar_cuda/bar.h - the block barrier: abar_cuda_init .. abar_cuda_arrive_and_wait.
 *
 * Part of abar_cuda.h: include <abar_cuda.h>, not this file.
 */
#ifndef ABAR_CUDA_BAR_H
#define ABAR_CUDA_BAR_H

#ifndef ABAR_CUDA_H
#error "include <abar_cuda.h>, not <abar_cuda/bar.h>"
#endif

/* ------------------------------------------------------------------------ */
/* Block barrier                                                            */
/* ------------------------------------------------------------------------ */

/* One thread initializes; the init is published to the block by the
 * __syncthreads (or cluster sync) that must follow before any other use.
 * Returns 0, or EINVAL when expected is 0 or above 2^20-1 (nothing changed). */
ABAR_CUDA__INL int abar_cuda_init(abar_cuda_bar_t *b, unsigned expected)
{
    if (expected == 0 || expected > ABAR_CUDA_EXPECTED_MAX)
        return ABAR_CUDA_EINVAL;
    abar_cuda_ptx_mbarrier_init(abar_cuda__smem(&b->mbar), expected);
#ifdef ABAR_CHECKED
    b->shadow = ABAR_CUDA__SH(0, 0, expected);
    b->next_expected = expected;
    __threadfence_block();
    *(volatile unsigned *)&b->magic = abar_cuda__magic();
#endif
    abar_cuda_ptx_fence_mbarrier_init();   /* sm_90: visible to the cluster and the async proxy */
    return 0;
}

/* Invalidates the barrier so its shared memory may be reused (every thread
 * must be done with it: follow a wait by __syncthreads first). */
ABAR_CUDA__INL void abar_cuda_destroy(abar_cuda_bar_t *b)
{
#ifdef ABAR_CHECKED
    b->magic = 0;
#endif
    abar_cuda_ptx_mbarrier_inval(abar_cuda__smem(&b->mbar));
}

/* n arrivals (1 .. 2^20-1) by the calling thread, release at cta scope.
 * Per thread, not warp-aggregated: measured on an H100, the shuffles and
 * the single-lane branch of an aggregated arrive cost more (about 70 ns a
 * phase) than 32 arrivals on one mbarrier, which the hardware absorbs. */
ABAR_CUDA__INL abar_cuda_token_t abar_cuda_arrive_n(abar_cuda_bar_t *b, unsigned n)
{
    unsigned ph = 0;
#ifdef ABAR_CHECKED
    ph = abar_cuda__shadow_arrive(b, n, 0);
#endif
    return abar_cuda__token(abar_cuda_ptx_mbarrier_arrive(abar_cuda__smem(&b->mbar), n), b, ph);
}

/* One arrival; returns the token of the phase it arrived in. */
ABAR_CUDA__INL abar_cuda_token_t abar_cuda_arrive(abar_cuda_bar_t *b)
{
    unsigned ph = 0;
#ifdef ABAR_CHECKED
    ph = abar_cuda__shadow_arrive(b, 1, 0);
#endif
    return abar_cuda__token(abar_cuda_ptx_mbarrier_arrive1(abar_cuda__smem(&b->mbar)), b, ph);
}

/* Arrives, and expects one fewer arrival from the next phase on. */
ABAR_CUDA__INL void abar_cuda_arrive_and_drop(abar_cuda_bar_t *b)
{
#ifdef ABAR_CHECKED
    abar_cuda__shadow_arrive(b, 1, 1);
#endif
    abar_cuda_ptx_mbarrier_arrive_drop(abar_cuda__smem(&b->mbar));
}

/* Parity (0 or 1) of the current phase, without arriving: test_wait.parity(0)
 * is true exactly when the preceding phase, of parity 0, is done. */
ABAR_CUDA__INL unsigned abar_cuda_current_parity(abar_cuda_bar_t *b)
{
#ifdef ABAR_CHECKED
    abar_cuda__check_init(b);
#endif
    return (unsigned)abar_cuda_ptx_mbarrier_test_wait_parity(abar_cuda__smem(&b->mbar), 0);
}

/* Blocks while the phase of that parity is current (CUDA's wait_parity). */
ABAR_CUDA__INL void abar_cuda_wait_parity(abar_cuda_bar_t *b, unsigned parity)
{
    unsigned addr = abar_cuda__smem(&b->mbar);
#ifdef ABAR_CHECKED
    abar_cuda__check_init(b);
#endif
#if ABAR_CUDA__SM90
    abar_cuda_ptx_mbarrier_wait_parity_loop(addr, parity & 1);
#else
    while (!abar_cuda_ptx_mbarrier_test_wait_parity(addr, parity & 1))
        ;
#endif
}

/* Blocks while the token's phase is current. */
ABAR_CUDA__INL void abar_cuda_wait(abar_cuda_bar_t *b, abar_cuda_token_t t)
{
    unsigned addr = abar_cuda__smem(&b->mbar);
#ifdef ABAR_CHECKED
    abar_cuda__shadow_check_token(b, t);
#endif
#if ABAR_CUDA__SM90
    abar_cuda_ptx_mbarrier_wait_loop(addr, t.raw);
#else
    while (!abar_cuda_ptx_mbarrier_test_wait(addr, t.raw))
        ;
#endif
}

/* Never blocks: 0 if the token's phase is complete, else EBUSY. */
ABAR_CUDA__INL int abar_cuda_test(abar_cuda_bar_t *b, abar_cuda_token_t t)
{
#ifdef ABAR_CHECKED
    abar_cuda__shadow_check_token(b, t);
#endif
    return abar_cuda_ptx_mbarrier_test_wait(abar_cuda__smem(&b->mbar), t.raw) ? 0 : ABAR_CUDA_EBUSY;
}

/* Waits at most about `ns` nanoseconds (a hint to the hardware on sm_90; a
 * %globaltimer bound on sm_80): 0 if the phase completed, else ETIMEDOUT. */
ABAR_CUDA__INL int abar_cuda_try_wait(abar_cuda_bar_t *b, abar_cuda_token_t t, unsigned ns)
{
    unsigned addr = abar_cuda__smem(&b->mbar);
#ifdef ABAR_CHECKED
    abar_cuda__shadow_check_token(b, t);
#endif
#if ABAR_CUDA__SM90
    if (abar_cuda_ptx_mbarrier_try_wait_hint(addr, t.raw, ns))
        return 0;
    return abar_cuda_ptx_mbarrier_test_wait(addr, t.raw) ? 0 : ABAR_CUDA_ETIMEDOUT;
#else
    unsigned long long t0, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    for (;;) {
        if (abar_cuda_ptx_mbarrier_test_wait(addr, t.raw))
            return 0;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
        if (now - t0 >= ns)
            return ABAR_CUDA_ETIMEDOUT;
    }
#endif
}

/* Arrive, then wait for the phase. */
ABAR_CUDA__INL void abar_cuda_arrive_and_wait(abar_cuda_bar_t *b)
{
    abar_cuda_wait(b, abar_cuda_arrive(b));
}

#endif /* ABAR_CUDA_BAR_H */
