/*
 * test_abar_cuda.cu - the device layer's GPU tests (sm_90).
 *
 * Every case launches kernels, copies results back and checks each value;
 * a case prints PASS or FAIL with what broke.  A kernel that hangs is a
 * FAIL after a time limit (the program then stops: the GPU is stuck).
 * Ends with "N passed, M failed"; exit 0 only when M is 0.
 *
 *   test_abar_cuda              the normal build's cases
 *   test_abar_cuda_checked      (built with -DABAR_CHECKED) the same cases,
 *                               which must not trap, then each misuse case
 *                               in a child process, which must trap with a
 *                               message naming its rule.
 */
#include <abar_cuda.h>
#include "util.cuh"

#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <string>
#include <vector>

static int g_pass, g_fail;

static void report(const char *name, bool ok, const char *why)
{
    if (ok) {
        g_pass++;
        printf("PASS %s\n", name);
    } else {
        g_fail++;
        printf("FAIL %s: %s\n", name, why);
    }
    fflush(stdout);
}

/* Runs after each launch; a hang or a device error ends the program. */
static bool finish(const char *name)
{
    cudaError_t e = util_sync(20.0);
    if (e == cudaErrorTimeout) {
        report(name, false, "kernel still running after 20 s (hang)");
        printf("%d passed, %d failed\n", g_pass, g_fail + 1);
        fflush(stdout);
        _exit(1);
    }
    if (e != cudaSuccess) {
        char why[256];
        snprintf(why, sizeof why, "device error: %s", cudaGetErrorString(e));
        report(name, false, why);
        printf("%d passed, %d failed\n", g_pass, g_fail);
        fflush(stdout);
        _exit(1);
    }
    return true;
}

template <typename T>
struct dbuf {
    T *d;
    size_t n;
    explicit dbuf(size_t n_) : n(n_)
    {
        CK(cudaMalloc(&d, n * sizeof(T)));
        CK(cudaMemset(d, 0, n * sizeof(T)));
    }
    ~dbuf() { cudaFree(d); }
    std::vector<T> get() const
    {
        std::vector<T> h(n);
        CK(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
        return h;
    }
    void put(const std::vector<T> &h) { CK(cudaMemcpy(d, h.data(), n * sizeof(T), cudaMemcpyHostToDevice)); }
};

/* ---- init ------------------------------------------------------------- */

__global__ void k_init_errors(int *out)
{
    __shared__ abar_cuda_bar_t b;
    __shared__ abar_cuda_cbar_t c;
    if (threadIdx.x == 0) {
        out[0] = abar_cuda_init(&b, 0);
        out[1] = abar_cuda_init(&b, ABAR_CUDA_EXPECTED_MAX + 1);
        out[2] = abar_cuda_init(&b, ABAR_CUDA_EXPECTED_MAX);
        out[3] = abar_cuda_cbar_init(&c, 0, NULL, NULL);
        out[4] = abar_cuda_init(&b, 1);
        abar_cuda_token_t t = abar_cuda_arrive(&b);
        abar_cuda_wait(&b, t);
        out[5] = abar_cuda_test(&b, t);
        out[6] = 1;
    }
}

static void t_init_errors()
{
    dbuf<int> o(8);
    k_init_errors<<<1, 32>>>(o.d);
    finish("init_errors");
    std::vector<int> h = o.get();
    bool ok = h[0] == ABAR_CUDA_EINVAL && h[1] == ABAR_CUDA_EINVAL && h[2] == 0 &&
              h[3] == ABAR_CUDA_EINVAL && h[4] == 0 && h[5] == 0 && h[6] == 1;
    char why[128];
    snprintf(why, sizeof why, "got %d %d %d %d %d %d %d", h[0], h[1], h[2], h[3], h[4], h[5], h[6]);
    report("init_errors", ok, why);
}

/* ---- split arrive/wait: every thread sees every other's write --------- */

/* Each round: write slot[tid] = round*T + tid, arrive, wait, then read the
 * slot of (tid + round) % T.  Two slot arrays by round parity, so a fast
 * thread's next write never races a slow reader. */
__global__ void k_split(int rounds, int *bad, int mode)
{
    extern __shared__ int slot[];     /* 2 * T */
    __shared__ abar_cuda_bar_t b;
    unsigned T = blockDim.x, tid = threadIdx.x;
    if (tid == 0)
        abar_cuda_init(&b, T);
    __syncthreads();
    int errors = 0;
    for (int r = 0; r < rounds; r++) {
        int *s = slot + (r & 1) * T;
        s[tid] = r * (int)T + (int)tid;
        if (mode == 0) {
            abar_cuda_token_t t = abar_cuda_arrive(&b);
            abar_cuda_wait(&b, t);
        } else if (mode == 1) {
            abar_cuda_arrive_and_wait(&b);
        } else if (mode == 2) {
            /* divergent: odd and even lanes arrive in different branches */
            abar_cuda_token_t t;
            if (tid & 1)
                t = abar_cuda_arrive(&b);
            else
                t = abar_cuda_arrive(&b);
            abar_cuda_wait(&b, t);
        } else {
            /* parity wait: arrive, then wait on the parity read before it */
            unsigned p = abar_cuda_current_parity(&b);
            (void)abar_cuda_arrive(&b);
            abar_cuda_wait_parity(&b, p);
        }
        unsigned j = (tid + (unsigned)r) % T;
        if (s[j] != r * (int)T + (int)j)
            errors++;
    }
    bad[blockIdx.x * T + tid] = errors;
}

static void t_split(unsigned T, int mode)
{
    const char *mname[] = {"arrive+wait", "arrive_and_wait", "divergent", "parity"};
    char name[96];
    snprintf(name, sizeof name, "split_%s_T%u", mname[mode], T);
    dbuf<int> bad(T * 4);
    k_split<<<4, T, 2 * T * sizeof(int)>>>(2000, bad.d, mode);
    finish(name);
    std::vector<int> h = bad.get();
    long sum = 0;
    for (int v : h) sum += v;
    char why[96];
    snprintf(why, sizeof why, "%ld stale reads", sum);
    report(name, sum == 0, why);
}

/* ---- arrive_n: one lane per warp arrives for its warp ----------------- */

__global__ void k_arrive_n(int rounds, int *bad)
{
    __shared__ abar_cuda_bar_t b;
    __shared__ int cnt[2];
    unsigned T = blockDim.x, tid = threadIdx.x;
    if (tid == 0) {
        abar_cuda_init(&b, T);
        cnt[0] = cnt[1] = 0;
    }
    __syncthreads();
    int errors = 0;
    for (int r = 0; r < rounds; r++) {
        atomicAdd(&cnt[r & 1], 1);
        __syncwarp();
        abar_cuda_token_t t;
        memset(&t, 0, sizeof t);
        if ((tid & 31) == 0)
            t = abar_cuda_arrive_n(&b, 32);
        t.raw = __shfl_sync(0xffffffffu, t.raw, 0);
#ifdef ABAR_CHECKED
        t.bar = (const void *)__shfl_sync(0xffffffffu, (unsigned long long)t.bar, 0);
        t.phase = __shfl_sync(0xffffffffu, t.phase, 0);
#endif
        abar_cuda_wait(&b, t);
        /* every thread added this round's count before the warp leader arrived */
        if (cnt[r & 1] < (int)T * (r / 2 + 1))
            errors++;
    }
    bad[tid] = errors;
}

static void t_arrive_n()
{
    dbuf<int> bad(256);
    k_arrive_n<<<1, 256>>>(1000, bad.d);
    finish("arrive_n");
    std::vector<int> h = bad.get();
    long sum = 0;
    for (int v : h) sum += v;
    char why[96];
    snprintf(why, sizeof why, "%ld rounds with a missing count", sum);
    report("arrive_n", sum == 0, why);
}

/* ---- test / try_wait ---------------------------------------------------- */

__global__ void k_test(int *out)
{
    __shared__ abar_cuda_bar_t b;
    __shared__ volatile int go;
    unsigned tid = threadIdx.x;
    if (tid == 0) {
        abar_cuda_init(&b, blockDim.x);
        go = 0;
    }
    __syncthreads();
    if (tid < 32) {
        abar_cuda_token_t t = abar_cuda_arrive(&b);
        if (tid == 0) {
            out[0] = abar_cuda_test(&b, t);            /* EBUSY: warp 1 has not arrived */
            out[1] = abar_cuda_try_wait(&b, t, 2000);  /* ETIMEDOUT */
            __threadfence_block();
            go = 1;
        }
        abar_cuda_wait(&b, t);
        if (tid == 0)
            out[2] = abar_cuda_test(&b, t);            /* 0 */
        if (tid == 0)
            out[3] = abar_cuda_try_wait(&b, t, 2000);  /* 0 */
    } else {
        while (!go)
            ;
        abar_cuda_arrive_and_wait(&b);
    }
}

static void t_test()
{
    dbuf<int> o(4);
    k_test<<<1, 64>>>(o.d);
    finish("test_try_wait");
    std::vector<int> h = o.get();
    char why[128];
    snprintf(why, sizeof why, "test %d try_wait %d after %d %d", h[0], h[1], h[2], h[3]);
    report("test_try_wait", h[0] == ABAR_CUDA_EBUSY && h[1] == ABAR_CUDA_ETIMEDOUT && h[2] == 0 && h[3] == 0,
           why);
}

/* ---- an observer waits on the current phase without arriving ---------- */

__global__ void k_observer(int rounds, int *out)
{
    __shared__ abar_cuda_bar_t b;
    __shared__ int val;
    unsigned tid = threadIdx.x;
    if (tid == 0) {
        abar_cuda_init(&b, blockDim.x - 32);
        val = -1;
    }
    __syncthreads();
    int errors = 0;
    for (int r = 0; r < rounds; r++) {
        if (tid < 32) {
            /* warp 0 observes: the phase r completes once warp 1.. wrote val */
            abar_cuda_wait_parity(&b, (unsigned)r & 1);
            if (val < r)
                errors++;
        } else {
            if (tid == 32)
                val = r;
            abar_cuda_arrive_and_wait(&b);
        }
        __syncthreads();
    }
    out[tid] = errors;
}

static void t_observer()
{
    dbuf<int> o(128);
    k_observer<<<1, 128>>>(500, o.d);
    finish("current_parity_observer");
    std::vector<int> h = o.get();
    long sum = 0;
    for (int v : h) sum += v;
    report("current_parity_observer", sum == 0, "observer saw a stale value");
}

/* ---- arrive_and_drop ---------------------------------------------------- */

__global__ void k_drop(int rounds, int *out)
{
    __shared__ abar_cuda_bar_t b;
    __shared__ int cnt[2];
    unsigned T = blockDim.x, tid = threadIdx.x;
    if (tid == 0) {
        abar_cuda_init(&b, T);
        cnt[0] = cnt[1] = 0;
    }
    __syncthreads();
    /* the upper half drops out in round 0 */
    int errors = 0;
    for (int r = 0; r < rounds; r++) {
        atomicAdd(&cnt[r & 1], 1);
        if (r == 0 && tid >= T / 2) {
            abar_cuda_arrive_and_drop(&b);
            break;
        }
        abar_cuda_arrive_and_wait(&b);
        /* after phase r: round r's counter holds every participant's add */
        int expect_min = (r == 0) ? (int)T : ((r & 1) ? (int)(T / 2) * ((r + 1) / 2)
                                                       : (int)T + (int)(T / 2) * (r / 2));
        if (cnt[r & 1] < expect_min)
            errors++;
    }
    out[tid] = errors;
    __syncthreads();
    if (tid == 0)
        out[T] = cnt[0] + cnt[1];
}

static void t_drop()
{
    unsigned T = 256;
    int rounds = 101;
    dbuf<int> o(T + 1);
    k_drop<<<1, T>>>(rounds, o.d);
    finish("arrive_and_drop");
    std::vector<int> h = o.get();
    long sum = 0;
    for (unsigned i = 0; i < T; i++) sum += h[i];
    long total = T + (long)(T / 2) * (rounds - 1);
    char why[128];
    snprintf(why, sizeof why, "%ld bad rounds, total %d want %ld", sum, h[T], total);
    report("arrive_and_drop", sum == 0 && h[T] == total, why);
}

/* ---- completion function (seed 001) ----------------------------------- */

struct psum_ctx {
    int *smem;
    int n;
    int *acc;      /* running sum, in shared memory */
    int *calls;
};

__device__ void psum_completion(void *arg)
{
    psum_ctx *c = (psum_ctx *)arg;
    int s = 0;
    for (int i = 0; i < c->n; i++)
        s += c->smem[i];
    *c->acc += s;
    (*c->calls)++;
}

/* The same completion fixed at declaration (seed 001's form, direct call). */
ABAR_CUDA_CBAR_DEFINE(psum_bar, psum_completion);

/* Each round thread i writes i + round; the completion adds the slots to
 * acc; after the wait every thread checks acc against the closed form.
 * Modes 4 and 5 use the typed barrier (arrive_and_wait, arrive + wait). */
__global__ void k_completion(int rounds, int mode, int *out)
{
    extern __shared__ int smem[];
    __shared__ abar_cuda_cbar_t b;
    __shared__ psum_bar_t tb;
    __shared__ psum_ctx ctx;
    __shared__ int acc, calls;
    int T = (int)blockDim.x, tid = (int)threadIdx.x;
    if (tid == 0) {
        acc = 0;
        calls = 0;
        ctx.smem = smem;
        ctx.n = T;
        ctx.acc = &acc;
        ctx.calls = &calls;
        abar_cuda_cbar_init(&b, (unsigned)T, psum_completion, &ctx);
        psum_bar_init(&tb, (unsigned)T, &ctx);
    }
    __syncthreads();
    int errors = 0;
    long want = 0;
    for (int r = 0; r < rounds; r++) {
        smem[tid] = tid + r;
        if (mode == 0) {
            abar_cuda_token_t t = abar_cuda_cbar_arrive(&b);
            abar_cuda_cbar_wait(&b, t);
        } else if (mode == 1) {
            abar_cuda_cbar_arrive_and_wait(&b);
        } else if (mode == 2) {
            abar_cuda_token_t t;
            if (tid % 3 == 0)
                t = abar_cuda_cbar_arrive(&b);
            else
                t = abar_cuda_cbar_arrive(&b);
            abar_cuda_cbar_wait(&b, t);
        } else if (mode == 3) {
            /* the completion named at the call: direct, inlined */
            abar_cuda_cbar_arrive_and_wait_with(&b, psum_completion, &ctx);
        } else if (mode == 4) {
            psum_bar_arrive_and_wait(&tb);
        } else {
            abar_cuda_token_t t = psum_bar_arrive(&tb);
            psum_bar_wait(&tb, t);
        }
        want += (long)T * (T - 1) / 2 + (long)T * r;
        if (acc != (int)want || calls != 2 * r + 1)
            errors++;
        /* the slots are rewritten next round: everyone must have read acc */
        if (mode >= 4)
            psum_bar_arrive_and_wait(&tb);
        else
            abar_cuda_cbar_arrive_and_wait(&b);
        want += (long)T * (T - 1) / 2 + (long)T * r;
        if (calls != r * 2 + 2)
            errors++;
    }
    out[blockIdx.x * T + tid] = errors;
}

static void t_completion(unsigned T, int mode)
{
    const char *mname[] = {"arrive+wait", "arrive_and_wait", "divergent", "arrive_and_wait_with",
                           "typed_arrive_and_wait", "typed_arrive+wait"};
    char name[96];
    snprintf(name, sizeof name, "completion_%s_T%u", mname[mode], T);
    dbuf<int> o(2 * T);
    k_completion<<<2, T, T * sizeof(int)>>>(300, mode, o.d);
    finish(name);
    std::vector<int> h = o.get();
    long sum = 0;
    for (int v : h) sum += v;
    char why[96];
    snprintf(why, sizeof why, "%ld rounds saw a wrong sum or call count", sum);
    report(name, sum == 0, why);
}

/* completion + drop: half the threads drop; later phases still complete. */
__device__ void count_completion(void *arg) { (*(int *)arg)++; }

ABAR_CUDA_CBAR_DEFINE(count_bar, count_completion);

__global__ void k_cbar_drop(int rounds, int typed, int *out)
{
    __shared__ abar_cuda_cbar_t b;
    __shared__ count_bar_t tb;
    __shared__ int calls;
    unsigned T = blockDim.x, tid = threadIdx.x;
    if (tid == 0) {
        calls = 0;
        abar_cuda_cbar_init(&b, T, count_completion, &calls);
        count_bar_init(&tb, T, &calls);
    }
    __syncthreads();
    int errors = 0;
    for (int r = 0; r < rounds; r++) {
        if (r == 1 && tid % 2) {
            if (typed)
                count_bar_arrive_and_drop(&tb);
            else
                abar_cuda_cbar_arrive_and_drop(&b);
            break;
        }
        if (typed)
            count_bar_arrive_and_wait(&tb);
        else
            abar_cuda_cbar_arrive_and_wait(&b);
        if (calls < r + 1)
            errors++;
    }
    out[tid] = errors;
    __syncthreads();
    if (tid == 0)
        out[T] = calls;
}

static void t_cbar_drop(int typed)
{
    unsigned T = 128;
    const char *name = typed ? "completion_typed_drop" : "completion_drop";
    dbuf<int> o(T + 1);
    k_cbar_drop<<<1, T>>>(50, typed, o.d);
    finish(name);
    std::vector<int> h = o.get();
    long sum = 0;
    for (unsigned i = 0; i < T; i++) sum += h[i];
    char why[96];
    snprintf(why, sizeof why, "%ld bad rounds, %d completions (want 50)", sum, h[T]);
    report(name, sum == 0 && h[T] == 50, why);
}

/* ---- the ring ----------------------------------------------------------- */

#define RING_MAX_STAGES 8

/* Warp 0 produces: slot <- in[chunk]; the other warps consume: out[chunk] <-
 * slot + 1.  bulk: one thread of warp 0 fills slots with the copy engine. */
__global__ void k_ring(const int *in, int *out, int chunks, int len, int stages, int bulk)
{
    extern __shared__ __align__(16) int buf[];   /* stages * len */
    __shared__ abar_cuda_bar_t full[RING_MAX_STAGES], empty[RING_MAX_STAGES];
    __shared__ abar_cuda_ring_t ring_s;
    unsigned tid = threadIdx.x, consumers = blockDim.x - 32;
    if (tid == 0)
        abar_cuda_ring_init(&ring_s, full, empty, (unsigned)stages, bulk == 1 ? 1u : 32u, consumers);
    __syncthreads();
    abar_cuda_ring_t ring = ring_s;
    if (tid < 32) {
        abar_cuda_ring_state_t s = abar_cuda_ring_producer_start();
        for (int c = 0; c < chunks; c++) {
            if (bulk == 1) {
                if (tid == 0) {
                    unsigned i = abar_cuda_ring_producer_acquire(&ring, &s);
                    abar_cuda_ring_producer_commit_bulk(&ring, &s, buf + i * len, in + (size_t)c * len,
                                                        (unsigned)len * sizeof(int));
                }
            } else if (bulk == 2) {   /* cp.async, 4 ints per copy */
                unsigned i = abar_cuda_ring_producer_acquire(&ring, &s);
                for (int k = 4 * (int)tid; k < len; k += 4 * 32)
                    abar_cuda_copy_async_16(buf + i * len + k, in + (size_t)c * len + k);
                abar_cuda_ring_producer_commit_async(&ring, &s);
            } else {
                unsigned i = abar_cuda_ring_producer_acquire(&ring, &s);
                for (int k = (int)tid; k < len; k += 32)
                    buf[i * len + k] = in[(size_t)c * len + k];
                abar_cuda_ring_producer_commit(&ring, &s);
            }
        }
    } else {
        abar_cuda_ring_state_t s = abar_cuda_ring_consumer_start();
        for (int c = 0; c < chunks; c++) {
            unsigned i = abar_cuda_ring_consumer_wait(&ring, &s);
            for (int k = (int)(tid - 32); k < len; k += (int)consumers)
                out[(size_t)c * len + k] = buf[i * len + k] + 1;
            abar_cuda_ring_consumer_release(&ring, &s);
        }
    }
}

static void t_ring(int stages, int len, int bulk)
{
    char name[96];
    const char *kind[3] = {"", "_bulk", "_cp_async"};
    snprintf(name, sizeof name, "ring%s_stages%d_len%d", kind[bulk], stages, len);
    int chunks = 3000;
    size_t n = (size_t)chunks * len;
    std::vector<int> h(n);
    for (size_t i = 0; i < n; i++) h[i] = (int)(i * 2654435761u);
    dbuf<int> in(n), out(n);
    in.put(h);
    k_ring<<<1, 160, stages * len * sizeof(int)>>>(in.d, out.d, chunks, len, stages, bulk);
    finish(name);
    std::vector<int> o = out.get();
    size_t bad = 0, first = n;
    for (size_t i = 0; i < n; i++)
        if (o[i] != h[i] + 1) {
            if (!bad) first = i;
            bad++;
        }
    char why[128];
    snprintf(why, sizeof why, "%zu of %zu elements wrong, first at %zu", bad, n, first);
    report(name, bad == 0, why);
}

/* ---- transaction counts by hand, and a bulk copy ---------------------- */

__global__ void k_tx(const int4 *src, int *out)
{
    __shared__ abar_cuda_bar_t b;
    __shared__ __align__(16) int4 data[256];
    __shared__ int hand[32];
    unsigned tid = threadIdx.x;
    if (tid == 0)
        abar_cuda_init(&b, blockDim.x);
    __syncthreads();
    if (tid == 0)   /* 32*4 bytes will be completed by hand */
        abar_cuda_expect_tx(&b, 32 * sizeof(int));
    __syncthreads();
    abar_cuda_token_t t;
    if (tid == 0) {
        /* one arrival that also expects the copy's bytes */
        t = abar_cuda_arrive_bulk_copy_g2s(&b, data, src, sizeof data);
    } else {
        t = abar_cuda_arrive(&b);
    }
    if (tid >= 32 && tid < 64) {
        hand[tid - 32] = 1000 + (int)tid;
        abar_cuda_complete_tx(&b, sizeof(int));
    }
    abar_cuda_wait(&b, t);
    int errors = 0;
    for (int i = (int)tid; i < 256; i += (int)blockDim.x) {
        int4 v = data[i], w = src[i];
        if (v.x != w.x || v.y != w.y || v.z != w.z || v.w != w.w)
            errors++;
    }
    if (tid < 32 && hand[tid] != 1032 + (int)tid)
        errors++;
    out[tid] = errors;
}

static void t_tx()
{
    std::vector<int> h(1024);
    for (int i = 0; i < 1024; i++) h[i] = i * 7 + 1;
    dbuf<int> src(1024), out(128);
    src.put(h);
    k_tx<<<1, 128>>>((const int4 *)src.d, out.d);
    finish("expect_tx_complete_tx_bulk_copy");
    std::vector<int> o = out.get();
    long sum = 0;
    for (int v : o) sum += v;
    char why[64];
    snprintf(why, sizeof why, "%ld wrong elements", sum);
    report("expect_tx_complete_tx_bulk_copy", sum == 0, why);
}

/* ---- remote arrival in a cluster --------------------------------------- */

/* Each round every block writes its rank and the round into the next
 * block's inbox (map_shared_rank), then arrives remotely on that block's
 * barrier; each block waits on its own barrier (cluster acquire) and checks
 * its inbox.  The inbox is double-buffered by round parity, and a cluster
 * sync each round keeps writers one round ahead at most. */
__global__ void k_remote(int rounds, int *out)
{
    __shared__ abar_cuda_bar_t b;
    __shared__ int inbox[2][2];
    unsigned rank = abar_cuda_cluster_rank(), n = abar_cuda_cluster_size();
    unsigned tid = threadIdx.x;
    if (tid == 0)
        abar_cuda_init(&b, 1);
    abar_cuda_cluster_sync();
    int errors = 0;
    unsigned next = (rank + 1) % n, prev = (rank + n - 1) % n;
    for (int r = 0; r < rounds; r++) {
        if (tid == 0) {
            int *peer = (int *)abar_cuda_map_shared_rank(&inbox[r & 1][0], next);
            peer[0] = (int)rank;
            peer[1] = r;
            abar_cuda_arrive_remote(&b, next, 1);
        }
        abar_cuda_wait_parity_cluster(&b, (unsigned)r & 1);
        if (inbox[r & 1][0] != (int)prev || inbox[r & 1][1] != r)
            errors++;
        abar_cuda_cluster_sync();
    }
    out[blockIdx.x * blockDim.x + tid] = errors;
    abar_cuda_cluster_exit();
}

static void t_remote(unsigned cluster)
{
    char name[64];
    snprintf(name, sizeof name, "remote_arrive_cluster%u", cluster);
    unsigned grid = cluster * 4;
    dbuf<int> o(grid * 64);
    cudaError_t e = util_launch_cluster(k_remote, grid, 64, cluster, 0, 200, o.d);
    if (e != cudaSuccess) {
        report(name, false, cudaGetErrorString(e));
        return;
    }
    finish(name);
    std::vector<int> h = o.get();
    long sum = 0;
    for (int v : h) sum += v;
    char why[64];
    snprintf(why, sizeof why, "%ld stale inbox reads", sum);
    report(name, sum == 0, why);
}

/* ---- local arrive_n and remote arrivals on one barrier ---------------- */

/* Clusters of 2.  Block 0's barrier b expects its T threads (one
 * arrive_n(32) per warp) plus `rn` arrivals from block 1, made by one
 * abar_cuda_arrive_remote(&b, 0, rn) a phase; block 1 first writes the round
 * into block 0's inbox.  Block 0's thread 0 tells block 1 that a phase is
 * done through a remote arrival on block 1's `ack` (expects 1), and block 1
 * makes the next phase's remote arrival only after that.  Every thread of
 * block 0 checks the inbox and the counters of its round, and the warp
 * leaders test their tokens after the phase (the checked build checks them
 * against the shadow, which must count the remote arrivals). */
__global__ void k_remote_mix(int rounds, unsigned rn, int *out)
{
    __shared__ abar_cuda_bar_t b, ack;
    __shared__ int inbox[2], cnt[2];
    unsigned rank = abar_cuda_cluster_rank(), T = blockDim.x, tid = threadIdx.x;
    if (tid == 0) {
        abar_cuda_init(&b, T + rn);
        abar_cuda_init(&ack, 1);
        inbox[0] = inbox[1] = -1;
        cnt[0] = cnt[1] = 0;
    }
    abar_cuda_cluster_sync();
    int errors = 0;
    if (rank == 0) {
        for (int r = 0; r < rounds; r++) {
            atomicAdd(&cnt[r & 1], 1);
            __syncwarp();
            abar_cuda_token_t t;
            memset(&t, 0, sizeof t);
            if ((tid & 31) == 0)
                t = abar_cuda_arrive_n(&b, 32);
            abar_cuda_wait_parity_cluster(&b, (unsigned)r & 1);
            if ((tid & 31) == 0 && abar_cuda_test(&b, t) != 0)
                errors++;
            if (inbox[r & 1] != r || cnt[r & 1] < (int)T * (r / 2 + 1))
                errors++;
            if (tid == 0)
                abar_cuda_arrive_remote(&ack, 1, 1);
        }
    } else if (tid == 0) {
        for (int r = 0; r < rounds; r++) {
            if (r > 0)
                abar_cuda_wait_parity_cluster(&ack, (unsigned)(r - 1) & 1);
            *(volatile int *)abar_cuda_map_shared_rank(&inbox[r & 1], 0) = r;
            abar_cuda_arrive_remote(&b, 0, rn);
        }
        abar_cuda_wait_parity_cluster(&ack, (unsigned)(rounds - 1) & 1);
    }
    out[blockIdx.x * T + tid] = errors;
    abar_cuda_cluster_exit();
}

static void t_remote_mix(unsigned rn)
{
    char name[64];
    snprintf(name, sizeof name, "remote_and_local_arrivals_expected%u", 128 + rn);
    unsigned grid = 2 * 4, T = 128;
    int rounds = 3000;
    dbuf<int> o(grid * T);
    cudaError_t e = util_launch_cluster(k_remote_mix, grid, T, 2u, 0, rounds, rn, o.d);
    if (e != cudaSuccess) {
        report(name, false, cudaGetErrorString(e));
        return;
    }
    finish(name);
    std::vector<int> h = o.get();
    long sum = 0;
    for (int v : h) sum += v;
    char why[96];
    snprintf(why, sizeof why, "%ld stale reads or unfinished tokens over %d phases", sum, rounds);
    report(name, sum == 0, why);
}

/* ---- the cluster barriers (hardware and mbarrier-based) --------------- */

/* Each round every thread writes slot[r&1][tid] = f(rank, r, tid); after the
 * barrier it reads the same slot in block (rank + r) % n through DSMEM. */
__global__ void k_cluster(int rounds, int kind, int *out)
{
    __shared__ int slot[2][256];
    __shared__ abar_cuda_cluster_bar_t cb;
    unsigned rank = abar_cuda_cluster_rank(), n = abar_cuda_cluster_size();
    unsigned tid = threadIdx.x;
    if (tid == 0)
        abar_cuda_cluster_bar_init(&cb, blockDim.x);
    abar_cuda_cluster_sync();
    int errors = 0;
    for (int r = 0; r < rounds; r++) {
        slot[r & 1][tid] = (int)(rank * 100000u + (unsigned)r * 256u + tid);
        if (kind == 0) {
            abar_cuda_cluster_arrive();
            abar_cuda_cluster_wait();
        } else {
            abar_cuda_token_t t = abar_cuda_cluster_bar_arrive(&cb);
            abar_cuda_cluster_bar_wait(&cb, t);
        }
        unsigned peer = (rank + (unsigned)r) % n;
        const int *p = (const int *)abar_cuda_map_shared_rank(&slot[r & 1][0], peer);
        if (p[tid] != (int)(peer * 100000u + (unsigned)r * 256u + tid))
            errors++;
    }
    out[blockIdx.x * blockDim.x + tid] = errors;
    abar_cuda_cluster_exit();
}

static void t_cluster(unsigned cluster, int kind)
{
    char name[64];
    snprintf(name, sizeof name, "cluster_%s_%u", kind ? "mbarrier" : "hw", cluster);
    unsigned grid = cluster * 2;
    dbuf<int> o(grid * 256);
    cudaError_t e = util_launch_cluster(k_cluster, grid, 256, cluster, 0, 500, kind, o.d);
    if (e != cudaSuccess) {
        report(name, false, cudaGetErrorString(e));
        return;
    }
    finish(name);
    std::vector<int> h = o.get();
    long sum = 0;
    for (int v : h) sum += v;
    char why[64];
    snprintf(why, sizeof why, "%ld stale peer reads", sum);
    report(name, sum == 0, why);
}

/* ---- checked build: misuse traps with the rule's name ----------------- */

#ifdef ABAR_CHECKED
__global__ void k_misuse(int which)
{
    __shared__ abar_cuda_bar_t b, other;
    __shared__ abar_cuda_cbar_t cb;
    __shared__ count_bar_t tb;
    __shared__ __align__(16) int buf[16];
    __shared__ int calls;
    unsigned tid = threadIdx.x;
    if (which == 3) {           /* use before init: nobody initializes b */
        if (tid == 0)
            (void)abar_cuda_arrive(&b);
        return;
    }
    if (tid == 0) {
        abar_cuda_init(&b, 2);
        abar_cuda_init(&other, 1);
        abar_cuda_cbar_init(&cb, 2, NULL, NULL);
        calls = 0;
        count_bar_init(&tb, 1, &calls);
    }
    __syncthreads();
    if (tid != 0)
        return;
    switch (which) {
    case 0:                     /* three arrivals in a phase that expects two */
        (void)abar_cuda_arrive(&b);
        (void)abar_cuda_arrive_n(&b, 2);
        break;
    case 1: {                   /* a token two phases old */
        abar_cuda_token_t t = abar_cuda_arrive_n(&b, 2);
        abar_cuda_wait(&b, t);
        abar_cuda_wait(&b, abar_cuda_arrive_n(&b, 2));
        abar_cuda_wait(&b, t);
        break;
    }
    case 2: {                   /* a token of another barrier */
        abar_cuda_token_t t = abar_cuda_arrive(&other);
        abar_cuda_wait(&b, t);
        break;
    }
    case 4:                     /* arrive_n(0) */
        (void)abar_cuda_arrive_n(&b, 0);
        break;
    case 5:                     /* bulk copy of 8 bytes */
        abar_cuda_bulk_copy_g2s(buf, buf, 8, &b);
        break;
    case 6:                     /* completion barrier: more arrivals than expected */
        (void)abar_cuda_cbar_arrive_n(&cb, 3);
        break;
    case 7: {                   /* typed completion barrier: a token two phases old */
        abar_cuda_token_t t = count_bar_arrive(&tb);
        count_bar_wait(&tb, t);
        count_bar_wait(&tb, count_bar_arrive(&tb));
        count_bar_wait(&tb, t);
        break;
    }
    case 8: {                   /* completion barrier: a token of another barrier */
        abar_cuda_token_t t = count_bar_arrive(&tb);
        abar_cuda_cbar_wait(&cb, t);
        break;
    }
    case 9:                     /* typed completion barrier: arrive_n(0) */
        (void)count_bar_arrive_n(&tb, 0);
        break;
    case 10:                    /* remote arrivals (rank 0: this block): three where two are expected */
        abar_cuda_arrive_remote(&b, 0, 1);
        abar_cuda_arrive_remote(&b, 0, 2);
        break;
    }
}

static const char *misuse_rule[] = {
    "more arrivals in a phase than expected",
    "token two or more phases old",
    "token of another barrier",
    "used before its init was published",
    "arrival count must be 1",
    "bulk copy size must be",
    "more arrivals in a phase than expected",
    "token two or more phases old",
    "token of another barrier",
    "arrival count must be 1",
    "more arrivals in a phase than expected",
};
static const char *misuse_name[] = {
    "checked_extra_arrival", "checked_old_token", "checked_foreign_token", "checked_use_before_init",
    "checked_arrive_n_zero", "checked_bulk_misaligned", "checked_completion_extra_arrival",
    "checked_typed_completion_old_token", "checked_completion_foreign_token",
    "checked_typed_completion_arrive_n_zero", "checked_remote_extra_arrival",
};
#define N_MISUSE 11

static int run_misuse_child(int which)
{
    /* the trap message also goes to host-mapped memory, readable after the
     * context is lost even if the device printf buffer is not flushed */
    char *msg;
    CK(cudaHostAlloc(&msg, ABAR_CUDA_MSG_LEN, cudaHostAllocMapped));
    memset(msg, 0, ABAR_CUDA_MSG_LEN);
    char *dmsg;
    CK(cudaHostGetDevicePointer(&dmsg, msg, 0));
    CK(cudaMemcpyToSymbol(abar_cuda_checked_msg, &dmsg, sizeof dmsg));
    k_misuse<<<1, 64>>>(which);
    cudaError_t e = util_sync(10.0);
    printf("child result: %s; mapped message: %s\n", cudaGetErrorString(e), msg);
    fflush(stdout);
    return e == cudaSuccess ? 0 : 3;
}

static void t_misuse(const char *self, int which)
{
    std::string cmd = std::string(self) + " --misuse " + std::to_string(which) + " 2>&1";
    FILE *p = popen(cmd.c_str(), "r");
    std::string outp;
    char line[512];
    while (p && fgets(line, sizeof line, p))
        outp += line;
    int st = p ? pclose(p) : -1;
    bool trapped = st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 3;
    bool named = outp.find(misuse_rule[which]) != std::string::npos;
    char why[700];
    snprintf(why, sizeof why, "trapped=%d message-names-rule=%d; child said: %.500s", trapped, named,
             outp.c_str());
    if (trapped && named) {
        /* show what the child printed: the device printf and the mapped copy */
        std::string first = outp.substr(0, outp.find('\n'));
        snprintf(why, sizeof why, "%s [%s]", misuse_name[which], first.c_str());
        report(why, true, "");
    } else {
        report(misuse_name[which], false, why);
    }
}
#endif

int main(int argc, char **argv)
{
#ifdef ABAR_CHECKED
    if (argc == 3 && strcmp(argv[1], "--misuse") == 0)
        return run_misuse_child(atoi(argv[2]));
#else
    (void)argc;
#endif
    util_require_gpu(9);
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
#ifdef ABAR_CHECKED
    printf("# abar_cuda tests (checked build) on %s\n", p.name);
#else
    printf("# abar_cuda tests on %s\n", p.name);
#endif
    t_init_errors();
    for (unsigned T : {32u, 96u, 256u, 1024u})
        for (int mode = 0; mode < 4; mode++)
            t_split(T, mode);
    t_arrive_n();
    t_test();
    t_observer();
    t_drop();
    for (unsigned T : {32u, 128u, 1024u})
        for (int mode = 0; mode < 6; mode++)
            t_completion(T, mode);
    t_cbar_drop(0);
    t_cbar_drop(1);
    for (int stages : {1, 2, 4})
        for (int len : {256, 1024})
            for (int bulk = 0; bulk < 3; bulk++)
                t_ring(stages, len, bulk);
    t_tx();
    for (unsigned c : {2u, 4u, 8u})
        t_remote(c);
    t_remote_mix(1);
    t_remote_mix(3);
    for (unsigned c : {2u, 4u, 8u, 16u})
        for (int kind = 0; kind < 2; kind++)
            t_cluster(c, kind);
#ifdef ABAR_CHECKED
    for (int w = 0; w < N_MISUSE; w++)
        t_misuse(argv[0], w);
#else
    (void)argv;
#endif
    printf("%d passed, %d failed\n", g_pass, g_fail);
    return g_fail ? 1 : 0;
}
