/* fill-gpu.c - the demo's CUDA program: fill GPU memory in chunks until the driver says
 * CUDA_ERROR_OUT_OF_MEMORY, and print what it got.  Run as a Tessel job, it shows the slice at
 * work: cuMemGetInfo reports the slice, and allocations stop at the slice's limit, not before.
 *
 * It dlopen()s libcuda.so.1 like any CUDA program (under tesseld --fake-gpus, the fake driver in
 * LD_LIBRARY_PATH; libtessel-cuda.so preloaded in front of either), so it builds without a CUDA
 * toolkit: the few driver prototypes come from src/common/cudaabi/cuda_abi.h.
 *
 *   fill-gpu [--chunk SIZE] [--device N] [--hold SECONDS | --hold-file PATH]
 *
 * The last line is for scripts: "result: chunks=N chunk=BYTES bytes=TOTAL error=NAME".
 * Exit status: 0 when the fill ended at CUDA_ERROR_OUT_OF_MEMORY, 1 on any other failure.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cudaabi/cuda_abi.h"
#include "libutil/size.h"

/* Most chunks kept: 4096 x 256 MiB = 1 TiB, beyond any GPU's memory. */
#define FILL_MAX_CHUNKS 4096

static struct {
    cuGetErrorName_fn GetErrorName;
    cuInit_fn Init;
    cuDeviceGet_fn DeviceGet;
    cuDeviceGetName_fn DeviceGetName;
    cuDevicePrimaryCtxRetain_fn PrimaryCtxRetain;
    cuDevicePrimaryCtxRelease_v2_fn PrimaryCtxRelease;
    cuCtxSetCurrent_fn CtxSetCurrent;
    cuMemGetInfo_v2_fn MemGetInfo;
    cuMemAlloc_v2_fn MemAlloc;
    cuMemFree_v2_fn MemFree;
} cu;

static const char *errname(CUresult r)
{
    const char *s = NULL;
    if (cu.GetErrorName && cu.GetErrorName(r, &s) == CUDA_SUCCESS && s)
        return s;
    static char buf[32];
    snprintf(buf, sizeof buf, "CUresult %d", (int)r);
    return buf;
}

static int load(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h) {
        fprintf(stderr, "fill-gpu: cannot load the CUDA driver: %s\n", dlerror());
        return -1;
    }
    struct {
        void **slot;
        const char *name;
    } syms[] = {
        {(void **)&cu.GetErrorName, "cuGetErrorName"},
        {(void **)&cu.Init, "cuInit"},
        {(void **)&cu.DeviceGet, "cuDeviceGet"},
        {(void **)&cu.DeviceGetName, "cuDeviceGetName"},
        {(void **)&cu.PrimaryCtxRetain, "cuDevicePrimaryCtxRetain"},
        {(void **)&cu.PrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"},
        {(void **)&cu.CtxSetCurrent, "cuCtxSetCurrent"},
        {(void **)&cu.MemGetInfo, "cuMemGetInfo_v2"},
        {(void **)&cu.MemAlloc, "cuMemAlloc_v2"},
        {(void **)&cu.MemFree, "cuMemFree_v2"},
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        if (!(*syms[i].slot = dlsym(h, syms[i].name))) {
            fprintf(stderr, "fill-gpu: the CUDA driver lacks %s\n", syms[i].name);
            return -1;
        }
    }
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: fill-gpu [--chunk SIZE] [--device N] [--hold SECONDS | --hold-file PATH]\n"
               "Allocate GPU memory in chunks (default 256M) until CUDA_ERROR_OUT_OF_MEMORY;\n"
               "then hold it for SECONDS, or until PATH exists, and free it.\n");
}

int main(int argc, char **argv)
{
    uint64_t chunk = 256ull << 20;
    int dev_ordinal = 0;
    long hold_s = 0;
    const char *hold_file = NULL;
    tsl_error_t err;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--chunk") == 0 && v) {
            if (tsl_parse_size(v, &chunk, &err) < 0 || chunk == 0) {
                fprintf(stderr, "fill-gpu: --chunk: %s\n", chunk ? err.text : "must be above 0");
                return 2;
            }
        } else if (strcmp(a, "--device") == 0 && v) {
            dev_ordinal = atoi(v);
        } else if (strcmp(a, "--hold") == 0 && v) {
            hold_s = atol(v);
        } else if (strcmp(a, "--hold-file") == 0 && v) {
            hold_file = v;
        } else {
            usage(stderr);
            return 2;
        }
        i++;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (load() < 0)
        return 1;
    CUresult r;
    CUdevice dev;
    CUcontext ctx;
    char name[128] = "?";
    if ((r = cu.Init(0)) != CUDA_SUCCESS || (r = cu.DeviceGet(&dev, dev_ordinal)) != CUDA_SUCCESS ||
        (r = cu.DeviceGetName(name, (int)sizeof name, dev)) != CUDA_SUCCESS ||
        (r = cu.PrimaryCtxRetain(&ctx, dev)) != CUDA_SUCCESS ||
        (r = cu.CtxSetCurrent(ctx)) != CUDA_SUCCESS) {
        fprintf(stderr, "fill-gpu: cannot open GPU %d: %s\n", dev_ordinal, errname(r));
        return 1;
    }
    size_t free_b = 0, total_b = 0;
    if ((r = cu.MemGetInfo(&free_b, &total_b)) != CUDA_SUCCESS) {
        fprintf(stderr, "fill-gpu: cuMemGetInfo: %s\n", errname(r));
        return 1;
    }
    char a[32], b[32], c[32];
    printf("fill-gpu: GPU %d (%s): cuMemGetInfo says %s total, %s free\n", dev_ordinal, name,
           tsl_format_size(total_b, a, sizeof a), tsl_format_size(free_b, b, sizeof b));
    static CUdeviceptr ptrs[FILL_MAX_CHUNKS];
    int n = 0;
    for (;;) {
        if (n == FILL_MAX_CHUNKS) {
            r = CUDA_SUCCESS;
            break;
        }
        r = cu.MemAlloc(&ptrs[n], chunk);
        if (r != CUDA_SUCCESS)
            break;
        n++;
    }
    uint64_t got = (uint64_t)n * chunk;
    printf("fill-gpu: allocated %d x %s = %s; the next allocation failed: %s\n", n,
           tsl_format_size(chunk, a, sizeof a), tsl_format_size(got, b, sizeof b), errname(r));
    if (cu.MemGetInfo(&free_b, &total_b) == CUDA_SUCCESS)
        printf("fill-gpu: now %s free of %s\n", tsl_format_size(free_b, c, sizeof c),
               tsl_format_size(total_b, a, sizeof a));
    printf("result: chunks=%d chunk=%llu bytes=%llu error=%s\n", n, (unsigned long long)chunk,
           (unsigned long long)got, errname(r));
    if (hold_file) {
        printf("fill-gpu: holding the memory until %s exists\n", hold_file);
        while (access(hold_file, F_OK) != 0) {
            struct timespec ts = {0, 100 * 1000000L};
            nanosleep(&ts, NULL);
        }
    } else if (hold_s > 0) {
        printf("fill-gpu: holding the memory for %ld s\n", hold_s);
        sleep((unsigned)hold_s);
    }
    for (int i = 0; i < n; i++)
        cu.MemFree(ptrs[i]);
    cu.PrimaryCtxRelease(dev);
    if (hold_file || hold_s > 0)
        printf("fill-gpu: freed %s\n", tsl_format_size(got, b, sizeof b));
    return r == CUDA_ERROR_OUT_OF_MEMORY ? 0 : 1;
}
