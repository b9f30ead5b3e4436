/* tick.c - the scheduling tick: notice job ends, enforce cancels and preemptions, start the
 * jobs libsched decides to start; and the recovery of running jobs at start (see the order of
 * a tick in daemon.h).
 *
 * Decisions are libsched's (tsched_sched_cycle over the queue layer, see sched.c): which
 * pending jobs start and where (fair share across queues by weight, queue limits, class
 * bands, priority, arrival; backfill; reservations), and which running jobs are victims.
 * tesseld carries them out: a start is recorded as running in the store before the process
 * exists, then confirmed to libsched (tsched_job_started); a TSCHED_SUSPEND victim (a training
 * job whose preemptible is suspend, sched.c) is checkpointed and gives its GPU up once its memory
 * is released, then resumed by the tick when its GPUs have room (suspend.c, tessd_suspend_for;
 * docs/suspend.md, "Preemption by suspension"); a TSCHED_REQUEUE victim, or one whose
 * suspension cannot be (one a person suspended is resumed first) gets SIGTERM to its process
 * group and cgroup, SIGKILL after the grace period, and once it has ended goes back to pending
 * with the same id
 * (tsched_job_stopped; preemptions + 1; a marker line in its stdout log, which the next
 * attempt appends to), or ends "preempted" when it was submitted with "requeue": false.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "agent/runner.h"
#include "daemon/batch.h"
#include "daemon/daemon.h"
#include "daemon/serve_run.h"
#include "libutil/batchspec.h"
#include "libutil/size.h"

tessd_run_t *tessd_run_find(tessd_t *d, int64_t id)
{
    for (size_t i = 0; i < d->nruns; i++)
        if (d->runs[i].id == id)
            return &d->runs[i];
    return NULL;
}

static tessd_run_t *run_add(tessd_t *d, int64_t id)
{
    if (d->nruns == d->caprun) {
        size_t cap = d->caprun ? d->caprun * 2 : 64;
        tessd_run_t *r = realloc(d->runs, cap * sizeof *r);
        if (!r)
            return NULL;
        d->runs = r;
        d->caprun = cap;
    }
    tessd_run_t *r = &d->runs[d->nruns++];
    memset(r, 0, sizeof *r);
    r->id = id;
    return r;
}

/* Only once its shim has ended (or was never started): the start lock goes with it. */
static void run_remove(tessd_t *d, tessd_run_t *r)
{
    tessd_start_lock_remove(d, r->id);
    size_t i = (size_t)(r - d->runs);
    d->runs[i] = d->runs[--d->nruns];
}

/* The model's notify hook: a change of state is news for whoever waits for the job (wait.c),
 * for the held jobs when it is an end (batch.h) and for the scheduler (a pass runs at once,
 * pass.h).  A start is the pass's own doing and libsched knows it already
 * (tsched_job_started): it asks for no other pass. */
static void job_changed(void *arg, int64_t id, tjm_state_t from, tjm_state_t to)
{
    tessd_t *d = arg;
    if (from == to)
        return;
    tessd_wake_waiters(d, id);
    if (tjm_state_final(to))
        tessd_holds_note(d, id);
    if (from == TJM_PENDING && to == TJM_RUNNING)
        return;
    d->sched_dirty = true;
    tessd_wake(d);
}

void tessd_jobmodel(tessd_t *d, tjm_t *m)
{
    *m = (tjm_t){.store = d->store,
                 .notify = job_changed,
                 .arg = d,
                 .pending_hist = &d->job_pending_hist,
                 .run_hist = &d->job_run_hist};
}

int tessd_job_apply(tessd_t *d, int64_t id, tjm_event_t ev, const tjm_change_t *chg,
                    const char *who, const char *why, tsl_error_t *err)
{
    tjm_t m;
    tessd_jobmodel(d, &m);
    return tjm_apply(&m, id, ev, chg, who, why, err);
}

void tessd_job_request(const tstore_job_t *j, tsched_job_t *req)
{
    memset(req, 0, sizeof *req);
    req->cpu_milli = (uint64_t)j->cpu_milli;
    req->mem_bytes = j->mem;
    req->ngpus = (uint32_t)j->gpu_count;
    req->milli_gpu = j->gpu_count > 1 ? TSCHED_MILLI : (uint32_t)j->gpu_milli;
    req->gpu_mem_bytes = j->gpu_count ? j->gpu_mem : 0;
    req->gang = 1;
}

/* Kill what is left of a job and remove its cgroup.  v1 removes a group only once its last
 * task is gone; a killed task leaves within milliseconds, so a few short retries suffice. */
static void cleanup_cgroup(tessd_t *d, int64_t id)
{
    if (d->cg_mode == TAGENT_CG_NONE)
        return;
    char name[160];
    tessd_cgroup_name(d, id, name, sizeof name);
    for (int i = 0; i < 20; i++) {
        tagent_cgroup_kill(d->cg_mode, d->cg_root, name, SIGKILL);
        if (tagent_cgroup_remove(d->cg_mode, d->cg_root, name) == 0)
            return;
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    tessd_log("job %lld: cgroup %s not removed: %s", (long long)id, name, strerror(errno));
}

/* "to make room for job 42 of queue 'b'" */
static void preempt_why(const tessd_run_t *r, char *buf, size_t len)
{
    if (r->preempt_queue[0])
        snprintf(buf, len, "to make room for job %lld of queue '%s'", (long long)r->preempt_for,
                 r->preempt_queue);
    else
        snprintf(buf, len, "to make room for job %lld", (long long)r->preempt_for);
}

/* Append one line to the job's stdout log, where the output of its next attempt follows. */
static void log_marker(tessd_t *d, int64_t id, const char *line)
{
    /* The directory is the job's user's: append only to a regular file with one link, never
     * through a symlink or a mount point, never blocking on a FIFO. */
    int fd = tessd_job_open(d, id, "stdout", O_WRONLY | O_APPEND, 0);
    if (fd < 0)
        return;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1) {
        char buf[512];
        int n = snprintf(buf, sizeof buf, "%s\n", line);
        if (n > 0 && write(fd, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1) < 0)
            tessd_log("job %lld: marker line: %s", (long long)id, strerror(errno));
    }
    close(fd);
}

/* Whether pid is the shim of another job of the table or the services' proxy: processes that
 * are tesseld's children too, never a job's own process group. */
static bool pid_of_another(const tessd_t *d, int64_t id, pid_t pid)
{
    for (size_t i = 0; i < d->nruns; i++)
        if (d->runs[i].id != id && d->runs[i].shim_pid == pid)
            return true;
    return pid == tessd_serve_proxy_pid(d);
}

/* Whether job id's shim writes the pid record in tesseld's own directory (started by this
 * tesseld's launch: its start lock says so) and, if so, the record, or -1 with errno (ENOENT:
 * not written yet).  Otherwise the shim was started by a tesseld from before that record, and
 * its pids are in DIR/pid alone, which the job's user can rewrite at will. */
static int read_pid_record(const tessd_t *d, int64_t id, const char *dir, bool *trusted, pid_t *s,
                           uint64_t *st, pid_t *j)
{
    tessd_lock_kind_t k = tessd_start_lock_kind(d, id);
    *trusted = k == TESSD_LOCK_FILES || k == TESSD_LOCK_RECORDS;
    if (!*trusted)
        return tagent_read_pids(dir, s, st, j);
    if (k == TESSD_LOCK_RECORDS)
        return tessd_start_lock_pids(d, id, s, st, j);
    char path[PATH_MAX];
    if (tessd_pid_record_path(d, id, path, sizeof path) < 0)
        return -1;
    return tagent_read_pids_file(path, s, st, j);
}

/* The job's pids, which tesseld signals (the job's process group): else nothing is taken.
 *   - From the pid record in tesseld's own directory (read_pid_record): the shim's must be the
 *     one tesseld knows (when it knows one) and the job's a child of it, or of tesseld (a child
 *     subreaper, where a job whose shim has died is re-parented) only once that shim is dead.
 *   - From DIR/pid (a shim of an older tesseld), which a job can rewrite to name any process:
 *     strictly, the shim must be the one tesseld knows (none known: refused) and the job its
 *     child, never tesseld's (every shim and the services' proxy are tesseld's children).
 * Never the shim of another job or the proxy, either way. */
static int read_pids_checked(const tessd_t *d, int64_t id, const char *dir, pid_t known_shim,
                             pid_t *shim, uint64_t *start, pid_t *job)
{
    pid_t s, j;
    uint64_t st;
    bool trusted;
    if (read_pid_record(d, id, dir, &trusted, &s, &st, &j) < 0)
        return -1;
    bool ok;
    if (trusted)
        ok = (known_shim <= 0 || s == known_shim) &&
             (tagent_child_of(j, s) || (!tagent_alive(s, st) && tagent_child_of(j, getpid())));
    else
        ok = known_shim > 0 && s == known_shim && tagent_child_of(j, s);
    if (!ok || pid_of_another(d, id, j)) {
        errno = EPERM;
        return -1;
    }
    *shim = s;
    *start = st;
    *job = j;
    return 0;
}

/* The next attempt's shim writes its own pid and exit records; the old ones must not be taken
 * for its.  The slice file is rewritten by the next attempt's interposer.  In the job's
 * directory through a descriptor that crossed no mount point (a mount over a name there is
 * EBUSY, never entered). */
static void remove_stale_records(tessd_t *d, int64_t id)
{
    char path[PATH_MAX];
    tessd_start_lock_clear(d, id);
    if (tessd_exit_record_path(d, id, path, sizeof path) == 0)
        unlink(path);
    if (tessd_pid_record_path(d, id, path, sizeof path) == 0)
        unlink(path);
    int dfd = tessd_job_dirfd(d, id);
    if (dfd < 0)
        return;
    static const char *const stale[] = {"exit", "pid", "slice"};
    for (size_t i = 0; i < sizeof stale / sizeof stale[0]; i++)
        unlinkat(dfd, stale[i], 0);
    close(dfd);
}

/* The job's exit record: 1 and *ex, 0 when there is none (yet), -1 with errno.  It is the one
 * its shim wrote in tesseld's own directory (in its start lock, or for a shim an earlier
 * tesseld started, tessd_exit_record_path), never a file of the job's
 * directory, where a process the job left behind could write one of its own; only a shim
 * started by a tesseld from before that record (its start lock empty, an upgrade with the job
 * running) wrote jobs/<id>/exit, which is read for such a job alone. */
static int read_exit_record(tessd_t *d, int64_t id, const char *dir, tagent_exit_t *ex)
{
    tessd_lock_kind_t k = tessd_start_lock_kind(d, id);
    if (k == TESSD_LOCK_RECORDS)
        return tessd_start_lock_exit(d, id, ex);
    char path[PATH_MAX];
    if (tessd_exit_record_path(d, id, path, sizeof path) < 0)
        return errno == ENOENT ? 0 : -1;
    int got = tagent_read_exit_file(path, ex);
    if (got == 0 && k == TESSD_LOCK_EMPTY)
        got = tagent_read_exit(dir, ex);
    return got;
}

/* The store has r pending again: give libsched back what it held (or hand it over as a new
 * pending job), remove its cgroup, and take it out of the table. */
static void back_to_pending(tessd_t *d, tessd_run_t *r, const char *reason)
{
    double now = tessd_sched_now();
    if (!r->holds || tsched_job_stopped(d->sched, (uint64_t)r->id, now) < 0) {
        /* libsched does not know it as running: hand it over again as a new pending job. */
        tessd_sched_remove(d, r->id);
        tstore_job_t j;
        tsl_error_t err;
        if (tstore_job_get(d->store, r->id, &j, &err) == 0) {
            if (tessd_inbox_submit(d, &j) < 0)
                d->rebuild = true;
            tstore_job_clear(&j);
        } else {
            /* Not handed over: the next pass rebuilds the scheduler from the store. */
            tessd_log("job %lld: back to pending: %s", (long long)r->id, err.text);
            d->rebuild = true;
        }
    }
    cleanup_cgroup(d, r->id);
    tessd_state_remove(d, r->id);
    tessd_log("job %lld requeued: %s", (long long)r->id, reason);
    run_remove(d, r);
    d->sched_dirty = true;
}

/* The job left the store's active states behind tesseld's back (or the model refused its
 * end as illegal): nothing to record, forget it. */
static void forget_run(tessd_t *d, tessd_run_t *r)
{
    tessd_sched_remove(d, r->id);
    cleanup_cgroup(d, r->id);
    tessd_state_remove(d, r->id);
    run_remove(d, r);
    d->sched_dirty = true;
}

/* Apply an end (or requeue) event to r; false when the store refused (said once, the job stays
 * in the table and the next tick tries again).  *gone: the job is not running in the store any
 * more (forgotten). */
static bool apply_end(tessd_t *d, tessd_run_t *r, tjm_event_t ev, const tjm_change_t *chg,
                      const char *why, bool *gone)
{
    tsl_error_t err;
    *gone = false;
    const char *what =
        ev == TJM_EV_REQUEUE || ev == TJM_EV_UNSTART ? "requeue it" : "record its end";
    if (tessd_job_apply(d, r->id, ev, chg, "tesseld", why, &err) == 0) {
        if (r->end_unrecorded)
            tessd_log("job %lld: its end is recorded now", (long long)r->id);
        return true;
    }
    if (errno == ENOENT || errno == EINVAL) {
        tessd_log("job %lld: cannot %s (%s): %s", (long long)r->id, what, tjm_event_name(ev),
                  err.text);
        forget_run(d, r);
        *gone = true;
        return true;
    }
    if (!r->end_unrecorded)
        tessd_log("job %lld: cannot %s: %s (tried again at each tick)", (long long)r->id, what,
                  err.text);
    r->end_unrecorded = true;
    return false;
}

/* A preempted job has ended: back to pending (same id) for its next attempt.  Returns false
 * when the store refused (the job stays in the table; the next tick tries again). */
static bool requeue_run(tessd_t *d, tessd_run_t *r, const tjm_change_t *chg)
{
    char why[128], reason[192];
    preempt_why(r, why, sizeof why);
    snprintf(reason, sizeof reason, "requeued: preempted %s", why);
    bool gone;
    if (!apply_end(d, r, TJM_EV_REQUEUE, chg, reason, &gone))
        return false;
    if (gone)
        return true;
    remove_stale_records(d, r->id);
    tstore_job_t j;
    int64_t n = 0;
    if (tstore_job_get(d->store, r->id, &j, NULL) == 0) {
        n = j.preemptions;
        tstore_job_clear(&j);
    }
    char line[256];
    snprintf(line, sizeof line, "[tessel] job %lld preempted %s; requeued (preemption %lld)",
             (long long)r->id, why, (long long)n);
    log_marker(d, r->id, line);
    back_to_pending(d, r, reason);
    return true;
}

/* A job the store says running whose supervisor was never started (tesseld stopped between
 * the store's "running" and the spawn): pending again, same id, no preemption counted.
 * Returns false when the store refused (the job stays in the table; the next tick tries
 * again). */
static bool unstart_run(tessd_t *d, tessd_run_t *r)
{
    static const char reason[] = "requeued: tesseld stopped before the job's start";
    bool gone;
    if (!apply_end(d, r, TJM_EV_UNSTART, NULL, reason, &gone))
        return false;
    if (gone)
        return true;
    remove_stale_records(d, r->id);
    back_to_pending(d, r, reason);
    return true;
}

/* Record the end of a running job and give back what it held.  ex: its exit record (NULL when
 * there is none); lost: why there is none; seen: a cause the caller knows (launch failure,
 * lost), else TJM_CAUSE_NONE.  The job model picks the event (tjm_end_event).  Returns true
 * when the job left the table, false when the store refused (it stays; the next tick tries
 * again). */
static bool finish_run(tessd_t *d, tessd_run_t *r, const tagent_exit_t *ex, const char *lost,
                       tjm_cause_t seen)
{
    tjm_change_t chg = {0};
    if (ex && !ex->error[0]) {
        if (ex->sig)
            chg.signal = ex->sig;
        else {
            chg.has_exit_code = true;
            chg.exit_code = ex->exit_code;
        }
    }
    /* Killed by its shim's GPU-memory watchdog: that is the reason (watchdog.h). */
    char wd_act[16], wd[256];
    unsigned wd_ep;
    bool wd_killed =
        tessd_violation_read(d, r->id, wd_act, sizeof wd_act, &wd_ep, wd, sizeof wd) == 1 &&
        strcmp(wd_act, "kill") == 0 && !r->cancel_ms;
    /* Killed by its watchdog while held off the GPU for a preemption (tessd_gpu_hold): it
     * took back memory that is its preemptor's now.  It ends as that preemption's victim
     * (requeued, or preempted with no_requeue), the watchdog's words in the log. */
    if (wd_killed && r->susp_for && r->gpu_released && r->suspended_ms && !r->preempt_ms) {
        tjm_change_t pc = {.now_ms = tessd_now_ms(),
                           .preempt_for = r->susp_for,
                           .preempt_queue = r->susp_queue[0] ? r->susp_queue : NULL};
        tsl_error_t pe;
        if (tessd_job_apply(d, r->id, TJM_EV_PREEMPT, &pc, "tesseld", NULL, &pe) == 0) {
            tessd_log("job %lld preempted for job %lld (%s)", (long long)r->id,
                      (long long)r->susp_for, wd);
            r->preempt_ms = pc.now_ms;
            r->preempt_for = r->susp_for;
            snprintf(r->preempt_queue, sizeof r->preempt_queue, "%s", r->susp_queue);
            wd_killed = false;
        } else {
            tessd_log("job %lld: not preempted: %s", (long long)r->id, pe.text);
        }
    }
    if (wd_killed)
        seen = TJM_CAUSE_GPU_MEM_LIMIT;
    else if (!seen && lost)
        seen = TJM_CAUSE_LOST;
    else if (!seen && ex && ex->error[0])
        seen = TJM_CAUSE_LAUNCH_FAILURE;
    /* The kernel's out-of-memory killer ended a process of its group (its --mem limit, or the
     * host's memory) and the job did not succeed: named as such, not "signal 9". */
    else if (!seen && ex && ex->oom && !r->cancel_ms && !r->timeout_ms &&
             (ex->sig || ex->exit_code != 0))
        seen = TJM_CAUSE_HOST_OOM;
    tstore_job_t j;
    tsl_error_t err;
    if (tstore_job_get(d->store, r->id, &j, &err) < 0) {
        if (errno == ENOENT) {
            forget_run(d, r);
            return true;
        }
        if (!r->end_unrecorded)
            tessd_log("job %lld: cannot record its end: %s (tried again at each tick)",
                      (long long)r->id, err.text);
        r->end_unrecorded = true;
        return false;
    }
    tjm_event_t ev =
        tjm_end_event(&j, chg.has_exit_code ? chg.exit_code : -1, chg.signal, seen, &chg.cause);
    tstore_job_clear(&j);
    if (ev == TJM_EV_REQUEUE)
        return requeue_run(d, r, &chg);
    char reason[256], why[128];
    const char *by = r->cancel_by[0] ? r->cancel_by : "a user";
    if (ev == TJM_EV_PREEMPTED) {
        preempt_why(r, why, sizeof why);
        snprintf(reason, sizeof reason, "preempted %s", why);
    } else if (wd_killed) {
        snprintf(reason, sizeof reason, "%s", wd);
    } else if (lost) {
        snprintf(reason, sizeof reason, "%s", lost);
    } else if (ex->error[0]) {
        snprintf(reason, sizeof reason, "%s", ex->error);
    } else if (ev == TJM_EV_TIMEOUT) {
        char lim[32];
        snprintf(reason, sizeof reason, "time limit (%s)",
                 tsl_format_duration(r->time_limit_s, lim, sizeof lim));
    } else if (chg.cause == TJM_CAUSE_HOST_OOM) {
        char lim[32];
        if (r->member.mem_bytes)
            snprintf(reason, sizeof reason,
                     "host out of memory: the job went over its memory limit (--mem %s) and the "
                     "kernel killed it",
                     tsl_format_size(r->member.mem_bytes, lim, sizeof lim));
        else
            snprintf(reason, sizeof reason,
                     "host out of memory: the kernel's out-of-memory killer killed the job");
    } else if (chg.signal) {
        if (ev == TJM_EV_KILLED)
            snprintf(reason, sizeof reason, "cancelled by %s (killed by signal %d)", by,
                     chg.signal);
        else
            snprintf(reason, sizeof reason, "killed by signal %d (%s)", chg.signal,
                     strsignal(chg.signal));
    } else if (ev == TJM_EV_KILLED) {
        snprintf(reason, sizeof reason, "cancelled by %s (exited with status %d)", by,
                 chg.exit_code);
    } else {
        snprintf(reason, sizeof reason, "exited with status %d", chg.exit_code);
    }
    bool gone;
    if (!apply_end(d, r, ev, &chg, reason, &gone))
        return false;
    if (gone)
        return true;
    tessd_log("job %lld %s: %s", (long long)r->id,
              tjm_state_name((tjm_state_t)tjm_next(TJM_RUNNING, ev)), reason);
    forget_run(d, r);
    return true;
}

/* A job its shim's watchdog stopped (--gpu-mem-violation suspend, SIGSTOP): marked suspended
 * like a person's suspend (its slice too), with the watchdog's words as its reason.  Once per
 * violation: a resumed job that goes over again makes a new one. */
static void watchdog_suspend(tessd_t *d, tessd_run_t *r)
{
    char act[16], why[256];
    unsigned ep;
    if (tessd_violation_read(d, r->id, act, sizeof act, &ep, why, sizeof why) != 1 ||
        strcmp(act, "suspend") != 0 || ep == r->wd_episode)
        return;
    r->wd_episode = ep;
    tsl_error_t err;
    if (!r->suspended_ms && tessd_suspend(d, r, "tesseld", why, &err) < 0)
        tessd_log("job %lld: %s", (long long)r->id, err.text);
    if (tstore_job_set_reason(d->store, r->id, why, &err) < 0)
        tessd_log("job %lld: cannot record the watchdog's reason: %s", (long long)r->id, err.text);
    tessd_log("job %lld: %s", (long long)r->id, why);
}

/* Send sig to a running job: its process group (when its pid is known) and every process of its
 * cgroup (a stop: cancel, preemption, time limit; SIGKILL after the grace period). */
static void signal_job(tessd_t *d, const tessd_run_t *r, int sig)
{
    char name[160];
    tessd_cgroup_name(d, r->id, name, sizeof name);
    if (r->job_pid > 0)
        kill(-r->job_pid, sig);
    tagent_cgroup_kill(d->cg_mode, d->cg_root, name, sig);
}

static void check_time_limit(tessd_t *d, tessd_run_t *r, int64_t now);

/* Check one running job; returns true when it was removed from the table. */
static bool check_run(tessd_t *d, tessd_run_t *r, int64_t now)
{
    char dir[PATH_MAX];
    tessd_job_dir(d, r->id, dir, sizeof dir);
    tagent_exit_t ex;
    /* The exit record is read only once the shim has ended (it writes the record, then
     * exits), and from tesseld's own directory (read_exit_record): an "exit" file in the job's
     * directory may be the job's own forgery, written while it runs or by a process it left
     * behind once it has ended. */
    bool shim_alive = tagent_alive(r->shim_pid, r->shim_start);
    if (r->shim_pid == 0) {
        /* No shim known (tesseld stopped during the start): the start lock tells whether one
         * lives (started, its pid not yet read) or none does.  No shim and no record of one:
         * it was never started, and the job goes back to pending. */
        int held = tessd_start_lock_held(d, r->id);
        if (held < 0)
            tessd_log("job %lld: start lock: %s", (long long)r->id, strerror(errno));
        shim_alive = held == 1;
        pid_t s, j;
        uint64_t st;
        bool trusted;
        if (!shim_alive && held == 0) {
            /* The model decides from what is seen (tjm_recover): never started, or lost. */
            tjm_seen_t seen = {.exit_record = read_exit_record(d, r->id, dir, &ex) != 0};
            seen.pid_record =
                !(read_pid_record(d, r->id, dir, &trusted, &s, &st, &j) < 0 && errno == ENOENT);
            tstore_job_t sj = {.state = TSTORE_RUNNING, .cancel_ms = r->cancel_ms};
            tjm_recovery_t plan;
            if (tjm_recover(&sj, &seen, &plan) == 0) {
                if (plan.action == TJM_REC_CANCEL_UNSTARTED)
                    return finish_run(d, r, NULL, "cancelled before its start", TJM_CAUSE_NONE);
                if (plan.action == TJM_REC_UNSTART)
                    return unstart_run(d, r);
            }
        }
    }
    int got = shim_alive ? 0 : read_exit_record(d, r->id, dir, &ex);
    if (got == 1)
        return finish_run(d, r, &ex, NULL, TJM_CAUSE_NONE);
    if (got < 0) {
        char lost[160];
        snprintf(lost, sizeof lost, "unreadable exit record: %s", strerror(errno));
        return finish_run(d, r, NULL, lost, TJM_CAUSE_LOST);
    }
    if (r->job_pid == 0) {
        pid_t s, j;
        uint64_t st;
        if (read_pids_checked(d, r->id, dir, r->shim_pid, &s, &st, &j) == 0) {
            r->shim_pid = s;
            r->shim_start = st;
            r->job_pid = j;
            tjm_change_t chg = {.shim_pid = s, .shim_start = st, .job_pid = j};
            tsl_error_t err;
            if (tessd_job_apply(d, r->id, TJM_EV_SPAWNED, &chg, "tesseld", NULL, &err) < 0)
                tessd_log("job %lld: %s", (long long)r->id, err.text);
            /* A stop asked before the job's pid was known reaches it now. */
            if ((r->cancel_ms || r->preempt_ms) && !r->killed)
                kill(-j, SIGTERM);
        }
    }
    watchdog_suspend(d, r);
    if (!shim_alive) {
        if (r->job_pid > 0)
            kill(-r->job_pid, SIGKILL);
        return finish_run(d, r, NULL,
                          r->shim_pid ? "supervisor lost: tessel-shim died before the job's end"
                                      : "daemon stopped while the job was starting",
                          TJM_CAUSE_LOST);
    }
    check_time_limit(d, r, now);
    int64_t asked = r->cancel_ms ? r->cancel_ms : r->preempt_ms;
    int64_t grace = TESSD_CANCEL_GRACE_MS;
    if (!asked && r->timeout_ms) {
        asked = r->timeout_ms;
        grace = d->kill_wait_ms;
    }
    if (asked && !r->killed && now - asked >= grace) {
        signal_job(d, r, SIGKILL);
        r->killed = true;
    }
    return false;
}

/* A suspended job that is asked to stop is resumed first: its SIGTERM handler may need the GPU
 * to write a checkpoint, and a job held at a launch would otherwise only end by the SIGKILL of
 * the grace period.  A failure is logged; the stop goes on (SIGKILL ends a held job too). */
static void resume_to_stop(tessd_t *d, tessd_run_t *r, const char *why)
{
    if (!r->suspended_ms)
        return;
    tsl_error_t err;
    char text[64];
    snprintf(text, sizeof text, "resumed for its %s", why);
    if (r->gpu_released) {
        /* Its GPU memory was given back: the tick restores it as soon as its GPU has room (a
         * cancel comes from an API thread, which may not call libsched); until then its
         * processes get the signals checkpointed, and one that dies so leaves nothing on the
         * GPU (the driver frees what it kept). */
        r->resume_wanted = true;
        snprintf(r->resume_by, sizeof r->resume_by, "tesseld");
        r->resume_wait[0] = '\0';
        tessd_wake(d);
        return;
    }
    if (tessd_resume(d, r, "tesseld", text, &err) < 0)
        tessd_log("job %lld: %s of a suspended job: cannot resume it first: %s", (long long)r->id,
                  why, err.text);
}

/* A running job past its time limit (batch.h): resumed if suspended, SIGTERM now, SIGKILL
 * after --kill-wait (check_run); finish_run records its end as "time limit".  Reads only what
 * the store keeps, so after a restart the limit is enforced again. */
static void check_time_limit(tessd_t *d, tessd_run_t *r, int64_t now)
{
    if (!r->time_limit_s || r->timeout_ms || r->cancel_ms || r->preempt_ms ||
        tessd_time_used_ms(r->started_ms, r->suspended_total_ms, r->susp_idle ? 0 : r->suspended_ms,
                           now) < r->time_limit_s * 1000)
        return;
    char lim[32], reason[64];
    tsl_format_duration(r->time_limit_s, lim, sizeof lim);
    snprintf(reason, sizeof reason, "stopping: time limit (%s)", lim);
    /* The job model's stop with the time limit as its cause: its end is then TJM_EV_TIMEOUT
     * (tjm_end_event), whatever the job does on its SIGTERM. */
    tsl_error_t err;
    tjm_change_t chg = {.now_ms = now, .cause = TJM_CAUSE_TIME_LIMIT};
    if (tessd_job_apply(d, r->id, TJM_EV_KILL, &chg, "tesseld", reason, &err) < 0) {
        tessd_log("job %lld: time limit: %s (tried again at the next tick)", (long long)r->id,
                  err.text);
        return;
    }
    r->timeout_ms = now;
    resume_to_stop(d, r, "time limit");
    signal_job(d, r, SIGTERM);
    tessd_log("job %lld reached its time limit (%s): SIGTERM, SIGKILL in %lld s", (long long)r->id,
              lim, (long long)(d->kill_wait_ms / 1000));
}

int tessd_cancel_running(tessd_t *d, int64_t id, const char *by, tsl_error_t *err)
{
    tessd_run_t *r = tessd_run_find(d, id);
    if (!r) {
        errno = ENOENT;
        return tsl_errprintf(err, "job %lld is not running", (long long)id);
    }
    int64_t now = tessd_now_ms();
    /* Being stopped at its time limit already: the signals below only (it ends "time
     * limit"). */
    if (!r->cancel_ms && !r->timeout_ms) {
        tjm_change_t chg = {.now_ms = now};
        if (tessd_job_apply(d, id, TJM_EV_KILL, &chg, by, "cancelling", err) < 0)
            return -1;
        resume_to_stop(d, r, "cancel");
        r->cancel_ms = now;
        snprintf(r->cancel_by, sizeof r->cancel_by, "%s", by);
    }
    if (r->job_pid == 0) {
        char dir[PATH_MAX];
        pid_t s;
        uint64_t st;
        tessd_job_dir(d, id, dir, sizeof dir);
        pid_t j;
        if (read_pids_checked(d, id, dir, r->shim_pid, &s, &st, &j) == 0)
            r->job_pid = j;
    }
    signal_job(d, r, SIGTERM);
    return 0;
}

/* ---- scheduling ------------------------------------------------------------------------ */

/* Build the placement JSON of a member. */
static char *placement_json(tessd_t *d, const tsched_member_t *m)
{
    json_t *a = json_array();
    for (uint32_t i = 0; i < m->ngpus; i++) {
        int g = m->gpu[i];
        json_array_append_new(a, json_pack("{s:i, s:s, s:i, s:I}", "gpu", g, "uuid",
                                           g < d->ngpus ? d->gpus[g].uuid : "", "milli",
                                           (int)m->milli_gpu, "mem", (json_int_t)m->gpu_mem_bytes));
    }
    char *s = json_dumps(a, JSON_COMPACT);
    json_decref(a);
    return s;
}

/* Start one job libsched placed.  Returns 0 when it was started or recorded as failed. */
static void start_job(tessd_t *d, uint64_t id, const tsched_member_t *m)
{
    tsl_error_t err;
    tstore_job_t j;
    if (tstore_job_get(d->store, (int64_t)id, &j, &err) < 0 || j.state != TSTORE_PENDING) {
        /* Not pending in the store any more (cancelled meanwhile): forget it. */
        tessd_sched_remove(d, (int64_t)id);
        tstore_job_clear(&j);
        return;
    }
    char *pl = placement_json(d, m);
    tessd_run_t *r = pl ? run_add(d, j.id) : NULL;
    if (!r) {
        free(pl);
        tstore_job_clear(&j);
        return;
    }
    r->member = *m;
    r->no_requeue = j.no_requeue;
    r->gpu_oversub = j.gpu_oversub;
    r->idle_reclaim_s = j.idle_reclaim_s;
    r->time_limit_s = j.time_limit_s;
    tessd_qjob(d, &j, &r->q);
    snprintf(r->user, sizeof r->user, "%s", j.user);
    snprintf(r->queue, sizeof r->queue, "%s", j.queue);
    double now_s = tessd_sched_now();
    if (tsched_job_started(d->sched, id, m, 1, now_s) < 0) {
        tessd_log("job %lld: libsched refused its start: %s", (long long)j.id, strerror(errno));
        run_remove(d, r);
        free(pl);
        tstore_job_clear(&j);
        return;
    }
    r->holds = true;
    /* Running in the store before the process exists: a crash after the spawn can then
     * never start the job a second time.  A crash before it is told apart by the start lock
     * (check_run): the job is requeued. */
    r->started_ms = tessd_now_ms();
    tjm_change_t chg = {.placement_json = pl, .now_ms = r->started_ms};
    if (tessd_job_apply(d, j.id, TJM_EV_START, &chg, "tesseld", NULL, &err) < 0) {
        tessd_log("job %lld: cannot start: %s", (long long)j.id, err.text);
        tsched_job_stopped(d->sched, id, now_s);
        run_remove(d, r);
        free(pl);
        tstore_job_clear(&j);
        return;
    }
    free(pl);
    tessd_test_kill_point(d, "running");
    if (tessd_launch(d, &j, r, &err) < 0) {
        tessd_log("job %lld: cannot start: %s", (long long)j.id, err.text);
        tagent_exit_t ex = {.exit_code = -1};
        snprintf(ex.error, sizeof ex.error, "%.159s", err.text);
        finish_run(d, r, &ex, NULL, TJM_CAUSE_LAUNCH_FAILURE);
    }
    tstore_job_clear(&j);
}

void tessd_preempt_requeue(tessd_t *d, tessd_run_t *r, int64_t for_job, const char *queue,
                           const char *how)
{
    if (r->preempt_ms || r->cancel_ms)
        return;
    /* Recorded (structured: for which job, of which queue) before the SIGTERM: a restart
     * carries the preemption on from the store's columns (tjm_recover). */
    int64_t now = tessd_now_ms();
    tjm_change_t chg = {
        .now_ms = now, .preempt_for = for_job, .preempt_queue = queue[0] ? queue : NULL};
    tsl_error_t err;
    if (tessd_job_apply(d, r->id, TJM_EV_PREEMPT, &chg, "tesseld", NULL, &err) < 0) {
        tessd_log("job %lld: not preempted: %s", (long long)r->id, err.text);
        d->sched_dirty = true;
        return;
    }
    r->preempt_ms = now;
    r->preempt_for = for_job;
    snprintf(r->preempt_queue, sizeof r->preempt_queue, "%s", queue);
    resume_to_stop(d, r, "preemption");
    signal_job(d, r, SIGTERM);
    tessd_log("job %lld preempted for job %lld (%s)", (long long)r->id, (long long)for_job, how);
}

/* Carry out a victim of the cycle: suspended when libsched says TSCHED_SUSPEND (the job's
 * preemptible, sched.c) and its checkpoint can start; otherwise killed and requeued.  A job
 * whose suspension for a preemption is under way or done is left alone (libsched forgets it
 * once its memory is given back, so it is not chosen twice but by a rebuild meanwhile). */
static void preempt(tessd_t *d, const tsched_victim_t *v)
{
    tessd_run_t *r = tessd_run_find(d, (int64_t)v->job);
    if (!r || r->preempt_ms || r->cancel_ms || r->susp_for)
        return;
    char queue[TSTORE_NAME_MAX + 1] = "";
    tstore_job_t f;
    if (tstore_job_get(d->store, (int64_t)v->for_job, &f, NULL) == 0) {
        snprintf(queue, sizeof queue, "%s", f.queue);
        tstore_job_clear(&f);
    }
    char how[200] = "requeue";
    if (v->action == TSCHED_SUSPEND) {
        tsl_error_t err;
        const char *no = r->suspended_ms          ? "suspended already, keeping its memory"
                         : r->ckpt_op             ? "a checkpoint step of its own is under way"
                         : !tessd_has_slice(d, r) ? "it has no GPU slice"
                         : r->shim_pid <= 0       ? "its supervisor is not known yet"
                                                  : NULL;
        if (!no && tessd_suspend_for(d, r, (int64_t)v->for_job, queue, &err) == 0) {
            tessd_log("job %lld preempted for job %lld: suspending it (its GPU memory given back "
                      "to the preemptor)",
                      (long long)r->id, (long long)v->for_job);
            return;
        }
        snprintf(how, sizeof how, "suspension asked, requeued instead: %.150s", no ? no : err.text);
    }
    tessd_preempt_requeue(d, r, (int64_t)v->for_job, queue, how);
}

/* Hand the inbox to libsched (lock held, main thread).  Why a new job waits comes from the
 * cycle that follows (tessd_sched_waits). */
static void drain_inbox(tessd_t *d)
{
    double now = tessd_sched_now();
    for (size_t i = 0; i < d->ninbox; i++) {
        tessd_inbox_t *in = &d->inbox[i];
        if (in->remove) {
            tsched_job_remove(d->sched, in->q.id, now);
            continue;
        }
        tsl_error_t err;
        char why[160] = "";
        in->q.queue = tsched_queue_find(d->sched, in->queue);
        if (in->q.queue < 0 || tsched_job_submit(d->sched, &in->q, &err) < 0) {
            snprintf(why, sizeof why, "the scheduler refused the job: %.120s",
                     in->q.queue < 0 ? "unknown queue" : err.text);
            if (tessd_job_apply(d, (int64_t)in->q.id, TJM_EV_REJECT, NULL, "tesseld", why, &err) <
                0)
                tessd_log("job %lld: %s", (long long)in->q.id, err.text);
            continue;
        }
    }
    d->ninbox = 0;
}

/* Copies of a cycle's decisions, made while the lock is not held. */
typedef struct {
    uint64_t id;
    tsched_member_t m;
} start_t;

/* Publish each queue's "guarantee satisfied" for the API (main thread: libsched is its
 * alone; the lock only for the swap).  O(queues x pending jobs), after a cycle. */
static void snapshot(tessd_t *d)
{
    size_t n = tsched_queue_count(d->sched);
    tessd_qsnap_t *v = n ? calloc(n, sizeof *v) : NULL;
    if (n && !v)
        return;
    double now = tessd_sched_now();
    for (size_t i = 0; i < n; i++) {
        tsched_queue_stat_t st;
        if (tsched_queue_stat(d->sched, (int)i, now, &st) == 0) {
            snprintf(v[i].name, sizeof v[i].name, "%s", st.name);
            v[i].reserve_after = st.reserve_after;
            v[i].placement = st.placement;
            v[i].pending = st.pending;
            v[i].running = st.running;
        }
        v[i].satisfied = tsched_queue_satisfied(d->sched, (int)i) == 1;
    }
    pthread_mutex_lock(&d->lock);
    tessd_qsnap_t *old = d->qsnap;
    d->qsnap = v;
    d->nqsnap = n;
    pthread_mutex_unlock(&d->lock);
    free(old);
}

void tessd_tick(tessd_t *d)
{
    pthread_mutex_lock(&d->lock);
    int status;
    pid_t reaped;
    while ((reaped = waitpid(-1, &status, WNOHANG)) > 0) {
        /* Shims record the job's end in files; their own status carries nothing more.  The
         * services' proxy is a child too (serve_run.c). */
        tessd_serve_reaped(d, reaped, status);
    }
    int64_t now = tessd_now_ms();
    for (size_t i = 0; i < d->nruns;) {
        if (!check_run(d, &d->runs[i], now))
            i++;
    }
    /* Services: replicas replaced or scaled before the inbox is drained (serve_run.h). */
    tessd_serve_tick(d);
    /* Interactive jobs whose web services sat idle (--interactive-idle). */
    tessd_jobsvc_idle_pass(d);
    if (d->rebuild) {
        tsl_error_t err;
        d->rebuild = false;
        /* The build reads every pending job from the store: the inbox is in it already. */
        if (tessd_sched_build(d, &err) < 0)
            tessd_log("scheduler rebuild: %s (the old queues stay)", err.text);
    } else if (d->queues_dirty) {
        tsl_error_t err;
        if (tessd_sched_sync_queues(d, &err) < 0) {
            tessd_log("queue edit: %s (the old queues stay)", err.text);
            d->queues_dirty = false;
        }
    }
    /* A job that ended may release held jobs (dependencies, arrays' %N), and one that
     * arrived held may be released at once: checked before the inbox is drained, so that a
     * released job is handed over in this tick. */
    tessd_holds_check(d);
    tessd_ckpt_tick(d);
    tessd_idle_tick(d);
    drain_inbox(d);
    /* Without events a cycle is still due now and then: a victim becomes eligible once it has
     * run min_runtime, a long-pending job earns a reservation, fair share decays. */
    if (now - d->last_cycle_ms >= TESSD_CYCLE_IDLE_MS)
        d->sched_dirty = true;
    bool dirty = d->sched_dirty;
    d->sched_dirty = false;
    pthread_mutex_unlock(&d->lock);
    if (!dirty)
        return;

    /* libsched is the main thread's alone: the cycle runs without the lock. */
    d->last_cycle_ms = now;
    atomic_fetch_add(&d->sched_cycles, 1);
    tsched_decisions_t dec;
    tsl_error_t err;
    int rc = tsched_sched_cycle(d->sched, tessd_sched_now(), &dec, &err);
    size_t n = 0, nv = 0;
    start_t starts[TESSD_START_BURST];
    tsched_victim_t *victims = NULL;
    tessd_wait_t *waits = NULL;
    size_t nw = rc == 0 ? tessd_sched_waits(d, &waits) : 0;
    if (rc == 0) {
        n = dec.nstarts < TESSD_START_BURST ? dec.nstarts : TESSD_START_BURST;
        for (size_t i = 0; i < n; i++) {
            starts[i].id = dec.starts[i].job;
            starts[i].m = dec.starts[i].members[0];
        }
        if (dec.nvictims) {
            victims = malloc(dec.nvictims * sizeof *victims);
            if (victims) {
                memcpy(victims, dec.victims, dec.nvictims * sizeof *victims);
                nv = dec.nvictims;
            }
        }
    }
    pthread_mutex_lock(&d->lock);
    if (rc < 0) {
        tessd_log("scheduling cycle: %s", err.text);
        d->sched_dirty = true;
    }
    for (size_t i = 0; i < nv; i++)
        preempt(d, &victims[i]);
    for (size_t i = 0; i < n; i++)
        start_job(d, starts[i].id, &starts[i].m);
    if (rc == 0 && dec.nstarts > n) {
        d->sched_dirty = true; /* the rest at the next pass, after the gap */
        tessd_wake(d);
    }
    tessd_sched_store_waits(d, waits, nw);
    pthread_mutex_unlock(&d->lock);
    free(victims);
    free(waits);
    snapshot(d);
}

/* ---- recovery ---------------------------------------------------------------------------- */

static int recover_one(const tstore_job_t *j, void *arg)
{
    tessd_t *d = arg;
    tessd_run_t *r = run_add(d, j->id);
    if (!r)
        return 1;
    snprintf(r->user, sizeof r->user, "%s", j->user);
    snprintf(r->queue, sizeof r->queue, "%s", j->queue);
    tessd_qjob(d, j, &r->q);
    r->shim_pid = j->shim_pid;
    r->shim_start = j->shim_start;
    r->job_pid = j->job_pid;
    r->no_requeue = j->no_requeue;
    r->gpu_oversub = j->gpu_oversub;
    r->started_ms = j->started_ms;
    r->time_limit_s = j->time_limit_s;
    r->suspended_total_ms = j->suspended_total_ms;
    r->susp_for = j->state == TSTORE_RUNNING && j->suspended_ms ? j->suspended_for : 0;
    r->idle_reclaim_s = j->idle_reclaim_s;
    r->susp_idle = j->state == TSTORE_RUNNING && j->suspended_ms && j->suspended_idle;
    if (r->susp_for) {
        tstore_job_t f;
        if (tstore_job_get(d->store, r->susp_for, &f, NULL) == 0) {
            snprintf(r->susp_queue, sizeof r->susp_queue, "%s", f.queue);
            tstore_job_clear(&f);
        }
    }
    /* A stop under way when tesseld stopped goes on (its SIGTERM was sent): the model restores
     * it from the job's columns (the first tick decides the rest from what it sees). */
    tjm_seen_t seen = {.shim_alive = true};
    tjm_recovery_t plan;
    if (tjm_recover(j, &seen, &plan) == 0) {
        r->suspended_ms = plan.suspended ? j->suspended_ms : 0;
        r->gpu_released = plan.suspended ? j->gpu_released : 0;
        r->cancel_ms = plan.cancel_ms;
        /* A stop for its time limit goes on as such (--kill-wait, not a cancel's grace). */
        if (plan.cancel_asked && j->end_cause == TJM_CAUSE_TIME_LIMIT) {
            r->timeout_ms = plan.cancel_ms;
            r->cancel_ms = 0;
        }
        snprintf(r->cancel_by, sizeof r->cancel_by, "%s", j->cancel_by ? j->cancel_by : "");
        if (plan.preempting) {
            r->preempt_for = plan.preempt_for;
            snprintf(r->preempt_queue, sizeof r->preempt_queue, "%s", plan.preempt_queue);
            r->preempt_ms = plan.preempt_ms ? plan.preempt_ms : tessd_now_ms();
        }
    }
    tsched_member_t *m = &r->member;
    memset(m, 0, sizeof *m);
    m->cpu_milli = (uint64_t)j->cpu_milli;
    m->mem_bytes = j->mem;
    json_t *pl = j->placement_json ? json_loads(j->placement_json, 0, NULL) : NULL;
    size_t i;
    json_t *e;
    json_array_foreach(pl, i, e)
    {
        if (i >= TSCHED_MAX_NODE_GPUS)
            break;
        m->gpu[m->ngpus++] = (uint8_t)json_integer_value(json_object_get(e, "gpu"));
        m->milli_gpu = (uint32_t)json_integer_value(json_object_get(e, "milli"));
        m->gpu_mem_bytes = (uint64_t)json_integer_value(json_object_get(e, "mem"));
    }
    json_decref(pl);
    if (r->shim_pid == 0) {
        char dir[PATH_MAX];
        tessd_job_dir(d, j->id, dir, sizeof dir);
        pid_t s, jp;
        uint64_t st;
        if (read_pids_checked(d, j->id, dir, 0, &s, &st, &jp) == 0) {
            r->shim_pid = s;
            r->shim_start = st;
            r->job_pid = jp;
        }
    }
    /* A suspended job stays suspended; the slice file is made to agree with the store (after
     * the pids: a checkpoint tesseld did not finish is undone on the shim's processes). */
    if (r->suspended_ms || tessd_has_slice(d, r))
        tessd_suspend_recover(d, r);
    return 0;
}

int tessd_recover(tessd_t *d, tsl_error_t *err)
{
    tstore_job_filter_t f = {.state_mask = 1u << TSTORE_RUNNING, .limit = 1 << 30};
    if (tstore_job_list(d->store, &f, recover_one, d, err) < 0)
        return -1;
    size_t n = d->nruns;
    /* Before the first tick can start a job: the running jobs are known, every other group of
     * ours is stale (and another instance's once old). */
    tessd_cgroup_sweep(d);
    /* The running jobs hold their placements again, pending jobs are handed to libsched. */
    if (tessd_sched_build(d, err) < 0)
        return -1;
    /* Jobs that ended while tesseld was down are recorded by the first tick. */
    bool dirty = d->sched_dirty;
    d->sched_dirty = false;
    tessd_tick(d);
    d->sched_dirty = dirty || d->sched_dirty;
    tessd_log("recovered %zu running job(s): %zu still running, %zu ended while tesseld was down",
              n, d->nruns, n - d->nruns);
    return 0;
}
