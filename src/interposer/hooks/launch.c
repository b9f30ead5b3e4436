/* launch.c - kernel and graph launches: a pass-through today.
 *
 * They are hooked now so that every launch path already runs through
 * libtessel-cuda (the compute shares, priorities and suspend/resume of issue
 * 6 will throttle here) and so that bench/interposer measures their added
 * cost: one acquire load and an indirect call (target: <= 100 ns).
 */
#include "interposer/interposer.h"

#define LAUNCH_ARGS                                                                                \
    CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,             \
        unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,                    \
        unsigned int sharedMemBytes, CUstream hStream

#define LAUNCH_PASS                                                                                \
    f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream

#define PASS_THROUGH(name, ...)                                                                    \
    tcu_ready();                                                                                   \
    name##_fn real = TCU_REAL(name);                                                               \
    if (TCU_UNLIKELY(!real))                                                                       \
        return CUDA_ERROR_NOT_INITIALIZED;                                                         \
    return real(__VA_ARGS__)

TCU_EXPORT CUresult cuLaunchKernel(LAUNCH_ARGS, void **kernelParams, void **extra)
{
    PASS_THROUGH(cuLaunchKernel, LAUNCH_PASS, kernelParams, extra);
}

TCU_EXPORT CUresult cuLaunchKernel_ptsz(LAUNCH_ARGS, void **kernelParams, void **extra)
{
    PASS_THROUGH(cuLaunchKernel_ptsz, LAUNCH_PASS, kernelParams, extra);
}

TCU_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                                     void **kernelParams, void **extra)
{
    PASS_THROUGH(cuLaunchKernelEx, config, f, kernelParams, extra);
}

TCU_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                          void **kernelParams, void **extra)
{
    PASS_THROUGH(cuLaunchKernelEx_ptsz, config, f, kernelParams, extra);
}

TCU_EXPORT CUresult cuLaunchCooperativeKernel(LAUNCH_ARGS, void **kernelParams)
{
    PASS_THROUGH(cuLaunchCooperativeKernel, LAUNCH_PASS, kernelParams);
}

TCU_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(LAUNCH_ARGS, void **kernelParams)
{
    PASS_THROUGH(cuLaunchCooperativeKernel_ptsz, LAUNCH_PASS, kernelParams);
}

TCU_EXPORT CUresult cuLaunchCooperativeKernelMultiDevice(CUDA_LAUNCH_PARAMS *launchParamsList,
                                                         unsigned int numDevices,
                                                         unsigned int flags)
{
    PASS_THROUGH(cuLaunchCooperativeKernelMultiDevice, launchParamsList, numDevices, flags);
}

TCU_EXPORT CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    PASS_THROUGH(cuGraphLaunch, hGraphExec, hStream);
}

TCU_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    PASS_THROUGH(cuGraphLaunch_ptsz, hGraphExec, hStream);
}
