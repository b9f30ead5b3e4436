/* routes.c - the whole HTTP API on one screen (documented in docs/api.md), and the helpers
 * every handler shares. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/api/api.h"
#include "daemon/api/console.h"
#include "libutil/size.h"

const thttp_route_t tessd_routes[] = {
    {"GET", "/healthz", api_healthz},
    {"GET", "/metrics", api_metrics},
    {"GET", "/v1/whoami", api_whoami},
    {"GET", "/v1/openapi.json", api_openapi},
    {"POST", "/v1/jobs", api_jobs_submit},
    {"GET", "/v1/jobs", api_jobs_list},
    {"GET", "/v1/jobs/{id}", api_jobs_get},
    {"POST", "/v1/jobs/{id}/cancel", api_jobs_cancel},
    {"POST", "/v1/jobs/{id}/suspend", api_jobs_suspend},
    {"POST", "/v1/jobs/{id}/resume", api_jobs_resume},
    {"GET", "/v1/jobs/{id}/logs", api_jobs_logs},
    {"GET", "/v1/jobs/{id}/wait", api_jobs_wait},
    {"GET", "/v1/jobs/{id}/events", api_jobs_events},
    {"GET", "/v1/jobs/{id}/attach", api_jobs_attach},                    /* a WebSocket (term.c) */
    {"GET", "/v1/jobs/{id}/exec", api_jobs_exec},                        /* a WebSocket (term.c) */
    {"POST", "/v1/jobs/{id}/terminal-ticket", api_jobs_terminal_ticket}, /* term.c */
    {"POST", "/v1/jobs/{id}/services/{name}/ticket", api_jobs_service_ticket}, /* svcproxy.c */
    {"GET", "/v1/nodes", api_nodes_list},
    {"GET", "/v1/gpus", api_gpus_list},
    {"GET", "/v1/images", api_images_list},
    {"GET", "/v1/history", api_history},
    {"GET", "/v1/queues", api_queues_list},
    {"POST", "/v1/queues", api_queues_create},
    {"GET", "/v1/queues/{name}", api_queues_get},
    {"PATCH", "/v1/queues/{name}", api_queues_update},
    {"DELETE", "/v1/queues/{name}", api_queues_delete},
    {"GET", "/v1/slurm/queues", api_slurm_queues},
    {"GET", "/v1/gpu-models", api_gpu_models_list},
    {"POST", "/v1/gpu-models/calibrate", api_gpu_models_calibrate},
    {"PUT", "/v1/gpu-models/{model}", api_gpu_models_set},
    {"DELETE", "/v1/gpu-models/{model}", api_gpu_models_reset},
    {"GET", "/v1/users", api_users_list},
    {"POST", "/v1/users", api_users_create},
    {"GET", "/v1/users/{name}", api_users_get},
    {"DELETE", "/v1/users/{name}", api_users_delete},
    {"GET", "/v1/tokens", api_tokens_list},
    {"POST", "/v1/tokens", api_tokens_create},
    {"DELETE", "/v1/tokens/{id}", api_tokens_delete},
    /* Projects (projects.c, docs/projects.md). */
    {"GET", "/v1/projects", api_projects_list},
    {"POST", "/v1/projects", api_projects_create},
    {"GET", "/v1/projects/{name}", api_projects_get},
    {"PATCH", "/v1/projects/{name}", api_projects_update},
    {"DELETE", "/v1/projects/{name}", api_projects_delete},
    {"GET", "/v1/projects/{name}/events", api_projects_events},
    {"POST", "/v1/projects/{name}/members", api_projects_member_add},
    {"PATCH", "/v1/projects/{name}/members/{user}", api_projects_member_set},
    {"DELETE", "/v1/projects/{name}/members/{user}", api_projects_member_del},
    {"GET", "/v1/users/{name}/default-project", api_users_default_get},
    {"PUT", "/v1/users/{name}/default-project", api_users_default_set},
    /* Virtual folders (folders.c, docs/folders.md). */
    {"GET", "/v1/folders", api_folders_list},
    {"POST", "/v1/folders", api_folders_create},
    {"GET", "/v1/folders/{name}", api_folders_get},
    {"PATCH", "/v1/folders/{name}", api_folders_update},
    {"DELETE", "/v1/folders/{name}", api_folders_delete},
    {"GET", "/v1/folders/{name}/usage", api_folders_usage},
    {"GET", "/v1/folders/{name}/files", api_folders_files_get},
    {"PUT", "/v1/folders/{name}/files", api_folders_files_put},
    {"POST", "/v1/folders/{name}/shares", api_folders_share},
    {"DELETE", "/v1/folders/{name}/shares/users/{user}", api_folders_unshare_user},
    {"DELETE", "/v1/folders/{name}/shares/projects/{project}", api_folders_unshare_project},
    /* Inference services (services.c, docs/serving.md). */
    {"GET", "/v1/services", api_services_list},
    {"POST", "/v1/services", api_services_create},
    {"GET", "/v1/services/{name}", api_services_get},
    {"PATCH", "/v1/services/{name}", api_services_update},
    {"DELETE", "/v1/services/{name}", api_services_delete},
    {"POST", "/v1/services/{name}/tokens", api_services_token_create},
    {"GET", "/v1/services/{name}/tokens", api_services_token_list},
    {"DELETE", "/v1/services/{name}/tokens/{id}", api_services_token_delete},
    /* The web console's static files (console.c, docs/console.md): no token, no data. */
    {"GET", "/", api_console},
    {"GET", "/app/{file}", api_console},
    {"GET", "/vendor/{dir}/{file}", api_console},
};
const size_t tessd_nroutes = sizeof tessd_routes / sizeof tessd_routes[0];

/* The lock and the caller; a submission (group) is also a member of the store's group commit
 * (store.h): announced before the lock, its turn from the lock on, so that its reads (the
 * token's lookup first) do not commit the group that earlier submissions wait in. */
static bool enter(tessd_t *d, thttp_req_t *req, thttp_reply_t *rep, tessd_caller_t *who, bool group)
{
    if (atomic_load(&d->stopping)) {
        thttp_error(rep, 503, "unavailable", NULL, "tesseld is shutting down");
        return false;
    }
    if (group)
        tstore_group_announce(d->store);
    pthread_mutex_lock(&d->lock);
    if (group)
        tstore_group_enter(d->store);
    if (tessd_auth(d, req, rep, who) < 0) {
        if (group)
            tstore_group_leave(d->store, NULL);
        pthread_mutex_unlock(&d->lock);
        return false;
    }
    return true;
}

bool api_enter(tessd_t *d, thttp_req_t *req, thttp_reply_t *rep, tessd_caller_t *who)
{
    return enter(d, req, rep, who, false);
}

bool api_enter_submit(tessd_t *d, thttp_req_t *req, thttp_reply_t *rep, tessd_caller_t *who)
{
    return enter(d, req, rep, who, true);
}

void api_leave(tessd_t *d)
{
    pthread_mutex_unlock(&d->lock);
}

void api_submit_pause(tessd_t *d)
{
    tstore_group_leave(d->store, NULL); /* no writes yet: nothing of its own to commit */
    pthread_mutex_unlock(&d->lock);
}

bool api_submit_resume(tessd_t *d, thttp_reply_t *rep)
{
    if (atomic_load(&d->stopping)) {
        thttp_error(rep, 503, "unavailable", NULL, "tesseld is shutting down");
        return false;
    }
    tstore_group_announce(d->store);
    pthread_mutex_lock(&d->lock);
    tstore_group_enter(d->store);
    return true;
}

bool api_require_admin(const tessd_caller_t *who, thttp_reply_t *rep)
{
    if (who->admin)
        return true;
    thttp_error(rep, 403, "forbidden", NULL, "this needs the admin role (you are '%s')", who->user);
    return false;
}

json_t *api_time(int64_t ms)
{
    if (ms <= 0)
        return json_null();
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    char buf[80];
    snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
    return json_string(buf);
}

int api_parse_id(const char *s, int64_t *id)
{
    if (!s || !*s || *s == '0')
        return -1;
    int64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9' || v > (INT64_MAX - 9) / 10)
            return -1;
        v = v * 10 + (*p - '0');
    }
    *id = v;
    return 0;
}

int api_get_size(json_t *v, const char *field, uint64_t *out, thttp_reply_t *rep)
{
    if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);
        if (i <= 0) {
            thttp_error(rep, 400, "invalid_value", field, "%s must be above 0 bytes", field);
            return -1;
        }
        *out = (uint64_t)i;
        return 0;
    }
    if (json_is_string(v)) {
        tsl_error_t err;
        uint64_t b;
        if (tsl_parse_size_unit(json_string_value(v), &b, &err) < 0) {
            thttp_error(rep, 400, "invalid_value", field, "%s: %s", field, err.text);
            return -1;
        }
        if (b == 0) {
            thttp_error(rep, 400, "invalid_value", field, "%s must be above 0 bytes", field);
            return -1;
        }
        *out = b;
        return 0;
    }
    thttp_error(rep, 400, "invalid_value", field,
                "%s must be a byte count or a size string such as \"8G\"", field);
    return -1;
}

void api_store_error(thttp_reply_t *rep, const tsl_error_t *err)
{
    thttp_error_errno(rep, errno, NULL, err->text);
}

void api_store_failure(thttp_reply_t *rep, const char *what, const tsl_error_t *err)
{
    tessd_log("store: %s: %s", what, err->text);
    thttp_error(rep, 500, "internal", NULL, "the store failed (%s): %s", what, err->text);
}
