/*
 * seed004_cluster.cu - seed 004 (cluster barrier_arrive / barrier_wait) with
 * abar_cuda.h (sm_90): each block initializes its shared array, arrives on
 * the cluster barrier, does local work, maps the next block's array, waits,
 * then consumes the peer's data through distributed shared memory, and
 * leaves with the cluster-safe exit.  The host checks every element.
 */
#include <abar_cuda.h>
#include "util.cuh"
#include <vector>

#define ARRAY 1024

__device__ void init_shared_data(int *data)
{
    unsigned rank = abar_cuda_cluster_rank();
    for (int i = (int)threadIdx.x; i < ARRAY; i += (int)blockDim.x)
        data[i] = (int)(blockIdx.x * 100000u + rank * 10000u) + i;
}

__device__ int local_processing(void)
{
    int x = (int)threadIdx.x;
    for (int k = 0; k < 64; k++)
        x = x * 3 + k;
    return x;
}

__device__ void process_shared_data(const int *dsmem, int local, int *out)
{
    for (int i = (int)threadIdx.x; i < ARRAY; i += (int)blockDim.x)
        out[blockIdx.x * ARRAY + i] = dsmem[i] + (i == (int)threadIdx.x ? local : 0);
}

__global__ void cluster_kernel(int *out)
{
    extern __shared__ int array[];
    init_shared_data(&array[0]);                /* this block's shared state */
    abar_cuda_cluster_arrive();                 /* this block is running and its data is there */
    int local = local_processing();             /* hides the synchronization latency */
    unsigned next = (abar_cuda_cluster_rank() + 1) % abar_cuda_cluster_size();
    const int *dsmem = (const int *)abar_cuda_map_shared_rank(&array[0], next);
    abar_cuda_cluster_wait();                   /* every block's data is initialized */
    process_shared_data(dsmem, local, out);     /* distributed shared memory */
    abar_cuda_cluster_exit();                   /* no block leaves while a peer reads it */
}

int main(void)
{
    util_require_gpu(9);
    int bad = 0, checked = 0;
    for (unsigned cs : {2u, 4u, 8u}) {
        unsigned grid = cs * 8;
        int *out;
        CK(cudaMalloc(&out, sizeof(int) * grid * ARRAY));
        CK(cudaMemset(out, 0, sizeof(int) * grid * ARRAY));
        CK(util_launch_cluster(cluster_kernel, grid, 128, cs, ARRAY * sizeof(int), out));
        CK(util_sync(20.0));
        std::vector<int> o(grid * ARRAY);
        CK(cudaMemcpy(o.data(), out, sizeof(int) * grid * ARRAY, cudaMemcpyDeviceToHost));
        for (unsigned b = 0; b < grid; b++) {
            unsigned rank = b % cs, nb = b - rank + (rank + 1) % cs;
            for (int i = 0; i < ARRAY; i++) {
                int want = (int)(nb * 100000u + ((rank + 1) % cs) * 10000u) + i;
                if (i < 128) {
                    int x = i;
                    for (int k = 0; k < 64; k++)
                        x = x * 3 + k;
                    want += x;
                }
                checked++;
                if (o[b * ARRAY + i] != want) {
                    if (bad < 5)
                        printf("cluster %u: mismatch at block %u [%d]: %d want %d\n", cs, b, i,
                               o[b * ARRAY + i], want);
                    bad++;
                }
            }
        }
        CK(cudaFree(out));
    }
    printf("seed004_cluster: %s (%d elements checked, %d wrong)\n", bad ? "FAIL" : "OK", checked, bad);
    return bad ? 1 : 0;
}
