/*
 * abar_cuda/ring.h - the producer/consumer ring (warp, cp.async and bulk-copy producers).
 *
 * Part of abar_cuda.h: include <abar_cuda.h>, not this file.
 */
#ifndef ABAR_CUDA_RING_H
#define ABAR_CUDA_RING_H

#ifndef ABAR_CUDA_H
#error "include <abar_cuda.h>, not <abar_cuda/ring.h>"
#endif

/* ------------------------------------------------------------------------ */
/* The ring                                                                 */
/* ------------------------------------------------------------------------ */

/* One thread; full and empty are `stages` barriers each in shared memory;
 * producers / consumers: arrivals per phase on full / empty (threads, or 1
 * for a bulk-copy producer).  Then __syncthreads. */
ABAR_CUDA__INL int abar_cuda_ring_init(abar_cuda_ring_t *r, abar_cuda_bar_t *full, abar_cuda_bar_t *empty,
                                       unsigned stages, unsigned producers, unsigned consumers)
{
    if (stages == 0 || producers == 0 || consumers == 0 ||
        producers > ABAR_CUDA_EXPECTED_MAX || consumers > ABAR_CUDA_EXPECTED_MAX)
        return ABAR_CUDA_EINVAL;
    for (unsigned i = 0; i < stages; i++) {
        abar_cuda_init(&full[i], producers);
        abar_cuda_init(&empty[i], consumers);
    }
    r->full = full;
    r->empty = empty;
    r->stages = stages;
    return 0;
}

/* Producers start one phase ahead: the first pass over the slots finds them
 * free (the "preceding phase" of parity 1 counts as complete). */
ABAR_CUDA__INL abar_cuda_ring_state_t abar_cuda_ring_producer_start(void)
{
    abar_cuda_ring_state_t s = { 0u, 1u };
    return s;
}

ABAR_CUDA__INL abar_cuda_ring_state_t abar_cuda_ring_consumer_start(void)
{
    abar_cuda_ring_state_t s = { 0u, 0u };
    return s;
}

ABAR_CUDA__INL void abar_cuda__ring_advance(const abar_cuda_ring_t *r, abar_cuda_ring_state_t *s)
{
    if (++s->index == r->stages) {
        s->index = 0;
        s->phase ^= 1u;
    }
}

/* Waits until slot s->index may be filled; returns it. */
ABAR_CUDA__INL unsigned abar_cuda_ring_producer_acquire(const abar_cuda_ring_t *r, abar_cuda_ring_state_t *s)
{
    abar_cuda_wait_parity(&r->empty[s->index], s->phase);
    return s->index;
}

/* Signals the slot filled and moves to the next one. */
ABAR_CUDA__INL void abar_cuda_ring_producer_commit(const abar_cuda_ring_t *r, abar_cuda_ring_state_t *s)
{
    (void)abar_cuda_arrive(&r->full[s->index]);
    abar_cuda__ring_advance(r, s);
}

/* Starts a 16-byte copy global -> shared (sm_80 cp.async; both addresses
 * 16-byte aligned) that the calling thread does not wait for: complete it
 * with abar_cuda_ring_producer_commit_async (or cp.async.wait_group). */
ABAR_CUDA__INL void abar_cuda_copy_async_16(void *dst_shared, const void *src_global)
{
#ifdef ABAR_CHECKED
    if (((uintptr_t)dst_shared | (uintptr_t)src_global) & 15)
        abar_cuda__fail("async copy addresses must be 16-byte aligned", dst_shared, 0);
#endif
    abar_cuda_ptx_cp_async_16(abar_cuda__smem(dst_shared), src_global);
}

/* Asynchronous-copy producer (sm_80; each producer thread, full expecting
 * one arrival per producer thread): after the thread's
 * abar_cuda_copy_async_16 calls into the acquired slot, its arrival on the
 * slot's full barrier is made by the hardware when those copies land; the
 * thread goes on at once (no wait for its loads: a release arrival after
 * register loads would wait for every load still in flight).  Moves to the
 * next slot. */
ABAR_CUDA__INL void abar_cuda_ring_producer_commit_async(const abar_cuda_ring_t *r, abar_cuda_ring_state_t *s)
{
    abar_cuda_bar_t *b = &r->full[s->index];
#ifdef ABAR_CHECKED
    (void)abar_cuda__shadow_arrive(b, 1, 0);
#endif
    abar_cuda_ptx_cp_async_mbarrier_arrive_noinc(abar_cuda__smem(&b->mbar));
    abar_cuda__ring_advance(r, s);
}

/* Bulk-copy producer (one thread; full expects 1 arrival): fills the slot
 * from global memory with the copy engine; the slot is filled when the
 * bytes land.  Moves to the next slot. */
ABAR_CUDA__INL void abar_cuda_ring_producer_commit_bulk(const abar_cuda_ring_t *r, abar_cuda_ring_state_t *s,
                                                        void *slot, const void *src, unsigned bytes)
{
    (void)abar_cuda_arrive_bulk_copy_g2s(&r->full[s->index], slot, src, bytes);
    abar_cuda__ring_advance(r, s);
}

/* Waits until slot s->index is filled; returns it. */
ABAR_CUDA__INL unsigned abar_cuda_ring_consumer_wait(const abar_cuda_ring_t *r, abar_cuda_ring_state_t *s)
{
    abar_cuda_wait_parity(&r->full[s->index], s->phase);
    return s->index;
}

/* Signals the slot free and moves to the next one. */
ABAR_CUDA__INL void abar_cuda_ring_consumer_release(const abar_cuda_ring_t *r, abar_cuda_ring_state_t *s)
{
    (void)abar_cuda_arrive(&r->empty[s->index]);
    abar_cuda__ring_advance(r, s);
}

#endif /* ABAR_CUDA_RING_H */
