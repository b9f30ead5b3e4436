/* symbols.h - every entry point libtessel-cuda hooks, in one table.
 *
 * TCU_CUDA_SYMBOLS(X) lists the driver exports, each as
 *     X(exported name, base name cuGetProcAddress is asked for,
 *       CUDA version that introduced this variant, per-thread-stream variant)
 * following the version macros of cuda.h (e.g. cuMemAlloc_v2 replaced
 * cuMemAlloc in 3.2 = 3020; cuLaunchKernel_ptsz appeared in 7.0 = 7000).
 * TCU_NVML_SYMBOLS(X) lists the NVML exports.  The version script
 * libtessel-cuda.map must list exactly these names plus dlsym; the test
 * t0512-interposer-exports.t checks it against the built library.
 *
 * Adding a hook: add its line here, define the function with TCU_EXPORT in
 * the hooks/ file of its family, call the driver through TCU_REAL(name), and
 * add the name to the version script.
 */
#ifndef TESSEL_INTERPOSER_SYMBOLS_H
#define TESSEL_INTERPOSER_SYMBOLS_H

#include "cudaabi/cuda_abi.h"
#include "cudaabi/nvml_abi.h"

#define TCU_CUDA_SYMBOLS(X)                                                                        \
    X(cuInit, "cuInit", 2000, 0)                                                                   \
    X(cuGetProcAddress, "cuGetProcAddress", 11030, 0)                                              \
    X(cuGetProcAddress_v2, "cuGetProcAddress", 12000, 0)                                           \
    X(cuMemGetInfo, "cuMemGetInfo", 2000, 0)                                                       \
    X(cuMemGetInfo_v2, "cuMemGetInfo", 3020, 0)                                                    \
    X(cuDeviceTotalMem, "cuDeviceTotalMem", 2000, 0)                                               \
    X(cuDeviceTotalMem_v2, "cuDeviceTotalMem", 3020, 0)                                            \
    X(cuMemAlloc, "cuMemAlloc", 2000, 0)                                                           \
    X(cuMemAlloc_v2, "cuMemAlloc", 3020, 0)                                                        \
    X(cuMemAllocPitch, "cuMemAllocPitch", 2000, 0)                                                 \
    X(cuMemAllocPitch_v2, "cuMemAllocPitch", 3020, 0)                                              \
    X(cuMemAllocManaged, "cuMemAllocManaged", 6000, 0)                                             \
    X(cuMemFree, "cuMemFree", 2000, 0)                                                             \
    X(cuMemFree_v2, "cuMemFree", 3020, 0)                                                          \
    X(cuMemAdvise, "cuMemAdvise", 8000, 0)                                                         \
    X(cuMemAdvise_v2, "cuMemAdvise", 12020, 0)                                                     \
    X(cuMemPrefetchAsync, "cuMemPrefetchAsync", 8000, 0)                                           \
    X(cuMemPrefetchAsync_ptsz, "cuMemPrefetchAsync", 8000, 1)                                      \
    X(cuMemPrefetchAsync_v2, "cuMemPrefetchAsync", 12020, 0)                                       \
    X(cuMemPrefetchAsync_v2_ptsz, "cuMemPrefetchAsync", 12020, 1)                                  \
    X(cuMemPrefetchBatchAsync, "cuMemPrefetchBatchAsync", 13000, 0)                                \
    X(cuMemPrefetchBatchAsync_ptsz, "cuMemPrefetchBatchAsync", 13000, 1)                           \
    X(cuMemDiscardAndPrefetchBatchAsync, "cuMemDiscardAndPrefetchBatchAsync", 13000, 0)            \
    X(cuMemDiscardAndPrefetchBatchAsync_ptsz, "cuMemDiscardAndPrefetchBatchAsync", 13000, 1)       \
    X(cuMemAllocAsync, "cuMemAllocAsync", 11020, 0)                                                \
    X(cuMemAllocAsync_ptsz, "cuMemAllocAsync", 11020, 1)                                           \
    X(cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", 11020, 0)                                \
    X(cuMemAllocFromPoolAsync_ptsz, "cuMemAllocFromPoolAsync", 11020, 1)                           \
    X(cuMemFreeAsync, "cuMemFreeAsync", 11020, 0)                                                  \
    X(cuMemFreeAsync_ptsz, "cuMemFreeAsync", 11020, 1)                                             \
    X(cuMemPoolCreate, "cuMemPoolCreate", 11020, 0)                                                \
    X(cuMemPoolDestroy, "cuMemPoolDestroy", 11020, 0)                                              \
    X(cuMemPoolTrimTo, "cuMemPoolTrimTo", 11020, 0)                                                \
    X(cuMemCreate, "cuMemCreate", 10020, 0)                                                        \
    X(cuMemRelease, "cuMemRelease", 10020, 0)                                                      \
    X(cuArrayCreate, "cuArrayCreate", 2000, 0)                                                     \
    X(cuArrayCreate_v2, "cuArrayCreate", 3020, 0)                                                  \
    X(cuArray3DCreate, "cuArray3DCreate", 2000, 0)                                                 \
    X(cuArray3DCreate_v2, "cuArray3DCreate", 3020, 0)                                              \
    X(cuArrayDestroy, "cuArrayDestroy", 2000, 0)                                                   \
    X(cuMipmappedArrayCreate, "cuMipmappedArrayCreate", 5000, 0)                                   \
    X(cuMipmappedArrayDestroy, "cuMipmappedArrayDestroy", 5000, 0)                                 \
    X(cuCtxCreate, "cuCtxCreate", 2000, 0)                                                         \
    X(cuCtxCreate_v2, "cuCtxCreate", 3020, 0)                                                      \
    X(cuCtxCreate_v3, "cuCtxCreate", 11040, 0)                                                     \
    X(cuCtxCreate_v4, "cuCtxCreate", 12050, 0)                                                     \
    X(cuCtxDestroy, "cuCtxDestroy", 2000, 0)                                                       \
    X(cuCtxDestroy_v2, "cuCtxDestroy", 4000, 0)                                                    \
    X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 7000, 0)                               \
    X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease", 7000, 0)                             \
    X(cuDevicePrimaryCtxRelease_v2, "cuDevicePrimaryCtxRelease", 11000, 0)                         \
    X(cuDevicePrimaryCtxReset, "cuDevicePrimaryCtxReset", 7000, 0)                                 \
    X(cuDevicePrimaryCtxReset_v2, "cuDevicePrimaryCtxReset", 11000, 0)                             \
    X(cuLaunchKernel, "cuLaunchKernel", 4000, 0)                                                   \
    X(cuLaunchKernel_ptsz, "cuLaunchKernel", 7000, 1)                                              \
    X(cuLaunchKernelEx, "cuLaunchKernelEx", 11060, 0)                                              \
    X(cuLaunchKernelEx_ptsz, "cuLaunchKernelEx", 11060, 1)                                         \
    X(cuLaunchCooperativeKernel, "cuLaunchCooperativeKernel", 9000, 0)                             \
    X(cuLaunchCooperativeKernel_ptsz, "cuLaunchCooperativeKernel", 9000, 1)                        \
    X(cuLaunchCooperativeKernelMultiDevice, "cuLaunchCooperativeKernelMultiDevice", 9000, 0)       \
    X(cuCtxSetLimit, "cuCtxSetLimit", 3010, 0)                                                     \
    X(cuModuleLoad, "cuModuleLoad", 2000, 0)                                                       \
    X(cuModuleLoadData, "cuModuleLoadData", 2000, 0)                                               \
    X(cuModuleLoadDataEx, "cuModuleLoadDataEx", 2010, 0)                                           \
    X(cuModuleLoadFatBinary, "cuModuleLoadFatBinary", 2000, 0)                                     \
    X(cuModuleGetFunction, "cuModuleGetFunction", 2000, 0)                                         \
    X(cuModuleUnload, "cuModuleUnload", 2000, 0)                                                   \
    X(cuLibraryLoadData, "cuLibraryLoadData", 12000, 0)                                            \
    X(cuLibraryLoadFromFile, "cuLibraryLoadFromFile", 12000, 0)                                    \
    X(cuLibraryUnload, "cuLibraryUnload", 12000, 0)                                                \
    X(cuLibraryGetKernel, "cuLibraryGetKernel", 12000, 0)                                          \
    X(cuLibraryGetModule, "cuLibraryGetModule", 12000, 0)                                          \
    X(cuKernelGetFunction, "cuKernelGetFunction", 12000, 0)                                        \
    X(cuLibraryGetGlobal, "cuLibraryGetGlobal", 12000, 0)                                          \
    X(cuLibraryGetManaged, "cuLibraryGetManaged", 12000, 0)                                        \
    X(cuKernelGetAttribute, "cuKernelGetAttribute", 12000, 0)                                      \
    X(cuKernelSetAttribute, "cuKernelSetAttribute", 12000, 0)                                      \
    X(cuGraphLaunch, "cuGraphLaunch", 10000, 0)                                                    \
    X(cuGraphLaunch_ptsz, "cuGraphLaunch", 10000, 1)                                               \
    X(cuGraphInstantiate, "cuGraphInstantiate", 10000, 0)                                          \
    X(cuGraphInstantiate_v2, "cuGraphInstantiate", 11000, 0)                                       \
    X(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags", 11040, 0)                        \
    X(cuGraphInstantiateWithParams, "cuGraphInstantiateWithParams", 12000, 0)                      \
    X(cuGraphInstantiateWithParams_ptsz, "cuGraphInstantiateWithParams", 12000, 1)                 \
    X(cuGraphExecDestroy, "cuGraphExecDestroy", 10000, 0)                                          \
    X(cuGraphExecKernelNodeSetParams, "cuGraphExecKernelNodeSetParams", 10010, 0)                  \
    X(cuGraphExecKernelNodeSetParams_v2, "cuGraphExecKernelNodeSetParams", 12000, 0)               \
    X(cuGraphExecUpdate, "cuGraphExecUpdate", 10020, 0)                                            \
    X(cuGraphExecUpdate_v2, "cuGraphExecUpdate", 12000, 0)                                         \
    X(cuGraphExecChildGraphNodeSetParams, "cuGraphExecChildGraphNodeSetParams", 11010, 0)          \
    X(cuGraphExecNodeSetParams, "cuGraphExecNodeSetParams", 12020, 0)                              \
    X(cuMemcpy, "cuMemcpy", 4000, 0)                                                               \
    X(cuMemcpy_ptds, "cuMemcpy", 7000, 1)                                                          \
    X(cuMemcpyAsync, "cuMemcpyAsync", 4000, 0)                                                     \
    X(cuMemcpyAsync_ptsz, "cuMemcpyAsync", 7000, 1)                                                \
    X(cuMemcpyHtoD_v2, "cuMemcpyHtoD", 3020, 0)                                                    \
    X(cuMemcpyHtoD_v2_ptds, "cuMemcpyHtoD", 7000, 1)                                               \
    X(cuMemcpyDtoH_v2, "cuMemcpyDtoH", 3020, 0)                                                    \
    X(cuMemcpyDtoH_v2_ptds, "cuMemcpyDtoH", 7000, 1)                                               \
    X(cuMemcpyDtoD_v2, "cuMemcpyDtoD", 3020, 0)                                                    \
    X(cuMemcpyDtoD_v2_ptds, "cuMemcpyDtoD", 7000, 1)                                               \
    X(cuMemcpyHtoDAsync_v2, "cuMemcpyHtoDAsync", 3020, 0)                                          \
    X(cuMemcpyHtoDAsync_v2_ptsz, "cuMemcpyHtoDAsync", 7000, 1)                                     \
    X(cuMemcpyDtoHAsync_v2, "cuMemcpyDtoHAsync", 3020, 0)                                          \
    X(cuMemcpyDtoHAsync_v2_ptsz, "cuMemcpyDtoHAsync", 7000, 1)                                     \
    X(cuMemcpyDtoDAsync_v2, "cuMemcpyDtoDAsync", 3020, 0)                                          \
    X(cuMemcpyDtoDAsync_v2_ptsz, "cuMemcpyDtoDAsync", 7000, 1)                                     \
    X(cuMemsetD8_v2, "cuMemsetD8", 3020, 0)                                                        \
    X(cuMemsetD8_v2_ptds, "cuMemsetD8", 7000, 1)                                                   \
    X(cuMemsetD8Async, "cuMemsetD8Async", 3020, 0)                                                 \
    X(cuMemsetD8Async_ptsz, "cuMemsetD8Async", 7000, 1)                                            \
    X(cuStreamSynchronize, "cuStreamSynchronize", 2000, 0)                                         \
    X(cuStreamSynchronize_ptsz, "cuStreamSynchronize", 7000, 1)                                    \
    X(cuCtxSynchronize, "cuCtxSynchronize", 2000, 0)                                               \
    X(cuCtxSynchronize_v2, "cuCtxSynchronize", 13000, 0)                                           \
    X(cuEventSynchronize, "cuEventSynchronize", 2000, 0)                                           \
    X(cuMemcpyHtoD, "cuMemcpyHtoD", 2000, 0)                                                       \
    X(cuMemcpyDtoH, "cuMemcpyDtoH", 2000, 0)                                                       \
    X(cuMemcpyDtoD, "cuMemcpyDtoD", 2000, 0)                                                       \
    X(cuMemsetD8, "cuMemsetD8", 2000, 0)                                                           \
    X(cuMemcpyPeer, "cuMemcpyPeer", 4000, 0)                                                       \
    X(cuMemcpyPeer_ptds, "cuMemcpyPeer", 7000, 1)                                                  \
    X(cuMemcpyPeerAsync, "cuMemcpyPeerAsync", 4000, 0)                                             \
    X(cuMemcpyPeerAsync_ptsz, "cuMemcpyPeerAsync", 7000, 1)                                        \
    X(cuMemcpy2D_v2, "cuMemcpy2D", 3020, 0)                                                        \
    X(cuMemcpy2D_v2_ptds, "cuMemcpy2D", 7000, 1)                                                   \
    X(cuMemcpy2DUnaligned_v2, "cuMemcpy2DUnaligned", 3020, 0)                                      \
    X(cuMemcpy2DUnaligned_v2_ptds, "cuMemcpy2DUnaligned", 7000, 1)                                 \
    X(cuMemcpy2DAsync_v2, "cuMemcpy2DAsync", 3020, 0)                                              \
    X(cuMemcpy2DAsync_v2_ptsz, "cuMemcpy2DAsync", 7000, 1)                                         \
    X(cuMemcpy3D_v2, "cuMemcpy3D", 3020, 0)                                                        \
    X(cuMemcpy3D_v2_ptds, "cuMemcpy3D", 7000, 1)                                                   \
    X(cuMemcpy3DAsync_v2, "cuMemcpy3DAsync", 3020, 0)                                              \
    X(cuMemcpy3DAsync_v2_ptsz, "cuMemcpy3DAsync", 7000, 1)                                         \
    X(cuMemsetD16, "cuMemsetD16", 2000, 0)                                                         \
    X(cuMemsetD16_v2, "cuMemsetD16", 3020, 0)                                                      \
    X(cuMemsetD16_v2_ptds, "cuMemsetD16", 7000, 1)                                                 \
    X(cuMemsetD16Async, "cuMemsetD16Async", 3020, 0)                                               \
    X(cuMemsetD16Async_ptsz, "cuMemsetD16Async", 7000, 1)                                          \
    X(cuMemsetD32, "cuMemsetD32", 2000, 0)                                                         \
    X(cuMemsetD32_v2, "cuMemsetD32", 3020, 0)                                                      \
    X(cuMemsetD32_v2_ptds, "cuMemsetD32", 7000, 1)                                                 \
    X(cuMemsetD32Async, "cuMemsetD32Async", 3020, 0)                                               \
    X(cuMemsetD32Async_ptsz, "cuMemsetD32Async", 7000, 1)                                          \
    X(cuMemsetD2D8, "cuMemsetD2D8", 2000, 0)                                                       \
    X(cuMemsetD2D8_v2, "cuMemsetD2D8", 3020, 0)                                                    \
    X(cuMemsetD2D8_v2_ptds, "cuMemsetD2D8", 7000, 1)                                               \
    X(cuMemsetD2D8Async, "cuMemsetD2D8Async", 3020, 0)                                             \
    X(cuMemsetD2D8Async_ptsz, "cuMemsetD2D8Async", 7000, 1)                                        \
    X(cuMemsetD2D16, "cuMemsetD2D16", 2000, 0)                                                     \
    X(cuMemsetD2D16_v2, "cuMemsetD2D16", 3020, 0)                                                  \
    X(cuMemsetD2D16_v2_ptds, "cuMemsetD2D16", 7000, 1)                                             \
    X(cuMemsetD2D16Async, "cuMemsetD2D16Async", 3020, 0)                                           \
    X(cuMemsetD2D16Async_ptsz, "cuMemsetD2D16Async", 7000, 1)                                      \
    X(cuMemsetD2D32, "cuMemsetD2D32", 2000, 0)                                                     \
    X(cuMemsetD2D32_v2, "cuMemsetD2D32", 3020, 0)                                                  \
    X(cuMemsetD2D32_v2_ptds, "cuMemsetD2D32", 7000, 1)                                             \
    X(cuMemsetD2D32Async, "cuMemsetD2D32Async", 3020, 0)                                           \
    X(cuMemsetD2D32Async_ptsz, "cuMemsetD2D32Async", 7000, 1)                                      \
    X(cuEventCreate, "cuEventCreate", 2000, 0)                                                     \
    X(cuEventRecord, "cuEventRecord", 2000, 0)                                                     \
    X(cuEventRecord_ptsz, "cuEventRecord", 7000, 1)                                                \
    X(cuEventRecordWithFlags, "cuEventRecordWithFlags", 11010, 0)                                  \
    X(cuEventRecordWithFlags_ptsz, "cuEventRecordWithFlags", 11010, 1)                             \
    X(cuEventQuery, "cuEventQuery", 2000, 0)                                                       \
    X(cuEventElapsedTime, "cuEventElapsedTime", 2000, 0)                                           \
    X(cuEventElapsedTime_v2, "cuEventElapsedTime", 12080, 0)                                       \
    X(cuEventDestroy, "cuEventDestroy", 2000, 0)                                                   \
    X(cuEventDestroy_v2, "cuEventDestroy", 4000, 0)                                                \
    X(cuStreamCreate, "cuStreamCreate", 2000, 0)                                                   \
    X(cuStreamCreateWithPriority, "cuStreamCreateWithPriority", 5050, 0)                           \
    X(cuStreamDestroy, "cuStreamDestroy", 2000, 0)                                                 \
    X(cuStreamDestroy_v2, "cuStreamDestroy", 4000, 0)                                              \
    X(cuStreamQuery, "cuStreamQuery", 2000, 0)                                                     \
    X(cuStreamQuery_ptsz, "cuStreamQuery", 7000, 1)                                                \
    X(cuStreamWaitEvent, "cuStreamWaitEvent", 3020, 0)                                             \
    X(cuStreamWaitEvent_ptsz, "cuStreamWaitEvent", 7000, 1)                                        \
    X(cuStreamWriteValue32, "cuStreamWriteValue32", 8000, 0)                                       \
    X(cuStreamWriteValue32_ptsz, "cuStreamWriteValue32", 8000, 1)                                  \
    X(cuStreamWriteValue32_v2, "cuStreamWriteValue32", 11070, 0)                                   \
    X(cuStreamWriteValue32_v2_ptsz, "cuStreamWriteValue32", 11070, 1)                              \
    X(cuStreamWaitValue32, "cuStreamWaitValue32", 8000, 0)                                         \
    X(cuStreamWaitValue32_ptsz, "cuStreamWaitValue32", 8000, 1)                                    \
    X(cuStreamWaitValue32_v2, "cuStreamWaitValue32", 11070, 0)                                     \
    X(cuStreamWaitValue32_v2_ptsz, "cuStreamWaitValue32", 11070, 1)                                \
    X(cuStreamWriteValue64, "cuStreamWriteValue64", 9000, 0)                                       \
    X(cuStreamWriteValue64_ptsz, "cuStreamWriteValue64", 9000, 1)                                  \
    X(cuStreamWriteValue64_v2, "cuStreamWriteValue64", 11070, 0)                                   \
    X(cuStreamWriteValue64_v2_ptsz, "cuStreamWriteValue64", 11070, 1)                              \
    X(cuStreamWaitValue64, "cuStreamWaitValue64", 9000, 0)                                         \
    X(cuStreamWaitValue64_ptsz, "cuStreamWaitValue64", 9000, 1)                                    \
    X(cuStreamWaitValue64_v2, "cuStreamWaitValue64", 11070, 0)                                     \
    X(cuStreamWaitValue64_v2_ptsz, "cuStreamWaitValue64", 11070, 1)                                \
    X(cuStreamBatchMemOp, "cuStreamBatchMemOp", 8000, 0)                                           \
    X(cuStreamBatchMemOp_ptsz, "cuStreamBatchMemOp", 8000, 1)                                      \
    X(cuStreamBatchMemOp_v2, "cuStreamBatchMemOp", 11070, 0)                                       \
    X(cuStreamBatchMemOp_v2_ptsz, "cuStreamBatchMemOp", 11070, 1)                                  \
    X(cuLaunchHostFunc, "cuLaunchHostFunc", 10000, 0)                                              \
    X(cuLaunchHostFunc_ptsz, "cuLaunchHostFunc", 10000, 1)                                         \
    X(cuStreamAddCallback, "cuStreamAddCallback", 5000, 0)                                         \
    X(cuStreamAddCallback_ptsz, "cuStreamAddCallback", 7000, 1)                                    \
    X(cuStreamBeginCapture, "cuStreamBeginCapture", 10000, 0)                                      \
    X(cuStreamBeginCapture_ptsz, "cuStreamBeginCapture", 10000, 1)                                 \
    X(cuStreamBeginCapture_v2, "cuStreamBeginCapture", 10010, 0)                                   \
    X(cuStreamBeginCapture_v2_ptsz, "cuStreamBeginCapture", 10010, 1)                              \
    X(cuStreamEndCapture, "cuStreamEndCapture", 10000, 0)                                          \
    X(cuStreamEndCapture_ptsz, "cuStreamEndCapture", 10000, 1)                                     \
    X(cuStreamIsCapturing, "cuStreamIsCapturing", 10000, 0)                                        \
    X(cuStreamIsCapturing_ptsz, "cuStreamIsCapturing", 10000, 1)                                   \
    X(cuGraphUpload, "cuGraphUpload", 11010, 0)                                                    \
    X(cuGraphUpload_ptsz, "cuGraphUpload", 11010, 1)                                               \
    X(cuCtxSetCurrent, "cuCtxSetCurrent", 4000, 0)                                                 \
    X(cuCtxGetCurrent, "cuCtxGetCurrent", 4000, 0)                                                 \
    X(cuCtxGetDevice, "cuCtxGetDevice", 2000, 0)                                                   \
    X(cuCtxGetDevice_v2, "cuCtxGetDevice", 13000, 0)                                               \
    X(cuCtxPushCurrent, "cuCtxPushCurrent", 2000, 0)                                               \
    X(cuCtxPushCurrent_v2, "cuCtxPushCurrent", 4000, 0)                                            \
    X(cuCtxPopCurrent, "cuCtxPopCurrent", 2000, 0)                                                 \
    X(cuCtxPopCurrent_v2, "cuCtxPopCurrent", 4000, 0)                                              \
    X(cuStreamGetCaptureInfo, "cuStreamGetCaptureInfo", 10010, 0)                                  \
    X(cuStreamGetCaptureInfo_ptsz, "cuStreamGetCaptureInfo", 10010, 1)                             \
    X(cuStreamGetCaptureInfo_v2, "cuStreamGetCaptureInfo", 11030, 0)                               \
    X(cuStreamGetCaptureInfo_v2_ptsz, "cuStreamGetCaptureInfo", 11030, 1)                          \
    X(cuStreamGetCaptureInfo_v3, "cuStreamGetCaptureInfo", 12030, 0)                               \
    X(cuStreamGetCaptureInfo_v3_ptsz, "cuStreamGetCaptureInfo", 12030, 1)                          \
    X(cuPointerGetAttribute, "cuPointerGetAttribute", 4000, 0)                                     \
    X(cuPointerGetAttributes, "cuPointerGetAttributes", 7000, 0)                                   \
    X(cuFuncGetAttribute, "cuFuncGetAttribute", 2020, 0)                                           \
    X(cuDeviceGetAttribute, "cuDeviceGetAttribute", 2000, 0)                                       \
    X(cuMemGetAddressRange, "cuMemGetAddressRange", 2000, 0)                                       \
    X(cuMemGetAddressRange_v2, "cuMemGetAddressRange", 3020, 0)                                    \
    X(cuMemAllocHost, "cuMemAllocHost", 2000, 0)                                                   \
    X(cuMemAllocHost_v2, "cuMemAllocHost", 3020, 0)                                                \
    X(cuMemHostAlloc, "cuMemHostAlloc", 2020, 0)                                                   \
    X(cuMemFreeHost, "cuMemFreeHost", 2000, 0)                                                     \
    X(cuMemHostRegister_v2, "cuMemHostRegister", 6050, 0)                                          \
    X(cuMemHostUnregister, "cuMemHostUnregister", 4000, 0)                                         \
    X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync", 2000, 0)                                             \
    X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync", 2000, 0)                                             \
    X(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync", 3000, 0)                                             \
    X(cuMemcpy2D, "cuMemcpy2D", 2000, 0)                                                           \
    X(cuMemcpy2DUnaligned, "cuMemcpy2DUnaligned", 2000, 0)                                         \
    X(cuMemcpy2DAsync, "cuMemcpy2DAsync", 2000, 0)                                                 \
    X(cuMemcpy3D, "cuMemcpy3D", 2000, 0)                                                           \
    X(cuMemcpy3DAsync, "cuMemcpy3DAsync", 2000, 0)                                                 \
    X(cuMemcpy3DPeer, "cuMemcpy3DPeer", 4000, 0)                                                   \
    X(cuMemcpy3DPeer_ptds, "cuMemcpy3DPeer", 7000, 1)                                              \
    X(cuMemcpy3DPeerAsync, "cuMemcpy3DPeerAsync", 4000, 0)                                         \
    X(cuMemcpy3DPeerAsync_ptsz, "cuMemcpy3DPeerAsync", 7000, 1)                                    \
    X(cuMemcpyBatchAsync, "cuMemcpyBatchAsync", 12080, 0)                                          \
    X(cuMemcpyBatchAsync_ptsz, "cuMemcpyBatchAsync", 12080, 1)                                     \
    X(cuMemcpyBatchAsync_v2, "cuMemcpyBatchAsync", 13000, 0)                                       \
    X(cuMemcpyBatchAsync_v2_ptsz, "cuMemcpyBatchAsync", 13000, 1)

#define TCU_NVML_SYMBOLS(X)                                                                        \
    X(nvmlDeviceGetMemoryInfo)                                                                     \
    X(nvmlDeviceGetMemoryInfo_v2)                                                                  \
    X(nvmlDeviceGetComputeRunningProcesses)                                                        \
    X(nvmlDeviceGetComputeRunningProcesses_v2)                                                     \
    X(nvmlDeviceGetComputeRunningProcesses_v3)                                                     \
    X(nvmlDeviceGetGraphicsRunningProcesses)                                                       \
    X(nvmlDeviceGetGraphicsRunningProcesses_v2)                                                    \
    X(nvmlDeviceGetGraphicsRunningProcesses_v3)                                                    \
    X(nvmlDeviceGetMPSComputeRunningProcesses)                                                     \
    X(nvmlDeviceGetMPSComputeRunningProcesses_v2)                                                  \
    X(nvmlDeviceGetMPSComputeRunningProcesses_v3)                                                  \
    X(nvmlDeviceGetRunningProcessDetailList)

/* Driver functions the interposer calls without hooking them. */
#define TCU_CUDA_CALLS(X)                                                                          \
    X(cuDeviceGetCount)                                                                            \
    X(cuDeviceGetUuid)                                                                             \
    X(cuDeviceGetMemPool)                                                                          \
    X(cuMemPoolGetAttribute)                                                                       \
    X(cuCtxGetLimit)                                                                               \
    X(cuStreamGetCtx)

#define TCU_NVML_CALLS(X)                                                                          \
    X(nvmlInit_v2)                                                                                 \
    X(nvmlDeviceGetUUID)                                                                           \
    X(nvmlDeviceGetHandleByUUID)

enum tcu_sym {
#define TCU_ENUM_CUDA(name, base, since, ptds) TCU_SYM_##name,
#define TCU_ENUM_ONE(name)                     TCU_SYM_##name,
    TCU_CUDA_SYMBOLS(TCU_ENUM_CUDA) TCU_SYM_NCUDA_HOOKS,
    TCU_CUDA_CALLS(TCU_ENUM_ONE) TCU_SYM_NCUDA,
    TCU_NVML_SYMBOLS(TCU_ENUM_ONE) TCU_SYM_NNVML_HOOKS,
    TCU_NVML_CALLS(TCU_ENUM_ONE) TCU_SYM_COUNT
#undef TCU_ENUM_CUDA
#undef TCU_ENUM_ONE
};

/* Real entry points, filled at initialisation (NULL where the driver lacks
 * one).  Read-only after tcu_ready. */
extern void *tcu_real[TCU_SYM_COUNT];
#define TCU_REAL(name) ((name##_fn)tcu_real[TCU_SYM_##name])

/* Name of symbol i, and our hook for it (NULL for the non-hooked calls). */
const char *tcu_sym_name(int i);
void *tcu_sym_hook(int i);

/* Our hook for an exported name ("cuMemAlloc_v2", "nvmlDeviceGetMemoryInfo"),
 * or NULL when we do not hook it.  For dlsym. */
void *tcu_hook_by_name(const char *name);

/* The hook that cuGetProcAddress should hand out for base name `symbol`,
 * given the real driver's answer `real_pfn`, the requested cudaVersion and
 * flags: the variant whose real pointer is real_pfn, else the variant that
 * cuda.h's version rules pick.  NULL when symbol is not hooked (hand out
 * real_pfn unchanged). */
void *tcu_hook_for_proc(const char *symbol, void *real_pfn, int version, cuuint64_t flags);

/* Fill the tcu_real entries of each non-NULL handle (the driver's, NVML's). */
void tcu_symbols_resolve(void *cuda, void *nvml);

#endif
