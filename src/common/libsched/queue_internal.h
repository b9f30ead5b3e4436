/* queue_internal.h - private state of the queue scheduler (sched_queue.h),
 * shared by queue.c (queues, jobs, accounting) and cycle.c (ordering,
 * placement, reservations, preemption planning).
 *
 * Not installed; nothing outside src/common/libsched includes it.  It uses
 * only the public cluster API of sched.h, never internal.h.
 */
#ifndef TESSEL_LIBSCHED_QUEUE_INTERNAL_H
#define TESSEL_LIBSCHED_QUEUE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "tessel/sched.h"
#include "tessel/sched_queue.h"
#include "tessel/sched_wait.h"

#include "gen.h"

/* Resource dimensions: the four of tsched_res_t, in its order, then normalised milli-GPU
 * (R_NGPU: milli-GPU times the GPU's relative speed / 1000).  R_NGPU is never guaranteed (g is
 * always TSCHED_UNLIMITED there, so it is outside the fair share) and only limited
 * (tsched_queue_set_ngpu_limit); its capacity (s->cap) is 0, so it does not weigh in a job's
 * size either.  A pending job's res[R_NGPU] is its amount on the fastest GPU it may use, a
 * running job's what it holds (tsched__job_ngpu). */
#define NRES   5
#define R_NGPU 4

enum jstate { J_PENDING = 0, J_RUNNING = 1, J_VICTIM = 2 };

struct squeue {
    char name[TSCHED_NAME_MAX];
    int parent;     /* -1: top level */
    unsigned depth; /* 1 for a top-level queue */
    unsigned nchildren;
    uint64_t g[NRES], lim[NRES];
    uint32_t weight;
    unsigned own;                 /* TSCHED_OWN_* */
    double reserve_after;         /* with TSCHED_OWN_RESERVE_AFTER */
    tsched_placement_t placement; /* with TSCHED_OWN_PLACEMENT */
    uint64_t used[NRES];          /* running jobs (victims included) */
    uint64_t used_np[NRES];       /* the non-preemptible part of used */
    uint64_t demand[NRES];        /* pending jobs */
    size_t nrunning, npending;
    size_t njobs;      /* live jobs submitted here (leaf) */
    double hist[NRES]; /* decayed usage, same units as used */
    double hist_t;     /* time hist was advanced to */

    /* cycle state (cycle.c) */
    uint64_t cu[NRES];  /* projected: used - victims + claims + starts */
    uint64_t lu[NRES];  /* the same with victims still counted: limits */
    uint64_t cnp[NRES]; /* non-preemptible part of cu */
    size_t left;        /* pending jobs of the subtree not yet taken */
    uint32_t *pend;     /* leaf: pending slots, in order */
    size_t npend, head, pendcap;
    int tried; /* a job of it was placed (or tried to be): a Resources reason is possible */

    /* Its jobs not pending (running, victims), in the order in which they fill its guarantee
     * (tsched__run_cmp), kept as jobs start and stop: the cycle walks it instead of sorting
     * every running job (issue 15). */
    uint32_t *run;
    size_t nrun, runcap;
};

/* One running member: the job's slot, the member's index in its gang and what of the job
 * decides whether it may be a victim and never changes while it runs (the victim search reads
 * them beside their neighbours, not through the job table; 32 bytes, two to a cache line). */
struct nrun_ent {
    uint32_t slot, m;
    int32_t queue, prio;
    uint8_t band;     /* tsched__band(cls) */
    uint8_t training; /* cls == TSCHED_CLASS_TRAINING */
    double start;
};

/* The running members of one node (jobs running or victims, every live job not pending),
 * sorted by slot then member, as a scan of the job table would find them; mem[i] is a copy of
 * the member of e[i] (read only for the candidates a victim search takes). */
struct nrun {
    struct nrun_ent *e;
    tsched_member_t *mem;
    uint32_t n, cap;
};

/* A job.  The fields that every pass of a cycle reads over every job come first, in the first
 * 136 bytes (with 16,000 jobs held by a queue's limit a cycle is a few passes over the job
 * table, each a cache miss or two a job: issue 15); the rest after. */
struct sjob {
    uint64_t id;
    int queue;
    tsched_class_t cls;
    int32_t prio;
    enum jstate state;
    int live;
    uint32_t waiting; /* victims still to stop for this job */
    double arrival;
    uint64_t res[NRES]; /* whole job, all members */
    uint32_t *rnodes;   /* reservation: gang node indices, or NULL */
    uint64_t for_job;   /* J_VICTIM: the job it makes room for */
    /* What a cycle carries over of wait (cycle.c, issue 15), beside the fields every pass
     * reads (wait itself spans five cache lines).  wait_bounds: wait holds exactly what
     * wait_bounds() writes for the key wb_* (its queue, -1 none; resource; never; amounts), so
     * that a limit that gives the same key again rewrites nothing.  wait_kept: wait is as
     * finish_waits() last digested it into a nonzero wait_hash, so it need not be digested
     * again.  Every other writer of wait clears both (wait_dirty()); a submission's memset
     * clears them too.  (A handle's queues are never renamed or removed: an index names one.) */
    uint8_t wait_bounds, wait_kept;
    uint8_t wait_listed; /* in s->cyc_dirty */
    int8_t wb_res, wb_never;
    int32_t wb_queue;
    uint64_t wb_bound, wb_used, wb_want;
    uint64_t wait_hash; /* of the reason last reported; 0 = none reported */

    unsigned flags;
    /* The scheduler's generation (s->gen) before and after its submission: its removal with
     * nothing changed since gives the generation before back (resume.c). */
    uint64_t sub_pre, sub_post;
    int in_g;                 /* cycle: running within its guarantee */
    double pend_since;        /* when it last became pending */
    double start;             /* when it last started */
    tsched_job_t req;         /* models/selector point to own copies */
    tsched_member_t *members; /* gang entries while running */
    uint32_t gang;
    double size;        /* cycle: dominant share of the cluster (victim cost) */
    tsched_wait_t wait; /* pending: why it waited in the last cycle (cycle.c, wait.c) */
};

struct tsched_sched {
    tsched_cluster_t *c;
    tsched_policy_t *p;
    tsched_policy_t *spread; /* fractional jobs of TSCHED_SPREAD queues ("spread") */
    tsched_sched_config_t cfg;
    double now;         /* latest time seen */
    uint64_t cap[NRES]; /* cluster capacity (tsched__capacity) */
    size_t cap_nodes;   /* nodes when cap was computed */

    struct squeue *q;
    size_t nq, qcap;

    struct sjob *jobs;
    size_t njobs, jcap; /* slots in use (high-water), capacity */
    uint32_t *freel;    /* free slots */
    size_t nfree;
    uint64_t *hkey; /* id hash: open addressing, linear probes */
    uint32_t *hval; /* slot + 1; 0 empty; UINT32_MAX deleted */
    size_t hcap, hused;

    /* decisions of the last cycle */
    tsched_start_t *starts;
    size_t nstarts, scap;
    tsched_member_t *mbuf;
    size_t nm, mcap;
    tsched_victim_t *victims;
    size_t nvictims, vcap;
    uint64_t *wchanged; /* pending jobs whose reason changed (tsched_waits_changed) */
    size_t nwchanged, wccap;

    /* Running members by node, kept as jobs start (tsched_job_started) and stop
     * (tsched_job_stopped, tsched_job_remove), so that a cycle's victim search does not
     * rebuild it from the job table (issue 15).  nrun[0..nrun_n): index = node. */
    struct nrun *nrun;
    size_t nrun_n;
    /* Per job slot, the victim search's view of the job for one cycle (cycle.c,
     * build_index); kept between cycles only as a buffer.  jcyc_cap slots. */
    uint64_t *jing;    /* bit per job slot: running within its guarantee (in_g), for the search */
    struct jcyc *jcyc; /* what a candidate costs */
    uint8_t *jvic;
    size_t jcyc_cap;
    /* A cycle's working tables (cycle.c), kept as buffers: shapes that failed to fit or to
     * find victims, and the pending jobs' ordering keys. */
    struct shape_ent *cyc_fit, *cyc_pre;
    struct pkey *cyc_pk;
    size_t cyc_fitcap, cyc_precap, cyc_pkcap;
    uint32_t *cyc_used; /* entries of cyc_fit (2 i) and cyc_pre (2 i + 1) filled in a cycle */
    size_t cyc_nused, cyc_usedcap;
    int cyc_unclean;       /* not all noted: tables_clean() empties the whole tables */
    uint32_t *cyc_waiting; /* pending jobs with victims to wait for (finish_waits) */
    size_t cyc_nwaiting, cyc_waitcap;
    /* Jobs whose reason a cycle wrote (cycle.c, wait_dirty()), for finish_waits() to digest;
     * wait_rescan: digest every pending job at the next cycle (tsched_waits_reset, a failed
     * cycle, a full list). */
    uint32_t *cyc_dirty;
    size_t cyc_ndirty, cyc_dirtycap;
    int wait_rescan;
    uint64_t cu_gen; /* bumped whenever a queue's projected usage (cu) changes in a cycle */

    /* Generation of what tsched_job_may_start reads of the scheduler: its jobs (pending and
     * running, their queues, classes, priorities, flags, requests) and its queues (tree,
     * guarantees, limits, options, usage).  gen names one such state: tsched__changed() gives
     * a new one (gen_next, never reused); a pending job submitted and removed with nothing
     * between gives the one before back, and a submission that the may_start cache (resume.c)
     * saw from the same state with the same job gives the one it gave then.  The cluster has
     * its own (gen.h). */
    uint64_t gen, gen_next;
    /* tsched_job_may_start's answers, one per job asked (resume.c): reused while both
     * generations and the members are as they were.  ms_off: not used (tests). */
    struct ms_ent *ms;
    size_t nms, mscap;
    int ms_off;
    uint64_t ms_asked, ms_computed, ms_tick;
};

/* queue.c */
long tsched__job_slot(const tsched_sched_t *s, uint64_t id);
void tsched__advance(tsched_sched_t *s, double now);
void tsched__job_res(const tsched_job_t *req, uint64_t res[NRES]);
/* res[R_NGPU] of a request at speed `speed` (milli): per GPU milli-GPU * speed / 1000, rounded
 * up; of members: what they hold, each GPU at its own speed. */
uint64_t tsched__ngpu_at(const tsched_job_t *req, uint32_t speed);
uint64_t tsched__ngpu_held(const tsched_cluster_t *c, const tsched_member_t *m, size_t n);
/* Non-preemptible: every class but training, and a training job with
 * TSCHED_JOB_NEVER_PREEMPT (bounded by the guarantees as they are). */
int tsched__np(tsched_class_t cls, unsigned flags);
int tsched__band(tsched_class_t cls);
/* Would used + add fit under cap in every governed dimension?  ungov:
 * TSCHED_UNLIMITED in cap means "no bound". */
int tsched__le(const uint64_t *used, const uint64_t *add, const uint64_t *cap);
/* Queue q's options in effect: its own, else its nearest ancestor's, else the settings'. */
double tsched__reserve_after(const tsched_sched_t *s, int q);
tsched_placement_t tsched__placement(const tsched_sched_t *s, int q);
/* 1 if guarantee g governs at least one resource (one is not TSCHED_UNLIMITED). */
int tsched__governs(const uint64_t *g);
/* Is the pending job in slot j owed capacity by its queue's guarantee,
 * given the queue usage u (cycle or live)? */
int tsched__owed(const tsched_sched_t *s, const struct sjob *j, const uint64_t *u);

/* A new generation of the scheduler (s->gen): something tsched_job_may_start reads changed. */
static inline void tsched__changed(tsched_sched_t *s)
{
    s->gen = ++s->gen_next;
}

/* resume.c: the generation a pending job's submission leads to (job_add, before it is
 * added): the one a submission of the same job from the same generation led to before, else
 * a new one.  j is the job as it will be stored (id, queue, class, priority, flags, res,
 * req). */
uint64_t tsched__gen_submit(tsched_sched_t *s, const struct sjob *j);
/* resume.c: forgets job id's kept answer (it started: tsched_job_started). */
void tsched__ms_forget(tsched_sched_t *s, uint64_t id);
/* resume.c: frees the kept answers (tsched_sched_destroy). */
void tsched__ms_free(tsched_sched_t *s);
/* The job in slot of id, checked for a start on n members (tsched_job_started and
 * tsched_job_may_start): its slot, or -1 with errno ENOENT (no such job), EBUSY (not
 * pending), EINVAL (n is not its gang, NULL members, a node the cluster does not have). */
long tsched__pending_job(const tsched_sched_t *s, uint64_t id, const tsched_member_t *members,
                         size_t n);
/* cycle.c: do two jobs ask the same placement (request shape), and its hash. */
int tsched__same_shape(const struct sjob *a, const struct sjob *b);
uint64_t tsched__shape_hash(const struct sjob *j);

/* Order in which a queue's running jobs fill its guarantee: non-preemptible first, then by
 * band, priority (higher first), start (older first), id.  <0, 0, >0. */
int tsched__run_cmp(const struct sjob *x, const struct sjob *y);

/* The running members of node n (0 when none). */
static inline uint32_t tsched__nrun_count(const tsched_sched_t *s, uint32_t n)
{
    return n < s->nrun_n ? s->nrun[n].n : 0;
}

/* cycle.c */
/* Fair-share key of queue q with current usage u (see the docs). */
double tsched__share(const tsched_sched_t *s, int q, const uint64_t *u);
/* Recomputes s->cap: free resources of every node plus what jobs hold. */
void tsched__capacity(tsched_sched_t *s);

#endif
