/* interposer.h - state shared by the hook families of libtessel-cuda.
 *
 * Lifecycle (docs/interposer.md draws it):
 *   load       nothing runs: no constructor, so programs that never touch
 *              CUDA pay nothing.
 *   first hook tcu_ready() -> tcu_init() once (pthread_once): read the
 *              configuration from the environment, dlopen("libcuda.so.1")
 *              and resolve the real entry points, attach the slice file and
 *              claim a process slot, install the fork handler.
 *   alloc      tcu_current_dev -> tcu_reserve (atomics) -> real driver ->
 *              tcu_track (hash table) or tcu_unreserve on failure.
 *   free       tcu_untrack (O(1)) -> real driver -> tcu_release, or the
 *              entry goes back if the driver refused the free.
 *   launch     tcu_launch_begin (suspend gate, read finished event pairs,
 *              pace, start event) -> real driver -> tcu_launch_end (end
 *              event, leave the gate); compute.c, docs/compute-shares.md.
 *   fork       the child forgets the parent's slot; its first counted call
 *              claims its own (tcu_slow_register).
 *   exit       nothing: the slot is reclaimed like a dead process's.
 *
 * Hot-path rule: after tcu_ready() returns, the hooks make no syscall, take
 * no lock across a driver call, read no environment and log nothing.
 */
#ifndef TESSEL_INTERPOSER_H
#define TESSEL_INTERPOSER_H

#include <stdatomic.h>
#include <stdint.h>

#include "cudaabi/cuda_abi.h"
#include "interposer/policy/policy.h"
#include "interposer/symbols.h"
#include "libshm/shm.h"

#define TCU_EXPORT      __attribute__((visibility("default")))
#define TCU_LIKELY(x)   __builtin_expect(!!(x), 1)
#define TCU_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Memory a context is charged when it could not be measured: what a CUDA
 * 12/13 context costs on Ampere/Ada/Hopper cards (cuMemGetInfo before and
 * after cuCtxCreate: 250-500 MiB depending on the card and lazy loading).
 * Measured costs replace it; see docs/interposer.md. */
#define TCU_CTX_COST_DEFAULT (300ull << 20)

/* A measured context cost above this is noise from a neighbour's
 * allocation landing in the measurement window: not believed. */
#define TCU_CTX_COST_MAX (2ull << 30)

extern atomic_int tcu_ready_flag;
extern _Thread_local int tcu_initialising;
void tcu_init(void);

/* Initialise on first use; afterwards one relaxed-acquire load. */
static inline void tcu_ready(void)
{
    if (TCU_UNLIKELY(!atomic_load_explicit(&tcu_ready_flag, memory_order_acquire)))
        tcu_init();
}

/* The start of every hooked driver entry point, cuGetProcAddress included (not NVML's, not
 * dlsym's: dlsym answers without the driver): tcu_ready, then a slice reclaimed while idle is
 * waited for before anything reaches the driver (docs/suspend.md, "Idle reclamation"): one more
 * load when it is not. tcu_idle_wait (compute.c): when tesseld has the slice reclaimed, ask for the
 * restore (the slice's wake word) and wait for it (a line on stderr past 10 s); at once when there
 * is no slice. */
void tcu_idle_wait(void);
#define tcu_enter()                                                                                \
    do {                                                                                           \
        tcu_ready();                                                                               \
        tcu_idle_wait();                                                                           \
    } while (0)

/* The process-wide state.  Written by tcu_init only. */
struct tcu_state {
    tcu_config_t cfg;
    tshm_t *slice; /* NULL only if even a private slice failed */
    void *cuda;    /* dlopen("libcuda.so.1") handle, NULL if absent */
    void *nvml;    /* dlopen("libnvidia-ml.so.1") handle, NULL if absent */
};
extern struct tcu_state tcu;

/* Code that runs inside dlsym may run before the sanitizers are set up. */
#define TCU_NO_SANITIZE __attribute__((no_sanitize_address, no_sanitize_undefined))

/* Real dlsym (glibc's), usable before tcu_init and before ASan's init. */
typedef void *(*tcu_dlsym_fn)(void *, const char *);
tcu_dlsym_fn tcu_real_dlsym_fn(void);
void *tcu_real_dlsym(void *handle, const char *name);

/* Whether name is one of our exported hooks (no libc call, no
 * instrumentation: safe inside dlsym at any time). */
int tcu_is_hooked_name(const char *name);

/* Slice device index for CUDA ordinal `ord` (device UUID looked up once,
 * then an atomic load); -1 when the driver does not know the ordinal (the
 * hook lets the driver report that); -2 when the slice cannot take it (no
 * slice, more than 64 devices): the hooks then refuse (fail closed). */
int tcu_dev(CUdevice ord);

/* Device of the calling thread's current context as a slice index; -1 when
 * there is no context (the hook then lets the driver report the error), -2
 * as tcu_dev. */
int tcu_current_dev(CUdevice *ord);

/* Reserve bytes on slice device dev: 0, or -1 when over the limit (after
 * one slow-path retry that reclaims dead processes). */
int tcu_reserve(int dev, uint64_t bytes);
/* The same for memory the driver has spent already (measured: a module, a context's growth, a
 * pool's growth): never the look at the driver's figure (tcu_reconcile), which would count
 * it twice. */
int tcu_reserve_spent(int dev, uint64_t bytes);
void tcu_unreserve(int dev, uint64_t bytes);
/* Charge without the limit check (driver rounded up past the reservation). */
void tcu_charge(int dev, uint64_t bytes);

/* Oversubscription (issue 21; docs/interposer.md "Oversubscription"): bytes an allocation
 * spilled into managed memory kept on the host, counted against the slice's host limit
 * (TESSEL_CUDA_MEM_OVERSUBSCRIBE, and the slice file's host limit, the lower) instead of
 * its device limit.  tcu_reserve_host: 0, or -1 when spilling is off or the host limit
 * would be passed (after one slow-path retry that reclaims dead processes). */
int tcu_reserve_host(int dev, uint64_t bytes);
void tcu_unreserve_host(int dev, uint64_t bytes);
/* Whether this process may spill at all (its own configuration allows it). */
int tcu_spill_allowed(void);

/* The aux of a TCU_KIND_PTR record that was spilled to the host (a pool allocation's aux
 * is its pool handle, a pointer, never 1). */
#define TCU_AUX_HOST ((uint64_t)1)
/* The aux of a TCU_KIND_PTR record of the job's own cuMemAllocManaged memory (charged to the
 * device in full, never seen in NVML's per-process figure). */
#define TCU_AUX_MANAGED ((uint64_t)2)

/* Per slice device, what this process charged that NVML's per-process figure never shows: its
 * managed allocations.  Measurements and tcu_reconcile compare NVML's figure with the process's
 * charges less these (review of the graph hooks, H1: otherwise managed memory offsets a
 * placement nothing reported, and it goes uncounted).  Raised just after the reservation,
 * lowered just after the free. */
extern _Atomic uint64_t tcu_unseen[];

/* Allocation kinds: keys of different kinds never collide in the table. */
enum tcu_kind {
    TCU_KIND_PTR = 1,   /* device pointer: cuMemAlloc*, managed, async */
    TCU_KIND_VMM = 2,   /* cuMemCreate handle */
    TCU_KIND_ARRAY = 3, /* CUarray */
    TCU_KIND_MIPMAP = 4,
    TCU_KIND_CTX = 5,      /* cuCtxCreate context */
    TCU_KIND_MODULE = 6,   /* CUmodule: its code and data, lazily loaded functions */
    TCU_KIND_CTX_LIMIT = 7 /* cuCtxSetLimit growth of (context, limit) */
};

/* Record an allocation (kind, key) of bytes on device dev; aux is free for
 * the kind's use (the pool of an async allocation).  0, or -1 when memory
 * for the record ran out (the caller then gives the allocation back). */
int tcu_track(enum tcu_kind kind, uint64_t key, int dev, uint64_t bytes, uint64_t aux);

/* Remove the record of (kind, key) and return its device, bytes and aux;
 * 0, or -1 when not tracked (not ours, or allocated before we were). */
int tcu_untrack(enum tcu_kind kind, uint64_t key, int *dev, uint64_t *bytes, uint64_t *aux);

/* The two halves of every counted free, around the driver's call (whose
 * signature differs per hook):
 *
 *     struct tcu_held h;
 *     if (!tcu_release_begin(kind, key, &h))
 *         return real(...);                   // not ours: the driver alone
 *     return tcu_release_settle(kind, key, &h, real(...));
 *
 * tcu_release_begin takes the record out before the driver frees (the key
 * cannot be handed out again before then): 1 when it was tracked, 0 when
 * not.  tcu_release_settle gives the bytes back if the driver freed (rc
 * success), else puts the record back as it was; returns rc unchanged. */
struct tcu_held {
    int dev;
    uint64_t bytes;
    uint64_t aux;
};

static inline int tcu_release_begin(enum tcu_kind kind, uint64_t key, struct tcu_held *h)
{
    return tcu_untrack(kind, key, &h->dev, &h->bytes, &h->aux) == 0;
}

static inline CUresult tcu_release_settle(enum tcu_kind kind, uint64_t key,
                                          const struct tcu_held *h, CUresult rc)
{
    if (TCU_LIKELY(rc == CUDA_SUCCESS))
        tcu_unreserve(h->dev, h->bytes);
    else
        tcu_track(kind, key, h->dev, h->bytes, h->aux);
    return rc;
}

/* Number of live records (tests, bench). */
uint64_t tcu_tracked(void);

/* In a fork child (no other thread exists): forget the parent's
 * allocations, pools and primary contexts, which stay charged to the
 * parent's slot, and reset the locks. */
void tcu_table_atfork_child(void);
void tcu_pools_atfork_child(void);
/* The child forgets the parent's spilled ranges (hooks/memory.c). */
void tcu_spills_atfork_child(void);
void tcu_contexts_atfork_child(void);
/* The (library or kernel, context) pairs whose first use in a context was measured and charged
 * (hooks/module.c): a context destroyed gives its pairs' charges back (the driver freed the
 * libraries' modules in it); a fork child forgets the parent's. */
void tcu_lazy_ctx_gone(CUcontext ctx);
void tcu_lazy_atfork_child(void);

/* Pool bookkeeping (hooks/memory.c): resync the charge of every pool this
 * process allocated from with its reserved bytes.  Called by cuMemGetInfo
 * and before an allocation is refused. */
void tcu_pools_resync(void);

/* Primary context charge for device dev (hooks/context.c). */
uint64_t tcu_ctx_cost(int dev, CUdevice ord);

/* NVML side (hooks/nvml.c): the real NVML handle, opened lazily. */
void *tcu_nvml_handle(void);

/* What NVML says of CUDA device ord (matched by UUID; no context needed):
 * the device's free memory (0: unknown) and the calling process's own
 * device memory as the driver counts it (self; self_ok = 0 when NVML
 * cannot list processes; a process NVML does not list holds 0).  0, or -1
 * when NVML or the device is unavailable. */
struct tcu_nvml_mem {
    uint64_t dev_free;
    uint64_t self;
    int self_ok;
};
int tcu_nvml_mem(CUdevice ord, struct tcu_nvml_mem *m);

/* Measure the device memory the driver spends on its own inside a call
 * (module code, lazily loaded functions; hooks/context.c):
 *
 *     struct tcu_meas m;
 *     tcu_meas_begin(ord, dev, &m);       // takes the measurement lock
 *     CUresult r = real(...);
 *     uint64_t spent = tcu_meas_end(&m, &shrunk);  // releases it
 *
 * spent: what this process's device memory (NVML per process, else the
 * device's free memory) grew by, less what other threads of this process
 * charged to the slice meanwhile; 0 when not measurable or above
 * TCU_CTX_COST_MAX (noise).  *shrunk (when not NULL): what it shrank by
 * (0 when it grew).  Not for hot paths: two NVML queries. */
struct tcu_meas {
    CUdevice ord;
    int dev;
    int ok;
    struct tcu_nvml_mem b;
    uint64_t b_ours;
};
void tcu_meas_begin(CUdevice ord, int dev, struct tcu_meas *m);
uint64_t tcu_meas_end(struct tcu_meas *m, uint64_t *shrunk);

/* A call that may place a library's module or a kernel's code in the current context (a
 * look-up in hooks/module.c, a kernel's launch in hooks/launch.c), around the driver's call:
 *
 *     struct tcu_lazy l;
 *     tcu_lazy_begin(&l, handle, launch);   // measures the first use of handle in the context
 *     return tcu_lazy_end(&l, real(...), lib);
 *
 * tcu_lazy_end charges what the first use spent (past the limit if need be), to be given back
 * with the context or with library or module lib (0: the handle's own, when cuLibraryGetKernel or
 * cuModuleGetFunction named it; else the context alone), and keeps the pair so that later
 * calls are neither measured nor charged.  launch: a launch.  captured: set by a launch's
 * caller between the two when the launch's stream was capturing: a captured launch that placed
 * nothing keeps no pair (the graph's instantiation places the kernel, and its first launch
 * outside a capture must still be measured).  Takes the measurement lock of tcu_meas_begin between
 * the two; call it after any wait of the launch's own (pacing, the suspend gate). */
struct tcu_lazy {
    int measuring, launch, captured;
    uint64_t handle, ctx, gen;
    struct tcu_meas m;
};
/* Around a driver call that may free an object with pairs (cuLibraryUnload, cuModuleUnload, a
 * context's destruction): on 1 before it, 0 after the pairs were taken out. */
void tcu_lazy_unloading(int on);
enum { TCU_LAZY_LOOKUP = 0, TCU_LAZY_LAUNCH = 1, TCU_LAZY_QUERY = 2 };
/* Whether stream st (pt: a _ptsz entry point's) is capturing, or cannot be asked: its launches
 * are recorded into a graph, not run, and place nothing until the graph is instantiated. */
int tcu_stream_capturing(CUstream st, int pt);
void tcu_lazy_begin(struct tcu_lazy *l, uint64_t handle, int launch);
CUresult tcu_lazy_end(struct tcu_lazy *l, CUresult r, uint64_t lib);

/* Charge slice device dev what this process's device memory on CUDA device ord (NVML, per
 * process) holds beyond what the process has charged to the slice: driver memory no call
 * reported (interposer.c, "driver memory no call reports").  Skipped while a measurement is
 * under way (tcu_meas_begin), when NVML cannot tell, or when the process's charges changed
 * during the query (another thread's allocation or free: the next one tries again).  The
 * charge follows the driver's figure both ways (more than 2 MiB apart): given back when the
 * difference shrinks. */
void tcu_reconcile(CUdevice ord, int dev);
/* The same, waiting for a measurement under way rather than skipping (never call it while this
 * thread measures): after a call that places memory no hook can size beforehand, a graph's
 * instantiation (hooks/module.c). */
void tcu_reconcile_wait(CUdevice ord, int dev);
/* tcu_reconcile_wait on every device of the slice this process has mapped (a graph's kernels
 * are placed in their own contexts, whichever is current). */
void tcu_reconcile_all_wait(void);

/* A launch happened since the last tcu_reconcile (a first launch may load code: driver
 * memory no call reports).  Set by every launch hook: one relaxed load when already set. */
extern _Atomic int tcu_launched;
static inline void tcu_note_launch(void)
{
    if (TCU_UNLIKELY(!atomic_load_explicit(&tcu_launched, memory_order_relaxed)))
        atomic_store_explicit(&tcu_launched, 1, memory_order_relaxed);
}

/* Give back the cuCtxSetLimit charges of a context that is gone. */
void tcu_ctx_limits_release(CUcontext ctx);

/* ---- compute (compute.c; docs/compute-shares.md) ---- */

/* One stream's share of a launch in flight (compute.c's bookkeeping). */
struct tcu_launch_one {
    struct meas *m; /* NULL: not measured */
    CUstream st;
    int pt;        /* per-thread default stream variant */
    int fresh;     /* a new event pair (else the newest is extended) */
    uint64_t prov; /* provisional charge taken */
};

/* A launch between tcu_launch_begin and tcu_launch_end (on the caller's
 * stack). */
typedef struct {
    int entered; /* inside the suspend gate */
    struct tcu_launch_one one;
} tcu_launch_t;

/* Before a launch on stream st (pt: a _ptsz entry point): wait while the
 * slice is suspended or over its share, start measuring.  After it:
 * finish measuring (rc: the driver's answer).  Never fail the launch. */
void tcu_launch_begin(tcu_launch_t *l, CUstream st, int pt);
void tcu_launch_end(tcu_launch_t *l, CUresult rc);

/* cuLaunchCooperativeKernelMultiDevice with every entry paced and
 * measured. */
CUresult tcu_launch_multi(CUDA_LAUNCH_PARAMS *list, unsigned n, unsigned flags);

/* At exit, before the process leaves its slice: publish the exiting
 * thread's estimated charges. */
void tcu_compute_fini(void);

/* Fork child: forget the forking thread's measurements. */
void tcu_compute_atfork_child(void);

/* Claim a process slot if this process has none (forked child). 0 or -1. */
int tcu_register(void);

/* Write one line "tessel-cuda: <text>" to stderr (slow path only). */
void tcu_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
