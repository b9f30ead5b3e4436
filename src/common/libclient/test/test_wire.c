/* test_wire.c - libclient's light transport (wire.c) through the public API, against scripted
 * servers in this process (a thread on loopback or a Unix socket): chunked answers written a
 * byte at a time, one kept-alive connection for several requests, a kept-alive connection that
 * the server closed (replaced once), a server that closes early (in the headers, in the body),
 * headers over http-parser's 80 KiB, a malformed answer, two log streams followed at once, a
 * sink that stops, a URL with a path prefix; and that a proxy in the environment still sends
 * TCP requests through libcurl and the proxy, while the local socket ignores it. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "tessel/client.h"

/* One answer of a scripted server: written in pieces of `piece` bytes (0: at once), then the
 * connection is closed when `close` is set. */
typedef struct {
    const char *answer;
    size_t piece;
    bool close;
} step_t;

typedef struct {
    int fd;
    int port;
    const step_t *steps;
    int nsteps;
    int conns;              /* connections accepted */
    char requests[4][4096]; /* what the client sent, one per step */
} server_t;

/* Read one request (headers and Content-Length body) into buf: its length, 0 at EOF. */
static size_t read_request(int c, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (;;) {
        ssize_t r = read(c, buf + n, cap - 1 - n);
        if (r <= 0)
            return 0;
        n += (size_t)r;
        buf[n] = '\0';
        char *end = strstr(buf, "\r\n\r\n");
        if (!end)
            continue;
        const char *cl = strcasestr(buf, "content-length:");
        size_t body = cl ? (size_t)atol(cl + 15) : 0;
        if (n >= (size_t)(end + 4 - buf) + body)
            return n;
    }
}

static void write_answer(int c, const step_t *st)
{
    size_t len = strlen(st->answer), piece = st->piece ? st->piece : len;
    for (size_t off = 0; off < len; off += piece) {
        size_t k = len - off < piece ? len - off : piece;
        if (send(c, st->answer + off, k, MSG_NOSIGNAL) < 0)
            return; /* the client gave up: the test sees it there */
        if (st->piece)
            usleep(200);
    }
}

static void *serve(void *arg)
{
    server_t *s = arg;
    int c = -1;
    for (int i = 0; i < s->nsteps; i++) {
        if (c < 0) {
            if ((c = accept(s->fd, NULL, NULL)) < 0)
                return NULL;
            s->conns++;
        }
        if (read_request(c, s->requests[i], sizeof s->requests[i]) == 0) {
            close(c); /* the client closed this one: its next request comes on a new one */
            c = -1;
            i--;
            continue;
        }
        write_answer(c, &s->steps[i]);
        if (s->steps[i].close) {
            close(c);
            c = -1;
        }
    }
    if (c >= 0) {
        /* Wait for the client to close its end (it may keep the connection alive). */
        char b[64];
        while (read(c, b, sizeof b) > 0)
            ;
        close(c);
    }
    return NULL;
}

static void start(server_t *s, pthread_t *t, const step_t *steps, int n, const char *unix_path)
{
    memset(s, 0, sizeof *s);
    s->steps = steps;
    s->nsteps = n;
    if (unix_path) {
        s->fd = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        snprintf(a.sun_path, sizeof a.sun_path, "%s", unix_path);
        unlink(unix_path);
        assert_int_equal(bind(s->fd, (struct sockaddr *)&a, sizeof a), 0);
    } else {
        s->fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        assert_int_equal(bind(s->fd, (struct sockaddr *)&a, sizeof a), 0);
        socklen_t len = sizeof a;
        assert_int_equal(getsockname(s->fd, (struct sockaddr *)&a, &len), 0);
        s->port = ntohs(a.sin_port);
    }
    assert_int_equal(listen(s->fd, 8), 0);
    assert_int_equal(pthread_create(t, NULL, serve, s), 0);
}

static void stop(server_t *s, pthread_t t)
{
    pthread_join(t, NULL);
    close(s->fd);
}

static tclient_t *connect_to(const server_t *s, const char *suffix)
{
    char url[96];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", s->port, suffix);
    tsl_error_t err;
    tclient_t *c = tclient_new(url, "tsl_tok", &err);
    assert_non_null(c);
    return c;
}

static const char chunked[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                              "Transfer-Encoding: chunked\r\n\r\n"
                              "5\r\n{\"id\"\r\n"
                              "a\r\n:42,\"x\":\"y\r\n"
                              "2\r\n\"}\r\n"
                              "0\r\n\r\n";
static const char small[] = "HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\n{\"n\":2}\n";

/* A chunked answer written a byte at a time, then a second request on the same connection. */
static void test_chunked_keepalive(void **state)
{
    unsetenv("http_proxy");
    step_t steps[] = {{chunked, 1, false}, {small, 0, false}};
    server_t s;
    pthread_t t;
    start(&s, &t, steps, 2, NULL);
    tclient_t *c = connect_to(&s, "");
    tsl_error_t err;
    json_t *a = NULL, *body = json_pack("{s:i}", "gpu", 1);
    assert_int_equal(tclient_request(c, "POST", "/v1/jobs", body, &a, &err), 0);
    assert_int_equal(json_integer_value(json_object_get(a, "id")), 42);
    assert_string_equal(json_string_value(json_object_get(a, "x")), "y");
    json_decref(a);
    assert_int_equal(tclient_request(c, "GET", "/v1/jobs?x=1", NULL, &a, &err), 0);
    assert_int_equal(json_integer_value(json_object_get(a, "n")), 2);
    json_decref(a);
    json_decref(body);
    tclient_destroy(c);
    stop(&s, t);
    assert_int_equal(s.conns, 1);
    assert_non_null(strstr(s.requests[0], "POST /v1/jobs HTTP/1.1\r\n"));
    assert_non_null(strstr(s.requests[0], "Host: 127.0.0.1:"));
    assert_non_null(strstr(s.requests[0], "Authorization: Bearer tsl_tok\r\n"));
    assert_non_null(strstr(s.requests[0], "Content-Type: application/json\r\n"));
    assert_non_null(strstr(s.requests[0], "Content-Length: 9\r\n\r\n{\"gpu\":1}"));
    assert_non_null(strstr(s.requests[1], "GET /v1/jobs?x=1 HTTP/1.1\r\n"));
    assert_null(strstr(s.requests[1], "Content-Length"));
}

/* The server closes a connection it had kept alive: the next request goes on a new one. */
static void test_reconnect(void **state)
{
    step_t steps[] = {{small, 0, true}, {small, 0, true}};
    server_t s;
    pthread_t t;
    start(&s, &t, steps, 2, NULL);
    tclient_t *c = connect_to(&s, "/");
    tsl_error_t err;
    assert_int_equal(tclient_request(c, "GET", "/v1/a", NULL, NULL, &err), 0);
    usleep(20000); /* let the close arrive */
    assert_int_equal(tclient_request(c, "DELETE", "/v1/b", NULL, NULL, &err), 0);
    tclient_destroy(c);
    stop(&s, t);
    assert_int_equal(s.conns, 2);
    assert_non_null(strstr(s.requests[1], "DELETE /v1/b HTTP/1.1\r\n"));
}

/* Early closes and bad answers: one line each, the right errno, nothing left half done. */
static void expect_failure(const char *answer, int want_errno, const char *want_text)
{
    step_t steps[] = {{answer, 0, true}};
    server_t s;
    pthread_t t;
    start(&s, &t, steps, 1, NULL);
    tclient_t *c = connect_to(&s, "");
    tsl_error_t err;
    json_t *a = (json_t *)1;
    assert_int_equal(tclient_request(c, "GET", "/v1/jobs/1", NULL, &a, &err), -1);
    assert_int_equal(errno, want_errno);
    assert_non_null(strstr(err.text, want_text));
    assert_null(strchr(err.text, '\n'));
    assert_null(a);
    tclient_destroy(c);
    stop(&s, t);
}

static void test_early_close(void **state)
{
    expect_failure("", ECONNRESET, "lost the connection to tesseld at http://127.0.0.1:");
    expect_failure("HTTP/1.1 200 OK\r\nContent-Le", ECONNRESET, "cut short");
    expect_failure("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"a\":", ECONNRESET,
                   "cut short");
    expect_failure("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"a\":", ECONNRESET,
                   "cut short");
    expect_failure("hello\r\n\r\n", EPROTO, "malformed answer");
    /* An answer without a length ends with the connection: complete, not lost. */
    expect_failure("HTTP/1.1 500 Oops\r\n\r\n{\"error\":{\"code\":\"x\",\"message\":\"boom\"}}",
                   EIO, "boom");
}

static void test_oversized_headers(void **state)
{
    size_t big = 100 * 1024;
    char *answer = malloc(big + 128);
    assert_non_null(answer);
    int n = snprintf(answer, 128, "HTTP/1.1 200 OK\r\nX-Big: ");
    memset(answer + n, 'a', big);
    snprintf(answer + n + big, 128, "\r\nContent-Length: 2\r\n\r\n{}");
    expect_failure(answer, EPROTO, "malformed answer");
    free(answer);
}

static int collect(const char *data, size_t len, void *arg)
{
    char *buf = arg;
    size_t n = strlen(buf);
    if (n + len >= 256)
        return -1;
    memcpy(buf + n, data, len);
    buf[n + len] = '\0';
    return 0;
}

static int refuse(const char *data, size_t len, void *arg)
{
    return -1;
}

/* Two streams on two connections at once (a server that answers each after both came). */
typedef struct {
    int fd;
    char req[2][1024];
} pair_t;

static void *serve_pair(void *arg)
{
    pair_t *p = arg;
    int c[2];
    for (int i = 0; i < 2; i++) {
        c[i] = accept(p->fd, NULL, NULL);
        read_request(c[i], p->req[i], sizeof p->req[i]);
    }
    for (int i = 1; i >= 0; i--) {
        bool out = strstr(p->req[i], "stream=stdout") != NULL;
        step_t st = {out ? "HTTP/1.1 200 OK\r\nX-Tessel-Log-Offset: 10\r\n"
                           "X-Tessel-Job-State:  exited \r\nTransfer-Encoding: chunked\r\n\r\n"
                           "3\r\nout\r\n1\r\n\n\r\n0\r\n\r\n"
                         : "HTTP/1.1 200 OK\r\nX-Empty:\r\nX-Tessel-Job-State: exited\r\n"
                           "Transfer-Encoding: chunked\r\n\r\n4\r\nerr\n\r\n0\r\n\r\n",
                     2, true};
        write_answer(c[i], &st);
        close(c[i]);
    }
    return NULL;
}

static void test_logs_two_streams(void **state)
{
    char sock[] = "/tmp/test-wire-XXXXXX";
    assert_non_null(mkdtemp(sock));
    char path[64], url[80];
    snprintf(path, sizeof path, "%s/s", sock);
    snprintf(url, sizeof url, "unix:%s", path);
    pair_t p = {.fd = socket(AF_UNIX, SOCK_STREAM, 0)};
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    assert_int_equal(bind(p.fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(p.fd, 4), 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, serve_pair, &p), 0);
    /* A proxy in the environment does not apply to the local socket. */
    setenv("http_proxy", "http://127.0.0.1:9", 1);
    tsl_error_t err;
    tclient_t *c = tclient_new(url, NULL, &err);
    assert_non_null(c);
    char out[256] = "", errs[256] = "";
    tclient_log_t logs[2] = {
        {.stream = "stdout", .write = collect, .arg = out, .has_tail = true, .tail = 1},
        {.stream = "stderr", .offset = 3, .write = collect, .arg = errs},
    };
    assert_int_equal(tclient_logs(c, 7, logs, 2, true, NULL, &err), 0);
    pthread_join(t, NULL);
    unsetenv("http_proxy");
    assert_string_equal(out, "out\n");
    assert_string_equal(errs, "err\n");
    assert_int_equal(logs[0].offset, 14);
    assert_true(logs[0].positioned);
    assert_string_equal(logs[0].state, "exited");
    assert_int_equal(logs[1].offset, 7);
    assert_string_equal(logs[1].state, "exited");
    const char *r0 = strstr(p.req[0], "stream=stdout") ? p.req[0] : p.req[1];
    assert_non_null(strstr(r0, "GET /v1/jobs/7/logs?stream=stdout&offset=0&tail=1&follow=1 "));
    tclient_destroy(c);

    /* A sink that gives up stops the transfer: ECANCELED, nothing counted. */
    step_t steps[] = {{"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc", 0, true}};
    server_t s;
    start(&s, &t, steps, 1, path);
    c = tclient_new(url, NULL, &err);
    tclient_log_t one = {.stream = "stdout", .write = refuse};
    assert_int_equal(tclient_logs(c, 7, &one, 1, false, NULL, &err), -1);
    assert_int_equal(errno, ECANCELED);
    assert_int_equal(one.offset, 0);
    tclient_destroy(c);
    stop(&s, t);
    close(p.fd);
    unlink(path);
    rmdir(sock);
}

/* A path prefix in the URL is kept; the token may not smuggle header lines. */
static void test_prefix_and_token(void **state)
{
    step_t steps[] = {{small, 0, true}};
    server_t s;
    pthread_t t;
    start(&s, &t, steps, 1, NULL);
    tclient_t *c = connect_to(&s, "/tessel/");
    tsl_error_t err;
    assert_int_equal(tclient_request(c, "GET", "/v1/whoami", NULL, NULL, &err), 0);
    tclient_destroy(c);
    stop(&s, t);
    assert_non_null(strstr(s.requests[0], "GET /tessel/v1/whoami HTTP/1.1\r\n"));
    assert_null(tclient_new("http://127.0.0.1:1", "tsl_a\r\nX-Admin: 1", &err));
    assert_int_equal(errno, EINVAL);
    assert_non_null(strstr(err.text, "control character"));
}

/* With http_proxy set, a TCP request goes through libcurl to the proxy, as before. */
static void test_proxy_uses_libcurl(void **state)
{
    step_t steps[] = {{"HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\n"
                       "{\"n\":3}\n",
                       0, true}};
    server_t s;
    pthread_t t;
    start(&s, &t, steps, 1, NULL);
    char proxy[64];
    snprintf(proxy, sizeof proxy, "http://127.0.0.1:%d", s.port);
    setenv("http_proxy", proxy, 1);
    setenv("no_proxy", "", 1);
    tsl_error_t err;
    tclient_t *c = tclient_new("http://tesseld.invalid:7470", "tsl_tok", &err);
    assert_non_null(c);
    json_t *a = NULL;
    assert_int_equal(tclient_request(c, "GET", "/v1/whoami", NULL, &a, &err), 0);
    assert_int_equal(json_integer_value(json_object_get(a, "n")), 3);
    json_decref(a);
    tclient_destroy(c);
    stop(&s, t);
    unsetenv("http_proxy");
    unsetenv("no_proxy");
    assert_non_null(strstr(s.requests[0], "GET http://tesseld.invalid:7470/v1/whoami HTTP/1.1"));
    assert_non_null(strstr(s.requests[0], "Authorization: Bearer tsl_tok\r\n"));
}

static void test_escape(void **state)
{
    char *e = tclient_escape("a b&c=d/é~-._Z9");
    assert_string_equal(e, "a%20b%26c%3Dd%2F%C3%A9~-._Z9");
    free(e);
    e = tclient_escape("");
    assert_string_equal(e, "");
    free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chunked_keepalive),  cmocka_unit_test(test_reconnect),
        cmocka_unit_test(test_early_close),        cmocka_unit_test(test_oversized_headers),
        cmocka_unit_test(test_logs_two_streams),   cmocka_unit_test(test_prefix_and_token),
        cmocka_unit_test(test_proxy_uses_libcurl), cmocka_unit_test(test_escape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
