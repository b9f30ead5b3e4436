/* fake_exec.c - simulated execution of the fake CUDA driver (TEST DOUBLE):
 * modules, kernel launches, streams, events, graphs and stream capture.
 *
 * Time model.  A kernel takes a simulated duration (see kernel_ns()).  Each
 * device has one timeline, shared across processes through the state file:
 * a launch starts at max(now, stream tail, device tail) and ends `duration`
 * later, so kernels serialise on a device as under time-slicing.  Launches
 * return at once; cuStreamSynchronize / cuCtxSynchronize / cuEventSynchronize
 * sleep until the relevant end; queries answer CUDA_ERROR_NOT_READY until
 * then; cuEventRecord captures max(now, stream tail).  The default stream
 * (NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD, and NULL in _ptsz calls) is
 * one stream per context in the fake.  Host functions and stream callbacks run in the caller's
 * thread once the stream's earlier work is done ("host functions" below).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_cuda_int.h"
#include "tessel_fake.h"

/* The most contexts a library loaded with no context current is used in (fake's bound). */
#define LIB_CTX_MAX 8

typedef struct {
    obj_t o;
    int dev;
    uint64_t charged; /* device memory of its code and data, functions loaded so far */
    int lib;          /* a library (cuLibraryLoadData/FromFile): the CUlibrary is this handle */
    /* A library loaded while no context was current (context-independent, o.ctx NULL, dev -1):
     * its module is loaded into a context at its first use there, and charged per context. */
    int indep;
    int nin;
    struct {
        ctx_t *c;
        uint64_t charged;
    } in[LIB_CTX_MAX];
} module_t;

typedef enum { DUR_DEFAULT, DUR_FIXED, DUR_PARAM } durmode_t;

typedef struct {
    obj_t o;
    module_t *mod;
    durmode_t mode;
    uint64_t dur_ns;
    int launched; /* TESSEL_FAKE_LAUNCH_MEM charged (its first launch happened) */
    int kernel;   /* a library's kernel (cuLibraryGetKernel): the CUkernel is this handle */
    int dyn_smem; /* cuKernelSetAttribute: CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
    int carveout; /* and CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT (-1: none asked) */
    char name[128];
} func_t;

typedef struct {
    obj_t o;
    unsigned flags;
    int recorded;
    uint64_t t_ns;
} event_t;

typedef struct gnode {
    obj_t o;
    struct graph *graph;
    uint64_t dur_ns;
    CUfunction fn; /* a kernel node's function (NULL: a graph launch's nodes, placed already) */
} gnode_t;

typedef struct graph {
    obj_t o;
    gnode_t **nodes;
    size_t n, cap;
} graph_t;

typedef struct {
    obj_t o;
    uint64_t *dur_ns;
    size_t n;
} gexec_t;

/* ---- streams ---------------------------------------------------------- */

stream_t *stream_new(ctx_t *c, unsigned flags, int prio)
{
    stream_t *s = (stream_t *)obj_new(K_STREAM, sizeof *s, c);
    if (s) {
        s->flags = flags;
        s->prio = prio;
    }
    return s;
}

stream_t *stream_resolve(CUstream s, ctx_t *c, int per_thread, CUresult *err)
{
    (void)per_thread; /* one default stream per context in the fake */
    if (!s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD) {
        if (!c) {
            *err = CUDA_ERROR_INVALID_CONTEXT;
            return NULL;
        }
        return c->null_strm;
    }
    stream_t *st = (stream_t *)obj_find(s, K_STREAM);
    if (!st)
        *err = CUDA_ERROR_INVALID_HANDLE;
    return st;
}

static void graph_free(graph_t *gr)
{
    for (size_t i = 0; i < gr->n; i++)
        obj_free(&gr->nodes[i]->o);
    free(gr->nodes);
    obj_free(&gr->o);
}

static void stream_free(stream_t *s)
{
    if (s->capture)
        graph_free(s->capture);
    obj_free(&s->o);
}

static void gexec_free(gexec_t *x)
{
    free(x->dur_ns);
    obj_free(&x->o);
}

/* Forget context c in a context-independent library (its module there goes with c). */
static void lib_ctx_gone(module_t *m, ctx_t *c)
{
    for (int i = 0; i < m->nin; i++)
        if (m->in[i].c == c) {
            uncharge(c->dev, m->in[i].charged);
            m->in[i] = m->in[--m->nin];
            return;
        }
}

void exec_free_ctx(ctx_t *c)
{
    for (obj_t *o = g.objs.next; o != &g.objs; o = o->next)
        if (o->kind == K_MODULE && ((module_t *)o)->indep)
            lib_ctx_gone((module_t *)o, c);
    for (obj_t *o = g.objs.next; o != &g.objs;) {
        obj_t *n = o->next;
        if (o->ctx == c && o != &c->o) {
            switch (o->kind) {
            case K_STREAM:
                stream_free((stream_t *)o);
                n = g.objs.next;
                break;
            case K_EXEC:
                gexec_free((gexec_t *)o);
                break;
            case K_MODULE:
                uncharge(((module_t *)o)->dev, ((module_t *)o)->charged);
                obj_free(o);
                break;
            case K_EVENT:
            case K_FUNC:
                obj_free(o);
                break;
            default:
                break;
            }
        }
        o = n;
    }
}

void exec_reset(void)
{
    for (obj_t *o = g.objs.next; o != &g.objs;) {
        obj_t *n = o->next;
        if (o->kind == K_GRAPH) {
            graph_free((graph_t *)o);
            n = g.objs.next;
        }
        o = n;
    }
}

void forget_obj(obj_t *o)
{
    switch (o->kind) {
    case K_VMEM:
        close(((vmem_t *)o)->fd);
        break;
    case K_GRAPH:
        free(((graph_t *)o)->nodes);
        break;
    case K_EXEC:
        free(((gexec_t *)o)->dur_ns);
        break;
    default:
        break;
    }
}

/* Under g.lock: put a kernel of dur ns on st's device timeline. */
static void run_kernel(stream_t *st, uint64_t dur)
{
    ctx_t *c = st->o.ctx;
    tfake_state_lock(g.sh);
    uint64_t end = tfake_state_schedule(g.sh, pdev(c->dev), st->tail_ns, dur);
    tfake_state_unlock(g.sh);
    st->tail_ns = end;
    if (end > c->tail_ns)
        c->tail_ns = end;
}

/* Sleep (no lock held) until t, then let pools give back what is above
 * their release threshold, as the driver does at synchronisation. */
static void wait_and_release(uint64_t t, int dev)
{
    tfake_sleep_until(t);
    LOCK();
    if (g.inited)
        pools_at_sync(dev);
    UNLOCK();
}

void sync_ctx_unlocked(ctx_t *c)
{
    LOCK();
    int live = obj_find(c, K_CTX) != NULL;
    uint64_t t = live ? c->tail_ns : 0;
    int dev = live ? c->dev : 0;
    UNLOCK();
    if (live)
        wait_and_release(t, dev);
}

CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
    COUNT(cuCtxSynchronize_v2);
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    LOCK();
    ctx_t *c = ctx ? (ctx_t *)obj_find(ctx, K_CTX) : cur_ctx();
    UNLOCK();
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    sync_ctx_unlocked(c);
    return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
    COUNT(cuCtxGetDevice_v2);
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    ctx_t *c = ctx ? (ctx_t *)obj_find(ctx, K_CTX) : cur_ctx();
    if (c)
        *device = c->dev;
    UNLOCK();
    return c ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

#define EXEC_ENTER(name)                                                                           \
    COUNT(name);                                                                                   \
    if (!g.inited)                                                                                 \
        return CUDA_ERROR_NOT_INITIALIZED;                                                         \
    CUresult rc = CUDA_SUCCESS;                                                                    \
    LOCK();                                                                                        \
    ctx_t *c = cur_ctx()

#define EXEC_LEAVE()                                                                               \
    UNLOCK();                                                                                      \
    return rc

CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    EXEC_ENTER(cuStreamCreate);
    stream_t *s = NULL;
    if (!phStream || (Flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (!c)
        rc = CUDA_ERROR_INVALID_CONTEXT;
    else if (!(s = stream_new(c, Flags, 0)))
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    else
        *phStream = (CUstream)s;
    EXEC_LEAVE();
}

CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
    EXEC_ENTER(cuStreamCreateWithPriority);
    stream_t *s = NULL;
    /* Priorities clamp to the range cuCtxGetStreamPriorityRange reports. */
    int prio = priority < -5 ? -5 : priority > 0 ? 0 : priority;
    if (!phStream || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (!c)
        rc = CUDA_ERROR_INVALID_CONTEXT;
    else if (!(s = stream_new(c, flags, prio)))
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    else
        *phStream = (CUstream)s;
    EXEC_LEAVE();
}

static CUresult stream_destroy(CUstream h)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    LOCK();
    stream_t *s = (stream_t *)obj_find(h, K_STREAM);
    CUresult rc = CUDA_ERROR_INVALID_HANDLE;
    if (s && s != s->o.ctx->null_strm) {
        stream_free(s);
        rc = CUDA_SUCCESS;
    }
    UNLOCK();
    return rc;
}

CUresult cuStreamDestroy(CUstream hStream)
{
    COUNT(cuStreamDestroy);
    return stream_destroy(hStream);
}

CUresult cuStreamDestroy_v2(CUstream hStream)
{
    COUNT(cuStreamDestroy_v2);
    return stream_destroy(hStream);
}

static CUresult stream_sync(CUstream h, int pt)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult rc = CUDA_SUCCESS;
    LOCK();
    stream_t *s = stream_resolve(h, cur_ctx(), pt, &rc);
    uint64_t t = 0;
    int dev = 0;
    if (s && s->capture) {
        rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    } else if (s) {
        t = s->tail_ns;
        dev = s->o.ctx->dev;
    }
    UNLOCK();
    if (rc == CUDA_SUCCESS)
        wait_and_release(t, dev);
    return rc;
}

CUresult cuStreamSynchronize(CUstream hStream)
{
    COUNT(cuStreamSynchronize);
    return stream_sync(hStream, 0);
}

CUresult cuStreamSynchronize_ptsz(CUstream hStream)
{
    COUNT(cuStreamSynchronize_ptsz);
    return stream_sync(hStream, 1);
}

static CUresult stream_query(CUstream h, int pt)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult rc = CUDA_SUCCESS;
    LOCK();
    stream_t *s = stream_resolve(h, cur_ctx(), pt, &rc);
    if (s && s->capture)
        rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    else if (s && tfake_now_ns() < s->tail_ns)
        rc = CUDA_ERROR_NOT_READY;
    UNLOCK();
    return rc;
}

CUresult cuStreamQuery(CUstream hStream)
{
    COUNT(cuStreamQuery);
    return stream_query(hStream, 0);
}

CUresult cuStreamQuery_ptsz(CUstream hStream)
{
    COUNT(cuStreamQuery_ptsz);
    return stream_query(hStream, 1);
}

static CUresult stream_prio(CUstream h, int *priority, int pt)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!priority)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = CUDA_SUCCESS;
    LOCK();
    stream_t *s = stream_resolve(h, cur_ctx(), pt, &rc);
    if (s)
        *priority = s->prio;
    UNLOCK();
    return rc;
}

CUresult cuStreamGetPriority(CUstream hStream, int *priority)
{
    COUNT(cuStreamGetPriority);
    return stream_prio(hStream, priority, 0);
}

CUresult cuStreamGetPriority_ptsz(CUstream hStream, int *priority)
{
    COUNT(cuStreamGetPriority_ptsz);
    return stream_prio(hStream, priority, 1);
}

/* The context a stream belongs to (the current one for the default
 * stream). */
CUresult cuStreamGetCtx(CUstream hStream, CUcontext *pctx)
{
    COUNT(cuStreamGetCtx);
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = CUDA_SUCCESS;
    LOCK();
    stream_t *s = stream_resolve(hStream, cur_ctx(), 0, &rc);
    if (s)
        *pctx = (CUcontext)s->o.ctx;
    UNLOCK();
    return rc;
}

static CUresult stream_wait_event(CUstream h, CUevent he, unsigned flags, int pt)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult rc = CUDA_SUCCESS;
    LOCK();
    stream_t *s = stream_resolve(h, cur_ctx(), pt, &rc);
    event_t *e = (event_t *)obj_find(he, K_EVENT);
    if (s && !e)
        rc = CUDA_ERROR_INVALID_HANDLE;
    else if (s && flags > 1)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (s && e->recorded && e->t_ns > s->tail_ns && !s->capture)
        s->tail_ns = e->t_ns; /* later work on s starts after the event */
    UNLOCK();
    return rc;
}

CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    COUNT(cuStreamWaitEvent);
    return stream_wait_event(hStream, hEvent, Flags, 0);
}

CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    COUNT(cuStreamWaitEvent_ptsz);
    return stream_wait_event(hStream, hEvent, Flags, 1);
}

/* ---- events ----------------------------------------------------------- */

CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    EXEC_ENTER(cuEventCreate);
    event_t *e = NULL;
    if (!phEvent || (Flags & ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING |
                                         CU_EVENT_INTERPROCESS)))
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (!c)
        rc = CUDA_ERROR_INVALID_CONTEXT;
    else if (!(e = (event_t *)obj_new(K_EVENT, sizeof *e, c)))
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    else {
        e->flags = Flags;
        *phEvent = (CUevent)e;
    }
    EXEC_LEAVE();
}

static CUresult event_record(CUevent he, CUstream h, int pt)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult rc = CUDA_SUCCESS;
    LOCK();
    event_t *e = (event_t *)obj_find(he, K_EVENT);
    stream_t *s = e ? stream_resolve(h, cur_ctx(), pt, &rc) : NULL;
    if (!e) {
        rc = CUDA_ERROR_INVALID_HANDLE;
    } else if (s && s->capture) {
        rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* the fake captures kernels only */
    } else if (s) {
        uint64_t now = tfake_now_ns();
        e->t_ns = s->tail_ns > now ? s->tail_ns : now;
        if (g.cfg.event_device_order) {
            /* The device's FIFO reaches the event after all queued work. */
            tfake_state_lock(g.sh);
            uint64_t dt = g.sh->dev[pdev(s->o.ctx->dev)].tail_ns;
            tfake_state_unlock(g.sh);
            if (dt > e->t_ns)
                e->t_ns = dt;
        }
        e->recorded = 1;
    }
    UNLOCK();
    return rc;
}

CUresult cuEventRecord(CUevent hEvent, CUstream hStream)
{
    COUNT(cuEventRecord);
    return event_record(hEvent, hStream, 0);
}

CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream)
{
    COUNT(cuEventRecord_ptsz);
    return event_record(hEvent, hStream, 1);
}

/* cuda.h: flags 0 or CU_EVENT_RECORD_EXTERNAL (which only changes a capture, refused for events
 * by the fake); any other bit CUDA_ERROR_INVALID_VALUE. */
CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags)
{
    COUNT(cuEventRecordWithFlags);
    return flags & ~1u ? CUDA_ERROR_INVALID_VALUE : event_record(hEvent, hStream, 0);
}

CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream, unsigned int flags)
{
    COUNT(cuEventRecordWithFlags_ptsz);
    return flags & ~1u ? CUDA_ERROR_INVALID_VALUE : event_record(hEvent, hStream, 1);
}

CUresult cuEventSynchronize(CUevent hEvent)
{
    COUNT(cuEventSynchronize);
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    LOCK();
    event_t *e = (event_t *)obj_find(hEvent, K_EVENT);
    uint64_t t = e && e->recorded ? e->t_ns : 0;
    int dev = e ? e->o.ctx->dev : 0;
    UNLOCK();
    if (!e)
        return CUDA_ERROR_INVALID_HANDLE;
    wait_and_release(t, dev);
    return CUDA_SUCCESS;
}

CUresult cuEventQuery(CUevent hEvent)
{
    COUNT(cuEventQuery);
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    LOCK();
    event_t *e = (event_t *)obj_find(hEvent, K_EVENT);
    CUresult rc = !e                                        ? CUDA_ERROR_INVALID_HANDLE
                  : e->recorded && tfake_now_ns() < e->t_ns ? CUDA_ERROR_NOT_READY
                                                            : CUDA_SUCCESS;
    UNLOCK();
    return rc;
}

static CUresult elapsed(float *ms, CUevent hs, CUevent he)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!ms)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    event_t *a = (event_t *)obj_find(hs, K_EVENT), *b = (event_t *)obj_find(he, K_EVENT);
    CUresult rc = CUDA_SUCCESS;
    uint64_t now = tfake_now_ns();
    if (!a || !b || !a->recorded || !b->recorded ||
        ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING))
        rc = CUDA_ERROR_INVALID_HANDLE;
    else if (now < a->t_ns || now < b->t_ns)
        rc = CUDA_ERROR_NOT_READY;
    else
        *ms = (float)((double)((int64_t)(b->t_ns - a->t_ns)) / 1e6);
    UNLOCK();
    return rc;
}

CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    COUNT(cuEventElapsedTime);
    return elapsed(pMilliseconds, hStart, hEnd);
}

CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    COUNT(cuEventElapsedTime_v2);
    return elapsed(pMilliseconds, hStart, hEnd);
}

static CUresult event_destroy(CUevent h)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    LOCK();
    obj_t *e = obj_find(h, K_EVENT);
    if (e)
        obj_free(e);
    UNLOCK();
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuEventDestroy(CUevent hEvent)
{
    COUNT(cuEventDestroy);
    return event_destroy(hEvent);
}

CUresult cuEventDestroy_v2(CUevent hEvent)
{
    COUNT(cuEventDestroy_v2);
    return event_destroy(hEvent);
}

/* ---- modules and functions -------------------------------------------- */

/* Module memory, as the driver spends it: the module's code and data are
 * loaded into device memory at load (TESSEL_FAKE_MODULE_MEM), each function
 * at its first use (TESSEL_FAKE_FUNC_MEM, CUDA_MODULE_LOADING=LAZY, the
 * default since CUDA 12) or at its first launch (TESSEL_FAKE_LAUNCH_MEM); all of it is given back
 * at unload or when the context goes.  Programs see it only as memory gone. */
/* Caller holds the lock; c is the current context (NULL: none). */
static CUresult module_load(ctx_t *c, CUmodule *module, const void *image)
{
    module_t *m = NULL;
    if (!module || !image)
        return CUDA_ERROR_INVALID_VALUE;
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (charge(c->dev, g.cfg.module_mem) < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (!(m = (module_t *)obj_new(K_MODULE, sizeof *m, c))) {
        uncharge(c->dev, g.cfg.module_mem);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    m->dev = c->dev;
    m->charged = g.cfg.module_mem;
    *module = (CUmodule)m;
    return CUDA_SUCCESS;
}

/* Charge bytes of module m's code or data loaded now in context c.  A context-independent
 * library is first loaded into c (TESSEL_FAKE_MODULE_MEM on c's device, once per context: what
 * lazy loading does at a library's first use in a context); its charges are kept per context.
 * CUDA_ERROR_INVALID_CONTEXT without a context, CUDA_ERROR_OUT_OF_MEMORY when the device has
 * no room (nothing charged then). */
static CUresult mod_charge(module_t *m, ctx_t *c, uint64_t bytes)
{
    if (!m->indep) {
        if (charge(m->dev, bytes) < 0)
            return CUDA_ERROR_OUT_OF_MEMORY;
        m->charged += bytes;
        return CUDA_SUCCESS;
    }
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    int i = 0;
    while (i < m->nin && m->in[i].c != c)
        i++;
    uint64_t load = 0;
    if (i == m->nin) {
        if (m->nin == LIB_CTX_MAX)
            return CUDA_ERROR_OUT_OF_MEMORY;
        load = g.cfg.module_mem;
    }
    if (charge(c->dev, load + bytes) < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (i == m->nin) {
        m->in[i].c = c;
        m->in[i].charged = 0;
        m->nin++;
    }
    m->in[i].charged += load + bytes;
    return CUDA_SUCCESS;
}

CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    EXEC_ENTER(cuModuleLoadData);
    rc = module_load(c, module, image);
    EXEC_LEAVE();
}

/* JIT options change nothing here (no compiler): XLA, Triton and Numba
 * load their kernels this way. */
CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                            CUjit_option *options, void **optionValues)
{
    EXEC_ENTER(cuModuleLoadDataEx);
    if (numOptions && (!options || !optionValues))
        rc = CUDA_ERROR_INVALID_VALUE;
    else
        rc = module_load(c, module, image);
    EXEC_LEAVE();
}

CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
    EXEC_ENTER(cuModuleLoadFatBinary);
    rc = module_load(c, module, fatCubin);
    EXEC_LEAVE();
}

/* The file must exist and be readable, as for the driver; its bytes are
 * not looked at. */
CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
    EXEC_ENTER(cuModuleLoad);
    if (!fname)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (access(fname, R_OK) != 0)
        rc = CUDA_ERROR_FILE_NOT_FOUND;
    else
        rc = module_load(c, module, fname);
    EXEC_LEAVE();
}

/* Kernel names choose their simulated duration:
 *   "fake_kernel_<N>us"      N microseconds, e.g. fake_kernel_250us
 *   "fake_kernel_param_us"   microseconds in the first kernel parameter
 *                            (an unsigned long long)
 *   anything else            TESSEL_FAKE_KERNEL_US */
static void name_duration(func_t *f)
{
    const char *pre = "fake_kernel_";
    size_t pl = strlen(pre);
    f->mode = DUR_DEFAULT;
    if (strncmp(f->name, pre, pl) != 0)
        return;
    const char *p = f->name + pl;
    if (strcmp(p, "param_us") == 0) {
        f->mode = DUR_PARAM;
        return;
    }
    unsigned long long us = 0;
    int n = 0;
    if (sscanf(p, "%llu%n", &us, &n) == 1 && strcmp(p + n, "us") == 0 && p[0] >= '0' &&
        p[0] <= '9') {
        f->mode = DUR_FIXED;
        f->dur_ns = us * 1000ull;
    }
}

CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    EXEC_ENTER(cuModuleGetFunction);
    module_t *m = (module_t *)obj_find(hmod, K_MODULE);
    func_t *f = NULL;
    if (!hfunc || !name || !*name || strlen(name) >= sizeof f->name) {
        rc = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    if (!m) {
        rc = CUDA_ERROR_INVALID_HANDLE;
        goto out;
    }
    for (obj_t *o = g.objs.next; o != &g.objs; o = o->next)
        if (o->kind == K_FUNC && ((func_t *)o)->mod == m && !strcmp(((func_t *)o)->name, name)) {
            *hfunc = (CUfunction)o;
            goto out;
        }
    f = (func_t *)obj_new(K_FUNC, sizeof *f, m->o.ctx);
    if (!f) {
        rc = CUDA_ERROR_OUT_OF_MEMORY;
        goto out;
    }
    if ((rc = mod_charge(m, c, g.cfg.func_mem)) != CUDA_SUCCESS) { /* lazy loading: code now */
        obj_free(&f->o);
        goto out;
    }
    f->mod = m;
    strcpy(f->name, name);
    name_duration(f);
    *hfunc = (CUfunction)f;
out:
    EXEC_LEAVE();
}

/* A function's attributes: 1024 threads per block and 32 registers; every other attribute 0
 * (the fake's functions use no shared, constant or local memory). */
CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
    COUNT(cuFuncGetAttribute);
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!pi || (int)attrib < 0 || attrib >= CU_FUNC_ATTRIBUTE_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    CUresult rc = CUDA_SUCCESS;
    if (!obj_find(hfunc, K_FUNC))
        rc = CUDA_ERROR_INVALID_HANDLE;
    else if (attrib == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
        *pi = 1024;
    else if (attrib == CU_FUNC_ATTRIBUTE_NUM_REGS)
        *pi = 32;
    else
        *pi = 0;
    UNLOCK();
    return rc;
}

/* Unloads a module or a library (lib 1): its functions or kernels go with it.  Under the lock. */
static CUresult module_unload(module_t *m, int lib)
{
    if (!m || m->lib != lib)
        return CUDA_ERROR_INVALID_HANDLE;
    for (obj_t *o = g.objs.next; o != &g.objs;) {
        obj_t *n = o->next;
        if (o->kind == K_FUNC && ((func_t *)o)->mod == m)
            obj_free(o);
        o = n;
    }
    if (m->indep)
        for (int i = 0; i < m->nin; i++)
            uncharge(m->in[i].c->dev, m->in[i].charged);
    else
        uncharge(m->dev, m->charged);
    obj_free(&m->o);
    return CUDA_SUCCESS;
}

/* A library's module (cuLibraryGetModule) is the library itself: unloading it is the library's
 * cuLibraryUnload, never cuModuleUnload (CUDA_ERROR_INVALID_HANDLE). */
CUresult cuModuleUnload(CUmodule hmod)
{
    EXEC_ENTER(cuModuleUnload);
    (void)c;
    rc = module_unload((module_t *)obj_find(hmod, K_MODULE), 0);
    EXEC_LEAVE();
}

/* ---- libraries and kernels (CUDA 12.0) ----
 * What the CUDA runtime's lazy loading calls on a kernel's first use.  A library is modelled as
 * a module (its handle is a module the fake knows as a library): loading it with a context
 * current charges TESSEL_FAKE_MODULE_MEM on that context's device at once (the module loaded
 * into the current context); loading it with none charges nothing, and its module is loaded
 * into each context at its first use there (cuLibraryGetModule, cuKernelGetFunction,
 * cuLibraryGetGlobal, cuLibraryGetManaged, cuModuleGetFunction on its module, a launch of one of
 * its kernels: TESSEL_FAKE_MODULE_MEM on that context's device, given back with the context or
 * the library; mod_charge), as the driver's lazy loading does;
 * its kernels are the module's functions (cuLibraryGetKernel names them as cuModuleGetFunction
 * does and charges nothing: a kernel's code is loaded at its first launch,
 * TESSEL_FAKE_LAUNCH_MEM), and cuKernelGetFunction gives the kernel's own handle, which every
 * launch accepts.  Unloading the library gives all of it back. */
static CUresult lib_args(unsigned njit, CUjit_option *jo, void **jv, unsigned nlib,
                         CUlibraryOption *lo, void **lv, int file)
{
    if ((njit && (!jo || !jv)) || (nlib && (!lo || !lv)))
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < nlib; i++)
        if ((int)lo[i] < 0 || lo[i] >= CU_LIBRARY_NUM_OPTIONS ||
            (file && lo[i] == CU_LIBRARY_BINARY_IS_PRESERVED))
            return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

static CUresult lib_load(ctx_t *c, CUlibrary *library, const void *code)
{
    CUmodule m = NULL;
    if (!library || !code)
        return CUDA_ERROR_INVALID_VALUE;
    if (!c) { /* context-independent: loaded into each context at its first use there */
        module_t *x = (module_t *)obj_new(K_MODULE, sizeof *x, NULL);
        if (!x)
            return CUDA_ERROR_OUT_OF_MEMORY;
        x->dev = -1;
        x->lib = 1;
        x->indep = 1;
        *library = (CUlibrary)x;
        return CUDA_SUCCESS;
    }
    CUresult rc = module_load(c, &m, code);
    if (rc == CUDA_SUCCESS) {
        ((module_t *)m)->lib = 1;
        *library = (CUlibrary)m;
    }
    return rc;
}

CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                           void **jitOptionsValues, unsigned int numJitOptions,
                           CUlibraryOption *libraryOptions, void **libraryOptionValues,
                           unsigned int numLibraryOptions)
{
    EXEC_ENTER(cuLibraryLoadData);
    rc = lib_args(numJitOptions, jitOptions, jitOptionsValues, numLibraryOptions, libraryOptions,
                  libraryOptionValues, 0);
    if (rc == CUDA_SUCCESS)
        rc = lib_load(c, library, code);
    EXEC_LEAVE();
}

/* The file must exist and be readable; its bytes are not looked at.  CU_LIBRARY_BINARY_IS_PRESERVED
 * is for an image in memory only (CUDA_ERROR_INVALID_VALUE here, as for the driver). */
CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName, CUjit_option *jitOptions,
                               void **jitOptionsValues, unsigned int numJitOptions,
                               CUlibraryOption *libraryOptions, void **libraryOptionValues,
                               unsigned int numLibraryOptions)
{
    EXEC_ENTER(cuLibraryLoadFromFile);
    rc = lib_args(numJitOptions, jitOptions, jitOptionsValues, numLibraryOptions, libraryOptions,
                  libraryOptionValues, 1);
    if (rc == CUDA_SUCCESS && !fileName)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (rc == CUDA_SUCCESS && access(fileName, R_OK) != 0)
        rc = CUDA_ERROR_FILE_NOT_FOUND;
    else if (rc == CUDA_SUCCESS)
        rc = lib_load(c, library, fileName);
    EXEC_LEAVE();
}

CUresult cuLibraryUnload(CUlibrary library)
{
    EXEC_ENTER(cuLibraryUnload);
    (void)c;
    rc = module_unload((module_t *)obj_find(library, K_MODULE), 1);
    EXEC_LEAVE();
}

static module_t *lib_find(CUlibrary library)
{
    module_t *m = (module_t *)obj_find(library, K_MODULE);
    return m && m->lib ? m : NULL;
}

CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
    EXEC_ENTER(cuLibraryGetKernel);
    (void)c;
    module_t *m = lib_find(library);
    func_t *f = NULL;
    if (!pKernel || !name || !*name || strlen(name) >= sizeof f->name)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (!m)
        rc = CUDA_ERROR_INVALID_HANDLE;
    if (rc != CUDA_SUCCESS)
        goto out;
    for (obj_t *o = g.objs.next; o != &g.objs; o = o->next)
        if (o->kind == K_FUNC && ((func_t *)o)->mod == m && !strcmp(((func_t *)o)->name, name)) {
            *pKernel = (CUkernel)o;
            goto out;
        }
    if (!(f = (func_t *)obj_new(K_FUNC, sizeof *f, m->o.ctx))) {
        rc = CUDA_ERROR_OUT_OF_MEMORY;
        goto out;
    }
    f->mod = m;
    f->kernel = 1;
    f->carveout = -1;
    strcpy(f->name, name);
    name_duration(f);
    *pKernel = (CUkernel)f;
out:
    EXEC_LEAVE();
}

/* The library's module in the current context: the library's own handle. */
CUresult cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
{
    EXEC_ENTER(cuLibraryGetModule);
    module_t *m = lib_find(library);
    if (!pMod)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (!m)
        rc = CUDA_ERROR_INVALID_HANDLE;
    else if (!c)
        rc = CUDA_ERROR_INVALID_CONTEXT;
    else if ((rc = mod_charge(m, c, 0)) == CUDA_SUCCESS) /* its first use in c loads it */
        *pMod = (CUmodule)m;
    EXEC_LEAVE();
}

/* A library's global or managed variable in the current context.  The library's module is
 * loaded into the context first, as at any first use (mod_charge); the fake's images hold no
 * variables, so every name is then CUDA_ERROR_NOT_FOUND (the driver's answer for a name the
 * image does not define). */
static CUresult lib_var(ctx_t *c, CUdeviceptr *dptr, size_t *bytes, CUlibrary library,
                        const char *name)
{
    module_t *m = lib_find(library);
    (void)dptr;
    (void)bytes;
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!m)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    CUresult rc = mod_charge(m, c, 0);
    return rc == CUDA_SUCCESS ? CUDA_ERROR_NOT_FOUND : rc;
}

CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name)
{
    EXEC_ENTER(cuLibraryGetGlobal);
    rc = lib_var(c, dptr, bytes, library, name);
    EXEC_LEAVE();
}

CUresult cuLibraryGetManaged(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name)
{
    EXEC_ENTER(cuLibraryGetManaged);
    rc = lib_var(c, dptr, bytes, library, name);
    EXEC_LEAVE();
}

static func_t *kernel_find(CUkernel kernel)
{
    func_t *f = (func_t *)obj_find(kernel, K_FUNC);
    return f && f->kernel ? f : NULL;
}

/* The kernel's function in the current context: the kernel's own handle (a launch takes it). */
CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
    EXEC_ENTER(cuKernelGetFunction);
    func_t *f = kernel_find(kernel);
    if (!pFunc)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (!f)
        rc = CUDA_ERROR_INVALID_HANDLE;
    else if (!c)
        rc = CUDA_ERROR_INVALID_CONTEXT;
    else if ((rc = mod_charge(f->mod, c, 0)) == CUDA_SUCCESS) /* its library's first use in c */
        *pFunc = (CUfunction)f;
    EXEC_LEAVE();
}

/* dev must be a device ordinal.  Attributes as cuFuncGetAttribute gives them, and the two that
 * cuKernelSetAttribute sets (the fake keeps one value for every device). */
CUresult cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev)
{
    EXEC_ENTER(cuKernelGetAttribute);
    (void)c;
    func_t *f = kernel_find(kernel);
    if (!pi || (int)attrib < 0 || attrib >= CU_FUNC_ATTRIBUTE_MAX)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (dev < 0 || dev >= g.nvis)
        rc = CUDA_ERROR_INVALID_DEVICE;
    else if (!f)
        rc = CUDA_ERROR_INVALID_HANDLE;
    else if (attrib == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
        *pi = 1024;
    else if (attrib == CU_FUNC_ATTRIBUTE_NUM_REGS)
        *pi = 32;
    else if (attrib == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
        *pi = f->dyn_smem;
    else if (attrib == CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT)
        *pi = f->carveout;
    else
        *pi = 0;
    EXEC_LEAVE();
}

/* Settable: the maximum dynamic shared memory (0 to 227 KiB, an H100's opt-in limit) and the
 * preferred carveout (-1, or 0 to 100 percent); anything else is CUDA_ERROR_INVALID_VALUE. */
CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev)
{
    EXEC_ENTER(cuKernelSetAttribute);
    (void)c;
    func_t *f = kernel_find(kernel);
    int dyn = attrib == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
    if (!(dyn && val >= 0 && val <= 227 * 1024) &&
        !(attrib == CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT && val >= -1 && val <= 100))
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (dev < 0 || dev >= g.nvis)
        rc = CUDA_ERROR_INVALID_DEVICE;
    else if (!f)
        rc = CUDA_ERROR_INVALID_HANDLE;
    else if (dyn)
        f->dyn_smem = val;
    else
        f->carveout = val;
    EXEC_LEAVE();
}

int tessel_fake_set_kernel_us(CUfunction hf, unsigned long long us)
{
    LOCK();
    func_t *f = (func_t *)obj_find(hf, K_FUNC);
    if (f) {
        f->mode = DUR_FIXED;
        f->dur_ns = us * 1000ull;
    }
    UNLOCK();
    return f ? 0 : -1;
}

static uint64_t kernel_ns(const func_t *f, void **params)
{
    switch (f->mode) {
    case DUR_FIXED:
        return f->dur_ns;
    case DUR_PARAM:
        if (params && params[0])
            return *(const unsigned long long *)params[0] * 1000ull;
        return g.cfg.kernel_ns;
    default:
        return g.cfg.kernel_ns;
    }
}

/* ---- graphs ----------------------------------------------------------- */

static gnode_t *graph_add(graph_t *gr, uint64_t dur, CUfunction fn)
{
    if (gr->n == gr->cap) {
        size_t n = gr->cap ? 2 * gr->cap : 8;
        gnode_t **v = realloc(gr->nodes, n * sizeof *v);
        if (!v)
            return NULL;
        gr->nodes = v;
        gr->cap = n;
    }
    gnode_t *nd = (gnode_t *)obj_new(K_NODE, sizeof *nd, NULL);
    if (!nd)
        return NULL;
    nd->graph = gr;
    nd->dur_ns = dur;
    nd->fn = fn;
    gr->nodes[gr->n++] = nd;
    return nd;
}

/* ---- launches --------------------------------------------------------- */

/* Under g.lock: kernel f readied to run in context c, at its first launch there or at the
 * instantiation of a graph that holds it.  The CUDA runtime's kernels (a CUkernel of
 * cuLibraryGetKernel, launched as a function) are loaded lazily then: device memory spent that
 * no call reports (TESSEL_FAKE_LAUNCH_MEM), given back with the module; and a library loaded
 * with no context current is placed in c (mod_charge).  Not enough memory: the call fails. */
static CUresult kernel_place(func_t *f, ctx_t *c)
{
    uint64_t code = g.cfg.launch_mem && !f->launched ? g.cfg.launch_mem : 0;
    if (code || f->mod->indep) {
        CUresult rc = mod_charge(f->mod, c, code);
        if (rc != CUDA_SUCCESS)
            return rc;
        f->launched = f->launched || code;
    }
    return CUDA_SUCCESS;
}

/* Under g.lock: validate and run (or capture) one kernel. */
static CUresult launch(CUfunction hf, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                       unsigned by, unsigned bz, CUstream h, void **params, void **extra, int pt)
{
    CUresult rc = CUDA_SUCCESS;
    ctx_t *c = cur_ctx();
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    func_t *f = (func_t *)obj_find(hf, K_FUNC);
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!gx || !gy || !gz || !bx || !by || !bz || (uint64_t)bx * by * bz > 1024 ||
        (params && extra))
        return CUDA_ERROR_INVALID_VALUE;
    stream_t *s = stream_resolve(h, c, pt, &rc);
    if (!s)
        return rc;
    uint64_t dur = kernel_ns(f, params);
    /* Captured, not run: placed when the graph is instantiated (kernel_place). */
    if (s->capture)
        return graph_add(s->capture, dur, hf) ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    if ((rc = kernel_place(f, c)) != CUDA_SUCCESS)
        return rc;
    run_kernel(s, dur);
    return CUDA_SUCCESS;
}

#define LAUNCH_ENTRY(name, pt, params, extra)                                                      \
    COUNT(name);                                                                                   \
    if (!g.inited)                                                                                 \
        return CUDA_ERROR_NOT_INITIALIZED;                                                         \
    LOCK();                                                                                        \
    CUresult rc = launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,         \
                         hStream, params, extra, pt);                                              \
    UNLOCK();                                                                                      \
    return rc

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                        unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                        unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                        void **kernelParams, void **extra)
{
    LAUNCH_ENTRY(cuLaunchKernel, 0, kernelParams, extra);
}

CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                             unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                             unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                             void **kernelParams, void **extra)
{
    LAUNCH_ENTRY(cuLaunchKernel_ptsz, 1, kernelParams, extra);
}

CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                   unsigned int gridDimZ, unsigned int blockDimX,
                                   unsigned int blockDimY, unsigned int blockDimZ,
                                   unsigned int sharedMemBytes, CUstream hStream,
                                   void **kernelParams)
{
    LAUNCH_ENTRY(cuLaunchCooperativeKernel, 0, kernelParams, NULL);
}

CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                        unsigned int gridDimZ, unsigned int blockDimX,
                                        unsigned int blockDimY, unsigned int blockDimZ,
                                        unsigned int sharedMemBytes, CUstream hStream,
                                        void **kernelParams)
{
    LAUNCH_ENTRY(cuLaunchCooperativeKernel_ptsz, 1, kernelParams, NULL);
}

static CUresult launch_ex(const CUlaunchConfig *cfg, CUfunction f, void **params, void **extra,
                          int pt)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!cfg || (cfg->numAttrs && !cfg->attrs))
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    CUresult rc = launch(f, cfg->gridDimX, cfg->gridDimY, cfg->gridDimZ, cfg->blockDimX,
                         cfg->blockDimY, cfg->blockDimZ, cfg->hStream, params, extra, pt);
    UNLOCK();
    return rc;
}

CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                          void **extra)
{
    COUNT(cuLaunchKernelEx);
    return launch_ex(config, f, kernelParams, extra, 0);
}

CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                               void **extra)
{
    COUNT(cuLaunchKernelEx_ptsz);
    return launch_ex(config, f, kernelParams, extra, 1);
}

/* One kernel per entry, each on its own stream (and that stream's device). */
CUresult cuLaunchCooperativeKernelMultiDevice(CUDA_LAUNCH_PARAMS *list, unsigned int numDevices,
                                              unsigned int flags)
{
    COUNT(cuLaunchCooperativeKernelMultiDevice);
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!list || numDevices == 0 || flags > 3)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    CUresult rc = CUDA_SUCCESS;
    for (unsigned i = 0; i < numDevices && rc == CUDA_SUCCESS; i++) {
        /* explicit streams only: the driver refuses the NULL stream here */
        if (!obj_find(list[i].hStream, K_STREAM) || !obj_find(list[i].function, K_FUNC))
            rc = CUDA_ERROR_INVALID_HANDLE;
    }
    for (unsigned i = 0; i < numDevices && rc == CUDA_SUCCESS; i++) {
        CUDA_LAUNCH_PARAMS *p = &list[i];
        rc = launch(p->function, p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY,
                    p->blockDimZ, p->hStream, p->kernelParams, NULL, 0);
    }
    UNLOCK();
    return rc;
}

CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
    EXEC_ENTER(cuGraphCreate);
    (void)c;
    graph_t *gr = NULL;
    if (!phGraph || flags)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (!(gr = (graph_t *)obj_new(K_GRAPH, sizeof *gr, NULL)))
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    else
        *phGraph = (CUgraph)gr;
    EXEC_LEAVE();
}

CUresult cuGraphDestroy(CUgraph hGraph)
{
    EXEC_ENTER(cuGraphDestroy);
    (void)c;
    graph_t *gr = (graph_t *)obj_find(hGraph, K_GRAPH);
    for (obj_t *o = g.objs.next; gr && o != &g.objs; o = o->next)
        if (o->kind == K_STREAM && ((stream_t *)o)->capture == gr)
            gr = NULL; /* still being captured into */
    if (gr)
        graph_free(gr);
    else
        rc = CUDA_ERROR_INVALID_VALUE;
    EXEC_LEAVE();
}

CUresult cuGraphAddKernelNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph,
                                 const CUgraphNode *dependencies, size_t numDependencies,
                                 const CUDA_KERNEL_NODE_PARAMS *p)
{
    EXEC_ENTER(cuGraphAddKernelNode_v2);
    (void)c;
    graph_t *gr = (graph_t *)obj_find(hGraph, K_GRAPH);
    func_t *f = p ? (func_t *)obj_find(p->func, K_FUNC) : NULL;
    gnode_t *nd;
    if (!phGraphNode || !gr || !f || (numDependencies && !dependencies) || !p->gridDimX ||
        !p->gridDimY || !p->gridDimZ || !p->blockDimX || !p->blockDimY || !p->blockDimZ) {
        rc = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    for (size_t i = 0; i < numDependencies; i++) {
        gnode_t *d = (gnode_t *)obj_find(dependencies[i], K_NODE);
        if (!d || d->graph != gr) {
            rc = CUDA_ERROR_INVALID_VALUE;
            goto out;
        }
    }
    /* Nodes run in insertion order: a chain, whatever the dependencies. */
    if (!(nd = graph_add(gr, kernel_ns(f, p->kernelParams), p->func)))
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    else
        *phGraphNode = (CUgraphNode)nd;
out:
    EXEC_LEAVE();
}

CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
    EXEC_ENTER(cuGraphGetNodes);
    (void)c;
    graph_t *gr = (graph_t *)obj_find(hGraph, K_GRAPH);
    if (!gr || !numNodes) {
        rc = CUDA_ERROR_INVALID_VALUE;
    } else if (!nodes) {
        *numNodes = gr->n;
    } else {
        size_t n = *numNodes < gr->n ? *numNodes : gr->n;
        for (size_t i = 0; i < n; i++)
            nodes[i] = (CUgraphNode)gr->nodes[i];
        for (size_t i = n; i < *numNodes; i++)
            nodes[i] = NULL;
        *numNodes = n;
    }
    EXEC_LEAVE();
}

/* Under g.lock: every kernel node of gr placed in c, as the driver's lazy loading does at an
 * instantiation.  A node whose function's module was unloaded since: CUDA_ERROR_INVALID_VALUE. */
static CUresult graph_place(graph_t *gr, ctx_t *c)
{
    for (size_t i = 0; i < gr->n; i++) {
        if (!gr->nodes[i]->fn)
            continue;
        func_t *f = (func_t *)obj_find(gr->nodes[i]->fn, K_FUNC);
        if (!f)
            return CUDA_ERROR_INVALID_VALUE;
        CUresult rc = kernel_place(f, c);
        if (rc != CUDA_SUCCESS)
            return rc;
    }
    return CUDA_SUCCESS;
}

static CUresult instantiate(CUgraphExec *out, CUgraph hGraph)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    LOCK();
    CUresult rc = CUDA_SUCCESS;
    ctx_t *c = cur_ctx();
    graph_t *gr = (graph_t *)obj_find(hGraph, K_GRAPH);
    gexec_t *x = NULL;
    if (!out || !gr) {
        rc = CUDA_ERROR_INVALID_VALUE;
    } else if (!c) {
        rc = CUDA_ERROR_INVALID_CONTEXT;
    } else if ((rc = graph_place(gr, c)) != CUDA_SUCCESS) {
        /* a kernel's module gone, or no room for its code: what was placed stays */
    } else if (!(x = (gexec_t *)obj_new(K_EXEC, sizeof *x, c)) ||
               !(x->dur_ns = calloc(gr->n ? gr->n : 1, sizeof *x->dur_ns))) {
        if (x)
            obj_free(&x->o);
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        x->n = gr->n;
        for (size_t i = 0; i < gr->n; i++)
            x->dur_ns[i] = gr->nodes[i]->dur_ns;
        *out = (CUgraphExec)x;
    }
    UNLOCK();
    return rc;
}

CUresult cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
                            char *logBuffer, size_t bufferSize)
{
    COUNT(cuGraphInstantiate);
    if (logBuffer && bufferSize)
        logBuffer[0] = '\0';
    return instantiate(phGraphExec, hGraph);
}

CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
                               char *logBuffer, size_t bufferSize)
{
    COUNT(cuGraphInstantiate_v2);
    if (logBuffer && bufferSize)
        logBuffer[0] = '\0';
    return instantiate(phGraphExec, hGraph);
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                     unsigned long long flags)
{
    COUNT(cuGraphInstantiateWithFlags);
    if (flags & ~0xfull) /* AUTO_FREE_ON_LAUNCH | UPLOAD | DEVICE_LAUNCH | USE_NODE_PRIORITY */
        return CUDA_ERROR_INVALID_VALUE;
    return instantiate(phGraphExec, hGraph);
}

/* cuGraphInstantiateWithParams: cuGraphInstantiateWithFlags' flags, the upload (flag UPLOAD, on
 * hUploadStream) done at once, and the outcome in result_out. */
static CUresult graph_upload(CUgraphExec hx, CUstream h, int pt);
static CUresult instantiate_params(CUgraphExec *out, CUgraph hGraph,
                                   CUDA_GRAPH_INSTANTIATE_PARAMS *p, int pt)
{
    if (!p || (p->flags & ~0xfull))
        return CUDA_ERROR_INVALID_VALUE;
    p->hErrNode_out = NULL;
    CUresult rc = instantiate(out, hGraph);
    if (rc == CUDA_SUCCESS && (p->flags & 2)) /* CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD */
        rc = graph_upload(*out, p->hUploadStream, pt);
    p->result_out =
        rc == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
    return rc;
}

CUresult cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
                                      CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
    COUNT(cuGraphInstantiateWithParams);
    return instantiate_params(phGraphExec, hGraph, instantiateParams, 0);
}

CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *phGraphExec, CUgraph hGraph,
                                           CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
    COUNT(cuGraphInstantiateWithParams_ptsz);
    return instantiate_params(phGraphExec, hGraph, instantiateParams, 1);
}

static CUresult graph_launch(CUgraphExec hx, CUstream h, int pt)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    LOCK();
    CUresult rc = CUDA_SUCCESS;
    gexec_t *x = (gexec_t *)obj_find(hx, K_EXEC);
    stream_t *s = x ? stream_resolve(h, cur_ctx(), pt, &rc) : NULL;
    if (!x)
        rc = CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; s && rc == CUDA_SUCCESS && i < x->n; i++) {
        if (s->capture) {
            if (!graph_add(s->capture, x->dur_ns[i], NULL))
                rc = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            run_kernel(s, x->dur_ns[i]);
        }
    }
    UNLOCK();
    return rc;
}

CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    COUNT(cuGraphLaunch);
    return graph_launch(hGraphExec, hStream, 0);
}

CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    COUNT(cuGraphLaunch_ptsz);
    return graph_launch(hGraphExec, hStream, 1);
}

/* cuGraphUpload: the executable graph's work made resident on its device ahead of a launch.  The
 * fake has nothing to upload: the graph and the stream are checked (a stream that captures
 * refuses it, as the driver does), nothing is queued. */
static CUresult graph_upload(CUgraphExec hx, CUstream h, int pt)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    LOCK();
    CUresult rc = CUDA_SUCCESS;
    gexec_t *x = (gexec_t *)obj_find(hx, K_EXEC);
    stream_t *s = x ? stream_resolve(h, cur_ctx(), pt, &rc) : NULL;
    if (!x)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (s && s->capture)
        rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    UNLOCK();
    return rc;
}

CUresult cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream)
{
    COUNT(cuGraphUpload);
    return graph_upload(hGraphExec, hStream, 0);
}

CUresult cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    COUNT(cuGraphUpload_ptsz);
    return graph_upload(hGraphExec, hStream, 1);
}

/* ---- changing an executable graph -------------------------------------
 * A kernel put into an executable graph (cuGraphExecKernelNodeSetParams, both layouts: the v1
 * one is the _v2's first fields) or a graph's nodes taken over (cuGraphExecUpdate: the same
 * number of nodes, else CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE) are placed then, in the executable
 * graph's context, as an instantiation places them.  Child-graph and generic nodes are not
 * modelled: cuGraphExecChildGraphNodeSetParams and cuGraphExecNodeSetParams answer
 * CUDA_ERROR_NOT_SUPPORTED for a live executable graph. */
static CUresult exec_set_kernel(CUgraphExec hx, CUgraphNode hn, const CUDA_KERNEL_NODE_PARAMS *p)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    LOCK();
    CUresult rc = CUDA_SUCCESS;
    gexec_t *x = (gexec_t *)obj_find(hx, K_EXEC);
    gnode_t *nd = (gnode_t *)obj_find(hn, K_NODE);
    func_t *f = p ? (func_t *)obj_find(p->func, K_FUNC) : NULL;
    if (!x || !nd || !f) {
        rc = CUDA_ERROR_INVALID_VALUE;
    } else if ((rc = kernel_place(f, x->o.ctx)) == CUDA_SUCCESS) {
        for (size_t i = 0; i < nd->graph->n && i < x->n; i++)
            if (nd->graph->nodes[i] == nd)
                x->dur_ns[i] = kernel_ns(f, p->kernelParams);
    }
    UNLOCK();
    return rc;
}

CUresult cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                        const void *nodeParams)
{
    COUNT(cuGraphExecKernelNodeSetParams);
    return exec_set_kernel(hGraphExec, hNode, (const CUDA_KERNEL_NODE_PARAMS *)nodeParams);
}

CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec hGraphExec, CUgraphNode hNode,
                                           const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
    COUNT(cuGraphExecKernelNodeSetParams_v2);
    return exec_set_kernel(hGraphExec, hNode, nodeParams);
}

static CUresult exec_update(CUgraphExec hx, CUgraph hg, CUgraphExecUpdateResult *res)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    LOCK();
    CUresult rc = CUDA_SUCCESS;
    gexec_t *x = (gexec_t *)obj_find(hx, K_EXEC);
    graph_t *gr = (graph_t *)obj_find(hg, K_GRAPH);
    *res = CU_GRAPH_EXEC_UPDATE_ERROR;
    if (!x || !gr) {
        rc = CUDA_ERROR_INVALID_VALUE;
    } else if (gr->n != x->n) {
        *res = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
        rc = CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
    } else if ((rc = graph_place(gr, x->o.ctx)) == CUDA_SUCCESS) {
        for (size_t i = 0; i < gr->n; i++)
            x->dur_ns[i] = gr->nodes[i]->dur_ns;
        *res = CU_GRAPH_EXEC_UPDATE_SUCCESS;
    }
    UNLOCK();
    return rc;
}

CUresult cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphNode *hErrorNode_out,
                           CUgraphExecUpdateResult *updateResult_out)
{
    COUNT(cuGraphExecUpdate);
    if (!hErrorNode_out || !updateResult_out)
        return CUDA_ERROR_INVALID_VALUE;
    *hErrorNode_out = NULL;
    return exec_update(hGraphExec, hGraph, updateResult_out);
}

CUresult cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph,
                              CUgraphExecUpdateResultInfo *resultInfo)
{
    COUNT(cuGraphExecUpdate_v2);
    if (!resultInfo)
        return CUDA_ERROR_INVALID_VALUE;
    resultInfo->errorNode = resultInfo->errorFromNode = NULL;
    return exec_update(hGraphExec, hGraph, &resultInfo->result);
}

static CUresult exec_unmodelled(CUgraphExec hx)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    LOCK();
    CUresult rc = obj_find(hx, K_EXEC) ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_INVALID_VALUE;
    UNLOCK();
    return rc;
}

CUresult cuGraphExecChildGraphNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                            CUgraph childGraph)
{
    COUNT(cuGraphExecChildGraphNodeSetParams);
    (void)hNode;
    (void)childGraph;
    return exec_unmodelled(hGraphExec);
}

CUresult cuGraphExecNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                  CUgraphNodeParams *nodeParams)
{
    COUNT(cuGraphExecNodeSetParams);
    (void)hNode;
    (void)nodeParams;
    return exec_unmodelled(hGraphExec);
}

CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
    EXEC_ENTER(cuGraphExecDestroy);
    (void)c;
    gexec_t *x = (gexec_t *)obj_find(hGraphExec, K_EXEC);
    if (x)
        gexec_free(x);
    else
        rc = CUDA_ERROR_INVALID_VALUE;
    EXEC_LEAVE();
}

/* ---- stream capture (kernels and graph launches are captured) --------- */

static CUresult begin_capture(CUstream h, CUstreamCaptureMode mode, int pt)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if ((unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    CUresult rc = CUDA_SUCCESS;
    stream_t *s = stream_resolve(h, cur_ctx(), pt, &rc);
    if (s && s == s->o.ctx->null_strm)
        rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* the default stream cannot capture */
    else if (s && s->capture)
        rc = CUDA_ERROR_ILLEGAL_STATE;
    else if (s && !(s->capture = (graph_t *)obj_new(K_GRAPH, sizeof(graph_t), NULL)))
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    UNLOCK();
    return rc;
}

CUresult cuStreamBeginCapture(CUstream hStream)
{
    COUNT(cuStreamBeginCapture);
    return begin_capture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, 0);
}

CUresult cuStreamBeginCapture_ptsz(CUstream hStream)
{
    COUNT(cuStreamBeginCapture_ptsz);
    return begin_capture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, 1);
}

CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode)
{
    COUNT(cuStreamBeginCapture_v2);
    return begin_capture(hStream, mode, 0);
}

CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode)
{
    COUNT(cuStreamBeginCapture_v2_ptsz);
    return begin_capture(hStream, mode, 1);
}

static CUresult end_capture(CUstream h, CUgraph *out, int pt)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    CUresult rc = CUDA_SUCCESS;
    stream_t *s = stream_resolve(h, cur_ctx(), pt, &rc);
    if (s && !s->capture) {
        rc = CUDA_ERROR_ILLEGAL_STATE;
    } else if (s) {
        *out = (CUgraph)s->capture;
        s->capture = NULL;
    }
    UNLOCK();
    return rc;
}

CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
    COUNT(cuStreamEndCapture);
    return end_capture(hStream, phGraph, 0);
}

CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph)
{
    COUNT(cuStreamEndCapture_ptsz);
    return end_capture(hStream, phGraph, 1);
}

static CUresult is_capturing(CUstream h, CUstreamCaptureStatus *st, int pt)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!st)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    CUresult rc = CUDA_SUCCESS;
    stream_t *s = stream_resolve(h, cur_ctx(), pt, &rc);
    if (s)
        *st = s->capture ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
    UNLOCK();
    return rc;
}

CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
    COUNT(cuStreamIsCapturing);
    return is_capturing(hStream, captureStatus, 0);
}

CUresult cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
    COUNT(cuStreamIsCapturing_ptsz);
    return is_capturing(hStream, captureStatus, 1);
}

/* cuStreamGetCaptureInfo (10.1), _v2 (11.3), _v3 (12.3), each with _ptsz: the status; while
 * the stream captures, its capture's id (the graph's address) and graph, and no dependencies
 * (the fake records kernels only, without edges).  The outputs after the status are optional. */
static CUresult capture_info(CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *graph,
                             const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *ndeps,
                             int pt)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!st)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    CUresult rc = CUDA_SUCCESS;
    stream_t *s = stream_resolve(h, cur_ctx(), pt, &rc);
    if (s) {
        *st = s->capture ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
        if (s->capture) {
            if (id)
                *id = (cuuint64_t)(uintptr_t)s->capture;
            if (graph)
                *graph = (CUgraph)s->capture;
            if (deps)
                *deps = NULL;
            if (edges)
                *edges = NULL;
            if (ndeps)
                *ndeps = 0;
        }
    }
    UNLOCK();
    return rc;
}

CUresult cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                cuuint64_t *id_out)
{
    COUNT(cuStreamGetCaptureInfo);
    return capture_info(hStream, captureStatus_out, id_out, NULL, NULL, NULL, NULL, 0);
}

CUresult cuStreamGetCaptureInfo_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                     cuuint64_t *id_out)
{
    COUNT(cuStreamGetCaptureInfo_ptsz);
    return capture_info(hStream, captureStatus_out, id_out, NULL, NULL, NULL, NULL, 1);
}

CUresult cuStreamGetCaptureInfo_v2(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                   cuuint64_t *id_out, CUgraph *graph_out,
                                   const CUgraphNode **dependencies_out,
                                   size_t *numDependencies_out)
{
    COUNT(cuStreamGetCaptureInfo_v2);
    return capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out, NULL,
                        numDependencies_out, 0);
}

CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                        cuuint64_t *id_out, CUgraph *graph_out,
                                        const CUgraphNode **dependencies_out,
                                        size_t *numDependencies_out)
{
    COUNT(cuStreamGetCaptureInfo_v2_ptsz);
    return capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out, NULL,
                        numDependencies_out, 1);
}

CUresult cuStreamGetCaptureInfo_v3(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                   cuuint64_t *id_out, CUgraph *graph_out,
                                   const CUgraphNode **dependencies_out,
                                   const CUgraphEdgeData **edgeData_out,
                                   size_t *numDependencies_out)
{
    COUNT(cuStreamGetCaptureInfo_v3);
    return capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out,
                        edgeData_out, numDependencies_out, 0);
}

CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                        cuuint64_t *id_out, CUgraph *graph_out,
                                        const CUgraphNode **dependencies_out,
                                        const CUgraphEdgeData **edgeData_out,
                                        size_t *numDependencies_out)
{
    COUNT(cuStreamGetCaptureInfo_v3_ptsz);
    return capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out,
                        edgeData_out, numDependencies_out, 1);
}

/* ---- host functions and stream callbacks ------------------------------
 * The real driver calls them on a thread of its own once the stream's earlier work is done, and
 * the stream's later work waits for them.  The fake calls them in the caller's thread before the
 * call returns, once the stream's earlier work (its simulated tail) is done: the same order
 * against the stream's work, and the stream is idle again when the call returns.  A stream that
 * captures refuses them (the fake records kernels only). */
static CUresult host_call(CUstream h, int pt, CUhostFn fn, CUstreamCallback cb, void *user)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!fn && !cb)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = CUDA_SUCCESS;
    LOCK();
    stream_t *s = stream_resolve(h, cur_ctx(), pt, &rc);
    uint64_t t = 0;
    int dev = 0;
    if (s && s->capture)
        rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    else if (s) {
        t = s->tail_ns;
        dev = s->o.ctx->dev;
    }
    UNLOCK();
    if (rc != CUDA_SUCCESS)
        return rc;
    wait_and_release(t, dev);
    if (fn)
        fn(user);
    else
        cb(h, CUDA_SUCCESS, user);
    return CUDA_SUCCESS;
}

CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
    COUNT(cuLaunchHostFunc);
    return fn ? host_call(hStream, 0, fn, NULL, userData) : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void *userData)
{
    COUNT(cuLaunchHostFunc_ptsz);
    return fn ? host_call(hStream, 1, fn, NULL, userData) : CUDA_ERROR_INVALID_VALUE;
}

/* flags: reserved, 0. */
CUresult cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void *userData,
                             unsigned int flags)
{
    COUNT(cuStreamAddCallback);
    if (!callback || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    return host_call(hStream, 0, NULL, callback, userData);
}

CUresult cuStreamAddCallback_ptsz(CUstream hStream, CUstreamCallback callback, void *userData,
                                  unsigned int flags)
{
    COUNT(cuStreamAddCallback_ptsz);
    if (!callback || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    return host_call(hStream, 1, NULL, callback, userData);
}
