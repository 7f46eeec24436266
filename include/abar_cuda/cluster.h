/*
 * abar_cuda/cluster.h - Hopper: clusters (rank, DSMEM, remote arrivals, hardware and mbarrier cluster barriers, exit).
 *
 * Part of abar_cuda.h: include <abar_cuda.h>, not this file.
 */
#ifndef ABAR_CUDA_CLUSTER_H
#define ABAR_CUDA_CLUSTER_H

#ifndef ABAR_CUDA_H
#error "include <abar_cuda.h>, not <abar_cuda/cluster.h>"
#endif

/* ------------------------------------------------------------------------ */
/* Hopper: clusters                                                         */
/* ------------------------------------------------------------------------ */

ABAR_CUDA__INL unsigned abar_cuda_cluster_rank(void)
{
#if ABAR_CUDA__SM90
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
#else
    return 0;
#endif
}

ABAR_CUDA__INL unsigned abar_cuda_cluster_size(void)
{
#if ABAR_CUDA__SM90
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(r));
    return r;
#else
    return 1;
#endif
}

/* The address of *p's counterpart in block `rank` of this cluster
 * (cg's map_shared_rank): ordinary loads and stores reach it. */
ABAR_CUDA__INL void *abar_cuda_map_shared_rank(const void *p, unsigned rank)
{
#if ABAR_CUDA__SM90
#ifdef ABAR_CHECKED
    if (rank >= abar_cuda_cluster_size())
        abar_cuda__fail("map_shared_rank: rank outside the cluster", p, rank);
#endif
    return abar_cuda_ptx_mapa_generic(p, rank);
#else
    (void)rank;
    abar_cuda__need_sm90("abar_cuda_map_shared_rank");
    return (void *)p;
#endif
}

/* n arrivals on the barrier at b's address in block `rank` of the cluster
 * (release at cluster scope).  The waiter there uses
 * abar_cuda_wait_parity_cluster to acquire at cluster scope.  Checked
 * build: the arrivals are counted in that barrier's shadow (through its
 * mapa address) before the hardware arrival releases them. */
ABAR_CUDA__INL void abar_cuda_arrive_remote(abar_cuda_bar_t *b, unsigned rank, unsigned n)
{
#if ABAR_CUDA__SM90
#ifdef ABAR_CHECKED
    if (rank >= abar_cuda_cluster_size())
        abar_cuda__fail("remote arrive: rank outside the cluster", b, rank);
    (void)abar_cuda__shadow_count((abar_cuda_bar_t *)abar_cuda_ptx_mapa_generic(b, rank), b,
                                  abar_cuda__magic_of(rank), n, 0);
#endif
    abar_cuda_ptx_mbarrier_arrive_remote(abar_cuda_ptx_mapa_shared(abar_cuda__smem(&b->mbar), rank), n);
#else
    (void)b; (void)rank; (void)n;
    abar_cuda__need_sm90("abar_cuda_arrive_remote");
#endif
}

/* Parity wait that acquires at cluster scope (arrivals from peer blocks). */
ABAR_CUDA__INL void abar_cuda_wait_parity_cluster(abar_cuda_bar_t *b, unsigned parity)
{
#if ABAR_CUDA__SM90
#ifdef ABAR_CHECKED
    abar_cuda__check_init(b);
#endif
    abar_cuda_ptx_mbarrier_wait_parity_cluster_loop(abar_cuda__smem(&b->mbar), parity & 1);
#else
    (void)b; (void)parity;
    abar_cuda__need_sm90("abar_cuda_wait_parity_cluster");
#endif
}

/* The hardware cluster barrier, split (seed 004): every thread of every
 * block arrives once and waits once per phase, warps converged. */
ABAR_CUDA__INL void abar_cuda_cluster_arrive(void)
{
#if ABAR_CUDA__SM90
    abar_cuda_ptx_barrier_cluster_arrive();
#else
    abar_cuda__need_sm90("abar_cuda_cluster_arrive");
#endif
}

ABAR_CUDA__INL void abar_cuda_cluster_wait(void)
{
#if ABAR_CUDA__SM90
    abar_cuda_ptx_barrier_cluster_wait();
#else
    abar_cuda__need_sm90("abar_cuda_cluster_wait");
#endif
}

ABAR_CUDA__INL void abar_cuda_cluster_sync(void)
{
    abar_cuda_cluster_arrive();
    abar_cuda_cluster_wait();
}

/* Cluster-safe exit: call last in a kernel whose blocks arrive on or read a
 * peer's shared memory, so no block leaves (and frees its shared memory)
 * while a peer may still reach it.  Every thread of the cluster calls it. */
ABAR_CUDA__INL void abar_cuda_cluster_exit(void)
{
#if ABAR_CUDA__SM90
    abar_cuda_ptx_barrier_cluster_arrive();  /* this block's accesses to peers are done... */
    abar_cuda_ptx_barrier_cluster_wait();    /* ...and so are every peer's to this block */
#endif
}

/* The cluster barrier on mbarriers.  One thread of every block initializes
 * its own copy (same address in each block); then a cluster sync publishes
 * it before the first arrival. */
ABAR_CUDA__INL int abar_cuda_cluster_bar_init(abar_cuda_cluster_bar_t *b, unsigned block_threads)
{
    unsigned blocks = abar_cuda_cluster_size();
    if (block_threads == 0 || block_threads > 1024)
        return ABAR_CUDA_EINVAL;
    abar_cuda_ptx_mbarrier_init(abar_cuda__smem(&b->local), block_threads + 1);
    abar_cuda_ptx_mbarrier_init(abar_cuda__smem(&b->mbar[0]), blocks);
    abar_cuda_ptx_mbarrier_init(abar_cuda__smem(&b->mbar[1]), blocks);
    b->phase = 0;
    b->blocks = blocks;
    abar_cuda_ptx_fence_mbarrier_init();
    return 0;
}

/* Arrival.  The phase is read first: it cannot change before this arrival
 * is counted.  The block's last arriver advances the phase and completes
 * the local phase, then one fence.acq_rel.cluster acquires the block's
 * arrivals and releases, at cluster scope, everything before it (the
 * block's writes it acquired, the new phase, the local completion) to the
 * relaxed arrivals on every block's mbarrier for this phase that follow it.
 * A thread released from this phase by the cluster acquire of its wait thus
 * reads the new phase, and its next local arrival lands in the next local
 * phase (docs/cuda.md).  Returns the phase. */
ABAR_CUDA__INL abar_cuda_token_t abar_cuda_cluster_bar_arrive(abar_cuda_cluster_bar_t *b)
{
#if ABAR_CUDA__SM90
    unsigned ph = *(volatile unsigned *)&b->phase;
    unsigned laddr = abar_cuda__smem(&b->local);
    unsigned long long st = abar_cuda_ptx_mbarrier_arrive_nocomplete(laddr, 1);
    if (abar_cuda_ptx_mbarrier_pending_count(st) == 2) {
        *(volatile unsigned *)&b->phase = ph + 1;
        (void)abar_cuda_ptx_mbarrier_arrive1(laddr);
        /* one fence: acquires the block's arrivals, and releases all of the
         * above at cluster scope for the relaxed remote arrivals that
         * follow (one release.cluster arrival each measured ~380 ns, in
         * series) */
        abar_cuda_ptx_fence_acq_rel_cluster();
        unsigned addr = abar_cuda__smem(&b->mbar[ph & 1]);
        for (unsigned r = 0; r < b->blocks; r++)
            abar_cuda_ptx_mbarrier_arrive_remote_relaxed(abar_cuda_ptx_mapa_shared(addr, r), 1);
    }
    return abar_cuda__token(ph, b, ph);
#else
    (void)b;
    abar_cuda__need_sm90("abar_cuda_cluster_bar_arrive");
    return abar_cuda__token(0, b, 0);
#endif
}

/* Waits for the token's phase: mbar[ph & 1] completes every second phase,
 * so its parity is (ph >> 1) & 1. */
ABAR_CUDA__INL void abar_cuda_cluster_bar_wait(abar_cuda_cluster_bar_t *b, abar_cuda_token_t t)
{
#if ABAR_CUDA__SM90
    unsigned ph = (unsigned)t.raw;
    abar_cuda_ptx_mbarrier_wait_parity_cluster_loop(abar_cuda__smem(&b->mbar[ph & 1]), (ph >> 1) & 1);
#else
    (void)b; (void)t;
    abar_cuda__need_sm90("abar_cuda_cluster_bar_wait");
#endif
}

ABAR_CUDA__INL void abar_cuda_cluster_bar_arrive_and_wait(abar_cuda_cluster_bar_t *b)
{
    abar_cuda_cluster_bar_wait(b, abar_cuda_cluster_bar_arrive(b));
}

#endif /* ABAR_CUDA_CLUSTER_H */
