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

int tsched_job_may_start(tsched_sched_t *s, uint64_t id, const tsched_member_t *members, size_t n,
                         tsched_wait_t *w)
{
    long slot = s ? tsched__job_slot(s, id) : -1;
    if (slot < 0) {
        errno = ENOENT;
        return -1;
    }
    struct sjob *j = &s->jobs[slot];
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
    /* What it would hold: the normalised GPUs of these members, not of the fastest GPU it
     * might land on (tsched_job_started counts the same). */
    uint64_t res[NRES];
    memcpy(res, j->res, sizeof res);
    res[R_NGPU] = tsched__ngpu_held(s->c, members, n);
    if (w)
        tsched__wait_reset(w, TSCHED_WAIT_NONE, &j->req);

    /* 1. Its own queues: the rules a cycle applies to a pending job (guarantee first). */
    if (tsched__np(j->cls, j->flags) && bound_at(s, j, res, 1, w))
        return 0;
    if (bound_at(s, j, res, 0, w))
        return 0;

    /* 2. The pending jobs it would take the room from: one owed its queue's guarantee while j
     * would run on borrowed capacity, or one of its own queue that outranks it; each counts
     * only when it may start now (its limits allow it) and fits in the cluster as it is, but
     * not once j holds these members. */
    int j_owed = tsched__owed(s, j, s->q[j->queue].used);
    uint32_t gang_max = 1;
    for (size_t i = 0; i < s->njobs; i++)
        if (s->jobs[i].live && s->jobs[i].gang > gang_max)
            gang_max = s->jobs[i].gang;
    tsched_member_t *tmp = calloc(gang_max, sizeof *tmp);
    if (!tmp) {
        errno = ENOMEM;
        return -1;
    }
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
        /* With j's members held (committed above): does p still fit? */
        if (tsched_place(s->c, s->p, &p->req, tmp, NULL) == 0)
            continue;
        (void)tsched_release(s->c, members, n);
        int fits = tsched_place(s->c, s->p, &p->req, tmp, NULL) == 0;
        committed = tsched_commit(s->c, members, n) == 0;
        if (!fits)
            continue;
        verdict = 0;
        if (w) {
            tsched__wait_reset(w, owed ? TSCHED_WAIT_GUARANTEE : TSCHED_WAIT_PRIORITY, &j->req);
            snprintf(w->queue, sizeof w->queue, "%s", s->q[p->queue].name);
            tsched__wait_add_job(w, p->id);
        }
    }
    if (committed)
        (void)tsched_release(s->c, members, n);
    free(tmp);
    return verdict;
}
