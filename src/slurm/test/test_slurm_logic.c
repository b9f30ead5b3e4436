/* test_slurm_logic.c - spank_tessel.so's pure logic at its own layer: the options' syntax,
 * Slurm's GPU lists (the CUDA ordinal -> GPU mapping), gres.conf's shard counts, and the limits
 * of a job's slice from its shards or whole GPUs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "slurm/slurm_logic.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)

static void test_parse_mem(void **state)
{
    (void)state;
    uint64_t b = 0;
    tsl_error_t e;
    assert_int_equal(tslurm_parse_mem("8G", &b, &e), 0);
    assert_true(b == 8 * GiB);
    assert_int_equal(tslurm_parse_mem("512M", &b, &e), 0);
    assert_true(b == 512 * MiB);
    static const char *const bad[] = {"", "abc", "0", "8", "-1G", "1X", "8G8", NULL};
    for (const char *const *t = bad; *t; t++) {
        b = 7;
        assert_int_equal(tslurm_parse_mem(*t, &b, &e), -1);
        assert_true(b == 7);
        assert_non_null(strstr(e.text, "--gpu-mem"));
    }
    assert_int_equal(tslurm_parse_mem(NULL, &b, &e), -1);
}

static void test_parse_share(void **state)
{
    (void)state;
    unsigned p = 0;
    tsl_error_t e;
    assert_int_equal(tslurm_parse_share("0.25", &p, &e), 0);
    assert_int_equal(p, 250000);
    assert_int_equal(tslurm_parse_share("1", &p, &e), 0);
    assert_int_equal(p, TSLURM_PPM);
    assert_int_equal(tslurm_parse_share("50%", &p, &e), 0);
    assert_int_equal(p, 500000);
    assert_int_equal(tslurm_parse_share(".5", &p, &e), 0);
    assert_int_equal(p, 500000);
    assert_int_equal(tslurm_parse_share("0.0000001", &p, &e), 0);
    assert_int_equal(p, 1); /* rounded down, at least 1 ppm */
    static const char *const bad[] = {"",     "0",    "0.0", "1.5",  "2",   "-0.5", "x", "0.5.5",
                                      "1e-1", "0.5 ", "%",   "150%", "nan", "inf",  NULL};
    for (const char *const *t = bad; *t; t++) {
        p = 7;
        assert_int_equal(tslurm_parse_share(*t, &p, &e), -1);
        assert_int_equal(p, 7);
        assert_non_null(strstr(e.text, "--gpu-share"));
    }
}

static void test_gpu_list(void **state)
{
    (void)state;
    int m[TSLURM_MAX_GPUS];
    tsl_error_t e;
    /* CUDA ordinal k is the k-th GPU Slurm names. */
    assert_int_equal(tslurm_gpu_list_parse("3,1", m, TSLURM_MAX_GPUS, &e), 2);
    assert_int_equal(m[0], 3);
    assert_int_equal(m[1], 1);
    assert_int_equal(tslurm_gpu_list_parse("0-2,5", m, TSLURM_MAX_GPUS, &e), 4);
    assert_int_equal(m[2], 2);
    assert_int_equal(m[3], 5);
    assert_int_equal(tslurm_gpu_list_parse("", m, TSLURM_MAX_GPUS, &e), 0);
    assert_int_equal(tslurm_gpu_list_parse(NULL, m, TSLURM_MAX_GPUS, &e), 0);
    static const char *const bad[] = {"a", "1,", ",1", "64", "2-1", "1-", "1;2", "-1", NULL};
    for (const char *const *t = bad; *t; t++)
        assert_int_equal(tslurm_gpu_list_parse(*t, m, TSLURM_MAX_GPUS, &e), -1);
    assert_int_equal(tslurm_gpu_list_parse("0-3", m, 2, &e), -1);
}

/* The GPU variable is the one Slurm writes for the kind of step, never the other one (a job
 * that exported SLURM_STEP_GPUS= must not turn its batch script's slice off). */
static void test_gpu_var(void **state)
{
    assert_string_equal(tslurm_gpu_var(0xfffffffbu), "SLURM_JOB_GPUS"); /* batch */
    assert_string_equal(tslurm_gpu_var(0xfffffffau), "SLURM_JOB_GPUS"); /* interactive */
    assert_string_equal(tslurm_gpu_var(0), "SLURM_STEP_GPUS");          /* srun step 0 */
    assert_string_equal(tslurm_gpu_var(7), "SLURM_STEP_GPUS");
    assert_string_equal(tslurm_gpu_var(0xfffffffcu), "SLURM_STEP_GPUS"); /* extern */
}

static void test_hostlist(void **state)
{
    (void)state;
    assert_int_equal(tslurm_hostlist_match("n1", "n1"), 1);
    assert_int_equal(tslurm_hostlist_match("n[1-3]", "n2"), 1);
    assert_int_equal(tslurm_hostlist_match("n[1-3]", "n4"), 0);
    assert_int_equal(tslurm_hostlist_match("gpu[01-04,07]", "gpu07"), 1);
    assert_int_equal(tslurm_hostlist_match("gpu[01-04]", "gpu1"), 0);
    assert_int_equal(tslurm_hostlist_match("a,n[5-6]x", "n6x"), 1);
    assert_int_equal(tslurm_hostlist_match("n[1-", "n1"), -1);
}

static void test_gres_conf(void **state)
{
    (void)state;
    tslurm_gres_t g;
    tsl_error_t e;
    const char *conf = "# a comment\n"
                       "AutoDetect=off\n"
                       "NodeName=n[1-2] Name=gpu Type=a100 File=/dev/nvidia[0-3]\n"
                       "NodeName=n[1-2] Name=shard Count=4 File=/dev/nvidia0 # four\n"
                       "NodeName=n1 Name=shard Count=10 File=/dev/nvidia[1-2]\n"
                       "NodeName=n2 Name=shard Count=8 File=/dev/nvidia1\n"
                       "Name=mps Count=100 File=/dev/nvidia3\n";
    assert_int_equal(tslurm_gres_parse(conf, "n1", &g, &e), 0);
    assert_int_equal(g.gpu[0] + g.gpu[1] + g.gpu[2] + g.gpu[3] + g.gpu[4], 4);
    assert_int_equal(g.shards[0], 4);
    /* Count split evenly over the File= list. */
    assert_int_equal(g.shards[1], 5);
    assert_int_equal(g.shards[2], 5);
    assert_int_equal(g.shards[3], 0);
    assert_int_equal(tslurm_gres_parse(conf, "n2", &g, &e), 0);
    assert_int_equal(g.shards[1], 8);
    assert_int_equal(g.shards[2], 0);
    /* Another node: nothing of n1/n2's. */
    assert_int_equal(tslurm_gres_parse(conf, "n3", &g, &e), 0);
    assert_int_equal(g.gpu[0], 0);
    assert_int_equal(g.shards[0], 0);
    /* An odd count: the remainder to the first files. */
    assert_int_equal(tslurm_gres_parse("Name=shard Count=5 File=/dev/nvidia[0-1]", "x", &g, &e), 0);
    assert_int_equal(g.shards[0], 3);
    assert_int_equal(g.shards[1], 2);
    static const char *const bad[] = {"Name=shard Count=4",
                                      "Name=shard File=/dev/nvidia0",
                                      "Name=shard Count=x File=/dev/nvidia0",
                                      "Name=gpu File=/dev/nvidia",
                                      "Name=gpu File=/dev/nvidia[0-",
                                      "Name=gpu File=/dev/nvidia99",
                                      "NodeName=n[1- Name=gpu File=/dev/nvidia0",
                                      NULL};
    for (const char *const *t = bad; *t; t++) {
        assert_int_equal(tslurm_gres_parse(*t, "n1", &g, &e), -1);
        assert_non_null(strstr(e.text, "gres.conf line 1"));
    }
}

static const uint64_t *mem8(void)
{
    static uint64_t m[TSLURM_MAX_GPUS];
    m[0] = m[1] = 8 * GiB;
    m[2] = 0; /* NVML names no GPU 2 */
    return m;
}

static void shards4(tslurm_gres_t *g)
{
    memset(g, 0, sizeof *g);
    g->gpu[0] = g->gpu[1] = 1;
    g->shards[0] = g->shards[1] = 4;
}

static void test_limits_shards(void **state)
{
    (void)state;
    tslurm_gres_t g;
    shards4(&g);
    tslurm_limits_t l;
    tsl_error_t e;
    /* 2 of 4 shards of GPU 1: half its memory and compute, CUDA ordinal 0. */
    tslurm_request_t r = {.ngpus = 1, .minor = {1}, .shards = 2};
    assert_int_equal(tslurm_limits(&r, &g, mem8(), &l, &e), 0);
    assert_int_equal(l.n, 1);
    assert_int_equal(l.minor[0], 1);
    assert_true(l.mem[0] == 4 * GiB);
    assert_int_equal(l.core[0], 50);
    /* --gpu-mem below the shards' part lowers the memory only. */
    r.mem = 1 * GiB;
    assert_int_equal(tslurm_limits(&r, &g, mem8(), &l, &e), 0);
    assert_true(l.mem[0] == 1 * GiB);
    assert_int_equal(l.core[0], 50);
    /* Above it: refused. */
    r.mem = 5 * GiB;
    assert_int_equal(tslurm_limits(&r, &g, mem8(), &l, &e), -1);
    assert_non_null(strstr(e.text, "above its shards' part on GPU 1"));
    /* --gpu-share within the shards' part. */
    r.mem = 0;
    r.share_ppm = 250000;
    assert_int_equal(tslurm_limits(&r, &g, mem8(), &l, &e), 0);
    assert_true(l.mem[0] == 2 * GiB);
    assert_int_equal(l.core[0], 25);
    r.share_ppm = 750000;
    assert_int_equal(tslurm_limits(&r, &g, mem8(), &l, &e), -1);
    assert_non_null(strstr(e.text, "--gpu-share"));
    /* 1 of 3 shards: compute rounds down, memory exactly a third. */
    g.shards[1] = 3;
    r.share_ppm = 0;
    r.shards = 1;
    assert_int_equal(tslurm_limits(&r, &g, mem8(), &l, &e), 0);
    assert_int_equal(l.core[0], 33);
    assert_true(l.mem[0] == (8 * GiB) / 3);
    /* Shards of a GPU gres.conf gives none; shards on two GPUs (not Slurm 22.05's). */
    g.shards[1] = 0;
    assert_int_equal(tslurm_limits(&r, &g, mem8(), &l, &e), -1);
    assert_non_null(strstr(e.text, "no shards"));
    shards4(&g);
    tslurm_request_t two = {.ngpus = 2, .minor = {0, 1}, .shards = 2};
    assert_int_equal(tslurm_limits(&two, &g, mem8(), &l, &e), -1);
}

static void test_limits_gpus(void **state)
{
    (void)state;
    tslurm_gres_t g;
    shards4(&g);
    tslurm_limits_t l;
    tsl_error_t e;
    /* A whole GPU whose shards gres.conf offers is refused (shard jobs may hold parts of it),
     * also when only one of the step's GPUs has shards; all of its shards pass. */
    tslurm_request_t w = {.ngpus = 1, .minor = {1}};
    assert_int_equal(tslurm_limits(&w, &g, mem8(), &l, &e), -1);
    assert_non_null(strstr(e.text, "GPU 1 has 4 shards in gres.conf"));
    assert_non_null(strstr(e.text, "--gres=shard:4"));
    g.shards[0] = 0;
    tslurm_request_t w2 = {.ngpus = 2, .minor = {0, 1}};
    assert_int_equal(tslurm_limits(&w2, &g, mem8(), &l, &e), -1);
    assert_non_null(strstr(e.text, "GPU 1 has 4 shards"));
    tslurm_request_t all = {.ngpus = 1, .minor = {1}, .shards = 4};
    assert_int_equal(tslurm_limits(&all, &g, mem8(), &l, &e), 0);
    assert_true(l.mem[0] == 8 * GiB);
    assert_int_equal(l.core[0], 100);
    /* GPUs without shards are given whole. */
    g.shards[0] = g.shards[1] = 0;
    /* Two whole GPUs, Slurm's order kept (ordinal 0 = GPU 1). */
    tslurm_request_t r = {.ngpus = 2, .minor = {1, 0}};
    assert_int_equal(tslurm_limits(&r, &g, mem8(), &l, &e), 0);
    assert_int_equal(l.n, 2);
    assert_int_equal(l.minor[0], 1);
    assert_int_equal(l.minor[1], 0);
    assert_true(l.mem[0] == 8 * GiB && l.mem[1] == 8 * GiB);
    assert_int_equal(l.core[0], 100);
    r.share_ppm = 500000;
    assert_int_equal(tslurm_limits(&r, &g, mem8(), &l, &e), 0);
    assert_true(l.mem[1] == 4 * GiB);
    assert_int_equal(l.core[1], 50);
    /* --gpu-mem and --gpu-share: the lower memory. */
    r.mem = 3 * GiB;
    assert_int_equal(tslurm_limits(&r, &g, mem8(), &l, &e), 0);
    assert_true(l.mem[0] == 3 * GiB);
    r.mem = 9 * GiB;
    r.share_ppm = 0;
    assert_int_equal(tslurm_limits(&r, &g, mem8(), &l, &e), -1);
    assert_non_null(strstr(e.text, "above the GPU's memory"));
    /* A GPU NVML does not know. */
    tslurm_request_t u = {.ngpus = 1, .minor = {2}};
    assert_int_equal(tslurm_limits(&u, &g, mem8(), &l, &e), -1);
    assert_non_null(strstr(e.text, "unknown"));
}

static void test_limits_none(void **state)
{
    (void)state;
    tslurm_gres_t g;
    shards4(&g);
    tslurm_limits_t l;
    tsl_error_t e;
    tslurm_request_t r = {.ngpus = 0};
    assert_int_equal(tslurm_limits(&r, &g, mem8(), &l, &e), 0);
    assert_int_equal(l.n, 0);
    r.mem = GiB;
    assert_int_equal(tslurm_limits(&r, &g, mem8(), &l, &e), -1);
    assert_non_null(strstr(e.text, "--gpu-mem needs GPUs or shards"));
    r.mem = 0;
    r.share_ppm = 1;
    assert_int_equal(tslurm_limits(&r, &g, mem8(), &l, &e), -1);
    assert_non_null(strstr(e.text, "--gpu-share needs GPUs or shards"));
}

static void test_texts(void **state)
{
    (void)state;
    tslurm_limits_t l = {.n = 2, .minor = {3, 1}, .mem = {4 * GiB, 2 * GiB}, .core = {50, 25}};
    char buf[1024];
    assert_true(tslurm_limits_text(&l, "/run/tessel/slurm/7/slice", "job 7", buf, sizeof buf) > 0);
    assert_non_null(strstr(buf, "\nTESSEL_SLICE=/run/tessel/slurm/7/slice\n"));
    assert_non_null(strstr(buf, "\nTESSEL_CUDA_MEM_LIMIT=0\n"));
    assert_non_null(strstr(buf, "\nTESSEL_CUDA_MEM_LIMIT_0=4294967296\n"));
    assert_non_null(strstr(buf, "\nTESSEL_CUDA_MEM_LIMIT_1=2147483648\n"));
    assert_non_null(strstr(buf, "\nTESSEL_CUDA_CORE_LIMIT=25\n"));
    assert_int_equal(tslurm_limits_text(&l, "/s", "j", buf, 20), -1);
    /* Whole GPUs: no compute cap line. */
    tslurm_limits_t w = {.n = 1, .minor = {0}, .mem = {GiB}, .core = {100}};
    assert_true(tslurm_limits_text(&w, "/s", "j", buf, sizeof buf) > 0);
    assert_null(strstr(buf, "CORE"));
    /* The watchdog's limits are by GPU (NVML index = minor), not by ordinal. */
    assert_int_equal(tslurm_watchdog_spec(&l, buf, sizeof buf),
                     (int)strlen("3=4294967296,1=2147483648"));
    assert_string_equal(buf, "3=4294967296,1=2147483648");
    assert_int_equal(tslurm_watchdog_spec(&l, buf, 8), -1);
}

/* STEP/gpus for tessel-node-exporter: written, read back; what the reader refuses. */
static void test_gpus_file(void **state)
{
    (void)state;
    tslurm_limits_t l = {.n = 2, .minor = {3, 1}, .mem = {4 * GiB, 2 * GiB}, .core = {50, 25}};
    char buf[256];
    assert_int_equal(tslurm_gpus_text(&l, buf, sizeof buf),
                     (int)strlen("3 4294967296 50\n1 2147483648 25\n"));
    assert_string_equal(buf, "3 4294967296 50\n1 2147483648 25\n");
    char small[10];
    assert_int_equal(tslurm_gpus_text(&l, small, sizeof small), -1);
    int minor[4];
    uint64_t mem[4];
    unsigned core[4];
    assert_int_equal(tslurm_gpus_parse(buf, minor, mem, core, 4), 2);
    assert_int_equal(minor[0], 3);
    assert_int_equal(mem[0], 4 * GiB);
    assert_int_equal(core[1], 25);
    assert_int_equal(tslurm_gpus_parse("", minor, mem, core, 4), 0);
    static const char *const bad[] = {
        "3 4294967296 50",                     /* no newline */
        "64 1 50\n",                           /* minor too large */
        "1 1 0\n",                             /* share 0 */
        "1 1 101\n",                           /* share above 100 */
        "-1 1 50\n",                           /* a sign */
        "1  1 50\n",                           /* two spaces */
        "1 1 50 x\n",                          /* more on the line */
        "1 99999999999999999999999 50\n",      /* does not fit */
        "0 1 1\n1 1 1\n2 1 1\n3 1 1\n4 1 1\n", /* more lines than max */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (tslurm_gpus_parse(bad[i], minor, mem, core, 4) != -1)
            fail_msg("accepted '%s'", bad[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_mem),     cmocka_unit_test(test_parse_share),
        cmocka_unit_test(test_gpu_list),      cmocka_unit_test(test_gpu_var),
        cmocka_unit_test(test_hostlist),      cmocka_unit_test(test_gres_conf),
        cmocka_unit_test(test_limits_shards), cmocka_unit_test(test_limits_gpus),
        cmocka_unit_test(test_limits_none),   cmocka_unit_test(test_texts),
        cmocka_unit_test(test_gpus_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
