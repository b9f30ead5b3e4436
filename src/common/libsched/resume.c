/* resume.c - may a pending job start now on members it names (tsched_job_may_start,
 * sched_queue.h)?  The question a caller asks before it gives a job back GPUs it held before:
 * tesseld's restore of a job whose GPU memory was given back (a person's suspend, a preemption
 * by suspension, an idle reclamation; docs/suspend.md, "Resumes, queue limits and pending
 * jobs").  The rules are the cycle's (cycle.c, admissible()) for the job itself, plus the two
 * that make a resume wait for a pending job it would take the room from.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue_internal.h"
#include "wait_internal.h"

/* --- the answers kept per waiting job ------------------------------------------------------
 *
 * tesseld asks at every tick while a restore waits: it submits the job again, asks, and
 * removes it (src/daemon/suspend.c, restore_start).  The answer depends only on the
 * scheduler's jobs and queues (s->gen) and the cluster (gen.h), so it is kept per job with
 * both generations and the members asked, and given again while all are as they were.  For
 * the generation to come back at the next tick, a submission and a removal with nothing
 * between cancel out (queue.c, tsched_job_remove), and a submission of the same job from the
 * same generation leads to the generation it led to before (tsched__gen_submit, from the
 * entry's pre and post).  Two restores that wait side by side (A submitted, asked, removed,
 * then B) each find their own entry again.
 *
 * At most MS_MAX entries (waiting restores; the one used longest ago goes first): each
 * holds a copy of its job's members and the answer's tsched_wait_t (about 400 bytes). */
#define MS_MAX 256

struct ms_ent {
    uint64_t id;
    uint64_t pre, post; /* s->gen before and after the job's submission */
    uint64_t gen, cgen; /* the generations its answer holds for; gen 0: no answer */
    uint64_t used;      /* s->ms_tick when last used */
    /* the job as submitted (its part of the state: what the memo pre -> post is for) */
    int queue;
    tsched_class_t cls;
    int32_t prio;
    unsigned flags;
    double arrival;
    uint64_t res[NRES];
    tsched_job_t req; /* models and selector: own copies */
    tsched_member_t *members;
    size_t n;
    int verdict;
    tsched_wait_t w;
};

static int same_str(const char *a, const char *b)
{
    return (a == NULL) == (b == NULL) && (!a || strcmp(a, b) == 0);
}

/* Is e's job the same as j, as the scheduler holds it? */
static int same_job(const struct ms_ent *e, const struct sjob *j)
{
    const tsched_job_t *x = &e->req, *y = &j->req;
    return e->id == j->id && e->queue == j->queue && e->cls == j->cls && e->prio == j->prio &&
           e->flags == j->flags && e->arrival == j->arrival &&
           memcmp(e->res, j->res, sizeof e->res) == 0 && x->cpu_milli == y->cpu_milli &&
           x->mem_bytes == y->mem_bytes && x->ngpus == y->ngpus && x->milli_gpu == y->milli_gpu &&
           x->gpu_mem_bytes == y->gpu_mem_bytes && x->gang == y->gang &&
           same_str(x->models, y->models) && same_str(x->selector, y->selector);
}

static struct ms_ent *ms_find(const tsched_sched_t *s, uint64_t id)
{
    for (size_t i = 0; i < s->nms; i++)
        if (s->ms[i].id == id)
            return &s->ms[i];
    return NULL;
}

static void ms_clear(struct ms_ent *e)
{
    free((char *)e->req.models);
    free((char *)e->req.selector);
    free(e->members);
    memset(e, 0, sizeof *e);
}

uint64_t tsched__gen_submit(tsched_sched_t *s, const struct sjob *j)
{
    const struct ms_ent *e = ms_find(s, j->id);
    if (e && e->pre == s->gen && same_job(e, j))
        return e->post;
    return ++s->gen_next;
}

static void ms_drop(tsched_sched_t *s, struct ms_ent *e)
{
    ms_clear(e);
    *e = s->ms[--s->nms];
}

void tsched__ms_forget(tsched_sched_t *s, uint64_t id)
{
    struct ms_ent *e = ms_find(s, id);
    if (e)
        ms_drop(s, e);
}

void tsched__ms_free(tsched_sched_t *s)
{
    for (size_t i = 0; i < s->nms; i++)
        ms_clear(&s->ms[i]);
    free(s->ms);
    s->ms = NULL;
    s->nms = s->mscap = 0;
}

/* Keeps j's answer (verdict, *w) for generations gen and cgen on these members.  Best
 * effort: out of memory, nothing is kept (the next question is answered afresh). */
static void ms_keep(tsched_sched_t *s, const struct sjob *j, const tsched_member_t *members,
                    size_t n, uint64_t gen, uint64_t cgen, int verdict, const tsched_wait_t *w)
{
    struct ms_ent *e = ms_find(s, j->id);
    if (!e && s->nms < MS_MAX) {
        if (s->nms == s->mscap) {
            size_t cap = s->mscap ? s->mscap * 2 : 8;
            struct ms_ent *ne = realloc(s->ms, cap * sizeof *ne);
            if (!ne)
                return;
            s->ms = ne;
            s->mscap = cap;
        }
        e = &s->ms[s->nms++];
        memset(e, 0, sizeof *e);
    } else if (!e) {
        e = &s->ms[0];
        for (size_t i = 1; i < s->nms; i++)
            if (s->ms[i].used < e->used)
                e = &s->ms[i];
        ms_clear(e);
    }
    char *models = j->req.models ? strdup(j->req.models) : NULL;
    char *sel = j->req.selector ? strdup(j->req.selector) : NULL;
    int fail = (j->req.models && !models) || (j->req.selector && !sel);
    tsched_member_t *m = fail ? NULL : malloc(n * sizeof *m);
    if (!m) {
        free(models);
        free(sel);
        ms_drop(s, e);
        return;
    }
    free((char *)e->req.models);
    free((char *)e->req.selector);
    free(e->members);
    memcpy(m, members, n * sizeof *m);
    e->id = j->id;
    e->pre = j->sub_pre;
    e->post = j->sub_post;
    e->gen = gen;
    e->cgen = cgen;
    e->used = ++s->ms_tick;
    e->queue = j->queue;
    e->cls = j->cls;
    e->prio = j->prio;
    e->flags = j->flags;
    e->arrival = j->arrival;
    memcpy(e->res, j->res, sizeof e->res);
    e->req = j->req;
    e->req.models = models;
    e->req.selector = sel;
    e->members = m;
    e->n = n;
    e->verdict = verdict;
    e->w = *w;
}

long tsched__pending_job(const tsched_sched_t *s, uint64_t id, const tsched_member_t *members,
                         size_t n)
{
    long slot = s ? tsched__job_slot(s, id) : -1;
    if (slot < 0) {
        errno = ENOENT;
        return -1;
    }
    const struct sjob *j = &s->jobs[slot];
    if (j->state != J_PENDING) {
        errno = EBUSY;
        return -1;
    }
    if (!members || n != j->gang) {
        errno = EINVAL;
        return -1;
    }
    for (size_t m = 0; m < n; m++)
        if (members[m].node >= tsched_cluster_nodes(s->c)) {
            errno = EINVAL;
            return -1;
        }
    return slot;
}

void tsched_may_start_cache(tsched_sched_t *s, int on)
{
    if (s)
        s->ms_off = !on;
}

void tsched_may_start_stats(const tsched_sched_t *s, uint64_t *asked, uint64_t *computed)
{
    if (asked)
        *asked = s ? s->ms_asked : 0;
    if (computed)
        *computed = s ? s->ms_computed : 0;
}

/* --- the question ------------------------------------------------------------------------- */

/* The first queue on j's path (leaf first) that res would take past its limit (guarantee:
 * past the guarantee that bounds non-preemptible work), written into *w with its figures as
 * the cycle's wait_bounds() writes them.  1 if one was found, 0 if none. */
static int bound_at(const tsched_sched_t *s, const struct sjob *j, const uint64_t *res,
                    int guarantee, tsched_wait_t *w)
{
    for (int x = j->queue; x >= 0; x = s->q[x].parent) {
        const struct squeue *q = &s->q[x];
        const uint64_t *u = guarantee ? q->used_np : q->used, *b = guarantee ? q->g : q->lim;
        for (int d = 0; d < NRES; d++) {
            if (b[d] == TSCHED_UNLIMITED || res[d] == 0 || (u[d] <= b[d] && res[d] <= b[d] - u[d]))
                continue;
            if (w) {
                tsched__wait_reset(
                    w, guarantee ? TSCHED_WAIT_GUARANTEE_LIMIT : TSCHED_WAIT_QUEUE_LIMIT, &j->req);
                snprintf(w->queue, sizeof w->queue, "%s", q->name);
                w->res = d;
                w->bound = b[d];
                w->used = u[d];
                w->want = res[d];
                w->never = b[d] > 0 && res[d] > b[d];
            }
            return 1;
        }
    }
    return 0;
}

/* Would job j, asking res, stay within every limit and (non-preemptible) guarantee on its path
 * with the queues' usage as it is now?  The cycle's admissible() against running jobs. */
static int within(const tsched_sched_t *s, const struct sjob *j, const uint64_t *res)
{
    for (int x = j->queue; x >= 0; x = s->q[x].parent) {
        if (tsched__np(j->cls, j->flags) && !tsched__le(s->q[x].used_np, res, s->q[x].g))
            return 0;
        if (!tsched__le(s->q[x].used, res, s->q[x].lim))
            return 0;
    }
    return 1;
}

/* Does pending job p outrank j within their leaf queue (a higher band, or a higher priority
 * in the same band)?  Equal rank does not: j was placed before. */
static int outranks(const struct sjob *p, const struct sjob *j)
{
    int bp = tsched__band(p->cls), bj = tsched__band(j->cls);
    return bp > bj || (bp == bj && p->prio > j->prio);
}

/* The shapes (tsched__same_shape) of pending jobs one question placed and found not held
 * back (they fit beside the job, or nowhere): another pending job of the same shape is
 * answered the same within that question, the cluster being as it was for both.  At most
 * SHAPES_MAX kept (shapes beyond are placed each time). */
#define SHAPES_MAX 64

struct shapes {
    uint64_t h[SHAPES_MAX];
    uint32_t slot[SHAPES_MAX];
    unsigned n;
};

static int shape_seen(const tsched_sched_t *s, const struct shapes *t, const struct sjob *p,
                      uint64_t h)
{
    for (unsigned i = 0; i < t->n; i++)
        if (t->h[i] == h && tsched__same_shape(&s->jobs[t->slot[i]], p))
            return 1;
    return 0;
}

/* The question itself, afresh (tsched_job_may_start's rules; *w written). */
static int may_start(tsched_sched_t *s, struct sjob *j, const tsched_member_t *members, size_t n,
                     tsched_wait_t *w)
{
    /* What it would hold: the normalised GPUs of these members, not of the fastest GPU it
     * might land on (tsched_job_started counts the same). */
    uint64_t res[NRES];
    memcpy(res, j->res, sizeof res);
    res[R_NGPU] = tsched__ngpu_held(s->c, members, n);
    tsched__wait_reset(w, TSCHED_WAIT_NONE, &j->req);

    /* 1. Its own queues: the rules a cycle applies to a pending job (guarantee first). */
    if (tsched__np(j->cls, j->flags) && bound_at(s, j, res, 1, w))
        return 0;
    if (bound_at(s, j, res, 0, w))
        return 0;

    /* 2. The pending jobs it would take the room from: one owed its queue's guarantee while j
     * would run on borrowed capacity, or one of its own queue that outranks it; each counts
     * only when it may start now (its limits allow it) and fits in the cluster as it is, but
     * not once j holds these members.  Placements are asked once per request shape. */
    int j_owed = tsched__owed(s, j, s->q[j->queue].used);
    uint32_t gang_max = 1;
    for (size_t i = 0; i < s->njobs; i++)
        if (s->jobs[i].live && s->jobs[i].gang > gang_max)
            gang_max = s->jobs[i].gang;
    tsched_member_t *tmp = calloc(gang_max, sizeof *tmp);
    struct shapes *seen = malloc(sizeof *seen);
    if (!tmp || !seen) {
        free(tmp);
        free(seen);
        errno = ENOMEM;
        return -1;
    }
    seen->n = 0;
    uint64_t cgen = tsched__cluster_gen(s->c);
    int committed = tsched_commit(s->c, members, n) == 0;
    int verdict = 1;
    for (size_t i = 0; committed && i < s->njobs && verdict; i++) {
        struct sjob *p = &s->jobs[i];
        if (!p->live || p->state != J_PENDING || p == j)
            continue;
        int owed = p->queue != j->queue && !j_owed && tsched__owed(s, p, s->q[p->queue].used);
        int ahead = p->queue == j->queue && outranks(p, j);
        if ((!owed && !ahead) || !within(s, p, p->res))
            continue;
        uint64_t h = tsched__shape_hash(p);
        if (shape_seen(s, seen, p, h))
            continue;
        /* With j's members held (committed above): does p still fit? */
        int fits = tsched_place(s->c, s->p, &p->req, tmp, NULL) == 0;
        if (!fits) {
            (void)tsched_release(s->c, members, n);
            fits = tsched_place(s->c, s->p, &p->req, tmp, NULL) == 0;
            committed = tsched_commit(s->c, members, n) == 0;
            if (fits) {
                verdict = 0;
                tsched__wait_reset(w, owed ? TSCHED_WAIT_GUARANTEE : TSCHED_WAIT_PRIORITY, &j->req);
                snprintf(w->queue, sizeof w->queue, "%s", s->q[p->queue].name);
                tsched__wait_add_job(w, p->id);
                break;
            }
        }
        if (seen->n < SHAPES_MAX) {
            seen->h[seen->n] = h;
            seen->slot[seen->n++] = (uint32_t)i;
        }
    }
    if (committed)
        (void)tsched_release(s->c, members, n);
    if (committed) /* every member applied was taken back: the same cluster */
        tsched__cluster_gen_set(s->c, cgen);
    free(tmp);
    free(seen);
    return verdict;
}

int tsched_job_may_start(tsched_sched_t *s, uint64_t id, const tsched_member_t *members, size_t n,
                         tsched_wait_t *w)
{
    long slot = tsched__pending_job(s, id, members, n);
    if (slot < 0)
        return -1;
    struct sjob *j = &s->jobs[slot];
    s->ms_asked++;
    uint64_t gen = s->gen, cgen = tsched__cluster_gen(s->c);
    struct ms_ent *e = s->ms_off ? NULL : ms_find(s, id);
    if (e && e->gen == gen && e->cgen == cgen && e->n == n &&
        memcmp(e->members, members, n * sizeof *members) == 0) {
        e->used = ++s->ms_tick;
        if (w)
            *w = e->w;
        return e->verdict;
    }
    tsched_wait_t mine;
    if (!w)
        w = &mine;
    s->ms_computed++;
    int verdict = may_start(s, j, members, n, w);
    if (verdict >= 0 && !s->ms_off)
        ms_keep(s, j, members, n, gen, cgen, verdict, w);
    return verdict;
}
