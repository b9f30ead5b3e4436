/* projects.c - /v1/projects (a project, its members, its audit record) and a user's default
 * project (/v1/users/{name}/default-project); the project of a submitted job and who may see
 * or act on a job of a project, for api/jobs.c.  The rules are projects.h's; docs/projects.md
 * says them for people.
 *
 * Every change of a project or of its members is written with its audit record
 * (project_events, tstore_pevent_add) in one transaction and logged in one line of tesseld's
 * log ("project vision: member_add by alice: {...}").  A caller with no role in a project (not
 * an admin) is answered as if it did not exist: 404 "no project 'NAME'", whether it exists or
 * not.
 */
#include <errno.h>
#include <string.h>

#include "daemon/api/api.h"
#include "daemon/projects.h"

/* ---- helpers ------------------------------------------------------------------------------ */

/* The project named name as the caller may see it, and the caller's role in it: 0; -1 after
 * answering 404 (unknown, or the caller has no role in it and is no admin) or 500. */
static int load(tessd_t *d, const tessd_caller_t *who, const char *name, tstore_project_t *p,
                tstore_role_t *role, thttp_reply_t *rep)
{
    tsl_error_t err;
    *role = TSTORE_ROLE_NONE;
    if (!tstore_name_valid(name) || tstore_project_get(d->store, name, p, &err) < 0) {
        if (tstore_name_valid(name) && errno != ENOENT)
            api_store_failure(rep, "project", &err);
        else
            thttp_error(rep, 404, "not_found", NULL, "no project '%s'", name);
        return -1;
    }
    if (tstore_member_role(d->store, p->id, who->user, role, &err) < 0) {
        api_store_failure(rep, "project's member", &err);
        return -1;
    }
    if (!tprj_may(who->admin, *role, TPRJ_SEE)) {
        thttp_error(rep, 404, "not_found", NULL, "no project '%s'", name);
        return -1;
    }
    return 0;
}

/* false after answering 403 when the caller may not do a in p. */
static bool may(const tessd_caller_t *who, const tstore_project_t *p, tstore_role_t role,
                tprj_action_t a, thttp_reply_t *rep)
{
    if (tprj_may(who->admin, role, a))
        return true;
    static const char *const what[] = {
        [TPRJ_SEE] = "see it",
        [TPRJ_SUBMIT] = "submit jobs in it (members and owners do)",
        [TPRJ_MANAGE] = "manage it (its owners do)",
        [TPRJ_AUDIT] = "read its audit record (its owners do)",
        [TPRJ_DELETE] = "delete it (its owners do)",
        [TPRJ_BIND_QUEUE] = "choose its queue (admins do)",
        [TPRJ_FORCE_DELETE] = "delete it with active jobs (admins do)",
    };
    thttp_error(rep, 403, "forbidden", NULL, "you ('%s') are %s project '%s' and may not %s",
                who->user,
                role == TSTORE_ROLE_OWNER    ? "an owner of"
                : role == TSTORE_ROLE_MEMBER ? "a member of"
                : role == TSTORE_ROLE_VIEWER ? "a viewer of"
                                             : "not in",
                p->name, what[a]);
    return false;
}

/* The audit record of a change (its transaction is the caller's) and one line of the log.
 * detail is stolen (may be NULL).  0, or -1 with err. */
static int audit(tessd_t *d, const tessd_caller_t *who, const tstore_project_t *p,
                 const char *event, json_t *detail, tsl_error_t *err)
{
    char *dj = detail ? json_dumps(detail, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(detail);
    tstore_pevent_t e = {.project = p->id,
                         .name = p->name,
                         .time_ms = tessd_now_ms(),
                         .who = who->user,
                         .event = event,
                         .detail_json = dj};
    int rc = tstore_pevent_add(d->store, &e, err);
    if (rc == 0)
        tessd_log("project %s: %s by %s%s%s", p->name, event, who->user, dj ? ": " : "",
                  dj ? dj : "");
    free(dj);
    return rc;
}

static int add_member(const tstore_member_t *m, void *arg)
{
    json_t *o = json_pack("{s:s, s:s, s:o}", "user", m->user, "role", tstore_role_name(m->role),
                          "added_at", api_time(m->added_ms));
    return o ? json_array_append_new(arg, o) : -1;
}

/* The project's object; with full, its members.  NULL with err (store).  The members of the
 * project 'default' are every user: listed to admins only (a user does not learn the names of
 * every account of tesseld from it; GET /v1/users is an admin's too), members_count to all. */
static json_t *project_json(tessd_t *d, const tstore_project_t *p, tstore_role_t role,
                            int64_t nmembers, bool full, bool admin, tsl_error_t *err)
{
    int64_t active = 0;
    if (tstore_project_active_jobs(d->store, p->id, &active, err) < 0)
        return NULL;
    json_t *o = json_pack("{s:s, s:s, s:s, s:b, s:o, s:s, s:o, s:I, s:I}", "name", p->name, "queue",
                          p->queue, "description", p->description, "share_jobs", p->share_jobs,
                          "created_at", api_time(p->created_ms), "created_by", p->created_by,
                          "role", role ? json_string(tstore_role_name(role)) : json_null(),
                          "members_count", (json_int_t)nmembers, "jobs_active", (json_int_t)active);
    if (o) {
        /* Its folders' quota and use together (docs/folders.md, "Quotas"). */
        int64_t used;
        api_folders_project_use(d, p, &used);
        json_object_set_new(o, "folder_quota",
                            p->folder_quota > 0 ? json_integer(p->folder_quota) : json_null());
        json_object_set_new(o, "folder_used", used >= 0 ? json_integer(used) : json_null());
    }
    if (o && full) {
        json_t *arr = json_array();
        if ((p->id != TSTORE_PROJECT_DEFAULT || admin) &&
            tstore_member_list(d->store, p->id, add_member, arr, err) < 0) {
            json_decref(arr);
            json_decref(o);
            return NULL;
        }
        json_object_set_new(o, "members", arr);
    }
    return o;
}

/* Answer status with the project's full object (after a change: read again). */
static void answer(tessd_t *d, const tessd_caller_t *who, const char *name, int status,
                   thttp_reply_t *rep)
{
    tstore_project_t p;
    tstore_role_t role;
    tsl_error_t err;
    int64_t n = 0;
    if (tstore_project_get(d->store, name, &p, &err) < 0 ||
        tstore_member_role(d->store, p.id, who->user, &role, &err) < 0 ||
        tstore_member_count(d->store, p.id, TSTORE_ROLE_OWNER, &n, &err) < 0) {
        api_store_failure(rep, "project", &err);
        return;
    }
    int64_t m, v;
    if (tstore_member_count(d->store, p.id, TSTORE_ROLE_MEMBER, &m, &err) < 0 ||
        tstore_member_count(d->store, p.id, TSTORE_ROLE_VIEWER, &v, &err) < 0) {
        api_store_failure(rep, "project", &err);
        return;
    }
    json_t *o = project_json(d, &p, role, n + m + v, true, who->admin, &err);
    if (!o) {
        api_store_failure(rep, "project", &err);
        return;
    }
    thttp_json(rep, status, o);
}

/* A queue a project may name: it exists and is a leaf.  0, or -1 after 400 (field "queue"). */
static int check_queue(tessd_t *d, const char *name, thttp_reply_t *rep)
{
    tstore_queue_t q;
    tsl_error_t err;
    int64_t children = 0;
    if (!tstore_name_valid(name)) {
        thttp_error(rep, 400, "invalid_value", "queue", "queue must be a queue name");
        return -1;
    }
    if (tstore_queue_get(d->store, name, &q, &err) < 0) {
        if (errno == ENOENT)
            thttp_error(rep, 400, "invalid_value", "queue", "no queue named '%s'", name);
        else
            api_store_failure(rep, "queue", &err);
        return -1;
    }
    if (tstore_queue_children(d->store, name, &children, &err) < 0) {
        api_store_failure(rep, "queue's children", &err);
        return -1;
    }
    if (children > 0) {
        thttp_error(rep, 400, "invalid_value", "queue",
                    "queue '%s' has child queues: a project's jobs go to a leaf queue", name);
        return -1;
    }
    return 0;
}

/* description and share_jobs of body into *p (when present).  0, or -1 after 400. */
static int parse_settings(json_t *body, tstore_project_t *p, thttp_reply_t *rep)
{
    json_t *v = json_object_get(body, "description");
    if (v) {
        if (!json_is_string(v) || !tprj_description_valid(json_string_value(v))) {
            thttp_error(rep, 400, "invalid_value", "description",
                        "description must be a string of at most %d bytes without control "
                        "characters",
                        TSTORE_PROJECT_DESC_MAX);
            return -1;
        }
        snprintf(p->description, sizeof p->description, "%s", json_string_value(v));
    }
    v = json_object_get(body, "share_jobs");
    if (v) {
        if (!json_is_boolean(v)) {
            thttp_error(rep, 400, "invalid_value", "share_jobs",
                        "share_jobs must be true or false");
            return -1;
        }
        p->share_jobs = json_is_true(v);
    }
    return 0;
}

/* A role of a request ("role" of body; dflt when absent).  0, or -1 after 400. */
static int parse_role(json_t *body, tstore_role_t dflt, tstore_role_t *out, thttp_reply_t *rep)
{
    json_t *v = json_object_get(body, "role");
    if (!v) {
        *out = dflt;
        return 0;
    }
    int r = json_is_string(v) ? tstore_role_parse(json_string_value(v)) : -1;
    if (r < 0) {
        thttp_error(rep, 400, "invalid_value", "role", "role must be owner, member or viewer");
        return -1;
    }
    *out = (tstore_role_t)r;
    return 0;
}

/* Begin a change's transaction: true, or false with the error answered. */
static bool begin_tx(tessd_t *d, thttp_reply_t *rep)
{
    tsl_error_t err;
    if (tstore_begin(d->store, &err) == 0)
        return true;
    api_store_failure(rep, "begin", &err);
    return false;
}

/* End a change's transaction: after the change (rc 0) its audit record (audit: event, detail
 * stolen in every case) and the commit; after a failure (rc -1, err and errno
 * set) the rollback.  true when committed; false with the error answered. */
static bool finish_tx(tessd_t *d, const tessd_caller_t *who, const tstore_project_t *p, int rc,
                      const char *event, json_t *detail, tsl_error_t *err, thttp_reply_t *rep)
{
    if (rc == 0)
        rc = audit(d, who, p, event, detail, err);
    else
        json_decref(detail);
    if (rc == 0) {
        if (tstore_commit(d->store, err) == 0) /* rolls back itself when it fails */
            return true;
    } else {
        int saved = errno; /* api_store_error answers by it */
        tstore_rollback(d->store);
        errno = saved;
    }
    api_store_error(rep, err);
    return false;
}

/* ---- /v1/projects ------------------------------------------------------------------------- */

typedef struct {
    tessd_t *d;
    json_t *arr;
    tsl_error_t err;
    bool failed;
} plist_t;

static int add_project(const tstore_project_t *p, tstore_role_t role, int64_t members, void *arg)
{
    plist_t *l = arg;
    json_t *o = project_json(l->d, p, role, members, false, false, &l->err);
    if (!o) {
        l->failed = true;
        return 1;
    }
    json_array_append_new(l->arr, o);
    return 0;
}

void api_projects_list(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who))
        return;
    /* An admin sees every project (with their own role in each); a user, theirs. */
    plist_t l = {.d = d, .arr = json_array()};
    tsl_error_t err;
    if (tstore_project_list(d->store, who.user, who.admin, add_project, &l, &err) < 0 || l.failed) {
        json_decref(l.arr);
        api_store_failure(rep, "list projects", l.failed ? &l.err : &err);
    } else {
        thttp_json(rep, 200, json_pack("{s:o}", "projects", l.arr));
    }
    api_leave(d);
}

void api_projects_get(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who))
        return;
    tstore_project_t p;
    tstore_role_t role;
    if (load(d, &who, req->params[0], &p, &role, rep) == 0)
        answer(d, &who, p.name, 200, rep);
    api_leave(d);
}

void api_projects_create(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    static const char *const fields[] = {"name",       "queue", "description",
                                         "share_jobs", "owner", NULL};
    json_t *body = thttp_body_object(req, rep, 0);
    if (!body)
        return;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who)) {
        json_decref(body);
        return;
    }
    tsl_error_t err;
    if (!who.admin && !d->user_projects) {
        thttp_error(rep, 403, "forbidden", NULL,
                    "only an admin may create a project here (tesseld runs without "
                    "--user-projects)");
        goto out;
    }
    if (thttp_check_fields(body, fields, rep) < 0)
        goto out;
    json_t *name = json_object_get(body, "name"), *queue = json_object_get(body, "queue"),
           *owner = json_object_get(body, "owner");
    if (!name) {
        thttp_error(rep, 400, "missing_field", "name", "name is required");
        goto out;
    }
    if (!json_is_string(name) || !tstore_name_valid(json_string_value(name))) {
        thttp_error(rep, 400, "invalid_value", "name",
                    "a project name is 1 to 32 of a-z, 0-9, '_' and '-', starting with a letter");
        goto out;
    }
    tstore_project_t p = {.share_jobs = true, .created_ms = tessd_now_ms()};
    snprintf(p.name, sizeof p.name, "%s", json_string_value(name));
    snprintf(p.created_by, sizeof p.created_by, "%s", who.user);
    snprintf(p.queue, sizeof p.queue, "default");
    if (queue && !json_is_null(queue)) {
        if (!json_is_string(queue)) {
            thttp_error(rep, 400, "invalid_value", "queue", "queue must be a queue name");
            goto out;
        }
        /* A user's project shares the queue 'default' (its quota): only an admin gives a
         * project a quota of its own. */
        if (!who.admin && strcmp(json_string_value(queue), "default") != 0) {
            thttp_error(rep, 403, "forbidden", "queue",
                        "only an admin binds a project to a queue other than 'default'");
            goto out;
        }
        if (check_queue(d, json_string_value(queue), rep) < 0)
            goto out;
        snprintf(p.queue, sizeof p.queue, "%s", json_string_value(queue));
    }
    if (parse_settings(body, &p, rep) < 0)
        goto out;
    /* Its first owner: a user who creates a project owns it; an admin names one, or none. */
    const char *first = who.admin ? NULL : who.user;
    if (owner && !json_is_null(owner)) {
        if (!json_is_string(owner) || !tstore_name_valid(json_string_value(owner))) {
            thttp_error(rep, 400, "invalid_value", "owner", "owner must be a user name");
            goto out;
        }
        if (!who.admin && strcmp(json_string_value(owner), who.user) != 0) {
            thttp_error(rep, 403, "forbidden", "owner",
                        "only an admin creates a project owned by someone else");
            goto out;
        }
        first = json_string_value(owner);
    }
    if (!begin_tx(d, rep))
        goto out;
    int rc = tstore_project_add(d->store, &p, first, p.created_ms, &err);
    if (rc < 0 && errno == ENOENT) {
        tstore_rollback(d->store);
        thttp_error(rep, 400, "invalid_value", "owner", "no user named '%s'", first);
        goto out;
    }
    if (!finish_tx(d, &who, &p, rc, "create",
                   json_pack("{s:s, s:s?, s:b}", "queue", p.queue, "owner", first, "share_jobs",
                             p.share_jobs),
                   &err, rep))
        goto out;
    answer(d, &who, p.name, 201, rep);
    snprintf(rep->location, sizeof rep->location, "/v1/projects/%s", p.name);
out:
    api_leave(d);
    json_decref(body);
}

void api_projects_update(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    static const char *const fields[] = {"description", "share_jobs", "queue", "folder_quota",
                                         NULL};
    json_t *body = thttp_body_object(req, rep, 0);
    if (!body)
        return;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who)) {
        json_decref(body);
        return;
    }
    tstore_project_t p;
    tstore_role_t role;
    tsl_error_t err;
    if (load(d, &who, req->params[0], &p, &role, rep) < 0 ||
        !may(&who, &p, role, TPRJ_MANAGE, rep) || thttp_check_fields(body, fields, rep) < 0)
        goto out;
    json_t *detail = json_object();
    json_t *queue = json_object_get(body, "queue");
    if (queue) {
        if (!may(&who, &p, role, TPRJ_BIND_QUEUE, rep)) {
            json_decref(detail);
            goto out;
        }
        if (!json_is_string(queue) || check_queue(d, json_string_value(queue), rep) < 0) {
            if (!json_is_string(queue))
                thttp_error(rep, 400, "invalid_value", "queue", "queue must be a queue name");
            json_decref(detail);
            goto out;
        }
        if (p.id == TSTORE_PROJECT_DEFAULT && strcmp(json_string_value(queue), "default") != 0) {
            thttp_error(rep, 409, "conflict", "queue",
                        "the project 'default' stays bound to the queue 'default'");
            json_decref(detail);
            goto out;
        }
        snprintf(p.queue, sizeof p.queue, "%s", json_string_value(queue));
        json_object_set_new(detail, "queue", json_string(p.queue));
    }
    if (parse_settings(body, &p, rep) < 0) {
        json_decref(detail);
        goto out;
    }
    if (json_object_get(body, "description"))
        json_object_set_new(detail, "description", json_string(p.description));
    if (json_object_get(body, "share_jobs"))
        json_object_set_new(detail, "share_jobs", json_boolean(p.share_jobs));
    json_t *fq = json_object_get(body, "folder_quota");
    int64_t folder_quota = 0;
    if (fq) {
        /* An admin's (as a folder's quota): the site's disk, not the project's to give. */
        if (!who.admin) {
            thttp_error(rep, 403, "forbidden", "folder_quota",
                        "only an admin sets a project's folder quota (you are '%s')", who.user);
            json_decref(detail);
            goto out;
        }
        uint64_t b = 0;
        if (!json_is_null(fq) && api_get_size(fq, "folder_quota", &b, rep) < 0) {
            json_decref(detail);
            goto out;
        }
        folder_quota = b > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)b;
        if (p.id == TSTORE_PROJECT_DEFAULT) {
            thttp_error(rep, 400, "invalid_value", "folder_quota",
                        "the project 'default' has no folders: no folder quota");
            json_decref(detail);
            goto out;
        }
        json_object_set_new(detail, "folder_quota",
                            folder_quota > 0 ? json_integer(folder_quota) : json_null());
    }
    if (!begin_tx(d, rep)) {
        json_decref(detail);
        goto out;
    }
    int rc = tstore_project_update(d->store, &p, &err);
    if (rc == 0 && fq)
        rc = tstore_project_set_folder_quota(d->store, p.id, folder_quota, &err);
    if (!finish_tx(d, &who, &p, rc, "update", detail, &err, rep))
        goto out;
    answer(d, &who, p.name, 200, rep);
out:
    api_leave(d);
    json_decref(body);
}

void api_projects_delete(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    const char *f = thttp_query(req, "force");
    if (f && strcmp(f, "0") != 0 && strcmp(f, "1") != 0) {
        thttp_error(rep, 400, "invalid_parameter", "force", "force must be 0 or 1");
        return;
    }
    bool force = f && strcmp(f, "1") == 0;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who))
        return;
    tstore_project_t p;
    tstore_role_t role;
    tsl_error_t err;
    int64_t active = 0;
    if (load(d, &who, req->params[0], &p, &role, rep) < 0 || !may(&who, &p, role, TPRJ_DELETE, rep))
        goto out;
    if (p.id == TSTORE_PROJECT_DEFAULT) {
        thttp_error(rep, 409, "conflict", NULL, "the project 'default' cannot be deleted");
        goto out;
    }
    if (tstore_project_active_jobs(d->store, p.id, &active, &err) < 0) {
        api_store_failure(rep, "project's jobs", &err);
        goto out;
    }
    if (active > 0 && !force) {
        thttp_error(rep, 409, "conflict", NULL,
                    "project '%s' has %lld active job(s): wait for them or cancel them (an "
                    "admin may delete it with force=1: its jobs run on in queue '%s')",
                    p.name, (long long)active, p.queue);
        goto out;
    }
    if (active > 0 && !may(&who, &p, role, TPRJ_FORCE_DELETE, rep))
        goto out;
    if (!begin_tx(d, rep))
        goto out;
    json_t *folders = api_folders_of_project(d, p.id);
    int rc = tstore_project_del(d->store, p.id, &err);
    if (!finish_tx(d, &who, &p, rc, "delete",
                   json_pack("{s:b, s:I}", "force", force, "jobs_active", (json_int_t)active), &err,
                   rep)) {
        json_decref(folders);
        goto out;
    }
    api_folders_sync_names(d, folders); /* its members lose its folders and its shares */
    rep->status = 204;
out:
    api_leave(d);
}

static int add_pevent(const tstore_pevent_t *e, void *arg)
{
    json_t *detail = e->detail_json ? json_loads(e->detail_json, 0, NULL) : NULL;
    json_t *o = json_pack("{s:I, s:o, s:s, s:s, s:o}", "id", (json_int_t)e->id, "time",
                          api_time(e->time_ms), "who", e->who ? e->who : "", "event",
                          e->event ? e->event : "", "detail", detail ? detail : json_object());
    return o ? json_array_append_new(arg, o) : -1;
}

void api_projects_events(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who))
        return;
    tstore_project_t p;
    tstore_role_t role;
    tsl_error_t err;
    if (load(d, &who, req->params[0], &p, &role, rep) < 0 || !may(&who, &p, role, TPRJ_AUDIT, rep))
        goto out;
    json_t *arr = json_array();
    if (tstore_pevent_list(d->store, p.id, add_pevent, arr, &err) < 0) {
        json_decref(arr);
        api_store_failure(rep, "project events", &err);
        goto out;
    }
    thttp_json(rep, 200, json_pack("{s:s, s:o}", "project", p.name, "events", arr));
out:
    api_leave(d);
}

/* ---- members -------------------------------------------------------------------------------- */

void api_projects_member_add(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    static const char *const fields[] = {"user", "role", NULL};
    json_t *body = thttp_body_object(req, rep, 0);
    if (!body)
        return;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who)) {
        json_decref(body);
        return;
    }
    tstore_project_t p;
    tstore_role_t role, newrole;
    tsl_error_t err;
    if (load(d, &who, req->params[0], &p, &role, rep) < 0 ||
        !may(&who, &p, role, TPRJ_MANAGE, rep) || thttp_check_fields(body, fields, rep) < 0 ||
        parse_role(body, TSTORE_ROLE_MEMBER, &newrole, rep) < 0)
        goto out;
    json_t *user = json_object_get(body, "user");
    if (!user) {
        thttp_error(rep, 400, "missing_field", "user", "user is required");
        goto out;
    }
    if (!json_is_string(user) || !tstore_name_valid(json_string_value(user))) {
        thttp_error(rep, 400, "invalid_value", "user", "user must be a user name");
        goto out;
    }
    const char *u = json_string_value(user);
    if (!begin_tx(d, rep))
        goto out;
    int rc = tstore_member_add(d->store, p.id, u, newrole, tessd_now_ms(), &err);
    if (rc < 0 && (errno == ENOENT || errno == EEXIST)) {
        int e = errno;
        tstore_rollback(d->store);
        if (e == ENOENT)
            thttp_error(rep, 400, "invalid_value", "user", "no user named '%s'", u);
        else
            thttp_error(rep, 409, "conflict", "user",
                        "'%s' is in project '%s' already (change their role instead)", u, p.name);
        goto out;
    }
    if (!finish_tx(d, &who, &p, rc, "member_add",
                   json_pack("{s:s, s:s}", "user", u, "role", tstore_role_name(newrole)), &err,
                   rep))
        goto out;
    api_folders_project_changed(d, p.id);
    answer(d, &who, p.name, 201, rep);
out:
    api_leave(d);
    json_decref(body);
}

/* The member named in the URL of a members route and their role: 0; -1 after 404. */
static int load_member(tessd_t *d, const tstore_project_t *p, const char *user, tstore_role_t *role,
                       thttp_reply_t *rep)
{
    tsl_error_t err;
    if (!tstore_name_valid(user) || tstore_member_role(d->store, p->id, user, role, &err) < 0 ||
        *role == TSTORE_ROLE_NONE) {
        thttp_error(rep, 404, "not_found", NULL, "'%s' is not in project '%s'", user, p->name);
        return -1;
    }
    return 0;
}

/* false after 409 when a non-admin's change of a member from old to new would leave the
 * project without an owner. */
static bool keeps_owner(tessd_t *d, const tessd_caller_t *who, const tstore_project_t *p,
                        const char *user, tstore_role_t old_role, tstore_role_t new_role,
                        thttp_reply_t *rep)
{
    int64_t owners = 0;
    tsl_error_t err;
    if (who->admin)
        return true;
    if (tstore_member_count(d->store, p->id, TSTORE_ROLE_OWNER, &owners, &err) < 0) {
        api_store_failure(rep, "project's owners", &err);
        return false;
    }
    if (!tprj_orphans(owners, old_role, new_role))
        return true;
    thttp_error(rep, 409, "conflict", "user",
                "'%s' is the last owner of project '%s': make another member an owner first", user,
                p->name);
    return false;
}

void api_projects_member_set(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    static const char *const fields[] = {"role", NULL};
    json_t *body = thttp_body_object(req, rep, 0);
    if (!body)
        return;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who)) {
        json_decref(body);
        return;
    }
    tstore_project_t p;
    tstore_role_t role, old, newrole;
    tsl_error_t err;
    const char *u = req->params[1];
    if (load(d, &who, req->params[0], &p, &role, rep) < 0 ||
        !may(&who, &p, role, TPRJ_MANAGE, rep) || thttp_check_fields(body, fields, rep) < 0)
        goto out;
    if (!json_object_get(body, "role")) {
        thttp_error(rep, 400, "missing_field", "role", "role is required");
        goto out;
    }
    if (parse_role(body, TSTORE_ROLE_MEMBER, &newrole, rep) < 0 ||
        load_member(d, &p, u, &old, rep) < 0 || !keeps_owner(d, &who, &p, u, old, newrole, rep))
        goto out;
    if (!begin_tx(d, rep))
        goto out;
    int rc = tstore_member_set(d->store, p.id, u, newrole, &err);
    if (!finish_tx(d, &who, &p, rc, "member_role",
                   json_pack("{s:s, s:s, s:s}", "user", u, "from", tstore_role_name(old), "to",
                             tstore_role_name(newrole)),
                   &err, rep))
        goto out;
    api_folders_project_changed(d, p.id);
    answer(d, &who, p.name, 200, rep);
out:
    api_leave(d);
    json_decref(body);
}

void api_projects_member_del(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who))
        return;
    tstore_project_t p;
    tstore_role_t role, old;
    tsl_error_t err;
    const char *u = req->params[1];
    if (load(d, &who, req->params[0], &p, &role, rep) < 0)
        goto out;
    /* Owners remove anyone; anyone may leave. */
    if (strcmp(u, who.user) != 0 && !may(&who, &p, role, TPRJ_MANAGE, rep))
        goto out;
    if (load_member(d, &p, u, &old, rep) < 0 ||
        !keeps_owner(d, &who, &p, u, old, TSTORE_ROLE_NONE, rep))
        goto out;
    if (!begin_tx(d, rep))
        goto out;
    int rc = tstore_member_del(d->store, p.id, u, &err);
    if (!finish_tx(d, &who, &p, rc, "member_remove",
                   json_pack("{s:s, s:s}", "user", u, "role", tstore_role_name(old)), &err, rep))
        goto out;
    api_folders_project_changed(d, p.id);
    rep->status = 204;
out:
    api_leave(d);
}

/* ---- a user's default project --------------------------------------------------------------- */

/* The user of a /v1/users/{name}/default-project route: themself, or anyone for an admin.
 * false after answering (403, 404). */
static bool default_user(tessd_t *d, const tessd_caller_t *who, const char *name, tstore_user_t *u,
                         thttp_reply_t *rep)
{
    tsl_error_t err;
    if (!who->admin && strcmp(who->user, name) != 0) {
        thttp_error(rep, 403, "forbidden", NULL,
                    "only an admin may look at or set another user's default project");
        return false;
    }
    if (!tstore_name_valid(name) || tstore_user_get(d->store, name, u, &err) < 0) {
        thttp_error(rep, 404, "not_found", NULL, "no user '%s'", name);
        return false;
    }
    return true;
}

static void answer_default(tessd_t *d, const char *user, int64_t id, thttp_reply_t *rep)
{
    tstore_project_t p;
    tsl_error_t err;
    if (tstore_project_get_id(d->store, id, &p, &err) < 0) {
        api_store_failure(rep, "default project", &err);
        return;
    }
    thttp_json(rep, 200, json_pack("{s:s, s:s}", "user", user, "project", p.name));
}

void api_users_default_get(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who))
        return;
    tstore_user_t u;
    int64_t id;
    tsl_error_t err;
    if (default_user(d, &who, req->params[0], &u, rep)) {
        if (tstore_user_default_project(d->store, u.name, &id, &err) < 0)
            api_store_failure(rep, "default project", &err);
        else
            answer_default(d, u.name, id, rep);
    }
    api_leave(d);
}

void api_users_default_set(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    static const char *const fields[] = {"project", NULL};
    json_t *body = thttp_body_object(req, rep, 0);
    if (!body)
        return;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who)) {
        json_decref(body);
        return;
    }
    tstore_user_t u;
    tstore_project_t p;
    tstore_role_t role, theirs;
    tsl_error_t err;
    if (!default_user(d, &who, req->params[0], &u, rep) ||
        thttp_check_fields(body, fields, rep) < 0)
        goto out;
    json_t *v = json_object_get(body, "project");
    if (!v) {
        thttp_error(rep, 400, "missing_field", "project", "project is required");
        goto out;
    }
    if (!json_is_string(v)) {
        thttp_error(rep, 400, "invalid_value", "project", "project must be a project name");
        goto out;
    }
    if (load(d, &who, json_string_value(v), &p, &role, rep) < 0)
        goto out;
    /* A default project is one the user may submit to (an admin may submit anywhere). */
    if (tstore_member_role(d->store, p.id, u.name, &theirs, &err) < 0) {
        api_store_failure(rep, "member", &err);
        goto out;
    }
    if (!tprj_may(strcmp(u.role, "admin") == 0, theirs, TPRJ_SUBMIT)) {
        thttp_error(rep, 400, "invalid_value", "project",
                    "'%s' %s project '%s': a default project is one they may submit to "
                    "(member or owner)",
                    u.name, theirs == TSTORE_ROLE_VIEWER ? "is a viewer of" : "is not in", p.name);
        goto out;
    }
    if (!begin_tx(d, rep))
        goto out;
    int rc = tstore_user_set_default_project(d->store, u.name, p.id, &err);
    if (!finish_tx(d, &who, &p, rc, "default_project", json_pack("{s:s}", "user", u.name), &err,
                   rep))
        goto out;
    answer_default(d, u.name, p.id, rep);
out:
    api_leave(d);
    json_decref(body);
}

/* ---- for api/jobs.c ------------------------------------------------------------------------- */

int api_project_for_job(tessd_t *d, const tessd_caller_t *who, const char *name, bool queue_given,
                        tstore_job_t *j, tstore_project_t *p, thttp_reply_t *rep)
{
    tsl_error_t err;
    int64_t id = 0;
    int rc;
    if (name)
        rc = tstore_project_get(d->store, name, p, &err);
    else if ((rc = tstore_user_default_project(d->store, who->user, &id, &err)) == 0)
        rc = tstore_project_get_id(d->store, id, p, &err);
    if (rc < 0 && errno != ENOENT) {
        api_store_failure(rep, "project", &err);
        return -1;
    }
    tstore_role_t role = TSTORE_ROLE_NONE;
    if (rc == 0 && tstore_member_role(d->store, p->id, who->user, &role, &err) < 0) {
        api_store_failure(rep, "project's member", &err);
        return -1;
    }
    /* Unknown and not a member: the same answer (403), so that a user learns nothing of the
     * projects they are not in; an admin is told it does not exist. */
    if (rc < 0 && who->admin) {
        thttp_error(rep, 400, "invalid_value", "project", "no project named '%s'", name);
        return -1;
    }
    if (rc < 0 || !tprj_may(who->admin, role, TPRJ_SUBMIT)) {
        const char *n = rc < 0 ? name : p->name;
        if (role == TSTORE_ROLE_VIEWER)
            thttp_error(rep, 403, "forbidden", "project",
                        "you ('%s') are a viewer of project '%s': viewers may not submit jobs",
                        who->user, n);
        else
            thttp_error(rep, 403, "forbidden", "project",
                        "you ('%s') are not a member of project '%s'%s", who->user, n,
                        name ? "" : " (your default project): name one with --project");
        return -1;
    }
    /* The project 'default' keeps the queue the job names, as before projects; any other
     * project's jobs go to its queue, whose quota and guarantees apply. */
    if (p->id != TSTORE_PROJECT_DEFAULT) {
        if (queue_given && strcmp(j->queue, p->queue) != 0) {
            thttp_error(rep, 400, "invalid_value", "queue",
                        "jobs of project '%s' go to its queue '%s', not '%s': leave the queue "
                        "out",
                        p->name, p->queue, j->queue);
            return -1;
        }
        j->queue = p->queue;
    }
    j->project_id = p->id;
    j->project = p->name;
    return 0;
}

int api_job_right(tessd_t *d, const tessd_caller_t *who, const tstore_job_t *j,
                  tprj_job_right_t *right, tsl_error_t *err)
{
    bool own = strcmp(j->user, who->user) == 0;
    tstore_role_t role = TSTORE_ROLE_NONE;
    bool share = false;
    if (!who->admin && !own) {
        tstore_project_t p;
        /* A job whose project was deleted since is its owner's and the admins' only. */
        if (tstore_project_get_id(d->store, j->project_id, &p, err) == 0) {
            share = p.share_jobs;
            if (tstore_member_role(d->store, p.id, who->user, &role, err) < 0)
                return -1;
        } else if (errno != ENOENT) {
            return -1;
        }
    }
    *right = tprj_job_right(who->admin, own, role, share);
    return 0;
}

int api_project_job_filter(tessd_t *d, const tessd_caller_t *who, const char *name,
                           tstore_job_filter_t *f, bool *others, thttp_reply_t *rep)
{
    tstore_project_t p;
    tstore_role_t role;
    if (load(d, who, name, &p, &role, rep) < 0)
        return -1;
    f->project_id = p.id;
    *others = tprj_job_right(who->admin, false, role, p.share_jobs) != TPRJ_JOB_NONE;
    return 0;
}
