/* test_time.c - simulated kernel time of the fake driver: durations, events,
 * queries, synchronisation, serialisation across streams and processes,
 * graphs and stream capture.  Assertions are on simulated arithmetic (busy
 * counters, event differences bounded below exactly and above generously),
 * never on how fast this machine is. */
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

#include "cudaabi/cuda_abi.h"
#include "tessel_fake.h"

#define OK(call) assert_int_equal((call), CUDA_SUCCESS)
#define MS       1000000ull

static CUmodule mod;

static void start(const char *gpus, const char *kernel_us)
{
    tessel_fake_reset();
    unsetenv("TESSEL_FAKE_STATE");
    setenv("TESSEL_FAKE_CTX_MEM", "0", 1);
    setenv("TESSEL_FAKE_GPUS", gpus ? gpus : "A:1G", 1);
    if (kernel_us)
        setenv("TESSEL_FAKE_KERNEL_US", kernel_us, 1);
    else
        unsetenv("TESSEL_FAKE_KERNEL_US");
    OK(cuInit(0));
    CUcontext c;
    OK(cuDevicePrimaryCtxRetain(&c, 0));
    OK(cuCtxSetCurrent(c));
    OK(cuModuleLoadData(&mod, "fake image"));
    tessel_fake_reset_calls();
}

static int teardown(void **state)
{
    tessel_fake_reset();
    return 0;
}

static CUfunction fn(const char *name)
{
    CUfunction f;
    OK(cuModuleGetFunction(&f, mod, name));
    return f;
}

static void launch(CUfunction f, CUstream s, unsigned long long *param_us)
{
    void *params[] = {param_us};
    OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, param_us ? params : NULL, NULL));
}

static void test_durations(void **state)
{
    start(NULL, "2000");
    unsigned long long b0 = tessel_fake_device_busy_ns(0);
    launch(fn("k"), NULL, NULL); /* TESSEL_FAKE_KERNEL_US */
    assert_true(tessel_fake_device_busy_ns(0) - b0 == 2 * MS);
    launch(fn("fake_kernel_250us"), NULL, NULL);
    assert_true(tessel_fake_device_busy_ns(0) - b0 == 2 * MS + 250000);
    unsigned long long us = 1234;
    launch(fn("fake_kernel_param_us"), NULL, &us);
    assert_true(tessel_fake_device_busy_ns(0) - b0 == 2 * MS + 250000 + 1234000);
    CUfunction h = fn("hooked");
    assert_int_equal(tessel_fake_set_kernel_us(h, 5), 0);
    launch(h, NULL, NULL);
    assert_true(tessel_fake_device_busy_ns(0) - b0 == 2 * MS + 250000 + 1234000 + 5000);
    assert_int_equal(tessel_fake_device_kernels(0), 4);
    assert_true(tessel_fake_process_busy_ns(0) == tessel_fake_device_busy_ns(0));
    assert_ptr_equal(fn("k"), fn("k")); /* one function per name and module */
    OK(cuCtxSynchronize());
    assert_true(tessel_fake_now_ns() >= tessel_fake_device_idle_at_ns(0));
    /* Launch validation. */
    assert_int_equal(cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL),
                     CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(cuLaunchKernel(h, 0, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL),
                     CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuLaunchKernel(h, 1, 1, 1, 1025, 1, 1, 0, NULL, NULL, NULL),
                     CUDA_ERROR_INVALID_VALUE);
    OK(cuModuleUnload(mod));
    assert_int_equal(cuLaunchKernel(h, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL),
                     CUDA_ERROR_INVALID_HANDLE);
}

static void test_events(void **state)
{
    start(NULL, "2000");
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUevent e0, e1, nt;
    OK(cuEventCreate(&e0, 0));
    OK(cuEventCreate(&e1, CU_EVENT_BLOCKING_SYNC));
    OK(cuEventCreate(&nt, CU_EVENT_DISABLE_TIMING));
    float ms = -1;
    assert_int_equal(cuEventElapsedTime(&ms, e0, e1), CUDA_ERROR_INVALID_HANDLE); /* unrecorded */
    OK(cuEventQuery(e0));
    /* A 1 s kernel first keeps the stream busy, so the events below fall
     * exactly on kernel boundaries whenever the host launches in time. */
    launch(fn("fake_kernel_1000000us"), s, NULL);
    OK(cuEventRecord(e0, s));
    for (int i = 0; i < 10; i++)
        launch(fn("k"), s, NULL);
    OK(cuEventRecord_ptsz(e1, s));
    OK(cuEventRecord(nt, s));
    OK(cuEventSynchronize(e1));
    assert_true(tessel_fake_now_ns() >= tessel_fake_device_idle_at_ns(0));
    OK(cuEventQuery(e1));
    OK(cuStreamQuery(s));
    OK(cuEventElapsedTime(&ms, e0, e1));
    assert_true(ms >= 20.0f - 1e-3f && ms <= 20.0f + 1000.0f);
    OK(cuEventElapsedTime_v2(&ms, e1, e0));
    assert_true(ms <= -20.0f + 1e-3f);
    assert_int_equal(cuEventElapsedTime(&ms, e0, nt), CUDA_ERROR_INVALID_HANDLE);
    assert_true(tessel_fake_device_busy_ns(0) == 1000 * MS + 20 * MS);
    assert_int_equal(tessel_fake_calls("cuEventRecord"), 2);
    assert_int_equal(tessel_fake_calls("cuEventRecord_ptsz"), 1);
    assert_int_equal(tessel_fake_calls("cuEventElapsedTime"), 3);
    assert_int_equal(tessel_fake_calls("cuEventElapsedTime_v2"), 1);
    OK(cuEventDestroy_v2(e0));
    OK(cuEventDestroy(e1));
    OK(cuEventDestroy_v2(nt));
    assert_int_equal(cuEventDestroy_v2(nt), CUDA_ERROR_INVALID_HANDLE);
    OK(cuStreamDestroy_v2(s));
}

static void test_not_ready(void **state)
{
    start(NULL, NULL);
    CUstream s;
    OK(cuStreamCreateWithPriority(&s, 0, -3));
    int prio = 0;
    OK(cuStreamGetPriority(s, &prio));
    assert_int_equal(prio, -3);
    CUevent a, b;
    OK(cuEventCreate(&a, 0));
    OK(cuEventCreate(&b, 0));
    OK(cuEventRecord(a, s));
    launch(fn("fake_kernel_3600000000us"), s, NULL); /* one simulated hour */
    OK(cuEventRecord(b, s));
    assert_int_equal(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
    assert_int_equal(cuStreamQuery_ptsz(s), CUDA_ERROR_NOT_READY);
    assert_int_equal(cuEventQuery(b), CUDA_ERROR_NOT_READY);
    float ms;
    assert_int_equal(cuEventElapsedTime(&ms, a, b), CUDA_ERROR_NOT_READY);
    OK(cuStreamQuery(NULL)); /* the default stream has nothing queued */
    /* Work on another stream queues behind the hour: kernels serialise. */
    CUstream s2;
    OK(cuStreamCreate(&s2, 0));
    launch(fn("k0"), s2, NULL);
    assert_int_equal(cuStreamQuery(s2), CUDA_ERROR_NOT_READY);
    assert_true(tessel_fake_device_idle_at_ns(0) >= tessel_fake_now_ns() + 3500ull * 1000 * MS);
    /* No synchronising: the reset in teardown drops the simulated hour. */
}

static void test_serialisation(void **state)
{
    start(NULL, "10000");
    CUstream s1, s2;
    OK(cuStreamCreate(&s1, 0));
    OK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CUevent e1, e2, w;
    OK(cuEventCreate(&e1, 0));
    OK(cuEventCreate(&e2, 0));
    OK(cuEventCreate(&w, 0));
    CUfunction k = fn("k");
    unsigned long long t0 = tessel_fake_now_ns();
    for (int i = 0; i < 5; i++)
        launch(k, s1, NULL);
    OK(cuEventRecord(e1, s1));
    for (int i = 0; i < 5; i++)
        launch(k, s2, NULL);
    OK(cuEventRecord(e2, s2));
    /* Ten 10 ms kernels on one device take at least 100 ms, whichever stream. */
    assert_true(tessel_fake_device_idle_at_ns(0) >= t0 + 100 * MS);
    OK(cuStreamSynchronize(s2));
    float ms;
    OK(cuEventElapsedTime(&ms, e1, e2));
    assert_true(ms >= 50.0f - 1e-3f);
    /* cuStreamWaitEvent: s2's next kernel starts after the event on s1. */
    launch(fn("fake_kernel_30000us"), s1, NULL);
    OK(cuEventRecord(w, s1));
    OK(cuStreamWaitEvent(s2, w, 0));
    OK(cuEventRecord(e2, s2));
    OK(cuEventSynchronize(e2));
    OK(cuEventElapsedTime(&ms, w, e2));
    assert_true(ms >= 0.0f);
    OK(cuStreamSynchronize_ptsz(NULL));
    OK(cuCtxSynchronize());
    assert_true(tessel_fake_device_busy_ns(0) == 130 * MS);
    assert_int_equal(tessel_fake_calls("cuStreamSynchronize"), 1);
    assert_int_equal(tessel_fake_calls("cuStreamSynchronize_ptsz"), 1);
}

static void test_launch_variants(void **state)
{
    start("2xA:1G", "1000");
    CUfunction k = fn("k");
    unsigned long long b0 = tessel_fake_device_busy_ns(0);
    OK(cuLaunchKernel_ptsz(k, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    CUlaunchAttribute attr;
    memset(&attr, 0, sizeof attr);
    attr.id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
    attr.value.priority = -1;
    CUlaunchConfig cfg = {2, 1, 1, 64, 1, 1, 0, NULL, &attr, 1};
    OK(cuLaunchKernelEx(&cfg, k, NULL, NULL));
    OK(cuLaunchKernelEx_ptsz(&cfg, k, NULL, NULL));
    cfg.attrs = NULL;
    assert_int_equal(cuLaunchKernelEx(&cfg, k, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    OK(cuLaunchCooperativeKernel(k, 1, 1, 1, 1, 1, 1, 0, NULL, NULL));
    OK(cuLaunchCooperativeKernel_ptsz(k, 1, 1, 1, 1, 1, 1, 0, CU_STREAM_PER_THREAD, NULL));
    assert_true(tessel_fake_device_busy_ns(0) - b0 == 5 * MS);
    /* Multi-device: one kernel on each device's stream. */
    CUstream s0, s1;
    OK(cuStreamCreate(&s0, 0));
    CUcontext c1;
    OK(cuDevicePrimaryCtxRetain(&c1, 1));
    OK(cuCtxPushCurrent_v2(c1));
    OK(cuStreamCreate(&s1, 0));
    CUfunction k1;
    CUmodule m1;
    OK(cuModuleLoadData(&m1, "x"));
    OK(cuModuleGetFunction(&k1, m1, "fake_kernel_7000us"));
    CUcontext popped;
    OK(cuCtxPopCurrent_v2(&popped));
    CUDA_LAUNCH_PARAMS lp[2] = {{k, 1, 1, 1, 1, 1, 1, 0, s0, NULL},
                                {k1, 1, 1, 1, 1, 1, 1, 0, s1, NULL}};
    OK(cuLaunchCooperativeKernelMultiDevice(lp, 2, 0));
    assert_true(tessel_fake_device_busy_ns(0) - b0 == 6 * MS);
    assert_true(tessel_fake_device_busy_ns(1) == 7 * MS);
    lp[1].hStream = NULL;
    assert_int_equal(cuLaunchCooperativeKernelMultiDevice(lp, 2, 0), CUDA_ERROR_INVALID_HANDLE);
    OK(cuCtxSynchronize());
    OK(cuStreamSynchronize(s1));
    assert_int_equal(tessel_fake_calls("cuLaunchKernel_ptsz"), 1);
    assert_int_equal(tessel_fake_calls("cuLaunchKernelEx"), 2);
    assert_int_equal(tessel_fake_calls("cuLaunchKernelEx_ptsz"), 1);
    assert_int_equal(tessel_fake_calls("cuLaunchCooperativeKernel"), 1);
    assert_int_equal(tessel_fake_calls("cuLaunchCooperativeKernel_ptsz"), 1);
    assert_int_equal(tessel_fake_calls("cuLaunchKernel"), 0);
}

static void test_graphs(void **state)
{
    start(NULL, "1000");
    CUgraph gr;
    OK(cuGraphCreate(&gr, 0));
    CUgraphNode n[3];
    static const char *names[3] = {"fake_kernel_1000us", "fake_kernel_2000us",
                                   "fake_kernel_3000us"};
    for (int i = 0; i < 3; i++) {
        CUDA_KERNEL_NODE_PARAMS p;
        memset(&p, 0, sizeof p);
        p.func = fn(names[i]);
        p.gridDimX = p.gridDimY = p.gridDimZ = 1;
        p.blockDimX = p.blockDimY = p.blockDimZ = 1;
        OK(cuGraphAddKernelNode_v2(&n[i], gr, i ? &n[i - 1] : NULL, i ? 1 : 0, &p));
    }
    size_t count = 0;
    OK(cuGraphGetNodes(gr, NULL, &count));
    assert_int_equal(count, 3);
    CUgraphExec x;
    OK(cuGraphInstantiateWithFlags(&x, gr, 0));
    CUstream s;
    OK(cuStreamCreate(&s, 0));
    unsigned long long b0 = tessel_fake_device_busy_ns(0);
    OK(cuGraphLaunch(x, s));
    OK(cuGraphLaunch_ptsz(x, NULL));
    assert_true(tessel_fake_device_busy_ns(0) - b0 == 12 * MS);
    assert_int_equal(tessel_fake_device_kernels(0), 6);
    OK(cuGraphExecDestroy(x));
    OK(cuGraphDestroy(gr));

    /* Stream capture: kernels are recorded, not run, until the graph is launched. */
    CUstreamCaptureStatus st;
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuStreamIsCapturing(s, &st));
    assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    assert_int_equal(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL),
                     CUDA_ERROR_ILLEGAL_STATE);
    for (int i = 0; i < 4; i++)
        launch(fn("k"), s, NULL);
    assert_true(tessel_fake_device_busy_ns(0) - b0 == 12 * MS);
    CUdeviceptr d;
    OK(cuMemAlloc_v2(&d, 64));
    char buf[64];
    assert_int_equal(cuMemcpyHtoDAsync_v2(d, buf, 64, s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    assert_int_equal(cuStreamSynchronize(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    assert_int_equal(cuStreamBeginCapture_v2(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL),
                     CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    OK(cuStreamEndCapture(s, &gr));
    OK(cuStreamIsCapturing_ptsz(s, &st));
    assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_NONE);
    assert_int_equal(cuStreamEndCapture(s, &gr), CUDA_ERROR_ILLEGAL_STATE);
    OK(cuGraphGetNodes(gr, NULL, &count));
    assert_int_equal(count, 4);
    CUgraphNode got[8];
    count = 8;
    OK(cuGraphGetNodes(gr, got, &count));
    assert_int_equal(count, 4);
    char log[16];
    OK(cuGraphInstantiate(&x, gr, NULL, log, sizeof log));
    OK(cuGraphLaunch(x, s));
    assert_true(tessel_fake_device_busy_ns(0) - b0 == 16 * MS);
    OK(cuStreamSynchronize(s));
    OK(cuGraphExecDestroy(x));
    OK(cuGraphDestroy(gr));
    OK(cuMemFree_v2(d));
    /* Graph left alive, stream left capturing: reset cleans them (ASan checks). */
    OK(cuGraphCreate(&gr, 0));
    OK(cuStreamBeginCapture_v2_ptsz(s, CU_STREAM_CAPTURE_MODE_RELAXED));
}

/* Two processes on one device through the state file: their kernels share
 * one timeline, busy time adds up, each process sees its own part. */
static void test_two_processes(void **state)
{
    char path[] = "/tmp/tessel-fake-time-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    unlink(path);
    start(NULL, "5000");
    tessel_fake_reset();
    setenv("TESSEL_FAKE_STATE", path, 1);
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    /* Forked before this process initialises CUDA: a child of an
     * initialised process cannot use CUDA (the driver's rule). */
    pid_t kid = fork();
    if (kid == 0) {
        alarm(60);
        char r;
        if (read(ready[0], &r, 1) != 1)
            _exit(3);
        CUcontext cc;
        CUmodule m;
        CUfunction kk;
        int rc = cuInit(0) | cuDevicePrimaryCtxRetain(&cc, 0) | cuCtxSetCurrent(cc) |
                 cuModuleLoadData(&m, "x") | cuModuleGetFunction(&kk, m, "k");
        for (int i = 0; i < 8; i++)
            rc |= cuLaunchKernel(kk, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
        rc |= cuCtxSynchronize();
        int ok = rc == 0 && tessel_fake_process_busy_ns(0) == 40 * MS;
        _exit(ok ? 0 : 1);
    }
    OK(cuInit(0));
    CUcontext c;
    OK(cuDevicePrimaryCtxRetain(&c, 0));
    OK(cuCtxSetCurrent(c));
    OK(cuModuleLoadData(&mod, "x"));
    CUfunction k = fn("k");
    unsigned long long t0 = tessel_fake_now_ns();
    assert_int_equal(write(ready[1], "r", 1), 1);
    for (int i = 0; i < 8; i++)
        launch(k, NULL, NULL);
    OK(cuCtxSynchronize());
    /* Before reaping the child (its slot outlives it until then): */
    for (int i = 0; i < 30000 && tessel_fake_pid_busy_ns(0, kid) < 40 * MS; i++)
        usleep(1000);
    assert_true(tessel_fake_pid_busy_ns(0, kid) == 40 * MS);
    int st;
    assert_int_equal(waitpid(kid, &st, 0), kid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_true(tessel_fake_process_busy_ns(0) == 40 * MS);
    assert_true(tessel_fake_device_busy_ns(0) == 80 * MS);
    assert_int_equal(tessel_fake_device_kernels(0), 16);
    /* 16 kernels of 5 ms, serialised on one device: at least 80 ms end to end. */
    assert_true(tessel_fake_device_idle_at_ns(0) >= t0 + 80 * MS);
    tessel_fake_reset();
    unsetenv("TESSEL_FAKE_STATE");
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_durations, teardown),
        cmocka_unit_test_teardown(test_events, teardown),
        cmocka_unit_test_teardown(test_not_ready, teardown),
        cmocka_unit_test_teardown(test_serialisation, teardown),
        cmocka_unit_test_teardown(test_launch_variants, teardown),
        cmocka_unit_test_teardown(test_graphs, teardown),
        cmocka_unit_test_teardown(test_two_processes, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
