/* histwrite.c - the write path of the usage history (histagg.h): aggregate, store, prune. */
#include <errno.h>
#include <stdlib.h>

#include "daemon/histagg.h"

thist_writer_t *thist_writer_new(const thist_plan_t *p)
{
    thist_writer_t *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->plan = *p;
    if (!(w->agg = thist_agg_new(p))) {
        free(w);
        errno = ENOMEM;
        return NULL;
    }
    return w;
}

void thist_writer_free(thist_writer_t *w)
{
    if (!w)
        return;
    thist_agg_free(w->agg);
    thist_rows_free(&w->rows);
    free(w);
}

int thist_write(thist_writer_t *w, tstore_t *st, int64_t t, const tstore_hist_t *s, size_t n,
                tsl_error_t *err)
{
    w->rows.n = 0;
    int fed = thist_agg_feed(w->agg, t, s, n, &w->rows);
    /* Before the put: a put that fails half-way may have kept some rows. */
    for (int k = 0; k < THIST_NTIERS; k++)
        for (size_t i = 0; i < w->rows.n; i++)
            if (w->rows.v[i].step == w->plan.tier[k].step) {
                w->gen[k]++;
                break;
            }
    if (fed < 0) {
        errno = ENOMEM;
        return tsl_errprintf(err, "history: out of memory");
    }
    if (tstore_hist_put(st, w->rows.v, w->rows.n, err) < 0)
        return -1;
    if (t >= w->next_prune) {
        for (int k = 0; k < THIST_NTIERS; k++) {
            /* Tiers of the same step (a 60 s interval: tiers 0 and 1) share their rows: they
             * go with the longest keep of them. */
            int64_t keep = w->plan.tier[k].keep;
            for (int j = 0; j < THIST_NTIERS; j++)
                if (w->plan.tier[j].step == w->plan.tier[k].step && w->plan.tier[j].keep > keep)
                    keep = w->plan.tier[j].keep;
            for (int sc = 0; sc < TSTORE_HIST_NSCOPES; sc++) {
                int64_t gone = tstore_hist_prune(st, w->plan.tier[k].step, (tstore_hist_scope_t)sc,
                                                 t - keep, err);
                if (gone != 0)
                    for (int j = 0; j < THIST_NTIERS; j++)
                        if (w->plan.tier[j].step == w->plan.tier[k].step)
                            w->gen[j]++;
                if (gone < 0)
                    return -1;
            }
        }
        w->next_prune = t + THIST_PRUNE_S;
    }
    return 0;
}
