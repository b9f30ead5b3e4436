/* query.c - the driver's query calls a program makes before and around its work: the current
 * context (cuCtxGetCurrent, cuCtxSetCurrent, cuCtxGetDevice, cuCtxPushCurrent, cuCtxPopCurrent:
 * the CUDA runtime's nearly every call), a stream's capture (cuStreamGetCaptureInfo: PyTorch's
 * allocator at every allocation), attributes of pointers, functions and devices
 * (cuPointerGetAttribute(s), cuFuncGetAttribute, cuDeviceGetAttribute), an allocation's range
 * (cuMemGetAddressRange), and page-locked host
 * memory (cuMemAllocHost, cuMemHostAlloc, cuMemFreeHost, cuMemHostRegister, cuMemHostUnregister:
 * host memory the driver pins and maps, no GPU memory, nothing charged).
 *
 * Gated, never GPU work (docs/suspend.md, "The next CUDA call"): a job reclaimed while idle is
 * stopped before the call reaches the driver, which holds a checkpointed process's calls where
 * nothing sees them (tcu_enter asks tesseld for the restore and waits); the call does not set the
 * slice's work word, so a program that only asks is still idle.  One load on the fast path, as
 * the other gated calls.  The interposer's own uses of these calls (compute.c, interposer.c,
 * hooks/context.c) go to the driver's pointers (TCU_REAL), never through these hooks: nothing
 * the interposer does inside a gate comes back to it.
 *
 * Which variants: those the CUDA 13 runtime asks cuGetProcAddress for
 * ($TESSEL_SHARED/cuda/cudart13_requests.tsv) and the exports a program links against: the v1
 * (pre-4.0) push and pop too, cuCtxGetDevice_v2 (13.0), cuStreamGetCaptureInfo v1 (10.1), _v2
 * (11.3) and _v3 (12.3), each with its per-thread-default-stream (_ptsz) export,
 * cuMemAllocHost v1 and _v2 (3.2), cuMemHostRegister's _v2 (6.5; its 4.0 export is not hooked),
 * cuMemGetAddressRange v1 and _v2 (3.2).
 * Signatures: cuda.h 13.0, through src/common/cudaabi/cuda_abi.h.
 */
#include "interposer/interposer.h"

#define QUERY(name, params, args)                                                                  \
    TCU_EXPORT CUresult name params                                                                \
    {                                                                                              \
        tcu_enter();                                                                               \
        name##_fn real = TCU_REAL(name);                                                           \
        if (TCU_UNLIKELY(!real))                                                                   \
            return CUDA_ERROR_NOT_INITIALIZED;                                                     \
        return real args;                                                                          \
    }

/* The current context. */
QUERY(cuCtxSetCurrent, (CUcontext ctx), (ctx))
QUERY(cuCtxGetCurrent, (CUcontext * pctx), (pctx))
QUERY(cuCtxGetDevice, (CUdevice * device), (device))
QUERY(cuCtxGetDevice_v2, (CUdevice * device, CUcontext ctx), (device, ctx))
QUERY(cuCtxPushCurrent, (CUcontext ctx), (ctx))
QUERY(cuCtxPushCurrent_v2, (CUcontext ctx), (ctx))
QUERY(cuCtxPopCurrent, (CUcontext * pctx), (pctx))
QUERY(cuCtxPopCurrent_v2, (CUcontext * pctx), (pctx))

/* A stream's capture. */
QUERY(cuStreamGetCaptureInfo,
      (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out),
      (hStream, captureStatus_out, id_out))
QUERY(cuStreamGetCaptureInfo_ptsz,
      (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out),
      (hStream, captureStatus_out, id_out))
QUERY(cuStreamGetCaptureInfo_v2,
      (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out,
       CUgraph *graph_out, const CUgraphNode **dependencies_out, size_t *numDependencies_out),
      (hStream, captureStatus_out, id_out, graph_out, dependencies_out, numDependencies_out))
QUERY(cuStreamGetCaptureInfo_v2_ptsz,
      (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out,
       CUgraph *graph_out, const CUgraphNode **dependencies_out, size_t *numDependencies_out),
      (hStream, captureStatus_out, id_out, graph_out, dependencies_out, numDependencies_out))
QUERY(cuStreamGetCaptureInfo_v3,
      (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out,
       CUgraph *graph_out, const CUgraphNode **dependencies_out,
       const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out),
      (hStream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out,
       numDependencies_out))
QUERY(cuStreamGetCaptureInfo_v3_ptsz,
      (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out,
       CUgraph *graph_out, const CUgraphNode **dependencies_out,
       const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out),
      (hStream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out,
       numDependencies_out))

/* Attributes of pointers, functions and devices. */
QUERY(cuPointerGetAttribute, (void *data, CUpointer_attribute attribute, CUdeviceptr ptr),
      (data, attribute, ptr))
QUERY(cuPointerGetAttributes,
      (unsigned int numAttributes, CUpointer_attribute *attributes, void **data, CUdeviceptr ptr),
      (numAttributes, attributes, data, ptr))
QUERY(cuDeviceGetAttribute, (int *pi, CUdevice_attribute attrib, CUdevice dev), (pi, attrib, dev))

/* A function's attribute: the handle may be a kernel's (a CUkernel passed as a function, as the
 * CUDA runtime does), whose query may place it in the context (review RV17 H3): measured as a
 * first use, charged to the context (hooks/module.c, tcu_lazy_begin). */
TCU_EXPORT CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
    tcu_enter();
    cuFuncGetAttribute_fn real = TCU_REAL(cuFuncGetAttribute);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    uint64_t key = (uint64_t)(uintptr_t)hfunc;
    struct tcu_lazy l;
    tcu_lazy_begin(&l, key, TCU_LAZY_QUERY);
    return tcu_lazy_end(&l, real(pi, attrib, hfunc), 0);
}

/* An allocation's range (the CUDA runtime's cudaPointerGetAttributes, PyTorch's IPC). */
QUERY(cuMemGetAddressRange, (CUdeviceptr_v1 * pbase, unsigned int *psize, CUdeviceptr_v1 dptr),
      (pbase, psize, dptr))
QUERY(cuMemGetAddressRange_v2, (CUdeviceptr * pbase, size_t *psize, CUdeviceptr dptr),
      (pbase, psize, dptr))

/* Page-locked host memory. */
QUERY(cuMemAllocHost, (void **pp, unsigned int bytesize), (pp, bytesize))
QUERY(cuMemAllocHost_v2, (void **pp, size_t bytesize), (pp, bytesize))
QUERY(cuMemHostAlloc, (void **pp, size_t bytesize, unsigned int Flags), (pp, bytesize, Flags))
QUERY(cuMemFreeHost, (void *p), (p))
QUERY(cuMemHostRegister_v2, (void *p, size_t bytesize, unsigned int Flags), (p, bytesize, Flags))
QUERY(cuMemHostUnregister, (void *p), (p))
