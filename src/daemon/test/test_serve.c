/* test_serve.c - the pure parts of inference services (serve.h): a service's spec checked and
 * normalised (good and bad bodies, the field named), the meter of one replica (rates from two
 * readings, smoothing, a counter that went back), the weights (proportional to the measured
 * rates, so that mu_i / lambda_i is equal, bounded, unmeasured replicas at the mean), HAProxy's
 * configuration (token ACL, Authorization dropped, health check, maxconn, weights), and the
 * parse of `show stat json` as HAProxy 2.6 writes it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "daemon/serve.h"

static void test_spec_good(void **state)
{
    json_t *b = json_loads("{\"argv\":[\"srv\",\"--x\"],\"gpu\":0.25,\"gpu_mem\":\"6G\","
                           "\"cpu\":2,\"mem\":\"1G\",\"queue\":\"infer\",\"env\":{\"A\":\"b\"}}",
                           0, NULL);
    tsv_spec_t s;
    const char *field = NULL;
    char why[256];
    assert_int_equal(tsv_spec_parse(b, &s, &field, why, sizeof why), 0);
    assert_int_equal(s.gpu_milli, 250);
    assert_int_equal(s.gpu_count, 1);
    assert_int_equal(s.gpus, 0);
    assert_int_equal(s.gpu_mem, 6ull << 30);
    assert_int_equal(s.cpu_milli, 2000);
    assert_int_equal(s.mem, 1ull << 30);
    assert_string_equal(s.queue, "infer");
    json_t *o = tsv_spec_json(&s);
    char *text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(text,
                        "{\"argv\":[\"srv\",\"--x\"],\"cpu_milli\":2000,\"env\":{\"A\":\"b\"},"
                        "\"gpu_count\":1,\"gpu_mem\":6442450944,\"gpu_milli\":250,"
                        "\"gpus\":0,\"mem\":1073741824,\"queue\":\"infer\"}");
    free(text);
    json_decref(o);
    json_decref(b);
    /* Whole GPUs; no queue: "default". */
    b = json_loads("{\"argv\":[\"srv\"],\"gpu\":2}", 0, NULL);
    assert_int_equal(tsv_spec_parse(b, &s, &field, why, sizeof why), 0);
    assert_int_equal(s.gpus, 2);
    assert_int_equal(s.gpu_count, 2);
    assert_int_equal(s.gpu_milli, 1000);
    o = tsv_spec_json(&s);
    assert_string_equal(json_string_value(json_object_get(o, "queue")), "default");
    json_decref(o);
    json_decref(b);
}

static void test_spec_bad(void **state)
{
    static const struct {
        const char *body, *field, *why;
    } t[] = {
        {"{}", "argv", "argv must be an array"},
        {"{\"argv\":[]}", "argv", "argv must be an array"},
        {"{\"argv\":[\"\"]}", "argv", "argv[0] must not be empty"},
        {"{\"argv\":[\"a\",3]}", "argv", "argv[1] must be a string"},
        {"{\"argv\":[\"a\"],\"gpu\":0}", "gpu", "gpu must be a number above 0"},
        {"{\"argv\":[\"a\"],\"gpu\":\"x\"}", "gpu", "gpu must be a number above 0"},
        {"{\"argv\":[\"a\"],\"gpu\":0.0001}", "gpu", "gpu 0.0001: a fraction"},
        {"{\"argv\":[\"a\"],\"gpu\":1.5}", "gpu", "gpu 1.5: above 1"},
        {"{\"argv\":[\"a\"],\"gpu_mem\":\"6G\"}", "gpu_mem", "gpu_mem needs gpu"},
        {"{\"argv\":[\"a\"],\"gpu\":0.5,\"gpu_mem\":\"6Q\"}", "gpu_mem", "gpu_mem must be"},
        {"{\"argv\":[\"a\"],\"gpu\":0.5,\"gpu_mem\":0}", "gpu_mem", "gpu_mem must be"},
        {"{\"argv\":[\"a\"],\"cpu\":-1}", "cpu", "cpu must be"},
        {"{\"argv\":[\"a\"],\"mem\":true}", "mem", "mem must be"},
        {"{\"argv\":[\"a\"],\"queue\":\"Bad Q\"}", "queue", "queue must be a queue name"},
        {"{\"argv\":[\"a\"],\"env\":[]}", "env", "env must be an object"},
        {"{\"argv\":[\"a\"],\"env\":{\"PORT\":\"1\"}}", "env", "env 'PORT': set by Tessel"},
        {"{\"argv\":[\"a\"],\"env\":{\"TESSEL_JOB_ID\":\"1\"}}", "env", "env 'TESSEL_JOB_ID'"},
        {"{\"argv\":[\"a\"],\"env\":{\"A=B\":\"1\"}}", "env", "env name 'A=B'"},
        {"{\"argv\":[\"a\"],\"env\":{\"A\":1}}", "env", "env 'A' must be a string"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        json_t *b = json_loads(t[i].body, 0, NULL);
        assert_non_null(b);
        tsv_spec_t s;
        const char *field = NULL;
        char why[256] = "";
        assert_int_equal(tsv_spec_parse(b, &s, &field, why, sizeof why), -1);
        assert_string_equal(field, t[i].field);
        if (strncmp(why, t[i].why, strlen(t[i].why)) != 0)
            fail_msg("%s: '%s', expected '%s...'", t[i].body, why, t[i].why);
        json_decref(b);
    }
}

static void test_meter(void **state)
{
    tsv_meter_t m = {0};
    /* The first reading only primes. */
    tsv_meter_update(&m, 100, 5, 0, 1, 1000);
    assert_true(m.primed);
    assert_true(m.mu == 0);
    /* 400 requests in 2 s, 5 ms each: lambda 200/s, mu 200/s. */
    tsv_meter_update(&m, 500, 5, 1, 1, 3000);
    assert_float_equal(m.lambda, 200, 1e-9);
    assert_float_equal(m.mu, 200, 1e-9);
    assert_float_equal(m.latency_ms, 5, 1e-9);
    /* Smoothed: 10 ms next (mu 100): 0.7 * 200 + 0.3 * 100 = 170. */
    tsv_meter_update(&m, 600, 10, 1, 1, 5000);
    assert_float_equal(m.mu, 170, 1e-9);
    assert_float_equal(m.lambda, 50, 1e-9);
    /* No request: the rate stays, the arrival rate is 0. */
    tsv_meter_update(&m, 600, 10, 0, 1, 7000);
    assert_float_equal(m.mu, 170, 1e-9);
    assert_float_equal(m.lambda, 0, 1e-9);
    /* Concurrency 4 at 20 ms: 200/s, smoothed 0.7 * 170 + 0.3 * 200 = 179. */
    tsv_meter_update(&m, 700, 20, 4, 4, 9000);
    assert_float_equal(m.mu, 179, 1e-9);
    /* A counter that went back (a new proxy): starts over from this reading, rate kept. */
    tsv_meter_update(&m, 3, 20, 0, 1, 11000);
    assert_int_equal(m.req_tot, 3);
    assert_float_equal(m.lambda, 0, 1e-9);
    assert_float_equal(m.mu, 179, 1e-9);
}

/* No limit at the proxy (concurrency 0): the replica queues what it gets. */
static void test_meter_unlimited(void **state)
{
    tsv_meter_t m = {0};
    tsv_meter_update(&m, 0, 0, 0, 0, 0);
    /* Lightly loaded: 10 requests in 1 s, 5 ms each: 10 + 1000 / 5 = 210/s. */
    tsv_meter_update(&m, 10, 5, 1, 0, 1000);
    assert_float_equal(m.mu, 210, 1e-9);
    /* Overloaded: 70 answered in 1 s, 100 ms each (the wait in its own queue counted): its
     * rate is about what it answers, 70 + 10 = 80; smoothed 0.7 * 210 + 0.3 * 80 = 171. */
    tsv_meter_update(&m, 80, 100, 7, 0, 2000);
    assert_float_equal(m.lambda, 70, 1e-9);
    assert_float_equal(m.mu, 171, 1e-9);
}

static void test_weights(void **state)
{
    int w[4];
    /* 5 ms and 15 ms replicas: mu 200 and 66.7 -> 256 and 85; the shares 3:1 make
     * mu_i / lambda_i equal. */
    double mu[4] = {200, 200.0 / 3, 0, 0};
    tsv_weights(mu, 2, w);
    assert_int_equal(w[0], 256);
    assert_int_equal(w[1], 85);
    double share0 = (double)w[0] / (w[0] + w[1]), share1 = (double)w[1] / (w[0] + w[1]);
    assert_float_equal(mu[0] / share0, mu[1] / share1, 0.01 * mu[0] / share0);
    /* Nothing measured: all equal. */
    double none[3] = {0, 0, 0};
    tsv_weights(none, 3, w);
    assert_int_equal(w[0], 256);
    assert_int_equal(w[1], 256);
    assert_int_equal(w[2], 256);
    /* One not measured yet: the mean of the others (150 of 200 -> 192). */
    double some[3] = {200, 100, 0};
    tsv_weights(some, 3, w);
    assert_int_equal(w[0], 256);
    assert_int_equal(w[1], 128);
    assert_int_equal(w[2], 192);
    /* A very slow one keeps weight 1 (the health check, not the weight, removes replicas). */
    double slow[2] = {100000, 1};
    tsv_weights(slow, 2, w);
    assert_int_equal(w[0], 256);
    assert_int_equal(w[1], 1);
}

static void test_cfg(void **state)
{
    tsv_cfg_replica_t r[2] = {{12, 40001, 256, ""}, {13, 40002, 85, ""}};
    tsv_cfg_service_t s = {"llm", 9000, "/healthz", 2, "/d/serve/svc-1.tokens", r, 2};
    char *c = tsv_haproxy_cfg("/d/serve/haproxy.sock", &s, 1, true, "haproxy", "haproxy");
    assert_non_null(c);
    static const char *const want[] = {
        "stats socket /d/serve/haproxy.sock mode 600 level admin\n",
        "    user haproxy\n    group haproxy\n",
        "    hard-stop-after 10s\n", /* the process a reload replaces exits (M4) */
        "    nbthread 1\n",          /* one thread: the proxy's cost (serving.md) */
        "frontend fe_llm\n    bind 127.0.0.1:9000\n",
        "acl tessel_caller req.hdr(authorization),word(2,' '),sha2(256),hex,lower -m str -f "
        "/d/serve/svc-1.tokens\n",
        "http-request deny deny_status 401 unless tessel_caller\n",
        "http-request del-header authorization\n",
        "backend be_llm\n",
        "option httpchk GET /healthz\n",
        "default-server check inter 1s fall 2 rise 1 maxconn 2\n",
        "retries 2\n",
        "option redispatch 1\n",
        "server r12 127.0.0.1:40001 weight 256\n",
        "server r13 127.0.0.1:40002 weight 85\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(c, want[i]))
            fail_msg("missing '%s' in:\n%s", want[i], c);
    assert_null(strstr(c, "bind 0.0.0.0"));
    char *nouser = tsv_haproxy_cfg("/d/serve/haproxy.sock", &s, 1, true, NULL, NULL);
    assert_null(strstr(nouser, "user "));
    free(nouser);
    /* Concurrency 0: no maxconn (the replica queues what it gets). */
    s.concurrency = 0;
    char *u = tsv_haproxy_cfg("/d/serve/haproxy.sock", &s, 1, true, NULL, NULL);
    assert_non_null(strstr(u, "default-server check inter 1s fall 2 rise 1\n"));
    free(u);
    s.concurrency = 2;
    /* Without weights: every server at the maximum (the text compared for a reload). */
    char *bare = tsv_haproxy_cfg("/d/serve/haproxy.sock", &s, 1, false, NULL, NULL);
    assert_non_null(strstr(bare, "server r13 127.0.0.1:40002 weight 256\n"));
    r[1].weight = 3;
    char *bare2 = tsv_haproxy_cfg("/d/serve/haproxy.sock", &s, 1, false, NULL, NULL);
    assert_string_equal(bare, bare2); /* a weight alone never reloads the proxy */
    free(c);
    free(bare);
    free(bare2);
}

/* Replicas in namespaces of their own (docs/serving.md, "How a replica is reached"): each
 * server is its Unix socket, health-checked and weighted as a TCP one; a replica without a
 * socket (tesseld not root) stays on 127.0.0.1:port. */
static void test_cfg_unix(void **state)
{
    (void)state;
    tsv_cfg_replica_t r[3] = {{12, 40001, 256, "/var/lib/tessel/replicas/r12.sock"},
                              {13, 40002, 85, "/var/lib/tessel/replicas/r13.sock"},
                              {14, 40003, 7, ""}};
    tsv_cfg_service_t s = {"llm", 9000, "/healthz", 0, "/d/serve/svc-1.tokens", r, 3};
    char *c = tsv_haproxy_cfg("/d/serve/haproxy.sock", &s, 1, true, "haproxy", "haproxy");
    assert_non_null(c);
    static const char *const want[] = {
        "frontend fe_llm\n    bind 127.0.0.1:9000\n",
        "option httpchk GET /healthz\n    default-server check inter 1s fall 2 rise 1\n",
        "    server r12 unix@/var/lib/tessel/replicas/r12.sock weight 256\n",
        "    server r13 unix@/var/lib/tessel/replicas/r13.sock weight 85\n",
        "    server r14 127.0.0.1:40003 weight 7\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(c, want[i]))
            fail_msg("missing '%s' in:\n%s", want[i], c);
    /* No replica's port on TCP when it has a socket. */
    assert_null(strstr(c, "127.0.0.1:40001"));
    assert_null(strstr(c, "127.0.0.1:40002"));
    /* Without weights (the text compared for a reload): the same sockets. */
    char *bare = tsv_haproxy_cfg("/d/serve/haproxy.sock", &s, 1, false, NULL, NULL);
    assert_non_null(strstr(bare, "server r13 unix@/var/lib/tessel/replicas/r13.sock weight 256\n"));
    free(bare);
    free(c);
}

/* A field as HAProxy 2.6's `show stat json` writes it. */
#define F(ot, name, type, v)                                                                       \
    "{\"objType\":\"" ot "\",\"proxyId\":3,\"id\":1,\"field\":{\"pos\":0,\"name\":\"" name         \
    "\"},\"processNum\":1,\"tags\":{},\"value\":{\"type\":\"" type "\",\"value\":" v "}}"

typedef struct {
    int n;
    tsv_stat_t s[4];
    char names[4][2][32];
} seen_t;

static int on_stat(const tsv_stat_t *s, void *arg)
{
    seen_t *c = arg;
    c->s[c->n] = *s;
    snprintf(c->names[c->n][0], 32, "%s", s->backend);
    snprintf(c->names[c->n][1], 32, "%s", s->server);
    c->n++;
    return 0;
}

static void test_stat_parse(void **state)
{
    const char *text = "[[" F("Frontend", "pxname", "str", "\"fe_llm\"") "," F(
        "Frontend", "svname", "str",
        "\"FRONTEND\"") "],"
                        "[" F("Server", "pxname", "str", "\"be_llm\"") "," F("Server", "svname", "str", "\"r12\"") "," F("Server", "qcur", "u32", "3") "," F(
                            "Server", "scur",
                            "u32",
                            "1") "," F("Server", "stot", "u64",
                                       "90") "," F("Server", "status", "str",
                                                   "\"UP\"") "," F("Server", "rtime", "u32",
                                                                   "5") "," F("Server", "req_tot",
                                                                              "u64",
                                                                              "120") "],"
                                                                                     "[" F("Server", "pxname", "str", "\"be_llm\"") "," F(
                                                                                         "Server",
                                                                                         "svname",
                                                                                         "str",
                                                                                         "\"r13\"") "," F("Server",
                                                                                                          "stot",
                                                                                                          "u64",
                                                                                                          "40") "," F("Server",
                                                                                                                      "status",
                                                                                                                      "str",
                                                                                                                      "\"DOWN\"") "],"
                                                                                                                                  "[" F(
                                                                                                                                      "Backend",
                                                                                                                                      "pxname",
                                                                                                                                      "str",
                                                                                                                                      "\"be_llm\"") "," F("Backend",
                                                                                                                                                          "svname",
                                                                                                                                                          "str",
                                                                                                                                                          "\"BACKEND\"") "]]";
    seen_t c = {0};
    assert_int_equal(tsv_stat_parse(text, on_stat, &c), 0);
    assert_int_equal(c.n, 2);
    assert_string_equal(c.names[0][0], "be_llm");
    assert_string_equal(c.names[0][1], "r12");
    assert_int_equal(c.s[0].req_tot, 120); /* req_tot over stot */
    assert_float_equal(c.s[0].rtime_ms, 5, 1e-9);
    assert_int_equal(c.s[0].qcur, 3);
    assert_int_equal(c.s[0].scur, 1);
    assert_string_equal(c.names[1][1], "r13");
    assert_int_equal(c.s[1].req_tot, 40); /* no req_tot: the connections */
    assert_int_equal(tsv_stat_parse("Unknown command", on_stat, &c), -1);
    assert_int_equal(tsv_stat_parse("{}", on_stat, &c), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec_good), cmocka_unit_test(test_spec_bad),
        cmocka_unit_test(test_meter),     cmocka_unit_test(test_meter_unlimited),
        cmocka_unit_test(test_weights),   cmocka_unit_test(test_cfg),
        cmocka_unit_test(test_cfg_unix),  cmocka_unit_test(test_stat_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
