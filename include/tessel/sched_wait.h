/* sched_wait.h - why a job waits, and whether it can ever run: structured reasons from
 * libsched's queue scheduler (sched_queue.h), in the manner of squeue's REASON column.
 *
 * Pure C like the rest of libsched.  A reason is data (a code plus the figures that decide
 * it); tsched_wait_format() turns it into one line for a person only at display time.
 *
 * After each tsched_sched_cycle():
 *
 *   n = tsched_waits_changed(s, &ids)      pending jobs whose reason changed in this cycle
 *   for each ids[i]:
 *     tsched_job_wait(s, ids[i], &w)       the reason, as data
 *     tsched_wait_format(&w, buf, len)     "Resources: no GPU has 0.5 free ..."
 *
 * At submission, before a job is accepted:
 *
 *   tsched_job_feasible(empty, policy, path, npath, cls, &req, &w)
 *       0: it can never run (w says why); 1: it may run once enough is free.
 */
#ifndef TESSEL_SCHED_WAIT_H
#define TESSEL_SCHED_WAIT_H

#include <stddef.h>
#include <stdint.h>

#include "tessel/sched.h"
#include "tessel/sched_queue.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a pending job waits for.  The names (tsched_wait_code_name) are stable: tesseld
 * stores them and the API returns them as "reason_code". */
typedef enum {
    TSCHED_WAIT_NONE = 0,        /* "None": not pending, or not examined yet */
    TSCHED_WAIT_RESOURCES,       /* "Resources": no node has room for it now */
    TSCHED_WAIT_PRIORITY,        /* "Priority": it lacks room, and jobs ahead of it in its queue
                                    wait for room too (jobs[] lists them) */
    TSCHED_WAIT_QUEUE_LIMIT,     /* "QueueLimit": its queue or an ancestor would exceed a limit */
    TSCHED_WAIT_GUARANTEE,       /* "Guarantee": its queue is owed its guarantee; running jobs of
                                    other queues (jobs[]) are being stopped to give it back */
    TSCHED_WAIT_GUARANTEE_LIMIT, /* "GuaranteeLimit": an interactive or inference job must fit
                                    within the guarantee of its queue (or an ancestor), which
                                    such jobs use up now */
    TSCHED_WAIT_PREEMPTING,      /* "Preempting": lower-priority jobs of its own queue (jobs[]) are
                                    being stopped to make room for it */
    TSCHED_WAIT_RESERVATION,     /* "Reservation": the room it would fit in is reserved for an
                                    older job (jobs[0]) */
    TSCHED_WAIT_DEPENDENCY,      /* "Dependency": set by the caller, not by the cycle: jobs[] must
                                    end first (tsched_wait_dependency) */
    TSCHED_WAIT_NCODES
} tsched_wait_code_t;

/* Job ids a reason names at most (the rest are counted in `more`). */
#define TSCHED_WAIT_JOBS 4

/* A reason.  Every field not used by the code is zero (or -1 where said), so two reasons
 * compare equal with memcmp exactly when they say the same. */
typedef struct {
    tsched_wait_code_t code;
    int never;        /* 1: it can never run as asked (tsched_job_feasible, or a limit lowered
                         below the job's request); 0: it may run later */
    tsched_job_t req; /* what the job asks (models and selector NULL) */
    char queue[TSCHED_NAME_MAX]; /* QUEUE_LIMIT, GUARANTEE*, PRIORITY, PREEMPTING: the queue */
    int res;        /* QUEUE_LIMIT, GUARANTEE_LIMIT: 0 GPU (milli), 1 GPU memory (bytes),
                       2 CPU (milli), 3 memory (bytes), 4 normalised GPU (milli, "ngpu":
                       tsched_queue_set_ngpu_limit) */
    uint64_t bound; /* QUEUE_LIMIT: the limit; GUARANTEE_LIMIT: the guarantee */
    uint64_t used;  /* what the queue uses of it now */
    uint64_t want;  /* what the job asks of it */
    /* RESOURCES, PRIORITY, RESERVATION: why it does not fit, and the best candidate seen */
    tsched_reason_t fit;
    char node[TSCHED_NAME_MAX];      /* "" when the cluster has a single node or none fits */
    int32_t gpu;                     /* best GPU of that node, -1 none */
    uint32_t free_gpus;              /* whole GPUs free on that node */
    uint32_t free_milli;             /* on the best GPU */
    uint64_t free_gpu_mem;           /* on the best GPU */
    uint64_t free_cpu, free_mem;     /* on that node */
    uint32_t held_gpus;              /* RESERVATION: mask of the node's GPUs held */
    uint64_t jobs[TSCHED_WAIT_JOBS]; /* see the codes */
    uint32_t njobs, more;
} tsched_wait_t;

/* "Resources", "QueueLimit", ...; "Unknown" for a code out of range. */
const char *tsched_wait_code_name(tsched_wait_code_t code);

/* The code named name (as tsched_wait_code_name writes it), or -1. */
int tsched_wait_code_parse(const char *name);

/* One line for a person, without a newline, e.g.
 *   "Resources: no GPU has 0.5 free with 8.00 GiB (best: gpu1 has 0.3 and 20.0 GiB free)"
 *   "QueueLimit: queue 'vision' would exceed its limit gpu=2 (uses 1.5, job asks 1)"
 * Writes at most len bytes (NUL included) and returns the length it wanted, like snprintf. */
int tsched_wait_format(const tsched_wait_t *w, char *buf, size_t len);

/* A Dependency reason: the job waits for n jobs (the first TSCHED_WAIT_JOBS are named). */
void tsched_wait_dependency(tsched_wait_t *w, const uint64_t *ids, size_t n);

/* The reason of job id after the last cycle (TSCHED_WAIT_NONE when it is running, started in
 * that cycle, or was submitted after it).  Returns 0, or -1 with errno ENOENT. */
int tsched_job_wait(const tsched_sched_t *s, uint64_t id, tsched_wait_t *w);

/* The pending jobs whose reason changed in the last cycle (a job's first reason is a change),
 * not counting the jobs that cycle starts.  *ids stays valid until the next cycle or destroy.
 * Returns the count. */
size_t tsched_waits_changed(const tsched_sched_t *s, const uint64_t **ids);

/* Forgets which reasons were reported: the next cycle lists every pending job as changed
 * (for a caller that could not record the last list).  NULL is accepted. */
void tsched_waits_reset(tsched_sched_t *s);

/* May pending job id start now on these n members (its gang), GPUs it held before (a resume
 * of a job whose GPU memory was given back: tesseld submits it again, asks this, then calls
 * tsched_job_started)?  The cluster's room is not asked here (tsched_job_started refuses what
 * it cannot take); the rules are:
 *   1. the cycle's for a pending job: every queue on its path stays within its limits, the
 *      normalised GPUs counted on these members' GPUs, and non-preemptible work within the
 *      guarantees: else *w is QueueLimit or GuaranteeLimit naming the first queue (leaf
 *      first) at fault, with its bound, its use and what the job adds;
 *   2. it takes no room a pending job is due first: a job of another queue owed its
 *      guarantee (tsched_queue_satisfied's test) while this one would run beyond its own
 *      queue's guarantee (Guarantee, w->queue and jobs[0] the job owed), or a job of its own
 *      queue of a higher band or priority (Priority); each counts only when its own limits
 *      let it start now and it fits in the cluster as it is but not once these members are
 *      held.  Equal rank does not hold it back: the job was placed before.
 * Changes nothing (the cluster is restored exactly; the policy's random state may advance).
 * Returns 1 if it may, 0 if not (*w, may be NULL, says why), -1 with errno ENOENT (no such
 * job), EBUSY (not pending), EINVAL (n is not its gang, a bad node) or ENOMEM.
 * Cost: the answer is kept per job (up to 256 jobs) with the generations of the scheduler
 * (its jobs and queues) and of the cluster (its nodes and counts) it was computed at, and
 * given again, in O(gang), while neither changed and the members are the same: a caller that
 * submits the job, asks and removes it again at each tick (tesseld) pays the full question
 * only after a change (a submission, a start, an end, a queue's settings, a node).  The full
 * question is O(jobs), plus two placements per request shape of the pending jobs that
 * outrank it or are owed (per job with more than 64 such shapes).  With the "random" policy
 * a gang's fit may depend on the draw: a kept answer is the first draw's. */
int tsched_job_may_start(tsched_sched_t *s, uint64_t id, const tsched_member_t *members, size_t n,
                         tsched_wait_t *w);

/* Whether tsched_job_may_start keeps and reuses its answers (on: 1, the default); off, every
 * question is answered afresh and nothing is kept (tests and benchmarks compare the two).
 * NULL is accepted. */
void tsched_may_start_cache(tsched_sched_t *s, int on);

/* The questions tsched_job_may_start was asked (that reached the rules: errors of its
 * arguments not counted) and how many of them it answered afresh (the others from a kept
 * answer), since s was created; 0 for NULL s. */
void tsched_may_start_stats(const tsched_sched_t *s, uint64_t *asked, uint64_t *computed);

/* Can a job of class cls asking req ever run in queue path[0] (a leaf; path[1..npath) its
 * ancestors, up to the top level), on cluster c with nothing else running (c is borrowed and
 * left as it was; pass an empty copy of the cluster)?  Checks every limit on the path (a
 * limit of 0 closes a queue for now, like a partition that is down: its jobs wait), the
 * guarantees on the path for interactive and inference jobs, and the placement (GPU count,
 * GPU memory, models, labels, CPU, memory of every node).  Returns 1 if it can, 0 if never
 * (*w says why, with w->never set), -1 with errno EINVAL for a NULL argument or an invalid
 * request. */
int tsched_job_feasible(tsched_cluster_t *c, tsched_policy_t *p, const tsched_queue_spec_t *path,
                        size_t npath, tsched_class_t cls, const tsched_job_t *req,
                        tsched_wait_t *w);

#ifdef __cplusplus
}
#endif
#endif
