/* health.c - GET /healthz; no auth.  GET /metrics is metrics.c. */
#include "daemon/api/api.h"

void api_healthz(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    if (atomic_load(&d->stopping)) {
        thttp_error(rep, 503, "unavailable", NULL, "tesseld is shutting down");
        return;
    }
    thttp_json(rep, 200,
               json_pack("{s:s, s:s, s:b}", "status", "ok", "version", TESSD_VERSION, "simulated",
                         d->simulated));
}
