/* test_http.c - libhttp: route matching, errno mapping, and a live server on loopback
 * (body limit, malformed JSON, unknown fields, 404/405, JSON error bodies); the Unix-socket
 * listener and the peer's credentials; the per-client connection limit, the refusal of a second
 * server on a taken port (no SO_REUSEPORT) and the holder lookup; the token buckets; the
 * answer from the headers before a body is read (on_headers) and the bound on bodies held at
 * once (max_body_total). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "libhttp/http.h"

static void test_match(void **state)
{
    static const struct {
        const char *pattern, *path;
        int match, nparams;
        const char *p0, *p1;
    } cases[] = {
        {"/v1/jobs", "/v1/jobs", 1, 0, NULL, NULL},
        {"/v1/jobs", "/v1/jobs/", 0, 0, NULL, NULL},
        {"/v1/jobs", "/v1/job", 0, 0, NULL, NULL},
        {"/v1/jobs", "/v1/jobsx", 0, 0, NULL, NULL},
        {"/v1/jobs/{id}", "/v1/jobs/42", 1, 1, "42", NULL},
        {"/v1/jobs/{id}", "/v1/jobs/", 0, 0, NULL, NULL},
        {"/v1/jobs/{id}", "/v1/jobs/42/logs", 0, 0, NULL, NULL},
        {"/v1/jobs/{id}/logs", "/v1/jobs/42/logs", 1, 1, "42", NULL},
        {"/v1/a/{x}/b/{y}", "/v1/a/1/b/2", 1, 2, "1", "2"},
        {"/healthz", "healthz", 0, 0, NULL, NULL},
        /* "{*}": the rest of the path, "" included, its slashes kept. */
        {"/j/{id}/{*}", "/j/4/", 1, 2, "4", ""},
        {"/j/{id}/{*}", "/j/4/a/b%2Fc/", 1, 2, "4", "a/b%2Fc/"},
        {"/j/{id}/{*}", "/j/4", 0, 0, NULL, NULL},
        {"/j/{*}", "/k/4", 0, 0, NULL, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char scratch[128];
        const char *params[THTTP_MAX_PARAMS];
        int n = 0;
        int m = thttp_match(cases[i].pattern, cases[i].path, scratch, sizeof scratch, params, &n);
        assert_int_equal(m, cases[i].match);
        if (m) {
            assert_int_equal(n, cases[i].nparams);
            if (n > 0)
                assert_string_equal(params[0], cases[i].p0);
            if (n > 1)
                assert_string_equal(params[1], cases[i].p1);
        }
    }
}

/* thttp_reply_header: pairs appended; CR or LF refused, the reply unchanged. */
static void test_reply_header(void **state)
{
    thttp_reply_t rep = {0};
    assert_int_equal(thttp_reply_header(&rep, "X-A", "1"), 0);
    assert_int_equal(thttp_reply_header(&rep, "Set-Cookie", "a=b; Path=/"), 0);
    assert_int_equal(rep.headers_len,
                     sizeof "X-A" + sizeof "1" + sizeof "Set-Cookie" + sizeof "a=b; Path=/");
    assert_int_equal(thttp_reply_header(&rep, "X-B", "1\r\nX-C: 2"), -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(thttp_reply_header(&rep, "", "1"), -1);
    assert_int_equal(rep.headers_len,
                     sizeof "X-A" + sizeof "1" + sizeof "Set-Cookie" + sizeof "a=b; Path=/");
    assert_memory_equal(rep.headers,
                        "X-A\0"
                        "1\0Set-Cookie\0a=b; Path=/\0",
                        rep.headers_len);
    free(rep.headers);
}

static void test_errno(void **state)
{
    const char *code;
    assert_int_equal(thttp_status_of_errno(ENOENT, &code), 404);
    assert_string_equal(code, "not_found");
    assert_int_equal(thttp_status_of_errno(EEXIST, &code), 409);
    assert_int_equal(thttp_status_of_errno(EACCES, &code), 403);
    assert_int_equal(thttp_status_of_errno(EINVAL, &code), 400);
    assert_string_equal(code, "invalid_value");
    assert_int_equal(thttp_status_of_errno(ENOSPC, &code), 422);
    assert_string_equal(code, "unsatisfiable");
    assert_int_equal(thttp_status_of_errno(EIO, &code), 500);
}

static void h_echo(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    static const char *const allowed[] = {"a", "b", NULL};
    json_t *o = thttp_body_object(req, rep, 0);
    if (!o)
        return;
    if (thttp_check_fields(o, allowed, rep) < 0) {
        json_decref(o);
        return;
    }
    thttp_json(rep, 201, o);
}

static void h_item(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    thttp_json(rep, 200, json_pack("{s:s}", "id", req->params[0]));
}

/* The peer's credentials as the handler sees them. */
static void h_cred(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    uid_t uid = (uid_t)-1;
    gid_t gid = (gid_t)-1;
    pid_t pid = -1;
    int rc = thttp_peer_cred(req, &uid, &gid, &pid);
    thttp_json(rep, 200,
               json_pack("{s:i, s:I, s:I, s:I}", "rc", rc, "uid", (json_int_t)uid, "gid",
                         (json_int_t)gid, "pid", (json_int_t)pid));
}

/* A streamed answer whose status has no body (304 here): "abc" if read, its stream freed. */
static int stream_frees;
static ssize_t abc_read(void *arg, uint64_t pos, char *buf, size_t max)
{
    (void)arg;
    if (pos >= 3)
        return THTTP_STREAM_END;
    size_t n = 3 - (size_t)pos < max ? 3 - (size_t)pos : max;
    memcpy(buf, "abc" + pos, n);
    return (ssize_t)n;
}

static void abc_free(void *arg)
{
    (void)arg;
    stream_frees++;
}

static void h_stream(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    rep->status = atoi(req->params[0]);
    rep->stream = abc_read;
    rep->stream_free = abc_free;
    rep->content_type = "text/plain";
}

/* Reads one answer's head from fd (up to the blank line) into buf. */
static void read_head(int fd, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    while (n + 1 < len && !strstr(buf, "\r\n\r\n")) {
        ssize_t k = read(fd, buf + n, 1);
        if (k <= 0)
            break;
        n += (size_t)k;
        buf[n] = '\0';
    }
}

static thttp_server_t *start_tcp(thttp_config_t cfg, uint16_t *port);

/* An answer with no body by its status (304) or its request (HEAD) but a stream: its head
 * declares no chunked body and the connection's next answer is read whole (a chunked 304's last
 * chunk was read by clients as the start of the next answer); its stream is freed.  A 200 streams
 * as before. */
static void test_stream_no_body(void **state)
{
    (void)state;
    uint16_t port;
    thttp_server_t *s = start_tcp((thttp_config_t){0}, &port);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    stream_frees = 0;
    const char *r1 = "GET /stream/304 HTTP/1.1\r\nHost: x\r\n\r\n";
    assert_int_equal(write(fd, r1, strlen(r1)), (ssize_t)strlen(r1));
    char head[2048];
    read_head(fd, head, sizeof head);
    assert_non_null(strstr(head, "HTTP/1.1 304"));
    assert_null(strcasestr(head, "Transfer-Encoding"));
    /* A HEAD of a streamed answer: its head only, nothing of a body after it. */
    const char *rh = "HEAD /stream/200 HTTP/1.1\r\nHost: x\r\n\r\n";
    assert_int_equal(write(fd, rh, strlen(rh)), (ssize_t)strlen(rh));
    read_head(fd, head, sizeof head);
    assert_non_null(strstr(head, "HTTP/1.1 200"));
    assert_null(strcasestr(head, "Transfer-Encoding"));
    const char *r2 = "GET /stream/200 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    assert_int_equal(write(fd, r2, strlen(r2)), (ssize_t)strlen(r2));
    char rest[4096];
    size_t n = 0;
    ssize_t k;
    while (n + 1 < sizeof rest && (k = read(fd, rest + n, sizeof rest - 1 - n)) > 0)
        n += (size_t)k;
    rest[n] = '\0';
    assert_true(strncmp(rest, "HTTP/1.1 200", 12) == 0); /* nothing left of the 304 before it */
    assert_non_null(strstr(rest, "abc"));
    close(fd);
    thttp_stop(s);
    assert_int_equal(stream_frees, 3);
}

static const thttp_route_t routes[] = {
    {"GET", "/cred", h_cred},
    {"POST", "/echo", h_echo},
    {"GET", "/items/{id}", h_item},
    {"GET", "/stream/{code}", h_stream},
    {"HEAD", "/stream/{code}", h_stream},
    {"DELETE", "/items/{id}", h_item},
};

typedef struct {
    char buf[4096];
    size_t len;
} sink_t;

static size_t on_data(char *p, size_t sz, size_t n, void *arg)
{
    sink_t *s = arg;
    size_t k = sz * n;
    if (s->len + k >= sizeof s->buf)
        k = sizeof s->buf - 1 - s->len;
    memcpy(s->buf + s->len, p, k);
    s->len += k;
    s->buf[s->len] = '\0';
    return sz * n;
}

static const char *unix_path; /* when set, do_req goes through this Unix socket */

static long do_req(uint16_t port, const char *method, const char *path, const char *body,
                   size_t body_len, sink_t *out)
{
    CURL *c = curl_easy_init();
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%u%s", port, path);
    memset(out, 0, sizeof *out);
    if (unix_path)
        curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, unix_path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)body_len);
    }
    long code = 0;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(c);
    return code;
}

static const char *error_code(const char *body, char *buf, size_t len)
{
    json_t *v = json_loads(body, 0, NULL);
    const char *code = NULL;
    json_unpack(v, "{s:{s:s}}", "error", "code", &code);
    snprintf(buf, len, "%s", code ? code : "(none)");
    json_decref(v);
    return buf;
}

/* A TCP server on 127.0.0.1 with the test routes and a 1 KiB body bound, plus what cfg sets. */
static thttp_server_t *start_tcp(thttp_config_t cfg, uint16_t *port)
{
    cfg.host = "127.0.0.1";
    cfg.max_body = 1024;
    cfg.routes = routes;
    cfg.nroutes = sizeof routes / sizeof routes[0];
    tsl_error_t err;
    thttp_server_t *s = thttp_start(&cfg, &err);
    assert_non_null(s);
    *port = thttp_port(s);
    assert_true(*port > 0);
    return s;
}

static void test_server(void **state)
{
    uint16_t port;
    thttp_server_t *s = start_tcp((thttp_config_t){0}, &port);
    sink_t out;
    char code[64];

    assert_int_equal(do_req(port, "POST", "/echo", "{\"a\":1}", 7, &out), 201);
    assert_string_equal(out.buf, "{\"a\":1}\n");
    assert_int_equal(do_req(port, "POST", "/echo", "{\"a\":", 5, &out), 400);
    assert_string_equal(error_code(out.buf, code, sizeof code), "invalid_json");
    assert_int_equal(do_req(port, "POST", "/echo", "[1]", 3, &out), 400);
    assert_string_equal(error_code(out.buf, code, sizeof code), "invalid_json");
    assert_int_equal(do_req(port, "POST", "/echo", "{\"a\":1,\"a\":2}", 13, &out), 400);
    assert_int_equal(do_req(port, "POST", "/echo", "{\"zz\":1}", 8, &out), 400);
    assert_string_equal(error_code(out.buf, code, sizeof code), "unknown_field");
    assert_non_null(strstr(out.buf, "\"field\":\"zz\""));

    char *big = malloc(5000);
    memset(big, ' ', 5000);
    big[0] = '{';
    big[4999] = '}';
    assert_int_equal(do_req(port, "POST", "/echo", big, 5000, &out), 413);
    assert_string_equal(error_code(out.buf, code, sizeof code), "payload_too_large");
    free(big);

    assert_int_equal(do_req(port, "GET", "/items/abc", NULL, 0, &out), 200);
    assert_string_equal(out.buf, "{\"id\":\"abc\"}\n");
    assert_int_equal(do_req(port, "PUT", "/items/abc", NULL, 0, &out), 405);
    assert_string_equal(error_code(out.buf, code, sizeof code), "method_not_allowed");
    assert_int_equal(do_req(port, "GET", "/nothing", NULL, 0, &out), 404);
    assert_string_equal(error_code(out.buf, code, sizeof code), "not_found");

    assert_int_equal(thttp_status_count(s, 201), 1);
    assert_int_equal(thttp_status_count(s, 400), 4);
    assert_int_equal(thttp_status_count(s, 413), 1);

    /* An encoded NUL byte in the path or a query value would end the name early
     * ("/items/abc%00x" read as "abc"): the request is refused whole, its body unread. */
    assert_int_equal(do_req(port, "GET", "/items/abc%00x", NULL, 0, &out), 400);
    assert_string_equal(error_code(out.buf, code, sizeof code), "invalid_url");
    assert_int_equal(do_req(port, "GET", "/items/abc?x=1%00", NULL, 0, &out), 400);
    assert_int_equal(do_req(port, "POST", "/echo%00", "{\"a\":1}", 7, &out), 400);
    assert_string_equal(error_code(out.buf, code, sizeof code), "invalid_url");
    assert_int_equal(do_req(port, "GET", "/items/abc%01", NULL, 0, &out), 200); /* only NUL */
    assert_string_equal(out.buf, "{\"id\":\"abc\\u0001\"}\n");
    assert_int_equal(thttp_status_count(s, 400), 7);

    /* TCP carries no credentials: the handler is told so (1), nothing is filled. */
    assert_int_equal(do_req(port, "GET", "/cred", NULL, 0, &out), 200);
    json_t *v = json_loads(out.buf, 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(v, "rc")), 1);
    assert_int_equal(json_integer_value(json_object_get(v, "pid")), -1);
    json_decref(v);
    thttp_stop(s);
}

static void test_unix(void **state)
{
    char dir[] = "/tmp/test_http.XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/api.sock", dir);
    thttp_config_t cfg = {
        .max_body = 1024, .routes = routes, .nroutes = sizeof routes / sizeof routes[0]};
    tsl_error_t err;

    /* Something other than a socket at the path is neither replaced nor removed. */
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("keep me\n", f);
    fclose(f);
    assert_null(thttp_start_unix(&cfg, path, 0666, &err));
    assert_int_equal(errno, EEXIST);
    assert_non_null(strstr(err.text, "not a socket"));
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_size, 8);
    unlink(path);

    /* A live socket (another server listens) is neither replaced nor removed. */
    int old = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    assert_int_equal(bind(old, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(old, 1), 0);
    assert_null(thttp_start_unix(&cfg, path, 0666, &err));
    assert_int_equal(errno, EADDRINUSE);
    assert_non_null(strstr(err.text, "another server"));
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    /* Once that server is gone, its socket (stale) is replaced. */
    close(old);

    mode_t um = umask(077); /* the mode asked for wins over a strict umask */
    thttp_server_t *s = thttp_start_unix(&cfg, path, 0666, &err);
    umask(um);
    assert_non_null(s);
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0666);

    /* Over the socket the handler gets this process's own uid, gid and pid. */
    sink_t out;
    unix_path = path;
    assert_int_equal(do_req(0, "GET", "/cred", NULL, 0, &out), 200);
    json_t *v = json_loads(out.buf, 0, NULL);
    assert_non_null(v);
    assert_int_equal(json_integer_value(json_object_get(v, "rc")), 0);
    assert_int_equal(json_integer_value(json_object_get(v, "uid")), (json_int_t)getuid());
    assert_int_equal(json_integer_value(json_object_get(v, "gid")), (json_int_t)getgid());
    assert_int_equal(json_integer_value(json_object_get(v, "pid")), (json_int_t)getpid());
    json_decref(v);
    /* The same routes and error answers as over TCP. */
    assert_int_equal(do_req(0, "POST", "/echo", "{\"zz\":1}", 8, &out), 400);
    char code[64];
    assert_string_equal(error_code(out.buf, code, sizeof code), "unknown_field");
    unix_path = NULL;
    assert_int_equal(thttp_status_count(s, 200), 1);

    /* Stopping removes the socket file. */
    thttp_stop(s);
    assert_int_equal(lstat(path, &st), -1);
    assert_int_equal(errno, ENOENT);
    rmdir(dir);
}

/* A TCP connection to 127.0.0.1:port from the loopback address src ("127.0.0.2"). */
static int connect_from(const char *src, uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    assert_int_equal(inet_pton(AF_INET, src, &a.sin_addr), 1);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    assert_int_equal(connect(fd, (struct sockaddr *)&to, sizeof to), 0);
    return fd;
}

/* Whether the server closed fd (EOF or reset).  The 30 s bound only keeps a broken server from
 * hanging the test: a server that keeps the connection fails it, however long that takes. */
static bool closed_by_server(int fd)
{
    struct timeval tv = {30, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char c;
    ssize_t n = recv(fd, &c, 1, 0);
    return n == 0 || (n < 0 && errno == ECONNRESET);
}

static void expect_served_again(uint16_t port, const char *path);

static void test_per_client_limit(void **state)
{
    uint16_t port;
    thttp_server_t *s = start_tcp((thttp_config_t){.max_per_client = 4}, &port);
    /* 127.0.0.2 opens 4 connections and sends half a request on each (slowloris). */
    int slow[5];
    for (int i = 0; i < 4; i++) {
        slow[i] = connect_from("127.0.0.2", port);
        static const char half[] = "GET /items/1 HTTP/1.1\r\nHo";
        assert_int_equal(send(slow[i], half, sizeof half - 1, 0), (ssize_t)(sizeof half - 1));
    }
    /* The 5th from the same address is closed at once, unanswered. */
    slow[4] = connect_from("127.0.0.2", port);
    assert_true(closed_by_server(slow[4]));
    /* Another client is served meanwhile. */
    sink_t out;
    assert_int_equal(do_req(port, "GET", "/items/7", NULL, 0, &out), 200);
    assert_string_equal(out.buf, "{\"id\":\"7\"}\n");
    /* Once one slow connection goes, 127.0.0.2 may open one more. */
    close(slow[0]);
    close(slow[4]);
    expect_served_again(port, NULL);
    for (int i = 1; i < 4; i++)
        close(slow[i]);
    thttp_stop(s);
}

static void test_port_taken(void **state)
{
    thttp_config_t cfg = {.host = "127.0.0.1",
                          .max_body = 1024,
                          .routes = routes,
                          .nroutes = sizeof routes / sizeof routes[0]};
    tsl_error_t err;
    thttp_server_t *a = thttp_start(&cfg, &err);
    assert_non_null(a);
    char comm[64];
    assert_int_equal(thttp_port_holder(thttp_port(a), comm, sizeof comm), getpid());
    assert_string_not_equal(comm, "");
    /* A second server on the same port is refused and names the holder (ourselves). */
    cfg.port = thttp_port(a);
    thttp_server_t *b = thttp_start(&cfg, &err);
    assert_null(b);
    assert_int_equal(errno, EADDRINUSE);
    char want[64];
    snprintf(want, sizeof want, "held by pid %ld", (long)getpid());
    assert_non_null(strstr(err.text, want));
    thttp_stop(a);
    /* Once the first has stopped, the port is free again (SO_REUSEADDR) and has no holder. */
    assert_int_equal(thttp_port_holder(cfg.port, comm, sizeof comm), 0);
    b = thttp_start(&cfg, &err);
    assert_non_null(b);
    thttp_stop(b);
}

static void test_limiter(void **state)
{
    assert_null(thttp_limiter_new(0, 5));
    assert_int_equal(errno, EINVAL);
    assert_null(thttp_limiter_new(1, 0.5));
    /* 2 a second, burst 3. */
    thttp_limiter_t *l = thttp_limiter_new(2, 3);
    assert_non_null(l);
    int64_t t = 1000000;
    for (int i = 0; i < 3; i++)
        assert_int_equal(thttp_limiter_take(l, "alice", t), 0);
    /* Empty: the next token in 500 ms (1 / 2 per second), rounded up. */
    int64_t w = thttp_limiter_take(l, "alice", t);
    assert_true(w >= 500 && w <= 501);
    /* Another key has its own bucket. */
    assert_int_equal(thttp_limiter_take(l, "bob", t), 0);
    assert_true(thttp_limiter_take(l, "alice", t + 250) > 0);
    assert_int_equal(thttp_limiter_take(l, "alice", t + 501), 0);
    assert_true(thttp_limiter_take(l, "alice", t + 501) > 0);
    /* Long idle: refilled to the burst, not beyond. */
    t += 3600 * 1000;
    for (int i = 0; i < 3; i++)
        assert_int_equal(thttp_limiter_take(l, "alice", t), 0);
    assert_true(thttp_limiter_take(l, "alice", t) > 0);
    /* A clock that goes back takes nothing extra. */
    assert_true(thttp_limiter_take(l, "alice", t - 10000) > 0);
    thttp_limiter_free(l);
    thttp_limiter_free(NULL);
}

/* A raw connection to the Unix socket at path. */
static int connect_unix(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

/* A connection to where (a TCP port from 127.0.0.2, or a Unix socket path) is answered: after a
 * slow connection goes, the server lets the client open one more once it has seen the close,
 * in its own time.  Until then new connections are closed unanswered: tried again every 0.1 s,
 * for up to 60 s (a bound against hanging, not a speed). */
static void expect_served_again(uint16_t port, const char *path)
{
    static const char whole[] = "GET /items/2 HTTP/1.0\r\n\r\n";
    for (int i = 0; i < 600; i++) {
        int fd = path ? connect_unix(path) : connect_from("127.0.0.2", port);
        char buf[256] = "";
        ssize_t n = -1;
        if (send(fd, whole, sizeof whole - 1, MSG_NOSIGNAL) == (ssize_t)(sizeof whole - 1))
            n = recv(fd, buf, sizeof buf - 1, MSG_WAITALL);
        close(fd);
        if (n > 12) {
            assert_memory_equal(buf, "HTTP/1.1 200", 12);
            return;
        }
        usleep(100 * 1000);
    }
    fail_msg("no connection answered after one of the client's slow ones went");
}

/* The Unix listener bounds the connections of one peer uid (max_per_client), as the TCP one
 * bounds those of one address: a local account's slow connections cannot take it whole. */
static void test_unix_per_uid(void **state)
{
    char dir[] = "/tmp/test_http.XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/api.sock", dir);
    thttp_config_t cfg = {.max_body = 1024,
                          .max_per_client = 3,
                          .routes = routes,
                          .nroutes = sizeof routes / sizeof routes[0]};
    tsl_error_t err;
    thttp_server_t *s = thttp_start_unix(&cfg, path, 0600, &err);
    assert_non_null(s);
    static const char half[] = "GET /items/1 HTTP/1.1\r\nHo";
    int slow[4];
    for (int i = 0; i < 3; i++) {
        slow[i] = connect_unix(path);
        assert_int_equal(send(slow[i], half, sizeof half - 1, 0), (ssize_t)(sizeof half - 1));
    }
    /* The 4th of the same uid is closed at once, unanswered. */
    slow[3] = connect_unix(path);
    assert_true(closed_by_server(slow[3]));
    close(slow[3]);
    /* One slow connection goes: the uid may open one more, and it is answered. */
    close(slow[0]);
    expect_served_again(0, path);
    for (int i = 1; i < 3; i++)
        close(slow[i]);
    thttp_stop(s);
    rmdir(dir);
}

/* on_headers of test_early: a request without "X-Ok: 1" is refused from its headers. */
static void early_gate(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    const char *ok = thttp_header(req, "X-Ok");
    assert_null(req->params[0]);
    assert_int_equal(req->body_len, 0);
    if (!ok || strcmp(ok, "1") != 0)
        thttp_error(rep, 403, "forbidden", NULL, "no X-Ok");
}

/* Read what the server sends on fd until it closes or head holds a full head; NUL-ended.  The
 * 30 s bound only keeps a broken server from hanging the test. */
static void read_answer(int fd, char *head, size_t len)
{
    struct timeval tv = {30, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    size_t got = 0;
    head[0] = '\0';
    while (got + 1 < len && !strstr(head, "\r\n\r\n")) {
        ssize_t n = recv(fd, head + got, len - 1 - got, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
        head[got] = '\0';
    }
}

/* on_headers answers a request from its headers alone, before its body is sent; one that
 * passes is served as before. */
static void test_early(void **state)
{
    uint16_t port;
    thttp_server_t *s = start_tcp((thttp_config_t){.on_headers = early_gate}, &port);
    /* A body announced, none sent: the refusal comes all the same (nothing waits for it). */
    int fd = connect_from("127.0.0.1", port);
    const char *req = "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      "Content-Length: 1000\r\n\r\n";
    assert_int_equal(send(fd, req, strlen(req), 0), (ssize_t)strlen(req));
    char head[2048];
    read_answer(fd, head, sizeof head);
    assert_int_equal(strncmp(head, "HTTP/1.1 403 ", 13), 0);
    close(fd);
    fd = connect_from("127.0.0.1", port);
    req = "POST /echo HTTP/1.1\r\nHost: x\r\nX-Ok: 1\r\nContent-Length: 7\r\n\r\n{\"a\":1}";
    assert_int_equal(send(fd, req, strlen(req), 0), (ssize_t)strlen(req));
    read_answer(fd, head, sizeof head);
    assert_int_equal(strncmp(head, "HTTP/1.1 201 ", 13), 0);
    close(fd);
    sink_t out;
    assert_int_equal(do_req(port, "GET", "/items/a", NULL, 0, &out), 403);
    assert_int_equal(thttp_status_count(s, 403), 2);
    thttp_stop(s);
}

/* max_body_total: while one request holds a body's buffer (1 KiB, the most here), another's
 * body is refused, 503 bodies_busy; once the first ends, bodies are taken again. */
static void test_bodies_bound(void **state)
{
    uint16_t port;
    thttp_server_t *s = start_tcp((thttp_config_t){.max_body_total = 1024}, &port);
    const char *req = "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"a\":";
    sink_t out;
    char code[64];
    long st = 0;
    int fd = -1;
    /* A request that holds a body's buffer (its body not all sent), then another's body.  The
     * server takes the first one's bytes in its own time, and if the second held its buffer
     * just then, the first is the one refused: a new first request, until it holds. */
    for (int i = 0; i < 600 && st != 503; i++) {
        if (fd >= 0)
            close(fd);
        fd = connect_from("127.0.0.1", port);
        assert_int_equal(send(fd, req, strlen(req), 0), (ssize_t)strlen(req));
        usleep(50000);
        st = do_req(port, "POST", "/echo", "{\"a\":1}", 7, &out);
    }
    assert_int_equal(st, 503);
    assert_string_equal(error_code(out.buf, code, sizeof code), "bodies_busy");
    close(fd);
    st = 0;
    for (int i = 0; i < 600 && st != 201; i++) {
        st = do_req(port, "POST", "/echo", "{\"a\":1}", 7, &out);
        if (st != 201)
            usleep(50000);
    }
    assert_int_equal(st, 201);
    /* A request without a body holds nothing. */
    assert_int_equal(do_req(port, "GET", "/items/a", NULL, 0, &out), 200);
    thttp_stop(s);
}

/* on_headers of test_bodies_per_key: the request's body is the share of its X-User. */
static void user_key(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    const char *u = thttp_header(req, "X-User");
    if (u)
        snprintf(rep->body_key, sizeof rep->body_key, "%s", u);
}

/* A POST of a 7-byte body as user on a new connection: the answer's status line's code. */
static int post_as(uint16_t port, const char *user)
{
    char req[256], head[2048];
    snprintf(req, sizeof req,
             "POST /echo HTTP/1.1\r\nHost: x\r\nX-User: %s\r\nContent-Length: 7\r\n\r\n{\"a\":1}",
             user);
    int fd = connect_from("127.0.0.1", port);
    assert_int_equal(send(fd, req, strlen(req), 0), (ssize_t)strlen(req));
    read_answer(fd, head, sizeof head);
    close(fd);
    return strncmp(head, "HTTP/1.1 ", 9) == 0 ? atoi(head + 9) : -1;
}

/* max_body_per_key: while alice's request holds a body's buffer (1 KiB, her share), her next
 * body is refused, 429 bodies_busy, on this server and on one that shares its bodies; bob's is
 * taken meanwhile (the share is hers alone); once hers ends, her bodies are taken again. */
static void test_bodies_per_key(void **state)
{
    uint16_t port;
    thttp_server_t *s =
        start_tcp((thttp_config_t){.max_body_per_key = 1024, .on_headers = user_key}, &port);
    const char *req = "POST /echo HTTP/1.1\r\nHost: x\r\nX-User: alice\r\nContent-Length: "
                      "1000\r\n\r\n{\"a\":";
    int st = 0, fd = -1;
    /* As in test_bodies_bound: a new holding request until the second one is the refused. */
    for (int i = 0; i < 600 && st != 429; i++) {
        if (fd >= 0)
            close(fd);
        fd = connect_from("127.0.0.1", port);
        assert_int_equal(send(fd, req, strlen(req), 0), (ssize_t)strlen(req));
        usleep(50000);
        st = post_as(port, "alice");
    }
    assert_int_equal(st, 429);
    assert_int_equal(post_as(port, "bob"), 201);
    /* A second server counting with the first (share_bodies): alice's share is full there too,
     * bob's is not. */
    uint16_t port2;
    thttp_server_t *s2 = start_tcp(
        (thttp_config_t){.max_body_per_key = 1 << 20, .on_headers = user_key, .share_bodies = s},
        &port2);
    assert_int_equal(post_as(port2, "alice"), 429);
    assert_int_equal(post_as(port2, "bob"), 201);
    thttp_stop(s2);
    close(fd);
    st = 0;
    for (int i = 0; i < 600 && st != 201; i++) {
        st = post_as(port, "alice");
        if (st != 201)
            usleep(50000);
    }
    assert_int_equal(st, 201);
    thttp_stop(s);
}

/* How many of n connections to port the server closes at once (within 2 s, nothing sent);
 * those it keeps are left open in fds. */
static int closed_of(uint16_t port, int n, int *fds)
{
    int closed = 0;
    for (int i = 0; i < n; i++)
        fds[i] = connect_from("127.0.0.1", port);
    for (int i = 0; i < n; i++) {
        struct timeval tv = {2, 0};
        setsockopt(fds[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        char c;
        if (recv(fds[i], &c, 1, 0) == 0)
            closed++;
    }
    return closed;
}

/* limit_per_uid on TCP: max_per_client counts one local account's connections (here, this
 * process's), whatever their addresses; a closed one gives its place back. */
static void test_per_uid_tcp(void **state)
{
    uint16_t port;
    thttp_server_t *s =
        start_tcp((thttp_config_t){.max_per_client = 3, .limit_per_uid = true}, &port);
    int fds[5];
    assert_int_equal(closed_of(port, 5, fds), 2);
    for (int i = 0; i < 5; i++)
        close(fds[i]);
    /* The places come back as the server sees the closes. */
    int closed = -1;
    for (int t = 0; t < 100 && closed != 0; t++) {
        if (t)
            usleep(100000);
        closed = closed_of(port, 3, fds);
        for (int i = 0; i < 3; i++)
            close(fds[i]);
    }
    assert_int_equal(closed, 0);
    thttp_stop(s);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_match),
        cmocka_unit_test(test_reply_header),
        cmocka_unit_test(test_errno),
        cmocka_unit_test(test_server),
        cmocka_unit_test(test_stream_no_body),
        cmocka_unit_test(test_unix),
        cmocka_unit_test(test_per_client_limit),
        cmocka_unit_test(test_port_taken),
        cmocka_unit_test(test_limiter),
        cmocka_unit_test(test_unix_per_uid),
        cmocka_unit_test(test_early),
        cmocka_unit_test(test_bodies_bound),
        cmocka_unit_test(test_bodies_per_key),
        cmocka_unit_test(test_per_uid_tcp),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
