/* histagg.c - tiers and downsampling of the usage history (histagg.h). */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/histagg.h"
#include "libutil/duration.h"

/* Steps and natural lengths of the tiers above tier 0 (histagg.h). */
static const thist_tier_t coarse[THIST_NTIERS - 1] = {{60, 7 * 86400}, {600, 0}};
/* Tier 0 is kept a day. */
#define TIER0_KEEP 86400

int thist_plan(int interval, int64_t retention, thist_plan_t *p, tsl_error_t *err)
{
    if (interval < 1 || interval > 60 || 60 % interval != 0) {
        errno = EINVAL;
        return tsl_errprintf(err, "history interval %ds: expected a divisor of 60 s (1s to 60s)",
                             interval);
    }
    if (retention < 3600 || retention > THIST_RETENTION_MAX) {
        errno = EINVAL;
        return tsl_errprintf(err, "history retention %llds: expected 1h to %dd",
                             (long long)retention, THIST_RETENTION_MAX / 86400);
    }
    p->tier[0] = (thist_tier_t){interval, TIER0_KEEP < retention ? TIER0_KEEP : retention};
    for (int k = 1; k < THIST_NTIERS; k++) {
        int64_t keep = coarse[k - 1].keep;
        p->tier[k] =
            (thist_tier_t){coarse[k - 1].step, keep && keep < retention ? keep : retention};
    }
    /* With a 60 s interval tier 1 repeats tier 0: harmless (the same means, kept longer). */
    return 0;
}

int thist_pick(const thist_plan_t *p, int64_t range)
{
    for (int k = 0; k < THIST_NTIERS; k++)
        if (p->tier[k].keep >= range && range / p->tier[k].step <= THIST_MAX_POINTS)
            return k;
    return THIST_NTIERS - 1;
}

int thist_parse_range(const char *s, int64_t *seconds, tsl_error_t *err)
{
    size_t n = strlen(s);
    int64_t v;
    if (n >= 2 && s[n - 1] == 'w' && strspn(s, "0123456789") == n - 1 && n - 1 <= 3) {
        v = strtoll(s, NULL, 10) * 7 * 86400;
        if (v == 0) {
            errno = EINVAL;
            return tsl_errprintf(err, "'%s': expected a range above 0", s);
        }
        if (v > THIST_RETENTION_MAX) {
            errno = ERANGE;
            return tsl_errprintf(err, "'%s': longer than %dd", s, THIST_RETENTION_MAX / 86400);
        }
    } else if (tsl_parse_seconds(s, THIST_RETENTION_MAX, &v, err) < 0) {
        return -1;
    } else if (v == 0) {
        errno = EINVAL;
        return tsl_errprintf(err, "'%s': expected a range above 0", s);
    }
    *seconds = v;
    return 0;
}

const char *const thist_field_names[THIST_NFIELDS] = {
    "t",        "samples",   "idle",  "busy",    "busy_max",
    "mem_used", "mem_alloc", "milli", "running", "pending",
};

int thist_parse_fields(const char *s, unsigned *mask, tsl_error_t *err)
{
    unsigned m = 1u << THIST_F_T;
    for (const char *p = s;; p++) {
        size_t n = strcspn(p, ",");
        int f = -1;
        for (int i = 0; i < THIST_NFIELDS && n; i++)
            if (strlen(thist_field_names[i]) == n && memcmp(p, thist_field_names[i], n) == 0)
                f = i;
        if (f < 0) {
            /* The one line names the columns there are, and the unknown one as printable
             * ASCII (it is the client's text, and goes back in a JSON string). */
            char names[128] = "", bad[33];
            for (int i = 0; i < THIST_NFIELDS; i++)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
                         thist_field_names[i]);
            size_t k = 0;
            for (; k < n && k < sizeof bad - 1; k++)
                bad[k] = p[k] >= 0x20 && p[k] < 0x7f ? p[k] : '?';
            bad[k] = '\0';
            errno = EINVAL;
            if (!n)
                return tsl_errprintf(err,
                                     "an empty column name: expected some of %s, separated by "
                                     "commas",
                                     names);
            return tsl_errprintf(err, "unknown column '%s': expected some of %s", bad, names);
        }
        m |= 1u << f;
        p += n;
        if (!*p)
            break;
    }
    *mask = m;
    return 0;
}

void thist_sample_init(tstore_hist_t *s, tstore_hist_scope_t scope, const char *name, int64_t t,
                       int step)
{
    memset(s, 0, sizeof *s);
    s->scope = scope;
    snprintf(s->name, sizeof s->name, "%s", name);
    s->t = t;
    s->step = step;
    s->n = 1;
    s->busy = NAN;
    s->busy_max = NAN;
}

void thist_rows_free(thist_rows_t *r)
{
    free(r->v);
    *r = (thist_rows_t){0};
}

static int rows_push(thist_rows_t *r, const tstore_hist_t *row)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 64;
        tstore_hist_t *v = realloc(r->v, cap * sizeof *v);
        if (!v)
            return -1;
        r->v = v;
        r->cap = cap;
    }
    r->v[r->n++] = *row;
    return 0;
}

/* An open interval of one series in one tier: sums over its samples. */
typedef struct {
    int tier;
    tstore_hist_scope_t scope;
    char name[TSTORE_HIST_NAME_MAX];
    int64_t t;
    uint32_t n, idle, nbusy;
    double busy, busy_max, mem_used, mem_alloc, milli, running, pending;
} acc_t;

struct thist_agg {
    thist_plan_t plan;
    acc_t *v; /* a few hundred series at most (GPUs, queues, users): searched in order */
    size_t n, cap;
};

thist_agg_t *thist_agg_new(const thist_plan_t *p)
{
    thist_agg_t *a = calloc(1, sizeof *a);
    if (a)
        a->plan = *p;
    return a;
}

void thist_agg_free(thist_agg_t *a)
{
    if (!a)
        return;
    free(a->v);
    free(a);
}

size_t thist_agg_open(const thist_agg_t *a)
{
    return a->n;
}

static void acc_row(const thist_agg_t *a, const acc_t *c, tstore_hist_t *r)
{
    memset(r, 0, sizeof *r);
    r->scope = c->scope;
    memcpy(r->name, c->name, sizeof r->name);
    r->t = c->t;
    r->step = a->plan.tier[c->tier].step;
    r->n = c->n;
    r->idle = c->idle;
    r->busy = c->nbusy ? c->busy / c->nbusy : NAN;
    r->busy_max = c->nbusy ? c->busy_max : NAN;
    double n = c->n ? c->n : 1;
    r->mem_used = c->mem_used / n;
    r->mem_alloc = c->mem_alloc / n;
    r->milli = c->milli / n;
    r->running = c->running / n;
    r->pending = c->pending / n;
}

static void acc_add(acc_t *c, const tstore_hist_t *s)
{
    c->n += s->n;
    c->idle += s->idle;
    if (!isnan(s->busy)) {
        c->busy += s->busy * s->n;
        c->nbusy += s->n;
        double mx = isnan(s->busy_max) ? s->busy : s->busy_max;
        if (c->nbusy == s->n || mx > c->busy_max)
            c->busy_max = mx;
    }
    c->mem_used += s->mem_used * s->n;
    c->mem_alloc += s->mem_alloc * s->n;
    c->milli += s->milli * s->n;
    c->running += s->running * s->n;
    c->pending += s->pending * s->n;
}

static acc_t *acc_find(thist_agg_t *a, int tier, const tstore_hist_t *s)
{
    for (size_t i = 0; i < a->n; i++)
        if (a->v[i].tier == tier && a->v[i].scope == s->scope && strcmp(a->v[i].name, s->name) == 0)
            return &a->v[i];
    return NULL;
}

int thist_agg_feed(thist_agg_t *a, int64_t t, const tstore_hist_t *s, size_t n, thist_rows_t *out)
{
    /* Close what ended by t. */
    size_t keep = 0;
    for (size_t i = 0; i < a->n; i++) {
        acc_t *c = &a->v[i];
        if (c->t + a->plan.tier[c->tier].step <= t) {
            tstore_hist_t r;
            acc_row(a, c, &r);
            if (rows_push(out, &r) < 0)
                return -1;
            continue;
        }
        a->v[keep++] = *c;
    }
    a->n = keep;
    for (size_t i = 0; i < n; i++) {
        if (rows_push(out, &s[i]) < 0)
            return -1;
        for (int k = 1; k < THIST_NTIERS; k++) {
            int64_t step = a->plan.tier[k].step;
            int64_t bucket = t - ((t % step) + step) % step;
            acc_t *c = acc_find(a, k, &s[i]);
            if (c && c->t != bucket) {
                /* The clock went back: the interval ends here. */
                tstore_hist_t r;
                acc_row(a, c, &r);
                if (rows_push(out, &r) < 0)
                    return -1;
                memset(c, 0, sizeof *c);
                c->tier = k;
                c->scope = s[i].scope;
                memcpy(c->name, s[i].name, sizeof c->name);
                c->t = bucket;
            }
            if (!c) {
                if (a->n == a->cap) {
                    size_t cap = a->cap ? a->cap * 2 : 32;
                    acc_t *v = realloc(a->v, cap * sizeof *v);
                    if (!v)
                        return -1;
                    a->v = v;
                    a->cap = cap;
                }
                c = &a->v[a->n++];
                memset(c, 0, sizeof *c);
                c->tier = k;
                c->scope = s[i].scope;
                memcpy(c->name, s[i].name, sizeof c->name);
                c->t = bucket;
            }
            acc_add(c, &s[i]);
        }
    }
    return 0;
}
