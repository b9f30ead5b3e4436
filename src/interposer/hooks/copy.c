/* copy.c - copies, memsets, stream memory operations, synchronisations, streams, events, host
 * functions and callbacks, stream capture and graph upload (idle reclamation, docs/suspend.md).
 *
 * Nothing is charged or checked here: these hooks exist so that a job reclaimed while idle is
 * stopped before its call reaches the driver (tcu_enter: the driver holds a checkpointed
 * process's calls where nothing sees them; the interposer asks tesseld for the restore and
 * waits), and so that a copy, a memset or a stream memory operation counts as GPU work (the
 * slice's work word, as a launch).  A synchronisation waits for work already counted, and a
 * stream or an event is created, queried, waited on or destroyed around work: they are gated,
 * not work.  One load and, for a copy, one more when the word is already set: nothing on the
 * driver's path.
 *
 * Which calls, and why (docs/suspend.md, "What counts as GPU work" and "The next CUDA call"):
 * the copies and memsets of linear device memory the fake driver models too (v1 pre-3.2 with
 * 32-bit sizes, _v2, _ptds/_ptsz, Async; 1D, 2D, 3D, 1D and 3D peer, 1D batches; 8-, 16- and
 * 32-bit sets), the stream memory operations (work too), and the stream, event, host-function,
 * callback, capture and graph-upload calls a program makes between its launches (gated only).
 * Not (yet) hooked, listed in docs/suspend.md, "Not done (item 3)": array copies, 3D batch
 * copies, and the families after them there.
 * Signatures: cuda.h 13.0, through src/common/cudaabi/cuda_abi.h.
 */
#include "interposer/interposer.h"

/* A copy or a memset: GPU work. */
#define WORK(name, params, args)                                                                   \
    TCU_EXPORT CUresult name params                                                                \
    {                                                                                              \
        tcu_enter();                                                                               \
        name##_fn real = TCU_REAL(name);                                                           \
        if (TCU_UNLIKELY(!real))                                                                   \
            return CUDA_ERROR_NOT_INITIALIZED;                                                     \
        if (TCU_LIKELY(tcu.slice != NULL))                                                         \
            tshm_note_work(tcu.slice);                                                             \
        return real args;                                                                          \
    }

/* A synchronisation: only stopped for a reclaimed slice. */
#define GATE(name, params, args)                                                                   \
    TCU_EXPORT CUresult name params                                                                \
    {                                                                                              \
        tcu_enter();                                                                               \
        name##_fn real = TCU_REAL(name);                                                           \
        if (TCU_UNLIKELY(!real))                                                                   \
            return CUDA_ERROR_NOT_INITIALIZED;                                                     \
        return real args;                                                                          \
    }

WORK(cuMemcpy, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount), (dst, src, ByteCount))
WORK(cuMemcpy_ptds, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount), (dst, src, ByteCount))
WORK(cuMemcpyAsync, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream),
     (dst, src, ByteCount, hStream))
WORK(cuMemcpyAsync_ptsz, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream),
     (dst, src, ByteCount, hStream))
WORK(cuMemcpyHtoD_v2, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount),
     (dstDevice, srcHost, ByteCount))
WORK(cuMemcpyHtoD_v2_ptds, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount),
     (dstDevice, srcHost, ByteCount))
WORK(cuMemcpyDtoH_v2, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount),
     (dstHost, srcDevice, ByteCount))
WORK(cuMemcpyDtoH_v2_ptds, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount),
     (dstHost, srcDevice, ByteCount))
WORK(cuMemcpyDtoD_v2, (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount),
     (dstDevice, srcDevice, ByteCount))
WORK(cuMemcpyDtoD_v2_ptds, (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount),
     (dstDevice, srcDevice, ByteCount))
WORK(cuMemcpyHtoDAsync_v2,
     (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream),
     (dstDevice, srcHost, ByteCount, hStream))
WORK(cuMemcpyHtoDAsync_v2_ptsz,
     (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream),
     (dstDevice, srcHost, ByteCount, hStream))
WORK(cuMemcpyDtoHAsync_v2,
     (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream),
     (dstHost, srcDevice, ByteCount, hStream))
WORK(cuMemcpyDtoHAsync_v2_ptsz,
     (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream),
     (dstHost, srcDevice, ByteCount, hStream))
WORK(cuMemcpyDtoDAsync_v2,
     (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream),
     (dstDevice, srcDevice, ByteCount, hStream))
WORK(cuMemcpyDtoDAsync_v2_ptsz,
     (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream),
     (dstDevice, srcDevice, ByteCount, hStream))
WORK(cuMemsetD8_v2, (CUdeviceptr dstDevice, unsigned char uc, size_t N), (dstDevice, uc, N))
WORK(cuMemsetD8_v2_ptds, (CUdeviceptr dstDevice, unsigned char uc, size_t N), (dstDevice, uc, N))
WORK(cuMemsetD8Async, (CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream),
     (dstDevice, uc, N, hStream))
WORK(cuMemsetD8Async_ptsz, (CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream),
     (dstDevice, uc, N, hStream))
GATE(cuStreamSynchronize, (CUstream hStream), (hStream))
GATE(cuStreamSynchronize_ptsz, (CUstream hStream), (hStream))
GATE(cuCtxSynchronize, (void), ())
GATE(cuCtxSynchronize_v2, (CUcontext ctx), (ctx))
GATE(cuEventSynchronize, (CUevent hEvent), (hEvent))

/* The v1 (pre-3.2) exports: 32-bit sizes, for programs built against CUDA 3.1 or older (the 2D
 * and 3D ones take the v1 layouts, CUDA_MEMCPY2D_v1 and CUDA_MEMCPY3D_v1). */
WORK(cuMemcpyHtoD, (CUdeviceptr_v1 dstDevice, const void *srcHost, unsigned int ByteCount),
     (dstDevice, srcHost, ByteCount))
WORK(cuMemcpyDtoH, (void *dstHost, CUdeviceptr_v1 srcDevice, unsigned int ByteCount),
     (dstHost, srcDevice, ByteCount))
WORK(cuMemcpyDtoD, (CUdeviceptr_v1 dstDevice, CUdeviceptr_v1 srcDevice, unsigned int ByteCount),
     (dstDevice, srcDevice, ByteCount))
WORK(cuMemsetD8, (CUdeviceptr_v1 dstDevice, unsigned char uc, unsigned int N), (dstDevice, uc, N))
WORK(cuMemsetD16, (CUdeviceptr_v1 dstDevice, unsigned short us, unsigned int N), (dstDevice, us, N))
WORK(cuMemsetD32, (CUdeviceptr_v1 dstDevice, unsigned int ui, unsigned int N), (dstDevice, ui, N))
WORK(cuMemsetD2D8,
     (CUdeviceptr_v1 dstDevice, unsigned int dstPitch, unsigned char uc, unsigned int Width,
      unsigned int Height),
     (dstDevice, dstPitch, uc, Width, Height))
WORK(cuMemsetD2D16,
     (CUdeviceptr_v1 dstDevice, unsigned int dstPitch, unsigned short us, unsigned int Width,
      unsigned int Height),
     (dstDevice, dstPitch, us, Width, Height))
WORK(cuMemsetD2D32,
     (CUdeviceptr_v1 dstDevice, unsigned int dstPitch, unsigned int ui, unsigned int Width,
      unsigned int Height),
     (dstDevice, dstPitch, ui, Width, Height))

WORK(cuMemcpyHtoDAsync,
     (CUdeviceptr_v1 dstDevice, const void *srcHost, unsigned int ByteCount, CUstream hStream),
     (dstDevice, srcHost, ByteCount, hStream))
WORK(cuMemcpyDtoHAsync,
     (void *dstHost, CUdeviceptr_v1 srcDevice, unsigned int ByteCount, CUstream hStream),
     (dstHost, srcDevice, ByteCount, hStream))
WORK(cuMemcpyDtoDAsync,
     (CUdeviceptr_v1 dstDevice, CUdeviceptr_v1 srcDevice, unsigned int ByteCount, CUstream hStream),
     (dstDevice, srcDevice, ByteCount, hStream))
WORK(cuMemcpy2D, (const CUDA_MEMCPY2D_v1 *pCopy), (pCopy))
WORK(cuMemcpy2DUnaligned, (const CUDA_MEMCPY2D_v1 *pCopy), (pCopy))
WORK(cuMemcpy2DAsync, (const CUDA_MEMCPY2D_v1 *pCopy, CUstream hStream), (pCopy, hStream))
WORK(cuMemcpy3D, (const CUDA_MEMCPY3D_v1 *pCopy), (pCopy))
WORK(cuMemcpy3DAsync, (const CUDA_MEMCPY3D_v1 *pCopy, CUstream hStream), (pCopy, hStream))

/* Peer copies, 1D and 3D: between two contexts (devices); work of the job whichever GPUs. */
WORK(cuMemcpyPeer,
     (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext,
      size_t ByteCount),
     (dstDevice, dstContext, srcDevice, srcContext, ByteCount))
WORK(cuMemcpyPeer_ptds,
     (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext,
      size_t ByteCount),
     (dstDevice, dstContext, srcDevice, srcContext, ByteCount))
WORK(cuMemcpyPeerAsync,
     (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext,
      size_t ByteCount, CUstream hStream),
     (dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream))
WORK(cuMemcpyPeerAsync_ptsz,
     (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext,
      size_t ByteCount, CUstream hStream),
     (dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream))

WORK(cuMemcpy3DPeer, (const CUDA_MEMCPY3D_PEER *pCopy), (pCopy))
WORK(cuMemcpy3DPeer_ptds, (const CUDA_MEMCPY3D_PEER *pCopy), (pCopy))
WORK(cuMemcpy3DPeerAsync, (const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream), (pCopy, hStream))
WORK(cuMemcpy3DPeerAsync_ptsz, (const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream),
     (pCopy, hStream))

/* Batches of 1D copies (CUDA 12.8 with failIdx, 13.0's _v2 without). */
WORK(cuMemcpyBatchAsync,
     (CUdeviceptr * dsts, CUdeviceptr *srcs, size_t *sizes, size_t count, CUmemcpyAttributes *attrs,
      size_t *attrsIdxs, size_t numAttrs, size_t *failIdx, CUstream hStream),
     (dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, hStream))
WORK(cuMemcpyBatchAsync_ptsz,
     (CUdeviceptr * dsts, CUdeviceptr *srcs, size_t *sizes, size_t count, CUmemcpyAttributes *attrs,
      size_t *attrsIdxs, size_t numAttrs, size_t *failIdx, CUstream hStream),
     (dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, hStream))
WORK(cuMemcpyBatchAsync_v2,
     (CUdeviceptr * dsts, CUdeviceptr *srcs, size_t *sizes, size_t count, CUmemcpyAttributes *attrs,
      size_t *attrsIdxs, size_t numAttrs, CUstream hStream),
     (dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, hStream))
WORK(cuMemcpyBatchAsync_v2_ptsz,
     (CUdeviceptr * dsts, CUdeviceptr *srcs, size_t *sizes, size_t count, CUmemcpyAttributes *attrs,
      size_t *attrsIdxs, size_t numAttrs, CUstream hStream),
     (dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, hStream))

/* 2D copies (pitched, arrays on either side). */
WORK(cuMemcpy2D_v2, (const CUDA_MEMCPY2D *pCopy), (pCopy))
WORK(cuMemcpy2D_v2_ptds, (const CUDA_MEMCPY2D *pCopy), (pCopy))
WORK(cuMemcpy2DUnaligned_v2, (const CUDA_MEMCPY2D *pCopy), (pCopy))
WORK(cuMemcpy2DUnaligned_v2_ptds, (const CUDA_MEMCPY2D *pCopy), (pCopy))
WORK(cuMemcpy2DAsync_v2, (const CUDA_MEMCPY2D *pCopy, CUstream hStream), (pCopy, hStream))
WORK(cuMemcpy2DAsync_v2_ptsz, (const CUDA_MEMCPY2D *pCopy, CUstream hStream), (pCopy, hStream))

/* 3D copies (slices of pitched rows, arrays on either side). */
WORK(cuMemcpy3D_v2, (const CUDA_MEMCPY3D *pCopy), (pCopy))
WORK(cuMemcpy3D_v2_ptds, (const CUDA_MEMCPY3D *pCopy), (pCopy))
WORK(cuMemcpy3DAsync_v2, (const CUDA_MEMCPY3D *pCopy, CUstream hStream), (pCopy, hStream))
WORK(cuMemcpy3DAsync_v2_ptsz, (const CUDA_MEMCPY3D *pCopy, CUstream hStream), (pCopy, hStream))

/* 16- and 32-bit sets and the 2D sets of each width. */
WORK(cuMemsetD16_v2, (CUdeviceptr dstDevice, unsigned short us, size_t N), (dstDevice, us, N))
WORK(cuMemsetD16_v2_ptds, (CUdeviceptr dstDevice, unsigned short us, size_t N), (dstDevice, us, N))
WORK(cuMemsetD16Async, (CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream),
     (dstDevice, us, N, hStream))
WORK(cuMemsetD16Async_ptsz, (CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream),
     (dstDevice, us, N, hStream))
WORK(cuMemsetD32_v2, (CUdeviceptr dstDevice, unsigned int ui, size_t N), (dstDevice, ui, N))
WORK(cuMemsetD32_v2_ptds, (CUdeviceptr dstDevice, unsigned int ui, size_t N), (dstDevice, ui, N))
WORK(cuMemsetD32Async, (CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream),
     (dstDevice, ui, N, hStream))
WORK(cuMemsetD32Async_ptsz, (CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream),
     (dstDevice, ui, N, hStream))
WORK(cuMemsetD2D8_v2,
     (CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height),
     (dstDevice, dstPitch, uc, Width, Height))
WORK(cuMemsetD2D8_v2_ptds,
     (CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height),
     (dstDevice, dstPitch, uc, Width, Height))
WORK(cuMemsetD2D8Async,
     (CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height,
      CUstream hStream),
     (dstDevice, dstPitch, uc, Width, Height, hStream))
WORK(cuMemsetD2D8Async_ptsz,
     (CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height,
      CUstream hStream),
     (dstDevice, dstPitch, uc, Width, Height, hStream))
WORK(cuMemsetD2D16_v2,
     (CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width, size_t Height),
     (dstDevice, dstPitch, us, Width, Height))
WORK(cuMemsetD2D16_v2_ptds,
     (CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width, size_t Height),
     (dstDevice, dstPitch, us, Width, Height))
WORK(cuMemsetD2D16Async,
     (CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width, size_t Height,
      CUstream hStream),
     (dstDevice, dstPitch, us, Width, Height, hStream))
WORK(cuMemsetD2D16Async_ptsz,
     (CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width, size_t Height,
      CUstream hStream),
     (dstDevice, dstPitch, us, Width, Height, hStream))
WORK(cuMemsetD2D32_v2,
     (CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height),
     (dstDevice, dstPitch, ui, Width, Height))
WORK(cuMemsetD2D32_v2_ptds,
     (CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height),
     (dstDevice, dstPitch, ui, Width, Height))
WORK(cuMemsetD2D32Async,
     (CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height,
      CUstream hStream),
     (dstDevice, dstPitch, ui, Width, Height, hStream))
WORK(cuMemsetD2D32Async_ptsz,
     (CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height,
      CUstream hStream),
     (dstDevice, dstPitch, ui, Width, Height, hStream))

/* Events: created, recorded on a stream, queried, timed, destroyed.  The interposer's own
 * events (compute.c) go to the driver directly, not through these. */
GATE(cuEventCreate, (CUevent * phEvent, unsigned int Flags), (phEvent, Flags))
GATE(cuEventRecord, (CUevent hEvent, CUstream hStream), (hEvent, hStream))
GATE(cuEventRecord_ptsz, (CUevent hEvent, CUstream hStream), (hEvent, hStream))
GATE(cuEventRecordWithFlags, (CUevent hEvent, CUstream hStream, unsigned int flags),
     (hEvent, hStream, flags))
GATE(cuEventRecordWithFlags_ptsz, (CUevent hEvent, CUstream hStream, unsigned int flags),
     (hEvent, hStream, flags))
GATE(cuEventQuery, (CUevent hEvent), (hEvent))
GATE(cuEventElapsedTime, (float *pMilliseconds, CUevent hStart, CUevent hEnd),
     (pMilliseconds, hStart, hEnd))
GATE(cuEventElapsedTime_v2, (float *pMilliseconds, CUevent hStart, CUevent hEnd),
     (pMilliseconds, hStart, hEnd))
GATE(cuEventDestroy, (CUevent hEvent), (hEvent))
GATE(cuEventDestroy_v2, (CUevent hEvent), (hEvent))

/* Streams: created, queried, made to wait for an event, destroyed. */
GATE(cuStreamCreate, (CUstream * phStream, unsigned int Flags), (phStream, Flags))
GATE(cuStreamCreateWithPriority, (CUstream * phStream, unsigned int flags, int priority),
     (phStream, flags, priority))
GATE(cuStreamDestroy, (CUstream hStream), (hStream))
GATE(cuStreamDestroy_v2, (CUstream hStream), (hStream))
GATE(cuStreamQuery, (CUstream hStream), (hStream))
GATE(cuStreamQuery_ptsz, (CUstream hStream), (hStream))
GATE(cuStreamWaitEvent, (CUstream hStream, CUevent hEvent, unsigned int Flags),
     (hStream, hEvent, Flags))
GATE(cuStreamWaitEvent_ptsz, (CUstream hStream, CUevent hEvent, unsigned int Flags),
     (hStream, hEvent, Flags))

/* Stream memory operations: a 32- or 64-bit word of device memory written or waited for in
 * stream order, alone or in a batch; GPU work, as a memset is (a wait is how one GPU job's
 * streams and another's, or the host's, hand work over).  The unversioned exports are CUDA 8's
 * (64-bit ones CUDA 9's), the _v2 ones CUDA 11.7's, which cuda.h 13's names stand for. */
WORK(cuStreamWriteValue32,
     (CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags),
     (stream, addr, value, flags))
WORK(cuStreamWriteValue32_ptsz,
     (CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags),
     (stream, addr, value, flags))
WORK(cuStreamWriteValue32_v2,
     (CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags),
     (stream, addr, value, flags))
WORK(cuStreamWriteValue32_v2_ptsz,
     (CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags),
     (stream, addr, value, flags))
WORK(cuStreamWaitValue32, (CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags),
     (stream, addr, value, flags))
WORK(cuStreamWaitValue32_ptsz,
     (CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags),
     (stream, addr, value, flags))
WORK(cuStreamWaitValue32_v2,
     (CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags),
     (stream, addr, value, flags))
WORK(cuStreamWaitValue32_v2_ptsz,
     (CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags),
     (stream, addr, value, flags))
WORK(cuStreamWriteValue64,
     (CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags),
     (stream, addr, value, flags))
WORK(cuStreamWriteValue64_ptsz,
     (CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags),
     (stream, addr, value, flags))
WORK(cuStreamWriteValue64_v2,
     (CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags),
     (stream, addr, value, flags))
WORK(cuStreamWriteValue64_v2_ptsz,
     (CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags),
     (stream, addr, value, flags))
WORK(cuStreamWaitValue64, (CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags),
     (stream, addr, value, flags))
WORK(cuStreamWaitValue64_ptsz,
     (CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags),
     (stream, addr, value, flags))
WORK(cuStreamWaitValue64_v2,
     (CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags),
     (stream, addr, value, flags))
WORK(cuStreamWaitValue64_v2_ptsz,
     (CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags),
     (stream, addr, value, flags))
WORK(cuStreamBatchMemOp,
     (CUstream stream, unsigned int count, CUstreamBatchMemOpParams *paramArray,
      unsigned int flags),
     (stream, count, paramArray, flags))
WORK(cuStreamBatchMemOp_ptsz,
     (CUstream stream, unsigned int count, CUstreamBatchMemOpParams *paramArray,
      unsigned int flags),
     (stream, count, paramArray, flags))
WORK(cuStreamBatchMemOp_v2,
     (CUstream stream, unsigned int count, CUstreamBatchMemOpParams *paramArray,
      unsigned int flags),
     (stream, count, paramArray, flags))
WORK(cuStreamBatchMemOp_v2_ptsz,
     (CUstream stream, unsigned int count, CUstreamBatchMemOpParams *paramArray,
      unsigned int flags),
     (stream, count, paramArray, flags))

/* Host functions and stream callbacks: the host's code run in stream order; gated, not work (the
 * CPU works, not the GPU). */
GATE(cuLaunchHostFunc, (CUstream hStream, CUhostFn fn, void *userData), (hStream, fn, userData))
GATE(cuLaunchHostFunc_ptsz, (CUstream hStream, CUhostFn fn, void *userData),
     (hStream, fn, userData))
GATE(cuStreamAddCallback,
     (CUstream hStream, CUstreamCallback callback, void *userData, unsigned int flags),
     (hStream, callback, userData, flags))
GATE(cuStreamAddCallback_ptsz,
     (CUstream hStream, CUstreamCallback callback, void *userData, unsigned int flags),
     (hStream, callback, userData, flags))

/* Stream capture: a capture records the stream's work into a graph instead of running it (the
 * graph's upload and launch: module.c and launch.c); gated, not work.  The interposer's own look at
 * capture (compute.c, its events are not recorded into a capture) calls the driver's
 * cuStreamIsCapturing directly. */
GATE(cuStreamBeginCapture, (CUstream hStream), (hStream))
GATE(cuStreamBeginCapture_ptsz, (CUstream hStream), (hStream))
GATE(cuStreamBeginCapture_v2, (CUstream hStream, CUstreamCaptureMode mode), (hStream, mode))
GATE(cuStreamBeginCapture_v2_ptsz, (CUstream hStream, CUstreamCaptureMode mode), (hStream, mode))
GATE(cuStreamEndCapture, (CUstream hStream, CUgraph *phGraph), (hStream, phGraph))
GATE(cuStreamEndCapture_ptsz, (CUstream hStream, CUgraph *phGraph), (hStream, phGraph))
GATE(cuStreamIsCapturing, (CUstream hStream, CUstreamCaptureStatus *captureStatus),
     (hStream, captureStatus))
GATE(cuStreamIsCapturing_ptsz, (CUstream hStream, CUstreamCaptureStatus *captureStatus),
     (hStream, captureStatus))
