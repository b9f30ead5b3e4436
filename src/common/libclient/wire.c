/* wire.c - libclient's light transport: HTTP/1.1 on a socket of our own (tesseld's local Unix
 * socket, or TCP), answers parsed by Debian's http-parser (libhttp-parser2.9: libc only).  It
 * exists so that `tessel` does not load libcurl and its 35 shared libraries to talk to a daemon
 * on this machine: docs/cli.md, "Performance". */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <http_parser.h>

#include "libclient/wire.h"
#include "tessel/client.h"

/* Bound on connecting, as libcurl's CURLOPT_CONNECTTIMEOUT_MS in client.c: tesseld is close, a
 * connect that takes longer is a dead address. */
#define WIRE_CONNECT_TIMEOUT_MS 10000
/* Bytes read at once: a log chunk or a whole ordinary answer. */
#define WIRE_READ_SIZE 16384
/* Header names and values kept for the sinks: the headers libclient reads are short. */
#define WIRE_HEADER_MAX 64

struct wire {
    char *where;     /* the URL as given, for messages */
    char *unix_path; /* NULL for TCP */
    char *host;      /* TCP: host (no brackets) and port for getaddrinfo */
    char port[8];
    char *authority; /* the Host header's value */
    char *prefix;    /* path prefix of the URL ("" or "/x") */
    int fd;          /* the persistent connection, -1 when none */
};

typedef struct {
    http_parser p;
    wire_io_t *io;
    char field[WIRE_HEADER_MAX], value[WIRE_HEADER_MAX];
    size_t flen, vlen;
    bool in_value;  /* a header's value has begun: the header is complete at the next field */
    bool done;      /* the whole answer came */
    bool cancelled; /* a sink gave up */
    size_t got;     /* bytes of the answer received */
    int fd;         /* wire_get_many: this request's connection */
} resp_t;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds left until deadline for poll(): -1 for none (deadline < 0), 0 once passed. */
static int left_ms(int64_t deadline)
{
    if (deadline < 0)
        return -1;
    int64_t l = deadline - now_ms();
    return l <= 0 ? 0 : l > INT32_MAX ? INT32_MAX : (int)l;
}

static int fail(int e, tsl_error_t *err, const char *fmt, const char *where, const char *detail)
{
    tsl_errprintf(err, fmt, where, detail);
    errno = e;
    return -1;
}

static int lost(const wire_t *w, const char *detail, tsl_error_t *err)
{
    return fail(ECONNRESET, err, "lost the connection to tesseld at %s: %s", w->where, detail);
}

static int timed_out(const wire_t *w, tsl_error_t *err)
{
    return fail(ETIMEDOUT, err, "tesseld at %s did not answer in time%s", w->where, "");
}

static int unreachable(const wire_t *w, const char *detail, tsl_error_t *err)
{
    return fail(ECONNREFUSED, err, "cannot reach tesseld at %s: %s (is it running?)", w->where,
                detail);
}

/* ---- the address ---------------------------------------------------------------------------- */

wire_t *wire_new(const char *url, tsl_error_t *err)
{
    const char *sock = tclient_url_socket(url);
    struct http_parser_url u;
    http_parser_url_init(&u);
    if (!sock) {
        /* http://HOST[:PORT][/PREFIX] only: user information, a query or a fragment go to
         * libcurl, which has always served them. */
        unsigned bad = (1u << UF_USERINFO) | (1u << UF_QUERY) | (1u << UF_FRAGMENT);
        if (strncmp(url, "http://", 7) != 0 ||
            http_parser_parse_url(url, strlen(url), 0, &u) != 0 || (u.field_set & bad) ||
            !(u.field_set & (1u << UF_HOST))) {
            errno = EINVAL;
            tsl_errprintf(err, "'%s': not a URL the light transport serves", url);
            return NULL;
        }
    }
    wire_t *w = calloc(1, sizeof *w);
    if (!w)
        goto nomem;
    w->fd = -1;
    if (!(w->where = strdup(url)))
        goto nomem;
    if (sock) {
        if (!(w->unix_path = strdup(sock)) || !(w->authority = strdup("localhost")) ||
            !(w->prefix = strdup("")))
            goto nomem;
        return w;
    }
    const char *auth = url + 7;
    size_t alen = strcspn(auth, "/");
    size_t plen = strlen(auth + alen);
    while (plen > 0 && auth[alen + plen - 1] == '/')
        plen--;
    if (!(w->authority = strndup(auth, alen)) || !(w->prefix = strndup(auth + alen, plen)) ||
        !(w->host = strndup(url + u.field_data[UF_HOST].off, u.field_data[UF_HOST].len)))
        goto nomem;
    snprintf(w->port, sizeof w->port, "%u", (u.field_set & (1u << UF_PORT)) ? u.port : 80u);
    return w;
nomem:
    wire_destroy(w);
    errno = ENOMEM;
    tsl_errprintf(err, "out of memory");
    return NULL;
}

void wire_destroy(wire_t *w)
{
    if (!w)
        return;
    if (w->fd >= 0)
        close(w->fd);
    free(w->where);
    free(w->unix_path);
    free(w->host);
    free(w->authority);
    free(w->prefix);
    free(w);
}

/* ---- connecting ----------------------------------------------------------------------------- */

static int nonblocking(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static int dial_unix(const wire_t *w, tsl_error_t *err)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(w->unix_path) >= sizeof a.sun_path)
        return unreachable(w, "socket path too long", err);
    memcpy(a.sun_path, w->unix_path, strlen(w->unix_path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return unreachable(w, strerror(errno), err);
    /* Blocking: a local connect completes at once, or waits while tesseld's backlog is full. */
    while (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        if (errno == EINTR)
            continue;
        int e = errno;
        close(fd);
        return unreachable(w, strerror(e), err);
    }
    if (nonblocking(fd) < 0) {
        int e = errno;
        close(fd);
        return unreachable(w, strerror(e), err);
    }
    return fd;
}

/* Connect to one address within deadline: the socket, or -1 with errno. */
static int dial_addr(const struct addrinfo *ai, int64_t deadline)
{
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
        if (errno != EINPROGRESS)
            goto fail;
        struct pollfd pf = {.fd = fd, .events = POLLOUT};
        int n;
        while ((n = poll(&pf, 1, left_ms(deadline))) < 0 && errno == EINTR)
            ;
        if (n == 0)
            errno = ETIMEDOUT;
        if (n <= 0)
            goto fail;
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
            goto fail;
        if (soerr) {
            errno = soerr;
            goto fail;
        }
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
fail:;
    int e = errno;
    close(fd);
    errno = e;
    return -1;
}

static int dial_tcp(const wire_t *w, int64_t deadline, tsl_error_t *err)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
    int g = getaddrinfo(w->host, w->port, &hints, &res);
    if (g != 0) {
        char d[300];
        snprintf(d, sizeof d, "could not resolve host %s: %s", w->host, gai_strerror(g));
        return unreachable(w, d, err);
    }
    int64_t cdl = now_ms() + WIRE_CONNECT_TIMEOUT_MS;
    if (deadline >= 0 && deadline < cdl)
        cdl = deadline;
    int fd = -1, e = ECONNREFUSED;
    for (const struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next)
        if ((fd = dial_addr(ai, cdl)) < 0)
            e = errno;
    freeaddrinfo(res);
    if (fd >= 0)
        return fd;
    if (e == ETIMEDOUT)
        return timed_out(w, err);
    return unreachable(w, strerror(e), err);
}

static int dial(const wire_t *w, int64_t deadline, tsl_error_t *err)
{
    return w->unix_path ? dial_unix(w, err) : dial_tcp(w, deadline, err);
}

/* ---- one exchange -----------------------------------------------------------------------------
 */

static void trim(char *s, size_t *len)
{
    while (*len > 0 && (s[*len - 1] == ' ' || s[*len - 1] == '\t'))
        (*len)--;
    s[*len] = '\0';
}

static int emit_header(resp_t *r)
{
    if (!r->in_value)
        return 0;
    r->in_value = false;
    trim(r->field, &r->flen);
    trim(r->value, &r->vlen);
    size_t skip = strspn(r->value, " \t");
    int rc =
        r->io->header ? r->io->header(r->io->arg, r->io->status, r->field, r->value + skip) : 0;
    r->flen = r->vlen = 0;
    if (rc < 0) {
        r->cancelled = true;
        return -1;
    }
    return 0;
}

static void keep(char *dst, size_t *len, const char *at, size_t n)
{
    size_t room = WIRE_HEADER_MAX - 1 - *len;
    if (n > room)
        n = room;
    memcpy(dst + *len, at, n);
    *len += n;
    dst[*len] = '\0';
}

static int on_status(http_parser *p, const char *at, size_t n)
{
    resp_t *r = p->data;
    r->io->status = p->status_code;
    return 0;
}

static int on_field(http_parser *p, const char *at, size_t n)
{
    resp_t *r = p->data;
    if (emit_header(r) < 0)
        return -1;
    keep(r->field, &r->flen, at, n);
    return 0;
}

static int on_value(http_parser *p, const char *at, size_t n)
{
    resp_t *r = p->data;
    r->in_value = true;
    keep(r->value, &r->vlen, at, n);
    return 0;
}

static int on_headers_complete(http_parser *p)
{
    resp_t *r = p->data;
    r->io->status = p->status_code;
    return emit_header(r) < 0 ? -1 : 0;
}

static int on_body(http_parser *p, const char *at, size_t n)
{
    resp_t *r = p->data;
    if (r->io->body && r->io->body(r->io->arg, r->io->status, at, n) < 0) {
        r->cancelled = true;
        return -1;
    }
    return 0;
}

static int on_message_complete(http_parser *p)
{
    resp_t *r = p->data;
    r->done = true;
    /* One answer per request: bytes after it are not ours to parse. */
    http_parser_pause(p, 1);
    return 0;
}

static const http_parser_settings settings = {
    .on_status = on_status,
    .on_header_field = on_field,
    .on_header_value = on_value,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

static void resp_init(resp_t *r, wire_io_t *io, int fd)
{
    memset(r, 0, sizeof *r);
    http_parser_init(&r->p, HTTP_RESPONSE);
    r->p.data = r;
    r->io = io;
    r->fd = fd;
    io->status = 0;
}

/* Feed n bytes (0: the end of the connection) to r's parser. */
static int feed(const wire_t *w, resp_t *r, const char *buf, size_t n, tsl_error_t *err)
{
    r->got += n;
    size_t used = http_parser_execute(&r->p, &settings, buf, n);
    enum http_errno e = HTTP_PARSER_ERRNO(&r->p);
    if (r->cancelled)
        return fail(ECANCELED, err, "stopped%s%s", "", "");
    if (r->done)
        return 0;
    if (n == 0)
        return lost(w, r->got ? "the answer was cut short" : "closed without an answer", err);
    if (e != HPE_OK || used != n)
        return fail(EPROTO, err, "talking to tesseld at %s: malformed answer: %s", w->where,
                    http_errno_description(e));
    return 0;
}

/* Read what is there on r's connection and feed it: 0, or -1 (errno, err) on failure. */
static int pump(const wire_t *w, resp_t *r, tsl_error_t *err)
{
    char buf[WIRE_READ_SIZE];
    ssize_t n = recv(r->fd, buf, sizeof buf, 0);
    if (n < 0) {
        if (errno == EAGAIN || errno == EINTR)
            return 0;
        return lost(w, strerror(errno), err);
    }
    return feed(w, r, buf, (size_t)n, err);
}

static int send_all(const wire_t *w, int fd, const char *p, size_t len, int64_t deadline,
                    tsl_error_t *err)
{
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN)
                return lost(w, strerror(errno), err);
            struct pollfd pf = {.fd = fd, .events = POLLOUT};
            int k = poll(&pf, 1, left_ms(deadline));
            if (k == 0)
                return timed_out(w, err);
            continue;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* The request's text: the caller frees it. */
static char *request_text(const wire_t *w, const char *method, const char *path,
                          const char *headers, const char *body, size_t len, size_t *outlen)
{
    char cl[48] = "";
    if (body)
        snprintf(cl, sizeof cl, "Content-Length: %zu\r\n", len);
    static const char fmt[] = "%s %s%s HTTP/1.1\r\nHost: %s\r\n%s%s\r\n";
    int hl =
        snprintf(NULL, 0, fmt, method, w->prefix, path, w->authority, headers ? headers : "", cl);
    if (hl < 0)
        return NULL;
    char *t = malloc((size_t)hl + len + 1);
    if (!t)
        return NULL;
    snprintf(t, (size_t)hl + 1, fmt, method, w->prefix, path, w->authority, headers ? headers : "",
             cl);
    if (body && len)
        memcpy(t + hl, body, len);
    *outlen = (size_t)hl + len;
    return t;
}

static int exchange(wire_t *w, const char *req, size_t reqlen, wire_io_t *io, int64_t deadline,
                    size_t *got, tsl_error_t *err)
{
    resp_t r;
    resp_init(&r, io, w->fd);
    *got = 0;
    if (send_all(w, w->fd, req, reqlen, deadline, err) < 0)
        return -1;
    while (!r.done) {
        struct pollfd pf = {.fd = w->fd, .events = POLLIN};
        int k = poll(&pf, 1, left_ms(deadline));
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return lost(w, strerror(errno), err);
        if (k == 0)
            return timed_out(w, err);
        int rc = pump(w, &r, err);
        *got = r.got;
        if (rc < 0)
            return -1;
    }
    if (!http_should_keep_alive(&r.p)) {
        close(w->fd);
        w->fd = -1;
    }
    return 0;
}

int wire_request(wire_t *w, const char *method, const char *headers, const char *body, size_t len,
                 wire_io_t *io, int timeout_ms, tsl_error_t *err)
{
    int64_t deadline = now_ms() + timeout_ms;
    size_t reqlen;
    char *req = request_text(w, method, io->path, headers, body, len, &reqlen);
    if (!req) {
        errno = ENOMEM;
        return tsl_errprintf(err, "out of memory");
    }
    int rc = -1;
    for (int attempt = 0; attempt < 2; attempt++) {
        bool reused = w->fd >= 0;
        if (!reused && (w->fd = dial(w, deadline, err)) < 0)
            break;
        size_t got;
        rc = exchange(w, req, reqlen, io, deadline, &got, err);
        if (rc == 0)
            break;
        int e = errno;
        if (w->fd >= 0)
            close(w->fd);
        w->fd = -1;
        errno = e;
        /* tesseld closed an idle kept-alive connection before this request reached it. */
        if (!(reused && e == ECONNRESET && got == 0))
            break;
    }
    free(req);
    return rc;
}

int wire_upgrade(wire_t *w, const char *headers, wire_io_t *io, int *fd, char *extra, size_t cap,
                 size_t *extra_len, int timeout_ms, tsl_error_t *err)
{
    int64_t deadline = now_ms() + timeout_ms;
    *fd = -1;
    *extra_len = 0;
    size_t reqlen;
    char *req = request_text(w, "GET", io->path, headers, NULL, 0, &reqlen);
    if (!req) {
        errno = ENOMEM;
        return tsl_errprintf(err, "out of memory");
    }
    int s = dial(w, deadline, err);
    if (s < 0) {
        free(req);
        return -1;
    }
    resp_t r;
    resp_init(&r, io, s);
    int rc = send_all(w, s, req, reqlen, deadline, err);
    free(req);
    char buf[WIRE_READ_SIZE];
    while (rc == 0) {
        struct pollfd pf = {.fd = s, .events = POLLIN};
        int k = poll(&pf, 1, left_ms(deadline));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            rc = k == 0 ? timed_out(w, err) : lost(w, strerror(errno), err);
            break;
        }
        ssize_t n = recv(s, buf, sizeof buf, 0);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n < 0) {
            rc = lost(w, strerror(errno), err);
            break;
        }
        r.got += (size_t)n;
        size_t used = http_parser_execute(&r.p, &settings, buf, (size_t)n);
        if (r.cancelled) {
            rc = fail(ECANCELED, err, "stopped%s%s", "", "");
            break;
        }
        if (r.done) {
            if (io->status != 101) {
                close(s);
                return 0;
            }
            if (!r.p.upgrade || (size_t)n - used > cap) {
                rc = fail(EPROTO, err, "talking to tesseld at %s: %s", w->where,
                          "a 101 answer that does not switch protocols");
                break;
            }
            memcpy(extra, buf + used, (size_t)n - used);
            *extra_len = (size_t)n - used;
            *fd = s;
            return 0;
        }
        if (n == 0) {
            rc = lost(w, r.got ? "the answer was cut short" : "closed without an answer", err);
            break;
        }
        if (HTTP_PARSER_ERRNO(&r.p) != HPE_OK || used != (size_t)n) {
            rc = fail(EPROTO, err, "talking to tesseld at %s: malformed answer: %s", w->where,
                      http_errno_description(HTTP_PARSER_ERRNO(&r.p)));
            break;
        }
    }
    int e = errno;
    close(s);
    errno = e;
    return -1;
}

int wire_get_many(wire_t *w, const char *headers, wire_io_t *ios, int n, int timeout_ms,
                  int poll_ms, volatile sig_atomic_t *stop, tsl_error_t *err)
{
    int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
    resp_t *rs = calloc((size_t)n, sizeof *rs);
    struct pollfd *pf = calloc((size_t)n, sizeof *pf);
    int rc = -1, open = 0;
    if (!rs || !pf) {
        errno = ENOMEM;
        tsl_errprintf(err, "out of memory");
        goto out;
    }
    for (int i = 0; i < n; i++)
        rs[i].fd = -1;
    if (stop && *stop) {
        errno = EINTR;
        tsl_errprintf(err, "interrupted");
        goto out;
    }
    for (int i = 0; i < n; i++) {
        size_t reqlen;
        char *req = request_text(w, "GET", ios[i].path, headers, NULL, 0, &reqlen);
        if (!req) {
            errno = ENOMEM;
            tsl_errprintf(err, "out of memory");
            goto out;
        }
        int fd = dial(w, deadline, err);
        if (fd >= 0)
            resp_init(&rs[i], &ios[i], fd);
        int sent = fd < 0 ? -1 : send_all(w, fd, req, reqlen, deadline, err);
        free(req);
        if (sent < 0)
            goto out;
        open++;
    }
    while (open > 0) {
        if (stop && *stop) {
            errno = EINTR;
            tsl_errprintf(err, "interrupted");
            goto out;
        }
        int k = 0;
        for (int i = 0; i < n; i++)
            if (rs[i].fd >= 0)
                pf[k++] = (struct pollfd){.fd = rs[i].fd, .events = POLLIN};
        int wait = left_ms(deadline);
        if (wait < 0 || wait > poll_ms)
            wait = poll_ms;
        int ready = poll(pf, (nfds_t)k, wait);
        if (ready < 0 && errno != EINTR) {
            tsl_errprintf(err, "poll: %s", strerror(errno));
            goto out;
        }
        if (ready <= 0) {
            if (deadline >= 0 && left_ms(deadline) == 0) {
                timed_out(w, err);
                goto out;
            }
            continue;
        }
        for (int j = 0; j < k; j++) {
            if (!pf[j].revents)
                continue;
            resp_t *r = NULL;
            for (int i = 0; i < n; i++)
                if (rs[i].fd == pf[j].fd)
                    r = &rs[i];
            if (pump(w, r, err) < 0)
                goto out;
            if (r->done) {
                close(r->fd);
                r->fd = -1;
                open--;
            }
        }
    }
    rc = 0;
out:;
    int saved = errno;
    for (int i = 0; rs && i < n; i++)
        if (rs[i].fd >= 0)
            close(rs[i].fd);
    free(rs);
    free(pf);
    errno = saved;
    return rc;
}
