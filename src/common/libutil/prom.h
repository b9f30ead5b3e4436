/* prom.h - Prometheus text exposition (format 0.0.4) and histograms, for /metrics.
 *
 * tsl_prom_t builds the text: a family's HELP and TYPE lines once, then its samples, label
 * values and help text escaped as the format asks (backslash, double quote, newline).  An
 * allocation that fails marks the buffer failed; tsl_prom_take then gives NULL, so a scrape
 * never serves a cut text.
 *
 * tsl_hist_t is a Prometheus histogram with fixed upper bounds: observations may come from any
 * thread while another reads it (counts and sum are atomics; a reader computes _count from the
 * buckets it read, so _count always equals the +Inf bucket).  The sum is kept in millionths
 * (of seconds: a microsecond), enough for 500,000 years of summed durations.
 */
#ifndef TESSEL_LIBUTIL_PROM_H
#define TESSEL_LIBUTIL_PROM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Most finite buckets of a histogram (+Inf comes on top). */
#define TSL_HIST_MAX 24

typedef struct {
    size_t n;                                       /* finite buckets */
    double le[TSL_HIST_MAX];                        /* their upper bounds, increasing */
    atomic_uint_least64_t bucket[TSL_HIST_MAX + 1]; /* per bucket, not cumulative; [n] = +Inf */
    atomic_uint_least64_t sum_micro;                /* sum of observations x 1e6 */
} tsl_hist_t;

/* Set the bounds (n <= TSL_HIST_MAX, finite, strictly increasing) and zero the counts.
 * 0, or -1 with errno EINVAL.  A zeroed tsl_hist_t is a valid histogram with +Inf alone. */
int tsl_hist_init(tsl_hist_t *h, const double *le, size_t n);
/* Count v (a negative or NaN v counts as 0). */
void tsl_hist_observe(tsl_hist_t *h, double v);

/* Bounds for durations from a second to a week (15 buckets), and for short work from 100 us
 * to 2.5 s (14 buckets, the scheduling pass). */
extern const double tsl_hist_seconds_to_days[];
extern const size_t tsl_hist_seconds_to_days_n;
extern const double tsl_hist_sub_second[];
extern const size_t tsl_hist_sub_second_n;

typedef struct {
    const char *name, *value;
} tsl_label_t;

typedef struct {
    char *buf;
    size_t len, cap;
    bool failed;
} tsl_prom_t;

/* "# HELP name help" and "# TYPE name type" (type: counter, gauge, histogram, info...). */
void tsl_prom_family(tsl_prom_t *p, const char *name, const char *type, const char *help);
/* name{labels} value: an integer, or a double (%.17g; +Inf, -Inf, NaN as the format writes
 * them).  nl labels; names are the caller's (never user input), values are escaped. */
void tsl_prom_u64(tsl_prom_t *p, const char *name, const tsl_label_t *l, size_t nl, uint64_t v);
void tsl_prom_i64(tsl_prom_t *p, const char *name, const tsl_label_t *l, size_t nl, int64_t v);
void tsl_prom_f64(tsl_prom_t *p, const char *name, const tsl_label_t *l, size_t nl, double v);
/* The samples of histogram h: name_bucket{labels,le="..."} (cumulative, +Inf last), name_sum
 * and name_count. */
void tsl_prom_hist(tsl_prom_t *p, const char *name, const tsl_label_t *l, size_t nl,
                   const tsl_hist_t *h);
/* Raw text (printf), for lines the helpers do not cover. */
void tsl_prom_printf(tsl_prom_t *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The text (NUL-terminated, *len its length) for the caller to free, or NULL after a failed
 * allocation (the buffer is freed either way). */
char *tsl_prom_take(tsl_prom_t *p, size_t *len);

#endif
