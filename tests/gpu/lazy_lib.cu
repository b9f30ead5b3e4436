// tests/gpu/lazy_lib.cu - a kernel whose module holds a large __device__ array (BIG_MIB MiB),
// for tests/gpu/lazylib.sh: under lazy loading (CUDA 12+) the CUDA runtime loads its fat binary
// as a library with no context current, and the driver places the module, the array included,
// in the context at the kernel's first use.  Prints "init=RC" after a 1 MiB cudaMalloc (the
// context), "launch=RC" after the first launch, then creates DIR/ready and waits for DIR/go
// (the script samples meanwhile), then "alloc=RC" for 64 MiB more.  With a second argument
// "graph" the kernel is not launched but captured into a CUDA graph, and the graph instantiated
// ("launch=RC" then stands for the instantiation: the script samples after it); the graph is
// launched once after DIR/go, before the allocation ("graphlaunch=RC").
#include <cstdio>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

#ifndef BIG_MIB
#define BIG_MIB 1024
#endif

__device__ char big[(size_t)BIG_MIB << 20];

__global__ void touch(char *out)
{
    big[threadIdx.x] = 1;
    out[threadIdx.x] = big[threadIdx.x];
}

static void mark(const char *dir, const char *name)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (f)
        fclose(f);
}

static void wait_for(const char *dir, const char *name)
{
    char p[4096];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    for (int i = 0; i < 12000 && stat(p, &st) != 0; i++)
        usleep(10000);
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: lazy_lib DIR [graph]\n");
        return 2;
    }
    bool graph = argc == 3 && std::string(argv[2]) == "graph";
    cudaStream_t st = nullptr;
    cudaGraph_t g = nullptr;
    cudaGraphExec_t x = nullptr;
    char *d = nullptr, *d2 = nullptr;
    cudaError_t e = cudaMalloc(&d, 1 << 20);
    printf("init=%d\n", (int)e);
    fflush(stdout);
    if (e != cudaSuccess)
        return 1;
    mark(argv[1], "inited");
    wait_for(argv[1], "launch");
    if (graph) {
        e = cudaStreamCreate(&st);
        if (e == cudaSuccess)
            e = cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal);
        if (e == cudaSuccess) {
            touch<<<1, 32, 0, st>>>(d);
            e = cudaStreamEndCapture(st, &g);
        }
        if (e == cudaSuccess)
            e = cudaGraphInstantiate(&x, g, 0);
    } else {
        touch<<<1, 32>>>(d);
        e = cudaDeviceSynchronize();
    }
    printf("launch=%d\n", (int)e);
    fflush(stdout);
    mark(argv[1], "ready");
    wait_for(argv[1], "go");
    if (graph && x) {
        e = cudaGraphLaunch(x, st);
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(st);
        printf("graphlaunch=%d\n", (int)e);
    }
    e = cudaMalloc(&d2, 64 << 20);
    printf("alloc=%d\n", (int)e);
    return 0;
}
