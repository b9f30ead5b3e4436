/* probe.c - tcu-probe: drives the CUDA driver API step by step and prints
 * what it sees, for the interposer's shell tests (tests/t/t05*-interposer-*).
 *
 * Usage: tcu-probe [--via=global|dlsym|proc|plugin] [--ptds] STEP...
 *
 * How entry points are found (--via):
 *   global  dlopen("libcuda.so.1", RTLD_GLOBAL), then dlsym(RTLD_DEFAULT):
 *           the symbol the dynamic linker would bind for a program linked
 *           with -lcuda (default);
 *   dlsym   dlopen("libcuda.so.1", RTLD_LOCAL) and dlsym on that handle;
 *   proc    cuGetProcAddress_v2 from dlsym, then every entry point through
 *           it at CUDA version 13000 (--ptds: per-thread default stream);
 *   plugin  allocations go through tcu-plugin.so, which dlopens libcuda
 *           privately itself (the rest as dlsym).
 *
 * Steps (one output line each; rc is the CUresult):
 *   ctx[:N]             cuInit, retain + set the primary context of dev N (0)
 *   ctxcreate:V[:N]     cuCtxCreate variant V (1, 2, 3, 4) on device N (0)
 *   ctxrace:N           N threads each cuCtxCreate_v2 on device 0 at once,
 *                       then pop it: "ctxrace ok=K" (K succeeded)
 *   ctxdestroy          destroy the last created context
 *   alloc:PATH:SIZE     one allocation; PATH is mem, mem1, managed, pitch
 *                       (SIZE = width, height 4), async, async_ptsz, pool,
 *                       pool_ptsz, vmm, array, array1, array3d, mipmap, mypool
 *                       (a pool of its own, cuMemPoolCreate on device 0)
 *   fill:PATH:SIZE      allocate until refused: "fill PATH n=N bytes=B rc=R"
 *   free / freeall      free the newest / every allocation
 *   trim                cuMemPoolTrimTo(default pool, 0) after a sync
 *   pooldestroy         cuMemPoolDestroy of the "mypool" pool after a sync
 *   info / info1        cuMemGetInfo_v2 / cuMemGetInfo: "info free=F total=T"
 *   infonull            cuMemGetInfo_v2 with NULL arguments
 *   totalmem[:N]        cuDeviceTotalMem_v2 of device N (default 0)
 *   nvml[:N]            nvmlDeviceGetMemoryInfo(_v2) of NVML device N (default 0)
 *   nvmlproc:PID[:N]    the driver's own figure for process PID on NVML device N (0)
 *                       (nvmlDeviceGetComputeRunningProcesses_v3, what
 *                       nvidia-smi shows): "nvmlproc pid=P used=U" (U=0 when
 *                       PID holds no context there)
 *   nvmlprocs[:N]       the process lists of NVML device N (0) as this process
 *                       sees them: "nvmlprocs v3=PID,PID... v1=PID,... rc=R,R
 *                       sizeq=R:COUNT detail=PID,... drc=R dsizeq=R:COUNT dbadver=R"
 *                       (sizeq: a first call with no room, as nvidia-smi makes,
 *                       its result and the count it gives; detail: the list of
 *                       nvmlDeviceGetRunningProcessDetailList, compute mode;
 *                       dbadver: its answer to a struct version it does not know)
 *   hold                print "holding" and sleep until killed or stdin EOF
 *   waitfile:PATH       wait until PATH exists (a start line for races)
 *   loop:N              N x (cuMemAlloc_v2 1 MiB, cuMemFree_v2, cuMemGetInfo_v2)
 *   forkhold:SIZE       fork; the child runs "ctx", allocates SIZE, reports, exits
 *                       cleanly at stdin EOF ("forkhold rc=R child=PID")
 *   reap                wait for that child
 *   chain:N             fork N times, each process the parent of the next (each waits
 *                       for its child and exits with its status); the deepest runs the
 *                       steps that follow: "chain depth=N pid=PID" (a job's process
 *                       N levels below its shell, for the watchdog's tests)
 *   exec:STEP,STEP...   exec this program (same pid, a new image) with those
 *                       steps and the same options; "exec" is printed first
 *   spawn:SIZE          fork and exec this program (multiprocessing's
 *                       "spawn"): the new image runs "ctx alloc:mem:SIZE"
 *                       with the same options; "spawn status=S"
 *   where               the newest allocation as the fake driver sees it: "where
 *                       managed=M resident=R pref=T accessed=MASK" (oversubscription)
 *   calls:NAME          the fake driver's call count of entry point NAME
 *   prefetch:TO:SIZE    cuMemPrefetchAsync of the newest allocation's first SIZE bytes to TO
 *                       (cpu, or a CUDA device ordinal) on the default stream: "prefetch rc=R"
 *   prefetch2:TO:SIZE   the same through cuMemPrefetchAsync_v2 (a host or device location)
 *   batch:TO:SIZE       cuMemPrefetchBatchAsync (CUDA 13) of one operation, the newest
 *                       allocation's first SIZE bytes to TO (cpu or a device ordinal):
 *                       "batch rc=R"
 *   dbatch:TO:SIZE      the same through cuMemDiscardAndPrefetchBatchAsync
 *   advise:ADVICE:TO    cuMemAdvise of the newest allocation's first MiB, ADVICE one of
 *                       prefer, unprefer, readmostly, unreadmostly, accessed, unaccessed, TO
 *                       cpu or a device ordinal: "advise rc=R"
 *   advise2:ADVICE:TO   the same through cuMemAdvise_v2 (a location)
 *   pattern:SIZE        write a pattern (each 8-byte word: its offset xor the device
 *                       address) over the first SIZE bytes of the newest allocation
 *                       (mem path): "pattern rc=R"
 *   check:SIZE          read them back and compare: "check ok" or "check bad at OFF rc=R"
 *   spin:N:PATH         N threads on the current context each allocate 64 KiB, write and read
 *                       it back, compare and free it, over and over until PATH exists:
 *                       "spin threads=N rounds=R bad=B" (B: rounds that failed or differed)
 *   ckptrestore:PID     what any process of a job may do to another of its own: the driver's
 *                       cuCheckpointProcessRestore then cuCheckpointProcessUnlock of PID
 *                       (looked up as the other entry points; "... -1" when absent):
 *                       "ckptrestore restore=R unlock=U", flushed after R
 *   uuid:N              "uuid GPU-..." of CUDA device N (cuDeviceGetUuid)
 *   setlimit:L:SIZE     cuCtxSetLimit(L, SIZE); L is stack, printf or heap
 *   modload[:KIND]      load a (fake) module: "modload rc=R"; KIND data
 *                       (cuModuleLoadData, the default), ex (cuModuleLoadDataEx
 *                       with a JIT option), fatbin (cuModuleLoadFatBinary) or
 *                       file (cuModuleLoad of this program's file)
 *   modfunc:NAME        cuModuleGetFunction NAME in the newest module
 *   modunload           cuModuleUnload of the newest module
 *   launch:NAME         cuModuleGetFunction NAME in the newest module, one launch of it
 *                       (grid and block 1) and cuCtxSynchronize: "launch NAME rc=R"
 *   copyuntil:PATH      cuMemcpyHtoD_v2 of 4 KiB into the newest allocation every 100 ms until
 *                       PATH exists (a job whose GPU work is copies, for idle reclamation's
 *                       tests): "copyuntil n=N bad=B" (B: not CUDA_SUCCESS)
 *   launchasync:NAME    launch:NAME's launch without its synchronisation: the kernel stays
 *                       queued (TESSEL_FAKE_KERNEL_US long) after the step: "launchasync NAME
 *                       rc=R"
 *   launchuntil:NAME:PATH  the same launch and synchronisation every 100 ms until PATH
 *                       exists (a job that keeps the GPU busy now and then, for idle
 *                       reclamation's tests): "launchuntil NAME n=N bad=B" (B: not CUDA_SUCCESS)
 *   evcreate            cuEventCreate of the event that "op:evrecord" records: "evcreate rc=R"
 *   op:NAME             one call of an entry point that idle reclamation gates (docs/suspend.md)
 *                       on the OLDEST allocation (the first 4 KiB; "pattern" and "check" use
 *                       the newest), its result read back: "op NAME rc=R ok=0|1".  NAME:
 *                       evrecord (cuEventRecord on the legacy stream, then cuEventQuery),
 *                       evrecordf (the same with cuEventRecordWithFlags, flags 0),
 *                       streamquery (cuStreamQuery of the legacy stream), copy2d (cuMemcpy2D_v2
 *                       of 4 rows of 256 bytes, host to device, 1 KiB apart), copy3d
 *                       (cuMemcpy3D_v2 of the same rows as 2 slices of 2), memsetd32
 *                       (cuMemsetD32_v2 of 1024 words), memsetd16 (cuMemsetD16_v2 of 2048),
 *                       memsetd2d32 (cuMemsetD2D32_v2: 4 rows of 64 words, 1 KiB apart); the
 *                       values change at each call, and ok=1 when the device then holds them
 *                       (cuMemcpyDtoH_v2 read back, the rows of a 2D call) and the call
 *                       succeeded; the gated call is the op's first CUDA call
 *                       More NAMEs (docs/suspend.md, "Calls gated in the second pass"): writev32
 *                       (cuStreamWriteValue32_v2 of a word on the legacy stream), writev64
 *                       (cuStreamWriteValue64_v2), waitv32 / waitv64 (cuStreamWaitValue32_v2 /
 *                       64_v2, EQ, for the word the last writev32 / writev64 wrote: 0 before
 *                       any), batch (cuStreamBatchMemOp_v2: a 32-bit write, a 64-bit write 8
 *                       bytes on, a wait for the first), hostfunc (cuLaunchHostFunc: the
 *                       function stores the round; then cuStreamSynchronize), callback
 *                       (cuStreamAddCallback, the same), capture (on the stream of "strcreate":
 *                       cuStreamBeginCapture_v2, cuStreamIsCapturing says active,
 *                       cuStreamEndCapture, cuGraphInstantiateWithFlags, cuGraphUpload, the
 *                       graph and its executable destroyed: no launch)
 *                       The v1 (pre-3.2) copies, on a 32-bit device pointer (the oldest allocation
 *                       made by alloc:mem1; not with --via=proc, which asks for CUDA 13's):
 *                       copy2d1 (cuMemcpy2D with CUDA_MEMCPY2D_v1, the rows of copy2d), copy3d1
 *                       (cuMemcpy3DAsync with CUDA_MEMCPY3D_v1 on the legacy stream, copy3d's
 *                       slices), htodasync1 (cuMemcpyHtoDAsync of 4 KiB on the legacy stream)
 *                       copy3dpeer: cuMemcpy3DPeer of copy3d's slices, both contexts the one
 *                       "ctx" made current; memcpybatch: cuMemcpyBatchAsync_v2 of two 1 KiB
 *                       copies, host to device, 2 KiB apart, on the stream of "strcreate".
 *                       The query calls (docs/suspend.md, "Calls gated in the third pass"),
 *                       gated, not work; ok=1 when the call succeeded and answered: ctxget
 *                       (cuCtxGetCurrent: the context of "ctx"), pushpop (cuCtxPushCurrent_v2 of
 *                       that context, then cuCtxPopCurrent_v2 gives it back), capinfo
 *                       (cuStreamGetCaptureInfo_v3, _ptsz with --ptds, of the stream of
 *                       "strcreate": not capturing), devattr (cuDeviceGetAttribute of device 0's
 *                       copy engines: 3 on the fake), ptrattr (cuPointerGetAttribute, the range
 *                       start of the oldest allocation's byte 100: its base), hostmem
 *                       (cuMemHostAlloc of 4 KiB, written; cuMemHostRegister_v2 of a page,
 *                       cuMemHostUnregister; cuMemFreeHost); nothing read back.
 *                       The fourth pass's (docs/suspend.md): libload (cuLibraryLoadData, its
 *                       module by cuLibraryGetModule, cuLibraryUnload), kernel (of the library
 *                       "lib" loaded: cuLibraryGetKernel of fake_kernel_1us, cuKernelGetAttribute
 *                       says 1024 threads, cuKernelGetFunction, cuLaunchKernel,
 *                       cuStreamSynchronize of the legacy stream: work), addrrange
 * (cuMemGetAddressRange_v2 of the oldest allocation's byte 100: its base) lib cuLibraryLoadData of
 * the library "op:kernel" uses (with no context current when "ctx" has not run: loaded into each
 * context at its first use there): "lib rc=R"; libmod (cuLibraryGetModule of that library),
 * libglobal:NAME and libmanaged:NAME (cuLibraryGetGlobal, cuLibraryGetManaged), kernfunc:NAME
 * (cuLibraryGetKernel then cuKernelGetFunction), kernlaunch:NAME (cuLibraryGetKernel, then
 * cuLaunchKernel of the CUkernel itself, as the CUDA runtime launches, and a synchronisation:
 * "kernlaunch NAME rc=R"), libunload (cuLibraryUnload): "libmod rc=R",
 * "libglobal NAME rc=R", "kernfunc NAME rc=R", "libunload rc=R"; init (cuInit alone: "init rc=R");
 * kerngraph:NAME[:HOW] (cuLibraryGetKernel, then the kernel captured by its handle on the stream
 * of "strcreate" and the graph instantiated, by cuGraphInstantiateWithFlags (HOW flags, the
 * default; asked for as "cuGraphInstantiate" through cuGetProcAddress, which CUDA 12 names so),
 * cuGraphInstantiateWithParams with an upload (params) or cuGraphInstantiate_v2 (v2, exported
 * only), or not at all (none): "kerngraph NAME rc=R"), graphlaunch (that graph launched on the
 * stream and synchronised: "graphlaunch rc=R"), graphdestroy (cuGraphExecDestroy: "graphdestroy
 * rc=R"); poolmanaged (cuMemPoolCreate of a managed pool on device 0: "poolmanaged rc=R");
 * lib2 (a second library, cuLibraryLoadData: "lib2 rc=R"), graphset:NAME (kernel
 * NAME of "lib2" put into the node of the graph "kerngraph" made, by
 * cuGraphExecKernelNodeSetParams_v2: "graphset NAME rc=R"), graphupdate:NAME (kernel NAME of
 * "lib2" captured into a new graph that the executable graph takes, by cuGraphExecUpdate_v2:
 * "graphupdate NAME rc=R result=N"); churn:N (N threads, at most 16, allocate and free 64 KiB in a
 * loop in the current context; the step ends once they did 1000 rounds each: "churn N"), unchurn
 * (they stop and are joined: "unchurn"); strcreate           cuStreamCreate of the stream
 * "op:capture" captures: "strcreate rc=R" call:NAME           the same call with nothing read back
 * (the read-back is a copy, itself GPU work): "call NAME rc=R ok=0|1" (ok: evrecord's query or rc
 * 0) opuntil:NAME:PATH   "call:NAME" every 100 ms until PATH exists, then one "op:NAME": "opuntil
 * NAME n=N bad=B ok=0|1" (B: calls that failed, ok: the last call's values read back)
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cudaabi/cuda_abi.h"
#include "cudaabi/nvml_abi.h"
#include "libutil/size.h"

static void *lib; /* libcuda handle */
static int via;   /* 0 global, 1 dlsym, 2 proc, 3 plugin */
static int ptds;
static void *plugin;
static cuGetProcAddress_v2_fn gpa;

static void die(const char *what)
{
    fprintf(stderr, "tcu-probe: %s\n", what);
    exit(2);
}

/* Find an exported variant (global/dlsym) or a base name (proc). */
static void *sym(const char *exported, const char *base)
{
    void *p = NULL;
    if (via == 2) {
        CUdriverProcAddressQueryResult st;
        if (gpa(base, &p, 13000, ptds ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0, &st) !=
            CUDA_SUCCESS)
            p = NULL;
    } else if (via == 0) {
        p = dlsym(RTLD_DEFAULT, exported);
    } else {
        p = dlsym(lib, exported);
    }
    if (!p) {
        fprintf(stderr, "tcu-probe: no entry point %s\n", exported);
        exit(2);
    }
    return p;
}
#define SYM(type, exported, base) ((type)sym(exported, base))

struct allocation {
    int path;
    uint64_t h;
};
static struct allocation allocs[100000];
static int nallocs;
static CUcontext created[64];
static CUmodule modules[64];
static int nmodules;
static pid_t child;
static int ncreated;

enum {
    P_MEM,
    P_MEM1,
    P_MANAGED,
    P_PITCH,
    P_ASYNC,
    P_ASYNC_PTSZ,
    P_POOL,
    P_POOL_PTSZ,
    P_VMM,
    P_ARRAY,
    P_ARRAY1,
    P_ARRAY3D,
    P_MIPMAP,
    P_MYPOOL,
    P_NPATHS
};
static const char *path_names[P_NPATHS] = {"mem",        "mem1",    "managed",   "pitch", "async",
                                           "async_ptsz", "pool",    "pool_ptsz", "vmm",   "array",
                                           "array1",     "array3d", "mipmap",    "mypool"};
static CUmemoryPool mypool;

static int path_of(const char *s)
{
    for (int i = 0; i < P_NPATHS; i++)
        if (strcmp(s, path_names[i]) == 0)
            return i;
    die("unknown allocation path");
    return -1;
}

static CUstream stream_for(int ptsz)
{
    return ptsz ? CU_STREAM_PER_THREAD : NULL;
}

static CUmemoryPool default_pool(void)
{
    CUmemoryPool p = NULL;
    SYM(cuDeviceGetDefaultMemPool_fn, "cuDeviceGetDefaultMemPool", "cuDeviceGetDefaultMemPool")
    (&p, 0);
    return p;
}

typedef int (*plugin_alloc_fn)(uint64_t size, uint64_t *ptr);
typedef int (*plugin_free_fn)(uint64_t ptr);

static CUresult do_alloc(int path, uint64_t size)
{
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    uint64_t h = 0;
    if (via == 3 && path == P_MEM) {
        r = (CUresult)((plugin_alloc_fn)dlsym(plugin, "tcu_plugin_alloc"))(size, &h);
    } else if (path == P_MEM) {
        CUdeviceptr p;
        r = SYM(cuMemAlloc_v2_fn, "cuMemAlloc_v2", "cuMemAlloc")(&p, size);
        h = p;
    } else if (path == P_MEM1) {
        CUdeviceptr_v1 p;
        r = ((cuMemAlloc_fn)dlsym(via == 0 ? RTLD_DEFAULT : lib, "cuMemAlloc"))(&p, (unsigned)size);
        h = p;
    } else if (path == P_MANAGED) {
        CUdeviceptr p;
        r = SYM(cuMemAllocManaged_fn, "cuMemAllocManaged",
                "cuMemAllocManaged")(&p, size, CU_MEM_ATTACH_GLOBAL);
        h = p;
    } else if (path == P_PITCH) {
        CUdeviceptr p;
        size_t pitch = 0;
        r = SYM(cuMemAllocPitch_v2_fn, "cuMemAllocPitch_v2", "cuMemAllocPitch")(&p, &pitch, size, 4,
                                                                                4);
        h = p;
        if (r == CUDA_SUCCESS)
            printf("pitch %zu\n", pitch);
    } else if (path == P_ASYNC || path == P_ASYNC_PTSZ) {
        CUdeviceptr p;
        int pt = path == P_ASYNC_PTSZ;
        r = SYM(cuMemAllocAsync_fn, pt ? "cuMemAllocAsync_ptsz" : "cuMemAllocAsync",
                "cuMemAllocAsync")(&p, size, stream_for(pt));
        h = p;
    } else if (path == P_POOL || path == P_POOL_PTSZ) {
        CUdeviceptr p;
        int pt = path == P_POOL_PTSZ;
        r = SYM(cuMemAllocFromPoolAsync_fn,
                pt ? "cuMemAllocFromPoolAsync_ptsz" : "cuMemAllocFromPoolAsync",
                "cuMemAllocFromPoolAsync")(&p, size, default_pool(), stream_for(pt));
        h = p;
    } else if (path == P_MYPOOL) {
        if (!mypool) {
            CUmemPoolProps props;
            memset(&props, 0, sizeof props);
            props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
            props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
            props.location.id = 0;
            r = SYM(cuMemPoolCreate_fn, "cuMemPoolCreate", "cuMemPoolCreate")(&mypool, &props);
            if (r != CUDA_SUCCESS)
                return r;
        }
        CUdeviceptr p;
        r = SYM(cuMemAllocFromPoolAsync_fn, "cuMemAllocFromPoolAsync",
                "cuMemAllocFromPoolAsync")(&p, size, mypool, NULL);
        h = p;
    } else if (path == P_VMM) {
        CUmemAllocationProp prop;
        memset(&prop, 0, sizeof prop);
        prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        prop.location.id = 0;
        CUmemGenericAllocationHandle g;
        r = SYM(cuMemCreate_fn, "cuMemCreate", "cuMemCreate")(&g, size, &prop, 0);
        h = g;
    } else if (path == P_ARRAY) {
        CUDA_ARRAY_DESCRIPTOR d = {
            .Width = size / 4, .Height = 1, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
        CUarray a;
        r = SYM(cuArrayCreate_v2_fn, "cuArrayCreate_v2", "cuArrayCreate")(&a, &d);
        h = (uint64_t)(uintptr_t)a;
    } else if (path == P_ARRAY1) {
        CUDA_ARRAY_DESCRIPTOR_v1 d = {.Width = (unsigned)(size / 4),
                                      .Height = 1,
                                      .Format = CU_AD_FORMAT_FLOAT,
                                      .NumChannels = 1};
        CUarray a;
        r = ((cuArrayCreate_fn)dlsym(via == 0 ? RTLD_DEFAULT : lib, "cuArrayCreate"))(&a, &d);
        h = (uint64_t)(uintptr_t)a;
    } else if (path == P_ARRAY3D) {
        CUDA_ARRAY3D_DESCRIPTOR d = {.Width = size / 16,
                                     .Height = 2,
                                     .Depth = 2,
                                     .Format = CU_AD_FORMAT_UNSIGNED_INT8,
                                     .NumChannels = 4};
        CUarray a;
        r = SYM(cuArray3DCreate_v2_fn, "cuArray3DCreate_v2", "cuArray3DCreate")(&a, &d);
        h = (uint64_t)(uintptr_t)a;
    } else if (path == P_MIPMAP) {
        /* One level: exactly size bytes. */
        CUDA_ARRAY3D_DESCRIPTOR d = {.Width = size / 4,
                                     .Height = 0,
                                     .Depth = 0,
                                     .Format = CU_AD_FORMAT_UNSIGNED_INT8,
                                     .NumChannels = 4};
        CUmipmappedArray m;
        r = SYM(cuMipmappedArrayCreate_fn, "cuMipmappedArrayCreate",
                "cuMipmappedArrayCreate")(&m, &d, 1);
        h = (uint64_t)(uintptr_t)m;
    }
    if (r == CUDA_SUCCESS) {
        if (nallocs == (int)(sizeof allocs / sizeof allocs[0]))
            die("too many allocations");
        allocs[nallocs].path = path;
        allocs[nallocs].h = h;
        nallocs++;
    }
    return r;
}

static CUresult do_free(void)
{
    if (nallocs == 0)
        return CUDA_SUCCESS;
    struct allocation a = allocs[--nallocs];
    switch (a.path) {
    case P_MEM:
        if (via == 3)
            return (CUresult)((plugin_free_fn)dlsym(plugin, "tcu_plugin_free"))(a.h);
        return SYM(cuMemFree_v2_fn, "cuMemFree_v2", "cuMemFree")(a.h);
    case P_MEM1:
        return ((cuMemFree_fn)dlsym(via == 0 ? RTLD_DEFAULT : lib, "cuMemFree"))(
            (CUdeviceptr_v1)a.h);
    case P_MANAGED:
    case P_PITCH:
        return SYM(cuMemFree_v2_fn, "cuMemFree_v2", "cuMemFree")(a.h);
    case P_ASYNC:
    case P_POOL:
    case P_MYPOOL:
        return SYM(cuMemFreeAsync_fn, "cuMemFreeAsync", "cuMemFreeAsync")(a.h, NULL);
    case P_ASYNC_PTSZ:
    case P_POOL_PTSZ:
        return SYM(cuMemFreeAsync_fn, ptds || via != 2 ? "cuMemFreeAsync_ptsz" : "cuMemFreeAsync",
                   "cuMemFreeAsync")(a.h, CU_STREAM_PER_THREAD);
    case P_VMM:
        return SYM(cuMemRelease_fn, "cuMemRelease", "cuMemRelease")(a.h);
    case P_ARRAY:
    case P_ARRAY1:
    case P_ARRAY3D:
        return SYM(cuArrayDestroy_fn, "cuArrayDestroy", "cuArrayDestroy")((CUarray)a.h);
    case P_MIPMAP:
        return SYM(cuMipmappedArrayDestroy_fn, "cuMipmappedArrayDestroy",
                   "cuMipmappedArrayDestroy")((CUmipmappedArray)a.h);
    }
    return CUDA_ERROR_INVALID_VALUE;
}

/* NVML through dlopen, initialised, and the handle of device index. */
static void *nvml_device(unsigned index, nvmlDevice_t *d)
{
    void *n = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!n)
        die("no libnvidia-ml.so.1");
    ((nvmlInit_v2_fn)dlsym(n, "nvmlInit_v2"))();
    ((nvmlDeviceGetHandleByIndex_v2_fn)dlsym(n, "nvmlDeviceGetHandleByIndex_v2"))(index, d);
    return n;
}

static void step(char *s);

/* ctxrace: threads that create a context at the same moment. */
static pthread_barrier_t race_barrier;
struct race {
    cuCtxCreate_v2_fn create;
    cuCtxPopCurrent_v2_fn pop;
    CUcontext c;
    CUresult rc;
};

static void *race_one(void *arg)
{
    struct race *r = arg;
    pthread_barrier_wait(&race_barrier);
    r->rc = r->create(&r->c, 0, 0);
    if (r->rc == CUDA_SUCCESS) {
        CUcontext x;
        r->pop(&x); /* current only on this thread, which ends */
    }
    return NULL;
}

struct spin {
    CUcontext c;
    const char *path;
    unsigned long rounds, bad;
};

static void *spin_one(void *arg)
{
    struct spin *sp = arg;
    unsigned char out[65536], in[65536];
    if (SYM(cuCtxSetCurrent_fn, "cuCtxSetCurrent", "cuCtxSetCurrent")(sp->c) != CUDA_SUCCESS) {
        sp->bad++;
        return NULL;
    }
    while (access(sp->path, F_OK) != 0) {
        CUdeviceptr p;
        memset(out, (int)(sp->rounds & 0xff), sizeof out);
        CUresult r = SYM(cuMemAlloc_v2_fn, "cuMemAlloc_v2", "cuMemAlloc")(&p, sizeof out);
        if (r == CUDA_SUCCESS) {
            r = SYM(cuMemcpyHtoD_v2_fn, "cuMemcpyHtoD_v2", "cuMemcpyHtoD")(p, out, sizeof out);
            if (r == CUDA_SUCCESS)
                r = SYM(cuMemcpyDtoH_v2_fn, "cuMemcpyDtoH_v2", "cuMemcpyDtoH")(in, p, sizeof in);
            SYM(cuMemFree_v2_fn, "cuMemFree_v2", "cuMemFree")(p);
        }
        if (r != CUDA_SUCCESS || memcmp(in, out, sizeof in) != 0)
            sp->bad++;
        sp->rounds++;
    }
    return NULL;
}

static uint64_t size_arg(const char *s)
{
    uint64_t v;
    tsl_error_t e;
    if (tsl_parse_size(s, &v, &e) < 0)
        die(e.text);
    return v;
}

static CUevent op_event;
static CUstream op_stream;
static CUlibrary op_lib;    /* the library "lib" loaded */
static CUgraphExec op_exec; /* the executable graph "kerngraph" made */
static CUgraph op_graph;    /* and its graph */
static CUlibrary op_lib2;   /* the library "lib2" loaded */

/* "churn:N": N threads that allocate and free 64 KiB in the current context until "unchurn". */
static pthread_t churners[16];
static int nchurners;
static int churn_stop;
static long churn_rounds; /* alloc-free rounds done, all threads together */
static CUcontext churn_ctx;

static void *churn_one(void *arg)
{
    (void)arg;
    SYM(cuCtxSetCurrent_fn, "cuCtxSetCurrent", "cuCtxSetCurrent")(churn_ctx);
    cuMemAlloc_v2_fn a = SYM(cuMemAlloc_v2_fn, "cuMemAlloc_v2", "cuMemAlloc");
    cuMemFree_v2_fn f = SYM(cuMemFree_v2_fn, "cuMemFree_v2", "cuMemFree");
    while (!__atomic_load_n(&churn_stop, __ATOMIC_RELAXED)) {
        CUdeviceptr p;
        if (a(&p, 64 << 10) == CUDA_SUCCESS)
            f(p);
        __atomic_add_fetch(&churn_rounds, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

/* Kernel name of library from (launched by its CUkernel handle, as the CUDA runtime does)
 * captured on the stream of "strcreate" into a new graph *gr. */
static CUresult capture_kernel(CUlibrary from, const char *name, CUgraph *gr)
{
    CUkernel k = NULL;
    CUresult r =
        SYM(cuLibraryGetKernel_fn, "cuLibraryGetKernel", "cuLibraryGetKernel")(&k, from, name);
    if (r == CUDA_SUCCESS)
        r = SYM(cuStreamBeginCapture_v2_fn, "cuStreamBeginCapture_v2",
                "cuStreamBeginCapture")(op_stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
    if (r != CUDA_SUCCESS)
        return r;
    r = SYM(cuLaunchKernel_fn, "cuLaunchKernel", "cuLaunchKernel")((CUfunction)k, 1, 1, 1, 1, 1, 1,
                                                                   0, op_stream, NULL, NULL);
    CUresult e =
        SYM(cuStreamEndCapture_fn, "cuStreamEndCapture", "cuStreamEndCapture")(op_stream, gr);
    return r == CUDA_SUCCESS ? e : r;
}
static CUcontext op_ctx;            /* the context "ctx" made current */
static uint32_t last32;             /* the word the last writev32 or batch wrote */
static uint64_t last64;             /* the word the last writev64 wrote (batch: 8 bytes on) */
static volatile unsigned host_seen; /* what op:hostfunc's function or op:callback's stored */

static void host_fn(void *user)
{
    host_seen = *(unsigned *)user;
}

static void stream_cb(CUstream s, CUresult status, void *user)
{
    (void)s;
    if (status == CUDA_SUCCESS)
        host_seen = *(unsigned *)user;
}

/* One call of gated entry point `name` (see "op:NAME" above); with check, *ok: its result read
 * back (a copy, itself GPU work), else *ok = 1 when the call succeeded. */
static CUresult op(const char *name, int *ok, int check)
{
    static unsigned round;
    static unsigned char host[4096], back[4096];
    uint64_t base = nallocs ? allocs[0].h : 0;
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    size_t want = 0; /* bytes of `host` expected at base.. (0: nothing to read back) */
    size_t pitch = 1024, row = 256, rows = 4;
    int step_rows = 0; /* 1: compare `rows` rows of `row` bytes, `pitch` apart */
    round++;
    *ok = 0;
    if (strcmp(name, "evrecord") == 0) {
        r = SYM(cuEventRecord_fn, "cuEventRecord", "cuEventRecord")(op_event, NULL);
        if (r == CUDA_SUCCESS)
            *ok = SYM(cuEventQuery_fn, "cuEventQuery", "cuEventQuery")(op_event) == CUDA_SUCCESS;
        return r;
    }
    if (strcmp(name, "evrecordf") == 0) {
        r = SYM(cuEventRecordWithFlags_fn, "cuEventRecordWithFlags",
                "cuEventRecordWithFlags")(op_event, NULL, 0);
        if (r == CUDA_SUCCESS)
            *ok = SYM(cuEventQuery_fn, "cuEventQuery", "cuEventQuery")(op_event) == CUDA_SUCCESS;
        return r;
    }
    if (strcmp(name, "streamquery") == 0) {
        r = SYM(cuStreamQuery_fn, "cuStreamQuery", "cuStreamQuery")(NULL);
        *ok = r == CUDA_SUCCESS;
        return r;
    }
    if (strcmp(name, "hostfunc") == 0 || strcmp(name, "callback") == 0) {
        host_seen = 0;
        if (name[0] == 'h')
            r = SYM(cuLaunchHostFunc_fn, "cuLaunchHostFunc", "cuLaunchHostFunc")(NULL, host_fn,
                                                                                 &round);
        else
            r = SYM(cuStreamAddCallback_fn, "cuStreamAddCallback",
                    "cuStreamAddCallback")(NULL, stream_cb, &round, 0);
        if (r == CUDA_SUCCESS && check)
            r = SYM(cuStreamSynchronize_fn, "cuStreamSynchronize", "cuStreamSynchronize")(NULL);
        *ok = r == CUDA_SUCCESS && (!check || host_seen == round);
        return r;
    }
    if (strcmp(name, "capture") == 0) {
        CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
        CUgraph gr = NULL;
        CUgraphExec x = NULL;
        r = SYM(cuStreamBeginCapture_v2_fn, "cuStreamBeginCapture_v2",
                "cuStreamBeginCapture")(op_stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
        if (r == CUDA_SUCCESS)
            r = SYM(cuStreamIsCapturing_fn, "cuStreamIsCapturing", "cuStreamIsCapturing")(op_stream,
                                                                                          &cs);
        if (r == CUDA_SUCCESS)
            r = SYM(cuStreamEndCapture_fn, "cuStreamEndCapture", "cuStreamEndCapture")(op_stream,
                                                                                       &gr);
        if (r == CUDA_SUCCESS)
            r = SYM(cuGraphInstantiateWithFlags_fn, "cuGraphInstantiateWithFlags",
                    "cuGraphInstantiateWithFlags")(&x, gr, 0);
        if (r == CUDA_SUCCESS)
            r = SYM(cuGraphUpload_fn, "cuGraphUpload", "cuGraphUpload")(x, op_stream);
        if (x)
            SYM(cuGraphExecDestroy_fn, "cuGraphExecDestroy", "cuGraphExecDestroy")(x);
        if (gr)
            SYM(cuGraphDestroy_fn, "cuGraphDestroy", "cuGraphDestroy")(gr);
        *ok = r == CUDA_SUCCESS && cs == CU_STREAM_CAPTURE_STATUS_ACTIVE && gr != NULL;
        return r;
    }
    if (strcmp(name, "ctxget") == 0) {
        CUcontext c = NULL;
        r = SYM(cuCtxGetCurrent_fn, "cuCtxGetCurrent", "cuCtxGetCurrent")(&c);
        *ok = r == CUDA_SUCCESS && c != NULL && c == op_ctx;
        return r;
    }
    if (strcmp(name, "pushpop") == 0) {
        CUcontext c = NULL;
        r = SYM(cuCtxPushCurrent_v2_fn, "cuCtxPushCurrent_v2", "cuCtxPushCurrent")(op_ctx);
        if (r == CUDA_SUCCESS)
            r = SYM(cuCtxPopCurrent_v2_fn, "cuCtxPopCurrent_v2", "cuCtxPopCurrent")(&c);
        *ok = r == CUDA_SUCCESS && c != NULL && c == op_ctx;
        return r;
    }
    if (strcmp(name, "capinfo") == 0) {
        CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
        cuuint64_t id = 0;
        r = SYM(cuStreamGetCaptureInfo_v3_fn,
                ptds ? "cuStreamGetCaptureInfo_v3_ptsz" : "cuStreamGetCaptureInfo_v3",
                "cuStreamGetCaptureInfo")(op_stream, &cs, &id, NULL, NULL, NULL, NULL);
        *ok = r == CUDA_SUCCESS && cs == CU_STREAM_CAPTURE_STATUS_NONE;
        return r;
    }
    if (strcmp(name, "hostmem") == 0) {
        static unsigned char page[4096] __attribute__((aligned(4096)));
        void *h = NULL;
        r = SYM(cuMemHostAlloc_fn, "cuMemHostAlloc", "cuMemHostAlloc")(&h, 4096, 0);
        if (r == CUDA_SUCCESS) {
            memset(h, (int)(round & 0xff), 4096);
            r = SYM(cuMemHostRegister_v2_fn, "cuMemHostRegister_v2",
                    "cuMemHostRegister")(page, sizeof page, 0);
            if (r == CUDA_SUCCESS)
                r = SYM(cuMemHostUnregister_fn, "cuMemHostUnregister", "cuMemHostUnregister")(page);
            CUresult f = SYM(cuMemFreeHost_fn, "cuMemFreeHost", "cuMemFreeHost")(h);
            if (r == CUDA_SUCCESS)
                r = f;
        }
        *ok = r == CUDA_SUCCESS && h != NULL;
        return r;
    }
    if (strcmp(name, "libload") == 0) {
        CUlibrary l = NULL;
        CUmodule mod = NULL;
        r = SYM(cuLibraryLoadData_fn, "cuLibraryLoadData",
                "cuLibraryLoadData")(&l, "tcu-probe library", NULL, NULL, 0, NULL, NULL, 0);
        if (r == CUDA_SUCCESS) {
            r = SYM(cuLibraryGetModule_fn, "cuLibraryGetModule", "cuLibraryGetModule")(&mod, l);
            CUresult u = SYM(cuLibraryUnload_fn, "cuLibraryUnload", "cuLibraryUnload")(l);
            if (r == CUDA_SUCCESS)
                r = u;
        }
        *ok = r == CUDA_SUCCESS && l != NULL && mod != NULL;
        return r;
    }
    if (strcmp(name, "kernel") == 0) {
        CUkernel k = NULL;
        CUfunction f = NULL;
        int threads = 0;
        r = SYM(cuLibraryGetKernel_fn, "cuLibraryGetKernel",
                "cuLibraryGetKernel")(&k, op_lib, "fake_kernel_1us");
        if (r == CUDA_SUCCESS)
            r = SYM(cuKernelGetAttribute_fn, "cuKernelGetAttribute", "cuKernelGetAttribute")(
                &threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k, 0);
        if (r == CUDA_SUCCESS)
            r = SYM(cuKernelGetFunction_fn, "cuKernelGetFunction", "cuKernelGetFunction")(&f, k);
        if (r == CUDA_SUCCESS)
            r = SYM(cuLaunchKernel_fn, "cuLaunchKernel", "cuLaunchKernel")(f, 1, 1, 1, 1, 1, 1, 0,
                                                                           NULL, NULL, NULL);
        if (r == CUDA_SUCCESS)
            r = SYM(cuStreamSynchronize_fn, "cuStreamSynchronize", "cuStreamSynchronize")(NULL);
        *ok = r == CUDA_SUCCESS && f != NULL && threads == 1024;
        return r;
    }
    if (strcmp(name, "devattr") == 0) {
        int v = 0;
        r = SYM(cuDeviceGetAttribute_fn, "cuDeviceGetAttribute",
                "cuDeviceGetAttribute")(&v, CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 0);
        *ok = r == CUDA_SUCCESS && v == 3; /* the fake's copy engines */
        return r;
    }
    if (!base)
        return r;
    if (strncmp(name, "writev", 6) == 0 || strncmp(name, "waitv", 5) == 0) {
        int wide = strcmp(name + strlen(name) - 2, "64") == 0;
        if (name[1] == 'r' && wide) {
            last64 = 0x5EED000000000000ull | round;
            r = SYM(cuStreamWriteValue64_v2_fn, "cuStreamWriteValue64_v2",
                    "cuStreamWriteValue64")(NULL, base, last64, 0);
        } else if (name[1] == 'r') {
            last32 = 0xC0DE0000u | (round & 0xffff);
            r = SYM(cuStreamWriteValue32_v2_fn, "cuStreamWriteValue32_v2",
                    "cuStreamWriteValue32")(NULL, base, last32, 0);
        } else if (wide) {
            r = SYM(cuStreamWaitValue64_v2_fn, "cuStreamWaitValue64_v2",
                    "cuStreamWaitValue64")(NULL, base, last64, CU_STREAM_WAIT_VALUE_EQ);
        } else {
            r = SYM(cuStreamWaitValue32_v2_fn, "cuStreamWaitValue32_v2",
                    "cuStreamWaitValue32")(NULL, base, last32, CU_STREAM_WAIT_VALUE_EQ);
        }
        if (wide)
            memcpy(host, &last64, 8);
        else
            memcpy(host, &last32, 4);
        want = wide ? 8 : 4;
    } else if (strcmp(name, "batch") == 0) {
        CUstreamBatchMemOpParams b[3];
        memset(b, 0, sizeof b);
        last32 = 0xBA700000u | (round & 0xffff);
        last64 = 0xBA7C400000000000ull | round;
        b[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
        b[0].writeValue.address = base;
        b[0].writeValue.value = last32;
        b[1].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
        b[1].writeValue.address = base + 8;
        b[1].writeValue.value64 = last64;
        b[2].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
        b[2].waitValue.address = base;
        b[2].waitValue.value = last32;
        b[2].waitValue.flags = CU_STREAM_WAIT_VALUE_EQ;
        r = SYM(cuStreamBatchMemOp_v2_fn, "cuStreamBatchMemOp_v2", "cuStreamBatchMemOp")(NULL, 3, b,
                                                                                         0);
        memset(host, 0, 16);
        memcpy(host, &last32, 4);
        memcpy(host + 8, &last64, 8);
        want = 16;
    } else if (strcmp(name, "memcpybatch") == 0) {
        pitch = 2048;
        row = 1024;
        rows = 2;
        for (size_t y = 0; y < rows; y++)
            for (size_t x = 0; x < row; x++)
                host[y * pitch + x] = (unsigned char)(round * 17 + y * 3 + x);
        CUdeviceptr dsts[2] = {base, base + pitch};
        CUdeviceptr srcs[2] = {(uintptr_t)host, (uintptr_t)(host + pitch)};
        size_t sizes[2] = {row, row}, idx = 0;
        CUmemcpyAttributes at;
        memset(&at, 0, sizeof at);
        at.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
        r = SYM(cuMemcpyBatchAsync_v2_fn, "cuMemcpyBatchAsync_v2",
                "cuMemcpyBatchAsync")(dsts, srcs, sizes, 2, &at, &idx, 1, op_stream);
        if (r == CUDA_SUCCESS && check)
            r = SYM(cuStreamSynchronize_fn, "cuStreamSynchronize",
                    "cuStreamSynchronize")(op_stream);
        want = pitch + row;
        step_rows = 1;
    } else if (strcmp(name, "copy3dpeer") == 0) {
        for (size_t y = 0; y < rows; y++)
            for (size_t x = 0; x < row; x++)
                host[y * pitch + x] = (unsigned char)(round * 9 + y * 5 + x);
        CUDA_MEMCPY3D_PEER c;
        memset(&c, 0, sizeof c);
        c.srcMemoryType = CU_MEMORYTYPE_HOST;
        c.srcHost = host;
        c.srcContext = op_ctx;
        c.srcPitch = pitch;
        c.srcHeight = 2;
        c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
        c.dstDevice = base;
        c.dstContext = op_ctx;
        c.dstPitch = pitch;
        c.dstHeight = 2;
        c.WidthInBytes = row;
        c.Height = 2;
        c.Depth = 2;
        r = SYM(cuMemcpy3DPeer_fn, "cuMemcpy3DPeer", "cuMemcpy3DPeer")(&c);
        want = pitch * (rows - 1) + row;
        step_rows = 1;
    } else if (strcmp(name, "copy2d1") == 0 || strcmp(name, "copy3d1") == 0) {
        if (base > UINT32_MAX)
            return r; /* not a v1 pointer */
        for (size_t y = 0; y < rows; y++)
            for (size_t x = 0; x < row; x++)
                host[y * pitch + x] = (unsigned char)(round * 11 + y * 3 + x);
        if (name[4] == '2') {
            CUDA_MEMCPY2D_v1 c;
            memset(&c, 0, sizeof c);
            c.srcMemoryType = CU_MEMORYTYPE_HOST;
            c.srcHost = host;
            c.srcPitch = (unsigned)pitch;
            c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
            c.dstDevice = (CUdeviceptr_v1)base;
            c.dstPitch = (unsigned)pitch;
            c.WidthInBytes = (unsigned)row;
            c.Height = (unsigned)rows;
            r = SYM(cuMemcpy2D_fn, "cuMemcpy2D", "cuMemcpy2D")(&c);
        } else {
            CUDA_MEMCPY3D_v1 c;
            memset(&c, 0, sizeof c);
            c.srcMemoryType = CU_MEMORYTYPE_HOST;
            c.srcHost = host;
            c.srcPitch = (unsigned)pitch;
            c.srcHeight = 2;
            c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
            c.dstDevice = (CUdeviceptr_v1)base;
            c.dstPitch = (unsigned)pitch;
            c.dstHeight = 2;
            c.WidthInBytes = (unsigned)row;
            c.Height = 2;
            c.Depth = 2;
            r = SYM(cuMemcpy3DAsync_fn, "cuMemcpy3DAsync", "cuMemcpy3DAsync")(&c, NULL);
        }
        want = pitch * (rows - 1) + row;
        step_rows = 1;
    } else if (strcmp(name, "htodasync1") == 0) {
        if (base > UINT32_MAX)
            return r;
        for (size_t x = 0; x < sizeof host; x++)
            host[x] = (unsigned char)(round * 5 + x);
        r = SYM(cuMemcpyHtoDAsync_fn, "cuMemcpyHtoDAsync",
                "cuMemcpyHtoDAsync")((CUdeviceptr_v1)base, host, sizeof host, NULL);
        if (r == CUDA_SUCCESS && check)
            r = SYM(cuStreamSynchronize_fn, "cuStreamSynchronize", "cuStreamSynchronize")(NULL);
        want = sizeof host;
    } else if (strcmp(name, "copy2d") == 0) {
        memset(host, 0, sizeof host);
        for (size_t y = 0; y < rows; y++)
            for (size_t x = 0; x < row; x++)
                host[y * pitch + x] = (unsigned char)(round + y * 7 + x);
        CUDA_MEMCPY2D c;
        memset(&c, 0, sizeof c);
        c.srcMemoryType = CU_MEMORYTYPE_HOST;
        c.srcHost = host;
        c.srcPitch = pitch;
        c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
        c.dstDevice = base;
        c.dstPitch = pitch;
        c.WidthInBytes = row;
        c.Height = rows;
        r = SYM(cuMemcpy2D_v2_fn, "cuMemcpy2D_v2", "cuMemcpy2D")(&c);
        want = pitch * (rows - 1) + row;
        step_rows = 1;
    } else if (strcmp(name, "copy3d") == 0) {
        /* 2 slices of 2 rows of 256 bytes; rows 1 KiB apart, slices 2 KiB apart (height 2). */
        for (size_t y = 0; y < rows; y++)
            for (size_t x = 0; x < row; x++)
                host[y * pitch + x] = (unsigned char)(round * 3 + y * 5 + x);
        CUDA_MEMCPY3D c;
        memset(&c, 0, sizeof c);
        c.srcMemoryType = CU_MEMORYTYPE_HOST;
        c.srcHost = host;
        c.srcPitch = pitch;
        c.srcHeight = 2;
        c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
        c.dstDevice = base;
        c.dstPitch = pitch;
        c.dstHeight = 2;
        c.WidthInBytes = row;
        c.Height = 2;
        c.Depth = 2;
        r = SYM(cuMemcpy3D_v2_fn, "cuMemcpy3D_v2", "cuMemcpy3D")(&c);
        want = pitch * (rows - 1) + row;
        step_rows = 1;
    } else if (strcmp(name, "memsetd32") == 0 || strcmp(name, "memsetd2d32") == 0) {
        uint32_t v = 0xA5000000u | round;
        int two = name[6] == '2';
        memset(host, 0, sizeof host);
        for (size_t y = 0; y < (two ? rows : 1); y++)
            for (size_t x = 0; x < (two ? row : sizeof host) / 4; x++)
                memcpy(host + y * (two ? pitch : 0) + x * 4, &v, 4);
        if (two)
            r = SYM(cuMemsetD2D32_v2_fn, "cuMemsetD2D32_v2", "cuMemsetD2D32")(base, pitch, v,
                                                                              row / 4, rows);
        else
            r = SYM(cuMemsetD32_v2_fn, "cuMemsetD32_v2", "cuMemsetD32")(base, v, sizeof host / 4);
        want = two ? pitch * (rows - 1) + row : sizeof host;
        step_rows = two;
    } else if (strcmp(name, "addrrange") == 0) {
        CUdeviceptr start = 0;
        size_t size = 0;
        r = SYM(cuMemGetAddressRange_v2_fn, "cuMemGetAddressRange_v2",
                "cuMemGetAddressRange")(&start, &size, base + 100);
        *ok = r == CUDA_SUCCESS && start == base && size > 100;
        return r;
    } else if (strcmp(name, "ptrattr") == 0) {
        CUdeviceptr start = 0;
        r = SYM(cuPointerGetAttribute_fn, "cuPointerGetAttribute",
                "cuPointerGetAttribute")(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, base + 100);
        *ok = r == CUDA_SUCCESS && start == base;
        return r;
    } else if (strcmp(name, "memsetd16") == 0) {
        uint16_t v = (uint16_t)(0x5A00u | (round & 0xff));
        for (size_t x = 0; x < sizeof host / 2; x++)
            memcpy(host + x * 2, &v, 2);
        r = SYM(cuMemsetD16_v2_fn, "cuMemsetD16_v2", "cuMemsetD16")(base, v, sizeof host / 2);
        want = sizeof host;
    } else {
        die("op: unknown operation");
    }
    if (!check) {
        *ok = r == CUDA_SUCCESS;
        return r;
    }
    if (r == CUDA_SUCCESS && want) {
        CUresult b = SYM(cuMemcpyDtoH_v2_fn, "cuMemcpyDtoH_v2", "cuMemcpyDtoH")(back, base, want);
        *ok = b == CUDA_SUCCESS;
        if (strcmp(name, "batch") == 0) /* bytes 4..7: not the batch's */
            memcpy(host + 4, back + 4, 4);
        /* A 2D call writes its rows only: the gaps between them are not compared. */
        for (size_t y = 0; *ok && y < (step_rows ? rows : 1); y++)
            *ok = memcmp(back + y * pitch, host + y * pitch, step_rows ? row : want) == 0;
    }
    return r;
}

static void step(char *s)
{
    char *arg1 = strchr(s, ':');
    char *arg2 = NULL;
    if (arg1) {
        *arg1++ = '\0';
        arg2 = strchr(arg1, ':');
        if (arg2)
            *arg2++ = '\0';
    }
    if (strcmp(s, "ctx") == 0) {
        CUresult r = SYM(cuInit_fn, "cuInit", "cuInit")(0);
        CUcontext c = NULL;
        if (r == CUDA_SUCCESS)
            r = SYM(cuDevicePrimaryCtxRetain_fn, "cuDevicePrimaryCtxRetain",
                    "cuDevicePrimaryCtxRetain")(&c, arg1 ? atoi(arg1) : 0);
        if (r == CUDA_SUCCESS)
            r = SYM(cuCtxSetCurrent_fn, "cuCtxSetCurrent", "cuCtxSetCurrent")(c);
        op_ctx = c;
        printf("ctx rc=%d\n", r);
    } else if (strcmp(s, "ctxcreate") == 0 && arg1) {
        SYM(cuInit_fn, "cuInit", "cuInit")(0);
        CUcontext c = NULL;
        CUresult r;
        int v = atoi(arg1), d = arg2 ? atoi(arg2) : 0;
        if (v == 1)
            r = ((cuCtxCreate_fn)dlsym(via == 0 ? RTLD_DEFAULT : lib, "cuCtxCreate"))(&c, 0, d);
        else if (v == 2)
            r = ((cuCtxCreate_v2_fn)dlsym(via == 0 ? RTLD_DEFAULT : lib, "cuCtxCreate_v2"))(&c, 0,
                                                                                            d);
        else if (v == 3)
            r = ((cuCtxCreate_v3_fn)dlsym(via == 0 ? RTLD_DEFAULT : lib, "cuCtxCreate_v3"))(
                &c, NULL, 0, 0, d);
        else
            r = SYM(cuCtxCreate_v4_fn, "cuCtxCreate_v4", "cuCtxCreate")(&c, NULL, 0, d);
        if (r == CUDA_SUCCESS && ncreated < 64)
            created[ncreated++] = c;
        printf("ctxcreate %d rc=%d\n", v, r);
    } else if (strcmp(s, "ctxrace") == 0 && arg1) {
        SYM(cuInit_fn, "cuInit", "cuInit")(0);
        int n = atoi(arg1);
        if (n < 1 || n > 32)
            die("ctxrace: 1..32 threads");
        pthread_t th[32];
        struct race r[32];
        pthread_barrier_init(&race_barrier, NULL, (unsigned)n);
        for (int i = 0; i < n; i++) {
            r[i].create = SYM(cuCtxCreate_v2_fn, "cuCtxCreate_v2", "cuCtxCreate");
            r[i].pop = SYM(cuCtxPopCurrent_v2_fn, "cuCtxPopCurrent_v2", "cuCtxPopCurrent");
            pthread_create(&th[i], NULL, race_one, &r[i]);
        }
        int ok = 0;
        for (int i = 0; i < n; i++) {
            pthread_join(th[i], NULL);
            if (r[i].rc == CUDA_SUCCESS && ncreated < 64) {
                created[ncreated++] = r[i].c;
                ok++;
            }
        }
        pthread_barrier_destroy(&race_barrier);
        printf("ctxrace ok=%d\n", ok);
    } else if (strcmp(s, "ctxdestroy") == 0) {
        CUresult r = CUDA_ERROR_INVALID_CONTEXT;
        if (ncreated)
            r = SYM(cuCtxDestroy_v2_fn, "cuCtxDestroy_v2", "cuCtxDestroy")(created[--ncreated]);
        printf("ctxdestroy rc=%d\n", r);
    } else if (strcmp(s, "setlimit") == 0 && arg2) {
        CUlimit l = strcmp(arg1, "stack") == 0    ? CU_LIMIT_STACK_SIZE
                    : strcmp(arg1, "printf") == 0 ? CU_LIMIT_PRINTF_FIFO_SIZE
                    : strcmp(arg1, "heap") == 0   ? CU_LIMIT_MALLOC_HEAP_SIZE
                                                  : (CUlimit)atoi(arg1);
        CUresult r =
            SYM(cuCtxSetLimit_fn, "cuCtxSetLimit", "cuCtxSetLimit")(l, (size_t)size_arg(arg2));
        printf("setlimit %s rc=%d\n", arg1, r);
    } else if (strcmp(s, "lib") == 0) {
        CUresult r = SYM(cuLibraryLoadData_fn, "cuLibraryLoadData", "cuLibraryLoadData")(
            &op_lib, "tcu-probe library", NULL, NULL, 0, NULL, NULL, 0);
        printf("lib rc=%d\n", r);
    } else if (strcmp(s, "init") == 0) {
        printf("init rc=%d\n", SYM(cuInit_fn, "cuInit", "cuInit")(0));
    } else if (strcmp(s, "libmod") == 0) {
        CUmodule m = NULL;
        CUresult r =
            SYM(cuLibraryGetModule_fn, "cuLibraryGetModule", "cuLibraryGetModule")(&m, op_lib);
        printf("libmod rc=%d\n", r);
    } else if ((strcmp(s, "libglobal") == 0 || strcmp(s, "libmanaged") == 0) && arg1) {
        CUdeviceptr p = 0;
        size_t n = 0;
        CUresult r = s[3] == 'g' ? SYM(cuLibraryGetGlobal_fn, "cuLibraryGetGlobal",
                                       "cuLibraryGetGlobal")(&p, &n, op_lib, arg1)
                                 : SYM(cuLibraryGetManaged_fn, "cuLibraryGetManaged",
                                       "cuLibraryGetManaged")(&p, &n, op_lib, arg1);
        printf("%s %s rc=%d\n", s, arg1, r);
    } else if (strcmp(s, "kernfunc") == 0 && arg1) {
        CUkernel k = NULL;
        CUfunction f = NULL;
        CUresult r = SYM(cuLibraryGetKernel_fn, "cuLibraryGetKernel",
                         "cuLibraryGetKernel")(&k, op_lib, arg1);
        if (r == CUDA_SUCCESS)
            r = SYM(cuKernelGetFunction_fn, "cuKernelGetFunction", "cuKernelGetFunction")(&f, k);
        printf("kernfunc %s rc=%d\n", arg1, r);
    } else if (strcmp(s, "kernlaunch") == 0 && arg1) {
        CUkernel k = NULL;
        CUresult r = SYM(cuLibraryGetKernel_fn, "cuLibraryGetKernel",
                         "cuLibraryGetKernel")(&k, op_lib, arg1);
        if (r == CUDA_SUCCESS)
            r = SYM(cuLaunchKernel_fn, "cuLaunchKernel",
                    "cuLaunchKernel")((CUfunction)k, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
        if (r == CUDA_SUCCESS)
            r = SYM(cuStreamSynchronize_fn, "cuStreamSynchronize", "cuStreamSynchronize")(NULL);
        printf("kernlaunch %s rc=%d\n", arg1, r);
    } else if (strcmp(s, "poolmanaged") == 0) {
        CUmemPoolProps props;
        CUmemoryPool mp = NULL;
        memset(&props, 0, sizeof props);
        props.allocType = CU_MEM_ALLOCATION_TYPE_MANAGED;
        props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        props.location.id = 0;
        printf("poolmanaged rc=%d\n",
               SYM(cuMemPoolCreate_fn, "cuMemPoolCreate", "cuMemPoolCreate")(&mp, &props));
    } else if (strcmp(s, "lib2") == 0) {
        CUresult r = SYM(cuLibraryLoadData_fn, "cuLibraryLoadData", "cuLibraryLoadData")(
            &op_lib2, "tcu-probe library 2", NULL, NULL, 0, NULL, NULL, 0);
        printf("lib2 rc=%d\n", r);
    } else if (strcmp(s, "graphset") == 0 && arg1) {
        /* Kernel arg1 of "lib2" put into the executable graph's node. */
        CUkernel k = NULL;
        CUgraphNode nd = NULL;
        size_t nn = 1;
        CUresult r = SYM(cuLibraryGetKernel_fn, "cuLibraryGetKernel",
                         "cuLibraryGetKernel")(&k, op_lib2, arg1);
        if (r == CUDA_SUCCESS)
            r = SYM(cuGraphGetNodes_fn, "cuGraphGetNodes", "cuGraphGetNodes")(op_graph, &nd, &nn);
        if (r == CUDA_SUCCESS) {
            CUDA_KERNEL_NODE_PARAMS p = {.func = (CUfunction)k,
                                         .gridDimX = 1,
                                         .gridDimY = 1,
                                         .gridDimZ = 1,
                                         .blockDimX = 1,
                                         .blockDimY = 1,
                                         .blockDimZ = 1};
            r = SYM(cuGraphExecKernelNodeSetParams_v2_fn, "cuGraphExecKernelNodeSetParams_v2",
                    "cuGraphExecKernelNodeSetParams")(op_exec, nd, &p);
        }
        printf("graphset %s rc=%d\n", arg1, r);
    } else if (strcmp(s, "graphupdate") == 0 && arg1) {
        /* Kernel arg1 of "lib2" captured into a new graph, which the executable graph takes. */
        CUgraph gr = NULL;
        CUresult r = capture_kernel(op_lib2, arg1, &gr);
        CUgraphExecUpdateResultInfo info = {0};
        if (r == CUDA_SUCCESS)
            r = SYM(cuGraphExecUpdate_v2_fn, "cuGraphExecUpdate_v2",
                    "cuGraphExecUpdate")(op_exec, gr, &info);
        if (gr)
            SYM(cuGraphDestroy_fn, "cuGraphDestroy", "cuGraphDestroy")(gr);
        printf("graphupdate %s rc=%d result=%d\n", arg1, r, (int)info.result);
    } else if (strcmp(s, "kerngraph") == 0 && arg1) {
        /* Captured on the stream of "strcreate", then instantiated by arg2's entry point. */
        const char *how = arg2 ? arg2 : "flags";
        CUgraph gr = NULL;
        CUresult r = capture_kernel(op_lib, arg1, &gr);
        if (r == CUDA_SUCCESS && strcmp(how, "none") == 0) {
            /* captured only: nothing instantiated */
        } else if (r == CUDA_SUCCESS && strcmp(how, "params") == 0) {
            CUDA_GRAPH_INSTANTIATE_PARAMS ip = {.flags = 2, .hUploadStream = op_stream};
            r = SYM(cuGraphInstantiateWithParams_fn, "cuGraphInstantiateWithParams",
                    "cuGraphInstantiateWithParams")(&op_exec, gr, &ip);
        } else if (r == CUDA_SUCCESS && strcmp(how, "v2") == 0) { /* not through cuGetProcAddress */
            r = SYM(cuGraphInstantiate_v2_fn, "cuGraphInstantiate_v2",
                    "cuGraphInstantiate_v2")(&op_exec, gr, NULL, NULL, 0);
        } else if (r == CUDA_SUCCESS) {
            r = SYM(cuGraphInstantiateWithFlags_fn, "cuGraphInstantiateWithFlags",
                    "cuGraphInstantiate")(&op_exec, gr, 0);
        }
        if (op_graph)
            SYM(cuGraphDestroy_fn, "cuGraphDestroy", "cuGraphDestroy")(op_graph);
        op_graph = gr;
        printf("kerngraph %s rc=%d\n", arg1, r);
    } else if (strcmp(s, "churn") == 0 && arg1) {
        SYM(cuCtxGetCurrent_fn, "cuCtxGetCurrent", "cuCtxGetCurrent")(&churn_ctx);
        __atomic_store_n(&churn_stop, 0, __ATOMIC_RELAXED);
        int n = atoi(arg1);
        __atomic_store_n(&churn_rounds, 0, __ATOMIC_RELAXED);
        for (nchurners = 0; nchurners < n && nchurners < 16; nchurners++)
            pthread_create(&churners[nchurners], NULL, churn_one, NULL);
        /* Under way before the next step: 1000 rounds a thread. */
        while (__atomic_load_n(&churn_rounds, __ATOMIC_RELAXED) < 1000L * nchurners)
            sched_yield();
        printf("churn %d\n", nchurners);
    } else if (strcmp(s, "unchurn") == 0) {
        __atomic_store_n(&churn_stop, 1, __ATOMIC_RELAXED);
        while (nchurners > 0)
            pthread_join(churners[--nchurners], NULL);
        printf("unchurn\n");
    } else if (strcmp(s, "graphlaunch") == 0) {
        CUresult r = SYM(cuGraphLaunch_fn, "cuGraphLaunch", "cuGraphLaunch")(op_exec, op_stream);
        if (r == CUDA_SUCCESS)
            r = SYM(cuStreamSynchronize_fn, "cuStreamSynchronize",
                    "cuStreamSynchronize")(op_stream);
        printf("graphlaunch rc=%d\n", r);
    } else if (strcmp(s, "graphdestroy") == 0) {
        CUresult r =
            SYM(cuGraphExecDestroy_fn, "cuGraphExecDestroy", "cuGraphExecDestroy")(op_exec);
        op_exec = NULL;
        if (op_graph)
            SYM(cuGraphDestroy_fn, "cuGraphDestroy", "cuGraphDestroy")(op_graph);
        op_graph = NULL;
        printf("graphdestroy rc=%d\n", r);
    } else if (strcmp(s, "libunload") == 0) {
        CUresult r = SYM(cuLibraryUnload_fn, "cuLibraryUnload", "cuLibraryUnload")(op_lib);
        printf("libunload rc=%d\n", r);
    } else if (strcmp(s, "modload") == 0) {
        CUmodule m = NULL;
        CUresult r;
        if (!arg1 || strcmp(arg1, "data") == 0) {
            r = SYM(cuModuleLoadData_fn, "cuModuleLoadData", "cuModuleLoadData")(&m,
                                                                                 "tcu-probe image");
        } else if (strcmp(arg1, "ex") == 0) {
            CUjit_option opt[1] = {0}; /* CU_JIT_MAX_REGISTERS */
            void *val[1] = {(void *)(uintptr_t)32};
            r = SYM(cuModuleLoadDataEx_fn, "cuModuleLoadDataEx",
                    "cuModuleLoadDataEx")(&m, "tcu-probe image", 1, opt, val);
        } else if (strcmp(arg1, "fatbin") == 0) {
            r = SYM(cuModuleLoadFatBinary_fn, "cuModuleLoadFatBinary",
                    "cuModuleLoadFatBinary")(&m, "tcu-probe fatbin");
        } else if (strcmp(arg1, "file") == 0) {
            r = SYM(cuModuleLoad_fn, "cuModuleLoad", "cuModuleLoad")(&m, "/proc/self/exe");
        } else {
            die("modload: data, ex, fatbin or file");
        }
        if (r == CUDA_SUCCESS && nmodules < 64)
            modules[nmodules++] = m;
        printf("modload rc=%d\n", r);
    } else if (strcmp(s, "modfunc") == 0 && arg1) {
        CUfunction f = NULL;
        CUresult r = SYM(cuModuleGetFunction_fn, "cuModuleGetFunction",
                         "cuModuleGetFunction")(&f, nmodules ? modules[nmodules - 1] : NULL, arg1);
        printf("modfunc %s rc=%d\n", arg1, r);
    } else if (strcmp(s, "launch") == 0 && arg1) {
        CUfunction f = NULL;
        CUresult r = SYM(cuModuleGetFunction_fn, "cuModuleGetFunction",
                         "cuModuleGetFunction")(&f, nmodules ? modules[nmodules - 1] : NULL, arg1);
        if (r == CUDA_SUCCESS)
            r = SYM(cuLaunchKernel_fn, "cuLaunchKernel", "cuLaunchKernel")(f, 1, 1, 1, 1, 1, 1, 0,
                                                                           NULL, NULL, NULL);
        if (r == CUDA_SUCCESS)
            r = SYM(cuCtxSynchronize_fn, "cuCtxSynchronize", "cuCtxSynchronize")();
        printf("launch %s rc=%d\n", arg1, r);
    } else if (strcmp(s, "launchasync") == 0 && arg1) {
        CUfunction f = NULL;
        CUresult r = SYM(cuModuleGetFunction_fn, "cuModuleGetFunction",
                         "cuModuleGetFunction")(&f, nmodules ? modules[nmodules - 1] : NULL, arg1);
        if (r == CUDA_SUCCESS)
            r = SYM(cuLaunchKernel_fn, "cuLaunchKernel", "cuLaunchKernel")(f, 1, 1, 1, 1, 1, 1, 0,
                                                                           NULL, NULL, NULL);
        printf("launchasync %s rc=%d\n", arg1, r);
    } else if (strcmp(s, "copyuntil") == 0 && arg1) {
        static unsigned char page[4096];
        uint64_t base = nallocs ? allocs[nallocs - 1].h : 0;
        long n = 0, bad = 0;
        while (access(arg1, F_OK) != 0) {
            CUresult r =
                SYM(cuMemcpyHtoD_v2_fn, "cuMemcpyHtoD_v2", "cuMemcpyHtoD")(base, page, sizeof page);
            n++;
            bad += r != CUDA_SUCCESS;
            usleep(100000);
        }
        printf("copyuntil n=%ld bad=%ld\n", n, bad);
    } else if (strcmp(s, "strcreate") == 0) {
        printf("strcreate rc=%d\n",
               SYM(cuStreamCreate_fn, "cuStreamCreate", "cuStreamCreate")(&op_stream, 0));
    } else if (strcmp(s, "evcreate") == 0) {
        printf("evcreate rc=%d\n",
               SYM(cuEventCreate_fn, "cuEventCreate", "cuEventCreate")(&op_event, 0));
    } else if ((strcmp(s, "op") == 0 || strcmp(s, "call") == 0) && arg1) {
        int ok;
        CUresult r = op(arg1, &ok, s[0] == 'o');
        printf("%s %s rc=%d ok=%d\n", s, arg1, r, ok);
    } else if (strcmp(s, "opuntil") == 0 && arg1 && arg2) {
        long n = 0, bad = 0;
        int ok = 0;
        while (access(arg2, F_OK) != 0) {
            n++;
            bad += op(arg1, &ok, 0) != CUDA_SUCCESS;
            usleep(100000);
        }
        bad += op(arg1, &ok, 1) != CUDA_SUCCESS;
        printf("opuntil %s n=%ld bad=%ld ok=%d\n", arg1, n, bad, ok);
    } else if (strcmp(s, "launchuntil") == 0 && arg1 && arg2) {
        CUfunction f = NULL;
        long n = 0, bad = 0;
        CUresult r = SYM(cuModuleGetFunction_fn, "cuModuleGetFunction",
                         "cuModuleGetFunction")(&f, nmodules ? modules[nmodules - 1] : NULL, arg1);
        while (r == CUDA_SUCCESS && access(arg2, F_OK) != 0) {
            CUresult l = SYM(cuLaunchKernel_fn, "cuLaunchKernel",
                             "cuLaunchKernel")(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
            if (l == CUDA_SUCCESS)
                l = SYM(cuCtxSynchronize_fn, "cuCtxSynchronize", "cuCtxSynchronize")();
            n++;
            bad += l != CUDA_SUCCESS;
            usleep(100000);
        }
        printf("launchuntil %s n=%ld bad=%ld rc=%d\n", arg1, n, bad, r);
    } else if (strcmp(s, "modunload") == 0) {
        CUresult r = CUDA_ERROR_INVALID_HANDLE;
        if (nmodules)
            r = SYM(cuModuleUnload_fn, "cuModuleUnload", "cuModuleUnload")(modules[--nmodules]);
        printf("modunload rc=%d\n", r);
    } else if (strcmp(s, "alloc") == 0 && arg2) {
        int p = path_of(arg1);
        printf("alloc %s rc=%d\n", arg1, do_alloc(p, size_arg(arg2)));
    } else if (strcmp(s, "fill") == 0 && arg2) {
        int p = path_of(arg1);
        uint64_t sz = size_arg(arg2), n = 0;
        CUresult r;
        while ((r = do_alloc(p, sz)) == CUDA_SUCCESS && n < 100000)
            n++;
        printf("fill %s n=%llu bytes=%llu rc=%d\n", arg1, (unsigned long long)n,
               (unsigned long long)(n * sz), r);
    } else if (strcmp(s, "free") == 0) {
        printf("free rc=%d\n", do_free());
    } else if (strcmp(s, "freeall") == 0) {
        CUresult r = CUDA_SUCCESS, x;
        while (nallocs)
            if ((x = do_free()) != CUDA_SUCCESS)
                r = x;
        printf("freeall rc=%d\n", r);
    } else if (strcmp(s, "trim") == 0) {
        SYM(cuCtxSynchronize_fn, "cuCtxSynchronize", "cuCtxSynchronize")();
        CUresult r =
            SYM(cuMemPoolTrimTo_fn, "cuMemPoolTrimTo", "cuMemPoolTrimTo")(default_pool(), 0);
        printf("trim rc=%d\n", r);
    } else if (strcmp(s, "pooldestroy") == 0) {
        SYM(cuCtxSynchronize_fn, "cuCtxSynchronize", "cuCtxSynchronize")();
        CUresult r = SYM(cuMemPoolDestroy_fn, "cuMemPoolDestroy", "cuMemPoolDestroy")(mypool);
        mypool = NULL;
        printf("pooldestroy rc=%d\n", r);
    } else if (strcmp(s, "info") == 0) {
        size_t f = 0, t = 0;
        CUresult r = SYM(cuMemGetInfo_v2_fn, "cuMemGetInfo_v2", "cuMemGetInfo")(&f, &t);
        printf("info free=%zu total=%zu rc=%d\n", f, t, r);
    } else if (strcmp(s, "info1") == 0) {
        unsigned f = 0, t = 0;
        CUresult r =
            ((cuMemGetInfo_fn)dlsym(via == 0 ? RTLD_DEFAULT : lib, "cuMemGetInfo"))(&f, &t);
        printf("info1 free=%u total=%u rc=%d\n", f, t, r);
    } else if (strcmp(s, "infonull") == 0) {
        cuMemGetInfo_v2_fn g = SYM(cuMemGetInfo_v2_fn, "cuMemGetInfo_v2", "cuMemGetInfo");
        size_t f = 0, t = 0;
        CUresult a = g(NULL, &t), b = g(&f, NULL), c = g(NULL, NULL);
        printf("infonull total=%zu free=%zu rc=%d,%d,%d\n", t, f, a, b, c);
    } else if (strcmp(s, "totalmem") == 0) {
        size_t t = 0;
        CUresult r = SYM(cuDeviceTotalMem_v2_fn, "cuDeviceTotalMem_v2",
                         "cuDeviceTotalMem")(&t, arg1 ? atoi(arg1) : 0);
        printf("totalmem %zu rc=%d\n", t, r);
    } else if (strcmp(s, "nvml") == 0) {
        void *n = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!n)
            die("no libnvidia-ml.so.1");
        nvmlDevice_t d;
        nvmlMemory_t m;
        nvmlMemory_v2_t m2 = {.version = nvmlMemory_v2};
        ((nvmlInit_v2_fn)dlsym(n, "nvmlInit_v2"))();
        nvmlReturn_t r = ((nvmlDeviceGetHandleByIndex_v2_fn)dlsym(
            n, "nvmlDeviceGetHandleByIndex_v2"))(arg1 ? (unsigned)atoi(arg1) : 0, &d);
        nvmlReturn_t r1 = ((nvmlDeviceGetMemoryInfo_fn)dlsym(n, "nvmlDeviceGetMemoryInfo"))(d, &m);
        nvmlReturn_t r2 =
            ((nvmlDeviceGetMemoryInfo_v2_fn)dlsym(n, "nvmlDeviceGetMemoryInfo_v2"))(d, &m2);
        printf("nvml free=%llu total=%llu used=%llu v2free=%llu v2total=%llu rc=%d,%d,%d\n", m.free,
               m.total, m.used, m2.free, m2.total, r, r1, r2);
    } else if (strcmp(s, "nvmlproc") == 0 && arg1) {
        nvmlDevice_t d;
        void *n = nvml_device(arg2 ? (unsigned)atoi(arg2) : 0, &d);
        nvmlProcessInfo_t infos[64];
        unsigned cnt = 64;
        nvmlReturn_t r = ((nvmlDeviceGetComputeRunningProcesses_v3_fn)dlsym(
            n, "nvmlDeviceGetComputeRunningProcesses_v3"))(d, &cnt, infos);
        unsigned long long used = 0;
        for (unsigned k = 0; r == NVML_SUCCESS && k < cnt; k++)
            if (infos[k].pid == (unsigned)atoi(arg1))
                used = infos[k].usedGpuMemory;
        printf("nvmlproc pid=%s used=%llu rc=%d\n", arg1, used, r);
    } else if (strcmp(s, "nvmlprocs") == 0) {
        nvmlDevice_t d;
        void *n = nvml_device(arg1 ? (unsigned)atoi(arg1) : 0, &d);
        nvmlDeviceGetComputeRunningProcesses_v3_fn v3 =
            (nvmlDeviceGetComputeRunningProcesses_v3_fn)dlsym(
                n, "nvmlDeviceGetComputeRunningProcesses_v3");
        nvmlDeviceGetComputeRunningProcesses_fn v1 = (nvmlDeviceGetComputeRunningProcesses_fn)dlsym(
            n, "nvmlDeviceGetComputeRunningProcesses");
        unsigned zero = 0;
        nvmlReturn_t rq = v3(d, &zero, NULL);
        nvmlProcessInfo_t infos[64];
        nvmlProcessInfo_v1_t infos1[64];
        unsigned c3 = 64, c1 = 64;
        nvmlReturn_t r3 = v3(d, &c3, infos), r1 = v1(d, &c1, infos1);
        printf("nvmlprocs v3=");
        for (unsigned k = 0; r3 == NVML_SUCCESS && k < c3; k++)
            printf("%s%u", k ? "," : "", infos[k].pid);
        printf(" v1=");
        for (unsigned k = 0; r1 == NVML_SUCCESS && k < c1; k++)
            printf("%s%u", k ? "," : "", infos1[k].pid);
        printf(" rc=%d,%d sizeq=%d:%u", r3, r1, rq, zero);
        nvmlDeviceGetRunningProcessDetailList_fn dl =
            (nvmlDeviceGetRunningProcessDetailList_fn)dlsym(
                n, "nvmlDeviceGetRunningProcessDetailList");
        nvmlProcessDetailList_t q = {nvmlProcessDetailList_v1, 0, 0, NULL};
        nvmlReturn_t dq = dl(d, &q);
        unsigned dneed = q.numProcArrayEntries;
        nvmlProcessDetail_v1_t det[64];
        q.numProcArrayEntries = 64;
        q.procArray = det;
        nvmlReturn_t dr = dl(d, &q);
        printf(" detail=");
        for (unsigned k = 0; dr == NVML_SUCCESS && k < q.numProcArrayEntries; k++)
            printf("%s%u", k ? "," : "", det[k].pid);
        nvmlProcessDetailList_t bad = {nvmlProcessDetailList_v1 + (1u << 24), 0, 64, det};
        printf(" drc=%d dsizeq=%d:%u dbadver=%d\n", dr, dq, dneed, dl(d, &bad));
    } else if (strcmp(s, "hold") == 0) {
        printf("holding\n");
        fflush(stdout);
        char c;
        while (read(0, &c, 1) > 0)
            ;
    } else if (strcmp(s, "loop") == 0 && arg1) {
        cuMemAlloc_v2_fn a = SYM(cuMemAlloc_v2_fn, "cuMemAlloc_v2", "cuMemAlloc");
        cuMemFree_v2_fn f = SYM(cuMemFree_v2_fn, "cuMemFree_v2", "cuMemFree");
        cuMemGetInfo_v2_fn g = SYM(cuMemGetInfo_v2_fn, "cuMemGetInfo_v2", "cuMemGetInfo");
        long n = atol(arg1), bad = 0;
        for (long k = 0; k < n; k++) {
            CUdeviceptr p;
            size_t fr, to;
            bad += a(&p, 1 << 20) != CUDA_SUCCESS;
            bad += f(p) != CUDA_SUCCESS;
            bad += g(&fr, &to) != CUDA_SUCCESS;
        }
        printf("loop %ld failures=%ld\n", n, bad);
    } else if (strcmp(s, "forkhold") == 0 && arg1) {
        int pfd[2];
        if (pipe(pfd) < 0)
            die("pipe");
        fflush(stdout);
        child = fork();
        if (child == 0) {
            char ctxstep[] = "ctx";
            step(ctxstep);
            int r = (int)do_alloc(P_MEM, size_arg(arg1));
            if (write(pfd[1], &r, sizeof r) != (ssize_t)sizeof r)
                _exit(3);
            char c;
            while (read(0, &c, 1) > 0)
                ;
            exit(0); /* a clean exit: destructors run */
        }
        int r = -1;
        if (read(pfd[0], &r, sizeof r) != (ssize_t)sizeof r)
            die("child");
        printf("forkhold rc=%d child=%d\n", r, (int)child);
    } else if (strcmp(s, "spawn") == 0 && arg1) {
        char sz[64], alloc[80];
        snprintf(sz, sizeof sz, "%s", arg1);
        snprintf(alloc, sizeof alloc, "alloc:mem:%s", sz);
        const char *vias[] = {"--via=global", "--via=dlsym", "--via=proc", "--via=plugin"};
        char *args[] = {"tcu-probe", (char *)vias[via], "ctx", alloc, NULL};
        fflush(stdout);
        pid_t p = fork();
        if (p == 0) {
            execv("/proc/self/exe", args);
            _exit(127);
        }
        int st = -1;
        if (p > 0)
            waitpid(p, &st, 0);
        printf("spawn status=%d\n", st);
    } else if (strcmp(s, "exec") == 0 && arg1) {
        const char *vias[] = {"--via=global", "--via=dlsym", "--via=proc", "--via=plugin"};
        char *args[64] = {"tcu-probe", (char *)vias[via]};
        int n = 2;
        if (arg2)
            arg2[-1] = ':'; /* the steps keep their own colons */
        for (char *t = strtok(arg1, ","); t && n < 63; t = strtok(NULL, ","))
            args[n++] = t;
        args[n] = NULL;
        printf("exec\n");
        fflush(stdout);
        execv("/proc/self/exe", args);
        die("exec");
    } else if (strcmp(s, "reap") == 0) {
        int st = 0;
        waitpid(child, &st, 0);
        printf("reap status=%d\n", st);
    } else if (strcmp(s, "chain") == 0 && arg1) {
        int depth = atoi(arg1);
        fflush(stdout);
        for (int i = 0; i < depth; i++) {
            pid_t c = fork();
            if (c < 0)
                die("fork");
            if (c > 0) {
                int st = 0;
                while (waitpid(c, &st, 0) < 0 && errno == EINTR) {
                }
                _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
            }
        }
        printf("chain depth=%d pid=%d\n", depth, (int)getpid());
    } else if ((strcmp(s, "pattern") == 0 || strcmp(s, "check") == 0) && arg1) {
        /* The words of each 1 MiB chunk from their offset and the allocation's address: the
         * same bytes at the same address after a suspend, or "bad". */
        uint64_t size = size_arg(arg1) & ~(uint64_t)7, base = nallocs ? allocs[nallocs - 1].h : 0;
        bool check = s[0] == 'c';
        static uint64_t chunk[(1 << 20) / 8];
        CUresult r = base ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
        uint64_t bad = UINT64_MAX;
        for (uint64_t off = 0; r == CUDA_SUCCESS && off < size && bad == UINT64_MAX;
             off += sizeof chunk) {
            size_t n = size - off < sizeof chunk ? (size_t)(size - off) : sizeof chunk;
            if (check)
                r = SYM(cuMemcpyDtoH_v2_fn, "cuMemcpyDtoH_v2", "cuMemcpyDtoH")(chunk, base + off,
                                                                               n);
            for (size_t w = 0; r == CUDA_SUCCESS && w < n / 8; w++) {
                uint64_t want = (off + w * 8) ^ base;
                if (!check)
                    chunk[w] = want;
                else if (chunk[w] != want && bad == UINT64_MAX)
                    bad = off + w * 8;
            }
            if (!check && r == CUDA_SUCCESS)
                r = SYM(cuMemcpyHtoD_v2_fn, "cuMemcpyHtoD_v2", "cuMemcpyHtoD")(base + off, chunk,
                                                                               n);
        }
        if (!check)
            printf("pattern rc=%d\n", r);
        else if (r == CUDA_SUCCESS && bad == UINT64_MAX)
            printf("check ok\n");
        else
            printf("check bad at %llu rc=%d\n", (unsigned long long)(bad == UINT64_MAX ? 0 : bad),
                   r);
    } else if (strcmp(s, "spin") == 0 && arg1 && arg2) {
        int n = atoi(arg1);
        if (n < 1 || n > 64)
            die("spin: 1..64 threads");
        struct spin sp[64];
        pthread_t th[64];
        CUcontext c = NULL;
        SYM(cuCtxGetCurrent_fn, "cuCtxGetCurrent", "cuCtxGetCurrent")(&c);
        for (int i = 0; i < n; i++) {
            sp[i] = (struct spin){c, arg2, 0, 0};
            pthread_create(&th[i], NULL, spin_one, &sp[i]);
        }
        unsigned long rounds = 0, bad = 0;
        for (int i = 0; i < n; i++) {
            pthread_join(th[i], NULL);
            rounds += sp[i].rounds;
            bad += sp[i].bad;
        }
        printf("spin threads=%d rounds=%lu bad=%lu\n", n, rounds, bad);
    } else if (strcmp(s, "ckptrestore") == 0 && arg1) {
        SYM(cuInit_fn, "cuInit", "cuInit")(0);
        void *h = via == 0 ? RTLD_DEFAULT : lib;
        cuCheckpointProcessRestore_fn rs =
            (cuCheckpointProcessRestore_fn)dlsym(h, "cuCheckpointProcessRestore");
        cuCheckpointProcessUnlock_fn ul =
            (cuCheckpointProcessUnlock_fn)dlsym(h, "cuCheckpointProcessUnlock");
        int pid = atoi(arg1);
        /* Each half said at once: a job that takes memory back may be killed meanwhile. */
        printf("ckptrestore restore=%d", rs ? (int)rs(pid, NULL) : -1);
        fflush(stdout);
        printf(" unlock=%d\n", ul ? (int)ul(pid, NULL) : -1);
    } else if (strcmp(s, "waitfile") == 0 && arg1) {
        while (access(arg1, F_OK) != 0)
            usleep(1000);
        printf("go\n");
    } else if (strcmp(s, "uuid") == 0 && arg1) {
        CUuuid u;
        memset(&u, 0, sizeof u);
        CUresult r = SYM(cuDeviceGetUuid_fn, "cuDeviceGetUuid", "cuDeviceGetUuid")(&u, atoi(arg1));
        const unsigned char *b = (const unsigned char *)u.bytes;
        printf("uuid GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x "
               "rc=%d\n",
               b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
               b[13], b[14], b[15], r);
    } else if (strcmp(s, "where") == 0) {
        /* The newest allocation as the fake driver sees it: "where managed=0|1 resident=R
         * pref=T accessed=MASK" (R: -1 the host, else the device holding the pages; T: the
         * preferred location's CUmemLocationType, 0 none). */
        typedef int (*managed_fn)(unsigned long long, int *, int *, int *, unsigned long long *);
        managed_fn f = (managed_fn)dlsym(lib, "tessel_fake_managed");
        int res = 0, pt = 0, pid = 0;
        unsigned long long acc = 0;
        int m = f && nallocs && f(allocs[nallocs - 1].h, &res, &pt, &pid, &acc) == 0;
        printf("where managed=%d resident=%d pref=%d accessed=%llu\n", m, m ? res : 0, pt, acc);
    } else if ((strcmp(s, "prefetch") == 0 || strcmp(s, "prefetch2") == 0) && arg2) {
        int cpu = strcmp(arg1, "cpu") == 0;
        CUdevice d = cpu ? CU_DEVICE_CPU : atoi(arg1);
        CUdeviceptr p = nallocs ? allocs[nallocs - 1].h : 0;
        CUresult r;
        if (s[8] == '2') {
            CUmemLocation l = {cpu ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE,
                               cpu ? 0 : d};
            r = SYM(cuMemPrefetchAsync_v2_fn,
                    ptds ? "cuMemPrefetchAsync_v2_ptsz" : "cuMemPrefetchAsync_v2",
                    "cuMemPrefetchAsync")(p, size_arg(arg2), l, 0, NULL);
        } else {
            r = SYM(cuMemPrefetchAsync_fn, ptds ? "cuMemPrefetchAsync_ptsz" : "cuMemPrefetchAsync",
                    "cuMemPrefetchAsync")(p, size_arg(arg2), d, NULL);
        }
        printf("prefetch rc=%d\n", r);
    } else if ((strcmp(s, "batch") == 0 || strcmp(s, "dbatch") == 0) && arg2) {
        int cpu = strcmp(arg1, "cpu") == 0;
        CUmemLocation l = {cpu ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE,
                           cpu ? 0 : atoi(arg1)};
        CUdeviceptr p = nallocs ? allocs[nallocs - 1].h : 0;
        size_t n = (size_t)size_arg(arg2), idx = 0;
        CUresult r;
        if (s[0] == 'd')
            r = SYM(cuMemDiscardAndPrefetchBatchAsync_fn,
                    ptds ? "cuMemDiscardAndPrefetchBatchAsync_ptsz"
                         : "cuMemDiscardAndPrefetchBatchAsync",
                    "cuMemDiscardAndPrefetchBatchAsync")(&p, &n, 1, &l, &idx, 1, 0, NULL);
        else
            r = SYM(cuMemPrefetchBatchAsync_fn,
                    ptds ? "cuMemPrefetchBatchAsync_ptsz" : "cuMemPrefetchBatchAsync",
                    "cuMemPrefetchBatchAsync")(&p, &n, 1, &l, &idx, 1, 0, NULL);
        printf("batch rc=%d\n", r);
    } else if ((strcmp(s, "advise") == 0 || strcmp(s, "advise2") == 0) && arg2) {
        static const char *const names[] = {"",         "readmostly", "unreadmostly", "prefer",
                                            "unprefer", "accessed",   "unaccessed"};
        CUmem_advise a = 0;
        for (int i = 1; i < 7; i++)
            if (strcmp(arg1, names[i]) == 0)
                a = (CUmem_advise)i;
        if (!a)
            die("advise: unknown advice");
        int cpu = strcmp(arg2, "cpu") == 0;
        CUdevice d = cpu ? CU_DEVICE_CPU : atoi(arg2);
        CUdeviceptr p = nallocs ? allocs[nallocs - 1].h : 0;
        CUresult r;
        if (s[6] == '2') {
            CUmemLocation l = {cpu ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE,
                               cpu ? 0 : d};
            r = SYM(cuMemAdvise_v2_fn, "cuMemAdvise_v2", "cuMemAdvise")(p, 1u << 20, a, l);
        } else {
            r = SYM(cuMemAdvise_fn, "cuMemAdvise", "cuMemAdvise")(p, 1u << 20, a, d);
        }
        printf("advise rc=%d\n", r);
    } else if (strcmp(s, "calls") == 0 && arg1) {
        typedef unsigned long long (*calls_fn)(const char *);
        calls_fn f = (calls_fn)dlsym(lib, "tessel_fake_calls");
        printf("calls %s %llu\n", arg1, f ? f(arg1) : 0ull);
    } else {
        die("unknown step");
    }
    fflush(stdout);
}

int main(int argc, char **argv)
{
    int i = 1;
    for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
        if (strcmp(argv[i], "--via=global") == 0)
            via = 0;
        else if (strcmp(argv[i], "--via=dlsym") == 0)
            via = 1;
        else if (strcmp(argv[i], "--via=proc") == 0)
            via = 2;
        else if (strcmp(argv[i], "--via=plugin") == 0)
            via = 3;
        else if (strcmp(argv[i], "--ptds") == 0)
            ptds = 1;
        else
            die("unknown option");
    }
    lib = dlopen("libcuda.so.1", RTLD_NOW | (via == 0 ? RTLD_GLOBAL : RTLD_LOCAL));
    if (!lib)
        die(dlerror());
    if (via == 2)
        gpa = (cuGetProcAddress_v2_fn)dlsym(lib, "cuGetProcAddress_v2");
    if (via == 3) {
        const char *p = getenv("TCU_PLUGIN");
        plugin = dlopen(p ? p : "tcu-plugin.so", RTLD_NOW | RTLD_LOCAL);
        if (!plugin)
            die(dlerror());
    }
    for (; i < argc; i++)
        step(argv[i]);
    return 0;
}
