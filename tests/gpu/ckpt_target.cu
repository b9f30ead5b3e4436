// ckpt_target.cu - the nvcc program of run.sh's ckpt rows (docs/suspend.md): holds MIB of
// device memory filled by a kernel, prints "holding ptr=0x... pid=P", waits until PATH exists
// (meanwhile another process checkpoints and restores it through the driver's API), then
// checks every word on the device and the address, and prints "verified ok=1|0 ptr=0x...".
//
//   nvcc -o ckpt_target ckpt_target.cu && ./ckpt_target MIB PATH
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

__device__ unsigned int word_of(size_t i)
{
    return (unsigned int)(i * 2654435761u) ^ 0x21u;
}

__global__ void fill(unsigned int *p, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = word_of(i);
}

__global__ void check(const unsigned int *p, size_t n, unsigned int *bad)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        if (p[i] != word_of(i))
            atomicAdd(bad, 1u);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: ckpt_target MIB PATH\n");
        return 2;
    }
    size_t n = (size_t)atol(argv[1]) << 18; // MIB MiB of 4-byte words
    unsigned int *p = nullptr, *bad = nullptr;
    // No managed memory: driver 570 cannot checkpoint it.
    if (cudaMalloc(&p, n * 4) != cudaSuccess || cudaMalloc(&bad, 4) != cudaSuccess) {
        printf("error: cudaMalloc\n");
        return 1;
    }
    fill<<<1024, 256>>>(p, n);
    if (cudaDeviceSynchronize() != cudaSuccess) {
        printf("error: fill\n");
        return 1;
    }
    printf("holding ptr=%p pid=%d\n", (void *)p, (int)getpid());
    fflush(stdout);
    while (access(argv[2], F_OK) != 0)
        usleep(50000);
    unsigned int nbad = 1;
    cudaMemset(bad, 0, 4);
    check<<<1024, 256>>>(p, n, bad);
    cudaError_t e = cudaMemcpy(&nbad, bad, 4, cudaMemcpyDeviceToHost);
    void *base = nullptr;
    cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) == cudaSuccess)
        base = a.devicePointer;
    printf("verified ok=%d ptr=%p\n", e == cudaSuccess && nbad == 0 && base == p, base);
    return 0;
}
