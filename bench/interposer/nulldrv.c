/* nulldrv.c - a CUDA driver that does nothing, for bench-interposer only.
 *
 * Built as $(O)/bench/nulldrv/libcuda.so.1: every entry point the benchmark
 * (and the interposer's hooks on its way) calls returns at once, so that the
 * time per call measured through the interposer is the interposer's own
 * cost, not the fake driver's (whose allocations cost 1.5-4 us and vary
 * by more than the interposer adds).  Not a test double: it keeps no state
 * beyond a bump pointer and never fails.
 */
#include <string.h>

#include "cudaabi/cuda_abi.h"

#define API __attribute__((visibility("default")))

static unsigned long long next_ptr = 1ull << 40;

API CUresult cuInit(unsigned int flags)
{
    (void)flags;
    return CUDA_SUCCESS;
}

API CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    (void)dev;
    *pctx = (CUcontext)(void *)&next_ptr;
    return CUDA_SUCCESS;
}

API CUresult cuCtxSetCurrent(CUcontext ctx)
{
    (void)ctx;
    return CUDA_SUCCESS;
}

API CUresult cuCtxGetDevice(CUdevice *dev)
{
    *dev = 0;
    return CUDA_SUCCESS;
}

API CUresult cuCtxSynchronize(void)
{
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    memset(uuid, 0, sizeof *uuid);
    uuid->bytes[0] = (char)(0x4e + dev);
    return CUDA_SUCCESS;
}

API CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    (void)dev;
    *bytes = 24ull << 30;
    return CUDA_SUCCESS;
}

API CUresult cuMemGetInfo_v2(size_t *free, size_t *total)
{
    if (free)
        *free = 23ull << 30;
    if (total)
        *total = 24ull << 30;
    return CUDA_SUCCESS;
}

API CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    *dptr = __atomic_fetch_add(&next_ptr, (bytesize + 511) & ~511ull, __ATOMIC_RELAXED);
    return CUDA_SUCCESS;
}

API CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    (void)dptr;
    return CUDA_SUCCESS;
}

API CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    (void)image;
    *module = (CUmodule)(void *)&next_ptr;
    return CUDA_SUCCESS;
}

API CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    (void)hmod;
    (void)name;
    *hfunc = (CUfunction)(void *)&next_ptr;
    return CUDA_SUCCESS;
}

API CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                            unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem,
                            CUstream s, void **params, void **extra)
{
    (void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shmem, (void)s;
    (void)params, (void)extra;
    return CUDA_SUCCESS;
}

/* What the interposer's compute-share measurement calls around a launch
 * (src/interposer/compute.c): events that are complete at once and time 0
 * ms, so that a compute limit is set but never binding. */
API CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    *pctx = (CUcontext)(void *)&next_ptr;
    return CUDA_SUCCESS;
}

static char event_pool[64];

API CUresult cuEventCreate(CUevent *ev, unsigned int flags)
{
    static unsigned n;
    (void)flags;
    *ev = (CUevent)(void *)&event_pool[n++ % sizeof event_pool];
    return CUDA_SUCCESS;
}

API CUresult cuEventRecord(CUevent ev, CUstream st)
{
    (void)ev;
    (void)st;
    return CUDA_SUCCESS;
}

API CUresult cuEventQuery(CUevent ev)
{
    (void)ev;
    return CUDA_SUCCESS;
}

API CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
    (void)a;
    (void)b;
    *ms = 0.0f;
    return CUDA_SUCCESS;
}

API CUresult cuStreamIsCapturing(CUstream st, CUstreamCaptureStatus *cs)
{
    (void)st;
    *cs = CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
}
