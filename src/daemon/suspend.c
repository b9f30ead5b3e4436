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
