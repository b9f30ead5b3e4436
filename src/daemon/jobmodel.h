/* jobmodel.h - the job model: a job's states, the events that move it, and the one function
 * that applies an event (tjm_apply).  Every change of a job's state in tesseld goes through
 * it (tests/t/t0011-one-state-writer.t checks that no other code writes jobs.state).
 *
 * No HTTP, no processes, no clock but tjm_change_t.now_ms's default: it reads and writes the
 * store (libstore) and calls the notify hook of its tjm_t.  docs/tesseld.md ("Job model")
 * draws the table.
 *
 * States.  pending, running, suspended, and the final ones succeeded, failed, cancelled,
 * preempted.  "suspended" is a state of the model (a running job whose GPU slice is held): the
 * store keeps it as running (state 1) with suspended_ms set, so every query of active or
 * running jobs counts it as before.  A running or suspended job may carry a stop under way: a
 * cancel asked (cancel_ms, cancel_by) or a preemption asked (preempt_for, preempt_queue,
 * preempt_ms); these are columns of the job, not states, and the events check them (guards).
 *
 * Apply: load the job, look up (state, event) in the table, check the event's guard, compute
 * the new columns, then write them and one record of the event log (who, when, event, from,
 * to, why, structured detail) in ONE store transaction (a savepoint when the caller holds one
 * open), then call the notify hook.  An illegal event: -1, errno EINVAL (the table forbids it)
 * or EBUSY (a stop is under way), one line in err, nothing written.
 *
 * Adding an event: a value in tjm_event_t (before TJM_NEVENTS), its name in event_names and
 * its rows in the table (jobmodel.c), its column changes in apply_columns; the unit test
 * (src/daemon/test/test_jobmodel.c) walks every state x event pair from the table, so a new
 * row is tested the moment it exists.  A new state is not added: these are all a job has. */
#ifndef TESSEL_DAEMON_JOBMODEL_H
#define TESSEL_DAEMON_JOBMODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "libstore/store.h"
#include "libutil/error.h"
#include "libutil/prom.h"

/* The model's states: the store's (same numbers) and suspended; TJM_NEW is "no job yet", the
 * source of the submission only. */
typedef enum {
    TJM_PENDING = TSTORE_PENDING,
    TJM_RUNNING = TSTORE_RUNNING,
    TJM_SUCCEEDED = TSTORE_SUCCEEDED,
    TJM_FAILED = TSTORE_FAILED,
    TJM_CANCELLED = TSTORE_CANCELLED,
    TJM_PREEMPTED = TSTORE_PREEMPTED,
    TJM_SUSPENDED = TSTORE_NSTATES,
    TJM_NSTATES,
    TJM_NEW = TJM_NSTATES,
} tjm_state_t;

typedef enum {
    TJM_EV_SUBMIT,    /* new -> pending (tjm_submit) */
    TJM_EV_START,     /* pending -> running: placed (chg.placement_json) */
    TJM_EV_SPAWNED,   /* running/suspended, same state: supervisor and job pids known */
    TJM_EV_EXIT,      /* running/suspended -> succeeded: exit status 0 */
    TJM_EV_FAIL,      /* running/suspended -> failed: status, signal, or chg.cause */
    TJM_EV_CANCEL,    /* pending -> cancelled */
    TJM_EV_KILL,      /* running/suspended, same state: a cancel asked (SIGTERM sent) */
    TJM_EV_KILLED,    /* running/suspended -> cancelled: the end of a job whose cancel was asked */
    TJM_EV_SUSPEND,   /* running -> suspended */
    TJM_EV_RESUME,    /* suspended -> running */
    TJM_EV_PREEMPT,   /* running/suspended, same state: chosen as a victim (chg.preempt_*) */
    TJM_EV_REQUEUE,   /* running/suspended -> pending: a preempted job's end, requeued */
    TJM_EV_PREEMPTED, /* running/suspended -> preempted: a preempted job's end, not requeued */
    TJM_EV_UNSTART,   /* running -> pending: its start never happened (restart recovery) */
    TJM_EV_LAUNCH_FAIL, /* running -> failed: its supervisor could not be started */
    TJM_EV_TIMEOUT,     /* running/suspended -> failed: its time limit */
    TJM_EV_DEP_NEVER,   /* pending -> cancelled: a dependency that can never be satisfied */
    TJM_EV_REJECT,      /* pending -> failed: the scheduler refused it */
    TJM_NEVENTS,
} tjm_event_t;

/* Why a job ended (the store's end_cause; 0 while it has not). */
typedef enum {
    TJM_CAUSE_NONE = 0,
    TJM_CAUSE_EXIT = 1,           /* exited (exit_code; 0 = succeeded) */
    TJM_CAUSE_SIGNAL = 2,         /* killed by a signal nobody at tesseld sent (signal) */
    TJM_CAUSE_CANCELLED = 3,      /* cancelled (cancel_by) */
    TJM_CAUSE_PREEMPTED = 4,      /* preempted and not requeued (preempt_for) */
    TJM_CAUSE_TIME_LIMIT = 5,     /* ran past its time limit */
    TJM_CAUSE_HOST_OOM = 6,       /* killed by the host's (or its cgroup's) out-of-memory killer */
    TJM_CAUSE_GPU_MEM_LIMIT = 7,  /* killed by its GPU-memory watchdog */
    TJM_CAUSE_LAUNCH_FAILURE = 8, /* its supervisor could not start it */
    TJM_CAUSE_DEPENDENCY = 9,     /* a dependency that can never be satisfied */
    TJM_CAUSE_LOST = 10,          /* its supervisor vanished without a record of the end */
    TJM_CAUSE_REJECTED = 11,      /* the scheduler refused it */
    TJM_NCAUSES,
} tjm_cause_t;

/* Why a job was suspended (its suspend event): a person's request, a preemption by
 * suspension, an idle reclamation. */
typedef enum {
    TJM_SUSP_REQUEST = 0,
    TJM_SUSP_PREEMPTION,
    TJM_SUSP_IDLE,
    TJM_NSUSP,
} tjm_susp_reason_t;

/* Its name, as in /metrics ("request", "preemption", "idle"). */
const char *tjm_susp_reason_name(tjm_susp_reason_t r);

/* Counts the model keeps as it writes (store tallies, src/common/libstore/store.h): jobs in
 * each model state now, jobs submitted, start events, jobs ended by end cause, and suspend
 * events by reason (counted again at start from the job logs, the records the logs' bound
 * dropped included: tstore_suspend_counts).  Each
 * changes in the transaction of the change it counts, so they always equal a count of the
 * store (what /metrics serves, without scanning it); tjm_tally_load counts them once at start. */
enum {
    TJM_TALLY_STATE = 0, /* + a tjm_state_t: jobs in that state */
    TJM_TALLY_SUBMITTED = TJM_TALLY_STATE + TJM_NSTATES,
    TJM_TALLY_STARTED,
    TJM_TALLY_ENDED, /* + a tjm_cause_t: jobs in a final state with that end cause */
    TJM_TALLY_SUSPENDS = TJM_TALLY_ENDED + TJM_NCAUSES, /* + a tjm_susp_reason_t */
    TJM_TALLY_NSLOTS = TJM_TALLY_SUSPENDS + TJM_NSUSP,
};

/* What an event carries besides its name; zero-initialise and set what the event uses. */
typedef struct {
    int64_t now_ms;             /* 0: the clock now */
    const char *placement_json; /* START: JSON array of the placement */
    int shim_pid, job_pid;      /* SPAWNED (job_pid 0: not yet known) */
    uint64_t shim_start;        /* SPAWNED: /proc starttime of the shim */
    bool has_exit_code;         /* EXIT/FAIL/KILLED/PREEMPTED/TIMEOUT: the status, if any */
    int exit_code;
    int signal; /* the signal that ended it, 0 = none */
    /* FAIL: TJM_CAUSE_HOST_OOM, _GPU_MEM_LIMIT, _LOST (default: _SIGNAL with a signal, else
     * _EXIT).  KILL: TJM_CAUSE_TIME_LIMIT marks the stop as the time limit's (the end is then
     * TJM_EV_TIMEOUT, see tjm_end_event).  Other events: must be 0. */
    tjm_cause_t cause;
    int64_t preempt_for;       /* PREEMPT: the job it makes room for */
    const char *preempt_queue; /* PREEMPT: that job's queue, NULL when unknown */
    /* SUSPEND: the job a preemption by suspension makes room for (kept in suspended_for
     * until the resume or the end; in the event's detail with preempt_queue); 0: a person's
     * or the watchdog's suspend. */
    int64_t suspend_for;
    /* SUSPEND: an idle reclamation's (docs/suspend.md, "Idle reclamation"): kept in
     * suspended_idle until the resume or the end, "idle": true in the event's detail; not with
     * suspend_for. */
    bool suspend_idle;
} tjm_change_t;

/* Called after each committed change (the daemon wakes its tick: scheduler and waiters). */
typedef void (*tjm_notify_f)(void *arg, int64_t id, tjm_state_t from, tjm_state_t to);

typedef struct {
    tstore_t *store;
    tjm_notify_f notify; /* NULL: none */
    void *arg;
    /* NULL: none.  After each committed start: seconds from submission to it; after each
     * committed end of an attempt (an end, or a requeue): seconds from its start. */
    tsl_hist_t *pending_hist, *run_hist;
} tjm_t;

const char *tjm_state_name(tjm_state_t s);
/* Whether s is a final state: succeeded, failed, cancelled, preempted. */
bool tjm_state_final(tjm_state_t s);
const char *tjm_event_name(tjm_event_t ev);
/* "exit", "signal", "cancelled", "preempted", "time_limit", "host_oom", "gpu_mem_limit",
 * "launch_failure", "dependency", "lost", "rejected"; NULL for none or unknown. */
const char *tjm_cause_name(tjm_cause_t c);
/* The model state of a stored job: running with suspended_ms set is suspended. */
tjm_state_t tjm_job_state(const tstore_job_t *j);

/* The table: the state (state, ev) leads to, or -1 when the event is illegal there. */
int tjm_next(tjm_state_t from, tjm_event_t ev);

/* Insert *job as pending with its submission event (who: the submitter).  Sets job->id and
 * job->state.  0, or -1 with err (nothing written). */
int tjm_submit(const tjm_t *m, tstore_job_t *job, const char *who, const char *why,
               tsl_error_t *err);

/* Apply ev to job id (see the header comment).  who: a user's name or "tesseld"; why: the
 * event's text, stored as the job's reason by the events that set one (NULL: the model's
 * default text).  chg may be NULL for events that carry nothing.  0, or -1 with errno:
 * ENOENT no such job, EINVAL illegal here (or a bad chg), EBUSY a stop is under way, EIO the
 * store failed (nothing written). */
int tjm_apply(const tjm_t *m, int64_t id, tjm_event_t ev, const tjm_change_t *chg, const char *who,
              const char *why, tsl_error_t *err);

/* The event that records the end of a running job, from what the job holds (a cancel or a
 * preemption asked, "requeue": false, a time limit's stop) and how it ended: ex_code >= 0 its
 * exit status, sig > 0 its signal, fail_cause a cause the caller saw (GPU_MEM_LIMIT, HOST_OOM,
 * LOST, LAUNCH_FAILURE; NONE otherwise).  *cause gets the cause to pass in chg. */
tjm_event_t tjm_end_event(const tstore_job_t *j, int ex_code, int sig, tjm_cause_t fail_cause,
                          tjm_cause_t *cause);

/* Count the tallies from the store (one scan of the jobs table and of the start events) and
 * set them; outside a transaction, before the first change.  0, or -1 with err. */
int tjm_tally_load(const tjm_t *m, tsl_error_t *err);

/* Restart recovery of a running (or suspended) job: what tesseld sees of it now ... */
typedef struct {
    bool shim_alive;  /* the supervisor the store names lives (or its start lock is held) */
    bool exit_record; /* its exit record is there (written by the supervisor at the end) */
    bool pid_record;  /* its pid record is there (written by the supervisor at its start) */
} tjm_seen_t;

typedef enum {
    TJM_REC_WATCH,   /* running: take it back in the table and watch it */
    TJM_REC_END,     /* it ended while tesseld was down: record its end from the exit record */
    TJM_REC_LOST,    /* its supervisor is gone without a record: failed, cause lost */
    TJM_REC_UNSTART, /* it never started: pending again (TJM_EV_UNSTART) */
    TJM_REC_CANCEL_UNSTARTED, /* never started and its cancel was asked: cancelled */
} tjm_rec_action_t;

/* ... and what to do about it, with the stop under way restored from the job's columns. */
typedef struct {
    tjm_rec_action_t action;
    bool suspended;    /* its slice stays suspended */
    bool cancel_asked; /* a cancel was asked: its stop goes on */
    int64_t cancel_ms;
    bool preempting; /* a preemption was asked: its stop goes on */
    int64_t preempt_for;
    const char *preempt_queue; /* borrowed from the job; "" when unknown */
    int64_t preempt_ms;
} tjm_recovery_t;

/* Recovery plan of a job the store holds as running (suspended included); pending and
 * finished jobs need none (-1, EINVAL).  Reads structured columns only.  0 or -1. */
int tjm_recover(const tstore_job_t *j, const tjm_seen_t *seen, tjm_recovery_t *out);

#endif
