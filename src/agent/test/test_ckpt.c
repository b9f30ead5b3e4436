/* test_ckpt.c - tagent_ckpt (ckpt.h) against the fake driver's checkpoint API: a job's CUDA
 * processes suspended and resumed together (a process without CUDA skipped), their memory given
 * back and their contents intact; a resume that does not fit answers EAGAIN and completes later;
 * a suspend that fails for one process leaves every process running as before; a driver without
 * the API or no driver at all is refused at open; two threads on one handle, one held by a
 * stopped process, the other's round trip done meanwhile; the gate between the lock and the
 * copy.  And what a suspend measures
 * (tagent_nvml_job_used, gpu.h) against the fake NVML: a job's own processes' memory, whatever
 * other processes free meanwhile. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
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
#include "agent/gpu.h"
#include "cudaabi/cuda_abi.h"
#include "libutil/procstat.h"
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

/* The gate between the two phases (tagent_ckpt_suspend_gated): called once, with every CUDA
 * process locked and nothing copied yet; a gate that gives up leaves them running with their
 * memory (ECANCELED); a list without a CUDA process calls no gate. */
typedef struct {
    pid_t pid;
    int calls, give_up;
    CUprocessState st;
    unsigned long long used;
    tagent_ckpt_cur_t *cur;
    size_t cur_seen;
} gate_seen_t;

static int gate(void *arg)
{
    gate_seen_t *g = arg;
    g->calls++;
    if (cuCheckpointProcessGetState(g->pid, &g->st) != CUDA_SUCCESS)
        g->st = (CUprocessState)-1;
    g->used = tessel_fake_pid_used(0, g->pid);
    g->cur_seen = g->cur ? atomic_load(g->cur) : 0;
    return g->give_up ? -1 : 0;
}

static void test_gate(void **state)
{
    (void)state;
    fresh();
    kid_t plain = start(0, 0, 0), a = start(1, 128 * MiB, 0);
    tsl_error_t err = {{0}};
    tagent_ckpt_t *c = tagent_ckpt_open(lib, &err);
    assert_non_null(c);
    unsigned long long ua = tessel_fake_pid_used(0, a.pid);
    pid_t pids[] = {plain.pid, a.pid};
    gate_seen_t g = {.pid = a.pid, .give_up = 1};
    errno = 0;
    assert_int_equal(tagent_ckpt_suspend_gated(c, pids, NULL, 2, 5000, gate, &g, NULL, &err), -1);
    assert_int_equal(errno, ECANCELED);
    assert_int_equal(g.calls, 1);
    assert_int_equal(g.st, CU_PROCESS_STATE_LOCKED); /* locked, not yet copied */
    assert_true(g.used == ua);
    CUprocessState st;
    assert_int_equal(cuCheckpointProcessGetState(a.pid, &st), CUDA_SUCCESS);
    assert_int_equal(st, CU_PROCESS_STATE_RUNNING); /* given up: unlocked, memory kept */
    assert_true(tessel_fake_pid_used(0, a.pid) == ua);
    /* cur: nothing published at the gate (no copy yet), set back to 0 once the copies end (a
     * watcher saw 2, a's index + 1, while the driver checkpointed or restored a) */
    tagent_ckpt_cur_t cur = 99;
    g = (gate_seen_t){.pid = a.pid, .cur = &cur};
    assert_int_equal(tagent_ckpt_suspend_gated(c, pids, NULL, 2, 5000, gate, &g, &cur, &err), 1);
    assert_int_equal(g.calls, 1);
    assert_int_equal(g.cur_seen, 99);
    assert_int_equal(atomic_load(&cur), 0);
    assert_int_equal(g.st, CU_PROCESS_STATE_LOCKED);
    assert_int_equal(tessel_fake_pid_used(0, a.pid), 0);
    atomic_store(&cur, 99);
    assert_int_equal(tagent_ckpt_resume_watched(c, pids, NULL, 2, &cur, &err), 1);
    assert_int_equal(atomic_load(&cur), 0);
    g = (gate_seen_t){.pid = plain.pid};
    assert_int_equal(tagent_ckpt_suspend_gated(c, pids, NULL, 1, 5000, gate, &g, NULL, &err), 0);
    assert_int_equal(g.calls, 0); /* no CUDA process: no gate */
    assert_int_equal(finish(&a), 0);
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

/* A suspend in a thread of its own (test_concurrent). */
typedef struct {
    tagent_ckpt_t *c;
    pid_t pid;
    int rc;
    int done; /* atomic: set when the suspend returned */
} bg_t;

static void *bg_suspend(void *arg)
{
    bg_t *b = arg;
    tsl_error_t err = {{0}};
    b->rc = tagent_ckpt_suspend(b->c, &b->pid, 1, 5000, &err);
    __atomic_store_n(&b->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* RV3's F2 at this layer: a process that is stopped (SIGSTOP) holds its own suspend (the
 * driver's lock waits for it), not another process's on the same handle: b is suspended and
 * resumed, intact, from the main thread while a's suspend waits in another thread. */
static void test_concurrent(void **state)
{
    (void)state;
    fresh();
    kid_t a = start(1, 128 * MiB, 0), b = start(1, 64 * MiB, 0);
    tsl_error_t err = {{0}};
    tagent_ckpt_t *c = tagent_ckpt_open(lib, &err);
    assert_non_null(c);
    unsigned long long ua = tessel_fake_pid_used(0, a.pid), ub = tessel_fake_pid_used(0, b.pid);
    assert_int_equal(kill(a.pid, SIGSTOP), 0);
    bg_t bg = {.c = c, .pid = a.pid};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, bg_suspend, &bg), 0);
    assert_int_equal(tagent_ckpt_suspend(c, &b.pid, 1, 5000, &err), 1);
    assert_true(tessel_fake_pid_used(0, b.pid) == 0);
    assert_int_equal(tagent_ckpt_resume(c, &b.pid, 1, &err), 1);
    assert_true(tessel_fake_pid_used(0, b.pid) == ub);
    assert_int_equal(__atomic_load_n(&bg.done, __ATOMIC_ACQUIRE), 0); /* a's still waits */
    assert_int_equal(finish(&b), 0);
    assert_int_equal(kill(a.pid, SIGCONT), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(bg.rc, 1);
    assert_true(tessel_fake_pid_used(0, a.pid) == 0);
    assert_int_equal(tagent_ckpt_resume(c, &a.pid, 1, &err), 1);
    assert_true(tessel_fake_pid_used(0, a.pid) == ua);
    assert_int_equal(finish(&a), 0);
    tagent_ckpt_close(c);
}

/* What a suspend measures: the job's own processes on its GPUs.  Job process a (320 MiB with
 * its context) is checkpointed while another process o ends (192 MiB freed) and another tenant
 * frees 256 MiB on the same GPU: the device's used memory falls by 768 MiB, the job's by its
 * own 320 MiB. */
static void test_job_used(void **state)
{
    (void)state;
    fresh();
    kid_t a = start(1, 256 * MiB, 0), o = start(1, 128 * MiB, 0);
    tsl_error_t err = {{0}};
    tagent_ckpt_t *c = tagent_ckpt_open(lib, &err);
    assert_non_null(c);
    char nvml[4096];
    const char *bd = getenv("TESSEL_BUILD");
    snprintf(nvml, sizeof nvml, "%s/tests/fake/libnvidia-ml.so.1", bd ? bd : "build");
    tagent_nvml_t *n = tagent_nvml_open(nvml, &err);
    assert_non_null(n);
    assert_int_equal(tessel_fake_occupy(0, (long long)(256 * MiB)), 0);
    unsigned gpu0 = 0;
    pid_t job[] = {a.pid}, both[] = {a.pid, o.pid}, none[] = {0, -1};
    uint64_t before, after, sum, total, dev_before, dev_after, avail;
    assert_int_equal(tagent_nvml_job_used(n, &gpu0, 1, job, 1, &before), 0);
    assert_true(before == 320 * MiB);
    assert_int_equal(tagent_nvml_job_used(n, &gpu0, 1, both, 2, &sum), 0);
    assert_true(sum == 512 * MiB);
    assert_int_equal(tagent_nvml_job_used(n, &gpu0, 1, none, 2, &sum), 0);
    assert_true(sum == 0);
    assert_int_equal(tagent_nvml_memory(n, 0, &total, &dev_before, &avail), 0);

    assert_int_equal(tagent_ckpt_suspend(c, job, 1, 5000, &err), 1);
    assert_int_equal(finish(&o), 0);
    assert_int_equal(tessel_fake_occupy(0, -(long long)(256 * MiB)), 0);
    assert_int_equal(tagent_nvml_job_used(n, &gpu0, 1, job, 1, &after), 0);
    assert_true(after == 0);
    assert_true(before - after == 320 * MiB); /* what the job gave back */
    assert_int_equal(tagent_nvml_memory(n, 0, &total, &dev_after, &avail), 0);
    assert_true(dev_before - dev_after == 768 * MiB); /* the device-wide figure: not the job's */

    /* NVML cannot say: no GPU, no handle, a GPU that does not exist. */
    errno = 0;
    assert_int_equal(tagent_nvml_job_used(n, &gpu0, 0, job, 1, &sum), -1);
    assert_int_equal(errno, ENODEV);
    assert_int_equal(tagent_nvml_job_used(NULL, &gpu0, 1, job, 1, &sum), -1);
    unsigned gpu9 = 9;
    errno = 0;
    assert_int_equal(tagent_nvml_job_used(n, &gpu9, 1, job, 1, &sum), -1);
    assert_int_equal(errno, EIO);
    assert_true(sum == 0);

    assert_int_equal(tagent_ckpt_resume(c, job, 1, &err), 1);
    assert_int_equal(finish(&a), 0);
    tagent_nvml_close(n);
    tagent_ckpt_close(c);
}

/* tagent_procs_sum: members only, "not available" left out and said, saturation. */
static void test_procs_sum(void **state)
{
    (void)state;
    const unsigned pids[] = {10, 11, 12, 13};
    const uint64_t used[] = {100, 200, 0xFFFFFFFFFFFFFFFFull, 400};
    const pid_t of[] = {10, 12, 0, -1};
    bool unknown = false;
    assert_true(tagent_procs_sum(pids, used, 4, of, 4, &unknown) == 100);
    assert_true(unknown); /* pid 12's figure is not available */
    const pid_t of2[] = {11, 13};
    unknown = false;
    assert_true(tagent_procs_sum(pids, used, 4, of2, 2, &unknown) == 600);
    assert_false(unknown);
    assert_true(tagent_procs_sum(pids, used, 4, of2, 0, NULL) == 0);
    const unsigned big_pids[] = {1, 2};
    const uint64_t big[] = {UINT64_MAX - 5, 10};
    const pid_t of3[] = {1, 2};
    assert_true(tagent_procs_sum(big_pids, big, 2, of3, 2, NULL) == UINT64_MAX);
}

/* The security review's H1: a pid is acted on only while it names the process listed (the
 * start time read when it was listed).  Given V's pid with another start time (as if V had
 * got the number of one of the job's processes since), the suspend leaves V alone (0
 * suspended, V's memory on the GPU), and so does a resume once V is checkpointed under its own
 * start time; 0 (a process gone at the listing) is left alone too; with its own start time V
 * is suspended and resumed, its contents intact. */
static void test_pid_identity(void **state)
{
    (void)state;
    fresh();
    kid_t v = start(1, 64 * MiB, 0);
    tsl_procstat_t ps;
    assert_int_equal(tsl_procstat_read(v.pid, &ps), 0);
    uint64_t own = ps.start_time, other = ps.start_time + 1, gone = 0;
    tsl_error_t err = {{0}};
    tagent_ckpt_t *c = tagent_ckpt_open(lib, &err);
    assert_non_null(c);
    unsigned long long uv = tessel_fake_pid_used(0, v.pid);
    assert_true(uv >= 64 * MiB);
    assert_int_equal(tagent_ckpt_suspend_ids(c, &v.pid, &other, 1, 5000, &err), 0);
    assert_true(tessel_fake_pid_used(0, v.pid) == uv); /* left alone */
    assert_int_equal(tagent_ckpt_suspend_ids(c, &v.pid, &gone, 1, 5000, &err), 0);
    assert_int_equal(tagent_ckpt_suspend_ids(c, &v.pid, &own, 1, 5000, &err), 1);
    assert_true(tessel_fake_pid_used(0, v.pid) == 0);
    assert_int_equal(tagent_ckpt_resume_ids(c, &v.pid, &other, 1, &err), 0);
    assert_true(tessel_fake_pid_used(0, v.pid) == 0); /* still checkpointed */
    assert_int_equal(tagent_ckpt_resume_ids(c, &v.pid, &own, 1, &err), 1);
    assert_true(tessel_fake_pid_used(0, v.pid) == uv);
    assert_int_equal(finish(&v), 0);
    tagent_ckpt_close(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_round_trip, teardown),
        cmocka_unit_test_teardown(test_all_or_nothing, teardown),
        cmocka_unit_test_teardown(test_gate, teardown),
        cmocka_unit_test_teardown(test_open_refused, teardown),
        cmocka_unit_test_teardown(test_concurrent, teardown),
        cmocka_unit_test_teardown(test_job_used, teardown),
        cmocka_unit_test_teardown(test_pid_identity, teardown),
        cmocka_unit_test(test_procs_sum),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
