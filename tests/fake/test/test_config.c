/* test_config.c - the fake GPUs' configuration: device specs, UUIDs, environment. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fake_config.h"

static void test_default_and_counts(void **state)
{
    tfake_config_t c;
    memset(&c, 0, sizeof c);
    tsl_error_t e = {{0}};
    assert_int_equal(tfake_parse_gpus(TFAKE_DEFAULT_GPUS, &c, &e), 0);
    assert_int_equal(c.ndev, 1);
    assert_string_equal(c.dev[0].name, "FakeGPU");
    assert_true(c.dev[0].mem == 16ull << 30);
    assert_int_equal(c.dev[0].sms, 80);

    assert_int_equal(tfake_parse_gpus("2xRTX4090:24G,1xA100:80G:108", &c, &e), 0);
    assert_int_equal(c.ndev, 3);
    assert_string_equal(c.dev[0].name, "RTX4090");
    assert_string_equal(c.dev[1].name, "RTX4090");
    assert_string_equal(c.dev[2].name, "A100");
    assert_true(c.dev[1].mem == 24ull << 30);
    assert_true(c.dev[2].mem == 80ull << 30);
    assert_int_equal(c.dev[0].sms, TFAKE_DEFAULT_SMS);
    assert_int_equal(c.dev[2].sms, 108);
    assert_int_equal(c.dev[0].group, 0);
    assert_int_equal(c.dev[1].group, 0);
    assert_int_equal(c.dev[2].group, 1);
    /* Same name, different index: different UUIDs; deterministic. */
    assert_memory_not_equal(c.dev[0].uuid, c.dev[1].uuid, 16);
    uint8_t u[16];
    tfake_uuid_default(2, "A100", u);
    assert_memory_equal(u, c.dev[2].uuid, 16);
    assert_int_equal(u[6] >> 4, 4);      /* version 4 */
    assert_int_equal(u[8] & 0xc0, 0x80); /* RFC 4122 variant */

    assert_int_equal(tfake_parse_gpus("T4:1.5G", &c, &e), 0);
    assert_int_equal(c.ndev, 1);
    assert_true(c.dev[0].mem == 3ull << 29);
    assert_int_equal(tfake_parse_gpus("16xH100:80G:132", &c, &e), 0);
    assert_int_equal(c.ndev, 16);
}

static void test_malformed(void **state)
{
    static const char *bad[] = {
        "",       "RTX4090",  "RTX4090:",
        ":24G",   "0xA:1G",   "17xA:1G",
        "A:0",    "A:24Q",    "A:1G:0",
        "A:1G:x", "A:1G:1:2", "A B:1G",
        "A:1G,",  ",A:1G",    "9xA:1G,8xB:1G",
        "A:-1G",  "A/B:1G",   "0123456789012345678901234567890123456789012345678901234567890123:1G",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tfake_config_t c;
        memset(&c, 0, sizeof c);
        c.ndev = 7;
        tsl_error_t e = {{0}};
        errno = 0;
        if (tfake_parse_gpus(bad[i], &c, &e) != -1)
            fail_msg("'%s' was accepted", bad[i]);
        assert_int_equal(errno, EINVAL);
        assert_int_equal(c.ndev, 7); /* untouched */
        assert_non_null(strstr(e.text, "TESSEL_FAKE_GPUS"));
        assert_null(strchr(e.text, '\n'));
    }
}

static void test_uuids(void **state)
{
    tfake_config_t c;
    memset(&c, 0, sizeof c);
    tsl_error_t e = {{0}};
    assert_int_equal(tfake_parse_gpus("3xA:1G", &c, &e), 0);
    uint8_t third[16];
    memcpy(third, c.dev[2].uuid, 16);
    assert_int_equal(tfake_parse_uuids("GPU-00112233-4455-6677-8899-aabbccddeeff,"
                                       "ffeeddcc-bbaa-9988-7766-554433221100",
                                       &c, &e),
                     0);
    char s[41];
    tfake_uuid_format(c.dev[0].uuid, s);
    assert_string_equal(s, "GPU-00112233-4455-6677-8899-aabbccddeeff");
    tfake_uuid_format(c.dev[1].uuid, s);
    assert_string_equal(s, "GPU-ffeeddcc-bbaa-9988-7766-554433221100");
    assert_memory_equal(c.dev[2].uuid, third, 16); /* not overridden */

    static const char *bad[] = {
        "GPU-00112233-4455-6677-8899-aabbccddeef",
        "GPU-00112233-4455-6677-8899-aabbccddeeffa",
        "GPU-0011223344556677-8899-aabbccddeeff0",
        "GPU-00112233-4455-6677-8899-aabbccddeefg",
        "00112233-4455-6677-8899-aabbccddeeff,00112233-4455-6677-8899-aabbccddeeff",
        "a,b",
        "",
        "00112233-4455-6677-8899-aabbccddeeff,00112233-4455-6677-8899-aabbccddeef0,"
        "00112233-4455-6677-8899-aabbccddeef1,00112233-4455-6677-8899-aabbccddeef2",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tfake_config_t before = c;
        if (tfake_parse_uuids(bad[i], &c, &e) != -1)
            fail_msg("'%s' was accepted", bad[i]);
        assert_int_equal(errno, EINVAL);
        assert_memory_equal(&before, &c, sizeof c);
    }
}

/* CUDA_VISIBLE_DEVICES as the driver reads it: indexes or UUID prefixes, in their order, up to
 * the first entry that names no (new) device. */
static void test_visible(void **state)
{
    tfake_config_t c;
    memset(&c, 0, sizeof c);
    tsl_error_t e = {{0}};
    assert_int_equal(tfake_parse_gpus("3xA:1G", &c, &e), 0);
    assert_int_equal(tfake_parse_uuids("GPU-00112233-4455-6677-8899-aabbccddeeff,"
                                       "GPU-00112299-4455-6677-8899-aabbccddeeff,"
                                       "GPU-ffeeddcc-bbaa-9988-7766-554433221100",
                                       &c, &e),
                     0);
    static const struct {
        const char *v;
        int n, phys[3];
    } cases[] = {
        {NULL, 3, {0, 1, 2}}, /* unset: every device */
        {"", 0, {0}},         /* empty: none */
        {"1", 1, {1}},
        {"2,0", 2, {2, 0}}, /* in the list's order */
        {"0,1,2", 3, {0, 1, 2}},
        {"1,", 1, {1}},
        {"1,7,0", 1, {1}},  /* an index out of range ends the list */
        {"-1", 0, {0}},     /* "-1": no device */
        {"0,-1,2", 1, {0}}, /* ... after the devices before it */
        {"1,1,2", 1, {1}},  /* a device named twice ends it */
        {"0,,2", 1, {0}},   /* so does a blank entry */
        {"0, 2", 1, {0}},   /* and one with a space */
        {"x", 0, {0}},
        {"GPU-ffeeddcc", 1, {2}},                                  /* a UUID prefix */
        {"GPU-FFEEDDCC-bbaa-9988-7766-554433221100,0", 2, {2, 0}}, /* whole, any case */
        {"GPU-00112233,GPU-ffee", 2, {0, 2}},
        {"GPU-001122,1", 0, {0}},     /* a prefix of two devices' UUIDs names none */
        {"2,GPU-0011229", 2, {2, 1}}, /* one of them, unambiguous */
        {"GPU-abcdef", 0, {0}},       /* no such UUID */
        {"GPU-", 0, {0}},
        {"MIG-00112233", 0, {0}},                         /* no MIG instances on a fake */
        {"00112233-4455-6677-8899-aabbccddeeff", 0, {0}}, /* a UUID needs its "GPU-" */
        {"0001", 1, {1}},
        {"99999999999999999999", 0, {0}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int phys[TFAKE_MAX_DEVICES] = {0};
        int n = tfake_visible(cases[i].v, &c, phys);
        if (n != cases[i].n)
            fail_msg("CUDA_VISIBLE_DEVICES='%s': %d devices, expected %d",
                     cases[i].v ? cases[i].v : "(unset)", n, cases[i].n);
        for (int k = 0; k < n; k++)
            if (phys[k] != cases[i].phys[k])
                fail_msg("CUDA_VISIBLE_DEVICES='%s': ordinal %d is device %d, expected %d",
                         cases[i].v ? cases[i].v : "(unset)", k, phys[k], cases[i].phys[k]);
    }
}

static void test_env(void **state)
{
    tfake_config_t c;
    tsl_error_t e = {{0}};
    unsetenv("TESSEL_FAKE_GPUS");
    unsetenv("TESSEL_FAKE_GPU_UUIDS");
    unsetenv("TESSEL_FAKE_KERNEL_US");
    unsetenv("TESSEL_FAKE_CTX_MEM");
    unsetenv("TESSEL_FAKE_ALLOC_GRANULE");
    unsetenv("TESSEL_FAKE_STATE");
    unsetenv("TESSEL_FAKE_CALLS_FILE");
    assert_int_equal(tfake_config_from_env(&c, &e), 0);
    assert_int_equal(c.ndev, 1);
    assert_true(c.kernel_ns == 0);
    assert_true(c.ctx_mem == TFAKE_DEFAULT_CTX_MEM);
    assert_true(c.alloc_granule == TFAKE_DEFAULT_ALLOC_GRANULE);
    assert_string_equal(c.state_path, "");

    setenv("TESSEL_FAKE_GPUS", "2xRTX4090:24G", 1);
    setenv("TESSEL_FAKE_KERNEL_US", "1500", 1);
    setenv("TESSEL_FAKE_CTX_MEM", "0", 1);
    setenv("TESSEL_FAKE_ALLOC_GRANULE", "2M", 1);
    setenv("TESSEL_FAKE_STATE", "/tmp/x", 1);
    assert_int_equal(tfake_config_from_env(&c, &e), 0);
    assert_int_equal(c.ndev, 2);
    assert_true(c.kernel_ns == 1500000);
    assert_true(c.ctx_mem == 0);
    assert_true(c.ctx_mem_created[1] == 0); /* created contexts: as primary by default */
    assert_true(c.alloc_granule == 2ull << 20);
    assert_string_equal(c.state_path, "/tmp/x");

    /* Context costs per device and per kind; the last value repeats. */
    setenv("TESSEL_FAKE_CTX_MEM", "600M,500M", 1);
    setenv("TESSEL_FAKE_CTX_MEM_CREATED", "90M", 1);
    assert_int_equal(tfake_config_from_env(&c, &e), 0);
    assert_true(c.ctx_mem == 600ull << 20);
    assert_true(c.ctx_mem_primary[0] == 600ull << 20);
    assert_true(c.ctx_mem_primary[1] == 500ull << 20);
    assert_true(c.ctx_mem_primary[5] == 500ull << 20);
    assert_true(c.ctx_mem_created[0] == 90ull << 20);
    assert_true(c.ctx_mem_created[1] == 90ull << 20);
    unsetenv("TESSEL_FAKE_CTX_MEM_CREATED");
    setenv("TESSEL_FAKE_CTX_MEM", "0", 1);

    static const struct {
        const char *var, *val;
    } bad[] = {
        {"TESSEL_FAKE_GPUS", "2xRTX4090"},        {"TESSEL_FAKE_KERNEL_US", "-5"},
        {"TESSEL_FAKE_KERNEL_US", "1.5"},         {"TESSEL_FAKE_KERNEL_US", ""},
        {"TESSEL_FAKE_CTX_MEM", "lots"},          {"TESSEL_FAKE_ALLOC_GRANULE", "0"},
        {"TESSEL_FAKE_GPU_UUIDS", "GPU-nope"},    {"TESSEL_FAKE_CTX_MEM", "64M,"},
        {"TESSEL_FAKE_CTX_MEM_CREATED", "64M,x"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *old = getenv(bad[i].var) ? strdup(getenv(bad[i].var)) : NULL;
        setenv(bad[i].var, bad[i].val, 1);
        tfake_config_t before = c;
        if (tfake_config_from_env(&c, &e) != -1)
            fail_msg("%s=%s was accepted", bad[i].var, bad[i].val);
        assert_non_null(strstr(e.text, bad[i].var));
        assert_memory_equal(&before, &c, sizeof c);
        if (old)
            setenv(bad[i].var, old, 1);
        else
            unsetenv(bad[i].var);
        free(old);
    }
}

static void test_display_name(void **state)
{
    tfake_device_t d = {.name = "RTX4090"};
    char s[64];
    tfake_display_name(&d, s, sizeof s);
    assert_string_equal(s, "Fake RTX4090");
    strcpy(d.name, "FakeGPU");
    tfake_display_name(&d, s, sizeof s);
    assert_string_equal(s, "FakeGPU");
    tfake_display_name(&d, s, 5);
    assert_string_equal(s, "Fake");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_and_counts),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_uuids),
        cmocka_unit_test(test_visible),
        cmocka_unit_test(test_env),
        cmocka_unit_test(test_display_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
