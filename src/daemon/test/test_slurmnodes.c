/* test_slurmnodes.c - sinfo --json's nodes as Slurm 22.05.8 prints them (taken from the test
 * cluster of tests/slurm/cluster.sh: n1 set DOWN and n2 DRAIN with scontrol), with slurmctld
 * down, and what is never put in a URL; and the deep copy handlers take of the nodes. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "daemon/slurmnodes.h"

/* Fields of a node that the parse reads, and a few it does not, as 22.05.8 prints them. */
#define NODE(name, addr, state, flags, reason)                                                     \
    "{\"architecture\":\"x86_64\",\"cpus\":8,\"gres\":\"gpu:2,shard:8\",\"name\":\"" name          \
    "\",\"address\":\"" addr "\",\"hostname\":\"" name "\",\"state\":\"" state                     \
    "\",\"state_flags\":[" flags "],\"next_state_after_reboot_flags\":[],\"partitions\":"          \
    "[\"debug\"],\"port\":26818,\"reason\":\"" reason "\",\"reason_changed_at\":0,"                \
    "\"slurmd_version\":\"22.05.8\"}"
#define META                                                                                       \
    "{\"meta\":{\"plugin\":{\"type\":\"openapi/v0.0.38\",\"name\":\"Slurm OpenAPI "                \
    "v0.0.38\"},\"Slurm\":{\"version\":{\"major\":22,\"micro\":8,\"minor\":5},\"release\":"        \
    "\"22.05.8\"}},"

static void test_sinfo(void **state)
{
    (void)state;
    const char *t =
        META "\"errors\":[],\"nodes\":[" NODE("n1", "10.250.0.12", "down", "", "gone") "," NODE(
            "n2", "10.250.0.13", "idle", "\"DRAIN\"",
            "testing") "," NODE("n3", "10.250.0.14", "MIXED", "\"NOT_RESPONDING\"",
                                "") "," NODE("n4", "gpu4.lab", "allocated", "", "") "]}";
    tsn_slurm_node_t *nodes;
    size_t n;
    tsl_error_t err;
    assert_int_equal(tsn_parse_sinfo(t, strlen(t), &nodes, &n, &err), 0);
    assert_int_equal(n, 4);
    assert_string_equal(nodes[0].name, "n1");
    assert_string_equal(nodes[0].addr, "10.250.0.12");
    assert_string_equal(nodes[0].state, "down");
    assert_true(nodes[0].down);
    assert_false(nodes[0].drain);
    assert_string_equal(nodes[0].reason, "gone");
    assert_string_equal(nodes[1].state, "idle");
    assert_true(nodes[1].drain);
    assert_false(nodes[1].down);
    assert_string_equal(nodes[1].reason, "testing");
    assert_string_equal(nodes[2].state, "mixed");
    assert_true(nodes[2].down); /* NOT_RESPONDING */
    assert_string_equal(nodes[3].addr, "gpu4.lab");
    assert_false(nodes[3].down || nodes[3].drain);
    free(nodes);
}

/* slurmctld down: sinfo exits 0 and says so in "errors". */
static void test_sinfo_errors(void **state)
{
    (void)state;
    const char *t = META "\"errors\":[{\"error\":\"Unable to contact slurm controller (connect "
                         "failure)\",\"error_number\":1007}],\"nodes\":[]}";
    tsn_slurm_node_t *nodes = (void *)1;
    size_t n = 9;
    tsl_error_t err;
    errno = 0;
    assert_int_equal(tsn_parse_sinfo(t, strlen(t), &nodes, &n, &err), -1);
    assert_int_equal(errno, EIO);
    assert_non_null(strstr(err.text, "Unable to contact slurm controller"));
    assert_null(nodes);
    assert_int_equal(n, 0);
    static const char *const bad[] = {"", "[]", "{\"nodes\":{}}", "{\"errors\":[]}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(tsn_parse_sinfo(bad[i], strlen(bad[i]), &nodes, &n, &err), -1);
}

/* Names and addresses go into URLs and labels as they are: anything but a plain name or
 * address is skipped, as is a second entry of one node. */
static void test_sinfo_hostile(void **state)
{
    (void)state;
    const char *t =
        META "\"errors\":[],\"nodes\":[" NODE("a", "10.0.0.1/evil?x=", "idle", "", "") "," NODE(
            "b", "10.0.0.2@proxy", "idle", "",
            "") "," NODE("c\\\"x", "10.0.0.3", "idle", "",
                         "") "," NODE("d", "", "idle", "",
                                      "") "," NODE("e", "10.0.0.5", "idle", "",
                                                   "line1\\nline2") "," NODE("e", "10.0.0.6",
                                                                             "idle", "", "") "]}";
    tsn_slurm_node_t *nodes;
    size_t n;
    tsl_error_t err;
    assert_int_equal(tsn_parse_sinfo(t, strlen(t), &nodes, &n, &err), 0);
    assert_int_equal(n, 1);
    assert_string_equal(nodes[0].name, "e");
    assert_string_equal(nodes[0].addr, "10.0.0.5");
    assert_string_equal(nodes[0].reason, "line1 line2"); /* no control character kept */
    free(nodes);
}

static void test_snapshot(void **state)
{
    (void)state;
    tsn_state_t s;
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.lock, NULL);
    size_t n = 7;
    int64_t at = 1;
    char why[64];
    assert_null(tsn_snapshot(NULL, &n, &at, why, sizeof why));
    assert_int_equal(n, 0);
    assert_null(tsn_snapshot(&s, &n, &at, why, sizeof why));
    assert_int_equal(at, 0);
    s.n = 2;
    s.nodes = calloc(2, sizeof *s.nodes);
    assert_non_null(s.nodes);
    snprintf(s.nodes[0].slurm.name, sizeof s.nodes[0].slurm.name, "n1");
    s.nodes[0].has_figs = true;
    s.nodes[0].figs.ngpus = 1;
    tnf_slice_t sl = {.job = 5, .gpu = 0, .memory_used = 42};
    assert_int_equal(tnf_add_slice(&s.nodes[0].figs, &sl), 0);
    s.nodes[1].status = TSN_UNREACHABLE;
    s.polled_ms = 1234;
    snprintf(s.error, sizeof s.error, "sinfo: down");
    tsn_node_t *c = tsn_snapshot(&s, &n, &at, why, sizeof why);
    assert_non_null(c);
    assert_int_equal(n, 2);
    assert_int_equal(at, 1234);
    assert_string_equal(why, "sinfo: down");
    assert_int_equal(c[0].figs.nslices, 1);
    assert_true(c[0].figs.slices != s.nodes[0].figs.slices); /* a copy, not a share */
    assert_int_equal(c[0].figs.slices[0].memory_used, 42);
    assert_int_equal(c[1].status, TSN_UNREACHABLE);
    assert_string_equal(tsn_status_name(c[1].status), "unreachable");
    tsn_nodes_free(c, n);
    tsn_nodes_free(s.nodes, s.n);
    tsn_nodes_free(NULL, 0);
    pthread_mutex_destroy(&s.lock);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sinfo),
        cmocka_unit_test(test_sinfo_errors),
        cmocka_unit_test(test_sinfo_hostile),
        cmocka_unit_test(test_snapshot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
