/* gpumodels.c - /v1/gpu-models: the GPU models of this node and any with a speed set, with
 * their relative speed (everyone reads; an admin sets and resets) for queue limits in normal
 * GPU units (issue 22, item 4; docs/scheduler-queues.md, "Normalised GPUs").
 *
 * A speed set here is kept in the store (gpu_speeds) and wins over tesseld.conf's gpu-speeds;
 * resetting it falls back to the configuration, else 1.  A change rebuilds the scheduler at
 * the next tick (tessd_gpu_speeds_apply): running jobs keep running; their normalised usage is
 * counted at the new speeds from then on.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "daemon/api/api.h"
#include "daemon/gpuspeed.h"
#include "daemon/log.h"
#include "daemon/serve_run.h"
#include <stdlib.h>

typedef struct {
    char model[64];
    uint32_t speed; /* in effect, milli */
    const char *source;
    int gpus; /* of this node */
    char set_by[TSTORE_NAME_MAX + 1];
    int64_t set_ms;
} model_t;

typedef struct {
    model_t v[2 * TAGENT_MAX_GPUS + 64];
    size_t n;
    bool more; /* rows beyond v (not listed) */
} models_t;

static model_t *model_find(models_t *m, const char *name, bool add)
{
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->v[i].model, name) == 0)
            return &m->v[i];
    if (!add)
        return NULL;
    if (m->n == sizeof m->v / sizeof m->v[0]) {
        m->more = true;
        return NULL;
    }
    model_t *x = &m->v[m->n++];
    memset(x, 0, sizeof *x);
    snprintf(x->model, sizeof x->model, "%s", name);
    x->speed = TSCHED_MILLI;
    x->source = "default";
    return x;
}

static int model_row(const tstore_gpu_speed_t *g, void *arg)
{
    model_t *x = model_find(arg, g->model, true);
    if (x) {
        x->speed = (uint32_t)g->speed_milli;
        x->source = "admin";
        snprintf(x->set_by, sizeof x->set_by, "%s", g->set_by);
        x->set_ms = g->set_ms;
    }
    return 0;
}

/* This node's models (with their counts and configured speeds), then the store's rows. */
static int models_load(tessd_t *d, models_t *m, tsl_error_t *err)
{
    memset(m, 0, sizeof *m);
    for (int i = 0; i < d->ngpus; i++) {
        model_t *x = model_find(m, d->gpus[i].name, true);
        if (!x)
            continue;
        x->gpus++;
        uint32_t v;
        if (x->gpus == 1 && tessd_speeds_lookup(d->gpu_speeds_conf, x->model, &v, NULL) == 1) {
            x->speed = v;
            x->source = "config";
        }
    }
    return tstore_gpu_speed_list(d->store, model_row, m, err);
}

static json_t *model_json(const model_t *x)
{
    json_t *o = json_object();
    json_object_set_new(o, "model", json_string(x->model));
    json_object_set_new(o, "speed", json_real((double)x->speed / 1000.0));
    json_object_set_new(o, "source", json_string(x->source));
    json_object_set_new(o, "gpus", json_integer(x->gpus));
    json_object_set_new(o, "set_by", x->set_by[0] ? json_string(x->set_by) : json_null());
    json_object_set_new(o, "set_at", api_time(x->set_ms));
    return o;
}

void api_gpu_models_list(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who))
        return;
    static models_t m; /* under the lock; too big for a handler thread's stack */
    tsl_error_t err;
    if (models_load(d, &m, &err) < 0) {
        api_store_error(rep, &err);
    } else {
        json_t *arr = json_array();
        for (size_t i = 0; i < m.n; i++)
            json_array_append_new(arr, model_json(&m.v[i]));
        thttp_json(rep, 200, json_pack("{s:o,s:b}", "gpu_models", arr, "truncated", m.more));
    }
    api_leave(d);
}

/* The model of the path, checked: 0, or -1 with 400. */
static int path_model(const char *name, thttp_reply_t *rep)
{
    if (!tessd_model_name_valid(name)) {
        thttp_error(rep, 400, "invalid_value", "model",
                    "bad GPU model name: 1 to 63 printable characters, without ',', '=' or '/' "
                    "and without a leading or trailing space");
        return -1;
    }
    return 0;
}

static void answer_model(tessd_t *d, const char *name, thttp_reply_t *rep)
{
    static models_t m;
    tsl_error_t err;
    if (models_load(d, &m, &err) < 0) {
        api_store_error(rep, &err);
        return;
    }
    model_t *x = model_find(&m, name, true);
    if (!x) {
        thttp_error(rep, 500, "internal", NULL, "too many GPU models to list");
        return;
    }
    thttp_json(rep, 200, model_json(x));
}

void api_gpu_models_set(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    static const char *const fields[] = {"speed", NULL};
    json_t *body = thttp_body_object(req, rep, 0);
    if (!body)
        return;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who)) {
        json_decref(body);
        return;
    }
    tsl_error_t err;
    const char *name = req->params[0];
    if (!api_require_admin(&who, rep) || thttp_check_fields(body, fields, rep) < 0 ||
        path_model(name, rep) < 0)
        goto out;
    json_t *v = json_object_get(body, "speed");
    char text[64];
    if (json_is_string(v))
        snprintf(text, sizeof text, "%s", json_string_value(v));
    else if (json_is_number(v))
        snprintf(text, sizeof text, "%.9g", json_number_value(v));
    else {
        thttp_error(rep, 400, v ? "invalid_value" : "missing_field", "speed",
                    "speed must be a number from 0.001 to 1000 (1 = the reference GPU)");
        goto out;
    }
    tstore_gpu_speed_t g;
    memset(&g, 0, sizeof g);
    uint32_t milli;
    if (tessd_speed_parse(text, &milli, &err) < 0) {
        thttp_error(rep, 400, "invalid_value", "speed", "%s", err.text);
        goto out;
    }
    snprintf(g.model, sizeof g.model, "%s", name);
    g.speed_milli = milli;
    snprintf(g.set_by, sizeof g.set_by, "%s", who.user);
    g.set_ms = tessd_now_ms();
    if (tstore_gpu_speed_set(d->store, &g, &err) < 0 || tessd_gpu_speeds_apply(d, &err) < 0) {
        api_store_error(rep, &err);
        goto out;
    }
    tessd_log("GPU model '%s': speed %.3f (set by %s)", name, milli / 1000.0, who.user);
    answer_model(d, name, rep);
out:
    api_leave(d);
    json_decref(body);
}

void api_gpu_models_reset(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who))
        return;
    tsl_error_t err;
    const char *name = req->params[0];
    if (!api_require_admin(&who, rep) || path_model(name, rep) < 0)
        goto out;
    if (tstore_gpu_speed_del(d->store, name, &err) < 0) {
        if (errno == ENOENT)
            thttp_error(rep, 404, "not_found", NULL, "GPU model '%s' has no speed set by an admin",
                        name);
        else
            api_store_error(rep, &err);
        goto out;
    }
    if (tessd_gpu_speeds_apply(d, &err) < 0) {
        api_store_error(rep, &err);
        goto out;
    }
    tessd_log("GPU model '%s': speed reset by %s", name, who.user);
    answer_model(d, name, rep);
out:
    api_leave(d);
}

/* ---- a measured calibration (POST /v1/gpu-models/calibrate) ---------------------------------- */

/* At most this many replicas are read (64 services' worth of 64 replicas is far beyond one
 * node's GPUs sliced in quarters). */
#define CAL_MAX_OBS 4096

typedef struct {
    tessd_t *d;
    int64_t service;
    tessd_rate_obs_t *obs;
    size_t n;
    int64_t *ids;
    size_t nids, capids;
} cal_t;

static int cal_service(const tstore_service_t *sv, void *arg)
{
    cal_t *c = arg;
    if (c->nids == c->capids) {
        size_t cap = c->capids ? c->capids * 2 : 16;
        int64_t *v = realloc(c->ids, cap * sizeof *v);
        if (!v)
            return 1;
        c->ids = v;
        c->capids = cap;
    }
    c->ids[c->nids++] = sv->id;
    return 0;
}

/* A running replica on one GPU with a measured rate is an observation. */
static int cal_replica(const tstore_replica_t *r, void *arg)
{
    cal_t *c = arg;
    tessd_serve_fig_t f;
    if (c->n == CAL_MAX_OBS || r->state != TSTORE_RUNNING || r->stopping || !r->placement_json ||
        tessd_serve_figures(c->d, r->job, &f) < 0 || !(f.mu > 0))
        return 0;
    json_t *pl = json_loads(r->placement_json, 0, NULL);
    if (json_array_size(pl) == 1) {
        json_t *e = json_array_get(pl, 0);
        json_int_t g = json_integer_value(json_object_get(e, "gpu"));
        json_int_t milli = json_integer_value(json_object_get(e, "milli"));
        if (g >= 0 && g < c->d->ngpus && milli > 0 && milli <= 1000)
            c->obs[c->n++] =
                (tessd_rate_obs_t){c->service, c->d->gpus[g].name, (uint32_t)milli, f.mu};
    }
    json_decref(pl);
    return 0;
}

void api_gpu_models_calibrate(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    static const char *const fields[] = {"reference", "apply", NULL};
    json_t *body = thttp_body_object(req, rep, 0);
    if (!body)
        return;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who)) {
        json_decref(body);
        return;
    }
    tsl_error_t err;
    cal_t c = {.d = d};
    static tessd_rate_obs_t obs[CAL_MAX_OBS]; /* under the lock */
    static models_t m;
    c.obs = obs;
    if (!api_require_admin(&who, rep) || thttp_check_fields(body, fields, rep) < 0)
        goto out;
    json_t *ref = json_object_get(body, "reference"), *apply = json_object_get(body, "apply");
    if (!json_is_string(ref) || !tessd_model_name_valid(json_string_value(ref))) {
        thttp_error(rep, 400, ref ? "invalid_value" : "missing_field", "reference",
                    "reference must name a GPU model (the one the others are measured against)");
        goto out;
    }
    if (apply && !json_is_boolean(apply)) {
        thttp_error(rep, 400, "invalid_value", "apply", "apply must be true or false");
        goto out;
    }
    const char *refname = json_string_value(ref);
    if (tstore_service_list(d->store, cal_service, &c, &err) < 0 || models_load(d, &m, &err) < 0) {
        api_store_error(rep, &err);
        goto out;
    }
    for (size_t i = 0; i < c.nids; i++) {
        c.service = c.ids[i];
        if (tstore_replica_list(d->store, c.ids[i], true, cal_replica, &c, &err) < 0) {
            api_store_error(rep, &err);
            goto out;
        }
    }
    model_t *rm = model_find(&m, refname, false);
    uint32_t ref_speed = rm ? rm->speed : TSCHED_MILLI;
    tessd_speed_est_t est[64];
    size_t n = 0;
    if (tessd_speeds_from_rates(c.obs, c.n, refname, ref_speed, est, 64, &n, &err) < 0) {
        thttp_error(rep, 409, "conflict", "reference", "%s", err.text);
        goto out;
    }
    bool applied = json_is_true(apply);
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        json_array_append_new(arr, json_pack("{s:s, s:f, s:i}", "model", est[i].model, "speed",
                                             est[i].speed / 1000.0, "cells", est[i].cells));
        if (applied && i > 0) {
            tstore_gpu_speed_t g;
            memset(&g, 0, sizeof g);
            memcpy(g.model, est[i].model, sizeof g.model); /* both 64 bytes, NUL-terminated */
            g.model[sizeof g.model - 1] = '\0';
            g.speed_milli = est[i].speed;
            snprintf(g.set_by, sizeof g.set_by, "%s", who.user);
            g.set_ms = tessd_now_ms();
            if (tstore_gpu_speed_set(d->store, &g, &err) < 0) {
                json_decref(arr);
                api_store_error(rep, &err);
                goto out;
            }
            tessd_log("GPU model '%s': speed %.3f calibrated against '%s' (set by %s)",
                      est[i].model, est[i].speed / 1000.0, refname, who.user);
        }
    }
    if (applied && tessd_gpu_speeds_apply(d, &err) < 0) {
        json_decref(arr);
        api_store_error(rep, &err);
        goto out;
    }
    thttp_json(rep, 200,
               json_pack("{s:s, s:o, s:b, s:i}", "reference", refname, "speeds", arr, "applied",
                         applied, "replicas", (int)c.n));
out:
    free(c.ids);
    api_leave(d);
    json_decref(body);
}
