/* fake_ckpt.c - cuCheckpointProcess* of the fake CUDA driver (TEST DOUBLE).
 *
 * The driver's model (cuda.h 13.0, "CUDA Checkpointing"; NVIDIA's cuda-checkpoint utility
 * drives the same calls): a process drives ANOTHER CUDA process, named by its pid, through
 *
 *     RUNNING --Lock--> LOCKED --Checkpoint--> CHECKPOINTED --Restore--> LOCKED --Unlock--> RUNNING
 *
 * Lock blocks the target's further CUDA calls and waits for those in progress (up to the lock's
 * timeoutMs: then CUDA_ERROR_NOT_READY and the target stays RUNNING); Checkpoint waits for the
 * work queued on the device, copies the target's device memory into host memory and releases
 * it on the device (its contexts too: the target no longer shows in NVML's process list);
 * Restore takes the memory back on the same devices, at the same device addresses, and copies
 * the contents back; Unlock lets the blocked calls go on.  A step in the wrong state is
 * CUDA_ERROR_ILLEGAL_STATE.  The program notices nothing but the wait.
 *
 * How the fake does it.  The target is another process, so the request crosses processes
 * through the shared state (TESSEL_FAKE_STATE; both must use the same file, as for anything
 * two processes of the fake share): every process that initialised CUDA runs a service thread
 * (the driver's "restore thread", cuCheckpointProcessGetRestoreThreadId) that sleeps on a futex
 * word of its process slot.  A controller claims the slot's request fields (ck_owner), writes
 * the request, bumps ck_req and wakes the thread; the thread carries the step out inside the
 * target (where the memory is) and answers through ck_result / ck_done, which the controller
 * sleeps on.  A target that dies meanwhile answers CUDA_ERROR_INVALID_VALUE (no such process).
 *
 * The gate.  Every entry point passes ckpt_gate_enter/leave for the whole call (COUNT in
 * fake_cuda_int.h); the lock closes the gate, so new calls of any thread wait in it, and waits
 * until no call is in progress.  Nested entry points count once (a per-thread depth).
 *
 * Memory while checkpointed.  Each device and pool allocation (one mapping each, fake_mem.c)
 * is copied to a malloc'd buffer, its pages dropped (MADV_DONTNEED) and the range
 * made PROT_NONE (it is reserved, so the address cannot be reused; a stray host access faults
 * as a device pointer would); a VMM handle's memfd is copied and its pages punched out.  What
 * the process had charged on each device (allocations, contexts, modules, pools, arrays) is
 * given back in the shared state and recorded in ck_released.  Restore charges it again, all
 * devices or none: when it does not fit, CUDA_ERROR_OUT_OF_MEMORY and the process stays
 * CHECKPOINTED with its copies (the fake's choice: the header lists no error for this; a real
 * driver was not seen doing it).  A host-side failure half-way through a restore (mprotect) is
 * CU_PROCESS_STATE_FAILED.
 *
 * Managed (UVM) memory: driver r570 does not checkpoint it (NVIDIA's cuda-checkpoint README,
 * "Functionality") and does not promise a usable process after such a failure; the fake
 * answers CUDA_ERROR_NOT_SUPPORTED and leaves the process LOCKED with everything in place.
 *
 * The fake's limits (documented in README.md): no GPU remapping at restore (gpuPairs:
 * CUDA_ERROR_NOT_SUPPORTED); a process cannot drive itself (CUDA_ERROR_INVALID_VALUE); a target
 * that is stopped (SIGSTOP) holds its controller until it continues, as it would the driver.
 * TESSEL_FAKE_CHECKPOINT=0 models a driver without the API: the calls answer
 * CUDA_ERROR_NOT_SUPPORTED and the process serves no requests.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fake_cuda_int.h"

/* How long a controller waiting for an answer sleeps on its futex before it looks whether the
 * target still lives: bounds how late a dead target is noticed.  The service thread itself
 * sleeps without a limit (an idle process makes no system call: t0518 counts them); a reset
 * wakes it through the futex and a later cuInit through svc_cv. */
#define CK_POLL_NS 100000000L

/* ---- futexes on the shared state (not private: the words are shared between processes) --- */

/* Sleep while *word == val, at most ns (< 0: no limit). */
static void futex_wait(uint32_t *word, uint32_t val, long ns)
{
    struct timespec ts = {.tv_sec = ns / 1000000000L, .tv_nsec = ns % 1000000000L};
    syscall(SYS_futex, word, FUTEX_WAIT, val, ns < 0 ? NULL : &ts, NULL, 0);
}

static void futex_wake(uint32_t *word)
{
    syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* ---- the gate ---------------------------------------------------------------------------- */

static int gate_closed; /* set while LOCKED or CHECKPOINTED: new calls wait */
static int gate_active; /* outermost entry-point calls in progress */
static __thread int gate_depth;
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;

static void gate_out(void)
{
    if (__atomic_sub_fetch(&gate_active, 1, __ATOMIC_SEQ_CST) == 0 &&
        __atomic_load_n(&gate_closed, __ATOMIC_SEQ_CST)) {
        pthread_mutex_lock(&gate_mu); /* the lock may be waiting for this call */
        pthread_cond_broadcast(&gate_cv);
        pthread_mutex_unlock(&gate_mu);
    }
}

int ckpt_gate_enter(void)
{
    if (gate_depth++ > 0)
        return 0;
    for (;;) {
        __atomic_add_fetch(&gate_active, 1, __ATOMIC_SEQ_CST);
        if (!__atomic_load_n(&gate_closed, __ATOMIC_SEQ_CST))
            return 1;
        gate_out(); /* not in progress while it waits, or the lock would wait for it */
        pthread_mutex_lock(&gate_mu);
        while (__atomic_load_n(&gate_closed, __ATOMIC_SEQ_CST))
            pthread_cond_wait(&gate_cv, &gate_mu);
        pthread_mutex_unlock(&gate_mu);
    }
}

void ckpt_gate_leave(int *token)
{
    (void)token;
    if (--gate_depth == 0)
        gate_out();
}

/* Close the gate and wait until no call is in progress, at most timeout_ms (0: no limit).
 * 0, or -1 on timeout with the gate open again. */
static int gate_close(unsigned timeout_ms)
{
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl); /* the condition variable's clock */
    dl.tv_sec += timeout_ms / 1000;
    dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    int rc = 0;
    pthread_mutex_lock(&gate_mu);
    __atomic_store_n(&gate_closed, 1, __ATOMIC_SEQ_CST);
    while (rc == 0 && __atomic_load_n(&gate_active, __ATOMIC_SEQ_CST) != 0) {
        if (timeout_ms == 0)
            pthread_cond_wait(&gate_cv, &gate_mu);
        else if (pthread_cond_timedwait(&gate_cv, &gate_mu, &dl) == ETIMEDOUT &&
                 __atomic_load_n(&gate_active, __ATOMIC_SEQ_CST) != 0)
            rc = -1;
    }
    if (rc < 0) {
        __atomic_store_n(&gate_closed, 0, __ATOMIC_SEQ_CST);
        pthread_cond_broadcast(&gate_cv);
    }
    pthread_mutex_unlock(&gate_mu);
    return rc;
}

static void gate_open(void)
{
    pthread_mutex_lock(&gate_mu);
    __atomic_store_n(&gate_closed, 0, __ATOMIC_SEQ_CST);
    pthread_cond_broadcast(&gate_cv);
    pthread_mutex_unlock(&gate_mu);
}

/* ---- this process as a target: its checkpoint, under g.lock ------------------------------- */

typedef struct {
    uint64_t base, len; /* an allocation's mapping; for a VMM handle, base 0 and fd its memfd */
    int fd;
    void *copy; /* the contents while checkpointed */
} saved_t;

static struct {
    CUprocessState state;
    saved_t *v;
    size_t n;
    uint64_t used[TFAKE_MAX_DEVICES]; /* what the process had charged, per device */
    uint32_t ctxs[TFAKE_MAX_DEVICES];
} ck;

static void saved_free(void)
{
    for (size_t i = 0; i < ck.n; i++)
        free(ck.v[i].copy);
    free(ck.v);
    ck.v = NULL;
    ck.n = 0;
}

static int rw_all(int fd, void *buf, uint64_t len, int write_)
{
    uint64_t done = 0;
    while (done < len) {
        ssize_t k = write_ ? pwrite(fd, (char *)buf + done, (size_t)(len - done), (off_t)done)
                           : pread(fd, (char *)buf + done, (size_t)(len - done), (off_t)done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -1;
        if (k == 0) { /* past the memfd's end: zeros */
            if (!write_)
                memset((char *)buf + done, 0, (size_t)(len - done));
            return write_ ? -1 : 0;
        }
        done += (uint64_t)k;
    }
    return 0;
}

/* Copy every piece of device memory to host memory, then release it on the device.  Either
 * all is saved and released (0) or nothing changed: CUDA_ERROR_OUT_OF_MEMORY (host memory),
 * CUDA_ERROR_NOT_SUPPORTED (managed memory, which the r570 driver cannot checkpoint either). */
static CUresult save_all(void)
{
    size_t n = 0;
    for (size_t i = 0; i < g.nalloc; i++) {
        if (g.allocs[i]->kind == A_MANAGED)
            return CUDA_ERROR_NOT_SUPPORTED; /* r570 does not checkpoint UVM memory */
        n += g.allocs[i]->kind == A_DEVICE || g.allocs[i]->kind == A_POOL;
    }
    for (obj_t *o = g.objs.next; o != &g.objs; o = o->next)
        n += o->kind == K_VMEM;
    ck.v = calloc(n ? n : 1, sizeof *ck.v);
    if (!ck.v)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t i = 0; i < g.nalloc; i++) {
        alloc_t *a = g.allocs[i];
        if (a->kind != A_DEVICE && a->kind != A_POOL)
            continue;
        saved_t *s = &ck.v[ck.n];
        *s = (saved_t){.base = a->base, .len = a->maplen, .fd = -1};
        if (!(s->copy = malloc(a->maplen ? a->maplen : 1)))
            goto nomem;
        memcpy(s->copy, (void *)(uintptr_t)a->base, (size_t)a->maplen);
        ck.n++;
    }
    for (obj_t *o = g.objs.next; o != &g.objs; o = o->next) {
        if (o->kind != K_VMEM)
            continue;
        vmem_t *h = (vmem_t *)o;
        saved_t *s = &ck.v[ck.n];
        *s = (saved_t){.len = h->size, .fd = h->fd};
        if (!(s->copy = malloc(h->size ? h->size : 1)) || rw_all(h->fd, s->copy, h->size, 0) < 0)
            goto nomem;
        ck.n++;
    }
    /* Everything copied: release the device side. */
    for (size_t i = 0; i < ck.n; i++) {
        saved_t *s = &ck.v[i];
        if (s->fd >= 0) {
            fallocate(s->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, (off_t)s->len);
        } else {
            madvise((void *)(uintptr_t)s->base, (size_t)s->len, MADV_DONTNEED);
            mprotect((void *)(uintptr_t)s->base, (size_t)s->len, PROT_NONE);
        }
    }
    tfake_state_lock(g.sh);
    tfake_procstate_t *p = tfake_state_find(g.sh, getpid());
    for (int d = 0; p && d < g.sh->ndev; d++) {
        tfake_devstate_t *ds = &g.sh->dev[d];
        ck.used[d] = p->used[d];
        ck.ctxs[d] = p->ctxs[d];
        p->ck_released[d] = p->used[d];
        ds->used = ds->used > p->used[d] ? ds->used - p->used[d] : 0;
        p->used[d] = 0;
        p->ctxs[d] = 0;
    }
    tfake_state_unlock(g.sh);
    return CUDA_SUCCESS;
nomem:
    if (ck.n < n && ck.v[ck.n].copy)
        ck.n++;
    saved_free();
    return CUDA_ERROR_OUT_OF_MEMORY;
}

/* Take the memory back on the same devices (all or none) and copy the contents back to the
 * same addresses.  CUDA_ERROR_OUT_OF_MEMORY: it does not fit now, nothing changed. */
static int fits_all(void)
{
    for (int d = 0; d < g.sh->ndev; d++) {
        tfake_devstate_t *ds = &g.sh->dev[d];
        if (ck.used[d] > ds->total || ds->used > ds->total - ck.used[d])
            return 0;
    }
    return 1;
}

static CUresult restore_all(void)
{
    tfake_state_lock(g.sh);
    if (!fits_all())
        tfake_state_reap(g.sh); /* a dead process may still hold what we need */
    tfake_procstate_t *p = tfake_state_find(g.sh, getpid());
    if (!p || !fits_all()) {
        tfake_state_unlock(g.sh);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (int d = 0; d < g.sh->ndev; d++) {
        g.sh->dev[d].used += ck.used[d];
        p->used[d] += ck.used[d];
        p->ctxs[d] += ck.ctxs[d];
        p->ck_released[d] = 0;
    }
    tfake_state_unlock(g.sh);
    int failed = 0;
    for (size_t i = 0; i < ck.n; i++) {
        saved_t *s = &ck.v[i];
        if (s->fd >= 0) {
            failed |= rw_all(s->fd, s->copy, s->len, 1) < 0;
        } else if (mprotect((void *)(uintptr_t)s->base, (size_t)s->len, PROT_READ | PROT_WRITE) <
                   0) {
            failed = 1;
        } else {
            memcpy((void *)(uintptr_t)s->base, s->copy, (size_t)s->len);
        }
    }
    saved_free();
    memset(ck.used, 0, sizeof ck.used);
    memset(ck.ctxs, 0, sizeof ck.ctxs);
    return failed ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS;
}

/* The simulated end of the work this process has queued on its devices. */
static uint64_t queued_until(void)
{
    uint64_t t = 0;
    for (obj_t *o = g.objs.next; o != &g.objs; o = o->next)
        if (o->kind == K_CTX && ((ctx_t *)o)->tail_ns > t)
            t = ((ctx_t *)o)->tail_ns;
    return t;
}

static CUprocessState cur_state(void)
{
    LOCK();
    CUprocessState s = ck.state;
    UNLOCK();
    return s;
}

/* Carry out one step in this process (the service thread). */
static CUresult serve(uint32_t op, uint32_t arg)
{
    CUprocessState st = cur_state();
    CUresult rc = CUDA_SUCCESS;
    switch (op) {
    case TFAKE_CK_LOCK:
        if (st != CU_PROCESS_STATE_RUNNING)
            return CUDA_ERROR_ILLEGAL_STATE;
        if (gate_close(arg) < 0)
            return CUDA_ERROR_NOT_READY;
        LOCK();
        ck.state = CU_PROCESS_STATE_LOCKED;
        UNLOCK();
        return CUDA_SUCCESS;
    case TFAKE_CK_CHECKPOINT:
        if (st != CU_PROCESS_STATE_LOCKED)
            return CUDA_ERROR_ILLEGAL_STATE;
        LOCK();
        uint64_t until = queued_until();
        UNLOCK();
        tfake_sleep_until(until); /* the work already queued finishes first */
        LOCK();
        if (g.inited && g.sh && (rc = save_all()) == CUDA_SUCCESS)
            ck.state = CU_PROCESS_STATE_CHECKPOINTED;
        UNLOCK();
        return rc;
    case TFAKE_CK_RESTORE:
        if (st != CU_PROCESS_STATE_CHECKPOINTED)
            return CUDA_ERROR_ILLEGAL_STATE;
        LOCK();
        rc = g.inited && g.sh ? restore_all() : CUDA_ERROR_NOT_INITIALIZED;
        if (rc == CUDA_SUCCESS)
            ck.state = CU_PROCESS_STATE_LOCKED;
        else if (rc == CUDA_ERROR_UNKNOWN)
            ck.state = CU_PROCESS_STATE_FAILED;
        UNLOCK();
        return rc;
    case TFAKE_CK_UNLOCK:
        if (st != CU_PROCESS_STATE_LOCKED)
            return CUDA_ERROR_ILLEGAL_STATE;
        LOCK();
        ck.state = CU_PROCESS_STATE_RUNNING;
        UNLOCK();
        gate_open();
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

/* ---- the service thread --------------------------------------------------------------------- */

static int svc_started; /* under g.lock */
static pid_t svc_tid;
static sem_t svc_ready;
static pthread_cond_t svc_cv = PTHREAD_COND_INITIALIZER; /* with g.lock: a cuInit happened */

/* Under g.lock: this process's slot, with the state locked; NULL (and unlocked) if none. */
static tfake_procstate_t *own_slot_locked(void)
{
    if (!g.inited || !g.sh)
        return NULL;
    tfake_state_lock(g.sh);
    tfake_procstate_t *p = tfake_state_find(g.sh, getpid());
    if (!p)
        tfake_state_unlock(g.sh);
    return p;
}

static void answer(uint32_t seq, CUresult rc)
{
    LOCK();
    tfake_procstate_t *p = own_slot_locked();
    if (p) {
        p->ck_result = rc;
        p->ck_state = ck.state;
        __atomic_store_n(&p->ck_done, seq, __ATOMIC_RELEASE);
        futex_wake(&p->ck_done);
        tfake_state_unlock(g.sh);
    }
    UNLOCK();
}

static void *service(void *arg)
{
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL); /* the program's signals go to its own threads */
    svc_tid = (pid_t)syscall(SYS_gettid);
    sem_post(&svc_ready);
    for (;;) {
        uint32_t *word = NULL, seen = 0, op = 0, a = 0;
        LOCK();
        tfake_procstate_t *p = own_slot_locked();
        if (!p) { /* reset (tests), until the next cuInit */
            pthread_cond_wait(&svc_cv, &g.lock);
            UNLOCK();
            continue;
        }
        p->ck_tid = svc_tid;
        word = &p->ck_req;
        seen = __atomic_load_n(&p->ck_req, __ATOMIC_ACQUIRE);
        if (seen != p->ck_done) {
            op = p->ck_op;
            a = p->ck_arg;
        }
        tfake_state_unlock(g.sh);
        UNLOCK();
        if (op)
            answer(seen, serve(op, a));
        else
            futex_wait(word, seen, -1); /* EFAULT after a reset unmapped it: looks again */
    }
    return NULL;
}

void ckpt_start_service(void)
{
    LOCK();
    int start = !svc_started && g.inited && !g.cfg.no_checkpoint && g.cfg.state_path[0];
    if (start)
        svc_started = 1;
    UNLOCK();
    if (start) {
        pthread_t t;
        pthread_attr_t at;
        sem_init(&svc_ready, 0, 0);
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &at, service, NULL) == 0) {
            while (sem_wait(&svc_ready) < 0 && errno == EINTR)
                ;
        } else {
            LOCK();
            svc_started = 0; /* the process serves no requests: controllers get NOT_SUPPORTED */
            UNLOCK();
        }
        pthread_attr_destroy(&at);
    }
    /* Known to controllers from now on (also after a reset and a new cuInit). */
    LOCK();
    tfake_procstate_t *p = svc_started ? own_slot_locked() : NULL;
    if (p) {
        p->ck_tid = svc_tid;
        p->ck_state = ck.state;
        futex_wake(&p->ck_req);
        tfake_state_unlock(g.sh);
    }
    pthread_cond_broadcast(&svc_cv);
    UNLOCK();
}

void ckpt_reset(void)
{
    /* The service thread sleeps on this slot, which is about to go: wake it to notice. */
    tfake_procstate_t *p = own_slot_locked();
    if (p) {
        futex_wake(&p->ck_req);
        tfake_state_unlock(g.sh);
    }
    saved_free();
    memset(ck.used, 0, sizeof ck.used);
    memset(ck.ctxs, 0, sizeof ck.ctxs);
    ck.state = CU_PROCESS_STATE_RUNNING;
    gate_open();
}

void ckpt_atfork_child(void)
{
    saved_free();
    memset(&ck, 0, sizeof ck);
    svc_started = 0;
    svc_tid = 0;
    gate_closed = 0;
    gate_active = 0;
    pthread_mutex_init(&gate_mu, NULL);
    pthread_cond_init(&gate_cv, NULL);
    pthread_cond_init(&svc_cv, NULL);
}

/* ---- this process as a controller ---------------------------------------------------------- */

static int zeroed(const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i])
            return 0;
    return 1;
}

/* Common checks; on success *slot is pid's slot with g.lock and the state lock held. */
static CUresult ck_target(int pid, tfake_procstate_t **slot)
{
    if (!g.inited)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (g.cfg.no_checkpoint)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (pid <= 0 || pid == getpid())
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    if (!g.inited || !g.sh) {
        UNLOCK();
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    tfake_state_lock(g.sh);
    tfake_state_reap(g.sh);
    tfake_procstate_t *p = tfake_state_find(g.sh, pid);
    CUresult rc = !p               ? CUDA_ERROR_INVALID_VALUE
                  : p->ck_tid == 0 ? CUDA_ERROR_NOT_SUPPORTED
                                   : CUDA_SUCCESS;
    if (rc != CUDA_SUCCESS) {
        tfake_state_unlock(g.sh);
        UNLOCK();
        return rc;
    }
    *slot = p;
    return CUDA_SUCCESS;
}

static void ck_untarget(void)
{
    tfake_state_unlock(g.sh);
    UNLOCK();
}

/* Post request op to pid's service thread and wait for its answer. */
static CUresult ck_request(int pid, uint32_t op, uint32_t arg)
{
    tfake_procstate_t *p;
    uint32_t seq;
    for (;;) {
        CUresult rc = ck_target(pid, &p);
        if (rc != CUDA_SUCCESS)
            return rc;
        pid_t owner = p->ck_owner;
        if (owner == 0 || (kill(owner, 0) < 0 && errno == ESRCH)) {
            p->ck_owner = getpid();
            p->ck_op = op;
            p->ck_arg = arg;
            seq = p->ck_req + 1;
            __atomic_store_n(&p->ck_req, seq, __ATOMIC_RELEASE);
            futex_wake(&p->ck_req);
            ck_untarget();
            break;
        }
        ck_untarget(); /* another controller's step is under way: wait for it */
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
    for (;;) {
        CUresult rc = ck_target(pid, &p);
        if (rc != CUDA_SUCCESS)
            return rc == CUDA_ERROR_NOT_SUPPORTED ? CUDA_ERROR_INVALID_VALUE : rc;
        if (__atomic_load_n(&p->ck_done, __ATOMIC_ACQUIRE) == seq) {
            rc = p->ck_result;
            p->ck_owner = 0;
            ck_untarget();
            return rc;
        }
        uint32_t done = p->ck_done, *word = &p->ck_done;
        ck_untarget();
        futex_wait(word, done, CK_POLL_NS);
    }
}

CUresult cuCheckpointProcessGetRestoreThreadId(int pid, int *tid)
{
    COUNT(cuCheckpointProcessGetRestoreThreadId);
    if (!tid)
        return g.inited ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_INITIALIZED;
    tfake_procstate_t *p;
    CUresult rc = ck_target(pid, &p);
    if (rc == CUDA_SUCCESS) {
        *tid = p->ck_tid;
        ck_untarget();
    }
    return rc;
}

CUresult cuCheckpointProcessGetState(int pid, CUprocessState *state)
{
    COUNT(cuCheckpointProcessGetState);
    if (!state)
        return g.inited ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_INITIALIZED;
    tfake_procstate_t *p;
    CUresult rc = ck_target(pid, &p);
    if (rc == CUDA_SUCCESS) {
        *state = (CUprocessState)p->ck_state;
        ck_untarget();
    }
    return rc;
}

CUresult cuCheckpointProcessLock(int pid, CUcheckpointLockArgs *args)
{
    COUNT(cuCheckpointProcessLock);
    if (args && (args->reserved0 || !zeroed(args->reserved1, sizeof args->reserved1)))
        return CUDA_ERROR_INVALID_VALUE;
    return ck_request(pid, TFAKE_CK_LOCK, args ? args->timeoutMs : 0);
}

CUresult cuCheckpointProcessCheckpoint(int pid, CUcheckpointCheckpointArgs *args)
{
    COUNT(cuCheckpointProcessCheckpoint);
    if (args && !zeroed(args, sizeof *args))
        return CUDA_ERROR_INVALID_VALUE;
    return ck_request(pid, TFAKE_CK_CHECKPOINT, 0);
}

CUresult cuCheckpointProcessRestore(int pid, CUcheckpointRestoreArgs *args)
{
    COUNT(cuCheckpointProcessRestore);
    if (args && (!zeroed(args->reserved, sizeof args->reserved) || args->reserved1))
        return CUDA_ERROR_INVALID_VALUE;
    if (args && (args->gpuPairs || args->gpuPairsCount))
        return CUDA_ERROR_NOT_SUPPORTED; /* the fake restores onto the same devices only */
    return ck_request(pid, TFAKE_CK_RESTORE, 0);
}

CUresult cuCheckpointProcessUnlock(int pid, CUcheckpointUnlockArgs *args)
{
    COUNT(cuCheckpointProcessUnlock);
    if (args && !zeroed(args, sizeof *args))
        return CUDA_ERROR_INVALID_VALUE;
    return ck_request(pid, TFAKE_CK_UNLOCK, 0);
}
