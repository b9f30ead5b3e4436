/* users.c - /v1/whoami, /v1/users (admin) and /v1/tokens. */
#include <errno.h>
#include <string.h>

#include "daemon/api/api.h"

void api_whoami(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who))
        return;
    json_t *o =
        json_pack("{s:s, s:s, s:I, s:s}", "user", who.user, "role", who.admin ? "admin" : "user",
                  "token_id", (json_int_t)who.token_id, "auth", who.local ? "socket" : "token");
    if (o && who.local)
        json_object_set_new(o, "uid", json_integer((json_int_t)who.uid));
    thttp_json(rep, 200, o);
    api_leave(d);
}

static json_t *user_obj(const tstore_user_t *u, int64_t active)
{
    return json_pack("{s:s, s:s, s:o, s:I}", "name", u->name, "role", u->role, "created_at",
                     api_time(u->created_ms), "jobs_active", (json_int_t)active);
}

/* The user's object, or NULL after filling err (the store could not count its jobs). */
static json_t *user_json(tessd_t *d, const tstore_user_t *u, tsl_error_t *err)
{
    int64_t active = 0;
    if (tstore_user_active_jobs(d->store, u->name, &active, err) < 0)
        return NULL;
    return user_obj(u, active);
}

typedef struct {
    tessd_t *d;
    json_t *arr;
    tsl_error_t err; /* set with failed */
    bool failed;
} ulist_t;

static int add_user(const tstore_user_t *u, void *arg)
{
    ulist_t *l = arg;
    json_t *o = user_json(l->d, u, &l->err);
    if (!o) {
        l->failed = true;
        return 1; /* stop the listing */
    }
    json_array_append_new(l->arr, o);
    return 0;
}

void api_users_list(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who))
        return;
    if (api_require_admin(&who, rep)) {
        ulist_t l = {.d = d, .arr = json_array()};
        tsl_error_t err;
        int rc = tstore_user_list(d->store, add_user, &l, &err);
        if (rc < 0 || l.failed) {
            json_decref(l.arr);
            api_store_failure(rep, "list users", l.failed ? &l.err : &err);
        } else {
            thttp_json(rep, 200, json_pack("{s:o}", "users", l.arr));
        }
    }
    api_leave(d);
}

void api_users_get(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who))
        return;
    tstore_user_t u;
    tsl_error_t err;
    if (!who.admin && strcmp(who.user, req->params[0]) != 0)
        thttp_error(rep, 403, "forbidden", NULL, "only an admin may look at other users");
    else if (tstore_user_get(d->store, req->params[0], &u, &err) < 0)
        api_store_error(rep, &err);
    else {
        json_t *o = user_json(d, &u, &err);
        if (o)
            thttp_json(rep, 200, o);
        else
            api_store_failure(rep, "user's jobs", &err);
    }
    api_leave(d);
}

void api_users_create(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    static const char *const fields[] = {"name", "role", NULL};
    json_t *body = thttp_body_object(req, rep, 0);
    if (!body)
        return;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who)) {
        json_decref(body);
        return;
    }
    tsl_error_t err;
    if (!api_require_admin(&who, rep) || thttp_check_fields(body, fields, rep) < 0)
        goto out;
    json_t *name = json_object_get(body, "name"), *role = json_object_get(body, "role");
    if (!name) {
        thttp_error(rep, 400, "missing_field", "name", "name is required");
        goto out;
    }
    if (!json_is_string(name) || !tstore_name_valid(json_string_value(name))) {
        thttp_error(rep, 400, "invalid_value", "name",
                    "a user name is 1 to 32 of a-z, 0-9, '_' and '-', starting with a letter");
        goto out;
    }
    const char *r = "user";
    if (role) {
        r = json_is_string(role) ? json_string_value(role) : "";
        if (strcmp(r, "user") != 0 && strcmp(r, "admin") != 0) {
            thttp_error(rep, 400, "invalid_value", "role", "role must be admin or user");
            goto out;
        }
    }
    tstore_user_t u = {.created_ms = tessd_now_ms()};
    snprintf(u.name, sizeof u.name, "%s", json_string_value(name));
    snprintf(u.role, sizeof u.role, "%s", r);
    if (tstore_user_add(d->store, u.name, u.role, u.created_ms, &err) < 0) {
        api_store_error(rep, &err);
        goto out;
    }
    thttp_json(rep, 201, user_obj(&u, 0)); /* a new user has no jobs */
    snprintf(rep->location, sizeof rep->location, "/v1/users/%s", u.name);
out:
    api_leave(d);
    json_decref(body);
}

/* The services of a user, named (the first ones that fit) for the refusal. */
typedef struct {
    const char *owner;
    char names[256];
    int n;
    bool full;
} owned_t;

static int owned_service(const tstore_service_t *sv, void *arg)
{
    owned_t *o = arg;
    if (strcmp(sv->owner, o->owner) != 0)
        return 0;
    size_t len = strlen(o->names);
    if (!o->full && len + strlen(sv->name) + 8 < sizeof o->names) {
        snprintf(o->names + len, sizeof o->names - len, "%s%s", o->n ? ", " : "", sv->name);
    } else if (!o->full) {
        snprintf(o->names + len, sizeof o->names - len, ", ...");
        o->full = true;
    }
    o->n++;
    return 0;
}

void api_users_delete(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who))
        return;
    tsl_error_t err;
    if (!api_require_admin(&who, rep))
        goto out;
    if (strcmp(who.user, req->params[0]) == 0) {
        thttp_error(rep, 409, "conflict", NULL, "you cannot delete yourself");
        goto out;
    }
    /* A user's folders are not deleted with them (their files may be the lab's): an admin
     * deletes them first (docs/folders.md). */
    int64_t owned = 0;
    if (tstore_folder_count_owner(d->store, req->params[0], &owned, &err) < 0) {
        api_store_failure(rep, "folders of the user", &err);
        goto out;
    }
    if (owned > 0) {
        thttp_error(rep, 409, "conflict", NULL,
                    "'%s' owns %lld folder(s): delete them first (tessel folder rm)",
                    req->params[0], (long long)owned);
        goto out;
    }
    /* Nor their services (tesseld would run their replicas as an account that is gone). */
    owned_t svcs = {req->params[0], "", 0, false};
    if (tstore_service_list(d->store, owned_service, &svcs, &err) < 0) {
        api_store_failure(rep, "services of the user", &err);
        goto out;
    }
    if (svcs.n > 0) {
        thttp_error(rep, 409, "conflict", NULL,
                    "'%s' owns %d service(s) (%s): delete them first (tessel services rm)",
                    req->params[0], svcs.n, svcs.names);
        goto out;
    }
    if (tstore_user_del(d->store, req->params[0], &err) < 0) {
        api_store_error(rep, &err);
        goto out;
    }
    api_folders_sync_all(d); /* the shares with them are gone: so are their ACL entries */
    rep->status = 204;
out:
    api_leave(d);
}

static json_t *token_json(const tstore_token_t *t)
{
    return json_pack("{s:I, s:s, s:s, s:o}", "id", (json_int_t)t->id, "user", t->user, "name",
                     t->name, "created_at", api_time(t->created_ms));
}

static int add_token(const tstore_token_t *t, void *arg)
{
    json_array_append_new(arg, token_json(t));
    return 0;
}

void api_tokens_list(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    const char *user = thttp_query(req, "user");
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who))
        return;
    if (!who.admin) {
        if (user && strcmp(user, who.user) != 0) {
            thttp_error(rep, 403, "forbidden", "user", "only an admin may list others' tokens");
            goto out;
        }
        user = who.user;
    }
    json_t *arr = json_array();
    tsl_error_t err;
    if (tstore_token_list(d->store, user, add_token, arr, &err) < 0) {
        json_decref(arr);
        api_store_error(rep, &err);
        goto out;
    }
    thttp_json(rep, 200, json_pack("{s:o}", "tokens", arr));
out:
    api_leave(d);
}

void api_tokens_create(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    static const char *const fields[] = {"user", "name", NULL};
    json_t *body = thttp_body_object(req, rep, 1);
    if (!body)
        return;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who)) {
        json_decref(body);
        return;
    }
    tsl_error_t err;
    if (thttp_check_fields(body, fields, rep) < 0)
        goto out;
    json_t *u = json_object_get(body, "user"), *n = json_object_get(body, "name");
    if ((u && !json_is_string(u)) || (n && (!json_is_string(n) || json_string_length(n) > 64))) {
        thttp_error(rep, 400, "invalid_value", u && !json_is_string(u) ? "user" : "name",
                    "user must be a user name and name a string of at most 64 bytes");
        goto out;
    }
    const char *user = u ? json_string_value(u) : who.user;
    if (!who.admin && strcmp(user, who.user) != 0) {
        thttp_error(rep, 403, "forbidden", "user", "only an admin may create tokens for others");
        goto out;
    }
    tstore_user_t owner;
    if (tstore_user_get(d->store, user, &owner, &err) < 0) {
        if (errno == ENOENT)
            thttp_error(rep, 400, "invalid_value", "user", "no user named '%s'", user);
        else
            api_store_error(rep, &err);
        goto out;
    }
    char token[TESSD_TOKEN_LEN + 1];
    unsigned char hash[32];
    if (tessd_token_new(token, hash) < 0) {
        thttp_error(rep, 500, "internal", NULL, "no randomness for a token");
        goto out;
    }
    tstore_token_t t = {.created_ms = tessd_now_ms()};
    snprintf(t.user, sizeof t.user, "%s", owner.name);
    snprintf(t.name, sizeof t.name, "%s", n ? json_string_value(n) : "");
    t.id = tstore_token_add(d->store, t.user, t.name, hash, t.created_ms, &err);
    if (t.id < 0) {
        api_store_error(rep, &err);
        goto out;
    }
    json_t *o = token_json(&t);
    json_object_set_new(o, "token", json_string(token));
    thttp_json(rep, 201, o);
out:
    api_leave(d);
    json_decref(body);
}

void api_tokens_delete(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who))
        return;
    int64_t id;
    tstore_token_t t;
    tsl_error_t err;
    if (api_parse_id(req->params[0], &id) < 0 || tstore_token_get(d->store, id, &t, &err) < 0 ||
        (!who.admin && strcmp(t.user, who.user) != 0)) {
        thttp_error(rep, 404, "not_found", NULL, "no token '%s'", req->params[0]);
        goto out;
    }
    if (tstore_token_del(d->store, id, &err) < 0) {
        api_store_error(rep, &err);
        goto out;
    }
    rep->status = 204;
out:
    api_leave(d);
}
