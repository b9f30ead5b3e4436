/* jobmodel.c - the job model (see jobmodel.h): the table of states x events, the one function
 * that applies an event, the end of a running job, and restart recovery. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "daemon/jobmodel.h"

static const char *const state_names[TJM_NSTATES + 1] = {
    [TJM_PENDING] = "pending",     [TJM_RUNNING] = "running",
    [TJM_SUCCEEDED] = "succeeded", [TJM_FAILED] = "failed",
    [TJM_CANCELLED] = "cancelled", [TJM_PREEMPTED] = "preempted",
    [TJM_SUSPENDED] = "suspended", [TJM_NEW] = "new",
};

static const char *const event_names[TJM_NEVENTS] = {
    [TJM_EV_SUBMIT] = "submit",
    [TJM_EV_START] = "start",
    [TJM_EV_SPAWNED] = "spawned",
    [TJM_EV_EXIT] = "exit",
    [TJM_EV_FAIL] = "fail",
    [TJM_EV_CANCEL] = "cancel",
    [TJM_EV_KILL] = "kill",
    [TJM_EV_KILLED] = "killed",
    [TJM_EV_SUSPEND] = "suspend",
    [TJM_EV_RESUME] = "resume",
    [TJM_EV_PREEMPT] = "preempt",
    [TJM_EV_REQUEUE] = "requeue",
    [TJM_EV_PREEMPTED] = "preempted",
    [TJM_EV_UNSTART] = "unstart",
    [TJM_EV_LAUNCH_FAIL] = "launch_fail",
    [TJM_EV_TIMEOUT] = "timeout",
    [TJM_EV_DEP_NEVER] = "dependency_never",
    [TJM_EV_REJECT] = "reject",
};

static const char *const cause_names[TJM_NCAUSES] = {
    [TJM_CAUSE_EXIT] = "exit",
    [TJM_CAUSE_SIGNAL] = "signal",
    [TJM_CAUSE_CANCELLED] = "cancelled",
    [TJM_CAUSE_PREEMPTED] = "preempted",
    [TJM_CAUSE_TIME_LIMIT] = "time_limit",
    [TJM_CAUSE_HOST_OOM] = "host_oom",
    [TJM_CAUSE_GPU_MEM_LIMIT] = "gpu_mem_limit",
    [TJM_CAUSE_LAUNCH_FAILURE] = "launch_failure",
    [TJM_CAUSE_DEPENDENCY] = "dependency",
    [TJM_CAUSE_LOST] = "lost",
    [TJM_CAUSE_REJECTED] = "rejected",
};

/* What an event needs of the stop under way besides its source state. */
typedef enum {
    G_NONE = 0,
    G_NOT_STOPPING,   /* no cancel and no preemption asked (EBUSY) */
    G_NOT_CANCELLING, /* no cancel asked yet (EBUSY) */
    G_CANCELLING,     /* a cancel was asked (EINVAL) */
    G_PREEMPTING,     /* a preemption was asked (EINVAL) */
    G_REQUEUABLE,     /* a preemption was asked and the job may be requeued (EINVAL) */
    G_NO_SHIM,        /* no supervisor recorded (EINVAL) */
} guard_t;

/* THE TABLE.  One row per legal (from, event); every pair not listed is illegal.  The end
 * cause of each end is in end_cause_of. */
static const struct {
    tjm_state_t from;
    tjm_event_t ev;
    tjm_state_t to;
    guard_t guard;
} table[] = {
    {TJM_NEW, TJM_EV_SUBMIT, TJM_PENDING, G_NONE},
    {TJM_PENDING, TJM_EV_START, TJM_RUNNING, G_NONE},
    {TJM_PENDING, TJM_EV_CANCEL, TJM_CANCELLED, G_NONE},
    {TJM_PENDING, TJM_EV_DEP_NEVER, TJM_CANCELLED, G_NONE},
    {TJM_PENDING, TJM_EV_REJECT, TJM_FAILED, G_NONE},

    {TJM_RUNNING, TJM_EV_SPAWNED, TJM_RUNNING, G_NONE},
    {TJM_RUNNING, TJM_EV_EXIT, TJM_SUCCEEDED, G_NONE},
    {TJM_RUNNING, TJM_EV_FAIL, TJM_FAILED, G_NONE},
    {TJM_RUNNING, TJM_EV_KILL, TJM_RUNNING, G_NOT_CANCELLING},
    {TJM_RUNNING, TJM_EV_KILLED, TJM_CANCELLED, G_CANCELLING},
    {TJM_RUNNING, TJM_EV_SUSPEND, TJM_SUSPENDED, G_NOT_STOPPING},
    {TJM_RUNNING, TJM_EV_PREEMPT, TJM_RUNNING, G_NOT_STOPPING},
    {TJM_RUNNING, TJM_EV_REQUEUE, TJM_PENDING, G_REQUEUABLE},
    {TJM_RUNNING, TJM_EV_PREEMPTED, TJM_PREEMPTED, G_PREEMPTING},
    {TJM_RUNNING, TJM_EV_UNSTART, TJM_PENDING, G_NO_SHIM},
    {TJM_RUNNING, TJM_EV_LAUNCH_FAIL, TJM_FAILED, G_NONE},
    {TJM_RUNNING, TJM_EV_TIMEOUT, TJM_FAILED, G_NONE},

    {TJM_SUSPENDED, TJM_EV_SPAWNED, TJM_SUSPENDED, G_NONE},
    {TJM_SUSPENDED, TJM_EV_EXIT, TJM_SUCCEEDED, G_NONE},
    {TJM_SUSPENDED, TJM_EV_FAIL, TJM_FAILED, G_NONE},
    {TJM_SUSPENDED, TJM_EV_KILL, TJM_SUSPENDED, G_NOT_CANCELLING},
    {TJM_SUSPENDED, TJM_EV_KILLED, TJM_CANCELLED, G_CANCELLING},
    {TJM_SUSPENDED, TJM_EV_RESUME, TJM_RUNNING, G_NONE},
    {TJM_SUSPENDED, TJM_EV_PREEMPT, TJM_SUSPENDED, G_NOT_STOPPING},
    {TJM_SUSPENDED, TJM_EV_REQUEUE, TJM_PENDING, G_REQUEUABLE},
    {TJM_SUSPENDED, TJM_EV_PREEMPTED, TJM_PREEMPTED, G_PREEMPTING},
    {TJM_SUSPENDED, TJM_EV_TIMEOUT, TJM_FAILED, G_NONE},
};
#define NTABLE (sizeof table / sizeof table[0])

const char *tjm_state_name(tjm_state_t s)
{
    return (unsigned)s <= TJM_NEW ? state_names[s] : "unknown";
}

const char *tjm_event_name(tjm_event_t ev)
{
    return (unsigned)ev < TJM_NEVENTS ? event_names[ev] : "unknown";
}

const char *tjm_cause_name(tjm_cause_t c)
{
    return c > TJM_CAUSE_NONE && c < TJM_NCAUSES ? cause_names[c] : NULL;
}

tjm_state_t tjm_job_state(const tstore_job_t *j)
{
    if (j->state == TSTORE_RUNNING && j->suspended_ms > 0)
        return TJM_SUSPENDED;
    return (tjm_state_t)j->state;
}

static int find_row(tjm_state_t from, tjm_event_t ev)
{
    for (size_t i = 0; i < NTABLE; i++)
        if (table[i].from == from && table[i].ev == ev)
            return (int)i;
    return -1;
}

int tjm_next(tjm_state_t from, tjm_event_t ev)
{
    int i = find_row(from, ev);
    return i < 0 ? -1 : (int)table[i].to;
}

static int64_t now_ms(const tjm_change_t *chg)
{
    if (chg->now_ms)
        return chg->now_ms;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The guard of a row on job j: 0, or -1 with errno and err. */
static int check_guard(guard_t g, const tstore_job_t *j, tjm_event_t ev, tsl_error_t *err)
{
    long long id = (long long)j->id;
    const char *evn = tjm_event_name(ev);
    switch (g) {
    case G_NONE:
        return 0;
    case G_NOT_STOPPING:
        if (j->cancel_ms || j->preempt_for) {
            errno = EBUSY;
            return tsl_errprintf(err, "job %lld is being %s: no %s now", id,
                                 j->cancel_ms ? "cancelled" : "preempted", evn);
        }
        return 0;
    case G_NOT_CANCELLING:
        if (j->cancel_ms) {
            errno = EBUSY;
            return tsl_errprintf(err, "job %lld: a cancel is already asked", id);
        }
        return 0;
    case G_CANCELLING:
        if (!j->cancel_ms) {
            errno = EINVAL;
            return tsl_errprintf(err, "job %lld: %s without a cancel asked", id, evn);
        }
        return 0;
    case G_PREEMPTING:
    case G_REQUEUABLE:
        if (!j->preempt_for) {
            errno = EINVAL;
            return tsl_errprintf(err, "job %lld: %s without a preemption asked", id, evn);
        }
        if (g == G_REQUEUABLE && j->no_requeue) {
            errno = EINVAL;
            return tsl_errprintf(err, "job %lld was submitted with requeue false: not requeued",
                                 id);
        }
        return 0;
    case G_NO_SHIM:
        if (j->shim_pid) {
            errno = EINVAL;
            return tsl_errprintf(err,
                                 "job %lld: its supervisor was started (pid %d): not unstarted", id,
                                 j->shim_pid);
        }
        return 0;
    }
    errno = EINVAL;
    return tsl_errprintf(err, "job %lld: unknown guard", id);
}

/* The end cause an end event records; NONE for events that end nothing. */
static tjm_cause_t end_cause_of(tjm_event_t ev, const tjm_change_t *chg)
{
    switch (ev) {
    case TJM_EV_EXIT:
        return TJM_CAUSE_EXIT;
    case TJM_EV_FAIL:
        if (chg->cause)
            return chg->cause;
        return chg->signal > 0 ? TJM_CAUSE_SIGNAL : TJM_CAUSE_EXIT;
    case TJM_EV_CANCEL:
    case TJM_EV_KILLED:
        return TJM_CAUSE_CANCELLED;
    case TJM_EV_PREEMPTED:
        return TJM_CAUSE_PREEMPTED;
    case TJM_EV_LAUNCH_FAIL:
        return TJM_CAUSE_LAUNCH_FAILURE;
    case TJM_EV_TIMEOUT:
        return TJM_CAUSE_TIME_LIMIT;
    case TJM_EV_DEP_NEVER:
        return TJM_CAUSE_DEPENDENCY;
    case TJM_EV_REJECT:
        return TJM_CAUSE_REJECTED;
    default:
        return TJM_CAUSE_NONE;
    }
}

/* Which causes an event accepts in chg->cause. */
static bool cause_ok(tjm_event_t ev, tjm_cause_t c)
{
    if (c == TJM_CAUSE_NONE)
        return true;
    if (ev == TJM_EV_FAIL)
        return c == TJM_CAUSE_EXIT || c == TJM_CAUSE_SIGNAL || c == TJM_CAUSE_HOST_OOM ||
               c == TJM_CAUSE_GPU_MEM_LIMIT || c == TJM_CAUSE_LOST;
    return ev == TJM_EV_KILL && c == TJM_CAUSE_TIME_LIMIT;
}

/* The default why of an event, when the caller gives none. */
static void default_why(tjm_event_t ev, const tstore_job_t *j, const tjm_change_t *chg,
                        const char *who, char *buf, size_t len)
{
    switch (ev) {
    case TJM_EV_EXIT:
    case TJM_EV_FAIL:
        if (chg->signal > 0)
            snprintf(buf, len, "killed by signal %d", chg->signal);
        else
            snprintf(buf, len, "exited with status %d", chg->has_exit_code ? chg->exit_code : -1);
        break;
    case TJM_EV_CANCEL:
        snprintf(buf, len, "cancelled by %s", who);
        break;
    case TJM_EV_KILL:
        snprintf(buf, len, "cancelling");
        break;
    case TJM_EV_KILLED:
        snprintf(buf, len, "cancelled by %s", j->cancel_by ? j->cancel_by : who);
        break;
    case TJM_EV_PREEMPT:
        snprintf(buf, len, "preempting: makes room for job %lld of queue '%s'",
                 (long long)chg->preempt_for, chg->preempt_queue ? chg->preempt_queue : "");
        break;
    case TJM_EV_REQUEUE:
        snprintf(buf, len, "requeued: preempted to make room for job %lld",
                 (long long)j->preempt_for);
        break;
    case TJM_EV_PREEMPTED:
        snprintf(buf, len, "preempted to make room for job %lld", (long long)j->preempt_for);
        break;
    case TJM_EV_UNSTART:
        snprintf(buf, len, "requeued: tesseld stopped before the job's start");
        break;
    case TJM_EV_LAUNCH_FAIL:
        snprintf(buf, len, "its supervisor could not be started");
        break;
    case TJM_EV_TIMEOUT:
        snprintf(buf, len, "time limit reached");
        break;
    case TJM_EV_DEP_NEVER:
        snprintf(buf, len, "a dependency can never be satisfied");
        break;
    case TJM_EV_REJECT:
        snprintf(buf, len, "the scheduler refused the job");
        break;
    default:
        buf[0] = '\0';
        break;
    }
}

/* Replace a string column (NULL allowed).  0, or -1 (ENOMEM). */
static int set_str(char **col, const char *v)
{
    char *n = NULL;
    if (v && !(n = strdup(v)))
        return -1;
    free(*col);
    *col = n;
    return 0;
}

/* The stop under way and the attempt's traces go: back to pending. */
static void clear_attempt(tstore_job_t *j)
{
    free(j->placement_json);
    j->placement_json = NULL;
    j->started_ms = 0;
    j->has_exit_code = false;
    j->exit_code = 0;
    j->signal = 0;
    j->shim_pid = j->job_pid = 0;
    j->shim_start = 0;
    j->cancel_ms = 0;
    free(j->cancel_by);
    j->cancel_by = NULL;
    j->suspended_ms = 0;
    j->preempt_for = 0;
    j->preempt_ms = 0;
    free(j->preempt_queue);
    j->preempt_queue = NULL;
    j->suspended_for = 0;
    j->suspended_idle = false;
    j->end_cause = TJM_CAUSE_NONE;
}

/* The new columns of j after ev (to: the table's state).  0, or -1 (ENOMEM). */
static int apply_columns(tstore_job_t *j, tjm_event_t ev, tjm_state_t to, const tjm_change_t *chg,
                         const char *who, const char *why, int64_t now)
{
    bool ends =
        to == TJM_SUCCEEDED || to == TJM_FAILED || to == TJM_CANCELLED || to == TJM_PREEMPTED;
    switch (ev) {
    case TJM_EV_START:
        if (set_str(&j->placement_json, chg->placement_json) < 0)
            return -1;
        j->started_ms = now;
        j->suspended_total_ms = 0; /* this attempt's time suspended (batch.h) */
        if (set_str(&j->reason, NULL) < 0)
            return -1;
        break;
    case TJM_EV_SPAWNED:
        j->shim_pid = chg->shim_pid;
        j->shim_start = chg->shim_start;
        j->job_pid = chg->job_pid;
        break;
    case TJM_EV_KILL:
        j->cancel_ms = now;
        if (set_str(&j->cancel_by, who) < 0 || set_str(&j->reason, why) < 0)
            return -1;
        /* A stop for the time limit: kept until the end (tjm_end_event). */
        j->end_cause = chg->cause;
        break;
    case TJM_EV_SUSPEND:
        j->suspended_ms = now;
        j->suspended_for = chg->suspend_for; /* a preemption by suspension's, else 0 */
        j->suspended_idle = chg->suspend_idle;
        break;
    case TJM_EV_RESUME:
        /* Time suspended does not count against a time limit (batch.h); but a job reclaimed
         * while idle ran on meanwhile (only its GPU state was put away): that time counts. */
        if (j->suspended_ms && now > j->suspended_ms && !j->suspended_idle)
            j->suspended_total_ms += now - j->suspended_ms;
        j->suspended_ms = 0;
        j->suspended_for = 0;
        j->suspended_idle = false;
        break;
    case TJM_EV_PREEMPT:
        j->preempt_for = chg->preempt_for;
        j->preempt_ms = now;
        if (set_str(&j->preempt_queue, chg->preempt_queue) < 0 || set_str(&j->reason, why) < 0)
            return -1;
        break;
    case TJM_EV_REQUEUE:
    case TJM_EV_UNSTART:
        clear_attempt(j);
        if (ev == TJM_EV_REQUEUE)
            j->preemptions++;
        if (set_str(&j->reason, why) < 0)
            return -1;
        break;
    case TJM_EV_CANCEL:
        if (set_str(&j->cancel_by, who) < 0)
            return -1;
        break;
    default:
        break;
    }
    if (ends) {
        if (set_str(&j->reason, why) < 0)
            return -1;
        j->finished_ms = now;
        j->has_exit_code = chg->has_exit_code;
        j->exit_code = chg->has_exit_code ? chg->exit_code : 0;
        j->signal = chg->signal > 0 ? chg->signal : 0;
        j->suspended_ms = 0;
        j->suspended_for = 0;
        j->suspended_idle = false;
        j->end_cause = end_cause_of(ev, chg);
        if (to == TJM_PREEMPTED)
            j->preemptions++;
    }
    j->state = to == TJM_SUSPENDED ? TSTORE_RUNNING : (tstore_state_t)to;
    return 0;
}

/* The structured detail of an event record (malloc'd JSON, or NULL when none / no memory). */
static char *detail_json(tjm_event_t ev, const tstore_job_t *j, const tjm_change_t *chg)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    switch (ev) {
    case TJM_EV_START: {
        json_t *pl = chg->placement_json ? json_loads(chg->placement_json, 0, NULL) : NULL;
        if (pl)
            json_object_set_new(o, "placement", pl);
        break;
    }
    case TJM_EV_SPAWNED:
        json_object_set_new(o, "shim_pid", json_integer(chg->shim_pid));
        if (chg->job_pid)
            json_object_set_new(o, "job_pid", json_integer(chg->job_pid));
        break;
    case TJM_EV_PREEMPT:
        json_object_set_new(o, "preempt_for", json_integer(chg->preempt_for));
        if (chg->preempt_queue)
            json_object_set_new(o, "preempt_queue", json_string(chg->preempt_queue));
        break;
    case TJM_EV_SUSPEND:
        if (chg->suspend_for) {
            json_object_set_new(o, "suspended_for", json_integer(chg->suspend_for));
            if (chg->preempt_queue)
                json_object_set_new(o, "preempt_queue", json_string(chg->preempt_queue));
        }
        if (chg->suspend_idle)
            json_object_set_new(o, "idle", json_true());
        break;
    case TJM_EV_REQUEUE:
    case TJM_EV_PREEMPTED:
        json_object_set_new(o, "preempt_for", json_integer(j->preempt_for));
        if (j->preempt_queue)
            json_object_set_new(o, "preempt_queue", json_string(j->preempt_queue));
        break;
    case TJM_EV_KILL:
        if (chg->cause)
            json_object_set_new(o, "cause", json_string(tjm_cause_name(chg->cause)));
        break;
    default:
        break;
    }
    if (chg->has_exit_code && ev != TJM_EV_KILL)
        json_object_set_new(o, "exit_code", json_integer(chg->exit_code));
    if (chg->signal > 0 && ev != TJM_EV_KILL)
        json_object_set_new(o, "signal", json_integer(chg->signal));
    tjm_cause_t c = end_cause_of(ev, chg);
    if (c)
        json_object_set_new(o, "end_cause", json_string(tjm_cause_name(c)));
    char *s = json_object_size(o) ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(o);
    return s;
}

bool tjm_state_final(tjm_state_t s)
{
    return s == TJM_SUCCEEDED || s == TJM_FAILED || s == TJM_CANCELLED || s == TJM_PREEMPTED;
}

/* The tallies of one change (see TJM_TALLY_STATE), inside its transaction. */
static int count_change(tstore_t *st, const tstore_job_t *j, tjm_state_t from, tjm_event_t ev,
                        tsl_error_t *err)
{
    tjm_state_t to = tjm_job_state(j);
    int rc = 0;
    if (from != to) {
        rc = tstore_tally_add(st, from == TJM_NEW ? TJM_TALLY_SUBMITTED : TJM_TALLY_STATE + from,
                              from == TJM_NEW ? 1 : -1, err);
        if (rc == 0)
            rc = tstore_tally_add(st, TJM_TALLY_STATE + to, 1, err);
        if (rc == 0 && tjm_state_final(to))
            rc = tstore_tally_add(st, TJM_TALLY_ENDED + (unsigned)j->end_cause, 1, err);
    }
    if (rc == 0 && ev == TJM_EV_START)
        rc = tstore_tally_add(st, TJM_TALLY_STARTED, 1, err);
    if (rc == 0 && ev == TJM_EV_SUSPEND)
        rc = tstore_tally_add(st,
                              TJM_TALLY_SUSPENDS + (j->suspended_idle  ? TJM_SUSP_IDLE
                                                    : j->suspended_for ? TJM_SUSP_PREEMPTION
                                                                       : TJM_SUSP_REQUEST),
                              1, err);
    return rc;
}

/* Write the job (or insert it, for the submission), its event and its tallies in one
 * transaction (from: the state before, TJM_NEW for the submission). */
static int write_change(const tjm_t *m, tstore_job_t *j, tjm_state_t from, tjm_event_t evt,
                        const tstore_event_t *ev, tsl_error_t *err)
{
    if (tstore_begin(m->store, err) < 0)
        return -1;
    int rc =
        from == TJM_NEW ? tstore_job_add(m->store, j, err) : tstore_job_write(m->store, j, err);
    if (rc == 0) {
        tstore_event_t e = *ev;
        e.job = j->id;
        rc = tstore_event_add(m->store, &e, err);
    }
    if (rc == 0)
        rc = count_change(m->store, j, from, evt, err);
    if (rc == 0)
        return tstore_commit(m->store, err);
    int saved = errno;
    tstore_rollback(m->store);
    errno = saved;
    return -1;
}

int tjm_submit(const tjm_t *m, tstore_job_t *job, const char *who, const char *why,
               tsl_error_t *err)
{
    tjm_change_t none = {0};
    int64_t now = job->submitted_ms ? job->submitted_ms : now_ms(&none);
    json_t *o = job->queue ? json_pack("{s:s}", "queue", job->queue) : NULL;
    char *detail = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    tstore_event_t e = {
        .time_ms = now,
        .who = who,
        .event = tjm_event_name(TJM_EV_SUBMIT),
        .from_state = NULL,
        .to_state = tjm_state_name(TJM_PENDING),
        .why = why,
        .detail_json = detail,
    };
    int rc = write_change(m, job, TJM_NEW, TJM_EV_SUBMIT, &e, err);
    int saved = errno;
    free(detail);
    if (rc < 0) {
        errno = saved;
        return -1;
    }
    if (m->notify)
        m->notify(m->arg, job->id, TJM_NEW, TJM_PENDING);
    return 0;
}

/* /metrics' histograms, after a committed change: a start's time pending (from submission),
 * an attempt's time running (from its start) when it ends or is requeued. */
static void observe(const tjm_t *m, tjm_event_t ev, tjm_state_t from, tjm_state_t to, int64_t now,
                    int64_t submitted, int64_t started)
{
    bool was_running = from == TJM_RUNNING || from == TJM_SUSPENDED;
    bool runs = to == TJM_RUNNING || to == TJM_SUSPENDED;
    if (ev == TJM_EV_START && m->pending_hist && submitted > 0)
        tsl_hist_observe(m->pending_hist, (double)(now - submitted) / 1000);
    else if (was_running && !runs && m->run_hist && started > 0)
        tsl_hist_observe(m->run_hist, (double)(now - started) / 1000);
}

int tjm_apply(const tjm_t *m, int64_t id, tjm_event_t ev, const tjm_change_t *chg, const char *who,
              const char *why, tsl_error_t *err)
{
    static const tjm_change_t none = {0};
    if (!chg)
        chg = &none;
    if ((unsigned)ev >= TJM_NEVENTS || ev == TJM_EV_SUBMIT) {
        errno = EINVAL;
        return tsl_errprintf(err, "job %lld: %s is not an event to apply", (long long)id,
                             tjm_event_name(ev));
    }
    if (!cause_ok(ev, chg->cause)) {
        errno = EINVAL;
        return tsl_errprintf(err, "job %lld: %s cannot have end cause %s", (long long)id,
                             tjm_event_name(ev),
                             tjm_cause_name(chg->cause) ? tjm_cause_name(chg->cause) : "unknown");
    }
    if (ev == TJM_EV_PREEMPT && chg->preempt_for <= 0) {
        errno = EINVAL;
        return tsl_errprintf(err, "job %lld: preempt without the job it makes room for",
                             (long long)id);
    }
    if (chg->suspend_for < 0 || (chg->suspend_for && ev != TJM_EV_SUSPEND)) {
        errno = EINVAL;
        return tsl_errprintf(err,
                             "job %lld: the job a suspension makes room for goes with a "
                             "suspend only",
                             (long long)id);
    }
    if (chg->suspend_idle && (ev != TJM_EV_SUSPEND || chg->suspend_for)) {
        errno = EINVAL;
        return tsl_errprintf(err,
                             "job %lld: an idle reclamation goes with a suspend only, and not "
                             "with a preemption's",
                             (long long)id);
    }
    tstore_job_t j;
    if (tstore_job_get(m->store, id, &j, err) < 0)
        return -1;
    tjm_state_t from = tjm_job_state(&j);
    int row = find_row(from, ev);
    if (row < 0) {
        tstore_job_clear(&j);
        errno = EINVAL;
        return tsl_errprintf(err, "job %lld is %s: %s is not possible", (long long)id,
                             tjm_state_name(from), tjm_event_name(ev));
    }
    if (check_guard(table[row].guard, &j, ev, err) < 0) {
        int saved = errno;
        tstore_job_clear(&j);
        errno = saved;
        return -1;
    }
    tjm_state_t to = table[row].to;
    int64_t now = now_ms(chg);
    char dwhy[256];
    if (!why) {
        default_why(ev, &j, chg, who, dwhy, sizeof dwhy);
        why = dwhy[0] ? dwhy : NULL;
    }
    char *detail = detail_json(ev, &j, chg);
    int64_t submitted = j.submitted_ms, started = j.started_ms;
    int rc = apply_columns(&j, ev, to, chg, who, why, now);
    if (rc < 0) {
        errno = ENOMEM;
        tsl_errprintf(err, "job %lld: out of memory", (long long)id);
    } else {
        tstore_event_t e = {
            .time_ms = now,
            .who = who,
            .event = tjm_event_name(ev),
            .from_state = tjm_state_name(from),
            .to_state = tjm_state_name(to),
            .why = why,
            .detail_json = detail,
        };
        rc = write_change(m, &j, from, ev, &e, err);
    }
    int saved = errno;
    free(detail);
    tstore_job_clear(&j);
    if (rc < 0) {
        errno = saved;
        return -1;
    }
    observe(m, ev, from, to, now, submitted, started);
    if (m->notify)
        m->notify(m->arg, id, from, to);
    return 0;
}

static void census_row(int state, bool suspended, int end_cause, int64_t n, void *arg)
{
    int64_t *v = arg;
    tjm_state_t s = state == TSTORE_RUNNING && suspended ? TJM_SUSPENDED : (tjm_state_t)state;
    if ((unsigned)state < TSTORE_NSTATES)
        v[TJM_TALLY_STATE + s] += n;
    v[TJM_TALLY_SUBMITTED] += n;
    /* A running job may carry a cause already (a time limit's stop): not an end yet. */
    if ((unsigned)state < TSTORE_NSTATES && tjm_state_final(s) && end_cause >= 0 &&
        end_cause < TJM_NCAUSES)
        v[TJM_TALLY_ENDED + end_cause] += n;
}

const char *tjm_susp_reason_name(tjm_susp_reason_t r)
{
    static const char *const names[TJM_NSUSP] = {"request", "preemption", "idle"};
    return (unsigned)r < TJM_NSUSP ? names[r] : "unknown";
}

int tjm_tally_load(const tjm_t *m, tsl_error_t *err)
{
    _Static_assert(TJM_TALLY_NSLOTS <= TSTORE_TALLY_MAX, "the store keeps the model's tallies");
    int64_t v[TJM_TALLY_NSLOTS] = {0}, suspends = 0;
    if (tstore_job_census(m->store, census_row, v, err) < 0 ||
        tstore_event_count(m->store, tjm_event_name(TJM_EV_START), &v[TJM_TALLY_STARTED], err) <
            0 ||
        tstore_suspend_counts(m->store, &suspends, &v[TJM_TALLY_SUSPENDS + TJM_SUSP_IDLE],
                              &v[TJM_TALLY_SUSPENDS + TJM_SUSP_PREEMPTION], err) < 0)
        return -1;
    /* A suspend event's detail has "idle" or "suspended_for", never both (tjm_apply). */
    v[TJM_TALLY_SUSPENDS + TJM_SUSP_REQUEST] = suspends - v[TJM_TALLY_SUSPENDS + TJM_SUSP_IDLE] -
                                               v[TJM_TALLY_SUSPENDS + TJM_SUSP_PREEMPTION];
    return tstore_tally_reset(m->store, v, TJM_TALLY_NSLOTS, err);
}

tjm_event_t tjm_end_event(const tstore_job_t *j, int ex_code, int sig, tjm_cause_t fail_cause,
                          tjm_cause_t *cause)
{
    *cause = TJM_CAUSE_NONE;
    bool clean = fail_cause == TJM_CAUSE_NONE && sig <= 0 && ex_code == 0;
    if (fail_cause == TJM_CAUSE_LAUNCH_FAILURE)
        return TJM_EV_LAUNCH_FAIL;
    /* A stop for the time limit ends as such, whatever the job did on its SIGTERM. */
    if (j->cancel_ms && j->end_cause == TJM_CAUSE_TIME_LIMIT)
        return TJM_EV_TIMEOUT;
    if (j->cancel_ms)
        return TJM_EV_KILLED;
    /* A victim that finished cleanly on its own is not preempted; killed by its watchdog it
     * is not requeued (it would go over again). */
    if (j->preempt_for && !clean) {
        if (!j->no_requeue && fail_cause != TJM_CAUSE_GPU_MEM_LIMIT)
            return TJM_EV_REQUEUE;
        return TJM_EV_PREEMPTED;
    }
    if (clean)
        return TJM_EV_EXIT;
    *cause = fail_cause != TJM_CAUSE_NONE ? fail_cause
             : sig > 0                    ? TJM_CAUSE_SIGNAL
                                          : TJM_CAUSE_EXIT;
    return TJM_EV_FAIL;
}

int tjm_recover(const tstore_job_t *j, const tjm_seen_t *seen, tjm_recovery_t *out)
{
    memset(out, 0, sizeof *out);
    if (j->state != TSTORE_RUNNING) {
        errno = EINVAL;
        return -1;
    }
    out->suspended = j->suspended_ms > 0;
    out->cancel_asked = j->cancel_ms > 0;
    out->cancel_ms = j->cancel_ms;
    out->preempting = j->preempt_for > 0;
    out->preempt_for = j->preempt_for;
    out->preempt_queue = j->preempt_queue ? j->preempt_queue : "";
    out->preempt_ms = j->preempt_ms;
    if (seen->shim_alive)
        out->action = TJM_REC_WATCH;
    else if (seen->exit_record)
        out->action = TJM_REC_END;
    else if (!j->shim_pid && !seen->pid_record)
        out->action = j->cancel_ms ? TJM_REC_CANCEL_UNSTARTED : TJM_REC_UNSTART;
    else
        out->action = TJM_REC_LOST;
    return 0;
}
