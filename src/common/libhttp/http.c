/* http.c - libmicrohttpd + jansson glue (see http.h). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <microhttpd.h>

#include "libhttp/http.h"
#include "libutil/sockowner.h"

struct thttp_server {
    struct MHD_Daemon *mhd;
    thttp_config_t cfg;
    uint16_t port;
    _Atomic uint64_t counts[600];
    /* Bodies' buffers held now (cfg.max_body_total, max_body_per_key): this server's own, or
     * another's (cfg.share_bodies). */
    struct thttp_bodies *bodies;
    bool own_bodies;
    char unix_path[sizeof(((struct sockaddr_un *)0)->sun_path)]; /* "" for TCP */
    /* Unix listener: connections held per peer uid (the TCP listener's per-address bound,
     * max_per_client, applied to the kernel's identity of the caller). */
    pthread_mutex_t uid_lock;
    struct {
        uid_t uid;
        unsigned n;
    } uids[THTTP_UNIX_UIDS];
};

/* Bytes of bodies' buffers held at once: in all, and per key (an entry at 0 is free). */
struct thttp_bodies {
    size_t max_total, max_per_key; /* the owner's cfg.max_body_total, max_body_per_key */
    _Atomic size_t held;
    pthread_mutex_t lock;
    struct {
        char key[THTTP_BODY_KEY_MAX];
        size_t held;
    } keys[THTTP_BODY_KEYS];
};

static void on_unix_conn(void *cls, struct MHD_Connection *c, void **sctx,
                         enum MHD_ConnectionNotificationCode code);

static void server_free(thttp_server_t *s)
{
    if (s->own_bodies) {
        pthread_mutex_destroy(&s->bodies->lock);
        free(s->bodies);
    }
    free(s);
}

/* s's body accounting: its own, or cfg.share_bodies's.  0, or -1 with ENOMEM. */
static int bodies_init(thttp_server_t *s)
{
    if (s->cfg.share_bodies) {
        s->bodies = s->cfg.share_bodies->bodies;
        return 0;
    }
    if (!(s->bodies = calloc(1, sizeof *s->bodies)))
        return -1;
    pthread_mutex_init(&s->bodies->lock, NULL);
    s->bodies->max_total = s->cfg.max_body_total;
    s->bodies->max_per_key = s->cfg.max_body_per_key;
    s->own_bodies = true;
    return 0;
}

/* Per-request state kept by MHD between calls (con_cls). */
typedef struct {
    char *body;
    size_t len, cap;
    bool too_large;
    bool too_busy; /* its body would pass cfg.max_body_total: discarded, 503 */
    bool key_full; /* ... or its key's share (cfg.max_body_per_key): discarded, 429 */
    char key[THTTP_BODY_KEY_MAX]; /* whose body it is ("": nobody's share) */
    bool started;                 /* on_request has seen the request's headers */
    bool nul_in_url;              /* its raw URL holds "%00" */
    char *raw_uri;                /* the URL as sent (thttp_config_t.keep_raw_uri), else NULL */
} upload_t;

/* MHD_OPTION_URI_LOG_CALLBACK: the request's raw URL, before MHD decodes it in place.  A
 * decoded NUL byte would end the path or a query value early ("/v1/folders/data%00x" read as
 * "data"), so such a URL is refused whole (on_request).  Returns the request's state. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    const thttp_server_t *s = cls;
    (void)conn;
    upload_t *up = calloc(1, sizeof *up);
    if (up && uri)
        up->nul_in_url = strstr(uri, "%00") != NULL;
    if (up && uri && s && s->cfg.keep_raw_uri)
        up->raw_uri = strdup(uri); /* NULL when out of memory: the handler says 500 */
    return up;
}

static const char *const json_content_type = "application/json";

void thttp_json(thttp_reply_t *rep, int status, json_t *json)
{
    if (rep->json)
        json_decref(rep->json);
    rep->status = status;
    rep->json = json;
}

static void verror(thttp_reply_t *rep, int status, const char *code, const char *field,
                   const char *fmt, va_list ap)
{
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    json_t *e = json_pack("{s:s, s:s}", "code", code, "message", msg);
    if (e && field)
        json_object_set_new(e, "field", json_string(field));
    thttp_json(rep, status, e ? json_pack("{s:o}", "error", e) : NULL);
}

void thttp_error(thttp_reply_t *rep, int status, const char *code, const char *field,
                 const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verror(rep, status, code, field, fmt, ap);
    va_end(ap);
}

int thttp_status_of_errno(int errnum, const char **code)
{
    switch (errnum) {
    case ENOENT:
        *code = "not_found";
        return 404;
    case EEXIST:
    case EBUSY:
        *code = "conflict";
        return 409;
    case EACCES:
    case EPERM:
        *code = "forbidden";
        return 403;
    case EINVAL:
    case ERANGE:
        *code = "invalid_value";
        return 400;
    case EFBIG:
        *code = "payload_too_large";
        return 413;
    case ENOSPC:
        *code = "unsatisfiable";
        return 422;
    case ESHUTDOWN:
        *code = "unavailable";
        return 503;
    default:
        *code = "internal";
        return 500;
    }
}

void thttp_error_errno(thttp_reply_t *rep, int errnum, const char *field, const char *text)
{
    const char *code;
    int status = thttp_status_of_errno(errnum, &code);
    thttp_error(rep, status, code, field, "%s", text);
}

json_t *thttp_body_object(thttp_req_t *req, thttp_reply_t *rep, int empty_ok)
{
    if (req->body_len == 0 && empty_ok)
        return json_object();
    json_error_t jerr;
    json_t *v = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr);
    if (!v) {
        thttp_error(rep, 400, "invalid_json", NULL, "malformed JSON at line %d column %d: %s",
                    jerr.line, jerr.column, jerr.text);
        return NULL;
    }
    if (!json_is_object(v)) {
        json_decref(v);
        thttp_error(rep, 400, "invalid_json", NULL, "the body must be a JSON object");
        return NULL;
    }
    return v;
}

int thttp_check_fields(json_t *obj, const char *const *allowed, thttp_reply_t *rep)
{
    const char *key;
    json_t *val;
    json_object_foreach(obj, key, val)
    {
        const char *const *a = allowed;
        while (*a && strcmp(*a, key) != 0)
            a++;
        if (!*a) {
            thttp_error(rep, 400, "unknown_field", key, "unknown field '%s'", key);
            return -1;
        }
    }
    return 0;
}

const char *thttp_header(thttp_req_t *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

const char *thttp_query(thttp_req_t *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name);
}

int thttp_match(const char *pattern, const char *path, char *scratch, size_t scratch_len,
                const char **params, int *nparams)
{
    size_t plen = strlen(path);
    if (path[0] != '/' || pattern[0] != '/' || plen >= scratch_len)
        return 0;
    /* Split a copy of the path into NUL-terminated segments, then walk the pattern's. */
    memcpy(scratch, path + 1, plen);
    *nparams = 0;
    char *seg = scratch;
    const char *p = pattern + 1;
    for (;;) {
        const char *pend = strchrnul(p, '/');
        /* "{*}", the pattern's last segment: whatever is left of the path, "" included. */
        if (pend - p == 3 && memcmp(p, "{*}", 3) == 0 && !*pend) {
            if (*nparams >= THTTP_MAX_PARAMS)
                return 0;
            params[(*nparams)++] = seg;
            return 1;
        }
        char *send = strchrnul(seg, '/');
        bool path_more = *send == '/';
        *send = '\0';
        size_t pl = (size_t)(pend - p);
        if (pl > 1 && p[0] == '{' && p[pl - 1] == '}') {
            if (*seg == '\0' || *nparams >= THTTP_MAX_PARAMS)
                return 0;
            params[(*nparams)++] = seg;
        } else if (strlen(seg) != pl || memcmp(p, seg, pl) != 0) {
            return 0;
        }
        bool pattern_more = *pend == '/';
        if (pattern_more != path_more)
            return 0;
        if (!pattern_more)
            return 1;
        p = pend + 1;
        seg = send + 1;
    }
}

/* What an upgraded connection is handed to (thttp_reply_t.upgrade). */
typedef struct {
    thttp_upgrade_f fn;
    void *arg;
    void (*free_arg)(void *arg);
} upgrade_t;

static void on_upgrade(void *cls, struct MHD_Connection *conn, void *con_cls, const char *extra_in,
                       size_t extra_in_size, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
    (void)conn;
    (void)con_cls;
    upgrade_t *u = cls;
    u->fn(u->arg, sock, extra_in, extra_in_size);
    MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
    if (u->free_arg)
        u->free_arg(u->arg);
    free(u);
}

static struct MHD_Response *make_response(thttp_reply_t *rep)
{
    struct MHD_Response *r;
    if (rep->upgrade) {
        upgrade_t *u = malloc(sizeof *u);
        if (!u)
            return NULL;
        *u =
            (upgrade_t){.fn = rep->upgrade, .arg = rep->upgrade_arg, .free_arg = rep->upgrade_free};
        r = MHD_create_response_for_upgrade(on_upgrade, u);
        if (!r) {
            free(u);
            return NULL;
        }
        rep->upgrade = NULL; /* on_upgrade owns upgrade_arg now */
        return r;
    }
    /* An answer that has no body by its status (1xx, 204 No Content, 304 Not Modified: RFC 9110
     * 6.4.1) or by its request (HEAD): a body of unknown length would be sent chunked, its last
     * chunk "0 CR LF CR LF" then read by the client as the start of the next answer on the
     * connection (a proxied service's 304: "HTTP/0.9" to curl, ERR_INVALID_HTTP_RESPONSE to
     * Chromium).  So its stream is not read, and the answer goes with an empty body. */
    if (rep->stream && (rep->head_only || (rep->status >= 100 && rep->status < 200) ||
                        rep->status == 204 || rep->status == 304)) {
        r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        /* The type first: it may point into the stream's state, freed next. */
        if (r && rep->content_type)
            MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, rep->content_type);
        rep->content_type = NULL;
        if (rep->stream_free)
            rep->stream_free(rep->stream_arg);
        rep->stream = NULL;
        return r;
    }
    if (rep->stream) {
        r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 32 * 1024,
                                              (MHD_ContentReaderCallback)rep->stream,
                                              rep->stream_arg, rep->stream_free);
        if (r) {
            rep->stream = NULL; /* MHD owns stream_arg now */
            MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                                    rep->content_type ? rep->content_type : "text/plain");
        }
        return r;
    }
    if (rep->json) {
        char *s = json_dumps(rep->json, JSON_COMPACT);
        if (!s)
            return NULL;
        size_t n = strlen(s);
        s[n] = '\0';
        char *t = realloc(s, n + 2);
        if (t) {
            t[n] = '\n';
            n++;
            s = t;
        }
        r = MHD_create_response_from_buffer(n, s, MHD_RESPMEM_MUST_FREE);
        if (!r) {
            free(s);
            return NULL;
        }
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, json_content_type);
        return r;
    }
    if (rep->text) {
        r = MHD_create_response_from_buffer(rep->text_len, rep->text, MHD_RESPMEM_MUST_FREE);
        if (r) {
            rep->text = NULL;
            MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                                    rep->content_type ? rep->content_type : "text/plain");
        }
        return r;
    }
    return MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
}

static void reply_clear(thttp_reply_t *rep)
{
    free(rep->headers);
    rep->headers = NULL;
    json_decref(rep->json);
    free(rep->text);
    if (rep->stream && rep->stream_free)
        rep->stream_free(rep->stream_arg);
    if (rep->upgrade && rep->upgrade_free)
        rep->upgrade_free(rep->upgrade_arg);
}

static enum MHD_Result send_reply(thttp_server_t *s, struct MHD_Connection *conn,
                                  thttp_reply_t *rep)
{
    if (rep->status == 0)
        rep->status = 200;
    struct MHD_Response *r = make_response(rep);
    if (!r) {
        reply_clear(rep);
        memset(rep, 0, sizeof *rep);
        thttp_error(rep, 500, "internal", NULL, "out of memory");
        r = make_response(rep);
        if (!r) {
            reply_clear(rep);
            return MHD_NO;
        }
    }
    if (rep->location[0])
        MHD_add_response_header(r, MHD_HTTP_HEADER_LOCATION, rep->location);
    if (rep->extra_name[0])
        MHD_add_response_header(r, rep->extra_name, rep->extra_value);
    if (rep->extra2_name[0])
        MHD_add_response_header(r, rep->extra2_name, rep->extra2_value);
    if (rep->extra3_name[0])
        MHD_add_response_header(r, rep->extra3_name, rep->extra3_value);
    for (size_t o = 0; rep->headers && o < rep->headers_len;) {
        const char *name = rep->headers + o;
        const char *value = name + strlen(name) + 1;
        MHD_add_response_header(r, name, value);
        o = (size_t)(value - rep->headers) + strlen(value) + 1;
    }
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)rep->status, r);
    MHD_destroy_response(r);
    if (rep->status >= 100 && rep->status < 600)
        atomic_fetch_add(&s->counts[rep->status], 1);
    reply_clear(rep);
    return ret;
}

static void dispatch(thttp_server_t *s, struct MHD_Connection *conn, const char *method,
                     const char *url, upload_t *up, thttp_reply_t *rep)
{
    char scratch[512];
    thttp_req_t req = {
        .method = method, .path = url, .conn = conn, .raw_uri = up ? up->raw_uri : NULL};
    req.body = up && up->body ? up->body : "";
    req.body_len = up ? up->len : 0;
    char allow[64] = "";
    for (size_t i = 0; i < s->cfg.nroutes; i++) {
        const thttp_route_t *rt = &s->cfg.routes[i];
        if (!thttp_match(rt->pattern, url, scratch, sizeof scratch, req.params, &req.nparams))
            continue;
        if (strcmp(rt->method, method) == 0) {
            rt->fn(&req, rep, s->cfg.ctx);
            return;
        }
        if (strlen(allow) + strlen(rt->method) + 3 < sizeof allow) {
            if (allow[0])
                strcat(allow, ", ");
            strcat(allow, rt->method);
        }
    }
    if (allow[0]) {
        thttp_error(rep, 405, "method_not_allowed", NULL, "%s is not allowed on %s (allowed: %s)",
                    method, url, allow);
        snprintf(rep->extra_name, sizeof rep->extra_name, "Allow");
        snprintf(rep->extra_value, sizeof rep->extra_value, "%s", allow);
        return;
    }
    thttp_error(rep, 404, "not_found", NULL, "no route %s %s", method, url);
}

/* Add delta bytes to key's share of the bodies held (delta may be negative: given back).
 * true when taken; false, nothing taken, when the share (or the table of keys) is full. */
static bool key_take(thttp_server_t *s, const char *key, ptrdiff_t delta)
{
    bool ok = true;
    pthread_mutex_lock(&s->bodies->lock);
    int at = -1, free_at = -1;
    for (int i = 0; i < THTTP_BODY_KEYS && at < 0; i++) {
        if (s->bodies->keys[i].held && strcmp(s->bodies->keys[i].key, key) == 0)
            at = i;
        else if (!s->bodies->keys[i].held && free_at < 0)
            free_at = i;
    }
    if (delta < 0) {
        if (at >= 0)
            s->bodies->keys[at].held -= (size_t)-delta < s->bodies->keys[at].held
                                            ? (size_t)-delta
                                            : s->bodies->keys[at].held;
    } else if (at < 0 && free_at < 0) {
        ok = false;
    } else {
        if (at < 0) {
            at = free_at;
            snprintf(s->bodies->keys[at].key, sizeof s->bodies->keys[at].key, "%s", key);
        }
        if (s->bodies->keys[at].held + (size_t)delta > s->bodies->max_per_key)
            ok = false;
        else
            s->bodies->keys[at].held += (size_t)delta;
    }
    pthread_mutex_unlock(&s->bodies->lock);
    return ok;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    thttp_server_t *s = cls;
    upload_t *up = *con_cls;
    thttp_reply_t rep = {0};
    if (!up || !up->started) {
        if (!up && !(up = calloc(1, sizeof *up)))
            return MHD_NO;
        *con_cls = up;
        up->started = true;
        if (up->nul_in_url) {
            up->too_large = true; /* its body, if any, is not read */
            thttp_error(
                &rep, 400, "invalid_url", NULL,
                "the URL holds an encoded NUL byte (%%00), which no name or value may hold");
            return send_reply(s, conn, &rep);
        }
        const char *cl =
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > s->cfg.max_body) {
            /* Answer before reading the body; MHD closes the connection afterwards. */
            up->too_large = true;
            thttp_error(&rep, 413, "payload_too_large", NULL,
                        "request body of %s bytes is above the limit of %zu bytes", cl,
                        s->cfg.max_body);
            return send_reply(s, conn, &rep);
        }
        if (s->cfg.on_headers) {
            thttp_req_t req = {
                .method = method, .path = url, .body = "", .conn = conn, .raw_uri = up->raw_uri};
            s->cfg.on_headers(&req, &rep, s->cfg.ctx);
            if (rep.status != 0) {
                up->too_large = true; /* its body, if any, is not read */
                return send_reply(s, conn, &rep);
            }
            if (s->bodies->max_per_key)
                memcpy(up->key, rep.body_key, sizeof up->key);
        }
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (up->too_large || up->too_busy || up->key_full || up->len + n > s->cfg.max_body) {
            up->too_large |= !up->too_busy && !up->key_full;
            return MHD_YES;
        }
        if (up->len + n + 1 > up->cap) {
            size_t cap = up->cap ? up->cap : 1024;
            while (cap < up->len + n + 1)
                cap *= 2;
            /* Never more than the largest body takes: a body of max_body holds that much. */
            if (cap > s->cfg.max_body + 1)
                cap = s->cfg.max_body + 1;
            size_t held = atomic_fetch_add(&s->bodies->held, cap - up->cap) + (cap - up->cap);
            if (s->bodies->max_total && held > s->bodies->max_total) {
                atomic_fetch_sub(&s->bodies->held, cap - up->cap);
                up->too_busy = true;
                return MHD_YES;
            }
            if (up->key[0] && !key_take(s, up->key, (ptrdiff_t)(cap - up->cap))) {
                atomic_fetch_sub(&s->bodies->held, cap - up->cap);
                up->key_full = true;
                return MHD_YES;
            }
            char *b = realloc(up->body, cap);
            if (!b) {
                atomic_fetch_sub(&s->bodies->held, cap - up->cap);
                if (up->key[0])
                    key_take(s, up->key, -(ptrdiff_t)(cap - up->cap));
                return MHD_NO;
            }
            up->body = b;
            up->cap = cap;
        }
        memcpy(up->body + up->len, upload_data, n);
        up->len += n;
        up->body[up->len] = '\0';
        return MHD_YES;
    }
    if (up->too_large) {
        thttp_error(&rep, 413, "payload_too_large", NULL,
                    "request body above the limit of %zu bytes", s->cfg.max_body);
        return send_reply(s, conn, &rep);
    }
    if (up->key_full) {
        thttp_error(&rep, 429, "bodies_busy", NULL,
                    "your requests hold bodies of %zu bytes at once, the most one user may (or "
                    "as many users as the server tracks hold some): try again when one is done",
                    s->bodies->max_per_key);
        snprintf(rep.extra_name, sizeof rep.extra_name, "Retry-After");
        snprintf(rep.extra_value, sizeof rep.extra_value, "2");
        return send_reply(s, conn, &rep);
    }
    if (up->too_busy) {
        thttp_error(&rep, 503, "bodies_busy", NULL,
                    "the server holds request bodies of %zu bytes at once, its most: try again "
                    "later",
                    s->bodies->max_total);
        snprintf(rep.extra_name, sizeof rep.extra_name, "Retry-After");
        snprintf(rep.extra_value, sizeof rep.extra_value, "2");
        return send_reply(s, conn, &rep);
    }
    dispatch(s, conn, method, url, up, &rep);
    /* The answer to a HEAD has no body either: a stream of unknown length would be announced
     * chunked, and its last chunk read as the next answer on the connection (make_response). */
    if (rep.stream && strcmp(method, MHD_HTTP_METHOD_HEAD) == 0)
        rep.head_only = true;
    return send_reply(s, conn, &rep);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    thttp_server_t *s = cls;
    upload_t *up = *con_cls;
    if (up) {
        if (s && up->cap) {
            atomic_fetch_sub(&s->bodies->held, up->cap);
            if (up->key[0])
                key_take(s, up->key, -(ptrdiff_t)up->cap);
        }
        free(up->body);
        free(up->raw_uri);
        free(up);
        *con_cls = NULL;
    }
}

/* MHD's error log, bounded: a flood of refused or broken connections (an attack) would
 * otherwise write a line each into tesseld's log.  At most MHD_LOG_BURST lines per
 * MHD_LOG_WINDOW_S seconds; the count of dropped ones is said with the next line let through. */
#define MHD_LOG_BURST    20
#define MHD_LOG_WINDOW_S 60
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static time_t window;
    static unsigned lines, dropped;
    (void)cls;
    time_t now = time(NULL);
    pthread_mutex_lock(&lock);
    if (now - window >= MHD_LOG_WINDOW_S) {
        window = now;
        lines = 0;
    }
    bool keep = lines < MHD_LOG_BURST;
    unsigned said_dropped = 0;
    if (keep) {
        lines++;
        said_dropped = dropped;
        dropped = 0;
    } else {
        dropped++;
    }
    pthread_mutex_unlock(&lock);
    if (!keep)
        return;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    msg[strcspn(msg, "\n")] = '\0';
    if (said_dropped)
        fprintf(stderr, "libmicrohttpd: %s (%u similar messages dropped before this one)\n", msg,
                said_dropped);
    else
        fprintf(stderr, "libmicrohttpd: %s\n", msg);
}

/* The listening socket, made here rather than by MHD: SO_REUSEADDR only (see http.h), and
 * bind's own errno. */
static int listen_socket(const struct sockaddr *sa, socklen_t len, unsigned backlog)
{
    int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    /* An IPv6 address is that address alone (never the IPv4 ones beside it). */
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        (sa->sa_family == AF_INET6 &&
         setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) < 0) ||
        bind(fd, sa, len) < 0 || listen(fd, (int)backlog) < 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

thttp_server_t *thttp_start(const thttp_config_t *cfg, tsl_error_t *err)
{
    thttp_server_t *s = calloc(1, sizeof *s);
    if (!s) {
        tsl_errprintf(err, "out of memory");
        return NULL;
    }
    s->cfg = *cfg;
    if (bodies_init(s) < 0) {
        free(s);
        errno = ENOMEM;
        tsl_errprintf(err, "out of memory");
        return NULL;
    }
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(cfg->port)};
    struct sockaddr_in6 sa6 = {.sin6_family = AF_INET6, .sin6_port = htons(cfg->port)};
    const struct sockaddr *addr = (const struct sockaddr *)&sa;
    socklen_t addr_len = sizeof sa;
    if (inet_pton(AF_INET6, cfg->host, &sa6.sin6_addr) == 1) {
        addr = (const struct sockaddr *)&sa6;
        addr_len = sizeof sa6;
    } else if (inet_pton(AF_INET, cfg->host, &sa.sin_addr) != 1) {
        server_free(s);
        errno = EINVAL;
        tsl_errprintf(err, "listen address '%s' is not a numeric IPv4 or IPv6 address", cfg->host);
        return NULL;
    }
    unsigned max_conn = cfg->max_connections ? cfg->max_connections : THTTP_DEFAULT_MAX_CONNECTIONS;
    unsigned per_client = cfg->max_per_client ? cfg->max_per_client : THTTP_DEFAULT_MAX_PER_CLIENT;
    pthread_mutex_init(&s->uid_lock, NULL);
    unsigned timeout = cfg->timeout_s ? cfg->timeout_s : THTTP_DEFAULT_TIMEOUT_S;
    int lfd = listen_socket(addr, addr_len, 128);
    if (lfd < 0) {
        int saved = errno;
        char holder[128] = "";
        char comm[64];
        pid_t pid;
        if (saved == EADDRINUSE && (pid = thttp_port_holder(cfg->port, comm, sizeof comm)) > 0)
            snprintf(holder, sizeof holder, " (held by pid %ld, %s)", (long)pid, comm);
        else if (saved == EADDRINUSE)
            snprintf(holder, sizeof holder, " (by a process this user cannot see)");
        server_free(s);
        errno = saved;
        tsl_errprintf(err, "cannot listen on %s:%u: %s%s", cfg->host, cfg->port, strerror(saved),
                      holder);
        return NULL;
    }
    /* Thread per connection: handlers may block (a log followed for hours).  A thread is
     * started only for a connection MHD keeps, after the per-client and global limits. */
    s->mhd = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
            MHD_USE_ERROR_LOG | MHD_ALLOW_UPGRADE,
        cfg->port, NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
        MHD_OPTION_LISTEN_SOCKET, lfd, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
        MHD_OPTION_URI_LOG_CALLBACK, on_uri, s, MHD_OPTION_CONNECTION_LIMIT, max_conn,
        /* per address, or per account instead (on_unix_conn's count) */
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, cfg->limit_per_uid ? 0u : per_client,
        MHD_OPTION_NOTIFY_CONNECTION, cfg->limit_per_uid ? on_unix_conn : NULL, s,
        MHD_OPTION_CONNECTION_TIMEOUT, timeout, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        cfg->conn_memory ? cfg->conn_memory : THTTP_DEFAULT_CONN_MEMORY, MHD_OPTION_END);
    if (!s->mhd) {
        int saved = errno ? errno : EIO;
        close(lfd);
        server_free(s);
        errno = saved;
        tsl_errprintf(err, "cannot serve on %s:%u: %s", cfg->host, cfg->port, strerror(saved));
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : cfg->port;
    return s;
}

/* The inode of a socket listening on port in one of /proc/net/tcp, tcp6; 0 when none. */
static unsigned long listen_inode(const char *table, uint16_t port)
{
    FILE *f = fopen(table, "re");
    if (!f)
        return 0;
    char line[512];
    unsigned long found = 0;
    if (!fgets(line, sizeof line, f)) { /* the header */
        fclose(f);
        return 0;
    }
    while (!found && fgets(line, sizeof line, f)) {
        /* "  sl  local_address rem_address st tx:rx tr:when retr uid timeout inode ..." */
        char local[64], remote[64];
        unsigned st;
        unsigned long inode;
        if (sscanf(line, " %*s %63s %63s %x %*s %*s %*s %*s %*s %lu", local, remote, &st, &inode) !=
            4)
            continue;
        const char *colon = strrchr(local, ':');
        if (st == 0x0A /* TCP_LISTEN */ && colon && strtoul(colon + 1, NULL, 16) == port)
            found = inode;
    }
    fclose(f);
    return found;
}

pid_t thttp_port_holder(uint16_t port, char *comm, size_t comm_len)
{
    if (comm_len)
        comm[0] = '\0';
    unsigned long inode = listen_inode("/proc/net/tcp", port);
    if (!inode)
        inode = listen_inode("/proc/net/tcp6", port);
    if (!inode)
        return 0;
    char want[64];
    snprintf(want, sizeof want, "socket:[%lu]", inode);
    DIR *proc = opendir("/proc");
    if (!proc)
        return 0;
    pid_t found = 0;
    struct dirent *pe;
    while (!found && (pe = readdir(proc))) {
        if (!isdigit((unsigned char)pe->d_name[0]))
            continue;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "/proc/%s/fd", pe->d_name);
        DIR *fds = opendir(path);
        if (!fds)
            continue; /* gone, or not ours to read */
        struct dirent *fe;
        while (!found && (fe = readdir(fds))) {
            char link[PATH_MAX], target[64];
            if (fe->d_name[0] == '.')
                continue;
            snprintf(link, sizeof link, "/proc/%s/fd/%s", pe->d_name, fe->d_name);
            ssize_t n = readlink(link, target, sizeof target - 1);
            if (n <= 0)
                continue;
            target[n] = '\0';
            if (strcmp(target, want) == 0)
                found = (pid_t)strtol(pe->d_name, NULL, 10);
        }
        closedir(fds);
    }
    closedir(proc);
    if (found && comm_len) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%ld/comm", (long)found);
        FILE *f = fopen(path, "re");
        if (f) {
            if (fgets(comm, (int)comm_len, f))
                comm[strcspn(comm, "\n")] = '\0';
            fclose(f);
        }
        if (!comm[0])
            snprintf(comm, comm_len, "?");
    }
    return found;
}

/* ---- per-key token buckets ---- */

typedef struct {
    char *key;
    double tokens;
    int64_t last_ms;
} bucket_t;

struct thttp_limiter {
    pthread_mutex_t lock;
    double rate, burst; /* tokens a second, most kept */
    bucket_t *b;
    size_t n, cap;
};

thttp_limiter_t *thttp_limiter_new(double rate, double burst)
{
    if (!(rate > 0) || !(burst >= 1)) {
        errno = EINVAL;
        return NULL;
    }
    thttp_limiter_t *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    pthread_mutex_init(&l->lock, NULL);
    l->rate = rate;
    l->burst = burst;
    return l;
}

void thttp_limiter_free(thttp_limiter_t *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++)
        free(l->b[i].key);
    free(l->b);
    pthread_mutex_destroy(&l->lock);
    free(l);
}

int64_t thttp_limiter_take(thttp_limiter_t *l, const char *key, int64_t now_ms)
{
    pthread_mutex_lock(&l->lock);
    bucket_t *b = NULL;
    for (size_t i = 0; i < l->n && !b; i++)
        if (strcmp(l->b[i].key, key) == 0)
            b = &l->b[i];
    if (!b) {
        if (l->n == l->cap) {
            size_t cap = l->cap ? l->cap * 2 : 16;
            bucket_t *nb = realloc(l->b, cap * sizeof *nb);
            if (!nb) {
                pthread_mutex_unlock(&l->lock);
                errno = ENOMEM;
                return -1;
            }
            l->b = nb;
            l->cap = cap;
        }
        char *k = strdup(key);
        if (!k) {
            pthread_mutex_unlock(&l->lock);
            errno = ENOMEM;
            return -1;
        }
        b = &l->b[l->n++];
        *b = (bucket_t){.key = k, .tokens = l->burst, .last_ms = now_ms};
    }
    if (now_ms > b->last_ms) {
        b->tokens += (double)(now_ms - b->last_ms) * l->rate / 1000.0;
        if (b->tokens > l->burst)
            b->tokens = l->burst;
        b->last_ms = now_ms;
    }
    int64_t wait = 0;
    if (b->tokens >= 1.0) {
        b->tokens -= 1.0;
    } else {
        double ms = (1.0 - b->tokens) * 1000.0 / l->rate;
        wait = (int64_t)ms + 1; /* round up: a token is surely there after the wait */
    }
    pthread_mutex_unlock(&l->lock);
    return wait;
}

void thttp_stop(thttp_server_t *s)
{
    if (!s)
        return;
    MHD_stop_daemon(s->mhd);
    if (s->unix_path[0])
        unlink(s->unix_path);
    server_free(s);
}

uint16_t thttp_port(const thttp_server_t *s)
{
    return s->port;
}

uint64_t thttp_status_count(const thttp_server_t *s, int status)
{
    if (!s || status < 100 || status >= 600)
        return 0;
    return atomic_load(&((thttp_server_t *)s)->counts[status]);
}

/* Backlog of the Unix socket: connections the kernel queues before MHD accepts them. */
#define THTTP_UNIX_BACKLOG 128

/* MHD_OPTION_NOTIFY_CONNECTION of the Unix listener (and of a TCP one with limit_per_uid):
 * count each connection against its peer's uid; one past max_per_client (or with the uid
 * table full) is shut down at once, before a byte of it is read, so that one local account
 * holding slow connections cannot take the listener from the others.  The slot (index + 1) rides in
 * the socket context to be given back at close. */
static void on_unix_conn(void *cls, struct MHD_Connection *c, void **sctx,
                         enum MHD_ConnectionNotificationCode code)
{
    thttp_server_t *s = cls;
    if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        uintptr_t slot = (uintptr_t)*sctx;
        if (slot) {
            pthread_mutex_lock(&s->uid_lock);
            s->uids[slot - 1].n--;
            pthread_mutex_unlock(&s->uid_lock);
            *sctx = NULL;
        }
        return;
    }
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    struct ucred cr;
    socklen_t len = sizeof cr;
    if (!s->unix_path[0]) {
        /* TCP (cfg.limit_per_uid): the account that owns the socket at the other end; a peer
         * that is no process of this machine (or cannot be told) is not served. */
        uid_t u;
        if (!ci || tsl_tcp_peer_owner(ci->connect_fd, &u) != 1) {
            if (ci)
                shutdown(ci->connect_fd, SHUT_RDWR);
            return;
        }
        cr.uid = u;
    } else if (!ci || getsockopt(ci->connect_fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
        return; /* no identity: the handler refuses the request anyway */
    unsigned limit = s->cfg.max_per_client ? s->cfg.max_per_client : THTTP_DEFAULT_MAX_PER_CLIENT;
    int free_slot = -1, found = -1;
    pthread_mutex_lock(&s->uid_lock);
    for (int i = 0; i < THTTP_UNIX_UIDS && found < 0; i++) {
        if (s->uids[i].n && s->uids[i].uid == cr.uid)
            found = i;
        else if (!s->uids[i].n && free_slot < 0)
            free_slot = i;
    }
    if (found < 0 && free_slot >= 0) {
        found = free_slot;
        s->uids[found].uid = cr.uid;
    }
    bool over = found < 0 || s->uids[found].n >= limit;
    if (!over)
        s->uids[found].n++;
    pthread_mutex_unlock(&s->uid_lock);
    if (over)
        shutdown(ci->connect_fd, SHUT_RDWR);
    else
        *sctx = (void *)(uintptr_t)(found + 1);
}

thttp_server_t *thttp_start_unix(const thttp_config_t *cfg, const char *path, mode_t mode,
                                 tsl_error_t *err)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path) {
        errno = ENAMETOOLONG;
        tsl_errprintf(err, "socket path '%s' is longer than %zu bytes", path,
                      sizeof sa.sun_path - 1);
        return NULL;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            errno = EEXIST;
            tsl_errprintf(err, "%s exists and is not a socket; not replacing it", path);
            return NULL;
        }
        /* A live one (another server answers there) is left alone; one that refuses
         * connections is a dead server's, and replaced. */
        int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof sa) == 0) {
            close(probe);
            errno = EADDRINUSE;
            tsl_errprintf(err, "%s: another server is listening there", path);
            return NULL;
        }
        if (probe >= 0)
            close(probe);
        if (unlink(path) < 0) {
            tsl_errprintf(err, "%s: %s", path, strerror(errno));
            return NULL;
        }
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        tsl_errprintf(err, "socket: %s", strerror(errno));
        return NULL;
    }
    /* Bound with the process's umask, then opened up to mode: never wider than asked; never
     * through a symlink (were the socket swapped for one, root must not chmod its target). */
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
        fchmodat(AT_FDCWD, path, mode, AT_SYMLINK_NOFOLLOW) < 0 ||
        listen(fd, THTTP_UNIX_BACKLOG) < 0) {
        int saved = errno;
        tsl_errprintf(err, "cannot listen on %s: %s", path, strerror(saved));
        close(fd);
        errno = saved;
        return NULL;
    }
    thttp_server_t *s = calloc(1, sizeof *s);
    if (!s) {
        close(fd);
        unlink(path);
        errno = ENOMEM;
        tsl_errprintf(err, "out of memory");
        return NULL;
    }
    s->cfg = *cfg;
    if (bodies_init(s) < 0) {
        free(s);
        close(fd);
        unlink(path);
        errno = ENOMEM;
        tsl_errprintf(err, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&s->uid_lock, NULL);
    s->mhd = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
            MHD_USE_ERROR_LOG | MHD_ALLOW_UPGRADE,
        0, NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
        MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
        MHD_OPTION_URI_LOG_CALLBACK, on_uri, s, MHD_OPTION_NOTIFY_CONNECTION, on_unix_conn, s,
        MHD_OPTION_CONNECTION_LIMIT,
        cfg->max_connections ? cfg->max_connections : THTTP_DEFAULT_MAX_CONNECTIONS,
        MHD_OPTION_CONNECTION_TIMEOUT, cfg->timeout_s ? cfg->timeout_s : THTTP_DEFAULT_TIMEOUT_S,
        MHD_OPTION_END);
    if (!s->mhd) {
        int saved = errno ? errno : EINVAL;
        close(fd);
        unlink(path);
        server_free(s);
        errno = saved;
        tsl_errprintf(err, "cannot serve on %s: %s", path, strerror(saved));
        return NULL;
    }
    memcpy(s->unix_path, path, strlen(path) + 1);
    return s;
}

int thttp_peer_cred(thttp_req_t *req, uid_t *uid, gid_t *gid, pid_t *pid)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) {
        errno = EBADF;
        return -1;
    }
    int domain = 0;
    socklen_t len = sizeof domain;
    if (getsockopt(ci->connect_fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0)
        return -1;
    if (domain != AF_UNIX)
        return 1;
    struct ucred uc;
    len = sizeof uc;
    if (getsockopt(ci->connect_fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0)
        return -1;
    if (uid)
        *uid = uc.uid;
    if (gid)
        *gid = uc.gid;
    if (pid)
        *pid = uc.pid;
    return 0;
}

int thttp_reply_header(thttp_reply_t *rep, const char *name, const char *value)
{
    if (strpbrk(name, "\r\n") || strpbrk(value, "\r\n") || !name[0]) {
        errno = EINVAL;
        return -1;
    }
    size_t nl = strlen(name) + 1, vl = strlen(value) + 1;
    char *h = realloc(rep->headers, rep->headers_len + nl + vl);
    if (!h)
        return -1;
    memcpy(h + rep->headers_len, name, nl);
    memcpy(h + rep->headers_len + nl, value, vl);
    rep->headers = h;
    rep->headers_len += nl + vl;
    return 0;
}
