/* client.c - libclient's connection: JSON requests over one persistent connection, error
 * answers decoded into one line, and log streams fetched (and followed) in parallel.  Two
 * transports: the light one (wire.c) for tesseld's local socket and for TCP without a proxy,
 * and libcurl, loaded with dlopen only when a proxy is set (docs/cli.md, "Performance"). */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Plain prototypes: libcurl's functions are called through pointers from dlsym. */
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>

#include "libclient/upgrade.h"
#include "libclient/wire.h"
#include "tessel/client.h"

/* Bound on connecting to tesseld: it listens on this machine, so a connect that takes longer
 * than this is a dead address, not a slow one. */
#define TCLIENT_CONNECT_TIMEOUT_MS 10000L
/* Bound on one ordinary request (not log following).  tesseld answers in milliseconds; a
 * minute covers a store stalled on a busy disk without leaving `tessel` hanging forever. */
#define TCLIENT_REQUEST_TIMEOUT_MS 60000L
/* How often tclient_logs wakes to look at *stop while streams are idle. */
#define TCLIENT_POLL_MS 200

typedef struct {
    char *data;
    size_t len, cap;
} buf_t;

struct tclient {
    wire_t *wire;         /* the light transport, or NULL when libcurl serves this URL */
    char *wire_hdrs;      /* its header lines: Authorization, or "" */
    char *wire_json_hdrs; /* the same and Content-Type: application/json */
    CURL *h;
    char *where;     /* the URL as given, for messages */
    char *unix_path; /* the Unix socket to connect to, or NULL for TCP */
    char *base;
    char *auth; /* "Authorization: Bearer ..." or NULL */
    struct curl_slist *hdrs;
    buf_t resp;
    long status;
    char code[48];
    char curlerr[CURL_ERROR_SIZE];
};

/* libcurl's entry points that libclient uses, found in libcurl.so.4 by dlopen. */
static struct {
    CURLcode (*global_init)(long);
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_perform)(CURL *);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    void (*easy_cleanup)(CURL *);
    const char *(*easy_strerror)(CURLcode);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
    CURLM *(*multi_init)(void);
    CURLMcode (*multi_add_handle)(CURLM *, CURL *);
    CURLMcode (*multi_remove_handle)(CURLM *, CURL *);
    CURLMcode (*multi_perform)(CURLM *, int *);
    CURLMcode (*multi_poll)(CURLM *, struct curl_waitfd[], unsigned int, int, int *);
    CURLMsg *(*multi_info_read)(CURLM *, int *);
    CURLMcode (*multi_cleanup)(CURLM *);
    const char *(*multi_strerror)(CURLMcode);
} cu;

/* libcurl's soname on Debian (libcurl4, libcurl3-gnutls provide the same ABI). */
static const char *const curl_sonames[] = {"libcurl.so.4", "libcurl-gnutls.so.4"};

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static char global_err[256];

static void global_init(void)
{
    void *dl = NULL;
    for (size_t i = 0; !dl && i < sizeof curl_sonames / sizeof curl_sonames[0]; i++)
        dl = dlopen(curl_sonames[i], RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        snprintf(global_err, sizeof global_err, "cannot load libcurl (%s)", dlerror());
        return;
    }
    static const char *const names[] = {
        "curl_global_init",   "curl_easy_init",        "curl_easy_setopt",
        "curl_easy_perform",  "curl_easy_getinfo",     "curl_easy_cleanup",
        "curl_easy_strerror", "curl_slist_append",     "curl_slist_free_all",
        "curl_multi_init",    "curl_multi_add_handle", "curl_multi_remove_handle",
        "curl_multi_perform", "curl_multi_poll",       "curl_multi_info_read",
        "curl_multi_cleanup", "curl_multi_strerror",
    };
    void *fns[sizeof names / sizeof names[0]];
    _Static_assert(sizeof fns == sizeof cu, "one name per entry point");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!(fns[i] = dlsym(dl, names[i]))) {
            snprintf(global_err, sizeof global_err, "libcurl lacks %s", names[i]);
            return;
        }
    }
    memcpy(&cu, fns, sizeof cu);
    CURLcode rc = cu.global_init(CURL_GLOBAL_DEFAULT);
    if (rc != CURLE_OK) {
        snprintf(global_err, sizeof global_err, "libcurl: %s", cu.easy_strerror(rc));
        cu.easy_init = NULL;
    }
}

/* True when the environment names a proxy libcurl would use for an http:// URL (it reads
 * http_proxy in lower case only, and all_proxy in either case; no_proxy is left to it). */
static bool proxy_set(void)
{
    static const char *const vars[] = {"http_proxy", "all_proxy", "ALL_PROXY"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v)
            return true;
    }
    return false;
}

static int buf_add(buf_t *b, const char *p, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *d = realloc(b->data, cap);
        if (!d)
            return -1;
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    return buf_add(arg, p, size * n) < 0 ? 0 : size * n;
}

static struct curl_slist *make_headers(const char *auth, bool json_body)
{
    struct curl_slist *h = NULL, *t;
    /* No "Expect: 100-continue" round trip before bodies above 1 KiB. */
    if (!(t = cu.slist_append(h, "Expect:")))
        goto fail;
    h = t;
    if (json_body) {
        if (!(t = cu.slist_append(h, "Content-Type: application/json")))
            goto fail;
        h = t;
    }
    if (auth) {
        if (!(t = cu.slist_append(h, auth)))
            goto fail;
        h = t;
    }
    return h;
fail:
    cu.slist_free_all(h);
    return NULL;
}

tclient_t *tclient_new(const char *url, const char *token, tsl_error_t *err)
{
    const char *sock = url ? tclient_url_socket(url) : NULL;
    if (!url || (!sock && (strncmp(url, "http://", 7) != 0 || url[7] == '\0'))) {
        errno = EINVAL;
        tsl_errprintf(err, "'%s': tesseld's URL must look like http://HOST:PORT or unix:PATH",
                      url ? url : "");
        return NULL;
    }
    for (const char *t = token ? token : ""; *t; t++) {
        if ((unsigned char)*t < 0x20 || *t == 0x7f) {
            errno = EINVAL;
            tsl_errprintf(err, "the token holds a control character");
            return NULL;
        }
    }
    tclient_t *c = calloc(1, sizeof *c);
    if (!c || !(c->where = strdup(url)))
        goto nomem;
    if (token && *token) {
        size_t len = strlen(token) + 32;
        if (!(c->auth = malloc(len)))
            goto nomem;
        snprintf(c->auth, len, "Authorization: Bearer %s", token);
    }
    /* A proxy never applies to a local socket; over TCP, libcurl decides (no_proxy). */
    if (sock || !proxy_set()) {
        size_t len = (c->auth ? strlen(c->auth) : 0) + 64;
        if (!(c->wire_hdrs = malloc(len)) || !(c->wire_json_hdrs = malloc(len)))
            goto nomem;
        snprintf(c->wire_hdrs, len, "%s%s", c->auth ? c->auth : "", c->auth ? "\r\n" : "");
        snprintf(c->wire_json_hdrs, len, "%sContent-Type: application/json\r\n", c->wire_hdrs);
        c->wire = wire_new(url, err);
        if (c->wire)
            return c;
        if (errno != EINVAL)
            goto fail;
    }
    pthread_once(&global_once, global_init);
    if (!cu.easy_init) {
        errno = EIO;
        tsl_errprintf(err, "%s", global_err);
        goto fail;
    }
    if (sock) {
        /* The host part is only what the request line's Host header says. */
        if (!(c->unix_path = strdup(sock)) || !(c->base = strdup("http://localhost")))
            goto nomem;
    } else {
        size_t n = strlen(url);
        while (n > 7 && url[n - 1] == '/')
            n--;
        if (!(c->base = strndup(url, n)))
            goto nomem;
    }
    if (!(c->hdrs = make_headers(c->auth, true)) || !(c->h = cu.easy_init()))
        goto nomem;
    cu.easy_setopt(c->h, CURLOPT_NOSIGNAL, 1L);
    cu.easy_setopt(c->h, CURLOPT_CONNECTTIMEOUT_MS, TCLIENT_CONNECT_TIMEOUT_MS);
    cu.easy_setopt(c->h, CURLOPT_TIMEOUT_MS, TCLIENT_REQUEST_TIMEOUT_MS);
    cu.easy_setopt(c->h, CURLOPT_HTTPHEADER, c->hdrs);
    cu.easy_setopt(c->h, CURLOPT_WRITEFUNCTION, on_body);
    cu.easy_setopt(c->h, CURLOPT_WRITEDATA, &c->resp);
    cu.easy_setopt(c->h, CURLOPT_ERRORBUFFER, c->curlerr);
    cu.easy_setopt(c->h, CURLOPT_PROTOCOLS_STR, "http");
    cu.easy_setopt(c->h, CURLOPT_TCP_NODELAY, 1L);
    if (c->unix_path)
        cu.easy_setopt(c->h, CURLOPT_UNIX_SOCKET_PATH, c->unix_path);
    return c;
nomem:
    errno = ENOMEM;
    tsl_errprintf(err, "out of memory");
fail:;
    int e = errno;
    tclient_destroy(c);
    errno = e;
    return NULL;
}

void tclient_destroy(tclient_t *c)
{
    if (!c)
        return;
    wire_destroy(c->wire);
    free(c->wire_hdrs);
    free(c->wire_json_hdrs);
    if (c->h)
        cu.easy_cleanup(c->h);
    if (c->hdrs)
        cu.slist_free_all(c->hdrs);
    free(c->auth);
    free(c->base);
    free(c->unix_path);
    free(c->where);
    free(c->resp.data);
    free(c);
}

long tclient_status(const tclient_t *c)
{
    return c->status;
}

const char *tclient_error_code(const tclient_t *c)
{
    return c->code;
}

static int status_errno(long status)
{
    switch (status) {
    case 400:
    case 405:
        return EINVAL;
    case 401:
        return EACCES;
    case 403:
        return EPERM;
    case 404:
        return ENOENT;
    case 409:
        return EEXIST;
    case 413:
        return E2BIG;
    case 422:
        return EDOM;
    case 503:
        return EAGAIN;
    default:
        return EIO;
    }
}

int tclient_decode_error(long status, const char *body, size_t len, char *code, size_t codelen,
                         tsl_error_t *err)
{
    int e = status_errno(status);
    if (code && codelen)
        code[0] = '\0';
    json_t *j = body && len ? json_loadb(body, len, 0, NULL) : NULL;
    json_t *o = json_object_get(j, "error");
    const char *msg = json_string_value(json_object_get(o, "message"));
    const char *c = json_string_value(json_object_get(o, "code"));
    if (c && code)
        snprintf(code, codelen, "%s", c);
    if (msg && *msg) {
        if (status == 401)
            tsl_errprintf(err, "%s (log in with `tessel login`, or set TESSEL_TOKEN)", msg);
        else
            tsl_errprintf(err, "%s", msg);
    } else {
        tsl_errprintf(err, "tesseld answered HTTP %ld", status);
    }
    json_decref(j);
    return e;
}

/* errno and one line for a failed transfer (tesseld unreachable, connection lost). */
static int transfer_error(CURLcode rc, const char *base, const char *detail, tsl_error_t *err)
{
    int e;
    switch (rc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
        e = ECONNREFUSED;
        tsl_errprintf(err, "cannot reach tesseld at %s: %s (is it running?)", base,
                      detail && *detail ? detail : cu.easy_strerror(rc));
        break;
    case CURLE_OPERATION_TIMEDOUT:
        e = ETIMEDOUT;
        tsl_errprintf(err, "tesseld at %s did not answer in time", base);
        break;
    case CURLE_GOT_NOTHING:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
        e = ECONNRESET;
        tsl_errprintf(err, "lost the connection to tesseld at %s: %s", base,
                      detail && *detail ? detail : cu.easy_strerror(rc));
        break;
    default:
        e = EIO;
        tsl_errprintf(err, "talking to tesseld at %s: %s", base,
                      detail && *detail ? detail : cu.easy_strerror(rc));
    }
    errno = e;
    return -1;
}

static int wire_body(void *arg, long status, const char *p, size_t n)
{
    return buf_add(arg, p, n);
}

static int finish(tclient_t *c, json_t **answer, tsl_error_t *err);

int tclient_request(tclient_t *c, const char *method, const char *path, const json_t *body,
                    json_t **answer, tsl_error_t *err)
{
    char *text = NULL;
    char url[2048];
    c->status = 0;
    c->code[0] = '\0';
    c->curlerr[0] = '\0';
    c->resp.len = 0;
    if (answer)
        *answer = NULL;
    if (snprintf(url, sizeof url, "%s%s", c->base ? c->base : "", path) >= (int)sizeof url) {
        errno = ENAMETOOLONG;
        return tsl_errprintf(err, "request path too long");
    }
    if (body && !(text = json_dumps(body, JSON_COMPACT))) {
        errno = ENOMEM;
        return tsl_errprintf(err, "cannot encode the request as JSON");
    }
    bool sends = body || strcmp(method, "POST") == 0 || strcmp(method, "PATCH") == 0 ||
                 strcmp(method, "PUT") == 0;
    if (c->wire) {
        wire_io_t io = {.path = path, .body = wire_body, .arg = &c->resp};
        int r = wire_request(c->wire, method, sends ? c->wire_json_hdrs : c->wire_hdrs,
                             sends ? (text ? text : "") : NULL, text ? strlen(text) : 0, &io,
                             TCLIENT_REQUEST_TIMEOUT_MS, err);
        free(text);
        if (r < 0)
            return -1;
        c->status = io.status;
        return finish(c, answer, err);
    }
    cu.easy_setopt(c->h, CURLOPT_URL, url);
    if (sends) {
        cu.easy_setopt(c->h, CURLOPT_POSTFIELDS, text ? text : "");
        cu.easy_setopt(c->h, CURLOPT_POSTFIELDSIZE, text ? (long)strlen(text) : 0L);
        cu.easy_setopt(c->h, CURLOPT_CUSTOMREQUEST, strcmp(method, "POST") ? method : NULL);
    } else {
        cu.easy_setopt(c->h, CURLOPT_HTTPGET, 1L);
        cu.easy_setopt(c->h, CURLOPT_CUSTOMREQUEST, strcmp(method, "GET") ? method : NULL);
    }
    CURLcode rc = cu.easy_perform(c->h);
    free(text);
    cu.easy_setopt(c->h, CURLOPT_POSTFIELDS, NULL);
    if (rc != CURLE_OK)
        return transfer_error(rc, c->where, c->curlerr, err);
    cu.easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &c->status);
    return finish(c, answer, err);
}

/* The answer in c->resp, with status c->status: the caller's JSON, or the error it says. */
static int finish(tclient_t *c, json_t **answer, tsl_error_t *err)
{
    if (c->status >= 400 || c->status < 200) {
        int e = tclient_decode_error(c->status, c->resp.data, c->resp.len, c->code, sizeof c->code,
                                     err);
        errno = e;
        return -1;
    }
    if (!answer)
        return 0;
    if (c->resp.len == 0) {
        *answer = json_null();
        return 0;
    }
    json_error_t jerr;
    *answer = json_loadb(c->resp.data, c->resp.len, 0, &jerr);
    if (!*answer) {
        errno = EPROTO;
        return tsl_errprintf(err, "tesseld's answer (HTTP %ld) is not JSON: %s", c->status,
                             jerr.text);
    }
    return 0;
}

/* ---- logs ------------------------------------------------------------------------------------ */

typedef struct {
    tclient_log_t *log;
    CURL *h;
    buf_t errbody; /* body of an error answer */
    long status;
    bool stopped; /* the write function asked to stop */
    char url[2048];
} stream_t;

static size_t on_log(char *p, size_t size, size_t n, void *arg)
{
    stream_t *s = arg;
    size_t len = size * n;
    if (s->status == 0)
        cu.easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &s->status);
    if (s->status >= 300)
        return buf_add(&s->errbody, p, len) < 0 ? 0 : len;
    if (s->log->write(p, len, s->log->arg) < 0) {
        s->stopped = true;
        return 0;
    }
    s->log->offset += len;
    return len;
}

static size_t on_log_header(char *p, size_t size, size_t n, void *arg)
{
    stream_t *s = arg;
    size_t len = size * n;
    static const char name[] = "x-tessel-job-state:";
    static const char oname[] = "x-tessel-log-offset:";
    if (s->status == 0)
        cu.easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &s->status);
    if (s->status < 300 && len > sizeof oname - 1 && strncasecmp(p, oname, sizeof oname - 1) == 0 &&
        !s->log->positioned) {
        char v[32];
        size_t vl =
            len - (sizeof oname - 1) < sizeof v - 1 ? len - (sizeof oname - 1) : sizeof v - 1;
        memcpy(v, p + sizeof oname - 1, vl);
        v[vl] = '\0';
        char *end;
        unsigned long long off = strtoull(v, &end, 10);
        if (end != v)
            s->log->offset = off;
        s->log->positioned = true;
    }
    if (len > sizeof name - 1 && strncasecmp(p, name, sizeof name - 1) == 0) {
        const char *v = p + sizeof name - 1;
        const char *end = p + len;
        while (v < end && (*v == ' ' || *v == '\t'))
            v++;
        size_t vl = 0;
        while (v + vl < end && v[vl] != '\r' && v[vl] != '\n')
            vl++;
        if (vl >= sizeof s->log->state)
            vl = sizeof s->log->state - 1;
        memcpy(s->log->state, v, vl);
        s->log->state[vl] = '\0';
    }
    return len;
}

/* The URL (base, then the path) that fetches one log stream. */
static void log_url(char *url, size_t len, const char *base, int64_t id, const tclient_log_t *l,
                    bool follow)
{
    char where[64] = "";
    if (!l->positioned && l->has_tail)
        snprintf(where, sizeof where, "&tail=%llu", (unsigned long long)l->tail);
    if (!l->positioned && l->has_since)
        snprintf(where + strlen(where), sizeof where - strlen(where), "&since=%lld",
                 (long long)l->since);
    snprintf(url, len, "%s/v1/jobs/%lld/logs?stream=%s&offset=%llu%s%s", base ? base : "",
             (long long)id, l->stream, (unsigned long long)l->offset, where,
             follow ? "&follow=1" : "");
}

static int wire_log_header(void *arg, long status, const char *name, const char *value)
{
    stream_t *s = arg;
    if (status < 300 && !s->log->positioned && strcasecmp(name, "x-tessel-log-offset") == 0) {
        char *end;
        unsigned long long off = strtoull(value, &end, 10);
        if (end != value)
            s->log->offset = off;
        s->log->positioned = true;
    }
    if (strcasecmp(name, "x-tessel-job-state") == 0)
        snprintf(s->log->state, sizeof s->log->state, "%s", value);
    return 0;
}

static int wire_log_body(void *arg, long status, const char *p, size_t n)
{
    stream_t *s = arg;
    if (status >= 300)
        return buf_add(&s->errbody, p, n);
    if (s->log->write(p, n, s->log->arg) < 0) {
        s->stopped = true;
        return -1;
    }
    s->log->offset += n;
    return 0;
}

/* tclient_logs over the light transport: one connection per stream. */
static int logs_wire(tclient_t *c, int64_t id, stream_t *st, int n, bool follow,
                     volatile sig_atomic_t *stop, tsl_error_t *err)
{
    wire_io_t io[8];
    for (int i = 0; i < n; i++) {
        log_url(st[i].url, sizeof st[i].url, NULL, id, st[i].log, follow);
        io[i] = (wire_io_t){
            .path = st[i].url, .header = wire_log_header, .body = wire_log_body, .arg = &st[i]};
    }
    if (wire_get_many(c->wire, c->wire_hdrs, io, n, follow ? -1 : TCLIENT_REQUEST_TIMEOUT_MS,
                      TCLIENT_POLL_MS, stop, err) < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        if (io[i].status >= 300) {
            c->status = io[i].status;
            errno = tclient_decode_error(io[i].status, st[i].errbody.data, st[i].errbody.len,
                                         c->code, sizeof c->code, err);
            return -1;
        }
    }
    return 0;
}

int tclient_logs(tclient_t *c, int64_t id, tclient_log_t *logs, int n, bool follow,
                 volatile sig_atomic_t *stop, tsl_error_t *err)
{
    if (n <= 0 || n > 8) {
        errno = EINVAL;
        return tsl_errprintf(err, "tclient_logs: 1 to 8 streams");
    }
    stream_t st[8];
    memset(st, 0, sizeof st);
    c->status = 0;
    c->code[0] = '\0';
    if (c->wire) {
        for (int i = 0; i < n; i++) {
            st[i].log = &logs[i];
            logs[i].state[0] = '\0';
        }
        int rc = logs_wire(c, id, st, n, follow, stop, err);
        int saved = errno;
        for (int i = 0; i < n; i++)
            free(st[i].errbody.data);
        errno = saved;
        return rc;
    }
    CURLM *m = cu.multi_init();
    struct curl_slist *hdrs = make_headers(c->auth, false);
    int rc = -1, nadded = 0;
    if (!m || !hdrs) {
        errno = ENOMEM;
        tsl_errprintf(err, "out of memory");
        goto out;
    }
    for (int i = 0; i < n; i++) {
        stream_t *s = &st[i];
        s->log = &logs[i];
        logs[i].state[0] = '\0';
        log_url(s->url, sizeof s->url, c->base, id, &logs[i], follow);
        if (!(s->h = cu.easy_init())) {
            errno = ENOMEM;
            tsl_errprintf(err, "out of memory");
            goto out;
        }
        cu.easy_setopt(s->h, CURLOPT_URL, s->url);
        if (c->unix_path)
            cu.easy_setopt(s->h, CURLOPT_UNIX_SOCKET_PATH, c->unix_path);
        cu.easy_setopt(s->h, CURLOPT_NOSIGNAL, 1L);
        cu.easy_setopt(s->h, CURLOPT_CONNECTTIMEOUT_MS, TCLIENT_CONNECT_TIMEOUT_MS);
        if (!follow)
            cu.easy_setopt(s->h, CURLOPT_TIMEOUT_MS, TCLIENT_REQUEST_TIMEOUT_MS);
        cu.easy_setopt(s->h, CURLOPT_HTTPHEADER, hdrs);
        cu.easy_setopt(s->h, CURLOPT_WRITEFUNCTION, on_log);
        cu.easy_setopt(s->h, CURLOPT_WRITEDATA, s);
        cu.easy_setopt(s->h, CURLOPT_HEADERFUNCTION, on_log_header);
        cu.easy_setopt(s->h, CURLOPT_HEADERDATA, s);
        cu.easy_setopt(s->h, CURLOPT_PROTOCOLS_STR, "http");
        cu.easy_setopt(s->h, CURLOPT_TCP_NODELAY, 1L);
        cu.multi_add_handle(m, s->h);
        nadded++;
    }
    int running = 1;
    while (running) {
        if (stop && *stop) {
            errno = EINTR;
            tsl_errprintf(err, "interrupted");
            goto out;
        }
        CURLMcode mc = cu.multi_perform(m, &running);
        if (mc == CURLM_OK && running)
            mc = cu.multi_poll(m, NULL, 0, TCLIENT_POLL_MS, NULL);
        if (mc != CURLM_OK) {
            errno = EIO;
            tsl_errprintf(err, "libcurl: %s", cu.multi_strerror(mc));
            goto out;
        }
    }
    /* Every transfer is done: report the first failure, if any. */
    CURLMsg *msg;
    int left;
    int e = 0;
    while ((msg = cu.multi_info_read(m, &left))) {
        if (msg->msg != CURLMSG_DONE || e)
            continue;
        stream_t *s = NULL;
        for (int i = 0; i < n; i++)
            if (st[i].h == msg->easy_handle)
                s = &st[i];
        if (!s)
            continue;
        if (s->stopped) {
            e = ECANCELED;
            tsl_errprintf(err, "stopped");
        } else if (msg->data.result != CURLE_OK) {
            transfer_error(msg->data.result, c->where, NULL, err);
            e = errno;
        } else {
            cu.easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &s->status);
            if (s->status >= 300) {
                e = tclient_decode_error(s->status, s->errbody.data, s->errbody.len, c->code,
                                         sizeof c->code, err);
                c->status = s->status;
            }
        }
    }
    if (e) {
        errno = e;
        goto out;
    }
    rc = 0;
out:;
    int saved = errno;
    for (int i = 0; i < n; i++) {
        if (st[i].h) {
            if (i < nadded)
                cu.multi_remove_handle(m, st[i].h);
            cu.easy_cleanup(st[i].h);
        }
        free(st[i].errbody.data);
    }
    if (m)
        cu.multi_cleanup(m);
    cu.slist_free_all(hdrs);
    errno = saved;
    return rc;
}

/* The sinks of tclient_upgrade: the error body, and the accept value of a 101. */
typedef struct {
    buf_t *body;
    const char *accept;
    bool accepted;
} upgrade_io_t;

static int upgrade_header(void *arg, long status, const char *name, const char *value)
{
    upgrade_io_t *u = arg;
    if (status == 101 && strcasecmp(name, "Sec-WebSocket-Accept") == 0)
        u->accepted = strcmp(value, u->accept) == 0;
    return 0;
}

static int upgrade_body(void *arg, long status, const char *p, size_t n)
{
    upgrade_io_t *u = arg;
    return buf_add(u->body, p, n);
}

int tclient_upgrade(tclient_t *c, const char *path, const char *headers, const char *accept,
                    int *fd, char *extra, size_t cap, size_t *extra_len, tsl_error_t *err)
{
    c->status = 0;
    c->code[0] = '\0';
    if (!c->wire) {
        errno = ENOTSUP;
        return tsl_errprintf(err, "a job's terminal cannot go through an HTTP proxy (unset "
                                  "http_proxy for tesseld's address)");
    }
    size_t hl = strlen(c->wire_hdrs) + strlen(headers) + 1;
    char *h = malloc(hl);
    if (!h) {
        errno = ENOMEM;
        return tsl_errprintf(err, "out of memory");
    }
    snprintf(h, hl, "%s%s", c->wire_hdrs, headers);
    c->resp.len = 0;
    upgrade_io_t u = {.body = &c->resp, .accept = accept};
    wire_io_t io = {.path = path, .header = upgrade_header, .body = upgrade_body, .arg = &u};
    int rc =
        wire_upgrade(c->wire, h, &io, fd, extra, cap, extra_len, TCLIENT_REQUEST_TIMEOUT_MS, err);
    free(h);
    if (rc < 0)
        return -1;
    c->status = io.status;
    if (*fd >= 0 && !u.accepted) {
        close(*fd);
        *fd = -1;
        errno = EPROTO;
        return tsl_errprintf(err, "tesseld's answer to the WebSocket handshake has a wrong "
                                  "Sec-WebSocket-Accept");
    }
    if (*fd >= 0)
        return 0;
    errno =
        tclient_decode_error(io.status, c->resp.data, c->resp.len, c->code, sizeof c->code, err);
    return -1;
}
