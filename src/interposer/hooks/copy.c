/* copy.c - copies, memsets and synchronisations (idle reclamation, docs/suspend.md).
 *
 * Nothing is charged or checked here: these hooks exist so that a job reclaimed while idle is
 * stopped before its call reaches the driver (tcu_enter: the driver holds a checkpointed
 * process's calls where nothing sees them; the interposer asks tesseld for the restore and
 * waits), and so that a copy or a memset counts as GPU work (the slice's work word, as a
 * launch).  A synchronisation waits for work already counted: it is not work itself.  One load
 * and, for a copy, one more when the word is already set: nothing on the driver's path.
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
