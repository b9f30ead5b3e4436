/* sched.c - tesseld's glue to libsched's queue layer (tessel/sched_queue.h).
 *
 * libsched decides; tesseld keeps the record.  The scheduler (tsched_sched_t) holds the
 * cluster model, the queues and every active job in memory; the store holds the same jobs
 * durably.  The scheduler is rebuilt from the store and the table of running jobs at start
 * (after recovery) and whenever queues change (libsched has no call to edit or remove a
 * queue); a rebuild costs one pass over the active jobs.
 *
 * Mapping of the store's model:
 *   queue           -> a top-level leaf queue: guarantee.milli_gpu = guarantee_gpu_milli
 *                      (unset: TSCHED_UNLIMITED, not governed, so no reclaim), limit.milli_gpu =
 *                      max_gpu_milli, weight = weight; other resources are not governed;
 *   job class       -> training (preemptible), interactive, inference;
 *   job priority    -> priority within its queue and class band;
 *   submitted_at    -> arrival (seconds);
 *   "now"           -> wall-clock seconds (tessd_sched_now), so it keeps increasing across
 *                      restarts.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/daemon.h"

double tessd_sched_now(void)
{
    return (double)tessd_now_ms() / 1000.0;
}

static tsched_class_t class_of(tstore_class_t k)
{
    switch (k) {
    case TSTORE_CLASS_INTERACTIVE:
        return TSCHED_CLASS_INTERACTIVE;
    case TSTORE_CLASS_INFERENCE:
        return TSCHED_CLASS_INFERENCE;
    default:
        return TSCHED_CLASS_TRAINING;
    }
}

void tessd_qjob(tessd_t *d, const tstore_job_t *j, tsched_qjob_t *q)
{
    memset(q, 0, sizeof *q);
    q->id = (uint64_t)j->id;
    q->queue = d->sched ? tsched_queue_find(d->sched, j->queue) : -1;
    q->cls = class_of(j->klass);
    q->priority = j->priority;
    q->arrival = (double)j->submitted_ms / 1000.0;
    tessd_job_request(j, &q->req);
}

typedef struct {
    tsched_sched_t *s;
    tsl_error_t *err;
    int rc;
} build_t;

static int add_queue(const tstore_queue_t *q, void *arg)
{
    build_t *b = arg;
    tsched_queue_spec_t spec = {
        .name = q->name,
        .guarantee = {q->guarantee_gpu_milli >= 0 ? (uint64_t)q->guarantee_gpu_milli
                                                  : TSCHED_UNLIMITED,
                      TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED},
        .limit = {q->max_gpu_milli >= 0 ? (uint64_t)q->max_gpu_milli : TSCHED_UNLIMITED,
                  TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED},
        .weight = q->weight > 0 ? (uint32_t)q->weight : 1,
    };
    if (tsched_queue_add(b->s, &spec, b->err) < 0) {
        b->rc = -1;
        return 1;
    }
    return 0;
}

static int add_pending(const tstore_job_t *j, void *arg)
{
    build_t *b = arg;
    tsched_qjob_t q;
    memset(&q, 0, sizeof q);
    q.id = (uint64_t)j->id;
    q.queue = tsched_queue_find(b->s, j->queue);
    q.cls = class_of(j->klass);
    q.priority = j->priority;
    q.arrival = (double)j->submitted_ms / 1000.0;
    tessd_job_request(j, &q.req);
    if (q.queue < 0 || tsched_job_submit(b->s, &q, NULL) < 0)
        tessd_log("job %lld cannot be scheduled (queue '%s'): it stays pending", (long long)j->id,
                  j->queue);
    return 0;
}

int tessd_sched_build(tessd_t *d, tsl_error_t *err)
{
    tsched_cluster_t *c = tsched_cluster_create();
    if (!c)
        return tsl_errprintf(err, "out of memory");
    tsched_sched_t *s = NULL;
    if (tsched_cluster_add_node(c, &d->node, err) < 0)
        goto error;
    s = tsched_sched_create(c, d->policy, &d->sched_cfg, err);
    if (!s)
        goto error;
    build_t b = {s, err, 0};
    if (tstore_queue_list(d->store, add_queue, &b, err) < 0 || b.rc < 0)
        goto error;
    double now = tessd_sched_now();
    for (size_t i = 0; i < d->nruns; i++) {
        tessd_run_t *r = &d->runs[i];
        r->q.queue = tsched_queue_find(s, r->queue);
        if (r->q.queue < 0)
            r->q.queue = tsched_queue_find(s, "default");
        if (tsched_job_submit(s, &r->q, NULL) < 0 ||
            tsched_job_started(s, r->q.id, &r->member, 1, now) < 0) {
            tsched_job_remove(s, r->q.id, now);
            if (r->holds)
                tessd_log("job %lld: its placement no longer fits this node; it keeps running "
                          "but is not counted",
                          (long long)r->id);
            r->holds = false;
        } else {
            r->holds = true;
        }
    }
    tstore_job_filter_t f = {.state_mask = 1u << TSTORE_PENDING, .limit = 1 << 30};
    if (tstore_job_list(d->store, &f, add_pending, &b, err) < 0)
        goto error;
    tsched_sched_destroy(d->sched);
    tsched_cluster_destroy(d->cluster);
    d->sched = s;
    d->cluster = c;
    d->sched_dirty = true;
    return 0;
error:
    tsched_sched_destroy(s);
    tsched_cluster_destroy(c);
    return -1;
}

static tessd_inbox_t *inbox_add(tessd_t *d)
{
    if (d->ninbox == d->capinbox) {
        size_t cap = d->capinbox ? d->capinbox * 2 : 256;
        tessd_inbox_t *v = realloc(d->inbox, cap * sizeof *v);
        if (!v) {
            d->rebuild = true;
            errno = ENOMEM;
            return NULL;
        }
        d->inbox = v;
        d->capinbox = cap;
    }
    return &d->inbox[d->ninbox++];
}

int tessd_inbox_submit(tessd_t *d, const tstore_job_t *j, int64_t max_gpu_milli)
{
    tessd_inbox_t *in = inbox_add(d);
    if (!in)
        return -1;
    memset(in, 0, sizeof *in);
    in->q.id = (uint64_t)j->id;
    in->q.queue = -1;
    in->q.cls = class_of(j->klass);
    in->q.priority = j->priority;
    in->q.arrival = (double)j->submitted_ms / 1000.0;
    tessd_job_request(j, &in->q.req);
    snprintf(in->queue, sizeof in->queue, "%s", j->queue);
    in->max_gpu_milli = max_gpu_milli;
    d->sched_dirty = true;
    return 0;
}

int tessd_inbox_remove(tessd_t *d, int64_t id)
{
    tessd_inbox_t *in = inbox_add(d);
    if (!in)
        return -1;
    memset(in, 0, sizeof *in);
    in->remove = true;
    in->q.id = (uint64_t)id;
    d->sched_dirty = true;
    return 0;
}

void tessd_sched_remove(tessd_t *d, int64_t id)
{
    if (d->sched)
        tsched_job_remove(d->sched, (uint64_t)id, tessd_sched_now());
}
