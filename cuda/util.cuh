/* util.cuh - host helpers shared by the CUDA tests, examples and benchmark. */
#ifndef ABAR_CUDA_UTIL_CUH
#define ABAR_CUDA_UTIL_CUH

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CK(call)                                                                    \
    do {                                                                            \
        cudaError_t e_ = (call);                                                    \
        if (e_ != cudaSuccess) {                                                    \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,           \
                    cudaGetErrorString(e_));                                        \
            exit(2);                                                                \
        }                                                                           \
    } while (0)

/* Exit code 77 and a clear line when no GPU can run the program: callers
 * (CTest, scripts) count it as skipped, never as passed. */
static inline void util_require_gpu(int major)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        printf("SKIP: no CUDA device (this program needs a GPU; nothing was tested)\n");
        exit(77);
    }
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    if (p.major < major) {
        printf("SKIP: device %s is sm_%d%d, this program needs sm_%d0 (nothing was tested)\n",
               p.name, p.major, p.minor, major);
        exit(77);
    }
}

static inline double util_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Waits for the device with a time limit: a hung kernel becomes a named
 * failure, not a stuck run.  Returns the error, or cudaErrorTimeout. */
static inline cudaError_t util_sync(double limit_s)
{
    double t0 = util_now();
    for (;;) {
        cudaError_t e = cudaStreamQuery(0);
        if (e != cudaErrorNotReady)
            return e == cudaSuccess ? cudaDeviceSynchronize() : e;
        if (util_now() - t0 > limit_s)
            return cudaErrorTimeout;
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
}

/* Launches kernel on grid x block with a cluster of `cluster` blocks. */
template <typename... Args>
static inline cudaError_t util_launch_cluster(void (*kernel)(Args...), unsigned grid, unsigned block,
                                              unsigned cluster, size_t smem, Args... args)
{
    if (cluster > 8)
        CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    if (smem > 48 * 1024)
        CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(block);
    cfg.dynamicSmemBytes = smem;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = cluster;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    return cudaLaunchKernelEx(&cfg, kernel, args...);
}

#endif
