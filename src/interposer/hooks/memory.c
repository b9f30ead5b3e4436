/* memory.c - counted device allocations and the memory views.
 *
 * Every counted path follows the same steps: find the device, reserve the
 * bytes in the slice (refuse with CUDA_ERROR_OUT_OF_MEMORY if that would pass
 * the limit), call the driver, then record the allocation so that its free
 * finds the bytes in O(1), or give the reservation back if the driver
 * failed.  A free removes the record before calling the driver (the address
 * cannot be handed out again before the driver frees it) and puts it back if
 * the driver refuses.
 *
 * Stream-ordered pools: a pool is charged max(bytes its live allocations
 * hold, bytes the pool has reserved from the device), so memory a pool keeps
 * cached after cuMemFreeAsync stays charged until the driver releases it or
 * cuMemPoolTrimTo gives it back.  The pool's reserved figure is re-read after
 * each allocation, free and trim, by cuMemGetInfo, and before an allocation
 * is refused.
 *
 * Oversubscription (issue 21, docs/interposer.md): when the slice allows it, a cuMemAlloc_v2 or
 * cuMemAllocPitch_v2 that its device share refuses is served by cuMemAllocManaged, advised to
 * live on the host (preferred location: the CPU; accessed by the device, which maps the pages
 * and reads them over the bus instead of migrating them), and charged to the slice's host
 * limit instead.  Its record carries TCU_AUX_HOST, so that its free gives the bytes back to
 * the host count.  Stream-ordered (pool) allocations and the 32-bit cuMemAlloc never spill.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "interposer/interposer.h"

#define OOM CUDA_ERROR_OUT_OF_MEMORY

/* ---- pools -------------------------------------------------------------- */

/* Pools one process allocates from: the default pool of each device plus the
 * few it creates; 256 is far beyond what frameworks create.  A pool beyond
 * that is still counted per allocation, just without its cached bytes. */
#define MAX_POOLS 256

struct pool {
    CUmemoryPool h;
    int dev;          /* slice device; -1 for a host pool (not counted) */
    uint64_t in_use;  /* bytes of live allocations */
    uint64_t charged; /* bytes charged to the slice for this pool */
    int destroyed;    /* cuMemPoolDestroy'd, allocations still live */
};

static struct pool pools[MAX_POOLS];
static int npools;
static atomic_flag pools_lock;

static void plock(void)
{
    while (atomic_flag_test_and_set_explicit(&pools_lock, memory_order_acquire))
        __builtin_ia32_pause();
}

static void punlock(void)
{
    atomic_flag_clear_explicit(&pools_lock, memory_order_release);
}

/* Caller holds the lock. */
static struct pool *pool_find(CUmemoryPool h, int dev, int create)
{
    for (int i = 0; i < npools; i++)
        if (pools[i].h == h)
            return &pools[i];
    if (!create || npools == MAX_POOLS)
        return NULL;
    struct pool *p = &pools[npools++];
    p->h = h;
    p->dev = dev;
    p->in_use = p->charged = 0;
    p->destroyed = 0;
    return p;
}

/* Drop record p (its charge already settled).  Caller holds the lock. */
static void pool_forget(struct pool *p)
{
    *p = pools[--npools];
}

/* The pool's reserved bytes (a driver call: outside the lock). */
static uint64_t pool_reserved(CUmemoryPool h)
{
    cuuint64_t reserved = 0;
    plock();
    struct pool *p = pool_find(h, -1, 0);
    int destroyed = p && p->destroyed;
    punlock();
    /* A destroyed pool's handle is not asked about: the driver dropped its
     * cache at destruction, and only its live allocations remain. */
    cuMemPoolGetAttribute_fn get = TCU_REAL(cuMemPoolGetAttribute);
    if (destroyed || !get ||
        get(h, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved) != CUDA_SUCCESS)
        reserved = 0;
    return reserved;
}

/* Re-read the pool's reserved bytes and lower the pool's charge to
 * max(in_use, reserved) when the driver released some.  Never raises it:
 * a pool grows only by an allocation, and that allocation's pool_grow
 * charges the growth through the limit check (this may run in another
 * thread between that allocation's driver call and its pool_grow). */
static void pool_sync(CUmemoryPool h)
{
    uint64_t reserved = pool_reserved(h);
    plock();
    struct pool *p = pool_find(h, -1, 0);
    if (p && p->dev >= 0) {
        uint64_t want = p->in_use > reserved ? p->in_use : reserved;
        if (want < p->charged) {
            tcu_unreserve(p->dev, p->charged - want);
            p->charged = want;
        }
    }
    if (p && p->destroyed && p->in_use == 0)
        pool_forget(p); /* its handle may be reused by a new pool */
    punlock();
}

/* After an allocation from pool h succeeded: charge what the pool grew
 * beyond its charge (the driver reserves whole chunks, more than the bytes
 * asked for) through the limit check.  0, or -1 when the growth does not
 * fit the slice: the caller then gives the allocation back and reports
 * CUDA_ERROR_OUT_OF_MEMORY, as the driver does when a pool cannot grow. */
static int pool_grow(CUmemoryPool h)
{
    uint64_t reserved = pool_reserved(h);
    plock();
    struct pool *p = pool_find(h, -1, 0);
    if (!p || p->dev < 0) {
        punlock();
        return 0;
    }
    int dev = p->dev;
    uint64_t want = p->in_use > reserved ? p->in_use : reserved;
    if (want <= p->charged) {
        if (want < p->charged)
            tcu_unreserve(dev, p->charged - want);
        p->charged = want;
        punlock();
        return 0;
    }
    uint64_t grow = want - p->charged;
    punlock();
    /* Outside the lock: tcu_reserve's slow path resyncs every pool. */
    if (tcu_reserve_spent(dev, grow) < 0)
        return -1;
    plock();
    p = pool_find(h, -1, 0);
    if (p)
        p->charged += grow; /* a racing grow of the same pool is trimmed back by pool_sync */
    else
        tcu_unreserve(dev, grow);
    punlock();
    return 0;
}

void tcu_pools_atfork_child(void)
{
    /* The parent's pools and their charges stay the parent's. */
    npools = 0;
    atomic_flag_clear(&pools_lock);
}

void tcu_pools_resync(void)
{
    CUmemoryPool hs[MAX_POOLS];
    plock();
    int n = npools;
    for (int i = 0; i < n; i++)
        hs[i] = pools[i].h;
    punlock();
    for (int i = 0; i < n; i++)
        pool_sync(hs[i]);
}

/* Admit bytes from pool h on slice device dev: from the pool's cached
 * charge when it covers them, else by a new reservation.  0 or -1. */
static int pool_admit(CUmemoryPool h, int dev, uint64_t bytes, int *from_cache)
{
    if (dev == -2) /* failed closed */
        return -1;
    plock();
    struct pool *p = pool_find(h, dev, 1);
    if (p && p->dev < 0) { /* host pool: not counted */
        punlock();
        *from_cache = 1;
        return 0;
    }
    if (p && p->charged >= p->in_use && p->charged - p->in_use >= bytes) {
        p->in_use += bytes;
        punlock();
        *from_cache = 1;
        return 0;
    }
    punlock();
    *from_cache = 0;
    if (tcu_reserve(dev, bytes) < 0)
        return -1;
    plock();
    p = pool_find(h, dev, 1);
    if (p) {
        p->in_use += bytes;
        p->charged += bytes;
    }
    punlock();
    /* !p: the table is full; the pool is then counted per allocation (its
     * reservation stays until the free, which finds no pool and releases). */
    return 0;
}

/* Undo pool_admit after a driver failure, or account a free. */
static void pool_unadmit(CUmemoryPool h, int dev, uint64_t bytes)
{
    plock();
    struct pool *p = pool_find(h, dev, 0);
    if (p) {
        p->in_use = p->in_use > bytes ? p->in_use - bytes : 0;
        /* The charge follows at the next sync (pool_sync below). */
    } else {
        tcu_unreserve(dev, bytes);
    }
    punlock();
    if (p)
        pool_sync(h);
}

static int pool_dev(CUmemoryPool h, int fallback)
{
    plock();
    struct pool *p = pool_find(h, -1, 0);
    int dev = p ? p->dev : fallback;
    punlock();
    return dev;
}

/* ---- linear memory ------------------------------------------------------ */

/* The second half of every counted allocation, after the driver answered r
 * for bytes reserved on dev: on failure give the reservation back and return
 * r; on success record (kind, key) (key is read only then) and return r, or,
 * if the record cannot be made, give the allocation and the reservation back
 * and return OOM. */
static inline CUresult alloc_settle_aux(CUresult r, enum tcu_kind kind, uint64_t key, int dev,
                                        uint64_t bytes, uint64_t aux)
{
    if (TCU_UNLIKELY(r != CUDA_SUCCESS)) {
        tcu_unreserve(dev, bytes);
        return r;
    }
    if (TCU_LIKELY(tcu_track(kind, key, dev, bytes, aux) == 0))
        return r;
    switch (kind) {
    case TCU_KIND_PTR:
        if (TCU_REAL(cuMemFree_v2))
            TCU_REAL(cuMemFree_v2)((CUdeviceptr)key);
        break;
    case TCU_KIND_VMM:
        TCU_REAL(cuMemRelease)((CUmemGenericAllocationHandle)key);
        break;
    case TCU_KIND_ARRAY:
        TCU_REAL(cuArrayDestroy)((CUarray)(uintptr_t)key);
        break;
    case TCU_KIND_MIPMAP:
        TCU_REAL(cuMipmappedArrayDestroy)((CUmipmappedArray)(uintptr_t)key);
        break;
    case TCU_KIND_CTX:
    case TCU_KIND_MODULE: /* not allocated through alloc_settle */
    case TCU_KIND_CTX_LIMIT:
        break;
    }
    tcu_unreserve(dev, bytes);
    return OOM;
}

static inline CUresult alloc_settle(CUresult r, enum tcu_kind kind, uint64_t key, int dev,
                                    uint64_t bytes)
{
    return alloc_settle_aux(r, kind, key, dev, bytes, 0);
}

/* ---- oversubscription --------------------------------------------------- */

/* Keep the managed range [p, p + bytes) on the host and let device ord reach it there.  The
 * CUDA 12.2 form (a location) first, else the older one (CU_DEVICE_CPU).  0, or -1 when the
 * driver refused a hint: the pages could then migrate to the device and take other slices'
 * memory, so the caller gives the allocation back. */
static int spill_advise(CUdeviceptr p, uint64_t bytes, CUdevice ord)
{
    cuMemAdvise_v2_fn v2 = TCU_REAL(cuMemAdvise_v2);
    cuMemAdvise_fn v1 = TCU_REAL(cuMemAdvise);
    if (v2) {
        CUmemLocation host = {CU_MEM_LOCATION_TYPE_HOST, 0};
        CUmemLocation dev = {CU_MEM_LOCATION_TYPE_DEVICE, ord};
        return v2(p, bytes, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, host) == CUDA_SUCCESS &&
                       v2(p, bytes, CU_MEM_ADVISE_SET_ACCESSED_BY, dev) == CUDA_SUCCESS
                   ? 0
                   : -1;
    }
    if (v1)
        return v1(p, bytes, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, CU_DEVICE_CPU) == CUDA_SUCCESS &&
                       v1(p, bytes, CU_MEM_ADVISE_SET_ACCESSED_BY, ord) == CUDA_SUCCESS
                   ? 0
                   : -1;
    return -1;
}

/* The address ranges of this process's spilled allocations, sorted by base, for the prefetch
 * and advice hooks (below): a range lookup, which the allocation table (keyed by base) cannot
 * answer.  Spills and frees of spills are rare next to allocations, and prefetch and advice
 * are not on a hot path: a sorted array and a spin lock serve them.  A forked child starts
 * empty, as the allocation table (the parent's spills are the parent's). */
struct spill_range {
    uint64_t base, end; /* [base, end) */
};

static struct spill_range *spills;
static size_t nspills, capspills;
static atomic_flag spills_lock;

static void slock(void)
{
    while (atomic_flag_test_and_set_explicit(&spills_lock, memory_order_acquire))
        __builtin_ia32_pause();
}

static void sunlock(void)
{
    atomic_flag_clear_explicit(&spills_lock, memory_order_release);
}

/* Under slock: the index of the first range whose end is past p. */
static size_t spill_pos(uint64_t p)
{
    size_t lo = 0, hi = nspills;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (spills[mid].end <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Record the spilled range [p, p + bytes): 0, or -1 when memory for it ran out (the caller
 * gives the spill back: a spill the hooks could not find could be moved to the device). */
static int spill_note(uint64_t p, uint64_t bytes)
{
    uint64_t end = bytes > UINT64_MAX - p ? UINT64_MAX : p + bytes;
    slock();
    if (nspills == capspills) {
        size_t cap = capspills ? capspills * 2 : 64;
        struct spill_range *n = realloc(spills, cap * sizeof *n);
        if (!n) {
            sunlock();
            return -1;
        }
        spills = n;
        capspills = cap;
    }
    size_t i = spill_pos(p);
    memmove(&spills[i + 1], &spills[i], (nspills - i) * sizeof *spills);
    spills[i] = (struct spill_range){p, end};
    nspills++;
    sunlock();
    return 0;
}

static void spill_forget(uint64_t p)
{
    slock();
    size_t i = spill_pos(p);
    if (i < nspills && spills[i].base == p) {
        memmove(&spills[i], &spills[i + 1], (nspills - i - 1) * sizeof *spills);
        nspills--;
    }
    sunlock();
}

/* Whether [p, p + bytes) overlaps a spilled allocation (a zero length counts as one byte: the
 * driver refuses it, but a hook must not let it through on that account). */
static int spill_overlaps(uint64_t p, uint64_t bytes)
{
    uint64_t end = bytes == 0 ? p + 1 : bytes > UINT64_MAX - p ? UINT64_MAX : p + bytes;
    slock();
    size_t i = spill_pos(p);
    int hit = i < nspills && spills[i].base < end;
    sunlock();
    return hit;
}

void tcu_spills_atfork_child(void)
{
    nspills = 0;
    atomic_flag_clear(&spills_lock);
}

/* Serve an allocation of bytes that the device share of slice device dev (CUDA device ord)
 * refused from the host: reserve the bytes against the host limit, cuMemAllocManaged
 * (CU_MEM_ATTACH_GLOBAL), advise, record with TCU_AUX_HOST.  CUDA_SUCCESS and *dptr, or
 * CUDA_ERROR_OUT_OF_MEMORY with nothing left behind (spilling off, host limit reached, or
 * the driver refused). */
static CUresult spill_alloc(CUdeviceptr *dptr, uint64_t bytes, int dev, CUdevice ord)
{
    cuMemAllocManaged_fn managed = TCU_REAL(cuMemAllocManaged);
    if (!managed || !TCU_REAL(cuMemFree_v2) || tcu_reserve_host(dev, bytes) < 0)
        return OOM;
    CUdeviceptr p = 0;
    if (managed(&p, (size_t)bytes, CU_MEM_ATTACH_GLOBAL) != CUDA_SUCCESS) {
        tcu_unreserve_host(dev, bytes);
        return OOM;
    }
    if (spill_advise(p, bytes, ord) < 0 || spill_note(p, bytes) < 0) {
        TCU_REAL(cuMemFree_v2)(p);
        tcu_unreserve_host(dev, bytes);
        return OOM;
    }
    if (tcu_track(TCU_KIND_PTR, p, dev, bytes, TCU_AUX_HOST) < 0) {
        spill_forget(p);
        TCU_REAL(cuMemFree_v2)(p);
        tcu_unreserve_host(dev, bytes);
        return OOM;
    }
    *dptr = p;
    return CUDA_SUCCESS;
}

TCU_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    tcu_enter();
    cuMemAlloc_v2_fn real = TCU_REAL(cuMemAlloc_v2);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    CUdevice ord = 0;
    int dev = tcu_current_dev(&ord);
    if (dev == -1 || !dptr || bytesize == 0)
        return real(dptr, bytesize);
    if (tcu_reserve(dev, bytesize) < 0)
        return tcu_spill_allowed() && dev >= 0 ? spill_alloc(dptr, bytesize, dev, ord) : OOM;
    CUresult r = real(dptr, bytesize);
    return alloc_settle(r, TCU_KIND_PTR, r == CUDA_SUCCESS ? *dptr : 0, dev, bytesize);
}

TCU_EXPORT CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize)
{
    tcu_enter();
    cuMemAlloc_fn real = TCU_REAL(cuMemAlloc);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    int dev = tcu_current_dev(NULL);
    if (dev == -1 || !dptr || bytesize == 0)
        return real(dptr, bytesize);
    if (tcu_reserve(dev, bytesize) < 0)
        return OOM;
    CUresult r = real(dptr, bytesize);
    return alloc_settle(r, TCU_KIND_PTR, r == CUDA_SUCCESS ? *dptr : 0, dev, bytesize);
}

TCU_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    tcu_enter();
    cuMemAllocManaged_fn real = TCU_REAL(cuMemAllocManaged);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    int dev = tcu_current_dev(NULL);
    if (dev == -1 || !dptr || bytesize == 0)
        return real(dptr, bytesize, flags);
    if (dev < 0 || dev >= TCU_MAX_DEVICES || tcu_reserve(dev, bytesize) < 0)
        return OOM;
    /* Unseen from the reservation on (a reconcile reached from the reservation itself must not
     * take it for unseen memory not yet charged). */
    atomic_fetch_add(&tcu_unseen[dev], (uint64_t)bytesize);
    CUresult r = real(dptr, bytesize, flags);
    r = alloc_settle_aux(r, TCU_KIND_PTR, r == CUDA_SUCCESS ? *dptr : 0, dev, bytesize,
                         TCU_AUX_MANAGED);
    if (r != CUDA_SUCCESS)
        atomic_fetch_sub(&tcu_unseen[dev], (uint64_t)bytesize);
    return r;
}

/* cuMemAllocPitch: reserve the smallest pitch the driver may choose (the
 * width rounded up to 512 bytes, the largest texture pitch alignment of
 * current GPUs), then charge what the returned pitch really costs. */
#define PITCH_ALIGN 512u

static uint64_t pitch_estimate(uint64_t width, uint64_t height)
{
    uint64_t w = width > UINT64_MAX - PITCH_ALIGN ? UINT64_MAX : (width + PITCH_ALIGN - 1);
    return tcu_mul_sat(w / PITCH_ALIGN * PITCH_ALIGN, height);
}

static void pitch_settle(int dev, uint64_t est, uint64_t real_bytes)
{
    if (real_bytes > est)
        tcu_charge(dev, real_bytes - est);
    else if (real_bytes < est)
        tcu_unreserve(dev, est - real_bytes);
}

TCU_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                       size_t Height, unsigned int ElementSizeBytes)
{
    tcu_enter();
    cuMemAllocPitch_v2_fn real = TCU_REAL(cuMemAllocPitch_v2);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    CUdevice ord = 0;
    int dev = tcu_current_dev(&ord);
    if (dev == -1 || !dptr || !pPitch || WidthInBytes == 0 || Height == 0)
        return real(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    uint64_t est = pitch_estimate(WidthInBytes, Height);
    if (tcu_reserve(dev, est) < 0) {
        /* Spilled: rows PITCH_ALIGN-aligned, as the estimate (the element sizes the
         * driver accepts are checked here, since the driver does not see the call). */
        if (!tcu_spill_allowed() || dev < 0 ||
            (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
            return OOM;
        CUresult r = spill_alloc(dptr, est, dev, ord);
        if (r == CUDA_SUCCESS)
            *pPitch = (size_t)(est / Height);
        return r;
    }
    CUresult r = real(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    if (r != CUDA_SUCCESS)
        return alloc_settle(r, TCU_KIND_PTR, 0, dev, est);
    uint64_t bytes = tcu_mul_sat(*pPitch, Height);
    pitch_settle(dev, est, bytes);
    return alloc_settle(r, TCU_KIND_PTR, *dptr, dev, bytes);
}

TCU_EXPORT CUresult cuMemAllocPitch(CUdeviceptr_v1 *dptr, unsigned int *pPitch,
                                    unsigned int WidthInBytes, unsigned int Height,
                                    unsigned int ElementSizeBytes)
{
    tcu_enter();
    cuMemAllocPitch_fn real = TCU_REAL(cuMemAllocPitch);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    int dev = tcu_current_dev(NULL);
    if (dev == -1 || !dptr || !pPitch || WidthInBytes == 0 || Height == 0)
        return real(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    uint64_t est = pitch_estimate(WidthInBytes, Height);
    if (tcu_reserve(dev, est) < 0)
        return OOM;
    CUresult r = real(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    if (r != CUDA_SUCCESS)
        return alloc_settle(r, TCU_KIND_PTR, 0, dev, est);
    uint64_t bytes = tcu_mul_sat(*pPitch, Height);
    pitch_settle(dev, est, bytes);
    return alloc_settle(r, TCU_KIND_PTR, *dptr, dev, bytes);
}

/* tcu_release_settle for pointers: the bookkeeping after the driver freed
 * (r == success) or refused to free a pointer whose record was taken out;
 * an allocation from a pool (h->aux) goes back to its pool.  Returns r. */
static inline CUresult ptr_release_settle(CUdeviceptr p, const struct tcu_held *h, CUresult r)
{
    if (h->aux == TCU_AUX_HOST) { /* spilled: the host count */
        if (r == CUDA_SUCCESS) {
            spill_forget(p);
            tcu_unreserve_host(h->dev, h->bytes);
        } else {
            tcu_track(TCU_KIND_PTR, p, h->dev, h->bytes, h->aux);
        }
        return r;
    }
    if (h->aux == TCU_AUX_MANAGED) {
        tcu_release_settle(TCU_KIND_PTR, p, h, r);
        if (r == CUDA_SUCCESS && h->dev >= 0 && h->dev < TCU_MAX_DEVICES)
            atomic_fetch_sub(&tcu_unseen[h->dev], h->bytes);
        return r;
    }
    if (h->aux && r == CUDA_SUCCESS) {
        pool_unadmit((CUmemoryPool)(uintptr_t)h->aux, h->dev, h->bytes);
        return r;
    }
    return tcu_release_settle(TCU_KIND_PTR, p, h, r);
}

TCU_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    tcu_enter();
    cuMemFree_v2_fn real = TCU_REAL(cuMemFree_v2);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    struct tcu_held held;
    if (!tcu_release_begin(TCU_KIND_PTR, dptr, &held))
        return real(dptr);
    return ptr_release_settle(dptr, &held, real(dptr));
}

TCU_EXPORT CUresult cuMemFree(CUdeviceptr_v1 dptr)
{
    tcu_enter();
    cuMemFree_fn real = TCU_REAL(cuMemFree);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    struct tcu_held held;
    if (!tcu_release_begin(TCU_KIND_PTR, dptr, &held))
        return real(dptr);
    return ptr_release_settle(dptr, &held, real(dptr));
}

/* ---- prefetch and advice on spilled memory ---------------------------------
 *
 * A spilled allocation is managed memory: cuMemPrefetchAsync or cuMemAdvise could move it onto
 * the device, past the slice's device share, where the real driver's NVML per-process figure
 * (which leaves managed memory out) would not show it to the watchdog.  So on a range that
 * overlaps a spilled allocation these hooks refuse, with CUDA_ERROR_NOT_PERMITTED and without
 * calling the driver, every request that would place pages on a device or let them go there:
 * a prefetch to anything but the host, SET_PREFERRED_LOCATION to anything but the host,
 * UNSET_PREFERRED_LOCATION and UNSET_ACCESSED_BY (which take back the hints spill_advise set),
 * SET_READ_MOSTLY (read-only copies on the devices that read).  Host-targeted requests,
 * SET_ACCESSED_BY and UNSET_READ_MOSTLY go to the driver.  Ranges that overlap no spill (device
 * memory, the job's own cuMemAllocManaged memory, which is charged to the device share in full
 * when allocated) go to the driver unchanged.  The CUDA 13 batches (cuMemPrefetchBatchAsync,
 * cuMemDiscardAndPrefetchBatchAsync and their _ptsz) are held the same way (batch_refused). */

static int advice_refused(CUdeviceptr p, size_t count, CUmem_advise a, CUmemLocation l)
{
    return tcu_advice_to_device(a, l) && spill_overlaps(p, count);
}

static int prefetch_refused(CUdeviceptr p, size_t count, CUmemLocation l)
{
    return !tcu_loc_is_host(l) && spill_overlaps(p, count);
}

TCU_EXPORT CUresult cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice,
                                CUdevice device)
{
    tcu_enter();
    cuMemAdvise_fn real = TCU_REAL(cuMemAdvise);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    if (advice_refused(devPtr, count, advice, tcu_loc_of_device(device)))
        return CUDA_ERROR_NOT_PERMITTED;
    return real(devPtr, count, advice, device);
}

TCU_EXPORT CUresult cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice,
                                   CUmemLocation location)
{
    tcu_enter();
    cuMemAdvise_v2_fn real = TCU_REAL(cuMemAdvise_v2);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    if (advice_refused(devPtr, count, advice, location))
        return CUDA_ERROR_NOT_PERMITTED;
    return real(devPtr, count, advice, location);
}

TCU_EXPORT CUresult cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice,
                                       CUstream hStream)
{
    tcu_enter();
    cuMemPrefetchAsync_fn real = TCU_REAL(cuMemPrefetchAsync);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    if (prefetch_refused(devPtr, count, tcu_loc_of_device(dstDevice)))
        return CUDA_ERROR_NOT_PERMITTED;
    return real(devPtr, count, dstDevice, hStream);
}

TCU_EXPORT CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr devPtr, size_t count, CUdevice dstDevice,
                                            CUstream hStream)
{
    tcu_enter();
    cuMemPrefetchAsync_ptsz_fn real = TCU_REAL(cuMemPrefetchAsync_ptsz);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    if (prefetch_refused(devPtr, count, tcu_loc_of_device(dstDevice)))
        return CUDA_ERROR_NOT_PERMITTED;
    return real(devPtr, count, dstDevice, hStream);
}

TCU_EXPORT CUresult cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location,
                                          unsigned int flags, CUstream hStream)
{
    tcu_enter();
    cuMemPrefetchAsync_v2_fn real = TCU_REAL(cuMemPrefetchAsync_v2);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    if (prefetch_refused(devPtr, count, location))
        return CUDA_ERROR_NOT_PERMITTED;
    return real(devPtr, count, location, flags, hStream);
}

TCU_EXPORT CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr devPtr, size_t count,
                                               CUmemLocation location, unsigned int flags,
                                               CUstream hStream)
{
    tcu_enter();
    cuMemPrefetchAsync_v2_ptsz_fn real = TCU_REAL(cuMemPrefetchAsync_v2_ptsz);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    if (prefetch_refused(devPtr, count, location))
        return CUDA_ERROR_NOT_PERMITTED;
    return real(devPtr, count, location, flags, hStream);
}

/* The CUDA 13 batches: refused whole when any of their locations is not the host and any of
 * their ranges overlaps a spill (which location applies to which range is the driver's to
 * decide from prefetchLocIdxs; the hook does not need to know, nor to trust the indices).
 * Malformed arrays (NULL) go to the driver, which refuses them. */
static int batch_refused(const CUdeviceptr *dptrs, const size_t *sizes, size_t count,
                         const CUmemLocation *locs, size_t nlocs)
{
    if (!dptrs || !sizes || !locs || !tcu_locs_reach_device(locs, nlocs))
        return 0;
    for (size_t i = 0; i < count; i++)
        if (spill_overlaps(dptrs[i], sizes[i]))
            return 1;
    return 0;
}

#define TCU_BATCH_HOOK(name)                                                                       \
    TCU_EXPORT CUresult name(CUdeviceptr *dptrs, size_t *sizes, size_t count,                      \
                             CUmemLocation *prefetchLocs, size_t *prefetchLocIdxs,                 \
                             size_t numPrefetchLocs, unsigned long long flags, CUstream hStream)   \
    {                                                                                              \
        tcu_enter();                                                                               \
        name##_fn real = TCU_REAL(name);                                                           \
        if (TCU_UNLIKELY(!real))                                                                   \
            return CUDA_ERROR_NOT_INITIALIZED;                                                     \
        if (batch_refused(dptrs, sizes, count, prefetchLocs, numPrefetchLocs))                     \
            return CUDA_ERROR_NOT_PERMITTED;                                                       \
        return real(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, flags,    \
                    hStream);                                                                      \
    }

TCU_BATCH_HOOK(cuMemPrefetchBatchAsync)
TCU_BATCH_HOOK(cuMemPrefetchBatchAsync_ptsz)
TCU_BATCH_HOOK(cuMemDiscardAndPrefetchBatchAsync)
TCU_BATCH_HOOK(cuMemDiscardAndPrefetchBatchAsync_ptsz)

/* ---- stream-ordered allocation ------------------------------------------ */

typedef CUresult (*alloc_async_fn)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);

/* The pool of h grew past the slice's limit for the allocation dptr (on
 * stream, pt: a _ptsz entry point): give the allocation back, wait for the
 * free to reach the pool, trim the pool to what is charged, and settle the
 * charge.  Only on this out-of-memory path does the hook synchronise. */
static void pool_rollback(CUmemoryPool h, int dev, CUdeviceptr dptr, size_t bytes, CUstream stream,
                          int pt)
{
    cuMemFreeAsync_fn fr = pt ? TCU_REAL(cuMemFreeAsync_ptsz) : TCU_REAL(cuMemFreeAsync);
    if (fr && fr(dptr, stream) == CUDA_SUCCESS) {
        if (TCU_REAL(cuCtxSynchronize))
            TCU_REAL(cuCtxSynchronize)();
        /* Keep only what the pool's other live allocations hold: every
         * cached byte goes back, so that the pool ends within its charge. */
        plock();
        struct pool *p = pool_find(h, -1, 0);
        uint64_t keep = p && p->in_use > bytes ? p->in_use - bytes : 0;
        punlock();
        if (TCU_REAL(cuMemPoolTrimTo))
            TCU_REAL(cuMemPoolTrimTo)(h, keep);
    }
    pool_unadmit(h, dev, bytes);
}

/* pool == NULL: the current pool of the current device. */
static CUresult alloc_async(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream stream,
                            cuMemAllocAsync_fn plain, alloc_async_fn from, int pt)
{
    if (TCU_UNLIKELY(!plain && !from))
        return CUDA_ERROR_NOT_INITIALIZED;
#define CALL_REAL() (from ? from(dptr, bytesize, pool, stream) : plain(dptr, bytesize, stream))
    CUdevice ord;
    int dev = tcu_current_dev(&ord);
    if (dev == -1 || !dptr || bytesize == 0)
        return CALL_REAL();
    CUmemoryPool h = pool;
    if (!h) {
        cuDeviceGetMemPool_fn getpool = TCU_REAL(cuDeviceGetMemPool);
        if (!getpool || getpool(&h, ord) != CUDA_SUCCESS)
            h = NULL;
    } else {
        dev = pool_dev(h, dev);
    }
    int cached = 0;
    if (h) {
        if (pool_admit(h, dev, bytesize, &cached) < 0)
            return OOM;
    } else if (tcu_reserve(dev, bytesize) < 0) {
        return OOM;
    }
    CUresult r = CALL_REAL();
#undef CALL_REAL
    if (r != CUDA_SUCCESS) {
        if (h)
            pool_unadmit(h, dev, bytesize);
        else
            tcu_unreserve(dev, bytesize);
        return r;
    }
    if (dev < 0) /* host pool */
        return r;
    if (h && pool_grow(h) < 0) {
        pool_rollback(h, dev, *dptr, bytesize, stream, pt);
        return OOM;
    }
    if (tcu_track(TCU_KIND_PTR, *dptr, dev, bytesize, (uint64_t)(uintptr_t)h) < 0) {
        /* Keep the charge (the allocation lives); its free will not find
         * it, which only errs on the side of refusing. */
        return r;
    }
    return r;
}

TCU_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    tcu_enter();
    return alloc_async(dptr, bytesize, NULL, hStream, TCU_REAL(cuMemAllocAsync), NULL, 0);
}

TCU_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    tcu_enter();
    return alloc_async(dptr, bytesize, NULL, hStream, TCU_REAL(cuMemAllocAsync_ptsz), NULL, 1);
}

TCU_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                            CUstream hStream)
{
    tcu_enter();
    if (!pool)
        return TCU_REAL(cuMemAllocFromPoolAsync)
                   ? TCU_REAL(cuMemAllocFromPoolAsync)(dptr, bytesize, pool, hStream)
                   : CUDA_ERROR_NOT_INITIALIZED;
    return alloc_async(dptr, bytesize, pool, hStream, NULL, TCU_REAL(cuMemAllocFromPoolAsync), 0);
}

TCU_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                                 CUmemoryPool pool, CUstream hStream)
{
    tcu_enter();
    if (!pool)
        return TCU_REAL(cuMemAllocFromPoolAsync_ptsz)
                   ? TCU_REAL(cuMemAllocFromPoolAsync_ptsz)(dptr, bytesize, pool, hStream)
                   : CUDA_ERROR_NOT_INITIALIZED;
    return alloc_async(dptr, bytesize, pool, hStream, NULL, TCU_REAL(cuMemAllocFromPoolAsync_ptsz),
                       1);
}

static CUresult free_async(CUdeviceptr dptr, CUstream hStream, cuMemFreeAsync_fn real)
{
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    struct tcu_held held;
    if (!tcu_release_begin(TCU_KIND_PTR, dptr, &held))
        return real(dptr, hStream);
    return ptr_release_settle(dptr, &held, real(dptr, hStream));
}

TCU_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    tcu_enter();
    return free_async(dptr, hStream, TCU_REAL(cuMemFreeAsync));
}

TCU_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    tcu_enter();
    return free_async(dptr, hStream, TCU_REAL(cuMemFreeAsync_ptsz));
}

TCU_EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
    tcu_enter();
    cuMemPoolCreate_fn real = TCU_REAL(cuMemPoolCreate);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    /* A pool of managed memory (CUDA 13) is refused in a slice: its memory, wherever the pool is
     * located, could be prefetched onto a device uncounted, and NVML's per-process figure would
     * not show it (review of the graph hooks, H-a).  cuMemAllocManaged stays (counted in full). */
    if (tcu.slice && poolProps && poolProps->allocType == CU_MEM_ALLOCATION_TYPE_MANAGED)
        return CUDA_ERROR_NOT_SUPPORTED;
    CUresult r = real(pool, poolProps);
    if (r != CUDA_SUCCESS || !pool || !poolProps)
        return r;
    /* dev -1: a host pool, not counted.  A device pool the slice cannot
     * take (-2) is recorded as such: its allocations are refused. */
    int dev = -1;
    if (poolProps->location.type == CU_MEM_LOCATION_TYPE_DEVICE)
        dev = tcu_dev(poolProps->location.id) == -1 ? -2 : tcu_dev(poolProps->location.id);
    plock();
    pool_find(*pool, dev, 1);
    punlock();
    return r;
}

TCU_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    tcu_enter();
    cuMemPoolTrimTo_fn real = TCU_REAL(cuMemPoolTrimTo);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = real(pool, minBytesToKeep);
    if (r == CUDA_SUCCESS)
        pool_sync(pool);
    return r;
}

TCU_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    tcu_enter();
    cuMemPoolDestroy_fn real = TCU_REAL(cuMemPoolDestroy);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = real(pool);
    if (r != CUDA_SUCCESS)
        return r;
    /* The driver frees the cached bytes now and the live allocations when
     * they are freed; keep only the charge of the live ones. */
    plock();
    struct pool *p = pool_find(pool, -1, 0);
    if (p) {
        if (p->dev >= 0 && p->charged > p->in_use) {
            tcu_unreserve(p->dev, p->charged - p->in_use);
            p->charged = p->in_use;
        }
        p->destroyed = 1;
        if (p->in_use == 0)
            pool_forget(p);
    }
    punlock();
    return r;
}

/* ---- virtual memory management ------------------------------------------ */

TCU_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                const CUmemAllocationProp *prop, unsigned long long flags)
{
    tcu_enter();
    cuMemCreate_fn real = TCU_REAL(cuMemCreate);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    /* Host allocations (HOST, HOST_NUMA locations) are not counted. */
    if (!handle || !prop || size == 0 || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return real(handle, size, prop, flags);
    int dev = tcu_dev(prop->location.id);
    if (dev == -1) /* not a device: the driver's error */
        return real(handle, size, prop, flags);
    if (tcu_reserve(dev, size) < 0)
        return OOM;
    CUresult r = real(handle, size, prop, flags);
    return alloc_settle(r, TCU_KIND_VMM, r == CUDA_SUCCESS ? *handle : 0, dev, size);
}

TCU_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    tcu_enter();
    cuMemRelease_fn real = TCU_REAL(cuMemRelease);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    struct tcu_held held;
    if (!tcu_release_begin(TCU_KIND_VMM, handle, &held))
        return real(handle);
    return tcu_release_settle(TCU_KIND_VMM, handle, &held, real(handle));
}

/* ---- arrays ------------------------------------------------------------- */

TCU_EXPORT CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *d)
{
    tcu_enter();
    cuArrayCreate_v2_fn real = TCU_REAL(cuArrayCreate_v2);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    int dev = tcu_current_dev(NULL);
    if (dev == -1 || !pHandle || !d)
        return real(pHandle, d);
    uint64_t bytes = tcu_array_bytes(d->Format, d->NumChannels, d->Width, d->Height, 0, 0);
    if (tcu_reserve(dev, bytes) < 0)
        return OOM;
    CUresult r = real(pHandle, d);
    return alloc_settle(r, TCU_KIND_ARRAY, r == CUDA_SUCCESS ? (uintptr_t)*pHandle : 0, dev, bytes);
}

TCU_EXPORT CUresult cuArrayCreate(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR_v1 *d)
{
    tcu_enter();
    cuArrayCreate_fn real = TCU_REAL(cuArrayCreate);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    int dev = tcu_current_dev(NULL);
    if (dev == -1 || !pHandle || !d)
        return real(pHandle, d);
    uint64_t bytes = tcu_array_bytes(d->Format, d->NumChannels, d->Width, d->Height, 0, 0);
    if (tcu_reserve(dev, bytes) < 0)
        return OOM;
    CUresult r = real(pHandle, d);
    return alloc_settle(r, TCU_KIND_ARRAY, r == CUDA_SUCCESS ? (uintptr_t)*pHandle : 0, dev, bytes);
}

/* Sparse and deferred-mapping arrays own no memory until mapped (through
 * cuMemCreate handles, which are counted). */
static uint64_t array3d_bytes(CUarray_format f, unsigned ch, size_t w, size_t h, size_t d,
                              unsigned flags)
{
    if (flags & (CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING))
        return 0;
    return tcu_array_bytes(f, ch, w, h, d, flags);
}

TCU_EXPORT CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    tcu_enter();
    cuArray3DCreate_v2_fn real = TCU_REAL(cuArray3DCreate_v2);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    int dev = tcu_current_dev(NULL);
    if (dev == -1 || !pHandle || !d)
        return real(pHandle, d);
    uint64_t bytes =
        array3d_bytes(d->Format, d->NumChannels, d->Width, d->Height, d->Depth, d->Flags);
    if (tcu_reserve(dev, bytes) < 0)
        return OOM;
    CUresult r = real(pHandle, d);
    return alloc_settle(r, TCU_KIND_ARRAY, r == CUDA_SUCCESS ? (uintptr_t)*pHandle : 0, dev, bytes);
}

TCU_EXPORT CUresult cuArray3DCreate(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR_v1 *d)
{
    tcu_enter();
    cuArray3DCreate_fn real = TCU_REAL(cuArray3DCreate);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    int dev = tcu_current_dev(NULL);
    if (dev == -1 || !pHandle || !d)
        return real(pHandle, d);
    uint64_t bytes =
        array3d_bytes(d->Format, d->NumChannels, d->Width, d->Height, d->Depth, d->Flags);
    if (tcu_reserve(dev, bytes) < 0)
        return OOM;
    CUresult r = real(pHandle, d);
    return alloc_settle(r, TCU_KIND_ARRAY, r == CUDA_SUCCESS ? (uintptr_t)*pHandle : 0, dev, bytes);
}

TCU_EXPORT CUresult cuArrayDestroy(CUarray hArray)
{
    tcu_enter();
    cuArrayDestroy_fn real = TCU_REAL(cuArrayDestroy);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    uint64_t key = (uint64_t)(uintptr_t)hArray;
    struct tcu_held held;
    if (!tcu_release_begin(TCU_KIND_ARRAY, key, &held))
        return real(hArray);
    return tcu_release_settle(TCU_KIND_ARRAY, key, &held, real(hArray));
}

TCU_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle,
                                           const CUDA_ARRAY3D_DESCRIPTOR *d,
                                           unsigned int numMipmapLevels)
{
    tcu_enter();
    cuMipmappedArrayCreate_fn real = TCU_REAL(cuMipmappedArrayCreate);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    int dev = tcu_current_dev(NULL);
    if (dev == -1 || !pHandle || !d)
        return real(pHandle, d, numMipmapLevels);
    uint64_t bytes = (d->Flags & (CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING))
                         ? 0
                         : tcu_mipmap_bytes(d, numMipmapLevels);
    if (tcu_reserve(dev, bytes) < 0)
        return OOM;
    CUresult r = real(pHandle, d, numMipmapLevels);
    return alloc_settle(r, TCU_KIND_MIPMAP, r == CUDA_SUCCESS ? (uintptr_t)*pHandle : 0, dev,
                        bytes);
}

TCU_EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray h)
{
    tcu_enter();
    cuMipmappedArrayDestroy_fn real = TCU_REAL(cuMipmappedArrayDestroy);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    uint64_t key = (uint64_t)(uintptr_t)h;
    struct tcu_held held;
    if (!tcu_release_begin(TCU_KIND_MIPMAP, key, &held))
        return real(h);
    return tcu_release_settle(TCU_KIND_MIPMAP, key, &held, real(h));
}

/* ---- views -------------------------------------------------------------- */

/* The slice's figures for device ord into f and t; returns 1 (always: every
 * device the process sees belongs to its slice). */
static int slice_view(CUdevice ord, uint64_t real_free, uint64_t real_total, uint64_t *f,
                      uint64_t *t)
{
    /* Callers ask only after the driver answered for ord, so ord is a
     * device: one the slice cannot map gets the failed-closed view. */
    int dev = tcu_dev(ord);
    if (dev < 0 || !tcu.slice) {
        *f = *t = 0;
        return 1;
    }
    tcu_view(tshm_limit(tcu.slice, dev), tshm_used(tcu.slice, dev), real_free, real_total, f, t);
    return 1;
}

static uint64_t real_total_of(CUdevice ord)
{
    size_t t = 0;
    if (TCU_REAL(cuDeviceTotalMem_v2) && TCU_REAL(cuDeviceTotalMem_v2)(&t, ord) == CUDA_SUCCESS)
        return t;
    return UINT64_MAX;
}

TCU_EXPORT CUresult cuMemGetInfo_v2(size_t *free, size_t *total)
{
    tcu_enter();
    cuMemGetInfo_v2_fn real = TCU_REAL(cuMemGetInfo_v2);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    size_t rf = 0, rt = 0;
    /* NULL where the caller passed NULL: the driver keeps its own rules. */
    CUresult r = real(free ? &rf : NULL, total ? &rt : NULL);
    CUdevice ord;
    if (r != CUDA_SUCCESS || tcu_current_dev(&ord) == -1)
        goto copy;
    tcu_pools_resync();
    uint64_t f, t;
    if (slice_view(ord, free ? rf : UINT64_MAX, total ? rt : real_total_of(ord), &f, &t)) {
        rf = (size_t)f;
        rt = (size_t)t;
    }
copy:
    if (free && r == CUDA_SUCCESS)
        *free = rf;
    if (total && r == CUDA_SUCCESS)
        *total = rt;
    return r;
}

TCU_EXPORT CUresult cuMemGetInfo(unsigned int *free, unsigned int *total)
{
    tcu_enter();
    cuMemGetInfo_fn real = TCU_REAL(cuMemGetInfo);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    unsigned int rf = 0, rt = 0;
    CUresult r = real(free ? &rf : NULL, total ? &rt : NULL);
    CUdevice ord;
    if (r != CUDA_SUCCESS || tcu_current_dev(&ord) == -1)
        goto copy;
    tcu_pools_resync();
    uint64_t f, t;
    /* The legacy entry point's figures saturate at 4 GiB - 1, as the
     * driver's own do: the card's total comes from cuDeviceTotalMem_v2. */
    if (slice_view(ord, free ? rf : UINT64_MAX, real_total_of(ord), &f, &t)) {
        rf = f > UINT_MAX ? UINT_MAX : (unsigned int)f;
        rt = t > UINT_MAX ? UINT_MAX : (unsigned int)t;
    }
copy:
    if (free && r == CUDA_SUCCESS)
        *free = rf;
    if (total && r == CUDA_SUCCESS)
        *total = rt;
    return r;
}

TCU_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    tcu_enter();
    cuDeviceTotalMem_v2_fn real = TCU_REAL(cuDeviceTotalMem_v2);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = real(bytes, dev);
    uint64_t f, t;
    if (r == CUDA_SUCCESS && bytes && slice_view(dev, *bytes, *bytes, &f, &t))
        *bytes = (size_t)t;
    return r;
}

TCU_EXPORT CUresult cuDeviceTotalMem(unsigned int *bytes, CUdevice dev)
{
    tcu_enter();
    cuDeviceTotalMem_fn real = TCU_REAL(cuDeviceTotalMem);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = real(bytes, dev);
    uint64_t f, t;
    if (r == CUDA_SUCCESS && bytes &&
        slice_view(dev, real_total_of(dev), real_total_of(dev), &f, &t))
        *bytes = t > UINT_MAX ? UINT_MAX : (unsigned int)t;
    return r;
}
