/* interposer.c - initialisation, the slice, device mapping and the
 * reserve/release helpers of libtessel-cuda (see interposer.h for the
 * lifecycle and docs/interposer.md for the design). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "interposer/interposer.h"

extern char **environ;

/* In .data beside crt's __dso_handle, a page the loader writes anyway: the destructor's read
 * of the flag in a process that never initialised costs no page fault of its own (in .bss it
 * lands a page further, past the large tcu). */
__attribute__((section(".data.tcu_ready"))) atomic_int tcu_ready_flag;
struct tcu_state tcu;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t slow_lock = PTHREAD_MUTEX_INITIALIZER;

/* CUDA ordinal -> slice device index + 1 (0: not looked up yet). */
static atomic_int devmap[TCU_MAX_DEVICES];
/* Slice device index -> this process's own limit (tcu.cfg), set before devmap publishes the
 * index.  The slice file is the job's (shared accounting, writable by it): a limit rewritten
 * there must not raise what this process allows (tcu_reserve). */
static _Atomic uint64_t dev_limit[TCU_MAX_DEVICES];

/* This process's own spilled bytes per slice device, in its own memory (never in the slice
 * file, which the job may write): the hard bound of the host limit for one process.  The
 * slice file's figures (host_limit, host_used) are the job's to rewrite: a raised host_limit
 * or a zeroed host_used lets nothing pass this count, so a process never holds more than
 * cfg.host_limit spilled whatever the file says.  The slice-wide host_used is only the
 * cooperative bound across the job's processes (as device bytes are); the job's memory cgroup
 * is the hard bound across them (docs/security.md "Oversubscription").  A forked child starts
 * at 0: the parent's spills are the parent's (atfork_child). */
static _Atomic uint64_t own_host[TCU_MAX_DEVICES];

void tcu_log(const char *fmt, ...)
{
    char buf[512];
    int n = snprintf(buf, sizeof buf, "tessel-cuda: ");
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (m < 0)
        m = 0;
    size_t len = (size_t)n +
                 ((size_t)m < sizeof buf - (size_t)n - 1 ? (size_t)m : sizeof buf - (size_t)n - 2);
    buf[len++] = '\n';
    ssize_t w = write(2, buf, len);
    (void)w;
}

static tcu_dlsym_fn real_dlsym_ptr;

TCU_NO_SANITIZE tcu_dlsym_fn tcu_real_dlsym_fn(void)
{
    tcu_dlsym_fn f = __atomic_load_n(&real_dlsym_ptr, __ATOMIC_ACQUIRE);
    if (TCU_UNLIKELY(!f)) {
        /* dlvsym is not hooked, so this cannot recurse into our dlsym. */
        f = (tcu_dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
        if (!f)
            f = (tcu_dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
        __atomic_store_n(&real_dlsym_ptr, f, __ATOMIC_RELEASE);
    }
    return f;
}

void *tcu_real_dlsym(void *handle, const char *name)
{
    tcu_dlsym_fn f = tcu_real_dlsym_fn();
    return f ? f(handle, name) : NULL;
}

static void atfork_child(void)
{
    tshm_atfork_child(tcu.slice);
    tcu_table_atfork_child();
    tcu_pools_atfork_child();
    tcu_spills_atfork_child();
    tcu_contexts_atfork_child();
    tcu_lazy_atfork_child();
    tcu_compute_atfork_child();
    for (int i = 0; i < TCU_MAX_DEVICES; i++) {
        atomic_store(&own_host[i], 0);
        atomic_store(&tcu_unseen[i], 0); /* the parent's managed memory is the parent's */
    }
    pthread_mutex_init(&slow_lock, NULL);
}

/* Set while this thread runs init_once_fn: a hook or dlsym reached from
 * inside initialisation (a driver constructor calling back into cuInit, say)
 * must not wait on the pthread_once it is part of. */
_Thread_local int tcu_initialising;

/* The limits file of a job started by tesseld (TCU_LIMITS_PATH, policy.h): 1 and *text filled
 * when it is there and trustworthy (a regular file owned by root that no one else may write,
 * reached without a symlink at the end), 0 when there is none (by hand: the environment
 * decides), -1 with a line in why when it is there but unusable (the caller fails closed). */
static int limits_read(char *text, size_t cap, char *why, size_t whylen)
{
    int fd = open(TCU_LIMITS_PATH, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        snprintf(why, whylen, "%s: %s", TCU_LIMITS_PATH, strerror(errno));
        return -1;
    }
    struct stat st;
    ssize_t n = -1;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
        (st.st_mode & (S_IWGRP | S_IWOTH))) {
        snprintf(why, whylen, "%s: not a regular file owned and written only by root",
                 TCU_LIMITS_PATH);
    } else {
        n = read(fd, text, cap - 1);
        if (n < 0)
            snprintf(why, whylen, "%s: %s", TCU_LIMITS_PATH, strerror(errno));
        else if ((size_t)n == cap - 1)
            snprintf(why, whylen, "%s: larger than %zu bytes", TCU_LIMITS_PATH, cap - 2);
    }
    close(fd);
    if (n < 0 || (size_t)n == cap - 1)
        return -1;
    text[n] = '\0';
    return 1;
}

/* tcu.cfg: the limits file when there is one, lowered (never raised) by the environment;
 * else the environment alone.  Fails closed on anything malformed. */
static void config_load(void)
{
    static tcu_config_t file, env; /* large: not on a thread's stack */
    static char text[TCU_LIMITS_MAX + 2];
    char why[256] = "";
    int got = limits_read(text, sizeof text, why, sizeof why);
    int env_rc = tcu_config_parse(&env, environ);
    if (got == 0) {
        tcu.cfg = env;
        if (env_rc < 0)
            tcu_log("%s; allocations refused", tcu.cfg.error);
        return;
    }
    if (got < 0) {
        tcu_config_parse(&file, NULL);
        file.ok = 0;
        snprintf(file.error, sizeof file.error, "%s", why);
    } else {
        tcu_config_parse_file(&file, text);
    }
    if (tcu_config_lower(&tcu.cfg, &file, &env) < 0)
        tcu_log("%s; allocations refused", tcu.cfg.error);
    tcu.cfg.from_file = 1;
}

static void init_once_fn(void)
{
    tcu_initialising = 1;
    config_load();

    tcu.cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    tcu_symbols_resolve(tcu.cuda, NULL); /* NVML: lazily, tcu_nvml_handle */

    tsl_error_t err = {{0}};
    /* A process with a malformed configuration fails closed on a private
     * slice: its zero limits must not lower a shared slice's. */
    const char *path = tcu.cfg.ok && tcu.cfg.slice[0] ? tcu.cfg.slice : NULL;
    tcu.slice = tshm_attach(path, &err);
    if (!tcu.slice || tshm_register(tcu.slice, &err) < 0) {
        tcu_log("slice %s: %s; allocations refused", path ? path : "(private)", err.text);
        tshm_close(tcu.slice);
        tcu.cfg.ok = 0;
        for (int i = 0; i < TCU_MAX_DEVICES; i++)
            tcu.cfg.limit[i] = 0;
        /* Fail closed on a private slice whose limits are all zero. */
        tcu.slice = tshm_attach(NULL, &err);
        if (tcu.slice && tshm_register(tcu.slice, &err) < 0) {
            tshm_close(tcu.slice);
            tcu.slice = NULL;
        }
    }
    pthread_atfork(NULL, NULL, atfork_child);
    atomic_store_explicit(&tcu_ready_flag, 1, memory_order_release);
    tcu_initialising = 0;
}

/* A clean exit gives the process's slot and charges back at once; a crash
 * or SIGKILL leaves them to tshm_reclaim in the next process that attaches
 * or runs short.  Threads still calling hooks after this see an
 * unregistered slice: their allocations are refused, never crash. */
__attribute__((destructor)) static void tcu_fini(void)
{
    if (atomic_load(&tcu_ready_flag) && tcu.slice) {
        tcu_compute_fini();
        tshm_unregister(tcu.slice);
    }
}

void tcu_init(void)
{
    if (tcu_initialising)
        return; /* re-entered from our own initialisation */
    pthread_once(&init_once, init_once_fn);
}

/* ---- devices ------------------------------------------------------------ */

static int dev_lookup_slow(CUdevice ord)
{
    if (ord < 0)
        return -1;
    if (!tcu.slice || !TCU_REAL(cuDeviceGetUuid) || ord >= TCU_MAX_DEVICES)
        return -2;
    CUuuid uuid;
    memset(&uuid, 0, sizeof uuid);
    if (TCU_REAL(cuDeviceGetUuid)(&uuid, ord) != CUDA_SUCCESS)
        return -1; /* not a device (or no cuInit yet): the driver will say so */
    pthread_mutex_lock(&slow_lock);
    int idx = atomic_load(&devmap[ord]) - 1;
    if (idx < 0) {
        tsl_error_t err = {{0}};
        idx = tshm_device(tcu.slice, (const unsigned char *)uuid.bytes, tcu.cfg.limit[ord], &err);
        if (idx < 0) {
            tcu_log("device %d: %s; allocations refused", ord, err.text);
            idx = -2;
        } else {
            if (tcu.cfg.core_set)
                tshm_core_config(tcu.slice, idx, tcu.cfg.core_limit, tcu.cfg.core_mode,
                                 tcu.cfg.core_prio);
            if (tcu.cfg.ok && tcu.cfg.host_limit)
                tshm_host_config(tcu.slice, idx, tcu.cfg.host_limit);
            if (idx < TCU_MAX_DEVICES)
                atomic_store(&dev_limit[idx], tcu.cfg.limit[ord]);
            atomic_store(&devmap[ord], idx + 1);
        }
    }
    pthread_mutex_unlock(&slow_lock);
    return idx;
}

int tcu_dev(CUdevice ord)
{
    if (TCU_LIKELY(ord >= 0 && ord < TCU_MAX_DEVICES)) {
        int v = atomic_load_explicit(&devmap[ord], memory_order_acquire);
        if (TCU_LIKELY(v > 0))
            return v - 1;
    }
    return dev_lookup_slow(ord);
}

int tcu_current_dev(CUdevice *ord)
{
    CUdevice d;
    cuCtxGetDevice_fn f = TCU_REAL(cuCtxGetDevice);
    if (!f || f(&d) != CUDA_SUCCESS)
        return -1;
    if (ord)
        *ord = d;
    int dev = tcu_dev(d);
    /* The current context's device always exists: if it cannot be mapped,
     * refuse (fail closed) rather than pass the allocation through. */
    return dev == -1 ? -2 : dev;
}

/* ---- reserve / release -------------------------------------------------- */

/* A forked child claims its own slot on its first counted call. */
int tcu_register(void)
{
    if (!tcu.slice)
        return -1;
    pthread_mutex_lock(&slow_lock);
    tsl_error_t err = {{0}};
    int rc = tshm_register(tcu.slice, &err);
    pthread_mutex_unlock(&slow_lock);
    if (rc < 0)
        tcu_log("%s; allocations refused", err.text);
    return rc;
}

/* After a reservation the slice admitted: whether the slice's use is still within this
 * process's own limit (the slice file's may have been raised by the job); if not, the
 * reservation is given back.  One atomic load on the fast path. */
static int within_own_limit(int dev, uint64_t bytes)
{
    if (dev >= TCU_MAX_DEVICES || tshm_used(tcu.slice, dev) <= atomic_load(&dev_limit[dev]))
        return 1;
    tshm_release(tcu.slice, dev, bytes);
    return 0;
}

/* ---- driver memory no call reports ---------------------------------------
 *
 * The driver spends device memory of its own that no hooked call reports: the CUDA runtime's
 * kernels are loaded lazily at their first launch (a CUkernel of cuLibraryGetKernel launched as
 * a function), libraries loaded with cuLibraryLoadData, local memory grown at a launch.  A real
 * H200 showed 32 MiB of it for JAX (68 MiB with CUDA_MODULE_LOADING=EAGER): enough for a slice
 * full to its limit in its own count to be 16 MiB over it in the driver's
 * (docs/gpu-conformance.md).  So a reservation compares, now and then, this process's device
 * memory as NVML counts it with what the process has charged to the slice, and charges the
 * difference (tcu_reconcile, hooks/context.c): every RECON_PERIOD_NS, and when the reservation
 * brings the slice within RECON_ZONE of its limit (where a missing charge would let the
 * driver's figure pass the limit) every RECON_NEAR_NS or after any launch since the last look. Only
 * with a limit: without one there is nothing to hold. */
#define RECON_ZONE      (256ull << 20)
#define RECON_NEAR_NS   10000000ull   /* 10 ms */
#define RECON_PERIOD_NS 1000000000ull /* 1 s */
static _Atomic uint64_t recon_last[TCU_MAX_DEVICES];
_Atomic int tcu_launched;
_Atomic uint64_t tcu_unseen[TCU_MAX_DEVICES];

static void reconcile_if_due(int dev, uint64_t bytes)
{
    if (dev >= TCU_MAX_DEVICES)
        return;
    uint64_t lim = atomic_load_explicit(&dev_limit[dev], memory_order_relaxed);
    if (lim == 0 || lim == TSHM_UNLIMITED)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    uint64_t last = atomic_load_explicit(&recon_last[dev], memory_order_relaxed);
    int near = tshm_used(tcu.slice, dev) + bytes + RECON_ZONE > lim;
    /* Near the limit a launch since the last look is reason enough (its code may have been
     * loaded just now): a fill to the limit is faster than RECON_NEAR_NS. */
    int launched = near && atomic_load_explicit(&tcu_launched, memory_order_relaxed);
    if ((!launched && now < last + (near ? RECON_NEAR_NS : RECON_PERIOD_NS)) ||
        !atomic_compare_exchange_strong(&recon_last[dev], &last, now))
        return;
    atomic_store_explicit(&tcu_launched, 0, memory_order_relaxed);
    for (CUdevice ord = 0; ord < TCU_MAX_DEVICES; ord++)
        if (atomic_load(&devmap[ord]) == dev + 1) {
            tcu_reconcile(ord, dev);
            return;
        }
}

void tcu_reconcile_all_wait(void)
{
    for (CUdevice ord = 0; ord < TCU_MAX_DEVICES; ord++) {
        int v = atomic_load(&devmap[ord]);
        if (v > 0)
            tcu_reconcile_wait(ord, v - 1);
    }
}

static int reserve(int dev, uint64_t bytes, bool spent)
{
    if (TCU_UNLIKELY(!tcu.slice || dev < 0))
        return -1;
    if (TCU_UNLIKELY(!tshm_registered(tcu.slice)) && tcu_register() < 0)
        return -1;
    /* A slice reclaimed while idle: this allocation (or context) waits for its restore. */
    if (!spent)
        tcu_idle_wait();
    /* Not for memory the driver has spent already (a measured load): NVML counts it and the
     * process's charges do not yet, so the look would charge it twice. */
    if (!spent)
        reconcile_if_due(dev, bytes);
    if (TCU_LIKELY(tshm_reserve(tcu.slice, dev, bytes) == 0) && within_own_limit(dev, bytes))
        return 0;
    /* Slow path, only when the slice looks full: give back what dead
     * processes and this process's idle pool memory hold, then retry. */
    tcu_pools_resync();
    tshm_reclaim(tcu.slice);
    return tshm_reserve(tcu.slice, dev, bytes) == 0 && within_own_limit(dev, bytes) ? 0 : -1;
}

int tcu_reserve(int dev, uint64_t bytes)
{
    return reserve(dev, bytes, false);
}

int tcu_reserve_spent(int dev, uint64_t bytes)
{
    return reserve(dev, bytes, true);
}

void tcu_unreserve(int dev, uint64_t bytes)
{
    if (tcu.slice && dev >= 0)
        tshm_release(tcu.slice, dev, bytes);
}

void tcu_charge(int dev, uint64_t bytes)
{
    if (tcu.slice && dev >= 0 && tshm_registered(tcu.slice))
        tshm_charge(tcu.slice, dev, bytes);
}

/* ---- oversubscription (issue 21) ------------------------------------------ */

int tcu_spill_allowed(void)
{
    return tcu.cfg.ok && tcu.cfg.host_limit > 0 && tcu.slice;
}

/* Add bytes to this process's own count of device dev when that stays within cfg.host_limit:
 * 0, or -1 (nothing changed). */
static int own_host_add(int dev, uint64_t bytes)
{
    if (dev >= TCU_MAX_DEVICES)
        return -1;
    uint64_t cur = atomic_load(&own_host[dev]);
    do {
        if (!tcu_host_admit(cur, bytes, tcu.cfg.host_limit))
            return -1;
    } while (!atomic_compare_exchange_weak(&own_host[dev], &cur, cur + bytes));
    return 0;
}

static void own_host_sub(int dev, uint64_t bytes)
{
    if (dev < 0 || dev >= TCU_MAX_DEVICES)
        return;
    uint64_t cur = atomic_load(&own_host[dev]);
    while (!atomic_compare_exchange_weak(&own_host[dev], &cur, cur > bytes ? cur - bytes : 0))
        ;
}

/* The slice's host count (cooperative across processes), within this process's configured
 * limit too: the slice file's host limit may have been raised by the job, as within_own_limit
 * for devices. */
static int host_try(int dev, uint64_t bytes)
{
    if (tshm_reserve_host(tcu.slice, dev, bytes) < 0)
        return -1;
    if (tshm_host_used(tcu.slice, dev) <= tcu.cfg.host_limit)
        return 0;
    tshm_release_host(tcu.slice, dev, bytes);
    return -1;
}

int tcu_reserve_host(int dev, uint64_t bytes)
{
    if (!tcu_spill_allowed() || dev < 0)
        return -1;
    if (TCU_UNLIKELY(!tshm_registered(tcu.slice)) && tcu_register() < 0)
        return -1;
    if (own_host_add(dev, bytes) < 0)
        return -1;
    if (host_try(dev, bytes) == 0)
        return 0;
    tshm_reclaim(tcu.slice);
    if (host_try(dev, bytes) == 0)
        return 0;
    own_host_sub(dev, bytes);
    return -1;
}

void tcu_unreserve_host(int dev, uint64_t bytes)
{
    own_host_sub(dev, bytes);
    if (tcu.slice && dev >= 0)
        tshm_release_host(tcu.slice, dev, bytes);
}
