/* history.c - GET /v1/history: the usage history that tesseld keeps (src/daemon/history.c,
 * histagg.h), per GPU, queue or user, at the resolution that fits the range asked.
 *
 *   GET /v1/history?scope=gpu|queue|user&range=1h|1d|1w|<duration>[&name=NAME]
 *                  [&fields=t,busy,...]
 *
 * Who may read what, as the rest of the API: GPUs and queues are every caller's to see (as
 * GET /v1/gpus and /v1/queues), a user's history is their own; an admin sees everyone's.  A
 * user who asks for scope=user without a name gets their own series.
 *
 * The answer (docs/api.md): {"scope", "range", "step", "start", "end", "interval",
 * "retention", "series": [{"name", ("gpu": index, for GPUs), "t": [...], "samples": [...],
 * "idle": [...], "busy": [...], "busy_max": [...], "mem_used": [...], "mem_alloc": [...],
 * "milli": [...], "running": [...], "pending": [...]}]}: one column per figure, one entry per
 * interval that has a row (a gap where tesseld took no sample); "idle" is the fraction of the
 * interval's samples with no job on the GPU, and "busy" is null where no sample had a job
 * and a measured figure: an idle GPU is never "0 % busy".  ?fields= names the columns wanted
 * ("t" always comes): the console's week of 8 GPUs is then 0.30 MB instead of 0.47.  Reals are
 * written with 15 significant digits (values rounded to hundredths: 71.48, not jansson's
 * default 71.480000000000004).
 *
 * Kept answers (histcache.h).  Building a week's answer is most of its cost (8 GPUs: 8,064
 * rows, 80,000 JSON values, 0.5 MB, ~40 ms under the big lock, during which no other request
 * is answered), and its rows change only when the history writer puts or prunes rows of its
 * tier (every 10 minutes for the week's): the "series" text is kept with the tier's
 * generation and given again until that moves; the rest of the answer ("end", ...) is made
 * anew each time.  Under the big lock.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/api/api.h"
#include "daemon/histcache.h"

static const char *const scope_names[TSTORE_HIST_NSCOPES] = {"gpu", "queue", "user"};
/* 15 significant digits: every value is rounded to hundredths well below 10^13. */
#define DUMP_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(15))

typedef struct {
    tessd_t *d;
    unsigned fields; /* the columns asked (THIST_F_ bits) */
    json_t *series;  /* array */
    json_t *index;   /* name -> position in series */
} build_t;

static json_t *real_or_null(double v)
{
    return isnan(v) ? json_null() : json_real(round(v * 100) / 100);
}

static json_t *series_of(build_t *b, const tstore_hist_t *r)
{
    json_t *i = json_object_get(b->index, r->name);
    if (i)
        return json_array_get(b->series, (size_t)json_integer_value(i));
    json_t *s = json_pack("{s:s}", "name", r->name);
    if (r->scope == TSTORE_HIST_GPU)
        for (int g = 0; g < b->d->ngpus; g++)
            if (strcmp(b->d->gpus[g].uuid, r->name) == 0)
                json_object_set_new(s, "gpu", json_integer(g));
    for (int c = 0; c < THIST_NFIELDS; c++)
        if (b->fields & (1u << c))
            json_object_set_new(s, thist_field_names[c], json_array());
    json_object_set_new(b->index, r->name, json_integer((json_int_t)json_array_size(b->series)));
    json_array_append_new(b->series, s);
    return s;
}

/* Column c (THIST_F_) of row r, as the answer writes it. */
static json_t *column(const tstore_hist_t *r, int c)
{
    switch (c) {
    case THIST_F_T:
        return json_integer(r->t);
    case THIST_F_SAMPLES:
        return json_integer(r->n);
    case THIST_F_IDLE:
        return json_real(r->n ? round(100.0 * r->idle / r->n) / 100 : 0);
    case THIST_F_BUSY:
        return real_or_null(r->busy);
    case THIST_F_BUSY_MAX:
        return real_or_null(r->busy_max);
    case THIST_F_MEM_USED:
        return json_integer((json_int_t)llround(r->mem_used));
    case THIST_F_MEM_ALLOC:
        return json_integer((json_int_t)llround(r->mem_alloc));
    case THIST_F_MILLI:
        return real_or_null(r->milli);
    case THIST_F_RUNNING:
        return real_or_null(r->running);
    default:
        return real_or_null(r->pending);
    }
}

static int add_row(const tstore_hist_t *r, void *arg)
{
    build_t *b = arg;
    json_t *s = series_of(b, r);
    for (int c = 0; c < THIST_NFIELDS; c++)
        if (b->fields & (1u << c))
            json_array_append_new(json_object_get(s, thist_field_names[c]), column(r, c));
    return 0;
}

void api_history_cache_free(tessd_t *d)
{
    thist_cache_free(d->hist_cache);
    d->hist_cache = NULL;
}

/* The answer: head's fields and then "series" (JSON text), as text. */
static void reply_with_series(thttp_reply_t *rep, json_t *head, const char *series)
{
    char *h = json_dumps(head, JSON_COMPACT);
    json_decref(head);
    size_t hl = h ? strlen(h) : 0, sl = strlen(series);
    char *out = h && hl >= 2 ? malloc(hl + sl + 16) : NULL;
    if (!out) {
        free(h);
        thttp_error(rep, 500, "internal", NULL, "out of memory");
        return;
    }
    /* head is an object with fields: "{...}" becomes "{...,"series":SERIES}". */
    memcpy(out, h, hl - 1);
    size_t n = hl - 1;
    memcpy(out + n, ",\"series\":", 10);
    n += 10;
    memcpy(out + n, series, sl);
    n += sl;
    out[n++] = '}';
    out[n] = '\0';
    free(h);
    rep->status = 200;
    rep->text = out;
    rep->text_len = n;
    rep->content_type = "application/json";
}

void api_history(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    const char *scope_s = thttp_query(req, "scope");
    const char *range_s = thttp_query(req, "range");
    const char *name = thttp_query(req, "name");
    const char *fields_s = thttp_query(req, "fields");
    int scope = -1;
    for (int i = 0; i < TSTORE_HIST_NSCOPES; i++)
        if (strcmp(scope_s ? scope_s : "gpu", scope_names[i]) == 0)
            scope = i;
    if (scope < 0) {
        thttp_error(rep, 400, "invalid_value", "scope", "scope must be gpu, queue or user");
        return;
    }
    int64_t range;
    tsl_error_t err;
    if (thist_parse_range(range_s ? range_s : "1h", &range, &err) < 0) {
        thttp_error(rep, 400, "invalid_value", "range", "range %s", err.text);
        return;
    }
    if (name && (!*name || strlen(name) >= TSTORE_HIST_NAME_MAX)) {
        thttp_error(rep, 400, "invalid_value", "name", "name must be 1 to %d bytes",
                    TSTORE_HIST_NAME_MAX - 1);
        return;
    }
    unsigned fields = THIST_FIELDS_ALL;
    if (fields_s && thist_parse_fields(fields_s, &fields, &err) < 0) {
        thttp_error(rep, 400, "invalid_value", "fields", "fields: %s", err.text);
        return;
    }
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who))
        return;
    if (scope == TSTORE_HIST_USER && !who.admin) {
        if (name && strcmp(name, who.user) != 0) {
            thttp_error(rep, 403, "forbidden", "name",
                        "only an admin may read other users' history");
            api_leave(d);
            return;
        }
        name = who.user;
    }
    const thist_plan_t *p = &d->hist->plan;
    if (range > p->tier[THIST_NTIERS - 1].keep) {
        thttp_error(rep, 400, "invalid_value", "range",
                    "range %s is longer than the history kept (--history-retention %llds)", range_s,
                    (long long)p->tier[THIST_NTIERS - 1].keep);
        api_leave(d);
        return;
    }
    int tier = thist_pick(p, range);
    int64_t step = p->tier[tier].step;
    int64_t end = tessd_now_ms() / 1000;
    int64_t start = end - range;
    start -= ((start % step) + step) % step; /* the interval that holds start */
    json_t *head = json_pack("{s:s, s:I, s:I, s:I, s:I, s:i, s:I}", "scope", scope_names[scope],
                             "range", (json_int_t)range, "step", (json_int_t)step, "start",
                             (json_int_t)start, "end", (json_int_t)end, "interval", p->tier[0].step,
                             "retention", (json_int_t)p->tier[THIST_NTIERS - 1].keep);
    if (!head) {
        thttp_error(rep, 500, "internal", NULL, "out of memory");
        api_leave(d);
        return;
    }
    /* Rows of intervals that ended: the answer's rows are those of [start, end] (the
     * interval under way has none), the same until the tier's rows change. */
    thist_key_t key = {scope, tier, start, name, fields};
    const char *kept = thist_cache_get(d->hist_cache, &key, d->hist->gen[tier]);
    if (kept) {
        reply_with_series(rep, head, kept);
        api_leave(d);
        return;
    }
    build_t b = {d, fields, json_array(), json_object()};
    char *series = NULL;
    if (tstore_hist_read(d->store, (int)step, (tstore_hist_scope_t)scope, start, end + 1, name,
                         add_row, &b, &err) < 0) {
        json_decref(head);
        api_store_failure(rep, "history", &err);
    } else if (!(series = json_dumps(b.series, DUMP_FLAGS))) {
        json_decref(head);
        thttp_error(rep, 500, "internal", NULL, "out of memory");
    } else {
        reply_with_series(rep, head, series);
        thist_cache_put(d->hist_cache, &key, d->hist->gen[tier], series);
    }
    json_decref(b.series);
    json_decref(b.index);
    api_leave(d);
}
