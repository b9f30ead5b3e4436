/* test_nodefig.c - a node's figures (nodefig.h): the exporter's JSON read back as written, a
 * table of answers a node (or something posing as one) could send that must be refused, and
 * the Prometheus text with its node label. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "libnodefig/nodefig.h"

static void fill(tnf_node_t *n)
{
    memset(n, 0, sizeof *n);
    snprintf(n->node, sizeof n->node, "n1");
    n->sampled_ms = 1795766152123;
    n->simulated = true;
    n->ngpus = 2;
    for (int i = 0; i < 2; i++) {
        n->gpus[i].index = i;
        snprintf(n->gpus[i].uuid, sizeof n->gpus[i].uuid,
                 "GPU-7e7e7e7e-7e7e-7e7e-7e7e-7e7e7e7e7e%02x", i);
        snprintf(n->gpus[i].model, sizeof n->gpus[i].model, "FakeGPU");
        n->gpus[i].memory_total = 8ull << 30;
        n->gpus[i].used_known = i == 0;
        n->gpus[i].memory_used = 3ull << 29;
        n->gpus[i].utilization = i == 0 ? 40 : -1;
    }
    tnf_slice_t a = {.job = 17,
                     .gpu = 0,
                     .memory_limit = 4ull << 30,
                     .memory_used = 1ull << 29,
                     .compute_pct = 50};
    snprintf(a.user, sizeof a.user, "alice");
    tnf_slice_t b = {.job = 18, .gpu = 1, .memory_limit = 0, .memory_used = 0, .compute_pct = 0};
    snprintf(b.user, sizeof b.user, "1234");
    assert_int_equal(tnf_add_slice(n, &a), 0);
    assert_int_equal(tnf_add_slice(n, &b), 0);
}

static void test_round_trip(void **state)
{
    (void)state;
    tnf_node_t n, back;
    fill(&n);
    json_t *j = tnf_to_json(&n);
    assert_non_null(j);
    char *text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    tsl_error_t err;
    assert_int_equal(tnf_from_json(text, strlen(text), &back, &err), 0);
    free(text);
    assert_string_equal(back.node, "n1");
    assert_int_equal(back.sampled_ms, 1795766152123);
    assert_string_equal(back.error, "");
    assert_true(back.simulated);
    assert_int_equal(back.ngpus, 2);
    assert_string_equal(back.gpus[1].uuid, n.gpus[1].uuid);
    assert_string_equal(back.gpus[0].model, "FakeGPU");
    assert_int_equal(back.gpus[0].memory_total, 8ull << 30);
    assert_true(back.gpus[0].used_known);
    assert_false(back.gpus[1].used_known);
    assert_int_equal(back.gpus[0].utilization, 40);
    assert_int_equal(back.gpus[1].utilization, -1);
    assert_int_equal(back.nslices, 2);
    assert_int_equal(back.slices[0].job, 17);
    assert_string_equal(back.slices[0].user, "alice");
    assert_int_equal(back.slices[0].memory_limit, 4ull << 30);
    assert_int_equal(back.slices[0].memory_used, 1ull << 29);
    assert_int_equal(back.slices[0].compute_pct, 50);
    assert_int_equal(back.slices[1].gpu, 1);
    assert_int_equal(back.slices[1].memory_limit, 0);
    assert_int_equal(back.slices[1].compute_pct, 0);
    tnf_node_clear(&back);
    tnf_node_clear(&n);
    tnf_node_clear(NULL);
}

/* What the exporter's JSON of a node with no GPU figures (NVML failed) looks like. */
static void test_error_and_unknown_fields(void **state)
{
    (void)state;
    const char *t = "{\"version\":1,\"node\":\"n2\",\"sampled_at_ms\":5,\"error\":\"nvmlInit: "
                    "no driver\",\"gpus\":[],\"slices\":[],\"later\":{\"x\":[1,2]}}";
    tnf_node_t n;
    tsl_error_t err;
    assert_int_equal(tnf_from_json(t, strlen(t), &n, &err), 0);
    assert_string_equal(n.error, "nvmlInit: no driver");
    assert_int_equal(n.ngpus, 0);
    assert_int_equal(n.nslices, 0);
    tnf_node_clear(&n);
}

#define GPU0                                                                                       \
    "{\"index\":0,\"uuid\":\"GPU-a\",\"model\":\"M\",\"memory_total\":8,\"memory_used\":1,"        \
    "\"utilization\":null}"
#define HEAD "{\"version\":1,\"node\":\"n1\",\"sampled_at_ms\":1,\"error\":null,"

static void test_refused(void **state)
{
    (void)state;
    static const struct {
        const char *json;
        int err;
        const char *why; /* a word of the message */
    } cases[] = {
        {"", EINVAL, "not JSON"},
        {"[1,2]", EINVAL, "not an object"},
        {"{\"version\":2,\"node\":\"n1\",\"sampled_at_ms\":1,\"gpus\":[],\"slices\":[]}", EPROTO,
         "version 2"},
        {"{\"node\":\"n1\",\"sampled_at_ms\":1,\"gpus\":[],\"slices\":[]}", EINVAL, "version"},
        {HEAD "\"gpus\":{},\"slices\":[]}", EINVAL, "not an array"},
        {HEAD "\"simulated\":1,\"gpus\":[],\"slices\":[]}", EINVAL, "simulated"},
        {HEAD "\"gpus\":[],\"slices\":[],\"node\":\"x\"}", EINVAL, "not JSON"}, /* duplicate */
        {"{\"version\":1,\"node\":\"a\\nb\",\"sampled_at_ms\":1,\"gpus\":[],\"slices\":[]}", EINVAL,
         "control"},
        {"{\"version\":1,\"node\":\"a\\u0000b\",\"sampled_at_ms\":1,\"gpus\":[],\"slices\":[]}",
         EINVAL, "not JSON"}, /* jansson refuses a NUL */
        {"{\"version\":1,\"node\":"
         "\"0123456789012345678901234567890123456789012345678901234567890123"
         "\",\"sampled_at_ms\":1,\"gpus\":[],\"slices\":[]}",
         EINVAL, "too long"},
        {"{\"version\":1,\"node\":\"n1\",\"sampled_at_ms\":-1,\"gpus\":[],\"slices\":[]}", EINVAL,
         "sampled_at_ms"},
        {HEAD "\"gpus\":[{\"index\":64,\"uuid\":\"u\",\"model\":\"m\",\"memory_total\":1}],"
              "\"slices\":[]}",
         EINVAL, "index"},
        {HEAD "\"gpus\":[{\"index\":0,\"uuid\":\"u\",\"model\":\"m\",\"memory_total\":-8}],"
              "\"slices\":[]}",
         EINVAL, "memory_total"},
        {HEAD "\"gpus\":[{\"index\":0,\"uuid\":\"u\",\"model\":\"m\",\"memory_total\":\"8G\"}],"
              "\"slices\":[]}",
         EINVAL, "memory_total"},
        {HEAD "\"gpus\":[" GPU0 "," GPU0 "],\"slices\":[]}", EINVAL, "twice"},
        {HEAD "\"gpus\":[" GPU0 "],\"slices\":[{\"job\":0,\"user\":\"a\",\"gpu\":0,"
              "\"memory_used\":1}]}",
         EINVAL, "job"},
        {HEAD "\"gpus\":[" GPU0 "],\"slices\":[{\"job\":3,\"user\":\"a\",\"gpu\":1,"
              "\"memory_used\":1}]}",
         EINVAL, "does not list"},
        {HEAD "\"gpus\":[" GPU0 "],\"slices\":[{\"job\":3,\"user\":\"a\",\"gpu\":0,"
              "\"memory_used\":1,\"compute_limit\":101}]}",
         EINVAL, "compute_limit"},
        {HEAD "\"gpus\":[" GPU0 "],\"slices\":[{\"job\":3,\"user\":7,\"gpu\":0,"
              "\"memory_used\":1}]}",
         EINVAL, "user"},
        {HEAD "\"gpus\":[" GPU0 "],\"slices\":[{\"job\":3,\"user\":\"a\",\"gpu\":0}]}", EINVAL,
         "memory_used"},
        {HEAD "\"gpus\":[" GPU0 "],\"slices\":[7]}", EINVAL, "not an object"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tnf_node_t n;
        tsl_error_t err = {0};
        errno = 0;
        int rc = tnf_from_json(cases[i].json, strlen(cases[i].json), &n, &err);
        if (rc != -1 || errno != cases[i].err || !strstr(err.text, cases[i].why))
            fail_msg("case %zu (%s): rc %d errno %d '%s'", i, cases[i].json, rc, errno, err.text);
        tnf_node_clear(&n);
    }
}

/* More than the bounds: 65 GPUs, 4097 slices, a text above 1 MiB. */
static void test_bounds(void **state)
{
    (void)state;
    size_t cap = 2u << 20;
    char *t = malloc(cap);
    assert_non_null(t);
    size_t n = (size_t)snprintf(t, cap, HEAD "\"gpus\":[");
    for (int i = 0; i < 65; i++)
        n += (size_t)snprintf(t + n, cap - n, "%s" GPU0, i ? "," : "");
    n += (size_t)snprintf(t + n, cap - n, "],\"slices\":[]}");
    tnf_node_t nd;
    tsl_error_t err;
    assert_int_equal(tnf_from_json(t, n, &nd, &err), -1);
    assert_non_null(strstr(err.text, "more GPUs"));
    tnf_node_clear(&nd);
    n = (size_t)snprintf(t, cap, HEAD "\"gpus\":[" GPU0 "],\"slices\":[");
    for (int i = 0; i < TNF_MAX_SLICES + 1; i++)
        n += (size_t)snprintf(t + n, cap - n,
                              "%s{\"job\":%d,\"user\":\"u\",\"gpu\":0,\"memory_used\":1}",
                              i ? "," : "", i + 1);
    n += (size_t)snprintf(t + n, cap - n, "]}");
    assert_int_equal(tnf_from_json(t, n, &nd, &err), -1);
    assert_non_null(strstr(err.text, "more GPUs or slices"));
    tnf_node_clear(&nd);
    memset(t, ' ', cap);
    assert_int_equal(tnf_from_json(t, TNF_MAX_JSON + 1, &nd, &err), -1);
    assert_non_null(strstr(err.text, "1 MiB"));
    tnf_node_clear(&nd);
    free(t);
}

static void test_prom(void **state)
{
    (void)state;
    tnf_node_t a, b;
    fill(&a);
    fill(&b);
    snprintf(b.node, sizeof b.node, "n2");
    const tnf_node_t *nodes[] = {&a, NULL, &b};
    tsl_prom_t p = {0};
    tnf_prom(&p, nodes, 3);
    size_t len;
    char *text = tsl_prom_take(&p, &len);
    assert_non_null(text);
    assert_non_null(strstr(text, "tessel_gpu_memory_total_bytes{node=\"n1\",gpu=\"0\",uuid=\"GPU-"
                                 "7e7e7e7e-7e7e-7e7e-7e7e-7e7e7e7e7e00\",model=\"FakeGPU\"} "
                                 "8589934592\n"));
    assert_non_null(strstr(text, "tessel_gpu_memory_total_bytes{node=\"n2\",gpu=\"1\""));
    assert_non_null(strstr(text,
                           "tessel_gpu_info{node=\"n1\",gpu=\"0\",uuid=\"GPU-7e7e7e7e-7e7e-"
                           "7e7e-7e7e-7e7e7e7e7e00\",model=\"FakeGPU\",simulated=\"1\"} 1\n"));
    assert_non_null(strstr(text, "tessel_slice_memory_used_bytes{node=\"n1\",gpu=\"0\",uuid=\"GPU-"
                                 "7e7e7e7e-7e7e-7e7e-7e7e-7e7e7e7e7e00\",job=\"17\",user=\"alice\"}"
                                 " 536870912\n"));
    assert_non_null(strstr(text, "tessel_slice_compute_limit_ratio{node=\"n2\",gpu=\"0\""));
    assert_non_null(strstr(text, "tessel_gpu_slices{node=\"n1\",gpu=\"1\",uuid=\"GPU-7e7e7e7e-"
                                 "7e7e-7e7e-7e7e-7e7e7e7e7e01\",model=\"FakeGPU\"} 1\n"));
    /* Unknown figures are absent, not 0: GPU 1's driver figure, slice 18's limit. */
    assert_null(strstr(text, "tessel_gpu_memory_used_bytes{node=\"n1\",gpu=\"1\""));
    assert_null(strstr(text, "tessel_slice_memory_limit_bytes{node=\"n1\",gpu=\"1\""));
    /* Each family once. */
    const char *first = strstr(text, "# TYPE tessel_gpu_info gauge");
    assert_non_null(first);
    assert_null(strstr(first + 1, "# TYPE tessel_gpu_info gauge"));
    free(text);
    tnf_node_clear(&a);
    tnf_node_clear(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip), cmocka_unit_test(test_error_and_unknown_fields),
        cmocka_unit_test(test_refused),    cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_prom),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
