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
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "interposer/interposer.h"

#define OOM CUDA_ERROR_OUT_OF_MEMORY

static void lazy_lib_gone(uint64_t lib);

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
    CUresult r;
    if (!tcu_release_begin(TCU_KIND_MODULE, key, &h))
        r = real(library);
    else
        r = tcu_release_settle(TCU_KIND_MODULE, key, &h, real(library));
    if (r == CUDA_SUCCESS)
        lazy_lib_gone(key);
    return r;
}

/* ---- a library's first use in a context ----
 * A library is loaded into a context at its first use there: at once when it was loaded with
 * that context current (measured above), else lazily, by cuLibraryGetModule,
 * cuLibraryGetGlobal, cuLibraryGetManaged or a kernel's cuKernelGetFunction (a library loaded
 * while no context was current, the CUDA runtime's way, or a context made after the load), and
 * a kernel's code at its first cuKernelGetFunction in a context.  The first such call for a
 * handle in a context is measured like a module load (lazy_begin / lazy_end) and its memory
 * charged.  The charge is not refused (the driver cannot take a library back out of one
 * context): the slice's count follows the driver, and the slice's next allocation is refused
 * when it is over.  Each pair (handle, context) measured is kept with its charge, which goes
 * back when the context is destroyed (tcu_lazy_ctx_gone: the driver frees the library's module
 * in it) or the library is unloaded (tcu_lazy_lib_gone; a kernel's pair names its library only
 * when the kernel came from cuLibraryGetKernel of a library this process loaded, else it goes
 * with its context).  Later calls for a kept pair load nothing and are not measured.  A full set
 * (LAZY_SLOTS * 3 / 4 pairs) measures every further look-up it cannot keep and keeps its charge
 * to the end of the process (slower and counted high, never uncounted); a launch it cannot keep
 * is not measured (tcu_reconcile's look after a launch stays).
 *
 * The same for a kernel's first launch in a context (hooks/launch.c): the CUDA runtime launches
 * its kernels by their CUkernel handles without any look-up above, and the driver places the
 * kernel's library in the context at that launch (on an H200 with CUDA 13, 1 GiB of a
 * __device__ array: tests/gpu/lazylib.sh).  A launch's look-up must stay cheap: each thread
 * keeps the pairs it found last (lazy_tl, LAZY_TL entries), good while the set's generation
 * (lazy_gen: a pair taken out, a fork) is the one they were found in. */
#define LAZY_SLOTS 65536 /* a power of 2 */

struct lazy_pair {
    uint64_t handle; /* a library or a kernel; 0: an empty slot */
    uint64_t ctx;
    uint64_t lib;   /* the library whose unload gives the charge back (0: its context's end) */
    uint64_t bytes; /* charged to the slice's device dev */
    int dev;
};
static struct lazy_pair lazy_set[LAZY_SLOTS];
static unsigned lazy_used;
static pthread_mutex_t lazy_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t lazy_gen = 1;

/* Each thread's pairs found last: allocated at the thread's first look (no TLS of the library's
 * own: a process that never calls CUDA pays nothing for it, t3141), freed with the thread. */
#define LAZY_TL 64 /* a power of 2 */
struct lazy_tl {
    uint64_t handle, ctx, gen;
};
static pthread_key_t lazy_tl_key;
static pthread_once_t lazy_tl_once = PTHREAD_ONCE_INIT;
static int lazy_tl_ok;

static void lazy_tl_init(void)
{
    lazy_tl_ok = pthread_key_create(&lazy_tl_key, free) == 0;
}

static struct lazy_tl *lazy_tl_get(void)
{
    pthread_once(&lazy_tl_once, lazy_tl_init);
    if (!lazy_tl_ok)
        return NULL;
    struct lazy_tl *tl = pthread_getspecific(lazy_tl_key);
    if (!tl && (tl = calloc(LAZY_TL, sizeof *tl)) && pthread_setspecific(lazy_tl_key, tl) != 0) {
        free(tl);
        tl = NULL;
    }
    return tl;
}

static size_t lazy_slot(uint64_t handle, uint64_t ctx)
{
    uint64_t x = handle * 0x9E3779B97F4A7C15ull ^ ctx * 0xC2B2AE3D27D4EB4Full;
    return (size_t)((x ^ (x >> 31)) & (LAZY_SLOTS - 1));
}

/* The slot of (handle, ctx), or of the empty slot where it would go.  Under lazy_lock. */
static struct lazy_pair *lazy_find(uint64_t handle, uint64_t ctx)
{
    size_t i = lazy_slot(handle, ctx);
    while (lazy_set[i].handle && (lazy_set[i].handle != handle || lazy_set[i].ctx != ctx))
        i = (i + 1) & (LAZY_SLOTS - 1);
    return &lazy_set[i];
}

/* 1: (handle, ctx) is kept; 0: not; -1: not, and the set is full. */
static int lazy_seen(uint64_t handle, uint64_t ctx)
{
    struct lazy_tl *tl = lazy_tl_get();
    size_t t = (size_t)((handle >> 4) ^ (ctx >> 6)) & (LAZY_TL - 1);
    uint64_t gen = atomic_load_explicit(&lazy_gen, memory_order_acquire);
    if (tl && tl[t].handle == handle && tl[t].ctx == ctx && tl[t].gen == gen)
        return 1;
    pthread_mutex_lock(&lazy_lock);
    int seen = lazy_find(handle, ctx)->handle != 0 ? 1 : lazy_used >= LAZY_SLOTS * 3 / 4 ? -1 : 0;
    pthread_mutex_unlock(&lazy_lock);
    if (seen == 1 && tl) {
        tl[t].handle = handle;
        tl[t].ctx = ctx;
        tl[t].gen = gen;
    }
    return seen;
}

/* Keep (handle, ctx) with bytes charged to dev (added when kept already).  0, or -1 when the set
 * is full. */
static int lazy_keep(uint64_t handle, uint64_t ctx, uint64_t lib, int dev, uint64_t bytes)
{
    pthread_mutex_lock(&lazy_lock);
    struct lazy_pair *p = lazy_find(handle, ctx);
    int rc = 0;
    if (p->handle && p->dev == dev) {
        p->bytes += bytes;
    } else if (!p->handle && lazy_used < LAZY_SLOTS * 3 / 4) {
        *p = (struct lazy_pair){handle, ctx, lib, bytes, dev};
        lazy_used++;
    } else {
        rc = -1;
    }
    pthread_mutex_unlock(&lazy_lock);
    return rc;
}

/* Take out every pair whose ctx (by_lib 0) or lib (by_lib 1) is key and give its charge back;
 * the others are put in again (an open-addressed set has no holes to leave). */
static void lazy_drop(uint64_t key, int by_lib)
{
    static struct lazy_pair keep[LAZY_SLOTS];
    size_t n = 0;
    pthread_mutex_lock(&lazy_lock);
    for (size_t i = 0; i < LAZY_SLOTS; i++) {
        struct lazy_pair *p = &lazy_set[i];
        if (!p->handle)
            continue;
        if ((by_lib ? p->lib : p->ctx) == key) {
            if (p->bytes)
                tcu_unreserve(p->dev, p->bytes);
        } else
            keep[n++] = *p;
    }
    memset(lazy_set, 0, sizeof lazy_set);
    for (size_t i = 0; i < n; i++)
        *lazy_find(keep[i].handle, keep[i].ctx) = keep[i];
    lazy_used = (unsigned)n;
    atomic_fetch_add(&lazy_gen, 1); /* every thread's cached pairs are stale */
    pthread_mutex_unlock(&lazy_lock);
}

void tcu_lazy_ctx_gone(CUcontext ctx)
{
    if (ctx)
        lazy_drop((uint64_t)(uintptr_t)ctx, 0);
}

static void lazy_lib_gone(uint64_t lib)
{
    if (lib)
        lazy_drop(lib, 1);
}

/* The parent's pairs are charged to the parent's slot; the child's contexts are new. */
void tcu_lazy_atfork_child(void)
{
    pthread_mutex_init(&lazy_lock, NULL);
    memset(lazy_set, 0, sizeof lazy_set);
    lazy_used = 0;
    atomic_fetch_add(&lazy_gen, 1); /* the forking thread's cached pairs were the parent's */
}

void tcu_lazy_begin(struct tcu_lazy *l, uint64_t handle, int launch)
{
    l->measuring = 0;
    CUcontext c = NULL;
    cuCtxGetCurrent_fn cur = TCU_REAL(cuCtxGetCurrent);
    if (!handle || !cur || cur(&c) != CUDA_SUCCESS || !c)
        return; /* the driver refuses it: no context, no load */
    l->handle = handle;
    l->ctx = (uint64_t)(uintptr_t)c;
    int seen = lazy_seen(handle, l->ctx);
    if (seen == 1 || (seen < 0 && launch))
        return;
    CUdevice ord = 0;
    int dev = tcu_current_dev(&ord);
    if (dev < 0)
        return; /* a context on a device the slice does not have: no allocation passes there */
    tcu_meas_begin(ord, dev, &l->m);
    l->measuring = 1;
}

CUresult tcu_lazy_end(struct tcu_lazy *l, CUresult r, uint64_t lib)
{
    if (!l->measuring)
        return r;
    uint64_t spent = tcu_meas_end(&l->m, NULL);
    int dev = l->m.dev;
    /* Counted even when the call failed (a global the image does not define: the module was
     * loaded to look for it); kept only when it succeeded (a failed call is measured again). */
    if (r != CUDA_SUCCESS && spent == 0)
        return r;
    if (tcu_reserve_spent(dev, spent) < 0)
        tcu_charge(dev, spent);
    if (r == CUDA_SUCCESS || spent) {
        if (lazy_keep(l->handle, l->ctx, lib, dev, spent) < 0 && spent)
            tcu_log("the set of first uses is full: %llu bytes stay counted to the process's end",
                    (unsigned long long)spent);
    }
    return r;
}

TCU_EXPORT CUresult cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
{
    tcu_enter();
    cuLibraryGetModule_fn real = TCU_REAL(cuLibraryGetModule);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    uint64_t key = (uint64_t)(uintptr_t)library;
    struct tcu_lazy l;
    tcu_lazy_begin(&l, key, 0);
    return tcu_lazy_end(&l, real(pMod, library), key);
}

/* A kernel's library, kept as the pair (kernel, context 0) by cuLibraryGetKernel (no context is
 * 0): 0 when the kernel did not come from there (the set was full, or a library loaded before
 * the interposer was). */
uint64_t tcu_kernel_lib(uint64_t kernel)
{
    pthread_mutex_lock(&lazy_lock);
    uint64_t lib = lazy_find(kernel, 0)->lib;
    pthread_mutex_unlock(&lazy_lock);
    return lib;
}

TCU_EXPORT CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
    tcu_enter();
    cuLibraryGetKernel_fn real = TCU_REAL(cuLibraryGetKernel);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = real(pKernel, library, name);
    if (r == CUDA_SUCCESS && pKernel && *pKernel && library)
        lazy_keep((uint64_t)(uintptr_t)*pKernel, 0, (uint64_t)(uintptr_t)library, -1, 0);
    return r;
}

TCU_EXPORT CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
    tcu_enter();
    cuKernelGetFunction_fn real = TCU_REAL(cuKernelGetFunction);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    uint64_t key = (uint64_t)(uintptr_t)kernel;
    struct tcu_lazy l;
    tcu_lazy_begin(&l, key, 0);
    return tcu_lazy_end(&l, real(pFunc, kernel), l.measuring ? tcu_kernel_lib(key) : 0);
}

TCU_EXPORT CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library,
                                       const char *name)
{
    tcu_enter();
    cuLibraryGetGlobal_fn real = TCU_REAL(cuLibraryGetGlobal);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    uint64_t key = (uint64_t)(uintptr_t)library;
    struct tcu_lazy l;
    tcu_lazy_begin(&l, key, 0);
    return tcu_lazy_end(&l, real(dptr, bytes, library, name), key);
}

TCU_EXPORT CUresult cuLibraryGetManaged(CUdeviceptr *dptr, size_t *bytes, CUlibrary library,
                                        const char *name)
{
    tcu_enter();
    cuLibraryGetManaged_fn real = TCU_REAL(cuLibraryGetManaged);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    uint64_t key = (uint64_t)(uintptr_t)library;
    struct tcu_lazy l;
    tcu_lazy_begin(&l, key, 0);
    return tcu_lazy_end(&l, real(dptr, bytes, library, name), key);
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

GATED(cuKernelGetAttribute, (int *pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev),
      (pi, attrib, kernel, dev))
GATED(cuKernelSetAttribute, (CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev),
      (attrib, val, kernel, dev))
