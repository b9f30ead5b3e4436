/* test_jobsvc.c - a job's web services, the pure rules (jobsvc.c): the names allowed, the check
 * of a submission's "services" (shape, names, ports, duplicates, bounds) and the sockets'
 * paths (their length against a Unix socket's). */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),         cmocka_unit_test(test_check_ok),
        cmocka_unit_test(test_check_refused), cmocka_unit_test(test_sock),
        cmocka_unit_test(test_cookie),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
