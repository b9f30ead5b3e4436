/* launch.c - kernel and graph launches: every path runs through the
 * compute share of the slice (compute.c; docs/compute-shares.md).
 *
 * Each hook: tcu_launch_begin (suspend gate, read finished measurements,
 * pace, record the start event on the launch's stream) -> the driver ->
 * tcu_launch_end (record the end event, leave the gate).  Graphs and
 * cooperative launches are measured like kernels: by the device time
 * between the events around them, whatever they contain.  The launch itself
 * is never refused: a slice over its share waits, it is not failed.
 */
#include "interposer/interposer.h"

#define LAUNCH_ARGS                                                                                \
    CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,             \
        unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,                    \
        unsigned int sharedMemBytes, CUstream hStream

#define LAUNCH_PASS                                                                                \
    f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream

/* name: the entry point; fn: the kernel launched (NULL: a graph); st: its stream; pt: 1 for
 * _ptsz variants.  A kernel's first launch in a context is measured for the memory the driver
 * places then (the kernel's code, its library's module: hooks/module.c, tcu_lazy_begin), after
 * the launch's own waits. */
#define MEASURED_KERNEL(name, fn, st, pt, ...)                                                     \
    tcu_enter();                                                                                   \
    name##_fn real = TCU_REAL(name);                                                               \
    if (TCU_UNLIKELY(!real))                                                                       \
        return CUDA_ERROR_NOT_INITIALIZED;                                                         \
    tcu_launch_t l;                                                                                \
    tcu_launch_begin(&l, (st), (pt));                                                              \
    struct tcu_lazy lz;                                                                            \
    uint64_t key = (uint64_t)(uintptr_t)(fn);                                                      \
    tcu_lazy_begin(&lz, key, TCU_LAZY_LAUNCH);                                                     \
    CUresult rc = real(__VA_ARGS__);                                                               \
    if (lz.measuring)                                                                              \
        lz.captured = tcu_stream_capturing((st), (pt));                                            \
    tcu_lazy_end(&lz, rc, 0);                                                                      \
    tcu_launch_end(&l, rc);                                                                        \
    tcu_note_launch();                                                                             \
    return rc

#define MEASURED(name, st, pt, ...) MEASURED_KERNEL(name, NULL, st, pt, __VA_ARGS__)

TCU_EXPORT CUresult cuLaunchKernel(LAUNCH_ARGS, void **kernelParams, void **extra)
{
    MEASURED_KERNEL(cuLaunchKernel, f, hStream, 0, LAUNCH_PASS, kernelParams, extra);
}

TCU_EXPORT CUresult cuLaunchKernel_ptsz(LAUNCH_ARGS, void **kernelParams, void **extra)
{
    MEASURED_KERNEL(cuLaunchKernel_ptsz, f, hStream, 1, LAUNCH_PASS, kernelParams, extra);
}

TCU_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                                     void **kernelParams, void **extra)
{
    MEASURED_KERNEL(cuLaunchKernelEx, f, config ? config->hStream : NULL, 0, config, f,
                    kernelParams, extra);
}

TCU_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                          void **kernelParams, void **extra)
{
    MEASURED_KERNEL(cuLaunchKernelEx_ptsz, f, config ? config->hStream : NULL, 1, config, f,
                    kernelParams, extra);
}

TCU_EXPORT CUresult cuLaunchCooperativeKernel(LAUNCH_ARGS, void **kernelParams)
{
    MEASURED_KERNEL(cuLaunchCooperativeKernel, f, hStream, 0, LAUNCH_PASS, kernelParams);
}

TCU_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(LAUNCH_ARGS, void **kernelParams)
{
    MEASURED_KERNEL(cuLaunchCooperativeKernel_ptsz, f, hStream, 1, LAUNCH_PASS, kernelParams);
}

TCU_EXPORT CUresult cuLaunchCooperativeKernelMultiDevice(CUDA_LAUNCH_PARAMS *launchParamsList,
                                                         unsigned int numDevices,
                                                         unsigned int flags)
{
    tcu_enter();
    return tcu_launch_multi(launchParamsList, numDevices, flags);
}

TCU_EXPORT CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    MEASURED(cuGraphLaunch, hStream, 0, hGraphExec, hStream);
}

TCU_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    MEASURED(cuGraphLaunch_ptsz, hStream, 1, hGraphExec, hStream);
}
