/* folders.c - /v1/folders: virtual folders (docs/folders.md).  A folder is a directory
 * <folder-root>/<name> made by tesseld (root); who may do what is folders.h's, and the same
 * rights are written on disk as POSIX ACLs (folderfs.h) after every change of the folder's
 * shares or of the members of its projects, so that a process job, a login shell or an NFS
 * client of the same accounts sees exactly what the API allows.
 *
 * A caller with no right on a folder (not an admin) is answered as if it did not exist: 404
 * "no folder 'NAME'", whether it exists or not.  A change is written in the store in a
 * transaction; the ACL of the folder's own directory (the gate: nobody without an entry there
 * reaches anything inside) is written before the commit, and a failure to write it undoes
 * the change (500); what is inside is rewritten after (bounded: TESSD_FOLDER_APPLY_MAX).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/api/api.h"
#include "daemon/folderfs.h"
#include "daemon/folders.h"
#include "daemon/pwcache.h"
#include "libutil/nomount.h"
#include "libutil/size.h"

/* Most objects whose ACL one change rewrites, under tesseld's lock: a share of a folder of
 * 20,001 objects answered in 0.21-0.42 s on the development machine (docs/folders.md, "Keeping
 * the ACLs true"), about 10-20 us an object.  Past it the rest keep their ACLs (the gate is
 * always written first: nobody gets in who should not) and the log says so. */
#define TESSD_FOLDER_APPLY_MAX 20000
/* Share changes (share, unshare) a user may make: TESSD_FOLDER_SHARE_BURST at once, then one
 * every 1 / TESSD_FOLDER_SHARE_RATE seconds; admins are not limited.  Each may rewrite up to
 * TESSD_FOLDER_APPLY_MAX ACLs under tesseld's lock (0.2-0.4 s), so one user holds the lock at
 * most about 8 % of the time by sharing (docs/folders.md). */
#define TESSD_FOLDER_SHARE_RATE  0.2
#define TESSD_FOLDER_SHARE_BURST 10
/* Most objects one GET /usage counts (outside the lock): a larger folder's figure is a lower
 * bound, marked "complete": false. */
#define TESSD_FOLDER_USAGE_MAX 1000000
/* Most folders one job mounts: each is one bind mount in its namespace; 16 is more than a job
 * needs (data, models, scratch, outputs) and keeps the shim's command line short. */
#define TESSD_JOB_FOLDERS_MAX 16
/* Most bytes GET .../files answers for one file, read whole into memory by a connection's
 * thread: the console's and small scripts' files (a config, a plot, a short log); larger ones
 * are rsync's and scp's (docs/folders.md).  Uploads are bounded by --max-body. */
#define TESSD_FOLDER_FILE_MAX (8u << 20)
/* Most entries of one directory listing (the rest: "truncated": true). */
#define TESSD_FOLDER_LIST_MAX 10000
/* How old a folder's measured use may be when an upload to a folder with a quota, or a job
 * that mounts it read-write, is checked against it: older, the folder is walked again first
 * (bounded by TESSD_FOLDER_USAGE_MAX; 20,000 objects took 0.06 s, docs/folders.md).  Between
 * measurements, uploads through the API are added to it; what jobs and shells write is seen
 * at the next one, so at most this late (docs/folders.md, "Quotas"). */
#define TESSD_FOLDER_MEASURE_MS 60000
/* The most time the walks of one request (an upload, a submission) take together, on top of
 * the object bound of each: past it the figures still stale decide nothing and the request is
 * refused (507, try again).  Each folder is walked by one request at a time; the others wait
 * for its result (docs/folders.md, "Quotas"). */
#define TESSD_FOLDER_WALK_MS 10000

/* ---- helpers ------------------------------------------------------------------------------ */

/* false after 503 when folders are off (tesseld is not root). */
static bool folders_on(tessd_t *d, thttp_reply_t *rep)
{
    if (d->folder_rootfd >= 0)
        return true;
    thttp_error(rep, 503, "unavailable", NULL,
                "virtual folders need tesseld to run as root (their directories are root's "
                "and their ACLs name other accounts)");
    return false;
}

typedef struct {
    tessd_t *d;
    const char *user;
    tfld_access_t a;
    tsl_error_t err;
    bool failed;
} access_t;

static int share_access(const tstore_fshare_t *s, void *arg)
{
    access_t *x = arg;
    if (s->user[0]) {
        if (strcmp(s->user, x->user) == 0)
            x->a = tfld_max(x->a, tfld_of_share(s->rw, TSTORE_ROLE_MEMBER));
        return 0;
    }
    tstore_role_t role;
    if (tstore_member_role(x->d->store, s->project, x->user, &role, &x->err) < 0) {
        x->failed = true;
        return 1;
    }
    x->a = tfld_max(x->a, tfld_of_share(s->rw, role));
    return 0;
}

/* The caller's right on f into *a.  0, or -1 with err (store). */
static int access_of(tessd_t *d, const tessd_caller_t *who, const tstore_folder_t *f,
                     tfld_access_t *a, tsl_error_t *err)
{
    /* A personal folder's owner manages it; a project folder's creator has only what their
     * role in the project gives now (or a share): removed from the project, they are out. */
    if (who->admin || (!f->project && strcmp(who->user, f->owner) == 0)) {
        *a = TFLD_MANAGE;
        return 0;
    }
    access_t x = {.d = d, .user = who->user};
    if (f->project) {
        tstore_role_t role;
        if (tstore_member_role(d->store, f->project, who->user, &role, err) < 0)
            return -1;
        x.a = tfld_of_project_role(role);
    }
    if (tstore_fshare_list(d->store, f->id, share_access, &x, err) < 0)
        return -1;
    if (x.failed) {
        *err = x.err;
        return -1;
    }
    *a = x.a;
    return 0;
}

/* The folder named name as the caller may see it, and their right on it: 0; -1 after 404 (a
 * bad name, unknown, or none of the caller's) or 500. */
static int load(tessd_t *d, const tessd_caller_t *who, const char *name, tstore_folder_t *f,
                tfld_access_t *a, thttp_reply_t *rep)
{
    tsl_error_t err;
    *a = TFLD_NONE;
    if (!tstore_name_valid(name)) {
        thttp_error(rep, 404, "not_found", NULL, "no folder '%s'", name);
        return -1;
    }
    if (tstore_folder_get(d->store, name, f, &err) < 0) {
        if (errno == ENOENT)
            thttp_error(rep, 404, "not_found", NULL, "no folder '%s'", name);
        else
            api_store_failure(rep, "folder", &err);
        return -1;
    }
    if (access_of(d, who, f, a, &err) < 0) {
        api_store_failure(rep, "folder's shares", &err);
        return -1;
    }
    if (*a == TFLD_NONE) {
        thttp_error(rep, 404, "not_found", NULL, "no folder '%s'", name);
        return -1;
    }
    return 0;
}

/* false after 403 when a is below manage. */
static bool may_manage(const tessd_caller_t *who, const tstore_folder_t *f, tfld_access_t a,
                       thttp_reply_t *rep)
{
    if (a >= TFLD_MANAGE)
        return true;
    thttp_error(rep, 403, "forbidden", NULL,
                "you ('%s') have %s access to folder '%s' and may not manage it (its owner, the "
                "owners of its project and admins do)",
                who->user, tfld_access_name(a), f->name);
    return false;
}

/* ---- the ACL of a folder from the store --------------------------------------------------- */

typedef struct {
    tessd_t *d;
    tfld_acl_entry_t e[TFLD_ACL_MAX];
    size_t n;
    bool rw;   /* of the share being expanded */
    bool full; /* more than TFLD_ACL_MAX accounts */
    tsl_error_t err;
    bool failed;
} acl_build_t;

/* The account of a Tessel user: a user with no local account (a token-only user) gets no
 * entry, nor does root (who needs none). */
static void acl_user(acl_build_t *b, const char *user, bool rw)
{
    tessd_pw_t pw;
    if (tessd_getpwnam(user, &pw) != 1 || pw.uid == 0)
        return;
    if (tfld_acl_add(b->e, &b->n, TFLD_ACL_MAX, pw.uid, rw) < 0)
        b->full = true;
}

/* A member of the folder's own project: owners and members rw, viewers ro. */
static int acl_member(const tstore_member_t *m, void *arg)
{
    acl_build_t *b = arg;
    acl_user(b, m->user, tfld_of_project_role(m->role) >= TFLD_RW);
    return 0;
}

/* A member of a project the folder is shared with. */
static int acl_share_member(const tstore_member_t *m, void *arg)
{
    acl_build_t *b = arg;
    acl_user(b, m->user, tfld_of_share(b->rw, m->role) >= TFLD_RW);
    return 0;
}

static int acl_share(const tstore_fshare_t *s, void *arg)
{
    acl_build_t *b = arg;
    if (s->user[0]) {
        acl_user(b, s->user, s->rw);
        return 0;
    }
    b->rw = s->rw;
    if (tstore_member_list(b->d->store, s->project, acl_share_member, b, &b->err) < 0) {
        b->failed = true;
        return 1;
    }
    return 0;
}

/* The entries of f's ACL, from the store as it is now (in the caller's transaction).  0, or
 * -1 with err (store; E2BIG: more accounts than an ACL holds). */
static int acl_build(tessd_t *d, const tstore_folder_t *f, acl_build_t *b, tsl_error_t *err)
{
    memset(b, 0, sizeof *b);
    b->d = d;
    if (!f->project)
        acl_user(b, f->owner, true); /* a project folder's creator: only as a member */
    if (f->project && tstore_member_list(d->store, f->project, acl_member, b, err) < 0)
        return -1;
    if (tstore_fshare_list(d->store, f->id, acl_share, b, err) < 0)
        return -1;
    if (b->failed) {
        *err = b->err;
        return -1;
    }
    if (b->full) {
        errno = E2BIG;
        return tsl_errprintf(err, "folder '%s' would reach more than %d accounts (an ACL's most)",
                             f->name, TFLD_ACL_MAX);
    }
    return 0;
}

/* Write f's ACLs from the store: the gate, then what is inside (bounded).  0; 1 when what is
 * inside was not all rewritten (logged); -1 with err when the gate could not be written. */
static int acl_write(tessd_t *d, const tstore_folder_t *f, tsl_error_t *err)
{
    acl_build_t b;
    if (acl_build(d, f, &b, err) < 0)
        return -1;
    size_t done = 0;
    int rc =
        tfld_dir_apply(d->folder_rootfd, f->name, b.e, b.n, TESSD_FOLDER_APPLY_MAX, &done, err);
    if (rc == 1)
        tessd_log("warning: folder %s: the ACLs of %zu objects were rewritten, not all (a link "
                  "count above 1, an object that could not be changed, or more than %d "
                  "objects): the folder's own directory is right",
                  f->name, done, TESSD_FOLDER_APPLY_MAX);
    return rc;
}

/* Write the ACLs of the folder named name (after a change elsewhere: a project's members, a
 * user deleted); failures are logged. */
static int sync_name(const char *name, void *arg)
{
    tessd_t *d = arg;
    tstore_folder_t f;
    tsl_error_t err;
    if (tstore_folder_get(d->store, name, &f, &err) < 0 || acl_write(d, &f, &err) < 0)
        tessd_log("error: folder %s: its ACL could not be written: %s", name, err.text);
    return 0;
}

void api_folders_project_changed(tessd_t *d, int64_t project)
{
    tsl_error_t err;
    if (d->folder_rootfd < 0)
        return;
    if (tstore_folder_by_project(d->store, project, sync_name, d, &err) < 0)
        tessd_log("error: the folders of project %lld: %s", (long long)project, err.text);
}

static int add_name(const char *name, void *arg)
{
    return json_array_append_new(arg, json_string(name));
}

json_t *api_folders_of_project(tessd_t *d, int64_t project)
{
    json_t *arr = json_array();
    tsl_error_t err;
    if (d->folder_rootfd >= 0 &&
        tstore_folder_by_project(d->store, project, add_name, arr, &err) < 0)
        tessd_log("error: the folders of project %lld: %s", (long long)project, err.text);
    return arr;
}

void api_folders_sync_names(tessd_t *d, json_t *names)
{
    size_t i;
    json_t *v;
    json_array_foreach(names, i, v) sync_name(json_string_value(v), d);
    json_decref(names);
}

static int sync_folder(const tstore_folder_t *f, void *arg)
{
    tessd_t *d = arg;
    tsl_error_t err;
    if (acl_write(d, f, &err) < 0)
        tessd_log("error: folder %s: its ACL could not be written: %s", f->name, err.text);
    return 0;
}

void api_folders_sync_all(tessd_t *d)
{
    tsl_error_t err;
    if (d->folder_rootfd >= 0 && tstore_folder_list(d->store, sync_folder, d, &err) < 0)
        tessd_log("error: listing the folders: %s", err.text);
}

/* ---- objects ------------------------------------------------------------------------------ */

static int add_share(const tstore_fshare_t *s, void *arg)
{
    json_t *o = s->user[0] ? json_pack("{s:s}", "user", s->user)
                           : json_pack("{s:s}", "project", s->project_name);
    if (!o)
        return -1;
    json_object_set_new(o, "mode", json_string(s->rw ? "rw" : "ro"));
    json_object_set_new(o, "added_at", api_time(s->added_ms));
    return json_array_append_new(arg, o);
}

/* The folder's object; with full, its shares.  NULL with err (store). */
static json_t *folder_json(tessd_t *d, const tstore_folder_t *f, tfld_access_t a, bool full,
                           tsl_error_t *err)
{
    char path[PATH_MAX + 40];
    snprintf(path, sizeof path, "%s/%s", d->folder_root, f->name);
    json_t *o = json_pack("{s:s, s:s, s:o, s:s, s:s, s:o, s:o, s:o, s:o}", "name", f->name, "owner",
                          f->owner, "project",
                          f->project ? json_string(f->project_name) : json_null(), "access",
                          tfld_access_name(a), "path", path, "created_at", api_time(f->created_ms),
                          "quota", f->quota > 0 ? json_integer(f->quota) : json_null(), "used",
                          f->used >= 0 ? json_integer(f->used) : json_null(), "used_at",
                          f->used >= 0 ? api_time(f->used_ms) : json_null());
    tstore_project_t p;
    if (o && f->project && tstore_project_get_id(d->store, f->project, &p, NULL) == 0) {
        int64_t pused;
        api_folders_project_use(d, &p, &pused);
        json_object_set_new(o, "project_quota",
                            p.folder_quota > 0 ? json_integer(p.folder_quota) : json_null());
        json_object_set_new(o, "project_used", pused >= 0 ? json_integer(pused) : json_null());
    } else if (o) {
        json_object_set_new(o, "project_quota", json_null());
        json_object_set_new(o, "project_used", json_null());
    }
    if (o && full) {
        json_t *arr = json_array();
        if (tstore_fshare_list(d->store, f->id, add_share, arr, err) < 0) {
            json_decref(arr);
            json_decref(o);
            return NULL;
        }
        json_object_set_new(o, "shares", arr);
    }
    return o;
}

/* Answer status with the full object of the folder named name (read again). */
static void answer(tessd_t *d, const tessd_caller_t *who, const char *name, int status,
                   thttp_reply_t *rep)
{
    tstore_folder_t f;
    tfld_access_t a;
    tsl_error_t err;
    json_t *o = NULL;
    if (tstore_folder_get(d->store, name, &f, &err) == 0 && access_of(d, who, &f, &a, &err) == 0)
        o = folder_json(d, &f, a, true, &err);
    if (!o) {
        api_store_failure(rep, "folder", &err);
        return;
    }
    thttp_json(rep, status, o);
}

/* End the transaction of a change: commit when rc is 0, else roll back keeping errno. */
static int end_tx(tessd_t *d, int rc, tsl_error_t *err)
{
    if (rc < 0) {
        int saved = errno;
        tstore_rollback(d->store);
        errno = saved;
        return -1;
    }
    return tstore_commit(d->store, err);
}

/* A "quota" field (v may be NULL): absent or null 0 (none), else a size (bytes or "10G"), an
 * admin's to give.  0; -1 after 400 or 403. */
static int parse_quota(const tessd_caller_t *who, json_t *v, int64_t *out, thttp_reply_t *rep)
{
    *out = 0;
    if (!v || json_is_null(v))
        return 0;
    if (!who->admin) {
        thttp_error(rep, 403, "forbidden", "quota",
                    "only an admin sets a folder's quota (you are '%s')", who->user);
        return -1;
    }
    uint64_t b;
    if (api_get_size(v, "quota", &b, rep) < 0)
        return -1;
    *out = b > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)b;
    return 0;
}

/* ---- quotas, measured ------------------------------------------------------------------- */

/* One walk of a folder at a time: a request that needs a folder walked while another request
 * walks it waits for that walk and takes its result (docs/folders.md, "Quotas").  The list is
 * short (one entry per walk in progress) and guarded by its own mutex, never tesseld's lock. */
typedef struct flight {
    int64_t id; /* the folder's */
    int refs;   /* the walker and its waiters */
    bool done;
    int rc; /* tfld_dir_usage's */
    uint64_t bytes, objects;
    tfld_usage_stop_t stop;
    int eno;
    tsl_error_t err; /* when rc < 0 */
    struct flight *next;
} flight_t;

static pthread_mutex_t flights_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t flights_cv = PTHREAD_COND_INITIALIZER;
static flight_t *flights;

static void flight_drop(flight_t *fl)
{
    if (--fl->refs > 0 || !fl->done)
        return;
    for (flight_t **p = &flights; *p; p = &(*p)->next)
        if (*p == fl) {
            *p = fl->next;
            break;
        }
    free(fl);
}

/* Store folder f's measured use, when it is still the same folder (not deleted and made again
 * meanwhile).  Takes tesseld's lock. */
static void store_used(tessd_t *d, const tstore_folder_t *f, int64_t used, int64_t at_ms)
{
    pthread_mutex_lock(&d->lock);
    tstore_folder_t now;
    if (tstore_folder_get(d->store, f->name, &now, NULL) == 0 && now.id == f->id)
        tstore_folder_set_used(d->store, f->id, used, at_ms, NULL);
    pthread_mutex_unlock(&d->lock);
}

/* Walk folder f (outside tesseld's lock: the caller holds none), or wait for the walk of it
 * in progress and take its result; until deadline_ms (tfld_mono_ms; 0: none).  A complete
 * walk is stored as the folder's use, measured when the walk began; an incomplete one is not
 * stored (it is no figure for a quota decision).  0 complete, 1 incomplete (*stop says why),
 * -1 with err (ENOENT: the folder is gone).  *bytes and *objects as tfld_dir_usage's. */
static int walk_folder(tessd_t *d, const tstore_folder_t *f, int64_t deadline_ms, uint64_t *bytes,
                       uint64_t *objects, tfld_usage_stop_t *stop, tsl_error_t *err)
{
    *bytes = *objects = 0;
    *stop = TFLD_USAGE_COMPLETE;
    pthread_mutex_lock(&flights_mu);
    flight_t *fl = flights; /* a walk in progress (one done is not reused: its waiters end) */
    while (fl && (fl->id != f->id || fl->done))
        fl = fl->next;
    if (fl) {
        fl->refs++;
        while (!fl->done) {
            int64_t left = deadline_ms > 0 ? deadline_ms - tfld_mono_ms() : 0;
            if (deadline_ms > 0 && left <= 0)
                break;
            if (deadline_ms <= 0) {
                pthread_cond_wait(&flights_cv, &flights_mu);
                continue;
            }
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += left / 1000;
            ts.tv_nsec += (left % 1000) * 1000000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&flights_cv, &flights_mu, &ts);
        }
        int rc = 1;
        if (fl->done) {
            rc = fl->rc;
            *bytes = fl->bytes;
            *objects = fl->objects;
            *stop = fl->stop;
            if (rc < 0) {
                errno = fl->eno;
                tsl_errprintf(err, "%s", fl->err.text);
            }
        } else {
            *stop = TFLD_USAGE_TIME;
        }
        int saved = errno;
        flight_drop(fl);
        pthread_mutex_unlock(&flights_mu);
        errno = saved;
        return rc;
    }
    fl = calloc(1, sizeof *fl);
    if (!fl) {
        pthread_mutex_unlock(&flights_mu);
        errno = ENOMEM;
        return tsl_errprintf(err, "out of memory");
    }
    fl->id = f->id;
    fl->refs = 1;
    fl->next = flights;
    flights = fl;
    pthread_mutex_unlock(&flights_mu);

    int64_t at = tessd_now_ms();
    tsl_error_t werr = {0};
    int rc = tfld_dir_usage(d->folder_rootfd, f->name, TESSD_FOLDER_USAGE_MAX, deadline_ms, bytes,
                            objects, stop, &werr);
    int eno = errno;
    if (rc == 0)
        store_used(d, f, *bytes > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)*bytes, at);

    pthread_mutex_lock(&flights_mu);
    fl->done = true;
    fl->rc = rc;
    fl->bytes = *bytes;
    fl->objects = *objects;
    fl->stop = *stop;
    fl->eno = eno;
    fl->err = werr;
    pthread_cond_broadcast(&flights_cv);
    flight_drop(fl);
    pthread_mutex_unlock(&flights_mu);
    if (rc < 0) {
        errno = eno;
        return tsl_errprintf(err, "%s", werr.text);
    }
    return rc;
}

void api_folders_project_use(tessd_t *d, const tstore_project_t *p, int64_t *used)
{
    int64_t measured = 0, n = 0;
    *used = -1;
    if (d->folder_rootfd < 0)
        return;
    if (tstore_project_folder_use(d->store, p->id, used, &measured, &n, NULL) < 0 ||
        (measured == 0 && n > 0))
        *used = -1;
}

/* Whether folder f's measured use is missing or older than TESSD_FOLDER_MEASURE_MS. */
static bool stale(const tstore_folder_t *f)
{
    return f->used < 0 || tessd_now_ms() - f->used_ms > TESSD_FOLDER_MEASURE_MS;
}

/* The folders of a project whose figure is stale (a growing array). */
typedef struct {
    tstore_folder_t *f;
    size_t n, cap;
    bool failed;
} stale_t;

static int add_stale(const tstore_folder_t *f, void *arg)
{
    stale_t *x = arg;
    if (!stale(f))
        return 0;
    if (x->n == x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 16;
        tstore_folder_t *t = realloc(x->f, cap * sizeof *t);
        if (!t) {
            x->failed = true;
            return 1;
        }
        x->f = t;
        x->cap = cap;
    }
    x->f[x->n++] = *f;
    return 0;
}

/* The stale folders of project into x (lock held; x->f the caller frees).  0, or -1 with
 * err. */
static int project_stale(tessd_t *d, int64_t project, stale_t *x, tsl_error_t *err)
{
    x->n = 0;
    x->failed = false;
    if (tstore_folder_list_project(d->store, project, add_stale, x, err) < 0)
        return -1;
    if (x->failed) {
        errno = ENOMEM;
        return tsl_errprintf(err, "out of memory");
    }
    return 0;
}

/* What the walks of one request found that keeps a quota decision from being made. */
typedef struct {
    int64_t deadline_ms;    /* of all the walks of the request (tfld_mono_ms) */
    tfld_usage_stop_t stop; /* the first incomplete walk's reason (COMPLETE: none) */
    int64_t *walked;        /* the folders this request walked (each once), malloc'd */
    size_t nwalked, cap;
} walks_t;

/* Walk folder f for request w unless w walked it already; an incomplete walk's reason kept
 * in w->stop.  As walk_folder: 0, 1, or -1 with err. */
static int request_walk(tessd_t *d, walks_t *w, const tstore_folder_t *f, tsl_error_t *err)
{
    for (size_t i = 0; i < w->nwalked; i++)
        if (w->walked[i] == f->id)
            return 0;
    if (w->nwalked == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 16;
        int64_t *t = realloc(w->walked, cap * sizeof *t);
        if (!t) {
            errno = ENOMEM;
            return tsl_errprintf(err, "out of memory");
        }
        w->walked = t;
        w->cap = cap;
    }
    w->walked[w->nwalked++] = f->id;
    uint64_t bytes, objects;
    tfld_usage_stop_t stop;
    int rc = walk_folder(d, f, w->deadline_ms, &bytes, &objects, &stop, err);
    if (rc == 1 && w->stop == TFLD_USAGE_COMPLETE)
        w->stop = stop;
    return rc;
}

/* Walk folder f when its quota needs it (fquota and stale) and the stale folders of its
 * project when the project has a folder quota (pquota), all within w->deadline_ms; no lock
 * held.  0 (an incomplete walk leaves its folder stale: the decision fails closed), or -1
 * with err (not for a folder deleted meanwhile). */
static int quota_walks(tessd_t *d, const tstore_folder_t *f, bool pquota, walks_t *w,
                       tsl_error_t *err)
{
    if (f->quota > 0 && stale(f) && request_walk(d, w, f, err) < 0 && errno != ENOENT)
        return -1;
    if (!pquota || !f->project)
        return 0;
    stale_t x = {0};
    pthread_mutex_lock(&d->lock);
    int rc = project_stale(d, f->project, &x, err);
    pthread_mutex_unlock(&d->lock);
    for (size_t i = 0; rc == 0 && i < x.n; i++) {
        int r = request_walk(d, w, &x.f[i], err);
        if (r < 0 && errno != ENOENT)
            rc = -1;
        if (w->stop == TFLD_USAGE_TIME)
            break; /* the request's time is spent: the rest stay stale */
    }
    free(x.f);
    return rc;
}

/* A quota decision on folder name for a write of add bytes, lock held, on the figures as
 * they are now.  Figures still stale (a walk incomplete, out of time, or a folder made
 * meanwhile) decide nothing: the answer is "cannot be measured" (fail closed). */
typedef enum {
    QD_OK,
    QD_FOLDER_OVER,
    QD_PROJECT_OVER,
    QD_FOLDER_UNMEASURED,
    QD_PROJECT_UNMEASURED,
} qd_t;

typedef struct {
    tstore_folder_t f;
    char pname[TSTORE_NAME_MAX + 1];
    int64_t pquota, pused;
    qd_t v;
} qres_t;

/* 0 with r (ENOENT: the folder is gone), or -1 with err. */
static int quota_decide(tessd_t *d, const char *name, int64_t add, qres_t *r, tsl_error_t *err)
{
    memset(r, 0, sizeof *r);
    if (tstore_folder_get(d->store, name, &r->f, err) < 0)
        return -1;
    tstore_project_t p;
    if (r->f.project && tstore_project_get_id(d->store, r->f.project, &p, NULL) == 0 &&
        p.folder_quota > 0) {
        r->pquota = p.folder_quota;
        snprintf(r->pname, sizeof r->pname, "%s", p.name);
    }
    if (r->f.quota > 0 && stale(&r->f)) {
        r->v = QD_FOLDER_UNMEASURED;
        return 0;
    }
    if (r->pquota > 0) {
        stale_t x = {0};
        int rc = project_stale(d, r->f.project, &x, err);
        free(x.f);
        if (rc < 0)
            return -1;
        if (x.n > 0) {
            r->v = QD_PROJECT_UNMEASURED;
            return 0;
        }
        int64_t measured, n;
        if (tstore_project_folder_use(d->store, r->f.project, &r->pused, &measured, &n, err) < 0)
            return -1;
    }
    switch (tfld_quota_check(r->f.quota > 0 ? r->f.used : 0, r->f.quota, r->pused, r->pquota,
                             (uint64_t)add)) {
    case TFLD_QUOTA_FOLDER:
        r->v = QD_FOLDER_OVER;
        break;
    case TFLD_QUOTA_PROJECT:
        r->v = QD_PROJECT_OVER;
        break;
    case TFLD_QUOTA_OK:
        r->v = QD_OK;
        break;
    }
    return 0;
}

/* The 507 of a folder, or a project, that cannot be measured (after quota_decide). */
static void unmeasured_error(thttp_reply_t *rep, const char *field, const qres_t *r,
                             const walks_t *w, const char *what)
{
    const char *why = w->stop == TFLD_USAGE_COMPLETE ? "not measured within this request"
                                                     : tfld_usage_stop_text(w->stop);
    if (r->v == QD_FOLDER_UNMEASURED)
        thttp_error(rep, 507, "insufficient_storage", field,
                    "folder '%s' has a quota and its use cannot be measured (%s: at most %d "
                    "levels, %d entries and %u files with several links are counted, in %d s): "
                    "%s is refused until it can be; flatten or delete part of the folder (tessel "
                    "folders du %s says complete: false until then), or try again if it was out "
                    "of time",
                    r->f.name, why, TFLD_WALK_DEPTH, TESSD_FOLDER_USAGE_MAX, TFLD_USAGE_LINKS_MAX,
                    TESSD_FOLDER_WALK_MS / 1000, what, r->f.name);
    else
        thttp_error(rep, 507, "insufficient_storage", field,
                    "project '%s' has a folder quota and the use of its folders cannot be "
                    "measured now (%s): %s to folder '%s' is refused; try again (a folder of the "
                    "project that stays unmeasurable, too deep or with too many entries, must be "
                    "flattened or emptied: tessel folders du says complete: false)",
                    r->pname, why, what, r->f.name);
}

/* ---- /v1/folders -------------------------------------------------------------------------- */

typedef struct {
    tessd_t *d;
    const tessd_caller_t *who;
    json_t *arr;
    tsl_error_t err;
    bool failed;
} flist_t;

static int add_folder(const tstore_folder_t *f, void *arg)
{
    flist_t *l = arg;
    tfld_access_t a;
    if (access_of(l->d, l->who, f, &a, &l->err) < 0) {
        l->failed = true;
        return 1;
    }
    if (a == TFLD_NONE)
        return 0;
    json_t *o = folder_json(l->d, f, a, false, &l->err);
    if (!o) {
        l->failed = true;
        return 1;
    }
    json_array_append_new(l->arr, o);
    return 0;
}

void api_folders_list(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    tessd_caller_t who;
    if (!folders_on(d, rep) || !api_enter(d, req, rep, &who))
        return;
    /* The caller's folders (an admin: all), with their right on each. */
    flist_t l = {.d = d, .who = &who, .arr = json_array()};
    tsl_error_t err;
    if (tstore_folder_list(d->store, add_folder, &l, &err) < 0 || l.failed) {
        json_decref(l.arr);
        api_store_failure(rep, "list folders", l.failed ? &l.err : &err);
    } else {
        thttp_json(rep, 200, json_pack("{s:o}", "folders", l.arr));
    }
    api_leave(d);
}

void api_folders_get(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    tessd_caller_t who;
    if (!folders_on(d, rep) || !api_enter(d, req, rep, &who))
        return;
    tstore_folder_t f;
    tfld_access_t a;
    if (load(d, &who, req->params[0], &f, &a, rep) == 0)
        answer(d, &who, f.name, 200, rep);
    api_leave(d);
}

void api_folders_create(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    static const char *const fields[] = {"name", "project", "quota", NULL};
    if (!folders_on(d, rep))
        return;
    json_t *body = thttp_body_object(req, rep, 0);
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
    json_t *name = json_object_get(body, "name"), *project = json_object_get(body, "project");
    if (!name) {
        thttp_error(rep, 400, "missing_field", "name", "name is required");
        goto out;
    }
    if (!json_is_string(name) || !tstore_name_valid(json_string_value(name))) {
        thttp_error(rep, 400, "invalid_value", "name",
                    "a folder name is 1 to 32 of a-z, 0-9, '_' and '-', starting with a letter");
        goto out;
    }
    tstore_folder_t f = {.created_ms = tessd_now_ms()};
    snprintf(f.name, sizeof f.name, "%s", json_string_value(name));
    snprintf(f.owner, sizeof f.owner, "%s", who.user);
    if (project && !json_is_null(project)) {
        /* A project folder: made by a member or an owner of the project (or an admin); the
         * same answer for a project that does not exist and one the caller is not in. */
        tstore_project_t p;
        tstore_role_t role = TSTORE_ROLE_NONE;
        const char *pn = json_is_string(project) ? json_string_value(project) : "";
        if (!tstore_name_valid(pn) || tstore_project_get(d->store, pn, &p, &err) < 0 ||
            tstore_member_role(d->store, p.id, who.user, &role, &err) < 0 ||
            !tprj_may(who.admin, role, TPRJ_SUBMIT)) {
            thttp_error(rep, 403, "forbidden", "project",
                        "you ('%s') are not a member or an owner of project '%s'", who.user, pn);
            goto out;
        }
        if (p.id == TSTORE_PROJECT_DEFAULT) {
            thttp_error(rep, 400, "invalid_value", "project",
                        "the project 'default' has every user as a member: a folder of it would "
                        "be everyone's (make a folder of your own and share it instead)");
            goto out;
        }
        f.project = p.id;
        snprintf(f.project_name, sizeof f.project_name, "%s", p.name);
    }
    if (parse_quota(&who, json_object_get(body, "quota"), &f.quota, rep) < 0)
        goto out;
    if (tstore_begin(d->store, &err) < 0) {
        api_store_failure(rep, "begin", &err);
        goto out;
    }
    int rc = tstore_folder_add(d->store, &f, &err);
    if (rc < 0 && errno == EEXIST) {
        tstore_rollback(d->store);
        thttp_error(rep, 409, "conflict", "name", "folder '%s' already exists", f.name);
        goto out;
    }
    acl_build_t b;
    if (rc == 0 && (rc = acl_build(d, &f, &b, &err)) == 0 &&
        (rc = tfld_dir_make(d->folder_rootfd, f.name, b.e, b.n, &err)) < 0) {
        int saved = errno;
        tstore_rollback(d->store);
        if (saved == EEXIST)
            thttp_error(rep, 409, "conflict", "name",
                        "%s/%s exists already on disk (left from before?): an admin must look at "
                        "it and remove it first",
                        d->folder_root, f.name);
        else
            thttp_error(rep, 500, "internal", NULL, "%s", err.text);
        goto out;
    }
    if (end_tx(d, rc, &err) < 0) {
        if (rc == 0) /* the commit failed: the directory is no folder's */
            unlinkat(d->folder_rootfd, f.name, AT_REMOVEDIR);
        api_store_error(rep, &err);
        goto out;
    }
    tessd_log("folder %s: created by %s%s%s", f.name, who.user, f.project ? " in project " : "",
              f.project ? f.project_name : "");
    answer(d, &who, f.name, 201, rep);
out:
    api_leave(d);
    json_decref(body);
}

void api_folders_delete(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    const char *fq = thttp_query(req, "force");
    if (fq && strcmp(fq, "0") != 0 && strcmp(fq, "1") != 0) {
        thttp_error(rep, 400, "invalid_parameter", "force", "force must be 0 or 1");
        return;
    }
    bool force = fq && strcmp(fq, "1") == 0;
    tessd_caller_t who;
    if (!folders_on(d, rep) || !api_enter(d, req, rep, &who))
        return;
    tstore_folder_t f;
    tfld_access_t a;
    tsl_error_t err;
    char retired[64] = "";
    int64_t active = 0;
    if (load(d, &who, req->params[0], &f, &a, rep) < 0 || !may_manage(&who, &f, a, rep))
        goto out;
    if (tstore_folder_active_jobs(d->store, f.name, &active, &err) < 0) {
        api_store_failure(rep, "folder's jobs", &err);
        goto out;
    }
    /* Refused while jobs mount it (or wait to): force=1 deletes it under them (a running job
     * sees its files go; a pending one fails at its start). */
    if (active > 0 && !force) {
        thttp_error(rep, 409, "conflict", NULL,
                    "folder '%s' is mounted by %lld active job(s): wait for them or cancel them "
                    "(force=1 deletes it under them)",
                    f.name, (long long)active);
        goto out;
    }
    /* The directory first: renamed and shut, so that nobody enters it any more and its name
     * is free; then the store. */
    if (tfld_dir_retire(d->folder_rootfd, f.name, f.id, retired, sizeof retired, &err) < 0 &&
        errno != ENOENT) {
        thttp_error(rep, 500, "internal", NULL, "%s", err.text);
        goto out;
    }
    if (tstore_folder_del(d->store, f.id, &err) < 0) {
        if (retired[0] && renameat(d->folder_rootfd, retired, d->folder_rootfd, f.name) == 0)
            acl_write(d, &f, &err);
        api_store_error(rep, &err);
        retired[0] = '\0';
        goto out;
    }
    tessd_log("folder %s: deleted by %s%s", f.name, who.user,
              active > 0 ? " (force, under its active jobs)" : "");
    rep->status = 204;
out:
    api_leave(d);
    /* Its files go after the lock: the walk may be long. */
    if (retired[0] && tfld_dir_remove(d->folder_rootfd, retired, &err) < 0)
        tessd_log("error: folder %s: %s (what is left is root's alone)", f.name, err.text);
}

/* The target of a share: user (a Tessel user) or project.  0; -1 after 400. */
static int share_target(tessd_t *d, const tessd_caller_t *who, json_t *body, const char **user,
                        tstore_project_t *p, thttp_reply_t *rep)
{
    json_t *u = json_object_get(body, "user"), *pj = json_object_get(body, "project");
    tsl_error_t err;
    *user = NULL;
    p->id = 0;
    if (!u == !pj) {
        thttp_error(rep, 400, "invalid_value", u ? "project" : "user",
                    "a share names a user or a project (one of them)");
        return -1;
    }
    if (u) {
        tstore_user_t su;
        const char *s = json_is_string(u) ? json_string_value(u) : "";
        if (!tstore_name_valid(s) || tstore_user_get(d->store, s, &su, &err) < 0) {
            thttp_error(rep, 400, "invalid_value", "user", "no user named '%s'", s);
            return -1;
        }
        *user = s;
        return 0;
    }
    /* Shared only with a project the sharer is a member or an owner of (or by an admin); the
     * same answer for a project that does not exist and one the caller is not in, so that
     * project names cannot be probed. */
    const char *s = json_is_string(pj) ? json_string_value(pj) : "";
    tstore_role_t role = TSTORE_ROLE_NONE;
    if (!tstore_name_valid(s) || tstore_project_get(d->store, s, p, &err) < 0 ||
        (!who->admin && (tstore_member_role(d->store, p->id, who->user, &role, &err) < 0 ||
                         !tprj_may(false, role, TPRJ_SUBMIT)))) {
        thttp_error(rep, 403, "forbidden", "project",
                    "you ('%s') are not a member or an owner of project '%s': a folder is shared "
                    "only with a project of yours",
                    who->user, s);
        return -1;
    }
    if (p->id == TSTORE_PROJECT_DEFAULT) {
        thttp_error(rep, 400, "invalid_value", "project",
                    "the project 'default' has every user as a member: a folder is not shared "
                    "with it");
        return -1;
    }
    return 0;
}

thttp_limiter_t *api_folders_share_limiter(void)
{
    return thttp_limiter_new(TESSD_FOLDER_SHARE_RATE, TESSD_FOLDER_SHARE_BURST);
}

/* One token of a non-admin caller's share bucket; else 429 with Retry-After.  0, or -1 after
 * filling rep.  Lock held. */
static int share_rate(tessd_t *d, const tessd_caller_t *who, thttp_reply_t *rep)
{
    if (who->admin || !d->share_limit)
        return 0;
    int64_t wait = thttp_limiter_take(d->share_limit, who->user, tessd_mono_ms());
    if (wait < 0) {
        thttp_error(rep, 500, "internal", NULL, "out of memory");
        return -1;
    }
    if (wait == 0)
        return 0;
    long secs = (long)((wait + 999) / 1000);
    thttp_error(rep, 429, "too_many_requests", NULL,
                "share rate limit: user %s may change folder shares %d times at once, then once "
                "every %g s (each rewrites a folder's ACLs); try again in %ld s",
                who->user, TESSD_FOLDER_SHARE_BURST, 1 / TESSD_FOLDER_SHARE_RATE, secs);
    snprintf(rep->extra_name, sizeof rep->extra_name, "Retry-After");
    snprintf(rep->extra_value, sizeof rep->extra_value, "%ld", secs);
    return -1;
}

/* Change a share in a transaction (set: rw; else delete), write the gate, commit or undo. */
static void share_change(tessd_t *d, const tessd_caller_t *who, const tstore_folder_t *f,
                         const char *user, const tstore_project_t *p, bool set, bool rw,
                         thttp_reply_t *rep)
{
    tsl_error_t err;
    if (share_rate(d, who, rep) < 0)
        return;
    if (tstore_begin(d->store, &err) < 0) {
        api_store_failure(rep, "begin", &err);
        return;
    }
    int rc =
        set ? tstore_fshare_set(d->store, f->id, user, user ? 0 : p->id, rw, tessd_now_ms(), &err)
            : tstore_fshare_del(d->store, f->id, user, user ? 0 : p->id, &err);
    if (rc < 0 && errno == ENOENT) {
        tstore_rollback(d->store);
        thttp_error(rep, 404, "not_found", NULL, "folder '%s' is not shared with %s '%s'", f->name,
                    user ? "user" : "project", user ? user : p->name);
        return;
    }
    acl_build_t b;
    if (rc == 0 && acl_build(d, f, &b, &err) < 0) {
        int saved = errno;
        tstore_rollback(d->store);
        if (saved == E2BIG)
            thttp_error(rep, 409, "conflict", NULL, "%s", err.text);
        else
            api_store_failure(rep, "folder's ACL", &err);
        return;
    }
    size_t done = 0;
    int wrc = rc == 0 ? tfld_dir_apply(d->folder_rootfd, f->name, b.e, b.n, TESSD_FOLDER_APPLY_MAX,
                                       &done, &err)
                      : 0;
    if (wrc < 0) {
        /* The gate could not be written: the change is undone (and the old ACL written back
         * as far as it goes). */
        tsl_error_t err2;
        tstore_rollback(d->store);
        acl_write(d, f, &err2);
        thttp_error(rep, 500, "internal", NULL, "%s", err.text);
        return;
    }
    if (end_tx(d, rc, &err) < 0) {
        tsl_error_t err2;
        acl_write(d, f, &err2); /* back to what the store says */
        api_store_error(rep, &err);
        return;
    }
    if (wrc == 1)
        tessd_log("warning: folder %s: the ACLs of %zu objects were rewritten, not all", f->name,
                  done);
    tessd_log("folder %s: %s %s %s%s by %s", f->name, set ? "shared with" : "unshared from",
              user ? "user" : "project", user ? user : p->name, set ? (rw ? " rw" : " ro") : "",
              who->user);
    answer(d, who, f->name, 200, rep);
}

void api_folders_share(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    static const char *const fields[] = {"user", "project", "mode", NULL};
    if (!folders_on(d, rep))
        return;
    json_t *body = thttp_body_object(req, rep, 0);
    if (!body)
        return;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who)) {
        json_decref(body);
        return;
    }
    tstore_folder_t f;
    tfld_access_t a;
    tstore_project_t p;
    const char *user;
    if (load(d, &who, req->params[0], &f, &a, rep) < 0 || !may_manage(&who, &f, a, rep) ||
        thttp_check_fields(body, fields, rep) < 0 ||
        share_target(d, &who, body, &user, &p, rep) < 0)
        goto out;
    json_t *m = json_object_get(body, "mode");
    const char *mode = json_is_string(m) ? json_string_value(m) : "";
    if (!m || (strcmp(mode, "ro") != 0 && strcmp(mode, "rw") != 0)) {
        thttp_error(rep, 400, m ? "invalid_value" : "missing_field", "mode",
                    "mode must be \"ro\" (read-only) or \"rw\" (read-write)");
        goto out;
    }
    if (user && !f.project && strcmp(user, f.owner) == 0) {
        thttp_error(rep, 400, "invalid_value", "user",
                    "'%s' owns folder '%s' (an owner has every right on it already)", user, f.name);
        goto out;
    }
    share_change(d, &who, &f, user, &p, true, strcmp(mode, "rw") == 0, rep);
out:
    api_leave(d);
    json_decref(body);
}

static void unshare_route(thttp_req_t *req, thttp_reply_t *rep, tessd_t *d, bool is_user)
{
    tessd_caller_t who;
    if (!folders_on(d, rep) || !api_enter(d, req, rep, &who))
        return;
    tstore_folder_t f;
    tfld_access_t a;
    tstore_project_t p = {0};
    const char *target = req->params[1];
    if (load(d, &who, req->params[0], &f, &a, rep) < 0 || !may_manage(&who, &f, a, rep))
        goto out;
    if (!tstore_name_valid(target)) {
        thttp_error(rep, 404, "not_found", NULL, "folder '%s' is not shared with %s '%s'", f.name,
                    is_user ? "user" : "project", target);
        goto out;
    }
    if (!is_user) {
        tsl_error_t err;
        if (tstore_project_get(d->store, target, &p, &err) < 0) {
            thttp_error(rep, 404, "not_found", NULL, "folder '%s' is not shared with project '%s'",
                        f.name, target);
            goto out;
        }
    }
    share_change(d, &who, &f, is_user ? target : NULL, &p, false, false, rep);
out:
    api_leave(d);
}

void api_folders_unshare_user(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    unshare_route(req, rep, ctx, true);
}

void api_folders_unshare_project(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    unshare_route(req, rep, ctx, false);
}

void api_folders_usage(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    tessd_caller_t who;
    if (!folders_on(d, rep) || !api_enter(d, req, rep, &who))
        return;
    tstore_folder_t f;
    tfld_access_t a;
    int rc = load(d, &who, req->params[0], &f, &a, rep);
    api_leave(d);
    if (rc < 0)
        return;
    /* The walk runs as root and counts everything, private subdirectories included: only a
     * caller who may write the folder (and so fill it) learns its size. */
    if (a < TFLD_RW) {
        thttp_error(rep, 403, "forbidden", NULL,
                    "you ('%s') have %s access to folder '%s': its usage (du) is for those who "
                    "may write it (it counts files you may not read)",
                    who.user, tfld_access_name(a), f.name);
        return;
    }
    /* Outside the lock: the walk reads the whole folder (a folder deleted meanwhile: 404); one
     * walk of a folder at a time (a du while another request walks it takes that walk's
     * figures).  Stored when complete. */
    uint64_t bytes = 0, objects = 0;
    tfld_usage_stop_t stop;
    tsl_error_t err;
    rc = walk_folder(d, &f, 0, &bytes, &objects, &stop, &err);
    if (rc < 0) {
        if (errno == ENOENT)
            thttp_error(rep, 404, "not_found", NULL, "no folder '%s'", f.name);
        else
            thttp_error(rep, 500, "internal", NULL, "%s", err.text);
        return;
    }
    thttp_json(rep, 200,
               json_pack("{s:s, s:I, s:I, s:b}", "name", f.name, "bytes", (json_int_t)bytes,
                         "objects", (json_int_t)objects, "complete", rc == 0));
}

/* ---- the folders of a job ------------------------------------------------------------------ */

int api_folders_for_job(tessd_t *d, const tessd_caller_t *who, json_t *v, tstore_job_t *j,
                        char **json_out, thttp_reply_t *rep)
{
    *json_out = NULL;
    if (!v || json_is_null(v) || (json_is_array(v) && json_array_size(v) == 0))
        return 0;
    if (!json_is_array(v) || json_array_size(v) > TESSD_JOB_FOLDERS_MAX) {
        thttp_error(rep, 400, "invalid_value", "folders",
                    "folders must be an array of at most %d strings NAME or NAME:ro",
                    TESSD_JOB_FOLDERS_MAX);
        return -1;
    }
    if (d->folder_rootfd < 0) {
        thttp_error(rep, 400, "invalid_value", "folders",
                    "virtual folders need tesseld to run as root");
        return -1;
    }
    json_t *norm = json_array();
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e)
    {
        const char *s = json_is_string(e) ? json_string_value(e) : "";
        char name[TSTORE_NAME_MAX + 8];
        snprintf(name, sizeof name, "%s", s);
        size_t len = strlen(name);
        bool ro = len > 3 && strcmp(name + len - 3, ":ro") == 0;
        if (ro)
            name[len - 3] = '\0';
        tstore_folder_t f;
        tfld_access_t a = TFLD_NONE;
        tsl_error_t err;
        if (!tstore_name_valid(name) || strlen(s) != json_string_length(e)) {
            thttp_error(rep, 400, "invalid_value", "folders",
                        "folders[%zu]: '%s' is not NAME or NAME:ro (a folder name is 1 to 32 of "
                        "a-z, 0-9, '_' and '-', starting with a letter)",
                        i, s);
            goto fail;
        }
        /* One answer for a folder that does not exist and one not shared with the caller. */
        int got = tstore_folder_get(d->store, name, &f, &err);
        if (got < 0 && errno != ENOENT) {
            api_store_failure(rep, "folder", &err);
            goto fail;
        }
        if (got == 0 && access_of(d, who, &f, &a, &err) < 0) {
            api_store_failure(rep, "folder's shares", &err);
            goto fail;
        }
        if (a == TFLD_NONE) {
            thttp_error(rep, 400, "invalid_value", "folders", "folders[%zu]: no folder '%s'", i,
                        name);
            goto fail;
        }
        if (!ro && a < TFLD_RW) {
            thttp_error(rep, 403, "forbidden", "folders",
                        "folders[%zu]: you ('%s') have ro access to folder '%s': mount it as "
                        "'%s:ro'",
                        i, who->user, name, name);
            goto fail;
        }
        size_t k;
        json_t *prev;
        json_array_foreach(norm, k, prev)
        {
            const char *p = json_string_value(prev);
            if (strncmp(p, name, strlen(name)) == 0 &&
                (p[strlen(name)] == '\0' || p[strlen(name)] == ':')) {
                thttp_error(rep, 400, "invalid_value", "folders",
                            "folders[%zu]: folder '%s' is named twice", i, name);
                goto fail;
            }
        }
        json_array_append_new(norm, json_string(s));
    }
    *json_out = json_dumps(norm, JSON_COMPACT);
    json_decref(norm);
    j->folders_json = *json_out;
    return 0;
fail:
    json_decref(norm);
    return -1;
}

/* ---- the quotas of a job's read-write folders ----------------------------------------------- */

/* A read-write folder of a job being submitted, with a quota of its own or of its project. */
typedef struct {
    char name[TSTORE_NAME_MAX + 1];
    tstore_folder_t f; /* as the store had it before the walks */
    bool pquota;       /* its project has a folder quota */
    bool walk;         /* its figure (or one of its project's folders') is stale */
} jobq_t;

/* The folders of json (a job's "folders") mounted read-write that have a quota or whose
 * project has a folder quota, into q (at most TESSD_JOB_FOLDERS_MAX); lock held.  A project's
 * folders are looked at once per submission (an indexed query).  The count, or -1 with err. */
static int job_quota_folders(tessd_t *d, const char *json, jobq_t *q, tsl_error_t *err)
{
    json_t *arr = json_loads(json, 0, NULL);
    int n = 0;
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e)
    {
        const char *s = json_string_value(e);
        size_t len = s ? strlen(s) : 0;
        if (!s || (len > 3 && strcmp(s + len - 3, ":ro") == 0) || n >= TESSD_JOB_FOLDERS_MAX)
            continue;
        jobq_t *o = &q[n];
        memset(o, 0, sizeof *o);
        snprintf(o->name, sizeof o->name, "%s", s);
        tstore_project_t p;
        if (tstore_folder_get(d->store, o->name, &o->f, err) < 0) {
            n = -1;
            break;
        }
        if (o->f.project && tstore_project_get_id(d->store, o->f.project, &p, NULL) == 0)
            o->pquota = p.folder_quota > 0;
        if (o->f.quota <= 0 && !o->pquota)
            continue;
        o->walk = o->f.quota > 0 && stale(&o->f);
        bool seen = false; /* the project already looked at for an earlier folder */
        for (int k = 0; k < n; k++)
            seen = seen || (q[k].pquota && q[k].f.project == o->f.project);
        if (!o->walk && o->pquota && !seen) {
            stale_t x = {0};
            int rc = project_stale(d, o->f.project, &x, err);
            free(x.f);
            if (rc < 0) {
                n = -1;
                break;
            }
            o->walk = x.n > 0;
        }
        n++;
    }
    json_decref(arr);
    return n;
}

int api_folders_job_quota(tessd_t *d, const tstore_job_t *j, bool *paused, thttp_reply_t *rep)
{
    *paused = false;
    if (!j->folders_json)
        return 0;
    jobq_t *q = calloc(TESSD_JOB_FOLDERS_MAX, sizeof *q);
    tsl_error_t err;
    int rc = 0;
    if (!q) {
        thttp_error(rep, 500, "internal", NULL, "out of memory");
        return -1;
    }
    int n = job_quota_folders(d, j->folders_json, q, &err);
    if (n < 0) {
        api_store_failure(rep, "folder", &err);
        free(q);
        return -1;
    }
    bool walk = false;
    for (int i = 0; i < n; i++)
        walk = walk || q[i].walk;
    walks_t w = {.deadline_ms = tfld_mono_ms() + TESSD_FOLDER_WALK_MS};
    if (walk) {
        /* The bounded walks, without the lock nor a turn of the store's group commit (as the
         * uploads' measurement); each stale folder once (a folder walked for an earlier one
         * is fresh when listed again), all within TESSD_FOLDER_WALK_MS. */
        api_submit_pause(d);
        *paused = true;
        for (int i = 0; rc == 0 && i < n; i++) {
            if (!q[i].walk)
                continue;
            bool pq = q[i].pquota; /* each project's folders walked once per submission */
            for (int k = 0; pq && k < i; k++)
                pq = !(q[k].walk && q[k].pquota && q[k].f.project == q[i].f.project);
            if (quota_walks(d, &q[i].f, pq, &w, &err) < 0)
                rc = -1;
        }
        free(w.walked);
        if (!api_submit_resume(d, rep)) {
            free(q);
            return -2;
        }
        if (rc < 0) {
            thttp_error(rep, 500, "internal", NULL, "measuring the job's folders: %s", err.text);
            free(q);
            return -1;
        }
    }
    /* The figures as they are now (a folder deleted meanwhile: as for a name never made); a
     * figure still stale decides nothing: refused (fail closed). */
    for (int i = 0; rc == 0 && i < n; i++) {
        qres_t r;
        if (quota_decide(d, q[i].name, 1, &r, &err) < 0) {
            if (errno == ENOENT)
                thttp_error(rep, 400, "invalid_value", "folders", "no folder '%s'", q[i].name);
            else
                api_store_failure(rep, "folder", &err);
            rc = -1;
            break;
        }
        /* At its quota or past it: a read-write job would only add to it (a write of 1). */
        switch (r.v) {
        case QD_FOLDER_OVER:
            thttp_error(rep, 507, "insufficient_storage", "folders",
                        "folder '%s' is at or over its quota: %lld of %lld bytes used (measured "
                        "%lld s ago); a job may mount it read-only ('%s:ro') but not read-write "
                        "until files are deleted from it or an admin raises its quota",
                        r.f.name, (long long)r.f.used, (long long)r.f.quota,
                        (long long)((tessd_now_ms() - r.f.used_ms) / 1000), r.f.name);
            rc = -1;
            break;
        case QD_PROJECT_OVER:
            thttp_error(rep, 507, "insufficient_storage", "folders",
                        "project '%s' is at or over its folder quota: its folders use %lld of "
                        "%lld bytes (measured); a job may mount folder '%s' read-only ('%s:ro') "
                        "but not read-write until files are deleted from the project's folders "
                        "or an admin raises its quota",
                        r.pname, (long long)r.pused, (long long)r.pquota, r.f.name, r.f.name);
            rc = -1;
            break;
        case QD_FOLDER_UNMEASURED:
        case QD_PROJECT_UNMEASURED:
            unmeasured_error(rep, "folders", &r, &w, "a read-write mount (':ro' is allowed)");
            rc = -1;
            break;
        case QD_OK:
            break;
        }
    }
    free(q);
    return rc;
}

/* ---- files: GET and PUT /v1/folders/{name}/files?path=P ----------------------------------- */

/* The caller's account as a file-system identity: 0; -1 after 403 (no local account, or root:
 * the API reads and writes as the account, never as root). */
static int ident_of(const tessd_caller_t *who, tfld_ident_t *id, thttp_reply_t *rep)
{
    tessd_pw_t pw;
    if (tessd_getpwnam(who->user, &pw) != 1 || pw.uid == 0) {
        thttp_error(rep, 403, "forbidden", NULL,
                    "files are read and written through the API as your local account, and "
                    "'%s' has none on this host (or it is root's): use the folder's path",
                    who->user);
        return -1;
    }
    id->uid = pw.uid;
    id->gid = pw.gid;
    int n = TFLD_GROUPS_MAX;
    if (getgrouplist(pw.name, pw.gid, id->groups, &n) < 0)
        n = TFLD_GROUPS_MAX; /* more groups than kept: the first ones */
    id->ngroups = n;
    return 0;
}

/* The common start of a files route: the folder (the caller's right at least need), the path
 * (query "path", "" = the folder), the identity, and the folder's directory (O_PATH, opened
 * by root beneath the root).  The directory's descriptor, or -1 after answering. */
static int files_start(tessd_t *d, thttp_req_t *req, thttp_reply_t *rep, tfld_access_t need,
                       tstore_folder_t *f, const char **rel, tfld_ident_t *id)
{
    tessd_caller_t who;
    tfld_access_t a;
    const char *p = thttp_query(req, "path");
    *rel = p ? p : "";
    if (!folders_on(d, rep))
        return -1;
    if (!tfld_path_valid(*rel) || (need >= TFLD_RW && !**rel)) {
        thttp_error(rep, 400, "invalid_parameter", "path",
                    "path must be a relative path inside the folder: names joined by '/', none "
                    "of them '.' or '..'%s",
                    need >= TFLD_RW ? ", naming a file" : "");
        return -1;
    }
    if (!api_enter(d, req, rep, &who))
        return -1;
    int rc = load(d, &who, req->params[0], f, &a, rep);
    api_leave(d);
    if (rc < 0)
        return -1;
    if (a < need) {
        thttp_error(rep, 403, "forbidden", NULL,
                    "you ('%s') have ro access to folder '%s' and may not write in it", who.user,
                    f->name);
        return -1;
    }
    if (ident_of(&who, id, rep) < 0)
        return -1;
    int dfd = tsl_openat_nomount(d->folder_rootfd, f->name, O_PATH | O_DIRECTORY, 0);
    if (dfd < 0)
        thttp_error(rep, 404, "not_found", NULL, "no folder '%s'", f->name);
    return dfd;
}

/* Answer the errno of an open of rel in folder f as the caller's account. */
static void files_error(thttp_reply_t *rep, int e, const tstore_folder_t *f, const char *rel)
{
    const char *shown = *rel ? rel : ".";
    if (e == ENOENT || e == ENOTDIR)
        thttp_error(rep, 404, "not_found", "path", "no '%s' in folder '%s'", shown, f->name);
    else if (e == EACCES || e == EPERM)
        thttp_error(rep, 403, "forbidden", "path",
                    "your account may not do that with '%s' in folder '%s' (its permissions)",
                    shown, f->name);
    else if (e == ELOOP || e == EXDEV)
        thttp_error(rep, 400, "invalid_parameter", "path",
                    "'%s' in folder '%s' goes through a link or a mount point: not followed", shown,
                    f->name);
    else if (e == EISDIR)
        thttp_error(rep, 400, "invalid_parameter", "path", "'%s' in folder '%s' is a directory",
                    shown, f->name);
    else
        thttp_error(rep, 500, "internal", "path", "'%s' in folder '%s': %s", shown, f->name,
                    strerror(e));
}

typedef struct {
    char *name;
    const char *type;
    long long size, mtime;
} fentry_t;

static int fentry_cmp(const void *a, const void *b)
{
    return strcmp(((const fentry_t *)a)->name, ((const fentry_t *)b)->name);
}

void api_folders_files_get(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    tstore_folder_t f;
    const char *rel;
    tfld_ident_t id;
    int dfd = files_start(d, req, rep, TFLD_RO, &f, &rel, &id);
    if (dfd < 0)
        return;
    tfld_saved_t saved;
    if (tfld_as_enter(&id, &saved) < 0) {
        close(dfd);
        thttp_error(rep, 500, "internal", NULL, "taking the account's identity: %s",
                    strerror(errno));
        return;
    }
    /* From here to tfld_as_leave, the kernel checks everything as the caller's account. */
    int e = 0, fd = tsl_openat_nomount(dfd, *rel ? rel : ".", O_RDONLY | O_NOCTTY | O_NONBLOCK, 0);
    struct stat st;
    fentry_t *ents = NULL;
    size_t n = 0;
    bool truncated = false;
    char *buf = NULL;
    size_t len = 0;
    if (fd < 0 || fstat(fd, &st) < 0) {
        e = errno;
    } else if (S_ISDIR(st.st_mode)) {
        DIR *dir = fdopendir(fd);
        fd = -1;
        ents = dir ? calloc(TESSD_FOLDER_LIST_MAX, sizeof *ents) : NULL;
        if (!dir || !ents)
            e = errno ? errno : ENOMEM;
        struct dirent *de;
        while (!e && (de = readdir(dir)) != NULL) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                continue;
            if (n == TESSD_FOLDER_LIST_MAX) {
                truncated = true;
                break;
            }
            struct stat es;
            fentry_t *x = &ents[n];
            x->type = "other";
            if (fstatat(dirfd(dir), de->d_name, &es, AT_SYMLINK_NOFOLLOW) == 0) {
                x->type = S_ISREG(es.st_mode)   ? "file"
                          : S_ISDIR(es.st_mode) ? "dir"
                          : S_ISLNK(es.st_mode) ? "link"
                                                : "other";
                x->size = (long long)es.st_size;
                x->mtime = (long long)es.st_mtime;
            }
            if (!(x->name = strdup(de->d_name))) {
                e = ENOMEM;
                break;
            }
            n++;
        }
        if (dir)
            closedir(dir);
    } else if (!S_ISREG(st.st_mode)) {
        e = EINVAL;
    } else if ((uint64_t)st.st_size > TESSD_FOLDER_FILE_MAX) {
        e = EFBIG;
    } else if (!(buf = malloc((size_t)st.st_size + 1))) {
        e = ENOMEM;
    } else {
        while (len < (size_t)st.st_size) {
            ssize_t r = read(fd, buf + len, (size_t)st.st_size - len);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0) {
                e = r < 0 ? errno : 0;
                break;
            }
            len += (size_t)r;
        }
    }
    if (fd >= 0)
        close(fd);
    tfld_as_leave(&saved);
    close(dfd);
    if (e == EFBIG)
        thttp_error(rep, 413, "payload_too_large", "path",
                    "'%s' is %lld bytes: the API serves files up to %u bytes; use rsync or scp "
                    "with the folder's path",
                    rel, (long long)st.st_size, TESSD_FOLDER_FILE_MAX);
    else if (e == EINVAL)
        thttp_error(rep, 400, "invalid_parameter", "path",
                    "'%s' in folder '%s' is not a file or a directory", rel, f.name);
    else if (e)
        files_error(rep, e, &f, rel);
    else if (ents) {
        qsort(ents, n, sizeof *ents, fentry_cmp);
        json_t *arr = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(arr,
                                  json_pack("{s:s, s:s, s:I, s:I}", "name", ents[i].name, "type",
                                            ents[i].type, "size", (json_int_t)ents[i].size, "mtime",
                                            (json_int_t)ents[i].mtime));
        thttp_json(rep, 200,
                   json_pack("{s:s, s:s, s:o, s:b}", "folder", f.name, "path", rel, "entries", arr,
                             "truncated", truncated));
    } else {
        rep->status = 200;
        rep->text = buf;
        rep->text_len = len;
        rep->content_type = "application/octet-stream";
        buf = NULL;
    }
    for (size_t i = 0; i < n; i++)
        free(ents[i].name);
    free(ents);
    free(buf);
}

void api_folders_files_put(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    tstore_folder_t f;
    const char *rel;
    tfld_ident_t id;
    int dfd = files_start(d, req, rep, TFLD_RW, &f, &rel, &id);
    if (dfd < 0)
        return;
    /* Quotas: the folder's and its project's, against the measured use, measured again when
     * older than TESSD_FOLDER_MEASURE_MS (within TESSD_FOLDER_WALK_MS; a figure that cannot be
     * measured decides nothing: refused).  An upload that would pass one is refused. */
    bool pquota = false;
    if (f.project) {
        tstore_project_t p;
        pthread_mutex_lock(&d->lock);
        pquota = tstore_project_get_id(d->store, f.project, &p, NULL) == 0 && p.folder_quota > 0;
        pthread_mutex_unlock(&d->lock);
    }
    bool quota = f.quota > 0 || pquota;
    if (quota) {
        tsl_error_t merr;
        walks_t w = {.deadline_ms = tfld_mono_ms() + TESSD_FOLDER_WALK_MS};
        qres_t r;
        int rc = quota_walks(d, &f, pquota, &w, &merr);
        free(w.walked);
        if (rc == 0) {
            pthread_mutex_lock(&d->lock);
            rc = quota_decide(d, f.name, (int64_t)req->body_len, &r, &merr);
            pthread_mutex_unlock(&d->lock);
        }
        if (rc < 0) {
            close(dfd);
            if (errno == ENOENT)
                thttp_error(rep, 404, "not_found", NULL, "no folder '%s'", f.name);
            else
                thttp_error(rep, 500, "internal", NULL, "measuring folder '%s': %s", f.name,
                            merr.text);
            return;
        }
        if (r.v == QD_FOLDER_UNMEASURED || r.v == QD_PROJECT_UNMEASURED) {
            close(dfd);
            unmeasured_error(rep, NULL, &r, &w, "an upload");
            return;
        }
        if (r.v == QD_FOLDER_OVER) {
            close(dfd);
            thttp_error(rep, 507, "insufficient_storage", NULL,
                        "folder '%s' is at its quota: %lld of %lld bytes used; this upload of "
                        "%zu bytes would pass it (delete files, or ask an admin for more)",
                        f.name, (long long)r.f.used, (long long)f.quota, req->body_len);
            return;
        }
        if (r.v == QD_PROJECT_OVER) {
            close(dfd);
            thttp_error(rep, 507, "insufficient_storage", NULL,
                        "project '%s' is at its folder quota: its folders use %lld of %lld "
                        "bytes; this upload of %zu bytes to folder '%s' would pass it (delete "
                        "files in the project's folders, or ask an admin for more)",
                        r.pname, (long long)r.pused, (long long)r.pquota, req->body_len, f.name);
            return;
        }
    }
    /* --disk-reserve holds on the folders' file system as on the data directory's: an upload
     * that would leave less free is refused (the store and the jobs' logs may share it). */
    uint64_t avail, reserve;
    if (tfld_space(dfd, d->disk_reserve, d->disk_reserve_pct, &avail, &reserve) == 0 &&
        (avail < reserve || avail - reserve < req->body_len)) {
        char a[32], r[32];
        tsl_format_size(avail, a, sizeof a);
        tsl_format_size(reserve, r, sizeof r);
        close(dfd);
        thttp_error(rep, 507, "insufficient_storage", NULL,
                    "folder '%s': %s free on the folders' file system, reserve (--disk-reserve) "
                    "%s: this upload of %zu bytes is refused",
                    f.name, a, r, req->body_len);
        return;
    }
    tfld_saved_t saved;
    if (tfld_as_enter(&id, &saved) < 0) {
        close(dfd);
        thttp_error(rep, 500, "internal", NULL, "taking the account's identity: %s",
                    strerror(errno));
        return;
    }
    /* As the caller's account: a new file gets the folder's default ACL; an existing one must
     * be a regular file the account may write.  No link is followed, at the end or before. */
    bool created = true;
    int e = 0, fd = tsl_openat_nomount(dfd, rel, O_WRONLY | O_CREAT | O_EXCL | O_NOCTTY, 0666);
    if (fd < 0 && errno == EEXIST) {
        created = false;
        fd = tsl_openat_nomount(dfd, rel, O_WRONLY | O_NOCTTY | O_NONBLOCK, 0);
    }
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0)
        e = errno;
    else if (!S_ISREG(st.st_mode))
        e = EISDIR;
    else if (ftruncate(fd, 0) < 0)
        e = errno;
    for (size_t off = 0; !e && off < req->body_len;) {
        ssize_t w = write(fd, req->body + off, req->body_len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            e = w < 0 ? errno : EIO;
            break;
        }
        off += (size_t)w;
    }
    if (fd >= 0 && close(fd) < 0 && !e)
        e = errno;
    /* A new file the file system stopped halfway (full: ENOSPC, or a site's own quota on it:
     * EDQUOT) goes again, as the account: nothing half-written is left. */
    if (created && fd >= 0 && (e == EDQUOT || e == ENOSPC))
        unlinkat(dfd, rel, 0);
    tfld_as_leave(&saved);
    close(dfd);
    if (e == ENOSPC || e == EDQUOT)
        thttp_error(rep, 507, "insufficient_storage", "path", "'%s' in folder '%s': %s", rel,
                    f.name, strerror(e));
    else if (e)
        files_error(rep, e, &f, rel);
    else {
        /* Counted at once: added to the figure as it is now (saturating), uploads between two
         * walks add up; the time of the last walk is kept, so that the folder is walked again
         * when it is older than TESSD_FOLDER_MEASURE_MS however many uploads came since. */
        if (quota) {
            pthread_mutex_lock(&d->lock);
            tstore_folder_t now;
            if (tstore_folder_get(d->store, f.name, &now, NULL) == 0 && now.id == f.id)
                tstore_folder_add_used(d->store, f.id, (int64_t)req->body_len, NULL);
            pthread_mutex_unlock(&d->lock);
        }
        thttp_json(rep, created ? 201 : 200,
                   json_pack("{s:s, s:s, s:I}", "folder", f.name, "path", rel, "size",
                             (json_int_t)req->body_len));
    }
}

void api_folders_update(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    static const char *const fields[] = {"quota", NULL};
    if (!folders_on(d, rep))
        return;
    json_t *body = thttp_body_object(req, rep, 0);
    if (!body)
        return;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who)) {
        json_decref(body);
        return;
    }
    tstore_folder_t f;
    tfld_access_t a;
    tsl_error_t err;
    int64_t quota;
    if (load(d, &who, req->params[0], &f, &a, rep) < 0 || thttp_check_fields(body, fields, rep) < 0)
        goto out;
    json_t *v = json_object_get(body, "quota");
    if (!v) {
        thttp_error(rep, 400, "missing_field", "quota", "quota is required (a size, or null)");
        goto out;
    }
    if (!who.admin) {
        thttp_error(rep, 403, "forbidden", "quota",
                    "only an admin sets a folder's quota (you are '%s')", who.user);
        goto out;
    }
    if (parse_quota(&who, v, &quota, rep) < 0)
        goto out;
    if (tstore_folder_set_quota(d->store, f.id, quota, &err) < 0) {
        api_store_error(rep, &err);
        goto out;
    }
    tessd_log("folder %s: quota %lld by %s", f.name, (long long)quota, who.user);
    answer(d, &who, f.name, 200, rep);
out:
    api_leave(d);
    json_decref(body);
}
