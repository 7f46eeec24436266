/*
 * bench_abar_cuda.cu - abar's device barriers against every rival, one run.
 *
 *   bench_abar_cuda [quick]
 *
 * Tables (ns per phase: kernel time / phases, best of REPS launches):
 *   1. one block of 32..1024 threads, every thread arrives and waits each
 *      phase: __syncthreads, cooperative groups, cuda::barrier (libcu++),
 *      the __mbarrier_* primitives, raw PTX, abar.
 *   2. the same with a completion function: cuda::barrier<block, F> vs abar.
 *   3. whole GPU: every SM full of blocks, each on its own barrier (phases/s).
 *   4. producer/consumer bandwidth (GB/s, bytes read + written) against a
 *      plain copy kernel: seed 002's pattern on cuda::barrier and on abar,
 *      the abar ring (warp producer) and the abar ring with a bulk-copy
 *      producer, buffers of 256 .. 4096 floats.
 *   5. cluster barriers of 2..16 blocks: cg cluster.sync, cg barrier_arrive/
 *      barrier_wait, abar hardware cluster arrive/wait, abar mbarrier cluster.
 */
#include <abar_cuda.h>
#include "util.cuh"

#include <cooperative_groups.h>
#include <cuda/barrier>
#include <cuda_awbarrier_primitives.h>

#include <string.h>
#include <algorithm>
#include <vector>

namespace cg = cooperative_groups;

static int REPS = 5;
static int ITERS = 20000;

/* ---- 1. block barrier latency ----------------------------------------- */

enum {
    M_SYNCTHREADS, M_CG_SYNC, M_LIBCU_AW, M_LIBCU_SPLIT, M_PRIM, M_PTX, M_PTX_SPIN, M_PTX_WARP,
    M_ABAR_AW, M_ABAR_SPLIT, M_ABAR_PARITY, M_NBLOCK
};
static const char *block_name[M_NBLOCK] = {
    "__syncthreads", "cg block.sync", "cuda::barrier arrive_and_wait", "cuda::barrier wait(arrive())",
    "__mbarrier_* primitives", "raw PTX arrive+try_wait.parity", "raw PTX arrive+test_wait spin",
    "raw PTX warp-leader (no checks)", "abar arrive_and_wait", "abar wait(arrive())", "abar parity wait",
};

template <int M>
__global__ void k_block(int iters, int *sink)
{
    using lbar = cuda::barrier<cuda::thread_scope_block>;
    __shared__ __align__(16) unsigned char lb_storage[sizeof(lbar)];
    lbar &lb = *(lbar *)lb_storage;
    __shared__ __mbarrier_t pb;
    __shared__ abar_cuda_bar_t ab;
    __shared__ unsigned long long rb;
    auto block = cg::this_thread_block();
    if (threadIdx.x == 0) {
        init(&lb, blockDim.x);
        __mbarrier_init(&pb, blockDim.x);
        abar_cuda_init(&ab, blockDim.x);
        abar_cuda_ptx_mbarrier_init(abar_cuda__smem(&rb), blockDim.x);
    }
    __syncthreads();
    unsigned raddr = abar_cuda__smem(&rb);
    int acc = 0;
    for (int i = 0; i < iters; i++) {
        acc += (int)threadIdx.x ^ i;
        if (M == M_SYNCTHREADS) {
            __syncthreads();
        } else if (M == M_CG_SYNC) {
            block.sync();
        } else if (M == M_LIBCU_AW) {
            lb.arrive_and_wait();
        } else if (M == M_LIBCU_SPLIT) {
            lb.wait(lb.arrive());
        } else if (M == M_PRIM) {
            __mbarrier_token_t t = __mbarrier_arrive(&pb);
            while (!__mbarrier_try_wait(&pb, t, 1000000))
                ;
        } else if (M == M_PTX) {
            (void)abar_cuda_ptx_mbarrier_arrive(raddr, 1);
            abar_cuda_ptx_mbarrier_wait_parity_loop(raddr, (unsigned)i & 1);
        } else if (M == M_PTX_SPIN) {
            unsigned long long st = abar_cuda_ptx_mbarrier_arrive(raddr, 1);
            while (!abar_cuda_ptx_mbarrier_test_wait(raddr, st))
                ;
        } else if (M == M_PTX_WARP) {
            __syncwarp();
            if ((threadIdx.x & 31) == 0) {
                (void)abar_cuda_ptx_mbarrier_arrive(raddr, 32);
                abar_cuda_ptx_mbarrier_wait_parity_loop(raddr, (unsigned)i & 1);
            }
            __syncwarp();
        } else if (M == M_ABAR_AW) {
            abar_cuda_arrive_and_wait(&ab);
        } else if (M == M_ABAR_SPLIT) {
            abar_cuda_wait(&ab, abar_cuda_arrive(&ab));
        } else if (M == M_ABAR_PARITY) {
            (void)abar_cuda_arrive(&ab);
            abar_cuda_wait_parity(&ab, (unsigned)i & 1);
        }
    }
    if (acc == 0x7fffffff)
        *sink = acc;
}

typedef void (*block_kernel_t)(int, int *);
static block_kernel_t block_kernels[M_NBLOCK] = {
    k_block<0>, k_block<1>, k_block<2>, k_block<3>, k_block<4>, k_block<5>,
    k_block<6>, k_block<7>, k_block<8>, k_block<9>, k_block<10>,
};

static int *g_sink;

/* best-of-REPS kernel time in ms */
template <typename F>
static double time_best(F launch)
{
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    launch();   /* warm-up */
    CK(util_sync(60));
    float best = 1e30f;
    for (int r = 0; r < REPS; r++) {
        CK(cudaEventRecord(a));
        launch();
        CK(cudaEventRecord(b));
        CK(util_sync(60));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        best = std::min(best, ms);
    }
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    return best;
}

static const int threads_list[] = {32, 64, 128, 256, 512, 1024};
#define NT 6

static void bench_block(void)
{
    printf("\n## 1. One block, every thread arrives and waits: ns per phase (%d phases)\n\n", ITERS);
    printf("| method |");
    for (int t : threads_list) printf(" %d |", t);
    printf("\n|---|");
    for (int i = 0; i < NT; i++) printf("---:|");
    printf("\n");
    double res[M_NBLOCK][NT];
    for (int m = 0; m < M_NBLOCK; m++) {
        printf("| %s |", block_name[m]);
        for (int ti = 0; ti < NT; ti++) {
            int T = threads_list[ti];
            double ms = time_best([&] { block_kernels[m]<<<1, T>>>(ITERS, g_sink); });
            res[m][ti] = ms * 1e6 / ITERS;
            printf(" %.1f |", res[m][ti]);
        }
        printf("\n");
    }
    printf("| **abar arrive_and_wait / cuda::barrier arrive_and_wait** |");
    for (int ti = 0; ti < NT; ti++) printf(" %.2f |", res[M_ABAR_AW][ti] / res[M_LIBCU_AW][ti]);
    printf("\n| **abar wait(arrive()) / cuda::barrier wait(arrive())** |");
    for (int ti = 0; ti < NT; ti++) printf(" %.2f |", res[M_ABAR_SPLIT][ti] / res[M_LIBCU_SPLIT][ti]);
    printf("\n");
    fflush(stdout);
}

/* ---- 2. completion function ------------------------------------------- */

struct count_completion {
    int *counter;
    __device__ void operator()() noexcept { (*counter)++; }
};

__device__ void abar_count_completion(void *arg) { (*(int *)arg)++; }

/* Seed 001's form with the completion fixed at declaration: direct call. */
ABAR_CUDA_CBAR_DEFINE(count_bar, abar_count_completion);

enum { C_LIBCU, C_ABAR_PTR, C_ABAR_TYPED, C_ABAR_SPLIT, C_ABAR_WITH, C_ABAR_PLAIN, C_N };
static const char *cname[C_N] = {
    "cuda::barrier<block, F> arrive_and_wait",
    "abar cbar, completion at init: abar_cuda_cbar_init + arrive_and_wait (call through a pointer)",
    "**abar cbar, completion at init: ABAR_CUDA_CBAR_DEFINE + arrive_and_wait (direct call)**",
    "abar cbar, completion at init (typed): wait(arrive())",
    "**abar cbar, completion at the call: arrive_and_wait_with**",
    "plain abar_cuda_bar arrive_and_wait (no completion)",
};

template <int M>
__global__ void k_completion(int iters, int *sink)
{
    using cbarrier = cuda::barrier<cuda::thread_scope_block, count_completion>;
    __shared__ __align__(16) unsigned char lb_storage[sizeof(cbarrier)];
    __shared__ abar_cuda_cbar_t ab;
    __shared__ count_bar_t tb;
    __shared__ abar_cuda_bar_t pb;
    __shared__ int counter;
    cbarrier *lb = (cbarrier *)lb_storage;
    if (threadIdx.x == 0) {
        counter = 0;
        if (M == C_LIBCU)
            init(lb, blockDim.x, count_completion{&counter});
        else if (M == C_ABAR_TYPED || M == C_ABAR_SPLIT)
            count_bar_init(&tb, blockDim.x, &counter);
        else if (M == C_ABAR_PLAIN)
            abar_cuda_init(&pb, blockDim.x);
        else
            abar_cuda_cbar_init(&ab, blockDim.x, abar_count_completion, &counter);
    }
    __syncthreads();
    for (int i = 0; i < iters; i++) {
        if (M == C_LIBCU)
            lb->arrive_and_wait();
        else if (M == C_ABAR_PTR)
            abar_cuda_cbar_arrive_and_wait(&ab);
        else if (M == C_ABAR_TYPED)
            count_bar_arrive_and_wait(&tb);
        else if (M == C_ABAR_SPLIT)
            count_bar_wait(&tb, count_bar_arrive(&tb));
        else if (M == C_ABAR_WITH)
            abar_cuda_cbar_arrive_and_wait_with(&ab, abar_count_completion, &counter);
        else
            abar_cuda_arrive_and_wait(&pb);
    }
    __syncthreads();
    if (M != C_ABAR_PLAIN && threadIdx.x == 0 && counter != iters)
        *sink = counter + 1;   /* recorded: checked by the host */
}

/* Designs of the completion barrier, each written out with the completion
 * (counter++) inlined, to see where the time over the plain barrier goes:
 *   0 per-thread mbarrier.arrive.noComplete, last arriver by pending count,
 *     membar.cta (__threadfence_block), completion, release arrival
 *   1 the same with fence.acq_rel.cta
 *   2 one atom.acq_rel.cta.add counts down a word phase:12 | pending:20, the
 *     thread that takes it to zero completes and releases on a count-1
 *     mbarrier; the token's phase comes from the atom
 *   3 per-thread atom.acq_rel.cta.add on a counter, the phase in a second
 *     word (read before arriving), release on a count-1 mbarrier
 *     (abar_cuda_cbar's design; bench/labs/cbarlab.cu has its variants)
 *   4 design 2 with the completion through a generic pointer, as a
 *     completion function receives it (counter++ on an int *)
 *   5 design 1 without the fence (unsafe: shows the fence's cost)
 *   6 design 1 without the completion's work (shows counter++'s cost) */
#define D_N 7
static const char *dname[D_N] = {
    "mbarrier noComplete per thread + pending count, membar.cta",
    "mbarrier noComplete per thread + pending count, fence.acq_rel.cta",
    "countdown word phase|pending, one atom.acq_rel + count-1 mbarrier",
    "atomic counter + phase word + count-1 mbarrier (abar_cuda_cbar's design)",
    "design 2, completion through a generic int *", "design 1 without the fence (unsafe)",
    "design 1 without counter++",
};

__device__ __forceinline__ unsigned bench_atom_add_acq_rel(unsigned *p, unsigned v)
{
    unsigned old;
    asm volatile("atom.acq_rel.cta.shared::cta.add.u32 %0, [%1], %2;"
                 : "=r"(old) : "r"(abar_cuda__smem(p)), "r"(v) : "memory");
    return old;
}

template <int D>
__global__ void k_cdesign(int iters, int *sink)
{
    __shared__ unsigned long long mb, rel;
    __shared__ unsigned phase, cnt;
    __shared__ int counter;
    const unsigned T = blockDim.x;
    if (threadIdx.x == 0) {
        counter = 0;
        phase = 0;
        cnt = (D == 2 || D == 4) ? T : 0;
        abar_cuda_ptx_mbarrier_init(abar_cuda__smem(&mb), T + 1);
        abar_cuda_ptx_mbarrier_init(abar_cuda__smem(&rel), 1);
    }
    __syncthreads();
    const unsigned addr = abar_cuda__smem(&mb), raddr = abar_cuda__smem(&rel);
    int *volatile cp = &counter;   /* design 4: the compiler cannot see it is shared */
    int *gp = cp;
    for (int i = 0; i < iters; i++) {
        if (D == 2 || D == 4) {
            unsigned old = bench_atom_add_acq_rel(&cnt, 0u - 1u);
            unsigned ph = old >> 20;
            if ((old & 0xFFFFFu) == 1) {
                if (D == 2) counter++; else (*gp)++;
                *(volatile unsigned *)&cnt = ((ph + 1) << 20) | T;
                (void)abar_cuda_ptx_mbarrier_arrive1(raddr);
            }
            abar_cuda_ptx_mbarrier_wait_parity_loop(raddr, ph & 1);
        } else if (D == 3) {
            unsigned ph = *(volatile unsigned *)&phase;
            unsigned old = bench_atom_add_acq_rel(&cnt, 1);
            if (old + 1 == T) {
                cnt = 0;   /* no arrival of the next phase before the release below */
                *(volatile unsigned *)&phase = ph + 1;
                counter++;
                (void)abar_cuda_ptx_mbarrier_arrive1(raddr);
            }
            abar_cuda_ptx_mbarrier_wait_parity_loop(raddr, ph & 1);
        } else {
            unsigned ph = *(volatile unsigned *)&phase;
            unsigned long long st = abar_cuda_ptx_mbarrier_arrive_nocomplete(addr, 1);
            if (abar_cuda_ptx_mbarrier_pending_count(st) == 2) {
                if (D == 0)
                    __threadfence_block();
                else if (D != 5)
                    abar_cuda_ptx_fence_acq_rel_cta();
                *(volatile unsigned *)&phase = ph + 1;
                if (D != 6)
                    counter++;
                (void)abar_cuda_ptx_mbarrier_arrive1(addr);
            }
            abar_cuda_ptx_mbarrier_wait_parity_loop(addr, ph & 1);
        }
    }
    __syncthreads();
    if (D != 6 && threadIdx.x == 0 && counter != iters)
        *sink = counter + 1;
}

static void bench_completion(void)
{
    printf("\n## 2. One block with a completion function (a counter increment): ns per phase\n\n");
    void (*ks[C_N])(int, int *) = {k_completion<0>, k_completion<1>, k_completion<2>, k_completion<3>,
                                   k_completion<4>, k_completion<5>};
    printf("| method |");
    for (int t : threads_list) printf(" %d |", t);
    printf("\n|---|");
    for (int i = 0; i < NT; i++) printf("---:|");
    printf("\n");
    double res[C_N][NT];
    CK(cudaMemset(g_sink, 0, sizeof(int)));
    for (int m = 0; m < C_N; m++) {
        printf("| %s |", cname[m]);
        for (int ti = 0; ti < NT; ti++) {
            int T = threads_list[ti];
            int it = ITERS / 4;
            double ms = time_best([&] { ks[m]<<<1, T>>>(it, g_sink); });
            res[m][ti] = ms * 1e6 / it;
            printf(" %.1f |", res[m][ti]);
        }
        printf("\n");
    }
    const int rows[3] = {C_ABAR_PTR, C_ABAR_TYPED, C_ABAR_WITH};
    const char *rn[3] = {"cbar at init, through a pointer", "cbar at init, typed (direct)",
                         "cbar at the call"};
    for (int r = 0; r < 3; r++) {
        printf("| **%s / cuda::barrier + F** |", rn[r]);
        for (int ti = 0; ti < NT; ti++) printf(" %.2f |", res[rows[r]][ti] / res[C_LIBCU][ti]);
        printf("\n");
    }
    printf("| cbar at init, typed, minus plain abar bar (ns) |");
    for (int ti = 0; ti < NT; ti++) printf(" %.1f |", res[C_ABAR_TYPED][ti] - res[C_ABAR_PLAIN][ti]);
    int sink;
    CK(cudaMemcpy(&sink, g_sink, sizeof sink, cudaMemcpyDeviceToHost));
    printf("\n\ncompletion counts %s\n", sink == 0 ? "all correct" : "WRONG");

    printf("\n### 2a. Completion barrier designs, completion inlined: ns per phase\n\n");
    void (*ds[D_N])(int, int *) = {k_cdesign<0>, k_cdesign<1>, k_cdesign<2>, k_cdesign<3>,
                                   k_cdesign<4>, k_cdesign<5>, k_cdesign<6>};
    printf("| design |");
    for (int t : threads_list) printf(" %d |", t);
    printf("\n|---|");
    for (int i = 0; i < NT; i++) printf("---:|");
    printf("\n");
    CK(cudaMemset(g_sink, 0, sizeof(int)));
    for (int d = 0; d < D_N; d++) {
        printf("| %d. %s |", d, dname[d]);
        for (int ti = 0; ti < NT; ti++) {
            int T = threads_list[ti];
            int it = ITERS / 4;
            double ms = time_best([&] { ds[d]<<<1, T>>>(it, g_sink); });
            printf(" %.1f |", ms * 1e6 / it);
        }
        printf("\n");
    }
    CK(cudaMemcpy(&sink, g_sink, sizeof sink, cudaMemcpyDeviceToHost));
    printf("\ndesign completion counts %s\n", sink == 0 ? "all correct" : "WRONG");
    fflush(stdout);
}

static void bench_completion_gpu(int sms)
{
    printf("\n## 3b. Whole GPU with a completion function: %d blocks of 256 threads, Gphases/s\n\n",
           sms * 4);
    printf("| method | Gphases/s | / cuda::barrier + F |\n|---|---:|---:|\n");
    void (*ks[C_N])(int, int *) = {k_completion<0>, k_completion<1>, k_completion<2>, k_completion<3>,
                                   k_completion<4>, k_completion<5>};
    double g[C_N];
    CK(cudaMemset(g_sink, 0, sizeof(int)));
    for (int m = 0; m < C_N; m++) {
        double ms = time_best([&] { ks[m]<<<sms * 4, 256>>>(ITERS, g_sink); });
        g[m] = (double)sms * 4 * ITERS / (ms * 1e-3) / 1e9;
        printf("| %s | %.2f | %.2f |\n", cname[m], g[m], g[m] / g[C_LIBCU]);
    }
    int sink;
    CK(cudaMemcpy(&sink, g_sink, sizeof sink, cudaMemcpyDeviceToHost));
    printf("\ncompletion counts %s\n", sink == 0 ? "all correct" : "WRONG");
    fflush(stdout);
}

/* ---- 2b. split overlap ---------------------------------------------- */

/* Each iteration: write, synchronize, and K dependent FMAs of independent
 * work; __syncthreads must do the work after the barrier, a split barrier
 * does it between arrive and wait. */
template <int M>
__global__ void k_overlap(int iters, int k, float *sink)
{
    using lbar = cuda::barrier<cuda::thread_scope_block>;
    __shared__ __align__(16) unsigned char lb_storage[sizeof(lbar)];
    lbar &lb = *(lbar *)lb_storage;
    __shared__ abar_cuda_bar_t ab;
    __shared__ float slot[1024];
    if (threadIdx.x == 0) {
        init(&lb, blockDim.x);
        abar_cuda_init(&ab, blockDim.x);
    }
    __syncthreads();
    float x = (float)threadIdx.x, y = 0;
    for (int i = 0; i < iters; i++) {
        slot[threadIdx.x] = x;
        if (M == 0) {
            __syncthreads();
            for (int j = 0; j < k; j++) x = fmaf(x, 0.999f, 1.0f);
        } else if (M == 1) {
            auto t = lb.arrive();
            for (int j = 0; j < k; j++) x = fmaf(x, 0.999f, 1.0f);
            lb.wait(std::move(t));
        } else {
            abar_cuda_token_t t = abar_cuda_arrive(&ab);
            for (int j = 0; j < k; j++) x = fmaf(x, 0.999f, 1.0f);
            abar_cuda_wait(&ab, t);
        }
        y += slot[(threadIdx.x + 1) % blockDim.x];
        if (M == 0) __syncthreads();
        else if (M == 1) lb.arrive_and_wait();
        else abar_cuda_arrive_and_wait(&ab);
    }
    if (x + y == 0.123f)
        *sink = x;
}

static void bench_overlap(void)
{
    printf("\n## 2b. Split overlap: one block of 256 threads, per iteration a write, a barrier with K dependent "
           "FMAs of independent work, a read, a barrier: ns per iteration\n\n");
    printf("| method | K=0 | K=32 | K=128 | K=512 |\n|---|---:|---:|---:|---:|\n");
    const char *names[3] = {"__syncthreads, then the work", "cuda::barrier arrive, work, wait",
                            "abar arrive, work, wait"};
    void (*ks[3])(int, int, float *) = {k_overlap<0>, k_overlap<1>, k_overlap<2>};
    for (int m = 0; m < 3; m++) {
        printf("| %s |", names[m]);
        for (int k : {0, 32, 128, 512}) {
            int it = ITERS / 4;
            double ms = time_best([&] { ks[m]<<<1, 256>>>(it, k, (float *)g_sink); });
            printf(" %.1f |", ms * 1e6 / it);
        }
        printf("\n");
    }
    fflush(stdout);
}

/* ---- 3. whole GPU ------------------------------------------------------ */

static void bench_whole_gpu(int sms)
{
    printf("\n## 3. Whole GPU: %d blocks of 256 threads (4 per SM), each on its own barrier: "
           "Gphases/s (block-phases per second)\n\n", sms * 4);
    printf("| method | Gphases/s |\n|---|---:|\n");
    int ms_list[] = {M_SYNCTHREADS, M_LIBCU_AW, M_PTX, M_ABAR_AW, M_ABAR_SPLIT};
    for (int m : ms_list) {
        double ms = time_best([&] { block_kernels[m]<<<sms * 4, 256>>>(ITERS, g_sink); });
        printf("| %s | %.2f |\n", block_name[m], (double)sms * 4 * ITERS / (ms * 1e-3) / 1e9);
    }
    fflush(stdout);
}

/* ---- 4. producer/consumer bandwidth ------------------------------------ */

__global__ void k_copy(const float4 *in, float4 *out, size_t n4)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += stride)
        out[i] = in[i];
}

/* Seed 002 as written (2 buffers, all threads on all 4 barriers), with
 * cuda::barrier (B = 0) or abar (B = 1); 16-byte accesses.  Chunks of `len`
 * floats, grid-strided over the blocks. */
template <int B>
__global__ void k_seed002(const float4 *in, float4 *out, size_t chunks, int len4)
{
    extern __shared__ float4 buffer[];
    using lbar = cuda::barrier<cuda::thread_scope_block>;
    __shared__ __align__(16) unsigned char lb_storage[4 * sizeof(lbar)];
    lbar *lb = (lbar *)lb_storage;
    __shared__ abar_cuda_bar_t ab[4];
    if (threadIdx.x < 4) {
        if (B == 0)
            init(&lb[threadIdx.x], blockDim.x);
        else
            abar_cuda_init(&ab[threadIdx.x], blockDim.x);
    }
    __syncthreads();
    size_t my = chunks > blockIdx.x ? (chunks - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
    if (threadIdx.x < 32) {
        for (size_t i = 0; i < my; i++) {
            size_t c = blockIdx.x + i * gridDim.x;
            if (B == 0) lb[i % 2].arrive_and_wait(); else abar_cuda_arrive_and_wait(&ab[i % 2]);
            float4 *b = buffer + (i % 2) * len4;
            for (int k = (int)threadIdx.x; k < len4; k += 32)
                b[k] = in[c * len4 + k];
            if (B == 0) (void)lb[2 + i % 2].arrive(); else (void)abar_cuda_arrive(&ab[2 + i % 2]);
        }
    } else {
        if (B == 0) { (void)lb[0].arrive(); (void)lb[1].arrive(); }
        else { (void)abar_cuda_arrive(&ab[0]); (void)abar_cuda_arrive(&ab[1]); }
        for (size_t i = 0; i < my; i++) {
            size_t c = blockIdx.x + i * gridDim.x;
            if (B == 0) lb[2 + i % 2].arrive_and_wait(); else abar_cuda_arrive_and_wait(&ab[2 + i % 2]);
            const float4 *b = buffer + (i % 2) * len4;
            for (int k = (int)threadIdx.x - 32; k < len4; k += (int)blockDim.x - 32)
                out[c * len4 + k] = b[k];
            if (B == 0) (void)lb[i % 2].arrive(); else (void)abar_cuda_arrive(&ab[i % 2]);
        }
    }
}

#define BENCH_STAGES 4

/* The abar ring, one-sided: warp 0 produces, warps 1.. consume.
 *   ASYNC == 0, BULK == 0: the producer loads one slot's data (16-byte loads,
 *     all in flight before the stores), acquires the slot, stores, commits.
 *   ASYNC: the producer warp fills each slot with 16-byte cp.async copies
 *     (sm_80) and commits with abar_cuda_ring_producer_commit_async: the
 *     hardware arrives on the slot's full barrier when the copies land, and
 *     the producer goes on to the next slot at once.
 *   BULK: lane 0 of warp 0 fills each slot with one bulk copy. */
template <int BULK, int ASYNC>
__global__ void k_ring(const float4 *in, float4 *out, size_t chunks, int len4)
{
    extern __shared__ float4 slots[];
    __shared__ abar_cuda_bar_t full[BENCH_STAGES], empty[BENCH_STAGES];
    __shared__ abar_cuda_ring_t ring_s;
    unsigned consumers = blockDim.x - 32;
    if (threadIdx.x == 0)
        abar_cuda_ring_init(&ring_s, full, empty, BENCH_STAGES, BULK ? 1u : 32u, consumers);
    __syncthreads();
    abar_cuda_ring_t ring = ring_s;
    size_t my = chunks > blockIdx.x ? (chunks - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
    if (threadIdx.x < 32) {
        abar_cuda_ring_state_t s = abar_cuda_ring_producer_start();
        if (BULK) {
            if (threadIdx.x == 0)
                for (size_t i = 0; i < my; i++) {
                    size_t c = blockIdx.x + i * gridDim.x;
                    unsigned k = abar_cuda_ring_producer_acquire(&ring, &s);
                    abar_cuda_ring_producer_commit_bulk(&ring, &s, slots + (size_t)k * len4, in + c * len4,
                                                        (unsigned)len4 * 16u);
                }
        } else if (ASYNC) {
            for (size_t i = 0; i < my; i++) {
                size_t c = blockIdx.x + i * gridDim.x;
                unsigned k = abar_cuda_ring_producer_acquire(&ring, &s);
                float4 *b = slots + (size_t)k * len4;
                for (int j = (int)threadIdx.x; j < len4; j += 32)
                    abar_cuda_copy_async_16(b + j, in + c * len4 + j);
                abar_cuda_ring_producer_commit_async(&ring, &s);
            }
        } else {
            for (size_t i = 0; i < my; i++) {
                size_t c = blockIdx.x + i * gridDim.x;
                float4 v[8];
                int n = len4 / 32;   /* len4 is a multiple of 32, at most 256 */
#pragma unroll
                for (int j = 0; j < 8; j++)
                    if (j < n) v[j] = in[c * len4 + j * 32 + threadIdx.x];
                unsigned k = abar_cuda_ring_producer_acquire(&ring, &s);
                float4 *b = slots + (size_t)k * len4;
#pragma unroll
                for (int j = 0; j < 8; j++)
                    if (j < n) b[j * 32 + threadIdx.x] = v[j];
                for (int j = 8; j < n; j++)
                    b[j * 32 + threadIdx.x] = in[c * len4 + j * 32 + threadIdx.x];
                abar_cuda_ring_producer_commit(&ring, &s);
            }
        }
    } else {
        abar_cuda_ring_state_t s = abar_cuda_ring_consumer_start();
        for (size_t i = 0; i < my; i++) {
            size_t c = blockIdx.x + i * gridDim.x;
            unsigned k = abar_cuda_ring_consumer_wait(&ring, &s);
            const float4 *b = slots + (size_t)k * len4;
            for (int j = (int)threadIdx.x - 32; j < len4; j += (int)consumers)
                out[c * len4 + j] = b[j];
            abar_cuda_ring_consumer_release(&ring, &s);
        }
    }
}

static double gbps(size_t n_floats, double ms) { return 2.0 * n_floats * 4 / (ms * 1e-3) / 1e9; }

template <typename K>
static int grid_for(K kernel, int threads, size_t smem, int sms)
{
    if (smem > 48 * 1024)
        CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    int per_sm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem));
    return std::max(1, per_sm) * sms;
}

static void bench_ring(int sms, size_t n)
{
    float *in, *out;
    CK(cudaMalloc(&in, n * sizeof(float)));
    CK(cudaMalloc(&out, n * sizeof(float)));
    CK(cudaMemset(in, 1, n * sizeof(float)));
    size_t n4 = n / 4;
    double plain = 0;
    for (int per_sm : {4, 8, 16, 32}) {
        double ms = time_best([&] { k_copy<<<sms * per_sm, 256>>>((const float4 *)in, (float4 *)out, n4); });
        plain = std::max(plain, gbps(n, ms));
    }
    printf("\n## 4. Producer/consumer copy of %zu MB (GB/s counting bytes read and written; "
           "%% of the plain copy kernel's best, %.0f GB/s)\n\n", n * 4 >> 20, plain);
    printf("| buffer (floats) | seed 002 cuda::barrier | seed 002 abar | abar ring (%d stages, warp producer, "
           "register loads, release arrive) | abar ring, warp producer, cp.async + commit_async (sm_80 path) "
           "| abar ring, bulk-copy producer (sm_90) |\n"
           "|---:|---:|---:|---:|---:|---:|\n", BENCH_STAGES);
    for (int len : {256, 1024, 2048, 4096}) {
        int len4 = len / 4;
        size_t chunks = n / len;
        double r[5];
        {
            size_t sm = 2 * len * sizeof(float);
            int g = grid_for(k_seed002<0>, 256, sm, sms);
            r[0] = gbps(n, time_best([&] { k_seed002<0><<<g, 256, sm>>>((const float4 *)in, (float4 *)out, chunks, len4); }));
            g = grid_for(k_seed002<1>, 256, sm, sms);
            r[1] = gbps(n, time_best([&] { k_seed002<1><<<g, 256, sm>>>((const float4 *)in, (float4 *)out, chunks, len4); }));
        }
        {
            size_t sm = (size_t)BENCH_STAGES * len * sizeof(float);
            int g = grid_for(k_ring<0, 0>, 256, sm, sms);
            r[2] = gbps(n, time_best([&] { k_ring<0, 0><<<g, 256, sm>>>((const float4 *)in, (float4 *)out, chunks, len4); }));
            g = grid_for(k_ring<0, 1>, 256, sm, sms);
            r[3] = gbps(n, time_best([&] { k_ring<0, 1><<<g, 256, sm>>>((const float4 *)in, (float4 *)out, chunks, len4); }));
            g = grid_for(k_ring<1, 0>, 256, sm, sms);
            r[4] = gbps(n, time_best([&] { k_ring<1, 0><<<g, 256, sm>>>((const float4 *)in, (float4 *)out, chunks, len4); }));
        }
        printf("| %d |", len);
        for (int i = 0; i < 5; i++) printf(" %.0f (%.0f%%) |", r[i], 100.0 * r[i] / plain);
        printf("\n");
        fflush(stdout);
    }
    /* the ring's output is checked once, element by element */
    CK(cudaMemset(out, 0, n * sizeof(float)));
    std::vector<float> h(n);
    for (size_t i = 0; i < n; i++) h[i] = (float)(i % 65521);
    CK(cudaMemcpy(in, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    const char *kind[4] = {"", " (bulk)", " (cp.async)", " (cp.async, 256 floats)"};
    for (int bulk = 0; bulk < 4; bulk++) {
        size_t sm = (size_t)BENCH_STAGES * 1024 * sizeof(float);
        if (bulk == 1) k_ring<1, 0><<<sms * 2, 256, sm>>>((const float4 *)in, (float4 *)out, n / 1024, 256);
        else if (bulk == 2) k_ring<0, 1><<<sms * 2, 256, sm>>>((const float4 *)in, (float4 *)out, n / 1024, 256);
        else if (bulk == 3) k_ring<0, 1><<<sms * 2, 256, sm / 4>>>((const float4 *)in, (float4 *)out, n / 256, 64);
        else k_ring<0, 0><<<sms * 2, 256, sm>>>((const float4 *)in, (float4 *)out, n / 1024, 256);
        CK(util_sync(60));
        std::vector<float> o(n);
        CK(cudaMemcpy(o.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost));
        size_t bad = 0;
        for (size_t i = 0; i < n; i++) bad += o[i] != h[i];
        printf("\nring%s output check: %zu of %zu elements wrong\n", kind[bulk], bad, n);
        CK(cudaMemset(out, 0, n * sizeof(float)));
    }
    CK(cudaFree(in));
    CK(cudaFree(out));
    fflush(stdout);
}

/* ---- 5. cluster barriers ----------------------------------------------- */

template <int M>
__global__ void k_cluster(int iters, int *sink)
{
    __shared__ abar_cuda_cluster_bar_t cb;
    cg::cluster_group cluster = cg::this_cluster();
    if (M == 3 && threadIdx.x == 0)
        abar_cuda_cluster_bar_init(&cb, blockDim.x);
    cluster.sync();
    int acc = 0;
    for (int i = 0; i < iters; i++) {
        acc += (int)threadIdx.x ^ i;
        if (M == 0) {
            cluster.sync();
        } else if (M == 1) {
            auto t = cluster.barrier_arrive();
            cluster.barrier_wait(std::move(t));
        } else if (M == 2) {
            abar_cuda_cluster_arrive();
            abar_cuda_cluster_wait();
        } else {
            abar_cuda_cluster_bar_wait(&cb, abar_cuda_cluster_bar_arrive(&cb));
        }
    }
    if (acc == 0x7fffffff)
        *sink = acc;
    abar_cuda_cluster_exit();
}

static void bench_cluster(void)
{
    printf("\n## 5. One cluster of 128-thread blocks, every thread arrives and waits: ns per phase\n\n");
    const char *names[4] = {"cg cluster.sync()", "cg barrier_arrive/barrier_wait",
                            "abar cluster_arrive/cluster_wait (hardware)", "abar cluster_bar (mbarrier, remote arrive)"};
    void (*ks[4])(int, int *) = {k_cluster<0>, k_cluster<1>, k_cluster<2>, k_cluster<3>};
    unsigned sizes[] = {2, 4, 8, 16};
    printf("| method | 2 | 4 | 8 | 16 |\n|---|---:|---:|---:|---:|\n");
    for (int m = 0; m < 4; m++) {
        printf("| %s |", names[m]);
        for (unsigned cs : sizes) {
            int it = ITERS / 2;
            cudaError_t err = cudaSuccess;
            double ms = time_best([&] { err = util_launch_cluster(ks[m], cs, 128, cs, 0, it, g_sink); });
            if (err != cudaSuccess)
                printf(" (%s) |", cudaGetErrorString(err));
            else
                printf(" %.1f |", ms * 1e6 / it);
        }
        printf("\n");
        fflush(stdout);
    }
}

int main(int argc, char **argv)
{
    util_require_gpu(9);
    if (argc > 1 && strcmp(argv[1], "quick") == 0) {
        REPS = 2;
        ITERS = 2000;
    }
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    int clock_khz = 0;
    cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
    printf("# abar_cuda benchmark on %s (%d SMs, %d MHz max), CUDA runtime %d\n", p.name,
           p.multiProcessorCount, clock_khz / 1000, CUDART_VERSION);
    CK(cudaMalloc(&g_sink, sizeof(int)));
    CK(cudaMemset(g_sink, 0, sizeof(int)));
    bench_block();
    bench_completion();
    bench_overlap();
    bench_whole_gpu(p.multiProcessorCount);
    bench_completion_gpu(p.multiProcessorCount);
    bench_ring(p.multiProcessorCount, (size_t)1 << 26);
    bench_cluster();
    return 0;
}
