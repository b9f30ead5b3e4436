/* test_jobenv.c - tsl_env_reserved: which submitted variables a job may not set. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "libutil/jobenv.h"

static void test_reserved(void **state)
{
    static const char *const reserved[] = {
        "CUDA_VISIBLE_DEVICES",   "NVIDIA_VISIBLE_DEVICES", "TESSEL_JOB_ID",
        "TESSEL_SLICE",           "TESSEL_CUDA_MEM_LIMIT",  "TESSEL_CUDA_MEM_LIMIT_3",
        "TESSEL_DEVICE_REGISTRY", "TESSEL_FAKE_GPUS",       "TESSEL_CUDA_MEM_OVERSUBSCRIBE",
    };
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
        assert_non_null(tsl_env_reserved(reserved[i]));
}

static void test_allowed(void **state)
{
    static const char *const allowed[] = {
        "PATH",
        "VIRTUAL_ENV",
        "CONDA_PREFIX",
        "CONDA_DEFAULT_ENV",
        "LD_PRELOAD",
        "LD_LIBRARY_PATH",
        "LD_AUDIT",
        "CUDA_HOME",
        "CUDA_DEVICE_MAX_CONNECTIONS",
        "HOME",
        "USER",
        "TESSEL_CUDA_CORE_LIMIT",
        "TESSEL_CUDA_CORE_MODE",
        "TESSEL_CUDA_CORE_PRIORITY",
        "TESSEL_FAKE_STATE",
        "TESSEL_FAKE_CTX_MEM",
        "TESSEL_CANARY",
        "TESSELATE",
        "CUDA_VISIBLE_DEVICES_X",
        "TESSEL_CUDA_MEM_LIMITS",
    };
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
        assert_null(tsl_env_reserved(allowed[i]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reserved),
        cmocka_unit_test(test_allowed),
    };
    return cmocka_run_group_tests_name("libutil/jobenv", tests, NULL, NULL);
}
