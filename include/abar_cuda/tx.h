/*
 * abar_cuda/tx.h - Hopper: transaction counts and bulk copies.
 *
 * Part of abar_cuda.h: include <abar_cuda.h>, not this file.
 */
#ifndef ABAR_CUDA_TX_H
#define ABAR_CUDA_TX_H

#ifndef ABAR_CUDA_H
#error "include <abar_cuda.h>, not <abar_cuda/tx.h>"
#endif

/* ------------------------------------------------------------------------ */
/* Hopper: transaction counts and bulk copies                               */
/* ------------------------------------------------------------------------ */

/* One arrival, and `bytes` more transaction bytes expected in this phase. */
ABAR_CUDA__INL abar_cuda_token_t abar_cuda_arrive_expect_tx(abar_cuda_bar_t *b, unsigned bytes)
{
#if ABAR_CUDA__SM90
    unsigned ph = 0;
#ifdef ABAR_CHECKED
    if (bytes > ABAR_CUDA_TX_MAX)
        abar_cuda__fail("transaction count above 2^20-1 bytes", b, 0);
    ph = abar_cuda__shadow_arrive(b, 1, 0);
#endif
    return abar_cuda__token(abar_cuda_ptx_mbarrier_arrive_expect_tx(abar_cuda__smem(&b->mbar), bytes),
                            b, ph);
#else
    (void)b; (void)bytes;
    abar_cuda__need_sm90("abar_cuda_arrive_expect_tx");
    return abar_cuda__token(0, b, 0);
#endif
}

/* `bytes` more transaction bytes expected, no arrival. */
ABAR_CUDA__INL void abar_cuda_expect_tx(abar_cuda_bar_t *b, unsigned bytes)
{
#if ABAR_CUDA__SM90
#ifdef ABAR_CHECKED
    abar_cuda__check_init(b);
    if (bytes > ABAR_CUDA_TX_MAX)
        abar_cuda__fail("transaction count above 2^20-1 bytes", b, 0);
#endif
    abar_cuda_ptx_mbarrier_expect_tx(abar_cuda__smem(&b->mbar), bytes);
#else
    (void)b; (void)bytes;
    abar_cuda__need_sm90("abar_cuda_expect_tx");
#endif
}

/* `bytes` of the expected transaction bytes are done (by hand, without a
 * copy engine: data written by this thread before it is published). */
ABAR_CUDA__INL void abar_cuda_complete_tx(abar_cuda_bar_t *b, unsigned bytes)
{
#if ABAR_CUDA__SM90
#ifdef ABAR_CHECKED
    abar_cuda__check_init(b);
    if (bytes > ABAR_CUDA_TX_MAX)
        abar_cuda__fail("transaction count above 2^20-1 bytes", b, 0);
#endif
    __threadfence_block();   /* complete_tx is relaxed: order this thread's writes first */
    abar_cuda_ptx_mbarrier_complete_tx(abar_cuda__smem(&b->mbar), bytes);
#else
    (void)b; (void)bytes;
    abar_cuda__need_sm90("abar_cuda_complete_tx");
#endif
}

/* Copies `bytes` from global to shared memory with the bulk copy engine; the
 * copy completes `bytes` transaction bytes on b (expected beforehand with
 * abar_cuda_arrive_expect_tx or abar_cuda_expect_tx).  One thread calls it. */
ABAR_CUDA__INL void abar_cuda_bulk_copy_g2s(void *dst_shared, const void *src_global, unsigned bytes,
                                            abar_cuda_bar_t *b)
{
#if ABAR_CUDA__SM90
#ifdef ABAR_CHECKED
    abar_cuda__check_init(b);
    if ((bytes & 15u) || ((uintptr_t)dst_shared & 15u) || ((uintptr_t)src_global & 15u) || bytes == 0)
        abar_cuda__fail("bulk copy size must be a nonzero multiple of 16 bytes "
                        "and both addresses 16-byte aligned", b, 0);
#endif
    abar_cuda_ptx_cp_async_bulk_g2s(abar_cuda__smem(dst_shared), src_global, bytes,
                                    abar_cuda__smem(&b->mbar));
#else
    (void)dst_shared; (void)src_global; (void)bytes; (void)b;
    abar_cuda__need_sm90("abar_cuda_bulk_copy_g2s");
#endif
}

/* expect_tx(bytes) + one arrival + the copy, for the common one-thread case. */
ABAR_CUDA__INL abar_cuda_token_t abar_cuda_arrive_bulk_copy_g2s(abar_cuda_bar_t *b, void *dst_shared,
                                                                const void *src_global, unsigned bytes)
{
    abar_cuda_token_t t = abar_cuda_arrive_expect_tx(b, bytes);
    abar_cuda_bulk_copy_g2s(dst_shared, src_global, bytes, b);
    return t;
}

#endif /* ABAR_CUDA_TX_H */
