/* sched.c - tesseld's glue to libsched's queue layer (tessel/sched_queue.h).
 *
 * libsched decides; tesseld keeps the record.  The scheduler (tsched_sched_t) holds the
 * cluster model, the queues and every active job in memory; the store holds the same jobs
 * durably.  The scheduler is built from the store and the table of running jobs at start
 * (after recovery).  A queue created or edited through the API is applied to the live
 * scheduler by the next tick (tsched_queue_add, tsched_queue_update: usage history, plans and
 * reservations stay); a deleted queue, or an edit libsched refuses, rebuilds it (libsched has
 * no call to drop a queue); a rebuild costs one pass over the active jobs.
 *
 * Mapping of the store's model:
 *   queue           -> a libsched queue with the same name and parent; guarantee and limit per
 *                      resource (milli-GPU, GPU memory, milli-CPU, memory), a stored NULL (-1)
 *                      being TSCHED_UNLIMITED (not governed / no cap); weight = weight;
 *                      reserve_after_s and placement, when set (not NULL), the queue's own
 *                      options (TSCHED_OWN_*), else inherited;
 *   job class       -> training (preemptible), interactive, inference;
 *   job priority    -> priority within its queue and class band;
 *   submitted_at    -> arrival (seconds);
 *   job flags       -> from the job's preemptible (tstore_job_preemptible; tessd_qjob_flags):
 *                      "suspend" -> TSCHED_JOB_SUSPENDABLE for a training job with GPUs under
 *                      the interposer (its slice can be checkpointed: suspend.c; a driver
 *                      without the checkpoint API makes the suspension a requeue, tick.c),
 *                      "never" -> TSCHED_JOB_NEVER_PREEMPT for a training job (then
 *                      non-preemptible work within the guarantees), "requeue" -> none;
 *                      interactive and inference jobs are never preempted by class;
 *   "now"           -> wall-clock seconds (tessd_sched_now), so it keeps increasing across
 *                      restarts.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/daemon.h"
#include "daemon/gpuspeed.h"

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

unsigned tessd_qjob_flags(const tessd_t *d, const tstore_job_t *j)
{
    if (j->klass != TSTORE_CLASS_TRAINING)
        return 0;
    switch (tstore_job_preemptible(j)) {
    case TSTORE_PREEMPT_NEVER:
        return TSCHED_JOB_NEVER_PREEMPT;
    case TSTORE_PREEMPT_SUSPEND:
        /* Only a job whose GPU memory the driver can checkpoint and give back: one with GPUs,
         * run under the interposer (its slice file), on this node (not --slurm). */
        return d->interposer[0] && !d->slurm && j->gpu_milli > 0 ? TSCHED_JOB_SUSPENDABLE : 0;
    default:
        return 0;
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
    q->flags = tessd_qjob_flags(d, j);
    tessd_job_request(j, &q->req);
}

static uint64_t amount(int64_t v)
{
    return v >= 0 ? (uint64_t)v : TSCHED_UNLIMITED;
}

static void res_core(const tstore_res_t *r, tsched_res_t *out)
{
    out->milli_gpu = amount(r->gpu_milli);
    out->gpu_mem_bytes = amount(r->gpu_mem);
    out->cpu_milli = amount(r->cpu_milli);
    out->mem_bytes = amount(r->mem);
}

typedef struct {
    tstore_queue_t *v;
    size_t n, cap;
    bool oom;
} qvec_t;

static int collect_queue(const tstore_queue_t *q, void *arg)
{
    qvec_t *l = arg;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        tstore_queue_t *v = realloc(l->v, cap * sizeof *v);
        if (!v) {
            l->oom = true;
            return 1;
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = *q;
    return 0;
}

int tessd_queues_load(tessd_t *d, tstore_queue_t **out, size_t *n, tsl_error_t *err)
{
    qvec_t l = {0};
    if (tstore_queue_list(d->store, collect_queue, &l, err) < 0 ||
        (l.oom && tsl_errprintf(err, "out of memory") < 0)) {
        free(l.v);
        return -1;
    }
    /* Parents first: repeatedly move the queues whose parent is already placed (or absent,
     * which the API never allows: such a queue is kept last and libsched refuses it). */
    for (size_t done = 0; done < l.n;) {
        size_t moved = done;
        for (size_t i = done; i < l.n; i++) {
            bool ready = !l.v[i].parent[0];
            for (size_t k = 0; k < done && !ready; k++)
                ready = strcmp(l.v[k].name, l.v[i].parent) == 0;
            if (ready) {
                tstore_queue_t t = l.v[moved];
                l.v[moved] = l.v[i];
                l.v[i] = t;
                moved++;
            }
        }
        if (moved == done)
            break;
        done = moved;
    }
    *out = l.v;
    *n = l.n;
    return 0;
}

typedef struct {
    tessd_t *d;
    uint32_t *speed;
} speeds_t;

static int speed_row(const tstore_gpu_speed_t *g, void *arg)
{
    speeds_t *s = arg;
    for (int i = 0; i < s->d->ngpus; i++)
        if (strcmp(s->d->gpus[i].name, g->model) == 0)
            s->speed[i] = (uint32_t)g->speed_milli;
    return 0;
}

int tessd_gpu_speeds_apply(tessd_t *d, tsl_error_t *err)
{
    uint32_t speed[TAGENT_MAX_GPUS];
    for (int i = 0; i < d->ngpus; i++) {
        speed[i] = TSCHED_MILLI;
        uint32_t v;
        if (tessd_speeds_lookup(d->gpu_speeds_conf, d->gpus[i].name, &v, NULL) == 1)
            speed[i] = v;
    }
    speeds_t s = {d, speed};
    if (tstore_gpu_speed_list(d->store, speed_row, &s, err) < 0)
        return -1;
    bool changed = false;
    for (int i = 0; i < d->ngpus; i++)
        if (d->gpu_specs[i].speed_milli != speed[i]) {
            d->gpu_specs[i].speed_milli = speed[i];
            changed = true;
        }
    if (!changed || !d->empty)
        return 0;
    tsched_cluster_t *c = tsched_cluster_create();
    if (!c || tsched_cluster_add_node(c, &d->node, err) < 0) {
        tsched_cluster_destroy(c);
        return tsl_errprintf(err, "GPU speeds: out of memory");
    }
    tsched_cluster_destroy(d->empty);
    d->empty = c;
    d->rebuild = d->sched != NULL;
    tessd_wake(d);
    return 0;
}

void tessd_queue_spec(const tstore_queue_t *q, tsched_queue_spec_t *spec)
{
    memset(spec, 0, sizeof *spec);
    spec->name = q->name;
    spec->parent = q->parent[0] ? q->parent : NULL;
    res_core(&q->guarantee, &spec->guarantee);
    res_core(&q->limit, &spec->limit);
    spec->weight = q->weight > 0 ? (uint32_t)q->weight : 1;
    /* Not set in the store (NULL) = not the queue's own: libsched inherits it. */
    if (q->reserve_after_s >= 0) {
        spec->own |= TSCHED_OWN_RESERVE_AFTER;
        spec->reserve_after = (double)q->reserve_after_s;
    }
    if (q->placement[0]) {
        spec->own |= TSCHED_OWN_PLACEMENT;
        spec->placement = strcmp(q->placement, "spread") == 0 ? TSCHED_SPREAD : TSCHED_PACK;
    }
    if (q->limit_ngpu > 0) {
        spec->own |= TSCHED_OWN_NGPU_LIMIT;
        spec->ngpu_limit = (uint64_t)q->limit_ngpu;
    }
}

/* A pending job libsched refused at a rebuild, and why. */
typedef struct {
    int64_t id;
    char why[160];
} refused_t;

typedef struct {
    tsched_sched_t *s;
    tsl_error_t *err;
    int rc;
    const tessd_t *d;
    /* Pending jobs libsched refused (their reason is written once the list is read) */
    refused_t *refused;
    size_t nrefused, caprefused;
} build_t;

/* A pending job refused by libsched at a rebuild: kept for its reason (best effort). */
static void note_refused(build_t *b, int64_t id, const char *why)
{
    if (b->nrefused == b->caprefused) {
        size_t cap = b->caprefused ? b->caprefused * 2 : 16;
        refused_t *v = realloc(b->refused, cap * sizeof *v);
        if (!v)
            return;
        b->refused = v;
        b->caprefused = cap;
    }
    b->refused[b->nrefused].id = id;
    snprintf(b->refused[b->nrefused].why, sizeof b->refused[b->nrefused].why, "%s", why);
    b->nrefused++;
}

static int add_pending(const tstore_job_t *j, void *arg)
{
    build_t *b = arg;
    if (j->held)
        return 0; /* waits for its dependencies or its array's limit (batch.h) */
    tsched_qjob_t q;
    memset(&q, 0, sizeof q);
    q.id = (uint64_t)j->id;
    q.queue = tsched_queue_find(b->s, j->queue);
    q.cls = class_of(j->klass);
    q.priority = j->priority;
    q.arrival = (double)j->submitted_ms / 1000.0;
    q.flags = tessd_qjob_flags(b->d, j);
    tessd_job_request(j, &q.req);
    tsl_error_t e = {0};
    /* Re-added, not submitted: a non-preemptible job beyond a guarantee lowered since its
     * submission waits with libsched's reason (GuaranteeLimit) and starts if it is raised. */
    if (q.queue < 0 || tsched_job_readd(b->s, &q, &e) < 0) {
        char why[160];
        snprintf(why, sizeof why, "cannot be scheduled in queue %s: %.100s", j->queue,
                 q.queue < 0 ? "no such queue" : e.text);
        tessd_log("job %lld %s; it stays pending", (long long)j->id, why);
        note_refused(b, j->id, why);
    }
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
    build_t b = {s, err, 0, d, NULL, 0, 0};
    tstore_queue_t *qs = NULL;
    size_t nq = 0;
    if (tessd_queues_load(d, &qs, &nq, err) < 0)
        goto error;
    for (size_t i = 0; i < nq; i++) {
        tsched_queue_spec_t spec;
        tessd_queue_spec(&qs[i], &spec);
        if (tsched_queue_add(s, &spec, err) < 0) {
            free(qs);
            goto error;
        }
    }
    free(qs);
    double now = tessd_sched_now();
    for (size_t i = 0; i < d->nruns; i++) {
        tessd_run_t *r = &d->runs[i];
        r->q.queue = tsched_queue_find(s, r->queue);
        if (r->q.queue < 0)
            r->q.queue = tsched_queue_find(s, "default");
        if (r->gpu_released && r->suspended_ms && r->ckpt_op != TESSD_CKPT_RESTORE) {
            /* Its GPU memory given back: its slice is free (suspend.c).  A resume asked and
             * not started takes it back through restore_start, under the rules of a start
             * (queue limits, the guarantee), not by adoption (the security review's M3). */
            r->holds = false;
            continue;
        }
        /* Adopted as it runs: a non-preemptible job is counted even where its queue's
         * guarantee was lowered below it since it started (else its GPU would look free and be
         * given again: the third review's F3). */
        tsl_error_t ae;
        if (tsched_job_adopt(s, &r->q, &r->member, 1, now, &ae) < 0) {
            if (r->holds)
                tessd_log("job %lld: its placement no longer fits this node (%s); it keeps "
                          "running but is not counted",
                          (long long)r->id, ae.text);
            r->holds = false;
        } else {
            r->holds = true;
        }
    }
    tstore_job_filter_t f = {.state_mask = 1u << TSTORE_PENDING, .limit = 1 << 30};
    if (tstore_job_list(d->store, &f, add_pending, &b, err) < 0) {
        free(b.refused);
        goto error;
    }
    /* Said on the job (tessel ps, the job object) until a later rebuild takes it. */
    for (size_t i = 0; i < b.nrefused; i++) {
        tsl_error_t e;
        if (tstore_job_set_reason(d->store, b.refused[i].id, b.refused[i].why, &e) < 0)
            tessd_log("job %lld: cannot record why it waits: %s", (long long)b.refused[i].id,
                      e.text);
    }
    free(b.refused);
    tsched_sched_destroy(d->sched);
    tsched_cluster_destroy(d->cluster);
    d->sched = s;
    d->cluster = c;
    d->sched_dirty = true;
    d->queues_dirty = false;
    /* Every pending job was read from the store: the inbox's submissions are in it, and its
     * removals are of jobs the store no longer has as active. */
    d->ninbox = 0;
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

int tessd_sched_sync_queues(tessd_t *d, tsl_error_t *err)
{
    tstore_queue_t *qs = NULL;
    size_t nq = 0;
    if (tessd_queues_load(d, &qs, &nq, err) < 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < nq && rc == 0; i++) {
        tsched_queue_spec_t spec;
        tessd_queue_spec(&qs[i], &spec);
        int q = tsched_queue_find(d->sched, qs[i].name);
        if (q < 0)
            rc = tsched_queue_add(d->sched, &spec, err) < 0 ? -1 : 0;
        else if ((rc = tsched_queue_update(d->sched, q, &spec.guarantee, &spec.limit, spec.weight,
                                           err)) == 0)
            rc = tsched_queue_set_options(d->sched, q, spec.own, spec.reserve_after, spec.placement,
                                          err);
        if (rc == 0 && q >= 0)
            rc = tsched_queue_set_ngpu_limit(
                d->sched, q, spec.own & TSCHED_OWN_NGPU_LIMIT ? spec.ngpu_limit : TSCHED_UNLIMITED,
                err);
    }
    /* A queue was deleted: libsched has no call to drop one. */
    if (rc == 0 && tsched_queue_count(d->sched) != nq)
        rc = tessd_sched_build(d, err);
    else if (rc < 0)
        rc = tessd_sched_build(d, err);
    free(qs);
    if (rc == 0) {
        d->queues_dirty = false;
        d->sched_dirty = true;
    }
    return rc;
}

int tessd_inbox_submit(tessd_t *d, const tstore_job_t *j)
{
    if (j->held)
        return 0; /* released later by tessd_holds_check (batch.h) */
    tessd_inbox_t *in = inbox_add(d);
    if (!in)
        return -1;
    memset(in, 0, sizeof *in);
    in->q.id = (uint64_t)j->id;
    in->q.queue = -1;
    in->q.cls = class_of(j->klass);
    in->q.priority = j->priority;
    in->q.arrival = (double)j->submitted_ms / 1000.0;
    in->q.flags = tessd_qjob_flags(d, j);
    tessd_job_request(j, &in->q.req);
    snprintf(in->queue, sizeof in->queue, "%s", j->queue);
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

/* ---- why pending jobs wait ----------------------------------------------------------------- */

size_t tessd_sched_waits(tessd_t *d, tessd_wait_t **out)
{
    *out = NULL;
    const uint64_t *ids;
    size_t n = d->sched ? tsched_waits_changed(d->sched, &ids) : 0;
    if (n == 0)
        return 0;
    tessd_wait_t *v = malloc(n * sizeof *v);
    if (!v) {
        tsched_waits_reset(d->sched);
        return 0;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        tsched_wait_t w;
        if (tsched_job_wait(d->sched, ids[i], &w) < 0 || w.code == TSCHED_WAIT_NONE)
            continue;
        v[k].id = (int64_t)ids[i];
        v[k].code = w.code;
        tsched_wait_format(&w, v[k].text, sizeof v[k].text);
        k++;
    }
    *out = v;
    return k;
}

void tessd_sched_store_waits(tessd_t *d, const tessd_wait_t *w, size_t n)
{
    if (n == 0)
        return;
    tsl_error_t err;
    int rc = tstore_begin(d->store, &err);
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = tstore_job_set_wait(d->store, w[i].id, tsched_wait_code_name(w[i].code), w[i].text,
                                 &err);
    if (rc == 0)
        rc = tstore_commit(d->store, &err);
    else
        tstore_rollback(d->store);
    if (rc < 0) {
        if (!d->waits_unstored)
            tessd_log("reasons of %zu pending job(s) not recorded: %s (tried again after the "
                      "next cycle)",
                      n, err.text);
        d->waits_unstored = true;
        tsched_waits_reset(d->sched);
        d->sched_dirty = true;
        return;
    }
    if (d->waits_unstored)
        tessd_log("reasons of pending jobs are recorded again");
    d->waits_unstored = false;
}

int tessd_set_wait(tessd_t *d, int64_t id, const tsched_wait_t *w, tsl_error_t *err)
{
    char text[TESSD_WAIT_TEXT];
    tsched_wait_format(w, text, sizeof text);
    return tstore_job_set_wait(d->store, id, tsched_wait_code_name(w->code), text, err);
}

int tessd_job_feasible(tessd_t *d, const tstore_job_t *j, const tstore_queue_t *leaf, char *why,
                       size_t len, tsl_error_t *err)
{
    /* The path from the leaf to the top: the store's queues, each looked up by its parent. */
    tstore_queue_t qs[TSCHED_MAX_QUEUE_DEPTH + 1];
    tsched_queue_spec_t path[TSCHED_MAX_QUEUE_DEPTH + 1];
    size_t n = 0;
    qs[n++] = *leaf;
    while (n < sizeof qs / sizeof qs[0] && qs[n - 1].parent[0]) {
        if (tstore_queue_get(d->store, qs[n - 1].parent, &qs[n], err) < 0)
            return -1;
        n++;
    }
    for (size_t i = 0; i < n; i++)
        tessd_queue_spec(&qs[i], &path[i]);
    tsched_job_t req;
    tessd_job_request(j, &req);
    tsched_wait_t w;
    /* A training job that is never preempted is bounded by the guarantees as non-preemptible
     * work is (libsched's TSCHED_JOB_NEVER_PREEMPT): checked as an interactive job's. */
    tsched_class_t cls = class_of(j->klass);
    if (tessd_qjob_flags(d, j) & TSCHED_JOB_NEVER_PREEMPT)
        cls = TSCHED_CLASS_INTERACTIVE;
    int rc = tsched_job_feasible(d->empty, d->check_policy, path, n, cls, &req, &w);
    if (rc < 0)
        return tsl_errprintf(err, "feasibility check: %s", strerror(errno));
    if (rc == 0) {
        char text[TESSD_WAIT_TEXT];
        tsched_wait_format(&w, text, sizeof text);
        if (cls != class_of(j->klass))
            snprintf(why, len,
                     "preemptible never: a training job that is never preempted is held "
                     "to its queue's guarantee as interactive and inference jobs are (%s)",
                     text);
        else
            snprintf(why, len, "%s", text);
    }
    return rc;
}
