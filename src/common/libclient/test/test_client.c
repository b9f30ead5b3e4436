/* test_client.c - libclient: the config file (read, save with mode 0600, TESSEL_URL /
 * TESSEL_TOKEN override, the local socket by default), tesseld's default paths in system and
 * personal mode, error decoding, and requests against a canned one-shot HTTP server on
 * loopback or a Unix socket (method, path, token and body sent; answers, API errors and a
 * refused connection decoded). */
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
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "tessel/client.h"

static char tmpdir[64];

static int setup(void **state)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test-client-XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    return 0;
}

static int teardown(void **state)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_config_read(void **state)
{
    char path[128];
    snprintf(path, sizeof path, "%s/ok", tmpdir);
    write_file(path, "# comment\n\n  url = http://127.0.0.1:9999/  \ntoken=tsl_abc\n");
    tclient_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    tsl_error_t err;
    assert_int_equal(tclient_config_read(&cfg, path, &err), 0);
    assert_string_equal(cfg.url, "http://127.0.0.1:9999");
    assert_string_equal(cfg.token, "tsl_abc");

    snprintf(path, sizeof path, "%s/bad", tmpdir);
    write_file(path, "url = http://x\nflavour = mint\n");
    tclient_config_t before = cfg;
    assert_int_equal(tclient_config_read(&cfg, path, &err), -1);
    assert_int_equal(errno, EINVAL);
    assert_non_null(strstr(err.text, ":2: unknown key 'flavour'"));
    assert_memory_equal(&cfg, &before, sizeof cfg); /* untouched */

    write_file(path, "just words\n");
    assert_int_equal(tclient_config_read(&cfg, path, &err), -1);
    assert_non_null(strstr(err.text, ":1:"));

    snprintf(path, sizeof path, "%s/absent", tmpdir);
    assert_int_equal(tclient_config_read(&cfg, path, &err), -1);
    assert_int_equal(errno, ENOENT);
}

static void test_config_save_load(void **state)
{
    char path[128];
    snprintf(path, sizeof path, "%s/sub/dir/config", tmpdir);
    tclient_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    snprintf(cfg.url, sizeof cfg.url, "http://127.0.0.1:7471");
    snprintf(cfg.token, sizeof cfg.token, "tsl_secret");
    tsl_error_t err;
    assert_int_equal(tclient_config_save(&cfg, path, &err), 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    /* A world-readable file of that name is replaced by a private one. */
    assert_int_equal(chmod(path, 0644), 0);
    assert_int_equal(tclient_config_save(&cfg, path, &err), 0);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    char dir[128];
    snprintf(dir, sizeof dir, "%s/sub/dir", tmpdir);
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);

    setenv("TESSEL_CONFIG", path, 1);
    unsetenv("TESSEL_URL");
    unsetenv("TESSEL_TOKEN");
    tclient_config_t got;
    assert_int_equal(tclient_config_load(&got, &err), 0);
    assert_string_equal(got.url, "http://127.0.0.1:7471");
    assert_string_equal(got.token, "tsl_secret");
    assert_string_equal(got.path, path);
    assert_false(got.url_from_env);

    setenv("TESSEL_URL", "http://127.0.0.1:1234/", 1);
    setenv("TESSEL_TOKEN", "tsl_fromenv", 1);
    assert_int_equal(tclient_config_load(&got, &err), 0);
    assert_string_equal(got.url, "http://127.0.0.1:1234");
    assert_string_equal(got.token, "tsl_fromenv");
    assert_true(got.url_from_env && got.token_from_env);

    /* No file at all: the default URL (or the system socket, when this machine runs a
     * system tesseld), no token. */
    unsetenv("TESSEL_URL");
    unsetenv("TESSEL_TOKEN");
    setenv("HOME", tmpdir, 1);
    unsetenv("XDG_DATA_HOME");
    unsetenv("XDG_RUNTIME_DIR");
    snprintf(path, sizeof path, "%s/nothing-here", tmpdir);
    setenv("TESSEL_CONFIG", path, 1);
    assert_int_equal(tclient_config_load(&got, &err), 0);
    struct stat sys;
    bool system_socket = stat(TCLIENT_SYSTEM_SOCKET, &sys) == 0 && S_ISSOCK(sys.st_mode);
    assert_string_equal(got.url,
                        system_socket ? "unix:" TCLIENT_SYSTEM_SOCKET : TCLIENT_DEFAULT_URL);
    assert_string_equal(got.token, "");
    assert_true(got.url_is_default);

    /* Without TESSEL_CONFIG: under XDG_CONFIG_HOME, else HOME. */
    unsetenv("TESSEL_CONFIG");
    setenv("XDG_CONFIG_HOME", "/xdg", 1);
    char p[256];
    assert_int_equal(tclient_config_path(p, sizeof p, &err), 0);
    assert_string_equal(p, "/xdg/tessel/config");
    unsetenv("XDG_CONFIG_HOME");
    setenv("HOME", "/home/alice", 1);
    assert_int_equal(tclient_config_path(p, sizeof p, &err), 0);
    assert_string_equal(p, "/home/alice/.config/tessel/config");
}

static void test_decode_error(void **state)
{
    tsl_error_t err;
    char code[32];
    const char *b = "{\"error\":{\"code\":\"unknown_field\",\"message\":\"unknown field 'gpuz'\","
                    "\"field\":\"gpuz\"}}";
    assert_int_equal(tclient_decode_error(400, b, strlen(b), code, sizeof code, &err), EINVAL);
    assert_string_equal(err.text, "unknown field 'gpuz'");
    assert_string_equal(code, "unknown_field");
    b = "{\"error\":{\"code\":\"unauthorized\",\"message\":\"unknown or revoked token\"}}";
    assert_int_equal(tclient_decode_error(401, b, strlen(b), code, sizeof code, &err), EACCES);
    assert_non_null(strstr(err.text, "unknown or revoked token"));
    assert_non_null(strstr(err.text, "tessel login"));
    assert_int_equal(tclient_decode_error(404, "", 0, code, sizeof code, &err), ENOENT);
    assert_string_equal(err.text, "tesseld answered HTTP 404");
    assert_string_equal(code, "");
    assert_int_equal(tclient_decode_error(502, "<html>", 6, NULL, 0, &err), EIO);
    assert_int_equal(tclient_decode_error(422, "{}", 2, NULL, 0, &err), EDOM);
    assert_int_equal(tclient_decode_error(409, "{}", 2, NULL, 0, &err), EEXIST);
    assert_int_equal(tclient_decode_error(403, "{}", 2, NULL, 0, &err), EPERM);
}

/* ---- a one-shot HTTP server on loopback ---- */

typedef struct {
    int fd;
    int port;
    const char *answer; /* the whole HTTP answer */
    char request[8192]; /* what the client sent */
} server_t;

static void *serve(void *arg)
{
    server_t *s = arg;
    int c = accept(s->fd, NULL, NULL);
    if (c < 0)
        return NULL;
    size_t n = 0;
    for (;;) {
        ssize_t r = read(c, s->request + n, sizeof s->request - 1 - n);
        if (r <= 0)
            break;
        n += (size_t)r;
        s->request[n] = '\0';
        char *end = strstr(s->request, "\r\n\r\n");
        if (!end)
            continue;
        const char *cl = strcasestr(s->request, "content-length:");
        size_t body = cl ? (size_t)atol(cl + 15) : 0;
        if (n >= (size_t)(end + 4 - s->request) + body)
            break;
    }
    if (write(c, s->answer, strlen(s->answer)) < 0) {
        /* the test sees the failure in the client */
    }
    close(c);
    return NULL;
}

static void server_start(server_t *s, pthread_t *t, const char *answer)
{
    memset(s, 0, sizeof *s);
    s->answer = answer;
    s->fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(s->fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(s->fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t len = sizeof a;
    assert_int_equal(getsockname(s->fd, (struct sockaddr *)&a, &len), 0);
    s->port = ntohs(a.sin_port);
    assert_int_equal(listen(s->fd, 4), 0);
    assert_int_equal(pthread_create(t, NULL, serve, s), 0);
}

static void server_stop(server_t *s, pthread_t t)
{
    pthread_join(t, NULL);
    close(s->fd);
}

static void test_request_ok(void **state)
{
    server_t s;
    pthread_t t;
    const char *body = "{\"id\":42,\"state\":\"pending\"}";
    char answer[256];
    snprintf(answer, sizeof answer,
             "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n"
             "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
             strlen(body), body);
    server_start(&s, &t, answer);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/", s.port);
    tsl_error_t err;
    tclient_t *c = tclient_new(url, "tsl_tok", &err);
    assert_non_null(c);
    json_t *req = json_pack("{s:[s], s:f}", "argv", "true", "gpu", 0.5);
    json_t *ans = NULL;
    assert_int_equal(tclient_request(c, "POST", "/v1/jobs", req, &ans, &err), 0);
    server_stop(&s, t);
    assert_int_equal(tclient_status(c), 201);
    assert_int_equal(json_integer_value(json_object_get(ans, "id")), 42);
    assert_non_null(strstr(s.request, "POST /v1/jobs HTTP/1.1\r\n"));
    assert_non_null(strstr(s.request, "Authorization: Bearer tsl_tok\r\n"));
    assert_non_null(strstr(s.request, "Content-Type: application/json\r\n"));
    assert_non_null(strstr(s.request, "\r\n\r\n{\"argv\":[\"true\"],\"gpu\":0.5}"));
    json_decref(req);
    json_decref(ans);
    tclient_destroy(c);
}

static void test_request_error(void **state)
{
    server_t s;
    pthread_t t;
    const char *body = "{\"error\":{\"code\":\"not_found\",\"message\":\"no job 7\"}}";
    char answer[256];
    snprintf(answer, sizeof answer,
             "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
             "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
             strlen(body), body);
    server_start(&s, &t, answer);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", s.port);
    tsl_error_t err;
    tclient_t *c = tclient_new(url, NULL, &err);
    json_t *ans = (json_t *)1;
    assert_int_equal(tclient_request(c, "GET", "/v1/jobs/7", NULL, &ans, &err), -1);
    assert_int_equal(errno, ENOENT);
    server_stop(&s, t);
    assert_null(ans);
    assert_string_equal(err.text, "no job 7");
    assert_string_equal(tclient_error_code(c), "not_found");
    assert_int_equal(tclient_status(c), 404);
    assert_non_null(strstr(s.request, "GET /v1/jobs/7 HTTP/1.1\r\n"));
    assert_null(strstr(s.request, "Authorization"));
    tclient_destroy(c);
}

static void test_request_not_json(void **state)
{
    server_t s;
    pthread_t t;
    server_start(&s, &t, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello");
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", s.port);
    tsl_error_t err;
    tclient_t *c = tclient_new(url, "tsl_x", &err);
    json_t *ans;
    assert_int_equal(tclient_request(c, "DELETE", "/v1/queues/q", NULL, &ans, &err), -1);
    assert_int_equal(errno, EPROTO);
    server_stop(&s, t);
    assert_non_null(strstr(s.request, "DELETE /v1/queues/q HTTP/1.1\r\n"));
    assert_non_null(strstr(err.text, "not JSON"));
    tclient_destroy(c);
}

static void test_request_refused(void **state)
{
    /* A port that was just free: bind, read the port, close. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t len = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &len);
    close(fd);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", ntohs(a.sin_port));
    tsl_error_t err;
    tclient_t *c = tclient_new(url, "tsl_x", &err);
    assert_int_equal(tclient_request(c, "GET", "/v1/whoami", NULL, NULL, &err), -1);
    assert_int_equal(errno, ECONNREFUSED);
    assert_non_null(strstr(err.text, "cannot reach tesseld at"));
    assert_null(strchr(err.text, '\n'));
    tclient_destroy(c);
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

static void test_logs(void **state)
{
    server_t s;
    pthread_t t;
    /* A chunked answer, as tesseld sends a followed log. */
    server_start(&s, &t,
                 "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Tessel-Job-State: running\r\n"
                 "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                 "6\r\nhello \r\n6\r\nworld\n\r\n0\r\n\r\n");
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", s.port);
    tsl_error_t err;
    tclient_t *c = tclient_new(url, "tsl_tok", &err);
    char got[256] = "";
    tclient_log_t log = {.stream = "stderr", .offset = 5, .write = collect, .arg = got};
    assert_int_equal(tclient_logs(c, 42, &log, 1, true, NULL, &err), 0);
    server_stop(&s, t);
    assert_string_equal(got, "hello world\n");
    assert_int_equal(log.offset, 5 + 12);
    assert_string_equal(log.state, "running");
    assert_non_null(strstr(s.request, "GET /v1/jobs/42/logs?stream=stderr&offset=5&follow=1 "));
    assert_non_null(strstr(s.request, "Authorization: Bearer tsl_tok\r\n"));

    /* An error answer: its JSON goes to err, not to the write function. */
    const char *body = "{\"error\":{\"code\":\"not_found\",\"message\":\"no job 42\"}}";
    char answer[256];
    snprintf(answer, sizeof answer,
             "HTTP/1.1 404 Not Found\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
             strlen(body), body);
    server_start(&s, &t, answer);
    tclient_destroy(c);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", s.port);
    c = tclient_new(url, "tsl_tok", &err);
    got[0] = '\0';
    log.offset = 0;
    assert_int_equal(tclient_logs(c, 42, &log, 1, false, NULL, &err), -1);
    assert_int_equal(errno, ENOENT);
    server_stop(&s, t);
    assert_string_equal(err.text, "no job 42");
    assert_string_equal(got, "");
    assert_int_equal(log.offset, 0);
    assert_int_equal(tclient_status(c), 404);
    assert_null(strstr(s.request, "follow"));

    /* A stop flag already set: EINTR before anything is delivered. */
    volatile sig_atomic_t stop = 1;
    assert_int_equal(tclient_logs(c, 42, &log, 1, true, &stop, &err), -1);
    assert_int_equal(errno, EINTR);
    tclient_destroy(c);
}

static void test_paths(void **state)
{
    tclient_paths_t p;
    tsl_error_t err;
    /* System mode: fixed paths, whatever the environment says. */
    assert_int_equal(tclient_default_paths(true, "/root", "/x", "/run/user/0", &p, &err), 0);
    assert_string_equal(p.data_dir, "/var/lib/tessel");
    assert_string_equal(p.socket, "/run/tessel/tesseld.sock");
    /* Personal mode: XDG first, then HOME; the socket beside the data without a runtime
     * directory. */
    assert_int_equal(
        tclient_default_paths(false, "/home/al", "/home/al/.data", "/run/user/1000", &p, &err), 0);
    assert_string_equal(p.data_dir, "/home/al/.data/tessel");
    assert_string_equal(p.socket, "/run/user/1000/tessel/tesseld.sock");
    assert_int_equal(tclient_default_paths(false, "/home/al", NULL, "", &p, &err), 0);
    assert_string_equal(p.data_dir, "/home/al/.local/share/tessel");
    assert_string_equal(p.socket, "/home/al/.local/share/tessel/tesseld.sock");
    /* Relative values are not paths of the user's (XDG base directory spec): ignored. */
    assert_int_equal(tclient_default_paths(false, "/home/al", "rel", "rel", &p, &err), 0);
    assert_string_equal(p.data_dir, "/home/al/.local/share/tessel");
    assert_string_equal(p.socket, "/home/al/.local/share/tessel/tesseld.sock");
    /* No home: refused, out untouched. */
    memset(&p, 'x', sizeof p);
    p.data_dir[sizeof p.data_dir - 1] = '\0';
    assert_int_equal(tclient_default_paths(false, NULL, NULL, "/run/user/1", &p, &err), -1);
    assert_int_equal(errno, ENOENT);
    assert_non_null(strstr(err.text, "--data-dir"));
    assert_int_equal(p.data_dir[0], 'x');
    /* A socket path above sun_path's 107 bytes is refused, not cut. */
    char longdir[200];
    memset(longdir, 'd', sizeof longdir);
    longdir[0] = '/';
    longdir[sizeof longdir - 1] = '\0';
    assert_int_equal(tclient_default_paths(false, "/home/al", NULL, longdir, &p, &err), -1);
    assert_int_equal(errno, ENAMETOOLONG);
    assert_non_null(strstr(err.text, "--socket"));

    assert_string_equal(tclient_url_socket("unix:/run/t.sock"), "/run/t.sock");
    assert_string_equal(tclient_url_socket("unix:///run/t.sock"), "/run/t.sock");
    assert_null(tclient_url_socket("unix:run/t.sock"));
    assert_null(tclient_url_socket("http://127.0.0.1:7470"));
}

/* One canned answer on a Unix socket at path (served by serve()). */
static void server_start_unix(server_t *s, pthread_t *t, const char *path, const char *answer)
{
    memset(s, 0, sizeof *s);
    s->answer = answer;
    s->fd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(s->fd >= 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    assert_true(strlen(path) < sizeof a.sun_path);
    memcpy(a.sun_path, path, strlen(path) + 1);
    assert_int_equal(bind(s->fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(s->fd, 4), 0);
    assert_int_equal(pthread_create(t, NULL, serve, s), 0);
}

static void test_unix_socket(void **state)
{
    /* A socket at the personal default path: the config's default URL when nothing is
     * configured, and a request through it reaches it. */
    char run[128], sock[192], cfgpath[192];
    snprintf(run, sizeof run, "%s/run", tmpdir);
    snprintf(sock, sizeof sock, "%s/tessel", run);
    assert_int_equal(mkdir(run, 0700), 0);
    assert_int_equal(mkdir(sock, 0700), 0);
    snprintf(sock, sizeof sock, "%s/tessel/tesseld.sock", run);
    snprintf(cfgpath, sizeof cfgpath, "%s/no-config", tmpdir);
    setenv("TESSEL_CONFIG", cfgpath, 1);
    setenv("XDG_RUNTIME_DIR", run, 1);
    unsetenv("TESSEL_URL");
    unsetenv("TESSEL_TOKEN");

    server_t s;
    pthread_t t;
    const char *body = "{\"user\":\"alice\"}";
    char answer[256];
    snprintf(answer, sizeof answer,
             "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
             "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
             strlen(body), body);
    server_start_unix(&s, &t, sock, answer);

    tclient_config_t cfg;
    tsl_error_t err;
    assert_int_equal(tclient_config_load(&cfg, &err), 0);
    char want[256];
    snprintf(want, sizeof want, "unix:%s", sock);
    assert_string_equal(cfg.url, want);
    assert_string_equal(cfg.token, "");
    assert_true(cfg.url_is_default);

    tclient_t *c = tclient_new(cfg.url, NULL, &err);
    assert_non_null(c);
    json_t *ans = NULL;
    assert_int_equal(tclient_request(c, "GET", "/v1/whoami", NULL, &ans, &err), 0);
    server_stop(&s, t);
    assert_string_equal(json_string_value(json_object_get(ans, "user")), "alice");
    assert_non_null(strstr(s.request, "GET /v1/whoami HTTP/1.1\r\n"));
    assert_null(strstr(s.request, "Authorization"));
    json_decref(ans);
    tclient_destroy(c);

    /* A configured token keeps the TCP address (tokens are for TCP callers). */
    setenv("TESSEL_TOKEN", "tsl_x", 1);
    assert_int_equal(tclient_config_load(&cfg, &err), 0);
    assert_string_equal(cfg.url, TCLIENT_DEFAULT_URL);
    unsetenv("TESSEL_TOKEN");
    /* TESSEL_URL wins over the socket. */
    setenv("TESSEL_URL", "http://127.0.0.1:9", 1);
    assert_int_equal(tclient_config_load(&cfg, &err), 0);
    assert_string_equal(cfg.url, "http://127.0.0.1:9");
    assert_false(cfg.url_is_default);
    unsetenv("TESSEL_URL");

    /* The socket gone (tesseld stopped): a clear error naming it, no hang. */
    unlink(sock);
    c = tclient_new(want, NULL, &err);
    assert_non_null(c);
    assert_int_equal(tclient_request(c, "GET", "/v1/whoami", NULL, NULL, &err), -1);
    assert_non_null(strstr(err.text, want));
    tclient_destroy(c);
    unsetenv("XDG_RUNTIME_DIR");
    unsetenv("TESSEL_CONFIG");
}

static void test_new_bad_url(void **state)
{
    tsl_error_t err;
    assert_null(tclient_new("https://x", "t", &err));
    assert_int_equal(errno, EINVAL);
    assert_null(tclient_new("localhost:7470", "t", &err));
    assert_null(tclient_new("http://", "t", &err));
    assert_non_null(strstr(err.text, "http://HOST:PORT"));
    assert_null(tclient_new("unix:relative.sock", "t", &err));
    assert_int_equal(errno, EINVAL);
    tclient_destroy(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_read),     cmocka_unit_test(test_config_save_load),
        cmocka_unit_test(test_decode_error),    cmocka_unit_test(test_request_ok),
        cmocka_unit_test(test_request_error),   cmocka_unit_test(test_request_not_json),
        cmocka_unit_test(test_request_refused), cmocka_unit_test(test_logs),
        cmocka_unit_test(test_new_bad_url),     cmocka_unit_test(test_paths),
        cmocka_unit_test(test_unix_socket),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
