/* test_policy.c - configuration parsing and limit arithmetic, by table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "interposer/policy/policy.h"

#define GiB (1ull << 30)
#define MiB (1ull << 20)

static void test_config_valid(void **state)
{
    char *env1[] = {"PATH=/bin",
                    "TESSEL_CUDA_MEM_LIMIT=6G",
                    "TESSEL_CUDA_MEM_LIMIT_2=512M",
                    "TESSEL_SLICE=/dev/shm/slice-a",
                    "CUDA_VISIBLE_DEVICES=1,GPU-8f2e-11,MIG-ab/1",
                    NULL};
    tcu_config_t c;
    assert_int_equal(tcu_config_parse(&c, env1), 0);
    assert_int_equal(c.ok, 1);
    assert_int_equal(c.limited, 1);
    assert_true(c.limit[0] == 6 * GiB);
    assert_true(c.limit[1] == 6 * GiB);
    assert_true(c.limit[2] == 512 * MiB);
    assert_true(c.limit[63] == 6 * GiB);
    assert_string_equal(c.slice, "/dev/shm/slice-a");

    char *env2[] = {"TESSEL_CUDA_MEM_LIMIT_1=1073741824", "CUDA_VISIBLE_DEVICES=", NULL};
    assert_int_equal(tcu_config_parse(&c, env2), 0);
    assert_true(c.limit[0] == TSHM_UNLIMITED);
    assert_true(c.limit[1] == GiB);
    assert_string_equal(c.slice, "");

    char *env3[] = {"CUDA_VISIBLE_DEVICES=-1", NULL};
    assert_int_equal(tcu_config_parse(&c, env3), 0);
    assert_int_equal(c.limited, 0);
    assert_true(c.limit[5] == TSHM_UNLIMITED);

    char *env4[] = {"TESSEL_CUDA_MEM_LIMIT=0", NULL};
    assert_int_equal(tcu_config_parse(&c, env4), 0);
    assert_true(c.limit[0] == 0 && c.ok == 1);
}

static void test_config_malformed(void **state)
{
    static const char *bad[] = {
        "TESSEL_CUDA_MEM_LIMIT=6Q",     "TESSEL_CUDA_MEM_LIMIT=",
        "TESSEL_CUDA_MEM_LIMIT=-1G",    "TESSEL_CUDA_MEM_LIMIT=six",
        "TESSEL_CUDA_MEM_LIMIT_x=1G",   "TESSEL_CUDA_MEM_LIMIT_64=1G",
        "TESSEL_CUDA_MEM_LIMIT_1=1G2",  "TESSEL_CUDA_MEM_LIMIT_0001=1G",
        "TESSEL_SLICE=relative/path",   "TESSEL_SLICE=",
        "CUDA_VISIBLE_DEVICES=0,gpu0",  "CUDA_VISIBLE_DEVICES=0,,1",
        "CUDA_VISIBLE_DEVICES=GPU-xyz", "CUDA_VISIBLE_DEVICES=1 ",
        "TESSEL_CUDA_CORE_LIMIT=0",     "TESSEL_CUDA_CORE_LIMIT=101",
        "TESSEL_CUDA_CORE_LIMIT=",      "TESSEL_CUDA_CORE_LIMIT=50.5",
        "TESSEL_CUDA_CORE_LIMIT=%",     "TESSEL_CUDA_CORE_MODE=fair",
        "TESSEL_CUDA_CORE_PRIORITY=9",  "TESSEL_DEVICE_REGISTRY=rel",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *env[] = {"TESSEL_CUDA_MEM_LIMIT_3=1G", (char *)bad[i], NULL};
        tcu_config_t c;
        assert_int_equal(tcu_config_parse(&c, env), -1);
        assert_int_equal(c.ok, 0);
        assert_true(strlen(c.error) > 10);
        assert_null(strchr(c.error, '\n'));
        /* Fails closed: every device limited to zero. */
        for (int d = 0; d < TCU_MAX_DEVICES; d++)
            assert_true(c.limit[d] == 0);
    }
}

static void test_config_compute(void **state)
{
    tcu_config_t c;
    char *none[] = {"PATH=/bin", NULL};
    assert_int_equal(tcu_config_parse(&c, none), 0);
    assert_int_equal(c.core_set, 0);
    assert_int_equal(c.core_limit, 0);
    assert_int_equal(c.core_mode, TSHM_CORE_STRICT);
    assert_int_equal(c.core_prio, TSHM_PRIO_NORMAL);
    assert_string_equal(c.registry, "/dev/shm");
    char *env[] = {"TESSEL_CUDA_CORE_LIMIT=35%", "TESSEL_CUDA_CORE_MODE=shared",
                   "TESSEL_CUDA_CORE_PRIORITY=high", "TESSEL_DEVICE_REGISTRY=/run/tessel", NULL};
    assert_int_equal(tcu_config_parse(&c, env), 0);
    assert_int_equal(c.core_set, 1);
    assert_int_equal(c.core_limit, 35);
    assert_int_equal(c.core_mode, TSHM_CORE_SHARED);
    assert_int_equal(c.core_prio, TSHM_PRIO_HIGH);
    assert_string_equal(c.registry, "/run/tessel");
    char *env2[] = {"TESSEL_CUDA_CORE_PRIORITY=low", NULL};
    assert_int_equal(tcu_config_parse(&c, env2), 0);
    assert_int_equal(c.core_set, 1);
    assert_int_equal(c.core_prio, TSHM_PRIO_LOW);
}

/* tcu_core_rate: the formulas of docs/compute-shares.md, by table. */
/* The limits file (tesseld's, root-owned) wins; the environment only lowers it. */
static void test_config_file_lower(void **state)
{
    (void)state;
    const char *text = "# written by tesseld for job 7\n"
                       "TESSEL_CUDA_MEM_LIMIT=4G\n"
                       "TESSEL_CUDA_MEM_LIMIT_1=2G\n"
                       "TESSEL_SLICE=/var/lib/tessel/jobs/7/slice\n"
                       "TESSEL_CUDA_CORE_LIMIT=40\n"
                       "TESSEL_CUDA_CORE_MODE=shared\n"
                       "TESSEL_CUDA_CORE_PRIORITY=high\n"
                       "\n"
                       "TESSEL_DEVICE_REGISTRY=/var/lib/tessel/registry\n";
    tcu_config_t f, e, c;
    assert_int_equal(tcu_config_parse_file(&f, text), 0);
    assert_int_equal(f.from_file, 1);
    assert_true(f.limit[0] == 4 * GiB && f.limit[1] == 2 * GiB);
    assert_string_equal(f.registry, "/var/lib/tessel/registry");

    /* A job that asks for more (39 GiB, a slice file of its own, a registry of its own, the
     * whole GPU's compute, strict -> shared) gets what the file says. */
    char *raise[] = {"TESSEL_CUDA_MEM_LIMIT=39G",  "TESSEL_CUDA_MEM_LIMIT_1=39G",
                     "TESSEL_SLICE=/tmp/mine",     "TESSEL_DEVICE_REGISTRY=/tmp/reg",
                     "TESSEL_CUDA_CORE_LIMIT=100", NULL};
    assert_int_equal(tcu_config_parse(&e, raise), 0);
    assert_int_equal(tcu_config_lower(&c, &f, &e), 0);
    assert_true(c.limit[0] == 4 * GiB && c.limit[1] == 2 * GiB && c.limit[63] == 4 * GiB);
    assert_string_equal(c.slice, "/var/lib/tessel/jobs/7/slice");
    assert_string_equal(c.registry, "/var/lib/tessel/registry");
    assert_int_equal(c.core_limit, 40);
    assert_int_equal(c.core_mode, TSHM_CORE_SHARED);
    assert_int_equal(c.core_prio, TSHM_PRIO_HIGH); /* a core limit alone keeps the priority */
    assert_int_equal(c.from_file, 1);

    /* No environment at all: the file as it is. */
    assert_int_equal(tcu_config_parse(&e, NULL), 0);
    assert_int_equal(tcu_config_lower(&c, &f, &e), 0);
    assert_true(c.limit[0] == 4 * GiB && c.core_limit == 40);

    /* Lowering is taken: 1 GiB on device 0, 10 %, strict, low. */
    char *lower[] = {"TESSEL_CUDA_MEM_LIMIT_0=1G", "TESSEL_CUDA_CORE_LIMIT=10",
                     "TESSEL_CUDA_CORE_MODE=strict", "TESSEL_CUDA_CORE_PRIORITY=low", NULL};
    assert_int_equal(tcu_config_parse(&e, lower), 0);
    assert_int_equal(tcu_config_lower(&c, &f, &e), 0);
    assert_true(c.limit[0] == GiB && c.limit[1] == 2 * GiB && c.limit[2] == 4 * GiB);
    assert_int_equal(c.core_limit, 10);
    assert_int_equal(c.core_mode, TSHM_CORE_STRICT);
    assert_int_equal(c.core_prio, TSHM_PRIO_LOW);

    /* A malformed environment fails closed (lower than anything), with its error. */
    char *bad[] = {"TESSEL_CUDA_MEM_LIMIT=lots", NULL};
    assert_int_equal(tcu_config_parse(&e, bad), -1);
    assert_int_equal(tcu_config_lower(&c, &f, &e), -1);
    assert_int_equal(c.ok, 0);
    assert_true(c.limit[0] == 0 && c.limit[1] == 0);
    assert_non_null(strstr(c.error, "TESSEL_CUDA_MEM_LIMIT=lots"));

    /* A malformed file fails closed too, whatever the environment. */
    static const char *badfiles[] = {"TESSEL_CUDA_MEM_LIMIT=4Q\n", "just words\n",
                                     "TESSEL_SLICE=relative\n"};
    for (size_t i = 0; i < sizeof badfiles / sizeof *badfiles; i++) {
        assert_int_equal(tcu_config_parse_file(&f, badfiles[i]), -1);
        assert_int_equal(tcu_config_parse(&e, raise), 0);
        assert_int_equal(tcu_config_lower(&c, &f, &e), -1);
        assert_true(c.limit[0] == 0 && c.limit[63] == 0);
        assert_true(c.error[0] != '\0');
    }
    char big[TCU_LIMITS_MAX + 2];
    memset(big, '#', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(tcu_config_parse_file(&f, big), -1);
    assert_non_null(strstr(f.error, "larger than 8192"));
}

static void test_core_rate(void **state)
{
    static const struct {
        unsigned limit, mode, prio;
        int n;
        tcu_peer_t peers[3];
        uint32_t want;
    } rows[] = {
        /* strict: the limit, whatever the others do */
        {30, TSHM_CORE_STRICT, 1, 0, {{0}}, 300000},
        {30, TSHM_CORE_STRICT, 1, 1, {{70, TSHM_CORE_STRICT, 1, 700000}}, 300000},
        /* no limit: the whole device */
        {0, TSHM_CORE_STRICT, 1, 0, {{0}}, 1000000},
        /* shared alone: the whole device */
        {20, TSHM_CORE_SHARED, 1, 0, {{0}}, 1000000},
        /* shared 20 + shared 30: spare 50 split 20:30 -> 40 */
        {20, TSHM_CORE_SHARED, 1, 1, {{30, TSHM_CORE_SHARED, 1, 0}}, 400000},
        {30, TSHM_CORE_SHARED, 1, 1, {{20, TSHM_CORE_SHARED, 1, 0}}, 600000},
        /* shared 20 + strict 50: spare 30 all to the shared one -> 50 */
        {20, TSHM_CORE_SHARED, 1, 1, {{50, TSHM_CORE_STRICT, 1, 0}}, 500000},
        /* shared 60 + strict 70: over-subscribed, no spare -> 60 */
        {60, TSHM_CORE_SHARED, 1, 1, {{70, TSHM_CORE_STRICT, 1, 0}}, 600000},
        /* shared 20 beside a peer without a limit using 50 %: spare 30 -> 50 */
        {20, TSHM_CORE_SHARED, 1, 1, {{0, TSHM_CORE_STRICT, 1, 500000}}, 500000},
        /* low priority under a high one using 60 %: 100 - 60 - 5 = 35 */
        {0, TSHM_CORE_STRICT, 0, 1, {{60, TSHM_CORE_STRICT, 2, 600000}}, 350000},
        /* ... but never more than its own limit */
        {20, TSHM_CORE_STRICT, 0, 1, {{60, TSHM_CORE_STRICT, 2, 600000}}, 200000},
        /* a lower-priority peer does not limit the higher one */
        {0, TSHM_CORE_STRICT, 2, 1, {{0, TSHM_CORE_STRICT, 0, 900000}}, 1000000},
        /* high uses everything: the floor, 1 % */
        {0, TSHM_CORE_STRICT, 1, 1, {{0, TSHM_CORE_STRICT, 2, 1000000}}, 10000},
        /* two higher peers add up */
        {0,
         TSHM_CORE_STRICT,
         0,
         2,
         {{0, TSHM_CORE_STRICT, 1, 300000}, {0, TSHM_CORE_STRICT, 2, 200000}},
         450000},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        uint32_t r =
            tcu_core_rate(rows[i].limit, rows[i].mode, rows[i].prio, rows[i].peers, rows[i].n);
        if (r != rows[i].want)
            fail_msg("row %zu: rate %u, want %u", i, r, rows[i].want);
    }
    assert_true(tcu_core_cap(500000) == 10000000); /* 50 % x 20 ms */
    assert_true(tcu_core_cap(10000) == 1000000);   /* at least 1 ms */
    assert_true(tcu_core_wait_ns(-2000000, 500000) == 4000000);
    assert_true(tcu_core_wait_ns(5, 500000) == 0);
}

static void test_view(void **state)
{
    static const struct {
        uint64_t limit, used, rfree, rtotal, free, total;
    } t[] = {
        {6 * GiB, 0, 20 * GiB, 24 * GiB, 6 * GiB, 6 * GiB},
        {6 * GiB, 2 * GiB, 20 * GiB, 24 * GiB, 4 * GiB, 6 * GiB},
        {6 * GiB, 2 * GiB, 1 * GiB, 24 * GiB, 1 * GiB, 6 * GiB}, /* neighbours took it */
        {6 * GiB, 7 * GiB, 20 * GiB, 24 * GiB, 0, 6 * GiB},      /* over: no underflow */
        {TSHM_UNLIMITED, 3 * GiB, 20 * GiB, 24 * GiB, 20 * GiB, 24 * GiB},
        {48 * GiB, 0, 20 * GiB, 24 * GiB, 20 * GiB, 24 * GiB}, /* limit above the card */
        {0, 0, 20 * GiB, 24 * GiB, 0, 0},                      /* failed closed */
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        uint64_t f = 1, tot = 1;
        tcu_view(t[i].limit, t[i].used, t[i].rfree, t[i].rtotal, &f, &tot);
        assert_true(f == t[i].free);
        assert_true(tot == t[i].total);
    }
}

static void test_array_bytes(void **state)
{
    static const struct {
        CUarray_format fmt;
        unsigned ch;
        size_t w, h, d;
        uint64_t want;
    } t[] = {
        {CU_AD_FORMAT_FLOAT, 1, 1024, 1024, 0, 4 * MiB},
        {CU_AD_FORMAT_FLOAT, 4, 1024, 0, 0, 16384},
        {CU_AD_FORMAT_UNSIGNED_INT8, 2, 100, 10, 3, 6000},
        {CU_AD_FORMAT_HALF, 1, 64, 64, 6, 49152},
        {CU_AD_FORMAT_BC1_UNORM, 1, 256, 256, 0, 32768},
        {CU_AD_FORMAT_BC7_UNORM_SRGB, 1, 256, 256, 0, 65536},
        {CU_AD_FORMAT_NV12, 1, 1920, 1080, 0, 3110400},
        {CU_AD_FORMAT_UNORM_INT16X4, 4, 10, 10, 0, 800},
        {(CUarray_format)0x77, 1, 10, 0, 0, 160}, /* unknown: widest element */
        {CU_AD_FORMAT_FLOAT, 4, SIZE_MAX, SIZE_MAX, 2, UINT64_MAX},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        assert_true(tcu_array_bytes(t[i].fmt, t[i].ch, t[i].w, t[i].h, t[i].d, 0) == t[i].want);

    CUDA_ARRAY3D_DESCRIPTOR d = {.Width = 256,
                                 .Height = 256,
                                 .Depth = 0,
                                 .Format = CU_AD_FORMAT_UNSIGNED_INT8,
                                 .NumChannels = 4};
    /* 256^2 + 128^2 + 64^2 texels x 4 bytes */
    assert_true(tcu_mipmap_bytes(&d, 3) == 4ull * (65536 + 16384 + 4096));
    d.Depth = 8;
    assert_true(tcu_mipmap_bytes(&d, 2) == 4ull * (65536 * 8 + 16384 * 4));
    d.Flags = CUDA_ARRAY3D_LAYERED;
    assert_true(tcu_mipmap_bytes(&d, 2) == 4ull * (65536 * 8 + 16384 * 8));
    d.Width = 1, d.Height = 1, d.Depth = 0, d.Flags = 0;
    assert_true(tcu_mipmap_bytes(&d, 5) == 20);
    assert_true(tcu_mul_sat(UINT64_MAX / 2, 3) == UINT64_MAX);
    assert_true(tcu_mul_sat(512, 100) == 51200);
}

/* NVML devices matched to CUDA ordinals without the CUDA driver. */
static void test_nvml_limit(void **state)
{
    uint64_t lim[TCU_MAX_DEVICES];
    for (int i = 0; i < TCU_MAX_DEVICES; i++)
        lim[i] = TSHM_UNLIMITED;
    lim[0] = 4 * GiB;
    lim[1] = 1 * GiB;
    lim[2] = 8 * GiB;
    const char *u0 = "GPU-aaaaaaaa-0000-4000-8000-000000000000";
    const char *u1 = "GPU-bbbbbbbb-0000-4000-8000-000000000000";
    static const struct {
        const char *visible;
        int pci;
        int which; /* 0: u0 (NVML index 0), 1: u1 (NVML index 1) */
        int want_rc;
        uint64_t want;
    } t[] = {
        /* Unset: fastest-first order, ordinal unknown: the lowest of the
         * 3 ordinals' limits; PCI order: the ordinal is the NVML index. */
        {NULL, 0, 0, 1, 1 * GiB},
        {NULL, 1, 0, 1, 4 * GiB},
        {NULL, 1, 1, 1, 1 * GiB},
        /* UUIDs: exact, by position; prefixes as the driver takes them. */
        {"GPU-bbbbbbbb-0000-4000-8000-000000000000,GPU-aaaa", 0, 1, 1, 4 * GiB},
        {"GPU-bbbbbbbb-0000-4000-8000-000000000000,GPU-aaaa", 0, 0, 1, 1 * GiB},
        {"GPU-BBBBBBBB", 0, 1, 1, 4 * GiB},
        {"GPU-cccc", 0, 0, 0, 0}, /* not ours: NVML's own figures */
        /* Indexes: exact in PCI order, else the lowest of the ordinals. */
        {"1,0", 1, 1, 1, 4 * GiB},
        {"1", 1, 0, 0, 0},
        {"1,0", 0, 0, 1, 1 * GiB},
        {"2", 0, 0, 1, 4 * GiB},      /* one ordinal: its limit */
        {"0,-1,1", 0, 1, 1, 4 * GiB}, /* -1 hides what follows */
        {"-1", 0, 0, 0, 0},
        {"", 0, 0, 0, 0},
        {"MIG-1234,GPU-aaaa", 0, 0, 1, 1 * GiB}, /* UUID match wins */
        {"MIG-1234", 0, 1, 1, 4 * GiB},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        uint64_t got = 7;
        int rc = tcu_nvml_limit(lim, t[i].visible, t[i].pci, t[i].which ? u1 : u0,
                                (unsigned)t[i].which, 3, &got);
        if (rc != t[i].want_rc || (rc && got != t[i].want))
            fail_msg("case %zu (%s): rc %d got %llu", i, t[i].visible ? t[i].visible : "unset", rc,
                     (unsigned long long)got);
    }
}

/* TESSEL_CUDA_MEM_OVERSUBSCRIBE (issue 21): a size, 0/unset = no spill; a malformed value
 * fails closed (no spill either); the environment may only lower the file's. */
static void test_config_oversubscribe(void **state)
{
    (void)state;
    tcu_config_t c, f, e, out;
    char *none[] = {"TESSEL_CUDA_MEM_LIMIT=1G", NULL};
    assert_int_equal(tcu_config_parse(&c, none), 0);
    assert_true(c.host_limit == 0 && c.host_set == 0);
    char *some[] = {"TESSEL_CUDA_MEM_OVERSUBSCRIBE=16G", NULL};
    assert_int_equal(tcu_config_parse(&c, some), 0);
    assert_true(c.host_limit == 16 * GiB && c.host_set == 1);
    char *zero[] = {"TESSEL_CUDA_MEM_OVERSUBSCRIBE=0", NULL};
    assert_int_equal(tcu_config_parse(&c, zero), 0);
    assert_true(c.host_limit == 0 && c.host_set == 1);
    static const char *bad[] = {
        "TESSEL_CUDA_MEM_OVERSUBSCRIBE=", "TESSEL_CUDA_MEM_OVERSUBSCRIBE=-1G",
        "TESSEL_CUDA_MEM_OVERSUBSCRIBE=lots", "TESSEL_CUDA_MEM_OVERSUBSCRIBE=1G2"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *env[] = {"TESSEL_CUDA_MEM_OVERSUBSCRIBE=8G", (char *)bad[i], NULL};
        assert_int_equal(tcu_config_parse(&c, env), -1);
        assert_int_equal(c.ok, 0);
        assert_true(c.host_limit == 0);
        assert_non_null(strstr(c.error, "TESSEL_CUDA_MEM_OVERSUBSCRIBE"));
    }

    assert_int_equal(tcu_config_parse_file(&f, "TESSEL_CUDA_MEM_LIMIT=2G\n"
                                               "TESSEL_CUDA_MEM_OVERSUBSCRIBE=4G\n"),
                     0);
    assert_true(f.host_limit == 4 * GiB);
    char *raise[] = {"TESSEL_CUDA_MEM_OVERSUBSCRIBE=64G", NULL};
    assert_int_equal(tcu_config_parse(&e, raise), 0);
    assert_int_equal(tcu_config_lower(&out, &f, &e), 0);
    assert_true(out.host_limit == 4 * GiB); /* not raised */
    assert_int_equal(tcu_config_parse(&e, NULL), 0);
    assert_int_equal(tcu_config_lower(&out, &f, &e), 0);
    assert_true(out.host_limit == 4 * GiB); /* unset: the file's */
    char *lower[] = {"TESSEL_CUDA_MEM_OVERSUBSCRIBE=1G", NULL};
    assert_int_equal(tcu_config_parse(&e, lower), 0);
    assert_int_equal(tcu_config_lower(&out, &f, &e), 0);
    assert_true(out.host_limit == GiB);
    assert_int_equal(tcu_config_parse(&e, zero), 0);
    assert_int_equal(tcu_config_lower(&out, &f, &e), 0);
    assert_true(out.host_limit == 0); /* the job may turn it off */
    assert_int_equal(tcu_config_parse_file(&f, "TESSEL_CUDA_MEM_LIMIT=2G\n"), 0);
    assert_int_equal(tcu_config_parse(&e, raise), 0);
    assert_int_equal(tcu_config_lower(&out, &f, &e), 0);
    assert_true(out.host_limit == 0); /* the file allows none: the environment adds none */
}

/* Oversubscription (security review F2): a process's own spill count admits bytes only within
 * its host limit, without wrapping. */
static void test_host_admit(void **state)
{
    (void)state;
    assert_true(tcu_host_admit(0, 512, 512));
    assert_true(tcu_host_admit(500, 12, 512));
    assert_false(tcu_host_admit(500, 13, 512));
    assert_false(tcu_host_admit(0, 1, 0)); /* no limit: no spill */
    assert_true(tcu_host_admit(0, 0, 0));
    assert_false(tcu_host_admit(1, UINT64_MAX, UINT64_MAX)); /* would wrap */
    assert_false(tcu_host_admit(UINT64_MAX, 1, UINT64_MAX));
    assert_true(tcu_host_admit(UINT64_MAX - 1, 1, UINT64_MAX));
}

/* Oversubscription (security review F1): which locations and advice could bring a spill onto
 * a device. */
static void test_spill_moves(void **state)
{
    (void)state;
    CUmemLocation host = {CU_MEM_LOCATION_TYPE_HOST, 0};
    CUmemLocation numa = {CU_MEM_LOCATION_TYPE_HOST_NUMA, 1};
    CUmemLocation numa_cur = {CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, 0};
    CUmemLocation dev0 = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
    CUmemLocation invalid = {CU_MEM_LOCATION_TYPE_INVALID, 0};
    assert_true(tcu_loc_is_host(host));
    assert_true(tcu_loc_is_host(numa));
    assert_true(tcu_loc_is_host(numa_cur));
    assert_false(tcu_loc_is_host(dev0));
    assert_false(tcu_loc_is_host(invalid)); /* unknown: not the host */
    CUmemLocation l = tcu_loc_of_device(CU_DEVICE_CPU);
    assert_int_equal(l.type, CU_MEM_LOCATION_TYPE_HOST);
    l = tcu_loc_of_device(3);
    assert_int_equal(l.type, CU_MEM_LOCATION_TYPE_DEVICE);
    assert_int_equal(l.id, 3);
    /* advice */
    assert_true(tcu_advice_to_device(CU_MEM_ADVISE_SET_PREFERRED_LOCATION, dev0));
    assert_false(tcu_advice_to_device(CU_MEM_ADVISE_SET_PREFERRED_LOCATION, host));
    assert_false(tcu_advice_to_device(CU_MEM_ADVISE_SET_PREFERRED_LOCATION, numa));
    assert_true(tcu_advice_to_device(CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, host));
    assert_true(tcu_advice_to_device(CU_MEM_ADVISE_UNSET_ACCESSED_BY, dev0));
    assert_true(tcu_advice_to_device(CU_MEM_ADVISE_SET_READ_MOSTLY, host));
    assert_false(tcu_advice_to_device(CU_MEM_ADVISE_SET_ACCESSED_BY, dev0));
    assert_false(tcu_advice_to_device(CU_MEM_ADVISE_UNSET_READ_MOSTLY, dev0));
    assert_true(tcu_advice_to_device((CUmem_advise)99, host)); /* unknown advice: refused */
    /* batches */
    CUmemLocation all_host[] = {host, numa};
    CUmemLocation mixed[] = {host, dev0};
    assert_false(tcu_locs_reach_device(all_host, 2));
    assert_true(tcu_locs_reach_device(mixed, 2));
    assert_false(tcu_locs_reach_device(mixed, 1)); /* only the first counted */
    assert_false(tcu_locs_reach_device(NULL, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_valid),
        cmocka_unit_test(test_config_malformed),
        cmocka_unit_test(test_config_compute),
        cmocka_unit_test(test_core_rate),
        cmocka_unit_test(test_view),
        cmocka_unit_test(test_array_bytes),
        cmocka_unit_test(test_config_file_lower),
        cmocka_unit_test(test_nvml_limit),
        cmocka_unit_test(test_config_oversubscribe),
        cmocka_unit_test(test_host_admit),
        cmocka_unit_test(test_spill_moves),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
