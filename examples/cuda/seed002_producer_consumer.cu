/*
 * seed002_producer_consumer.cu - seed 002 (spatial partitioning, warp
 * specialization) with abar_cuda.h, as the seed writes it: two buffers,
 * ready[2] and filled[2], every thread of the block participating in all
 * four barriers.  Warp 0 produces (buffer <- 2 * in), the other warps
 * consume (out <- buffer + 1).  The host checks every element.
 */
#include <abar_cuda.h>
#include "util.cuh"
#include <vector>

__device__ void producer(abar_cuda_bar_t ready[], abar_cuda_bar_t filled[], float *buffer, const float *in,
                         int N, int buffer_len)
{
    for (int i = 0; i < (N / buffer_len); ++i) {
        abar_cuda_arrive_and_wait(&ready[i % 2]);   /* wait for buffer_(i%2) to be ready to be filled */
        float *b = buffer + (i % 2) * buffer_len;
        for (int k = (int)threadIdx.x; k < buffer_len; k += 32)
            b[k] = 2.0f * in[i * buffer_len + k];   /* produce, i.e. fill in, buffer_(i%2) */
        (void)abar_cuda_arrive(&filled[i % 2]);    /* buffer_(i%2) is filled */
    }
}

__device__ void consumer(abar_cuda_bar_t ready[], abar_cuda_bar_t filled[], float *buffer, float *out,
                         int N, int buffer_len)
{
    (void)abar_cuda_arrive(&ready[0]);             /* buffer_0 is ready for initial fill */
    (void)abar_cuda_arrive(&ready[1]);             /* buffer_1 is ready for initial fill */
    for (int i = 0; i < (N / buffer_len); ++i) {
        abar_cuda_arrive_and_wait(&filled[i % 2]);  /* wait for buffer_(i%2) to be filled */
        const float *b = buffer + (i % 2) * buffer_len;
        for (int k = (int)threadIdx.x - 32; k < buffer_len; k += (int)blockDim.x - 32)
            out[i * buffer_len + k] = b[k] + 1.0f;  /* consume buffer_(i%2) */
        (void)abar_cuda_arrive(&ready[i % 2]);     /* buffer_(i%2) is ready to be re-filled */
    }
}

/* N is the total number of floats in in and out (per block). */
__global__ void producer_consumer_pattern(int N, int buffer_len, const float *in, float *out)
{
    extern __shared__ float buffer[];              /* 2 * buffer_len */
    __shared__ abar_cuda_bar_t bar[4];             /* ready[0..1], filled[0..1] */
    in += (size_t)blockIdx.x * N;
    out += (size_t)blockIdx.x * N;
    if (threadIdx.x < 4)
        abar_cuda_init(bar + threadIdx.x, blockDim.x);
    __syncthreads();
    if (threadIdx.x < warpSize)
        producer(bar, bar + 2, buffer, in, N, buffer_len);
    else
        consumer(bar, bar + 2, buffer, out, N, buffer_len);
}

int main(void)
{
    util_require_gpu(8);
    const int blocks = 16, N = 1 << 16, len = 1024;
    size_t total = (size_t)blocks * N;
    std::vector<float> h(total);
    for (size_t i = 0; i < total; i++) h[i] = (float)(i % 100003) * 0.25f;
    float *in, *out;
    CK(cudaMalloc(&in, total * sizeof(float)));
    CK(cudaMalloc(&out, total * sizeof(float)));
    CK(cudaMemcpy(in, h.data(), total * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemset(out, 0, total * sizeof(float)));
    producer_consumer_pattern<<<blocks, 256, 2 * len * sizeof(float)>>>(N, len, in, out);
    CK(util_sync(20.0));
    std::vector<float> o(total);
    CK(cudaMemcpy(o.data(), out, total * sizeof(float), cudaMemcpyDeviceToHost));
    size_t bad = 0;
    for (size_t i = 0; i < total; i++)
        if (o[i] != 2.0f * h[i] + 1.0f) {
            if (bad < 5)
                printf("mismatch at %zu: %g want %g\n", i, o[i], 2.0f * h[i] + 1.0f);
            bad++;
        }
    printf("seed002_producer_consumer: %s (%zu elements checked, %zu wrong)\n", bad ? "FAIL" : "OK", total,
           bad);
    return bad ? 1 : 0;
}
