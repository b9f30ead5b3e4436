/* jobs_batch.c - the batch fields of /v1/jobs: "time_limit", "after" and "array" of a
 * submission (batch.h for what tesseld does with them), their part of a job's JSON, and job
 * ids written as Slurm's array elements ("40_3").
 *
 * A submission with "array" adds one job per index in one transaction; the first is the
 * array's id.  With "after" (or an array's %N) a job is held: pending, not handed to the
 * scheduler until tessd_holds_check releases it.  A dependency names a job the caller may see
 * (an admin: any job); one that does not exist or is another user's gets the same answer, so
 * nothing is learnt about others' jobs.  A dependency on an array's id stands for every
 * element of the array (as Slurm's afterok:ARRAYID).  A job can depend only on jobs that exist
 * before it, so dependencies never form a cycle. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/api/api.h"
#include "daemon/batch.h"
#include "libutil/batchspec.h"

void api_batch_free(api_batch_t *b)
{
    free(b->array);
    free(b->deps);
    memset(b, 0, sizeof *b);
}

int api_batch_parse(json_t *body, tstore_job_t *j, api_batch_t *b, thttp_reply_t *rep)
{
    memset(b, 0, sizeof *b);
    tsl_error_t e;
    json_t *v = json_object_get(body, "time_limit");
    if (v && !json_is_null(v)) {
        int64_t s;
        if (json_is_integer(v)) {
            s = json_integer_value(v);
            if (s < 0 || s > TSL_TIME_MAX_S) {
                thttp_error(rep, 400, "invalid_value", "time_limit",
                            "time_limit must be seconds from 0 (none) to %lld",
                            (long long)TSL_TIME_MAX_S);
                return -1;
            }
        } else if (!json_is_string(v) || tsl_parse_duration(json_string_value(v), &s, &e) < 0) {
            thttp_error(rep, 400, "invalid_value", "time_limit", "%s",
                        json_is_string(v) ? e.text
                                          : "time_limit must be seconds or a string like \"30m\"");
            return -1;
        }
        j->time_limit_s = s;
    }
    v = json_object_get(body, "after");
    if (v && !json_is_null(v)) {
        tsl_dep_t deps[TSL_DEPS_MAX];
        size_t n;
        if (!json_is_string(v) ||
            tsl_parse_deps(json_string_value(v), deps, TSL_DEPS_MAX, &n, &e) < 0) {
            thttp_error(rep, 400, "invalid_value", "after", "%s",
                        json_is_string(v) ? e.text : "after must be a string like \"12:ok,13\"");
            return -1;
        }
        b->deps = malloc(n * sizeof *b->deps);
        if (!b->deps) {
            thttp_error(rep, 500, "internal", NULL, "out of memory");
            return -1;
        }
        memcpy(b->deps, deps, n * sizeof *b->deps);
        b->ndeps = b->capdeps = n;
    }
    v = json_object_get(body, "array");
    if (v && !json_is_null(v)) {
        b->array = malloc(sizeof *b->array);
        if (!b->array) {
            thttp_error(rep, 500, "internal", NULL, "out of memory");
            return -1;
        }
        if (!json_is_string(v) || tsl_parse_array(json_string_value(v), b->array, &e) < 0) {
            thttp_error(rep, 400, "invalid_value", "array", "%s",
                        json_is_string(v) ? e.text : "array must be a string like \"0-99%4\"");
            return -1;
        }
    }
    return 0;
}

/* Append one dependency (growing the list). */
static int dep_push(api_batch_t *b, int64_t job, tsl_dep_kind_t kind)
{
    if (b->ndeps == b->capdeps) {
        size_t c = b->capdeps ? b->capdeps * 2 : 8;
        tsl_dep_t *v = realloc(b->deps, c * sizeof *v);
        if (!v)
            return -1;
        b->deps = v;
        b->capdeps = c;
    }
    b->deps[b->ndeps].job = job;
    b->deps[b->ndeps].kind = kind;
    b->ndeps++;
    return 0;
}

int api_batch_check(tessd_t *d, const tessd_caller_t *who, api_batch_t *b, thttp_reply_t *rep)
{
    size_t given = b->ndeps;
    for (size_t i = 0; i < given; i++) {
        tstore_job_t dj;
        tsl_error_t err;
        int64_t id = b->deps[i].job;
        if (tstore_job_get(d->store, id, &dj, &err) < 0) {
            if (errno == ENOENT)
                thttp_error(rep, 400, "invalid_value", "after", "no job %lld", (long long)id);
            else
                api_store_error(rep, &err);
            return -1;
        }
        bool visible = who->admin || strcmp(dj.user, who->user) == 0;
        int64_t array = dj.array_id == dj.id ? dj.array_id : 0;
        tstore_job_clear(&dj);
        if (!visible) {
            thttp_error(rep, 400, "invalid_value", "after", "no job %lld", (long long)id);
            return -1;
        }
        if (!array)
            continue;
        /* The array's id: every element (the first is this job, already in the list). */
        int64_t count;
        int lo, hi;
        if (tstore_array_stat(d->store, array, &count, &lo, &hi, &err) < 0) {
            api_store_error(rep, &err);
            return -1;
        }
        for (int x = lo; x <= hi; x++) {
            int64_t el;
            if (tstore_array_find(d->store, array, x, &el, &err) < 0) {
                if (errno == ENOENT)
                    continue;
                api_store_error(rep, &err);
                return -1;
            }
            if (el != id && dep_push(b, el, b->deps[i].kind) < 0) {
                thttp_error(rep, 500, "internal", NULL, "out of memory");
                return -1;
            }
        }
    }
    return 0;
}

/* Whether element i of the submission is held: it has dependencies, or it is past its
 * array's %N. */
static bool element_held(const api_batch_t *b, uint32_t i)
{
    return b->ndeps > 0 || (b->array && b->array->max_running && i >= b->array->max_running);
}

int api_batch_add(tessd_t *d, tstore_job_t *j, const api_batch_t *b, const char *who,
                  tsl_error_t *err)
{
    uint32_t n = b->array ? b->array->n : 1;
    int64_t *ids = malloc(n * sizeof *ids);
    if (!ids) {
        errno = ENOMEM;
        return tsl_errprintf(err, "out of memory");
    }
    if (tstore_begin(d->store, err) < 0) {
        free(ids);
        return -1;
    }
    tstore_job_t first = {0};
    tjm_t jm;
    tessd_jobmodel(d, &jm);
    for (uint32_t i = 0; i < n; i++) {
        tstore_job_t e = *j;
        if (b->array) {
            e.array_id = i == 0 ? -1 : first.id;
            e.array_index = b->array->index[i];
            e.array_max_running = (int)b->array->max_running;
        }
        e.held = element_held(b, i);
        /* The job model's submission (a savepoint of this transaction). */
        if (tjm_submit(&jm, &e, who, NULL, err) < 0)
            goto error;
        for (size_t k = 0; k < b->ndeps; k++)
            if (tstore_dep_add(d->store, e.id, b->deps[k].job, (int)b->deps[k].kind, err) < 0)
                goto error;
        ids[i] = e.id;
        if (i == 0)
            first = e;
    }
    if (tstore_commit(d->store, err) < 0)
        goto error;
    /* In a submission's turn (api_jobs_submit) that commit was its part of a group commit:
     * the group's commit holds it (tstore_group_leave waits for it, the lock released, or
     * runs it); a failed one wrote nothing of any member. */
    if (tstore_group_leave(d->store, err) < 0) {
        free(ids);
        return -1;
    }
    /* Held jobs reach the scheduler when tessd_holds_check releases them: the first job
     * noted, which finds itself or, for an array, every held element (checked at the next
     * tick: their dependencies may have ended already); the others now. */
    bool held = false;
    for (uint32_t i = 0; i < n; i++) {
        tstore_job_t e = *j;
        e.id = ids[i];
        e.held = element_held(b, i);
        held |= e.held;
        if (!e.held && tessd_inbox_submit(d, &e) < 0) {
            tessd_log("job %lld: inbox full; the scheduler will read it from the store",
                      (long long)e.id);
            d->rebuild = true;
        }
    }
    if (held)
        tessd_holds_note(d, ids[0]);
    free(ids);
    *j = first;
    return 0;
error:
    tstore_rollback(d->store);
    free(ids);
    return -1;
}

void api_batch_json(tessd_t *d, json_t *o, const tstore_job_t *j)
{
    json_object_set_new(o, "time_limit",
                        j->time_limit_s ? json_integer(j->time_limit_s) : json_null());
    json_object_set_new(o, "array_id", j->array_id ? json_integer(j->array_id) : json_null());
    json_object_set_new(o, "array_index", j->array_id ? json_integer(j->array_index) : json_null());
    json_object_set_new(o, "array_max_running",
                        j->array_max_running ? json_integer(j->array_max_running) : json_null());
    char task[48];
    if (j->array_id)
        snprintf(task, sizeof task, "%lld_%d", (long long)j->array_id, j->array_index);
    else
        snprintf(task, sizeof task, "%lld", (long long)j->id);
    json_object_set_new(o, "display_id", json_string(task));
    json_object_set_new(o, "held", json_boolean(j->held));
}

int api_batch_deps_json(tessd_t *d, json_t *o, int64_t id, tsl_error_t *err)
{
    tstore_dep_t *deps;
    size_t n;
    if (tstore_dep_list(d->store, id, &deps, &n, err) < 0)
        return -1;
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_pack("{s:I, s:s}", "job", (json_int_t)deps[i].dep, "type",
                                           tsl_dep_kind_name((tsl_dep_kind_t)deps[i].kind)));
    free(deps);
    json_object_set_new(o, "after", a);
    return 0;
}

int api_batch_resolve_id(tessd_t *d, const char *s, int64_t *id)
{
    const char *us = strchr(s, '_');
    if (!us)
        return api_parse_id(s, id);
    char head[24];
    int64_t array, index;
    if ((size_t)(us - s) >= sizeof head)
        return -1;
    memcpy(head, s, (size_t)(us - s));
    head[us - s] = '\0';
    /* Index 0 is allowed: api_parse_id takes positive ids only. */
    if (api_parse_id(head, &array) < 0 ||
        (strcmp(us + 1, "0") != 0 &&
         (api_parse_id(us + 1, &index) < 0 || index > TSL_ARRAY_INDEX_MAX)))
        return -1;
    if (strcmp(us + 1, "0") == 0)
        index = 0;
    return tstore_array_find(d->store, array, (int)index, id, NULL) < 0 ? -1 : 0;
}

/* Cancel one active element: as a single cancel (api_jobs_cancel).  1 when it was active and
 * is now cancelled or being cancelled, 0 when it had ended, -1 with err. */
static int cancel_element(tessd_t *d, const tessd_caller_t *who, int64_t id, tsl_error_t *err)
{
    tstore_job_t j;
    if (tstore_job_get(d->store, id, &j, err) < 0)
        return errno == ENOENT ? 0 : -1;
    tstore_state_t st = j.state;
    tstore_job_clear(&j);
    if (st == TSTORE_PENDING) {
        if (tessd_job_apply(d, id, TJM_EV_CANCEL, NULL, who->user, NULL, err) < 0)
            return errno == ENOENT || errno == EINVAL ? 0 : -1;
        tessd_inbox_remove(d, id);
        return 1;
    }
    if (st == TSTORE_RUNNING) {
        if (tessd_cancel_running(d, id, who->user, err) < 0)
            return errno == ENOENT ? 0 : -1;
        return 1;
    }
    return 0;
}

void api_batch_cancel_array(tessd_t *d, const tessd_caller_t *who, const tstore_job_t *head,
                            thttp_reply_t *rep)
{
    int64_t count, n = 0;
    int lo, hi;
    tsl_error_t err;
    if (tstore_array_stat(d->store, head->id, &count, &lo, &hi, &err) < 0) {
        api_store_error(rep, &err);
        return;
    }
    for (int x = lo; x <= hi; x++) {
        int64_t id;
        if (tstore_array_find(d->store, head->id, x, &id, &err) < 0) {
            if (errno == ENOENT)
                continue;
            api_store_error(rep, &err);
            return;
        }
        int rc = cancel_element(d, who, id, &err);
        if (rc < 0) {
            api_store_error(rep, &err);
            return;
        }
        n += rc;
    }
    if (n == 0) {
        thttp_error(rep, 409, "conflict", NULL, "array %lld has already finished",
                    (long long)head->id);
        return;
    }
    /* Each element's end is the held jobs' news (tessd_holds_note, in the job model's hook). */
    tessd_wake(d);
    tstore_job_t j;
    if (tstore_job_get(d->store, head->id, &j, &err) < 0) {
        api_store_error(rep, &err);
        return;
    }
    json_t *o = api_job_json(d, &j);
    json_object_set_new(o, "array_cancelled", json_integer(n));
    thttp_json(rep, 200, o);
    tstore_job_clear(&j);
}
