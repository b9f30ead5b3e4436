/* replay.c - tcu-replay: replays the CUDA 13 runtime's entry-point lookups
 * (cudart13_requests.tsv) the way the runtime makes them, and says where
 * each answer points.
 *
 * Usage: tcu-replay REQUESTS.TSV
 *
 * Like the runtime: dlopen("libcuda.so.1"), dlsym cuGetProcAddress_v2 (the
 * file's first row), ask it for "cuGetProcAddress" and use the answer for
 * every later row.  One output line per row:
 *
 *   NAME VERSION FLAGS LIBRARY SYMBOL CALLS
 *
 * LIBRARY and SYMBOL are what dladdr says of the returned pointer (the
 * library's file name without directory, e.g. libcuda.so.1 or
 * libtessel-cuda.so; "-" if the lookup failed).  When the pointer lies in
 * libtessel-cuda.so, the entry point is called once with harmless arguments
 * (NULL outputs, which the hook passes to the driver) and CALLS is how many
 * calls the fake driver counted for SYMBOL during it (1 = the hook forwarded
 * to the same variant); otherwise CALLS is "-".
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudaabi/cuda_abi.h"

typedef unsigned long long (*calls_fn)(const char *);

static const char *base_of(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* Call hooked entry point p (a variant of base name `name`) with arguments
 * the driver rejects without side effects. */
static int poke(const char *name, const char *variant, void *p)
{
#define IS(n) (strcmp(name, n) == 0)
    if (IS("cuMemAlloc") || IS("cuMemAllocManaged") || IS("cuMemAllocAsync") ||
        IS("cuMemAllocFromPoolAsync") || IS("cuMemAllocPitch") || IS("cuMemCreate") ||
        IS("cuArrayCreate") || IS("cuArray3DCreate") || IS("cuMipmappedArrayCreate") ||
        IS("cuMemPoolCreate") || IS("cuMemGetInfo") || IS("cuDeviceTotalMem") ||
        IS("cuCtxCreate") || IS("cuDevicePrimaryCtxRetain") || IS("cuModuleLoadData") ||
        IS("cuModuleLoad") || IS("cuModuleLoadFatBinary") || IS("cuModuleGetFunction")) {
        /* First argument: a NULL output pointer; the rest zero. */
        typedef CUresult (*f6)(void *, void *, void *, void *, void *, void *);
        ((f6)p)(NULL, NULL, NULL, NULL, NULL, NULL);
        return 1;
    }
    if (IS("cuCtxSetCurrent") || IS("cuCtxGetCurrent") || IS("cuCtxGetDevice") ||
        IS("cuCtxPushCurrent") || IS("cuCtxPopCurrent") || IS("cuStreamGetCaptureInfo") ||
        IS("cuPointerGetAttribute") || IS("cuPointerGetAttributes") || IS("cuFuncGetAttribute") ||
        IS("cuDeviceGetAttribute") || IS("cuMemHostAlloc") || IS("cuMemFreeHost") ||
        IS("cuMemHostRegister") || IS("cuMemHostUnregister") || IS("cuMemAllocHost") ||
        IS("cuMemGetAddressRange") || IS("cuLibraryGetKernel") || IS("cuLibraryGetModule") ||
        IS("cuKernelGetFunction") || IS("cuKernelGetAttribute") || IS("cuKernelSetAttribute") ||
        IS("cuLibraryUnload") || IS("cuLibraryGetGlobal") || IS("cuLibraryGetManaged") ||
        IS("cuGraphInstantiate") || IS("cuGraphInstantiateWithFlags") ||
        IS("cuGraphInstantiateWithParams") || IS("cuGraphExecDestroy") ||
        IS("cuGraphExecKernelNodeSetParams") || IS("cuGraphExecUpdate") ||
        IS("cuGraphExecChildGraphNodeSetParams") || IS("cuGraphExecNodeSetParams")) {
        /* The queries, host memory, libraries and kernels: every argument NULL or zero (no
         * context to bind, push or pop, no output, attribute 0 of device 0 or of pointer 0, no
         * host pointer, no library, kernel or graph): refused, or with no context nothing done. */
        typedef CUresult (*f7)(void *, void *, void *, void *, void *, void *, void *);
        ((f7)p)(NULL, NULL, NULL, NULL, NULL, NULL, NULL);
        return 1;
    }
    if (IS("cuLibraryLoadData") || IS("cuLibraryLoadFromFile")) {
        /* A NULL output, no image or file: refused. */
        ((cuLibraryLoadData_fn)p)(NULL, NULL, NULL, NULL, 0, NULL, NULL, 0);
        return 1;
    }
    if (IS("cuMemFree") || IS("cuMemFreeAsync") || IS("cuMemRelease") || IS("cuArrayDestroy") ||
        IS("cuMipmappedArrayDestroy") || IS("cuMemPoolDestroy") || IS("cuMemPoolTrimTo") ||
        IS("cuGraphLaunch") || IS("cuCtxDestroy") || IS("cuModuleUnload") || IS("cuCtxSetLimit")) {
        typedef CUresult (*f2)(void *, void *);
        ((f2)p)(NULL, NULL);
        return 1;
    }
    if (IS("cuMemcpy") || IS("cuMemcpyAsync") || IS("cuMemcpyHtoD") || IS("cuMemcpyDtoH") ||
        IS("cuMemcpyDtoD") || IS("cuMemcpyHtoDAsync") || IS("cuMemcpyDtoHAsync") ||
        IS("cuMemcpyDtoDAsync") || IS("cuMemsetD8") || IS("cuMemsetD8Async")) {
        /* (The v1 Async copies take 32-bit pointers and sizes: zeros all the same.) */
        /* Nothing to copy or set, no context: refused (or a no-op) with no side effect. */
        typedef CUresult (*f4)(void *, void *, size_t, void *);
        ((f4)p)(NULL, NULL, 0, NULL);
        return 1;
    }
    if (IS("cuStreamSynchronize") || IS("cuEventSynchronize")) {
        typedef CUresult (*f1)(void *);
        ((f1)p)(NULL);
        return 1;
    }
    if (IS("cuCtxSynchronize")) {
        /* No context: refused.  _v2 takes the context (NULL: the current one). */
        if (strcmp(variant, "cuCtxSynchronize_v2") == 0)
            ((cuCtxSynchronize_v2_fn)p)(NULL);
        else
            ((cuCtxSynchronize_fn)p)();
        return 1;
    }
    if (IS("cuDevicePrimaryCtxRelease") || IS("cuDevicePrimaryCtxReset")) {
        ((cuDevicePrimaryCtxReset_fn)p)(-1);
        return 1;
    }
    if (IS("cuLaunchKernel") || IS("cuLaunchCooperativeKernel")) {
        ((cuLaunchKernel_fn)p)(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
        return 1;
    }
    if (IS("cuLaunchKernelEx")) {
        ((cuLaunchKernelEx_fn)p)(NULL, NULL, NULL, NULL);
        return 1;
    }
    if (IS("cuLaunchCooperativeKernelMultiDevice")) {
        ((cuLaunchCooperativeKernelMultiDevice_fn)p)(NULL, 0, 0);
        return 1;
    }
    if (IS("cuMemAdvise")) {
        CUmemLocation host = {CU_MEM_LOCATION_TYPE_HOST, 0};
        if (strstr(variant, "_v2"))
            ((cuMemAdvise_v2_fn)p)(0, 0, CU_MEM_ADVISE_SET_ACCESSED_BY, host);
        else
            ((cuMemAdvise_fn)p)(0, 0, CU_MEM_ADVISE_SET_ACCESSED_BY, CU_DEVICE_CPU);
        return 1;
    }
    if (IS("cuMemPrefetchAsync")) {
        CUmemLocation host = {CU_MEM_LOCATION_TYPE_HOST, 0};
        if (strstr(variant, "_v2"))
            ((cuMemPrefetchAsync_v2_fn)p)(0, 0, host, 0, NULL);
        else
            ((cuMemPrefetchAsync_fn)p)(0, 0, CU_DEVICE_CPU, NULL);
        return 1;
    }
    if (IS("cuMemPrefetchBatchAsync") || IS("cuMemDiscardAndPrefetchBatchAsync")) {
        ((cuMemPrefetchBatchAsync_fn)p)(NULL, NULL, 0, NULL, NULL, 0, 0, NULL);
        return 1;
    }
    if (IS("cuMemcpyPeer") || IS("cuMemcpyPeerAsync")) {
        /* Nothing to copy, no contexts (the async one on the legacy stream). */
        ((cuMemcpyPeerAsync_fn)p)(0, NULL, 0, NULL, 0, NULL);
        return 1;
    }
    if (IS("cuMemcpy2D") || IS("cuMemcpy2DUnaligned") || IS("cuMemcpy2DAsync") ||
        IS("cuMemcpy3D") || IS("cuMemcpy3DAsync") || IS("cuMemcpy3DPeer") ||
        IS("cuMemcpy3DPeerAsync")) {
        ((cuMemcpy2DAsync_v2_fn)p)(NULL, NULL); /* no copy described: refused */
        return 1;
    }
    if (IS("cuMemsetD16") || IS("cuMemsetD32") || IS("cuMemsetD16Async") ||
        IS("cuMemsetD32Async")) {
        ((cuMemsetD32Async_fn)p)(0, 0, 0, NULL); /* nothing to set */
        return 1;
    }
    if (IS("cuMemsetD2D8") || IS("cuMemsetD2D16") || IS("cuMemsetD2D32") ||
        IS("cuMemsetD2D8Async") || IS("cuMemsetD2D16Async") || IS("cuMemsetD2D32Async")) {
        ((cuMemsetD2D32Async_fn)p)(0, 0, 0, 0, 0, NULL); /* no rows */
        return 1;
    }
    if (IS("cuEventCreate") || IS("cuStreamCreate") || IS("cuStreamCreateWithPriority")) {
        ((cuStreamCreateWithPriority_fn)p)(NULL, 0, 0); /* no output: refused */
        return 1;
    }
    if (IS("cuEventRecord") || IS("cuEventRecordWithFlags") || IS("cuStreamWaitEvent")) {
        ((cuStreamWaitEvent_fn)p)(NULL, NULL, 0); /* no event: refused */
        return 1;
    }
    if (IS("cuEventElapsedTime")) {
        ((cuEventElapsedTime_fn)p)(NULL, NULL, NULL);
        return 1;
    }
    if (IS("cuEventQuery") || IS("cuEventDestroy") || IS("cuStreamQuery") ||
        IS("cuStreamDestroy")) {
        typedef CUresult (*f1)(void *);
        ((f1)p)(NULL); /* no event; the legacy stream (never destroyed) */
        return 1;
    }
    if (IS("cuStreamWriteValue32") || IS("cuStreamWaitValue32")) {
        ((cuStreamWriteValue32_v2_fn)p)(NULL, 0, 0, 0); /* no context, no word: refused */
        return 1;
    }
    if (IS("cuStreamWriteValue64") || IS("cuStreamWaitValue64")) {
        ((cuStreamWriteValue64_v2_fn)p)(NULL, 0, 0, 0);
        return 1;
    }
    if (IS("cuStreamBatchMemOp")) {
        ((cuStreamBatchMemOp_v2_fn)p)(NULL, 0, NULL, 0); /* no operation, no context */
        return 1;
    }
    if (IS("cuMemcpyBatchAsync")) {
        /* No copy: refused.  The 12.8 form has failIdx before the stream. */
        if (strstr(variant, "_v2"))
            ((cuMemcpyBatchAsync_v2_fn)p)(NULL, NULL, NULL, 0, NULL, NULL, 0, NULL);
        else
            ((cuMemcpyBatchAsync_fn)p)(NULL, NULL, NULL, 0, NULL, NULL, 0, NULL, NULL);
        return 1;
    }
    if (IS("cuLaunchHostFunc")) {
        ((cuLaunchHostFunc_fn)p)(NULL, NULL, NULL); /* no function: refused */
        return 1;
    }
    if (IS("cuStreamAddCallback")) {
        ((cuStreamAddCallback_fn)p)(NULL, NULL, NULL, 0); /* no callback: refused */
        return 1;
    }
    if (IS("cuStreamBeginCapture")) {
        /* No context: refused (and the legacy stream cannot capture). */
        if (strstr(variant, "_v2"))
            ((cuStreamBeginCapture_v2_fn)p)(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL);
        else
            ((cuStreamBeginCapture_fn)p)(NULL);
        return 1;
    }
    if (IS("cuStreamEndCapture")) {
        ((cuStreamEndCapture_fn)p)(NULL, NULL); /* no output: refused */
        return 1;
    }
    if (IS("cuStreamIsCapturing")) {
        ((cuStreamIsCapturing_fn)p)(NULL, NULL);
        return 1;
    }
    if (IS("cuGraphUpload")) {
        ((cuGraphUpload_fn)p)(NULL, NULL); /* no graph: refused */
        return 1;
    }
    if (IS("cuInit")) {
        ((cuInit_fn)p)(0);
        return 1;
    }
    if (IS("cuGetProcAddress")) {
        void *x;
        CUdriverProcAddressQueryResult st;
        if (strcmp(variant, "cuGetProcAddress_v2") == 0)
            ((cuGetProcAddress_v2_fn)p)("cuNoSuchEntryPoint", &x, 13000, 0, &st);
        else
            ((cuGetProcAddress_fn)p)("cuNoSuchEntryPoint", &x, 13000, 0);
        return 1;
    }
    return 0;
#undef IS
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: tcu-replay REQUESTS.TSV\n");
        return 2;
    }
    FILE *in = fopen(argv[1], "r");
    if (!in) {
        perror(argv[1]);
        return 2;
    }
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "tcu-replay: %s\n", dlerror());
        return 2;
    }
    calls_fn calls = (calls_fn)dlsym(lib, "tessel_fake_calls");
    cuGetProcAddress_v2_fn gpa = NULL;
    char line[512];
    int row = 0;
    while (fgets(line, sizeof line, in)) {
        char name[512];
        int ver = 0;
        unsigned long long flags = 0;
        line[strcspn(line, "\n")] = '\0';
        char *t1 = strchr(line, '\t');
        if (!t1)
            continue;
        *t1 = '\0';
        snprintf(name, sizeof name, "%s", line);
        if (sscanf(t1 + 1, "%d\t%llu", &ver, &flags) != 2)
            continue;
        void *p = NULL;
        if (row++ == 0) {
            /* The runtime's own dlsym of cuGetProcAddress_v2. */
            snprintf(name, sizeof name, "cuGetProcAddress_v2");
            p = dlsym(lib, "cuGetProcAddress_v2");
            gpa = (cuGetProcAddress_v2_fn)p;
        } else {
            CUdriverProcAddressQueryResult st;
            if (!gpa || gpa(name, &p, ver, flags, &st) != CUDA_SUCCESS)
                p = NULL;
            if (p && strcmp(name, "cuGetProcAddress") == 0 && ver >= 12000)
                gpa = (cuGetProcAddress_v2_fn)p; /* used for everything after */
        }
        Dl_info info;
        const char *libname = "-", *sym = "-";
        if (p && dladdr(p, &info)) {
            libname = info.dli_fname ? base_of(info.dli_fname) : "?";
            sym = info.dli_sname ? info.dli_sname : "?";
        }
        char callstr[32] = "-";
        if (p && strcmp(libname, "libtessel-cuda.so") == 0 && calls && row > 1) {
            unsigned long long before = calls(sym);
            if (poke(name, sym, p))
                snprintf(callstr, sizeof callstr, "%llu", calls(sym) - before);
        }
        printf("%s %d %llu %s %s %s\n", name, ver, flags, libname, sym, callstr);
    }
    fclose(in);
    return 0;
}
