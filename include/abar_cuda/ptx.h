/*
 * abar_cuda/ptx.h - small helpers, the failure trap, and the thin wrappers, one per PTX instruction.
 *
 * Part of abar_cuda.h: include <abar_cuda.h>, not this file.
 */
#ifndef ABAR_CUDA_PTX_H
#define ABAR_CUDA_PTX_H

#ifndef ABAR_CUDA_H
#error "include <abar_cuda.h>, not <abar_cuda/ptx.h>"
#endif

/* ------------------------------------------------------------------------ */
/* Small helpers                                                            */
/* ------------------------------------------------------------------------ */

ABAR_CUDA__INL unsigned abar_cuda__smem(const void *p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

#ifdef ABAR_CHECKED
/* Checked build: where the host points this at host-mapped memory
 * (cudaMemcpyToSymbol), a trap also leaves its rule there, readable after the
 * context is lost.  One per translation unit. */
#define ABAR_CUDA_MSG_LEN 256
static __device__ char *abar_cuda_checked_msg;
#endif

/* Traps with a message naming the broken rule. */
/* Not inlined: a call on the failure path keeps the printf's argument setup
 * out of the hot code around it. */
static inline __device__ __noinline__ void abar_cuda__fail(const char *rule, const void *bar, unsigned phase)
{
#ifdef ABAR_CHECKED
    char *m = abar_cuda_checked_msg;
    if (m) {
        unsigned i = 0;
        for (; rule[i] && i < ABAR_CUDA_MSG_LEN - 1; i++)
            m[i] = rule[i];
        m[i] = 0;
        __threadfence_system();
    }
#endif
    printf("abar_cuda: rule broken: %s (barrier %p, phase %u, block %u, thread %u)\n",
           rule, bar, phase,
           blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z),
           threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
    __trap();
}

ABAR_CUDA__INL void abar_cuda__need_sm90(const char *fn)
{
    printf("abar_cuda: %s needs sm_90 or later (compile with -arch=sm_90a)\n", fn);
    __trap();
}

/* ------------------------------------------------------------------------ */
/* Thin wrappers, one per PTX instruction                                   */
/* ------------------------------------------------------------------------ */

/* mbarrier.init: count 1 .. 2^20-1; phase 0, pending = count, tx-count 0. */
ABAR_CUDA__INL void abar_cuda_ptx_mbarrier_init(unsigned addr, unsigned count)
{
    asm volatile("mbarrier.init.shared.b64 [%0], %1;" :: "r"(addr), "r"(count) : "memory");
}

/* mbarrier.inval: before the memory is reused for anything else. */
ABAR_CUDA__INL void abar_cuda_ptx_mbarrier_inval(unsigned addr)
{
    asm volatile("mbarrier.inval.shared.b64 [%0];" :: "r"(addr) : "memory");
}

/* fence.mbarrier_init.release.cluster (sm_90): orders prior mbarrier.init
 * before later cluster-scope accesses (remote arrivals, bulk copies). */
ABAR_CUDA__INL void abar_cuda_ptx_fence_mbarrier_init(void)
{
#if ABAR_CUDA__SM90
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}

/* mbarrier.arrive (release, cta scope); count 1 .. 2^20-1.  sm_80 has no
 * count operand: count-1 arrivals with .noComplete (which must not complete
 * the phase: the last one is still to come), then one. */
ABAR_CUDA__INL unsigned long long abar_cuda_ptx_mbarrier_arrive(unsigned addr, unsigned count)
{
    unsigned long long state;
#if ABAR_CUDA__SM90
    asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1], %2;"
                 : "=l"(state) : "r"(addr), "r"(count) : "memory");
#else
    if (count > 1)
        asm volatile("mbarrier.arrive.noComplete.shared.b64 %0, [%1], %2;"
                     : "=l"(state) : "r"(addr), "r"(count - 1) : "memory");
    asm volatile("mbarrier.arrive.shared.b64 %0, [%1];" : "=l"(state) : "r"(addr) : "memory");
#endif
    return state;
}

/* mbarrier.arrive: one arrival (release, cta scope). */
ABAR_CUDA__INL unsigned long long abar_cuda_ptx_mbarrier_arrive1(unsigned addr)
{
    unsigned long long state;
    asm volatile("mbarrier.arrive.shared.b64 %0, [%1];" : "=l"(state) : "r"(addr) : "memory");
    return state;
}

/* mbarrier.arrive_drop: one arrival now, and one fewer expected from the
 * next phase on. */
ABAR_CUDA__INL unsigned long long abar_cuda_ptx_mbarrier_arrive_drop(unsigned addr)
{
    unsigned long long state;
    asm volatile("mbarrier.arrive_drop.shared.b64 %0, [%1];" : "=l"(state) : "r"(addr) : "memory");
    return state;
}

/* mbarrier.arrive.noComplete: count arrivals that must not complete the
 * phase (undefined if they would).  The state's pending count is the one
 * before these arrivals: the only state mbarrier.pending_count accepts. */
ABAR_CUDA__INL unsigned long long abar_cuda_ptx_mbarrier_arrive_nocomplete(unsigned addr, unsigned count)
{
    unsigned long long state;
    asm volatile("mbarrier.arrive.noComplete.shared.b64 %0, [%1], %2;"
                 : "=l"(state) : "r"(addr), "r"(count) : "memory");
    return state;
}

/* mbarrier.arrive_drop.noComplete: as above, and one fewer expected from
 * the next phase on. */
ABAR_CUDA__INL unsigned long long abar_cuda_ptx_mbarrier_arrive_drop_nocomplete(unsigned addr)
{
    unsigned long long state;
    asm volatile("mbarrier.arrive_drop.noComplete.shared.b64 %0, [%1], 1;"
                 : "=l"(state) : "r"(addr) : "memory");
    return state;
}

/* mbarrier.pending_count: arrivals still pending before the noComplete
 * arrival that returned this state. */
ABAR_CUDA__INL unsigned abar_cuda_ptx_mbarrier_pending_count(unsigned long long state)
{
    unsigned n;
    asm volatile("mbarrier.pending_count.b64 %0, %1;" : "=r"(n) : "l"(state));
    return n;
}

/* fence.acq_rel.cta: acquire and release at block scope (membar.cta, what
 * __threadfence_block emits, is the stronger fence.sc.cta). */
ABAR_CUDA__INL void abar_cuda_ptx_fence_acq_rel_cta(void)
{
    asm volatile("fence.acq_rel.cta;" ::: "memory");
}

/* cp.async.cg.shared.global (sm_80): copies 16 bytes global -> shared
 * without a register (both 16-byte aligned); the thread does not wait. */
ABAR_CUDA__INL void abar_cuda_ptx_cp_async_16(unsigned dst, const void *src)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(dst), "l"(src) : "memory");
}

/* cp.async.mbarrier.arrive.noinc (sm_80): one arrival on the barrier, made
 * by the hardware once every cp.async this thread issued before has landed
 * (.noinc: it counts as one of the expected arrivals). */
ABAR_CUDA__INL void abar_cuda_ptx_cp_async_mbarrier_arrive_noinc(unsigned addr)
{
    asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];" :: "r"(addr) : "memory");
}

/* mbarrier.test_wait: never blocks; true once the phase of `state` is done.
 * The state must name the current or the immediately preceding phase. */
ABAR_CUDA__INL int abar_cuda_ptx_mbarrier_test_wait(unsigned addr, unsigned long long state)
{
    unsigned ok;
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "mbarrier.test_wait.shared.b64 p, [%1], %2;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(ok) : "r"(addr), "l"(state) : "memory");
    return (int)ok;
}

/* mbarrier.test_wait.parity: true once the phase of that parity (the current
 * or the immediately preceding phase) is done. */
ABAR_CUDA__INL int abar_cuda_ptx_mbarrier_test_wait_parity(unsigned addr, unsigned parity)
{
    unsigned ok;
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "mbarrier.test_wait.parity.shared.b64 p, [%1], %2;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(ok) : "r"(addr), "r"(parity) : "memory");
    return (int)ok;
}

/* The sm_90 wrappers are declared for sm_90 device code (and the host pass,
 * which compiles no device code); for sm_80 calling one is a compile error. */
#if ABAR_CUDA__SM90 || !defined(__CUDA_ARCH__)
/* mbarrier.try_wait (sm_90): like test_wait, but the thread may be suspended
 * in hardware until the phase completes or a system time limit passes. */
ABAR_CUDA__INL int abar_cuda_ptx_mbarrier_try_wait(unsigned addr, unsigned long long state)
{
    unsigned ok;
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "mbarrier.try_wait.shared::cta.b64 p, [%1], %2;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(ok) : "r"(addr), "l"(state) : "memory");
    return (int)ok;
}

/* mbarrier.try_wait with suspendTimeHint: the hint (ns) bounds the suspension. */
ABAR_CUDA__INL int abar_cuda_ptx_mbarrier_try_wait_hint(unsigned addr, unsigned long long state,
                                                        unsigned ns)
{
    unsigned ok;
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "mbarrier.try_wait.shared::cta.b64 p, [%1], %2, %3;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(ok) : "r"(addr), "l"(state), "r"(ns) : "memory");
    return (int)ok;
}

/* mbarrier.try_wait.parity (sm_90), acquire at cta scope. */
ABAR_CUDA__INL int abar_cuda_ptx_mbarrier_try_wait_parity(unsigned addr, unsigned parity)
{
    unsigned ok;
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(ok) : "r"(addr), "r"(parity) : "memory");
    return (int)ok;
}

/* mbarrier.try_wait.parity with suspendTimeHint (ns). */
ABAR_CUDA__INL int abar_cuda_ptx_mbarrier_try_wait_parity_hint(unsigned addr, unsigned parity,
                                                               unsigned ns)
{
    unsigned ok;
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, %3;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(ok) : "r"(addr), "r"(parity), "r"(ns) : "memory");
    return (int)ok;
}

/* The wait loop, in one asm block: try_wait suspends in hardware, so a tight
 * branch back is the fastest wake-up (no nanosleep back-off: it only adds
 * latency once try_wait already parks the thread). */
ABAR_CUDA__INL void abar_cuda_ptx_mbarrier_wait_parity_loop(unsigned addr, unsigned parity)
{
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "ABAR_WAIT:\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n\t"
                 "@!p bra ABAR_WAIT;\n\t}"
                 :: "r"(addr), "r"(parity) : "memory");
}

ABAR_CUDA__INL void abar_cuda_ptx_mbarrier_wait_loop(unsigned addr, unsigned long long state)
{
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "ABAR_WAIT:\n\t"
                 "mbarrier.try_wait.shared::cta.b64 p, [%0], %1;\n\t"
                 "@!p bra ABAR_WAIT;\n\t}"
                 :: "r"(addr), "l"(state) : "memory");
}

/* mbarrier.try_wait.parity.acquire.cluster: acquire at cluster scope, for a
 * barrier that receives arrivals from peer blocks. */
ABAR_CUDA__INL void abar_cuda_ptx_mbarrier_wait_parity_cluster_loop(unsigned addr, unsigned parity)
{
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "ABAR_WAIT:\n\t"
                 "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%0], %1;\n\t"
                 "@!p bra ABAR_WAIT;\n\t}"
                 :: "r"(addr), "r"(parity) : "memory");
}

/* mbarrier.arrive.expect_tx (sm_90): one arrival, and `bytes` more pending
 * transaction bytes (tx-count range 0 .. 2^20-1). */
ABAR_CUDA__INL unsigned long long abar_cuda_ptx_mbarrier_arrive_expect_tx(unsigned addr, unsigned bytes)
{
    unsigned long long state;
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 %0, [%1], %2;"
                 : "=l"(state) : "r"(addr), "r"(bytes) : "memory");
    return state;
}

/* mbarrier.expect_tx (sm_90): `bytes` more pending, no arrival. */
ABAR_CUDA__INL void abar_cuda_ptx_mbarrier_expect_tx(unsigned addr, unsigned bytes)
{
    asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;"
                 :: "r"(addr), "r"(bytes) : "memory");
}

/* mbarrier.complete_tx (sm_90): `bytes` of the pending count are done. */
ABAR_CUDA__INL void abar_cuda_ptx_mbarrier_complete_tx(unsigned addr, unsigned bytes)
{
    asm volatile("mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%0], %1;"
                 :: "r"(addr), "r"(bytes) : "memory");
}

/* mapa.shared::cluster: the address of the same shared variable in block
 * `rank` of the cluster (rank < %cluster_nctarank). */
ABAR_CUDA__INL unsigned abar_cuda_ptx_mapa_shared(unsigned addr, unsigned rank)
{
    unsigned r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(addr), "r"(rank));
    return r;
}

/* mapa (generic): a generic pointer to the peer's copy, usable by ld/st. */
ABAR_CUDA__INL void *abar_cuda_ptx_mapa_generic(const void *p, unsigned rank)
{
    unsigned long long r;
    asm volatile("mapa.u64 %0, %1, %2;" : "=l"(r) : "l"(p), "r"(rank));
    return (void *)r;
}

/* mbarrier.arrive.release.cluster.shared::cluster: arrival (count 1 .. 2^20-1)
 * on a barrier in a peer block's shared memory; no state comes back. */
ABAR_CUDA__INL void abar_cuda_ptx_mbarrier_arrive_remote(unsigned cluster_addr, unsigned count)
{
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0], %1;"
                 :: "r"(cluster_addr), "r"(count) : "memory");
}

/* mbarrier.arrive.relaxed.cluster.shared::cluster (PTX 8.6, sm_90): a remote
 * arrival without its own release; after one fence.acq_rel.cluster, a batch
 * of them is one release pattern instead of one release each. */
ABAR_CUDA__INL void abar_cuda_ptx_mbarrier_arrive_remote_relaxed(unsigned cluster_addr, unsigned count)
{
    asm volatile("mbarrier.arrive.relaxed.cluster.shared::cluster.b64 _, [%0], %1;"
                 :: "r"(cluster_addr), "r"(count) : "memory");
}

/* fence.acq_rel.cluster. */
ABAR_CUDA__INL void abar_cuda_ptx_fence_acq_rel_cluster(void)
{
    asm volatile("fence.acq_rel.cluster;" ::: "memory");
}

/* barrier.cluster.arrive.release.aligned: every thread of the cluster arrives
 * once per phase; .aligned: all threads of the warp execute it together. */
ABAR_CUDA__INL void abar_cuda_ptx_barrier_cluster_arrive(void)
{
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}

/* barrier.cluster.arrive.relaxed.aligned: no memory ordering (sm_90). */
ABAR_CUDA__INL void abar_cuda_ptx_barrier_cluster_arrive_relaxed(void)
{
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}

/* barrier.cluster.wait.acquire.aligned: waits for the current phase. */
ABAR_CUDA__INL void abar_cuda_ptx_barrier_cluster_wait(void)
{
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

/* cp.async.bulk global->shared, completing `bytes` transaction bytes on the
 * barrier: bytes a multiple of 16, both addresses 16-byte aligned. */
ABAR_CUDA__INL void abar_cuda_ptx_cp_async_bulk_g2s(unsigned dst, const void *src, unsigned bytes,
                                                    unsigned mbar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 :: "r"(dst), "l"(src), "r"(bytes), "r"(mbar) : "memory");
}

/* cp.async.bulk shared->global in a bulk group (sm_90): bytes a multiple of
 * 16, 16-byte aligned; complete with abar_cuda_ptx_cp_async_bulk_wait_read. */
ABAR_CUDA__INL void abar_cuda_ptx_cp_async_bulk_s2g(void *dst, unsigned src, unsigned bytes)
{
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
                 :: "l"(dst), "r"(src), "r"(bytes) : "memory");
}

ABAR_CUDA__INL void abar_cuda_ptx_cp_async_bulk_commit(void)
{
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

/* cp.async.bulk.wait_group.read 0: the sources of every committed group have
 * been read (the shared memory may be overwritten). */
ABAR_CUDA__INL void abar_cuda_ptx_cp_async_bulk_wait_read(void)
{
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
}

/* fence.proxy.async.shared::cta: generic-proxy writes to shared memory become
 * visible to the async proxy (bulk copies) issued after it. */
ABAR_CUDA__INL void abar_cuda_ptx_fence_proxy_async(void)
{
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
#endif /* ABAR_CUDA__SM90 || host pass */

#endif /* ABAR_CUDA_PTX_H */
