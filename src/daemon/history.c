/* history.c - tesseld's usage history: a sample of every GPU, queue and user each
 * --history-interval, taken by the main thread between passes (tessd_history_tick), written
 * through histwrite.c (downsampled into the coarser tiers, pruned to --history-retention).
 *
 * The figures are those of GET /v1/gpus and /v1/queues at the moment of the sample:
 *   GPU:   busy = NVML's utilisation (what the console's header shows); idle = no job holds a
 *          slice of it (then busy is not recorded: idle is not "0 % busy"); memory in use from
 *          the jobs' slice files, memory and share allocated and jobs running from the running
 *          jobs' placements;
 *   queue and user: share and GPU memory allocated, memory in use, jobs running (the table of
 *          running jobs), jobs pending (the store, which the job model writes).  Every queue
 *          gets a row each time; a user only while they have a job running or pending.
 * Cost under the lock: the slice files of the running jobs (as /v1/gpus reads them), one
 * store read of the pending jobs by queue and user, one transaction of a few dozen rows.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "daemon/api/api.h"
#include "daemon/histagg.h"
#include "daemon/histcache.h"

/* The sample of scope/name in rows, added (zero) when absent.  NULL: out of memory. */
static tstore_hist_t *sample_of(thist_rows_t *rows, tstore_hist_scope_t scope, const char *name,
                                int64_t t, int step)
{
    for (size_t i = 0; i < rows->n; i++)
        if (rows->v[i].scope == scope && strcmp(rows->v[i].name, name) == 0)
            return &rows->v[i];
    if (rows->n == rows->cap) {
        size_t cap = rows->cap ? rows->cap * 2 : 32;
        tstore_hist_t *v = realloc(rows->v, cap * sizeof *v);
        if (!v)
            return NULL;
        rows->v = v;
        rows->cap = cap;
    }
    tstore_hist_t *s = &rows->v[rows->n++];
    thist_sample_init(s, scope, name, t, step);
    return s;
}

typedef struct {
    thist_rows_t *rows;
    int64_t t;
    int step;
    int failed;
} collect_t;

static int add_queue(const tstore_queue_t *q, void *arg)
{
    collect_t *c = arg;
    if (!sample_of(c->rows, TSTORE_HIST_QUEUE, q->name, c->t, c->step))
        c->failed = 1;
    return c->failed;
}

static int add_pending(const char *queue, const char *user, int64_t n, void *arg)
{
    collect_t *c = arg;
    tstore_hist_t *q = sample_of(c->rows, TSTORE_HIST_QUEUE, queue, c->t, c->step);
    tstore_hist_t *u = sample_of(c->rows, TSTORE_HIST_USER, user, c->t, c->step);
    if (!q || !u)
        return c->failed = 1;
    q->pending += (double)n;
    u->pending += (double)n;
    return 0;
}

/* Lock held: the samples at t into rows.  0, or -1 with err. */
static int collect(tessd_t *d, int64_t t, thist_rows_t *rows, tsl_error_t *err)
{
    int step = d->hist->plan.tier[0].step;
    collect_t c = {rows, t, step, 0};
    for (int g = 0; g < d->ngpus && !c.failed; g++) {
        tstore_hist_t *s = sample_of(rows, TSTORE_HIST_GPU, d->gpus[g].uuid, t, step);
        if (!s)
            c.failed = 1;
    }
    if (!c.failed && (tstore_queue_list(d->store, add_queue, &c, err) < 0 ||
                      tstore_hist_pending(d->store, add_pending, &c, err) < 0))
        return -1;
    for (size_t i = 0; i < d->nruns && !c.failed; i++) {
        const tessd_run_t *r = &d->runs[i];
        tstore_hist_t *q = sample_of(rows, TSTORE_HIST_QUEUE, r->queue, t, step);
        tstore_hist_t *u = sample_of(rows, TSTORE_HIST_USER, r->user, t, step);
        if (!q || !u) {
            c.failed = 1;
            break;
        }
        q->running++;
        u->running++;
        for (uint32_t k = 0; k < r->member.ngpus; k++) {
            int g = r->member.gpu[k];
            if (g < 0 || g >= d->ngpus)
                continue;
            double used = (double)api_slice_used(d, r, g);
            tstore_hist_t *s = &rows->v[g]; /* the GPUs come first, by index */
            s->running++;
            tstore_hist_t *to[] = {s, q, u};
            for (size_t j = 0; j < 3; j++) {
                if (r->gpu_released) /* checkpointed: its slice is released (suspend.c) */
                    continue;
                to[j]->milli += r->member.milli_gpu;
                to[j]->mem_alloc += (double)r->member.gpu_mem_bytes;
                to[j]->mem_used += used;
            }
        }
    }
    if (c.failed) {
        errno = ENOMEM;
        return tsl_errprintf(err, "history: out of memory");
    }
    for (int g = 0; g < d->ngpus; g++) {
        tstore_hist_t *s = &rows->v[g];
        if (s->running == 0) {
            s->idle = 1;
            continue;
        }
        int util = tagent_nvml_utilization(d->nvml, g);
        if (util >= 0)
            s->busy = s->busy_max = util;
    }
    return 0;
}

int tessd_history_init(tessd_t *d, tsl_error_t *err)
{
    thist_plan_t p;
    if (thist_plan(d->hist_interval, d->hist_retention, &p, err) < 0)
        return -1;
    if (!(d->hist = thist_writer_new(&p)) || !(d->hist_cache = thist_cache_new())) {
        errno = ENOMEM;
        return tsl_errprintf(err, "history: out of memory");
    }
    return 0;
}

void tessd_history_tick(tessd_t *d)
{
    if (!d->hist)
        return;
    int64_t now = tessd_now_ms() / 1000;
    int step = d->hist->plan.tier[0].step;
    int64_t t = now - now % step;
    if (t <= d->hist_last)
        return;
    d->hist_last = t;
    thist_rows_t rows = {0};
    tsl_error_t err;
    pthread_mutex_lock(&d->lock);
    int rc = collect(d, t, &rows, &err);
    if (rc == 0)
        rc = thist_write(d->hist, d->store, t, rows.v, rows.n, &err);
    pthread_mutex_unlock(&d->lock);
    thist_rows_free(&rows);
    /* Logged once until a write succeeds again (a full disk would repeat it every sample). */
    if (rc < 0 && !d->hist_failing)
        tessd_log("history: sample at %lld not kept: %s", (long long)t, err.text);
    d->hist_failing = rc < 0;
}
