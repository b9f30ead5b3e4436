/* prom.c - Prometheus text exposition and histograms (prom.h). */
#include "libutil/prom.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Seconds to a week: a job waits or runs from seconds (an idle GPU) to days (a long
 * training run, a queue over its quota). */
const double tsl_hist_seconds_to_days[] = {1,    5,    15,    30,    60,    300,    900,   1800,
                                           3600, 7200, 14400, 28800, 86400, 259200, 604800};
const size_t tsl_hist_seconds_to_days_n =
    sizeof tsl_hist_seconds_to_days / sizeof tsl_hist_seconds_to_days[0];
/* 100 us to 2.5 s: a pass with a few running jobs takes ~100 us, 20,000 pending ~25 ms. */
const double tsl_hist_sub_second[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                      0.025,  0.05,    0.1,    0.25,  0.5,    1,     2.5};
const size_t tsl_hist_sub_second_n = sizeof tsl_hist_sub_second / sizeof tsl_hist_sub_second[0];

int tsl_hist_init(tsl_hist_t *h, const double *le, size_t n)
{
    if (n > TSL_HIST_MAX || (n && !le)) {
        errno = EINVAL;
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(le[i]) || (i > 0 && !(le[i] > le[i - 1]))) {
            errno = EINVAL;
            return -1;
        }
    }
    h->n = n;
    for (size_t i = 0; i < n; i++)
        h->le[i] = le[i];
    for (size_t i = 0; i <= TSL_HIST_MAX; i++)
        atomic_store(&h->bucket[i], 0);
    atomic_store(&h->sum_micro, 0);
    return 0;
}

void tsl_hist_observe(tsl_hist_t *h, double v)
{
    if (!(v > 0)) /* negative or NaN: a clock step; counted as nothing spent */
        v = 0;
    size_t i = 0;
    while (i < h->n && v > h->le[i])
        i++;
    atomic_fetch_add(&h->bucket[i], 1);
    double micro = v * 1e6 + 0.5;
    atomic_fetch_add(&h->sum_micro, micro < 1.8e19 ? (uint_least64_t)micro : UINT64_MAX / 2);
}

void tsl_prom_printf(tsl_prom_t *p, const char *fmt, ...)
{
    if (p->failed)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(p->buf ? p->buf + p->len : NULL, p->buf ? p->cap - p->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            p->failed = true;
            return;
        }
        if (p->buf && p->len + (size_t)n < p->cap) {
            p->len += (size_t)n;
            return;
        }
        size_t cap = p->cap ? p->cap * 2 : 4096;
        while (cap < p->len + (size_t)n + 1)
            cap *= 2;
        char *b = realloc(p->buf, cap);
        if (!b) {
            p->failed = true;
            return;
        }
        p->buf = b;
        p->cap = cap;
    }
}

/* s escaped: backslash and newline always, the double quote in label values. */
static void put_escaped(tsl_prom_t *p, const char *s, bool quote)
{
    const char *run = s;
    for (; *s; s++) {
        const char *esc = *s == '\\'           ? "\\\\"
                          : *s == '\n'         ? "\\n"
                          : quote && *s == '"' ? "\\\""
                                               : NULL;
        if (!esc)
            continue;
        tsl_prom_printf(p, "%.*s%s", (int)(s - run), run, esc);
        run = s + 1;
    }
    tsl_prom_printf(p, "%s", run);
}

void tsl_prom_family(tsl_prom_t *p, const char *name, const char *type, const char *help)
{
    tsl_prom_printf(p, "# HELP %s ", name);
    put_escaped(p, help, false);
    tsl_prom_printf(p, "\n# TYPE %s %s\n", name, type);
}

static void put_labels(tsl_prom_t *p, const tsl_label_t *l, size_t nl, const char *le)
{
    if (!nl && !le)
        return;
    tsl_prom_printf(p, "{");
    for (size_t i = 0; i < nl; i++) {
        tsl_prom_printf(p, "%s%s=\"", i ? "," : "", l[i].name);
        put_escaped(p, l[i].value ? l[i].value : "", true);
        tsl_prom_printf(p, "\"");
    }
    if (le)
        tsl_prom_printf(p, "%sle=\"%s\"", nl ? "," : "", le);
    tsl_prom_printf(p, "}");
}

void tsl_prom_u64(tsl_prom_t *p, const char *name, const tsl_label_t *l, size_t nl, uint64_t v)
{
    tsl_prom_printf(p, "%s", name);
    put_labels(p, l, nl, NULL);
    tsl_prom_printf(p, " %llu\n", (unsigned long long)v);
}

void tsl_prom_i64(tsl_prom_t *p, const char *name, const tsl_label_t *l, size_t nl, int64_t v)
{
    tsl_prom_printf(p, "%s", name);
    put_labels(p, l, nl, NULL);
    tsl_prom_printf(p, " %lld\n", (long long)v);
}

static void fmt_double(char *out, size_t len, double v)
{
    if (isnan(v))
        snprintf(out, len, "NaN");
    else if (isinf(v))
        snprintf(out, len, "%s", v > 0 ? "+Inf" : "-Inf");
    else {
        /* The shortest of %.15g and %.17g that reads back as v (0.1, not 0.10000000000000001). */
        snprintf(out, len, "%.15g", v);
        if (strtod(out, NULL) != v)
            snprintf(out, len, "%.17g", v);
    }
}

void tsl_prom_f64(tsl_prom_t *p, const char *name, const tsl_label_t *l, size_t nl, double v)
{
    char num[40];
    fmt_double(num, sizeof num, v);
    tsl_prom_printf(p, "%s", name);
    put_labels(p, l, nl, NULL);
    tsl_prom_printf(p, " %s\n", num);
}

void tsl_prom_hist(tsl_prom_t *p, const char *name, const tsl_label_t *l, size_t nl,
                   const tsl_hist_t *h)
{
    uint64_t cum = 0;
    for (size_t i = 0; i <= h->n; i++) {
        cum += atomic_load(&h->bucket[i]);
        char le[40];
        fmt_double(le, sizeof le, i < h->n ? h->le[i] : INFINITY);
        tsl_prom_printf(p, "%s_bucket", name);
        put_labels(p, l, nl, le);
        tsl_prom_printf(p, " %llu\n", (unsigned long long)cum);
    }
    uint64_t micro = atomic_load(&h->sum_micro);
    tsl_prom_printf(p, "%s_sum", name);
    put_labels(p, l, nl, NULL);
    tsl_prom_printf(p, " %llu.%06llu\n", (unsigned long long)(micro / 1000000u),
                    (unsigned long long)(micro % 1000000u));
    tsl_prom_printf(p, "%s_count", name);
    put_labels(p, l, nl, NULL);
    tsl_prom_printf(p, " %llu\n", (unsigned long long)cum);
}

char *tsl_prom_take(tsl_prom_t *p, size_t *len)
{
    char *b = p->buf;
    if (p->failed || !b) {
        free(b);
        b = NULL;
    } else if (len) {
        *len = p->len;
    }
    p->buf = NULL;
    p->len = p->cap = 0;
    p->failed = false;
    return b;
}
