/* queue.c - the queue scheduler's state: queue tree, jobs, accounting and
 * the decaying usage history (see sched_queue.h and
 * docs/scheduler-queues.md).  The cycle itself is in cycle.c.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "queue_internal.h"

/* Defaults; docs/scheduler-queues.md gives the reasons at length. */
#define DEF_HALF_LIFE        3600.0 /* an hour: yesterday's hog is forgiven by tomorrow */
#define DEF_HISTORY_WEIGHT   0.5    /* now and the recent past count alike */
#define DEF_MIN_RUNTIME      60.0   /* start-up (image, model load) takes tens of s */
#define DEF_RESERVE_AFTER    900.0  /* 15 min: far beyond the trace's median job (540 s) */
#define DEF_MAX_RESERVATIONS 4      /* each holds a node or a gang of them idle */
#define DEF_MAX_PLANS        64     /* preemptions the caller carries out per tick */
#define DEF_SUSPEND_COST     30.0   /* save + restore of tens of GB over PCIe */

void tsched_sched_config_default(tsched_sched_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->half_life = DEF_HALF_LIFE;
    cfg->history_weight = DEF_HISTORY_WEIGHT;
    cfg->min_runtime = DEF_MIN_RUNTIME;
    cfg->reserve_after = DEF_RESERVE_AFTER;
    cfg->max_reservations = DEF_MAX_RESERVATIONS;
    cfg->max_plans = DEF_MAX_PLANS;
    cfg->suspend_cost = DEF_SUSPEND_COST;
}

static int bad(tsl_error_t *err, int e, const char *what)
{
    errno = e;
    return tsl_errprintf(err, "%s", what);
}

tsched_sched_t *tsched_sched_create(tsched_cluster_t *c, tsched_policy_t *p,
                                    const tsched_sched_config_t *cfg, tsl_error_t *err)
{
    tsched_sched_config_t def;
    if (!cfg) {
        tsched_sched_config_default(&def);
        cfg = &def;
    }
    if (!c || !p) {
        bad(err, EINVAL, "sched_create: NULL cluster or policy");
        return NULL;
    }
    if (!(cfg->half_life > 0) || !isfinite(cfg->half_life) || !(cfg->history_weight >= 0) ||
        !(cfg->history_weight <= 1) || !(cfg->min_runtime >= 0) || !(cfg->reserve_after >= 0) ||
        !(cfg->suspend_cost >= 0) ||
        (cfg->placement != TSCHED_PACK && cfg->placement != TSCHED_SPREAD)) {
        bad(err, EINVAL,
            "sched_create: bad setting (half_life > 0, history_weight in 0..1, "
            "times >= 0)");
        return NULL;
    }
    tsched_sched_t *s = calloc(1, sizeof *s);
    if (!s) {
        bad(err, ENOMEM, "sched_create: out of memory");
        return NULL;
    }
    s->c = c;
    s->p = p;
    s->cfg = *cfg;
    s->spread = tsched_policy_create("spread", err);
    if (!s->spread) {
        free(s);
        return NULL;
    }
    return s;
}

static void job_free(struct sjob *j)
{
    free((char *)j->req.models);
    free((char *)j->req.selector);
    free(j->members);
    free(j->rnodes);
    memset(j, 0, sizeof *j);
}

void tsched_sched_destroy(tsched_sched_t *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->njobs; i++)
        if (s->jobs[i].live)
            job_free(&s->jobs[i]);
    for (size_t i = 0; i < s->nq; i++) {
        free(s->q[i].pend);
        free(s->q[i].run);
    }
    free(s->q);
    free(s->jobs);
    free(s->freel);
    free(s->hkey);
    free(s->hval);
    free(s->starts);
    free(s->mbuf);
    free(s->victims);
    for (size_t i = 0; i < s->nrun_n; i++) {
        free(s->nrun[i].e);
        free(s->nrun[i].mem);
    }
    free(s->nrun);
    free(s->cyc_fit);
    free(s->cyc_pre);
    free(s->cyc_pk);
    free(s->cyc_waiting);
    free(s->cyc_used);
    free(s->cyc_dirty);
    free(s->jing);
    free(s->jcyc);
    free(s->jvic);
    tsched_policy_destroy(s->spread);
    free(s->wchanged);
    tsched__ms_free(s);
    free(s);
}

/* --- resources ----------------------------------------------------------- */

static void res_arr(const tsched_res_t *r, uint64_t a[NRES])
{
    a[0] = r->milli_gpu;
    a[1] = r->gpu_mem_bytes;
    a[2] = r->cpu_milli;
    a[3] = r->mem_bytes;
    a[R_NGPU] = TSCHED_UNLIMITED; /* set apart: ngpu_limit */
}

static tsched_res_t arr_res(const uint64_t a[NRES])
{
    tsched_res_t r = {a[0], a[1], a[2], a[3]};
    return r;
}

void tsched__job_res(const tsched_job_t *req, uint64_t res[NRES])
{
    uint64_t gang = req->gang ? req->gang : 1;
    uint64_t milli = req->ngpus == 0                         ? 0
                     : req->ngpus > 1 || req->milli_gpu == 0 ? TSCHED_MILLI
                                                             : req->milli_gpu;
    res[0] = gang * req->ngpus * milli;
    res[1] = gang * req->ngpus * (req->ngpus ? req->gpu_mem_bytes : 0);
    res[2] = gang * req->cpu_milli;
    res[3] = gang * req->mem_bytes;
    res[R_NGPU] = res[0]; /* at the reference speed; the callers that know the cluster correct it */
}

/* milli-GPU m on a GPU of speed v, in normalised milli-GPU. */
static uint64_t norm(uint64_t m, uint32_t v)
{
    return (m * v + TSCHED_MILLI - 1) / TSCHED_MILLI;
}

uint64_t tsched__ngpu_at(const tsched_job_t *req, uint32_t speed)
{
    uint64_t gang = req->gang ? req->gang : 1;
    uint64_t milli = req->ngpus == 0                         ? 0
                     : req->ngpus > 1 || req->milli_gpu == 0 ? TSCHED_MILLI
                                                             : req->milli_gpu;
    return gang * req->ngpus * norm(milli, speed);
}

uint64_t tsched__ngpu_held(const tsched_cluster_t *c, const tsched_member_t *m, size_t n)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++)
        for (uint32_t g = 0; g < m[i].ngpus; g++) {
            uint32_t v = tsched_gpu_speed(c, m[i].node, m[i].gpu[g]);
            sum += norm(m[i].milli_gpu, v ? v : TSCHED_MILLI);
        }
    return sum;
}

int tsched__le(const uint64_t *used, const uint64_t *add, const uint64_t *cap)
{
    for (int d = 0; d < NRES; d++) {
        if (cap[d] == TSCHED_UNLIMITED)
            continue;
        if (used[d] > cap[d] || add[d] > cap[d] - used[d])
            return 0;
    }
    return 1;
}

int tsched__governs(const uint64_t *g)
{
    for (int d = 0; d < NRES; d++)
        if (g[d] != TSCHED_UNLIMITED)
            return 1;
    return 0;
}

int tsched__np(tsched_class_t cls, unsigned flags)
{
    return cls != TSCHED_CLASS_TRAINING || (flags & TSCHED_JOB_NEVER_PREEMPT);
}

int tsched__band(tsched_class_t cls)
{
    return cls == TSCHED_CLASS_INFERENCE ? 2 : cls == TSCHED_CLASS_TRAINING ? 0 : 1;
}

int tsched__owed(const tsched_sched_t *s, const struct sjob *j, const uint64_t *u)
{
    const struct squeue *q = &s->q[j->queue];
    int asks = 0;
    for (int d = 0; d < NRES; d++)
        if (q->g[d] != TSCHED_UNLIMITED && q->g[d] > 0 && j->res[d] > 0)
            asks = 1;
    return asks && tsched__le(u, j->res, q->g);
}

/* --- usage history -------------------------------------------------------- */

/* Exponential decay with half-life h: for a usage u held constant since the
 * last update, hist <- hist * f + u * (1 - f), f = 2^(-dt/h). */
static void advance_q(tsched_sched_t *s, struct squeue *q, double now)
{
    double dt = now - q->hist_t;
    if (dt <= 0)
        return;
    double f = exp2(-dt / s->cfg.half_life);
    for (int d = 0; d < NRES; d++)
        q->hist[d] = q->hist[d] * f + (double)q->used[d] * (1 - f);
    q->hist_t = now;
}

void tsched__advance(tsched_sched_t *s, double now)
{
    if (now > s->now || s->now == 0) /* time never goes back */
        s->now = now;
    for (size_t i = 0; i < s->nq; i++)
        advance_q(s, &s->q[i], s->now);
}

/* --- queues ------------------------------------------------------------- */

int tsched_queue_find(const tsched_sched_t *s, const char *name)
{
    for (size_t i = 0; s && name && i < s->nq; i++)
        if (strcmp(s->q[i].name, name) == 0)
            return (int)i;
    errno = ENOENT;
    return -1;
}

size_t tsched_queue_count(const tsched_sched_t *s)
{
    return s->nq;
}

/* Sum of the guarantees of parent's children in dimension d, leaving out
 * queue skip and adding add; TSCHED_UNLIMITED if any is ungoverned. */
static uint64_t children_sum(const tsched_sched_t *s, int parent, int skip, int d, uint64_t add)
{
    uint64_t sum = add;
    for (size_t i = 0; i < s->nq && sum != TSCHED_UNLIMITED; i++) {
        if (s->q[i].parent != parent || (int)i == skip)
            continue;
        uint64_t v = s->q[i].g[d];
        sum = v == TSCHED_UNLIMITED || v > UINT64_MAX - sum ? TSCHED_UNLIMITED : sum + v;
    }
    return sum;
}

/* The amount rules, the one implementation of them (tesseld's API asks it through
 * tsched_queue_check): guarantee within the limit; under a parent that governs a resource, a
 * child says what it gets of it, and the siblings' guarantees fit within the parent's; a
 * queue's own children fit within its new guarantee (self: the queue's own index, -1 for a
 * new one).  Fills *f (rule, resource, amounts) on failure. */
static int check_amounts(const tsched_sched_t *s, const char *name, int parent, int self,
                         const uint64_t *g, const uint64_t *lim, tsched_qfault_t *f,
                         tsl_error_t *err)
{
    for (int d = 0; d < NRES; d++) {
        f->res = d;
        if (g[d] != TSCHED_UNLIMITED && lim[d] != TSCHED_UNLIMITED && g[d] > lim[d]) {
            f->rule = TSCHED_QF_ABOVE_LIMIT;
            f->amount = g[d];
            f->bound = lim[d];
            errno = EINVAL;
            return tsl_errprintf(err, "queue %s: guarantee above limit", name);
        }
        if (parent >= 0 && s->q[parent].g[d] != TSCHED_UNLIMITED) {
            f->queue = parent;
            f->bound = s->q[parent].g[d];
            if (g[d] == TSCHED_UNLIMITED) {
                f->rule = TSCHED_QF_UNGOVERNED_CHILD;
                errno = EINVAL;
                return tsl_errprintf(err,
                                     "queue %s: %s governs this resource: say how much of it "
                                     "the queue gets",
                                     name, s->q[parent].name);
            }
            uint64_t sum = children_sum(s, parent, self, d, g[d]);
            if (sum > s->q[parent].g[d]) {
                f->rule = TSCHED_QF_PARENT_SUM;
                f->amount = sum;
                errno = EINVAL;
                return tsl_errprintf(err, "queue %s: children's guarantees exceed %s's", name,
                                     s->q[parent].name);
            }
        }
        if (self >= 0 && s->q[self].nchildren && g[d] != TSCHED_UNLIMITED) {
            for (size_t i = 0; i < s->nq; i++)
                if (s->q[i].parent == self && s->q[i].g[d] == TSCHED_UNLIMITED) {
                    f->rule = TSCHED_QF_CHILD_UNGOVERNED;
                    f->queue = (int)i;
                    errno = EINVAL;
                    return tsl_errprintf(err, "queue %s: child %s does not govern this resource",
                                         name, s->q[i].name);
                }
            uint64_t sum = children_sum(s, self, -1, d, 0);
            if (sum > g[d]) {
                f->rule = TSCHED_QF_CHILDREN_SUM;
                f->amount = sum;
                f->bound = g[d];
                errno = EINVAL;
                return tsl_errprintf(err, "queue %s: its children's guarantees exceed the new one",
                                     name);
            }
        }
    }
    f->rule = TSCHED_QF_OK;
    return 0;
}

static int check_options(const char *name, unsigned own, double reserve_after,
                         tsched_placement_t placement, tsl_error_t *err)
{
    if ((own &
         ~(unsigned)(TSCHED_OWN_RESERVE_AFTER | TSCHED_OWN_PLACEMENT | TSCHED_OWN_NGPU_LIMIT)) ||
        ((own & TSCHED_OWN_RESERVE_AFTER) && !(reserve_after >= 0 && isfinite(reserve_after))) ||
        ((own & TSCHED_OWN_PLACEMENT) && placement != TSCHED_PACK && placement != TSCHED_SPREAD)) {
        errno = EINVAL;
        return tsl_errprintf(err,
                             "queue %s: bad option (reserve_after >= 0 s, placement pack "
                             "or spread)",
                             name);
    }
    return 0;
}

static void set_options(struct squeue *q, unsigned own, double reserve_after,
                        tsched_placement_t placement)
{
    q->own = own;
    q->reserve_after = own & TSCHED_OWN_RESERVE_AFTER ? reserve_after : 0;
    q->placement = own & TSCHED_OWN_PLACEMENT ? placement : TSCHED_PACK;
}

double tsched__reserve_after(const tsched_sched_t *s, int q)
{
    for (int x = q; x >= 0; x = s->q[x].parent)
        if (s->q[x].own & TSCHED_OWN_RESERVE_AFTER)
            return s->q[x].reserve_after;
    return s->cfg.reserve_after;
}

tsched_placement_t tsched__placement(const tsched_sched_t *s, int q)
{
    for (int x = q; x >= 0; x = s->q[x].parent)
        if (s->q[x].own & TSCHED_OWN_PLACEMENT)
            return s->q[x].placement;
    return s->cfg.placement;
}

int tsched_queue_set_options(tsched_sched_t *s, int q, unsigned own, double reserve_after,
                             tsched_placement_t placement, tsl_error_t *err)
{
    if (!s || q < 0 || (size_t)q >= s->nq) {
        errno = EINVAL;
        return tsl_errprintf(err, "queue_set_options: bad queue");
    }
    if (check_options(s->q[q].name, own, reserve_after, placement, err) < 0)
        return -1;
    set_options(&s->q[q], own, reserve_after, placement);
    tsched__changed(s);
    return 0;
}

/* Every rule a queue must follow against the others (self: its index, -1 for a new one);
 * *parent, *depth: where it goes. */
static int check_spec(const tsched_sched_t *s, const tsched_queue_spec_t *spec, int self,
                      int *parent_out, unsigned *depth_out, tsched_qfault_t *f, tsl_error_t *err)
{
    memset(f, 0, sizeof *f);
    f->queue = -1;
    if (!s || !spec || !spec->name || !*spec->name || strlen(spec->name) >= TSCHED_NAME_MAX) {
        f->rule = TSCHED_QF_NAME;
        errno = EINVAL;
        return tsl_errprintf(err, "queue: name missing or longer than %d bytes",
                             TSCHED_NAME_MAX - 1);
    }
    int found = tsched_queue_find(s, spec->name);
    if (self < 0 && found >= 0) {
        f->rule = TSCHED_QF_NAME;
        f->queue = found;
        errno = EINVAL;
        return tsl_errprintf(err, "queue %s: name taken", spec->name);
    }
    int parent = -1;
    unsigned depth = 1;
    if (spec->parent && *spec->parent) {
        parent = tsched_queue_find(s, spec->parent);
        if (parent < 0 || parent == self) {
            f->rule = TSCHED_QF_NO_PARENT;
            errno = EINVAL;
            return tsl_errprintf(err, "queue %s: no parent queue %.64s", spec->name, spec->parent);
        }
        depth = s->q[parent].depth + 1;
    }
    f->queue = parent;
    if (depth > TSCHED_MAX_QUEUE_DEPTH) {
        f->rule = TSCHED_QF_DEPTH;
        f->amount = depth;
        f->bound = TSCHED_MAX_QUEUE_DEPTH;
        errno = EINVAL;
        return tsl_errprintf(err, "queue %s: deeper than %d levels", spec->name,
                             TSCHED_MAX_QUEUE_DEPTH);
    }
    if (self < 0 && parent >= 0 && s->q[parent].njobs) {
        f->rule = TSCHED_QF_PARENT_HAS_JOBS;
        errno = EINVAL;
        return tsl_errprintf(err, "queue %s: parent %s holds jobs", spec->name, s->q[parent].name);
    }
    uint64_t g[NRES], lim[NRES];
    res_arr(&spec->guarantee, g);
    res_arr(&spec->limit, lim);
    if (check_amounts(s, spec->name, parent, self, g, lim, f, err) < 0)
        return -1;
    if (check_options(spec->name, spec->own, spec->reserve_after, spec->placement, err) < 0) {
        f->rule = TSCHED_QF_OPTION;
        return -1;
    }
    *parent_out = parent;
    *depth_out = depth;
    return 0;
}

int tsched_queue_check(const tsched_sched_t *s, const tsched_queue_spec_t *spec, int self,
                       tsched_qfault_t *fault, tsl_error_t *err)
{
    tsched_qfault_t dummy;
    if (!fault)
        fault = &dummy;
    if (s && (self < -1 || (self >= 0 && (size_t)self >= s->nq))) {
        memset(fault, 0, sizeof *fault);
        fault->rule = TSCHED_QF_NAME;
        errno = EINVAL;
        return tsl_errprintf(err, "queue_check: bad queue index %d", self);
    }
    int parent;
    unsigned depth;
    return check_spec(s, spec, self, &parent, &depth, fault, err);
}

int tsched_queue_add(tsched_sched_t *s, const tsched_queue_spec_t *spec, tsl_error_t *err)
{
    tsched_qfault_t f;
    int parent;
    unsigned depth;
    if (check_spec(s, spec, -1, &parent, &depth, &f, err) < 0)
        return -1;
    uint64_t g[NRES], lim[NRES];
    res_arr(&spec->guarantee, g);
    res_arr(&spec->limit, lim);
    if (spec->own & TSCHED_OWN_NGPU_LIMIT)
        lim[R_NGPU] = spec->ngpu_limit;
    if (s->nq == s->qcap) {
        size_t cap = s->qcap ? s->qcap * 2 : 8;
        struct squeue *nq = realloc(s->q, cap * sizeof *nq);
        if (!nq) {
            errno = ENOMEM;
            return tsl_errprintf(err, "queue: out of memory");
        }
        s->q = nq;
        s->qcap = cap;
    }
    struct squeue *q = &s->q[s->nq];
    memset(q, 0, sizeof *q);
    strcpy(q->name, spec->name);
    q->parent = parent;
    q->depth = depth;
    memcpy(q->g, g, sizeof g);
    memcpy(q->lim, lim, sizeof lim);
    q->weight = spec->weight ? spec->weight : 1;
    set_options(q, spec->own, spec->reserve_after, spec->placement);
    q->hist_t = s->now;
    if (parent >= 0)
        s->q[parent].nchildren++;
    tsched__changed(s);
    return (int)s->nq++;
}

int tsched_queue_update(tsched_sched_t *s, int q, const tsched_res_t *guarantee,
                        const tsched_res_t *limit, uint32_t weight, tsl_error_t *err)
{
    if (!s || q < 0 || (size_t)q >= s->nq || !guarantee || !limit) {
        errno = EINVAL;
        return tsl_errprintf(err, "queue_update: bad queue or NULL argument");
    }
    struct squeue *qq = &s->q[q];
    uint64_t g[NRES], lim[NRES];
    res_arr(guarantee, g);
    res_arr(limit, lim);
    lim[R_NGPU] = qq->lim[R_NGPU];
    tsched_qfault_t f;
    if (check_amounts(s, qq->name, qq->parent, q, g, lim, &f, err) < 0)
        return -1;
    memcpy(qq->g, g, sizeof g);
    memcpy(qq->lim, lim, sizeof lim);
    qq->weight = weight ? weight : 1;
    tsched__changed(s);
    return 0;
}

int tsched_queue_set_ngpu_limit(tsched_sched_t *s, int q, uint64_t ngpu_limit, tsl_error_t *err)
{
    if (!s || q < 0 || (size_t)q >= s->nq) {
        errno = EINVAL;
        return tsl_errprintf(err, "queue_set_ngpu_limit: bad queue");
    }
    s->q[q].lim[R_NGPU] = ngpu_limit;
    tsched__changed(s);
    return 0;
}

int tsched_queue_satisfied(const tsched_sched_t *s, int q)
{
    if (!s || q < 0 || (size_t)q >= s->nq) {
        errno = EINVAL;
        return -1;
    }
    if (s->q[q].npending == 0)
        return 1;
    /* Only a job of a queue with a guarantee above 0 can be owed (tsched__owed): without such a
     * queue in the subtree the answer needs no pass over the pending jobs (tesseld asks after
     * every cycle, for every queue, with thousands of jobs held by a limit; issue 15). */
    int owes = 0;
    for (size_t i = 0; i < s->nq && !owes; i++) {
        int gives = 0;
        for (int d = 0; d < NRES; d++)
            gives |= s->q[i].g[d] != TSCHED_UNLIMITED && s->q[i].g[d] > 0;
        for (int x = (int)i; x >= 0 && gives && !owes; x = s->q[x].parent)
            owes = x == q;
    }
    if (!owes)
        return 1;
    for (size_t i = 0; i < s->njobs; i++) {
        const struct sjob *j = &s->jobs[i];
        if (!j->live || j->state != J_PENDING)
            continue;
        /* in q's subtree? */
        int in = 0;
        for (int x = j->queue; x >= 0 && !in; x = s->q[x].parent)
            in = x == q;
        if (in && tsched__owed(s, j, s->q[j->queue].used))
            return 0;
    }
    return 1;
}

int tsched_queue_stat(tsched_sched_t *s, int q, double now, tsched_queue_stat_t *st)
{
    if (!s || !st || q < 0 || (size_t)q >= s->nq) {
        errno = EINVAL;
        return -1;
    }
    tsched__advance(s, now);
    const struct squeue *qq = &s->q[q];
    memset(st, 0, sizeof *st);
    st->name = qq->name;
    st->parent = qq->parent;
    st->guarantee = arr_res(qq->g);
    st->limit = arr_res(qq->lim);
    st->used = arr_res(qq->used);
    st->demand = arr_res(qq->demand);
    st->running = qq->nrunning;
    st->pending = qq->npending;
    st->own = qq->own;
    st->reserve_after = tsched__reserve_after(s, q);
    st->placement = tsched__placement(s, q);
    st->ngpu_limit = qq->lim[R_NGPU];
    st->ngpu_used = qq->used[R_NGPU];
    tsched__capacity(s);
    st->share = tsched__share(s, q, qq->used);
    return 0;
}

/* --- the id table ----------------------------------------------------------- */

#define H_DEL UINT32_MAX

static size_t hslot(uint64_t id, size_t cap)
{
    id ^= id >> 33;
    id *= 0xff51afd7ed558ccdull;
    id ^= id >> 33;
    return (size_t)id & (cap - 1);
}

long tsched__job_slot(const tsched_sched_t *s, uint64_t id)
{
    if (!s->hcap)
        return -1;
    for (size_t h = hslot(id, s->hcap);; h = (h + 1) & (s->hcap - 1)) {
        uint32_t v = s->hval[h];
        if (v == 0)
            return -1;
        if (v != H_DEL && s->hkey[h] == id)
            return (long)v - 1;
    }
}

static void hput(tsched_sched_t *s, uint64_t id, uint32_t slot)
{
    size_t h = hslot(id, s->hcap);
    while (s->hval[h] != 0 && s->hval[h] != H_DEL)
        h = (h + 1) & (s->hcap - 1);
    if (s->hval[h] == 0)
        s->hused++;
    s->hkey[h] = id;
    s->hval[h] = slot + 1;
}

static void hdel(tsched_sched_t *s, uint64_t id)
{
    for (size_t h = hslot(id, s->hcap);; h = (h + 1) & (s->hcap - 1)) {
        if (s->hval[h] == 0)
            return;
        if (s->hval[h] != H_DEL && s->hkey[h] == id) {
            s->hval[h] = H_DEL;
            return;
        }
    }
}

/* Room for one more id: rebuild at half load (deleted slots included). */
static int hreserve(tsched_sched_t *s)
{
    if (s->hcap && (s->hused + 1) * 2 <= s->hcap)
        return 0;
    size_t live = 0;
    for (size_t i = 0; i < s->hcap; i++)
        live += s->hval[i] != 0 && s->hval[i] != H_DEL;
    size_t cap = 64;
    while (cap < (live + 1) * 4)
        cap *= 2;
    uint64_t *k = calloc(cap, sizeof *k);
    uint32_t *v = calloc(cap, sizeof *v);
    if (!k || !v) {
        free(k);
        free(v);
        return -1;
    }
    uint64_t *ok = s->hkey;
    uint32_t *ov = s->hval;
    size_t ocap = s->hcap;
    s->hkey = k;
    s->hval = v;
    s->hcap = cap;
    s->hused = 0;
    for (size_t i = 0; i < ocap; i++)
        if (ov[i] != 0 && ov[i] != H_DEL)
            hput(s, ok[i], ov[i] - 1);
    free(ok);
    free(ov);
    return 0;
}

/* --- jobs --------------------------------------------------------------------- */

static void add_up(tsched_sched_t *s, int q, uint64_t *(*field)(struct squeue *),
                   const uint64_t *res, int sign)
{
    for (int x = q; x >= 0; x = s->q[x].parent) {
        uint64_t *f = field(&s->q[x]);
        for (int d = 0; d < NRES; d++)
            f[d] = sign > 0 ? f[d] + res[d] : f[d] - res[d];
    }
}

static uint64_t *f_used(struct squeue *q)
{
    return q->used;
}

static uint64_t *f_np(struct squeue *q)
{
    return q->used_np;
}

static uint64_t *f_demand(struct squeue *q)
{
    return q->demand;
}

static void count_up(tsched_sched_t *s, int q, int running, int pending)
{
    for (int x = q; x >= 0; x = s->q[x].parent) {
        s->q[x].nrunning += (size_t)(long)running;
        s->q[x].npending += (size_t)(long)pending;
    }
}

static char *dup_or_null(const char *str, int *fail)
{
    if (!str || !*str)
        return NULL;
    char *d = strdup(str);
    if (!d)
        *fail = 1;
    return d;
}

/* Adds a pending job; np_fits: whether a non-preemptible job must fit within its queues'
 * guarantees (a submission), or not (a job already running, tsched_job_adopt). */
static int job_add(tsched_sched_t *s, const tsched_qjob_t *job, bool np_fits, tsl_error_t *err)
{
    if (!s || !job) {
        errno = EINVAL;
        return tsl_errprintf(err, "submit: NULL argument");
    }
    if (tsched__job_slot(s, job->id) >= 0) {
        errno = EEXIST;
        return tsl_errprintf(err, "job %llu: id in use", (unsigned long long)job->id);
    }
    if (job->queue < 0 || (size_t)job->queue >= s->nq || s->q[job->queue].nchildren) {
        errno = EINVAL;
        return tsl_errprintf(err, "job %llu: queue %d is not a leaf queue",
                             (unsigned long long)job->id, job->queue);
    }
    if ((unsigned)job->cls > TSCHED_CLASS_INFERENCE) {
        errno = EINVAL;
        return tsl_errprintf(err, "job %llu: bad class %d", (unsigned long long)job->id,
                             (int)job->cls);
    }
    const tsched_job_t *r = &job->req;
    if (r->ngpus > TSCHED_MAX_NODE_GPUS || (r->ngpus == 1 && r->milli_gpu > TSCHED_MILLI) ||
        !isfinite(job->arrival)) {
        errno = EINVAL;
        return tsl_errprintf(err, "job %llu: bad request", (unsigned long long)job->id);
    }
    uint64_t res[NRES];
    tsched__job_res(r, res);
    res[R_NGPU] = tsched__ngpu_at(r, tsched_job_top_speed(s->c, r));
    if (np_fits && tsched__np(job->cls, job->flags)) {
        static const uint64_t zero[NRES];
        for (int x = job->queue; x >= 0; x = s->q[x].parent)
            if (!tsched__le(zero, res, s->q[x].g)) {
                errno = EINVAL;
                return tsl_errprintf(err,
                                     "job %llu: a non-preemptible job must fit within the "
                                     "guarantee of queue %s",
                                     (unsigned long long)job->id, s->q[x].name);
            }
    }
    if (s->nfree == 0 && s->njobs == s->jcap) {
        size_t cap = s->jcap ? s->jcap * 2 : 64;
        struct sjob *nj = realloc(s->jobs, cap * sizeof *nj);
        if (!nj)
            goto nomem;
        s->jobs = nj;
        uint32_t *nf = realloc(s->freel, cap * sizeof *nf);
        if (!nf)
            goto nomem;
        s->freel = nf;
        s->jcap = cap;
    }
    if (hreserve(s) < 0)
        goto nomem;
    int fail = 0;
    char *models = dup_or_null(r->models, &fail);
    char *sel = dup_or_null(r->selector, &fail);
    uint32_t gang = r->gang ? r->gang : 1;
    tsched_member_t *members = calloc(gang, sizeof *members);
    if (fail || !members) {
        free(models);
        free(sel);
        free(members);
        goto nomem;
    }
    uint32_t slot = s->nfree ? s->freel[--s->nfree] : (uint32_t)s->njobs++;
    struct sjob *j = &s->jobs[slot];
    memset(j, 0, sizeof *j);
    j->id = job->id;
    j->queue = job->queue;
    j->cls = job->cls;
    j->prio = job->priority;
    j->flags = job->flags;
    j->arrival = job->arrival;
    j->pend_since = job->arrival;
    j->req = *r;
    j->req.models = models;
    j->req.selector = sel;
    j->req.gang = gang;
    memcpy(j->res, res, sizeof res);
    j->state = J_PENDING;
    j->members = members;
    j->gang = gang;
    j->live = 1;
    j->sub_pre = s->gen;
    j->sub_post = s->gen = tsched__gen_submit(s, j);
    hput(s, j->id, slot);
    s->q[j->queue].njobs++;
    add_up(s, j->queue, f_demand, res, 1);
    count_up(s, j->queue, 0, 1);
    return 0;
nomem:
    errno = ENOMEM;
    return tsl_errprintf(err, "submit: out of memory");
}

int tsched_job_submit(tsched_sched_t *s, const tsched_qjob_t *job, tsl_error_t *err)
{
    return job_add(s, job, true, err);
}

int tsched_job_readd(tsched_sched_t *s, const tsched_qjob_t *job, tsl_error_t *err)
{
    return job_add(s, job, false, err);
}

int tsched_job_adopt(tsched_sched_t *s, const tsched_qjob_t *job, const tsched_member_t *members,
                     size_t n, double now, tsl_error_t *err)
{
    if (job_add(s, job, false, err) < 0)
        return -1;
    if (tsched_job_started(s, job->id, members, n, now) < 0) {
        int e = errno;
        tsched_job_remove(s, job->id, now);
        errno = e;
        return tsl_errprintf(err, "job %llu: %s", (unsigned long long)job->id,
                             e == ENOSPC ? "its GPUs cannot take it (no room, or no such GPU)"
                                         : strerror(e));
    }
    return 0;
}

/* --- running members by node --------------------------------------------------- */

/* Makes room for the members of a job about to start in the node lists, so that
 * nrun_add() cannot fail.  -1 (ENOMEM) with nothing visible changed. */
static int nrun_reserve(tsched_sched_t *s, const tsched_member_t *members, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        uint32_t node = members[k].node;
        if (node >= s->nrun_n) {
            size_t cap = s->nrun_n ? s->nrun_n : 64;
            while (cap <= node)
                cap *= 2;
            struct nrun *nr = realloc(s->nrun, cap * sizeof *nr);
            if (!nr)
                goto nomem;
            memset(nr + s->nrun_n, 0, (cap - s->nrun_n) * sizeof *nr);
            s->nrun = nr;
            s->nrun_n = cap;
        }
        struct nrun *r = &s->nrun[node];
        uint32_t want = r->n + 1;
        for (size_t i = 0; i < k; i++) /* members of this job before k on the same node */
            want += members[i].node == node;
        if (want > r->cap) {
            uint32_t cap = r->cap ? r->cap * 2 : 8;
            while (cap < want)
                cap *= 2;
            struct nrun_ent *e = realloc(r->e, cap * sizeof *e);
            if (e)
                r->e = e;
            tsched_member_t *mem = realloc(r->mem, cap * sizeof *mem);
            if (mem)
                r->mem = mem;
            if (!e || !mem)
                goto nomem; /* r->cap stays what both hold */
            r->cap = cap;
        }
    }
    return 0;
nomem:
    errno = ENOMEM;
    return -1;
}

int tsched__run_cmp(const struct sjob *x, const struct sjob *y)
{
    int xn = tsched__np(x->cls, x->flags), yn = tsched__np(y->cls, y->flags);
    if (xn != yn)
        return xn > yn ? -1 : 1;
    int xb = tsched__band(x->cls), yb = tsched__band(y->cls);
    if (xb != yb)
        return xb > yb ? -1 : 1;
    if (x->prio != y->prio)
        return x->prio > y->prio ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* First position in queue q's running list not before job slot (its place). */
static size_t run_pos(const tsched_sched_t *s, const struct squeue *q, uint32_t slot)
{
    size_t lo = 0, hi = q->nrun;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (tsched__run_cmp(&s->jobs[q->run[mid]], &s->jobs[slot]) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Enters job slot (its start time set) into its queue's running list; room reserved. */
static void run_add(tsched_sched_t *s, uint32_t slot)
{
    struct squeue *q = &s->q[s->jobs[slot].queue];
    size_t at = run_pos(s, q, slot);
    memmove(q->run + at + 1, q->run + at, (q->nrun - at) * sizeof *q->run);
    q->run[at] = slot;
    q->nrun++;
}

static void run_del(tsched_sched_t *s, uint32_t slot)
{
    struct squeue *q = &s->q[s->jobs[slot].queue];
    size_t at = run_pos(s, q, slot);
    if (at < q->nrun && q->run[at] == slot) {
        memmove(q->run + at, q->run + at + 1, (q->nrun - at - 1) * sizeof *q->run);
        q->nrun--;
    }
}

/* Enters job slot's members into their nodes' lists, in (slot, member) order. */
static void nrun_add(tsched_sched_t *s, uint32_t slot)
{
    const struct sjob *j = &s->jobs[slot];
    for (uint32_t m = 0; m < j->gang; m++) {
        struct nrun *r = &s->nrun[j->members[m].node];
        uint32_t lo = 0, hi = r->n; /* first entry after (slot, m) */
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            const struct nrun_ent *x = &r->e[mid];
            if (x->slot < slot || (x->slot == slot && x->m < m))
                lo = mid + 1;
            else
                hi = mid;
        }
        memmove(r->e + lo + 1, r->e + lo, (r->n - lo) * sizeof *r->e);
        memmove(r->mem + lo + 1, r->mem + lo, (r->n - lo) * sizeof *r->mem);
        r->e[lo] = (struct nrun_ent){.slot = slot,
                                     .m = m,
                                     .queue = j->queue,
                                     .prio = j->prio,
                                     .band = (uint8_t)tsched__band(j->cls),
                                     .training = !tsched__np(j->cls, j->flags),
                                     .start = j->start};
        r->mem[lo] = j->members[m];
        r->n++;
    }
}

/* Takes job slot's members out of their nodes' lists. */
static void nrun_del(tsched_sched_t *s, uint32_t slot)
{
    const struct sjob *j = &s->jobs[slot];
    for (uint32_t m = 0; m < j->gang; m++) {
        uint32_t node = j->members[m].node;
        if (node >= s->nrun_n)
            continue;
        struct nrun *r = &s->nrun[node];
        uint32_t k = 0;
        for (uint32_t i = 0; i < r->n; i++)
            if (r->e[i].slot != slot) {
                r->mem[k] = r->mem[i];
                r->e[k++] = r->e[i];
            }
        r->n = k;
    }
}

int tsched_job_started(tsched_sched_t *s, uint64_t id, const tsched_member_t *members, size_t n,
                       double now)
{
    long slot = tsched__pending_job(s, id, members, n);
    if (slot < 0)
        return -1;
    struct sjob *j = &s->jobs[slot];
    struct squeue *q = &s->q[j->queue];
    if (q->nrun == q->runcap) {
        size_t cap = q->runcap ? q->runcap * 2 : 64;
        uint32_t *r = realloc(q->run, cap * sizeof *r);
        if (!r) {
            errno = ENOMEM;
            return -1;
        }
        q->run = r;
        q->runcap = cap;
    }
    if (nrun_reserve(s, members, n) < 0 || tsched_commit(s->c, members, n) < 0)
        return -1;
    tsched__advance(s, now);
    memcpy(j->members, members, n * sizeof *members);
    j->state = J_RUNNING;
    j->start = s->now;
    nrun_add(s, (uint32_t)slot);
    run_add(s, (uint32_t)slot);
    free(j->rnodes);
    j->rnodes = NULL;
    j->waiting = 0;
    add_up(s, j->queue, f_demand, j->res, -1);
    j->res[R_NGPU] = tsched__ngpu_held(s->c, members, n); /* at most the pending bound */
    add_up(s, j->queue, f_used, j->res, 1);
    if (tsched__np(j->cls, j->flags))
        add_up(s, j->queue, f_np, j->res, 1);
    count_up(s, j->queue, 1, -1);
    tsched__changed(s);
    tsched__ms_forget(s, id);
    return 0;
}

/* A victim left (stopped or removed): its preemptor waits for one less. */
static void victim_gone(tsched_sched_t *s, struct sjob *j)
{
    if (j->state != J_VICTIM)
        return;
    long ps = tsched__job_slot(s, j->for_job);
    if (ps >= 0 && s->jobs[ps].waiting)
        s->jobs[ps].waiting--;
}

static void stop_running(tsched_sched_t *s, struct sjob *j)
{
    (void)tsched_release(s->c, j->members, j->gang); /* held by construction */
    nrun_del(s, (uint32_t)(j - s->jobs));
    run_del(s, (uint32_t)(j - s->jobs));
    victim_gone(s, j);
    add_up(s, j->queue, f_used, j->res, -1);
    if (tsched__np(j->cls, j->flags))
        add_up(s, j->queue, f_np, j->res, -1);
}

int tsched_job_stopped(tsched_sched_t *s, uint64_t id, double now)
{
    long slot = s ? tsched__job_slot(s, id) : -1;
    if (slot < 0) {
        errno = ENOENT;
        return -1;
    }
    struct sjob *j = &s->jobs[slot];
    if (j->state == J_PENDING) {
        errno = EINVAL;
        return -1;
    }
    tsched__advance(s, now);
    stop_running(s, j);
    j->state = J_PENDING;
    j->pend_since = s->now;
    j->res[R_NGPU] = tsched__ngpu_at(&j->req, tsched_job_top_speed(s->c, &j->req));
    add_up(s, j->queue, f_demand, j->res, 1);
    count_up(s, j->queue, -1, 1);
    tsched__changed(s);
    return 0;
}

int tsched_job_remove(tsched_sched_t *s, uint64_t id, double now)
{
    long slot = s ? tsched__job_slot(s, id) : -1;
    if (slot < 0) {
        errno = ENOENT;
        return -1;
    }
    struct sjob *j = &s->jobs[slot];
    tsched__advance(s, now);
    if (j->state == J_PENDING) {
        add_up(s, j->queue, f_demand, j->res, -1);
        count_up(s, j->queue, 0, -1);
        /* submitted and removed with nothing between: the state before its submission */
        if (s->gen == j->sub_post)
            s->gen = j->sub_pre;
        else
            tsched__changed(s);
    } else {
        tsched__changed(s);
        stop_running(s, j);
        count_up(s, j->queue, -1, 0);
    }
    s->q[j->queue].njobs--;
    hdel(s, id);
    job_free(j);
    s->freel[s->nfree++] = (uint32_t)slot;
    return 0;
}

int tsched_job_state(const tsched_sched_t *s, uint64_t id)
{
    long slot = s ? tsched__job_slot(s, id) : -1;
    if (slot < 0) {
        errno = ENOENT;
        return -1;
    }
    return (int)s->jobs[slot].state;
}
