/* test_read.c - tessel-slurm-submit --read without a cluster (read.c): the requests it takes or
 * refuses, a job record in squeue --json's words (the state with its flags, the reason, the
 * exit code as a wait status, the user's name when slurmctld gives none, a name that is not
 * UTF-8, holds control characters or is too long), and the records
 * picked for a request (by id, or all).  That squeue --json of Slurm 22.05 says the same of
 * the same jobs is checked on the test cluster (t9015). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "slurmsub/read.h"

static int req(const char *text, uint32_t **ids, size_t *n, bool *all)
{
    tsl_error_t err;
    return tss_read_request(text, strlen(text), ids, n, all, &err);
}

static void test_request(void **state)
{
    (void)state;
    uint32_t *ids;
    size_t n;
    bool all;
    assert_int_equal(req("{\"ids\": [7, 3, 7, 4294967295], \"all\": false}", &ids, &n, &all), 0);
    assert_int_equal(n, 3); /* sorted, the repeat dropped */
    assert_int_equal(ids[0], 3);
    assert_int_equal(ids[1], 7);
    assert_int_equal(ids[2], 4294967295u);
    assert_false(all);
    free(ids);
    assert_int_equal(req("{\"all\": true}", &ids, &n, &all), 0);
    assert_int_equal(n, 0);
    assert_null(ids);
    assert_true(all);
    assert_int_equal(req("{}", &ids, &n, &all), 0);
    assert_int_equal(n, 0);
    assert_false(all);
    /* Refused: not an object, another key, a key twice, an id not a Slurm id. */
    static const char *const bad[] = {
        "[1]",
        "not json",
        "{\"ids\": [1], \"user\": \"alice\"}",
        "{\"ids\": [1], \"ids\": [2]}",
        "{\"ids\": 1}",
        "{\"all\": 1}",
        "{\"ids\": [0]}",
        "{\"ids\": [-3]}",
        "{\"ids\": [4294967296]}",
        "{\"ids\": [\"5\"]}",
        "{\"ids\": [1.5]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        errno = 0;
        assert_int_equal(req(bad[i], &ids, &n, &all), -1);
        assert_int_equal(errno, EINVAL);
        assert_null(ids);
    }
}

static const char *sval(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    assert_true(json_is_string(v));
    return json_string_value(v);
}

static json_int_t ival(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    assert_true(json_is_integer(v));
    return json_integer_value(v);
}

static void test_job_json(void **state)
{
    (void)state;
    slurm_job_info_t j;
    memset(&j, 0, sizeof j);
    j.job_id = 42;
    j.job_state = JOB_FAILED;
    j.state_reason = WAIT_NO_REASON;
    j.exit_code = 3 << 8;
    j.start_time = 1795870000;
    j.submit_time = 1795869990;
    j.end_time = 1795870010;
    j.nodes = (char *)"n1";
    j.user_id = 0;
    j.user_name = NULL; /* slurmctld gave none: the reader names uid 0 */
    j.name = (char *)"train";
    j.partition = (char *)"debug";
    j.num_cpus = 4;
    json_t *o = tss_job_json(&j);
    assert_non_null(o);
    assert_int_equal(json_object_size(o), 13);
    assert_int_equal(ival(o, "job_id"), 42);
    assert_string_equal(sval(o, "job_state"), "FAILED");
    assert_string_equal(sval(o, "state_reason"), "None");
    assert_int_equal(ival(o, "exit_code"), 768);
    assert_int_equal(ival(o, "start_time"), 1795870000);
    assert_int_equal(ival(o, "submit_time"), 1795869990);
    assert_int_equal(ival(o, "end_time"), 1795870010);
    assert_string_equal(sval(o, "nodes"), "n1");
    assert_int_equal(ival(o, "user_id"), 0);
    assert_string_equal(sval(o, "user_name"), "root");
    assert_string_equal(sval(o, "name"), "train");
    assert_string_equal(sval(o, "partition"), "debug");
    assert_int_equal(ival(o, "cpus"), 4);
    json_decref(o);

    /* A flag is the state squeue shows (a running job whose end is being cleaned up); no
     * nodes, no name: "" as squeue writes; the name slurmctld gave is kept. */
    j.job_state = JOB_RUNNING | JOB_COMPLETING;
    j.nodes = NULL;
    j.name = NULL;
    j.user_id = 1001;
    j.user_name = (char *)"alice";
    o = tss_job_json(&j);
    assert_string_equal(sval(o, "job_state"), "COMPLETING");
    assert_string_equal(sval(o, "nodes"), "");
    assert_string_equal(sval(o, "name"), "");
    assert_string_equal(sval(o, "user_name"), "alice");
    json_decref(o);
    j.job_state = JOB_PENDING;
    j.state_reason = WAIT_PRIORITY;
    o = tss_job_json(&j);
    assert_string_equal(sval(o, "job_state"), "PENDING");
    assert_string_equal(sval(o, "state_reason"), "Priority");
    json_decref(o);
    j.job_state = JOB_SUSPENDED;
    o = tss_job_json(&j);
    assert_string_equal(sval(o, "job_state"), "SUSPENDED");
    json_decref(o);

    /* A name of any bytes (sbatch -J takes them): what is not UTF-8 and control characters
     * are '?', and a name is cut where tesseld cuts it (127 bytes, at a character's end), so
     * that the answer is JSON, and small, whatever a user named a job. */
    j.name = (char *)"bad\xff\xfe-\xc3\xa9\x01\n\x7f";
    o = tss_job_json(&j);
    assert_non_null(o);
    assert_string_equal(sval(o, "name"), "bad?"
                                         "?-\xc3\xa9?"
                                         "??");
    json_decref(o);
    static char longname[5000];
    memset(longname, 'x', sizeof longname - 1);
    longname[126] = '\xc3'; /* a two-byte character across the cut */
    longname[127] = '\xa9';
    j.name = longname;
    j.nodes = longname + 200;
    j.partition = longname + 300;
    j.user_name = longname + 400;
    o = tss_job_json(&j);
    assert_int_equal(strlen(sval(o, "name")), 126);
    assert_int_equal(strlen(sval(o, "nodes")), 255);
    assert_int_equal(strlen(sval(o, "partition")), 63);
    assert_int_equal(strlen(sval(o, "user_name")), 63);
    /* The longest a job can be in an answer. */
    char *text = json_dumps(o, JSON_COMPACT);
    assert_true(strlen(text) < 800); /* 732 here; a longer state_reason at most 63 */
    free(text);
    json_decref(o);
}

static void test_add(void **state)
{
    (void)state;
    slurm_job_info_t rec[4];
    memset(rec, 0, sizeof rec);
    for (int i = 0; i < 4; i++) {
        rec[i].job_id = (uint32_t)(10 + i);
        rec[i].job_state = JOB_COMPLETE;
        rec[i].user_name = (char *)"alice";
    }
    job_info_msg_t m = {.record_count = 4, .job_array = rec};
    uint32_t ids[] = {11, 13, 99}; /* 99: not held, not listed */
    json_t *jobs = json_array();
    assert_int_equal(tss_read_add(jobs, &m, ids, 3, false), 0);
    assert_int_equal(json_array_size(jobs), 2);
    assert_int_equal(ival(json_array_get(jobs, 0), "job_id"), 11);
    assert_int_equal(ival(json_array_get(jobs, 1), "job_id"), 13);
    assert_string_equal(sval(json_array_get(jobs, 0), "job_state"), "COMPLETED");
    json_decref(jobs);
    jobs = json_array();
    assert_int_equal(tss_read_add(jobs, &m, NULL, 0, true), 0);
    assert_int_equal(json_array_size(jobs), 4);
    json_decref(jobs);
    jobs = json_array();
    assert_int_equal(tss_read_add(jobs, &m, NULL, 0, false), 0);
    assert_int_equal(json_array_size(jobs), 0);
    assert_int_equal(tss_read_add(jobs, NULL, ids, 3, true), 0);
    assert_int_equal(json_array_size(jobs), 0);
    json_decref(jobs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request),
        cmocka_unit_test(test_job_json),
        cmocka_unit_test(test_add),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
