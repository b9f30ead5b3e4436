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
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/watchdog.h"
#include "daemon/daemon.h"
#include "daemon/idle.h"
#include "libutil/duration.h"
#include "libshm/shm.h"
#include "libutil/procstat.h"
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

static int ckpt_start(tessd_t *d, tessd_run_t *r, int what, const char *who, int was,
                      int64_t for_job, const char *queue, int64_t idle_s, tsl_error_t *err);

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
    if (r->suspended_ms && !r->susp_idle) /* not counted (batch.h); a reclaimed job ran on */
        r->suspended_total_ms += tessd_now_ms() - r->suspended_ms;
    r->suspended_ms = 0;
    r->susp_for = 0; /* the model's resume cleared suspended_for */
    if (r->susp_idle) {
        /* Its processes' calls wait for the reclaim word (or for the suspend word, cleared
         * above): cleared too, so that a later suspend of a person is not taken for one. */
        tsl_error_t re;
        int fd = slice_fd(d, r, true, false, &re);
        if (fd < 0 || tshm_fd_set_reclaim(fd, 0, &re) < 0)
            tessd_log("job %lld: cannot clear its slice's reclaim word: %s", (long long)r->id,
                      re.text);
        if (fd >= 0)
            close(fd);
        r->susp_idle = false; /* and the model's resume cleared suspended_idle */
    }
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

/* Set or clear job r's reclaim word (and its wake word with it); a failure is logged: its
 * processes' calls then wait in the driver, or at the slice, until a person's resume. */
static void slice_set_reclaim(tessd_t *d, const tessd_run_t *r, bool on)
{
    tsl_error_t e;
    int fd = slice_fd(d, r, true, false, &e);
    if (fd < 0 || tshm_fd_set_reclaim(fd, on, &e) < 0)
        tessd_log("job %lld: cannot %s its slice's reclaim word: %s", (long long)r->id,
                  on ? "set" : "clear", e.text);
    if (fd >= 0)
        close(fd);
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
        /* A suspend that tesseld did not finish (stopped during its checkpoint): the driver
         * may hold the job's processes locked or checkpointed; they are put back as they were
         * (a no-op for a process the driver left running). */
        if (want == TSHM_RUNNING &&
            ckpt_start(d, r, TESSD_CKPT_UNDO, "tesseld", is, 0, "", 0, &err) < 0)
            tessd_log("job %lld: cannot undo an unfinished checkpoint: %s", (long long)r->id,
                      err.text);
    }
    /* The reclaim word as the store says: set for a job recorded as reclaimed (tesseld may
     * have stopped between the record and the word), cleared for any other (a reclamation
     * tesseld did not finish set it before its checkpoint). */
    tshm_idle_t w;
    bool reclaimed = want == TSHM_SUSPENDED && r->susp_idle;
    if (tshm_fd_idle(fd, &w, &err) == 0 && (w.reclaim != 0) != reclaimed &&
        tshm_fd_set_reclaim(fd, reclaimed, &err) < 0)
        tessd_log("job %lld: cannot %s its slice's reclaim word: %s", (long long)r->id,
                  reclaimed ? "set" : "clear", err.text);
    close(fd);
}

/* ---- Suspend that gives the GPU memory back (docs/suspend.md, "How tesseld drives it") ------
 *
 * tesseld itself (root) calls the driver's checkpoint API on the job's processes: those below
 * its tessel-shim, as the shim's watchdog finds them (tsw_snapshot), read when the step starts.
 * What was given back is measured, never taken from the job: what the job's processes hold on
 * its GPUs by NVML's per-process figures (tagent_nvml_job_used), before and after the
 * checkpoint; another job's allocations and frees on the same GPUs meanwhile do not count.
 *
 * The driver's steps copy the job's device memory (seconds per GiB), so each runs in a thread
 * of its own (ckpt_thread), never under tesseld's lock: the lock is held before (the slice's
 * suspend word, r->ckpt_op, the pids, libsched for a restore) and after (the store, the job
 * model), and the API and the tick go on meanwhile.  One step per job at a time (r->ckpt_op:
 * the API refuses a second suspend, a resume during a suspend, and the tick starts no restore
 * meanwhile); the steps of different jobs run at the same time (RV3's F2: a job that holds its
 * own step open, a stopped process, holds no other job's).  The driver's checkpoint API is
 * per process and its handle read-only once open (d->ckpt_mu guards only that first open),
 * and each step measures its own job's processes, so two steps never count each other's
 * memory.  libsched is the main thread's alone,
 * so a thread only marks the job (r->gpu_released, r->ckpt_unhold) and the tick releases or
 * takes back its slice (tessd_ckpt_tick). */

/* How long a lock waits for the CUDA calls a process has in progress: a job that stays inside
 * a call longer keeps its memory (today's suspend). */
#define CKPT_LOCK_MS 5000

/* How long a restart keeps undoing the checkpoint of a suspend the tesseld before it did not
 * finish, and how often it looks: twice the lock's wait covers a lock the target was serving
 * when tesseld died. */
#define CKPT_UNDO_WATCH_MS (2 * CKPT_LOCK_MS)
#define CKPT_UNDO_POLL_MS  200

/* One step of a job's checkpoint thread: what it was given under the lock, and its outcome. */
typedef struct {
    tessd_t *d;
    int op; /* TESSD_CKPT_* */
    int64_t id;
    pid_t shim_pid; /* the attempt (a requeued job's next attempt has another shim) */
    tsched_member_t member;
    char who[TSTORE_NAME_MAX + 1];
    char user[TSTORE_NAME_MAX + 1]; /* its job's: its turn among the copy slots' waiters */
    int was;                        /* the slice's suspend word before a suspend */
    uint64_t released;              /* SUSPEND: bytes given back (0: kept, why says why) */
    int rc, err;                    /* RESTORE, UNDO: tagent_ckpt_resume's return and errno */
    char why[256];
    /* SUSPEND for a preemption (tessd_suspend_for): the job it makes room for, its queue */
    int64_t for_job;
    char queue[TSTORE_NAME_MAX + 1];
    /* SUSPEND for an idle reclamation (tessd_idle_tick): the idle time it passed, s (0: not) */
    int64_t idle_s;
    /* Its GPUs' copy slots (copy_take): its rank among the steps waiting, the ticket while it
     * waits or holds them (0: none), and the processes its copy works on (set with cslot_mu
     * held while it holds them; read by other steps under it). */
    tessd_cslot_class_t cls;
    uint64_t slot;
    const pid_t *slot_pids;
    const uint64_t *slot_starts;
    size_t slot_npids;
    int64_t slot_since; /* tessd_mono_ms when it took them */
    /* i + 1 while the driver copies slot_pids[i] (the agent stores it: tagent_ckpt_cur_t) */
    tagent_ckpt_cur_t cur;
    /* The waiters' last verdict on it, shared by them for CSLOT_POLL_MS (under cslot_mu):
     * when it was reached (0: never) and whether its copy's process was stopped. */
    int64_t stall_at;
    bool stall_v;
    uint64_t need; /* RESTORE: the bytes it gave back, to be found free on its GPUs */
    char busy[96]; /* RESTORE not tried now (EAGAIN): why ("" the driver's answer) */
} ckpt_op_t;

/* ---- Copies per GPU (docs/suspend.md, "Copies per GPU"; ckptslot.h) -------------------------
 *
 * A step's copy (the checkpoint, once its processes are locked, or a restore) holds the copy
 * slots of the job's GPUs, at most --ckpt-copies-per-gpu at once on one GPU (one restore);
 * the lock phase holds none (a stopped process blocks it: RV3's F2).  A step that waits looks
 * every CSLOT_POLL_MS at the holders in its way: one whose copy is on a process that is stopped
 * right now (SIGSTOP: the driver's copy waits for it as its lock does; the agent publishes which
 * process its copy works on, and no other process of the job is looked at: RV16 H1), or that
 * has held its slots longer than CSLOT_HOLD_MS, is passed (tessd_cslots_pass: for good, at most
 * one passed holder per GPU at a time, for a stop or for its hold alike: RV16b M2), so a job
 * cannot hold its GPUs' slots against other jobs by stopping itself or by queueing long work
 * while no other is passed there, nor copy uncounted by stopping something else, nor stockpile
 * passed copies of stopped processes to continue them all at once. */

/* How often a step waiting for a slot looks at its holders' processes (the wake of a holder
 * that ends comes at once through cslot_cv): a stopped holder is passed within this. */
#define CSLOT_POLL_MS 250

/* How long a step may hold its slots before the steps waiting stop counting it.  A suspend
 * and a resume of 8 GiB took 5.5 s together on an H200 (docs/suspend.md, "Figure"), so one
 * copy of 80 GiB one way takes about 27 s at that rate: a minute is a copy that waits for
 * something else, the work its job queued before the lock (the checkpoint waits for it), which
 * a job may make as long as it likes.  A copy of more than about 170 GiB at that rate passes it
 * too: the cap is then passed by one (one passed holder per GPU: a further overdue holder
 * keeps counting until it ends), the copies share the bus as before the cap. */
#define CSLOT_HOLD_MS 60000

/* How long a step waits for its slots before it ranks up one step (tessd_cslots_age: RV16
 * M1, an idle reclamation's step is not kept waiting for ever by a user who keeps a person's
 * step queued on its GPU): two holds at their longest, so a waiter passes at most a few. */
#define CSLOT_AGE_MS (2 * CSLOT_HOLD_MS)

/* Most holders one waiter looks at per poll (ckptslot's blockers on a node's GPUs). */
#define CSLOT_LOOK (TSCHED_MAX_NODE_GPUS * TESSD_CSLOT_MAX_PER_GPU)
/* ckptslot keeps its turns per GPU index below TESSD_CSLOT_MAX_GPUS: every node GPU's fits. */
_Static_assert(TSCHED_MAX_NODE_GPUS <= TESSD_CSLOT_MAX_GPUS, "a node's GPU index fits ckptslot");

/* "0" or "0,1": op's GPUs for the log. */
static const char *op_gpus(const ckpt_op_t *op, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (uint32_t k = 0; k < op->member.ngpus && o < len; k++)
        o += (size_t)snprintf(buf + o, len - o, "%s%u", k ? "," : "", op->member.gpu[k]);
    return buf;
}

/* What a waiter reads of one holder, copied under cslot_mu and judged outside it (RV16 M2:
 * no /proc read under the mutex): its ticket, the process its copy works on now (0: none) and
 * that process's start time (0: not known), and whether it is past CSLOT_HOLD_MS. */
typedef struct {
    uint64_t t;
    pid_t pid;
    uint64_t start;
    bool overdue, judge, stopped;
} look_t;

/* Copy what the waiter ticket t must judge of its holders (cslot_mu held): those whose
 * verdict is older than CSLOT_POLL_MS (a fresher one, another waiter's, is used as it is).
 * Their number in lk[0..max). */
static size_t looks_take(tessd_t *d, uint64_t t, look_t *lk, size_t max)
{
    uint64_t ts[CSLOT_LOOK];
    void *args[CSLOT_LOOK];
    size_t nb = tessd_cslots_blockers(d->cslots, t, ts, args, CSLOT_LOOK), n = 0;
    int64_t now = tessd_mono_ms();
    for (size_t i = 0; i < nb && i < CSLOT_LOOK && n < max; i++) {
        const ckpt_op_t *o = args[i];
        if (tessd_cslots_passed(d->cslots, ts[i]))
            continue;
        look_t *l = &lk[n++];
        *l = (look_t){.t = ts[i], .overdue = now - o->slot_since > CSLOT_HOLD_MS};
        if (o->stall_at && now - o->stall_at < CSLOT_POLL_MS) {
            l->stopped = o->stall_v;
            continue;
        }
        l->judge = true;
        size_t k = atomic_load(&o->cur);
        if (k > 0 && k <= o->slot_npids && o->slot_pids) {
            l->pid = o->slot_pids[k - 1];
            l->start = o->slot_starts ? o->slot_starts[k - 1] : 0;
        }
    }
    return n;
}

/* Whether the process a holder's copy works on is stopped (state T or t), by its pid and start
 * time: one /proc read, cslot_mu not held. */
static void looks_judge(look_t *lk, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        tsl_procstat_t ps;
        if (lk[i].judge && lk[i].pid > 0)
            lk[i].stopped = tsl_procstat_read(lk[i].pid, &ps) == 0 &&
                            (ps.state == 'T' || ps.state == 't') &&
                            (!lk[i].start || lk[i].start == ps.start_time);
    }
}

/* Apply the verdicts (cslot_mu held again): a holder that ended meanwhile is skipped (tickets
 * are never reused); the verdicts judged now are kept for the other waiters. */
static void looks_give(tessd_t *d, uint64_t t, const look_t *lk, size_t n)
{
    uint64_t ts[CSLOT_LOOK];
    void *args[CSLOT_LOOK];
    size_t nb = tessd_cslots_blockers(d->cslots, t, ts, args, CSLOT_LOOK);
    int64_t now = tessd_mono_ms();
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < nb && k < CSLOT_LOOK; k++) {
            if (ts[k] != lk[i].t)
                continue;
            ckpt_op_t *o = args[k];
            if (lk[i].judge) {
                o->stall_at = now ? now : 1;
                o->stall_v = lk[i].stopped;
            }
            bool was = tessd_cslots_passed(d->cslots, ts[k]);
            if ((lk[i].overdue || lk[i].stopped) && tessd_cslots_pass(d->cslots, ts[k]) == 1 &&
                !was) {
                char gs[96];
                tessd_log("job %lld: its %s's copy on GPU %s no longer counts (%s)",
                          (long long)o->id, o->op == TESSD_CKPT_SUSPEND ? "checkpoint" : "restore",
                          op_gpus(o, gs, sizeof gs),
                          lk[i].overdue ? "it has held its slots for long"
                                        : "the process it copies is stopped");
            }
            break;
        }
}

/* Take the copy slots of op's GPUs for its copy (what: "checkpoint", "restore"), its
 * processes pids[0..n) (starts: their start times) watched while it holds them; waits while
 * other steps hold them.  0 taken (or a job without GPUs, or no memory to queue it: logged,
 * it copies without); -1 tesseld is stopping: nothing held, the step copies without them
 * (the drain waits for it as for any step, TESSD_CKPT_DRAIN_MS at most), so that what it
 * does is recorded rather than a preemption's victim requeued for want of a slot. */
static int copy_take(tessd_t *d, ckpt_op_t *op, const char *what, bool restore, const pid_t *pids,
                     const uint64_t *starts, size_t n)
{
    if (op->member.ngpus == 0)
        return 0;
    char gs[96];
    op_gpus(op, gs, sizeof gs);
    pthread_mutex_lock(&d->cslot_mu);
    unsigned gpus[TESSD_CSLOT_MAX_GPUS];
    size_t ng = op->member.ngpus < TESSD_CSLOT_MAX_GPUS ? op->member.ngpus : TESSD_CSLOT_MAX_GPUS;
    for (size_t k = 0; k < ng; k++)
        gpus[k] = op->member.gpu[k];
    op->slot = tessd_cslots_queue(d->cslots, gpus, ng, op->cls, restore, op->user, op);
    if (!op->slot) {
        pthread_mutex_unlock(&d->cslot_mu);
        tessd_log("job %lld: its %s copies without a copy slot on GPU %s (%s)", (long long)op->id,
                  what, gs, strerror(errno));
        return 0;
    }
    bool told = false;
    int64_t aged = tessd_mono_ms();
    while (tessd_cslots_try(d->cslots, op->slot) == 0) {
        if (atomic_load(&d->stopping)) {
            tessd_cslots_done(d->cslots, op->slot);
            op->slot = 0;
            pthread_cond_broadcast(&d->cslot_cv);
            pthread_mutex_unlock(&d->cslot_mu);
            tessd_log("job %lld: tesseld is stopping: its %s copies without a copy slot on GPU "
                      "%s",
                      (long long)op->id, what, gs);
            return -1;
        }
        if (tessd_mono_ms() - aged >= CSLOT_AGE_MS) {
            aged = tessd_mono_ms();
            if (tessd_cslots_age(d->cslots, op->slot) == 1)
                tessd_log("job %lld: its %s has waited long for a copy slot on GPU %s: it ranks "
                          "up",
                          (long long)op->id, what, gs);
        }
        look_t lk[CSLOT_LOOK];
        size_t nl = looks_take(d, op->slot, lk, CSLOT_LOOK);
        bool judge = false;
        for (size_t i = 0; i < nl && !judge; i++)
            judge = lk[i].judge && lk[i].pid > 0;
        if (judge) {
            pthread_mutex_unlock(&d->cslot_mu);
            looks_judge(lk, nl);
            pthread_mutex_lock(&d->cslot_mu);
        }
        looks_give(d, op->slot, lk, nl);
        if (tessd_cslots_try(d->cslots, op->slot) == 1)
            break;
        if (!told) {
            tessd_log("job %lld: its %s waits for a copy slot on GPU %s", (long long)op->id, what,
                      gs);
            told = true;
        }
        struct timespec ts2;
        clock_gettime(CLOCK_REALTIME, &ts2);
        ts2.tv_nsec += CSLOT_POLL_MS * 1000000L;
        if (ts2.tv_nsec >= 1000000000L) {
            ts2.tv_sec++;
            ts2.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&d->cslot_cv, &d->cslot_mu, &ts2);
    }
    op->slot_pids = pids;
    op->slot_starts = starts;
    op->slot_npids = n;
    op->slot_since = tessd_mono_ms();
    op->stall_at = 0;
    /* Logged under cslot_mu, as the end is: the log has each GPU's copies in their order. */
    tessd_log("job %lld: its %s copies on GPU %s", (long long)op->id, what, gs);
    pthread_mutex_unlock(&d->cslot_mu);
    return 0;
}

/* Give op's copy slots back (none held: nothing). */
static void copy_give(tessd_t *d, ckpt_op_t *op, const char *what)
{
    if (!op->slot)
        return;
    char gs[96];
    op_gpus(op, gs, sizeof gs);
    pthread_mutex_lock(&d->cslot_mu);
    tessd_cslots_done(d->cslots, op->slot);
    op->slot = 0;
    op->slot_pids = NULL;
    op->slot_starts = NULL;
    op->slot_npids = 0;
    tessd_log("job %lld: its %s's copy on GPU %s is over", (long long)op->id, what, gs);
    pthread_cond_broadcast(&d->cslot_cv);
    pthread_mutex_unlock(&d->cslot_mu);
}

/* The gate of a checkpoint (tagent_ckpt_suspend_gated): its processes are locked; its copy
 * waits for its GPUs' slots.  arg: the step. */
typedef struct {
    tessd_t *d;
    ckpt_op_t *op;
    const pid_t *pids;
    const uint64_t *starts;
    size_t n;
} gate_arg_t;

static int ckpt_gate(void *arg)
{
    gate_arg_t *g = arg;
    copy_take(g->d, g->op, "checkpoint", false, g->pids, g->starts, g->n);
    return 0; /* with its slots, or without them when tesseld stops (copy_take) */
}

/* ckpt_open's part under d->ckpt_mu. */
static tagent_ckpt_t *ckpt_open_locked(tessd_t *d, tsl_error_t *err)
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

/* The driver's checkpoint API, opened by the first step that needs it (any thread): NULL with
 * errno and err when it cannot be (tried again by the next step).  d->ckpt_mu is held for the
 * open alone (dlopen and cuInit, once); the handle is read-only after it (agent/ckpt.h). */
static tagent_ckpt_t *ckpt_open(tessd_t *d, tsl_error_t *err)
{
    pthread_mutex_lock(&d->ckpt_mu);
    tagent_ckpt_t *c = ckpt_open_locked(d, err);
    int saved = errno;
    pthread_mutex_unlock(&d->ckpt_mu);
    errno = saved;
    return c;
}

/* The processes below shim (the shim itself excluded), read from /proc now: malloc'd pids,
 * their count in *n; NULL when they cannot be listed. */
static pid_t *job_pids(pid_t shim, size_t *n)
{
    tsw_pstat_t *procs;
    size_t np;
    *n = 0;
    if (shim <= 0 || tsw_snapshot(shim, &procs, &np) < 0)
        return NULL;
    pid_t *pids = malloc((np ? np : 1) * sizeof *pids);
    if (pids)
        for (size_t i = 0; i < np; i++)
            if (procs[i].kin == TSW_MEMBER)
                pids[(*n)++] = procs[i].pid;
    free(procs);
    return pids;
}

/* The start time of each of pids[0..n) (the security review's H1: a step may wait long on one
 * of the job's processes, a stopped one, while the job cycles pids until another account's CUDA
 * process gets the number of one of its own; the driver's calls then check each process is the
 * one listed, tagent_ckpt_*_ids).  Read after the listing, so the pids are listed again: one
 * that is no longer below shim may have been reused in between, and gets 0 (left alone).
 * malloc'd; NULL when out of memory or the listing fails (the step then does nothing). */
static uint64_t *job_starts(pid_t shim, const pid_t *pids, size_t n)
{
    uint64_t *starts = calloc(n ? n : 1, sizeof *starts);
    if (!starts)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        tsl_procstat_t ps;
        if (tsl_procstat_read(pids[i], &ps) == 0)
            starts[i] = ps.start_time;
    }
    size_t n2;
    pid_t *again = job_pids(shim, &n2);
    if (!again) {
        free(starts);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        bool member = false;
        for (size_t k = 0; k < n2 && !member; k++)
            member = again[k] == pids[i];
        if (!member)
            starts[i] = 0;
    }
    free(again);
    return starts;
}

/* What the processes pids[0..n) hold on the GPUs of m, by NVML's per-process figures
 * (another job's memory on the same GPUs does not count); false when NVML cannot say. */
static bool job_used(tessd_t *d, const tsched_member_t *m, const pid_t *pids, size_t n,
                     uint64_t *sum)
{
    unsigned gpus[TSCHED_MAX_NODE_GPUS];
    uint32_t ng = m->ngpus < TSCHED_MAX_NODE_GPUS ? m->ngpus : TSCHED_MAX_NODE_GPUS;
    for (uint32_t k = 0; k < ng; k++)
        gpus[k] = m->gpu[k];
    return tagent_nvml_job_used(d->nvml, gpus, ng, pids, n, sum) == 0;
}

/* SUSPEND: checkpoint the job's CUDA processes; op->released > 0, or 0 with the reason in
 * op->why when the job keeps its memory (everything it touched is as it was).  What it gave
 * back: what its processes held on its GPUs before (those listed now) less what they hold
 * after (those listed then: a process started meanwhile counts against it). */
static void ckpt_suspend(tessd_t *d, ckpt_op_t *op)
{
    tsl_error_t e;
    tagent_ckpt_t *c = ckpt_open(d, &e);
    if (!c) {
        snprintf(op->why, sizeof op->why, "%.200s",
                 errno == ENOTSUP ? "the driver has no checkpoint API" : e.text);
        return;
    }
    size_t n, n2 = 0;
    pid_t *pids = job_pids(op->shim_pid, &n), *now = NULL;
    uint64_t *starts = pids ? job_starts(op->shim_pid, pids, n) : NULL;
    if (!pids || !starts) {
        snprintf(op->why, sizeof op->why, "the job's processes cannot be listed");
        free(pids);
        return;
    }
    uint64_t before, after;
    if (!job_used(d, &op->member, pids, n, &before)) {
        snprintf(op->why, sizeof op->why,
                 "NVML cannot measure the memory of the job's processes on its GPUs");
        free(starts);
        free(pids);
        return;
    }
    gate_arg_t g = {.d = d, .op = op, .pids = pids, .starts = starts, .n = n};
    int k =
        tagent_ckpt_suspend_gated(c, pids, starts, n, CKPT_LOCK_MS, ckpt_gate, &g, &op->cur, &e);
    if (k < 0)
        snprintf(op->why, sizeof op->why, "checkpoint failed: %.200s", e.text);
    else if (k == 0)
        snprintf(op->why, sizeof op->why, "no process of the job uses the GPU");
    else if (!(now = job_pids(op->shim_pid, &n2)) || !job_used(d, &op->member, now, n2, &after) ||
             after >= before) {
        /* Nothing measurably given back (or no way to tell): put it back as it was. */
        snprintf(op->why, sizeof op->why, "the checkpoint gave no GPU memory back");
        if (tagent_ckpt_resume_ids(c, pids, starts, n, &e) < 0)
            tessd_log("job %lld: cannot undo its checkpoint: %s", (long long)op->id, e.text);
    } else {
        op->released = before - after;
    }
    copy_give(d, op, "checkpoint"); /* held from the gate through a take-back above */
    free(now);
    free(starts);
    free(pids);
}

/* What the restores passed on op's GPUs and still holding there may yet take of their free
 * memory (RV16 H1: a restore passed for a stop is not counted, so the next restore on its GPU
 * runs beside it; it reads the free memory less the passed one's whole share, which is at
 * worst too careful: then EAGAIN, tried again).  held[k]: for op's k-th GPU. */
static void passed_needs(tessd_t *d, const ckpt_op_t *op, uint64_t held[TSCHED_MAX_NODE_GPUS])
{
    if (!op->slot)
        return;
    uint64_t ts[CSLOT_LOOK];
    void *args[CSLOT_LOOK];
    pthread_mutex_lock(&d->cslot_mu);
    size_t nb = tessd_cslots_blockers(d->cslots, op->slot, ts, args, CSLOT_LOOK);
    for (size_t i = 0; i < nb && i < CSLOT_LOOK; i++) {
        const ckpt_op_t *o = args[i];
        if (o->op != TESSD_CKPT_RESTORE || !tessd_cslots_passed(d->cslots, ts[i]))
            continue;
        uint64_t share = o->need / (o->member.ngpus ? o->member.ngpus : 1);
        for (uint32_t k = 0; k < op->member.ngpus && k < TSCHED_MAX_NODE_GPUS; k++)
            for (uint32_t j = 0; j < o->member.ngpus; j++)
                if (o->member.gpu[j] == op->member.gpu[k])
                    held[k] += share;
    }
    pthread_mutex_unlock(&d->cslot_mu);
}

/* RESTORE and UNDO: restore what is checkpointed and unlock what is locked
 * among the job's processes (op->rc, op->err, op->why). */
static void ckpt_resume(tessd_t *d, ckpt_op_t *op)
{
    tsl_error_t e;
    tagent_ckpt_t *c = ckpt_open(d, &e);
    size_t n = 0;
    pid_t *pids = c ? job_pids(op->shim_pid, &n) : NULL;
    uint64_t *starts = pids ? job_starts(op->shim_pid, pids, n) : NULL;
    op->busy[0] = '\0';
    if (!starts) {
        op->rc = -1;
        op->err = errno;
        snprintf(op->why, sizeof op->why, "%.200s",
                 !c ? e.text : "the job's processes cannot be listed");
        free(pids);
        return;
    }
    /* Its copy holds its GPUs' slots, one restore per GPU at a time (without them when
     * tesseld stops: copy_take). */
    copy_take(d, op, "restore", true, pids, starts, n);
    /* A restore reads its GPUs' free memory afresh now that it holds their slots (no other
     * restore is under way there): two restores started at one tick do not both count the
     * memory that tick saw free.  Not enough: EAGAIN without asking the driver. */
    uint64_t per = op->need / (op->member.ngpus ? op->member.ngpus : 1);
    uint64_t held[TSCHED_MAX_NODE_GPUS] = {0};
    if (op->op == TESSD_CKPT_RESTORE)
        passed_needs(d, op, held);
    for (uint32_t k = 0; op->op == TESSD_CKPT_RESTORE && d->nvml && k < op->member.ngpus; k++) {
        uint64_t total, used, avail;
        char sz[32];
        if (tagent_nvml_memory(d->nvml, op->member.gpu[k], &total, &used, &avail) == 0 &&
            (avail < per || avail - per < held[k < TSCHED_MAX_NODE_GPUS ? k : 0])) {
            snprintf(op->busy, sizeof op->busy, "the restore does not fit: %s free on GPU %u",
                     tsl_format_size(avail, sz, sizeof sz), op->member.gpu[k]);
            op->rc = -1;
            op->err = EAGAIN;
            copy_give(d, op, "restore");
            free(starts);
            free(pids);
            return;
        }
    }
    op->rc = tagent_ckpt_resume_watched(c, pids, starts, n, &op->cur, &e);
    op->err = errno;
    copy_give(d, op, "restore");
    if (op->rc < 0)
        snprintf(op->why, sizeof op->why, "%.200s", e.text);
    free(starts);
    free(pids);
}

/* The job of op, if it is still the same attempt (lock held). */
static tessd_run_t *op_run(tessd_t *d, const ckpt_op_t *op)
{
    tessd_run_t *r = tessd_run_find(d, op->id);
    return r && r->shim_pid == op->shim_pid && r->ckpt_op == op->op ? r : NULL;
}

/* SUSPEND's outcome (lock held): 1 when the checkpoint must be taken back (the caller does it
 * without the lock and calls again with undone set), else 0. */
static int suspend_done(tessd_t *d, ckpt_op_t *op, bool undone)
{
    tessd_run_t *r = op_run(d, op);
    if (!r) {
        /* The job ended meanwhile: its processes are gone, the driver kept nothing of them. */
        tessd_log("job %lld ended during its suspend", (long long)op->id);
        return 0;
    }
    char why[320], sz[32];
    tsl_error_t e;
    if (!undone && op->released && (r->cancel_ms || r->preempt_ms || r->timeout_ms))
        return 1; /* being stopped: its SIGTERM handler may use the GPU (resume_to_stop) */
    if (r->cancel_ms || r->preempt_ms || r->timeout_ms) {
        if (op->was != TSHM_SUSPENDED)
            slice_set_run(d, r, TSHM_RUNNING, false, NULL, NULL);
        if (op->idle_s)
            slice_set_reclaim(d, r, false);
        tessd_log("job %lld: its suspend is dropped: it is being %s", (long long)op->id,
                  r->cancel_ms    ? "cancelled"
                  : r->preempt_ms ? "preempted"
                                  : "stopped");
        r->ckpt_op = TESSD_CKPT_NONE;
        r->susp_for = 0;
        r->susp_idle = false;
        return 0;
    }
    if (op->idle_s && (undone || !op->released)) {
        /* An idle reclamation that gave nothing back: the job did not ask for a suspend, so it
         * goes on running as it was, watched afresh (a whole idle time from now). */
        if (op->was != TSHM_SUSPENDED)
            slice_set_run(d, r, TSHM_RUNNING, false, NULL, NULL);
        slice_set_reclaim(d, r, false);
        r->ckpt_op = TESSD_CKPT_NONE;
        r->susp_idle = false;
        r->idle_since_ms = tessd_mono_ms();
        tessd_log("job %lld: idle, but its GPU memory cannot be given back (%.200s): it goes on "
                  "running",
                  (long long)op->id, undone ? "its checkpoint could not be recorded" : op->why);
        return 0;
    }
    if (op->for_job && (undone || !op->released)) {
        /* A preemption by suspension that gave nothing back (no checkpoint API, the lock's
         * timeout, managed memory, ...) or could not be recorded: the preemptor needs the
         * room, so the job is killed and requeued as any victim, the cause in the log. */
        if (op->was != TSHM_SUSPENDED)
            slice_set_run(d, r, TSHM_RUNNING, false, NULL, NULL);
        r->ckpt_op = TESSD_CKPT_NONE;
        r->susp_for = 0;
        snprintf(why, sizeof why, "suspension failed, requeued instead: %.250s",
                 undone ? "its checkpoint could not be recorded" : op->why);
        tessd_preempt_requeue(d, r, op->for_job, op->queue, why);
        return 0;
    }
    if (undone) {
        snprintf(why, sizeof why, "GPU memory kept: its checkpoint could not be recorded");
        op->released = 0;
    } else if (op->released) {
        snprintf(why, sizeof why, "GPU memory given back: %s",
                 tsl_format_size(op->released, sz, sizeof sz));
    } else {
        snprintf(why, sizeof why, "GPU memory kept: %.250s", op->why);
    }
    /* The store first: the bytes must be kept before the model says suspended, or a restart
     * would lend a slice the job still needs.  A failure takes the checkpoint back. */
    if (op->released && tstore_job_set_gpu_released(d->store, op->id, op->released, &e) < 0) {
        tessd_log("job %lld: cannot record the GPU memory it gave back (%s): restored, it keeps "
                  "its memory",
                  (long long)op->id, e.text);
        return 1;
    }
    /* A preemption's: held off the GPU before its slice is lent to the preemptor (its limits
     * file says 0, its watchdog kills what takes memory back; tessd_gpu_hold).  A hold that
     * cannot be set takes the checkpoint back: the job is then requeued. */
    if (op->for_job && op->released && tessd_gpu_hold(d, r, true, &e) < 0) {
        tessd_log("job %lld: cannot hold it off the GPU while suspended (%s): requeued instead",
                  (long long)op->id, e.text);
        tessd_gpu_hold(d, r, false, NULL);
        tstore_job_set_gpu_released(d->store, op->id, 0, NULL);
        return 1;
    }
    /* An idle reclamation's: its slice is lent too, so its watchdog holds it off the GPU (a
     * job that clears its slice file's reclaim word and takes memory back is killed: the
     * fourth review's finding 1); its limits file stays, for the processes that wait for the
     * restore to go on with.  A hold that cannot be set takes the checkpoint back. */
    if (op->idle_s && op->released && tessd_gpu_hold_watch(d, r, true, &e) < 0) {
        tessd_log("job %lld: cannot hold it off the GPU while reclaimed (%s): restored",
                  (long long)op->id, e.text);
        tessd_gpu_hold(d, r, false, NULL);
        tstore_job_set_gpu_released(d->store, op->id, 0, NULL);
        return 1;
    }
    if (op->idle_s) {
        char pre[sizeof why], dur[32];
        snprintf(pre, sizeof pre, "idle for %s (no GPU work): %.200s",
                 tsl_format_seconds(op->idle_s, dur, sizeof dur), why);
        snprintf(why, sizeof why, "%s", pre);
    }
    if (op->for_job) {
        char pre[sizeof why];
        snprintf(pre, sizeof pre, "preempted by suspension for job %lld%s%.40s%s: %.200s",
                 (long long)op->for_job, op->queue[0] ? " of queue '" : "", op->queue,
                 op->queue[0] ? "'" : "", why);
        snprintf(why, sizeof why, "%s", pre);
    }
    int64_t now = tessd_now_ms();
    tjm_change_t chg = {.now_ms = now,
                        .suspend_for = op->for_job,
                        .suspend_idle = op->idle_s > 0,
                        .preempt_queue = op->for_job && op->queue[0] ? op->queue : NULL};
    if (tessd_job_apply(d, op->id, TJM_EV_SUSPEND, &chg, op->who, why, &e) < 0) {
        tessd_log("job %lld: suspend: %s", (long long)op->id, e.text);
        if (op->released) {
            if (op->for_job || op->idle_s)
                tessd_gpu_hold(d, r, false, NULL);
            tstore_job_set_gpu_released(d->store, op->id, 0, NULL);
            return 1;
        }
        if (op->was != TSHM_SUSPENDED)
            slice_set_run(d, r, TSHM_RUNNING, false, NULL, NULL);
        r->ckpt_op = TESSD_CKPT_NONE;
        r->susp_idle = false;
        return 0;
    }
    tessd_log("job %lld suspended by %s (%s)", (long long)op->id, op->who, why);
    if (op->idle_s && op->released) {
        /* The word its processes' calls look for (they then ask for the restore), set before
         * the checkpoint (suspend_idle): checked, and set if that failed, keeping a wake that
         * a call made meanwhile.  Without it a call waits in the driver until a person's
         * resume, which the log says. */
        int fd = slice_fd(d, r, true, false, &e);
        tshm_idle_t w;
        if (fd < 0 || tshm_fd_idle(fd, &w, &e) < 0 ||
            (!w.reclaim && tshm_fd_set_reclaim(fd, 1, &e) < 0))
            tessd_log("job %lld: cannot mark its slice reclaimed (%s): its CUDA calls wait until "
                      "a person resumes it",
                      (long long)op->id, e.text);
        if (fd >= 0)
            close(fd);
    }
    r->suspended_ms = now;
    r->gpu_released = op->released;
    r->resume_wanted = false;
    r->resume_wait[0] = '\0';
    r->ckpt_op = TESSD_CKPT_NONE;
    if (op->released)
        tessd_wake(d); /* the tick releases its slice in libsched */
    return 0;
}

/* RESTORE's outcome (lock held). */
static void restore_done(tessd_t *d, ckpt_op_t *op)
{
    tessd_run_t *r = op_run(d, op);
    if (!r)
        return;
    r->ckpt_op = TESSD_CKPT_NONE;
    char sz[32], why[160];
    tsl_format_size(r->gpu_released, sz, sizeof sz);
    unsigned gpu0 = r->member.ngpus ? r->member.gpu[0] : 0;
    tsl_error_t e;
    if (op->rc < 0) {
        r->ckpt_unhold = true; /* the tick gives its slice back to libsched */
        /* Still suspended for its preemption, its memory given back: held again. */
        if (r->susp_for && tessd_gpu_hold(d, r, true, &e) < 0)
            tessd_log("job %lld: cannot hold it off the GPU again: %s", (long long)r->id, e.text);
        if (r->susp_idle && tessd_gpu_hold_watch(d, r, true, &e) < 0)
            tessd_log("job %lld: cannot hold it off the GPU again: %s", (long long)r->id, e.text);
        if (op->err == EAGAIN) {
            snprintf(why, sizeof why, "waiting for %s on GPU %u (%s)", sz, gpu0,
                     op->busy[0] ? op->busy : "the restore did not fit");
        } else {
            snprintf(why, sizeof why, "restore failed: %.120s", op->why);
            r->resume_wanted = false; /* a cancel ends it */
        }
    } else if (tessd_resume(d, r, op->who, "GPU memory restored", &e) < 0) {
        snprintf(why, sizeof why, "restored, but the resume failed: %.100s", e.text);
        r->resume_wanted = false;
    } else {
        if (tstore_job_set_gpu_released(d->store, r->id, 0, &e) < 0)
            tessd_log("job %lld: cannot clear its released GPU memory: %s", (long long)r->id,
                      e.text);
        tessd_log("job %lld resumed by %s (its GPU memory restored)", (long long)r->id, op->who);
        r->gpu_released = 0;
        r->resume_wanted = false;
        return;
    }
    if (strcmp(why, r->resume_wait) != 0) {
        snprintf(r->resume_wait, sizeof r->resume_wait, "%.150s", why);
        if (tstore_job_set_reason(d->store, r->id, why, &e) < 0)
            tessd_log("job %lld: cannot record why its resume waits: %s", (long long)r->id, e.text);
        tessd_log("job %lld: %s", (long long)r->id, why);
    }
}

static void *ckpt_thread(void *arg)
{
    ckpt_op_t *op = arg;
    tessd_t *d = op->d;
    /* No lock of the node here: this job's step alone (r->ckpt_op), beside other jobs'. */
    if (op->op == TESSD_CKPT_SUSPEND)
        ckpt_suspend(d, op);
    else
        ckpt_resume(d, op);
    /* UNDO: a lock that the tesseld before this one asked for may be carried out after it
     * died (the target serves it when it can: a process stopped then serves it once it goes
     * on), so what shows up locked or checkpointed is undone for a while yet. */
    for (int64_t end = tessd_mono_ms() + CKPT_UNDO_WATCH_MS;
         op->op == TESSD_CKPT_UNDO && op->err != ENOTSUP && tessd_mono_ms() < end &&
         !atomic_load(&d->stopping);) {
        struct timespec ts = {0, CKPT_UNDO_POLL_MS * 1000000L};
        nanosleep(&ts, NULL);
        int before = op->rc > 0 ? op->rc : 0;
        ckpt_resume(d, op);
        op->rc = op->rc < 0 ? op->rc : op->rc + before;
    }
    pthread_mutex_lock(&d->lock);
    if (d->ckpt_abandoned) {
        /* tesseld is exiting without it (tessd_ckpt_drain): the store and the jobs' records
         * are going; the next start undoes what the driver did. */
        pthread_mutex_unlock(&d->lock);
        free(op);
        return NULL;
    }
    if (op->op == TESSD_CKPT_SUSPEND && suspend_done(d, op, false) == 1) {
        /* Taken back without the lock (the restore copies the memory again); the job stays
         * marked busy meanwhile. */
        pthread_mutex_unlock(&d->lock);
        ckpt_resume(d, op);
        if (op->rc < 0)
            tessd_log("job %lld: cannot undo its checkpoint: %s", (long long)op->id, op->why);
        pthread_mutex_lock(&d->lock);
        suspend_done(d, op, true);
    } else if (op->op == TESSD_CKPT_RESTORE) {
        restore_done(d, op);
    } else if (op->op == TESSD_CKPT_UNDO) {
        tessd_run_t *r = op_run(d, op);
        if (r)
            r->ckpt_op = TESSD_CKPT_NONE;
        if (op->rc < 0 && op->err != ENOTSUP) /* no checkpoint API: nothing was checkpointed */
            tessd_log("job %lld: cannot undo the checkpoint of a suspend tesseld did not finish: "
                      "%s",
                      (long long)op->id, op->why);
        else if (op->rc > 0)
            tessd_log("job %lld: the checkpoint of a suspend tesseld did not finish is undone "
                      "(%d process(es))",
                      (long long)op->id, op->rc);
    }
    d->ckpt_inflight--;
    pthread_cond_broadcast(&d->ckpt_cv);
    tessd_wake(d);
    pthread_mutex_unlock(&d->lock);
    free(op);
    return NULL;
}

/* Start step op of job r's checkpoint thread (lock held): 0, or -1 with errno and err. */
static int ckpt_start(tessd_t *d, tessd_run_t *r, int what, const char *who, int was,
                      int64_t for_job, const char *queue, int64_t idle_s, tsl_error_t *err)
{
    ckpt_op_t *op = calloc(1, sizeof *op);
    if (!op) {
        errno = ENOMEM;
        return tsl_errprintf(err, "out of memory");
    }
    *op = (ckpt_op_t){
        .d = d, .op = what, .id = r->id, .shim_pid = r->shim_pid, .member = r->member, .was = was};
    snprintf(op->who, sizeof op->who, "%s", who);
    snprintf(op->user, sizeof op->user, "%s", r->user);
    op->for_job = for_job;
    op->idle_s = idle_s;
    snprintf(op->queue, sizeof op->queue, "%s", queue);
    /* Its rank for its GPUs' copy slots: a preemption's checkpoint first (its preemptor waits
     * and its bound runs), an idle reclamation's steps last (nobody waits on them but the job). */
    op->cls = for_job                                                  ? TESSD_CSLOT_PREEMPT
              : idle_s || (what == TESSD_CKPT_RESTORE && r->susp_idle) ? TESSD_CSLOT_RECLAIM
                                                                       : TESSD_CSLOT_PERSON;
    op->need = r->gpu_released;
    pthread_attr_t at;
    pthread_t t;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &at, ckpt_thread, op);
    pthread_attr_destroy(&at);
    if (rc != 0) {
        free(op);
        errno = rc;
        return tsl_errprintf(err, "cannot start the checkpoint thread: %s", strerror(rc));
    }
    r->ckpt_op = what;
    d->ckpt_inflight++;
    return 0;
}

int tessd_suspend_gpu(tessd_t *d, tessd_run_t *r, const char *who, tsl_error_t *err)
{
    int was;
    if (slice_set_run(d, r, TSHM_SUSPENDED, true, &was, err) < 0)
        return -2;
    if (ckpt_start(d, r, TESSD_CKPT_SUSPEND, who, was, 0, "", 0, err) < 0) {
        if (was != TSHM_SUSPENDED)
            slice_set_run(d, r, TSHM_RUNNING, false, NULL, NULL);
        return -1;
    }
    return 0;
}

int tessd_suspend_for(tessd_t *d, tessd_run_t *r, int64_t for_job, const char *queue,
                      tsl_error_t *err)
{
    int was;
    if (slice_set_run(d, r, TSHM_SUSPENDED, true, &was, err) < 0)
        return -1;
    if (ckpt_start(d, r, TESSD_CKPT_SUSPEND, "tesseld", was, for_job, queue, 0, err) < 0) {
        if (was != TSHM_SUSPENDED)
            slice_set_run(d, r, TSHM_RUNNING, false, NULL, NULL);
        return -1;
    }
    r->susp_for = for_job;
    snprintf(r->susp_queue, sizeof r->susp_queue, "%s", queue);
    r->susp_asked_mono = tessd_mono_ms();
    return 0;
}

int tessd_ckpt_wait(tessd_t *d, int64_t id)
{
    for (;;) {
        if (atomic_load(&d->stopping))
            return -1;
        tessd_run_t *r = tessd_run_find(d, id);
        if (!r || r->ckpt_op != TESSD_CKPT_SUSPEND)
            return 0; /* its suspend's step ended (a restore asked since is not waited for) */
        pthread_cond_wait(&d->ckpt_cv, &d->lock);
    }
}

void tessd_ckpt_drain(tessd_t *d, int64_t wait_ms)
{
    pthread_mutex_lock(&d->lock);
    pthread_cond_broadcast(&d->ckpt_cv); /* the API's waits answer now (stopping is set) */
    int64_t end = tessd_mono_ms() + wait_ms;
    if (d->ckpt_inflight)
        tessd_log("stopping: waiting for %d checkpoint step(s) of jobs' GPU memory",
                  d->ckpt_inflight);
    while (d->ckpt_inflight > 0) {
        int64_t left = end - tessd_mono_ms();
        if (left <= 0) {
            tessd_log("stopping with %d checkpoint step(s) unfinished: undone at the next start",
                      d->ckpt_inflight);
            d->ckpt_abandoned = true;
            break;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += left / 1000;
        ts.tv_nsec += (left % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&d->ckpt_cv, &d->lock, &ts);
    }
    pthread_mutex_unlock(&d->lock);
}

int tessd_resume_gpu(tessd_t *d, tessd_run_t *r, const char *who, tsl_error_t *err)
{
    if (!r->gpu_released)
        return tessd_resume(d, r, who, NULL, err);
    if (r->ckpt_op == TESSD_CKPT_RESTORE)
        return 1; /* under way already */
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

/* An amount of resource res of a libsched reason (tsched_wait_t.res: 0 milli-GPU, 1 bytes of
 * GPU memory, 2 milli-CPU, 3 bytes of memory, 4 normalised milli-GPU) as people read it:
 * "1 GPU", "0.5 GPU", "8.00 GiB of GPU memory", "2 CPU", "1.5 normalised GPU".  Returns buf. */
static char *res_amount(int res, uint64_t v, char *buf, size_t len)
{
    char sz[32];
    if (res == 1 || res == 3)
        snprintf(buf, len, "%s of %smemory", tsl_format_size(v, sz, sizeof sz),
                 res == 1 ? "GPU " : "");
    else
        snprintf(buf, len, "%g %s", (double)v / 1000,
                 res == 2   ? "CPU"
                 : res == 4 ? "normalised GPU"
                            : "GPU");
    return buf;
}

/* What a restore waits for when libsched's rules hold it (tsched_job_may_start), in words for
 * the job's reason: "queue 'lab' is at its limit of 1 GPU: it uses 1 GPU, the job takes 0.5
 * GPU", ...  Returns buf. */
static char *may_start_why(const tsched_wait_t *w, char *buf, size_t len)
{
    char bound[48], used[48], want[48];
    res_amount(w->res, w->bound, bound, sizeof bound);
    res_amount(w->res, w->used, used, sizeof used);
    res_amount(w->res, w->want, want, sizeof want);
    switch (w->code) {
    case TSCHED_WAIT_QUEUE_LIMIT:
        snprintf(buf, len, "queue '%s' is at its limit of %s: it uses %s, the job takes %s",
                 w->queue, bound, used, want);
        break;
    case TSCHED_WAIT_GUARANTEE_LIMIT:
        snprintf(buf, len,
                 "queue '%s' is at its guarantee of %s for interactive and inference work: it "
                 "uses %s, the job takes %s",
                 w->queue, bound, used, want);
        break;
    case TSCHED_WAIT_GUARANTEE:
        snprintf(buf, len, "pending job %llu of queue '%s' is owed its guarantee and comes first",
                 (unsigned long long)w->jobs[0], w->queue);
        break;
    case TSCHED_WAIT_PRIORITY:
        snprintf(buf, len, "pending job %llu of queue '%s' outranks it and comes first",
                 (unsigned long long)w->jobs[0], w->queue);
        break;
    default:
        tsched_wait_format(w, buf, len);
        break;
    }
    return buf;
}

/* Start job r's restore if its GPU has room (main thread, lock held): 0 started, 1 not yet
 * (why says for what it waits).  The order (docs/suspend.md, "Resumes, queue limits and
 * pending jobs"): libsched's rules for a start (its queues' limits and guarantees, and no
 * room a pending job is due first: tsched_job_may_start), its slice on the same GPUs, then the
 * device's free memory. */
static int restore_start(tessd_t *d, tessd_run_t *r, char *why, size_t len)
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
            snprintf(why, len, "waiting for %s on GPU %u (the scheduler refused it: %.60s)", sz,
                     gpu0, se.text);
            return 1;
        }
        /* A resume is a start: the rules libsched applies to a pending job hold it too. */
        tsched_wait_t w;
        int may = tsched_job_may_start(d->sched, r->q.id, &r->member, 1, &w);
        if (may <= 0) {
            int e = errno;
            char rule[400];
            tsched_job_remove(d->sched, r->q.id, now);
            if (may == 0)
                snprintf(why, len, "waiting for %s on GPU %u (%.240s)", sz, gpu0,
                         may_start_why(&w, rule, sizeof rule));
            else
                snprintf(why, len, "waiting for %s on GPU %u (the scheduler refused it: %s)", sz,
                         gpu0, strerror(e));
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
    /* Its hold lifted just before the restore (its limits file as at its start, its watchdog
     * back to its slice's limit); set again if the restore cannot start. */
    if ((r->susp_for || r->susp_idle) && tessd_gpu_hold(d, r, false, &e) < 0) {
        slice_unhold(d, r);
        snprintf(why, len, "waiting for %s on GPU %u (its hold cannot be lifted: %.40s)", sz, gpu0,
                 e.text);
        return 1;
    }
    if (ckpt_start(d, r, TESSD_CKPT_RESTORE, r->resume_by, TSHM_SUSPENDED, 0, "", 0, &e) < 0) {
        slice_unhold(d, r);
        snprintf(why, len, "waiting for %s on GPU %u (%.80s)", sz, gpu0, e.text);
        if (r->susp_for && tessd_gpu_hold(d, r, true, NULL) < 0)
            tessd_log("job %lld: cannot hold it off the GPU again", (long long)r->id);
        if (r->susp_idle && tessd_gpu_hold_watch(d, r, true, NULL) < 0)
            tessd_log("job %lld: cannot hold it off the GPU again", (long long)r->id);
        return 1;
    }
    return 0;
}

/* Whether job r, suspended by a preemption, may take its GPUs back now (main thread): once its
 * preemptor has started (its GPUs' room then decides, restore_start) or has left (cancelled,
 * ended, requeued: libsched no longer has it pending); or once it has waited
 * TESSD_PSUSP_PREEMPTOR_WAIT_MS for a preemptor still pending. */
static bool psusp_may_resume(tessd_t *d, const tessd_run_t *r)
{
    if (tessd_run_find(d, r->susp_for))
        return true;
    if (!d->sched || tsched_job_state(d->sched, (uint64_t)r->susp_for) != 0)
        return true;
    return tessd_now_ms() - r->suspended_ms >= TESSD_PSUSP_PREEMPTOR_WAIT_MS;
}

void tessd_ckpt_tick(tessd_t *d)
{
    for (size_t i = 0; i < d->nruns; i++) {
        tessd_run_t *r = &d->runs[i];
        /* A preemption's checkpoint that takes too long (a job that stops its own process
         * holds the driver's lock): killed and requeued, the checkpoint then dropped. */
        if (r->susp_for && r->ckpt_op == TESSD_CKPT_SUSPEND && !r->preempt_ms && !r->cancel_ms &&
            tessd_mono_ms() - r->susp_asked_mono >= d->psusp_ckpt_ms) {
            char how[160];
            snprintf(how, sizeof how,
                     "its suspension's checkpoint took longer than %lld s: requeued instead",
                     (long long)(d->psusp_ckpt_ms / 1000));
            tessd_preempt_requeue(d, r, r->susp_for, r->susp_queue, how);
        }
        /* Suspended by a preemption: resumed by tesseld itself when it may (its place and
         * usage kept: the same job, attempt and start), tried at each tick from then on. */
        if (r->susp_for && r->gpu_released && r->suspended_ms && !r->resume_wanted &&
            r->ckpt_op == TESSD_CKPT_NONE && !r->holds && psusp_may_resume(d, r)) {
            r->resume_wanted = true;
            snprintf(r->resume_by, sizeof r->resume_by, "tesseld");
            r->resume_wait[0] = '\0';
        }
        if (r->ckpt_unhold && r->ckpt_op == TESSD_CKPT_NONE) {
            r->ckpt_unhold = false;
            if (r->holds) {
                slice_unhold(d, r);
                d->sched_dirty = true; /* a pending job may fit in it now */
            }
        }
        if (!r->gpu_released || !r->suspended_ms || r->ckpt_op != TESSD_CKPT_NONE)
            continue;
        if (!r->resume_wanted) {
            if (r->holds) {
                slice_unhold(d, r);
                d->sched_dirty = true; /* a pending job may fit in it now */
            }
            continue;
        }
        char why[sizeof r->resume_wait];
        if (restore_start(d, r, why, sizeof why) == 0)
            continue;
        if (strcmp(why, r->resume_wait) != 0) {
            snprintf(r->resume_wait, sizeof r->resume_wait, "%s", why);
            tsl_error_t e;
            if (tstore_job_set_reason(d->store, r->id, why, &e) < 0)
                tessd_log("job %lld: cannot record why its resume waits: %s", (long long)r->id,
                          e.text);
            tessd_log("job %lld: %s", (long long)r->id, why);
        }
    }
}

/* ---- Idle reclamation (docs/suspend.md, "Idle reclamation") ---------------------------------
 *
 * The facts come from the job's slice file, read and written by tesseld with pread and pwrite
 * of the header's words (slice_fd: never a mapping, never through a mount point): work (a
 * launch since the last look, taken and cleared) and, for a job tesseld has reclaimed, wake
 * (one of its processes made a CUDA call that waits for its GPU).  The file is the job's own, so
 * what it says is believed for that job only, and only while tesseld's own record says so:
 * a wake counts only for a job whose store record is suspended_idle (a person's or a
 * preemption's suspend is not resumed by the job), and it only asks the resume that a person
 * could ask for the job; the restore still waits for the job's GPUs to have room (restore_start).
 * One pread per job and pass, whatever the job writes: a job cannot make tesseld work faster. */

/* The idle time of queue name among qs, its own or inherited (0: none, or no such queue). */
static int64_t queue_idle(const tstore_queue_t *qs, size_t nq, const char *name)
{
    return tessd_idle_queue(qs, nq, name, NULL);
}

/* Start job r's idle reclamation (lock held): the slice's suspend word, then the checkpoint
 * thread as a person's suspend (who "tesseld", marked idle_s). */
static int suspend_idle(tessd_t *d, tessd_run_t *r, int64_t idle_s, tsl_error_t *err)
{
    /* The reclaim word before the checkpoint, not after it: a call the job makes meanwhile
     * (a copy, an event: only launches wait at the suspend word) then waits at its slice and
     * asks for the restore (the wake word, honoured once the reclamation is recorded) instead
     * of entering the driver, whose lock would hold it where nothing sees it.  And before the
     * suspend word: a launch that finds the gate closed finds the reclaim word set, so it asks
     * before its compute share reads any event of the driver (compute.c, suspended_wait; a
     * running slice's reclaim word holds nothing: tcu_idle_wait waits only while suspended).
     * Cleared if the reclamation does not happen (suspend_done). */
    slice_set_reclaim(d, r, true);
    int was;
    if (slice_set_run(d, r, TSHM_SUSPENDED, false, &was, err) < 0) {
        slice_set_reclaim(d, r, false);
        return -1;
    }
    if (ckpt_start(d, r, TESSD_CKPT_SUSPEND, "tesseld", was, 0, "", idle_s, err) < 0) {
        slice_set_reclaim(d, r, false);
        if (was != TSHM_SUSPENDED)
            slice_set_run(d, r, TSHM_RUNNING, false, NULL, NULL);
        return -1;
    }
    r->susp_idle = true;
    return 0;
}

/* A reclaimed job r (lock held): its wake word, and the resume when it is set. */
static void idle_wake(tessd_t *d, tessd_run_t *r)
{
    /* A restore the driver refused (not for room) is not tried again for the job's calls: a
     * person's resume or a cancel decides (the job's reason says why). */
    if (r->resume_wanted || r->ckpt_op != TESSD_CKPT_NONE ||
        strncmp(r->resume_wait, "restore failed", 14) == 0)
        return;
    tsl_error_t e;
    int fd = slice_fd(d, r, false, false, &e);
    if (fd < 0)
        return;
    tshm_idle_t w;
    int rc = tshm_fd_idle(fd, &w, &e);
    close(fd);
    if (rc < 0 || !w.wake)
        return;
    tessd_log("job %lld: a CUDA call of its processes waits for its GPU memory: its resume is "
              "asked",
              (long long)r->id);
    if (tessd_resume_gpu(d, r, "tesseld", &e) < 0)
        tessd_log("job %lld: cannot ask its resume: %s", (long long)r->id, e.text);
}

void tessd_idle_tick(tessd_t *d)
{
    int64_t now = tessd_mono_ms();
    if (d->idle_last_ms && now - d->idle_last_ms < TESSD_IDLE_POLL_MS)
        return;
    d->idle_last_ms = now;
    tstore_queue_t *qs = NULL;
    size_t nq = 0;
    bool loaded = false;
    for (size_t i = 0; i < d->nruns; i++) {
        tessd_run_t *r = &d->runs[i];
        if (!tessd_has_slice(d, r) || r->cancel_ms || r->preempt_ms || r->timeout_ms ||
            r->susp_for) {
            r->idle_since_ms = 0;
            continue;
        }
        if (r->suspended_ms) {
            r->idle_since_ms = 0;
            if (r->susp_idle && r->gpu_released)
                idle_wake(d, r);
            continue;
        }
        if (r->ckpt_op != TESSD_CKPT_NONE)
            continue;
        int64_t qidle = 0;
        if (r->idle_reclaim_s == 0) {
            if (!loaded) {
                tsl_error_t e;
                if (tessd_queues_load(d, &qs, &nq, &e) < 0)
                    tessd_log("idle reclamation: cannot read the queues: %s", e.text);
                loaded = true;
            }
            qidle = queue_idle(qs, nq, r->queue);
        }
        int64_t idle_s =
            tessd_idle_effective(r->idle_reclaim_s, qidle, atomic_load(&d->idle_reclaim_min_s));
        if (idle_s <= 0) {
            r->idle_since_ms = 0;
            continue;
        }
        /* No slice file yet: no CUDA call so far, nothing on the GPU to give back. */
        tsl_error_t e;
        int fd = slice_fd(d, r, true, false, &e);
        if (fd < 0) {
            r->idle_since_ms = 0;
            continue;
        }
        int work = tshm_fd_take_work(fd, &e);
        close(fd);
        if (work < 0)
            continue;
        if (tessd_idle_look(idle_s, work, &r->idle_since_ms, now) != TESSD_IDLE_RECLAIM)
            continue;
        char dur[32];
        tessd_log("job %lld: no GPU work for %s: its GPU memory is given back", (long long)r->id,
                  tsl_format_seconds(idle_s, dur, sizeof dur));
        r->idle_since_ms = now; /* a reclamation that fails waits a whole idle time again */
        if (suspend_idle(d, r, idle_s, &e) < 0)
            tessd_log("job %lld: cannot start its idle reclamation: %s", (long long)r->id, e.text);
    }
    free(qs);
}
