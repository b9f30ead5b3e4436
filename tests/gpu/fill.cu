/* fill.cu - the nvcc-built workload of tests/gpu/run.sh: the CUDA runtime's
 * cudaMalloc, 64 MiB at a time, until cudaErrorMemoryAllocation.
 *
 * Usage: fill [--sample-dir DIR] [--every MIB] [--step MIB]
 * Output (the protocol of tests/gpu/gpuwork.py): "view total=T free=F",
 * then "held=H oom=0|1".  With --sample-dir, every MIB held and at the
 * error it writes DIR/sample.N and waits for DIR/ack.N (run.sh reads the
 * driver's and the slice's figures meanwhile).
 */
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

static const char *sample_dir;
static int nsample;

static void sample(size_t held, int oom)
{
    if (!sample_dir)
        return;
    char tmp[4096], path[4096];
    nsample++;
    snprintf(tmp, sizeof tmp, "%s/.sample.%d", sample_dir, nsample);
    snprintf(path, sizeof path, "%s/sample.%d", sample_dir, nsample);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "held=%zu oom=%d pid=%d\n", held, oom, (int)getpid()) < 0 ||
        fclose(f) != 0 || rename(tmp, path) != 0) {
        printf("error: cannot write %s\n", path);
        exit(4);
    }
    snprintf(path, sizeof path, "%s/ack.%d", sample_dir, nsample);
    for (int i = 0; access(path, F_OK) != 0; i++) {
        if (i > 6000) { /* 60 s: the harness is gone */
            printf("error: no ack for sample %d\n", nsample);
            exit(4);
        }
        usleep(10000);
    }
}

int main(int argc, char **argv)
{
    size_t every = 512, step = 64;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--sample-dir") == 0 && i + 1 < argc)
            sample_dir = argv[++i];
        else if (strcmp(argv[i], "--every") == 0 && i + 1 < argc)
            every = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--step") == 0 && i + 1 < argc)
            step = strtoull(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: fill [--sample-dir DIR] [--every MIB] [--step MIB]\n");
            return 2;
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    size_t f = 0, t = 0;
    cudaError_t e = cudaMemGetInfo(&f, &t);
    if (e != cudaSuccess) {
        printf("error: cudaMemGetInfo: %s\n", cudaGetErrorString(e));
        return 2;
    }
    printf("view total=%zu free=%zu\n", t, f);
    step <<= 20;
    every <<= 20;
    size_t held = 0, next = every;
    void *p;
    while ((e = cudaMalloc(&p, step)) == cudaSuccess) {
        held += step;
        if (held >= next) {
            while (held >= next)
                next += every;
            sample(held, 0);
        }
    }
    int oom = e == cudaErrorMemoryAllocation;
    if (!oom)
        printf("error: cudaMalloc: %s\n", cudaGetErrorString(e));
    sample(held, oom);
    printf("held=%zu oom=%d\n", held, oom);
    return oom ? 0 : 1;
}
