/*
 * seed000_split_arrive_wait.cu - seed 000 (temporal splitting, five stages)
 * with abar_cuda.h: arrive, independent work, wait.
 *
 * Each iteration every thread writes its slot (code before arrive), arrives,
 * computes on its own data (between arrive and wait), waits, then reads its
 * neighbour's slot (code after wait).  The host checks every output.
 */
#include <abar_cuda.h>
#include "util.cuh"
#include <vector>

__device__ float compute(float *data, int curr_iteration)
{
    /* independent work: touches only this thread's own element */
    float x = data[threadIdx.x];
    for (int k = 0; k < 8; k++)
        x = x * 0.5f + (float)(curr_iteration + k);
    data[threadIdx.x] = x;
    return x;
}

__global__ void split_arrive_wait(int iteration_count, float *data, int *slots_out)
{
    __shared__ abar_cuda_bar_t bar;
    extern __shared__ int slot[];   /* two rounds' slots, by parity */
    unsigned T = blockDim.x, tid = threadIdx.x;
    if (tid == 0)
        abar_cuda_init(&bar, T);    /* expected arrival count: the block */
    __syncthreads();                /* publishes the init */

    int seen = 0;
    for (int curr_iter = 0; curr_iter < iteration_count; ++curr_iter) {
        slot[(curr_iter & 1) * T + tid] = curr_iter * 1000 + (int)tid;   /* code before arrive */
        abar_cuda_token_t token = abar_cuda_arrive(&bar);                 /* does not block */
        compute(data + blockIdx.x * T, curr_iter);                        /* hides the latency */
        abar_cuda_wait(&bar, token);                                      /* everyone has arrived */
        seen += slot[(curr_iter & 1) * T + (tid + 1) % T];                /* code after wait */
    }
    slots_out[blockIdx.x * T + tid] = seen;
}

int main(void)
{
    util_require_gpu(8);
    const int T = 256, B = 8, iters = 1000;
    std::vector<float> h(B * T);
    for (int i = 0; i < B * T; i++) h[i] = (float)i;
    float *d;
    int *o;
    CK(cudaMalloc(&d, sizeof(float) * B * T));
    CK(cudaMalloc(&o, sizeof(int) * B * T));
    CK(cudaMemcpy(d, h.data(), sizeof(float) * B * T, cudaMemcpyHostToDevice));
    split_arrive_wait<<<B, T, 2 * T * sizeof(int)>>>(iters, d, o);
    CK(util_sync(20.0));
    std::vector<float> hd(B * T);
    std::vector<int> ho(B * T);
    CK(cudaMemcpy(hd.data(), d, sizeof(float) * B * T, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(ho.data(), o, sizeof(int) * B * T, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            float x = h[b * T + t];
            int seen = 0;
            for (int it = 0; it < iters; it++) {
                for (int k = 0; k < 8; k++)
                    x = x * 0.5f + (float)(it + k);
                seen += it * 1000 + (t + 1) % T;
            }
            if (hd[b * T + t] != x || ho[b * T + t] != seen) {
                if (bad < 5)
                    printf("mismatch at block %d thread %d: data %g want %g, seen %d want %d\n", b, t,
                           hd[b * T + t], x, ho[b * T + t], seen);
                bad++;
            }
        }
    printf("seed000_split_arrive_wait: %s (%d elements checked, %d wrong)\n", bad ? "FAIL" : "OK",
           2 * B * T, bad);
    return bad ? 1 : 0;
}
