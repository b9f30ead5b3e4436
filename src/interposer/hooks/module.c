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
static void lazy_owner(uint64_t handle, uint64_t owner);
static uint64_t lazy_owner_of(uint64_t handle);
static void lazy_unloaded(void);

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
    if (r == CUDA_SUCCESS) { /* its pairs go with the module, or the library it is a module of */
        uint64_t lib = lazy_owner_of(key);
        lazy_owner((uint64_t)(uintptr_t)*hfunc, lib ? lib : key);
    }
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

/* cuModuleUnload (lib 0) and cuLibraryUnload (lib 1) of handle key: the record's charge given
 * back as the driver frees it, the pairs naming it taken out (their addresses may come back),
 * then what the driver keeps of it in the context charged (lazy_unloaded). */
static CUresult unload(uint64_t key, int lib)
{
    cuModuleUnload_fn mod = TCU_REAL(cuModuleUnload);
    cuLibraryUnload_fn libr = TCU_REAL(cuLibraryUnload);
    if (TCU_UNLIKELY(lib ? !libr : !mod))
        return CUDA_ERROR_NOT_INITIALIZED;
    struct tcu_held h;
    int held;
    tcu_lazy_unloading(1);
    held = tcu_release_begin(TCU_KIND_MODULE, key, &h);
    CUresult r = lib ? libr((CUlibrary)(uintptr_t)key) : mod((CUmodule)(uintptr_t)key);
    if (held)
        tcu_release_settle(TCU_KIND_MODULE, key, &h, r);
    if (r == CUDA_SUCCESS)
        lazy_lib_gone(key);
    tcu_lazy_unloading(0);
    if (r == CUDA_SUCCESS)
        lazy_unloaded();
    return r;
}

TCU_EXPORT CUresult cuModuleUnload(CUmodule hmod)
{
    tcu_enter();
    return unload((uint64_t)(uintptr_t)hmod, 0);
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
    return unload((uint64_t)(uintptr_t)library, 1);
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
 * (LAZY_SLOTS * 3 / 4 pairs) measures every further first use it cannot keep, launches
 * included, and keeps its charge to the end of the process (slower and counted high, never
 * uncounted; review RV17 H1).
 *
 * The same for a kernel's first launch in a context (hooks/launch.c): the CUDA runtime launches
 * its kernels by their CUkernel handles without any look-up above, and the driver places the
 * kernel's library in the context at that launch (on an H200 with CUDA 13, 1 GiB of a
 * __device__ array: tests/gpu/lazylib.sh).  A launch's look-up must stay cheap: each thread
 * keeps the pairs it found last (lazy_tl, LAZY_TL entries), good while the set's generation
 * (lazy_gen: a pair taken out, a fork) is the one they were found in. */
#define LAZY_SLOTS 131072 /* a power of 2 */

struct lazy_pair {
    uint64_t handle; /* a library, a kernel or a function; 0: an empty slot */
    uint64_t ctx;    /* 0: an owner pair (the handle's library or module is lib) */
    uint64_t lib;    /* the library or module whose unload takes the pair out (0: none known) */
    uint64_t bytes;  /* charged to the slice's device dev */
    int dev;
};
static struct lazy_pair lazy_set[LAZY_SLOTS];
static unsigned lazy_used, lazy_owners;
static pthread_mutex_t lazy_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t lazy_gen = 1;
/* Unloads and context destructions under way: the driver may have freed an object whose pairs
 * are not taken out yet, and a new object may already have its address (review RV17 M1). */
static _Atomic int lazy_unloading;
/* An owner pair's context; the tag of a query's pairs (an attribute query's first use stands for
 * no launch: review RV17b H-a; contexts are aligned pointers); the handle of a context's charges
 * whose pairs named no library or module (taken out at any unload, charged to the context's end).
 */
#define LAZY_OWNER_CTX  0
#define LAZY_QUERY_TAG  ((uint64_t)1)
#define LAZY_ORPHAN     ((uint64_t)1)
#define LAZY_OWNERS_MAX (LAZY_SLOTS / 4)
#define LAZY_FULL       (LAZY_SLOTS * 3 / 4)

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

/* Whether (handle, ctx) is kept (never while an unload is under way: it may be a freed object's).
 */
static int lazy_seen(uint64_t handle, uint64_t ctx)
{
    if (atomic_load(&lazy_unloading) > 0)
        return 0;
    struct lazy_tl *tl = lazy_tl_get();
    size_t t = (size_t)((handle >> 4) ^ (ctx >> 6)) & (LAZY_TL - 1);
    uint64_t gen = atomic_load_explicit(&lazy_gen, memory_order_acquire);
    if (tl && tl[t].handle == handle && tl[t].ctx == ctx && tl[t].gen == gen)
        return 1;
    pthread_mutex_lock(&lazy_lock);
    int seen = lazy_find(handle, ctx)->handle != 0;
    pthread_mutex_unlock(&lazy_lock);
    if (seen == 1 && tl) {
        tl[t].handle = handle;
        tl[t].ctx = ctx;
        tl[t].gen = gen;
    }
    return seen;
}

/* Keep (handle, ctx) with bytes charged to dev (added when kept already; an owner pair's lib
 * replaced: the handle is another object's now).  gen: the set's generation when the first use
 * began (0: any); nothing is kept when a drop happened since or an unload is under way (review
 * RV17b M-a: checked under the lock the drops take).  0, -1 when the set is full (owner pairs:
 * their quarter of it), -2 when not kept for gen or an unload. */
static int lazy_keep(uint64_t handle, uint64_t ctx, uint64_t lib, int dev, uint64_t bytes,
                     uint64_t gen)
{
    pthread_mutex_lock(&lazy_lock);
    struct lazy_pair *p = lazy_find(handle, ctx);
    int rc = 0;
    if (gen && (atomic_load(&lazy_gen) != gen || atomic_load(&lazy_unloading) > 0)) {
        rc = -2;
    } else if (p->handle && p->dev == dev) {
        p->bytes += bytes;
        if (ctx == LAZY_OWNER_CTX)
            p->lib = lib;
    } else if (!p->handle && lazy_used < LAZY_FULL &&
               (ctx != LAZY_OWNER_CTX || lazy_owners < LAZY_OWNERS_MAX)) {
        *p = (struct lazy_pair){handle, ctx, lib, bytes, dev};
        lazy_used++;
        lazy_owners += ctx == LAZY_OWNER_CTX;
    } else {
        rc = -1;
    }
    pthread_mutex_unlock(&lazy_lock);
    return rc;
}

/* Record that handle (a kernel, a function) belongs to library or module owner. */
static void lazy_owner(uint64_t handle, uint64_t owner)
{
    if (handle && owner)
        lazy_keep(handle, LAZY_OWNER_CTX, owner, -1, 0, 0);
}

/* Around the driver's call that may free an object with pairs (lazy_seen, above). */
void tcu_lazy_unloading(int on)
{
    atomic_fetch_add(&lazy_unloading, on ? 1 : -1);
}

/* After a library's or module's unload: what the driver keeps of it in the current context (a
 * launch's local memory) is charged now (review RV17b M-d). */
static void lazy_unloaded(void)
{
    CUdevice ord = 0;
    int dev = tcu_current_dev(&ord);
    if (dev >= 0)
        tcu_reconcile(ord, dev);
}

/* Take out the pairs of context key (by_lib 0: its pairs, its queries' included, and its orphan
 * pair; their charges given back) or of library or module key (by_lib 1: the pairs naming it,
 * their charges given back: the driver freed its code and data in every context; and every pair
 * that names none, whose handle may be one of key's: taken out, its charge moved to its
 * context's orphan pair, given back at the context's end).  What the driver keeps in a context
 * after an unload (a launch's local memory) is the next tcu_reconcile's (the unload hooks run
 * one; review RV17b M-d).  The others are put in again (an open-addressed set has no holes to
 * leave); the generation moves on in any case (review RV17b M-a). */
static void lazy_drop(uint64_t key, int by_lib)
{
    static struct lazy_pair keep[LAZY_SLOTS], orphan[LAZY_SLOTS];
    size_t n = 0, no = 0;
    int hit = 0;
    pthread_mutex_lock(&lazy_lock);
    atomic_fetch_add(&lazy_gen, 1); /* every thread's cached pairs are stale */
    for (size_t i = 0; i < LAZY_SLOTS; i++) {
        struct lazy_pair *p = &lazy_set[i];
        if (!p->handle)
            continue;
        int orphaned = by_lib && !p->lib && p->ctx != LAZY_OWNER_CTX && p->handle != LAZY_ORPHAN;
        int mine = by_lib ? p->lib == key : (p->ctx & ~LAZY_QUERY_TAG) == key;
        if (mine || orphaned) {
            hit = 1;
            if (orphaned && !mine && p->bytes)
                orphan[no++] = *p;
            else if (p->bytes)
                tcu_unreserve(p->dev, p->bytes);
        } else {
            keep[n++] = *p;
        }
    }
    if (hit) {
        memset(lazy_set, 0, sizeof lazy_set);
        lazy_owners = 0;
        for (size_t i = 0; i < n; i++) {
            *lazy_find(keep[i].handle, keep[i].ctx) = keep[i];
            lazy_owners += keep[i].ctx == LAZY_OWNER_CTX;
        }
        lazy_used = (unsigned)n;
        for (size_t i = 0; i < no; i++) {
            uint64_t c = orphan[i].ctx & ~LAZY_QUERY_TAG;
            struct lazy_pair *o = lazy_find(LAZY_ORPHAN, c);
            if (o->handle && o->dev == orphan[i].dev) {
                o->bytes += orphan[i].bytes;
            } else if (!o->handle) {
                *o = (struct lazy_pair){LAZY_ORPHAN, c, 0, orphan[i].bytes, orphan[i].dev};
                lazy_used++;
            } /* else: another device's orphan pair holds the slot: charged to the end */
        }
    }
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

/* The parent's pairs are charged to the parent's slot; the child's contexts are new.  (The set
 * is cleared only when it holds pairs: a child of a process that never used CUDA touches none of
 * its pages.) */
void tcu_lazy_atfork_child(void)
{
    pthread_mutex_init(&lazy_lock, NULL);
    if (lazy_used)
        memset(lazy_set, 0, sizeof lazy_set);
    lazy_used = lazy_owners = 0;
    atomic_store(&lazy_unloading, 0);
    atomic_fetch_add(&lazy_gen, 1); /* the forking thread's cached pairs were the parent's */
}

void tcu_lazy_begin(struct tcu_lazy *l, uint64_t handle, int launch)
{
    l->measuring = 0;
    l->captured = 0;
    l->launch = launch == TCU_LAZY_LAUNCH;
    CUcontext c = NULL;
    cuCtxGetCurrent_fn cur = TCU_REAL(cuCtxGetCurrent);
    if (!handle || !cur || cur(&c) != CUDA_SUCCESS || !c)
        return; /* the driver refuses it: no context, no load */
    l->handle = handle;
    l->ctx = (uint64_t)(uintptr_t)c | (launch == TCU_LAZY_QUERY ? LAZY_QUERY_TAG : 0);
    if (lazy_seen(handle, l->ctx))
        return;
    CUdevice ord = 0;
    int dev = tcu_current_dev(&ord);
    if (dev < 0)
        return; /* a context on a device the slice does not have: no allocation passes there */
    l->gen = atomic_load(&lazy_gen);
    tcu_meas_begin(ord, dev, &l->m);
    l->measuring = 1;
}

CUresult tcu_lazy_end(struct tcu_lazy *l, CUresult r, uint64_t lib)
{
    static _Atomic int full_logged;
    if (!l->measuring)
        return r;
    uint64_t spent = tcu_meas_end(&l->m, NULL);
    int dev = l->m.dev;
    /* Counted even when the call failed (a global the image does not define: the module was
     * loaded to look for it).  The pair is kept when the call succeeded, or when a look-up that
     * failed spent memory (the module was placed: a later use must not place it again), and no
     * unload or context's end happened meanwhile (its handle or context may be a freed
     * object's: review RV17 M1); a launch that failed is not kept (RV17 M4), nor one captured
     * into a graph that placed nothing (the instantiation places it).  Else the charge
     * stays to the process's end (counted high, never low). */
    if (spent && tcu_reserve_spent(dev, spent) < 0)
        tcu_charge(dev, spent);
    if (!lib)
        lib = lazy_owner_of(l->handle);
    int keep = (r == CUDA_SUCCESS && (spent || !l->captured)) || (spent && !l->launch);
    if (keep && lazy_keep(l->handle, l->ctx, lib, dev, spent, l->gen) == -1 &&
        atomic_exchange(&full_logged, 1) == 0)
        tcu_log("the set of first uses in a context is full: later ones are measured at every "
                "call, their charges kept to the process's end");
    /* Memory an earlier call placed that nothing measured (a graph's instantiation, an
     * attribute query of a kernel handle: review RV17 H3) shows now as the driver's figure
     * above the process's charges: charged here, not only at the next allocation. */
    tcu_reconcile(l->m.ord, dev);
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
    tcu_lazy_begin(&l, key, TCU_LAZY_LOOKUP);
    CUresult r = tcu_lazy_end(&l, real(pMod, library), key);
    if (r == CUDA_SUCCESS && pMod && (uint64_t)(uintptr_t)*pMod != key)
        lazy_owner((uint64_t)(uintptr_t)*pMod, key); /* its functions' pairs go with the library */
    return r;
}

/* A kernel's library or a function's module, kept as the owner pair (handle, context 0) by
 * cuLibraryGetKernel and cuModuleGetFunction (no context is 0): 0 when it did not come from
 * there (the owners' quarter of the set was full, cuLibraryEnumerateKernels, a library loaded
 * before the interposer was). */
static uint64_t lazy_owner_of(uint64_t kernel)
{
    pthread_mutex_lock(&lazy_lock);
    uint64_t lib = lazy_find(kernel, LAZY_OWNER_CTX)->lib;
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
    if (r == CUDA_SUCCESS && pKernel)
        lazy_owner((uint64_t)(uintptr_t)*pKernel, (uint64_t)(uintptr_t)library);
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
    tcu_lazy_begin(&l, key, TCU_LAZY_LOOKUP);
    return tcu_lazy_end(&l, real(pFunc, kernel), 0);
}

/* cuLibraryGetGlobal and cuLibraryGetManaged (the same arguments): the library's first use in
 * the context may place its module, variables included. */
static CUresult lib_var(cuLibraryGetGlobal_fn real, CUdeviceptr *dptr, size_t *bytes,
                        CUlibrary library, const char *name)
{
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    uint64_t key = (uint64_t)(uintptr_t)library;
    struct tcu_lazy l;
    tcu_lazy_begin(&l, key, TCU_LAZY_LOOKUP);
    return tcu_lazy_end(&l, real(dptr, bytes, library, name), key);
}

TCU_EXPORT CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library,
                                       const char *name)
{
    tcu_enter();
    return lib_var(TCU_REAL(cuLibraryGetGlobal), dptr, bytes, library, name);
}

TCU_EXPORT CUresult cuLibraryGetManaged(CUdeviceptr *dptr, size_t *bytes, CUlibrary library,
                                        const char *name)
{
    tcu_enter();
    return lib_var((cuLibraryGetGlobal_fn)TCU_REAL(cuLibraryGetManaged), dptr, bytes, library,
                   name);
}

/* A kernel's attributes: a query may load the kernel into the context (review RV17 H3), measured
 * as a first use. */
#define KERNEL_ATTR(name, params, args)                                                            \
    TCU_EXPORT CUresult name params                                                                \
    {                                                                                              \
        tcu_enter();                                                                               \
        name##_fn real = TCU_REAL(name);                                                           \
        if (TCU_UNLIKELY(!real))                                                                   \
            return CUDA_ERROR_NOT_INITIALIZED;                                                     \
        uint64_t key = (uint64_t)(uintptr_t)kernel;                                                \
        struct tcu_lazy l;                                                                         \
        tcu_lazy_begin(&l, key, TCU_LAZY_QUERY);                                                   \
        return tcu_lazy_end(&l, real args, 0);                                                     \
    }

KERNEL_ATTR(cuKernelGetAttribute,
            (int *pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev),
            (pi, attrib, kernel, dev))
KERNEL_ATTR(cuKernelSetAttribute,
            (CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev),
            (attrib, val, kernel, dev))

/* ---- a graph's instantiation (review RV17 H3) ----
 * A kernel captured into a graph (cuStreamBeginCapture ... cuLaunchKernel ... cuStreamEndCapture)
 * or added as a kernel node does not run: under lazy loading its library's module and its code
 * are placed in the context when the graph is instantiated, by a call that takes the whole graph
 * and reports nothing of it.  Its launches later are graph launches (hooks/launch.c), never
 * measured.  So every instantiation ends with the driver's figure reconciled on every device the
 * process uses (tcu_reconcile_all_wait: a node's kernel goes to the node's context, whichever is
 * current; charged past the limit if need be, the slice's next allocation refused), and so does
 * the executable graph's destruction (what the driver gave back with it, given back).  The charge
 * follows the driver's figure, so a process that instantiates and destroys graphs in a loop is
 * not counted high for it. */
static void graph_settle(void)
{
    tcu_reconcile_all_wait();
}

#define GRAPH_SETTLED(name, params, args)                                                          \
    TCU_EXPORT CUresult name params                                                                \
    {                                                                                              \
        tcu_enter();                                                                               \
        name##_fn real = TCU_REAL(name);                                                           \
        if (TCU_UNLIKELY(!real))                                                                   \
            return CUDA_ERROR_NOT_INITIALIZED;                                                     \
        CUresult r = real args;                                                                    \
        graph_settle();                                                                            \
        return r;                                                                                  \
    }

GRAPH_SETTLED(cuGraphInstantiate,
              (CUgraphExec * phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode, char *logBuffer,
               size_t bufferSize),
              (phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize))
GRAPH_SETTLED(cuGraphInstantiate_v2,
              (CUgraphExec * phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode, char *logBuffer,
               size_t bufferSize),
              (phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize))
GRAPH_SETTLED(cuGraphInstantiateWithFlags,
              (CUgraphExec * phGraphExec, CUgraph hGraph, unsigned long long flags),
              (phGraphExec, hGraph, flags))
GRAPH_SETTLED(cuGraphInstantiateWithParams,
              (CUgraphExec * phGraphExec, CUgraph hGraph,
               CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams),
              (phGraphExec, hGraph, instantiateParams))
GRAPH_SETTLED(cuGraphInstantiateWithParams_ptsz,
              (CUgraphExec * phGraphExec, CUgraph hGraph,
               CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams),
              (phGraphExec, hGraph, instantiateParams))
GRAPH_SETTLED(cuGraphExecDestroy, (CUgraphExec hGraphExec), (hGraphExec))
/* An upload readies an executable graph for its launch (gated like any call; its work is the
 * launch's: launch.c), and may place what the instantiation left. */
GRAPH_SETTLED(cuGraphUpload, (CUgraphExec hGraphExec, CUstream hStream), (hGraphExec, hStream))
GRAPH_SETTLED(cuGraphUpload_ptsz, (CUgraphExec hGraphExec, CUstream hStream), (hGraphExec, hStream))
/* A kernel or a graph put into an executable graph: placed like an instantiation's (review of
 * the graph hooks, M3).  One NVML query per device at each call: programs that update a graph's
 * parameters at every step pay that (microseconds against the step). */
GRAPH_SETTLED(cuGraphExecKernelNodeSetParams,
              (CUgraphExec hGraphExec, CUgraphNode hNode, const void *nodeParams),
              (hGraphExec, hNode, nodeParams))
GRAPH_SETTLED(cuGraphExecKernelNodeSetParams_v2,
              (CUgraphExec hGraphExec, CUgraphNode hNode,
               const CUDA_KERNEL_NODE_PARAMS *nodeParams),
              (hGraphExec, hNode, nodeParams))
GRAPH_SETTLED(cuGraphExecUpdate,
              (CUgraphExec hGraphExec, CUgraph hGraph, CUgraphNode *hErrorNode_out,
               CUgraphExecUpdateResult *updateResult_out),
              (hGraphExec, hGraph, hErrorNode_out, updateResult_out))
GRAPH_SETTLED(cuGraphExecUpdate_v2,
              (CUgraphExec hGraphExec, CUgraph hGraph, CUgraphExecUpdateResultInfo *resultInfo),
              (hGraphExec, hGraph, resultInfo))
GRAPH_SETTLED(cuGraphExecChildGraphNodeSetParams,
              (CUgraphExec hGraphExec, CUgraphNode hNode, CUgraph childGraph),
              (hGraphExec, hNode, childGraph))
GRAPH_SETTLED(cuGraphExecNodeSetParams,
              (CUgraphExec hGraphExec, CUgraphNode hNode, CUgraphNodeParams *nodeParams),
              (hGraphExec, hNode, nodeParams))
