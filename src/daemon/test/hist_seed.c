/* hist_seed.c - TEST ONLY: fill a tesseld store with past usage history through the real
 * write path (thist_write: tier 0 rows, the coarser tiers' means, pruning), for the tests of
 * GET /v1/history and of the console's history views.  tesseld must not be running on the
 * store.
 *
 *   tessel-hist-seed DB INTERVAL RETENTION SPAN [END]  < SERIES
 *
 * Samples every INTERVAL seconds from END - SPAN up to END (Unix seconds, default now; all
 * durations as tesseld's flags take them: 10s, 1m, 8d, 1w).  SERIES: one series a line,
 *   SCOPE NAME BUSY IDLE MEM_USED MEM_ALLOC MILLI RUNNING PENDING
 * SCOPE gpu, queue or user; BUSY a percentage or "-" (none); IDLE 0 or 1; the rest numbers.
 * Every sample of a series has the same figures.  Exit 0, or 1 with one line on stderr.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/histagg.h"

#define MAX_SERIES 64

int main(int argc, char **argv)
{
    if (argc < 5 || argc > 6) {
        fprintf(stderr, "usage: tessel-hist-seed DB INTERVAL RETENTION SPAN [END] < SERIES\n");
        return 1;
    }
    int64_t interval, retention, span, end = (int64_t)time(NULL);
    tsl_error_t err;
    if (thist_parse_range(argv[2], &interval, &err) < 0 ||
        thist_parse_range(argv[3], &retention, &err) < 0 ||
        thist_parse_range(argv[4], &span, &err) < 0) {
        fprintf(stderr, "tessel-hist-seed: %s\n", err.text);
        return 1;
    }
    if (argc == 6)
        end = strtoll(argv[5], NULL, 10);
    thist_plan_t plan;
    if (thist_plan((int)interval, retention, &plan, &err) < 0) {
        fprintf(stderr, "tessel-hist-seed: %s\n", err.text);
        return 1;
    }
    tstore_hist_t s[MAX_SERIES];
    size_t n = 0;
    char line[512];
    while (fgets(line, sizeof line, stdin) && n < MAX_SERIES) {
        char scope[16], name[TSTORE_HIST_NAME_MAX], busy[32];
        unsigned idle;
        double used, alloc, milli, running, pending;
        if (sscanf(line, "%15s %95s %31s %u %lf %lf %lf %lf %lf", scope, name, busy, &idle, &used,
                   &alloc, &milli, &running, &pending) != 9) {
            fprintf(stderr, "tessel-hist-seed: bad series line: %s", line);
            return 1;
        }
        tstore_hist_scope_t sc = strcmp(scope, "gpu") == 0     ? TSTORE_HIST_GPU
                                 : strcmp(scope, "queue") == 0 ? TSTORE_HIST_QUEUE
                                                               : TSTORE_HIST_USER;
        thist_sample_init(&s[n], sc, name, 0, (int)interval);
        s[n].idle = idle ? 1 : 0;
        s[n].busy = s[n].busy_max = strcmp(busy, "-") == 0 ? NAN : strtod(busy, NULL);
        s[n].mem_used = used;
        s[n].mem_alloc = alloc;
        s[n].milli = milli;
        s[n].running = running;
        s[n].pending = pending;
        n++;
    }
    tstore_t *st = tstore_open(argv[1], &err);
    thist_writer_t *w = thist_writer_new(&plan);
    if (!st || !w) {
        fprintf(stderr, "tessel-hist-seed: %s\n", st ? "out of memory" : err.text);
        return 1;
    }
    int rc = 0;
    end -= end % interval;
    for (int64_t t = end - span; t <= end && rc == 0; t += interval) {
        for (size_t i = 0; i < n; i++)
            s[i].t = t;
        rc = thist_write(w, st, t, s, n, &err);
    }
    if (rc < 0)
        fprintf(stderr, "tessel-hist-seed: %s\n", err.text);
    thist_writer_free(w);
    tstore_close(st);
    return rc < 0;
}
