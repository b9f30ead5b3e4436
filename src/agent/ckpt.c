/* ckpt.c - suspend and resume a job's GPU state through cuCheckpointProcess* (see ckpt.h). */
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/ckpt.h"
#include "cudaabi/cuda_abi.h"
#include "libutil/procstat.h"

struct tagent_ckpt {
    void *dl;
    cuGetErrorName_fn errname;
    cuCheckpointProcessGetState_fn state;
    cuCheckpointProcessLock_fn lock;
    cuCheckpointProcessCheckpoint_fn checkpoint;
    cuCheckpointProcessRestore_fn restore;
    cuCheckpointProcessUnlock_fn unlock;
};

static const char *ename(const tagent_ckpt_t *c, CUresult rc)
{
    const char *s = NULL;
    if (!c->errname || c->errname(rc, &s) != CUDA_SUCCESS || !s)
        return "unknown CUDA error";
    return s;
}

tagent_ckpt_t *tagent_ckpt_open(const char *lib, tsl_error_t *err)
{
    tagent_ckpt_t *c = calloc(1, sizeof *c);
    if (!c) {
        tsl_errprintf(err, "out of memory");
        return NULL;
    }
    /* RTLD_GLOBAL is not needed: every call goes through the pointers below. */
    c->dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!c->dl) {
        tsl_errprintf(err, "cannot load the CUDA driver %s: %s", lib, dlerror());
        free(c);
        errno = ENOENT;
        return NULL;
    }
    cuInit_fn init = (cuInit_fn)dlsym(c->dl, "cuInit");
    c->errname = (cuGetErrorName_fn)dlsym(c->dl, "cuGetErrorName");
    c->state = (cuCheckpointProcessGetState_fn)dlsym(c->dl, "cuCheckpointProcessGetState");
    c->lock = (cuCheckpointProcessLock_fn)dlsym(c->dl, "cuCheckpointProcessLock");
    c->checkpoint = (cuCheckpointProcessCheckpoint_fn)dlsym(c->dl, "cuCheckpointProcessCheckpoint");
    c->restore = (cuCheckpointProcessRestore_fn)dlsym(c->dl, "cuCheckpointProcessRestore");
    c->unlock = (cuCheckpointProcessUnlock_fn)dlsym(c->dl, "cuCheckpointProcessUnlock");
    int e = 0;
    CUresult rc = CUDA_SUCCESS;
    if (!init) {
        tsl_errprintf(err, "%s is not a CUDA driver (no cuInit)", lib);
        e = ENOENT;
    } else if (!c->state || !c->lock || !c->checkpoint || !c->restore || !c->unlock) {
        tsl_errprintf(err, "the CUDA driver has no checkpoint API (driver 570 or later needed)");
        e = ENOTSUP;
    } else if ((rc = init(0)) != CUDA_SUCCESS) {
        tsl_errprintf(err, "cuInit: %s", ename(c, rc));
        e = EIO;
    } else {
        /* Ask about pid 1 (init, no CUDA process: CUDA_ERROR_INVALID_VALUE): NOT_SUPPORTED
         * means the driver has the symbols but not the feature. */
        CUprocessState st;
        if ((rc = c->state(1, &st)) == CUDA_ERROR_NOT_SUPPORTED) {
            tsl_errprintf(err, "the CUDA driver does not support checkpointing (%s)", ename(c, rc));
            e = ENOTSUP;
        }
    }
    if (e) {
        free(c); /* the driver stays loaded: see ckpt.h */
        errno = e;
        return NULL;
    }
    return c;
}

void tagent_ckpt_close(tagent_ckpt_t *c)
{
    free(c);
}

static int errno_of(CUresult rc)
{
    switch (rc) {
    case CUDA_ERROR_NOT_READY:
        return ETIMEDOUT;
    case CUDA_ERROR_NOT_SUPPORTED:
        return ENOTSUP;
    case CUDA_ERROR_OUT_OF_MEMORY:
        return ENOMEM;
    case CUDA_ERROR_ILLEGAL_STATE:
        return EBUSY;
    default:
        return EIO;
    }
}

/* Whether pids[i] is still the process it was listed as (starts[i]: its start time, field 22
 * of /proc/PID/stat, read when the pids were listed; a pid and a start time name one process,
 * the numbers being reused only by later processes): 1 yes, 0 no (gone, or the number is
 * another process's now: left alone), -1 cannot tell (errno).  No starts: 1. */
static int same(const uint64_t *starts, const pid_t *pids, size_t i)
{
    if (!starts)
        return 1;
    tsl_procstat_t ps;
    if (starts[i] == 0)
        return 0;
    if (tsl_procstat_read(pids[i], &ps) < 0)
        return errno == ENOENT || errno == ESRCH ? 0 : -1;
    return ps.start_time == starts[i];
}

/* What the step works on now (ckpt.h, tagent_ckpt_cur_t). */
static void publish(tagent_ckpt_cur_t *cur, size_t v)
{
    if (cur)
        atomic_store(cur, v);
}

/* Put pid back to RUNNING from wherever a suspend left it (best effort: the error being
 * reported is the first one). */
static void undo(tagent_ckpt_t *c, pid_t pid)
{
    CUprocessState st;
    if (c->state(pid, &st) != CUDA_SUCCESS)
        return;
    if (st == CU_PROCESS_STATE_CHECKPOINTED && c->restore(pid, NULL) == CUDA_SUCCESS)
        st = CU_PROCESS_STATE_LOCKED;
    if (st == CU_PROCESS_STATE_LOCKED)
        c->unlock(pid, NULL);
}

int tagent_ckpt_suspend(tagent_ckpt_t *c, const pid_t *pids, size_t n, unsigned timeout_ms,
                        tsl_error_t *err)
{
    return tagent_ckpt_suspend_ids(c, pids, NULL, n, timeout_ms, err);
}

int tagent_ckpt_suspend_ids(tagent_ckpt_t *c, const pid_t *pids, const uint64_t *starts, size_t n,
                            unsigned timeout_ms, tsl_error_t *err)
{
    return tagent_ckpt_suspend_gated(c, pids, starts, n, timeout_ms, NULL, NULL, NULL, err);
}

int tagent_ckpt_suspend_gated(tagent_ckpt_t *c, const pid_t *pids, const uint64_t *starts, size_t n,
                              unsigned timeout_ms, tagent_ckpt_gate_f gate, void *arg,
                              tagent_ckpt_cur_t *cur, tsl_error_t *err)
{
    bool *mine = calloc(n ? n : 1, sizeof *mine); /* locked by this call */
    if (!mine) {
        errno = ENOMEM;
        return tsl_errprintf(err, "out of memory");
    }
    size_t i = 0, count = 0;
    CUresult rc = CUDA_SUCCESS;
    const char *step = "lock";
    for (; i < n; i++) {
        CUprocessState st;
        int is = same(starts, pids, i);
        if (is < 0) {
            rc = CUDA_ERROR_UNKNOWN;
            step = "identity check";
            goto fail;
        }
        if (!is || c->state(pids[i], &st) != CUDA_SUCCESS)
            continue; /* not a CUDA process (or gone) */
        CUcheckpointLockArgs la = {.timeoutMs = timeout_ms};
        if ((rc = c->lock(pids[i], &la)) != CUDA_SUCCESS)
            goto fail;
        mine[i] = true;
        count++;
    }
    /* Every process locked: the copies may begin once the gate says so (the lock's wait is
     * over, whatever a stopped process made it last). */
    if (count > 0 && gate && gate(arg) < 0) {
        for (size_t k = 0; k < n; k++)
            if (mine[k] && same(starts, pids, k) == 1)
                undo(c, pids[k]);
        free(mine);
        errno = ECANCELED;
        return tsl_errprintf(err, "the checkpoint was not let copy (tesseld is stopping)");
    }
    step = "checkpoint";
    for (i = 0; i < n; i++) {
        /* Locked, so it cannot have exited meanwhile unless killed: then it is dropped. */
        if (mine[i] && same(starts, pids, i) == 0) {
            mine[i] = false;
            count--;
            continue;
        }
        if (!mine[i])
            continue;
        publish(cur, i + 1);
        rc = c->checkpoint(pids[i], NULL);
        publish(cur, 0);
        if (rc != CUDA_SUCCESS)
            goto fail;
    }
    free(mine);
    return (int)count;
fail:;
    pid_t bad = pids[i];
    for (size_t k = 0; k < n; k++)
        if (mine[k] && same(starts, pids, k) == 1)
            undo(c, pids[k]);
    free(mine);
    errno = errno_of(rc);
    return tsl_errprintf(err, "process %d: %s failed: %s", (int)bad, step, ename(c, rc));
}

int tagent_ckpt_resume(tagent_ckpt_t *c, const pid_t *pids, size_t n, tsl_error_t *err)
{
    return tagent_ckpt_resume_ids(c, pids, NULL, n, err);
}

int tagent_ckpt_resume_ids(tagent_ckpt_t *c, const pid_t *pids, const uint64_t *starts, size_t n,
                           tsl_error_t *err)
{
    return tagent_ckpt_resume_watched(c, pids, starts, n, NULL, err);
}

int tagent_ckpt_resume_watched(tagent_ckpt_t *c, const pid_t *pids, const uint64_t *starts,
                               size_t n, tagent_ckpt_cur_t *cur, tsl_error_t *err)
{
    for (size_t i = 0; i < n; i++)
        if (same(starts, pids, i) < 0) {
            int e = errno;
            errno = EIO;
            return tsl_errprintf(err, "process %d: cannot tell whether it is the one listed: %s",
                                 (int)pids[i], strerror(e));
        }
    for (size_t i = 0; i < n; i++) {
        CUprocessState st;
        if (same(starts, pids, i) != 1 || c->state(pids[i], &st) != CUDA_SUCCESS ||
            st != CU_PROCESS_STATE_CHECKPOINTED)
            continue;
        publish(cur, i + 1);
        CUresult rc = c->restore(pids[i], NULL);
        publish(cur, 0);
        if (rc != CUDA_SUCCESS) {
            errno = rc == CUDA_ERROR_OUT_OF_MEMORY ? EAGAIN : EIO;
            return tsl_errprintf(err, "process %d: restore failed: %s", (int)pids[i], ename(c, rc));
        }
    }
    int count = 0;
    for (size_t i = 0; i < n; i++) {
        CUprocessState st;
        if (same(starts, pids, i) != 1 || c->state(pids[i], &st) != CUDA_SUCCESS)
            continue;
        if (st == CU_PROCESS_STATE_FAILED) {
            errno = EIO;
            return tsl_errprintf(err, "process %d: the driver left it FAILED", (int)pids[i]);
        }
        if (st != CU_PROCESS_STATE_LOCKED)
            continue;
        CUresult rc = c->unlock(pids[i], NULL);
        if (rc != CUDA_SUCCESS) {
            errno = EIO;
            return tsl_errprintf(err, "process %d: unlock failed: %s", (int)pids[i], ename(c, rc));
        }
        count++;
    }
    return count;
}
