/* sched_queue.h - Tessel's scheduling policy: queues, quotas, fair share,
 * priorities and preemption, on top of the cluster model of sched.h.
 *
 * Pure C like sched.h: no I/O, no clock (the caller passes "now", in
 * seconds, to every call that needs it), no threads, no global state.  One
 * thread at a time per scheduler.  The model, its formulas and the reasons
 * for its constants are in docs/scheduler-queues.md.
 *
 * Life of a scheduler:
 *
 *   s = tsched_sched_create(cluster, policy, &cfg, &err)   both borrowed
 *   tsched_queue_add(s, &dept)  tsched_queue_add(s, &project) ...
 *   loop (tesseld's tick, tessel-sim's event loop):
 *     tsched_job_submit(s, &job, &err)                 a job arrives
 *     tsched_sched_cycle(s, now, &d, &err)             decide
 *     for each d.starts[i]:  launch it, then
 *        tsched_job_started(s, id, members, n, now)    commits to the cluster
 *     for each d.victims[i]: stop it (requeue or suspend), then
 *        tsched_job_stopped(s, id, now)                releases, back to pending
 *     tsched_job_remove(s, id, now)                    finished or cancelled
 *   tsched_sched_destroy(s)
 *
 * The cluster holds only what the caller confirmed: a cycle places jobs on
 * it tentatively and restores it exactly before returning.  A start that the
 * caller does not confirm simply stays pending; the next cycle decides again.
 * A job for which a preemption plan is out waits for its victims (it asks for
 * no second plan, and its victims are offered to no one else) and is placed
 * by the first cycle after they are stopped.
 *
 * Units: milli-GPU, bytes, milli-CPU as in sched.h; times in seconds (any
 * origin, non-decreasing from call to call; a "now" earlier than the last
 * one seen is taken as the last one).
 */
#ifndef TESSEL_SCHED_QUEUE_H
#define TESSEL_SCHED_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "tessel/sched.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tsched_sched tsched_sched_t;

/* A resource amount not governed / not limited. */
#define TSCHED_UNLIMITED UINT64_MAX

/* Deepest queue tree (root excluded): organisation > department > project >
 * sub-project is the deepest anyone has asked for. */
#define TSCHED_MAX_QUEUE_DEPTH 4

/* An amount of each resource a queue is guaranteed, limited to or uses. */
typedef struct {
    uint64_t milli_gpu;     /* sum over GPUs: 2 whole GPUs = 2000 */
    uint64_t gpu_mem_bytes; /* sum over GPUs */
    uint64_t cpu_milli;
    uint64_t mem_bytes;
} tsched_res_t;

/* Where a queue's fractional jobs (one GPU, less than all of it) go. */
typedef enum {
    TSCHED_PACK = 0, /* the scheduler's placement policy (tesseld: "tessel", which packs
                        fractions to keep whole GPUs free, fragmentation-aware) */
    TSCHED_SPREAD,   /* idle GPUs first: the node and GPU with the most free share */
} tsched_placement_t;

/* Which of a queue's options are its own (tsched_queue_spec_t.own); the others are
 * inherited from its parent, and a top-level queue's from the scheduler's settings. */
enum {
    TSCHED_OWN_RESERVE_AFTER = 1,
    TSCHED_OWN_PLACEMENT = 2,
    TSCHED_OWN_NGPU_LIMIT = 4, /* ngpu_limit is set (a limit, not inherited) */
};

/* A queue.  A guarantee of TSCHED_UNLIMITED means "this resource is not
 * governed here" (not in the fair share, bounds nothing); 0 means "none
 * guaranteed".  A queue that governs no resource at all is guaranteed
 * nothing: all it runs is borrowed (reclaimable by a queue that is owed).
 * A limit of TSCHED_UNLIMITED means no cap. */
typedef struct {
    const char *name;             /* unique, 1..TSCHED_NAME_MAX-1 bytes; copied */
    const char *parent;           /* NULL or "" = top level; must exist already */
    tsched_res_t guarantee;       /* children's guarantees must sum to <= this */
    tsched_res_t limit;           /* never exceeded by the queue's running jobs */
    uint32_t weight;              /* share of idle capacity beyond the guarantee
                                     relative to sibling queues; 0 is taken as 1 */
    unsigned own;                 /* TSCHED_OWN_*: the options below that are set here */
    double reserve_after;         /* s >= 0: a job of this subtree pending this long
                                     gets a reservation (with TSCHED_OWN_RESERVE_AFTER) */
    tsched_placement_t placement; /* (with TSCHED_OWN_PLACEMENT) */
    uint64_t ngpu_limit;          /* (with TSCHED_OWN_NGPU_LIMIT) a limit in normalised milli-GPU:
                                     each GPU counts its relative speed (tsched_gpu_spec_t.
                                     speed_milli), so 1000 = one reference GPU; without the
                                     bit, or TSCHED_UNLIMITED, none */
} tsched_queue_spec_t;

/* Workload classes.  Only training is preemptible and may run beyond the
 * guarantee; the others must fit within the guarantees of their queue and
 * of its ancestors.  Within a queue inference comes first, then interactive
 * and build, then training; `priority` orders jobs of one band. */
typedef enum {
    TSCHED_CLASS_TRAINING = 0,
    TSCHED_CLASS_INTERACTIVE,
    TSCHED_CLASS_BUILD,
    TSCHED_CLASS_INFERENCE,
} tsched_class_t;

/* Job flags. */
enum {
    TSCHED_JOB_SUSPENDABLE = 1,   /* can be suspended (GPU state saved, freed)
                                     rather than killed and requeued */
    TSCHED_JOB_NEVER_PREEMPT = 2, /* a training job that is never a victim: it
                                     then counts as non-preemptible work (within
                                     the guarantees, as interactive work) while
                                     keeping the training band; no effect on
                                     other classes (never preempted anyway) */
};

/* A job as submitted. */
typedef struct {
    uint64_t id; /* caller's id, unique among live jobs */
    int queue;   /* a leaf queue (from tsched_queue_add) */
    tsched_class_t cls;
    int32_t priority; /* higher first, within the queue and band */
    double arrival;   /* seconds; ties in the order go to the earlier */
    unsigned flags;   /* TSCHED_JOB_* */
    tsched_job_t req; /* resources; models and selector are copied */
} tsched_qjob_t;

/* What to do with a victim. */
typedef enum {
    TSCHED_REQUEUE = 0, /* stop it; it restarts from the beginning */
    TSCHED_SUSPEND,     /* suspend it (frees the GPU); it resumes later */
} tsched_action_t;

/* Scheduler settings; tsched_sched_config_default() fills the defaults
 * (their reasons are in docs/scheduler-queues.md). */
typedef struct {
    double half_life;             /* decay of the usage history, s (default 3600) */
    double history_weight;        /* 0..1: share of the fair-share usage that is
                                     history rather than current allocation (0.5) */
    double min_runtime;           /* a job runs this long before it can be a victim,
                                     s (default 60) */
    double reserve_after;         /* a job pending this long gets a reservation, s
                                     (default 900) */
    unsigned max_reservations;    /* reservations held at once (default 4) */
    unsigned max_plans;           /* preemption plans per cycle (default 64) */
    double suspend_cost;          /* work a suspension loses, in seconds of the
                                     job's run (default 30) */
    tsched_placement_t placement; /* top-level queues' default (TSCHED_PACK) */
} tsched_sched_config_t;

void tsched_sched_config_default(tsched_sched_config_t *cfg);

/* --- scheduler ---------------------------------------------------------- */

/* New scheduler over cluster c with placement policy p, both borrowed: they
 * must outlive it, and the caller changes c only through this scheduler's
 * calls while it lives (adding nodes is fine).  cfg NULL = defaults.
 * Returns NULL with errno EINVAL (bad argument or setting) or ENOMEM. */
tsched_sched_t *tsched_sched_create(tsched_cluster_t *c, tsched_policy_t *p,
                                    const tsched_sched_config_t *cfg, tsl_error_t *err);

/* Frees s and its jobs; does not touch the cluster.  NULL is accepted. */
void tsched_sched_destroy(tsched_sched_t *s);

/* --- queues ------------------------------------------------------------- */

/* Adds a queue; returns its index (0, 1, ...), or -1 with errno EINVAL
 * (name empty, too long or taken; unknown parent; tree deeper than
 * TSCHED_MAX_QUEUE_DEPTH; parent holds jobs; children's guarantees would sum
 * beyond the parent's; a guarantee above the limit) or ENOMEM. */
int tsched_queue_add(tsched_sched_t *s, const tsched_queue_spec_t *spec, tsl_error_t *err);

/* Changes queue q's guarantee, limit and weight (weight 0 = 1); name and
 * parent stay.  The checks of tsched_queue_add apply, and q's children's
 * guarantees must still fit within its new guarantee.  Running jobs are
 * left alone: above a lowered limit the queue starts nothing until it is
 * back below; work beyond a lowered guarantee is over quota (reclaimable)
 * from the next cycle.  Returns 0, or -1 with errno EINVAL; nothing
 * changes on failure. */
int tsched_queue_update(tsched_sched_t *s, int q, const tsched_res_t *guarantee,
                        const tsched_res_t *limit, uint32_t weight, tsl_error_t *err);

/* Which queue rule a spec breaks (tsched_queue_check), for callers that name the field at
 * fault (tesseld's API).  res: the resource (0 GPU, 1 GPU memory, 2 CPU, 3 memory, as in
 * tsched_res_t); amount and bound: the figures compared; queue: the other queue involved
 * (parent, or the child at fault), -1 if none. */
typedef enum {
    TSCHED_QF_OK = 0,
    TSCHED_QF_NAME,             /* missing, too long or taken */
    TSCHED_QF_NO_PARENT,        /* unknown parent */
    TSCHED_QF_DEPTH,            /* deeper than TSCHED_MAX_QUEUE_DEPTH (amount: depth) */
    TSCHED_QF_PARENT_HAS_JOBS,  /* a new child under a queue that holds jobs */
    TSCHED_QF_ABOVE_LIMIT,      /* guarantee (amount) above the limit (bound) */
    TSCHED_QF_UNGOVERNED_CHILD, /* parent governs res, the spec does not (bound: parent's) */
    TSCHED_QF_PARENT_SUM,       /* siblings' guarantees with this one (amount) > parent's */
    TSCHED_QF_CHILD_UNGOVERNED, /* a child (queue) does not govern res the spec now governs */
    TSCHED_QF_CHILDREN_SUM,     /* its children's guarantees (amount) > its new one (bound) */
    TSCHED_QF_OPTION,           /* bad reserve_after or placement */
} tsched_qrule_t;

typedef struct {
    tsched_qrule_t rule;
    int res;
    uint64_t amount, bound;
    int queue;
} tsched_qfault_t;

/* Would spec be accepted, as a new queue (self -1: tsched_queue_add's checks) or as queue
 * self's new guarantee, limit and options (tsched_queue_update's and set_options')?  Changes
 * nothing.  Returns 0, or -1 with errno EINVAL, *fault (may be NULL) saying which rule and
 * err one line. */
int tsched_queue_check(const tsched_sched_t *s, const tsched_queue_spec_t *spec, int self,
                       tsched_qfault_t *fault, tsl_error_t *err);

/* Sets which of queue q's options are its own (own: TSCHED_OWN_*) and their values; the
 * others are inherited from then on.  A change applies from the next cycle (to jobs already
 * pending too).  Returns 0, or -1 with errno EINVAL (bad queue, reserve_after < 0 or not
 * finite, unknown placement); nothing changes on failure. */
int tsched_queue_set_options(tsched_sched_t *s, int q, unsigned own, double reserve_after,
                             tsched_placement_t placement, tsl_error_t *err);

/* Sets or clears queue q's limit in normalised GPUs (milli; TSCHED_UNLIMITED: none).  A
 * running job counts the milli-GPU it holds on each GPU times that GPU's relative speed
 * (/1000, rounded up per GPU); a pending job counts what it would hold on the fastest GPU it
 * may run on (tsched_job_top_speed), so a start never takes a queue beyond the limit wherever
 * the job lands.  Running jobs are left alone, as with tsched_queue_update.  Returns 0, or -1
 * with errno EINVAL (bad queue); nothing changes on failure.  The speeds are the cluster's:
 * a new speed takes a new cluster (tesseld rebuilds its scheduler). */
int tsched_queue_set_ngpu_limit(tsched_sched_t *s, int q, uint64_t ngpu_limit, tsl_error_t *err);

/* Index of the queue named name, or -1 with errno ENOENT. */
int tsched_queue_find(const tsched_sched_t *s, const char *name);

size_t tsched_queue_count(const tsched_sched_t *s);

/* A queue's state at time now (the usage history is advanced to now). */
typedef struct {
    const char *name; /* valid while s lives */
    int parent;       /* -1 for a top-level queue */
    tsched_res_t guarantee, limit;
    tsched_res_t used;   /* running jobs, all classes */
    tsched_res_t demand; /* pending jobs (not yet running) */
    double share;        /* fair-share key: below 1 under the guarantee */
    size_t running, pending;
    unsigned own;                 /* TSCHED_OWN_*: options set on the queue itself */
    double reserve_after;         /* in effect (own or inherited), s */
    tsched_placement_t placement; /* in effect (own or inherited) */
    uint64_t ngpu_limit;          /* normalised milli-GPU; TSCHED_UNLIMITED: none */
    uint64_t ngpu_used;           /* normalised milli-GPU held by running jobs */
} tsched_queue_stat_t;

/* Returns 0, or -1 with errno EINVAL for a bad index. */
int tsched_queue_stat(tsched_sched_t *s, int q, double now, tsched_queue_stat_t *st);

/* 1 if no pending job of queue q (or of its subtree) is owed capacity, 0
 * if one is; -1 with errno EINVAL for a bad index.  A pending job is owed
 * when its leaf queue's usage plus the job stays within the leaf's
 * guarantee in every governed resource (and it asks for one of them): the
 * queue is below its guarantee and has demand for it.  This is the
 * "guarantee satisfied" test of tessel-sim's report.  O(jobs). */
int tsched_queue_satisfied(const tsched_sched_t *s, int q);

/* --- jobs --------------------------------------------------------------- */

/* Adds a pending job.  Returns 0, or -1 with errno EEXIST (id live), EINVAL
 * (not a leaf queue, bad class or request, a non-preemptible job larger
 * than its queue's guarantee) or ENOMEM. */
int tsched_job_submit(tsched_sched_t *s, const tsched_qjob_t *job, tsl_error_t *err);

/* Adds a pending job that was accepted before (found at a restart or a rebuild): as
 * tsched_job_submit, except that a non-preemptible job need not fit within its queues'
 * guarantees (they may have been lowered since its submission); a cycle starts it only once
 * it fits, its wait reason saying which guarantee holds it.  Errors as tsched_job_submit. */
int tsched_job_readd(tsched_sched_t *s, const tsched_qjob_t *job, tsl_error_t *err);

/* Adds a job that is already running with these n members (found at a restart or a
 * rebuild) and starts it: tsched_job_submit then tsched_job_started, except that a
 * non-preemptible job need not fit within its queues' guarantees (they may have been lowered
 * since it started: it runs, so its GPUs are taken and it is counted; the queue's other
 * non-preemptible jobs wait until it is back within them).  Returns 0, or -1 with errno as
 * those two calls set it; nothing changes on failure. */
int tsched_job_adopt(tsched_sched_t *s, const tsched_qjob_t *job, const tsched_member_t *members,
                     size_t n, double now, tsl_error_t *err);

/* The caller started job id with these n members (normally those of a
 * start decision; any placement the cluster can take is accepted).
 * Commits them to the cluster.  Returns 0, or -1 with errno ENOENT (no such
 * job), EBUSY (already running), EINVAL (n is not the job's gang) or ENOSPC
 * (the cluster cannot take them); nothing changes on failure. */
int tsched_job_started(tsched_sched_t *s, uint64_t id, const tsched_member_t *members, size_t n,
                       double now);

/* The caller stopped running job id because it was a victim (or for any
 * other reason it will run again): releases its members, and the job is
 * pending again with its original arrival.  Returns 0, or -1 with errno
 * ENOENT or EINVAL (not running). */
int tsched_job_stopped(tsched_sched_t *s, uint64_t id, double now);

/* The job finished or was cancelled: releases it if running, forgets it.
 * Returns 0, or -1 with errno ENOENT. */
int tsched_job_remove(tsched_sched_t *s, uint64_t id, double now);

/* Job state, for reports: 0 pending, 1 running, 2 running and chosen as a
 * victim; -1 with errno ENOENT. */
int tsched_job_state(const tsched_sched_t *s, uint64_t id);

/* --- the cycle ---------------------------------------------------------- */

typedef struct {
    uint64_t job;
    const tsched_member_t *members; /* gang entries */
    uint32_t nmembers;
} tsched_start_t;

typedef struct {
    uint64_t job;           /* the victim */
    uint64_t for_job;       /* the pending job it makes room for */
    tsched_action_t action; /* suspend if the job allows it, else requeue */
} tsched_victim_t;

typedef struct {
    const tsched_start_t *starts; /* in decision order */
    size_t nstarts;
    const tsched_victim_t *victims; /* grouped by for_job */
    size_t nvictims;
    size_t plans;    /* preemption plans (distinct for_job) */
    size_t reserved; /* jobs holding a reservation after the cycle */
} tsched_decisions_t;

/* One scheduling cycle at time now: orders the pending jobs (fair share
 * across queues, then band and priority, then arrival), places those that
 * fit within limits and guarantees (smaller jobs pass a large one that does
 * not fit, except on nodes reserved for a job pending longer than its
 * queue's reserve_after; fractional jobs of a TSCHED_SPREAD queue on idle
 * GPUs first), and plans preemptions for jobs owed capacity, or for
 * jobs that outrank preemptible work of their own queue.  Fills *d; its
 * arrays belong to s and stay valid until the next cycle or destroy (other
 * calls leave them alone).  The cluster is left as it was.  Returns 0, or
 * -1 with errno EINVAL (NULL argument) or ENOMEM (nothing decided: victims
 * picked in this cycle run on). */
int tsched_sched_cycle(tsched_sched_t *s, double now, tsched_decisions_t *d, tsl_error_t *err);

#ifdef __cplusplus
}
#endif
#endif
