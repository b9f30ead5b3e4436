/* context.c - cuInit, explicit contexts (every cuCtxCreate version) and
 * primary contexts, each charged what a context costs on its device.
 *
 * The cost of a context depends on the device and on its kind: a primary
 * context (the CUDA runtime's) and a cuCtxCreate context are sized
 * differently by the driver.  The first context of a kind a slice creates on
 * a device is measured: this process's device memory as NVML counts it
 * (per process, so a neighbour's allocations do not disturb it), before and
 * after creation, less what other threads of this process charged to the
 * slice meanwhile; where NVML cannot list processes, the drop of the
 * device's free memory.  One measurement at a time per process (a context
 * another thread creates inside the window would be counted twice).  The
 * figure is kept in the slice file per device and kind and charged for
 * every later context of that kind.  Until measured a context reserves
 * TCU_CTX_COST_DEFAULT; the measured figure is then settled through the
 * limit check, and a context that does not fit is destroyed again and
 * refused with CUDA_ERROR_OUT_OF_MEMORY.  docs/interposer.md gives the
 * numbers.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "interposer/interposer.h"

TCU_EXPORT CUresult cuInit(unsigned int Flags)
{
    tcu_enter();
    cuInit_fn real = TCU_REAL(cuInit);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    return real(Flags);
}

/* Held from before a measured creation (context, module) to after its
 * measurement: one measurement at a time per process. */
static pthread_mutex_t measure_lock = PTHREAD_MUTEX_INITIALIZER;

struct ctx_charge {
    int dev;
    enum tshm_ctx_kind kind;
    uint64_t cost;
    int measuring;         /* holds measure_lock */
    struct tcu_nvml_mem b; /* NVML before creation */
    int b_ok;
    uint64_t b_ours; /* this process's slice charge before */
};

/* Before a context of kind is created on ord: reserve its charge; 0, or
 * -1 when the slice cannot take it. */
static uint64_t seen_used(int dev);

static int ctx_begin(CUdevice ord, enum tshm_ctx_kind kind, struct ctx_charge *c)
{
    c->dev = tcu_dev(ord);
    c->kind = kind;
    c->measuring = 0;
    if (c->dev == -1) /* not a device: the driver reports it */
        return 0;
    c->cost = tcu.slice ? tshm_ctx_cost_of(tcu.slice, c->dev, kind) : 0;
    if (c->cost == 0 && c->dev >= 0 && tcu.slice) {
        pthread_mutex_lock(&measure_lock);
        c->cost = tshm_ctx_cost_of(tcu.slice, c->dev, kind); /* measured meanwhile? */
        if (c->cost == 0) {
            c->measuring = 1;
            c->cost = TCU_CTX_COST_DEFAULT;
            c->b_ok = tcu_nvml_mem(ord, &c->b) == 0;
            c->b_ours = seen_used(c->dev);
        } else {
            pthread_mutex_unlock(&measure_lock);
        }
    }
    if (c->cost == 0)
        c->cost = TCU_CTX_COST_DEFAULT;
    if (tcu_reserve(c->dev, c->cost) < 0) {
        if (c->measuring)
            pthread_mutex_unlock(&measure_lock);
        c->measuring = 0;
        return -1;
    }
    return 0;
}

/* This process's charges to slice device dev that NVML's per-process figure can show: all but
 * its managed memory (tcu_unseen). */
static uint64_t seen_used(int dev)
{
    uint64_t all = tshm_self_used(tcu.slice, dev);
    uint64_t un = dev >= 0 && dev < TCU_MAX_DEVICES ? atomic_load(&tcu_unseen[dev]) : 0;
    return all > un ? all - un : 0;
}

/* What this process's device memory grew by since b (NVML per process, else
 * the drop of the device's free memory), less what other threads of this
 * process charged to slice device dev meanwhile beyond `reserved` (our own
 * reservation inside the window).  0 when not measurable. */
static uint64_t meas_delta(CUdevice ord, int dev, const struct tcu_nvml_mem *b, uint64_t b_ours,
                           uint64_t reserved, uint64_t *shrunk)
{
    struct tcu_nvml_mem a;
    if (shrunk)
        *shrunk = 0;
    if (tcu_nvml_mem(ord, &a) < 0)
        return 0;
    /* Charges other threads of this process took meanwhile (the slice
     * charge grew by our reservation plus theirs). */
    uint64_t ours = seen_used(dev);
    uint64_t grown = ours > b_ours ? ours - b_ours : 0;
    uint64_t others = grown > reserved ? grown - reserved : 0;
    if (b->self_ok && a.self_ok) {
        if (a.self > b->self + others)
            return a.self - b->self - others;
        if (shrunk && b->self + others > a.self)
            *shrunk = b->self + others - a.self;
        return 0;
    }
    if (b->dev_free && a.dev_free && b->dev_free > a.dev_free + others)
        return b->dev_free - a.dev_free - others;
    if (shrunk && b->dev_free && a.dev_free + others > b->dev_free)
        *shrunk = a.dev_free + others - b->dev_free;
    return 0;
}

/* The measured cost of the context just created, 0 when not measurable. */
static uint64_t ctx_measure(CUdevice ord, const struct ctx_charge *c)
{
    if (!c->b_ok)
        return 0;
    return meas_delta(ord, c->dev, &c->b, c->b_ours, c->cost, NULL);
}

void tcu_meas_begin(CUdevice ord, int dev, struct tcu_meas *m)
{
    pthread_mutex_lock(&measure_lock);
    m->ord = ord;
    m->dev = dev;
    m->ok = tcu.slice && dev >= 0 && tcu_nvml_mem(ord, &m->b) == 0;
    m->b_ours = m->ok ? seen_used(dev) : 0;
}

uint64_t tcu_meas_end(struct tcu_meas *m, uint64_t *shrunk)
{
    uint64_t s = 0;
    uint64_t d = m->ok ? meas_delta(m->ord, m->dev, &m->b, m->b_ours, 0, &s) : 0;
    pthread_mutex_unlock(&measure_lock);
    if (shrunk)
        *shrunk = s <= TCU_CTX_COST_MAX ? s : 0;
    return d <= TCU_CTX_COST_MAX ? d : 0;
}

/* Differences below this are left alone: the window between a driver's call and its settling
 * charge (an allocation the driver rounded up) must not be taken for hidden memory. */
#define RECON_SLACK (2ull << 20)

/* What tcu_reconcile charges now, per slice device (under measure_lock). */
static uint64_t recon_held[TCU_MAX_DEVICES];

/* How many times a waiting reconcile reads again when other threads' charges moved during the
 * NVML query, before it settles for charging only. */
#define RECON_TRIES 8

static void reconcile(CUdevice ord, int dev, int wait)
{
    if (!tcu.slice || dev < 0 || dev >= TCU_MAX_DEVICES)
        return;
    if (wait)
        pthread_mutex_lock(&measure_lock);
    else if (pthread_mutex_trylock(&measure_lock) != 0)
        return; /* a measurement of this process is under way (maybe by this thread) */
    for (int tries = 1;; tries++) {
        struct tcu_nvml_mem m;
        uint64_t before = seen_used(dev);
        int ok = tcu_nvml_mem(ord, &m) == 0 && m.self_ok && m.self > 0;
        uint64_t after = seen_used(dev);
        if (!ok)
            break;
        int steady = before == after;
        if (!steady && !wait)
            break; /* another thread's allocation or free: its next reservation tries again */
        if (!steady && tries < RECON_TRIES)
            continue;
        /* What the driver holds beyond the process's charges other than this one (its managed
         * memory left out on both sides): charged when it grows by more than the slack, given
         * back when it shrinks (the driver reused memory it kept, a library went): the charge
         * follows the driver's figure.  When other threads' charges kept moving (a waiting
         * reconcile, after a call that placed memory: review of the graph hooks, M1), the
         * charges are read at their lowest and the charge only grows: never low, and a
         * steady reading later gives back any excess. */
        uint64_t low = before < after ? before : after;
        uint64_t calls = low - (recon_held[dev] < low ? recon_held[dev] : low);
        uint64_t want = m.self > calls ? m.self - calls : 0;
        if (want > recon_held[dev] + RECON_SLACK) {
            tcu_charge(dev, want - recon_held[dev]);
            recon_held[dev] = want;
        } else if (steady && want + RECON_SLACK < recon_held[dev]) {
            tcu_unreserve(dev, recon_held[dev] - want);
            recon_held[dev] = want;
        }
        break;
    }
    pthread_mutex_unlock(&measure_lock);
}

void tcu_reconcile(CUdevice ord, int dev)
{
    reconcile(ord, dev, 0);
}

void tcu_reconcile_wait(CUdevice ord, int dev)
{
    reconcile(ord, dev, 1);
}

/* After the driver answered r: measure, settle or undo.  0, or -1 when the
 * context was created but its measured cost does not fit the slice (the
 * caller destroys it; nothing stays charged). */
static int ctx_end(CUresult r, CUdevice ord, struct ctx_charge *c)
{
    if (c->dev < 0)
        return 0;
    if (r != CUDA_SUCCESS) {
        tcu_unreserve(c->dev, c->cost);
        if (c->measuring)
            pthread_mutex_unlock(&measure_lock);
        c->measuring = 0;
        return 0;
    }
    int rc = 0;
    if (c->measuring) {
        uint64_t m = ctx_measure(ord, c);
        if (m && m <= TCU_CTX_COST_MAX) {
            tshm_set_ctx_cost_of(tcu.slice, c->dev, c->kind, m);
            if (m < c->cost) {
                tcu_unreserve(c->dev, c->cost - m);
                c->cost = m;
            } else if (m > c->cost) {
                if (tcu_reserve_spent(c->dev, m - c->cost) == 0)
                    c->cost = m;
                else
                    rc = -1;
            }
        }
        pthread_mutex_unlock(&measure_lock);
        c->measuring = 0;
    }
    if (rc < 0)
        tcu_unreserve(c->dev, c->cost);
    return rc;
}

uint64_t tcu_ctx_cost(int dev, CUdevice ord)
{
    (void)ord;
    uint64_t c = tcu.slice && dev >= 0 ? tshm_ctx_cost(tcu.slice, dev) : 0;
    return c ? c : TCU_CTX_COST_DEFAULT;
}

static CUresult ctx_created(CUresult r, CUcontext *pctx, CUdevice ord, struct ctx_charge *c)
{
    if (ctx_end(r, ord, c) < 0) {
        /* Larger than the slice has room for: the driver would have run
         * out of memory creating it. */
        if (TCU_REAL(cuCtxDestroy_v2))
            TCU_REAL(cuCtxDestroy_v2)(*pctx);
        *pctx = NULL;
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (r == CUDA_SUCCESS && c->dev >= 0 &&
        tcu_track(TCU_KIND_CTX, (uint64_t)(uintptr_t)*pctx, c->dev, c->cost, 0) < 0) {
        /* No record: keep the charge rather than lose track of it. */
    }
    return r;
}

#define CTX_CREATE_BODY(fnname, call)                                                              \
    tcu_enter();                                                                                   \
    fnname##_fn real = TCU_REAL(fnname);                                                           \
    if (TCU_UNLIKELY(!real))                                                                       \
        return CUDA_ERROR_NOT_INITIALIZED;                                                         \
    if (!pctx)                                                                                     \
        return call;                                                                               \
    struct ctx_charge c;                                                                           \
    if (ctx_begin(dev, TSHM_CTX_CREATED, &c) < 0)                                                  \
        return CUDA_ERROR_OUT_OF_MEMORY;                                                           \
    CUresult r = call;                                                                             \
    return ctx_created(r, pctx, dev, &c)

TCU_EXPORT CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    CTX_CREATE_BODY(cuCtxCreate, real(pctx, flags, dev));
}

TCU_EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    CTX_CREATE_BODY(cuCtxCreate_v2, real(pctx, flags, dev));
}

TCU_EXPORT CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
                                   unsigned int flags, CUdevice dev)
{
    CTX_CREATE_BODY(cuCtxCreate_v3, real(pctx, paramsArray, numParams, flags, dev));
}

TCU_EXPORT CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
                                   unsigned int flags, CUdevice dev)
{
    CTX_CREATE_BODY(cuCtxCreate_v4, real(pctx, ctxCreateParams, flags, dev));
}

static CUresult ctx_destroy(CUcontext ctx, cuCtxDestroy_v2_fn real)
{
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    uint64_t key = (uint64_t)(uintptr_t)ctx;
    struct tcu_held held;
    CUresult r;
    tcu_lazy_unloading(1); /* the context's address may come back before its pairs go */
    if (!tcu_release_begin(TCU_KIND_CTX, key, &held))
        r = real(ctx);
    else
        r = tcu_release_settle(TCU_KIND_CTX, key, &held, real(ctx));
    if (r == CUDA_SUCCESS) {
        tcu_ctx_limits_release(ctx);
        tcu_lazy_ctx_gone(ctx);
    }
    tcu_lazy_unloading(0);
    return r;
}

TCU_EXPORT CUresult cuCtxDestroy(CUcontext ctx)
{
    tcu_enter();
    return ctx_destroy(ctx, (cuCtxDestroy_v2_fn)TCU_REAL(cuCtxDestroy));
}

TCU_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    tcu_enter();
    return ctx_destroy(ctx, TCU_REAL(cuCtxDestroy_v2));
}

/* ---- primary contexts --------------------------------------------------- */

/* Retains per CUDA ordinal in this process, and the charge of the active
 * primary context (0 while inactive).  The driver keeps the same count. */
static atomic_int prim_count[TCU_MAX_DEVICES];
static atomic_ullong prim_charge[TCU_MAX_DEVICES];
static _Atomic(CUcontext) prim_ctx[TCU_MAX_DEVICES]; /* for its cuCtxSetLimit charges */

TCU_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    tcu_enter();
    cuDevicePrimaryCtxRetain_fn real = TCU_REAL(cuDevicePrimaryCtxRetain);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!pctx || dev < 0 || dev >= TCU_MAX_DEVICES)
        return real(pctx, dev);
    int first = atomic_fetch_add(&prim_count[dev], 1) == 0;
    struct ctx_charge c = {.dev = -1};
    if (first && ctx_begin(dev, TSHM_CTX_PRIMARY, &c) < 0) {
        atomic_fetch_sub(&prim_count[dev], 1);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    CUresult r = real(pctx, dev);
    if (first) {
        if (ctx_end(r, dev, &c) < 0) {
            /* Measured larger than the slice has room for: release the
             * retain we took, as if the driver had run out of memory. */
            cuDevicePrimaryCtxRelease_fn rel =
                TCU_REAL(cuDevicePrimaryCtxRelease_v2)
                    ? (cuDevicePrimaryCtxRelease_fn)TCU_REAL(cuDevicePrimaryCtxRelease_v2)
                    : TCU_REAL(cuDevicePrimaryCtxRelease);
            if (rel)
                rel(dev);
            atomic_fetch_sub(&prim_count[dev], 1);
            *pctx = NULL;
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        if (r == CUDA_SUCCESS && c.dev >= 0)
            atomic_store(&prim_charge[dev], c.cost);
    }
    if (r == CUDA_SUCCESS)
        atomic_store(&prim_ctx[dev], *pctx);
    if (r != CUDA_SUCCESS)
        atomic_fetch_sub(&prim_count[dev], 1);
    return r;
}

void tcu_contexts_atfork_child(void)
{
    /* Another thread of the parent may have been measuring. */
    pthread_mutex_init(&measure_lock, NULL);
    /* The parent's reconciled charges stay in the parent's slot. */
    memset(recon_held, 0, sizeof recon_held);
    /* The parent's primary contexts are charged to the parent's slot. */
    for (int i = 0; i < TCU_MAX_DEVICES; i++) {
        atomic_store(&prim_count[i], 0);
        atomic_store(&prim_charge[i], 0);
        atomic_store(&prim_ctx[i], NULL);
    }
}

static void primary_inactive(CUdevice dev)
{
    uint64_t ch = atomic_exchange(&prim_charge[dev], 0);
    if (ch)
        tcu_unreserve(tcu_dev(dev), ch);
    CUcontext c = atomic_exchange(&prim_ctx[dev], NULL);
    if (c) {
        tcu_ctx_limits_release(c);
        tcu_lazy_ctx_gone(c);
    }
}

static CUresult primary_release(CUdevice dev, cuDevicePrimaryCtxRelease_fn real)
{
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    tcu_lazy_unloading(1); /* the last release destroys the context (ctx_destroy) */
    CUresult r = real(dev);
    if (r == CUDA_SUCCESS && dev >= 0 && dev < TCU_MAX_DEVICES) {
        int old = atomic_load(&prim_count[dev]);
        while (old > 0 && !atomic_compare_exchange_weak(&prim_count[dev], &old, old - 1))
            ;
        if (old == 1)
            primary_inactive(dev);
    }
    tcu_lazy_unloading(0);
    return r;
}

TCU_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    tcu_enter();
    return primary_release(dev, TCU_REAL(cuDevicePrimaryCtxRelease));
}

TCU_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    tcu_enter();
    return primary_release(dev,
                           (cuDevicePrimaryCtxRelease_fn)TCU_REAL(cuDevicePrimaryCtxRelease_v2));
}

static CUresult primary_reset(CUdevice dev, cuDevicePrimaryCtxReset_fn real)
{
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    tcu_lazy_unloading(1); /* as ctx_destroy */
    CUresult r = real(dev);
    /* Reset destroys the primary context's resources now; the retain count
     * stays with the driver, and a later use re-creates the context, which
     * the runtime does through cuDevicePrimaryCtxRetain.  Charge it again
     * at that point. */
    if (r == CUDA_SUCCESS && dev >= 0 && dev < TCU_MAX_DEVICES) {
        atomic_store(&prim_count[dev], 0);
        primary_inactive(dev);
    }
    tcu_lazy_unloading(0);
    return r;
}

TCU_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
    tcu_enter();
    return primary_reset(dev, TCU_REAL(cuDevicePrimaryCtxReset));
}

TCU_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    tcu_enter();
    return primary_reset(dev, (cuDevicePrimaryCtxReset_fn)TCU_REAL(cuDevicePrimaryCtxReset_v2));
}

/* ---- cuCtxSetLimit heaps -------------------------------------------------- */

/* The stack, printf FIFO and malloc heap sizes take device memory on the
 * context (the stack for every thread the device can hold at once): the
 * change is measured like a context (the driver's formula is not ours to
 * guess), a growth charged through the limit check and refused with the old
 * size restored when it does not fit, a shrink given back.  The charge above
 * what the context cost when measured is kept per (context, limit) and
 * given back with the context.  Not a hot path. */
static uint64_t limit_key(CUcontext ctx, CUlimit limit)
{
    return (uint64_t)(uintptr_t)ctx * 4 + (uint64_t)limit;
}

void tcu_ctx_limits_release(CUcontext ctx)
{
    for (int l = CU_LIMIT_STACK_SIZE; l <= CU_LIMIT_MALLOC_HEAP_SIZE; l++) {
        struct tcu_held h;
        if (tcu_release_begin(TCU_KIND_CTX_LIMIT, limit_key(ctx, (CUlimit)l), &h))
            tcu_unreserve(h.dev, h.bytes);
    }
}

TCU_EXPORT CUresult cuCtxSetLimit(CUlimit limit, size_t value)
{
    tcu_enter();
    cuCtxSetLimit_fn real = TCU_REAL(cuCtxSetLimit);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    CUcontext ctx = NULL;
    CUdevice ord = 0;
    int dev = tcu_current_dev(&ord);
    if ((unsigned)limit > CU_LIMIT_MALLOC_HEAP_SIZE || dev == -1 || !TCU_REAL(cuCtxGetCurrent) ||
        TCU_REAL(cuCtxGetCurrent)(&ctx) != CUDA_SUCCESS || !ctx)
        return real(limit, value);
    if (dev < 0)
        return CUDA_ERROR_OUT_OF_MEMORY; /* the slice cannot take this device */
    size_t old = 0;
    int have_old = TCU_REAL(cuCtxGetLimit) && TCU_REAL(cuCtxGetLimit)(&old, limit) == CUDA_SUCCESS;
    struct tcu_meas m;
    uint64_t shrunk = 0;
    tcu_meas_begin(ord, dev, &m);
    CUresult r = real(limit, value);
    uint64_t grown = tcu_meas_end(&m, &shrunk);
    if (r != CUDA_SUCCESS || (grown == 0 && shrunk == 0))
        return r;
    uint64_t key = limit_key(ctx, limit);
    struct tcu_held h = {.dev = dev, .bytes = 0, .aux = 0};
    int had = tcu_release_begin(TCU_KIND_CTX_LIMIT, key, &h);
    if (grown) {
        if (tcu_reserve_spent(h.dev, grown) < 0) {
            /* Past the slice's limit: as if the driver had run out of
             * memory; the old size back. */
            if (have_old)
                real(limit, old);
            if (had)
                tcu_track(TCU_KIND_CTX_LIMIT, key, h.dev, h.bytes, 0);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        h.bytes += grown;
    } else {
        /* Give back no more than this limit was charged: the rest was
         * part of the context's measured cost. */
        uint64_t back = shrunk < h.bytes ? shrunk : h.bytes;
        tcu_unreserve(h.dev, back);
        h.bytes -= back;
    }
    if (h.bytes && tcu_track(TCU_KIND_CTX_LIMIT, key, h.dev, h.bytes, 0) < 0) {
        /* No record: keep the charge rather than lose track of it. */
    }
    return r;
}
