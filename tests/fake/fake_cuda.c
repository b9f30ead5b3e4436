/* fake_cuda.c - the fake CUDA driver (TEST DOUBLE): init, devices, contexts,
 * cuGetProcAddress, error strings, call counters and test hooks.
 * See fake_cuda_int.h for the map of the other files and tests/fake/README.md
 * for the behaviour tests can rely on.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_cuda_int.h"
#include "tessel_fake.h"

fake_t g = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .objs = {.prev = &g.objs, .next = &g.objs},
};

unsigned long long fake_calls[FC_COUNT];

static const char *const call_names[FC_COUNT] = {
#define E(n) #n,
#include "fake_cuda_entries.def"
#undef E
};

/* ---- objects ---------------------------------------------------------- */

obj_t *obj_new(kind_t kind, size_t size, ctx_t *owner)
{
    obj_t *o = calloc(1, size);
    if (!o)
        return NULL;
    o->kind = kind;
    o->ctx = owner;
    o->next = g.objs.next;
    o->prev = &g.objs;
    g.objs.next->prev = o;
    g.objs.next = o;
    return o;
}

void obj_free(obj_t *o)
{
    if (!o)
        return;
    o->prev->next = o->next;
    o->next->prev = o->prev;
    free(o);
}

obj_t *obj_find(const void *handle, kind_t kind)
{
    if (!handle)
        return NULL;
    for (obj_t *o = g.objs.next; o != &g.objs; o = o->next)
        if (o == handle)
            return o->kind == kind ? o : NULL;
    return NULL;
}

int dev_ok(int dev)
{
    return dev >= 0 && dev < g.nvis;
}

/* ---- current context: a per-thread stack ------------------------------ */

#define CTX_STACK 32
static __thread ctx_t *tls_stack[CTX_STACK];
static __thread int tls_depth;

ctx_t *cur_ctx(void)
{
    if (tls_depth == 0)
        return NULL;
    return (ctx_t *)obj_find(tls_stack[tls_depth - 1], K_CTX);
}

CUresult need_ctx(ctx_t **out)
{
    *out = cur_ctx();
    return *out ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

void ctx_push_tls(ctx_t *c)
{
    if (tls_depth < CTX_STACK)
        tls_stack[tls_depth++] = c;
    else
        tls_stack[CTX_STACK - 1] = c;
}

CUresult fake_init_check(void)
{
    return g.inited ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

int charge(int dev, uint64_t bytes)
{
    tfake_state_lock(g.sh);
    int rc = tfake_state_charge(g.sh, pdev(dev), bytes);
    tfake_state_unlock(g.sh);
    return rc;
}

void uncharge(int dev, uint64_t bytes)
{
    tfake_state_lock(g.sh);
    tfake_state_uncharge(g.sh, pdev(dev), bytes);
    tfake_state_unlock(g.sh);
}

static void proc_ctxs(int dev, int delta)
{
    tfake_state_lock(g.sh);
    tfake_procstate_t *p = tfake_state_proc(g.sh);
    if (p)
        p->ctxs[pdev(dev)] = (uint32_t)((int)p->ctxs[pdev(dev)] + delta);
    tfake_state_unlock(g.sh);
}

/* ---- init ------------------------------------------------------------- */

CUresult cuInit(unsigned int Flags)
{
    COUNT(cuInit);
    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    CUresult rc = CUDA_SUCCESS;
    if (g.inited)
        goto out;
    if (g.init_error) {
        rc = g.init_error;
        goto out;
    }
    tsl_error_t err = {{0}};
    if (tfake_config_from_env(&g.cfg, &err) < 0) {
        fprintf(stderr, "tessel-fake-cuda: %s\n", err.text);
        rc = g.init_error = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    /* As the driver: no device left by CUDA_VISIBLE_DEVICES fails cuInit (sticky). */
    g.nvis = tfake_visible(getenv("CUDA_VISIBLE_DEVICES"), &g.cfg, g.phys);
    if (g.nvis == 0) {
        rc = g.init_error = CUDA_ERROR_NO_DEVICE;
        goto out;
    }
    g.sh = tfake_state_open(&g.cfg, &err);
    if (!g.sh) {
        fprintf(stderr, "tessel-fake-cuda: %s\n", err.text);
        rc = g.init_error = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    tfake_state_lock(g.sh);
    /* A slot of this pid already there belongs to an earlier image of the
     * process (it exec'd): the driver freed that image's memory at exec. */
    tfake_state_release_proc(g.sh);
    tfake_procstate_t *p = tfake_state_proc(g.sh);
    tfake_state_unlock(g.sh);
    if (!p) {
        fprintf(stderr, "tessel-fake-cuda: TESSEL_FAKE_STATE: more than %d processes\n",
                TFAKE_MAX_PROCS);
        tfake_state_close(g.sh);
        g.sh = NULL;
        rc = g.init_error = CUDA_ERROR_NO_DEVICE;
        goto out;
    }
    g.inited = 1;
out:
    UNLOCK();
    if (rc == CUDA_SUCCESS)
        ckpt_start_service(); /* serve cuCheckpointProcess* of other processes (fake_ckpt.c) */
    return rc;
}

CUresult cuDriverGetVersion(int *driverVersion)
{
    COUNT(cuDriverGetVersion);
    if (!driverVersion)
        return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = CUABI_CUDA_VERSION;
    return CUDA_SUCCESS;
}

CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
{
    COUNT(cuGetExportTable);
    if (ppExportTable)
        *ppExportTable = NULL;
    return CUDA_ERROR_NOT_SUPPORTED; /* private driver tables: a fake has none */
}

/* ---- devices ---------------------------------------------------------- */

#define DEV_ENTER(name)                                                                            \
    COUNT(name);                                                                                   \
    if (!g.inited)                                                                                 \
    return CUDA_ERROR_NOT_INITIALIZED

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    DEV_ENTER(cuDeviceGet);
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (!dev_ok(ordinal))
        return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
    DEV_ENTER(cuDeviceGetCount);
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = g.nvis;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    DEV_ENTER(cuDeviceGetName);
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!dev_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    tfake_display_name(&g.cfg.dev[pdev(dev)], name, (unsigned)len);
    return CUDA_SUCCESS;
}

static CUresult get_uuid(CUuuid *uuid, CUdevice dev)
{
    if (!uuid)
        return CUDA_ERROR_INVALID_VALUE;
    if (!dev_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    memcpy(uuid->bytes, g.cfg.dev[pdev(dev)].uuid, 16);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    DEV_ENTER(cuDeviceGetUuid);
    return get_uuid(uuid, dev);
}

CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    DEV_ENTER(cuDeviceGetUuid_v2);
    return get_uuid(uuid, dev);
}

CUresult cuDeviceTotalMem(unsigned int *bytes, CUdevice dev)
{
    DEV_ENTER(cuDeviceTotalMem);
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    if (!dev_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    uint64_t m = g.cfg.dev[pdev(dev)].mem;
    *bytes = m > 0xffffffffull ? 0xffffffffu : (unsigned)m;
    return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    DEV_ENTER(cuDeviceTotalMem_v2);
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    if (!dev_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    *bytes = (size_t)g.cfg.dev[pdev(dev)].mem;
    return CUDA_SUCCESS;
}

/* Attribute values of a simulated compute-capability 9.0 device; the SM count
 * comes from the configuration, the rest are fixed, plausible figures. */
static int attr_value(int dev, CUdevice_attribute a, int *v)
{
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
        *v = 1024;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
        *v = 1024;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
        *v = 64;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
        *v = 2147483647;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
        *v = 65535;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
        *v = 49152;
        break;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY:
        *v = 65536;
        break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
        *v = 32;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH:
        *v = 2147483647;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR:
        *v = 65536;
        break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
        *v = 1755000;
        break;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT:
        *v = 512;
        break;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT:
        *v = 32;
        break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
        *v = (int)g.cfg.dev[pdev(dev)].sms;
        break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
        *v = pdev(dev) + 1;
        break;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
        *v = 0;
        break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
        *v = 9;
        break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
        *v = 0;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
        *v = 2048;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
        *v = 233472;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
        *v = 232448;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR:
        *v = 32;
        break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
        *v = 50 << 20;
        break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
        *v = 2619000;
        break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
        *v = 5120;
        break;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT:
        *v = 3;
        break;
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
    case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP:
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
    case CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH:
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
        *v = 1;
        break;
    case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES:
        *v = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
        break;
    default:
        *v = 0; /* every other attribute: feature absent */
        break;
    }
    return 0;
}

CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    DEV_ENTER(cuDeviceGetAttribute);
    if (!pi || (int)attrib <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    if (!dev_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    attr_value(dev, attrib, pi);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
    DEV_ENTER(cuDeviceGetPCIBusId);
    if (!pciBusId || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!dev_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    snprintf(pciBusId, (size_t)len, "0000:%02x:00.0", pdev(dev) + 1);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetByPCIBusId(CUdevice *dev, const char *pciBusId)
{
    DEV_ENTER(cuDeviceGetByPCIBusId);
    unsigned dom, bus, d, fn;
    char tail;
    if (!dev || !pciBusId || sscanf(pciBusId, "%x:%x:%x.%x%c", &dom, &bus, &d, &fn, &tail) != 4)
        return CUDA_ERROR_INVALID_VALUE;
    /* The bus id of a device CUDA_VISIBLE_DEVICES hides names no device. */
    for (int k = 0; dom == 0 && d == 0 && fn == 0 && k < g.nvis; k++)
        if (pdev(k) == (int)bus - 1) {
            *dev = k;
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_INVALID_DEVICE;
}

/* ---- contexts --------------------------------------------------------- */

/* The driver's defaults for the limits cuCtxSetLimit changes; the context's
 * cost (TESSEL_FAKE_CTX_MEM) includes the memory they take. */
#define FAKE_STACK_DEFAULT       1024ull      /* bytes per thread */
#define FAKE_PRINTF_FIFO_DEFAULT (1ull << 20) /* 1 MiB */
#define FAKE_MALLOC_HEAP_DEFAULT (8ull << 20) /* 8 MiB */
#define FAKE_THREADS_PER_SM      2048ull      /* resident threads per SM (compute 9.0) */

/* Device memory a limit of value takes: the stack is reserved for every
 * thread the device can hold at once, the printf FIFO and the malloc heap
 * once per context. */
static uint64_t limit_bytes(int dev, CUlimit l, uint64_t value)
{
    if (l == CU_LIMIT_STACK_SIZE)
        return value * g.cfg.dev[pdev(dev)].sms * FAKE_THREADS_PER_SM;
    return value;
}

/* Under g.lock: a context on dev, charged what that device's context of
 * this kind costs (TESSEL_FAKE_CTX_MEM for primary contexts,
 * TESSEL_FAKE_CTX_MEM_CREATED for cuCtxCreate's).  Programs cannot see it
 * except as memory gone, as on a real GPU. */
static CUresult ctx_create(int dev, unsigned flags, int primary, ctx_t **out)
{
    uint64_t cost = primary ? g.cfg.ctx_mem_primary[pdev(dev)] : g.cfg.ctx_mem_created[pdev(dev)];
    if (charge(dev, cost) < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    ctx_t *c = (ctx_t *)obj_new(K_CTX, sizeof *c, NULL);
    if (!c) {
        uncharge(dev, cost);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    c->o.ctx = c;
    c->dev = dev;
    c->flags = flags;
    c->primary = primary;
    c->refs = 1;
    c->charged = cost;
    c->limit[CU_LIMIT_STACK_SIZE] = FAKE_STACK_DEFAULT;
    c->limit[CU_LIMIT_PRINTF_FIFO_SIZE] = FAKE_PRINTF_FIFO_DEFAULT;
    c->limit[CU_LIMIT_MALLOC_HEAP_SIZE] = FAKE_MALLOC_HEAP_DEFAULT;
    c->null_strm = stream_new(c, 0, 0);
    if (!c->null_strm) {
        obj_free(&c->o);
        uncharge(dev, cost);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    proc_ctxs(dev, +1);
    *out = c;
    return CUDA_SUCCESS;
}

/* Under g.lock: free everything the context owns, then the context. */
static void ctx_destroy(ctx_t *c)
{
    mem_free_ctx(c);
    exec_free_ctx(c); /* streams (incl. null stream), events, modules, execs */
    uncharge(c->dev, c->charged);
    proc_ctxs(c->dev, -1);
    if (c->primary && g.primary[c->dev] == c)
        g.primary[c->dev] = NULL;
    for (int i = 0; i < tls_depth; i++)
        if (tls_stack[i] == c)
            tls_stack[i] = NULL;
    obj_free(&c->o);
}

static CUresult ctx_create_entry(CUcontext *pctx, unsigned flags, CUdevice dev)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!pctx || (flags & ~(unsigned)CU_CTX_FLAGS_MASK))
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    CUresult rc = CUDA_ERROR_INVALID_DEVICE;
    ctx_t *c = NULL;
    if (dev_ok(dev))
        rc = ctx_create(dev, flags, 0, &c);
    if (rc == CUDA_SUCCESS) {
        ctx_push_tls(c);
        *pctx = (CUcontext)c;
    }
    UNLOCK();
    return rc;
}

CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    COUNT(cuCtxCreate);
    return ctx_create_entry(pctx, flags, dev);
}

CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    COUNT(cuCtxCreate_v2);
    return ctx_create_entry(pctx, flags, dev);
}

CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
                        unsigned int flags, CUdevice dev)
{
    COUNT(cuCtxCreate_v3);
    if (numParams < 0 || (numParams > 0 && !paramsArray))
        return CUDA_ERROR_INVALID_VALUE;
    return ctx_create_entry(pctx, flags, dev);
}

CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags,
                        CUdevice dev)
{
    COUNT(cuCtxCreate_v4);
    if (ctxCreateParams && ctxCreateParams->numExecAffinityParams > 0 &&
        !ctxCreateParams->execAffinityParams)
        return CUDA_ERROR_INVALID_VALUE;
    return ctx_create_entry(pctx, flags, dev);
}

static CUresult ctx_destroy_entry(CUcontext ctx)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    LOCK();
    ctx_t *c = (ctx_t *)obj_find(ctx, K_CTX);
    CUresult rc = CUDA_ERROR_INVALID_CONTEXT;
    if (c && !c->primary) {
        ctx_destroy(c);
        /* A destroyed context leaves this thread's stack. */
        int j = 0;
        for (int i = 0; i < tls_depth; i++)
            if (tls_stack[i])
                tls_stack[j++] = tls_stack[i];
        tls_depth = j;
        rc = CUDA_SUCCESS;
    }
    UNLOCK();
    return rc;
}

CUresult cuCtxDestroy(CUcontext ctx)
{
    COUNT(cuCtxDestroy);
    return ctx_destroy_entry(ctx);
}

CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    COUNT(cuCtxDestroy_v2);
    return ctx_destroy_entry(ctx);
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
    DEV_ENTER(cuCtxSetCurrent);
    LOCK();
    CUresult rc = CUDA_SUCCESS;
    if (!ctx) {
        if (tls_depth > 0)
            tls_depth--;
    } else if (!obj_find(ctx, K_CTX)) {
        rc = CUDA_ERROR_INVALID_CONTEXT;
    } else if (tls_depth == 0) {
        ctx_push_tls((ctx_t *)ctx);
    } else {
        tls_stack[tls_depth - 1] = (ctx_t *)ctx;
    }
    UNLOCK();
    return rc;
}

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    DEV_ENTER(cuCtxGetCurrent);
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    *pctx = (CUcontext)cur_ctx();
    UNLOCK();
    return CUDA_SUCCESS;
}

/* The stack, printf FIFO and malloc heap sizes: the difference to the
 * current size is charged on the context's device (given back with the
 * context), or CUDA_ERROR_OUT_OF_MEMORY with nothing changed. */
CUresult cuCtxSetLimit(CUlimit limit, size_t value)
{
    DEV_ENTER(cuCtxSetLimit);
    LOCK();
    ctx_t *c;
    CUresult rc = need_ctx(&c);
    if (rc == CUDA_SUCCESS && (unsigned)limit > CU_LIMIT_MALLOC_HEAP_SIZE)
        rc = limit <= CU_LIMIT_PERSISTING_L2_CACHE_SIZE ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    else if (rc == CUDA_SUCCESS) {
        uint64_t old = limit_bytes(c->dev, limit, c->limit[limit]);
        uint64_t want = limit_bytes(c->dev, limit, value);
        if (want > old && charge(c->dev, want - old) < 0) {
            rc = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            if (want > old)
                c->charged += want - old;
            else {
                uncharge(c->dev, old - want);
                c->charged -= old - want;
            }
            c->limit[limit] = value;
        }
    }
    UNLOCK();
    return rc;
}

CUresult cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
    DEV_ENTER(cuCtxGetLimit);
    if (!pvalue)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    ctx_t *c;
    CUresult rc = need_ctx(&c);
    if (rc == CUDA_SUCCESS && (unsigned)limit <= CU_LIMIT_MALLOC_HEAP_SIZE)
        *pvalue = (size_t)c->limit[limit];
    else if (rc == CUDA_SUCCESS && limit <= CU_LIMIT_PERSISTING_L2_CACHE_SIZE)
        *pvalue = 0;
    else if (rc == CUDA_SUCCESS)
        rc = CUDA_ERROR_INVALID_VALUE;
    UNLOCK();
    return rc;
}

CUresult cuCtxGetDevice(CUdevice *device)
{
    DEV_ENTER(cuCtxGetDevice);
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    ctx_t *c;
    CUresult rc = need_ctx(&c);
    if (rc == CUDA_SUCCESS)
        *device = c->dev;
    UNLOCK();
    return rc;
}

static CUresult push_entry(CUcontext ctx)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    LOCK();
    CUresult rc = CUDA_ERROR_INVALID_CONTEXT;
    if (obj_find(ctx, K_CTX) && tls_depth < CTX_STACK) {
        ctx_push_tls((ctx_t *)ctx);
        rc = CUDA_SUCCESS;
    }
    UNLOCK();
    return rc;
}

CUresult cuCtxPushCurrent(CUcontext ctx)
{
    COUNT(cuCtxPushCurrent);
    return push_entry(ctx);
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    COUNT(cuCtxPushCurrent_v2);
    return push_entry(ctx);
}

static CUresult pop_entry(CUcontext *pctx)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    LOCK();
    CUresult rc = CUDA_ERROR_INVALID_CONTEXT;
    ctx_t *c = cur_ctx();
    if (c) {
        tls_depth--;
        if (pctx)
            *pctx = (CUcontext)c;
        rc = CUDA_SUCCESS;
    }
    UNLOCK();
    return rc;
}

CUresult cuCtxPopCurrent(CUcontext *pctx)
{
    COUNT(cuCtxPopCurrent);
    return pop_entry(pctx);
}

CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
    COUNT(cuCtxPopCurrent_v2);
    return pop_entry(pctx);
}

CUresult cuCtxSynchronize(void)
{
    DEV_ENTER(cuCtxSynchronize);
    LOCK();
    ctx_t *c;
    CUresult rc = need_ctx(&c);
    UNLOCK();
    if (rc == CUDA_SUCCESS)
        sync_ctx_unlocked(c);
    return rc;
}

CUresult cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    DEV_ENTER(cuCtxGetStreamPriorityRange);
    if (leastPriority)
        *leastPriority = 0;
    if (greatestPriority)
        *greatestPriority = -5;
    return CUDA_SUCCESS;
}

/* ---- primary contexts ------------------------------------------------- */

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    DEV_ENTER(cuDevicePrimaryCtxRetain);
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (!dev_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    LOCK();
    CUresult rc = CUDA_SUCCESS;
    ctx_t *c = g.primary[dev];
    if (c) {
        c->refs++;
    } else {
        rc = ctx_create(dev, g.primary_flags[dev], 1, &c);
        if (rc == CUDA_SUCCESS)
            g.primary[dev] = c;
    }
    if (rc == CUDA_SUCCESS)
        *pctx = (CUcontext)c;
    UNLOCK();
    return rc;
}

static CUresult primary_release(CUdevice dev)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!dev_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    LOCK();
    CUresult rc = CUDA_ERROR_INVALID_CONTEXT;
    ctx_t *c = g.primary[dev];
    if (c) {
        if (--c->refs == 0)
            ctx_destroy(c);
        rc = CUDA_SUCCESS;
    }
    UNLOCK();
    return rc;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    COUNT(cuDevicePrimaryCtxRelease);
    return primary_release(dev);
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    COUNT(cuDevicePrimaryCtxRelease_v2);
    return primary_release(dev);
}

/* Reset destroys the primary context and everything in it at once, whatever
 * its retain count; the next retain creates a fresh one. */
static CUresult primary_reset(CUdevice dev)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!dev_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    LOCK();
    if (g.primary[dev])
        ctx_destroy(g.primary[dev]);
    g.primary_flags[dev] = 0;
    UNLOCK();
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
    COUNT(cuDevicePrimaryCtxReset);
    return primary_reset(dev);
}

CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    COUNT(cuDevicePrimaryCtxReset_v2);
    return primary_reset(dev);
}

static CUresult primary_set_flags(CUdevice dev, unsigned flags)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!dev_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    if (flags & ~(unsigned)CU_CTX_FLAGS_MASK)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    g.primary_flags[dev] = flags;
    if (g.primary[dev])
        g.primary[dev]->flags = flags;
    UNLOCK();
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
    COUNT(cuDevicePrimaryCtxSetFlags);
    return primary_set_flags(dev, flags);
}

CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
    COUNT(cuDevicePrimaryCtxSetFlags_v2);
    return primary_set_flags(dev, flags);
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    DEV_ENTER(cuDevicePrimaryCtxGetState);
    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    if (!dev_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    LOCK();
    *flags = g.primary_flags[dev];
    *active = g.primary[dev] != NULL;
    UNLOCK();
    return CUDA_SUCCESS;
}

/* ---- error strings ---------------------------------------------------- */

static const struct {
    CUresult code;
    const char *name, *text;
} errors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_MAP_FAILED, "CUDA_ERROR_MAP_FAILED", "mapping of buffer object failed"},
    {CUDA_ERROR_ALREADY_MAPPED, "CUDA_ERROR_ALREADY_MAPPED", "resource already mapped"},
    {CUDA_ERROR_NOT_MAPPED, "CUDA_ERROR_NOT_MAPPED", "resource not mapped"},
    {CUDA_ERROR_INVALID_SOURCE, "CUDA_ERROR_INVALID_SOURCE", "device kernel image is invalid"},
    {CUDA_ERROR_FILE_NOT_FOUND, "CUDA_ERROR_FILE_NOT_FOUND", "file not found"},
    {CUDA_ERROR_OPERATING_SYSTEM, "CUDA_ERROR_OPERATING_SYSTEM", "OS call failed"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE",
     "the operation cannot be performed "
     "in the present state"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was "
     "encountered"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
     "too many resources requested for launch"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE",
     "primary context active"},
    {CUDA_ERROR_CONTEXT_IS_DESTROYED, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed"},
    {CUDA_ERROR_NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
     "operation not permitted when stream is capturing"},
    {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
     "operation failed due to a previous error during capture"},
    {CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED",
     "capture was not ended in the same stream as it began"},
    {CUDA_ERROR_TIMEOUT, "CUDA_ERROR_TIMEOUT", "wait operation timed out"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static int error_index(CUresult e)
{
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].code == e)
            return (int)i;
    return -1;
}

CUresult cuGetErrorString(CUresult error, const char **pStr)
{
    COUNT(cuGetErrorString);
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    int i = error_index(error);
    *pStr = i < 0 ? NULL : errors[i].text;
    return i < 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char **pStr)
{
    COUNT(cuGetErrorName);
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    int i = error_index(error);
    *pStr = i < 0 ? NULL : errors[i].name;
    return i < 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

/* ---- cuGetProcAddress ------------------------------------------------- */

static const struct {
    const char *name;
    void *fn;
} symbols[FC_COUNT] = {
#define E(n) {#n, (void *)n},
#include "fake_cuda_entries.def"
#undef E
};

static void *symbol_address(const char *name)
{
    for (int i = 0; i < FC_COUNT; i++)
        if (strcmp(symbols[i].name, name) == 0)
            return symbols[i].fn;
    return NULL;
}

/* Which exported symbol serves (name, version, per-thread).  Versions are the
 * ABI versions in cuda.h's cudaTypedefs (PFN_<name>_v<version>[_ptds|_ptsz]):
 * the highest row not above the requested version wins; per-thread rows are
 * used only with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM.  Only symbols
 * the fake implements are listed. */
#include "fake_procaddr.def"

static CUresult proc_address(const char *symbol, void **pfn, int ver, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *status)
{
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult rc = CUDA_ERROR_NOT_FOUND;
    if (!symbol || !pfn) {
        rc = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    if (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
                              CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)) {
        rc = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    *pfn = NULL;
    int pt = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    const char *best = NULL, *best_pt = NULL;
    int best_v = -1, best_pt_v = -1, known = 0;
    for (size_t i = 0; i < sizeof proc_rows / sizeof proc_rows[0]; i++) {
        if (strcmp(proc_rows[i].name, symbol) != 0)
            continue;
        known = 1;
        if (proc_rows[i].version > ver)
            continue;
        if (proc_rows[i].per_thread) {
            if (proc_rows[i].version > best_pt_v) {
                best_pt_v = proc_rows[i].version;
                best_pt = proc_rows[i].symbol;
            }
        } else if (proc_rows[i].version > best_v) {
            best_v = proc_rows[i].version;
            best = proc_rows[i].symbol;
        }
    }
    if (pt && best_pt)
        best = best_pt;
    if (!best) {
        st = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                   : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        goto out;
    }
    *pfn = symbol_address(best);
    st = CU_GET_PROC_ADDRESS_SUCCESS;
    rc = CUDA_SUCCESS;
out:
    if (status)
        *status = st;
    return rc;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    COUNT(cuGetProcAddress);
    return proc_address(symbol, pfn, cudaVersion, flags, NULL);
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus)
{
    COUNT(cuGetProcAddress_v2);
    return proc_address(symbol, pfn, cudaVersion, flags, symbolStatus);
}

/* ---- test hooks ------------------------------------------------------- */

unsigned long long tessel_fake_calls(const char *entry_point)
{
    if (!entry_point)
        return 0;
    for (int i = 0; i < FC_COUNT; i++)
        if (strcmp(call_names[i], entry_point) == 0)
            return __atomic_load_n(&fake_calls[i], __ATOMIC_RELAXED);
    return 0;
}

unsigned long long tessel_fake_calls_total(void)
{
    unsigned long long t = 0;
    for (int i = 0; i < FC_COUNT; i++)
        t += __atomic_load_n(&fake_calls[i], __ATOMIC_RELAXED);
    return t;
}

void tessel_fake_reset_calls(void)
{
    for (int i = 0; i < FC_COUNT; i++)
        __atomic_store_n(&fake_calls[i], 0, __ATOMIC_RELAXED);
}

int tessel_fake_entry_points(const char ***names)
{
    if (names)
        *names = (const char **)call_names;
    return FC_COUNT;
}

void *tessel_fake_state(void)
{
    LOCK();
    void *s = g.inited ? g.sh : NULL;
    UNLOCK();
    return s;
}

#define STATE_READ(expr)                                                                           \
    unsigned long long v = 0;                                                                      \
    LOCK();                                                                                        \
    if (g.inited && dev_ok(dev)) {                                                                 \
        tfake_state_lock(g.sh);                                                                    \
        v = (expr);                                                                                \
        tfake_state_unlock(g.sh);                                                                  \
    }                                                                                              \
    UNLOCK();                                                                                      \
    return v

static unsigned long long my_slot(int dev, int busy)
{
    tfake_procstate_t *p = tfake_state_proc(g.sh);
    if (!p)
        return 0;
    return busy ? p->busy_ns[pdev(dev)] : p->used[pdev(dev)];
}

static unsigned long long reaped_used(int dev)
{
    tfake_state_reap(g.sh);
    return g.sh->dev[pdev(dev)].used;
}

unsigned long long tessel_fake_device_used(int dev)
{
    STATE_READ(reaped_used(dev));
}

unsigned long long tessel_fake_process_used(int dev)
{
    STATE_READ(my_slot(dev, 0));
}

unsigned long long tessel_fake_device_busy_ns(int dev)
{
    STATE_READ(g.sh->dev[pdev(dev)].busy_ns);
}

unsigned long long tessel_fake_process_busy_ns(int dev)
{
    STATE_READ(my_slot(dev, 1));
}

unsigned long long tessel_fake_device_kernels(int dev)
{
    STATE_READ(g.sh->dev[pdev(dev)].kernels);
}

unsigned long long tessel_fake_device_idle_at_ns(int dev)
{
    STATE_READ(g.sh->dev[pdev(dev)].tail_ns);
}

static tfake_procstate_t *pid_slot(int pid)
{
    for (int i = 0; i < TFAKE_MAX_PROCS; i++)
        if (pid > 0 && g.sh->proc[i].pid == pid)
            return &g.sh->proc[i];
    return NULL;
}

static unsigned long long pid_read(int dev, int pid, int busy)
{
    tfake_procstate_t *p = pid_slot(pid);
    return !p ? 0 : busy ? p->busy_ns[pdev(dev)] : p->used[pdev(dev)];
}

unsigned long long tessel_fake_pid_used(int dev, int pid)
{
    STATE_READ(pid_read(dev, pid, 0));
}

unsigned long long tessel_fake_pid_busy_ns(int dev, int pid)
{
    STATE_READ(pid_read(dev, pid, 1));
}

int tessel_fake_occupy(int dev, long long bytes)
{
    int rc = -1;
    LOCK();
    if (g.inited && dev_ok(dev)) {
        tfake_state_lock(g.sh);
        tfake_procstate_t *p = tfake_state_proc(g.sh);
        if (bytes >= 0) {
            rc = tfake_state_charge(g.sh, pdev(dev), (uint64_t)bytes);
        } else if (p && p->used[pdev(dev)] >= (uint64_t)-bytes) {
            tfake_state_uncharge(g.sh, pdev(dev), (uint64_t)-bytes);
            rc = 0;
        }
        tfake_state_unlock(g.sh);
    }
    UNLOCK();
    return rc;
}

unsigned long long tessel_fake_now_ns(void)
{
    return tfake_now_ns();
}

void tessel_fake_reset(void)
{
    LOCK();
    if (g.inited) {
        for (obj_t *o = g.objs.next; o != &g.objs;) {
            obj_t *n = o->next;
            if (o->kind == K_CTX) {
                ctx_destroy((ctx_t *)o);
                n = g.objs.next; /* the context took arbitrary objects with it */
            }
            o = n;
        }
        exec_reset(); /* graphs */
        mem_reset();  /* pools, VMM handles, host memory */
        ckpt_reset(); /* a checkpoint's host copies; calls blocked by a lock go on */
        tfake_state_lock(g.sh);
        tfake_state_release_proc(g.sh);
        tfake_state_unlock(g.sh);
        tfake_state_close(g.sh);
    }
    g.sh = NULL;
    g.inited = 0;
    g.init_error = CUDA_SUCCESS;
    memset(g.primary, 0, sizeof g.primary);
    memset(g.primary_flags, 0, sizeof g.primary_flags);
    tls_depth = 0;
    UNLOCK();
}

/* ---- fork: the child starts with no CUDA state ------------------------- */

/* In the child, drop every object inherited from the parent without touching
 * the device state (the parent still owns that memory): host structures are
 * freed, mappings unmapped, the state unmapped.
 *
 * The real driver's rule (CUDA programming guide: a child forked from a
 * process that initialised CUDA cannot use CUDA until it execs): when the
 * parent had called cuInit successfully, every call of the child, cuInit
 * included, fails with CUDA_ERROR_NOT_INITIALIZED (error 3, the
 * "initialization error" PyTorch and others report after such a fork).  A
 * parent that never initialised leaves a child that may cuInit as usual. */
static void atfork_prepare(void)
{
    LOCK();
}

static void atfork_parent(void)
{
    UNLOCK();
}

static void atfork_child(void)
{
    while (g.objs.next != &g.objs) {
        obj_t *o = g.objs.next;
        forget_obj(o);
        obj_free(o);
    }
    forget_allocs();
    ckpt_atfork_child();
    tfake_state_close(g.sh);
    g.sh = NULL;
    /* Sticky, like a failed cuInit: the parent's initialisation is unusable. */
    g.init_error = g.inited ? CUDA_ERROR_NOT_INITIALIZED : CUDA_SUCCESS;
    g.inited = 0;
    memset(g.primary, 0, sizeof g.primary);
    memset(g.primary_flags, 0, sizeof g.primary_flags);
    memset(g.default_pool, 0, sizeof g.default_pool);
    memset(g.cur_pool, 0, sizeof g.cur_pool);
    tls_depth = 0;
    pthread_mutex_init(&g.lock, NULL);
}

__attribute__((constructor)) static void fake_cuda_init(void)
{
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* ---- exit: calls file, give back this process's device memory ---------- */

static void write_calls_file(void)
{
    const char *path = getenv("TESSEL_FAKE_CALLS_FILE");
    if (!path || !*path)
        return;
    char real[4096];
    size_t o = 0;
    for (const char *p = path; *p && o + 16 < sizeof real; p++) {
        if (p[0] == '%' && p[1] == 'p') {
            o += (size_t)snprintf(real + o, sizeof real - o, "%d", (int)getpid());
            p++;
        } else {
            real[o++] = *p;
        }
    }
    real[o] = '\0';
    size_t cap = 64 * FC_COUNT, n = 0;
    char *buf = malloc(cap);
    if (!buf)
        return;
    for (int i = 0; i < FC_COUNT; i++) {
        unsigned long long c = __atomic_load_n(&fake_calls[i], __ATOMIC_RELAXED);
        if (c)
            n += (size_t)snprintf(buf + n, cap - n, "%s %llu\n", call_names[i], c);
    }
    int fd = open(real, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
    if (fd >= 0) {
        if (n && write(fd, buf, n) < 0)
            fprintf(stderr, "tessel-fake-cuda: %s: %s\n", real, strerror(errno));
        close(fd);
    }
    free(buf);
}

__attribute__((destructor)) static void fake_cuda_fini(void)
{
    write_calls_file();
    tessel_fake_reset();
}
