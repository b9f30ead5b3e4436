/* batch_store.c - held jobs and array variables (batch.h): the parts of the batch features that
 * read and write the store (the pure ones are in batch.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/batch.h"
#include "libutil/batchspec.h"

typedef struct {
    tessd_t *d;
    int failed;       /* store errors: try again at the next tick */
    int64_t array_id; /* the array of the last job released, 0 = none */
    int64_t released; /* elements of it released by this check */
} holds_t;

/* One held job: release it, cancel it, or say why it waits. */
static int hold_one(const tstore_held_t *h, void *arg)
{
    holds_t *c = arg;
    tessd_t *d = c->d;
    tstore_dep_t *deps;
    size_t n = 0;
    tsl_error_t err;
    char why[192];
    if (tstore_dep_list(d->store, h->id, &deps, &n, &err) < 0) {
        tessd_log("job %lld: dependencies: %s", (long long)h->id, err.text);
        c->failed++;
        return 0;
    }
    tessd_deps_t v = tessd_deps_eval(deps, n, why, sizeof why);
    free(deps);
    if (v == TESSD_DEPS_NEVER) {
        char reason[256];
        snprintf(reason, sizeof reason, "dependency never satisfied: %s", why);
        if (tessd_job_apply(d, h->id, TJM_EV_DEP_NEVER, NULL, "tesseld", reason, &err) < 0 &&
            errno != ENOENT && errno != EINVAL) {
            tessd_log("job %lld: cannot record its end: %s", (long long)h->id, err.text);
            c->failed++;
            return 0;
        }
        tessd_log("job %lld cancelled: %s", (long long)h->id, reason);
        return 0;
    }
    /* Elements released by this check are not in h->array_active (read before). */
    int64_t active =
        h->array_active + (h->array_id && h->array_id == c->array_id ? c->released : 0);
    bool from_deps = v == TESSD_DEPS_WAIT;
    if (v == TESSD_DEPS_MET && h->array_max_running > 0 && active >= h->array_max_running) {
        tessd_array_wait_reason(h->array_id, h->array_max_running, why, sizeof why);
        v = TESSD_DEPS_WAIT;
    }
    if (v == TESSD_DEPS_WAIT) {
        char reason[224];
        snprintf(reason, sizeof reason, "%s%s", from_deps ? "dependency: " : "", why);
        /* The reason code beside it: "Dependency" (libsched's name for it), or
         * "ArrayTaskLimit" for an element held by its array's %N. */
        const char *code =
            from_deps ? tsched_wait_code_name(TSCHED_WAIT_DEPENDENCY) : "ArrayTaskLimit";
        if (strcmp(reason, h->reason) != 0 &&
            tstore_job_set_wait(d->store, h->id, code, reason, &err) < 0) {
            tessd_log("job %lld: reason: %s", (long long)h->id, err.text);
            c->failed++;
        }
        return 0;
    }
    tstore_job_t j;
    if (tstore_job_release(d->store, h->id, &err) < 0 ||
        tstore_job_get(d->store, h->id, &j, &err) < 0) {
        if (errno != ENOENT) {
            tessd_log("job %lld: cannot release it: %s", (long long)h->id, err.text);
            c->failed++;
        }
        return 0;
    }
    if (tessd_inbox_submit(d, &j) < 0)
        d->rebuild = true;
    tstore_job_clear(&j);
    if (h->array_id != c->array_id) {
        c->array_id = h->array_id;
        c->released = 0;
    }
    c->released++;
    return 0;
}

_Static_assert(TESSD_HOLDS_EV <= TSTORE_HELD_IDS_MAX, "a check's ids fit one held-jobs read");

void tessd_holds_note(tessd_t *d, int64_t id)
{
    if (d->holds_dirty)
        return; /* every held job is read anyway */
    for (size_t i = 0; i < d->nholds_ev; i++)
        if (d->holds_ev[i] == id)
            return;
    if (d->nholds_ev == TESSD_HOLDS_EV) {
        d->holds_dirty = true;
        d->nholds_ev = 0;
        return;
    }
    d->holds_ev[d->nholds_ev++] = id;
}

void tessd_holds_check(tessd_t *d)
{
    bool all = d->holds_dirty;
    size_t n = all ? 0 : d->nholds_ev;
    if (!all && n == 0)
        return;
    /* The jobs of this check; what it does itself (a cancel: a job that ended) is noted for
     * the next one. */
    int64_t ids[TESSD_HOLDS_EV];
    memcpy(ids, d->holds_ev, n * sizeof ids[0]);
    d->holds_dirty = false;
    d->nholds_ev = 0;
    holds_t c = {d, 0, 0, 0};
    tsl_error_t err;
    if (tstore_held_list(d->store, all ? NULL : ids, n, hold_one, &c, &err) < 0) {
        tessd_log("held jobs: %s (all checked again at the next tick)", err.text);
        c.failed++;
    }
    if (c.failed) {
        d->holds_dirty = true;
        d->nholds_ev = 0;
    }
}

int tessd_array_env(tessd_t *d, const tstore_job_t *j, char out[TESSD_ARRAY_ENV][64],
                    tsl_error_t *err)
{
    if (!j->array_id)
        return 0;
    int64_t count;
    int min, max;
    if (tstore_array_stat(d->store, j->array_id, &count, &min, &max, err) < 0)
        return -1;
    snprintf(out[0], 64, "TESSEL_ARRAY_JOB_ID=%lld", (long long)j->array_id);
    snprintf(out[1], 64, "TESSEL_ARRAY_TASK_ID=%d", j->array_index);
    snprintf(out[2], 64, "TESSEL_ARRAY_TASK_COUNT=%lld", (long long)count);
    snprintf(out[3], 64, "TESSEL_ARRAY_TASK_MIN=%d", min);
    snprintf(out[4], 64, "TESSEL_ARRAY_TASK_MAX=%d", max);
    return TESSD_ARRAY_ENV;
}
