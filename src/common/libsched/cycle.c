/* cycle.c - one scheduling cycle of the queue scheduler: ordering,
 * placement with backfill, reservations, preemption planning.
 *
 * The cycle, in order (docs/scheduler-queues.md has the formulas):
 *
 *   1. Bookkeeping: victims whose preemptor is gone run on as before; the
 *      usage of every queue, plus the claims of jobs waiting on a plan.
 *   2. Which running jobs are within their queue's guarantee: per leaf
 *      queue, non-preemptible first, then by band, priority and start time
 *      (oldest first), first fit into the guarantee.  The rest is over quota.
 *   3. Reservations: jobs holding one are tried first; those that still do
 *      not fit hold what is free on their reserved nodes for the cycle.
 *   4. The main loop: descend the queue tree by smallest fair-share key
 *      (recomputed after every start), take that leaf's next job (band,
 *      priority, arrival), check limits and the guarantee of
 *      non-preemptible work, place it.  A job that does not fit is passed
 *      over (backfill); if it is owed capacity, or outranks running work of
 *      its own queue, a preemption plan is made; if it has waited longer
 *      than reserve_after, it gets a reservation.
 *   5. Everything the cycle committed to the cluster is released.
 *
 * Placement failures are remembered per request shape for the rest of the
 * cycle (the cluster only fills up during a cycle, so a shape that did not
 * fit will not fit later in it), and so are failed preemption searches:
 * that is what keeps 10,000 pending jobs cheap.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "queue_internal.h"
#include "wait_internal.h"

/* Nodes whose victim sets are verified against the real placement before
 * giving up: the arithmetic below ignores GPU models and node labels, so
 * the cheapest node may turn out unusable; 4 tries cover the trace's mixed
 * model lists without scanning the cluster again and again. */
#define VERIFY_TRIES 4

/* Victims considered on one node.  A node of 8 GPUs shared four ways holds
 * 32 jobs; 64 leaves room for CPU-only jobs beside them. */
#define NODE_CANDS 64

/* --- fair share ------------------------------------------------------------- */

double tsched__share(const tsched_sched_t *s, int qi, const uint64_t *u)
{
    const struct squeue *q = &s->q[qi];
    double beta = s->cfg.history_weight;
    double r = 0, over = 0;
    int has_g = 0;
    for (int d = 0; d < NRES; d++) {
        if (q->g[d] == TSCHED_UNLIMITED)
            continue;
        double uu = (1 - beta) * (double)u[d] + beta * q->hist[d];
        if (q->g[d] > 0) {
            has_g = 1;
            if (uu / (double)q->g[d] > r)
                r = uu / (double)q->g[d];
        } else if (uu > 0) {
            r = INFINITY;
        }
        if (s->cap[d] > 0 && uu > (double)q->g[d]) {
            double o = (uu - (double)q->g[d]) / (double)s->cap[d];
            if (o > over)
                over = o;
        }
    }
    if (has_g && r < 1)
        return r;
    return 1 + over / q->weight;
}

void tsched__capacity(tsched_sched_t *s)
{
    uint64_t cap[NRES] = {0};
    size_t n = tsched_cluster_nodes(s->c);
    if (n == s->cap_nodes)
        return; /* free + held is constant while no node is added */
    s->cap_nodes = n;
    for (size_t i = 0; i < n; i++) {
        uint64_t cpu, mem, fg[TSCHED_MAX_NODE_GPUS];
        uint32_t ng, fm[TSCHED_MAX_NODE_GPUS];
        if (tsched_node_free(s->c, (uint32_t)i, &cpu, &mem, &ng, fm, fg) < 0)
            continue;
        cap[0] += (uint64_t)ng * TSCHED_MILLI;
        for (unsigned g = 0; g < ng; g++)
            cap[1] += fg[g];
        cap[2] += cpu;
        cap[3] += mem;
    }
    for (size_t i = 0; i < s->nq; i++)
        if (s->q[i].parent < 0)
            for (int d = 1; d < R_NGPU; d++)
                cap[d] += s->q[i].used[d];
    cap[R_NGPU] = 0; /* limited only: not a share of the cluster (queue_internal.h) */
    memcpy(s->cap, cap, sizeof cap);
}

/* --- per-cycle context --------------------------------------------------------- */

struct shape_ent {
    uint32_t slot;  /* a job of that shape; UINT32_MAX = empty */
    uint32_t extra; /* preemption cache: owed flag */
};

/* A running job as the victim search reads it, fixed for the cycle (build_index()), so that it
 * does not read the job table: what a candidate costs, one per job slot (s->jcyc).  Whether it
 * may be one is in its members' entries of the node lists (s->nrun) and in a bit per slot for
 * the guarantee (s->jing: 10 KiB for 85,000 jobs, where a struct per job missed the cache). */
struct jcyc {
    uint64_t id;
    double start;
    double size, t; /* work lost if stopped: size x t (t: time lost) */
};

struct cycle {
    tsched_sched_t *s;
    double now;
    tsched_member_t *holds;
    uint64_t *hold_for; /* the job each hold is for */
    size_t nholds, hcap, hfcap;
    struct shape_ent *fit_fail, *pre_fail;
    size_t tcap;
    /* running jobs as the victim search reads them (built on first need; the members by
     * node are s->nrun, kept as jobs start and stop) */
    size_t nnodes;
    const uint64_t *ing; /* per job slot, a bit: within its guarantee (s->jing) */
    struct jcyc *jc;     /* per job slot (s->jcyc) */
    uint8_t *vic;        /* per job slot: made a victim since build_index() (s->jvic) */
    /* nodes with eligible training members, by the least plan they could
     * give (lowest priority, least work lost of one member): preemption
     * visits them in this order and stops at the first that cannot beat the
     * plans found */
    struct nbound *low;
    size_t nlow;
    int indexed;
    tsched_member_t *tmp, *gone;
    size_t tmpcap, gonecap;
    size_t plans, nres;
    int nomem;
    /* victims that could exist at all (upper bounds, for a quick "no") */
    size_t over_total;  /* eligible over-quota training jobs, all queues */
    size_t *over_q;     /* the same per queue */
    size_t *train_q;    /* eligible training jobs per queue */
    int32_t *minprio_q; /* their lowest priority */
    /* The last turn, if a limit ended it without a look at anything but the job's queue, its
     * resources and whether it is preemptible (admissible(), tsched__owed(): kind 1, the
     * guarantee of non-preemptible work; kind 2, a limit, nothing owed; 0 none).  Such a turn
     * changes nothing, and every other turn but a waiting job's (which changes no usage)
     * clears it, so the usage is as it was: the next job of that queue with the same resources
     * and preemptibility has the same turn, the same reason included.  Thousands of jobs held
     * by a queue's limit each cost a comparison (issue 15). */
    int held;
    int held_queue, held_np;
    uint64_t held_res[NRES];
};

static int grow(void **p, size_t *cap, size_t want, size_t size)
{
    if (want <= *cap)
        return 0;
    size_t c = *cap ? *cap : 16;
    while (c < want)
        c *= 2;
    void *n = realloc(*p, c * size);
    if (!n)
        return -1;
    *p = n;
    *cap = c;
    return 0;
}

/* snprintf(dst, TSCHED_NAME_MAX, "%s", src) without the format machinery (once per pending job
 * and cycle): the same bytes written, the rest of dst left as it was. */
static void copy_name(char dst[TSCHED_NAME_MAX], const char *src)
{
    size_t n = strnlen(src, TSCHED_NAME_MAX - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* j->wait is about to change other than through wait_bounds(): nothing of it is carried over
 * (queue_internal.h, struct sjob), and finish_waits() digests it (s->cyc_dirty: room for every
 * pending job, each listed once; were it full, every job is digested). */
static void wait_dirty(tsched_sched_t *s, struct sjob *j)
{
    j->wait_bounds = 0;
    j->wait_kept = 0;
    if (j->wait_listed)
        return;
    if (s->cyc_ndirty < s->cyc_dirtycap) {
        j->wait_listed = 1;
        s->cyc_dirty[s->cyc_ndirty++] = (uint32_t)(j - s->jobs);
    } else {
        s->wait_rescan = 1;
    }
}

int tsched__same_shape(const struct sjob *a, const struct sjob *b)
{
    const tsched_job_t *x = &a->req, *y = &b->req;
    if (x->cpu_milli != y->cpu_milli || x->mem_bytes != y->mem_bytes || x->ngpus != y->ngpus ||
        x->milli_gpu != y->milli_gpu || x->gpu_mem_bytes != y->gpu_mem_bytes || x->gang != y->gang)
        return 0;
    if ((x->models == NULL) != (y->models == NULL) ||
        (x->models && strcmp(x->models, y->models) != 0))
        return 0;
    if ((x->selector == NULL) != (y->selector == NULL) ||
        (x->selector && strcmp(x->selector, y->selector) != 0))
        return 0;
    return 1;
}

uint64_t tsched__shape_hash(const struct sjob *j)
{
    const tsched_job_t *r = &j->req;
    uint64_t v[6] = {r->cpu_milli,     r->mem_bytes, (uint64_t)r->ngpus << 32 | r->milli_gpu,
                     r->gpu_mem_bytes, r->gang,      0};
    uint64_t h = 1469598103934665603ull;
    for (const char *p = r->models; p && *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    for (const char *p = r->selector; p && *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    v[5] = h;
    for (int i = 0; i < 6; i++) {
        h ^= v[i];
        h *= 0x9e3779b97f4a7c15ull;
        h ^= h >> 29;
    }
    return h;
}

/* Preemption searches are remembered per shape and per what decides the
 * candidates: queue, band, priority, owed. */
static int pre_same(const tsched_sched_t *s, uint32_t a, uint32_t b)
{
    const struct sjob *x = &s->jobs[a], *y = &s->jobs[b];
    return tsched__same_shape(x, y) && x->queue == y->queue && x->prio == y->prio &&
           tsched__band(x->cls) == tsched__band(y->cls);
}

/* Finds (or, add, inserts) slot's shape in table t.  Returns the slot of the job that entered
 * it, plus 1, if present; 0 if not. */
static int shape_lookup(struct cycle *cy, struct shape_ent *t, uint32_t slot, uint32_t extra,
                        int pre, int add)
{
    tsched_sched_t *s = cy->s;
    uint64_t h = tsched__shape_hash(&s->jobs[slot]);
    if (pre)
        h ^= (uint64_t)s->jobs[slot].queue * 0x100000001b3ull + extra;
    for (size_t i = h & (cy->tcap - 1), n = 0; n < cy->tcap; i = (i + 1) & (cy->tcap - 1), n++) {
        if (t[i].slot == UINT32_MAX) {
            if (add) {
                t[i].slot = slot;
                t[i].extra = extra;
                /* emptied again at the end of the cycle (tables_clean()) */
                if (grow((void **)&s->cyc_used, &s->cyc_usedcap, s->cyc_nused + 1,
                         sizeof *s->cyc_used) == 0)
                    s->cyc_used[s->cyc_nused++] = (uint32_t)(i * 2 + (t == s->cyc_pre));
                else
                    s->cyc_unclean = 1;
            }
            return 0;
        }
        if (t[i].extra == extra && (pre ? pre_same(s, t[i].slot, slot)
                                        : tsched__same_shape(&s->jobs[t[i].slot], &s->jobs[slot])))
            return (int)t[i].slot + 1;
    }
    return 0; /* full: no caching */
}

/* --- usage in the cycle --------------------------------------------------------- */

static void claim(tsched_sched_t *s, const struct sjob *j)
{
    s->cu_gen++;
    for (int x = j->queue; x >= 0; x = s->q[x].parent)
        for (int d = 0; d < NRES; d++) {
            s->q[x].cu[d] += j->res[d];
            s->q[x].lu[d] += j->res[d];
            if (tsched__np(j->cls, j->flags))
                s->q[x].cnp[d] += j->res[d];
        }
}

/* A victim's usage leaves its queues' projected usage. */
static void unclaim(tsched_sched_t *s, const struct sjob *v)
{
    s->cu_gen++;
    for (int x = v->queue; x >= 0; x = s->q[x].parent)
        for (int d = 0; d < NRES; d++) {
            s->q[x].cu[d] -= v->res[d];
            if (tsched__np(v->cls, v->flags))
                s->q[x].cnp[d] -= v->res[d];
        }
}

/* 1 if j may start: every queue on the path stays within its limit, and
 * non-preemptible work within its guarantee.  0 if the guarantee forbids
 * it; -1 if only limits do (with *top the highest queue at its limit).
 * now: limits against usage with victims still running (may it start
 * now?), else against the projected usage (will there be room?). */
static int admissible(const tsched_sched_t *s, const struct sjob *j, int *top, int now)
{
    int lim = 0;
    for (int x = j->queue; x >= 0; x = s->q[x].parent) {
        if (tsched__np(j->cls, j->flags) && !tsched__le(s->q[x].cnp, j->res, s->q[x].g))
            return 0;
        if (!tsched__le(now ? s->q[x].lu : s->q[x].cu, j->res, s->q[x].lim)) {
            lim = 1;
            if (top)
                *top = x;
        }
    }
    return lim ? -1 : 1;
}

/* --- placement ----------------------------------------------------------------- */

static int ensure_tmp(struct cycle *cy, size_t n)
{
    if (grow((void **)&cy->tmp, &cy->tmpcap, n, sizeof *cy->tmp) < 0) {
        cy->nomem = 1;
        return -1;
    }
    return 0;
}

/* Why j does not fit (the placement said why): Resources, with the best candidate; or
 * Reservation, when it would fit but for what this cycle holds for older jobs. */
static void wait_no_fit(struct cycle *cy, struct sjob *j, tsched_reason_t why)
{
    tsched_sched_t *s = cy->s;
    tsched_wait_t *w = &j->wait;
    wait_dirty(s, j);
    tsched__wait_reset(w, TSCHED_WAIT_RESOURCES, &j->req);
    w->fit = why;
    tsched__wait_best(s->c, &j->req, w);
    if (cy->nholds == 0 || why == TSCHED_BAD_REQUEST ||
        tsched_fits_without(s->c, s->p, &j->req, cy->holds, cy->nholds, cy->tmp, NULL) != 0)
        return;
    /* the holds on the node of its first member stop it */
    uint32_t n = cy->tmp[0].node, mask = 0;
    for (uint32_t g = 0; g < cy->tmp[0].ngpus; g++)
        mask |= 1u << cy->tmp[0].gpu[g];
    w->code = TSCHED_WAIT_RESERVATION;
    for (size_t i = 0; i < cy->nholds; i++) {
        const tsched_member_t *h = &cy->holds[i];
        if (h->node != n)
            continue;
        if (h->ngpus && ((mask >> h->gpu[0]) & 1))
            w->held_gpus |= 1u << h->gpu[0];
        if (!h->ngpus || ((mask >> h->gpu[0]) & 1))
            tsched__wait_add_job(w, cy->hold_for[i]);
    }
    tsched__wait_node(s->c, n, w);
}

/* Places slot's job and keeps it committed as a start decision.
 * 1 started, 0 does not fit. */
static int try_start(struct cycle *cy, uint32_t slot)
{
    tsched_sched_t *s = cy->s;
    struct sjob *j = &s->jobs[slot];
    s->q[j->queue].tried = 1; /* finish_waits() looks for Resources reasons there */
    int seen = shape_lookup(cy, cy->fit_fail, slot, 0, 0, 0);
    if (seen) {
        /* the same shape failed earlier in this cycle: the same reason */
        wait_dirty(s, j);
        memcpy(&j->wait, &s->jobs[seen - 1].wait, sizeof j->wait);
        return 0;
    }
    if (ensure_tmp(cy, j->gang) < 0)
        return 0;
    tsched_reason_t why;
    /* A fraction of one GPU of a spread queue: idle GPUs first (the default queue of a lab
     * box, docs/scheduler-queues.md); whole GPUs and pack queues: the scheduler's policy. */
    int frac = j->req.ngpus == 1 && j->req.milli_gpu > 0 && j->req.milli_gpu < TSCHED_MILLI;
    tsched_policy_t *p = frac && tsched__placement(s, j->queue) == TSCHED_SPREAD ? s->spread : s->p;
    int rc = tsched_place(s->c, p, &j->req, cy->tmp, &why);
    if (rc != 0) {
        wait_no_fit(cy, j, why);
        (void)shape_lookup(cy, cy->fit_fail, slot, 0, 0, 1);
        return 0;
    }
    if (grow((void **)&s->starts, &s->scap, s->nstarts + 1, sizeof *s->starts) < 0 ||
        grow((void **)&s->mbuf, &s->mcap, s->nm + j->gang, sizeof *s->mbuf) < 0) {
        cy->nomem = 1;
        return 0;
    }
    if (tsched_commit(s->c, cy->tmp, j->gang) < 0)
        return 0; /* cannot happen: just placed */
    memcpy(s->mbuf + s->nm, cy->tmp, j->gang * sizeof *cy->tmp);
    s->nm += j->gang;
    tsched_start_t *st = &s->starts[s->nstarts++];
    wait_dirty(s, j);
    tsched__wait_reset(&j->wait, TSCHED_WAIT_NONE, &j->req);
    j->wait_hash = 0;
    st->job = j->id;
    st->members = NULL; /* set at the end: mbuf may move */
    st->nmembers = j->gang;
    return 1;
}

/* --- running jobs by node ---------------------------------------------------------- */

struct nbound {
    int32_t prio; /* lowest priority of the node's eligible training members */
    uint32_t node;
    /* the queues of those members (bit q % 64), and of those not within their queue's
     * guarantee: a preemptor whose queue has none there, and that may take no member of
     * another queue there, has no candidate on the node (used when there are <= 64 queues) */
    uint64_t queues, queues_nog;
    double lost; /* least work one of them loses */
    double tmin; /* least time one of them loses (lost = size x time; every size is of this
                  * cycle: mark_guaranteed() sets it for every job not pending) */
};

static int nbound_cmp(const void *a, const void *b)
{
    const struct nbound *x = a, *y = b;
    if (x->prio != y->prio)
        return x->prio < y->prio ? -1 : 1;
    if (x->lost != y->lost)
        return x->lost < y->lost ? -1 : 1;
    return x->node < y->node ? -1 : x->node > y->node;
}

static double job_size(const tsched_sched_t *s, const struct sjob *j);

static int build_index(struct cycle *cy)
{
    tsched_sched_t *s = cy->s;
    if (cy->indexed)
        return 0;
    cy->nnodes = tsched_cluster_nodes(s->c);
    if (s->jcyc_cap < s->njobs + 1) {
        /* kept in the handle: the next cycles reuse it */
        size_t cap = s->jcap + 1 > s->njobs + 1 ? s->jcap + 1 : s->njobs + 1;
        uint64_t *ing = realloc(s->jing, (cap + 63) / 64 * sizeof *ing);
        if (ing)
            s->jing = ing;
        struct jcyc *jc = realloc(s->jcyc, cap * sizeof *jc);
        if (jc)
            s->jcyc = jc;
        uint8_t *vic = realloc(s->jvic, cap);
        if (vic)
            s->jvic = vic;
        if (!ing || !jc || !vic) {
            cy->nomem = 1;
            return -1;
        }
        s->jcyc_cap = cap;
    }
    memset(s->jing, 0, (s->njobs + 64) / 64 * sizeof *s->jing);
    cy->ing = s->jing;
    cy->jc = s->jcyc;
    cy->vic = s->jvic;
    cy->low = calloc(cy->nnodes + 1, sizeof *cy->low);
    uint32_t *n_train = calloc(cy->nnodes + 1, sizeof *n_train);
    if (!cy->low || !n_train) {
        free(n_train);
        cy->nomem = 1;
        return -1;
    }
    for (size_t n = 0; n < cy->nnodes; n++)
        cy->low[n] = (struct nbound){
            .node = (uint32_t)n, .prio = INT32_MAX, .lost = INFINITY, .tmin = INFINITY};
    /* one pass over the jobs: each running job's view, and per node the bound over every
     * eligible member, running now or not (a victim of a queue limit runs again after its
     * plan), and how many eligible members are not victims yet */
    for (size_t i = 0; i < s->njobs; i++) {
        const struct sjob *j = &s->jobs[i];
        cy->vic[i] = j->state != J_RUNNING;
        if (!j->live || j->state == J_PENDING)
            continue;
        struct jcyc *e = &cy->jc[i];
        if (j->in_g)
            s->jing[i / 64] |= 1ull << (i % 64);
        e->id = j->id;
        e->start = j->start;
        e->size = j->size;
        e->t = (j->flags & TSCHED_JOB_SUSPENDABLE) ? s->cfg.suspend_cost : cy->now - j->start;
        if (!(!tsched__np(j->cls, j->flags) && cy->now - j->start >= s->cfg.min_runtime))
            continue; /* not eligible */
        double lost = e->size * e->t;
        for (uint32_t m = 0; m < j->gang; m++) {
            uint32_t n = j->members[m].node;
            if (n >= cy->nnodes)
                continue;
            struct nbound *b = &cy->low[n];
            /* every job not pending got its size of this cycle in mark_guaranteed(), so
             * room_share() x t bounds its loss */
            if (e->t < b->tmin)
                b->tmin = e->t;
            if (j->prio < b->prio)
                b->prio = j->prio;
            if (lost < b->lost)
                b->lost = lost;
            b->queues |= 1ull << (j->queue & 63);
            if (!j->in_g)
                b->queues_nog |= 1ull << (j->queue & 63);
            n_train[n] += !cy->vic[i];
        }
    }
    for (size_t n = 0; n < cy->nnodes; n++)
        if (n_train[n] > 0)
            cy->low[cy->nlow++] = cy->low[n];
    free(n_train);
    qsort(cy->low, cy->nlow, sizeof *cy->low, nbound_cmp);
    cy->indexed = 1;
    return 0;
}

/* A node's free resources, as working arrays. */
struct nfree {
    uint64_t cpu, mem;
    uint32_t ng;
    uint32_t fm[TSCHED_MAX_NODE_GPUS];
    uint64_t fg[TSCHED_MAX_NODE_GPUS];
};

static void nf_apply(struct nfree *f, const tsched_member_t *m, int sign)
{
    f->cpu = sign > 0 ? f->cpu + m->cpu_milli : f->cpu - m->cpu_milli;
    f->mem = sign > 0 ? f->mem + m->mem_bytes : f->mem - m->mem_bytes;
    for (unsigned i = 0; i < m->ngpus && i < TSCHED_MAX_NODE_GPUS; i++) {
        unsigned g = m->gpu[i];
        if (g >= TSCHED_MAX_NODE_GPUS)
            continue;
        f->fm[g] = sign > 0 ? f->fm[g] + m->milli_gpu : f->fm[g] - m->milli_gpu;
        f->fg[g] = sign > 0 ? f->fg[g] + m->gpu_mem_bytes : f->fg[g] - m->gpu_mem_bytes;
    }
}

/* Would one member of req fit in f (models and labels not checked)? */
static int nf_fits(const struct nfree *f, const tsched_job_t *r)
{
    if (f->cpu < r->cpu_milli || f->mem < r->mem_bytes)
        return 0;
    if (r->ngpus == 0)
        return 1;
    uint32_t milli = r->ngpus > 1 || r->milli_gpu == 0 ? TSCHED_MILLI : r->milli_gpu;
    unsigned n = 0;
    for (unsigned g = 0; g < f->ng; g++)
        n += f->fm[g] >= milli && f->fg[g] >= r->gpu_mem_bytes;
    return n >= r->ngpus;
}

/* --- preemption planning ---------------------------------------------------------- */

/* Victim ranking: lower band/priority first, then over quota before within
 * guarantee, then less work lost, then the later start (younger). */
struct vcand {
    uint32_t slot;
    uint32_t first; /* its first member in the node's list (s->nrun) */
    uint64_t id;
    int band;
    int32_t prio;
    int in_g;
    double lost;
    double start;
};

static int vcmp(const struct vcand *a, const struct vcand *b);
static int vcand_qcmp(const void *a, const void *b)
{
    return vcmp(a, b);
}

static int vcmp(const struct vcand *a, const struct vcand *b)
{
    if (a->band != b->band)
        return a->band < b->band ? -1 : 1;
    if (a->prio != b->prio)
        return a->prio < b->prio ? -1 : 1;
    if (a->in_g != b->in_g)
        return a->in_g < b->in_g ? -1 : 1;
    if (a->lost != b->lost)
        return a->lost < b->lost ? -1 : 1;
    if (a->start != b->start)
        return a->start > b->start ? -1 : 1;
    return a->id > b->id ? -1 : a->id < b->id; /* the later submitted */
}

/* A node's victim set and its cost. */
struct nplan {
    uint32_t node;
    uint32_t nv;
    uint32_t v[NODE_CANDS];
    int maxband;
    int32_t maxprio;
    int n_in_g;
    double lost;
};

/* Lexicographic: highest victim rank, victims within guarantee, work lost,
 * number of victims. */
static int pcmp(const struct nplan *a, const struct nplan *b)
{
    if (a->maxband != b->maxband)
        return a->maxband < b->maxband ? -1 : 1;
    if (a->maxprio != b->maxprio)
        return a->maxprio < b->maxprio ? -1 : 1;
    if (a->n_in_g != b->n_in_g)
        return a->n_in_g < b->n_in_g ? -1 : 1;
    if (a->lost != b->lost)
        return a->lost < b->lost ? -1 : 1;
    if (a->nv != b->nv)
        return a->nv < b->nv ? -1 : 1;
    return a->node < b->node ? -1 : a->node > b->node;
}

static double job_size(const tsched_sched_t *s, const struct sjob *j)
{
    double m = 0;
    for (int d = 0; d < NRES; d++)
        if (s->cap[d] > 0 && (double)j->res[d] / (double)s->cap[d] > m)
            m = (double)j->res[d] / (double)s->cap[d];
    return m;
}

/* mode 0: victims for preemptor j (owed: cross-queue allowed);
 * mode 1: every running job (reservation: what must drain). */
static int is_cand(const struct cycle *cy, const struct sjob *j, const struct nrun_ent *x, int owed,
                   int mode)
{
    if (mode == 1)
        return 1;
    /* eligible: training, started at least min_runtime ago */
    if (!x->training || !(cy->now - x->start >= cy->s->cfg.min_runtime))
        return 0;
    if (x->queue == j->queue) {
        int bj = tsched__band(j->cls);
        if (!(x->band < bj || (x->band == bj && x->prio < j->prio)))
            return 0;
    } else if (!owed || (cy->ing[x->slot / 64] >> (x->slot % 64) & 1)) {
        return 0;
    }
    return !cy->vic[x->slot]; /* not already a victim */
}

/* Adds to (sign > 0) or takes from f what the members of victim candidate c on node n hold
 * (they follow one another in the node's list). */
static void apply_on_node(const struct cycle *cy, uint32_t n, const struct vcand *c,
                          struct nfree *f, int sign)
{
    const struct nrun *r = &cy->s->nrun[n];
    for (uint32_t e = c->first; e < r->n && r->e[e].slot == c->slot; e++)
        nf_apply(f, &r->mem[e], sign);
}

/* The cheapest victim set on node n for one member of j; 0 if none, or if worst (not NULL;
 * mode 0 only, where a plan has a victim or more) ranks before every plan its candidates can
 * make. */
static int node_plan(struct cycle *cy, const struct sjob *j, uint32_t n, int owed, int mode,
                     const struct nplan *worst, struct nplan *out)
{
    tsched_sched_t *s = cy->s;
    struct vcand c[NODE_CANDS];
    unsigned nc = 0;
    const struct nrun *r = &s->nrun[n];
    for (uint32_t e = 0; e < r->n && nc < NODE_CANDS; e++) {
        uint32_t slot = r->e[e].slot;
        if (!is_cand(cy, j, &r->e[e], owed, mode))
            continue;
        unsigned k;
        for (k = 0; k < nc && c[k].slot != slot; k++)
            ;
        if (k < nc)
            continue;
        const struct jcyc *v = &cy->jc[slot];
        c[nc].slot = slot;
        c[nc].first = e;
        c[nc].id = v->id;
        c[nc].band = r->e[e].band;
        c[nc].prio = r->e[e].prio;
        c[nc].in_g = (int)(cy->ing[slot / 64] >> (slot % 64) & 1);
        c[nc].start = v->start;
        c[nc].lost = v->size * (mode == 1 ? 1 : v->t);
        nc++;
    }
    if (nc == 0)
        return 0;
    if (worst) {
        /* a plan takes one candidate or more: it ranks at least as the least rank, no victim
         * within its guarantee, the least work lost, one victim */
        struct nplan lb = {.node = n, .nv = 1, .maxband = c[0].band, .maxprio = c[0].prio};
        lb.lost = c[0].lost;
        for (unsigned i = 1; i < nc; i++) {
            if (c[i].band < lb.maxband || (c[i].band == lb.maxband && c[i].prio < lb.maxprio)) {
                lb.maxband = c[i].band;
                lb.maxprio = c[i].prio;
            }
            if (c[i].lost < lb.lost)
                lb.lost = c[i].lost;
        }
        if (pcmp(&lb, worst) >= 0)
            return 0;
    }
    struct nfree fr, *f = &fr;
    if (tsched_node_free(s->c, n, &f->cpu, &f->mem, &f->ng, f->fm, f->fg) < 0)
        return 0;
    /* insertion sort: a handful of entries */
    for (unsigned i = 1; i < nc; i++)
        for (unsigned k = i; k > 0 && vcmp(&c[k], &c[k - 1]) < 0; k--) {
            struct vcand t = c[k];
            c[k] = c[k - 1];
            c[k - 1] = t;
        }
    int chosen[NODE_CANDS] = {0};
    unsigned k = 0;
    int fits = nf_fits(f, &j->req);
    if (fits && mode == 0)
        return 0; /* fits already: models or labels stop it, no victim helps */
    for (; k < nc && !fits; k++) {
        apply_on_node(cy, n, &c[k], f, 1);
        chosen[k] = 1;
        fits = nf_fits(f, &j->req);
    }
    if (!fits)
        return 0;
    /* drop victims not needed, the costliest first */
    for (unsigned i = k; i-- > 0;) {
        apply_on_node(cy, n, &c[i], f, -1);
        if (nf_fits(f, &j->req)) {
            chosen[i] = 0;
            continue;
        }
        apply_on_node(cy, n, &c[i], f, 1);
    }
    memset(out, 0, sizeof *out);
    out->node = n;
    out->maxband = -1;
    out->maxprio = INT32_MIN;
    for (unsigned i = 0; i < k; i++) {
        if (!chosen[i])
            continue;
        out->v[out->nv++] = c[i].slot;
        if (c[i].band > out->maxband || (c[i].band == out->maxband && c[i].prio > out->maxprio)) {
            out->maxband = c[i].band;
            out->maxprio = c[i].prio;
        }
        out->n_in_g += c[i].in_g;
        out->lost += c[i].lost;
    }
    return 1;
}

/* Gathers the members of the victims of plans[0..np) into cy->gone; returns
 * the count, or -1 (out of memory).  A victim on two chosen nodes is taken
 * once. */
static long gather(struct cycle *cy, struct nplan *plans, unsigned np)
{
    tsched_sched_t *s = cy->s;
    size_t ng = 0;
    for (unsigned p = 0; p < np; p++)
        for (uint32_t i = 0; i < plans[p].nv; i++) {
            uint32_t slot = plans[p].v[i];
            int dup = 0;
            for (unsigned q = 0; q <= p && !dup; q++)
                for (uint32_t k = 0; k < (q == p ? i : plans[q].nv) && !dup; k++)
                    dup = plans[q].v[k] == slot;
            if (dup)
                continue;
            const struct sjob *v = &s->jobs[slot];
            if (grow((void **)&cy->gone, &cy->gonecap, ng + v->gang, sizeof *cy->gone) < 0) {
                cy->nomem = 1;
                return -1;
            }
            memcpy(cy->gone + ng, v->members, v->gang * sizeof *v->members);
            ng += v->gang;
        }
    return (long)ng;
}

/* A lower bound of the size (job_size()) of the victims that make room for
 * one member of r in f: the resources they must free, as shares of the
 * cluster, whatever GPU model or memory.  Their work lost is at least this
 * times the least time one of them loses. */
static double room_share(const tsched_sched_t *s, const struct room *f, const tsched_job_t *r)
{
    double m = 0;
    if (s->cap[2] > 0 && r->cpu_milli > f->cpu)
        m = (double)(r->cpu_milli - f->cpu) / (double)s->cap[2];
    if (s->cap[3] > 0 && r->mem_bytes > f->mem &&
        (double)(r->mem_bytes - f->mem) / (double)s->cap[3] > m)
        m = (double)(r->mem_bytes - f->mem) / (double)s->cap[3];
    if (r->ngpus == 0 || s->cap[0] == 0 || f->ngpus < r->ngpus)
        return m; /* (too few GPUs: no plan here anyway) */
    /* on the r->ngpus GPUs the least short of r's share */
    uint32_t milli = r->ngpus > 1 || r->milli_gpu == 0 ? TSCHED_MILLI : r->milli_gpu;
    uint64_t need = 0;
    for (unsigned g = 0; g < r->ngpus; g++)
        need += f->milli[g] >= milli ? 0 : milli - f->milli[g];
    if ((double)need / (double)s->cap[0] > m)
        m = (double)need / (double)s->cap[0];
    return m;
}

/* Whether node b->node may have a victim candidate (is_cand(), mode 0) for j: 0 when none of
 * its eligible members can be one (their queues, priorities and guarantees, as the cycle
 * found them when it built its bounds). */
static int maybe_cand(const struct cycle *cy, const struct sjob *j, int owed,
                      const struct nbound *b)
{
    if (cy->s->nq > 64)
        return 1;
    uint64_t jq = 1ull << (j->queue & 63);
    int bj = tsched__band(j->cls), bt = tsched__band(TSCHED_CLASS_TRAINING);
    if ((b->queues & jq) && (bt < bj || (bt == bj && b->prio < j->prio)))
        return 1; /* a member of j's queue ranked below j */
    return owed && (b->queues_nog & ~jq);
}

/* Best `want` node plans for j, cheapest first, among nodes not in skip.
 * Returns how many were found. */
static unsigned best_nodes(struct cycle *cy, const struct sjob *j, int owed, int mode,
                           struct nplan *best, unsigned want)
{
    unsigned nb = 0;
    struct nplan cur, low = {.nv = 1, .maxband = tsched__band(TSCHED_CLASS_TRAINING)};
    /* victims (mode 0) are eligible training members: only the nodes that
     * have some, least promising last; reservations look at every node */
    size_t nn = mode == 0 ? cy->nlow : cy->nnodes;
    for (size_t k = 0; k < nn; k++) {
        uint32_t n = mode == 0 ? cy->low[k].node : (uint32_t)k;
        if (tsched__nrun_count(cy->s, n) == 0)
            continue;
        int full = mode == 0 && nb == want;
        if (full) {
            /* every plan here is at least this (its victims are some of
             * the eligible training members counted at the cycle start), and
             * so is every plan of the nodes after it: none can enter */
            low.node = n;
            low.maxprio = cy->low[k].prio;
            low.lost = cy->low[k].lost;
            if (pcmp(&low, &best[nb - 1]) >= 0)
                break;
        }
        if (mode == 0 && !maybe_cand(cy, j, owed, &cy->low[k]))
            continue; /* node_plan() would find no candidate */
        if (full) {
            /* nor can this node's when what its victims must free costs
             * more (a hair less, for rounding) */
            double need =
                cy->low[k].tmin * room_share(cy->s, &cy->s->c->room[n], &j->req) * (1 - 1e-9);
            if (need > low.lost) {
                low.lost = need;
                if (pcmp(&low, &best[nb - 1]) >= 0)
                    continue;
            }
        }
        if (!node_plan(cy, j, n, owed, mode, mode == 0 && nb == want ? &best[nb - 1] : NULL, &cur))
            continue;
        if (nb == want && pcmp(&cur, &best[nb - 1]) >= 0)
            continue;
        unsigned i = nb < want ? nb++ : nb - 1;
        for (; i > 0 && pcmp(&cur, &best[i - 1]) < 0; i--)
            best[i] = best[i - 1];
        best[i] = cur;
    }
    return nb;
}

/* Finds victims (mode 0) or reservation nodes (mode 1) for j whose
 * placement the real placement confirms.  On success fills plans[0..gang)
 * and returns the number of plans; 0 if none. */
static unsigned find_plan(struct cycle *cy, uint32_t slot, int owed, int mode, struct nplan *plans)
{
    tsched_sched_t *s = cy->s;
    struct sjob *j = &s->jobs[slot];
    if (build_index(cy) < 0 || ensure_tmp(cy, j->gang) < 0)
        return 0;
    unsigned want = j->gang > 1 ? j->gang : VERIFY_TRIES;
    struct nplan *best = calloc(want, sizeof *best);
    if (!best) {
        cy->nomem = 1;
        return 0;
    }
    unsigned nb = best_nodes(cy, j, owed, mode, best, want);
    unsigned found = 0;
    if (j->gang > 1) {
        /* one member per node: the gang cheapest nodes together */
        if (nb == j->gang) {
            long ng = gather(cy, best, nb);
            tsched_reason_t why;
            if (ng >= 0 && tsched_fits_without(s->c, s->p, &j->req, cy->gone, (size_t)ng, cy->tmp,
                                               &why) == 0) {
                memcpy(plans, best, nb * sizeof *best);
                found = nb;
            }
        }
    } else {
        for (unsigned i = 0; i < nb && !found; i++) {
            long ng = gather(cy, &best[i], 1);
            tsched_reason_t why;
            if (ng >= 0 && tsched_fits_without(s->c, s->p, &j->req, cy->gone, (size_t)ng, cy->tmp,
                                               &why) == 0) {
                plans[0] = best[i];
                found = 1;
            }
        }
    }
    free(best);
    return found;
}

/* Over-quota victims inside queue top's subtree (top an ancestor of j's
 * queue at its limit) until every queue on the path is back within its
 * limit with j in it.  They are marked J_VICTIM and their members released
 * from the cluster (the caller puts them back).  Returns the count, or -1
 * if not enough can be freed. */
static long limit_victims(struct cycle *cy, struct sjob *j, int top, uint32_t *out, size_t max)
{
    tsched_sched_t *s = cy->s;
    uint64_t excess[TSCHED_MAX_QUEUE_DEPTH + 1][NRES];
    int path[TSCHED_MAX_QUEUE_DEPTH + 1];
    int np = 0;
    for (int x = j->queue; x >= 0 && np <= TSCHED_MAX_QUEUE_DEPTH; x = s->q[x].parent) {
        path[np] = x;
        for (int d = 0; d < NRES; d++) {
            uint64_t want = s->q[x].cu[d] + j->res[d];
            excess[np][d] = s->q[x].lim[d] != TSCHED_UNLIMITED && want > s->q[x].lim[d]
                                ? want - s->q[x].lim[d]
                                : 0;
        }
        np++;
    }
    struct vcand *c = malloc(sizeof *c * (s->njobs ? s->njobs : 1));
    if (!c) {
        cy->nomem = 1;
        return -1;
    }
    size_t nc = 0;
    for (size_t i = 0; i < s->njobs; i++) {
        const struct sjob *v = &s->jobs[i];
        if (!v->live || v->state != J_RUNNING || tsched__np(v->cls, v->flags) || v->in_g ||
            v->queue == j->queue || cy->now - v->start < s->cfg.min_runtime)
            continue;
        int in = 0;
        for (int x = v->queue; x >= 0 && !in; x = s->q[x].parent)
            in = x == top;
        if (!in)
            continue;
        c[nc].slot = (uint32_t)i;
        c[nc].id = v->id;
        c[nc].band = 0;
        c[nc].prio = v->prio;
        c[nc].in_g = 0;
        c[nc].start = v->start;
        c[nc].lost = job_size(s, v) * ((v->flags & TSCHED_JOB_SUSPENDABLE) ? s->cfg.suspend_cost
                                                                           : cy->now - v->start);
        nc++;
    }
    qsort(c, nc, sizeof *c, vcand_qcmp);
    size_t n = 0;
    int done = 0;
    for (size_t i = 0; i < nc && !done && n < max; i++) {
        struct sjob *v = &s->jobs[c[i].slot];
        /* useful only if it lowers some remaining excess on the path */
        int useful = 0;
        for (int k = 0; k < np; k++) {
            int below = 0;
            for (int x = v->queue; x >= 0 && !below; x = s->q[x].parent)
                below = x == path[k];
            for (int d = 0; d < NRES && below; d++)
                useful |= excess[k][d] > 0 && v->res[d] > 0;
        }
        if (!useful)
            continue;
        for (int k = 0; k < np; k++) {
            int below = 0;
            for (int x = v->queue; x >= 0 && !below; x = s->q[x].parent)
                below = x == path[k];
            for (int d = 0; d < NRES && below; d++)
                excess[k][d] = excess[k][d] > v->res[d] ? excess[k][d] - v->res[d] : 0;
        }
        out[n++] = c[i].slot;
        done = 1;
        for (int k = 0; k < np; k++)
            for (int d = 0; d < NRES; d++)
                done &= excess[k][d] == 0;
    }
    free(c);
    if (!done)
        return -1;
    for (size_t i = 0; i < n; i++) {
        struct sjob *v = &s->jobs[out[i]];
        v->state = J_VICTIM;
        if (cy->vic)
            cy->vic[out[i]] = 1;
        (void)tsched_release(s->c, v->members, v->gang);
    }
    return (long)n;
}

/* Slot's job waits for victims now: finish_waits() gives it its reason (a job may be noted
 * twice). */
static int note_waiting(struct cycle *cy, uint32_t slot)
{
    tsched_sched_t *s = cy->s;
    if (grow((void **)&s->cyc_waiting, &s->cyc_waitcap, s->cyc_nwaiting + 1,
             sizeof *s->cyc_waiting) < 0) {
        cy->nomem = 1;
        return -1;
    }
    s->cyc_waiting[s->cyc_nwaiting++] = slot;
    return 0;
}

static int add_victim(struct cycle *cy, struct sjob *j, struct sjob *v)
{
    tsched_sched_t *s = cy->s;
    if (grow((void **)&s->victims, &s->vcap, s->nvictims + 1, sizeof *s->victims) < 0) {
        cy->nomem = 1;
        return -1;
    }
    v->state = J_VICTIM;
    if (cy->vic)
        cy->vic[v - s->jobs] = 1;
    v->for_job = j->id;
    unclaim(s, v);
    tsched_victim_t *tv = &s->victims[s->nvictims++];
    tv->job = v->id;
    tv->for_job = j->id;
    tv->action = v->flags & TSCHED_JOB_SUSPENDABLE ? TSCHED_SUSPEND : TSCHED_REQUEUE;
    if (!j->waiting++ && note_waiting(cy, (uint32_t)(j - s->jobs)) < 0)
        return -1;
    return 0;
}

/* Tries to make room for slot's job by preemption; 1 if a plan was made.
 * limit_top >= 0: the job is owed but queue limit_top (an ancestor) is at
 * its limit, so victims inside that subtree come first. */
static int plan_preemption(struct cycle *cy, uint32_t slot, int limit_top)
{
    tsched_sched_t *s = cy->s;
    struct sjob *j = &s->jobs[slot];
    int owed = tsched__owed(s, j, s->q[j->queue].cu);
    int q = j->queue;
    if (limit_top >= 0 && !owed)
        return 0;
    int cross = owed && cy->over_total > cy->over_q[q];
    int same = limit_top < 0 && cy->train_q[q] > 0 &&
               (tsched__band(j->cls) > 0 || cy->minprio_q[q] < j->prio);
    if (!cross && !same)
        return 0;
    uint32_t key = (uint32_t)owed | (limit_top >= 0 ? 2u + ((uint32_t)limit_top << 2) : 0);
    if (shape_lookup(cy, cy->pre_fail, slot, key, 1, 0))
        return 0;
    uint32_t lv[64];
    long nlv = 0;
    if (limit_top >= 0) {
        nlv = limit_victims(cy, j, limit_top, lv, sizeof lv / sizeof lv[0]);
        if (nlv < 0) {
            if (!cy->nomem)
                (void)shape_lookup(cy, cy->pre_fail, slot, key, 1, 1);
            return 0;
        }
    }
    struct nplan *plans = calloc(j->gang, sizeof *plans);
    unsigned np = 0;
    int ok = 0;
    if (!plans) {
        cy->nomem = 1;
    } else if (nlv > 0 && ensure_tmp(cy, j->gang) == 0 &&
               tsched_place(s->c, s->p, &j->req, cy->tmp, NULL) == 0) {
        ok = 1; /* the limit victims make room enough */
    } else if (!cy->nomem) {
        np = find_plan(cy, slot, owed, 0, plans);
        ok = np > 0;
    }
    /* the limit victims hold their resources until the caller stops them */
    for (long i = 0; i < nlv; i++) {
        struct sjob *v = &s->jobs[lv[i]];
        (void)tsched_commit(s->c, v->members, v->gang);
        v->state = J_RUNNING;
        if (cy->vic)
            cy->vic[lv[i]] = 0;
    }
    if (!ok) {
        free(plans);
        if (!cy->nomem)
            (void)shape_lookup(cy, cy->pre_fail, slot, key, 1, 1);
        return 0;
    }
    j->waiting = 0;
    for (long i = 0; i < nlv; i++)
        if (add_victim(cy, j, &s->jobs[lv[i]]) < 0)
            break;
    for (unsigned p = 0; p < np && !cy->nomem; p++)
        for (uint32_t i = 0; i < plans[p].nv; i++) {
            struct sjob *v = &s->jobs[plans[p].v[i]];
            if (v->state == J_RUNNING && add_victim(cy, j, v) < 0)
                break;
        }
    free(plans);
    claim(s, j);
    cy->plans++;
    return 1;
}

/* --- reservations ---------------------------------------------------------------- */

/* Holds what is free on node n for job for_job for the rest of the cycle. */
static int hold_node(struct cycle *cy, uint32_t n, uint64_t for_job)
{
    tsched_sched_t *s = cy->s;
    struct nfree f;
    if (tsched_node_free(s->c, n, &f.cpu, &f.mem, &f.ng, f.fm, f.fg) < 0)
        return 0;
    if (grow((void **)&cy->holds, &cy->hcap, cy->nholds + f.ng + 1, sizeof *cy->holds) < 0 ||
        grow((void **)&cy->hold_for, &cy->hfcap, cy->nholds + f.ng + 1, sizeof *cy->hold_for) < 0) {
        cy->nomem = 1;
        return -1;
    }
    for (unsigned g = 0; g <= f.ng; g++) {
        tsched_member_t m;
        memset(&m, 0, sizeof m);
        m.node = n;
        if (g < f.ng) {
            if (f.fm[g] == 0)
                continue;
            m.ngpus = 1;
            m.gpu[0] = (uint8_t)g;
            m.milli_gpu = f.fm[g];
            m.gpu_mem_bytes = f.fg[g];
        } else {
            m.cpu_milli = f.cpu;
            m.mem_bytes = f.mem;
        }
        if (tsched_commit(s->c, &m, 1) == 0) {
            cy->hold_for[cy->nholds] = for_job;
            cy->holds[cy->nholds++] = m;
        }
    }
    return 0;
}

static int reserve(struct cycle *cy, uint32_t slot)
{
    tsched_sched_t *s = cy->s;
    struct sjob *j = &s->jobs[slot];
    struct nplan *plans = calloc(j->gang, sizeof *plans);
    if (!plans) {
        cy->nomem = 1;
        return 0;
    }
    unsigned np = find_plan(cy, slot, 0, 1, plans);
    if (np) {
        j->rnodes = calloc(np, sizeof *j->rnodes);
        if (!j->rnodes) {
            cy->nomem = 1;
            np = 0;
        }
        for (unsigned i = 0; i < np; i++) {
            j->rnodes[i] = plans[i].node;
            (void)hold_node(cy, plans[i].node, j->id);
        }
        cy->nres += np > 0;
    }
    free(plans);
    return np > 0;
}

/* --- ordering ------------------------------------------------------------------- */

struct pkey {
    int queue;
    int band;
    int32_t prio;
    double arrival;
    uint64_t id;
    uint32_t slot;
};

static int pkey_cmp(const void *a, const void *b)
{
    const struct pkey *x = a, *y = b;
    if (x->queue != y->queue)
        return x->queue < y->queue ? -1 : 1;
    if (x->band != y->band)
        return x->band > y->band ? -1 : 1;
    if (x->prio != y->prio)
        return x->prio > y->prio ? -1 : 1;
    if (x->arrival != y->arrival)
        return x->arrival < y->arrival ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Marks the running jobs within their queue's guarantee (in_g): per queue, in the order of
 * tsched__run_cmp() (its running list), first fit into the guarantee. */
static int mark_guaranteed(tsched_sched_t *s)
{
    for (size_t qi = 0; qi < s->nq; qi++) {
        const struct squeue *q = &s->q[qi];
        const uint64_t *g = q->g;
        /* A queue that governs nothing is guaranteed nothing: all it runs is borrowed, and
         * reclaimable by a queue that is owed (the default queue before an admin gives it a
         * guarantee; before this, its jobs counted as guaranteed and were never reclaimed). */
        int governs = tsched__governs(g);
        uint64_t cum[NRES] = {0};
        for (size_t i = 0; i < q->nrun; i++) {
            struct sjob *j = &s->jobs[q->run[i]];
            j->in_g = governs && tsched__le(cum, j->res, g);
            j->size = job_size(s, j);
            if (j->in_g)
                for (int d = 0; d < NRES; d++)
                    cum[d] += j->res[d];
        }
    }
    return 0;
}

/* The leaf whose turn it is: from the top, the child with the smallest
 * fair-share key among those with jobs left; ties to the lower index. */
static int pick_leaf(tsched_sched_t *s)
{
    int at = -1;
    for (;;) {
        int best = -1;
        double bk = 0;
        for (size_t i = 0; i < s->nq; i++) {
            const struct squeue *q = &s->q[i];
            if (q->parent != at || q->left == 0)
                continue;
            double k = tsched__share(s, (int)i, q->cu);
            if (best < 0 || k < bk) {
                best = (int)i;
                bk = k;
            }
        }
        if (best < 0)
            return at;
        if (s->q[best].nchildren == 0)
            return best;
        at = best;
    }
}

static void take_left(tsched_sched_t *s, int q)
{
    for (int x = q; x >= 0; x = s->q[x].parent)
        s->q[x].left--;
}

/* Why j may not start now although it might fit: the first queue on its path (leaf first)
 * that a start would take beyond its limit (guarantee: beyond the guarantee that bounds
 * interactive and inference work), in which resource, by how much. */
static void wait_bounds(tsched_sched_t *s, struct sjob *j, int guarantee)
{
    tsched_wait_code_t code = guarantee ? TSCHED_WAIT_GUARANTEE_LIMIT : TSCHED_WAIT_QUEUE_LIMIT;
    const struct squeue *at = NULL;
    int res = 0, never = 0;
    uint64_t bound = 0, used = 0, want = 0;
    for (int x = j->queue; x >= 0 && !at; x = s->q[x].parent) {
        const struct squeue *q = &s->q[x];
        const uint64_t *u = guarantee ? q->cnp : q->lu, *b = guarantee ? q->g : q->lim;
        for (int d = 0; d < NRES; d++) {
            if (b[d] == TSCHED_UNLIMITED || u[d] + j->res[d] <= b[d] || j->res[d] == 0)
                continue;
            at = q;
            res = d;
            bound = b[d];
            used = u[d];
            want = j->res[d];
            never = b[d] > 0 && j->res[d] > b[d]; /* 0: closed for now */
            break;
        }
    }
    int32_t qi = at ? (int32_t)(at - s->q) : -1;
    /* The key of the reason in place, which this function wrote: the same bytes (the job's
     * request never changes), so neither written nor digested again.  This is what keeps a
     * cycle over thousands of jobs held by a queue's limit cheap (issue 15). */
    if (j->wait_bounds && j->wait.code == code && j->wb_queue == qi && j->wb_res == res &&
        j->wb_never == never && j->wb_bound == bound && j->wb_used == used && j->wb_want == want)
        return;
    tsched_wait_t *w = &j->wait;
    wait_dirty(s, j);
    tsched__wait_reset(w, code, &j->req);
    if (at) {
        copy_name(w->queue, at->name);
        w->res = res;
        w->bound = bound;
        w->used = used;
        w->want = want;
        w->never = never;
    }
    j->wait_bounds = 1;
    j->wb_queue = qi;
    j->wb_res = (int8_t)res;
    j->wb_never = (int8_t)never;
    j->wb_bound = bound;
    j->wb_used = used;
    j->wb_want = want;
}

/* j's turn ended held by a limit (kind 2) or by the guarantee that bounds non-preemptible
 * work (kind 1) with nothing changed and nothing else looked at: remembered for the next
 * turn. */
static void hold_turn(struct cycle *cy, const struct sjob *j, int kind)
{
    cy->held = kind;
    cy->held_queue = j->queue;
    cy->held_np = tsched__np(j->cls, j->flags);
    memcpy(cy->held_res, j->res, sizeof cy->held_res);
}

/* One job's turn. */
static void turn(struct cycle *cy, uint32_t slot)
{
    tsched_sched_t *s = cy->s;
    struct sjob *j = &s->jobs[slot];
    if (j->waiting) {
        /* its victims are being stopped: its claim is counted already */
        if (try_start(cy, slot)) {
            j->waiting = 0;
        }
        return;
    }
    int np = tsched__np(j->cls, j->flags);
    if (cy->held && cy->held_queue == j->queue && cy->held_np == np &&
        memcmp(cy->held_res, j->res, sizeof j->res) == 0) {
        /* the same turn as the job before it (struct cycle, held_*) */
        wait_bounds(s, j, cy->held == 1);
        return;
    }
    cy->held = 0;
    int top = -1;
    int adm = admissible(s, j, NULL, 1);
    if (adm <= 0)
        wait_bounds(s, j, adm == 0);
    if (adm == 0) {
        hold_turn(cy, j, 1);
        return;
    }
    if (adm < 0) {
        /* at a limit now; after the victims already chosen stop, too? */
        if (admissible(s, j, &top, 0) < 0 && cy->plans < s->cfg.max_plans) {
            if (!tsched__owed(s, j, s->q[j->queue].cu))
                hold_turn(cy, j, 2); /* plan_preemption() returns 0 at once */
            (void)plan_preemption(cy, slot, top);
        } else {
            hold_turn(cy, j, 2);
        }
        return;
    }
    if (try_start(cy, slot)) {
        claim(s, j);
        return;
    }
    if (cy->nomem)
        return;
    if (cy->plans < s->cfg.max_plans && plan_preemption(cy, slot, -1))
        return;
    if (!j->rnodes && cy->now - j->pend_since >= tsched__reserve_after(s, j->queue) &&
        cy->nres < s->cfg.max_reservations)
        (void)reserve(cy, slot);
}

/* Jobs named in a Priority reason, per kind of shortage (tsched_reason_t). */
struct ahead {
    uint64_t jobs[TSCHED_WAIT_JOBS];
    uint32_t n, more;
};

/* A 64-bit digest of a reason, to tell whether it changed since it was last reported; never 0.
 * A byte a step (FNV-1a) was the largest cost of a cycle over 16,000 pending jobs in tesseld
 * (each reason is some 330 bytes): now 32 bytes a step in four independent lanes, each word
 * through a 64-bit multiply-rotate round and the lanes merged and avalanched at the end, as in
 * xxHash64 (the constants are its primes). */
#define DG_P1 0x9e3779b185ebca87ull
#define DG_P2 0xc2b2ae3d27d4eb4full
#define DG_P3 0x165667b19e3779f9ull

static uint64_t dg_round(uint64_t acc, uint64_t x)
{
    acc += x * DG_P2;
    acc = (acc << 31) | (acc >> 33);
    return acc * DG_P1;
}

static uint64_t wait_digest(const tsched_wait_t *w)
{
    const unsigned char *b = (const unsigned char *)w;
    uint64_t v[4] = {DG_P1 + DG_P2, DG_P2, 0, 0 - DG_P1};
    size_t k = 0;
    for (; k + 32 <= sizeof *w; k += 32)
        for (int l = 0; l < 4; l++) {
            uint64_t x;
            memcpy(&x, b + k + 8 * (size_t)l, sizeof x);
            v[l] = dg_round(v[l], x);
        }
    uint64_t h = ((v[0] << 1) | (v[0] >> 63)) + ((v[1] << 7) | (v[1] >> 57)) +
                 ((v[2] << 12) | (v[2] >> 52)) + ((v[3] << 18) | (v[3] >> 46));
    for (int l = 0; l < 4; l++)
        h = (h ^ dg_round(0, v[l])) * DG_P1 + DG_P3;
    h += sizeof *w;
    for (; k + 8 <= sizeof *w; k += 8) {
        uint64_t x;
        memcpy(&x, b + k, sizeof x);
        h ^= dg_round(0, x);
        h = ((h << 27) | (h >> 37)) * DG_P1 + DG_P3;
    }
    for (; k < sizeof *w; k++) {
        h ^= b[k] * DG_P3;
        h = ((h << 11) | (h >> 53)) * DG_P1;
    }
    h ^= h >> 33;
    h *= DG_P2;
    h ^= h >> 29;
    h *= DG_P3;
    h ^= h >> 32;
    return h + (h == 0);
}

/* Empties the entries of the shape tables that the cycle filled (or, when they were not all
 * noted, the whole tables): every entry is empty between cycles, so that a cycle over thousands
 * of pending jobs does not clear tables sized for them (issue 15). */
static void tables_clean(tsched_sched_t *s)
{
    if (s->cyc_unclean) {
        if (s->cyc_fit)
            memset(s->cyc_fit, 0xff, s->cyc_fitcap * sizeof *s->cyc_fit);
        if (s->cyc_pre)
            memset(s->cyc_pre, 0xff, s->cyc_precap * sizeof *s->cyc_pre);
        s->cyc_unclean = 0;
    } else {
        for (size_t k = 0; k < s->cyc_nused; k++) {
            uint32_t u = s->cyc_used[k];
            struct shape_ent *t = u & 1 ? s->cyc_pre : s->cyc_fit;
            t[u / 2].slot = UINT32_MAX;
            t[u / 2].extra = UINT32_MAX;
        }
    }
    s->cyc_nused = 0;
}

static int slot_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* After the main loop: jobs waiting for victims say for which; a job short of room behind
 * jobs of its queue short of the same becomes Priority; then the list of changed reasons. */
static void finish_waits(struct cycle *cy)
{
    tsched_sched_t *s = cy->s;
    /* the jobs waiting for victims: those that were when the cycle began, and those that
     * planned in it (in any order: each is reset alone) */
    size_t nwaiting = 0;
    for (size_t i = 0; i < s->cyc_nwaiting; i++) {
        struct sjob *j = &s->jobs[s->cyc_waiting[i]];
        if (j->live && j->state == J_PENDING && j->waiting) {
            wait_dirty(s, j);
            tsched__wait_reset(&j->wait, TSCHED_WAIT_PREEMPTING, &j->req);
            copy_name(j->wait.queue, s->q[j->queue].name);
            nwaiting++;
        }
    }
    for (size_t i = 0; i < s->njobs && nwaiting; i++) {
        const struct sjob *v = &s->jobs[i];
        if (!v->live || v->state != J_VICTIM)
            continue;
        long ps = tsched__job_slot(s, v->for_job);
        struct sjob *j = ps >= 0 ? &s->jobs[ps] : NULL;
        if (!j || j->state != J_PENDING || !j->waiting)
            continue;
        if (v->queue != j->queue)
            j->wait.code = TSCHED_WAIT_GUARANTEE;
        tsched__wait_add_job(&j->wait, v->id); /* wait_dirty() above */
    }
    for (size_t qi = 0; qi < s->nq; qi++) {
        const struct squeue *q = &s->q[qi];
        /* Resources reasons come from try_start() alone (a job's turn rewrites its reason;
         * those waiting for victims are Preempting by now), so only a queue with a job that
         * tried can hold one, or a Priority reason */
        if (!q->tried)
            continue;
        struct ahead ah[TSCHED_BAD_REQUEST + 1];
        memset(ah, 0, sizeof ah);
        for (size_t k = 0; k < q->npend; k++) {
            struct sjob *j = &s->jobs[q->pend[k]];
            tsched_wait_t *w = &j->wait;
            if (j->state != J_PENDING || w->never || (unsigned)w->fit > TSCHED_BAD_REQUEST ||
                (w->code != TSCHED_WAIT_RESOURCES && w->code != TSCHED_WAIT_PRIORITY))
                continue;
            struct ahead *a = &ah[w->fit];
            if (a->n) {
                wait_dirty(s, j);
                w->code = TSCHED_WAIT_PRIORITY;
                memset(w->jobs, 0, sizeof w->jobs);
                memcpy(w->jobs, a->jobs, a->n * sizeof *a->jobs);
                w->njobs = a->n;
                w->more = a->more;
                copy_name(w->queue, q->name);
            }
            if (a->n < TSCHED_WAIT_JOBS)
                a->jobs[a->n++] = j->id;
            else
                a->more++;
        }
    }
    s->nwchanged = 0;
    /* The reasons written in this cycle (s->cyc_dirty), in slot order as a pass over every job
     * takes them; every job when the reasons were forgotten or a cycle failed (s->wait_rescan:
     * a reason written then was never digested), or when that is cheaper than a sort. */
    size_t nd = s->cyc_ndirty;
    int all = s->wait_rescan || nd > s->njobs / 8;
    if (!all)
        qsort(s->cyc_dirty, nd, sizeof *s->cyc_dirty, slot_cmp);
    for (size_t k = 0, n = all ? s->njobs : nd; k < n; k++) {
        struct sjob *j = &s->jobs[all ? k : s->cyc_dirty[k]];
        if (!j->live || j->state != J_PENDING || (j->wait_kept && j->wait_hash != 0) ||
            j->wait.code == TSCHED_WAIT_NONE)
            continue; /* kept: as digested into wait_hash, the digest would be the same */
        uint64_t h = wait_digest(&j->wait);
        if (h != j->wait_hash) {
            if (grow((void **)&s->wchanged, &s->wccap, s->nwchanged + 1, sizeof *s->wchanged) < 0) {
                cy->nomem = 1;
                return;
            }
            s->wchanged[s->nwchanged++] = j->id;
            j->wait_hash = h;
        }
        j->wait_kept = 1;
    }
    s->wait_rescan = 0;
}

int tsched_sched_cycle(tsched_sched_t *s, double now, tsched_decisions_t *d, tsl_error_t *err)
{
    if (!s || !d) {
        errno = EINVAL;
        return tsl_errprintf(err, "cycle: NULL argument");
    }
    tsched__advance(s, now);
    tsched__capacity(s);
    /* Every start and hold the cycle commits is released at its end; only victims leave the
     * cluster changed (their members released until the caller stops them). */
    uint64_t cgen = tsched__cluster_gen(s->c);
    s->nstarts = s->nm = s->nvictims = s->nwchanged = 0;
    for (size_t i = 0; i < s->cyc_ndirty; i++)
        s->jobs[s->cyc_dirty[i]].wait_listed = 0;
    s->cyc_ndirty = 0;
    memset(d, 0, sizeof *d);

    struct cycle cy;
    memset(&cy, 0, sizeof cy);
    cy.s = s;
    cy.now = s->now;
    size_t npend = 0, nrnodes = 0;
    struct pkey *pk = NULL;

    /* 1. bookkeeping, in one pass over the jobs (a pass is a cache miss a job: with 16,000
     * jobs held by a queue's limit the passes were most of a cycle).  Each job's own steps run
     * in the order of the separate passes they were; the victims' states a step reads are
     * their own, and claims and unclaims add up in any order. */
    for (size_t i = 0; i < s->nq; i++) {
        struct squeue *q = &s->q[i];
        memcpy(q->cu, q->used, sizeof q->cu);
        memcpy(q->lu, q->used, sizeof q->lu);
        memcpy(q->cnp, q->used_np, sizeof q->cnp);
        q->left = q->npend = q->head = 0;
        q->tried = 0;
    }
    s->cyc_nwaiting = 0;
    for (size_t i = 0; i < s->njobs; i++) {
        struct sjob *j = &s->jobs[i];
        if (!j->live)
            continue;
        if (j->state == J_VICTIM) {
            long ps = tsched__job_slot(s, j->for_job);
            if (ps < 0 || s->jobs[ps].state != J_PENDING || !s->jobs[ps].waiting)
                j->state = J_RUNNING; /* its preemptor started or left */
            else
                unclaim(s, j);
        }
        if (j->state != J_PENDING)
            continue;
        if (j->waiting) {
            claim(s, j);
            if (note_waiting(&cy, (uint32_t)i) < 0)
                goto out;
        }
        /* kept in the handle: no fresh pages each cycle */
        if (grow((void **)&s->cyc_pk, &s->cyc_pkcap, npend + 1, sizeof *pk) < 0) {
            cy.nomem = 1;
            goto out;
        }
        pk = s->cyc_pk;
        nrnodes += j->rnodes != NULL;
        pk[npend].queue = j->queue;
        pk[npend].band = tsched__band(j->cls);
        pk[npend].prio = j->prio;
        pk[npend].arrival = j->arrival;
        pk[npend].id = j->id;
        pk[npend].slot = (uint32_t)i;
        npend++;
    }
    cy.tcap = 256;
    while (cy.tcap < npend * 2)
        cy.tcap *= 2;
    size_t fitcap = s->cyc_fitcap, precap = s->cyc_precap;
    if (grow((void **)&s->cyc_fit, &s->cyc_fitcap, cy.tcap, sizeof *cy.fit_fail) < 0 ||
        grow((void **)&s->cyc_pre, &s->cyc_precap, cy.tcap, sizeof *cy.pre_fail) < 0) {
        s->cyc_unclean |= s->cyc_fitcap != fitcap || s->cyc_precap != precap;
        cy.nomem = 1;
        goto out;
    }
    /* empty between cycles (tables_clean()); grown: empty the whole of them */
    if (s->cyc_fitcap != fitcap || s->cyc_precap != precap)
        s->cyc_unclean = 1;
    if (s->cyc_unclean)
        tables_clean(s);
    if (grow((void **)&s->cyc_dirty, &s->cyc_dirtycap, npend ? npend : 1, sizeof *s->cyc_dirty) <
        0) {
        cy.nomem = 1;
        goto out;
    }
    cy.fit_fail = s->cyc_fit;
    cy.pre_fail = s->cyc_pre;
    /* Slot order is often the order already (jobs submitted in turn, no slot freed in between:
     * tesseld's holding queue under a stream of submissions); the same array as qsort's then,
     * as the order is total (ids differ), for one comparison a job instead of n log n. */
    size_t sorted = 1;
    while (sorted < npend && pkey_cmp(&pk[sorted - 1], &pk[sorted]) < 0)
        sorted++;
    if (sorted < npend)
        qsort(pk, npend, sizeof *pk, pkey_cmp);
    for (size_t i = 0; i < npend; i++) {
        struct squeue *q = &s->q[pk[i].queue];
        if (grow((void **)&q->pend, &q->pendcap, q->npend + 1, sizeof *q->pend) < 0) {
            cy.nomem = 1;
            goto out;
        }
        q->pend[q->npend++] = pk[i].slot;
        for (int x = pk[i].queue; x >= 0; x = s->q[x].parent)
            s->q[x].left++;
    }

    /* 2. within guarantee or over quota */
    if (mark_guaranteed(s) < 0) {
        cy.nomem = 1;
        goto out;
    }

    cy.over_q = calloc(s->nq ? s->nq : 1, sizeof *cy.over_q);
    cy.train_q = calloc(s->nq ? s->nq : 1, sizeof *cy.train_q);
    cy.minprio_q = calloc(s->nq ? s->nq : 1, sizeof *cy.minprio_q);
    if (!cy.over_q || !cy.train_q || !cy.minprio_q) {
        cy.nomem = 1;
        goto out;
    }
    /* the running jobs are those of the queues' running lists (counts and a least priority:
     * the order does not matter), not a pass over the pending ones too */
    for (size_t qi = 0; qi < s->nq; qi++)
        for (size_t k = 0; k < s->q[qi].nrun; k++) {
            const struct sjob *j = &s->jobs[s->q[qi].run[k]];
            if (!j->live || j->state != J_RUNNING || tsched__np(j->cls, j->flags) ||
                cy.now - j->start < s->cfg.min_runtime)
                continue;
            if (!cy.train_q[j->queue]++ || j->prio < cy.minprio_q[j->queue])
                cy.minprio_q[j->queue] = j->prio;
            if (!j->in_g) {
                cy.over_q[j->queue]++;
                cy.over_total++;
            }
        }

    /* 3. reservations, oldest first */
    size_t nr = 0;
    for (size_t i = 0; i < npend && nrnodes; i++)
        if (s->jobs[pk[i].slot].rnodes)
            pk[nr++] = pk[i];       /* pk is no longer needed in queue order */
    for (size_t a = 1; a < nr; a++) /* few: insertion sort by pend_since */
        for (size_t b = a;
             b > 0 && s->jobs[pk[b].slot].pend_since < s->jobs[pk[b - 1].slot].pend_since; b--) {
            struct pkey t = pk[b];
            pk[b] = pk[b - 1];
            pk[b - 1] = t;
        }
    size_t nturned = 0;
    for (size_t i = 0; i < nr; i++) {
        struct sjob *j = &s->jobs[pk[i].slot];
        if (j->waiting || admissible(s, j, NULL, 1) != 1) {
            free(j->rnodes); /* a plan or its limits decide now */
            j->rnodes = NULL;
            continue;
        }
        pk[nturned++] = pk[i];
        if (try_start(&cy, pk[i].slot)) {
            claim(s, j);
            free(j->rnodes);
            j->rnodes = NULL;
        } else if (cy.plans < s->cfg.max_plans && plan_preemption(&cy, pk[i].slot, -1)) {
            free(j->rnodes);
            j->rnodes = NULL;
        } else {
            for (uint32_t m = 0; m < j->gang; m++)
                (void)hold_node(&cy, j->rnodes[m], j->id);
            cy.nres++;
        }
    }
    /* reserved jobs had their turn: take them out of the ordering */
    for (size_t i = 0; i < s->nq && nturned; i++) {
        struct squeue *q = &s->q[i];
        size_t k = 0;
        for (size_t m = 0; m < q->npend; m++) {
            int had = 0;
            for (size_t r = 0; r < nturned && !had; r++)
                had = pk[r].slot == q->pend[m];
            if (had)
                take_left(s, (int)i);
            else
                q->pend[k++] = q->pend[m];
        }
        q->npend = k;
    }

    /* 4. the main loop.  After a turn that changed no queue's projected usage (a job held by
     * a limit, one that found no room) every fair-share key is as it was and the leaf still
     * has jobs left, so the descent would pick it again: it is not made again. */
    int leaf = -1;
    uint64_t gen = 0;
    while (!cy.nomem) {
        if (leaf < 0 || gen != s->cu_gen || s->q[leaf].left == 0)
            leaf = pick_leaf(s);
        if (leaf < 0)
            break;
        gen = s->cu_gen;
        struct squeue *q = &s->q[leaf];
        uint32_t slot = q->pend[q->head++];
        take_left(s, leaf);
        turn(&cy, slot);
    }
    if (!cy.nomem)
        finish_waits(&cy);

out:
    tables_clean(s);
    /* 5. the cluster as it was */
    for (size_t i = cy.nholds; i-- > 0;)
        (void)tsched_release(s->c, &cy.holds[i], 1);
    {
        size_t off = s->nm;
        for (size_t i = s->nstarts; i-- > 0;) {
            off -= s->starts[i].nmembers;
            (void)tsched_release(s->c, s->mbuf + off, s->starts[i].nmembers);
        }
    }
    if (!cy.nomem && s->nvictims == 0)
        tsched__cluster_gen_set(s->c, cgen); /* the cluster as it was */
    free(cy.holds);
    free(cy.hold_for);
    free(cy.low);
    free(cy.tmp);
    free(cy.gone);
    free(cy.over_q);
    free(cy.train_q);
    free(cy.minprio_q);
    if (cy.nomem) {
        s->wait_rescan = 1; /* reasons written in this cycle and never digested */
        /* nothing decided: victims chosen in this cycle run on */
        for (size_t i = 0; i < s->nvictims; i++) {
            long vs = tsched__job_slot(s, s->victims[i].job);
            if (vs >= 0 && s->jobs[vs].state == J_VICTIM)
                s->jobs[vs].state = J_RUNNING;
            long ps = tsched__job_slot(s, s->victims[i].for_job);
            if (ps >= 0)
                s->jobs[ps].waiting = 0;
        }
        s->nstarts = s->nm = s->nvictims = s->nwchanged = 0;
        errno = ENOMEM;
        return tsl_errprintf(err, "cycle: out of memory");
    }
    size_t off = 0;
    for (size_t i = 0; i < s->nstarts; i++) {
        s->starts[i].members = s->mbuf + off;
        off += s->starts[i].nmembers;
    }
    d->starts = s->starts;
    d->nstarts = s->nstarts;
    d->victims = s->victims;
    d->nvictims = s->nvictims;
    d->plans = cy.plans;
    /* every pending job holding a reservation had its turn in step 3 (kept: counted in nres,
     * or freed), and reserve() counts the new ones: no other job holds one */
    d->reserved = cy.nres;
    return 0;
}
