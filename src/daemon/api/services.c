/* services.c - /v1/services: inference services (docs/serving.md, docs/api.md).
 *
 * A service belongs to the user who created it; its owner and admins see and change it, any
 * other user gets 404 (as for a job of theirs they may not see).  Its replicas are jobs that
 * tesseld submits as the owner, in the inference class (serve_run.c keeps their number). */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon/api/api.h"
#include "daemon/serve.h"
#include "daemon/serve_run.h"

/* Ports a service may ask for: not the privileged ones. */
#define SVC_PORT_MIN 1024
#define SVC_PORT_MAX 65535

static const char *const create_fields[] = {
    "name",  "argv", "replicas", "gpu",  "gpu_mem",     "cpu",   "mem",
    "queue", "env",  "health",   "port", "concurrency", "split", NULL,
};

static bool refuse_slurm(tessd_t *d, thttp_reply_t *rep)
{
    if (d->serve)
        return false;
    thttp_error(rep, 409, "conflict", NULL,
                "inference services need tesseld's own scheduler (not with --slurm)");
    return true;
}

/* A health-check path goes into HAProxy's configuration: "/" then letters, digits and
 * "/_.~-" only, at most TSTORE_HEALTH_MAX - 1 bytes. */
static bool health_valid(const char *s)
{
    if (s[0] != '/' || strlen(s) >= TSTORE_HEALTH_MAX)
        return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              strchr("/_.~-", *p)))
            return false;
    return true;
}

/* Whether port can be bound on 127.0.0.1 now (nobody listens there). */
static bool port_free(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bool ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
    close(fd);
    return ok;
}

typedef struct {
    tessd_t *d;
    json_t *arr;
    double lambda_sum;
    int running;
} reps_t;

static int rep_json(const tstore_replica_t *r, void *arg)
{
    reps_t *c = arg;
    json_t *o = json_pack("{s:I, s:i, s:s}", "job", (json_int_t)r->job, "port", r->port, "state",
                          r->suspended ? "suspended" : tstore_state_name(r->state));
    json_t *pl = r->placement_json ? json_loads(r->placement_json, 0, NULL) : NULL;
    json_t *gpus = json_array();
    size_t i;
    json_t *e;
    json_array_foreach(pl, i, e)
    {
        json_int_t g = json_integer_value(json_object_get(e, "gpu"));
        if (g >= 0 && g < c->d->ngpus)
            json_array_append_new(gpus, json_pack("{s:I, s:s, s:I}", "index", g, "model",
                                                  c->d->gpus[g].name, "milli",
                                                  json_integer_value(json_object_get(e, "milli"))));
    }
    json_decref(pl);
    json_object_set_new(o, "gpus", gpus);
    json_object_set_new(o, "started_at", api_time(r->started_ms));
    json_object_set_new(o, "stopping", json_boolean(r->stopping));
    tessd_serve_fig_t f;
    if (tessd_serve_figures(c->d, r->job, &f) == 0) {
        json_object_set_new(o, "weight", f.weight ? json_integer(f.weight) : json_null());
        json_object_set_new(o, "service_rate", f.mu > 0 ? json_real(f.mu) : json_null());
        json_object_set_new(o, "arrival_rate", json_real(f.lambda));
        json_object_set_new(o, "latency_ms",
                            f.latency_ms > 0 ? json_real(f.latency_ms) : json_null());
        json_object_set_new(o, "health", json_string(f.status[0] ? f.status : "unknown"));
        c->lambda_sum += f.lambda;
    } else {
        json_object_set_new(o, "weight", json_null());
        json_object_set_new(o, "service_rate", json_null());
        json_object_set_new(o, "arrival_rate", json_real(0));
        json_object_set_new(o, "latency_ms", json_null());
        json_object_set_new(o, "health", json_string("unknown"));
    }
    if (r->state == TSTORE_RUNNING && !r->stopping)
        c->running++;
    json_array_append_new(c->arr, o);
    return 0;
}

/* The service as the API shows it; NULL with err (store). */
static json_t *service_json(tessd_t *d, const tstore_service_t *sv, tsl_error_t *err)
{
    reps_t c = {d, json_array(), 0, 0};
    if (tstore_replica_list(d->store, sv->id, true, rep_json, &c, err) < 0) {
        json_decref(c.arr);
        return NULL;
    }
    /* Each replica's share of the traffic measured over the last interval. */
    size_t i;
    json_t *e;
    json_array_foreach(c.arr, i, e)
    {
        double l = json_real_value(json_object_get(e, "arrival_rate"));
        json_object_set_new(e, "share",
                            c.lambda_sum > 0 ? json_real(l / c.lambda_sum) : json_null());
    }
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", sv->port);
    json_t *spec = json_loads(sv->spec_json, 0, NULL);
    const char *held = tessd_serve_held(d, sv->id);
    return json_pack("{s:s, s:s, s:i, s:i, s:i, s:s, s:s, s:i, s:s, s:o, s:o, s:o, s:o}", "name",
                     sv->name, "owner", sv->owner, "replicas", sv->replicas, "running", c.running,
                     "port", sv->port, "endpoint", url, "health", sv->health, "concurrency",
                     sv->concurrency, "split", sv->split_even ? "even" : "capacity", "created_at",
                     api_time(sv->created_ms), "spec", spec ? spec : json_object(), "replica_jobs",
                     c.arr, "held", held ? json_string(held) : json_null());
}

/* The service named in the URL, when who may see it: 0, or -1 after answering 404 / 500. */
static int load_visible(tessd_t *d, const tessd_caller_t *who, const char *name,
                        tstore_service_t *sv, thttp_reply_t *rep)
{
    tsl_error_t err;
    if (!tstore_name_valid(name) || tstore_service_get(d->store, name, sv, &err) < 0) {
        if (tstore_name_valid(name) && errno != ENOENT) {
            api_store_error(rep, &err);
            return -1;
        }
        thttp_error(rep, 404, "not_found", NULL, "no service named '%s'", name);
        return -1;
    }
    if (!who->admin && strcmp(who->user, sv->owner) != 0) {
        tstore_service_clear(sv);
        thttp_error(rep, 404, "not_found", NULL, "no service named '%s'", name);
        return -1;
    }
    return 0;
}

typedef struct {
    tessd_t *d;
    const tessd_caller_t *who;
    json_t *arr;
    tsl_error_t *err;
    int failed;
} list_t;

static int list_one(const tstore_service_t *sv, void *arg)
{
    list_t *l = arg;
    if (!l->who->admin && strcmp(l->who->user, sv->owner) != 0)
        return 0;
    json_t *o = service_json(l->d, sv, l->err);
    if (!o) {
        l->failed = 1;
        return 1;
    }
    json_array_append_new(l->arr, o);
    return 0;
}

void api_services_list(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who))
        return;
    tsl_error_t err;
    list_t l = {d, &who, json_array(), &err, 0};
    if (tstore_service_list(d->store, list_one, &l, &err) < 0 || l.failed) {
        json_decref(l.arr);
        api_store_error(rep, &err);
    } else {
        thttp_json(rep, 200, json_pack("{s:o}", "services", l.arr));
    }
    api_leave(d);
}

void api_services_get(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who))
        return;
    tstore_service_t sv;
    if (load_visible(d, &who, req->params[0], &sv, rep) == 0) {
        tsl_error_t err;
        json_t *o = service_json(d, &sv, &err);
        if (o)
            thttp_json(rep, 200, o);
        else
            api_store_error(rep, &err);
        tstore_service_clear(&sv);
    }
    api_leave(d);
}

#define BAD(f, ...)                                                                                \
    do {                                                                                           \
        thttp_error(rep, 400, "invalid_value", f, __VA_ARGS__);                                    \
        goto out;                                                                                  \
    } while (0)

/* The replicas a request asks for: 0..TSV_MAX_REPLICAS; -1 after answering 400. */
static int get_replicas(json_t *v, int *out, thttp_reply_t *rep)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        json_integer_value(v) > TSV_MAX_REPLICAS) {
        thttp_error(rep, 400, "invalid_value", "replicas",
                    "replicas must be a whole number from 0 to %d", TSV_MAX_REPLICAS);
        return -1;
    }
    *out = (int)json_integer_value(v);
    return 0;
}

void api_services_create(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    json_t *body = thttp_body_object(req, rep, 0);
    if (!body)
        return;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who)) {
        json_decref(body);
        return;
    }
    json_t *spec_o = NULL;
    tstore_service_t sv = {0};
    char *spec_s = NULL;
    if (refuse_slurm(d, rep) || thttp_check_fields(body, create_fields, rep) < 0)
        goto out;
    const char *unusable = tessd_serve_unusable(d);
    if (unusable) {
        thttp_error(rep, 503, "unavailable", NULL, "inference services: %s", unusable);
        goto out;
    }
    json_t *v = json_object_get(body, "name");
    if (!json_is_string(v) || !tstore_name_valid(json_string_value(v)))
        BAD("name", "name must be 1 to 32 of a-z, 0-9, '_' and '-', starting with a letter");
    snprintf(sv.name, sizeof sv.name, "%s", json_string_value(v));
    snprintf(sv.owner, sizeof sv.owner, "%s", who.user);
    sv.replicas = 1;
    v = json_object_get(body, "replicas");
    if (v && !json_is_null(v) && get_replicas(v, &sv.replicas, rep) < 0)
        goto out;
    snprintf(sv.health, sizeof sv.health, "/health");
    v = json_object_get(body, "health");
    if (v && !json_is_null(v)) {
        if (!json_is_string(v) || !health_valid(json_string_value(v)))
            BAD("health",
                "health must be a path: '/' then letters, digits and /_.~- (at most "
                "%d bytes)",
                TSTORE_HEALTH_MAX - 1);
        snprintf(sv.health, sizeof sv.health, "%s", json_string_value(v));
    }
    sv.concurrency = 1;
    v = json_object_get(body, "concurrency");
    if (v && !json_is_null(v)) {
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) > TSV_MAX_CONCURRENCY)
            BAD("concurrency",
                "concurrency must be a whole number from 0 (no limit at the proxy) to %d",
                TSV_MAX_CONCURRENCY);
        sv.concurrency = (int)json_integer_value(v);
    }
    v = json_object_get(body, "split");
    if (v && !json_is_null(v)) {
        const char *sp = json_string_value(v);
        if (!sp || (strcmp(sp, "capacity") != 0 && strcmp(sp, "even") != 0))
            BAD("split", "split must be capacity (by measured rates) or even");
        sv.split_even = strcmp(sp, "even") == 0;
    }
    const char *field = NULL;
    char why[256];
    tsv_spec_t spec;
    if (tsv_spec_parse(body, &spec, &field, why, sizeof why) < 0)
        BAD(field, "%s", why);
    if (spec.gpu_count && !spec.gpu_mem) {
        /* As a job's: its share of the smallest GPU, so that it fits on any of them. */
        uint64_t mem = d->min_gpu_mem, milli = (uint64_t)spec.gpu_milli;
        spec.gpu_mem = mem / TSCHED_MILLI * milli + mem % TSCHED_MILLI * milli / TSCHED_MILLI;
    }
    /* The replica as a job, for the checks a submission gets. */
    tstore_job_t j = {0};
    j.user = who.user;
    j.queue = (char *)(spec.queue ? spec.queue : "default");
    j.klass = TSTORE_CLASS_INFERENCE;
    j.gpus = spec.gpus;
    j.gpu_milli = spec.gpu_milli;
    j.gpu_count = spec.gpu_count;
    j.gpu_mem = spec.gpu_mem;
    j.cpu_milli = spec.cpu_milli;
    j.mem = spec.mem;
    if (tessd_job_refused(d, who.user, who.admin, why, sizeof why)) {
        thttp_error(rep, 422, "unsatisfiable", NULL, "%s", why);
        goto out;
    }
    tstore_queue_t q;
    tsl_error_t err;
    if (tstore_queue_get(d->store, j.queue, &q, &err) < 0) {
        if (errno == ENOENT)
            BAD("queue", "no queue named '%s'", j.queue);
        api_store_error(rep, &err);
        goto out;
    }
    if (!api_queue_may_submit(d, &who, &q, rep))
        goto out;
    char never[TESSD_WAIT_TEXT];
    int feasible = tessd_job_feasible(d, &j, &q, never, sizeof never, &err);
    if (feasible <= 0) {
        if (feasible < 0)
            api_store_error(rep, &err);
        else
            thttp_error(rep, 422, "unsatisfiable", NULL, "a replica can never run: %s", never);
        goto out;
    }
    /* Limits: the owner's services (--max-services-per-user, admins too) and the node's (what
     * the proxy's configuration holds): past either, refused rather than left without a
     * frontend. */
    int64_t owned = 0, total = 0;
    if (tstore_service_count_owner(d->store, who.user, &owned, &err) < 0 ||
        tstore_service_count_owner(d->store, NULL, &total, &err) < 0) {
        api_store_error(rep, &err);
        goto out;
    }
    if (owned >= d->max_services_per_user) {
        thttp_error(rep, 409, "conflict", NULL,
                    "you ('%s') own %lld service(s), the most a user may own "
                    "(tesseld --max-services-per-user %d): delete one first",
                    who.user, (long long)owned, d->max_services_per_user);
        goto out;
    }
    if (total >= TSV_MAX_SERVICES) {
        thttp_error(rep, 507, "insufficient_storage", NULL,
                    "this node runs %lld services, the most its proxy holds (%d)", (long long)total,
                    TSV_MAX_SERVICES);
        goto out;
    }
    /* The endpoint's port: asked (free now, and no service's), or one the kernel has free. */
    v = json_object_get(body, "port");
    if (v && !json_is_null(v)) {
        if (!json_is_integer(v) || json_integer_value(v) < SVC_PORT_MIN ||
            json_integer_value(v) > SVC_PORT_MAX)
            BAD("port", "port must be a whole number from %d to %d", SVC_PORT_MIN, SVC_PORT_MAX);
        sv.port = (int)json_integer_value(v);
        bool used;
        if (tstore_service_port_used(d->store, sv.port, &used, &err) < 0) {
            api_store_error(rep, &err);
            goto out;
        }
        if (used || !port_free(sv.port)) {
            thttp_error(rep, 409, "conflict", "port", "port %d is in use on 127.0.0.1", sv.port);
            goto out;
        }
    } else if (!(sv.port = tessd_serve_free_port(d))) {
        thttp_error(rep, 503, "unavailable", "port", "no free port on 127.0.0.1");
        goto out;
    }
    spec_o = tsv_spec_json(&spec);
    spec_s = spec_o ? json_dumps(spec_o, JSON_COMPACT) : NULL;
    if (!spec_s) {
        thttp_error(rep, 500, "internal", NULL, "out of memory");
        goto out;
    }
    sv.spec_json = spec_s;
    sv.created_ms = tessd_now_ms();
    int64_t id = tstore_service_add(d->store, &sv, &err);
    if (id < 0) {
        if (errno == EEXIST)
            thttp_error(rep, 409, "conflict", "name", "a service named '%s' exists", sv.name);
        else
            api_store_error(rep, &err);
        goto out;
    }
    sv.id = id;
    /* Its replicas now; what fails here the tick tries again. */
    if (tessd_serve_reconcile(d, &sv, &err) < 0)
        tessd_log("service %s: %s (tried again)", sv.name, err.text);
    tessd_wake(d);
    json_t *o = service_json(d, &sv, &err);
    if (o) {
        thttp_json(rep, 201, o);
        snprintf(rep->location, sizeof rep->location, "/v1/services/%s", sv.name);
    } else {
        api_store_error(rep, &err);
    }
out:
    api_leave(d);
    json_decref(spec_o);
    free(spec_s);
    json_decref(body);
}

void api_services_update(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    json_t *body = thttp_body_object(req, rep, 0);
    if (!body)
        return;
    static const char *const fields[] = {"replicas", NULL};
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who)) {
        json_decref(body);
        return;
    }
    tstore_service_t sv = {0};
    int n;
    tsl_error_t err;
    if (refuse_slurm(d, rep) || thttp_check_fields(body, fields, rep) < 0 ||
        load_visible(d, &who, req->params[0], &sv, rep) < 0)
        goto out;
    json_t *v = json_object_get(body, "replicas");
    if (!v) {
        thttp_error(rep, 400, "missing_field", "replicas", "replicas is required");
        goto out;
    }
    if (get_replicas(v, &n, rep) < 0)
        goto out;
    if (tstore_service_set_replicas(d->store, sv.id, n, &err) < 0) {
        api_store_error(rep, &err);
        goto out;
    }
    sv.replicas = n;
    if (tessd_serve_reconcile(d, &sv, &err) < 0)
        tessd_log("service %s: %s (tried again)", sv.name, err.text);
    tessd_wake(d);
    json_t *o = service_json(d, &sv, &err);
    if (o)
        thttp_json(rep, 200, o);
    else
        api_store_error(rep, &err);
out:
    tstore_service_clear(&sv);
    api_leave(d);
    json_decref(body);
}

void api_services_delete(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who))
        return;
    tstore_service_t sv = {0};
    tsl_error_t err;
    if (refuse_slurm(d, rep) || load_visible(d, &who, req->params[0], &sv, rep) < 0)
        goto out;
    /* Its replicas stop first; the service's rows go with it, its jobs stay as finished. */
    if (tessd_serve_stop_replicas(d, &sv, &err) < 0 ||
        tstore_service_del(d->store, sv.id, &err) < 0) {
        api_store_error(rep, &err);
        goto out;
    }
    tessd_wake(d);
    thttp_json(rep, 200, json_pack("{s:s, s:b}", "name", sv.name, "deleted", 1));
out:
    tstore_service_clear(&sv);
    api_leave(d);
}

void api_services_token_create(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    json_t *body = thttp_body_object(req, rep, 1);
    if (!body)
        return;
    static const char *const fields[] = {"name", NULL};
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who)) {
        json_decref(body);
        return;
    }
    tstore_service_t sv = {0};
    tsl_error_t err;
    if (refuse_slurm(d, rep) || thttp_check_fields(body, fields, rep) < 0 ||
        load_visible(d, &who, req->params[0], &sv, rep) < 0)
        goto out;
    json_t *v = json_object_get(body, "name");
    const char *name = "";
    if (v && !json_is_null(v)) {
        if (!json_is_string(v) || json_string_length(v) > 64 ||
            strlen(json_string_value(v)) != json_string_length(v)) {
            thttp_error(rep, 400, "invalid_value", "name",
                        "name must be a string of at most 64 "
                        "bytes");
            goto out;
        }
        name = json_string_value(v);
    }
    char tok[TESSD_TOKEN_LEN + 1];
    unsigned char hash[32];
    if (tessd_token_new(tok, hash) < 0) {
        thttp_error(rep, 500, "internal", NULL, "no random bytes for a token");
        goto out;
    }
    int64_t id = tstore_service_token_add(d->store, sv.id, name, hash, tessd_now_ms(), &err);
    if (id < 0) {
        api_store_error(rep, &err);
        goto out;
    }
    /* The proxy learns it at the next supervision (its callers' file is written again). */
    tessd_wake(d);
    thttp_json(rep, 201,
               json_pack("{s:I, s:s, s:s, s:s}", "id", (json_int_t)id, "service", sv.name, "name",
                         name, "token", tok));
out:
    tstore_service_clear(&sv);
    api_leave(d);
    json_decref(body);
}

static int token_json(int64_t id, const char *name, int64_t created_ms, void *arg)
{
    json_array_append_new(arg, json_pack("{s:I, s:s, s:o}", "id", (json_int_t)id, "name", name,
                                         "created_at", api_time(created_ms)));
    return 0;
}

void api_services_token_list(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who))
        return;
    tstore_service_t sv = {0};
    tsl_error_t err;
    if (refuse_slurm(d, rep) || load_visible(d, &who, req->params[0], &sv, rep) < 0)
        goto out;
    json_t *arr = json_array();
    if (tstore_service_token_list(d->store, sv.id, token_json, arr, &err) < 0) {
        json_decref(arr);
        api_store_error(rep, &err);
        goto out;
    }
    thttp_json(rep, 200, json_pack("{s:s, s:o}", "service", sv.name, "tokens", arr));
out:
    tstore_service_clear(&sv);
    api_leave(d);
}

void api_services_token_delete(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who))
        return;
    tstore_service_t sv = {0};
    tsl_error_t err;
    int64_t id;
    if (refuse_slurm(d, rep) || load_visible(d, &who, req->params[0], &sv, rep) < 0)
        goto out;
    if (api_parse_id(req->params[1], &id) < 0 ||
        tstore_service_token_del(d->store, sv.id, id, &err) < 0) {
        if (errno == EIO)
            api_store_error(rep, &err);
        else
            thttp_error(rep, 404, "not_found", NULL, "no token %s of service '%s'", req->params[1],
                        sv.name);
        goto out;
    }
    /* The proxy forgets it at the next supervision (its callers' file is written again). */
    tessd_wake(d);
    rep->status = 204;
out:
    tstore_service_clear(&sv);
    api_leave(d);
}
