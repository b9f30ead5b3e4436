/* svcproxy.c - a job's web services through tesseld (issue 19, item 3; docs/job-services.md).
 *
 * tesseld serves each job's services on a listener of their own (--services-listen), apart
 * from the API and the console, and each service at a host name of its own, so an origin of
 * its own: a notebook's pages run the job owner's (or anyone's downloaded) JavaScript, which
 * must never run where the console keeps its token nor where another service (another
 * user's) keeps its cookie (docs/security.md, "A job's web services").
 * URL: http://j<job>-<name>.<--services-domain>:PORT/... (the Host header routes).
 *
 *   POST /v1/jobs/{id}/services/{name}/ticket   (the API, with the token)  -> a ticket URL
 *   GET  /?tessel-ticket=T  on jID-NAME.DOMAIN   ticket redeemed -> cookie tessel-svc,
 *                                                 host-only, Path=/, a page that goes to /
 *   ANY  /REST              on jID-NAME.DOMAIN   cookie checked (jobsvc.h), the job running
 *                                                 and its user the owner or an admin, a
 *                                                 request from another origin refused, then:
 *        a WebSocket handshake -> the same request written to the service's socket, its 101
 *                                 awaited, then bytes copied both ways (relay below)
 *        anything else         -> libcurl to the service's socket (CURLOPT_UNIX_SOCKET_PATH),
 *                                 the answer streamed back (px_read)
 *
 * Each request runs in its connection's thread (libhttp), outside tesseld's lock but for the
 * store lookups.  A user holds at most SVC_PER_USER proxied connections at once, all users
 * together half of --max-connections (termconn.h's counting, a table of its own: the services
 * listener is an MHD daemon apart from the API's, with its own connections).  The last activity of
 * each job's services (a request, an open WebSocket) is kept for --interactive-idle
 * (tessd_jobsvc_idle).
 *
 * Before a request's body is read (libhttp's on_headers: svc_headers), its Host, its headers
 * and its cookie are checked: an unauthenticated upload is answered at once, never buffered. */
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "agent/fwd.h"
#include "daemon/api/api.h"
#include "daemon/jobsvc.h"
#include "daemon/localid.h"
#include "daemon/pwcache.h"
#include "daemon/termconn.h"
#include "daemon/ticket.h"
#include "libutil/sockowner.h"
#include "libutil/term.h"

/* Proxied connections (requests under way, WebSockets) one user holds at once: a notebook's
 * page opens a few requests in parallel (a browser's 6 per host) and one WebSocket per kernel;
 * 64 leaves room for a dozen notebooks open at once. */
#define SVC_PER_USER 64
/* Bytes buffered each way: one WebSocket relay's per direction, one answer's chunk.  16 KiB is
 * libcurl's own write size (CURL_MAX_WRITE_SIZE) and the forwarder's buffer (fwd.h). */
#define SVC_BUF (16u << 10)
/* The service's answer to a WebSocket handshake: its head is short (a 101 and 3 or 4 headers);
 * 16 KiB bounds a service that sends more, and 10 s one that never answers. */
#define SVC_HEAD_MAX (16u << 10)
#define SVC_HEAD_MS  10000
#define SVC_RETRY_S  "2"
/* Bytes of request bodies the services listener holds at once, all requests together
 * (libhttp's max_body_total): 16 bodies of the most a request may send (16 MiB). */
#define SVC_BODIES_MAX (256u << 20)
/* The most one request may send (a notebook's save is a PUT of the whole file). */
#define SVC_BODY_MAX (16u << 20)
/* ... and those of one user's requests (libhttp's max_body_per_key, both listeners together):
 * two bodies of the most a request may send, so that one user cannot hold the whole bound. */
#define SVC_BODIES_PER_USER (2 * (SVC_BODY_MAX + 1))
/* A connection's memory: a browser sends every cookie of a host with each request, up to about
 * 740 KB (Chromium keeps 180 cookies of 4 KB a host), and cookies set for this host name by a
 * page on another port of it (another account's server) come along; libmicrohttpd reads a
 * request's head into half of this memory at most: room for them, so that tesseld answers
 * (and clears them, SVC_COOKIES_MAX) rather than libmicrohttpd's own 431. */
#define SVC_CONN_MEMORY (2u << 20)
/* Connections one local account holds to the services listeners at once (each), counted by the
 * owner of the peer's socket (libhttp's limit_per_uid): every account has the same loopback
 * addresses, so a bound per address would be one for all.  A browser opens 6 per host and a
 * WebSocket per kernel; 32 bounds what one account's half-sent heads can hold (SVC_CONN_MEMORY
 * each: 64 MiB). */
#define SVC_CONN_PER_UID 32
/* Bytes of Cookie headers past which a request is answered 431 with Clear-Site-Data: cookies
 * (a services' host is a site of its own: that host's cookies alone); no service would take
 * them (Jupyter's server answers 431 above 64 KiB of head). */
#define SVC_COOKIES_MAX (48u << 10)
#define TICKET_PARAM    "tessel-ticket"

/* ---- shared state (svc_mu; never held with d->lock taken after it) ---------------------- */

static pthread_mutex_t svc_mu = PTHREAD_MUTEX_INITIALIZER;
static tsd_termconns_t conns;
/* The last activity of the jobs' services (the idle rule; jobsvc.h: never evicted, pruned to
 * the running jobs by the idle pass). */
static tsd_svc_acts_t acts;
/* Tickets of the services (ticket.h), under d->lock. */
static tsd_tickets_t tickets;

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Job's activity now: +1/-1 open WebSockets (ws_delta), the time either way.  svc_mu taken. */
static void touch(int64_t job, int ws_delta)
{
    pthread_mutex_lock(&svc_mu);
    tsd_svc_act_touch(&acts, job, tessd_now_ms(), ws_delta);
    pthread_mutex_unlock(&svc_mu);
}

void tessd_jobsvc_touch(int64_t job, int open_delta)
{
    touch(job, open_delta);
}

/* ---- the listener ------------------------------------------------------------------------ */

int tessd_jobsvc_url(tessd_t *d, int64_t job, const char *name, char *buf, size_t len)
{
    if (!d->http_svc || !tsd_svc_name_valid(name))
        return -1;
    int n = snprintf(buf, len, "http://j%lld-%s.%s:%u/", (long long)job, name, d->svc_domain,
                     (unsigned)d->svc_port);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* <data>/jobsvc: root's, 0711 (the shims bind in it; nobody else lists or writes it), made
 * when missing; the cookie key <data>/jobsvc.key (root's, 0600), made at the first start. */
static int prepare_dir_and_key(tessd_t *d, tsl_error_t *err)
{
    char path[PATH_MAX];
    tessd_pathf(path, sizeof path, "%s/" TSD_SVC_DIR, d->data_dir);
    if (mkdir(path, 0711) < 0 && errno != EEXIST)
        return tsl_errprintf(err, "%s: %s", path, strerror(errno));
    struct stat st;
    if (lstat(path, &st) < 0)
        return tsl_errprintf(err, "%s: %s", path, strerror(errno));
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 07777) != 0711) {
        if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || chmod(path, 0711) < 0)
            return tsl_errprintf(err, "%s: must be a directory of tesseld's user, mode 0711", path);
    }
    tessd_pathf(path, sizeof path, "%s/jobsvc.key", d->data_dir);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
        uint8_t k[TSD_SVC_COOKIE_KEY];
        if (getrandom(k, sizeof k, 0) != (ssize_t)sizeof k)
            return tsl_errprintf(err, "random bytes: %s", strerror(errno));
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 || write(fd, k, sizeof k) != (ssize_t)sizeof k || fsync(fd) < 0) {
            int e = errno;
            if (fd >= 0)
                close(fd);
            unlink(path);
            return tsl_errprintf(err, "%s: %s", path, strerror(e));
        }
        close(fd);
        fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (fd < 0)
        return tsl_errprintf(err, "%s: %s", path, strerror(errno));
    ssize_t n = -1;
    if (fstat(fd, &st) == 0 && st.st_uid == geteuid() && !(st.st_mode & 077))
        n = read(fd, d->svc_key, sizeof d->svc_key);
    close(fd);
    if (n != (ssize_t)sizeof d->svc_key)
        return tsl_errprintf(err, "%s: must hold %zu bytes, be tesseld's user's and mode 0600",
                             path, sizeof d->svc_key);
    return 0;
}

/* At the start, after the running jobs were recovered: the sockets in <data>/jobsvc of jobs
 * that do not run (their shim was killed with SIGKILL and could not remove them: nothing
 * listens there).  Names that are not a service's socket are left alone. */
static void sweep(tessd_t *d)
{
    char dir[PATH_MAX];
    tessd_pathf(dir, sizeof dir, "%s/" TSD_SVC_DIR, d->data_dir);
    DIR *dp = opendir(dir);
    if (!dp)
        return;
    struct dirent *e;
    pthread_mutex_lock(&d->lock);
    while ((e = readdir(dp))) {
        long long id;
        char name[TSD_SVC_NAME_MAX + 2], path[PATH_MAX];
        int n = 0;
        if (sscanf(e->d_name, "j%lld-%17[a-z0-9-].sock%n", &id, name, &n) != 2 ||
            e->d_name[n] != '\0' || id <= 0 || tessd_run_find(d, id) ||
            tsd_svc_sock(d->data_dir, id, name, path, sizeof path) < 0)
            continue;
        if (tagent_fwd_unlink(path) == 0)
            tessd_log("jobsvc: %s removed (job %lld does not run)", path, id);
    }
    pthread_mutex_unlock(&d->lock);
    closedir(dp);
}

static void h_service(thttp_req_t *req, thttp_reply_t *rep, void *ctx);
static void svc_headers(thttp_req_t *req, thttp_reply_t *rep, void *ctx);

/* Every method, on every path: the Host header names the service (h_service). */
#define ROUTES(m)                                                                                  \
    {                                                                                              \
        m, "/{*}", h_service                                                                       \
    }
static const thttp_route_t svc_routes[] = {
    ROUTES("GET"),   ROUTES("HEAD"),   ROUTES("POST"),    ROUTES("PUT"),
    ROUTES("PATCH"), ROUTES("DELETE"), ROUTES("OPTIONS"),
};

int tessd_jobsvc_start(tessd_t *d, const char *listen, unsigned max_conn, unsigned timeout_s,
                       tsl_error_t *err)
{
    if (prepare_dir_and_key(d, err) < 0)
        return -1;
    sweep(d);
    const char *colon = strrchr(listen, ':');
    char host[64];
    snprintf(host, sizeof host, "%.*s", (int)(colon - listen), listen);
    if (strcmp(host, "localhost") == 0)
        snprintf(host, sizeof host, "127.0.0.1");
    /* A port only root may bind: never free for another account, not even while tesseld
     * restarts, when a server of theirs there would be the services' own origin to every
     * browser (a service worker it registers outlives it: the third review's R1). */
    unsigned long port = strtoul(colon + 1, NULL, 10);
    unsigned long unpriv = 1024;
    FILE *f = fopen("/proc/sys/net/ipv4/ip_unprivileged_port_start", "re");
    if (f) {
        if (fscanf(f, "%lu", &unpriv) != 1)
            unpriv = 1024;
        fclose(f);
    }
    if (port == 0 || port >= unpriv) {
        char range[48];
        if (unpriv > 1)
            snprintf(range, sizeof range, "1 to %lu", unpriv - 1);
        else
            snprintf(range, sizeof range, "none here: any account may bind any port");
        tsl_errprintf(err,
                      "port %lu: the services need a port only root may bind (%s; "
                      "net.ipv4.ip_unprivileged_port_start is %lu), or another account could "
                      "take it while tesseld restarts and serve its own pages at the services' "
                      "addresses (docs/job-services.md)",
                      port, range, unpriv);
        errno = EACCES;
        return -1;
    }
    if (!tsd_svc_port_browser_ok((unsigned)port)) {
        tsl_errprintf(err,
                      "port %lu: browsers refuse to fetch from it (a restricted port: "
                      "net::ERR_UNSAFE_PORT in Chromium), and the services are for browsers; "
                      "pick another, e.g. 747",
                      port);
        errno = EINVAL;
        return -1;
    }
    thttp_config_t hc = {
        .host = host,
        .port = (uint16_t)port,
        /* A notebook saves through PUT of the whole file as JSON; uploads of big files come
         * in chunks of 1 MiB (Jupyter's own).  Bodies are read whole, up to this. */
        .max_body = SVC_BODY_MAX,
        .max_body_total = SVC_BODIES_MAX,
        .max_body_per_key = SVC_BODIES_PER_USER,
        .conn_memory = SVC_CONN_MEMORY,
        .limit_per_uid = true,
        .on_headers = svc_headers,
        .max_connections = max_conn,
        .max_per_client = SVC_CONN_PER_UID,
        .timeout_s = timeout_s,
        .routes = svc_routes,
        .nroutes = sizeof svc_routes / sizeof svc_routes[0],
        .ctx = d,
        .keep_raw_uri = true,
    };
    if (!(d->http_svc = thttp_start(&hc, err)))
        return -1;
    d->svc_port = thttp_port(d->http_svc);
    /* A browser resolves a name under localhost to ::1 as well as 127.0.0.1, and tries ::1
     * first: the same port there too, or any account could listen on [::1]:PORT and be sent
     * the services' tickets and cookies (worthless there, peer_is, but the user's pages and
     * what they type would be its).  Where this machine has no IPv6 loopback, nobody has. */
    size_t dl = strlen(d->svc_domain);
    if (strcmp(d->svc_domain, "localhost") == 0 ||
        (dl > 10 && strcmp(d->svc_domain + dl - 10, ".localhost") == 0)) {
        hc.host = "::1";
        hc.port = d->svc_port;
        hc.share_bodies = d->http_svc; /* one user's bodies bounded on both together */
        tsl_error_t e6;
        if (!(d->http_svc6 = thttp_start(&hc, &e6))) {
            if (errno != EADDRNOTAVAIL && errno != EAFNOSUPPORT) {
                tsl_errprintf(err,
                              "%s (the services listen on [::1]:%u beside %s:%u: names under "
                              "localhost lead there too)",
                              e6.text, (unsigned)d->svc_port, host, (unsigned)d->svc_port);
                thttp_stop(d->http_svc);
                d->http_svc = NULL;
                return -1;
            }
            tessd_log("services: no IPv6 loopback here (%s): on 127.0.0.1 alone", e6.text);
        }
    }
    snprintf(d->svc_base, sizeof d->svc_base, "http://%s:%u", host, (unsigned)d->svc_port);
    return 0;
}

/* ---- who may: the ticket, the cookie, the job ---------------------------------------------- */

/* With d->lock held: job id exists, runs, has the service name, and user is its owner or an
 * admin.  0, or an HTTP status (404, 403, 409) with rep filled. */
static int check_access(tessd_t *d, int64_t id, const char *name, const char *user, bool admin,
                        thttp_reply_t *rep)
{
    tstore_job_t j;
    tsl_error_t err;
    if (tstore_job_get(d->store, id, &j, &err) < 0) {
        if (errno == ENOENT)
            thttp_error(rep, 404, "not_found", NULL, "no job %lld", (long long)id);
        else
            api_store_failure(rep, "job", &err);
        return rep->status;
    }
    int rc = 0;
    json_t *a = j.services_json ? json_loads(j.services_json, 0, NULL) : NULL;
    bool has = false;
    size_t i;
    json_t *o;
    json_array_foreach(a, i, o) has |=
        json_is_string(json_object_get(o, "name")) &&
        strcmp(json_string_value(json_object_get(o, "name")), name) == 0;
    json_decref(a);
    if (strcmp(j.user, user) != 0 && !admin) {
        thttp_error(rep, 403, "forbidden", NULL,
                    "job %lld is %s's: only its owner and admins may open its services (you are "
                    "'%s')",
                    (long long)id, j.user, user);
        rc = 403;
    } else if (!has) {
        thttp_error(rep, 404, "not_found", NULL, "job %lld has no service '%s'", (long long)id,
                    name);
        rc = 404;
    } else if (j.state == TSTORE_PENDING) {
        thttp_error(rep, 409, "not_started", NULL, "job %lld has not started yet", (long long)id);
        rc = 409;
    } else if (j.state != TSTORE_RUNNING) {
        thttp_error(rep, 409, "finished", NULL, "job %lld has finished (%s)", (long long)id,
                    tstore_state_name(j.state));
        rc = 409;
    }
    tstore_job_clear(&j);
    return rc;
}

/* Whether user is an admin now (lock held). */
static bool is_admin(tessd_t *d, const char *user)
{
    tstore_user_t u;
    tsl_error_t err;
    if (tstore_user_get(d->store, user, &u, &err) < 0)
        return false;
    return strcmp(u.role, "admin") == 0;
}

/* POST /v1/jobs/{id}/services/{name}/ticket: a ticket for the owner's (or an admin's) browser,
 * and the URL that redeems it on the services listener. */
void api_jobs_service_ticket(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who))
        return;
    int64_t id;
    const char *name = req->params[1];
    char t[TSD_TICKET_LEN + 1], url[256];
    uint8_t rnd[32];
    if (api_batch_resolve_id(d, req->params[0], &id) < 0) {
        thttp_error(rep, 404, "not_found", NULL, "no job '%s'", req->params[0]);
        goto out;
    }
    if (!tsd_svc_name_valid(name)) {
        thttp_error(rep, 404, "not_found", NULL, "job %lld has no service '%s'", (long long)id,
                    name);
        goto out;
    }
    if (check_access(d, id, name, who.user, who.admin, rep) != 0)
        goto out;
    if (!d->http_svc || tessd_jobsvc_url(d, id, name, url, sizeof url) < 0) {
        thttp_error(rep, 409, "no_services_listener", NULL,
                    "tesseld serves no job services (started without --services-listen)");
        goto out;
    }
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
        thttp_error(rep, 500, "internal", NULL, "random bytes: %s", strerror(errno));
        goto out;
    }
    if (tsd_ticket_issue_svc(&tickets, mono_ms(), rnd, id, name, who.user, who.admin, t) < 0) {
        thttp_error(rep, 429, "too_many_tickets", NULL,
                    "too many service tickets waiting to be used (at most %d a user, each good "
                    "for %d s)",
                    TSD_TICKET_PER_USER, TSD_TICKET_TTL_MS / 1000);
        goto out;
    }
    size_t ul = strlen(url);
    snprintf(url + ul, sizeof url - ul, "?" TICKET_PARAM "=%s", t);
    rep->status = 201;
    rep->json = json_pack("{s:s, s:I, s:s, s:i, s:s}", "ticket", t, "job", (json_int_t)id,
                          "service", name, "expires_in_s", TSD_TICKET_TTL_MS / 1000, "url", url);
out:
    api_leave(d);
}

/* ---- plain requests: libcurl -------------------------------------------------------------- */

typedef struct {
    tessd_t *d;
    CURL *h;
    CURLM *m;
    struct curl_slist *hdrs;
    char buf[SVC_BUF];
    size_t len, off;
    bool paused, done, head_done;
    CURLcode result;
    char user[TSTORE_NAME_MAX + 1];
    int64_t job;
    char ctype[160];
    char *body; /* the request's body (libhttp's copy is gone once the handler returns) */
} px_t;

static void give_conn(const char *user)
{
    pthread_mutex_lock(&svc_mu);
    tsd_termconn_give(&conns, user);
    pthread_mutex_unlock(&svc_mu);
}

static void px_free(void *arg)
{
    px_t *p = arg;
    if (!p)
        return;
    if (p->m && p->h)
        curl_multi_remove_handle(p->m, p->h);
    curl_easy_cleanup(p->h);
    curl_multi_cleanup(p->m);
    curl_slist_free_all(p->hdrs);
    free(p->body);
    if (p->user[0]) {
        give_conn(p->user);
        touch(p->job, 0);
    }
    free(p);
}

static size_t px_write(char *data, size_t size, size_t n, void *arg)
{
    px_t *p = arg;
    size_t bytes = size * n;
    if (p->len + bytes > sizeof p->buf) {
        p->paused = true;
        return CURL_WRITEFUNC_PAUSE; /* delivered again once px_read emptied the buffer */
    }
    memcpy(p->buf + p->len, data, bytes);
    p->len += bytes;
    return bytes;
}

static size_t px_header(char *data, size_t size, size_t n, void *arg)
{
    px_t *p = arg;
    size_t bytes = size * n;
    /* The end of a head: a line that is only CR LF.  A 1xx head (100 Continue) is followed by
     * the real one; Expect is never sent, so none comes. */
    long code = 0;
    if (bytes <= 2 && (bytes == 0 || data[0] == '\r' || data[0] == '\n') &&
        curl_easy_getinfo(p->h, CURLINFO_RESPONSE_CODE, &code) == CURLE_OK && code >= 200)
        p->head_done = true;
    return bytes;
}

/* One turn of libcurl: up to wait_ms for something to happen. */
static void px_drive(px_t *p, int wait_ms)
{
    int running = 0;
    curl_multi_perform(p->m, &running);
    if (!running) {
        int left;
        CURLMsg *msg;
        while ((msg = curl_multi_info_read(p->m, &left)))
            if (msg->msg == CURLMSG_DONE)
                p->result = msg->data.result;
        p->done = true;
        return;
    }
    /* Bytes for the client, or the head, came: no wait (a paused transfer would make the
     * poll wait its whole time, its socket not watched). */
    if (p->len > p->off || (p->head_done && p->paused))
        return;
    curl_multi_poll(p->m, NULL, 0, wait_ms, NULL);
}

/* libhttp's stream reader: the answer's body as it comes. */
static ssize_t px_read(void *arg, uint64_t pos, char *out, size_t max)
{
    px_t *p = arg;
    (void)pos;
    for (;;) {
        if (p->len > p->off) {
            size_t n = p->len - p->off < max ? p->len - p->off : max;
            memcpy(out, p->buf + p->off, n);
            p->off += n;
            if (p->off == p->len) {
                p->off = p->len = 0;
                if (p->paused) {
                    p->paused = false;
                    curl_easy_pause(p->h, CURLPAUSE_CONT);
                }
            }
            touch(p->job, 0);
            return (ssize_t)n;
        }
        if (p->done)
            return p->result == CURLE_OK ? THTTP_STREAM_END : THTTP_STREAM_ERROR;
        if (atomic_load(&p->d->stopping))
            return THTTP_STREAM_ERROR;
        px_drive(p, 1000);
    }
}

/* Hop-by-hop headers (RFC 9110, 7.6.1) and those libcurl or MHD write themselves: never
 * passed on. */
static bool hop_header(const char *name)
{
    static const char *const hop[] = {
        "Connection",         "Keep-Alive", "Proxy-Connection", "TE",     "Trailer",
        "Transfer-Encoding",  "Upgrade",    "Content-Length",   "Expect", "Proxy-Authorization",
        "Proxy-Authenticate", NULL};
    for (size_t i = 0; hop[i]; i++)
        if (strcasecmp(name, hop[i]) == 0)
            return true;
    return false;
}

typedef struct {
    struct curl_slist *l;
    char *cookie; /* the client's cookies but tesseld's, "k=v; k2=v2" */
    size_t cookie_len;
    bool fail, ws;
} hdr_acc_t;

static enum MHD_Result add_cookie(void *cls, enum MHD_ValueKind kind, const char *k, const char *v)
{
    hdr_acc_t *a = cls;
    (void)kind;
    if (strcmp(k, TSD_SVC_COOKIE) == 0)
        return MHD_YES;
    size_t n = strlen(k) + (v ? strlen(v) : 0) + 4;
    char *c = realloc(a->cookie, a->cookie_len + n);
    if (!c) {
        a->fail = true;
        return MHD_NO;
    }
    a->cookie = c;
    a->cookie_len +=
        (size_t)sprintf(c + a->cookie_len, "%s%s=%s", a->cookie_len ? "; " : "", k, v ? v : "");
    return MHD_YES;
}

static enum MHD_Result add_header(void *cls, enum MHD_ValueKind kind, const char *k, const char *v)
{
    hdr_acc_t *a = cls;
    (void)kind;
    if (hop_header(k) || strcasecmp(k, "Cookie") == 0)
        return MHD_YES;
    /* A WebSocket goes through uncompressed and without a subprotocol (the 101 that tesseld
     * writes names neither). */
    if (a->ws && (strcasecmp(k, "Sec-WebSocket-Extensions") == 0 ||
                  strcasecmp(k, "Sec-WebSocket-Protocol") == 0))
        return MHD_YES;
    char *line;
    if (asprintf(&line, "%s: %s", k, v ? v : "") < 0) {
        a->fail = true;
        return MHD_NO;
    }
    struct curl_slist *l = curl_slist_append(a->l, line);
    free(line);
    if (!l) {
        a->fail = true;
        return MHD_NO;
    }
    a->l = l;
    return MHD_YES;
}

/* The client's headers to pass on (a->l) and its cookies but tesseld's (a->cookie, or NULL).
 * false when out of memory. */
static bool collect_headers(thttp_req_t *req, hdr_acc_t *a)
{
    struct MHD_Connection *c = req->conn;
    MHD_get_connection_values(c, MHD_HEADER_KIND, add_header, a);
    MHD_get_connection_values(c, MHD_COOKIE_KIND, add_cookie, a);
    return !a->fail;
}

static void unreachable(thttp_reply_t *rep, int64_t id, const char *name, const char *why)
{
    thttp_error(rep, 503, "service_unavailable", NULL,
                "job %lld's service '%s' does not answer (%s): it may not listen yet on its port "
                "in the job; retry in a few seconds",
                (long long)id, name, why);
    snprintf(rep->extra_name, sizeof rep->extra_name, "Retry-After");
    snprintf(rep->extra_value, sizeof rep->extra_value, SVC_RETRY_S);
}

static void proxy_plain(tessd_t *d, thttp_req_t *req, thttp_reply_t *rep, px_t *p, const char *sock,
                        const char *name)
{
    hdr_acc_t a = {0};
    char *url = NULL;
    if (!collect_headers(req, &a) || asprintf(&url, "http://localhost%s", req->raw_uri) < 0) {
        url = NULL;
        thttp_error(rep, 500, "internal", NULL, "out of memory");
        goto fail;
    }
    p->hdrs = a.l;
    a.l = NULL;
    struct curl_slist *l = curl_slist_append(p->hdrs, "Expect:");
    if (l)
        p->hdrs = l;
    if (!(p->h = curl_easy_init()) || !(p->m = curl_multi_init()) || !l) {
        thttp_error(rep, 500, "internal", NULL, "out of memory");
        goto fail;
    }
    curl_easy_setopt(p->h, CURLOPT_URL, url);
    curl_easy_setopt(p->h, CURLOPT_UNIX_SOCKET_PATH, sock);
    curl_easy_setopt(p->h, CURLOPT_PROTOCOLS_STR, "http");
    curl_easy_setopt(p->h, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(p->h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(p->h, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(p->h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(p->h, CURLOPT_CONNECTTIMEOUT_MS, (long)SVC_HEAD_MS);
    curl_easy_setopt(p->h, CURLOPT_HTTPHEADER, p->hdrs);
    if (a.cookie)
        curl_easy_setopt(p->h, CURLOPT_COOKIE, a.cookie);
    curl_easy_setopt(p->h, CURLOPT_WRITEFUNCTION, px_write);
    curl_easy_setopt(p->h, CURLOPT_WRITEDATA, p);
    curl_easy_setopt(p->h, CURLOPT_HEADERFUNCTION, px_header);
    curl_easy_setopt(p->h, CURLOPT_HEADERDATA, p);
    if (strcmp(req->method, "HEAD") == 0) {
        curl_easy_setopt(p->h, CURLOPT_NOBODY, 1L);
    } else if (req->body_len > 0 || strcmp(req->method, "POST") == 0 ||
               strcmp(req->method, "PUT") == 0 || strcmp(req->method, "PATCH") == 0) {
        if (req->body_len > 0 && !(p->body = malloc(req->body_len))) {
            thttp_error(rep, 500, "internal", NULL, "out of memory");
            goto fail;
        }
        if (req->body_len)
            memcpy(p->body, req->body, req->body_len);
        curl_easy_setopt(p->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
        curl_easy_setopt(p->h, CURLOPT_POSTFIELDS, p->body ? p->body : "");
    }
    if (strcmp(req->method, "GET") != 0 && strcmp(req->method, "HEAD") != 0)
        curl_easy_setopt(p->h, CURLOPT_CUSTOMREQUEST, req->method);
    curl_multi_add_handle(p->m, p->h);
    while (!p->head_done && !p->done && !atomic_load(&d->stopping))
        px_drive(p, 1000);
    if (!p->head_done) {
        unreachable(rep, p->job, name,
                    p->done ? curl_easy_strerror(p->result) : "tesseld is stopping");
        goto fail;
    }
    long code = 502;
    curl_easy_getinfo(p->h, CURLINFO_RESPONSE_CODE, &code);
    rep->status = (int)code;
    struct curl_header *hh, *prev = NULL;
    while ((hh = curl_easy_nextheader(p->h, CURLH_HEADER, -1, prev))) {
        prev = hh;
        if (hop_header(hh->name) || strcasecmp(hh->name, "Date") == 0)
            continue;
        if (strcasecmp(hh->name, "Content-Type") == 0) {
            snprintf(p->ctype, sizeof p->ctype, "%s", hh->value);
            continue;
        }
        /* A service's cookies: never tesseld's own (it would log its browser out, or shadow
         * the cookie on a path), never with a Domain (they stay on the service's own host). */
        const char *value = hh->value;
        char *sc = NULL;
        if (strcasecmp(hh->name, "Set-Cookie") == 0) {
            size_t sl = strlen(hh->value) + 1;
            if (!(sc = malloc(sl)) || tsd_svc_set_cookie_filter(hh->value, sc, sl) != 0) {
                free(sc);
                continue;
            }
            value = sc;
        }
        int hr = thttp_reply_header(rep, hh->name, value);
        free(sc);
        if (hr < 0 && errno == ENOMEM) {
            free(rep->headers);
            rep->headers = NULL;
            rep->headers_len = 0;
            thttp_error(rep, 500, "internal", NULL, "out of memory");
            goto fail;
        }
    }
    rep->content_type = p->ctype[0] ? p->ctype : "application/octet-stream";
    rep->stream = px_read;
    rep->stream_arg = p;
    rep->stream_free = px_free;
    free(url);
    free(a.cookie);
    return;
fail:
    free(url);
    free(a.cookie);
    curl_slist_free_all(a.l);
    px_free(p);
}

/* ---- WebSockets: the handshake written to the socket, then a relay ------------------------ */

typedef struct {
    tessd_t *d;
    int up;        /* the service's socket */
    char *pending; /* bytes the service sent after its 101, for the client first */
    size_t pending_len;
    char user[TSTORE_NAME_MAX + 1];
    int64_t job;
} ws_t;

static void ws_free(void *arg)
{
    ws_t *w = arg;
    if (!w)
        return;
    if (w->up >= 0)
        close(w->up);
    free(w->pending);
    give_conn(w->user);
    touch(w->job, -1);
    free(w);
}

/* Write all of buf to fd (blocking with poll).  0, or -1. */
static int write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN) {
            struct pollfd pf = {.fd = fd, .events = POLLOUT};
            if (poll(&pf, 1, SVC_HEAD_MS) <= 0)
                return -1;
            continue;
        }
        if (n <= 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* The relay of an upgraded connection: client fd <-> the service's socket, SVC_BUF each way;
 * ends when either side ends or tesseld stops (the client reconnects to the next tesseld). */
static void ws_relay(void *arg, int fd, const char *extra, size_t extra_len)
{
    ws_t *w = arg;
    if ((extra_len && write_all(w->up, extra, extra_len) < 0) ||
        (w->pending_len && write_all(fd, w->pending, w->pending_len) < 0))
        return;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    fcntl(w->up, F_SETFL, fcntl(w->up, F_GETFL) | O_NONBLOCK);
    char *c2s = malloc(2 * SVC_BUF);
    if (!c2s)
        return;
    char *s2c = c2s + SVC_BUF;
    size_t c2s_len = 0, c2s_off = 0, s2c_len = 0, s2c_off = 0;
    bool c_eof = false, s_eof = false;
    while (!atomic_load(&w->d->stopping)) {
        struct pollfd pf[2] = {{.fd = fd}, {.fd = w->up}};
        if (!c_eof && c2s_len == 0)
            pf[0].events |= POLLIN;
        if (s2c_len > s2c_off)
            pf[0].events |= POLLOUT;
        if (!s_eof && s2c_len == 0)
            pf[1].events |= POLLIN;
        if (c2s_len > c2s_off)
            pf[1].events |= POLLOUT;
        if ((c_eof && c2s_len == 0) || (s_eof && s2c_len == 0))
            break; /* one side ended and all it sent is passed on: the WebSocket is over */
        int rc = poll(pf, 2, 1000);
        if (rc < 0 && errno != EINTR)
            break;
        if (rc <= 0)
            continue;
        if (pf[0].revents & (POLLIN | POLLHUP | POLLERR) && !c_eof && c2s_len == 0) {
            ssize_t n = read(fd, c2s, SVC_BUF);
            if (n > 0)
                c2s_len = (size_t)n, c2s_off = 0;
            else if (n == 0 || errno != EAGAIN)
                c_eof = true;
        }
        if (pf[1].revents & (POLLIN | POLLHUP | POLLERR) && !s_eof && s2c_len == 0) {
            ssize_t n = read(w->up, s2c, SVC_BUF);
            if (n > 0)
                s2c_len = (size_t)n, s2c_off = 0;
            else if (n == 0 || errno != EAGAIN)
                s_eof = true;
        }
        if (c2s_len > c2s_off) {
            ssize_t n = send(w->up, c2s + c2s_off, c2s_len - c2s_off, MSG_NOSIGNAL);
            if (n < 0 && errno != EAGAIN)
                break;
            if (n > 0 && (c2s_off += (size_t)n) == c2s_len)
                c2s_len = c2s_off = 0;
        }
        if (s2c_len > s2c_off) {
            ssize_t n = send(fd, s2c + s2c_off, s2c_len - s2c_off, MSG_NOSIGNAL);
            if (n < 0 && errno != EAGAIN)
                break;
            if (n > 0 && (s2c_off += (size_t)n) == s2c_len)
                s2c_len = s2c_off = 0;
        }
        touch(w->job, 0);
    }
    free(c2s);
}

/* A header list's lines into one request head: "METHOD URI HTTP/1.1\r\n" + lines + cookie. */
static char *ws_head(thttp_req_t *req, const hdr_acc_t *a, size_t *len)
{
    size_t n =
        strlen(req->method) + strlen(req->raw_uri) + 64 + (a->cookie ? a->cookie_len + 16 : 0);
    for (const struct curl_slist *l = a->l; l; l = l->next)
        n += strlen(l->data) + 2;
    char *h = malloc(n);
    if (!h)
        return NULL;
    size_t o = (size_t)sprintf(h, "%s %s HTTP/1.1\r\n", req->method, req->raw_uri);
    for (const struct curl_slist *l = a->l; l; l = l->next)
        o += (size_t)sprintf(h + o, "%s\r\n", l->data);
    if (a->cookie)
        o += (size_t)sprintf(h + o, "Cookie: %s\r\n", a->cookie);
    o += (size_t)sprintf(h + o, "Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n");
    *len = o;
    return h;
}

static void proxy_ws(thttp_req_t *req, thttp_reply_t *rep, ws_t *w, const char *sock,
                     const char *name)
{
    const char *key = thttp_header(req, "Sec-WebSocket-Key");
    const char *ver = thttp_header(req, "Sec-WebSocket-Version");
    if (!tsl_ws_key_valid(key) || !ver || strcmp(ver, "13") != 0) {
        thttp_error(rep, 426, "upgrade_required", NULL,
                    "a WebSocket of version 13 with a Sec-WebSocket-Key");
        ws_free(w);
        return;
    }
    hdr_acc_t a = {.ws = true};
    size_t hlen = 0;
    char *head = NULL;
    if (!collect_headers(req, &a) || !(head = ws_head(req, &a, &hlen))) {
        thttp_error(rep, 500, "internal", NULL, "out of memory");
        goto fail;
    }
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(sock) >= sizeof sa.sun_path) {
        unreachable(rep, w->job, name, "its socket's path is too long");
        goto fail;
    }
    memcpy(sa.sun_path, sock, strlen(sock) + 1);
    w->up = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct timeval tv = {.tv_sec = SVC_HEAD_MS / 1000};
    if (w->up < 0 || setsockopt(w->up, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0 ||
        setsockopt(w->up, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) < 0 ||
        connect(w->up, (struct sockaddr *)&sa, sizeof sa) < 0 || write_all(w->up, head, hlen) < 0) {
        unreachable(rep, w->job, name, strerror(errno));
        goto fail;
    }
    /* The service's answer: its head only, up to the empty line; what follows is the
     * WebSocket's first bytes. */
    char *in = malloc(SVC_HEAD_MAX + 1);
    size_t got = 0;
    char *end = NULL;
    while (in && got < SVC_HEAD_MAX && !end) {
        ssize_t n = read(w->up, in + got, SVC_HEAD_MAX - got);
        if (n <= 0)
            break;
        got += (size_t)n;
        in[got] = '\0';
        end = memmem(in, got, "\r\n\r\n", 4);
    }
    if (!in || !end) {
        free(in);
        unreachable(rep, w->job, name, got ? "no complete answer" : "no answer");
        goto fail;
    }
    if (strncmp(in, "HTTP/1.1 101 ", 13) != 0) {
        /* Its status line, for the person: the service refused the WebSocket. */
        size_t sl = strcspn(in, "\r\n");
        thttp_error(rep, 502, "service_refused", NULL,
                    "job %lld's service '%s' refused the WebSocket: %.*s", (long long)w->job, name,
                    (int)(sl < 80 ? sl : 80), in);
        free(in);
        goto fail;
    }
    size_t rest = got - (size_t)(end + 4 - in);
    if (rest) {
        w->pending = malloc(rest);
        if (!w->pending) {
            free(in);
            thttp_error(rep, 500, "internal", NULL, "out of memory");
            goto fail;
        }
        memcpy(w->pending, end + 4, rest);
        w->pending_len = rest;
    }
    free(in);
    tv.tv_sec = 0;
    setsockopt(w->up, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(w->up, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    api_ws_upgrade(rep, key, ws_relay, w, ws_free);
    free(head);
    free(a.cookie);
    curl_slist_free_all(a.l);
    return;
fail:
    free(head);
    free(a.cookie);
    curl_slist_free_all(a.l);
    ws_free(w);
}

/* ---- the handler -------------------------------------------------------------------------- */

/* Whether a header's value holds word as one of its comma-separated tokens. */
static bool has_token(const char *v, const char *word)
{
    size_t wl = strlen(word);
    while (v && *v) {
        v += strspn(v, " \t,");
        size_t n = strcspn(v, ",");
        size_t t = n;
        while (t > 0 && (v[t - 1] == ' ' || v[t - 1] == '\t'))
            t--;
        if (t == wl && strncasecmp(v, word, wl) == 0)
            return true;
        v += n;
    }
    return false;
}

/* A header's name and value: refused when either holds CR or LF (a bare CR is kept by MHD
 * in a value; written raw into a WebSocket's handshake it would end the line early and add a
 * header of the client's choosing upstream). */
static enum MHD_Result find_crlf(void *cls, enum MHD_ValueKind kind, const char *k, const char *v)
{
    bool *bad = cls;
    (void)kind;
    if ((k && strpbrk(k, "\r\n")) || (v && strpbrk(v, "\r\n"))) {
        *bad = true;
        return MHD_NO;
    }
    return MHD_YES;
}

typedef struct {
    const uint8_t *key;
    int64_t id;
    const char *name;
    long long now;
    char *user;
    size_t user_len;
    bool seen, ok;
} cookie_find_t;

/* Every cookie named tesseld's: a browser may hold more than one of that name (another
 * host's page under the same domain can toss one with Domain=DOMAIN and a longer Path, which
 * comes first); the request is the user's of the first that is valid for this service. */
static enum MHD_Result find_cookie(void *cls, enum MHD_ValueKind kind, const char *k, const char *v)
{
    cookie_find_t *f = cls;
    (void)kind;
    if (!k || strcmp(k, TSD_SVC_COOKIE) != 0)
        return MHD_YES;
    f->seen = true;
    if (tsd_svc_cookie_check(f->key, f->id, f->name, v, f->now, f->user, f->user_len)) {
        f->ok = true;
        return MHD_NO;
    }
    return MHD_YES;
}

/* Whether req's connection comes from a process of user's own account on this machine (or of
 * root, or of tesseld's account): a service's session (its cookie, its ticket) is good only
 * there.  A cookie is sent by a browser to every port of its host name, and a ticket URL or a
 * cookie may reach another user's listener on this machine (docs/job-services.md, "Whose
 * connection"): what the kernel says of the socket at the other end holds either way.  The
 * listener is on loopback alone (tessd_jobsvc_start), so every true client is a process here.
 * 0, or the status (403, 500) with rep filled. */
static int peer_is(thttp_req_t *req, thttp_reply_t *rep, const char *user)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    uid_t uid = 0;
    int rc = ci ? tsl_tcp_peer_owner(ci->connect_fd, &uid) : (errno = EBADF, -1);
    if (rc < 0) {
        thttp_error(rep, 500, "internal", NULL,
                    "cannot tell which account this connection comes from: %s", strerror(errno));
        return rep->status;
    }
    if (rc == 0) {
        thttp_error(rep, 403, "forbidden", NULL,
                    "this connection comes from no process of this machine that holds it: the "
                    "services are served to browsers on this machine (from another, through "
                    "ssh -L; docs/job-services.md)");
        return rep->status;
    }
    if (uid == 0 || uid == geteuid())
        return 0;
    tessd_pw_t pw;
    char name[TSTORE_NAME_MAX + 1] = "", why[256];
    const char *account = tessd_getpwuid(uid, &pw) == 1 ? pw.name : NULL;
    int kind = tessd_local_name(uid, geteuid(), account, name, sizeof name, why, sizeof why);
    if (kind == 1 || (kind == 0 && strcmp(name, user) == 0))
        return 0;
    thttp_error(rep, 403, "forbidden", NULL,
                "this session is %s's, and this connection comes from a process of uid %u (%s): "
                "a service's session is good only from its own user's processes (a browser of "
                "theirs, or ssh -L as them)",
                user, (unsigned)uid, account ? account : "no account");
    return rep->status;
}

/* The bytes of a request's Cookie headers (cls: size_t). */
static enum MHD_Result cookie_bytes(void *cls, enum MHD_ValueKind kind, const char *k,
                                    const char *v)
{
    (void)kind;
    if (k && v && strcasecmp(k, "Cookie") == 0)
        *(size_t *)cls += strlen(v);
    return MHD_YES;
}

/* What every request must pass before anything else, from its headers alone (svc_headers
 * before its body is read, h_service again after): its Host names a service (404), no header
 * holds CR or LF (400), a request that changes something or a WebSocket comes from the
 * service's own origin (403), and it has a ticket to redeem (*ticket) or a valid cookie of
 * this service (the user into user; 403).  0, or the status with rep filled. */
static int admit(tessd_t *d, thttp_req_t *req, thttp_reply_t *rep, int64_t *id, char *name,
                 char user[TSTORE_NAME_MAX + 1], const char **ticket)
{
    const char *host = thttp_header(req, "Host");
    if (tsd_svc_host_parse(host, d->svc_domain, id, name) < 0) {
        thttp_error(rep, 404, "not_found", NULL,
                    "no such service: a service is at http://jID-NAME.%s:%u/ (tessel open "
                    "gives its URL)",
                    d->svc_domain, (unsigned)d->svc_port);
        return rep->status;
    }
    bool bad = !req->raw_uri || strpbrk(req->raw_uri, "\r\n") != NULL;
    if (!bad)
        MHD_get_connection_values(req->conn, MHD_HEADER_KIND, find_crlf, &bad);
    if (bad) {
        thttp_error(rep, 400, "invalid_header", NULL,
                    "a header or the URL holds a CR or LF byte, which none may hold");
        return rep->status;
    }
    const char *up = thttp_header(req, "Upgrade");
    bool ws = up && has_token(up, "websocket");
    const char *why = tsd_svc_request_refused(req->method, ws, thttp_header(req, "Sec-Fetch-Site"),
                                              thttp_header(req, "Origin"), host);
    if (why) {
        thttp_error(rep, 403, "cross_origin", NULL,
                    "%s: only the service's own pages may send it this %s", why,
                    ws ? "WebSocket" : "request");
        return rep->status;
    }
    /* Cookies by the hundred KB (tossed by a page on another port of this host name): cleared
     * before anything, a ticket not spent (the same URL works once they are gone). */
    size_t cookies = 0;
    MHD_get_connection_values(req->conn, MHD_HEADER_KIND, cookie_bytes, &cookies);
    if (cookies > SVC_COOKIES_MAX) {
        thttp_error(rep, 431, "too_many_cookies", NULL,
                    "this browser sends %zu bytes of cookies to this service (most set by pages "
                    "of other ports under its name): cleared; open it again (tessel open %lld %s)",
                    cookies, (long long)*id, name);
        snprintf(rep->extra_name, sizeof rep->extra_name, "Clear-Site-Data");
        snprintf(rep->extra_value, sizeof rep->extra_value, "\"cookies\"");
        return rep->status;
    }
    /* A ticket is redeemed by a navigation (GET) without a body: anything else needs the
     * cookie, so a ticket, true or not, never lets a body in before authentication. */
    *ticket = strcmp(req->method, "GET") == 0 ? thttp_query(req, TICKET_PARAM) : NULL;
    if (*ticket) {
        const char *cl = thttp_header(req, "Content-Length");
        if ((cl && strcmp(cl, "0") != 0) || thttp_header(req, "Transfer-Encoding")) {
            thttp_error(rep, 400, "invalid_request", NULL, "a ticket's URL takes no body");
            return rep->status;
        }
        return 0;
    }
    cookie_find_t f = {.key = d->svc_key,
                       .id = *id,
                       .name = name,
                       .now = (long long)time(NULL),
                       .user = user,
                       .user_len = TSTORE_NAME_MAX + 1};
    MHD_get_connection_values(req->conn, MHD_COOKIE_KIND, find_cookie, &f);
    if (!f.ok) {
        thttp_error(rep, 403, "forbidden", NULL,
                    "%s: open it with a new URL from `tessel open %lld %s` or the console",
                    f.seen ? "this session is not valid for this service (or has expired)"
                           : "no session for this service",
                    (long long)*id, name);
        return rep->status;
    }
    return peer_is(req, rep, user);
}

/* libhttp's on_headers: admit before the body is read; a refused upload is never buffered. */
static void svc_headers(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    int64_t id;
    char name[TSD_SVC_NAME_MAX + 1], user[TSTORE_NAME_MAX + 1];
    const char *ticket;
    /* Admitted with a cookie: its body counts toward the user's share of the bodies held. */
    if (admit(ctx, req, rep, &id, name, user, &ticket) == 0 && !ticket)
        snprintf(rep->body_key, sizeof rep->body_key, "%s", user);
}

static void h_service(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    int64_t id;
    char name[TSD_SVC_NAME_MAX + 1], user[TSTORE_NAME_MAX + 1];
    const char *ticket;
    bool admin;
    if (admit(d, req, rep, &id, name, user, &ticket) != 0)
        return;
    if (atomic_load(&d->stopping)) {
        thttp_error(rep, 503, "unavailable", NULL, "tesseld is shutting down");
        return;
    }
    /* A ticket: redeemed for a cookie of this host only, then its root without it. */
    if (ticket) {
        tsd_ticket_t t;
        pthread_mutex_lock(&d->lock);
        tsd_ticket_res_t r = tsd_ticket_redeem_svc(&tickets, mono_ms(), ticket, id, name, &t);
        int st =
            r == TSD_TICKET_OK ? check_access(d, id, name, t.user, is_admin(d, t.user), rep) : 403;
        pthread_mutex_unlock(&d->lock);
        if (r != TSD_TICKET_OK) {
            thttp_error(rep, 403, "bad_ticket", NULL, "%s: ask for a new URL (tessel open %lld %s)",
                        tsd_ticket_res_str(r), (long long)id, name);
            return;
        }
        /* Redeemed only by its own user's processes: a ticket URL that reached another
         * account (its listener, its log) is spent and worth nothing there. */
        if (st || peer_is(req, rep, t.user))
            return;
        char c[TSD_SVC_COOKIE_MAX], hv[TSD_SVC_COOKIE_MAX + 160];
        if (tsd_svc_cookie_make(d->svc_key, id, name, t.user,
                                (long long)time(NULL) + TSD_SVC_COOKIE_TTL_S, c) < 0) {
            thttp_error(rep, 500, "internal", NULL, "no cookie for user '%s'", t.user);
            return;
        }
        /* No Domain attribute: the browser sends it to this host alone. */
        snprintf(hv, sizeof hv, TSD_SVC_COOKIE "=%s; Path=/; Max-Age=%d; HttpOnly; SameSite=Strict",
                 c, TSD_SVC_COOKIE_TTL_S);
        if (thttp_reply_header(rep, "Set-Cookie", hv) < 0) {
            thttp_error(rep, 500, "internal", NULL, "out of memory");
            return;
        }
        /* Then the service's root, by a page of this host that goes there itself: the
         * ticket URL came from another site (the console, a terminal), and a browser does not
         * send a SameSite=Strict cookie along a redirect of a navigation that another site
         * started; a navigation that this host's own page starts is same-site. */
        static const char page[] =
            "<!DOCTYPE html><html><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"refresh\" content=\"0; url=/\"><title>tessel</title></head>"
            "<body><p><a href=\"/\">Open the service</a></p></body></html>\n";
        if (thttp_reply_header(rep, "Cache-Control", "no-store") < 0 ||
            !(rep->text = strdup(page))) {
            thttp_error(rep, 500, "internal", NULL, "out of memory");
            return;
        }
        rep->text_len = sizeof page - 1;
        rep->content_type = "text/html; charset=utf-8";
        rep->status = 200;
        return;
    }
    pthread_mutex_lock(&d->lock);
    admin = is_admin(d, user);
    int st = check_access(d, id, name, user, admin, rep);
    pthread_mutex_unlock(&d->lock);
    if (st)
        return;
    char sock[PATH_MAX];
    if (tsd_svc_sock(d->data_dir, id, name, sock, sizeof sock) < 0) {
        thttp_error(rep, 500, "internal", NULL, "job %lld's service socket: %s", (long long)id,
                    strerror(errno));
        return;
    }
    /* A connection held: counted for the user and in all. */
    pthread_mutex_lock(&svc_mu);
    tsd_termconn_res_t cr = tsd_termconn_take(&conns, user, SVC_PER_USER, d->term_max);
    pthread_mutex_unlock(&svc_mu);
    if (cr != TSD_TERMCONN_OK) {
        if (cr == TSD_TERMCONN_USER_FULL)
            thttp_error(rep, 429, "too_many_connections", NULL,
                        "you ('%s') hold %d connections to job services already", user,
                        SVC_PER_USER);
        else
            thttp_error(rep, 503, "too_many_connections", NULL,
                        "tesseld holds %u connections to job services, its most (half of "
                        "--max-connections): try again later",
                        d->term_max);
        snprintf(rep->extra_name, sizeof rep->extra_name, "Retry-After");
        snprintf(rep->extra_value, sizeof rep->extra_value, SVC_RETRY_S);
        return;
    }
    touch(id, 0);
    const char *up = thttp_header(req, "Upgrade");
    if (up && has_token(up, "websocket") && strcmp(req->method, "GET") == 0) {
        ws_t *w = calloc(1, sizeof *w);
        if (!w) {
            give_conn(user);
            thttp_error(rep, 500, "internal", NULL, "out of memory");
            return;
        }
        *w = (ws_t){.d = d, .up = -1, .job = id};
        snprintf(w->user, sizeof w->user, "%s", user);
        touch(id, +1); /* ws_free takes it back */
        proxy_ws(req, rep, w, sock, name);
        return;
    }
    px_t *p = calloc(1, sizeof *p);
    if (!p) {
        give_conn(user);
        thttp_error(rep, 500, "internal", NULL, "out of memory");
        return;
    }
    p->d = d;
    p->job = id;
    snprintf(p->user, sizeof p->user, "%s", user);
    proxy_plain(d, req, rep, p, sock, name);
}

/* ---- the idle rule (--interactive-idle) ------------------------------------------------------ */

/* How often the rule looks (the idle time is minutes; a few seconds late is nothing). */
#define IDLE_CHECK_MS 5000
/* Who cancelled, as the job's end says ("cancelled by idle-timeout"). */
#define IDLE_BY "idle-timeout"

/* tsd_svc_act_prune's test: whether job runs (d->lock held). */
static bool runs(void *ctx, int64_t job)
{
    return tessd_run_find(ctx, job) != NULL;
}

void tessd_jobsvc_idle_pass(tessd_t *d)
{
    static int64_t last_check;
    int64_t now = tessd_now_ms();
    if (now - last_check < IDLE_CHECK_MS)
        return;
    last_check = now;
    /* The activity of jobs that no longer run is dropped (idle rule on or off): the table
     * holds the running jobs with services at most. */
    pthread_mutex_lock(&svc_mu);
    tsd_svc_act_prune(&acts, runs, d);
    pthread_mutex_unlock(&svc_mu);
    if (d->interactive_idle_ms <= 0)
        return;
    for (size_t i = 0; i < d->nruns; i++) {
        tessd_run_t *r = &d->runs[i];
        if (r->cancel_ms || r->timeout_ms)
            continue;
        tstore_job_t j;
        tsl_error_t err;
        if (tstore_job_get(d->store, r->id, &j, &err) < 0)
            continue;
        /* Interactive work: web services, or a terminal (their connections touch the table). */
        bool svc = j.services_json != NULL, tty = j.tty;
        tstore_job_clear(&j);
        if (!svc && !tty)
            continue;
        pthread_mutex_lock(&svc_mu);
        bool idle = tsd_svc_act_idle(&acts, r->id, r->started_ms, now, d->interactive_idle_ms);
        const tsd_svc_act_t *e = tsd_svc_act_find(&acts, r->id);
        long long last = e && e->last_ms > r->started_ms ? e->last_ms : r->started_ms;
        pthread_mutex_unlock(&svc_mu);
        if (!idle)
            continue;
        tessd_log("job %lld: no request to its services, no WebSocket open and no terminal "
                  "attached for %lld s (--interactive-idle): cancelled",
                  (long long)r->id, (long long)((now - last) / 1000));
        if (tessd_cancel_running(d, r->id, IDLE_BY, &err) < 0)
            tessd_log("job %lld: idle cancel: %s", (long long)r->id, err.text);
    }
}
