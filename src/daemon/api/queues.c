/* queues.c - /v1/queues: list and get (everyone), create, update, delete (admin). */
#include <errno.h>
#include <string.h>

#include "daemon/api/api.h"

static json_t *queue_json(tessd_t *d, const tstore_queue_t *q)
{
    int64_t pending = 0, running = 0, milli = 0;
    tstore_queue_usage(d->store, q->name, &pending, &running, &milli, NULL);
    return json_pack(
        "{s:s, s:i, s:i, s:o, s:o, s:I, s:I, s:I, s:o}", "name", q->name, "priority", q->priority,
        "weight", q->weight > 0 ? q->weight : 1, "guarantee_gpu_milli",
        q->guarantee_gpu_milli >= 0 ? json_integer(q->guarantee_gpu_milli) : json_null(),
        "max_gpu_milli", q->max_gpu_milli >= 0 ? json_integer(q->max_gpu_milli) : json_null(),
        "pending", (json_int_t)pending, "running", (json_int_t)running, "gpu_milli",
        (json_int_t)milli, "created_at", api_time(q->created_ms));
}

/* libsched cannot edit or drop a queue: the tick rebuilds the scheduler from the store. */
static void rebuild(tessd_t *d)
{
    d->rebuild = true;
    tessd_wake(d);
}

typedef struct {
    tessd_t *d;
    json_t *arr;
} qlist_t;

static int add_queue(const tstore_queue_t *q, void *arg)
{
    qlist_t *l = arg;
    json_array_append_new(l->arr, queue_json(l->d, q));
    return 0;
}

void api_queues_list(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who))
        return;
    qlist_t l = {d, json_array()};
    tsl_error_t err;
    if (tstore_queue_list(d->store, add_queue, &l, &err) < 0) {
        json_decref(l.arr);
        api_store_error(rep, &err);
    } else {
        thttp_json(rep, 200, json_pack("{s:o}", "queues", l.arr));
    }
    api_leave(d);
}

void api_queues_get(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who))
        return;
    tstore_queue_t q;
    tsl_error_t err;
    if (tstore_queue_get(d->store, req->params[0], &q, &err) < 0)
        api_store_error(rep, &err);
    else
        thttp_json(rep, 200, queue_json(d, &q));
    api_leave(d);
}

/* Apply priority / max_gpu_milli members of body to q.  0 or -1 with 400. */
static int queue_fields(json_t *body, tstore_queue_t *q, thttp_reply_t *rep)
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
    v = json_object_get(body, "guarantee_gpu_milli");
    if (v) {
        if (json_is_null(v)) {
            q->guarantee_gpu_milli = -1;
        } else if (!json_is_integer(v) || json_integer_value(v) < 0 ||
                   json_integer_value(v) > 1000000000) {
            thttp_error(rep, 400, "invalid_value", "guarantee_gpu_milli",
                        "guarantee_gpu_milli must be null or a whole number of milli-GPUs >= 0");
            return -1;
        } else {
            q->guarantee_gpu_milli = json_integer_value(v);
        }
    }
    v = json_object_get(body, "max_gpu_milli");
    if (v) {
        if (json_is_null(v)) {
            q->max_gpu_milli = -1;
        } else if (!json_is_integer(v) || json_integer_value(v) < 0 ||
                   json_integer_value(v) > 1000000000) {
            thttp_error(rep, 400, "invalid_value", "max_gpu_milli",
                        "max_gpu_milli must be null or a whole number of milli-GPUs >= 0");
            return -1;
        } else {
            q->max_gpu_milli = json_integer_value(v);
        }
    }
    return 0;
}

void api_queues_create(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    static const char *const fields[] = {
        "name", "priority", "weight", "max_gpu_milli", "guarantee_gpu_milli", NULL};
    json_t *body = thttp_body_object(req, rep, 0);
    if (!body)
        return;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who)) {
        json_decref(body);
        return;
    }
    tstore_queue_t q = {
        .max_gpu_milli = -1, .guarantee_gpu_milli = -1, .weight = 1, .created_ms = tessd_now_ms()};
    tsl_error_t err;
    if (!api_require_admin(&who, rep) || thttp_check_fields(body, fields, rep) < 0)
        goto out;
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
    if (queue_fields(body, &q, rep) < 0)
        goto out;
    if (q.max_gpu_milli >= 0 && q.guarantee_gpu_milli > q.max_gpu_milli) {
        thttp_error(rep, 400, "invalid_value", "guarantee_gpu_milli",
                    "the guarantee is above the queue's max_gpu_milli");
        goto out;
    }
    if (tstore_queue_add(d->store, &q, &err) < 0) {
        api_store_error(rep, &err);
        goto out;
    }
    rebuild(d);
    thttp_json(rep, 201, queue_json(d, &q));
    snprintf(rep->location, sizeof rep->location, "/v1/queues/%s", q.name);
out:
    api_leave(d);
    json_decref(body);
}

void api_queues_update(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    static const char *const fields[] = {"priority", "weight", "max_gpu_milli",
                                         "guarantee_gpu_milli", NULL};
    json_t *body = thttp_body_object(req, rep, 0);
    if (!body)
        return;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who)) {
        json_decref(body);
        return;
    }
    tstore_queue_t q;
    tsl_error_t err;
    if (!api_require_admin(&who, rep) || thttp_check_fields(body, fields, rep) < 0)
        goto out;
    if (tstore_queue_get(d->store, req->params[0], &q, &err) < 0) {
        api_store_error(rep, &err);
        goto out;
    }
    if (queue_fields(body, &q, rep) < 0)
        goto out;
    if (q.max_gpu_milli >= 0 && q.guarantee_gpu_milli > q.max_gpu_milli) {
        thttp_error(rep, 400, "invalid_value", "guarantee_gpu_milli",
                    "the guarantee is above the queue's max_gpu_milli");
        goto out;
    }
    if (tstore_queue_update(d->store, &q, &err) < 0) {
        api_store_error(rep, &err);
        goto out;
    }
    rebuild(d);
    thttp_json(rep, 200, queue_json(d, &q));
out:
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
    int64_t pending, running, milli;
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
    if (tstore_queue_usage(d->store, q.name, &pending, &running, &milli, &err) < 0) {
        api_store_error(rep, &err);
        goto out;
    }
    if (pending + running > 0) {
        thttp_error(rep, 409, "conflict", NULL, "queue '%s' has %lld active job(s)", q.name,
                    (long long)(pending + running));
        goto out;
    }
    if (tstore_queue_del(d->store, q.name, &err) < 0) {
        api_store_error(rep, &err);
        goto out;
    }
    rebuild(d);
    rep->status = 204;
out:
    api_leave(d);
}
