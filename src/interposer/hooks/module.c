/* module.c - module code and data: cuModuleLoadData, cuModuleLoadDataEx
 * (JIT options: XLA/JAX, Triton, Numba), cuModuleLoadFatBinary,
 * cuModuleLoad (a file), cuModuleGetFunction, cuModuleUnload.
 *
 * The driver puts a module's code and data in device memory when it is
 * loaded, and under lazy loading (CUDA_MODULE_LOADING=LAZY, the default
 * since CUDA 12) a function's code when it is first used.  No argument says
 * how much: the hooks measure it, as contexts are measured (this process's
 * device memory per NVML before and after the call, tcu_meas_begin /
 * tcu_meas_end), and charge the difference to the module's record.
 *
 *   load         a module that does not fit the slice is unloaded again and
 *                refused with CUDA_ERROR_OUT_OF_MEMORY: nothing stays.
 *   function     the lazy part is charged without the limit check (the
 *                driver cannot unload one function; refusing would leave
 *                the memory spent and uncounted): the count stays the
 *                driver's, and the slice's next allocation is refused.
 *   unload       the module's whole charge is given back.
 *
 * Module loads and function look-ups are not hot paths (two NVML queries
 * each); launches are not touched.
 */
#include <stdint.h>

#include "interposer/interposer.h"

#define OOM CUDA_ERROR_OUT_OF_MEMORY

/* The four ways to load a module: an image in memory, with JIT options, a
 * fat binary, or a file. */
enum load_kind { LOAD_DATA, LOAD_DATA_EX, LOAD_FATBIN, LOAD_FILE };
struct load_args {
    enum load_kind kind;
    const void *image; /* or the file name */
    unsigned nopts;
    CUjit_option *opts;
    void **vals;
};

static CUresult load_call(CUmodule *module, const struct load_args *a)
{
    switch (a->kind) {
    case LOAD_DATA:
        return TCU_REAL(cuModuleLoadData)(module, a->image);
    case LOAD_DATA_EX:
        return TCU_REAL(cuModuleLoadDataEx)(module, a->image, a->nopts, a->opts, a->vals);
    case LOAD_FATBIN:
        return TCU_REAL(cuModuleLoadFatBinary)(module, a->image);
    case LOAD_FILE:
        return TCU_REAL(cuModuleLoad)(module, (const char *)a->image);
    }
    return CUDA_ERROR_INVALID_VALUE;
}

static CUresult module_load(void *real, CUmodule *module, const struct load_args *a)
{
    tcu_enter();
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    CUdevice ord = 0;
    int dev = tcu_current_dev(&ord);
    if (dev == -1 || !module || !a->image)
        return load_call(module, a);
    if (dev < 0)
        return OOM; /* the slice cannot take this device: fail closed */
    struct tcu_meas m;
    tcu_meas_begin(ord, dev, &m);
    CUresult r = load_call(module, a);
    uint64_t spent = tcu_meas_end(&m, NULL);
    if (r != CUDA_SUCCESS)
        return r;
    int fits = spent == 0 || tcu_reserve_spent(dev, spent) == 0;
    if (fits && tcu_track(TCU_KIND_MODULE, (uint64_t)(uintptr_t)*module, dev, spent, 0) == 0)
        return r;
    /* Larger than the slice has room for (as if the driver had run out of
     * memory loading it), or no memory for the record: unload again. */
    if (fits)
        tcu_unreserve(dev, spent);
    if (TCU_REAL(cuModuleUnload))
        TCU_REAL(cuModuleUnload)(*module);
    *module = NULL;
    return OOM;
}

TCU_EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    struct load_args a = {LOAD_DATA, image, 0, NULL, NULL};
    return module_load((void *)TCU_REAL(cuModuleLoadData), module, &a);
}

TCU_EXPORT CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                                       CUjit_option *options, void **optionValues)
{
    struct load_args a = {LOAD_DATA_EX, image, numOptions, options, optionValues};
    return module_load((void *)TCU_REAL(cuModuleLoadDataEx), module, &a);
}

TCU_EXPORT CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
    struct load_args a = {LOAD_FATBIN, fatCubin, 0, NULL, NULL};
    return module_load((void *)TCU_REAL(cuModuleLoadFatBinary), module, &a);
}

TCU_EXPORT CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
    struct load_args a = {LOAD_FILE, fname, 0, NULL, NULL};
    return module_load((void *)TCU_REAL(cuModuleLoad), module, &a);
}

TCU_EXPORT CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    tcu_enter();
    cuModuleGetFunction_fn real = TCU_REAL(cuModuleGetFunction);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    CUdevice ord = 0;
    int dev = tcu_current_dev(&ord);
    struct tcu_held h;
    uint64_t key = (uint64_t)(uintptr_t)hmod;
    if (dev < 0 || !hfunc || !name)
        return real(hfunc, hmod, name);
    struct tcu_meas m;
    tcu_meas_begin(ord, dev, &m);
    CUresult r = real(hfunc, hmod, name);
    uint64_t spent = tcu_meas_end(&m, NULL);
    if (r != CUDA_SUCCESS || spent == 0)
        return r;
    /* The function's code belongs to its module: charged to the module's
     * device and given back with it. */
    if (tcu_release_begin(TCU_KIND_MODULE, key, &h)) {
        dev = h.dev;
        h.bytes += spent;
        if (tcu_track(TCU_KIND_MODULE, key, h.dev, h.bytes, h.aux) < 0)
            h.bytes -= spent; /* no record: the charge stays with the process */
    }
    if (tcu_reserve_spent(dev, spent) < 0)
        tcu_charge(dev, spent);
    return r;
}

TCU_EXPORT CUresult cuModuleUnload(CUmodule hmod)
{
    tcu_enter();
    cuModuleUnload_fn real = TCU_REAL(cuModuleUnload);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    uint64_t key = (uint64_t)(uintptr_t)hmod;
    struct tcu_held h;
    if (!tcu_release_begin(TCU_KIND_MODULE, key, &h))
        return real(hmod);
    return tcu_release_settle(TCU_KIND_MODULE, key, &h, real(hmod));
}
