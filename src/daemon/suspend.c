/* suspend.c - suspend and resume a running job's GPU slice (POST /v1/jobs/{id}/suspend and
 * .../resume, docs/api.md; the mechanism: docs/compute-shares.md, "Suspend and resume").
 *
 * The slice file (<job dir>/slice, TESSEL_SLICE of the job) carries a control word that the
 * interposer checks at every launch: tshm_suspend sets it, and the job's new launches then wait
 * inside libtessel-cuda before they reach the driver (no signal is sent), while the work already
 * queued drains; tshm_drained tells when nothing is in flight any more.  tshm_resume clears it.
 *
 * What is kept where.  The slice file holds the word that takes effect; the store holds the
 * mark (jobs.suspended_ms, the state stays running) so that a restart of tesseld keeps the job
 * suspended: at recovery the store wins and the slice file is set to match it
 * (tessd_suspend_recover).  A suspend writes the slice first and the store second, a resume the
 * same, and each undoes its first step when the second fails: no side effect on failure.
 *
 * What a suspended job keeps.  Its processes, their GPU memory (the slice's memory stays
 * charged and the scheduler keeps its allocation: the job stays in the table of running jobs,
 * libsched is not told anything) and its place in its queue's usage.  It gives up only GPU
 * time.  A cancel or a preemption resumes the slice first (tessd_resume), so that the job's
 * SIGTERM handler can use the GPU to write a checkpoint; SIGKILL follows after the grace period
 * as for any job (the interposer's wait is a sleep, which SIGKILL ends).
 *
 * A job whose processes have not opened the slice file yet (no CUDA call so far) has none: a
 * suspend creates it (tshm_create: complete, then linked into place, owned by the job's
 * account), so the job's first launch is held too.
 *
 * The file is in the job's user's directory and is the user's: it is opened here with
 * O_NOFOLLOW, never through a mount point (tessd_job_open), and must be a regular file with one
 * link (owned by the job's account when tesseld
 * is root).  tesseld never maps it and never locks it: the user can truncate it at any moment
 * (a read through a mapping past a file's end is SIGBUS) or hold a flock on it.  Reads take a
 * copy (tshm_open_ro through /proc/self/fd, pread); the run state is read and written with
 * pread and pwrite of the header's two fields (tshm_fd_run_state, tshm_fd_set_run).
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/watchdog.h"
#include "daemon/daemon.h"
#include "libshm/shm.h"
#include "libutil/size.h"

/* The account a job of user runs as, when tesseld is root and runs it as that account
 * (launch.c): its uid and gid, and true; false when the job runs as tesseld's own user. */
static bool job_account(const char *user, uid_t *uid, gid_t *gid)
{
    if (geteuid() != 0)
        return false;
    struct passwd pwbuf, *pw = NULL;
    char pwmem[4096];
    if (getpwnam_r(user, &pwbuf, pwmem, sizeof pwmem, &pw) != 0 || !pw || pw->pw_uid == 0)
        return false;
    *uid = pw->pw_uid;
    *gid = pw->pw_gid;
    return true;
}

/* Open the job's slice file (O_RDWR or O_RDONLY), checked as the header comment says; with
 * create, make it (complete, the job's account's) when it does not exist.  An fd, or -1 with
 * errno and err. */
static int slice_fd(tessd_t *d, const tessd_run_t *r, bool rw, bool create, tsl_error_t *err)
{
    char dir[PATH_MAX], path[PATH_MAX];
    tessd_job_dir(d, r->id, dir, sizeof dir);
    if (tessd_pathf(path, sizeof path, "%s/slice", dir) < 0)
        return tsl_errprintf(err, "job %lld: slice path too long", (long long)r->id);
    uid_t uid = geteuid();
    gid_t gid = getegid();
    bool as_user = job_account(r->user, &uid, &gid);
    /* Never through a mount point: a file system of the user's over the job's directory or
     * over the file (FUSE) is EXDEV at once, not a wait for its server with the lock held. */
    int flags = rw ? O_RDWR : O_RDONLY;
    int fd = tessd_job_open(d, r->id, "slice", flags, 0);
    if (fd < 0 && errno == ENOENT && create) {
        /* Made below the directory as it is underneath any mount (/proc/self/fd/N/slice, N a
         * descriptor of it that crossed none): the temporary is a new name there, and the
         * final link fails with EEXIST rather than replace anything.  EEXIST: the
         * interposer linked its own file into place meanwhile; open that one. */
        int dfd = tessd_job_dirfd(d, r->id);
        if (dfd < 0)
            return tsl_errprintf(err, "%s: %s", dir, strerror(errno));
        char at[64];
        snprintf(at, sizeof at, "/proc/self/fd/%d/slice", dfd);
        tsl_error_t e;
        int rc = tshm_create(at, uid, gid, 0600, &e);
        int saved = errno;
        close(dfd);
        if (rc < 0 && saved != EEXIST) {
            errno = saved;
            return tsl_errprintf(err, "job %lld: %s", (long long)r->id, e.text);
        }
        fd = tessd_job_open(d, r->id, "slice", flags, 0);
    }
    if (fd < 0)
        return tsl_errprintf(err, "%s: %s", path,
                             errno == EXDEV ? "a file system is mounted on the job's directory"
                                            : strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
        (as_user && st.st_uid != uid)) {
        close(fd);
        errno = EPERM;
        return tsl_errprintf(err, "%s is not the job's slice file (a regular file of its own)",
                             path);
    }
    return fd;
}

tshm_t *tessd_slice_open(tessd_t *d, const tessd_run_t *r, tsl_error_t *err)
{
    int fd = slice_fd(d, r, false, false, err);
    if (fd < 0)
        return NULL;
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    tsl_error_t e;
    tshm_t *s = tshm_open_ro(path, &e);
    int saved = errno;
    close(fd);
    if (!s) {
        errno = saved;
        tsl_errprintf(err, "job %lld: slice file: %s", (long long)r->id, e.text);
    }
    return s;
}

/* Set the run state of job r's slice (creating the file with create) and say what it was
 * (*was, may be NULL).  0, or -1 with errno and err (ENOENT: no slice file, without create). */
static int slice_set_run(tessd_t *d, const tessd_run_t *r, int state, bool create, int *was,
                         tsl_error_t *err)
{
    int fd = slice_fd(d, r, true, create, err);
    if (fd < 0)
        return -1;
    tsl_error_t e;
    int old = tshm_fd_run_state(fd, &e);
    int rc = old < 0 ? -1 : tshm_fd_set_run(fd, state, &e);
    int saved = errno;
    close(fd);
    if (rc < 0) {
        errno = saved;
        return tsl_errprintf(err, "job %lld: slice file: %s", (long long)r->id, e.text);
    }
    if (was)
        *was = old;
    return 0;
}

bool tessd_has_slice(const tessd_t *d, const tessd_run_t *r)
{
    return d->interposer[0] && r->member.ngpus > 0;
}

int tessd_suspend(tessd_t *d, tessd_run_t *r, const char *who, const char *why, tsl_error_t *err)
{
    int was;
    if (slice_set_run(d, r, TSHM_SUSPENDED, true, &was, err) < 0)
        return -2;
    int64_t now = tessd_now_ms();
    tjm_change_t chg = {.now_ms = now};
    if (tessd_job_apply(d, r->id, TJM_EV_SUSPEND, &chg, who, why, err) < 0) {
        if (was != TSHM_SUSPENDED)
            slice_set_run(d, r, TSHM_RUNNING, false, NULL, NULL);
        return -1;
    }
    r->suspended_ms = now;
    return 0;
}

int tessd_resume(tessd_t *d, tessd_run_t *r, const char *who, const char *why, tsl_error_t *err)
{
    /* No slice file: nothing can be held (the suspend made one; it may have been removed by
     * the job itself), so only the mark goes. */
    tsl_error_t e;
    int was = TSHM_RUNNING;
    bool have = slice_set_run(d, r, TSHM_RUNNING, false, &was, &e) == 0;
    if (!have && errno != ENOENT) {
        tsl_errprintf(err, "%s", e.text);
        return -2;
    }
    if (tessd_job_apply(d, r->id, TJM_EV_RESUME, NULL, who, why, err) < 0) {
        if (have && was == TSHM_SUSPENDED)
            slice_set_run(d, r, TSHM_SUSPENDED, false, NULL, NULL);
        return -1;
    }
    if (r->suspended_ms)
        r->suspended_total_ms += tessd_now_ms() - r->suspended_ms; /* not counted (batch.h) */
    r->suspended_ms = 0;
    /* A job the GPU-memory watchdog stopped (SIGSTOP) goes on; its watchdog continues the
     * rest of its processes (watchdog.h).  Harmless for a job that was not stopped. */
    if (r->job_pid > 0)
        kill(-r->job_pid, SIGCONT);
    return 0;
}

int tessd_slice_drained(tessd_t *d, const tessd_run_t *r)
{
    tshm_t *s = tessd_slice_open(d, r, NULL);
    if (!s)
        return -1;
    int v = tshm_drained(s);
    tshm_close(s);
    return v;
}

void tessd_suspend_recover(tessd_t *d, tessd_run_t *r)
{
    int want = r->suspended_ms > 0 ? TSHM_SUSPENDED : TSHM_RUNNING;
    /* A job the store has as running: no file means nothing is held, which is right unless
     * the store says suspended, when one is made (suspended) as a suspend would. */
    int fd;
    tsl_error_t err;
    if ((fd = slice_fd(d, r, true, want == TSHM_SUSPENDED, &err)) < 0) {
        if (errno != ENOENT || want == TSHM_SUSPENDED)
            tessd_log("job %lld: cannot check its slice's suspend state: %s", (long long)r->id,
                      err.text);
        return;
    }
    int is = tshm_fd_run_state(fd, &err);
    if (is < 0) {
        tessd_log("job %lld: cannot check its slice's suspend state: %s", (long long)r->id,
                  err.text);
    } else if (is != want) {
        /* The store wins: a suspend or resume interrupted between its two writes, or a
         * slice file changed behind tesseld's back. */
        if (tshm_fd_set_run(fd, want, &err) < 0)
            tessd_log("job %lld: cannot %s its slice: %s", (long long)r->id,
                      want == TSHM_SUSPENDED ? "suspend" : "resume", err.text);
        else
            tessd_log("job %lld: slice file said %s, the store %s: %s it again", (long long)r->id,
                      is == TSHM_SUSPENDED ? "suspended" : "running",
                      want == TSHM_SUSPENDED ? "suspended" : "running",
                      want == TSHM_SUSPENDED ? "suspended" : "resumed");
    }
    close(fd);
}

/* ---- Suspend that gives the GPU memory back (docs/suspend.md, "How tesseld drives it") ------
 *
 * tesseld itself (root) calls the driver's checkpoint API on the job's processes: those below
 * its tessel-shim, as the shim's watchdog finds them (tsw_snapshot), read when the suspend is
 * asked.  What was given back is measured, never taken from the job: NVML's used memory of the
 * job's GPUs before and after the checkpoint.  libsched is the main thread's alone, so an API
 * handler only marks the job (r->gpu_released, r->resume_wanted) and the tick releases or
 * takes back its slice (tessd_ckpt_tick). */

/* How long a lock waits for the CUDA calls a process has in progress: a job that stays inside
 * a call longer keeps its memory (today's suspend). */
#define CKPT_LOCK_MS 5000

static tagent_ckpt_t *ckpt_open(tessd_t *d, tsl_error_t *err)
{
    if (d->ckpt)
        return d->ckpt;
    /* The driver tesseld was started with, never one a job names: the fake's with --fake-gpus,
     * else the system's libcuda.so.1 as the dynamic loader finds it for tesseld. */
    char lib[PATH_MAX + 32];
    if (d->fake_spec[0])
        snprintf(lib, sizeof lib, "%s/libcuda.so.1", d->fake_lib_dir);
    else
        snprintf(lib, sizeof lib, "libcuda.so.1");
    d->ckpt = tagent_ckpt_open(lib, err);
    return d->ckpt;
}

/* The job's processes (below its shim, the shim itself excluded): malloc'd pids, their count
 * in *n; NULL when they cannot be listed. */
static pid_t *job_pids(const tessd_run_t *r, size_t *n)
{
    tsw_pstat_t *procs;
    size_t np;
    *n = 0;
    if (r->shim_pid <= 0 || tsw_snapshot(r->shim_pid, &procs, &np) < 0)
        return NULL;
    pid_t *pids = malloc((np ? np : 1) * sizeof *pids);
    if (pids)
        for (size_t i = 0; i < np; i++)
            if (procs[i].kin == TSW_MEMBER)
                pids[(*n)++] = procs[i].pid;
    free(procs);
    return pids;
}

/* NVML's used memory summed over the job's GPUs (every process's); false when NVML cannot say. */
static bool gpus_used(tessd_t *d, const tessd_run_t *r, uint64_t *sum)
{
    *sum = 0;
    if (!d->nvml || r->member.ngpus == 0)
        return false;
    for (uint32_t k = 0; k < r->member.ngpus; k++) {
        uint64_t total, used, avail;
        if (tagent_nvml_memory(d->nvml, r->member.gpu[k], &total, &used, &avail) < 0)
            return false;
        *sum += used;
    }
    return true;
}

/* Checkpoint job r's CUDA processes: the bytes given back (> 0), or 0 with the reason in why
 * when the job keeps its memory (everything it touched is as it was). */
static uint64_t ckpt_suspend(tessd_t *d, tessd_run_t *r, char *why, size_t len)
{
    tsl_error_t e;
    tagent_ckpt_t *c = ckpt_open(d, &e);
    if (!c) {
        snprintf(why, len, "%.200s",
                 errno == ENOTSUP ? "the driver has no checkpoint API" : e.text);
        return 0;
    }
    uint64_t before, after;
    if (!gpus_used(d, r, &before)) {
        snprintf(why, len, "NVML cannot measure the memory of the job's GPUs");
        return 0;
    }
    size_t n;
    pid_t *pids = job_pids(r, &n);
    if (!pids) {
        snprintf(why, len, "the job's processes cannot be listed");
        return 0;
    }
    int k = tagent_ckpt_suspend(c, pids, n, CKPT_LOCK_MS, &e);
    uint64_t released = 0;
    if (k < 0)
        snprintf(why, len, "checkpoint failed: %.200s", e.text);
    else if (k == 0)
        snprintf(why, len, "no process of the job uses the GPU");
    else if (!gpus_used(d, r, &after) || after >= before) {
        /* Nothing measurably given back (or no way to tell): put it back as it was. */
        snprintf(why, len, "the checkpoint gave no GPU memory back");
        if (tagent_ckpt_resume(c, pids, n, &e) < 0)
            tessd_log("job %lld: cannot undo its checkpoint: %s", (long long)r->id, e.text);
    } else {
        released = before - after;
    }
    free(pids);
    return released;
}

/* Take back a checkpoint just made (its memory was given back a moment ago). */
static void ckpt_undo(tessd_t *d, tessd_run_t *r)
{
    tsl_error_t e;
    size_t n;
    pid_t *pids = job_pids(r, &n);
    if (!pids || tagent_ckpt_resume(d->ckpt, pids, n, &e) < 0)
        tessd_log("job %lld: cannot undo its checkpoint: %s", (long long)r->id,
                  pids ? e.text : "its processes cannot be listed");
    free(pids);
}

int tessd_suspend_gpu(tessd_t *d, tessd_run_t *r, const char *who, tsl_error_t *err)
{
    int was;
    if (slice_set_run(d, r, TSHM_SUSPENDED, true, &was, err) < 0)
        return -2;
    char kept[256], why[320], sz[32];
    uint64_t released = ckpt_suspend(d, r, kept, sizeof kept);
    if (released)
        snprintf(why, sizeof why, "GPU memory given back: %s",
                 tsl_format_size(released, sz, sizeof sz));
    else
        snprintf(why, sizeof why, "GPU memory kept: %.250s", kept);
    int64_t now = tessd_now_ms();
    tjm_change_t chg = {.now_ms = now};
    if (tessd_job_apply(d, r->id, TJM_EV_SUSPEND, &chg, who, why, err) < 0) {
        if (released)
            ckpt_undo(d, r);
        if (was != TSHM_SUSPENDED)
            slice_set_run(d, r, TSHM_RUNNING, false, NULL, NULL);
        return -1;
    }
    tsl_error_t e;
    if (released && tstore_job_set_gpu_released(d->store, r->id, released, &e) < 0) {
        /* Not kept, so a restart could not know it: the memory is taken back and the job
         * stays suspended the old way. */
        tessd_log("job %lld: cannot record the GPU memory it gave back (%s): restored, it keeps "
                  "its memory",
                  (long long)r->id, e.text);
        ckpt_undo(d, r);
        released = 0;
    }
    r->suspended_ms = now;
    r->gpu_released = released;
    r->resume_wanted = false;
    if (released)
        tessd_wake(d); /* the tick releases its slice in libsched */
    return 0;
}

int tessd_resume_gpu(tessd_t *d, tessd_run_t *r, const char *who, tsl_error_t *err)
{
    if (!r->gpu_released)
        return tessd_resume(d, r, who, NULL, err);
    r->resume_wanted = true;
    snprintf(r->resume_by, sizeof r->resume_by, "%s", who);
    r->resume_wait[0] = '\0';
    if (tstore_job_set_reason(d->store, r->id, "resume asked: waiting for its GPU", err) < 0)
        return -1;
    tessd_wake(d);
    return 1;
}

/* Give job r's slice back to libsched (it took it back for a restore that cannot go on). */
static void slice_unhold(tessd_t *d, tessd_run_t *r)
{
    if (d->sched && r->holds)
        tsched_job_remove(d->sched, r->q.id, tessd_sched_now());
    r->holds = false;
}

int tessd_ckpt_restore(tessd_t *d, tessd_run_t *r, const char *who, char *why, size_t len)
{
    char sz[32];
    tsl_format_size(r->gpu_released, sz, sizeof sz);
    unsigned gpu0 = r->member.ngpus ? r->member.gpu[0] : 0;
    /* Its slice first: the same GPUs (its addresses and device are kept), as libsched sees
     * them, so that no pending job is placed in what the restore takes. */
    if (d->sched && !r->holds) {
        double now = tessd_sched_now();
        tsl_error_t se;
        if (tsched_job_submit(d->sched, &r->q, &se) < 0 && errno != EEXIST) {
            snprintf(why, len, "waiting for %s on GPU %u (the scheduler refused it: %.80s)", sz,
                     gpu0, se.text);
            return 1;
        }
        if (tsched_job_started(d->sched, r->q.id, &r->member, 1, now) < 0) {
            int e = errno;
            tsched_job_remove(d->sched, r->q.id, now);
            if (e == ENOSPC)
                snprintf(why, len, "waiting for %s on GPU %u (another job holds its slice)", sz,
                         gpu0);
            else
                snprintf(why, len, "waiting for %s on GPU %u (the scheduler refused it: %s)", sz,
                         gpu0, strerror(e));
            return 1;
        }
        r->holds = true;
    }
    /* Then the device's own figure: memory outside tesseld's slices (another process, a job
     * of this job's own that escaped the checkpoint) counts too. */
    uint64_t per = r->gpu_released / (r->member.ngpus ? r->member.ngpus : 1);
    for (uint32_t k = 0; d->nvml && k < r->member.ngpus; k++) {
        uint64_t total, used, avail;
        if (tagent_nvml_memory(d->nvml, r->member.gpu[k], &total, &used, &avail) == 0 &&
            avail < per) {
            slice_unhold(d, r);
            snprintf(why, len, "waiting for %s on GPU %u", sz, r->member.gpu[k]);
            return 1;
        }
    }
    tsl_error_t e;
    tagent_ckpt_t *c = ckpt_open(d, &e);
    size_t n = 0;
    pid_t *pids = c ? job_pids(r, &n) : NULL;
    int k = pids ? tagent_ckpt_resume(c, pids, n, &e) : -1;
    int saved = errno;
    free(pids);
    if (k < 0) {
        slice_unhold(d, r);
        if (c && pids && saved == EAGAIN) {
            snprintf(why, len, "waiting for %s on GPU %u (the restore did not fit)", sz, gpu0);
            return 1;
        }
        snprintf(why, len, "restore failed: %.120s",
                 !c      ? e.text
                 : !pids ? "the job's processes cannot be listed"
                         : e.text);
        return -1;
    }
    if (tessd_resume(d, r, who, "GPU memory restored", &e) < 0) {
        snprintf(why, len, "restored, but the resume failed: %.100s", e.text);
        return -1;
    }
    if (tstore_job_set_gpu_released(d->store, r->id, 0, &e) < 0)
        tessd_log("job %lld: cannot clear its released GPU memory: %s", (long long)r->id, e.text);
    r->gpu_released = 0;
    r->resume_wanted = false;
    return 0;
}

void tessd_ckpt_tick(tessd_t *d)
{
    for (size_t i = 0; i < d->nruns; i++) {
        tessd_run_t *r = &d->runs[i];
        if (!r->gpu_released || !r->suspended_ms)
            continue;
        if (!r->resume_wanted) {
            if (r->holds) {
                slice_unhold(d, r);
                d->sched_dirty = true; /* a pending job may fit in it now */
            }
            continue;
        }
        char why[160];
        int rc = tessd_ckpt_restore(d, r, r->resume_by, why, sizeof why);
        if (rc == 0) {
            tessd_log("job %lld resumed by %s (its GPU memory restored)", (long long)r->id,
                      r->resume_by);
            continue;
        }
        if (rc < 0)
            r->resume_wanted = false;
        if (strcmp(why, r->resume_wait) != 0) {
            snprintf(r->resume_wait, sizeof r->resume_wait, "%.150s", why);
            tsl_error_t e;
            if (tstore_job_set_reason(d->store, r->id, why, &e) < 0)
                tessd_log("job %lld: cannot record why its resume waits: %s", (long long)r->id,
                          e.text);
            tessd_log("job %lld: %s", (long long)r->id, why);
        }
    }
}
