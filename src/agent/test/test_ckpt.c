/* test_ckpt.c - tagent_ckpt (ckpt.h) against the fake driver's checkpoint API: a job's CUDA
 * processes suspended and resumed together (a process without CUDA skipped), their memory given
 * back and their contents intact; a resume that does not fit answers EAGAIN and completes later;
 * a suspend that fails for one process leaves every process running as before; a driver without
 * the API or no driver at all is refused at open. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/ckpt.h"
#include "cudaabi/cuda_abi.h"
#include "tessel_fake.h"

#define MiB (1ull << 20)

static char state_path[64];
static char lib[4096];

static void fresh(void)
{
    tessel_fake_reset();
    unsetenv("TESSEL_FAKE_CHECKPOINT");
    snprintf(state_path, sizeof state_path, "/tmp/tessel-agent-ckpt-XXXXXX");
    int fd = mkstemp(state_path);
    assert_true(fd >= 0);
    close(fd);
    unlink(state_path);
    setenv("TESSEL_FAKE_STATE", state_path, 1);
    setenv("TESSEL_FAKE_GPUS", "A:1G", 1);
    setenv("TESSEL_FAKE_CTX_MEM", "64M", 1);
    const char *b = getenv("TESSEL_BUILD");
    snprintf(lib, sizeof lib, "%s/tests/fake/libcuda.so.1", b ? b : "build");
}

static int teardown(void **state)
{
    (void)state;
    tessel_fake_reset();
    unlink(state_path);
    unsetenv("TESSEL_FAKE_CHECKPOINT");
    return 0;
}

typedef struct {
    pid_t pid;
    int to, from;
} kid_t;

/* A process of the job: with cuda, it allocates size (and managed memory with uvm), writes
 * 0x5a everywhere, says so, waits for a byte, checks every byte and exits 0 when all held.
 * Without cuda, it only waits. */
static kid_t start(int cuda, uint64_t size, int uvm)
{
    int up[2], down[2];
    assert_int_equal(pipe(up), 0);
    assert_int_equal(pipe(down), 0);
    kid_t k = {.pid = fork()};
    assert_true(k.pid >= 0);
    if (k.pid == 0) {
        alarm(60);
        char b;
        CUcontext c;
        CUdeviceptr p = 0, m = 0;
        int rc = 0;
        if (cuda) {
            rc = cuInit(0) | cuDevicePrimaryCtxRetain(&c, 0) | cuCtxSetCurrent(c);
            rc |= cuMemAlloc_v2(&p, size) | cuMemsetD8_v2(p, 0x5a, size);
            if (uvm)
                rc |= cuMemAllocManaged(&m, MiB, 1);
        }
        if (rc || write(up[1], "r", 1) != 1 || read(down[0], &b, 1) != 1)
            _exit(2);
        int ok = 1;
        if (cuda) {
            unsigned char *h = malloc(size);
            ok = h && cuMemcpyDtoH_v2(h, p, size) == CUDA_SUCCESS;
            for (uint64_t i = 0; ok && i < size; i++)
                ok = h[i] == 0x5a;
            free(h);
        }
        _exit(ok ? 0 : 1);
    }
    close(up[1]);
    close(down[0]);
    k.to = down[1];
    k.from = up[0];
    char b;
    assert_int_equal(read(k.from, &b, 1), 1);
    return k;
}

static int finish(kid_t *k)
{
    assert_int_equal(write(k->to, "g", 1), 1);
    int st = 0;
    assert_int_equal(waitpid(k->pid, &st, 0), k->pid);
    close(k->to);
    close(k->from);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void test_round_trip(void **state)
{
    (void)state;
    fresh();
    /* Forked before this process initialises CUDA (tagent_ckpt_open), as the fork rule asks. */
    kid_t plain = start(0, 0, 0), a = start(1, 256 * MiB, 0), b = start(1, 128 * MiB, 0);
    tsl_error_t err = {{0}};
    tagent_ckpt_t *c = tagent_ckpt_open(lib, &err);
    assert_non_null(c);
    unsigned long long ua = tessel_fake_pid_used(0, a.pid), ub = tessel_fake_pid_used(0, b.pid);
    assert_true(ua == 320 * MiB && ub == 192 * MiB); /* allocation + context */
    pid_t pids[] = {plain.pid, a.pid, b.pid};
    assert_int_equal(tagent_ckpt_suspend(c, pids, 3, 5000, &err), 2); /* plain is skipped */
    assert_true(tessel_fake_pid_used(0, a.pid) == 0 && tessel_fake_pid_used(0, b.pid) == 0);
    assert_true(tessel_fake_device_used(0) == 0);

    /* Another tenant takes all but 256 MiB: a's restore (320 MiB) does not fit. */
    assert_int_equal(tessel_fake_occupy(0, (long long)(768 * MiB)), 0);
    errno = 0;
    assert_int_equal(tagent_ckpt_resume(c, pids, 3, &err), -1);
    assert_int_equal(errno, EAGAIN);
    assert_non_null(strstr(err.text, "restore failed"));
    assert_int_equal(tessel_fake_occupy(0, -(long long)(768 * MiB)), 0);
    assert_int_equal(tagent_ckpt_resume(c, pids, 3, &err), 2);
    assert_true(tessel_fake_pid_used(0, a.pid) == ua && tessel_fake_pid_used(0, b.pid) == ub);
    assert_int_equal(tagent_ckpt_resume(c, pids, 3, &err), 0); /* nothing left to resume */
    assert_int_equal(finish(&a), 0);                           /* every byte held */
    assert_int_equal(finish(&b), 0);
    assert_int_equal(finish(&plain), 0);
    tagent_ckpt_close(c);
}

/* One process that cannot be checkpointed (managed memory): the suspend fails and leaves
 * every process running with its memory. */
static void test_all_or_nothing(void **state)
{
    (void)state;
    fresh();
    kid_t a = start(1, 64 * MiB, 0), u = start(1, 64 * MiB, 1);
    tsl_error_t err = {{0}};
    tagent_ckpt_t *c = tagent_ckpt_open(lib, &err);
    assert_non_null(c);
    unsigned long long ua = tessel_fake_pid_used(0, a.pid);
    pid_t pids[] = {a.pid, u.pid};
    errno = 0;
    assert_int_equal(tagent_ckpt_suspend(c, pids, 2, 0, &err), -1);
    assert_int_equal(errno, ENOTSUP);
    char want[64];
    snprintf(want, sizeof want, "process %d: checkpoint failed", (int)u.pid);
    assert_non_null(strstr(err.text, want));
    CUprocessState st;
    assert_int_equal(cuCheckpointProcessGetState(a.pid, &st), CUDA_SUCCESS);
    assert_int_equal(st, CU_PROCESS_STATE_RUNNING);
    assert_int_equal(cuCheckpointProcessGetState(u.pid, &st), CUDA_SUCCESS);
    assert_int_equal(st, CU_PROCESS_STATE_RUNNING);
    assert_true(tessel_fake_pid_used(0, a.pid) == ua);
    assert_int_equal(finish(&a), 0);
    assert_int_equal(finish(&u), 0);
    tagent_ckpt_close(c);
}

static void test_open_refused(void **state)
{
    (void)state;
    fresh();
    tsl_error_t err = {{0}};
    errno = 0;
    assert_null(tagent_ckpt_open("/nonexistent/libcuda.so.1", &err));
    assert_int_equal(errno, ENOENT);
    assert_null(tagent_ckpt_open("libm.so.6", &err));
    assert_int_equal(errno, ENOENT);
    assert_non_null(strstr(err.text, "not a CUDA driver"));
    setenv("TESSEL_FAKE_CHECKPOINT", "0", 1);
    assert_null(tagent_ckpt_open(lib, &err));
    assert_int_equal(errno, ENOTSUP);
    assert_non_null(strstr(err.text, "does not support checkpointing"));
    tagent_ckpt_close(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_round_trip, teardown),
        cmocka_unit_test_teardown(test_all_or_nothing, teardown),
        cmocka_unit_test_teardown(test_open_refused, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
