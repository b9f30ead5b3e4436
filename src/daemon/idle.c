/* idle.c - idle reclamation's decisions (idle.h; docs/suspend.md, "Idle reclamation"). */
#include <errno.h>
#include <string.h>

#include "daemon/idle.h"
#include "daemon/queuetree.h"
#include "libutil/duration.h"

int64_t tessd_idle_effective(int64_t own_s, int64_t queue_s, int64_t own_min_s)
{
    if (own_s > 0)
        return own_s < own_min_s ? own_min_s : own_s;
    if (own_s < 0)
        return 0;
    return queue_s > 0 ? queue_s : 0;
}

int64_t tessd_idle_own(const tstore_queue_t *q)
{
    return q->idle_reclaim_s;
}

int64_t tessd_idle_queue(const tstore_queue_t *qs, size_t nq, const char *name, const char **from)
{
    const tstore_queue_t *q = tessd_queue_inherited(qs, nq, name, tessd_idle_own);
    if (from)
        *from = q ? q->name : "";
    return q ? q->idle_reclaim_s : 0;
}

bool tessd_idle_within_queue(int64_t own_s, int64_t queue_s)
{
    if (queue_s <= 0 || own_s == 0)
        return true;
    return own_s > 0 && own_s <= queue_s;
}

tessd_idle_verdict_t tessd_idle_look(int64_t idle_s, bool work, int64_t *since_ms, int64_t now_ms)
{
    if (idle_s <= 0) {
        *since_ms = 0;
        return TESSD_IDLE_OFF;
    }
    /* The first look starts the count: what the job did before it is not known (a restart of
     * tesseld, a setting just turned on), so it gets a whole idle time from now. */
    if (work || *since_ms <= 0 || *since_ms > now_ms) {
        *since_ms = now_ms;
        return TESSD_IDLE_ACTIVE;
    }
    return now_ms - *since_ms >= idle_s * 1000 ? TESSD_IDLE_RECLAIM : TESSD_IDLE_WAIT;
}

int tessd_idle_parse(const char *s, int64_t *secs, tsl_error_t *err)
{
    if (!s) {
        errno = EINVAL;
        return tsl_errprintf(err, "idle reclaim: no value");
    }
    if (strcmp(s, "off") == 0) {
        *secs = 0;
        return 0;
    }
    tsl_error_t e;
    int64_t v;
    if (tsl_parse_seconds(s, TESSD_IDLE_RECLAIM_MAX, &v, &e) < 0)
        return tsl_errprintf(err,
                             "idle reclaim '%.40s': %s (give \"off\" or a duration such as "
                             "\"30m\", at most 30 days)",
                             s, e.text);
    *secs = v;
    return 0;
}
