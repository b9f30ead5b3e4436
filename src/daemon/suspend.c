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
 * suspend creates it (empty, owned by the job's account; the interposer initialises an empty
 * file under its lock, or tshm_attach here does), so the job's first launch is held too.
 *
 * The file is in the job's user's directory: it is opened here with O_NOFOLLOW, must be a
 * regular file with one link (owned by the job's account when tesseld is root), and libshm maps
 * that very file through /proc/self/fd.
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "libshm/shm.h"

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
 * create, make it (empty) when it does not exist.  An fd, or -1 with errno and err. */
static int slice_fd(tessd_t *d, const tessd_run_t *r, bool rw, bool create, tsl_error_t *err)
{
    char dir[PATH_MAX], path[PATH_MAX];
    tessd_job_dir(d, r->id, dir, sizeof dir);
    if (tessd_pathf(path, sizeof path, "%s/slice", dir) < 0)
        return tsl_errprintf(err, "job %lld: slice path too long", (long long)r->id);
    uid_t uid = 0;
    gid_t gid = 0;
    bool as_user = job_account(r->user, &uid, &gid);
    int flags = (rw ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY;
    int fd = open(path, flags);
    if (fd < 0 && errno == ENOENT && create) {
        /* O_EXCL: the interposer may be linking its own file into place right now; the
         * loser of that race opens the winner's. */
        fd = open(path, flags | O_CREAT | O_EXCL, 0600);
        if (fd >= 0 && as_user && fchown(fd, uid, gid) < 0) {
            int saved = errno;
            unlink(path);
            close(fd);
            errno = saved;
            return tsl_errprintf(err, "chown %s: %s", path, strerror(errno));
        }
        if (fd < 0 && errno == EEXIST)
            fd = open(path, flags);
    }
    if (fd < 0)
        return tsl_errprintf(err, "%s: %s", path, strerror(errno));
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

tshm_t *tessd_slice_open(tessd_t *d, const tessd_run_t *r, bool rw, bool create, tsl_error_t *err)
{
    int fd = slice_fd(d, r, rw, create, err);
    if (fd < 0)
        return NULL;
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    tsl_error_t e;
    tshm_t *s = rw ? tshm_attach(path, &e) : tshm_open_ro(path, &e);
    int saved = errno;
    close(fd);
    if (!s) {
        errno = saved;
        tsl_errprintf(err, "job %lld: slice file: %s", (long long)r->id, e.text);
    }
    return s;
}

bool tessd_has_slice(const tessd_t *d, const tessd_run_t *r)
{
    return d->interposer[0] && r->member.ngpus > 0;
}

int tessd_suspend(tessd_t *d, tessd_run_t *r, const char *who, const char *why, tsl_error_t *err)
{
    tshm_t *s = tessd_slice_open(d, r, true, true, err);
    if (!s)
        return -1;
    int rc = -1;
    bool was = tshm_run_state(s) == TSHM_SUSPENDED;
    if (tshm_suspend(s) < 0) {
        tsl_errprintf(err, "job %lld: suspend: %s", (long long)r->id, strerror(errno));
        goto out;
    }
    int64_t now = tessd_now_ms();
    tjm_change_t chg = {.now_ms = now};
    if (tessd_job_apply(d, r->id, TJM_EV_SUSPEND, &chg, who, why, err) < 0) {
        if (!was)
            tshm_resume(s);
        goto out;
    }
    r->suspended_ms = now;
    rc = 0;
out:
    tshm_close(s);
    return rc;
}

int tessd_resume(tessd_t *d, tessd_run_t *r, const char *who, const char *why, tsl_error_t *err)
{
    /* No slice file: nothing can be held (the suspend made one; it may have been removed by
     * the job itself), so only the mark goes. */
    tsl_error_t e;
    tshm_t *s = tessd_slice_open(d, r, true, false, &e);
    if (!s && errno != ENOENT) {
        tsl_errprintf(err, "%s", e.text);
        return -1;
    }
    bool was = s && tshm_run_state(s) == TSHM_SUSPENDED;
    if (s && tshm_resume(s) < 0) {
        tsl_errprintf(err, "job %lld: resume: %s", (long long)r->id, strerror(errno));
        tshm_close(s);
        return -1;
    }
    if (tessd_job_apply(d, r->id, TJM_EV_RESUME, NULL, who, why, err) < 0) {
        if (was)
            tshm_suspend(s);
        tshm_close(s);
        return -1;
    }
    tshm_close(s);
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
    tshm_t *s = tessd_slice_open(d, r, false, false, NULL);
    if (!s)
        return -1;
    int v = tshm_drained(s);
    tshm_close(s);
    return v;
}

void tessd_suspend_recover(tessd_t *d, tessd_run_t *r)
{
    bool want = r->suspended_ms > 0;
    tsl_error_t err;
    /* A job the store has as running: no file means nothing is held, which is right unless
     * the store says suspended, when one is made (suspended) as a suspend would. */
    tshm_t *s = tessd_slice_open(d, r, true, want, &err);
    if (!s) {
        if (errno != ENOENT || want)
            tessd_log("job %lld: cannot check its slice's suspend state: %s", (long long)r->id,
                      err.text);
        return;
    }
    bool is = tshm_run_state(s) == TSHM_SUSPENDED;
    if (is != want) {
        /* The store wins: a suspend or resume interrupted between its two writes, or a
         * slice file changed behind tesseld's back. */
        if ((want ? tshm_suspend(s) : tshm_resume(s)) < 0)
            tessd_log("job %lld: cannot %s its slice: %s", (long long)r->id,
                      want ? "suspend" : "resume", strerror(errno));
        else
            tessd_log("job %lld: slice file said %s, the store %s: %s it again", (long long)r->id,
                      is ? "suspended" : "running", want ? "suspended" : "running",
                      want ? "suspended" : "resumed");
    }
    tshm_close(s);
}
