/*
 * abar_cuda.h - asynchronous barriers for CUDA threads: the device layer.
 *
 * The host API's verbs (include/abar.h) for the threads of a GPU block and
 * cluster, on the hardware mbarrier.  CUDA C: static inline __device__
 * functions on plain structs; no templates, classes or namespaces.
 *
 *   __shared__ abar_cuda_bar_t bar;
 *   if (threadIdx.x == 0) abar_cuda_init(&bar, blockDim.x);
 *   __syncthreads();                              // publishes the init
 *   abar_cuda_token_t t = abar_cuda_arrive(&bar); // code before is published
 *   compute();                                    // independent work
 *   abar_cuda_wait(&bar, t);                      // everyone has arrived
 *
 * Layers (each a thin wrapper named after its PTX instruction, then the
 * verbs on top):
 *   sm_80+  abar_cuda_bar_t  block barrier: init, arrive, arrive_n,
 *           arrive_and_drop, wait, wait_parity, current_parity, test,
 *           try_wait, arrive_and_wait.
 *   sm_80+  abar_cuda_cbar_t block barrier with a completion function, run by
 *           the last arriver before anyone is released (seed 001).
 *   sm_80+  abar_cuda_ring_t producer/consumer ring over full/empty pairs.
 *   sm_90   expect_tx / complete_tx, cp.async.bulk global->shared completing
 *           on a barrier, arrival on a peer block's barrier, cluster
 *           arrive/wait (hardware and mbarrier-based), map_shared_rank,
 *           cluster-safe exit, the ring with a bulk-copy producer.
 *
 * -DABAR_CHECKED: every barrier carries a shadow phase and every token the
 * barrier and phase it names; each rule of the CUDA guide's section on a
 * barrier's phase (seed 003) is checked and a broken one traps with a message
 * naming the rule, the barrier and the phase.  Without it: no shadow, no
 * checks, the same instructions as hand-written PTX.
 *
 * Functions that need sm_90 trap with a message when compiled for an older
 * target (never a silent fallback).  Hardware limits: an expected count is
 * 1 .. 2^20-1 (ABAR_CUDA_EXPECTED_MAX); the pending transaction count of a
 * phase is at most 2^20-1 bytes; a bulk copy moves a multiple of 16 bytes
 * between 16-byte aligned addresses.
 */
#ifndef ABAR_CUDA_H
#define ABAR_CUDA_H

#if defined(__CUDACC__)

#include <stdint.h>
#include <stdio.h>

/* Errors (errno values, as in abar.h). */
#define ABAR_CUDA_EINVAL    22
#define ABAR_CUDA_EBUSY     16
#define ABAR_CUDA_ETIMEDOUT 110

/* The largest expected arrival count: the hardware mbarrier limit. */
#define ABAR_CUDA_EXPECTED_MAX ((1u << 20) - 1)
/* The largest pending transaction count (bytes) of one phase. */
#define ABAR_CUDA_TX_MAX ((1u << 20) - 1)

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#  define ABAR_CUDA__SM90 1
#else
#  define ABAR_CUDA__SM90 0
#endif

#define ABAR_CUDA__INL static __device__ __forceinline__
/* For functions a macro declares in the user's file: unused ones are fine. */
#define ABAR_CUDA__INL_DECL static __device__ __forceinline__ __attribute__((unused))

/* ------------------------------------------------------------------------ */
/* Types                                                                    */
/* ------------------------------------------------------------------------ */

/* A block-scope barrier.  Lives in shared memory (8-byte aligned). */
typedef struct abar_cuda_bar {
    unsigned long long mbar;        /* private: the hardware mbarrier */
#ifdef ABAR_CHECKED
    unsigned long long shadow;      /* private: phase:24 | arrived:20 | expected:20 */
    unsigned magic;                 /* private: set by init, names this launch and block */
    unsigned next_expected;         /* private: expected count after pending drops */
#endif
} abar_cuda_bar_t;

/* A token names one phase of one barrier; passed by value; fields private. */
typedef struct abar_cuda_token {
    unsigned long long raw;         /* private: mbarrier state, or phase (cbar, cluster bar) */
#ifdef ABAR_CHECKED
    const void *bar;                /* private: the barrier it belongs to */
    unsigned phase;                 /* private: shadow phase it arrived in */
#endif
} abar_cuda_token_t;

typedef void abar_cuda_completion_fn(void *arg);

/* A block-scope barrier with a completion function (seed 001), still on
 * the hardware mbarrier (libcu++ falls back to a software barrier): the
 * participants arrive with .noComplete on an mbarrier expecting one arrival
 * more; the last arriver is found from the pending count its own arrival
 * returns, runs the completion, and completes the phase with the reserved
 * arrival. */
typedef struct abar_cuda_cbar {
    unsigned long long mbar;        /* private: expects the participants + 1 */
    abar_cuda_completion_fn *fn;    /* private */
    void *arg;                      /* private */
    unsigned phase;                 /* private: completed phases */
    unsigned pad_;
} abar_cuda_cbar_t;

/* A cluster-wide split barrier on mbarriers (sm_90): each block's threads
 * arrive on a local mbarrier (noComplete, as in abar_cuda_cbar_t); the
 * block's last arriver arrives remotely on every block's cluster mbarrier.
 * Phases alternate between two cluster mbarriers, so a fast block's
 * next-phase arrival can never be counted in a slow block's current phase. */
typedef struct abar_cuda_cluster_bar {
    unsigned long long local;       /* private: block threads + 1 */
    unsigned long long mbar[2];     /* private: phase k completes on mbar[k & 1] */
    unsigned phase;                 /* private: this block's next phase */
    unsigned blocks;                /* private: blocks in the cluster */
} abar_cuda_cluster_bar_t;

/* A producer/consumer ring: full[i] and empty[i] guard slot i.  The struct is
 * plain pointers: copy it into registers after it is initialized. */
typedef struct abar_cuda_ring {
    abar_cuda_bar_t *full;          /* stages barriers: slot filled */
    abar_cuda_bar_t *empty;         /* stages barriers: slot free */
    unsigned stages;
} abar_cuda_ring_t;

/* One side's position in the ring: slot index and the phase parity to wait
 * for.  Producers start one phase ahead, so their first pass does not wait. */
typedef struct abar_cuda_ring_state {
    unsigned index;
    unsigned phase;
} abar_cuda_ring_state_t;

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

/* ------------------------------------------------------------------------ */
/* Checked build: shadow phase                                              */
/* ------------------------------------------------------------------------ */

#ifdef ABAR_CHECKED
ABAR_CUDA__INL unsigned abar_cuda__magic(void)
{
    unsigned long long g;
    asm volatile("mov.u64 %0, %%gridid;" : "=l"(g));
    unsigned b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    return (unsigned)(g * 0x9E3779B97F4A7C15ull >> 32) ^ (b * 0x85EBCA6Bu) ^ 0xABA4u;
}

#define ABAR_CUDA__SH_PHASE(w)    ((unsigned)((w) >> 40))
#define ABAR_CUDA__SH_ARRIVED(w)  ((unsigned)((w) >> 20) & 0xFFFFFu)
#define ABAR_CUDA__SH_EXPECTED(w) ((unsigned)(w) & 0xFFFFFu)
#define ABAR_CUDA__SH(p, a, e) \
    (((unsigned long long)((p) & 0xFFFFFFu) << 40) | ((unsigned long long)(a) << 20) | (e))

ABAR_CUDA__INL void abar_cuda__check_init(const abar_cuda_bar_t *b)
{
    if (*(volatile const unsigned *)&b->magic != abar_cuda__magic())
        abar_cuda__fail("barrier used before its init was published "
                        "(abar_cuda_init, then __syncthreads or a cluster sync)", b, 0);
}

/* Counts n arrivals in the shadow; returns the shadow phase they fall in.
 * The word is changed by CAS only, so every arrival sees a consistent
 * (phase, arrived, expected) triple. */
ABAR_CUDA__INL unsigned abar_cuda__shadow_arrive(abar_cuda_bar_t *b, unsigned n, int drop)
{
    abar_cuda__check_init(b);
    if (n == 0 || n > ABAR_CUDA_EXPECTED_MAX)
        abar_cuda__fail("arrival count must be 1 .. 2^20-1", b, 0);
    if (drop)
        atomicSub(&b->next_expected, 1u);  /* before the arrival that publishes it */
    unsigned long long old = *(volatile unsigned long long *)&b->shadow, seen;
    for (;;) {
        unsigned ph = ABAR_CUDA__SH_PHASE(old), a = ABAR_CUDA__SH_ARRIVED(old);
        unsigned e = ABAR_CUDA__SH_EXPECTED(old);
        if (e == 0)
            abar_cuda__fail("arrival on a barrier every participant has dropped", b, ph);
        if (a + n > e)
            abar_cuda__fail("more arrivals in a phase than expected "
                            "(an arrive when the countdown is already zero)", b, ph);
        unsigned long long nw = (a + n == e)
            ? ABAR_CUDA__SH(ph + 1, 0, *(volatile unsigned *)&b->next_expected)
            : ABAR_CUDA__SH(ph, a + n, e);
        seen = atomicCAS(&b->shadow, old, nw);
        if (seen == old)
            return ph;
        old = seen;
    }
}

ABAR_CUDA__INL void abar_cuda__shadow_check_token(const abar_cuda_bar_t *b, abar_cuda_token_t t)
{
    abar_cuda__check_init(b);
    if (t.bar != (const void *)b)
        abar_cuda__fail("token of another barrier", b, t.phase);
    unsigned cur = ABAR_CUDA__SH_PHASE(*(volatile unsigned long long *)&b->shadow);
    if (((cur - t.phase) & 0xFFFFFFu) >= 2)
        abar_cuda__fail("wait with a token two or more phases old "
                        "(only the current or the preceding phase may be named)", b, t.phase);
}
#endif /* ABAR_CHECKED */

ABAR_CUDA__INL abar_cuda_token_t abar_cuda__token(unsigned long long raw, const void *b, unsigned phase)
{
    abar_cuda_token_t t;
    t.raw = raw;
#ifdef ABAR_CHECKED
    t.bar = b;
    t.phase = phase;
#else
    (void)b;
    (void)phase;
#endif
    return t;
}

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
 * abar_cuda_wait_parity_cluster to acquire at cluster scope. */
ABAR_CUDA__INL void abar_cuda_arrive_remote(abar_cuda_bar_t *b, unsigned rank, unsigned n)
{
#if ABAR_CUDA__SM90
#ifdef ABAR_CHECKED
    if (rank >= abar_cuda_cluster_size())
        abar_cuda__fail("remote arrive: rank outside the cluster", b, rank);
    if (n == 0 || n > ABAR_CUDA_EXPECTED_MAX)
        abar_cuda__fail("arrival count must be 1 .. 2^20-1", b, 0);
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
 * is counted.  The block's last arriver acquires the block's writes,
 * advances the phase, completes the local phase, and arrives on every
 * block's mbarrier for this phase with release at cluster scope (cumulative
 * over what it acquired).  Returns the phase. */
ABAR_CUDA__INL abar_cuda_token_t abar_cuda_cluster_bar_arrive(abar_cuda_cluster_bar_t *b)
{
#if ABAR_CUDA__SM90
    unsigned ph = *(volatile unsigned *)&b->phase;
    unsigned laddr = abar_cuda__smem(&b->local);
    unsigned long long st = abar_cuda_ptx_mbarrier_arrive_nocomplete(laddr, 1);
    if (abar_cuda_ptx_mbarrier_pending_count(st) == 2) {
        /* one fence: acquires the block's arrivals, releases at cluster
         * scope for the relaxed remote arrivals that follow (one
         * release.cluster arrival each measured ~380 ns, in series) */
        abar_cuda_ptx_fence_acq_rel_cluster();
        *(volatile unsigned *)&b->phase = ph + 1;
        (void)abar_cuda_ptx_mbarrier_arrive1(laddr);
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

#endif /* __CUDACC__ */
#endif /* ABAR_CUDA_H */
