/* queues.c - /v1/queues: list and get (everyone), create, update, delete (admin).
 *
 * A queue is libsched's (tessel/sched_queue.h, docs/scheduler-queues.md): nested under an
 * optional parent (jobs go to leaf queues), a guarantee and a limit per resource (GPU,
 * GPU memory, CPU, memory; null = not governed / no cap) and a weight.  The handlers check an
 * edit against the other queues with libsched's rules (so that the tick can apply it with
 * tsched_queue_add / tsched_queue_update), commit it, and leave it to the tick.  Live usage
 * comes from the table of running jobs; "guarantee_satisfied" from the snapshot the tick
 * takes after each cycle.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/acl.h"
#include "daemon/api/api.h"
#include "daemon/idle.h"
#include "daemon/oversub.h"
#include "daemon/slurmjob.h"
#include "libutil/duration.h"
#include "libutil/size.h"

/* The resources, in tstore_res_t order, as JSON names them. */
#define NRES 4
static const char *const res_name[NRES] = {"gpu", "gpu_mem", "cpu", "mem"};

/* Largest amounts accepted: a million GPUs or cores (more than any cluster), 2^62 bytes. */
#define MAX_MILLI ((int64_t)1000 * 1000 * 1000)
#define MAX_BYTES ((int64_t)1 << 62)

static void res_get(const tstore_res_t *r, int64_t a[NRES])
{
    a[0] = r->gpu_milli;
    a[1] = r->gpu_mem;
    a[2] = r->cpu_milli;
    a[3] = r->mem;
}

static void res_set(tstore_res_t *r, const int64_t a[NRES])
{
    r->gpu_milli = a[0];
    r->gpu_mem = a[1];
    r->cpu_milli = a[2];
    r->mem = a[3];
}

/* GPU and CPU in units (milli precision, a JSON real), sizes in bytes; -1 is null. */
static json_t *amount_json(int k, int64_t v)
{
    if (v < 0)
        return json_null();
    if (k == 0 || k == 2)
        return json_real((double)v / 1000.0);
    return json_integer(v);
}

static json_t *res_json(const int64_t a[NRES])
{
    json_t *o = json_object();
    for (int k = 0; k < NRES; k++)
        json_object_set_new(o, res_name[k], amount_json(k, a[k]));
    return o;
}

/* ---- the view: every queue with its live figures (lock held) ----------------------------- */

typedef struct {
    tstore_queue_t *q; /* parents first */
    size_t n;
    int *parent;                /* index, -1 top level */
    int64_t (*use)[NRES];       /* running jobs of the subtree */
    int64_t *nuse;              /* the same in normalised milli-GPU (ngpu) */
    int64_t *pending, *running; /* active jobs of the subtree */
} view_t;

static void view_free(view_t *v)
{
    free(v->q);
    free(v->parent);
    free(v->use);
    free(v->nuse);
    free(v->pending);
    free(v->running);
    memset(v, 0, sizeof *v);
}

static int view_find(const view_t *v, const char *name)
{
    for (size_t i = 0; i < v->n; i++)
        if (strcmp(v->q[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* Loads the queues only (usage NULL) or with their figures.  0, or -1 with rep filled. */
static int view_load(tessd_t *d, view_t *v, bool figures, thttp_reply_t *rep)
{
    memset(v, 0, sizeof *v);
    tsl_error_t err;
    if (tessd_queues_load(d, &v->q, &v->n, &err) < 0) {
        api_store_error(rep, &err);
        return -1;
    }
    size_t n = v->n ? v->n : 1;
    v->parent = calloc(n, sizeof *v->parent);
    if (figures) {
        v->use = calloc(n, sizeof *v->use);
        v->nuse = calloc(n, sizeof *v->nuse);
        v->pending = calloc(n, sizeof *v->pending);
        v->running = calloc(n, sizeof *v->running);
    }
    if (!v->parent || (figures && (!v->use || !v->nuse || !v->pending || !v->running))) {
        view_free(v);
        thttp_error(rep, 500, "internal", NULL, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < v->n; i++)
        v->parent[i] = v->q[i].parent[0] ? view_find(v, v->q[i].parent) : -1;
    if (!figures)
        return 0;
    for (size_t i = 0; i < v->n; i++) {
        int64_t milli;
        if (tstore_queue_usage(d->store, v->q[i].name, &v->pending[i], &v->running[i], &milli,
                               &err) < 0) {
            view_free(v);
            api_store_error(rep, &err);
            return -1;
        }
    }
    for (size_t i = 0; i < d->nruns; i++) {
        const tessd_run_t *r = &d->runs[i];
        int x = view_find(v, r->queue);
        if (x < 0)
            continue;
        const tsched_member_t *m = &r->member;
        v->use[x][0] += (int64_t)m->ngpus * m->milli_gpu;
        v->use[x][1] += (int64_t)(m->ngpus * m->gpu_mem_bytes);
        v->use[x][2] += (int64_t)m->cpu_milli;
        v->use[x][3] += (int64_t)m->mem_bytes;
        /* as libsched counts it: per GPU, share x speed / 1000 rounded up */
        for (uint32_t g = 0; g < m->ngpus && g < TSCHED_MAX_NODE_GPUS; g++) {
            int gi = m->gpu[g];
            uint64_t sp = gi < d->ngpus && d->gpu_specs[gi].speed_milli
                              ? d->gpu_specs[gi].speed_milli
                              : TSCHED_MILLI;
            v->nuse[x] +=
                (int64_t)(((uint64_t)m->milli_gpu * sp + TSCHED_MILLI - 1) / TSCHED_MILLI);
        }
    }
    /* Children come after their parent: summing from the end adds whole subtrees. */
    for (size_t i = v->n; i-- > 0;) {
        int p = v->parent[i];
        if (p < 0 || (size_t)p >= i)
            continue;
        for (int k = 0; k < NRES; k++)
            v->use[p][k] += v->use[i][k];
        v->nuse[p] += v->nuse[i];
        v->pending[p] += v->pending[i];
        v->running[p] += v->running[i];
    }
    return 0;
}

static json_t *queue_json(tessd_t *d, const view_t *v, size_t i)
{
    const tstore_queue_t *q = &v->q[i];
    int64_t g[NRES], l[NRES];
    res_get(&q->guarantee, g);
    res_get(&q->limit, l);
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(q->name));
    json_object_set_new(o, "parent", q->parent[0] ? json_string(q->parent) : json_null());
    json_t *kids = json_array();
    for (size_t k = 0; k < v->n; k++)
        if (v->parent[k] == (int)i)
            json_array_append_new(kids, json_string(v->q[k].name));
    json_object_set_new(o, "children", kids);
    json_object_set_new(o, "weight", json_integer(q->weight > 0 ? q->weight : 1));
    json_object_set_new(o, "guarantee", res_json(g));
    json_t *lim = res_json(l);
    json_object_set_new(lim, "ngpu", amount_json(0, q->limit_ngpu > 0 ? q->limit_ngpu : -1));
    json_object_set_new(o, "limit", lim);
    json_t *use = res_json(v->use[i]);
    json_object_set_new(use, "ngpu", amount_json(0, v->nuse[i]));
    json_object_set_new(o, "usage", use);
    json_object_set_new(o, "pending", json_integer(v->pending[i]));
    json_object_set_new(o, "running", json_integer(v->running[i]));
    json_t *sat = json_null();
    for (size_t k = 0; k < d->nqsnap; k++)
        if (strcmp(d->qsnap[k].name, q->name) == 0)
            sat = json_boolean(d->qsnap[k].satisfied);
    json_object_set_new(o, "guarantee_satisfied", sat);
    /* The queue's own options (null: inherited) and those in effect, as libsched resolved
     * them at the last cycle (null until the first cycle after the queue was made). */
    json_object_set_new(o, "reserve_after",
                        q->reserve_after_s >= 0 ? json_integer(q->reserve_after_s) : json_null());
    json_object_set_new(o, "placement", q->placement[0] ? json_string(q->placement) : json_null());
    /* Seconds without GPU work before a running job's memory is given back: in effect (0:
     * never), the queue's own (null: its parent's), and the queue whose setting it is (null:
     * none on its path sets one). */
    const char *from;
    json_object_set_new(o, "idle_reclaim",
                        json_integer(tessd_idle_queue(v->q, v->n, q->name, &from)));
    json_object_set_new(o, "idle_reclaim_own",
                        q->idle_reclaim_s >= 0 ? json_integer(q->idle_reclaim_s) : json_null());
    json_object_set_new(o, "idle_reclaim_from", from[0] ? json_string(from) : json_null());
    /* Bytes per GPU a job may spill into host memory: in effect (0: none; the default of a job
     * that does not ask, the most a non-admin's job may ask), the queue's own (null: its
     * parent's), and the queue whose setting it is (null: none on its path sets one). */
    json_object_set_new(o, "gpu_mem_oversubscribe",
                        json_integer((json_int_t)tessd_oversub_queue(v->q, v->n, q->name, &from)));
    json_object_set_new(o, "gpu_mem_oversubscribe_own",
                        q->gpu_oversub >= 0 ? json_integer(q->gpu_oversub) : json_null());
    json_object_set_new(o, "gpu_mem_oversubscribe_from", from[0] ? json_string(from) : json_null());
    json_t *eff = json_object();
    json_object_set_new(eff, "reserve_after", json_null());
    json_object_set_new(eff, "placement", json_null());
    for (size_t k = 0; k < d->nqsnap; k++)
        if (strcmp(d->qsnap[k].name, q->name) == 0) {
            json_object_set_new(eff, "reserve_after", json_real(d->qsnap[k].reserve_after));
            json_object_set_new(
                eff, "placement",
                json_string(d->qsnap[k].placement == TSCHED_SPREAD ? "spread" : "pack"));
        }
    json_object_set_new(o, "effective", eff);
    json_object_set_new(o, "allow", tessd_acl_json(q));
    /* Aliases kept for clients written against the first queue object (api.md, Changes). */
    json_object_set_new(o, "priority", json_integer(q->priority));
    json_object_set_new(o, "guarantee_gpu_milli", g[0] >= 0 ? json_integer(g[0]) : json_null());
    json_object_set_new(o, "max_gpu_milli", l[0] >= 0 ? json_integer(l[0]) : json_null());
    json_object_set_new(o, "gpu_milli", json_integer(v->use[i][0]));
    json_object_set_new(o, "created_at", api_time(q->created_ms));
    return o;
}

/* The answer for queue name: loads the view.  Sets rep. */
static void answer_queue(tessd_t *d, const char *name, int status, thttp_reply_t *rep)
{
    view_t v;
    if (view_load(d, &v, true, rep) < 0)
        return;
    int i = view_find(&v, name);
    if (i < 0)
        thttp_error(rep, 404, "not_found", NULL, "no queue named '%s'", name);
    else
        thttp_json(rep, status, queue_json(d, &v, (size_t)i));
    view_free(&v);
}

void api_queues_list(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who))
        return;
    view_t v;
    if (view_load(d, &v, true, rep) == 0) {
        /* The store's order (priority, then name), not the parents-first order of the view. */
        json_t *arr = json_array();
        const tstore_queue_t *order = v.q;
        size_t *idx = malloc((v.n ? v.n : 1) * sizeof *idx);
        if (!idx) {
            json_decref(arr);
            thttp_error(rep, 500, "internal", NULL, "out of memory");
        } else {
            for (size_t i = 0; i < v.n; i++)
                idx[i] = i;
            for (size_t i = 1; i < v.n; i++) {
                for (size_t k = i; k > 0; k--) {
                    const tstore_queue_t *a = &order[idx[k - 1]], *b = &order[idx[k]];
                    if (a->priority > b->priority ||
                        (a->priority == b->priority && strcmp(a->name, b->name) <= 0))
                        break;
                    size_t t = idx[k];
                    idx[k] = idx[k - 1];
                    idx[k - 1] = t;
                }
            }
            for (size_t i = 0; i < v.n; i++)
                json_array_append_new(arr, queue_json(d, &v, idx[i]));
            free(idx);
            thttp_json(rep, 200, json_pack("{s:o}", "queues", arr));
        }
        view_free(&v);
    }
    api_leave(d);
}

void api_queues_get(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who))
        return;
    answer_queue(d, req->params[0], 200, rep);
    api_leave(d);
}

/* ---- parsing ------------------------------------------------------------------------------- */

/* One amount of resource k; field names it ("guarantee.gpu").  null = -1.  0 or -1 with 400. */
static int parse_amount(json_t *v, int k, const char *field, int64_t *out, thttp_reply_t *rep)
{
    if (json_is_null(v)) {
        *out = -1;
        return 0;
    }
    if (k == 0 || k == 2) {
        double x = json_is_number(v) ? json_number_value(v) : -1;
        if (!(x >= 0) || !isfinite(x) || x * 1000.0 > (double)MAX_MILLI) {
            thttp_error(rep, 400, "invalid_value", field, "%s must be null or a number of %s >= 0",
                        field, k == 0 ? "GPUs" : "CPUs");
            return -1;
        }
        double milli = round(x * 1000.0);
        if (fabs(x * 1000.0 - milli) > 1e-6) {
            thttp_error(rep, 400, "invalid_value", field, "%s %g: at most 3 decimals", field, x);
            return -1;
        }
        *out = (int64_t)milli;
        return 0;
    }
    if (json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) <= MAX_BYTES) {
        *out = json_integer_value(v);
        return 0;
    }
    if (json_is_string(v)) {
        tsl_error_t err;
        uint64_t b;
        if (tsl_parse_size_unit(json_string_value(v), &b, &err) < 0) {
            thttp_error(rep, 400, "invalid_value", field, "%s: %s", field, err.text);
            return -1;
        }
        if (b <= (uint64_t)MAX_BYTES) {
            *out = (int64_t)b;
            return 0;
        }
    }
    thttp_error(rep, 400, "invalid_value", field,
                "%s must be null, a byte count >= 0 or a size string such as \"40G\"", field);
    return -1;
}

/* "guarantee" or "limit": null (all none) or an object of resource amounts; given[k] says
 * which members were present.  0 or -1 with 400. */
static int parse_res(json_t *body, const char *what, tstore_res_t *r, bool given[NRES],
                     int64_t *ngpu, thttp_reply_t *rep)
{
    json_t *o = json_object_get(body, what);
    if (!o)
        return 0;
    int64_t a[NRES];
    res_get(r, a);
    if (json_is_null(o)) {
        for (int k = 0; k < NRES; k++) {
            a[k] = -1;
            given[k] = true;
        }
        res_set(r, a);
        if (ngpu)
            *ngpu = 0;
        return 0;
    }
    if (!json_is_object(o)) {
        thttp_error(rep, 400, "invalid_value", what,
                    "%s must be null or an object with gpu, gpu_mem, cpu and mem", what);
        return -1;
    }
    const char *key;
    json_t *v;
    char field[48];
    json_object_foreach(o, key, v)
    {
        int k = 0;
        while (k < NRES && strcmp(res_name[k], key) != 0)
            k++;
        snprintf(field, sizeof field, "%s.%.32s", what, key);
        if (strcmp(key, "ngpu") == 0) {
            /* normal GPU units (docs/scheduler-queues.md): a limit only, above 0 */
            int64_t x = -1;
            if (!ngpu) {
                thttp_error(rep, 400, "invalid_value", field,
                            "%s: normal GPU units (ngpu) bound limits only, not guarantees", field);
                return -1;
            }
            if (parse_amount(v, 0, field, &x, rep) < 0)
                return -1;
            if (x == 0) {
                thttp_error(rep, 400, "invalid_value", field,
                            "%s must be above 0, or null for none (close a queue with gpu 0)",
                            field);
                return -1;
            }
            *ngpu = x > 0 ? x : 0;
            continue;
        }
        if (k == NRES) {
            thttp_error(rep, 400, "unknown_field", field, "unknown field '%s'", field);
            return -1;
        }
        if (parse_amount(v, k, field, &a[k], rep) < 0)
            return -1;
        given[k] = true;
    }
    res_set(r, a);
    return 0;
}

/* An alias of the first queue object: a whole number of milli-GPUs or null. */
static int parse_alias(json_t *body, const char *alias, const char *what, bool given, int64_t *out,
                       thttp_reply_t *rep)
{
    json_t *v = json_object_get(body, alias);
    if (!v)
        return 0;
    if (given) {
        thttp_error(rep, 400, "invalid_value", alias, "give %s.gpu or %s, not both", what, alias);
        return -1;
    }
    if (json_is_null(v)) {
        *out = -1;
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > MAX_MILLI) {
        thttp_error(rep, 400, "invalid_value", alias,
                    "%s must be null or a whole number of milli-GPUs >= 0", alias);
        return -1;
    }
    *out = json_integer_value(v);
    return 0;
}

/* "reserve_after": null (inherit), seconds >= 0 or a duration string ("30s", "15m"); and
 * "placement": null (inherit), "spread" or "pack".  0 or -1 with 400. */
static int parse_options(json_t *body, tstore_queue_t *q, thttp_reply_t *rep)
{
    json_t *v = json_object_get(body, "reserve_after");
    if (v) {
        int64_t secs = -1;
        tsl_error_t err;
        if (json_is_integer(v) && json_integer_value(v) >= 0 &&
            json_integer_value(v) <= TESSD_RESERVE_AFTER_MAX)
            secs = json_integer_value(v);
        else if (json_is_string(v) && tsl_parse_seconds(json_string_value(v),
                                                        TESSD_RESERVE_AFTER_MAX, &secs, &err) < 0) {
            thttp_error(rep, 400, "invalid_value", "reserve_after", "reserve_after: %s", err.text);
            return -1;
        }
        if (secs < 0 && !json_is_null(v)) {
            thttp_error(rep, 400, "invalid_value", "reserve_after",
                        "reserve_after must be null (inherit), whole seconds from 0 to %d or a "
                        "duration such as \"15m\"",
                        TESSD_RESERVE_AFTER_MAX);
            return -1;
        }
        q->reserve_after_s = secs;
    }
    v = json_object_get(body, "placement");
    if (v) {
        const char *pl = json_is_string(v) ? json_string_value(v) : NULL;
        if (!json_is_null(v) && (!pl || (strcmp(pl, "spread") != 0 && strcmp(pl, "pack") != 0))) {
            thttp_error(rep, 400, "invalid_value", "placement",
                        "placement must be null (inherit), \"spread\" (idle GPUs first) or "
                        "\"pack\"");
            return -1;
        }
        snprintf(q->placement, sizeof q->placement, "%s", pl ? pl : "");
    }
    /* "idle_reclaim" (docs/suspend.md, "Idle reclamation"): null or "inherit" (its parent's:
     * migration 24), 0 or "off" (never), whole seconds or a duration string. */
    v = json_object_get(body, "idle_reclaim");
    if (v &&
        (json_is_null(v) || (json_is_string(v) && strcmp(json_string_value(v), "inherit") == 0))) {
        q->idle_reclaim_s = -1;
    } else if (v) {
        int64_t secs = -1;
        tsl_error_t err;
        if (json_is_integer(v) && json_integer_value(v) >= 0 &&
            json_integer_value(v) <= TESSD_IDLE_RECLAIM_MAX)
            secs = json_integer_value(v);
        else if (json_is_string(v) && tessd_idle_parse(json_string_value(v), &secs, &err) < 0) {
            thttp_error(rep, 400, "invalid_value", "idle_reclaim", "%s", err.text);
            return -1;
        }
        if (secs < 0) {
            thttp_error(rep, 400, "invalid_value", "idle_reclaim",
                        "idle_reclaim must be null or \"inherit\" (its parent's), 0 or \"off\" "
                        "(never), whole seconds up to %d or a duration such as \"30m\"",
                        TESSD_IDLE_RECLAIM_MAX);
            return -1;
        }
        q->idle_reclaim_s = secs;
    }
    /* "gpu_mem_oversubscribe" (docs/interposer.md, "A queue's setting"): null or "inherit"
     * (its parent's: migration 25), 0 (none), bytes per GPU or a size string such as "8G"
     * (as the job's field). */
    v = json_object_get(body, "gpu_mem_oversubscribe");
    if (v &&
        (json_is_null(v) || (json_is_string(v) && strcmp(json_string_value(v), "inherit") == 0))) {
        q->gpu_oversub = -1;
    } else if (v && json_is_integer(v) && json_integer_value(v) == 0) {
        q->gpu_oversub = 0;
    } else if (v) {
        uint64_t b;
        if (api_get_size(v, "gpu_mem_oversubscribe", &b, rep) < 0)
            return -1;
        if (b > (uint64_t)INT64_MAX) {
            thttp_error(rep, 400, "invalid_value", "gpu_mem_oversubscribe",
                        "gpu_mem_oversubscribe is too large");
            return -1;
        }
        q->gpu_oversub = (int64_t)b;
    }
    return 0;
}

/* Apply the members of body to q; gg[k]: guarantee member k was given.  0 or -1 with 400. */
static int queue_fields(json_t *body, tstore_queue_t *q, bool gg[NRES], thttp_reply_t *rep)
{
    json_t *v = json_object_get(body, "priority");
    if (v) {
        if (!json_is_integer(v) || json_integer_value(v) < -1000 || json_integer_value(v) > 1000) {
            thttp_error(rep, 400, "invalid_value", "priority",
                        "priority must be a whole number from -1000 to 1000");
            return -1;
        }
        q->priority = (int)json_integer_value(v);
    }
    v = json_object_get(body, "weight");
    if (v) {
        if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 1000) {
            thttp_error(rep, 400, "invalid_value", "weight",
                        "weight must be a whole number from 1 to 1000");
            return -1;
        }
        q->weight = (int)json_integer_value(v);
    }
    v = json_object_get(body, "allow");
    if (v) {
        char field[64], why[256];
        if (tessd_acl_parse(v, q, field, sizeof field, why, sizeof why) < 0) {
            thttp_error(rep, 400, "invalid_value", field, "%s", why);
            return -1;
        }
    }
    bool lg[NRES] = {false};
    if (parse_options(body, q, rep) < 0 ||
        parse_res(body, "guarantee", &q->guarantee, gg, NULL, rep) < 0 ||
        parse_res(body, "limit", &q->limit, lg, &q->limit_ngpu, rep) < 0)
        return -1;
    bool alias = json_object_get(body, "guarantee_gpu_milli") != NULL;
    if (parse_alias(body, "guarantee_gpu_milli", "guarantee", gg[0], &q->guarantee.gpu_milli, rep) <
            0 ||
        parse_alias(body, "max_gpu_milli", "limit", lg[0], &q->limit.gpu_milli, rep) < 0)
        return -1;
    gg[0] = gg[0] || alias;
    return 0;
}

/* ---- the checks (libsched's, with the field at fault) ------------------------------------ */

/* An error about field "<what>.<resource k>"; the message starts with the field's name. */
static void check_error(thttp_reply_t *rep, int status, const char *what, int k, const char *fmt,
                        ...) __attribute__((format(printf, 5, 6)));
static void check_error(thttp_reply_t *rep, int status, const char *what, int k, const char *fmt,
                        ...)
{
    char field[48], msg[384];
    snprintf(field, sizeof field, "%s.%s", what, res_name[k]);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    thttp_error(rep, status, status == 409 ? "conflict" : "invalid_value", field, "%s%s", field,
                msg);
}

/* libsched's verdict on q (self: whether q is an existing queue) against the queues of v:
 * v's queues go into a scratch scheduler (the live one is the main thread's alone) and
 * tsched_queue_check applies the queue rules, the one implementation of them.  0, or -1 with
 * rep filled (400: q is wrong in itself; 409: it does not fit with the other queues). */
static int sched_check(tessd_t *d, const view_t *v, const tstore_queue_t *q, bool self,
                       thttp_reply_t *rep)
{
    tsl_error_t err;
    tsched_cluster_t *c = tsched_cluster_create();
    tsched_policy_t *pol = tsched_policy_create("binpack", &err);
    tsched_sched_t *s = c && pol ? tsched_sched_create(c, pol, &d->sched_cfg, &err) : NULL;
    int rc = -1;
    if (!s) {
        thttp_error(rep, 500, "internal", NULL, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < v->n; i++) {
        tsched_queue_spec_t spec;
        tessd_queue_spec(&v->q[i], &spec);
        if (tsched_queue_add(s, &spec, &err) < 0) {
            tessd_log("queues: stored queue '%s' breaks the queue rules: %s", v->q[i].name,
                      err.text);
            thttp_error(rep, 500, "internal", NULL, "stored queue '%s': %s", v->q[i].name,
                        err.text);
            goto out;
        }
    }
    tsched_queue_spec_t spec;
    tessd_queue_spec(q, &spec);
    tsched_qfault_t f;
    if (tsched_queue_check(s, &spec, self ? tsched_queue_find(s, q->name) : -1, &f, &err) == 0) {
        rc = 0;
        goto out;
    }
    int k = f.res >= 0 && f.res < NRES ? f.res : 0;
    tsched_queue_stat_t ost = {0};
    const char *oname = f.queue >= 0 && tsched_queue_stat(s, f.queue, 0, &ost) == 0 ? ost.name : "";
    char a[48], b[48];
    tsl_format_amount((tsl_res_t)k, f.amount, a, sizeof a);
    tsl_format_amount((tsl_res_t)k, f.bound, b, sizeof b);
    switch (f.rule) {
    case TSCHED_QF_DEPTH:
        thttp_error(rep, 400, "invalid_value", "parent",
                    "queue '%s' would be %llu levels deep; at most %d", q->name,
                    (unsigned long long)f.amount, TSCHED_MAX_QUEUE_DEPTH);
        break;
    case TSCHED_QF_ABOVE_LIMIT:
        check_error(rep, 400, "guarantee", k, " (%s) is above the limit (%s)", a, b);
        break;
    case TSCHED_QF_UNGOVERNED_CHILD:
        check_error(rep, 400, "guarantee", k,
                    " must not be null: parent queue '%s' guarantees %s, so its children must "
                    "say what they get of it (0 or more)",
                    oname, res_name[k]);
        break;
    case TSCHED_QF_PARENT_SUM:
        check_error(rep, 409, "guarantee", k,
                    ": the children of '%s' would be guaranteed %s in all, more than its own "
                    "guarantee of %s",
                    oname, a, b);
        break;
    case TSCHED_QF_CHILD_UNGOVERNED:
        check_error(rep, 409, "guarantee", k,
                    ": child queue '%s' has no guarantee of %s; give it one first", oname,
                    res_name[k]);
        break;
    case TSCHED_QF_CHILDREN_SUM:
        check_error(rep, 409, "guarantee", k,
                    ": its children are guaranteed %s in all, more than %s", a, b);
        break;
    default: /* name, parent and options were checked before; jobs are not in the scratch */
        thttp_error(rep, 400, "invalid_value", NULL, "%s", err.text);
        break;
    }
out:
    tsched_sched_destroy(s);
    tsched_policy_destroy(pol);
    tsched_cluster_destroy(c);
    return rc;
}

/* Checks q (self: its index in v, -1 for a new queue) against the other queues: tesseld's
 * own rules here (a known parent, not under the default queue, a parent without active jobs
 * in the store), libsched's through sched_check.  0, or -1 with 400 or 409. */
static int queue_check(tessd_t *d, const view_t *v, const tstore_queue_t *q, int self,
                       thttp_reply_t *rep)
{
    if (q->parent[0]) {
        if (view_find(v, q->parent) < 0) {
            thttp_error(rep, 400, "invalid_value", "parent", "no queue named '%s'", q->parent);
            return -1;
        }
        if (strcmp(q->parent, "default") == 0) {
            thttp_error(rep, 400, "invalid_value", "parent",
                        "the default queue takes jobs without a queue: it has no children");
            return -1;
        }
        if (self < 0) {
            int64_t pend = 0, run = 0, milli;
            tsl_error_t err;
            if (tstore_queue_usage(d->store, q->parent, &pend, &run, &milli, &err) < 0) {
                api_store_error(rep, &err);
                return -1;
            }
            if (pend + run > 0) {
                thttp_error(rep, 409, "conflict", "parent",
                            "queue '%s' holds %lld active job(s): jobs run only in leaf queues, "
                            "so it can have children once they have ended",
                            q->parent, (long long)(pend + run));
                return -1;
            }
        }
    }
    return sched_check(d, v, q, self >= 0, rep);
}

/* A queue edit is for the tick to apply to the live scheduler (tsched_queue_add/update). */
static void queues_changed(tessd_t *d)
{
    d->queues_dirty = true;
    tessd_wake(d);
}

/* The fields of a queue's creation; an update takes them all but the first, the name. */
static const char *const edit_fields[] = {"name",
                                          "parent",
                                          "priority",
                                          "weight",
                                          "guarantee",
                                          "limit",
                                          "max_gpu_milli",
                                          "guarantee_gpu_milli",
                                          "allow",
                                          "reserve_after",
                                          "placement",
                                          "idle_reclaim",
                                          "gpu_mem_oversubscribe",
                                          NULL};

/* The start of a queue's creation or update: the body (an object), the caller entered
 * (*who), an admin, and no field but fields.  The body, for the caller to free and then
 * api_leave; or NULL with the answer written and nothing left to free or leave. */
static json_t *edit_begin(tessd_t *d, thttp_req_t *req, thttp_reply_t *rep,
                          const char *const *fields, tessd_caller_t *who)
{
    json_t *body = thttp_body_object(req, rep, 0);
    if (!body)
        return NULL;
    if (!api_enter(d, req, rep, who)) {
        json_decref(body);
        return NULL;
    }
    if (!api_require_admin(who, rep) || thttp_check_fields(body, fields, rep) < 0) {
        api_leave(d);
        json_decref(body);
        return NULL;
    }
    return body;
}

void api_queues_create(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    tessd_caller_t who;
    json_t *body = edit_begin(d, req, rep, edit_fields, &who);
    if (!body)
        return;
    tstore_queue_t q = {.guarantee = {-1, -1, -1, -1},
                        .limit = {-1, -1, -1, -1},
                        .reserve_after_s = -1,
                        .idle_reclaim_s = -1, /* its parent's until it says */
                        .gpu_oversub = -1,    /* likewise */
                        .weight = 1,
                        .created_ms = tessd_now_ms()};
    tsl_error_t err;
    view_t v = {0};
    bool gg[NRES] = {false};
    json_t *name = json_object_get(body, "name");
    if (!name) {
        thttp_error(rep, 400, "missing_field", "name", "name is required");
        goto out;
    }
    if (!json_is_string(name) || !tstore_name_valid(json_string_value(name))) {
        thttp_error(rep, 400, "invalid_value", "name",
                    "a queue name is 1 to 32 of a-z, 0-9, '_' and '-', starting with a letter");
        goto out;
    }
    snprintf(q.name, sizeof q.name, "%s", json_string_value(name));
    json_t *parent = json_object_get(body, "parent");
    if (parent && !json_is_null(parent)) {
        if (!json_is_string(parent) || !tstore_name_valid(json_string_value(parent))) {
            thttp_error(rep, 400, "invalid_value", "parent", "parent must be null or a queue name");
            goto out;
        }
        snprintf(q.parent, sizeof q.parent, "%s", json_string_value(parent));
    }
    if (queue_fields(body, &q, gg, rep) < 0 || view_load(d, &v, false, rep) < 0)
        goto out;
    if (view_find(&v, q.name) >= 0) {
        thttp_error(rep, 409, "conflict", "name", "queue '%s' already exists", q.name);
        goto out;
    }
    /* Under a parent that guarantees a resource, a child gets none of it unless it says. */
    int p = q.parent[0] ? view_find(&v, q.parent) : -1;
    if (p >= 0) {
        int64_t pg[NRES], g[NRES];
        res_get(&v.q[p].guarantee, pg);
        res_get(&q.guarantee, g);
        for (int k = 0; k < NRES; k++)
            if (!gg[k] && pg[k] >= 0)
                g[k] = 0;
        res_set(&q.guarantee, g);
    }
    if (queue_check(d, &v, &q, -1, rep) < 0)
        goto out;
    if (tstore_queue_add(d->store, &q, &err) < 0) {
        api_store_error(rep, &err);
        goto out;
    }
    queues_changed(d);
    answer_queue(d, q.name, 201, rep);
    snprintf(rep->location, sizeof rep->location, "/v1/queues/%s", q.name);
out:
    view_free(&v);
    api_leave(d);
    json_decref(body);
}

void api_queues_update(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    tessd_caller_t who;
    /* every field but the name, which a queue keeps */
    json_t *body = edit_begin(d, req, rep, edit_fields + 1, &who);
    if (!body)
        return;
    tsl_error_t err;
    view_t v = {0};
    bool gg[NRES] = {false};
    if (view_load(d, &v, false, rep) < 0)
        goto out;
    int self = view_find(&v, req->params[0]);
    if (self < 0) {
        thttp_error(rep, 404, "not_found", NULL, "no queue named '%s'", req->params[0]);
        goto out;
    }
    tstore_queue_t q = v.q[self];
    json_t *parent = json_object_get(body, "parent");
    if (parent && !(json_is_null(parent) ? !q.parent[0]
                                         : json_is_string(parent) &&
                                               strcmp(json_string_value(parent), q.parent) == 0)) {
        thttp_error(rep, 400, "invalid_value", "parent",
                    "a queue's parent cannot change: delete the queue and create it again");
        goto out;
    }
    if (queue_fields(body, &q, gg, rep) < 0 || queue_check(d, &v, &q, self, rep) < 0)
        goto out;
    if (tstore_queue_update(d->store, &q, &err) < 0) {
        api_store_error(rep, &err);
        goto out;
    }
    queues_changed(d);
    answer_queue(d, q.name, 200, rep);
out:
    view_free(&v);
    api_leave(d);
    json_decref(body);
}

void api_queues_delete(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who))
        return;
    tstore_queue_t q;
    tsl_error_t err;
    int64_t pending, running, milli, children;
    if (!api_require_admin(&who, rep))
        goto out;
    if (tstore_queue_get(d->store, req->params[0], &q, &err) < 0) {
        api_store_error(rep, &err);
        goto out;
    }
    if (strcmp(q.name, "default") == 0) {
        thttp_error(rep, 409, "conflict", NULL, "the default queue cannot be deleted");
        goto out;
    }
    if (tstore_queue_children(d->store, q.name, &children, &err) < 0 ||
        tstore_queue_usage(d->store, q.name, &pending, &running, &milli, &err) < 0) {
        api_store_error(rep, &err);
        goto out;
    }
    if (children > 0) {
        thttp_error(rep, 409, "conflict", NULL, "queue '%s' has %lld child queue(s)", q.name,
                    (long long)children);
        goto out;
    }
    if (pending + running > 0) {
        thttp_error(rep, 409, "conflict", NULL, "queue '%s' has %lld active job(s)", q.name,
                    (long long)(pending + running));
        goto out;
    }
    /* A project's jobs go to its queue (docs/projects.md): it is rebound or deleted first. */
    char project[TSTORE_NAME_MAX + 1];
    int bound = tstore_project_by_queue(d->store, q.name, project, &err);
    if (bound <= 0) {
        if (bound < 0)
            api_store_error(rep, &err);
        else
            thttp_error(rep, 409, "conflict", NULL,
                        "queue '%s' is the queue of project '%s': give the project another "
                        "queue or delete it first",
                        q.name, project);
        goto out;
    }
    if (tstore_queue_del(d->store, q.name, &err) < 0) {
        api_store_error(rep, &err);
        goto out;
    }
    /* libsched has no call to drop a queue: the tick rebuilds the scheduler. */
    d->rebuild = true;
    tessd_wake(d);
    rep->status = 204;
out:
    api_leave(d);
}

bool api_queue_may_submit(tessd_t *d, const tessd_caller_t *who, const tstore_queue_t *leaf,
                          thttp_reply_t *rep)
{
    char **groups = NULL;
    size_t ngroups = 0;
    bool groups_loaded = false, ok = true;
    tstore_queue_t q = *leaf;
    tsl_error_t err;
    for (int depth = 0; depth <= TSCHED_MAX_QUEUE_DEPTH; depth++) {
        if (!tessd_acl_open(&q)) {
            if (!groups_loaded && q.allow_groups[0]) {
                if (tessd_user_groups(who->user, &groups, &ngroups) < 0) {
                    thttp_error(rep, 500, "internal", NULL, "the groups of '%s': %s", who->user,
                                strerror(errno));
                    return false;
                }
                groups_loaded = true;
            }
            if (!tessd_acl_allows(&q, who->user, who->admin, (const char *const *)groups,
                                  ngroups)) {
                char lists[3 * TSTORE_ACL_LEN + 64];
                tessd_acl_describe(&q, lists, sizeof lists);
                if (strcmp(q.name, leaf->name) == 0)
                    thttp_error(rep, 403, "forbidden", "queue",
                                "you ('%s') may not submit to queue '%s' (it admits %.400s)",
                                who->user, q.name, lists);
                else
                    thttp_error(rep, 403, "forbidden", "queue",
                                "you ('%s') may not submit to queue '%s': it is under queue "
                                "'%s', which admits %.400s",
                                who->user, leaf->name, q.name, lists);
                ok = false;
                break;
            }
        }
        if (!q.parent[0])
            break;
        char parent[TSTORE_NAME_MAX + 1];
        snprintf(parent, sizeof parent, "%s", q.parent);
        if (tstore_queue_get(d->store, parent, &q, &err) < 0) {
            api_store_error(rep, &err);
            ok = false;
            break;
        }
    }
    tessd_user_groups_free(groups, ngroups);
    return ok;
}

/* GET /v1/slurm/queues (tesseld --slurm; docs/slurm-backend.md, "Queues onto partitions"):
 * Tessel's queues as slurm-queues maps them onto Slurm's partitions and QOS, side by side with
 * the partitions as `sinfo --json` shows them (their nodes, CPUs, GRES, the nodes' states), and
 * the partitions no Tessel queue goes to.  Any user may read it (sinfo is every account's).
 * 404 without --slurm; Slurm unreadable: 200 with the mapping and slurm_error. */
static json_t *partition_json(const tsj_partition_t *p)
{
    return json_pack("{s:s, s:i, s:s, s:i, s:i, s:s, s:s}", "name", p->name, "nodes", p->nodes,
                     "node_names", p->node_names, "cpus", p->cpus, "alloc_cpus", p->alloc_cpus,
                     "gres", p->gres, "states", p->states);
}

void api_slurm_queues(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who))
        return;
    if (!d->slurm) {
        thttp_error(rep, 404, "not_found", NULL, "tesseld is not over Slurm (--slurm)");
        api_leave(d);
        return;
    }
    /* The mapping is set at start (not reloaded): read without the lock from here. */
    api_leave(d);
    tsj_partition_t *parts = NULL;
    size_t np = 0;
    char why[512] = "";
    bool read = tessd_slurm_partitions(d, &parts, &np, why, sizeof why) == 0;
    json_t *queues = json_array(), *others = json_array();
    bool default_mapped = tsj_qmap_find(d->slurm_qmap, d->slurm_nqmap, "default") != NULL;
    size_t nq = d->slurm_nqmap + (default_mapped ? 0 : 1);
    for (size_t i = 0; i < nq; i++) {
        /* default first when slurm-queues leaves it to the cluster's default partition */
        const tsj_qmap_t *m = default_mapped ? &d->slurm_qmap[i]
                              : i == 0       ? NULL
                                             : &d->slurm_qmap[i - 1];
        const tsj_partition_t *p = NULL;
        for (size_t k = 0; m && k < np && !p; k++)
            if (strcmp(parts[k].name, m->partition) == 0)
                p = &parts[k];
        json_t *o = json_pack("{s:s, s:o, s:o, s:o}", "queue", m ? m->queue : "default",
                              "partition", m ? json_string(m->partition) : json_null(), "qos",
                              m && m->qos[0] ? json_string(m->qos) : json_null(), "slurm",
                              p ? partition_json(p) : json_null());
        /* A partition sinfo does not list (when it could be read): sbatch will refuse. */
        json_object_set_new(o, "found", !m || !read ? json_null() : json_boolean(p != NULL));
        json_array_append_new(queues, o);
    }
    for (size_t k = 0; k < np; k++) {
        bool mapped = false;
        for (size_t i = 0; i < d->slurm_nqmap && !mapped; i++)
            mapped = strcmp(d->slurm_qmap[i].partition, parts[k].name) == 0;
        if (!mapped)
            json_array_append_new(others, partition_json(&parts[k]));
    }
    free(parts);
    thttp_json(rep, 200,
               json_pack("{s:o, s:o, s:o}", "queues", queues, "unmapped_partitions", others,
                         "slurm_error", read ? json_null() : json_string(why)));
}
