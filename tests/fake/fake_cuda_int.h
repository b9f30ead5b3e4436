/* fake_cuda_int.h - internals shared by the files of the fake libcuda.so.1.
 *
 * TEST DOUBLE ONLY: a simulated CUDA driver over host memory.
 *   fake_cuda.c   init, configuration, devices, contexts, cuGetProcAddress,
 *                 error strings, call counters, test hooks
 *   fake_mem.c    device/host/managed memory, pools, VMM, arrays, copies
 *   fake_exec.c   modules, launches, streams, events, graphs (simulated time)
 *   fake_ckpt.c   cuCheckpointProcess*: lock, checkpoint, restore, unlock of a process
 *
 * One process-wide mutex (g.lock) guards every object below; the shared
 * device state (fake_state.h) has its own lock, taken inside g.lock.
 * Sleeping (synchronisation) happens with neither held.
 */
#ifndef TESSEL_FAKE_CUDA_INT_H
#define TESSEL_FAKE_CUDA_INT_H

#include <pthread.h>
#include <stdint.h>

#include "cudaabi/cuda_abi.h"
#include "fake_config.h"
#include "fake_state.h"

/* ---- call counters ---- */
enum {
#define E(n) FC_##n,
#include "fake_cuda_entries.def"
#undef E
    FC_COUNT
};
extern unsigned long long fake_calls[FC_COUNT];
/* The first statement of every entry point: counts the call and passes the checkpoint gate
 * (fake_ckpt.c) for the whole call, so that while the process is locked
 * (cuCheckpointProcessLock from another process) a new call waits here and the lock waits for
 * the calls in progress to return. */
int ckpt_gate_enter(void);
void ckpt_gate_leave(int *token);
#define COUNT(n)                                                                                   \
    __attribute__((cleanup(ckpt_gate_leave), unused)) int ckpt_gate_ = ckpt_gate_enter();          \
    __atomic_fetch_add(&fake_calls[FC_##n], 1, __ATOMIC_RELAXED)

/* ---- objects ----
 * Every handle the fake gives out points to a struct starting with obj_t.
 * Live objects sit on one list; a handle is valid iff it is on the list
 * with the expected kind (so a stale handle gets an error, never a crash). */
typedef enum {
    K_CTX = 1,
    K_STREAM,
    K_EVENT,
    K_MODULE,
    K_FUNC,
    K_POOL,
    K_ARRAY,
    K_MIPMAP,
    K_GRAPH,
    K_NODE,
    K_EXEC,
    K_VMEM,
} kind_t;

typedef struct obj {
    kind_t kind;
    struct ctx *ctx; /* owner destroyed with the context, or NULL */
    struct obj *prev, *next;
} obj_t;

typedef struct stream {
    obj_t o;
    unsigned flags;
    int prio;
    uint64_t tail_ns;      /* simulated end of the last work queued */
    struct graph *capture; /* non-NULL while capturing */
} stream_t;

typedef struct ctx {
    obj_t o;
    int dev;
    unsigned flags;
    int primary;
    int refs;            /* primary: retain count */
    uint64_t charged;    /* context memory charged on the device (cuCtxSetLimit heaps incl.) */
    uint64_t limit[3];   /* CU_LIMIT_STACK_SIZE, _PRINTF_FIFO_SIZE, _MALLOC_HEAP_SIZE */
    uint64_t tail_ns;    /* max tail of its streams */
    stream_t *null_strm; /* the default (legacy and per-thread) stream */
} ctx_t;

typedef struct pool {
    obj_t o;
    int dev;
    int is_default;
    uint64_t reserved, used, reserved_high, used_high, threshold, max_size;
    unsigned char access[TFAKE_MAX_DEVICES]; /* CUmemAccess_flags per device */
} pool_t;

/* ---- allocations (device, managed, pool, host, VMM reservations) ---- */
typedef enum {
    A_DEVICE = 1, /* cuMemAlloc*, cuMemAllocPitch* */
    A_MANAGED,    /* cuMemAllocManaged */
    A_POOL,       /* cuMemAllocAsync / FromPoolAsync */
    A_HOST,       /* cuMemAllocHost / cuMemHostAlloc: host memory, not charged */
    A_HOSTREG,    /* cuMemHostRegister: caller's memory */
    A_RESERVE,    /* cuMemAddressReserve: VA range; maps inside */
} akind_t;

typedef struct vmem {
    obj_t o; /* K_VMEM: a physical allocation from cuMemCreate */
    int fd;
    int dev;
    uint64_t size;
    int released;
    int maps;
} vmem_t;

typedef struct vmap {
    uint64_t ptr, size;
    vmem_t *h;
    int prot; /* PROT_* granted by cuMemSetAccess */
    struct vmap *next;
} vmap_t;

typedef struct alloc {
    uint64_t base, size; /* size as requested (pitch*height for pitched) */
    uint64_t maplen;     /* bytes mapped at base */
    uint64_t charged;    /* bytes charged on the device */
    akind_t kind;
    int dev;
    unsigned hflags; /* A_HOST / A_HOSTREG: the flags given */
    ctx_t *ctx;      /* owner for A_DEVICE / A_MANAGED, else NULL */
    pool_t *pool;    /* A_POOL */
    vmap_t *maps;    /* A_RESERVE */
    /* A_MANAGED (see "Managed memory" in tests/fake/README.md): where its pages are (-1:
     * host, else the CUDA ordinal whose device holds them, `charged` bytes there) and the
     * hints cuMemAdvise gave it: preferred location (CUmemLocationType, 0 = none, and id)
     * and the ordinals that access it (bit mask). */
    int resident;
    int pref_type, pref_id;
    uint64_t accessed_by;
} alloc_t;

/* ---- process-wide state ---- */
typedef struct {
    pthread_mutex_t lock;
    int inited;          /* 1 after a successful cuInit */
    CUresult init_error; /* sticky result of a failed cuInit (0: not tried) */
    tfake_config_t cfg;
    /* CUDA_VISIBLE_DEVICES at cuInit: nvis devices, CUDA ordinal k is cfg.dev[phys[k]].  A
     * CUdevice is an ordinal; what the devices share with NVML and other processes (the state,
     * the configuration, PCI bus ids, UUIDs) is indexed by pdev(ordinal). */
    int nvis;
    int phys[TFAKE_MAX_DEVICES];
    tfake_shared_t *sh;
    obj_t objs; /* sentinel of the live-object list */
    alloc_t **allocs;
    size_t nalloc, calloc_;
    ctx_t *primary[TFAKE_MAX_DEVICES];
    unsigned primary_flags[TFAKE_MAX_DEVICES];
    pool_t *default_pool[TFAKE_MAX_DEVICES];
    pool_t *cur_pool[TFAKE_MAX_DEVICES];
} fake_t;

extern fake_t g;

/* The device (as NVML and the shared state number it) of a valid CUDA ordinal. */
static inline int pdev(int ordinal)
{
    return g.phys[ordinal];
}

#define LOCK()   pthread_mutex_lock(&g.lock)
#define UNLOCK() pthread_mutex_unlock(&g.lock)

/* Bytes per VMM granule and pool chunk: what cuMemGetAllocationGranularity
 * reports on current GPUs. */
#define FAKE_GRANULARITY (2ull << 20)
/* Pitch alignment of cuMemAllocPitch (the driver pads rows to 512 B). */
#define FAKE_PITCH_ALIGN 512ull

static inline uint64_t roundup(uint64_t v, uint64_t a)
{
    return (v + a - 1) / a * a;
}

/* Under g.lock. */
obj_t *obj_new(kind_t kind, size_t size, ctx_t *owner);
void obj_free(obj_t *o);
obj_t *obj_find(const void *handle, kind_t kind);
ctx_t *cur_ctx(void);           /* current context if live, else NULL */
void ctx_push_tls(ctx_t *c);    /* used by cuCtxCreate */
CUresult need_ctx(ctx_t **out); /* INVALID_CONTEXT when none current */
int dev_ok(int dev);
CUresult fake_init_check(void); /* NOT_INITIALIZED / DEINITIALIZED / SUCCESS */

/* fake_mem.c, under g.lock */
alloc_t *alloc_find(uint64_t p);     /* allocation containing p */
void alloc_free(alloc_t *a);         /* uncharge, unmap, drop */
void mem_free_ctx(ctx_t *c);         /* every allocation a context owns */
void pools_at_sync(int dev);         /* release above threshold */
void mem_reset(void);                /* free everything (tests' reset) */
void forget_allocs(void);            /* fork child: unmap and free, no accounting */
int charge(int dev, uint64_t bytes); /* 0, or -1: over the device */
void uncharge(int dev, uint64_t bytes);

/* fake_ckpt.c */
void ckpt_start_service(void); /* after a successful cuInit, not under g.lock */
void ckpt_reset(void);         /* under g.lock: drop a checkpoint's host copies, open the gate */
void ckpt_atfork_child(void);  /* the child has no service thread and an open gate */

/* fake_exec.c, under g.lock */
stream_t *stream_resolve(CUstream s, ctx_t *c, int per_thread, CUresult *err);
stream_t *stream_new(ctx_t *c, unsigned flags, int prio);
void exec_free_ctx(ctx_t *c);
void exec_reset(void);     /* graphs and their nodes (tests' reset) */
void forget_obj(obj_t *o); /* fork child: free what o owns besides itself */
/* Wait (outside the lock) until every stream of the device `dev` in this
 * process has drained: synchronous copies order after queued kernels. */
void sync_ctx_unlocked(ctx_t *c);

#endif
