/* client.c - libclient's connection: JSON requests over one persistent libcurl handle, error
 * answers decoded into one line, and log streams fetched (and followed) in parallel. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

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

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc = CURLE_OK;

static void global_init(void)
{
    global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
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
    if (!(t = curl_slist_append(h, "Expect:")))
        goto fail;
    h = t;
    if (json_body) {
        if (!(t = curl_slist_append(h, "Content-Type: application/json")))
            goto fail;
        h = t;
    }
    if (auth) {
        if (!(t = curl_slist_append(h, auth)))
            goto fail;
        h = t;
    }
    return h;
fail:
    curl_slist_free_all(h);
    return NULL;
}

tclient_t *tclient_new(const char *url, const char *token, tsl_error_t *err)
{
    pthread_once(&global_once, global_init);
    if (global_rc != CURLE_OK) {
        errno = EIO;
        tsl_errprintf(err, "libcurl: %s", curl_easy_strerror(global_rc));
        return NULL;
    }
    const char *sock = url ? tclient_url_socket(url) : NULL;
    if (!url || (!sock && (strncmp(url, "http://", 7) != 0 || url[7] == '\0'))) {
        errno = EINVAL;
        tsl_errprintf(err, "'%s': tesseld's URL must look like http://HOST:PORT or unix:PATH",
                      url ? url : "");
        return NULL;
    }
    tclient_t *c = calloc(1, sizeof *c);
    if (!c || !(c->where = strdup(url)))
        goto nomem;
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
    if (token && *token) {
        size_t len = strlen(token) + 32;
        if (!(c->auth = malloc(len)))
            goto nomem;
        snprintf(c->auth, len, "Authorization: Bearer %s", token);
    }
    if (!(c->hdrs = make_headers(c->auth, true)) || !(c->h = curl_easy_init()))
        goto nomem;
    curl_easy_setopt(c->h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c->h, CURLOPT_CONNECTTIMEOUT_MS, TCLIENT_CONNECT_TIMEOUT_MS);
    curl_easy_setopt(c->h, CURLOPT_TIMEOUT_MS, TCLIENT_REQUEST_TIMEOUT_MS);
    curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, c->hdrs);
    curl_easy_setopt(c->h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c->h, CURLOPT_WRITEDATA, &c->resp);
    curl_easy_setopt(c->h, CURLOPT_ERRORBUFFER, c->curlerr);
    curl_easy_setopt(c->h, CURLOPT_PROTOCOLS_STR, "http");
    curl_easy_setopt(c->h, CURLOPT_TCP_NODELAY, 1L);
    if (c->unix_path)
        curl_easy_setopt(c->h, CURLOPT_UNIX_SOCKET_PATH, c->unix_path);
    return c;
nomem:
    tclient_destroy(c);
    errno = ENOMEM;
    tsl_errprintf(err, "out of memory");
    return NULL;
}

void tclient_destroy(tclient_t *c)
{
    if (!c)
        return;
    if (c->h)
        curl_easy_cleanup(c->h);
    curl_slist_free_all(c->hdrs);
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
                      detail && *detail ? detail : curl_easy_strerror(rc));
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
                      detail && *detail ? detail : curl_easy_strerror(rc));
        break;
    default:
        e = EIO;
        tsl_errprintf(err, "talking to tesseld at %s: %s", base,
                      detail && *detail ? detail : curl_easy_strerror(rc));
    }
    errno = e;
    return -1;
}

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
    if (snprintf(url, sizeof url, "%s%s", c->base, path) >= (int)sizeof url) {
        errno = ENAMETOOLONG;
        return tsl_errprintf(err, "request path too long");
    }
    if (body && !(text = json_dumps(body, JSON_COMPACT))) {
        errno = ENOMEM;
        return tsl_errprintf(err, "cannot encode the request as JSON");
    }
    bool sends = body || strcmp(method, "POST") == 0 || strcmp(method, "PATCH") == 0 ||
                 strcmp(method, "PUT") == 0;
    curl_easy_setopt(c->h, CURLOPT_URL, url);
    if (sends) {
        curl_easy_setopt(c->h, CURLOPT_POSTFIELDS, text ? text : "");
        curl_easy_setopt(c->h, CURLOPT_POSTFIELDSIZE, text ? (long)strlen(text) : 0L);
        curl_easy_setopt(c->h, CURLOPT_CUSTOMREQUEST, strcmp(method, "POST") ? method : NULL);
    } else {
        curl_easy_setopt(c->h, CURLOPT_HTTPGET, 1L);
        curl_easy_setopt(c->h, CURLOPT_CUSTOMREQUEST, strcmp(method, "GET") ? method : NULL);
    }
    CURLcode rc = curl_easy_perform(c->h);
    free(text);
    curl_easy_setopt(c->h, CURLOPT_POSTFIELDS, NULL);
    if (rc != CURLE_OK)
        return transfer_error(rc, c->where, c->curlerr, err);
    curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &c->status);
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
        curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &s->status);
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
        curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &s->status);
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
    CURLM *m = curl_multi_init();
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
        char where[64] = "";
        if (!logs[i].positioned && logs[i].has_tail)
            snprintf(where, sizeof where, "&tail=%llu", (unsigned long long)logs[i].tail);
        if (!logs[i].positioned && logs[i].has_since)
            snprintf(where + strlen(where), sizeof where - strlen(where), "&since=%lld",
                     (long long)logs[i].since);
        snprintf(s->url, sizeof s->url, "%s/v1/jobs/%lld/logs?stream=%s&offset=%llu%s%s", c->base,
                 (long long)id, logs[i].stream, (unsigned long long)logs[i].offset, where,
                 follow ? "&follow=1" : "");
        if (!(s->h = curl_easy_init())) {
            errno = ENOMEM;
            tsl_errprintf(err, "out of memory");
            goto out;
        }
        curl_easy_setopt(s->h, CURLOPT_URL, s->url);
        if (c->unix_path)
            curl_easy_setopt(s->h, CURLOPT_UNIX_SOCKET_PATH, c->unix_path);
        curl_easy_setopt(s->h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(s->h, CURLOPT_CONNECTTIMEOUT_MS, TCLIENT_CONNECT_TIMEOUT_MS);
        if (!follow)
            curl_easy_setopt(s->h, CURLOPT_TIMEOUT_MS, TCLIENT_REQUEST_TIMEOUT_MS);
        curl_easy_setopt(s->h, CURLOPT_HTTPHEADER, hdrs);
        curl_easy_setopt(s->h, CURLOPT_WRITEFUNCTION, on_log);
        curl_easy_setopt(s->h, CURLOPT_WRITEDATA, s);
        curl_easy_setopt(s->h, CURLOPT_HEADERFUNCTION, on_log_header);
        curl_easy_setopt(s->h, CURLOPT_HEADERDATA, s);
        curl_easy_setopt(s->h, CURLOPT_PROTOCOLS_STR, "http");
        curl_easy_setopt(s->h, CURLOPT_TCP_NODELAY, 1L);
        curl_multi_add_handle(m, s->h);
        nadded++;
    }
    int running = 1;
    while (running) {
        if (stop && *stop) {
            errno = EINTR;
            tsl_errprintf(err, "interrupted");
            goto out;
        }
        CURLMcode mc = curl_multi_perform(m, &running);
        if (mc == CURLM_OK && running)
            mc = curl_multi_poll(m, NULL, 0, TCLIENT_POLL_MS, NULL);
        if (mc != CURLM_OK) {
            errno = EIO;
            tsl_errprintf(err, "libcurl: %s", curl_multi_strerror(mc));
            goto out;
        }
    }
    /* Every transfer is done: report the first failure, if any. */
    CURLMsg *msg;
    int left;
    int e = 0;
    while ((msg = curl_multi_info_read(m, &left))) {
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
            curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &s->status);
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
                curl_multi_remove_handle(m, st[i].h);
            curl_easy_cleanup(st[i].h);
        }
        free(st[i].errbody.data);
    }
    if (m)
        curl_multi_cleanup(m);
    curl_slist_free_all(hdrs);
    errno = saved;
    return rc;
}
