/* context.c - cuInit, explicit contexts (every cuCtxCreate version) and
 * primary contexts, each charged what a context costs on its device.
 *
 * The cost of a context: the first context a slice creates on a device is
 * measured as the drop of the device's free memory across its creation, read
 * through NVML (which needs no context); the figure is kept in the slice file
 * and charged for every later context on that device.  Without NVML the
 * charge is TCU_CTX_COST_DEFAULT.  docs/interposer.md gives the numbers.
 */
#include <stdio.h>
#include <string.h>

#include "interposer/interposer.h"

TCU_EXPORT CUresult cuInit(unsigned int Flags)
{
    tcu_ready();
    cuInit_fn real = TCU_REAL(cuInit);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    return real(Flags);
}

/* Free memory of CUDA device ord as NVML sees it; 0 if unknown. */
static uint64_t nvml_free(CUdevice ord)
{
    if (!tcu_nvml_handle() || !TCU_REAL(nvmlDeviceGetHandleByUUID) ||
        !TCU_REAL(nvmlDeviceGetMemoryInfo) || !TCU_REAL(cuDeviceGetUuid))
        return 0;
    CUuuid u;
    if (TCU_REAL(cuDeviceGetUuid)(&u, ord) != CUDA_SUCCESS)
        return 0;
    const unsigned char *b = (const unsigned char *)u.bytes;
    char s[64];
    snprintf(s, sizeof s,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
             b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
             b[15]);
    nvmlDevice_t d;
    nvmlMemory_t m;
    if (TCU_REAL(nvmlDeviceGetHandleByUUID)(s, &d) != NVML_SUCCESS ||
        TCU_REAL(nvmlDeviceGetMemoryInfo)(d, &m) != NVML_SUCCESS)
        return 0;
    return m.free;
}

struct ctx_charge {
    int dev;
    uint64_t cost;
    uint64_t before; /* NVML free before creation; 0 = not measuring */
};

/* Before a context is created on ord: reserve its charge. */
static int ctx_begin(CUdevice ord, struct ctx_charge *c)
{
    c->dev = tcu_dev(ord);
    c->before = 0;
    if (c->dev == -1) /* not a device: the driver reports it */
        return 0;
    c->cost = tcu.slice ? tshm_ctx_cost(tcu.slice, c->dev) : 0;
    if (c->cost == 0) {
        c->before = nvml_free(ord);
        c->cost = TCU_CTX_COST_DEFAULT;
    }
    return tcu_reserve(c->dev, c->cost);
}

/* After the driver answered: measure, settle or undo. */
static void ctx_end(CUresult r, CUdevice ord, struct ctx_charge *c)
{
    if (c->dev < 0)
        return;
    if (r != CUDA_SUCCESS) {
        tcu_unreserve(c->dev, c->cost);
        return;
    }
    if (c->before) {
        uint64_t after = nvml_free(ord);
        if (after && after < c->before && c->before - after <= TCU_CTX_COST_MAX) {
            uint64_t m = c->before - after;
            tshm_set_ctx_cost(tcu.slice, c->dev, m);
            if (m > c->cost)
                tcu_charge(c->dev, m - c->cost);
            else
                tcu_unreserve(c->dev, c->cost - m);
            c->cost = m;
        }
    }
}

uint64_t tcu_ctx_cost(int dev, CUdevice ord)
{
    (void)ord;
    uint64_t c = tcu.slice && dev >= 0 ? tshm_ctx_cost(tcu.slice, dev) : 0;
    return c ? c : TCU_CTX_COST_DEFAULT;
}

static CUresult ctx_created(CUresult r, CUcontext *pctx, CUdevice ord, struct ctx_charge *c)
{
    ctx_end(r, ord, c);
    if (r == CUDA_SUCCESS && c->dev >= 0 &&
        tcu_track(TCU_KIND_CTX, (uint64_t)(uintptr_t)*pctx, c->dev, c->cost, 0) < 0) {
        /* No record: keep the charge rather than lose track of it. */
    }
    return r;
}

#define CTX_CREATE_BODY(fnname, call)                                                              \
    tcu_ready();                                                                                   \
    fnname##_fn real = TCU_REAL(fnname);                                                           \
    if (TCU_UNLIKELY(!real))                                                                       \
        return CUDA_ERROR_NOT_INITIALIZED;                                                         \
    if (!pctx)                                                                                     \
        return call;                                                                               \
    struct ctx_charge c;                                                                           \
    if (ctx_begin(dev, &c) < 0)                                                                    \
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
    if (!tcu_release_begin(TCU_KIND_CTX, key, &held))
        return real(ctx);
    return tcu_release_settle(TCU_KIND_CTX, key, &held, real(ctx));
}

TCU_EXPORT CUresult cuCtxDestroy(CUcontext ctx)
{
    tcu_ready();
    return ctx_destroy(ctx, (cuCtxDestroy_v2_fn)TCU_REAL(cuCtxDestroy));
}

TCU_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    tcu_ready();
    return ctx_destroy(ctx, TCU_REAL(cuCtxDestroy_v2));
}

/* ---- primary contexts --------------------------------------------------- */

/* Retains per CUDA ordinal in this process, and the charge of the active
 * primary context (0 while inactive).  The driver keeps the same count. */
static atomic_int prim_count[TCU_MAX_DEVICES];
static atomic_ullong prim_charge[TCU_MAX_DEVICES];

TCU_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    tcu_ready();
    cuDevicePrimaryCtxRetain_fn real = TCU_REAL(cuDevicePrimaryCtxRetain);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!pctx || dev < 0 || dev >= TCU_MAX_DEVICES)
        return real(pctx, dev);
    int first = atomic_fetch_add(&prim_count[dev], 1) == 0;
    struct ctx_charge c = {.dev = -1};
    if (first && ctx_begin(dev, &c) < 0) {
        atomic_fetch_sub(&prim_count[dev], 1);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    CUresult r = real(pctx, dev);
    if (first) {
        ctx_end(r, dev, &c);
        if (r == CUDA_SUCCESS && c.dev >= 0)
            atomic_store(&prim_charge[dev], c.cost);
    }
    if (r != CUDA_SUCCESS)
        atomic_fetch_sub(&prim_count[dev], 1);
    return r;
}

void tcu_contexts_atfork_child(void)
{
    /* The parent's primary contexts are charged to the parent's slot. */
    for (int i = 0; i < TCU_MAX_DEVICES; i++) {
        atomic_store(&prim_count[i], 0);
        atomic_store(&prim_charge[i], 0);
    }
}

static void primary_inactive(CUdevice dev)
{
    uint64_t ch = atomic_exchange(&prim_charge[dev], 0);
    if (ch)
        tcu_unreserve(tcu_dev(dev), ch);
}

static CUresult primary_release(CUdevice dev, cuDevicePrimaryCtxRelease_fn real)
{
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = real(dev);
    if (r != CUDA_SUCCESS || dev < 0 || dev >= TCU_MAX_DEVICES)
        return r;
    int old = atomic_load(&prim_count[dev]);
    while (old > 0 && !atomic_compare_exchange_weak(&prim_count[dev], &old, old - 1))
        ;
    if (old == 1)
        primary_inactive(dev);
    return r;
}

TCU_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    tcu_ready();
    return primary_release(dev, TCU_REAL(cuDevicePrimaryCtxRelease));
}

TCU_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    tcu_ready();
    return primary_release(dev,
                           (cuDevicePrimaryCtxRelease_fn)TCU_REAL(cuDevicePrimaryCtxRelease_v2));
}

static CUresult primary_reset(CUdevice dev, cuDevicePrimaryCtxReset_fn real)
{
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = real(dev);
    /* Reset destroys the primary context's resources now; the retain count
     * stays with the driver, and a later use re-creates the context, which
     * the runtime does through cuDevicePrimaryCtxRetain.  Charge it again
     * at that point. */
    if (r == CUDA_SUCCESS && dev >= 0 && dev < TCU_MAX_DEVICES) {
        atomic_store(&prim_count[dev], 0);
        primary_inactive(dev);
    }
    return r;
}

TCU_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
    tcu_ready();
    return primary_reset(dev, TCU_REAL(cuDevicePrimaryCtxReset));
}

TCU_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    tcu_ready();
    return primary_reset(dev, (cuDevicePrimaryCtxReset_fn)TCU_REAL(cuDevicePrimaryCtxReset_v2));
}
