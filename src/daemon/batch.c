/* batch.c - time limits, dependencies and job arrays (batch.h): the pure parts, unit-tested
 * alone (test/test_batch.c); batch_store.c has the parts that use the store. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/batch.h"
#include "libutil/batchspec.h"

/* Whether an ended job in state st satisfies kind; st must be a final state. */
static bool dep_holds(int kind, tstore_state_t st)
{
    switch (kind) {
    case TSL_DEP_OK:
        return st == TSTORE_SUCCEEDED;
    case TSL_DEP_NOTOK:
        return st != TSTORE_SUCCEEDED;
    default:
        return true;
    }
}

static const char *dep_wants(int kind)
{
    switch (kind) {
    case TSL_DEP_OK:
        return "succeed";
    case TSL_DEP_NOTOK:
        return "fail";
    default:
        return "end";
    }
}

tessd_deps_t tessd_deps_eval(const tstore_dep_t *deps, size_t n, char *why, size_t len)
{
    tessd_deps_t v = TESSD_DEPS_MET;
    if (len)
        why[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        const tstore_dep_t *x = &deps[i];
        long long id = (long long)x->dep;
        if (!x->exists) {
            snprintf(why, len, "job %lld does not exist", id);
            return TESSD_DEPS_NEVER;
        }
        if (x->state == TSTORE_PENDING || x->state == TSTORE_RUNNING) {
            if (v == TESSD_DEPS_MET) {
                snprintf(why, len, "waiting for job %lld to %s", id, dep_wants(x->kind));
                v = TESSD_DEPS_WAIT;
            }
            continue;
        }
        if (!dep_holds(x->kind, x->state)) {
            snprintf(why, len, "job %lld %s (it had to %s)", id, tstore_state_name(x->state),
                     dep_wants(x->kind));
            return TESSD_DEPS_NEVER;
        }
    }
    return v;
}

int64_t tessd_time_used_ms(int64_t started_ms, int64_t suspended_total_ms, int64_t suspended_ms,
                           int64_t now_ms)
{
    if (started_ms <= 0 || now_ms < started_ms)
        return 0;
    int64_t used = now_ms - started_ms - suspended_total_ms;
    if (suspended_ms > 0 && now_ms > suspended_ms)
        used -= now_ms - suspended_ms;
    return used > 0 ? used : 0;
}

void tessd_array_wait_reason(int64_t array_id, int max_running, char *why, size_t len)
{
    snprintf(why, len, "waiting: array %lld runs at most %d element%s at once (%%%d)",
             (long long)array_id, max_running, max_running == 1 ? "" : "s", max_running);
}
