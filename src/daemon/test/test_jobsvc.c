/* test_jobsvc.c - a job's web services, the pure rules (jobsvc.c): the names allowed, the check
 * of a submission's "services" (shape, names, ports, duplicates, bounds), the sockets'
 * paths (their length against a Unix socket's), the cookie, and a service's own origin: the
 * domain, the Host header's parse, the rule against requests from other origins, the filter
 * of a service's Set-Cookie; the activity table of the idle rule. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "daemon/jobsvc.h"
#include "libstore/store.h"

static void test_names(void **state)
{
    (void)state;
    assert_true(tsd_svc_name_valid("jupyter"));
    assert_true(tsd_svc_name_valid("tb"));
    assert_true(tsd_svc_name_valid("a"));
    assert_true(tsd_svc_name_valid("model-v2"));
    assert_true(tsd_svc_name_valid("abcdefghijklmnop")); /* 16 */
    assert_false(tsd_svc_name_valid("abcdefghijklmnopq"));
    assert_false(tsd_svc_name_valid(""));
    assert_false(tsd_svc_name_valid(NULL));
    assert_false(tsd_svc_name_valid("2web"));
    assert_false(tsd_svc_name_valid("-web"));
    assert_false(tsd_svc_name_valid("web-"));
    assert_false(tsd_svc_name_valid("Web"));
    assert_false(tsd_svc_name_valid("we_b"));
    assert_false(tsd_svc_name_valid("we.b"));
    assert_false(tsd_svc_name_valid(".."));
    assert_false(tsd_svc_name_valid("a/b"));
    assert_false(tsd_svc_name_valid("a b"));
    assert_false(tsd_svc_name_valid("a%2f"));
}

/* tsd_svc_check on the JSON text in; the result (NULL: refused, errno EINVAL and err's text
 * holding want). */
static char *check(const char *in, const char *want)
{
    json_t *v = json_loads(in, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    assert_non_null(v);
    tsl_error_t err = {.text = ""};
    errno = 0;
    char *s = tsd_svc_check(v, &err);
    json_decref(v);
    if (want) {
        assert_null(s);
        assert_int_equal(errno, EINVAL);
        if (!strstr(err.text, want))
            fail_msg("error \"%s\" does not hold \"%s\"", err.text, want);
    }
    return s;
}

static void test_check_ok(void **state)
{
    (void)state;
    char *s = check("[{\"name\": \"jupyter\", \"port\": 8888}]", NULL);
    assert_non_null(s);
    assert_string_equal(s, "[{\"name\":\"jupyter\",\"port\":8888}]");
    free(s);
    s = check("[{\"port\": 1, \"name\": \"a\"}, {\"name\": \"b\", \"port\": 65535},"
              " {\"name\": \"c\", \"port\": 80}, {\"name\": \"d\", \"port\": 81}]",
              NULL);
    assert_non_null(s);
    free(s);
}

static void test_check_refused(void **state)
{
    (void)state;
    check("{}", "must be an array");
    check("[]", "must be an array");
    check("\"jupyter\"", "must be an array");
    check("[1]", "must be an array");
    check("[{\"name\": \"a\"}]", "must be an array");
    check("[{\"name\": \"a\", \"port\": 1, \"host\": \"0.0.0.0\"}]", "must be an array");
    check("[{\"name\": \"a\", \"port\": 1}, {\"name\": \"b\", \"port\": 2},"
          " {\"name\": \"c\", \"port\": 3}, {\"name\": \"d\", \"port\": 4},"
          " {\"name\": \"e\", \"port\": 5}]",
          "1 to 4 objects");
    check("[{\"name\": \"A\", \"port\": 1}]", "a name is");
    check("[{\"name\": \"../x\", \"port\": 1}]", "a name is");
    check("[{\"name\": \"a\\u0000b\", \"port\": 1}]", "a name is");
    check("[{\"name\": 7, \"port\": 1}]", "a name is");
    check("[{\"name\": \"a\", \"port\": 0}]", "a's port must be an integer 1..65535");
    check("[{\"name\": \"a\", \"port\": 65536}]", "1..65535");
    check("[{\"name\": \"a\", \"port\": -1}]", "1..65535");
    check("[{\"name\": \"a\", \"port\": \"80\"}]", "1..65535");
    check("[{\"name\": \"a\", \"port\": 8.5}]", "1..65535");
    check("[{\"name\": \"a\", \"port\": 1}, {\"name\": \"a\", \"port\": 2}]", "a is given twice");
    check("[{\"name\": \"a\", \"port\": 1}, {\"name\": \"b\", \"port\": 1}]",
          "b's port 1 is another service's too");
}

static void test_sock(void **state)
{
    (void)state;
    char buf[200];
    assert_int_equal(tsd_svc_sock("/var/lib/tessel", 42, "jupyter", buf, sizeof buf), 0);
    assert_string_equal(buf, "/var/lib/tessel/jobsvc/j42-jupyter.sock");
    /* The whole path must fit a Unix socket (107 bytes and its NUL). */
    char dir[120];
    memset(dir, 'd', sizeof dir);
    dir[0] = '/';
    dir[107 - strlen("/jobsvc/j1-a.sock")] = '\0'; /* exactly 107 in all */
    assert_int_equal(tsd_svc_sock(dir, 1, "a", buf, sizeof buf), 0);
    assert_int_equal(strlen(buf), 107);
    dir[107 - strlen("/jobsvc/j1-a.sock")] = 'd';
    dir[108 - strlen("/jobsvc/j1-a.sock")] = '\0'; /* 108 */
    errno = 0;
    assert_int_equal(tsd_svc_sock(dir, 1, "a", buf, sizeof buf), -1);
    assert_int_equal(errno, ENAMETOOLONG);
    /* A buffer too short. */
    assert_int_equal(tsd_svc_sock("/d", 1, "a", buf, 10), -1);
    assert_int_equal(errno, ENAMETOOLONG);
    /* A name that is not one never makes a path. */
    assert_int_equal(tsd_svc_sock("/d", 1, "../x", buf, sizeof buf), -1);
    assert_int_equal(errno, EINVAL);
}

static const uint8_t key[TSD_SVC_COOKIE_KEY] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};

/* A cookie opens its job's service for its user until it expires, nothing else. */
static void test_cookie(void **state)
{
    (void)state;
    char c[TSD_SVC_COOKIE_MAX], user[TSTORE_NAME_MAX + 1];
    assert_int_equal(tsd_svc_cookie_make(key, 42, "jupyter", "alice", 5000, c), 0);
    assert_int_equal(strncmp(c, "alice:5000:", 11), 0);
    assert_int_equal(strlen(c), 11 + 64);
    assert_true(tsd_svc_cookie_check(key, 42, "jupyter", c, 4999, user, sizeof user));
    assert_string_equal(user, "alice");
    /* Expired, another job, another service, another key. */
    assert_false(tsd_svc_cookie_check(key, 42, "jupyter", c, 5000, user, sizeof user));
    assert_false(tsd_svc_cookie_check(key, 43, "jupyter", c, 1, user, sizeof user));
    assert_false(tsd_svc_cookie_check(key, 42, "tb", c, 1, user, sizeof user));
    uint8_t other[TSD_SVC_COOKIE_KEY] = {9};
    assert_false(tsd_svc_cookie_check(other, 42, "jupyter", c, 1, user, sizeof user));
    /* Another user or expiry written into it: the MAC no longer matches. */
    char forged[TSD_SVC_COOKIE_MAX];
    snprintf(forged, sizeof forged, "bob%s", c + 5);
    assert_false(tsd_svc_cookie_check(key, 42, "jupyter", forged, 1, user, sizeof user));
    snprintf(forged, sizeof forged, "alice:9999%s", c + 10);
    assert_false(tsd_svc_cookie_check(key, 42, "jupyter", forged, 1, user, sizeof user));
    /* One digit of the MAC changed. */
    snprintf(forged, sizeof forged, "%s", c);
    forged[strlen(forged) - 1] = forged[strlen(forged) - 1] == '0' ? '1' : '0';
    assert_false(tsd_svc_cookie_check(key, 42, "jupyter", forged, 1, user, sizeof user));
    /* Malformed. */
    static const char *const bad[] = {"",         "alice",       "alice:5000",  "alice::abc",
                                      ":5000:ab", "alice:-1:ab", "alice:5x:ab", "Alice:5000:ab",
                                      NULL};
    for (size_t i = 0; bad[i]; i++)
        assert_false(tsd_svc_cookie_check(key, 42, "jupyter", bad[i], 1, user, sizeof user));
    assert_false(tsd_svc_cookie_check(key, 42, "jupyter", NULL, 1, user, sizeof user));
    /* What cannot make a cookie. */
    assert_int_equal(tsd_svc_cookie_make(key, 42, "Jupyter", "alice", 5000, c), -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(tsd_svc_cookie_make(key, 42, "jupyter", "al:ice", 5000, c), -1);
    assert_int_equal(tsd_svc_cookie_make(key, 42, "jupyter", "al ice", 5000, c), -1);
}

static void test_domain(void **state)
{
    (void)state;
    static const char *const good[] = {"svc.localhost",         "localhost", "a",
                                       "gpu-1.lab.example.org", "x0.y1",     NULL};
    for (size_t i = 0; good[i]; i++)
        assert_true(tsd_svc_domain_valid(good[i]));
    static const char *const bad[] = {"",      ".svc",         "svc.",         "svc..localhost",
                                      "Svc.x", "-a.localhost", "a-.localhost", "a_b.localhost",
                                      "a b",   "a:80",         "*.localhost",  NULL};
    for (size_t i = 0; bad[i]; i++)
        assert_false(tsd_svc_domain_valid(bad[i]));
    assert_false(tsd_svc_domain_valid(NULL));
    char longlabel[70];
    memset(longlabel, 'a', 64);
    longlabel[64] = '\0';
    assert_false(tsd_svc_domain_valid(longlabel)); /* a label of 64 */
    longlabel[63] = '\0';
    assert_true(tsd_svc_domain_valid(longlabel));
    /* "a.a.a...a": 99 bytes pass, 101 (above TSD_SVC_DOMAIN_MAX) do not. */
    char longd[TSD_SVC_DOMAIN_MAX + 2];
    for (size_t i = 0; i < sizeof longd; i++)
        longd[i] = i % 2 ? '.' : 'a';
    longd[TSD_SVC_DOMAIN_MAX - 1] = '\0';
    assert_true(tsd_svc_domain_valid(longd));
    longd[TSD_SVC_DOMAIN_MAX - 1] = '.';
    longd[TSD_SVC_DOMAIN_MAX + 1] = '\0';
    assert_false(tsd_svc_domain_valid(longd));
}

/* The Host header: exactly j<ID>-<NAME>.<domain>[:port]; anything else is no service. */
static void test_host(void **state)
{
    (void)state;
    int64_t id = 0;
    char name[TSD_SVC_NAME_MAX + 1];
    assert_int_equal(
        tsd_svc_host_parse("j42-jupyter.svc.localhost:7471", "svc.localhost", &id, name), 0);
    assert_int_equal(id, 42);
    assert_string_equal(name, "jupyter");
    assert_int_equal(tsd_svc_host_parse("j7-my-tb.svc.localhost", "svc.localhost", &id, name), 0);
    assert_int_equal(id, 7);
    assert_string_equal(name, "my-tb");
    assert_int_equal(tsd_svc_host_parse("j123456789012345678-a.lab.org:1", "lab.org", &id, name),
                     0);
    assert_int_equal(id, 123456789012345678LL);
    static const char *const bad[] = {
        "",
        "127.0.0.1:7471",
        "svc.localhost",
        "j42-jupyter",
        "j42-jupyter.",
        "j0-web.svc.localhost",
        "j042-web.svc.localhost",
        "J42-web.svc.localhost",
        "j42-Web.svc.localhost",
        "j42web.svc.localhost",
        "j-web.svc.localhost",
        "j42-.svc.localhost",
        "j42-web-.svc.localhost",
        "j42-1web.svc.localhost",
        "j42-web.svc.localhost.",
        "j42-web.svc.localhost.evil.org",
        "j42-web.svc.localhostx",
        "j42-web.other.localhost",
        "x.j42-web.svc.localhost",
        "j42-web.x.svc.localhost",
        "j42-web.svc.localhost:",
        "j42-web.svc.localhost:123456",
        "j42-web.svc.localhost:80x",
        "j42-web.svc.localhost:80:80",
        "j42-web.svc.localhost :80",
        "j1234567890123456789-web.svc.localhost",
        "j42-averyveryverylongname.svc.localhost",
        "[::1]:7471",
        NULL,
    };
    for (size_t i = 0; bad[i]; i++) {
        if (tsd_svc_host_parse(bad[i], "svc.localhost", &id, name) != -1)
            fail_msg("Host %s accepted", bad[i]);
    }
    assert_int_equal(tsd_svc_host_parse(NULL, "svc.localhost", &id, name), -1);
    assert_int_equal(tsd_svc_host_parse("j1-a.svc.localhost", "", &id, name), -1);
}

/* Cross-site request forgery: only the service's own origin may change something. */
static void test_origin(void **state)
{
    (void)state;
    const char *h = "j42-web.svc.localhost:7471";
    /* Safe methods pass whatever their origin (the cookie is SameSite=Strict). */
    assert_null(tsd_svc_request_refused("GET", false, "cross-site", "http://evil", h));
    assert_null(tsd_svc_request_refused("HEAD", false, "same-site", NULL, h));
    assert_null(tsd_svc_request_refused("OPTIONS", false, "cross-site", "http://x", h));
    /* Its own origin, a typed URL, or a client that says nothing (curl, a script). */
    assert_null(tsd_svc_request_refused("POST", false, "same-origin",
                                        "http://"
                                        "j42-web.svc.localhost:7471",
                                        h));
    assert_null(tsd_svc_request_refused("PUT", false, "none", NULL, h));
    assert_null(tsd_svc_request_refused("DELETE", false, NULL, NULL, h));
    assert_null(tsd_svc_request_refused("GET", true, "same-origin",
                                        "http://j42-web.svc.localhost:7471", h));
    /* Another site, another service's page (same site), another origin. */
    assert_non_null(tsd_svc_request_refused("POST", false, "cross-site", NULL, h));
    assert_non_null(tsd_svc_request_refused("POST", false, "same-site", NULL, h));
    assert_non_null(
        tsd_svc_request_refused("PATCH", false, NULL, "http://j43-web.svc.localhost:7471", h));
    assert_non_null(
        tsd_svc_request_refused("POST", false, NULL, "http://j42-web.svc.localhost:8000", h));
    assert_non_null(
        tsd_svc_request_refused("POST", false, NULL, "https://j42-web.svc.localhost:7471", h));
    assert_non_null(tsd_svc_request_refused("POST", false, NULL, "null", h));
    assert_non_null(tsd_svc_request_refused("POST", false, "same-origin", "http://evil", h));
    assert_non_null(tsd_svc_request_refused("POST", false, NULL, "http://x", NULL));
    /* A WebSocket is held to the rule though its method is GET. */
    assert_non_null(tsd_svc_request_refused("GET", true, "same-site", NULL, h));
    assert_non_null(tsd_svc_request_refused("GET", true, NULL, "http://127.0.0.1:8000", h));
}

/* A service's Set-Cookie: tesseld's own name dropped, Domain removed, the rest as it came. */
static void test_set_cookie(void **state)
{
    (void)state;
    char out[256];
    assert_int_equal(tsd_svc_set_cookie_filter("_xsrf=2|ab; Path=/", out, sizeof out), 0);
    assert_string_equal(out, "_xsrf=2|ab; Path=/");
    assert_int_equal(
        tsd_svc_set_cookie_filter("a=1; Domain=svc.localhost; Path=/; HttpOnly", out, sizeof out),
        0);
    assert_string_equal(out, "a=1; Path=/; HttpOnly");
    assert_int_equal(tsd_svc_set_cookie_filter("a=1;domain=.localhost", out, sizeof out), 0);
    assert_string_equal(out, "a=1");
    assert_int_equal(tsd_svc_set_cookie_filter("a=1; DOMAIN = x; Max-Age=5", out, sizeof out), 0);
    assert_string_equal(out, "a=1; Max-Age=5");
    assert_int_equal(tsd_svc_set_cookie_filter("domain=1; Path=/", out, sizeof out), 0);
    assert_string_equal(out, "domain=1; Path=/"); /* a cookie named domain is no attribute */
    assert_int_equal(tsd_svc_set_cookie_filter("a=1; Domainx=y", out, sizeof out), 0);
    assert_string_equal(out, "a=1; Domainx=y");
    /* tesseld's own cookie, whatever its attributes: dropped. */
    assert_int_equal(tsd_svc_set_cookie_filter("tessel-svc=junk; Path=/x", out, sizeof out), 1);
    assert_int_equal(tsd_svc_set_cookie_filter(" tessel-svc =junk", out, sizeof out), 1);
    assert_int_equal(tsd_svc_set_cookie_filter("tessel-svc", out, sizeof out), 1);
    assert_int_equal(tsd_svc_set_cookie_filter("", out, sizeof out), 1);
    assert_int_equal(tsd_svc_set_cookie_filter(NULL, out, sizeof out), 1);
    assert_int_equal(tsd_svc_set_cookie_filter("tessel-svcx=1", out, sizeof out), 0);
    /* Too long for out: dropped. */
    assert_int_equal(tsd_svc_set_cookie_filter("a=123456789", out, 5), -1);
}

/* running() of test_act: the jobs of ids below 1000 run. */
static bool below_1000(void *ctx, int64_t job)
{
    (void)ctx;
    return job < 1000;
}

/* The activity table forgets no running job, however many (the review's F6: a table of 256
 * evicted one, which the idle rule then cancelled as idle since its start). */
static void test_act(void **state)
{
    (void)state;
    tsd_svc_acts_t a = {0};
    const long long idle = 60000;
    /* Job 1 used at 1000 ms, then 600 other jobs touched at 2000 ms. */
    assert_int_equal(tsd_svc_act_touch(&a, 1, 1000, 0), 0);
    for (int64_t j = 2; j <= 601; j++)
        assert_int_equal(tsd_svc_act_touch(&a, j, 2000, 0), 0);
    const tsd_svc_act_t *e = tsd_svc_act_find(&a, 1);
    assert_non_null(e);
    assert_int_equal(e->last_ms, 1000);
    assert_int_equal(a.n, 601);
    /* Started at 0: idle from 61000 on, not before; a job never touched is idle since its
     * start. */
    assert_false(tsd_svc_act_idle(&a, 1, 0, 60999, idle));
    assert_true(tsd_svc_act_idle(&a, 1, 0, 61000, idle));
    assert_true(tsd_svc_act_idle(&a, 999, 0, 60000, idle));
    assert_false(tsd_svc_act_idle(&a, 999, 10000, 60000, idle));
    /* An open WebSocket: never idle; closed, idle from its last traffic. */
    assert_int_equal(tsd_svc_act_touch(&a, 1, 5000, +1), 0);
    assert_false(tsd_svc_act_idle(&a, 1, 0, 1000000, idle));
    assert_int_equal(tsd_svc_act_touch(&a, 1, 7000, -1), 0);
    assert_int_equal(tsd_svc_act_touch(&a, 1, 7000, -1), 0); /* never below 0 */
    assert_int_equal(tsd_svc_act_find(&a, 1)->open_ws, 0);
    assert_false(tsd_svc_act_idle(&a, 1, 0, 66999, idle));
    assert_true(tsd_svc_act_idle(&a, 1, 0, 67000, idle));
    /* Pruned to the running jobs: all 601 run (ids below 1000); job 5000 does not. */
    assert_int_equal(tsd_svc_act_touch(&a, 5000, 1, 0), 0);
    tsd_svc_act_prune(&a, below_1000, NULL);
    assert_int_equal(a.n, 601);
    assert_null(tsd_svc_act_find(&a, 5000));
    assert_non_null(tsd_svc_act_find(&a, 601));
    /* An entry once lost (out of memory): a job without one is never idle. */
    a.lost = true;
    assert_false(tsd_svc_act_idle(&a, 999, 0, 1000000, idle));
    assert_true(tsd_svc_act_idle(&a, 2, 0, 1000000, idle));
    tsd_svc_act_free(&a);
    assert_int_equal(a.n, 0);
}

/* The ports browsers refuse (tsd_svc_port_browser_ok): refused for the services. */
static void test_browser_ports(void **state)
{
    (void)state;
    static const unsigned bad[] = {1, 22, 25, 601, 636, 989, 990, 993, 995, 6000, 6669, 10080};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_false(tsd_svc_port_browser_ok(bad[i]));
    static const unsigned good[] = {80, 443, 600, 602, 747, 999, 1023, 8080, 8888, 65535};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        assert_true(tsd_svc_port_browser_ok(good[i]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),    cmocka_unit_test(test_browser_ports),
        cmocka_unit_test(test_check_ok), cmocka_unit_test(test_check_refused),
        cmocka_unit_test(test_sock),     cmocka_unit_test(test_cookie),
        cmocka_unit_test(test_domain),   cmocka_unit_test(test_host),
        cmocka_unit_test(test_origin),   cmocka_unit_test(test_set_cookie),
        cmocka_unit_test(test_act),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
