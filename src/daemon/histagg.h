/* histagg.h - the pure part of tesseld's usage history: its tiers, the downsampling of raw
 * samples into coarser intervals, and which tier answers a range.  No store, no clock, no
 * HTTP: history.c feeds it the samples it takes and writes what it returns (histwrite.c).
 *
 * Tiers, like an RRD's archives or Prometheus recording rules over a short-lived raw series:
 *     tier 0: every sample (--history-interval, default 10 s), kept a day;
 *     tier 1: 1-minute means, kept a week;
 *     tier 2: 10-minute means, kept for --history-retention (default 8 days).
 * A tier never keeps longer than the retention.  A day of 10 s samples answers "the last
 * hour" at full resolution (360 points); a week of minutes answers "the last day" (1,440);
 * the 10-minute tier "the last week" (1,008).  The numbers are in docs/tesseld.md.
 *
 * Idle is not zero: a GPU sample with no job on the GPU is idle (idle = 1, busy NAN), so a
 * mean over an interval averages the busy figure over the samples with a job only, and says
 * how many were idle; a job that ran at 0 % is busy 0 with idle 0.
 */
#ifndef TESSEL_DAEMON_HISTAGG_H
#define TESSEL_DAEMON_HISTAGG_H

#include <stddef.h>
#include <stdint.h>

#include "libstore/store.h"
#include "libutil/error.h"

#define THIST_NTIERS 3
/* Default sampling interval and retention (--history-interval, --history-retention). */
#define THIST_INTERVAL_DEFAULT  10
#define THIST_RETENTION_DEFAULT (8 * 86400)
/* Longest retention: 400 days keeps a year with room; the 10-minute tier then holds 57,600
 * rows per series (about 5 MB for 8 GPUs, docs/tesseld.md). */
#define THIST_RETENTION_MAX (400 * 86400)
/* Most points a range is answered with, per series (tier choice, thist_pick). */
#define THIST_MAX_POINTS 1500

typedef struct {
    int step;     /* seconds per row */
    int64_t keep; /* seconds its rows are kept */
} thist_tier_t;

typedef struct {
    thist_tier_t tier[THIST_NTIERS];
} thist_plan_t;

/* The tiers for a sampling interval (seconds, a divisor of 60) and a retention (seconds, from
 * an hour to THIST_RETENTION_MAX).  0, or -1 with errno EINVAL and one line in err. */
int thist_plan(int interval, int64_t retention, thist_plan_t *p, tsl_error_t *err);
/* The tier that answers the last range seconds: the finest one that keeps the whole range
 * with at most THIST_MAX_POINTS points, else the coarsest.  range > 0. */
int thist_pick(const thist_plan_t *p, int64_t range);

/* A range as people write it: "1h", "1d", "1w" (a week), "90m", "2w", "1h30m"
 * (libutil/duration.h, with w for weeks), from 1 s to THIST_RETENTION_MAX.  0, or -1 with
 * errno EINVAL or ERANGE and one line in err. */
int thist_parse_range(const char *s, int64_t *seconds, tsl_error_t *err);

/* GET /v1/history's columns (docs/api.md), in the answer's order; a set of them is a mask of
 * (1u << THIST_F_...) bits. */
enum {
    THIST_F_T,
    THIST_F_SAMPLES,
    THIST_F_IDLE,
    THIST_F_BUSY,
    THIST_F_BUSY_MAX,
    THIST_F_MEM_USED,
    THIST_F_MEM_ALLOC,
    THIST_F_MILLI,
    THIST_F_RUNNING,
    THIST_F_PENDING,
    THIST_NFIELDS
};
#define THIST_FIELDS_ALL ((1u << THIST_NFIELDS) - 1)
extern const char *const thist_field_names[THIST_NFIELDS];
/* The columns a client asks for (?fields=t,busy,milli): names separated by commas, each one
 * of thist_field_names (a name twice is once); "t" is always in the set, asked or not.  0, or
 * -1 with errno EINVAL and one line in err (an empty list or name, an unknown name). */
int thist_parse_fields(const char *s, unsigned *mask, tsl_error_t *err);

/* One raw sample of a series at time t of tier 0 (n = 1; idle: 1 or 0; busy NAN when idle or
 * unknown). */
void thist_sample_init(tstore_hist_t *s, tstore_hist_scope_t scope, const char *name, int64_t t,
                       int step);

/* Rows to write, grown by thist_agg_feed (the caller owns it; thist_rows_free). */
typedef struct {
    tstore_hist_t *v;
    size_t n, cap;
} thist_rows_t;
void thist_rows_free(thist_rows_t *r);

/* The open intervals of tiers 1.. of every series seen. */
typedef struct thist_agg thist_agg_t;
thist_agg_t *thist_agg_new(const thist_plan_t *p);
void thist_agg_free(thist_agg_t *a);
/* Feed the n samples taken at t (tier 0's step, t a multiple of it): first every open
 * interval that ends at or before t is closed and appended to out (a series with no sample
 * in it then has none of its rows: nothing is made up), then the samples are added to the
 * intervals they fall in.  The samples themselves are appended to out too (tier 0).
 * 0, or -1 with errno ENOMEM (some rows of this call may then be missing from out). */
int thist_agg_feed(thist_agg_t *a, int64_t t, const tstore_hist_t *s, size_t n, thist_rows_t *out);
/* Series with an open interval (for tests and the benchmark). */
size_t thist_agg_open(const thist_agg_t *a);

/* histwrite.c: the write path of the history, shared by tesseld (history.c), the test seeder
 * and the benchmark: feed the aggregator, write its rows in one transaction, prune each tier
 * of what is older than it keeps (at the first write, then every THIST_PRUNE_S). */
#define THIST_PRUNE_S 600
typedef struct {
    thist_plan_t plan;
    thist_agg_t *agg;
    thist_rows_t rows;
    int64_t next_prune;
    /* Per tier, bumped whenever the tier's rows may have changed (rows put or pruned, also by
     * a write that failed half-way): a reader that kept an answer of the tier knows it is
     * stale when the count moved (GET /v1/history's cache). */
    uint64_t gen[THIST_NTIERS];
} thist_writer_t;
/* NULL with errno ENOMEM. */
thist_writer_t *thist_writer_new(const thist_plan_t *p);
void thist_writer_free(thist_writer_t *w);
/* The n samples taken at t (thist_agg_feed) into st.  0, or -1 with err (the rows of this
 * call are lost; the next call goes on).  Bumps gen of every tier whose rows it touched. */
int thist_write(thist_writer_t *w, tstore_t *st, int64_t t, const tstore_hist_t *s, size_t n,
                tsl_error_t *err);

#endif
