/* test_fill.c - tessel-slurm-submit without a cluster: the frames (subproto.c, over a pipe:
 * whole frames, bounds, a cut frame, a time out), the answers tesseld trusts or refuses, and a
 * request into the job_desc_msg_t sbatch would send (fill.c). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "slurmsub/fill.h"
#include "slurmsub/subproto.h"

static void test_frames(void **state)
{
    (void)state;
    int p[2];
    assert_int_equal(pipe(p), 0);
    assert_int_equal(tss_frame_write(p[1], "{\"a\":1}", 7, -1), 0);
    assert_int_equal(tss_frame_write(p[1], "", 0, -1), 0);
    char *out;
    size_t len;
    assert_int_equal(tss_frame_read(p[0], 64, tss_mono_ms() + 1000, &out, &len), 0);
    assert_int_equal(len, 7);
    assert_string_equal(out, "{\"a\":1}");
    free(out);
    assert_int_equal(tss_frame_read(p[0], 64, -1, &out, &len), 0);
    assert_int_equal(len, 0);
    free(out);
    /* Above the reader's bound: refused, nothing returned. */
    assert_int_equal(tss_frame_write(p[1], "0123456789", 10, -1), 0);
    assert_int_equal(tss_frame_read(p[0], 9, -1, &out, &len), -1);
    assert_int_equal(errno, EMSGSIZE);
    assert_null(out);
    close(p[0]);
    close(p[1]);

    /* Nothing comes: a time out. */
    assert_int_equal(pipe(p), 0);
    int64_t t0 = tss_mono_ms();
    assert_int_equal(tss_frame_read(p[0], 64, t0 + 50, &out, &len), -1);
    assert_int_equal(errno, ETIMEDOUT);
    /* A frame cut short by the writer's end: EPROTO, nothing of it returned. */
    unsigned char cut[] = {0, 0, 0, 10, 'a', 'b'};
    assert_int_equal(write(p[1], cut, sizeof cut), (ssize_t)sizeof cut);
    close(p[1]);
    assert_int_equal(tss_frame_read(p[0], 64, -1, &out, &len), -1);
    assert_int_equal(errno, EPROTO);
    assert_null(out);
    close(p[0]);
    /* A clean end of file: ENODATA. */
    assert_int_equal(pipe(p), 0);
    close(p[1]);
    assert_int_equal(tss_frame_read(p[0], 64, -1, &out, &len), -1);
    assert_int_equal(errno, ENODATA);
    close(p[0]);
}

static void test_answers(void **state)
{
    (void)state;
    int64_t id;
    int code;
    char msg[512];
    tsl_error_t err;
    const char *ok = "{\"job_id\":42}";
    assert_int_equal(tss_answer_parse(ok, strlen(ok), &id, &code, msg, sizeof msg, &err), 0);
    assert_int_equal(id, 42);
    const char *no = "{\"errno\":2015,\"error\":\"Invalid partition name specified\",\"log\":\"\"}";
    assert_int_equal(tss_answer_parse(no, strlen(no), &id, &code, msg, sizeof msg, &err), 1);
    assert_int_equal(code, 2015);
    assert_string_equal(msg, "sbatch: error: Batch job submission failed: Invalid partition name "
                             "specified");
    const char *lg = "{\"errno\":-1,\"error\":\"Unspecified error\",\"log\":\"sbatch: error: "
                     "tessel: too much\\n\"}";
    assert_int_equal(tss_answer_parse(lg, strlen(lg), &id, &code, msg, sizeof msg, &err), 1);
    assert_int_equal(code, -1);
    assert_string_equal(msg, "sbatch: error: tessel: too much\nsbatch: error: Batch job submission "
                             "failed: Unspecified error");
    /* What tesseld does not trust: ids out of range, both or neither, duplicates, a key of
     * neither shape, not JSON. */
    const char *bad[] = {"{\"job_id\":0}",
                         "{\"job_id\":-3}",
                         "{\"job_id\":4294967296}",
                         "{\"job_id\":\"7\"}",
                         "{\"job_id\":7,\"errno\":1,\"error\":\"x\"}",
                         "{\"job_id\":7,\"job_id\":8}",
                         "{\"job_id\":7,\"user\":\"root\"}",
                         "{\"errno\":1,\"error\":\"x\",\"log\":\"\",\"job\":7}",
                         "{\"errno\":1,\"error\":\"x\",\"extra\":\"\"}",
                         "{\"errno\":0,\"error\":\"x\"}",
                         "{\"errno\":-2,\"error\":\"x\"}",
                         "{\"errno\":5}",
                         "[7]",
                         "7",
                         "{\"job_id\":7"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        errno = 0;
        assert_int_equal(
            tss_answer_parse(bad[i], strlen(bad[i]), &id, &code, msg, sizeof msg, &err), -1);
        assert_int_equal(errno, EPROTO);
        assert_int_equal(id, 0);
    }
}

static const char *env_get(char **env, const char *name)
{
    size_t n = strlen(name);
    for (; env && *env; env++)
        if (strncmp(*env, name, n) == 0 && (*env)[n] == '=')
            return *env + n + 1;
    return NULL;
}

static void test_fill(void **state)
{
    (void)state;
    char *base[] = {"PATH=/usr/bin:/bin", "HOME=/home/a", "SLURM_SUBMIT_DIR=/", NULL};
    json_t *req =
        json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:b, s:s, "
                  "s:s}",
                  "name", "train", "cwd", "/home/a", "stdout", "/d/a/%j.out", "stderr",
                  "/d/a/%j.err", "script", "#!/bin/sh\ntrue\n", "gres", "shard:2", "gpu_share",
                  "0.500", "gpu_mem", "3145728K", "cpus_per_task", 2, "mem_mb", 100, "time_min", 3,
                  "requeue", 0, "partition", "gpu", "qos", "high");
    job_desc_msg_t d;
    tss_owned_t own;
    tsl_error_t err;
    assert_int_equal(tss_fill(req, base, 1001, 1002, &d, &own, &err), 0);
    assert_string_equal(d.name, "train");
    assert_string_equal(d.work_dir, "/home/a");
    assert_string_equal(d.std_out, "/d/a/%j.out");
    assert_string_equal(d.std_err, "/d/a/%j.err");
    assert_string_equal(d.script, "#!/bin/sh\ntrue\n");
    assert_string_equal(d.tres_per_node, "gres:shard:2");
    assert_int_equal(d.user_id, 1001);
    assert_int_equal(d.group_id, 1002);
    assert_int_equal(d.cpus_per_task, 2);
    assert_int_equal(d.min_cpus, 2);
    assert_true(d.bitflags & JOB_CPUS_SET);
    assert_int_equal(d.pn_min_memory, 100);
    assert_int_equal(d.time_limit, 3);
    assert_int_equal(d.requeue, 0);
    assert_string_equal(d.partition, "gpu");
    assert_string_equal(d.qos, "high");
    /* The environment: sbatch's own, the options' variables, the SPANK ones again. */
    assert_int_equal(d.env_size, own.nenv);
    assert_string_equal(env_get(d.environment, "PATH"), "/usr/bin:/bin");
    assert_string_equal(env_get(d.environment, "SLURM_SUBMIT_DIR"), "/");
    assert_string_equal(env_get(d.environment, "SLURM_CPUS_PER_TASK"), "2");
    assert_string_equal(env_get(d.environment, "SLURM_JOB_NAME"), "train");
    assert_int_equal(d.pn_min_cpus, 2);
    assert_string_equal(env_get(d.environment, "_SLURM_SPANK_OPTION_tessel_gpu_mem"), "3145728K");
    assert_string_equal(env_get(d.environment, "_SLURM_SPANK_OPTION_tessel_gpu_share"), "0.500");
    assert_string_equal(env_get(d.environment, "SLURM_SPANK_TESSEL_GPU_MEM_BYTES"), "3221225472");
    assert_string_equal(env_get(d.environment, "SLURM_SPANK_TESSEL_GPU_SHARE_PPM"), "500000");
    assert_string_equal(env_get(d.environment, "SLURM_SPANK__SLURM_SPANK_OPTION_tessel_gpu_share"),
                        "0.500");
    /* The SPANK environment the job_submit plugin reads, in sbatch's order. */
    assert_int_equal(d.spank_job_env_size, 4);
    assert_string_equal(d.spank_job_env[0], "_SLURM_SPANK_OPTION_tessel_gpu_mem=3145728K");
    assert_string_equal(d.spank_job_env[1], "_SLURM_SPANK_OPTION_tessel_gpu_share=0.500");
    assert_string_equal(d.spank_job_env[2], "TESSEL_GPU_MEM_BYTES=3221225472");
    assert_string_equal(d.spank_job_env[3], "TESSEL_GPU_SHARE_PPM=500000");
    tss_owned_free(&own);
    json_decref(req);

    /* The least: no GRES, no SPANK environment, Slurm's defaults left as they are. */
    req = json_pack("{s:s, s:s, s:s, s:s, s:s}", "name", "t", "cwd", "/", "stdout", "/o", "stderr",
                    "/e", "script", "x");
    assert_int_equal(tss_fill(req, base, 5, 5, &d, &own, &err), 0);
    assert_null(d.tres_per_node);
    assert_null(d.spank_job_env);
    assert_null(d.partition);
    assert_int_equal(d.time_limit, NO_VAL);
    assert_int_equal(d.requeue, NO_VAL16);
    assert_int_equal(d.pn_min_memory, NO_VAL64);
    assert_null(env_get(d.environment, "SLURM_CPUS_PER_TASK"));
    assert_int_equal(d.env_size, 4); /* the 3 given and SLURM_JOB_NAME */
    tss_owned_free(&own);
    json_decref(req);

    /* Refused: a member tesseld does not send, a missing one, a relative cwd, wrong types, an
     * option value the plugin would refuse. */
    const char *bad[] = {
        "{\"name\":\"t\",\"cwd\":\"/\",\"stdout\":\"/o\",\"stderr\":\"/e\",\"script\":\"x\","
        "\"uid\":0}",
        "{\"name\":\"t\",\"cwd\":\"/\",\"stdout\":\"/o\",\"stderr\":\"/e\"}",
        "{\"name\":\"t\",\"cwd\":\"rel\",\"stdout\":\"/o\",\"stderr\":\"/e\",\"script\":\"x\"}",
        "{\"name\":\"t\",\"cwd\":\"/\",\"stdout\":\"/o\",\"stderr\":\"/e\",\"script\":\"x\","
        "\"cpus_per_task\":-1}",
        "{\"name\":\"t\",\"cwd\":\"/\",\"stdout\":\"/o\",\"stderr\":\"/e\",\"script\":\"x\","
        "\"requeue\":true}",
        "{\"name\":\"t\",\"cwd\":\"/\",\"stdout\":\"/o\",\"stderr\":\"/e\",\"script\":\"x\","
        "\"gpu_share\":\"2\"}",
        "{\"name\":\"t\\u0000x\",\"cwd\":\"/\",\"stdout\":\"/o\",\"stderr\":\"/e\","
        "\"script\":\"x\"}",
        "[]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        req = json_loads(bad[i], JSON_ALLOW_NUL, NULL);
        assert_non_null(req);
        errno = 0;
        assert_int_equal(tss_fill(req, base, 5, 5, &d, &own, &err), -1);
        assert_int_equal(errno, EINVAL);
        assert_null(own.env);
        json_decref(req);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frames),
        cmocka_unit_test(test_answers),
        cmocka_unit_test(test_fill),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
