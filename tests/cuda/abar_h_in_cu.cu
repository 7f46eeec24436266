/* abar_h_in_cu.cu - compile check: the host API's header in a CUDA file,
 * next to the device header, for sm_80 and sm_90a.  Built in CI; not run. */
#include <abar.h>
#include <abar_cuda.h>

__global__ void abar_h_in_cu_kernel(unsigned *out)
{
    __shared__ abar_cuda_bar_t b;
    if (threadIdx.x == 0)
        abar_cuda_init(&b, blockDim.x);
    __syncthreads();
    abar_cuda_arrive_and_wait(&b);
    out[threadIdx.x] = ABAR_EXPECTED_MAX == ABAR_CUDA_EXPECTED_MAX;
}

/* host code in the same translation unit uses the host API */
int abar_h_in_cu_host(void)
{
    abar_t b;
    abar_attr_t attr = {NULL, NULL, ABAR_WAIT_SPIN};
    return (int)sizeof(b) + (int)sizeof(abar_token_t) + (int)attr.flags;
}
