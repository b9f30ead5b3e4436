/* procaddr.c - the three ways a program finds a driver entry point, each
 * routed to our hooks:
 *
 *   direct symbols   the program links libcuda: our exports come first
 *                    (LD_PRELOAD), nothing to do here;
 *   dlsym            dlsym(RTLD_NEXT / RTLD_DEFAULT, name), or dlsym on any
 *                    handle of libcuda / libnvidia-ml, including one a plugin
 *                    dlopened privately (RTLD_LOCAL): hooked names answer
 *                    with our hook;
 *   cuGetProcAddress the real driver answers first (it knows which version
 *                    and stream variant the caller asked for); we hand out
 *                    our hook for the variant whose real pointer it returned,
 *                    or, if it returned a pointer we do not recognise, the
 *                    variant cuda.h's version rules name (symbols.c).  This
 *                    includes "cuGetProcAddress" itself, which the CUDA
 *                    runtime fetches through cuGetProcAddress_v2 and uses for
 *                    every later lookup.  The lookup is the driver's: a
 *                    process reclaimed while idle waits before it (tcu_enter), as
 *                    the driver would hold it while checkpointed, out of reach
 *                    (docs/suspend.md; t3236 looks an entry point up first).
 */
#include <dlfcn.h>
#include <string.h>

#include "interposer/interposer.h"

/* Whether address p lies in the driver or NVML, whichever copy. */
static int in_gpu_library(void *p)
{
    Dl_info info;
    if (!p || !dladdr(p, &info) || !info.dli_fname)
        return 0;
    const char *base = strrchr(info.dli_fname, '/');
    base = base ? base + 1 : info.dli_fname;
    return strncmp(base, "libcuda.so", 10) == 0 || strncmp(base, "libnvidia-ml.so", 15) == 0;
}

/* Hooked names and the handle they were asked of: our hook or the driver's
 * pointer.  Only reached for names tcu_is_hooked_name accepted. */
static void *dlsym_hooked(void *handle, const char *name)
{
    void *r = tcu_real_dlsym(handle, name);
    void *hook = tcu_hook_by_name(name);
    if (!r || !hook || r == hook || tcu_initialising)
        return r;
    if (handle == RTLD_NEXT || handle == RTLD_DEFAULT || in_gpu_library(r)) {
        tcu_ready();
        if (name[0] == 'n')
            tcu_nvml_handle();
        return hook;
    }
    return r;
}

/* Every other name goes straight to glibc's dlsym as a sibling call, so that
 * glibc sees the original caller's return address (RTLD_NEXT is relative to
 * the caller).  No sanitizer instrumentation: ASan itself calls dlsym
 * (RTLD_NEXT) while it initialises, before its shadow memory exists. */
TCU_NO_SANITIZE TCU_EXPORT void *dlsym(void *handle, const char *name)
{
    if (TCU_UNLIKELY(tcu_is_hooked_name(name)))
        return dlsym_hooked(handle, name);
    return tcu_real_dlsym_fn()(handle, name);
}

static void route(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
    if (!pfn || !*pfn)
        return;
    void *hook = tcu_hook_for_proc(symbol, *pfn, version, flags);
    if (hook)
        *pfn = hook;
}

TCU_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                        cuuint64_t flags, CUdriverProcAddressQueryResult *status)
{
    tcu_enter();
    cuGetProcAddress_v2_fn real = TCU_REAL(cuGetProcAddress_v2);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = real(symbol, pfn, cudaVersion, flags, status);
    if (r == CUDA_SUCCESS)
        route(symbol, pfn, cudaVersion, flags);
    return r;
}

TCU_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                     cuuint64_t flags)
{
    tcu_enter();
    cuGetProcAddress_fn real = TCU_REAL(cuGetProcAddress);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = real(symbol, pfn, cudaVersion, flags);
    if (r == CUDA_SUCCESS)
        route(symbol, pfn, cudaVersion, flags);
    return r;
}
