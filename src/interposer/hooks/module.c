/* module.c - module code and data: cuModuleLoadData, cuModuleLoadDataEx
 * (JIT options: XLA/JAX, Triton, Numba), cuModuleLoadFatBinary,
 * cuModuleLoad (a file), cuModuleGetFunction, cuModuleUnload; and the libraries and kernels
 * of CUDA 12 (cuLibraryLoadData, cuLibraryLoadFromFile, cuLibraryUnload, cuLibraryGetKernel,
 * cuLibraryGetModule, cuKernelGetFunction, cuKernelGetAttribute, cuKernelSetAttribute).
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

/* The six ways to load a module: an image in memory, with JIT options, a fat binary, or a file;
 * and a library (CUDA 12.0: what the runtime's lazy loading loads), an image or a file, with JIT
 * and library options.  out: where the driver puts the CUmodule or CUlibrary. */
enum load_kind { LOAD_DATA, LOAD_DATA_EX, LOAD_FATBIN, LOAD_FILE, LOAD_LIB_DATA, LOAD_LIB_FILE };
struct load_args {
    enum load_kind kind;
    const void *image; /* or the file name */
    unsigned nopts;
    CUjit_option *opts;
    void **vals;
    unsigned nlopts; /* library options */
    CUlibraryOption *lopts;
    void **lvals;
    CUmodule *mod;  /* the module kinds' output */
    CUlibrary *lib; /* the library kinds' output */
};

static CUresult load_call(const struct load_args *a)
{
    switch (a->kind) {
    case LOAD_DATA:
        return TCU_REAL(cuModuleLoadData)(a->mod, a->image);
    case LOAD_DATA_EX:
        return TCU_REAL(cuModuleLoadDataEx)(a->mod, a->image, a->nopts, a->opts, a->vals);
    case LOAD_FATBIN:
        return TCU_REAL(cuModuleLoadFatBinary)(a->mod, a->image);
    case LOAD_FILE:
        return TCU_REAL(cuModuleLoad)(a->mod, (const char *)a->image);
    case LOAD_LIB_DATA:
        return TCU_REAL(cuLibraryLoadData)(a->lib, a->image, a->opts, a->vals, a->nopts, a->lopts,
                                           a->lvals, a->nlopts);
    case LOAD_LIB_FILE:
        return TCU_REAL(cuLibraryLoadFromFile)(a->lib, (const char *)a->image, a->opts, a->vals,
                                               a->nopts, a->lopts, a->lvals, a->nlopts);
    }
    return CUDA_ERROR_INVALID_VALUE;
}

static int is_lib(const struct load_args *a)
{
    return a->kind == LOAD_LIB_DATA || a->kind == LOAD_LIB_FILE;
}

/* The record's key: the module's or the library's handle. */
static uint64_t load_key(const struct load_args *a)
{
    return is_lib(a) ? (uint64_t)(uintptr_t)*a->lib : (uint64_t)(uintptr_t)*a->mod;
}

/* Unloads what load_call loaded (it did not fit) and clears the caller's handle. */
static void load_undo(const struct load_args *a)
{
    if (is_lib(a)) {
        if (TCU_REAL(cuLibraryUnload))
            TCU_REAL(cuLibraryUnload)(*a->lib);
        *a->lib = NULL;
    } else {
        if (TCU_REAL(cuModuleUnload))
            TCU_REAL(cuModuleUnload)(*a->mod);
        *a->mod = NULL;
    }
}

static CUresult module_load(void *real, const struct load_args *a)
{
    tcu_enter();
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    CUdevice ord = 0;
    int dev = tcu_current_dev(&ord);
    if (dev == -1 || !(is_lib(a) ? (void *)a->lib : (void *)a->mod) || !a->image)
        return load_call(a);
    if (dev < 0)
        return OOM; /* the slice cannot take this device: fail closed */
    struct tcu_meas m;
    tcu_meas_begin(ord, dev, &m);
    CUresult r = load_call(a);
    uint64_t spent = tcu_meas_end(&m, NULL);
    if (r != CUDA_SUCCESS)
        return r;
    int fits = spent == 0 || tcu_reserve_spent(dev, spent) == 0;
    if (fits && tcu_track(TCU_KIND_MODULE, load_key(a), dev, spent, 0) == 0)
        return r;
    /* Larger than the slice has room for (as if the driver had run out of
     * memory loading it), or no memory for the record: unload again. */
    if (fits)
        tcu_unreserve(dev, spent);
    load_undo(a);
    return OOM;
}

TCU_EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    struct load_args a = {.kind = LOAD_DATA, .image = image, .mod = module};
    return module_load((void *)TCU_REAL(cuModuleLoadData), &a);
}

TCU_EXPORT CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                                       CUjit_option *options, void **optionValues)
{
    struct load_args a = {.kind = LOAD_DATA_EX,
                          .image = image,
                          .nopts = numOptions,
                          .opts = options,
                          .vals = optionValues,
                          .mod = module};
    return module_load((void *)TCU_REAL(cuModuleLoadDataEx), &a);
}

TCU_EXPORT CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
    struct load_args a = {.kind = LOAD_FATBIN, .image = fatCubin, .mod = module};
    return module_load((void *)TCU_REAL(cuModuleLoadFatBinary), &a);
}

TCU_EXPORT CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
    struct load_args a = {.kind = LOAD_FILE, .image = fname, .mod = module};
    return module_load((void *)TCU_REAL(cuModuleLoad), &a);
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

/* ---- libraries and kernels (CUDA 12.0) ----
 * The calls the CUDA runtime's lazy loading makes on a kernel's first use.  A library's load is
 * measured and charged as a module's (its record is keyed by the library's handle) and
 * cuLibraryUnload gives the charge back.  The rest are gated, never work (as hooks/query.c): the
 * driver holds a checkpointed process's calls, so a reclaimed job whose next cell uses a kernel
 * it never used before must be stopped here.  A kernel's code, loaded at its first launch, is
 * the launch's to count (as the runtime's kernels always were, docs/interposer.md). */
TCU_EXPORT CUresult cuLibraryLoadData(CUlibrary *library, const void *code,
                                      CUjit_option *jitOptions, void **jitOptionsValues,
                                      unsigned int numJitOptions, CUlibraryOption *libraryOptions,
                                      void **libraryOptionValues, unsigned int numLibraryOptions)
{
    struct load_args a = {.kind = LOAD_LIB_DATA,
                          .image = code,
                          .nopts = numJitOptions,
                          .opts = jitOptions,
                          .vals = jitOptionsValues,
                          .nlopts = numLibraryOptions,
                          .lopts = libraryOptions,
                          .lvals = libraryOptionValues,
                          .lib = library};
    return module_load((void *)TCU_REAL(cuLibraryLoadData), &a);
}

TCU_EXPORT CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName,
                                          CUjit_option *jitOptions, void **jitOptionsValues,
                                          unsigned int numJitOptions,
                                          CUlibraryOption *libraryOptions,
                                          void **libraryOptionValues,
                                          unsigned int numLibraryOptions)
{
    struct load_args a = {.kind = LOAD_LIB_FILE,
                          .image = fileName,
                          .nopts = numJitOptions,
                          .opts = jitOptions,
                          .vals = jitOptionsValues,
                          .nlopts = numLibraryOptions,
                          .lopts = libraryOptions,
                          .lvals = libraryOptionValues,
                          .lib = library};
    return module_load((void *)TCU_REAL(cuLibraryLoadFromFile), &a);
}

TCU_EXPORT CUresult cuLibraryUnload(CUlibrary library)
{
    tcu_enter();
    cuLibraryUnload_fn real = TCU_REAL(cuLibraryUnload);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    uint64_t key = (uint64_t)(uintptr_t)library;
    struct tcu_held h;
    if (!tcu_release_begin(TCU_KIND_MODULE, key, &h))
        return real(library);
    return tcu_release_settle(TCU_KIND_MODULE, key, &h, real(library));
}

#define GATED(name, params, args)                                                                  \
    TCU_EXPORT CUresult name params                                                                \
    {                                                                                              \
        tcu_enter();                                                                               \
        name##_fn real = TCU_REAL(name);                                                           \
        if (TCU_UNLIKELY(!real))                                                                   \
            return CUDA_ERROR_NOT_INITIALIZED;                                                     \
        return real args;                                                                          \
    }

GATED(cuLibraryGetKernel, (CUkernel * pKernel, CUlibrary library, const char *name),
      (pKernel, library, name))
GATED(cuLibraryGetModule, (CUmodule * pMod, CUlibrary library), (pMod, library))
GATED(cuKernelGetFunction, (CUfunction * pFunc, CUkernel kernel), (pFunc, kernel))
GATED(cuKernelGetAttribute, (int *pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev),
      (pi, attrib, kernel, dev))
GATED(cuKernelSetAttribute, (CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev),
      (attrib, val, kernel, dev))
