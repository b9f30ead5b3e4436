/* batch.h - tesseld's everyday batch features: time limits, dependencies and job arrays.
 *
 * Time limits (--time): a running job's time is the wall time since its start (this attempt:
 * a requeued job starts from zero) less the time its GPU slice spent suspended, by a person
 * or the GPU-memory watchdog (a suspended job cannot make progress on the GPU; Slurm, too,
 * stops a suspended job's clock).  At its limit the tick sends SIGTERM, then SIGKILL after
 * --kill-wait (Slurm's KillWait, 30 s by default); the job ends failed with the reason
 * "time limit (30m)".  The check reads only columns (started_ms, suspended_total_ms,
 * suspended_ms, time_limit_s), so it holds after a restart of tesseld.
 *
 * Dependencies (--after) and arrays' %N: such a job is "held": pending in the store, with its
 * reason, but not handed to the scheduler.  tessd_holds_check (tick) releases each held job
 * whose dependencies are met and whose array has room, and cancels one whose dependencies can
 * never be met ("dependency never satisfied").  It reads only what may have changed, in one
 * query a check: the jobs noted since the last one (tessd_holds_note: a job that arrived held,
 * an array that arrived with held elements, and a job that ended, the only change that meets
 * a dependency, breaks one or makes room in an array), the held jobs with a dependency on one
 * of them, and the held elements of their arrays; every held job at start, after a store
 * error and when more than TESSD_HOLDS_EV jobs were noted between two checks.  A submission
 * that is not held, a start or a suspension notes none (issue 15: with 2,000 held jobs each
 * of them cost milliseconds).
 */
#ifndef TESSEL_DAEMON_BATCH_H
#define TESSEL_DAEMON_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/daemon.h"
#include "libstore/store.h"

/* Default of --kill-wait: Slurm's KillWait default, long enough for a checkpoint. */
#define TESSD_KILL_WAIT_MS_DEFAULT 30000

typedef enum {
    TESSD_DEPS_MET = 0,   /* every dependency holds: the job may run */
    TESSD_DEPS_WAIT = 1,  /* one still may: why says which ("waiting for job 12 to succeed") */
    TESSD_DEPS_NEVER = 2, /* one never can: why says which ("job 12 failed") */
} tessd_deps_t;

/* Pure: the verdict on a job's dependencies (as tstore_dep_list gives them) and one line in
 * why (the first that waits, or the first that never holds; "" when met). */
tessd_deps_t tessd_deps_eval(const tstore_dep_t *deps, size_t n, char *why, size_t len);

/* Pure: milliseconds of a running attempt that count against its time limit (see above). */
int64_t tessd_time_used_ms(int64_t started_ms, int64_t suspended_total_ms, int64_t suspended_ms,
                           int64_t now_ms);

/* Pure: the reason of a job that waits for its array's %N: "waiting: array 40 runs at most 2
 * elements at once". */
void tessd_array_wait_reason(int64_t array_id, int max_running, char *why, size_t len);

/* Release or cancel held jobs (see above).  Main thread, lock held.  Store errors are logged
 * and every held job is checked again at the next tick (d->holds_dirty set). */
void tessd_holds_check(tessd_t *d);

/* Note job id for the next tessd_holds_check: it arrived held, it is the first element of an
 * array with held elements, or it ended.  Lock held. */
void tessd_holds_note(tessd_t *d, int64_t id);

/* The array variables of a job in an array, as Slurm's SLURM_ARRAY_*: TESSEL_ARRAY_JOB_ID,
 * TESSEL_ARRAY_TASK_ID, TESSEL_ARRAY_TASK_COUNT, TESSEL_ARRAY_TASK_MIN, TESSEL_ARRAY_TASK_MAX;
 * out[0..4] get "K=V" strings of at most 64 bytes each.  Returns the number written (0 when
 * the job is not in an array), or -1 with err (the store failed). */
#define TESSD_ARRAY_ENV 5
int tessd_array_env(tessd_t *d, const tstore_job_t *j, char out[TESSD_ARRAY_ENV][64],
                    tsl_error_t *err);

#endif
