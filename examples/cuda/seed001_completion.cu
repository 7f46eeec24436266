/*
 * seed001_completion.cu - seed 001 (completion function) with abar_cuda.h.
 *
 * psum: each iteration every thread stores data[i + tid] + *acc into shared
 * memory and arrives; the completion, run once per phase by the last
 * arriver before anyone is released, sums the 128 slots into *acc.  Every
 * thread records the acc it sees after each wait; the host checks each one.
 * Arithmetic is modulo 2^32 (unsigned), exactly as on the host.
 *
 * Run twice: with abar_cuda_cbar_init(&bar, n, completion_fn, &args) (the
 * completion called through a pointer) and with a barrier type declared by
 * ABAR_CUDA_CBAR_DEFINE (the completion fixed at declaration, called
 * directly: the fast form of the seed).
 */
#include <abar_cuda.h>
#include "util.cuh"
#include <vector>

#define BLOCK_SIZE 128

struct psum_args {
    unsigned *smem;
    unsigned *acc;
};

__device__ void completion_fn(void *p)
{
    psum_args *a = (psum_args *)p;
    unsigned sum = 0;
    for (int i = 0; i < BLOCK_SIZE; ++i)
        sum += a->smem[i];
    *a->acc += sum;
}

/* psum_bar_t: a completion barrier whose completion is completion_fn. */
ABAR_CUDA_CBAR_DEFINE(psum_bar, completion_fn);

__global__ void psum(const unsigned *data, int n, unsigned *acc, unsigned *seen)
{
    __shared__ unsigned smem[BLOCK_SIZE];
    __shared__ abar_cuda_cbar_t bar;
    __shared__ psum_args args;
    unsigned tid = threadIdx.x;
    if (tid == 0) {
        args.smem = smem;
        args.acc = acc;
        abar_cuda_cbar_init(&bar, blockDim.x, completion_fn, &args);
    }
    __syncthreads();

    for (int i = 0; i < n; i += BLOCK_SIZE) {
        smem[tid] = data[i + tid] + *acc;
        abar_cuda_token_t t = abar_cuda_cbar_arrive(&bar);
        /* independent computation could go here */
        abar_cuda_cbar_wait(&bar, t);
        /* the completion's write of *acc is visible to every released thread */
        seen[(i / BLOCK_SIZE) * BLOCK_SIZE + tid] = *acc;
        /* shared memory is reused next iteration: acc must be read by all
         * before the next completion changes it */
        abar_cuda_cbar_arrive_and_wait(&bar);
    }
}

__global__ void psum_typed(const unsigned *data, int n, unsigned *acc, unsigned *seen)
{
    __shared__ unsigned smem[BLOCK_SIZE];
    __shared__ psum_bar_t bar;
    __shared__ psum_args args;
    unsigned tid = threadIdx.x;
    if (tid == 0) {
        args.smem = smem;
        args.acc = acc;
        psum_bar_init(&bar, blockDim.x, &args);
    }
    __syncthreads();

    for (int i = 0; i < n; i += BLOCK_SIZE) {
        smem[tid] = data[i + tid] + *acc;
        abar_cuda_token_t t = psum_bar_arrive(&bar);
        abar_cuda_cbar_wait(psum_bar_cbar(&bar), t);   /* the same as psum_bar_wait */
        seen[(i / BLOCK_SIZE) * BLOCK_SIZE + tid] = *acc;
        psum_bar_arrive_and_wait(&bar);
    }
}

int main(void)
{
    util_require_gpu(8);
    const int n = BLOCK_SIZE * 64;
    std::vector<unsigned> h(n);
    for (int i = 0; i < n; i++) h[i] = (unsigned)(i * 2654435761u) >> 7;
    unsigned *d, *acc, *seen;
    CK(cudaMalloc(&d, sizeof(unsigned) * n));
    CK(cudaMalloc(&acc, sizeof(unsigned)));
    CK(cudaMalloc(&seen, sizeof(unsigned) * n));
    CK(cudaMemcpy(d, h.data(), sizeof(unsigned) * n, cudaMemcpyHostToDevice));
    int bad_total = 0;
    for (int typed = 0; typed < 2; typed++) {
        CK(cudaMemset(acc, 0, sizeof(unsigned)));
        (typed ? psum_typed : psum)<<<1, BLOCK_SIZE>>>(d, n, acc, seen);
        CK(util_sync(20.0));
        std::vector<unsigned> hs(n);
        unsigned hacc;
        CK(cudaMemcpy(hs.data(), seen, sizeof(unsigned) * n, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(&hacc, acc, sizeof(unsigned), cudaMemcpyDeviceToHost));
        /* the second barrier of each iteration runs the completion again on the
         * same slots: acc_after = acc + 2 * S, with S = sum(data + acc) */
        unsigned a = 0;
        int bad = 0;
        for (int i = 0; i < n; i += BLOCK_SIZE) {
            unsigned s = 0;
            for (int j = 0; j < BLOCK_SIZE; j++)
                s += h[i + j] + a;
            unsigned after_first = a + s;
            for (int j = 0; j < BLOCK_SIZE; j++)
                if (hs[i + j] != after_first) {
                    if (bad < 5)
                        printf("mismatch at iteration %d thread %d: saw %u want %u\n", i / BLOCK_SIZE, j,
                               hs[i + j], after_first);
                    bad++;
                }
            a = after_first + s;
        }
        if (hacc != a) {
            printf("final acc %u want %u\n", hacc, a);
            bad++;
        }
        printf("seed001_completion (%s): %s (%d elements checked, %d wrong)\n",
               typed ? "ABAR_CUDA_CBAR_DEFINE, direct call" : "abar_cuda_cbar_init, call through a pointer",
               bad ? "FAIL" : "OK", n + 1, bad);
        bad_total += bad;
    }
    return bad_total ? 1 : 0;
}
