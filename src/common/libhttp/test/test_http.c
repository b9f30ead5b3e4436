/* test_http.c - libhttp: route matching, errno mapping, and a live server on loopback
 * (body limit, malformed JSON, unknown fields, 404/405, JSON error bodies); the Unix-socket
 * listener and the peer's credentials. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static const thttp_route_t routes[] = {
    {"GET", "/cred", h_cred},
    {"POST", "/echo", h_echo},
    {"GET", "/items/{id}", h_item},
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

static void test_server(void **state)
{
    thttp_config_t cfg = {.host = "127.0.0.1",
                          .port = 0,
                          .max_body = 1024,
                          .routes = routes,
                          .nroutes = sizeof routes / sizeof routes[0]};
    tsl_error_t err;
    thttp_server_t *s = thttp_start(&cfg, &err);
    assert_non_null(s);
    uint16_t port = thttp_port(s);
    assert_true(port > 0);
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

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_match),
        cmocka_unit_test(test_errno),
        cmocka_unit_test(test_server),
        cmocka_unit_test(test_unix),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
