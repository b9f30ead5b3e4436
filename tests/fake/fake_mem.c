/* fake_mem.c - memory of the fake CUDA driver (TEST DOUBLE).
 *
 * Device memory is host memory: every allocation is its own anonymous
 * mapping (MAP_NORESERVE, so a "24G device" costs only the pages touched) and
 * its device pointer is the host address, so memset/memcpy work on it.  What
 * an allocation costs on the simulated device (rounded up to
 * TESSEL_FAKE_ALLOC_GRANULE) is charged in the shared state; a charge beyond
 * the device's free memory fails with CUDA_ERROR_OUT_OF_MEMORY.
 *
 * Pools reserve device memory in FAKE_GRANULARITY chunks; frees return memory
 * to the pool, not the device; reserved memory goes back to the device on
 * cuMemPoolTrimTo and, above the release threshold, at synchronisation.
 * VMM physical memory is a memfd mapped MAP_FIXED into reserved ranges,
 * inaccessible until cuMemSetAccess.  Arrays are accounting only.  Stream memory operations
 * (cuStreamWriteValue32/64, WaitValue32/64, BatchMemOp) write or check a word at once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fake_cuda_int.h"
#include "tessel_fake.h"

/* Arrays and mipmapped arrays (K_ARRAY / K_MIPMAP), owned by a context. */
typedef struct {
    obj_t o;
    uint64_t charged;
    int dev;
    CUDA_ARRAY3D_DESCRIPTOR d;
    unsigned levels;
} array_t;

static void array_destroy(array_t *a)
{
    uncharge(a->dev, a->charged);
    obj_free(&a->o);
}

/* ---- allocation registry: sorted by base ----------------------------- */

static size_t alloc_pos(uint64_t p) /* first index with base > p */
{
    size_t lo = 0, hi = g.nalloc;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (g.allocs[mid]->base <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

alloc_t *alloc_find(uint64_t p)
{
    size_t i = alloc_pos(p);
    if (i == 0)
        return NULL;
    alloc_t *a = g.allocs[i - 1];
    return p < a->base + a->size ? a : NULL;
}

static alloc_t *alloc_add(uint64_t base, uint64_t size, akind_t kind, int dev)
{
    if (g.nalloc == g.calloc_) {
        size_t n = g.calloc_ ? 2 * g.calloc_ : 64;
        alloc_t **v = realloc(g.allocs, n * sizeof *v);
        if (!v)
            return NULL;
        g.allocs = v;
        g.calloc_ = n;
    }
    alloc_t *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->base = base;
    a->size = size;
    a->kind = kind;
    a->dev = dev;
    size_t i = alloc_pos(base);
    memmove(&g.allocs[i + 1], &g.allocs[i], (g.nalloc - i) * sizeof *g.allocs);
    g.allocs[i] = a;
    g.nalloc++;
    return a;
}

static void alloc_remove(alloc_t *a)
{
    size_t i = alloc_pos(a->base);
    if (i > 0 && g.allocs[i - 1] == a) {
        memmove(&g.allocs[i - 1], &g.allocs[i], (g.nalloc - i) * sizeof *g.allocs);
        g.nalloc--;
    }
    free(a);
}

static void *map_anon(uint64_t len, int low32)
{
    int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
#ifdef MAP_32BIT
    if (low32)
        flags |= MAP_32BIT;
#endif
    void *p = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE, flags, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    if (low32 && (uintptr_t)p + len > 0xffffffffull) {
        munmap(p, (size_t)len);
        return NULL;
    }
    return p;
}

static uint64_t page_round(uint64_t n)
{
    uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
    return roundup(n ? n : 1, pg);
}

/* ---- VMM handles ------------------------------------------------------ */

static void vmem_maybe_free(vmem_t *h)
{
    if (h->released && h->maps == 0) {
        uncharge(h->dev, h->size);
        close(h->fd);
        obj_free(&h->o);
    }
}

static void vmap_drop(alloc_t *r, vmap_t *m)
{
    vmap_t **pp = &r->maps;
    while (*pp != m)
        pp = &(*pp)->next;
    *pp = m->next;
    /* Back to an inaccessible reservation. */
    mmap((void *)(uintptr_t)m->ptr, (size_t)m->size, PROT_NONE,
         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    m->h->maps--;
    vmem_maybe_free(m->h);
    free(m);
}

/* ---- pools ------------------------------------------------------------ */

static void pool_trim(pool_t *p, uint64_t keep)
{
    uint64_t target = roundup(p->used > keep ? p->used : keep, FAKE_GRANULARITY);
    if (target < p->reserved) {
        uncharge(p->dev, p->reserved - target);
        p->reserved = target;
    }
}

void pools_at_sync(int dev)
{
    for (obj_t *o = g.objs.next; o != &g.objs; o = o->next) {
        if (o->kind != K_POOL)
            continue;
        pool_t *p = (pool_t *)o;
        if (p->dev == dev && p->reserved > p->threshold)
            pool_trim(p, p->threshold);
    }
}

static pool_t *pool_new(int dev, int is_default, uint64_t max_size)
{
    pool_t *p = (pool_t *)obj_new(K_POOL, sizeof *p, NULL);
    if (!p)
        return NULL;
    p->dev = dev;
    p->is_default = is_default;
    p->max_size = max_size;
    p->access[dev] = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return p;
}

static pool_t *default_pool(int dev)
{
    if (!g.default_pool[dev])
        g.default_pool[dev] = pool_new(dev, 1, 0);
    return g.default_pool[dev];
}

static pool_t *current_pool(int dev)
{
    return g.cur_pool[dev] ? g.cur_pool[dev] : default_pool(dev);
}

static CUresult pool_alloc(pool_t *p, uint64_t size, CUdeviceptr *dptr)
{
    if (!dptr || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t s = roundup(size, g.cfg.alloc_granule);
    uint64_t need = 0;
    if (p->used + s > p->reserved) {
        need = roundup(p->used + s - p->reserved, FAKE_GRANULARITY);
        if (p->max_size && p->reserved + need > p->max_size)
            return CUDA_ERROR_OUT_OF_MEMORY;
        if (charge(p->dev, need) < 0)
            return CUDA_ERROR_OUT_OF_MEMORY;
    }
    uint64_t len = page_round(size);
    void *m = map_anon(len, 0);
    alloc_t *a = m ? alloc_add((uintptr_t)m, size, A_POOL, p->dev) : NULL;
    if (!a) {
        if (m)
            munmap(m, (size_t)len);
        if (need)
            uncharge(p->dev, need);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    a->maplen = len;
    a->charged = s;
    a->pool = p;
    p->reserved += need;
    p->used += s;
    if (p->reserved > p->reserved_high)
        p->reserved_high = p->reserved;
    if (p->used > p->used_high)
        p->used_high = p->used;
    *dptr = a->base;
    return CUDA_SUCCESS;
}

static void pool_destroy(pool_t *p)
{
    for (size_t i = g.nalloc; i-- > 0;)
        if (g.allocs[i]->kind == A_POOL && g.allocs[i]->pool == p)
            alloc_free(g.allocs[i]);
    if (p->reserved)
        uncharge(p->dev, p->reserved);
    for (int d = 0; d < TFAKE_MAX_DEVICES; d++) {
        if (g.cur_pool[d] == p)
            g.cur_pool[d] = NULL;
        if (g.default_pool[d] == p)
            g.default_pool[d] = NULL;
    }
    obj_free(&p->o);
}

/* ---- freeing ---------------------------------------------------------- */

/* The process's managed memory resident on device dev (of what it has charged there) grows or
 * shrinks by bytes: NVML's per-process figure leaves it out (README "Managed memory"). */
static void managed_resident(int dev, uint64_t bytes, int grow)
{
    tfake_state_lock(g.sh);
    tfake_procstate_t *p = tfake_state_proc(g.sh);
    if (p) {
        uint64_t *m = &p->managed[pdev(dev)];
        *m = grow ? *m + bytes : *m > bytes ? *m - bytes : 0;
    }
    tfake_state_unlock(g.sh);
}

void alloc_free(alloc_t *a)
{
    switch (a->kind) {
    case A_DEVICE:
    case A_MANAGED:
        munmap((void *)(uintptr_t)a->base, (size_t)a->maplen);
        if (a->kind == A_MANAGED && a->resident >= 0)
            managed_resident(a->dev, a->charged, 0);
        uncharge(a->dev, a->charged);
        break;
    case A_POOL:
        munmap((void *)(uintptr_t)a->base, (size_t)a->maplen);
        a->pool->used -= a->charged;
        break;
    case A_HOST:
        munmap((void *)(uintptr_t)a->base, (size_t)a->maplen);
        break;
    case A_HOSTREG:
        break;
    case A_RESERVE:
        while (a->maps)
            vmap_drop(a, a->maps);
        munmap((void *)(uintptr_t)a->base, (size_t)a->maplen);
        break;
    }
    alloc_remove(a);
}

void mem_free_ctx(ctx_t *c)
{
    for (size_t i = g.nalloc; i-- > 0;) {
        if (i >= g.nalloc)
            continue;
        if (g.allocs[i]->ctx == c)
            alloc_free(g.allocs[i]);
    }
    for (obj_t *o = g.objs.next; o != &g.objs;) {
        obj_t *n = o->next;
        if ((o->kind == K_ARRAY || o->kind == K_MIPMAP) && o->ctx == c)
            array_destroy((array_t *)o);
        o = n;
    }
}

void mem_reset(void)
{
    while (g.nalloc)
        alloc_free(g.allocs[g.nalloc - 1]);
    for (obj_t *o = g.objs.next; o != &g.objs;) {
        obj_t *n = o->next;
        if (o->kind == K_POOL) {
            pool_destroy((pool_t *)o);
            n = g.objs.next;
        } else if (o->kind == K_VMEM) {
            vmem_t *h = (vmem_t *)o;
            h->released = 1;
            h->maps = 0;
            vmem_maybe_free(h);
            n = g.objs.next;
        }
        o = n;
    }
    free(g.allocs);
    g.allocs = NULL;
    g.nalloc = g.calloc_ = 0;
}

void forget_allocs(void)
{
    for (size_t i = 0; i < g.nalloc; i++) {
        alloc_t *a = g.allocs[i];
        if (a->kind != A_HOSTREG)
            munmap((void *)(uintptr_t)a->base, (size_t)a->maplen);
        while (a->maps) {
            vmap_t *m = a->maps;
            a->maps = m->next;
            free(m);
        }
        free(a);
    }
    free(g.allocs);
    g.allocs = NULL;
    g.nalloc = g.calloc_ = 0;
}

/* ---- entry helpers ---------------------------------------------------- */

#define MEM_ENTER(name)                                                                            \
    COUNT(name);                                                                                   \
    if (!g.inited)                                                                                 \
        return CUDA_ERROR_NOT_INITIALIZED;                                                         \
    ctx_t *c;                                                                                      \
    LOCK();                                                                                        \
    CUresult rc = need_ctx(&c);                                                                    \
    if (rc != CUDA_SUCCESS)                                                                        \
    goto out

#define MEM_LEAVE()                                                                                \
    out:                                                                                           \
    UNLOCK();                                                                                      \
    return rc

/* Under g.lock: a device (or managed) allocation owned by c. */
static CUresult dev_alloc(ctx_t *c, uint64_t size, akind_t kind, int low32, CUdeviceptr *out)
{
    if (!out || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t ch = roundup(size, g.cfg.alloc_granule);
    if (ch < size || charge(c->dev, ch) < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    uint64_t len = page_round(size);
    void *m = map_anon(len, low32);
    alloc_t *a = m ? alloc_add((uintptr_t)m, size, kind, c->dev) : NULL;
    if (!a) {
        if (m)
            munmap(m, (size_t)len);
        uncharge(c->dev, ch);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    a->maplen = len;
    a->charged = ch;
    a->ctx = c;
    *out = a->base;
    return CUDA_SUCCESS;
}

static CUresult dev_free(uint64_t p)
{
    if (p == 0)
        return CUDA_SUCCESS;
    alloc_t *a = alloc_find(p);
    if (!a || a->base != p || (a->kind != A_DEVICE && a->kind != A_MANAGED && a->kind != A_POOL))
        return CUDA_ERROR_INVALID_VALUE;
    alloc_free(a);
    return CUDA_SUCCESS;
}

/* ---- linear device memory -------------------------------------------- */

CUresult cuMemGetInfo(unsigned int *free_, unsigned int *total)
{
    MEM_ENTER(cuMemGetInfo);
    if (!free_ || !total) {
        rc = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    tfake_state_lock(g.sh);
    tfake_state_reap(g.sh);
    uint64_t t = g.sh->dev[pdev(c->dev)].total, u = g.sh->dev[pdev(c->dev)].used;
    tfake_state_unlock(g.sh);
    *free_ = t - u > 0xffffffffull ? 0xffffffffu : (unsigned)(t - u);
    *total = t > 0xffffffffull ? 0xffffffffu : (unsigned)t;
    MEM_LEAVE();
}

CUresult cuMemGetInfo_v2(size_t *free_, size_t *total)
{
    MEM_ENTER(cuMemGetInfo_v2);
    if (!free_ || !total) {
        rc = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    tfake_state_lock(g.sh);
    tfake_state_reap(g.sh);
    *total = (size_t)g.sh->dev[pdev(c->dev)].total;
    *free_ = (size_t)(g.sh->dev[pdev(c->dev)].total - g.sh->dev[pdev(c->dev)].used);
    tfake_state_unlock(g.sh);
    MEM_LEAVE();
}

CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize)
{
    MEM_ENTER(cuMemAlloc);
    CUdeviceptr p = 0;
    rc = dev_alloc(c, bytesize, A_DEVICE, 1, dptr ? &p : NULL);
    if (rc == CUDA_SUCCESS)
        *dptr = (CUdeviceptr_v1)p;
    MEM_LEAVE();
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    MEM_ENTER(cuMemAlloc_v2);
    rc = dev_alloc(c, bytesize, A_DEVICE, 0, dptr);
    MEM_LEAVE();
}

static CUresult pitch_alloc(ctx_t *c, uint64_t w, uint64_t h, unsigned elem, int low32,
                            CUdeviceptr *dptr, uint64_t *pitch)
{
    if (!dptr || !pitch || w == 0 || h == 0 || (elem != 4 && elem != 8 && elem != 16))
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t p = roundup(w, FAKE_PITCH_ALIGN);
    if (h > UINT64_MAX / p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult rc = dev_alloc(c, p * h, A_DEVICE, low32, dptr);
    if (rc == CUDA_SUCCESS)
        *pitch = p;
    return rc;
}

CUresult cuMemAllocPitch(CUdeviceptr_v1 *dptr, unsigned int *pPitch, unsigned int WidthInBytes,
                         unsigned int Height, unsigned int ElementSizeBytes)
{
    MEM_ENTER(cuMemAllocPitch);
    CUdeviceptr p = 0;
    uint64_t pitch = 0;
    rc = pitch_alloc(c, WidthInBytes, Height, ElementSizeBytes, 1, dptr ? &p : NULL,
                     pPitch ? &pitch : NULL);
    if (rc == CUDA_SUCCESS) {
        *dptr = (CUdeviceptr_v1)p;
        *pPitch = (unsigned)pitch;
    }
    MEM_LEAVE();
}

CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes)
{
    MEM_ENTER(cuMemAllocPitch_v2);
    uint64_t pitch = 0;
    rc = pitch_alloc(c, WidthInBytes, Height, ElementSizeBytes, 0, dptr, pPitch ? &pitch : NULL);
    if (rc == CUDA_SUCCESS)
        *pPitch = (size_t)pitch;
    MEM_LEAVE();
}

CUresult cuMemFree(CUdeviceptr_v1 dptr)
{
    MEM_ENTER(cuMemFree);
    rc = dev_free(dptr);
    MEM_LEAVE();
}

CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    MEM_ENTER(cuMemFree_v2);
    rc = dev_free(dptr);
    MEM_LEAVE();
}

static CUresult addr_range(uint64_t p, uint64_t *base, uint64_t *size)
{
    alloc_t *a = alloc_find(p);
    if (!a || a->kind == A_HOST || a->kind == A_HOSTREG)
        return CUDA_ERROR_NOT_FOUND;
    if (a->kind == A_RESERVE) {
        for (vmap_t *m = a->maps; m; m = m->next) {
            if (p >= m->ptr && p < m->ptr + m->size) {
                *base = m->ptr;
                *size = m->size;
                return CUDA_SUCCESS;
            }
        }
        return CUDA_ERROR_NOT_FOUND;
    }
    *base = a->base;
    *size = a->size;
    return CUDA_SUCCESS;
}

CUresult cuMemGetAddressRange(CUdeviceptr_v1 *pbase, unsigned int *psize, CUdeviceptr_v1 dptr)
{
    MEM_ENTER(cuMemGetAddressRange);
    uint64_t b = 0, s = 0;
    rc = addr_range(dptr, &b, &s);
    if (rc == CUDA_SUCCESS) {
        if (pbase)
            *pbase = (CUdeviceptr_v1)b;
        if (psize)
            *psize = (unsigned)s;
    }
    MEM_LEAVE();
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    MEM_ENTER(cuMemGetAddressRange_v2);
    uint64_t b = 0, s = 0;
    rc = addr_range(dptr, &b, &s);
    if (rc == CUDA_SUCCESS) {
        if (pbase)
            *pbase = b;
        if (psize)
            *psize = (size_t)s;
    }
    MEM_LEAVE();
}

/* Under g.lock: managed memory (README "Managed memory"): host pages, no device memory until
 * a prefetch moves them to a device. */
static CUresult managed_alloc(ctx_t *c, uint64_t size, CUdeviceptr *out)
{
    if (!out || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t len = page_round(size);
    void *m = map_anon(len, 0);
    alloc_t *a = m ? alloc_add((uintptr_t)m, size, A_MANAGED, c->dev) : NULL;
    if (!a) {
        if (m)
            munmap(m, (size_t)len);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    a->maplen = len;
    a->charged = 0;
    a->resident = -1;
    a->ctx = c;
    *out = a->base;
    return CUDA_SUCCESS;
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    MEM_ENTER(cuMemAllocManaged);
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) {
        rc = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    rc = managed_alloc(c, bytesize, dptr);
    MEM_LEAVE();
}

/* ---- host memory ------------------------------------------------------ */

static CUresult host_alloc(ctx_t *c, void **pp, uint64_t size, unsigned flags)
{
    if (!pp || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t len = page_round(size);
    void *m = map_anon(len, 0);
    alloc_t *a = m ? alloc_add((uintptr_t)m, size, A_HOST, c->dev) : NULL;
    if (!a) {
        if (m)
            munmap(m, (size_t)len);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    a->maplen = len;
    a->hflags = flags;
    *pp = m;
    return CUDA_SUCCESS;
}

CUresult cuMemAllocHost(void **pp, unsigned int bytesize)
{
    MEM_ENTER(cuMemAllocHost);
    rc = host_alloc(c, pp, bytesize, 0);
    MEM_LEAVE();
}

CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    MEM_ENTER(cuMemAllocHost_v2);
    rc = host_alloc(c, pp, bytesize, 0);
    MEM_LEAVE();
}

CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    MEM_ENTER(cuMemHostAlloc);
    if (Flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
                            CU_MEMHOSTALLOC_WRITECOMBINED)) {
        rc = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    rc = host_alloc(c, pp, bytesize, Flags);
    MEM_LEAVE();
}

CUresult cuMemFreeHost(void *p)
{
    MEM_ENTER(cuMemFreeHost);
    alloc_t *a = alloc_find((uintptr_t)p);
    if (!p || !a || a->base != (uintptr_t)p || a->kind != A_HOST)
        rc = CUDA_ERROR_INVALID_VALUE;
    else
        alloc_free(a);
    MEM_LEAVE();
}

CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
    MEM_ENTER(cuMemHostGetDevicePointer_v2);
    alloc_t *a = alloc_find((uintptr_t)p);
    if (!pdptr || Flags != 0 || !a || (a->kind != A_HOST && a->kind != A_HOSTREG))
        rc = CUDA_ERROR_INVALID_VALUE;
    else
        *pdptr = (uintptr_t)p; /* unified addressing: same address */
    MEM_LEAVE();
}

/* ---- pointer attributes ----
 * Of the allocation holding ptr (device, managed, pool, host or registered memory): its context
 * (NULL for host memory), memory type, device pointer (ptr: unified addressing), whether it is
 * managed, its device ordinal, its range's start and size.  Other attributes, and an address no
 * allocation holds, are CUDA_ERROR_INVALID_VALUE (the fake models no more).  Under g.lock. */
static CUresult ptr_attr(void *data, CUpointer_attribute at, CUdeviceptr ptr)
{
    alloc_t *a = alloc_find(ptr);
    if (!data || !a || a->kind == A_RESERVE)
        return CUDA_ERROR_INVALID_VALUE;
    int host = a->kind == A_HOST || a->kind == A_HOSTREG;
    switch (at) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        *(CUcontext *)data = (CUcontext)a->ctx;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned int *)data = host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        *(CUdeviceptr *)data = ptr;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        *(unsigned int *)data = a->kind == A_MANAGED;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *(int *)data = a->dev;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *(CUdeviceptr *)data = a->base;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *(size_t *)data = a->size;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    COUNT(cuPointerGetAttribute);
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    LOCK();
    CUresult rc = ptr_attr(data, attribute, ptr);
    UNLOCK();
    return rc;
}

CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes,
                                void **data, CUdeviceptr ptr)
{
    COUNT(cuPointerGetAttributes);
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (numAttributes == 0 || !attributes || !data)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    CUresult rc = CUDA_SUCCESS;
    for (unsigned int i = 0; i < numAttributes && rc == CUDA_SUCCESS; i++)
        rc = ptr_attr(data[i], attributes[i], ptr);
    UNLOCK();
    return rc;
}

CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
    MEM_ENTER(cuMemHostRegister_v2);
    if (!p || bytesize == 0) {
        rc = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    uint64_t b = (uintptr_t)p;
    size_t i = alloc_pos(b + bytesize - 1);
    if (i > 0 && g.allocs[i - 1]->base + g.allocs[i - 1]->size > b) {
        rc = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
        goto out;
    }
    alloc_t *a = alloc_add(b, bytesize, A_HOSTREG, c->dev);
    if (a)
        a->hflags = Flags;
    else
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    MEM_LEAVE();
}

CUresult cuMemHostUnregister(void *p)
{
    MEM_ENTER(cuMemHostUnregister);
    alloc_t *a = alloc_find((uintptr_t)p);
    if (!a || a->base != (uintptr_t)p || a->kind != A_HOSTREG)
        rc = CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    else
        alloc_free(a);
    MEM_LEAVE();
}

/* ---- copies and sets -------------------------------------------------- */

/* Under g.lock: is [p, p+n) memory the device can address, with `prot`? */
static int dev_range(uint64_t p, uint64_t n, int prot)
{
    alloc_t *a = alloc_find(p);
    if (!a || n > a->base + a->size - p)
        return 0;
    if (a->kind != A_RESERVE)
        return 1;
    for (vmap_t *m = a->maps; m; m = m->next)
        if (p >= m->ptr && p + n <= m->ptr + m->size)
            return (m->prot & prot) == prot;
    return 0;
}

/* Unified addressing: a pointer the fake knows must be valid for n bytes;
 * an unknown one is pageable host memory. */
static int any_range(uint64_t p, uint64_t n, int prot)
{
    if (!p)
        return 0;
    return alloc_find(p) ? dev_range(p, n, prot) : 1;
}

typedef enum { CP_HTOD, CP_DTOH, CP_DTOD, CP_ANY } cpkind_t;

static CUresult do_copy(cpkind_t k, uint64_t dst, uint64_t src, uint64_t n)
{
    if (n == 0)
        return CUDA_SUCCESS;
    int okd, oks;
    switch (k) {
    case CP_HTOD:
        okd = dev_range(dst, n, PROT_WRITE);
        oks = src != 0;
        break;
    case CP_DTOH:
        okd = dst != 0;
        oks = dev_range(src, n, PROT_READ);
        break;
    case CP_DTOD:
        okd = dev_range(dst, n, PROT_WRITE);
        oks = dev_range(src, n, PROT_READ);
        break;
    default:
        okd = any_range(dst, n, PROT_WRITE);
        oks = any_range(src, n, PROT_READ);
        break;
    }
    if (!okd || !oks)
        return CUDA_ERROR_INVALID_VALUE;
    memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, (size_t)n);
    return CUDA_SUCCESS;
}

/* A synchronous copy: runs after the context's queued kernels. */
static CUresult sync_copy(cpkind_t k, uint64_t dst, uint64_t src, uint64_t n)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    LOCK();
    ctx_t *c;
    CUresult rc = need_ctx(&c);
    if (rc == CUDA_SUCCESS)
        rc = do_copy(k, dst, src, n);
    UNLOCK();
    if (rc == CUDA_SUCCESS)
        sync_ctx_unlocked(c);
    return rc;
}

/* An asynchronous copy: done at once (kernels do not touch fake memory),
 * refused while the stream captures (the fake records kernels only). */
static CUresult async_copy(cpkind_t k, uint64_t dst, uint64_t src, uint64_t n, CUstream s, int pt)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    LOCK();
    ctx_t *c;
    CUresult rc = need_ctx(&c);
    if (rc == CUDA_SUCCESS) {
        stream_t *st = stream_resolve(s, c, pt, &rc);
        if (st && st->capture)
            rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        else if (st)
            rc = do_copy(k, dst, src, n);
    }
    UNLOCK();
    return rc;
}

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    COUNT(cuMemcpy);
    return sync_copy(CP_ANY, dst, src, ByteCount);
}

CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    COUNT(cuMemcpy_ptds);
    return sync_copy(CP_ANY, dst, src, ByteCount);
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
    COUNT(cuMemcpyAsync);
    return async_copy(CP_ANY, dst, src, ByteCount, hStream, 0);
}

CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
    COUNT(cuMemcpyAsync_ptsz);
    return async_copy(CP_ANY, dst, src, ByteCount, hStream, 1);
}

CUresult cuMemcpyHtoD(CUdeviceptr_v1 dstDevice, const void *srcHost, unsigned int ByteCount)
{
    COUNT(cuMemcpyHtoD);
    return sync_copy(CP_HTOD, dstDevice, (uintptr_t)srcHost, ByteCount);
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    COUNT(cuMemcpyHtoD_v2);
    return sync_copy(CP_HTOD, dstDevice, (uintptr_t)srcHost, ByteCount);
}

CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    COUNT(cuMemcpyHtoD_v2_ptds);
    return sync_copy(CP_HTOD, dstDevice, (uintptr_t)srcHost, ByteCount);
}

CUresult cuMemcpyDtoH(void *dstHost, CUdeviceptr_v1 srcDevice, unsigned int ByteCount)
{
    COUNT(cuMemcpyDtoH);
    return sync_copy(CP_DTOH, (uintptr_t)dstHost, srcDevice, ByteCount);
}

CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    COUNT(cuMemcpyDtoH_v2);
    return sync_copy(CP_DTOH, (uintptr_t)dstHost, srcDevice, ByteCount);
}

CUresult cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    COUNT(cuMemcpyDtoH_v2_ptds);
    return sync_copy(CP_DTOH, (uintptr_t)dstHost, srcDevice, ByteCount);
}

CUresult cuMemcpyDtoD(CUdeviceptr_v1 dstDevice, CUdeviceptr_v1 srcDevice, unsigned int ByteCount)
{
    COUNT(cuMemcpyDtoD);
    return sync_copy(CP_DTOD, dstDevice, srcDevice, ByteCount);
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
    COUNT(cuMemcpyDtoD_v2);
    return sync_copy(CP_DTOD, dstDevice, srcDevice, ByteCount);
}

CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
    COUNT(cuMemcpyDtoD_v2_ptds);
    return sync_copy(CP_DTOD, dstDevice, srcDevice, ByteCount);
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
                              CUstream hStream)
{
    COUNT(cuMemcpyHtoDAsync_v2);
    return async_copy(CP_HTOD, dstDevice, (uintptr_t)srcHost, ByteCount, hStream, 0);
}

CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
                                   CUstream hStream)
{
    COUNT(cuMemcpyHtoDAsync_v2_ptsz);
    return async_copy(CP_HTOD, dstDevice, (uintptr_t)srcHost, ByteCount, hStream, 1);
}

CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                              CUstream hStream)
{
    COUNT(cuMemcpyDtoHAsync_v2);
    return async_copy(CP_DTOH, (uintptr_t)dstHost, srcDevice, ByteCount, hStream, 0);
}

CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                   CUstream hStream)
{
    COUNT(cuMemcpyDtoHAsync_v2_ptsz);
    return async_copy(CP_DTOH, (uintptr_t)dstHost, srcDevice, ByteCount, hStream, 1);
}

CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                              CUstream hStream)
{
    COUNT(cuMemcpyDtoDAsync_v2);
    return async_copy(CP_DTOD, dstDevice, srcDevice, ByteCount, hStream, 0);
}

CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                                   CUstream hStream)
{
    COUNT(cuMemcpyDtoDAsync_v2_ptsz);
    return async_copy(CP_DTOD, dstDevice, srcDevice, ByteCount, hStream, 1);
}

/* The v1 (pre-3.2) asynchronous copies: 32-bit device pointers and sizes. */
CUresult cuMemcpyHtoDAsync(CUdeviceptr_v1 dstDevice, const void *srcHost, unsigned int ByteCount,
                           CUstream hStream)
{
    COUNT(cuMemcpyHtoDAsync);
    return async_copy(CP_HTOD, dstDevice, (uintptr_t)srcHost, ByteCount, hStream, 0);
}

CUresult cuMemcpyDtoHAsync(void *dstHost, CUdeviceptr_v1 srcDevice, unsigned int ByteCount,
                           CUstream hStream)
{
    COUNT(cuMemcpyDtoHAsync);
    return async_copy(CP_DTOH, (uintptr_t)dstHost, srcDevice, ByteCount, hStream, 0);
}

CUresult cuMemcpyDtoDAsync(CUdeviceptr_v1 dstDevice, CUdeviceptr_v1 srcDevice,
                           unsigned int ByteCount, CUstream hStream)
{
    COUNT(cuMemcpyDtoDAsync);
    return async_copy(CP_DTOD, dstDevice, srcDevice, ByteCount, hStream, 0);
}

static CUresult do_set(uint64_t dst, unsigned char v, uint64_t n)
{
    if (n == 0)
        return CUDA_SUCCESS;
    if (!dev_range(dst, n, PROT_WRITE))
        return CUDA_ERROR_INVALID_VALUE;
    memset((void *)(uintptr_t)dst, v, (size_t)n);
    return CUDA_SUCCESS;
}

static CUresult sync_set(uint64_t dst, unsigned char v, uint64_t n)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    LOCK();
    ctx_t *c;
    CUresult rc = need_ctx(&c);
    if (rc == CUDA_SUCCESS)
        rc = do_set(dst, v, n);
    UNLOCK();
    if (rc == CUDA_SUCCESS)
        sync_ctx_unlocked(c);
    return rc;
}

static CUresult async_set(uint64_t dst, unsigned char v, uint64_t n, CUstream s, int pt)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    LOCK();
    ctx_t *c;
    CUresult rc = need_ctx(&c);
    if (rc == CUDA_SUCCESS) {
        stream_t *st = stream_resolve(s, c, pt, &rc);
        if (st && st->capture)
            rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        else if (st)
            rc = do_set(dst, v, n);
    }
    UNLOCK();
    return rc;
}

CUresult cuMemsetD8(CUdeviceptr_v1 dstDevice, unsigned char uc, unsigned int N)
{
    COUNT(cuMemsetD8);
    return sync_set(dstDevice, uc, N);
}

CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    COUNT(cuMemsetD8_v2);
    return sync_set(dstDevice, uc, N);
}

CUresult cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    COUNT(cuMemsetD8_v2_ptds);
    return sync_set(dstDevice, uc, N);
}

CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)
{
    COUNT(cuMemsetD8Async);
    return async_set(dstDevice, uc, N, hStream, 0);
}

CUresult cuMemsetD8Async_ptsz(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)
{
    COUNT(cuMemsetD8Async_ptsz);
    return async_set(dstDevice, uc, N, hStream, 1);
}

/* 2D sets: Height rows of Width bytes, dstPitch apart. */
static CUresult do_set2d(uint64_t dst, uint64_t pitch, unsigned char v, uint64_t w, uint64_t h)
{
    if (w == 0 || h == 0)
        return CUDA_SUCCESS;
    if ((h > 1 && pitch < w) || (h > 1 && pitch > (UINT64_MAX - w) / (h - 1)))
        return CUDA_ERROR_INVALID_VALUE;
    if (!dev_range(dst, pitch * (h - 1) + w, PROT_WRITE))
        return CUDA_ERROR_INVALID_VALUE;
    for (uint64_t r = 0; r < h; r++)
        memset((void *)(uintptr_t)(dst + r * pitch), v, (size_t)w);
    return CUDA_SUCCESS;
}

static CUresult set2d(uint64_t dst, uint64_t pitch, unsigned char v, uint64_t w, uint64_t h,
                      int async, CUstream s, int pt)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    LOCK();
    ctx_t *c;
    CUresult rc = need_ctx(&c);
    if (rc == CUDA_SUCCESS && async) {
        stream_t *st = stream_resolve(s, c, pt, &rc);
        if (st && st->capture)
            rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    if (rc == CUDA_SUCCESS)
        rc = do_set2d(dst, pitch, v, w, h);
    UNLOCK();
    if (rc == CUDA_SUCCESS && !async)
        sync_ctx_unlocked(c);
    return rc;
}

CUresult cuMemsetD2D8(CUdeviceptr_v1 dstDevice, unsigned int dstPitch, unsigned char uc,
                      unsigned int Width, unsigned int Height)
{
    COUNT(cuMemsetD2D8);
    return set2d(dstDevice, dstPitch, uc, Width, Height, 0, NULL, 0);
}

CUresult cuMemsetD2D8_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                         size_t Height)
{
    COUNT(cuMemsetD2D8_v2);
    return set2d(dstDevice, dstPitch, uc, Width, Height, 0, NULL, 0);
}

CUresult cuMemsetD2D8_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc,
                              size_t Width, size_t Height)
{
    COUNT(cuMemsetD2D8_v2_ptds);
    return set2d(dstDevice, dstPitch, uc, Width, Height, 0, NULL, 1);
}

CUresult cuMemsetD2D8Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                           size_t Height, CUstream hStream)
{
    COUNT(cuMemsetD2D8Async);
    return set2d(dstDevice, dstPitch, uc, Width, Height, 1, hStream, 0);
}

CUresult cuMemsetD2D8Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc,
                                size_t Width, size_t Height, CUstream hStream)
{
    COUNT(cuMemsetD2D8Async_ptsz);
    return set2d(dstDevice, dstPitch, uc, Width, Height, 1, hStream, 1);
}

/* 16- and 32-bit sets (cuda.h: the destination, and a 2D set's pitch, aligned to the element's
 * size, else CUDA_ERROR_INVALID_VALUE): Height rows of Width elements of `v`, `pitch` bytes apart
 * (one row for a 1D set).  Same locking and stream rules as the 8-bit sets above. */
static CUresult do_setw(uint64_t dst, uint64_t pitch, uint32_t v, unsigned size, uint64_t w,
                        uint64_t h)
{
    if (dst % size || (h > 1 && pitch % size))
        return CUDA_ERROR_INVALID_VALUE;
    if (w == 0 || h == 0)
        return CUDA_SUCCESS;
    if (w > UINT64_MAX / size)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t row = w * size;
    if ((h > 1 && pitch < row) || (h > 1 && pitch > (UINT64_MAX - row) / (h - 1)))
        return CUDA_ERROR_INVALID_VALUE;
    if (!dev_range(dst, (h > 1 ? pitch * (h - 1) : 0) + row, PROT_WRITE))
        return CUDA_ERROR_INVALID_VALUE;
    uint16_t v16 = (uint16_t)v;
    for (uint64_t r = 0; r < h; r++) {
        unsigned char *p = (unsigned char *)(uintptr_t)(dst + r * pitch);
        for (uint64_t i = 0; i < w; i++)
            memcpy(p + i * size, size == 2 ? (const void *)&v16 : (const void *)&v, size);
    }
    return CUDA_SUCCESS;
}

static CUresult setw(uint64_t dst, uint64_t pitch, uint32_t v, unsigned size, uint64_t w,
                     uint64_t h, int async, CUstream s, int pt)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    LOCK();
    ctx_t *c;
    CUresult rc = need_ctx(&c);
    if (rc == CUDA_SUCCESS && async) {
        stream_t *st = stream_resolve(s, c, pt, &rc);
        if (st && st->capture)
            rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    if (rc == CUDA_SUCCESS)
        rc = do_setw(dst, pitch, v, size, w, h);
    UNLOCK();
    if (rc == CUDA_SUCCESS && !async)
        sync_ctx_unlocked(c);
    return rc;
}

/* SET1(name, element type, size, per-thread variant): a 1D set; SET2 a 2D one; A: async. */
#define SET1(name, T, size, pt)                                                                    \
    CUresult name(CUdeviceptr dstDevice, T v, size_t N)                                            \
    {                                                                                              \
        COUNT(name);                                                                               \
        return setw(dstDevice, 0, v, size, N, 1, 0, NULL, pt);                                     \
    }
#define SET1A(name, T, size, pt)                                                                   \
    CUresult name(CUdeviceptr dstDevice, T v, size_t N, CUstream hStream)                          \
    {                                                                                              \
        COUNT(name);                                                                               \
        return setw(dstDevice, 0, v, size, N, 1, 1, hStream, pt);                                  \
    }
#define SET2(name, T, size, pt)                                                                    \
    CUresult name(CUdeviceptr dstDevice, size_t dstPitch, T v, size_t Width, size_t Height)        \
    {                                                                                              \
        COUNT(name);                                                                               \
        return setw(dstDevice, dstPitch, v, size, Width, Height, 0, NULL, pt);                     \
    }
#define SET2A(name, T, size, pt)                                                                   \
    CUresult name(CUdeviceptr dstDevice, size_t dstPitch, T v, size_t Width, size_t Height,        \
                  CUstream hStream)                                                                \
    {                                                                                              \
        COUNT(name);                                                                               \
        return setw(dstDevice, dstPitch, v, size, Width, Height, 1, hStream, pt);                  \
    }

CUresult cuMemsetD16(CUdeviceptr_v1 dstDevice, unsigned short us, unsigned int N)
{
    COUNT(cuMemsetD16);
    return setw(dstDevice, 0, us, 2, N, 1, 0, NULL, 0);
}

CUresult cuMemsetD32(CUdeviceptr_v1 dstDevice, unsigned int ui, unsigned int N)
{
    COUNT(cuMemsetD32);
    return setw(dstDevice, 0, ui, 4, N, 1, 0, NULL, 0);
}

CUresult cuMemsetD2D16(CUdeviceptr_v1 dstDevice, unsigned int dstPitch, unsigned short us,
                       unsigned int Width, unsigned int Height)
{
    COUNT(cuMemsetD2D16);
    return setw(dstDevice, dstPitch, us, 2, Width, Height, 0, NULL, 0);
}

CUresult cuMemsetD2D32(CUdeviceptr_v1 dstDevice, unsigned int dstPitch, unsigned int ui,
                       unsigned int Width, unsigned int Height)
{
    COUNT(cuMemsetD2D32);
    return setw(dstDevice, dstPitch, ui, 4, Width, Height, 0, NULL, 0);
}

SET1(cuMemsetD16_v2, unsigned short, 2, 0)
SET1(cuMemsetD16_v2_ptds, unsigned short, 2, 1)
SET1A(cuMemsetD16Async, unsigned short, 2, 0)
SET1A(cuMemsetD16Async_ptsz, unsigned short, 2, 1)
SET1(cuMemsetD32_v2, unsigned int, 4, 0)
SET1(cuMemsetD32_v2_ptds, unsigned int, 4, 1)
SET1A(cuMemsetD32Async, unsigned int, 4, 0)
SET1A(cuMemsetD32Async_ptsz, unsigned int, 4, 1)
SET2(cuMemsetD2D16_v2, unsigned short, 2, 0)
SET2(cuMemsetD2D16_v2_ptds, unsigned short, 2, 1)
SET2A(cuMemsetD2D16Async, unsigned short, 2, 0)
SET2A(cuMemsetD2D16Async_ptsz, unsigned short, 2, 1)
SET2(cuMemsetD2D32_v2, unsigned int, 4, 0)
SET2(cuMemsetD2D32_v2_ptds, unsigned int, 4, 1)
SET2A(cuMemsetD2D32Async, unsigned int, 4, 0)
SET2A(cuMemsetD2D32Async_ptsz, unsigned int, 4, 1)
#undef SET1
#undef SET1A
#undef SET2
#undef SET2A

/* 2D copies between host, device and unified memory (arrays have no
 * storage in the fake: CUDA_ERROR_NOT_SUPPORTED). */
static CUresult side2d(CUmemorytype t, const void *host, CUdeviceptr dev, uint64_t x, uint64_t y,
                       uint64_t pitch, uint64_t w, uint64_t h, int prot, uint64_t *base)
{
    if (h > 1 && (pitch < w || pitch > (UINT64_MAX - w) / (h - 1)))
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t span = pitch * (h - 1) + w;
    switch (t) {
    case CU_MEMORYTYPE_HOST:
        if (!host)
            return CUDA_ERROR_INVALID_VALUE;
        *base = (uintptr_t)host + y * pitch + x;
        return CUDA_SUCCESS;
    case CU_MEMORYTYPE_DEVICE:
        *base = dev + y * pitch + x;
        return dev_range(*base, span, prot) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case CU_MEMORYTYPE_UNIFIED:
        *base = dev + y * pitch + x;
        return any_range(*base, span, prot) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case CU_MEMORYTYPE_ARRAY:
        return CUDA_ERROR_NOT_SUPPORTED;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

static CUresult do_copy2d(const CUDA_MEMCPY2D *p)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t w = p->WidthInBytes, h = p->Height, s = 0, d = 0;
    if (w == 0 || h == 0)
        return CUDA_SUCCESS;
    CUresult rc = side2d(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcXInBytes, p->srcY,
                         p->srcPitch, w, h, PROT_READ, &s);
    if (rc == CUDA_SUCCESS)
        rc = side2d(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstXInBytes, p->dstY,
                    p->dstPitch, w, h, PROT_WRITE, &d);
    for (uint64_t r = 0; rc == CUDA_SUCCESS && r < h; r++)
        memmove((void *)(uintptr_t)(d + r * p->dstPitch),
                (const void *)(uintptr_t)(s + r * p->srcPitch), (size_t)w);
    return rc;
}

/* A 2D or 3D copy (run with p, under the lock) in the current context, on stream s when
 * async (not while it captures), else synchronous with the context. */
static CUresult copy_nd(CUresult (*run)(const void *), const void *p, int async, CUstream s, int pt)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    LOCK();
    ctx_t *c;
    CUresult rc = need_ctx(&c);
    if (rc == CUDA_SUCCESS && async) {
        stream_t *st = stream_resolve(s, c, pt, &rc);
        if (st && st->capture)
            rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    if (rc == CUDA_SUCCESS)
        rc = run(p);
    UNLOCK();
    if (rc == CUDA_SUCCESS && !async)
        sync_ctx_unlocked(c);
    return rc;
}

static CUresult run2d(const void *p)
{
    return do_copy2d(p);
}

static CUresult copy2d(const CUDA_MEMCPY2D *p, int async, CUstream s, int pt)
{
    return copy_nd(run2d, p, async, s, pt);
}

CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *pCopy)
{
    COUNT(cuMemcpy2D_v2);
    return copy2d(pCopy, 0, NULL, 0);
}

CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *pCopy)
{
    COUNT(cuMemcpy2D_v2_ptds);
    return copy2d(pCopy, 0, NULL, 1);
}

CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *pCopy)
{
    COUNT(cuMemcpy2DUnaligned_v2);
    return copy2d(pCopy, 0, NULL, 0);
}

CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *pCopy)
{
    COUNT(cuMemcpy2DUnaligned_v2_ptds);
    return copy2d(pCopy, 0, NULL, 1);
}

CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{
    COUNT(cuMemcpy2DAsync_v2);
    return copy2d(pCopy, 1, hStream, 0);
}

CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{
    COUNT(cuMemcpy2DAsync_v2_ptsz);
    return copy2d(pCopy, 1, hStream, 1);
}

/* 3D copies: Depth slices of 2D copies, each side's slices Pitch * Height apart (Height may
 * be 0 when Depth is 1, as cuda.h says); arrays: CUDA_ERROR_NOT_SUPPORTED as in 2D. */
static CUresult side3d(CUmemorytype t, const void *host, CUdeviceptr dev, uint64_t x, uint64_t y,
                       uint64_t z, uint64_t pitch, uint64_t height, uint64_t w, uint64_t h,
                       uint64_t d, int prot, uint64_t *base)
{
    if ((d > 1 || z) && height < h)
        return CUDA_ERROR_INVALID_VALUE;
    /* Slice z row y is row z * height + y; the copy's rows up to the last slice's last row are
     * (d - 1) * height + h rows of a 2D side, whose span side2d checks. */
    if ((height && (z > UINT64_MAX / height || d - 1 > UINT64_MAX / height)) ||
        z * height > UINT64_MAX - y || (d - 1) * height > UINT64_MAX - h)
        return CUDA_ERROR_INVALID_VALUE;
    return side2d(t, host, dev, x, z * height + y, pitch, w, (d - 1) * height + h, prot, base);
}

static CUresult do_copy3d(const CUDA_MEMCPY3D *p)
{
    if (!p || p->reserved0 || p->reserved1 || p->srcLOD || p->dstLOD)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t w = p->WidthInBytes, h = p->Height, dp = p->Depth, s = 0, d = 0;
    if (w == 0 || h == 0 || dp == 0)
        return CUDA_SUCCESS;
    CUresult rc = side3d(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcXInBytes, p->srcY,
                         p->srcZ, p->srcPitch, p->srcHeight, w, h, dp, PROT_READ, &s);
    if (rc == CUDA_SUCCESS)
        rc = side3d(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstXInBytes, p->dstY, p->dstZ,
                    p->dstPitch, p->dstHeight, w, h, dp, PROT_WRITE, &d);
    for (uint64_t z = 0; rc == CUDA_SUCCESS && z < dp; z++)
        for (uint64_t r = 0; r < h; r++)
            memmove((void *)(uintptr_t)(d + z * p->dstPitch * p->dstHeight + r * p->dstPitch),
                    (const void *)(uintptr_t)(s + z * p->srcPitch * p->srcHeight + r * p->srcPitch),
                    (size_t)w);
    return rc;
}

static CUresult run3d(const void *p)
{
    return do_copy3d(p);
}

static CUresult copy3d(const CUDA_MEMCPY3D *p, int async, CUstream s, int pt)
{
    return copy_nd(run3d, p, async, s, pt);
}

CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D *pCopy)
{
    COUNT(cuMemcpy3D_v2);
    return copy3d(pCopy, 0, NULL, 0);
}

CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D *pCopy)
{
    COUNT(cuMemcpy3D_v2_ptds);
    return copy3d(pCopy, 0, NULL, 1);
}

CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *pCopy, CUstream hStream)
{
    COUNT(cuMemcpy3DAsync_v2);
    return copy3d(pCopy, 1, hStream, 0);
}

CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *pCopy, CUstream hStream)
{
    COUNT(cuMemcpy3DAsync_v2_ptsz);
    return copy3d(pCopy, 1, hStream, 1);
}

/* The v1 (pre-3.2) 2D and 3D copies: the same copy once its 32-bit fields are widened. */
static const CUDA_MEMCPY2D *widen2d(const CUDA_MEMCPY2D_v1 *p, CUDA_MEMCPY2D *w)
{
    if (!p)
        return NULL;
    memset(w, 0, sizeof *w);
    w->srcXInBytes = p->srcXInBytes;
    w->srcY = p->srcY;
    w->srcMemoryType = p->srcMemoryType;
    w->srcHost = p->srcHost;
    w->srcDevice = p->srcDevice;
    w->srcArray = p->srcArray;
    w->srcPitch = p->srcPitch;
    w->dstXInBytes = p->dstXInBytes;
    w->dstY = p->dstY;
    w->dstMemoryType = p->dstMemoryType;
    w->dstHost = p->dstHost;
    w->dstDevice = p->dstDevice;
    w->dstArray = p->dstArray;
    w->dstPitch = p->dstPitch;
    w->WidthInBytes = p->WidthInBytes;
    w->Height = p->Height;
    return w;
}

static const CUDA_MEMCPY3D *widen3d(const CUDA_MEMCPY3D_v1 *p, CUDA_MEMCPY3D *w)
{
    if (!p)
        return NULL;
    memset(w, 0, sizeof *w);
    w->srcXInBytes = p->srcXInBytes;
    w->srcY = p->srcY;
    w->srcZ = p->srcZ;
    w->srcLOD = p->srcLOD;
    w->srcMemoryType = p->srcMemoryType;
    w->srcHost = p->srcHost;
    w->srcDevice = p->srcDevice;
    w->srcArray = p->srcArray;
    w->reserved0 = p->reserved0;
    w->srcPitch = p->srcPitch;
    w->srcHeight = p->srcHeight;
    w->dstXInBytes = p->dstXInBytes;
    w->dstY = p->dstY;
    w->dstZ = p->dstZ;
    w->dstLOD = p->dstLOD;
    w->dstMemoryType = p->dstMemoryType;
    w->dstHost = p->dstHost;
    w->dstDevice = p->dstDevice;
    w->dstArray = p->dstArray;
    w->reserved1 = p->reserved1;
    w->dstPitch = p->dstPitch;
    w->dstHeight = p->dstHeight;
    w->WidthInBytes = p->WidthInBytes;
    w->Height = p->Height;
    w->Depth = p->Depth;
    return w;
}

CUresult cuMemcpy2D(const CUDA_MEMCPY2D_v1 *pCopy)
{
    COUNT(cuMemcpy2D);
    CUDA_MEMCPY2D w;
    return copy2d(widen2d(pCopy, &w), 0, NULL, 0);
}

CUresult cuMemcpy2DUnaligned(const CUDA_MEMCPY2D_v1 *pCopy)
{
    COUNT(cuMemcpy2DUnaligned);
    CUDA_MEMCPY2D w;
    return copy2d(widen2d(pCopy, &w), 0, NULL, 0);
}

CUresult cuMemcpy2DAsync(const CUDA_MEMCPY2D_v1 *pCopy, CUstream hStream)
{
    COUNT(cuMemcpy2DAsync);
    CUDA_MEMCPY2D w;
    return copy2d(widen2d(pCopy, &w), 1, hStream, 0);
}

CUresult cuMemcpy3D(const CUDA_MEMCPY3D_v1 *pCopy)
{
    COUNT(cuMemcpy3D);
    CUDA_MEMCPY3D w;
    return copy3d(widen3d(pCopy, &w), 0, NULL, 0);
}

CUresult cuMemcpy3DAsync(const CUDA_MEMCPY3D_v1 *pCopy, CUstream hStream)
{
    COUNT(cuMemcpy3DAsync);
    CUDA_MEMCPY3D w;
    return copy3d(widen3d(pCopy, &w), 1, hStream, 0);
}

/* Batches of 1D copies (cuMemcpyBatchAsync): every copy and its attributes are checked before
 * any is done (a refused batch copies nothing; *failIdx, when asked and the arrays are given,
 * names the copy to blame, or SIZE_MAX when the batch itself is wrong), then each is done at once,
 * as the fake's other asynchronous copies are.  As cuda.h says: count > 0, numAttrs from 1 to
 * count, attrsIdxs starting at 0, each above the one before and below count, a valid source access
 * order, flags 0 or CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE, and not the legacy stream. */
static CUresult copy_batch(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                           CUmemcpyAttributes *attrs, size_t *idxs, size_t nattrs, size_t *fail,
                           CUstream s, int pt)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    /* No arrays or no copy: refused before the later arguments are looked at (test_procaddr
     * calls every entry point with its first six arguments NULL and the rest undefined). */
    if (!dsts || !srcs || !sizes || !attrs || !idxs || count == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (fail)
        *fail = SIZE_MAX;
    if (nattrs == 0 || nattrs > count || s == NULL || s == CU_STREAM_LEGACY)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t k = 0; k < nattrs; k++) {
        if ((k == 0 && idxs[0] != 0) || (k > 0 && idxs[k] <= idxs[k - 1]) || idxs[k] >= count ||
            attrs[k].srcAccessOrder < CU_MEMCPY_SRC_ACCESS_ORDER_STREAM ||
            attrs[k].srcAccessOrder > CU_MEMCPY_SRC_ACCESS_ORDER_ANY ||
            (attrs[k].flags & ~(unsigned)CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE))
            return CUDA_ERROR_INVALID_VALUE;
    }
    LOCK();
    ctx_t *c;
    CUresult rc = need_ctx(&c);
    stream_t *st = rc == CUDA_SUCCESS ? stream_resolve(s, c, pt, &rc) : NULL;
    if (st && st->capture)
        rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    for (size_t i = 0; st && rc == CUDA_SUCCESS && i < count; i++) {
        if (sizes[i] && (!any_range(dsts[i], sizes[i], PROT_WRITE) ||
                         !any_range(srcs[i], sizes[i], PROT_READ))) {
            rc = CUDA_ERROR_INVALID_VALUE;
            if (fail)
                *fail = i;
        }
    }
    for (size_t i = 0; st && rc == CUDA_SUCCESS && i < count; i++)
        rc = do_copy(CP_ANY, dsts[i], srcs[i], sizes[i]);
    UNLOCK();
    return rc;
}

CUresult cuMemcpyBatchAsync(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                            CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
                            size_t *failIdx, CUstream hStream)
{
    COUNT(cuMemcpyBatchAsync);
    return copy_batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, hStream, 0);
}

CUresult cuMemcpyBatchAsync_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                 CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
                                 size_t *failIdx, CUstream hStream)
{
    COUNT(cuMemcpyBatchAsync_ptsz);
    return copy_batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, hStream, 1);
}

CUresult cuMemcpyBatchAsync_v2(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                               CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
                               CUstream hStream)
{
    COUNT(cuMemcpyBatchAsync_v2);
    return copy_batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, NULL, hStream, 0);
}

CUresult cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,
                                    size_t count, CUmemcpyAttributes *attrs, size_t *attrsIdxs,
                                    size_t numAttrs, CUstream hStream)
{
    COUNT(cuMemcpyBatchAsync_v2_ptsz);
    return copy_batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, NULL, hStream, 1);
}

/* 3D peer copies: a 3D copy whose device sides name live contexts (a host or array side's
 * context is not looked at); memory is one address space. */
static CUresult run3dpeer(const void *v)
{
    const CUDA_MEMCPY3D_PEER *p = v;
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    if ((p->srcMemoryType == CU_MEMORYTYPE_DEVICE && !obj_find(p->srcContext, K_CTX)) ||
        (p->dstMemoryType == CU_MEMORYTYPE_DEVICE && !obj_find(p->dstContext, K_CTX)))
        return CUDA_ERROR_INVALID_CONTEXT;
    CUDA_MEMCPY3D w;
    memset(&w, 0, sizeof w);
    w.srcXInBytes = p->srcXInBytes;
    w.srcY = p->srcY;
    w.srcZ = p->srcZ;
    w.srcLOD = p->srcLOD;
    w.srcMemoryType = p->srcMemoryType;
    w.srcHost = p->srcHost;
    w.srcDevice = p->srcDevice;
    w.srcArray = p->srcArray;
    w.srcPitch = p->srcPitch;
    w.srcHeight = p->srcHeight;
    w.dstXInBytes = p->dstXInBytes;
    w.dstY = p->dstY;
    w.dstZ = p->dstZ;
    w.dstLOD = p->dstLOD;
    w.dstMemoryType = p->dstMemoryType;
    w.dstHost = p->dstHost;
    w.dstDevice = p->dstDevice;
    w.dstArray = p->dstArray;
    w.dstPitch = p->dstPitch;
    w.dstHeight = p->dstHeight;
    w.WidthInBytes = p->WidthInBytes;
    w.Height = p->Height;
    w.Depth = p->Depth;
    return do_copy3d(&w);
}

CUresult cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER *pCopy)
{
    COUNT(cuMemcpy3DPeer);
    return copy_nd(run3dpeer, pCopy, 0, NULL, 0);
}

CUresult cuMemcpy3DPeer_ptds(const CUDA_MEMCPY3D_PEER *pCopy)
{
    COUNT(cuMemcpy3DPeer_ptds);
    return copy_nd(run3dpeer, pCopy, 0, NULL, 1);
}

CUresult cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream)
{
    COUNT(cuMemcpy3DPeerAsync);
    return copy_nd(run3dpeer, pCopy, 1, hStream, 0);
}

CUresult cuMemcpy3DPeerAsync_ptsz(const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream)
{
    COUNT(cuMemcpy3DPeerAsync_ptsz);
    return copy_nd(run3dpeer, pCopy, 1, hStream, 1);
}

/* Peer copies: both contexts must be live; memory is one address space. */
static CUresult peer(uint64_t dst, CUcontext dc, uint64_t src, CUcontext sc, uint64_t n, int async,
                     CUstream s, int pt)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    LOCK();
    ctx_t *c = cur_ctx();
    CUresult rc = CUDA_SUCCESS;
    if (!obj_find(dc, K_CTX) || !obj_find(sc, K_CTX))
        rc = CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CUDA_SUCCESS && async) {
        stream_t *st = stream_resolve(s, c ? c : (ctx_t *)sc, pt, &rc);
        if (st && st->capture)
            rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    if (rc == CUDA_SUCCESS)
        rc = do_copy(CP_DTOD, dst, src, n);
    UNLOCK();
    if (rc == CUDA_SUCCESS && !async) {
        sync_ctx_unlocked((ctx_t *)sc);
        sync_ctx_unlocked((ctx_t *)dc);
    }
    return rc;
}

CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                      CUcontext srcContext, size_t ByteCount)
{
    COUNT(cuMemcpyPeer);
    return peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, 0, NULL, 0);
}

CUresult cuMemcpyPeer_ptds(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                           CUcontext srcContext, size_t ByteCount)
{
    COUNT(cuMemcpyPeer_ptds);
    return peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, 0, NULL, 1);
}

CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                           CUcontext srcContext, size_t ByteCount, CUstream hStream)
{
    COUNT(cuMemcpyPeerAsync);
    return peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, 1, hStream, 0);
}

CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                                CUcontext srcContext, size_t ByteCount, CUstream hStream)
{
    COUNT(cuMemcpyPeerAsync_ptsz);
    return peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, 1, hStream, 1);
}

CUresult cuMemHostGetFlags(unsigned int *pFlags, void *p)
{
    MEM_ENTER(cuMemHostGetFlags);
    alloc_t *a = alloc_find((uintptr_t)p);
    if (!pFlags || !a || (a->kind != A_HOST && a->kind != A_HOSTREG))
        rc = CUDA_ERROR_INVALID_VALUE;
    else
        *pFlags = a->hflags;
    MEM_LEAVE();
}

/* ---- stream memory operations (README "Stream memory operations") ------
 * A 32- or 64-bit word of device memory written or waited for in stream order.  Writes are done
 * at once, as the fake's copies are (kernels do not touch fake memory).  A wait is checked at
 * once: its condition met, it succeeds; not met, the fake answers CUDA_ERROR_NOT_SUPPORTED (a
 * stream held until another stream or the host writes the word is not modelled).  Refused with
 * nothing written: a word not aligned to its size or not in device memory the process holds,
 * unknown flags (v2: no CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER), a stream that captures. */

typedef enum { MO_WRITE, MO_WAIT } mokind_t;

static int memop_flags_ok(mokind_t k, unsigned flags, int v2)
{
    if (k == MO_WRITE)
        return (flags & ~(v2 ? 0u : (unsigned)CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER)) == 0;
    return (flags & ~(0x3u | (unsigned)CU_STREAM_WAIT_VALUE_FLUSH)) == 0;
}

static int memop_addr_ok(uint64_t addr, unsigned size)
{
    return addr % size == 0 && dev_range(addr, size, PROT_READ | PROT_WRITE);
}

/* Is wait condition `flags` met by the word `cur` of `size` bytes against `v`? */
static int memop_met(uint64_t cur, uint64_t v, unsigned size, unsigned flags)
{
    uint64_t mask = size == 4 ? 0xffffffffull : ~0ull;
    cur &= mask;
    v &= mask;
    switch (flags & 0x3u) {
    case CU_STREAM_WAIT_VALUE_GEQ:
        return size == 4 ? (int32_t)(uint32_t)(cur - v) >= 0 : (int64_t)(cur - v) >= 0;
    case CU_STREAM_WAIT_VALUE_EQ:
        return cur == v;
    case CU_STREAM_WAIT_VALUE_AND:
        return (cur & v) != 0;
    default: /* NOR */
        return (~(cur | v) & mask) != 0;
    }
}

static uint64_t word_get(uint64_t addr, unsigned size)
{
    uint32_t w32;
    uint64_t w64;
    if (size == 4) {
        memcpy(&w32, (const void *)(uintptr_t)addr, 4);
        return w32;
    }
    memcpy(&w64, (const void *)(uintptr_t)addr, 8);
    return w64;
}

static void word_put(uint64_t addr, uint64_t v, unsigned size)
{
    uint32_t w32 = (uint32_t)v;
    if (size == 4)
        memcpy((void *)(uintptr_t)addr, &w32, 4);
    else
        memcpy((void *)(uintptr_t)addr, &v, 8);
}

/* Under g.lock: the stream of a memory operation, NULL with *rc set when there is none or it
 * captures. */
static stream_t *memop_stream(CUstream s, int pt, CUresult *rc)
{
    ctx_t *c;
    *rc = need_ctx(&c);
    if (*rc != CUDA_SUCCESS)
        return NULL;
    stream_t *st = stream_resolve(s, c, pt, rc);
    if (st && st->capture) {
        *rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        return NULL;
    }
    return st;
}

static CUresult memop(mokind_t k, CUstream s, uint64_t addr, uint64_t v, unsigned size,
                      unsigned flags, int v2, int pt)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!memop_flags_ok(k, flags, v2))
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    CUresult rc;
    stream_t *st = memop_stream(s, pt, &rc);
    if (st && !memop_addr_ok(addr, size))
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (st && k == MO_WRITE)
        word_put(addr, v, size);
    else if (st && !memop_met(word_get(addr, size), v, size, flags))
        rc = CUDA_ERROR_NOT_SUPPORTED;
    UNLOCK();
    return rc;
}

#define MEMOP_ENTRY(name, kind, type, size, v2, pt)                                                \
    CUresult name(CUstream stream, CUdeviceptr addr, type value, unsigned int flags)               \
    {                                                                                              \
        COUNT(name);                                                                               \
        return memop(kind, stream, addr, value, size, flags, v2, pt);                              \
    }
MEMOP_ENTRY(cuStreamWriteValue32, MO_WRITE, cuuint32_t, 4, 0, 0)
MEMOP_ENTRY(cuStreamWriteValue32_ptsz, MO_WRITE, cuuint32_t, 4, 0, 1)
MEMOP_ENTRY(cuStreamWriteValue32_v2, MO_WRITE, cuuint32_t, 4, 1, 0)
MEMOP_ENTRY(cuStreamWriteValue32_v2_ptsz, MO_WRITE, cuuint32_t, 4, 1, 1)
MEMOP_ENTRY(cuStreamWaitValue32, MO_WAIT, cuuint32_t, 4, 0, 0)
MEMOP_ENTRY(cuStreamWaitValue32_ptsz, MO_WAIT, cuuint32_t, 4, 0, 1)
MEMOP_ENTRY(cuStreamWaitValue32_v2, MO_WAIT, cuuint32_t, 4, 1, 0)
MEMOP_ENTRY(cuStreamWaitValue32_v2_ptsz, MO_WAIT, cuuint32_t, 4, 1, 1)
MEMOP_ENTRY(cuStreamWriteValue64, MO_WRITE, cuuint64_t, 8, 0, 0)
MEMOP_ENTRY(cuStreamWriteValue64_ptsz, MO_WRITE, cuuint64_t, 8, 0, 1)
MEMOP_ENTRY(cuStreamWriteValue64_v2, MO_WRITE, cuuint64_t, 8, 1, 0)
MEMOP_ENTRY(cuStreamWriteValue64_v2_ptsz, MO_WRITE, cuuint64_t, 8, 1, 1)
MEMOP_ENTRY(cuStreamWaitValue64, MO_WAIT, cuuint64_t, 8, 0, 0)
MEMOP_ENTRY(cuStreamWaitValue64_ptsz, MO_WAIT, cuuint64_t, 8, 0, 1)
MEMOP_ENTRY(cuStreamWaitValue64_v2, MO_WAIT, cuuint64_t, 8, 1, 0)
MEMOP_ENTRY(cuStreamWaitValue64_v2_ptsz, MO_WAIT, cuuint64_t, 8, 1, 1)

/* Fewer than 256 operations (cuda.h) per batch. */
#define MEMOP_BATCH_MAX 256u

/* The word of `size` bytes at addr as it is after the batch's writes before op[i]. */
static uint64_t batch_word(const CUstreamBatchMemOpParams *op, unsigned i, uint64_t addr,
                           unsigned size)
{
    unsigned char b[8];
    memcpy(b, (const void *)(uintptr_t)addr, size);
    for (unsigned j = 0; j < i; j++) {
        if (op[j].operation != CU_STREAM_MEM_OP_WRITE_VALUE_32 &&
            op[j].operation != CU_STREAM_MEM_OP_WRITE_VALUE_64)
            continue;
        unsigned wsize = op[j].operation == CU_STREAM_MEM_OP_WRITE_VALUE_32 ? 4 : 8;
        uint64_t wa = op[j].writeValue.address;
        unsigned char w[8];
        if (wsize == 4) {
            uint32_t v = op[j].writeValue.value;
            memcpy(w, &v, 4);
        } else {
            memcpy(w, &op[j].writeValue.value64, 8);
        }
        for (unsigned k = 0; k < size; k++)
            if (addr + k >= wa && addr + k < wa + wsize)
                b[k] = w[addr + k - wa];
    }
    uint32_t w32;
    uint64_t w64;
    if (size == 4) {
        memcpy(&w32, b, 4);
        return w32;
    }
    memcpy(&w64, b, 8);
    return w64;
}

/* Every operation is checked (and each wait against the memory as the batch's earlier writes
 * leave it) before any is done: a refused batch writes nothing. */
static CUresult batch(CUstream s, unsigned count, CUstreamBatchMemOpParams *op, unsigned flags,
                      int v2, int pt)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (flags != 0 || count >= MEMOP_BATCH_MAX || (count && !op))
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    CUresult rc;
    stream_t *st = memop_stream(s, pt, &rc);
    for (unsigned i = 0; st && rc == CUDA_SUCCESS && i < count; i++) {
        switch (op[i].operation) {
        case CU_STREAM_MEM_OP_WRITE_VALUE_32:
        case CU_STREAM_MEM_OP_WRITE_VALUE_64: {
            unsigned size = op[i].operation == CU_STREAM_MEM_OP_WRITE_VALUE_32 ? 4 : 8;
            if (!memop_flags_ok(MO_WRITE, op[i].writeValue.flags, v2) ||
                !memop_addr_ok(op[i].writeValue.address, size))
                rc = CUDA_ERROR_INVALID_VALUE;
            break;
        }
        case CU_STREAM_MEM_OP_WAIT_VALUE_32:
        case CU_STREAM_MEM_OP_WAIT_VALUE_64: {
            unsigned size = op[i].operation == CU_STREAM_MEM_OP_WAIT_VALUE_32 ? 4 : 8;
            uint64_t a = op[i].waitValue.address;
            uint64_t v = size == 4 ? op[i].waitValue.value : op[i].waitValue.value64;
            if (!memop_flags_ok(MO_WAIT, op[i].waitValue.flags, v2) || !memop_addr_ok(a, size))
                rc = CUDA_ERROR_INVALID_VALUE;
            else if (!memop_met(batch_word(op, i, a, size), v, size, op[i].waitValue.flags))
                rc = CUDA_ERROR_NOT_SUPPORTED;
            break;
        }
        case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES:
            if (op[i].flushRemoteWrites.flags != 0)
                rc = CUDA_ERROR_INVALID_VALUE;
            break;
        case CU_STREAM_MEM_OP_BARRIER:
            if (!v2 || op[i].memoryBarrier.flags > 1)
                rc = CUDA_ERROR_INVALID_VALUE;
            break;
        default:
            rc = CUDA_ERROR_INVALID_VALUE;
            break;
        }
    }
    for (unsigned i = 0; st && rc == CUDA_SUCCESS && i < count; i++) {
        if (op[i].operation == CU_STREAM_MEM_OP_WRITE_VALUE_32)
            word_put(op[i].writeValue.address, op[i].writeValue.value, 4);
        else if (op[i].operation == CU_STREAM_MEM_OP_WRITE_VALUE_64)
            word_put(op[i].writeValue.address, op[i].writeValue.value64, 8);
    }
    UNLOCK();
    return rc;
}

#define BATCH_ENTRY(name, v2, pt)                                                                  \
    CUresult name(CUstream stream, unsigned int count, CUstreamBatchMemOpParams *paramArray,       \
                  unsigned int flags)                                                              \
    {                                                                                              \
        COUNT(name);                                                                               \
        return batch(stream, count, paramArray, flags, v2, pt);                                    \
    }
BATCH_ENTRY(cuStreamBatchMemOp, 0, 0)
BATCH_ENTRY(cuStreamBatchMemOp_ptsz, 0, 1)
BATCH_ENTRY(cuStreamBatchMemOp_v2, 1, 0)
BATCH_ENTRY(cuStreamBatchMemOp_v2_ptsz, 1, 1)

/* ---- unified memory hints and migration (README "Managed memory") ------ */

static CUresult managed_range(uint64_t p, uint64_t n)
{
    alloc_t *a = alloc_find(p);
    if (n == 0 || !a || a->kind != A_MANAGED || n > a->base + a->size - p)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

static int loc_ok(CUmemLocation l)
{
    return (l.type == CU_MEM_LOCATION_TYPE_DEVICE && dev_ok(l.id)) ||
           l.type == CU_MEM_LOCATION_TYPE_HOST || l.type == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
           l.type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT;
}

static CUresult advise(uint64_t p, uint64_t n, CUmem_advise a, CUmemLocation l)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (a < CU_MEM_ADVISE_SET_READ_MOSTLY || a > CU_MEM_ADVISE_UNSET_ACCESSED_BY)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    CUresult rc = loc_ok(l) ? managed_range(p, n) : CUDA_ERROR_INVALID_DEVICE;
    alloc_t *m = rc == CUDA_SUCCESS ? alloc_find(p) : NULL;
    if (m && a == CU_MEM_ADVISE_SET_PREFERRED_LOCATION) {
        m->pref_type = (int)l.type;
        m->pref_id = l.type == CU_MEM_LOCATION_TYPE_DEVICE ? l.id : 0;
    } else if (m && a == CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION) {
        m->pref_type = m->pref_id = 0;
    } else if (m && (a == CU_MEM_ADVISE_SET_ACCESSED_BY || a == CU_MEM_ADVISE_UNSET_ACCESSED_BY) &&
               l.type == CU_MEM_LOCATION_TYPE_DEVICE && l.id < 64) {
        if (a == CU_MEM_ADVISE_SET_ACCESSED_BY)
            m->accessed_by |= 1ull << l.id;
        else
            m->accessed_by &= ~(1ull << l.id);
    }
    UNLOCK();
    return rc;
}

/* Under g.lock: migrate managed allocation a to location l (whole allocations: see the
 * README).  To a device: charged there when it fits, else its pages stay where they are (a
 * driver would evict other managed pages; this fake has none to evict but its own).  To the
 * host: the device's charge is given back. */
static void migrate(alloc_t *a, CUmemLocation l)
{
    int to = l.type == CU_MEM_LOCATION_TYPE_DEVICE ? l.id : -1;
    if (to == a->resident)
        return;
    uint64_t ch = roundup(a->size, g.cfg.alloc_granule);
    if (to >= 0 && charge(to, ch) < 0)
        return;
    if (a->resident >= 0) {
        managed_resident(a->dev, a->charged, 0);
        uncharge(a->dev, a->charged);
    }
    a->resident = to;
    a->charged = to >= 0 ? ch : 0;
    if (to >= 0) {
        a->dev = to;
        managed_resident(to, ch, 1);
    }
}

static CUmemLocation dev_loc(CUdevice d)
{
    CUmemLocation l = {d == CU_DEVICE_CPU ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE,
                       d == CU_DEVICE_CPU ? 0 : d};
    return l;
}

CUresult cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUdevice device)
{
    COUNT(cuMemAdvise);
    return advise(devPtr, count, advice, dev_loc(device));
}

CUresult cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice,
                        CUmemLocation location)
{
    COUNT(cuMemAdvise_v2);
    return advise(devPtr, count, advice, location);
}

static CUresult prefetch(uint64_t p, uint64_t n, CUmemLocation l, unsigned flags, CUstream s,
                         int pt)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    ctx_t *c = cur_ctx();
    CUresult rc = CUDA_SUCCESS;
    stream_t *st = stream_resolve(s, c, pt, &rc);
    if (st && st->capture)
        rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    else if (st)
        rc = loc_ok(l) ? managed_range(p, n) : CUDA_ERROR_INVALID_DEVICE;
    if (st && rc == CUDA_SUCCESS)
        migrate(alloc_find(p), l);
    UNLOCK();
    return rc;
}

CUresult cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream)
{
    COUNT(cuMemPrefetchAsync);
    return prefetch(devPtr, count, dev_loc(dstDevice), 0, hStream, 0);
}

CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr devPtr, size_t count, CUdevice dstDevice,
                                 CUstream hStream)
{
    COUNT(cuMemPrefetchAsync_ptsz);
    return prefetch(devPtr, count, dev_loc(dstDevice), 0, hStream, 1);
}

CUresult cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location,
                               unsigned int flags, CUstream hStream)
{
    COUNT(cuMemPrefetchAsync_v2);
    return prefetch(devPtr, count, location, flags, hStream, 0);
}

CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr devPtr, size_t count, CUmemLocation location,
                                    unsigned int flags, CUstream hStream)
{
    COUNT(cuMemPrefetchAsync_v2_ptsz);
    return prefetch(devPtr, count, location, flags, hStream, 1);
}

/* cuMemPrefetchBatchAsync and cuMemDiscardAndPrefetchBatchAsync (CUDA 13): each operation as
 * cuMemPrefetchAsync_v2 to its location (locs[k] for the operations from idxs[k] on), in
 * order, stopping at the first that fails (the fake does not undo the ones before).  The
 * discard of the second keeps nothing to discard (the fake's pages hold no state to drop). */
static CUresult prefetch_batch(CUdeviceptr *dptrs, size_t *sizes, size_t count, CUmemLocation *locs,
                               size_t *idxs, size_t nlocs, unsigned long long flags, CUstream s,
                               int pt)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!dptrs || !sizes || !locs || !idxs || count == 0 || nlocs == 0 || nlocs > count ||
        flags != 0 || idxs[0] != 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t k = 1; k < nlocs; k++)
        if (idxs[k] <= idxs[k - 1] || idxs[k] >= count)
            return CUDA_ERROR_INVALID_VALUE;
    size_t k = 0;
    for (size_t i = 0; i < count; i++) {
        while (k + 1 < nlocs && idxs[k + 1] <= i)
            k++;
        CUresult rc = prefetch(dptrs[i], sizes[i], locs[k], 0, s, pt);
        if (rc != CUDA_SUCCESS)
            return rc;
    }
    return CUDA_SUCCESS;
}

CUresult cuMemPrefetchBatchAsync(CUdeviceptr *dptrs, size_t *sizes, size_t count,
                                 CUmemLocation *prefetchLocs, size_t *prefetchLocIdxs,
                                 size_t numPrefetchLocs, unsigned long long flags, CUstream hStream)
{
    COUNT(cuMemPrefetchBatchAsync);
    return prefetch_batch(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs,
                          flags, hStream, 0);
}

CUresult cuMemPrefetchBatchAsync_ptsz(CUdeviceptr *dptrs, size_t *sizes, size_t count,
                                      CUmemLocation *prefetchLocs, size_t *prefetchLocIdxs,
                                      size_t numPrefetchLocs, unsigned long long flags,
                                      CUstream hStream)
{
    COUNT(cuMemPrefetchBatchAsync_ptsz);
    return prefetch_batch(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs,
                          flags, hStream, 1);
}

CUresult cuMemDiscardAndPrefetchBatchAsync(CUdeviceptr *dptrs, size_t *sizes, size_t count,
                                           CUmemLocation *prefetchLocs, size_t *prefetchLocIdxs,
                                           size_t numPrefetchLocs, unsigned long long flags,
                                           CUstream hStream)
{
    COUNT(cuMemDiscardAndPrefetchBatchAsync);
    return prefetch_batch(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs,
                          flags, hStream, 0);
}

CUresult cuMemDiscardAndPrefetchBatchAsync_ptsz(CUdeviceptr *dptrs, size_t *sizes, size_t count,
                                                CUmemLocation *prefetchLocs,
                                                size_t *prefetchLocIdxs, size_t numPrefetchLocs,
                                                unsigned long long flags, CUstream hStream)
{
    COUNT(cuMemDiscardAndPrefetchBatchAsync_ptsz);
    return prefetch_batch(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs,
                          flags, hStream, 1);
}

/* ---- stream-ordered allocation ---------------------------------------- */

static CUresult alloc_async(CUdeviceptr *dptr, size_t size, CUmemoryPool hp, int from_pool,
                            CUstream s, int pt)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    LOCK();
    ctx_t *c;
    CUresult rc = need_ctx(&c);
    if (rc != CUDA_SUCCESS)
        goto out;
    stream_t *st = stream_resolve(s, c, pt, &rc);
    if (!st)
        goto out;
    if (st->capture) {
        rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        goto out;
    }
    pool_t *p;
    if (from_pool) {
        p = (pool_t *)obj_find(hp, K_POOL);
        if (!p) {
            rc = CUDA_ERROR_INVALID_VALUE;
            goto out;
        }
    } else {
        p = current_pool(st->o.ctx->dev);
        if (!p) {
            rc = CUDA_ERROR_OUT_OF_MEMORY;
            goto out;
        }
    }
    rc = pool_alloc(p, size, dptr);
out:
    UNLOCK();
    return rc;
}

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    COUNT(cuMemAllocAsync);
    return alloc_async(dptr, bytesize, NULL, 0, hStream, 0);
}

CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    COUNT(cuMemAllocAsync_ptsz);
    return alloc_async(dptr, bytesize, NULL, 0, hStream, 1);
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                 CUstream hStream)
{
    COUNT(cuMemAllocFromPoolAsync);
    return alloc_async(dptr, bytesize, pool, 1, hStream, 0);
}

CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                      CUstream hStream)
{
    COUNT(cuMemAllocFromPoolAsync_ptsz);
    return alloc_async(dptr, bytesize, pool, 1, hStream, 1);
}

/* The memory goes back to its pool at once (the fake's kernels never touch
 * it, so "when the stream reaches the free" makes no observable difference
 * except to the pool's USED_MEM_CURRENT, which drops immediately). */
static CUresult free_async(CUdeviceptr p, CUstream s, int pt)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    LOCK();
    ctx_t *c;
    CUresult rc = need_ctx(&c);
    if (rc == CUDA_SUCCESS) {
        stream_t *st = stream_resolve(s, c, pt, &rc);
        if (st && st->capture)
            rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        else if (st)
            rc = p ? dev_free(p) : CUDA_ERROR_INVALID_VALUE;
    }
    UNLOCK();
    return rc;
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    COUNT(cuMemFreeAsync);
    return free_async(dptr, hStream, 0);
}

CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    COUNT(cuMemFreeAsync_ptsz);
    return free_async(dptr, hStream, 1);
}

/* ---- pools ------------------------------------------------------------ */

#define POOL_ENTER(name)                                                                           \
    COUNT(name);                                                                                   \
    if (!g.inited)                                                                                 \
        return CUDA_ERROR_NOT_INITIALIZED;                                                         \
    CUresult rc = CUDA_SUCCESS;                                                                    \
    LOCK()

CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
    POOL_ENTER(cuMemPoolCreate);
    if (!pool || !props || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
        props->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
        rc = CUDA_ERROR_INVALID_VALUE;
    } else if (!dev_ok(props->location.id)) {
        rc = CUDA_ERROR_INVALID_DEVICE;
    } else {
        pool_t *p = pool_new(props->location.id, 0, props->maxSize);
        if (p)
            *pool = (CUmemoryPool)p;
        else
            rc = CUDA_ERROR_OUT_OF_MEMORY;
    }
    UNLOCK();
    return rc;
}

CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    POOL_ENTER(cuMemPoolDestroy);
    pool_t *p = (pool_t *)obj_find(pool, K_POOL);
    if (!p || p->is_default)
        rc = CUDA_ERROR_INVALID_VALUE;
    else
        pool_destroy(p);
    UNLOCK();
    return rc;
}

CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    POOL_ENTER(cuMemPoolTrimTo);
    pool_t *p = (pool_t *)obj_find(pool, K_POOL);
    if (!p)
        rc = CUDA_ERROR_INVALID_VALUE;
    else
        pool_trim(p, minBytesToKeep);
    UNLOCK();
    return rc;
}

/* REUSE_* attributes are kept (default on) but change nothing in the fake. */
static int reuse_attr[TFAKE_MAX_DEVICES][4];

CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    POOL_ENTER(cuMemPoolGetAttribute);
    pool_t *p = (pool_t *)obj_find(pool, K_POOL);
    if (!p || !value) {
        rc = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        *(int *)value = !reuse_attr[p->dev][attr];
        break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
        *(cuuint64_t *)value = p->threshold;
        break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
        *(cuuint64_t *)value = p->reserved;
        break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
        *(cuuint64_t *)value = p->reserved_high;
        break;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
        *(cuuint64_t *)value = p->used;
        break;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        *(cuuint64_t *)value = p->used_high;
        break;
    default:
        rc = CUDA_ERROR_INVALID_VALUE;
    }
out:
    UNLOCK();
    return rc;
}

CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    POOL_ENTER(cuMemPoolSetAttribute);
    pool_t *p = (pool_t *)obj_find(pool, K_POOL);
    if (!p || !value) {
        rc = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        reuse_attr[p->dev][attr] = !*(int *)value;
        break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
        p->threshold = *(cuuint64_t *)value;
        break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        if (*(cuuint64_t *)value != 0) {
            rc = CUDA_ERROR_INVALID_VALUE;
        } else if (attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) {
            p->reserved_high = p->reserved;
        } else {
            p->used_high = p->used;
        }
        break;
    default:
        rc = CUDA_ERROR_INVALID_VALUE;
    }
out:
    UNLOCK();
    return rc;
}

CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count)
{
    POOL_ENTER(cuMemPoolSetAccess);
    if (!obj_find(pool, K_POOL) || (count && !map))
        rc = CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; rc == CUDA_SUCCESS && i < count; i++)
        if (map[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || !dev_ok(map[i].location.id))
            rc = CUDA_ERROR_INVALID_DEVICE;
    pool_t *p = (pool_t *)obj_find(pool, K_POOL);
    for (size_t i = 0; rc == CUDA_SUCCESS && i < count; i++)
        p->access[map[i].location.id] = (unsigned char)map[i].flags;
    UNLOCK();
    return rc;
}

CUresult cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool memPool, CUmemLocation *location)
{
    POOL_ENTER(cuMemPoolGetAccess);
    pool_t *p = (pool_t *)obj_find(memPool, K_POOL);
    if (!p || !flags || !location)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (location->type != CU_MEM_LOCATION_TYPE_DEVICE || !dev_ok(location->id))
        rc = CUDA_ERROR_INVALID_DEVICE;
    else
        *flags = (CUmemAccess_flags)p->access[location->id];
    UNLOCK();
    return rc;
}

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    POOL_ENTER(cuDeviceGetDefaultMemPool);
    if (!pool_out)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (!dev_ok(dev))
        rc = CUDA_ERROR_INVALID_DEVICE;
    else if (!(*pool_out = (CUmemoryPool)default_pool(dev)))
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    UNLOCK();
    return rc;
}

CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    POOL_ENTER(cuDeviceGetMemPool);
    if (!pool)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (!dev_ok(dev))
        rc = CUDA_ERROR_INVALID_DEVICE;
    else if (!(*pool = (CUmemoryPool)current_pool(dev)))
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    UNLOCK();
    return rc;
}

CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
    POOL_ENTER(cuDeviceSetMemPool);
    pool_t *p = (pool_t *)obj_find(pool, K_POOL);
    if (!dev_ok(dev))
        rc = CUDA_ERROR_INVALID_DEVICE;
    else if (!p || p->dev != dev)
        rc = CUDA_ERROR_INVALID_VALUE;
    else
        g.cur_pool[dev] = p;
    UNLOCK();
    return rc;
}

/* CUDA 13 location-based pool queries: device locations and pinned memory
 * only (what the fake has); anything else is NOT_SUPPORTED. */
static CUresult loc_dev(const CUmemLocation *l, CUmemAllocationType type, int *dev)
{
    if (!l)
        return CUDA_ERROR_INVALID_VALUE;
    if (l->type != CU_MEM_LOCATION_TYPE_DEVICE || type != CU_MEM_ALLOCATION_TYPE_PINNED)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (!dev_ok(l->id))
        return CUDA_ERROR_INVALID_DEVICE;
    *dev = l->id;
    return CUDA_SUCCESS;
}

CUresult cuMemGetDefaultMemPool(CUmemoryPool *pool_out, CUmemLocation *location,
                                CUmemAllocationType type)
{
    POOL_ENTER(cuMemGetDefaultMemPool);
    int dev = 0;
    rc = pool_out ? loc_dev(location, type, &dev) : CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS && !(*pool_out = (CUmemoryPool)default_pool(dev)))
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    UNLOCK();
    return rc;
}

CUresult cuMemGetMemPool(CUmemoryPool *pool, CUmemLocation *location, CUmemAllocationType type)
{
    POOL_ENTER(cuMemGetMemPool);
    int dev = 0;
    rc = pool ? loc_dev(location, type, &dev) : CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS && !(*pool = (CUmemoryPool)current_pool(dev)))
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    UNLOCK();
    return rc;
}

CUresult cuMemSetMemPool(CUmemLocation *location, CUmemAllocationType type, CUmemoryPool pool)
{
    POOL_ENTER(cuMemSetMemPool);
    int dev = 0;
    rc = loc_dev(location, type, &dev);
    pool_t *p = (pool_t *)obj_find(pool, K_POOL);
    if (rc == CUDA_SUCCESS && (!p || p->dev != dev))
        rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS)
        g.cur_pool[dev] = p;
    UNLOCK();
    return rc;
}

/* ---- virtual memory management ---------------------------------------- */

static CUresult prop_dev(const CUmemAllocationProp *prop, int *dev)
{
    if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
        prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (!dev_ok(prop->location.id))
        return CUDA_ERROR_INVALID_DEVICE;
    *dev = prop->location.id;
    return CUDA_SUCCESS;
}

CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                       CUmemAllocationGranularity_flags option)
{
    POOL_ENTER(cuMemGetAllocationGranularity);
    int dev;
    rc = granularity ? prop_dev(prop, &dev) : CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS && option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
        option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS)
        *granularity = FAKE_GRANULARITY;
    UNLOCK();
    return rc;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                     const CUmemAllocationProp *prop, unsigned long long flags)
{
    POOL_ENTER(cuMemCreate);
    int dev = 0, fd = -1;
    vmem_t *h = NULL;
    rc = handle ? prop_dev(prop, &dev) : CUDA_ERROR_INVALID_VALUE;
    if (rc != CUDA_SUCCESS)
        goto out;
    if (flags != 0 || size == 0 || size % FAKE_GRANULARITY) {
        rc = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    if (charge(dev, size) < 0) {
        rc = CUDA_ERROR_OUT_OF_MEMORY;
        goto out;
    }
    fd = memfd_create("tessel-fake-vmm", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)size) < 0 ||
        !(h = (vmem_t *)obj_new(K_VMEM, sizeof *h, NULL))) {
        if (fd >= 0)
            close(fd);
        uncharge(dev, size);
        rc = CUDA_ERROR_OUT_OF_MEMORY;
        goto out;
    }
    h->fd = fd;
    h->dev = dev;
    h->size = size;
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)h;
out:
    UNLOCK();
    return rc;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    POOL_ENTER(cuMemRelease);
    vmem_t *h = (vmem_t *)obj_find((void *)(uintptr_t)handle, K_VMEM);
    if (!h || h->released) {
        rc = CUDA_ERROR_INVALID_VALUE;
    } else {
        h->released = 1;
        vmem_maybe_free(h); /* memory stays charged while still mapped */
    }
    UNLOCK();
    return rc;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags)
{
    POOL_ENTER(cuMemAddressReserve);
    if (!ptr || size == 0 || size % FAKE_GRANULARITY || flags != 0 ||
        (alignment & (alignment - 1))) {
        rc = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    uint64_t align = alignment > FAKE_GRANULARITY ? alignment : FAKE_GRANULARITY;
    size_t len = size + (size_t)align;
    char *m = mmap((void *)(uintptr_t)addr, len, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
        rc = CUDA_ERROR_OUT_OF_MEMORY;
        goto out;
    }
    uint64_t base = roundup((uintptr_t)m, align);
    /* Trim the slack on both sides so the reservation is exactly [base, base+size). */
    if (base > (uintptr_t)m)
        munmap(m, (size_t)(base - (uintptr_t)m));
    uint64_t end = base + size, mend = (uintptr_t)m + len;
    if (mend > end)
        munmap((void *)(uintptr_t)end, (size_t)(mend - end));
    alloc_t *a = alloc_add(base, size, A_RESERVE, 0);
    if (!a) {
        munmap((void *)(uintptr_t)base, size);
        rc = CUDA_ERROR_OUT_OF_MEMORY;
        goto out;
    }
    a->maplen = size;
    *ptr = base;
out:
    UNLOCK();
    return rc;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    POOL_ENTER(cuMemAddressFree);
    alloc_t *a = alloc_find(ptr);
    if (!a || a->kind != A_RESERVE || a->base != ptr || a->size != size)
        rc = CUDA_ERROR_INVALID_VALUE;
    else
        alloc_free(a); /* unmaps what is still mapped */
    UNLOCK();
    return rc;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags)
{
    POOL_ENTER(cuMemMap);
    vmem_t *h = (vmem_t *)obj_find((void *)(uintptr_t)handle, K_VMEM);
    alloc_t *a = alloc_find(ptr);
    if (!h || h->released || !a || a->kind != A_RESERVE || flags != 0 || offset != 0 || size == 0 ||
        size % FAKE_GRANULARITY || ptr % FAKE_GRANULARITY || size > h->size ||
        size > a->base + a->size - ptr) {
        rc = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    for (vmap_t *m = a->maps; m; m = m->next)
        if (ptr < m->ptr + m->size && m->ptr < ptr + size) {
            rc = CUDA_ERROR_ALREADY_MAPPED;
            goto out;
        }
    vmap_t *m = calloc(1, sizeof *m);
    if (!m) {
        rc = CUDA_ERROR_OUT_OF_MEMORY;
        goto out;
    }
    if (mmap((void *)(uintptr_t)ptr, size, PROT_NONE, MAP_SHARED | MAP_FIXED, h->fd, 0) ==
        MAP_FAILED) {
        free(m);
        rc = CUDA_ERROR_OUT_OF_MEMORY;
        goto out;
    }
    m->ptr = ptr;
    m->size = size;
    m->h = h;
    m->next = a->maps;
    a->maps = m;
    h->maps++;
out:
    UNLOCK();
    return rc;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    POOL_ENTER(cuMemUnmap);
    alloc_t *a = alloc_find(ptr);
    int found = 0;
    if (a && a->kind == A_RESERVE && size) {
        /* Every mapping inside [ptr, ptr+size) goes; a mapping straddling the
         * edge makes the call invalid (as with the driver). */
        for (vmap_t *m = a->maps; m; m = m->next)
            if (m->ptr < ptr + size && ptr < m->ptr + m->size) {
                if (m->ptr < ptr || m->ptr + m->size > ptr + size)
                    found = -1;
                else if (found >= 0)
                    found = 1;
            }
    }
    if (found <= 0) {
        rc = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    for (vmap_t *m = a->maps, *n; m; m = n) {
        n = m->next;
        if (m->ptr >= ptr && m->ptr + m->size <= ptr + size)
            vmap_drop(a, m);
    }
out:
    UNLOCK();
    return rc;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
    POOL_ENTER(cuMemSetAccess);
    alloc_t *a = alloc_find(ptr);
    if (!a || a->kind != A_RESERVE || !desc || count == 0 || size == 0) {
        rc = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    int prot = PROT_NONE;
    for (size_t i = 0; i < count; i++) {
        if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || !dev_ok(desc[i].location.id)) {
            rc = CUDA_ERROR_INVALID_DEVICE;
            goto out;
        }
        if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            prot = PROT_READ | PROT_WRITE;
        else if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READ && prot == PROT_NONE)
            prot = PROT_READ;
        else if (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE &&
                 desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READ)
            rc = CUDA_ERROR_INVALID_VALUE;
    }
    uint64_t covered = 0;
    for (vmap_t *m = a->maps; m; m = m->next)
        if (m->ptr >= ptr && m->ptr + m->size <= ptr + size)
            covered += m->size;
    if (rc != CUDA_SUCCESS || covered != size) { /* the range must be fully mapped */
        rc = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    for (vmap_t *m = a->maps; m; m = m->next) {
        if (m->ptr >= ptr && m->ptr + m->size <= ptr + size) {
            mprotect((void *)(uintptr_t)m->ptr, (size_t)m->size, prot);
            m->prot = prot;
        }
    }
out:
    UNLOCK();
    return rc;
}

/* ---- arrays (accounting only: the fake has no array copies) ------------ */

static unsigned format_bytes(CUarray_format f)
{
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
        return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
        return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
        return 4;
    default:
        return 0;
    }
}

/* Bytes of one level: rows padded to FAKE_PITCH_ALIGN, 1D/2D arrays
 * counting as height/depth 1; 0 when the descriptor is invalid. */
static uint64_t level_bytes(const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    unsigned eb = format_bytes(d->Format);
    if (!eb || (d->NumChannels != 1 && d->NumChannels != 2 && d->NumChannels != 4) ||
        d->Width == 0 || (d->Height == 0 && d->Depth != 0) || d->Width > (1u << 30) ||
        d->Height > (1u << 30) || d->Depth > (1u << 30))
        return 0;
    uint64_t row = roundup((uint64_t)d->Width * eb * d->NumChannels, FAKE_PITCH_ALIGN);
    uint64_t h = d->Height ? d->Height : 1, z = d->Depth ? d->Depth : 1;
    if (row > UINT64_MAX / h || row * h > UINT64_MAX / z)
        return 0;
    return row * h * z;
}

unsigned long long tessel_fake_array_bytes(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels)
{
    uint64_t total = 0;
    CUDA_ARRAY3D_DESCRIPTOR l = *d;
    if (levels == 0)
        return 0;
    for (unsigned i = 0; i < levels; i++) {
        uint64_t b = level_bytes(&l);
        if (!b)
            return 0;
        total += b;
        l.Width = l.Width > 1 ? l.Width / 2 : 1;
        l.Height = l.Height > 1 ? l.Height / 2 : l.Height;
        l.Depth = l.Depth > 1 ? l.Depth / 2 : l.Depth;
    }
    return total;
}

static CUresult array_create(ctx_t *c, const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels,
                             kind_t kind, void **out)
{
    if (!out || !d)
        return CUDA_ERROR_INVALID_VALUE;
    if (kind == K_MIPMAP) {
        size_t m = d->Width > d->Height ? d->Width : d->Height;
        m = m > d->Depth ? m : d->Depth;
        unsigned maxl = 0;
        while (m) {
            maxl++;
            m >>= 1;
        }
        if (levels == 0 || levels > maxl)
            return CUDA_ERROR_INVALID_VALUE;
    }
    uint64_t bytes = tessel_fake_array_bytes(d, levels);
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t ch = roundup(bytes, g.cfg.alloc_granule);
    if (charge(c->dev, ch) < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    array_t *a = (array_t *)obj_new(kind, sizeof *a, c);
    if (!a) {
        uncharge(c->dev, ch);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    a->charged = ch;
    a->dev = c->dev;
    a->d = *d;
    a->levels = levels;
    *out = a;
    return CUDA_SUCCESS;
}

CUresult cuArrayCreate(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR_v1 *p)
{
    MEM_ENTER(cuArrayCreate);
    CUDA_ARRAY3D_DESCRIPTOR d = {0};
    if (p)
        d = (CUDA_ARRAY3D_DESCRIPTOR){p->Width, p->Height, 0, p->Format, p->NumChannels, 0};
    rc = array_create(c, p ? &d : NULL, 1, K_ARRAY, (void **)pHandle);
    MEM_LEAVE();
}

CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *p)
{
    MEM_ENTER(cuArrayCreate_v2);
    CUDA_ARRAY3D_DESCRIPTOR d = {0};
    if (p)
        d = (CUDA_ARRAY3D_DESCRIPTOR){p->Width, p->Height, 0, p->Format, p->NumChannels, 0};
    rc = array_create(c, p ? &d : NULL, 1, K_ARRAY, (void **)pHandle);
    MEM_LEAVE();
}

CUresult cuArray3DCreate(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR_v1 *p)
{
    MEM_ENTER(cuArray3DCreate);
    CUDA_ARRAY3D_DESCRIPTOR d = {0};
    if (p)
        d = (CUDA_ARRAY3D_DESCRIPTOR){p->Width,  p->Height,      p->Depth,
                                      p->Format, p->NumChannels, p->Flags};
    rc = array_create(c, p ? &d : NULL, 1, K_ARRAY, (void **)pHandle);
    MEM_LEAVE();
}

CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *p)
{
    MEM_ENTER(cuArray3DCreate_v2);
    rc = array_create(c, p, 1, K_ARRAY, (void **)pHandle);
    MEM_LEAVE();
}

CUresult cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR *pArrayDescriptor, CUarray hArray)
{
    MEM_ENTER(cuArrayGetDescriptor_v2);
    array_t *a = (array_t *)obj_find(hArray, K_ARRAY);
    if (!a || !pArrayDescriptor)
        rc = !a ? CUDA_ERROR_INVALID_HANDLE : CUDA_ERROR_INVALID_VALUE;
    else
        *pArrayDescriptor =
            (CUDA_ARRAY_DESCRIPTOR){a->d.Width, a->d.Height, a->d.Format, a->d.NumChannels};
    MEM_LEAVE();
}

CUresult cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR *pArrayDescriptor, CUarray hArray)
{
    MEM_ENTER(cuArray3DGetDescriptor_v2);
    array_t *a = (array_t *)obj_find(hArray, K_ARRAY);
    if (!a || !pArrayDescriptor)
        rc = !a ? CUDA_ERROR_INVALID_HANDLE : CUDA_ERROR_INVALID_VALUE;
    else
        *pArrayDescriptor = a->d;
    MEM_LEAVE();
}

CUresult cuArrayDestroy(CUarray hArray)
{
    MEM_ENTER(cuArrayDestroy);
    array_t *a = (array_t *)obj_find(hArray, K_ARRAY);
    if (!a)
        rc = CUDA_ERROR_INVALID_HANDLE;
    else
        array_destroy(a);
    MEM_LEAVE();
}

CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pDesc,
                                unsigned int numMipmapLevels)
{
    MEM_ENTER(cuMipmappedArrayCreate);
    rc = array_create(c, pDesc, numMipmapLevels, K_MIPMAP, (void **)pHandle);
    MEM_LEAVE();
}

CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
    MEM_ENTER(cuMipmappedArrayDestroy);
    array_t *a = (array_t *)obj_find(hMipmappedArray, K_MIPMAP);
    if (!a)
        rc = CUDA_ERROR_INVALID_HANDLE;
    else
        array_destroy(a);
    MEM_LEAVE();
}

int tessel_fake_managed(unsigned long long ptr, int *resident, int *pref_type, int *pref_id,
                        unsigned long long *accessed_by)
{
    LOCK();
    alloc_t *a = alloc_find(ptr);
    int ok = a && a->kind == A_MANAGED;
    if (ok) {
        *resident = a->resident;
        *pref_type = a->pref_type;
        *pref_id = a->pref_id;
        *accessed_by = a->accessed_by;
    }
    UNLOCK();
    return ok ? 0 : -1;
}
