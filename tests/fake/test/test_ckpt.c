/* test_ckpt.c - the fake driver's cuCheckpointProcess* (fake_ckpt.c): one process drives
 * another through lock, checkpoint, restore and unlock.  The target is a forked child (forked
 * before this process initialises CUDA, as the fork rule asks) that talks to the test over
 * pipes; both share a TESSEL_FAKE_STATE file.
 *
 * Asserted: the states and the steps refused in each; the contents of device, pool and VMM
 * memory survive bit for bit at the same addresses; the device memory (contexts
 * included) is given back at checkpoint and another process can use it meanwhile; a restore
 * that does not fit fails and keeps the checkpoint; calls of a multi-threaded target stop
 * while it is locked and go on after; a lock that cannot get the calls in progress out in its
 * timeout fails and leaves the target running; a target killed while checkpointed takes no
 * one else's memory with it; managed memory refused (as by driver r570); a driver without the
 * API and bad arguments. */
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
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "cudaabi/cuda_abi.h"
#include "tessel_fake.h"

#define MiB      (1ull << 20)
#define OK(call) assert_int_equal((call), CUDA_SUCCESS)

static char state_path[64];

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Fresh environment: GPUs `gpus`, contexts of 64 MiB, a new state file. */
static void fresh(const char *gpus)
{
    tessel_fake_reset();
    unsetenv("TESSEL_FAKE_CHECKPOINT");
    unsetenv("CUDA_VISIBLE_DEVICES");
    snprintf(state_path, sizeof state_path, "/tmp/tessel-ckpt-XXXXXX");
    int fd = mkstemp(state_path);
    assert_true(fd >= 0);
    close(fd);
    unlink(state_path); /* the fake creates it */
    setenv("TESSEL_FAKE_STATE", state_path, 1);
    setenv("TESSEL_FAKE_GPUS", gpus, 1);
    setenv("TESSEL_FAKE_CTX_MEM", "64M", 1);
}

static int teardown(void **state)
{
    (void)state;
    tessel_fake_reset();
    unlink(state_path);
    unsetenv("TESSEL_FAKE_CHECKPOINT");
    return 0;
}

static CUprocessState state_of(int pid)
{
    CUprocessState s = CU_PROCESS_STATE_FAILED;
    OK(cuCheckpointProcessGetState(pid, &s));
    return s;
}

/* ---- the target ---- */

typedef struct {
    CUdeviceptr dev, pool, managed, vmm; /* the target's memory, filled with a pattern */
    uint64_t size;
} layout_t;

static unsigned char pat(uint64_t i, unsigned salt)
{
    return (unsigned char)((i * 2654435761u) >> 13 ^ salt);
}

static int fill(CUdeviceptr p, uint64_t n, unsigned salt)
{
    unsigned char *b = malloc(n);
    for (uint64_t i = 0; i < n; i++)
        b[i] = pat(i, salt);
    int rc = cuMemcpyHtoD_v2(p, b, n);
    free(b);
    return rc;
}

static int same(CUdeviceptr p, uint64_t n, unsigned salt)
{
    unsigned char *b = malloc(n);
    int ok = cuMemcpyDtoH_v2(b, p, n) == CUDA_SUCCESS;
    for (uint64_t i = 0; ok && i < n; i++)
        ok = b[i] == pat(i, salt);
    free(b);
    CUdeviceptr base = 0;
    size_t sz = 0;
    ok &= cuMemGetAddressRange_v2(&base, &sz, p) == CUDA_SUCCESS && base == p && sz >= n;
    return ok;
}

/* In the child: device, pool and VMM memory (and managed memory with `managed`) of `size` each,
 * its layout, waits for a byte, checks every byte and exits 0 when all survived. */
static void target_main(int to_parent, int from_parent, uint64_t size, int managed)
{
    alarm(60); /* never outlive a failed parent */
    layout_t l = {.size = size};
    CUcontext c;
    CUstream s;
    int rc = cuInit(0) | cuDevicePrimaryCtxRetain(&c, 0) | cuCtxSetCurrent(c);
    rc |= cuMemAlloc_v2(&l.dev, size) | cuStreamCreate(&s, 0);
    rc |= cuMemAllocAsync(&l.pool, size, s) | cuStreamSynchronize(s);
    if (managed)
        rc |= cuMemAllocManaged(&l.managed, size, 1 /* CU_MEM_ATTACH_GLOBAL */);
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    CUmemGenericAllocationHandle h;
    CUmemAccessDesc acc = {.location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    rc |= cuMemCreate(&h, size, &prop, 0) | cuMemAddressReserve(&l.vmm, size, 0, 0, 0);
    rc |= cuMemMap(l.vmm, size, 0, h, 0) | cuMemSetAccess(l.vmm, size, &acc, 1);
    rc |= fill(l.dev, size, 1) | fill(l.pool, size, 2) | fill(l.vmm, size, 4);
    if (managed)
        rc |= fill(l.managed, size, 3);
    if (rc != CUDA_SUCCESS) {
        fprintf(stderr, "target: setting up its memory failed (%d)\n", rc);
        _exit(2);
    }
    if (write(to_parent, &l, sizeof l) != sizeof l)
        _exit(2);
    char b;
    if (read(from_parent, &b, 1) != 1)
        _exit(3);
    int ok = same(l.dev, size, 1) && same(l.pool, size, 2) && same(l.vmm, size, 4) &&
             (!managed || same(l.managed, size, 3));
    _exit(ok ? 0 : 1);
}

typedef struct {
    pid_t pid;
    int to, from; /* pipe ends of the parent */
    layout_t l;
} kid_t;

static kid_t start_target(uint64_t size, int managed)
{
    int up[2], down[2];
    assert_int_equal(pipe(up), 0);
    assert_int_equal(pipe(down), 0);
    kid_t k = {.pid = fork()};
    assert_true(k.pid >= 0);
    if (k.pid == 0) {
        close(up[0]);
        close(down[1]);
        target_main(up[1], down[0], size, managed);
    }
    close(up[1]);
    close(down[0]);
    k.to = down[1];
    k.from = up[0];
    assert_int_equal(read(k.from, &k.l, sizeof k.l), (ssize_t)sizeof k.l);
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

/* ---- tests ---- */

static void test_round_trip(void **state)
{
    (void)state;
    fresh("A:1G");
    kid_t k = start_target(64 * MiB, 0);
    OK(cuInit(0)); /* this process drives it */
    CUcontext c;
    OK(cuDevicePrimaryCtxRetain(&c, 0));
    OK(cuCtxSetCurrent(c));
    unsigned long long held = tessel_fake_pid_used(0, k.pid);
    /* its context, 64M each of device, pool (2M chunks) and VMM memory */
    assert_true(held == 64 * MiB + 3 * 64 * MiB);
    unsigned long long mine = tessel_fake_process_used(0);
    assert_true(tessel_fake_device_used(0) == held + mine);
    int tid = 0;
    OK(cuCheckpointProcessGetRestoreThreadId(k.pid, &tid));
    assert_true(tid > 0 && tid != k.pid);
    assert_int_equal(state_of(k.pid), CU_PROCESS_STATE_RUNNING);

    /* Steps out of order are refused and change nothing. */
    assert_int_equal(cuCheckpointProcessCheckpoint(k.pid, NULL), CUDA_ERROR_ILLEGAL_STATE);
    assert_int_equal(cuCheckpointProcessRestore(k.pid, NULL), CUDA_ERROR_ILLEGAL_STATE);
    assert_int_equal(cuCheckpointProcessUnlock(k.pid, NULL), CUDA_ERROR_ILLEGAL_STATE);
    CUdeviceptr big;
    size_t room = (size_t)(1024 * MiB - held - mine);
    assert_int_equal(cuMemAlloc_v2(&big, room + 64 * MiB), CUDA_ERROR_OUT_OF_MEMORY);

    OK(cuCheckpointProcessLock(k.pid, NULL));
    assert_int_equal(state_of(k.pid), CU_PROCESS_STATE_LOCKED);
    assert_int_equal(cuCheckpointProcessLock(k.pid, NULL), CUDA_ERROR_ILLEGAL_STATE);
    assert_int_equal(cuCheckpointProcessRestore(k.pid, NULL), CUDA_ERROR_ILLEGAL_STATE);
    assert_true(tessel_fake_pid_used(0, k.pid) == held); /* a lock frees nothing */

    OK(cuCheckpointProcessCheckpoint(k.pid, NULL));
    assert_int_equal(state_of(k.pid), CU_PROCESS_STATE_CHECKPOINTED);
    assert_int_equal(cuCheckpointProcessUnlock(k.pid, NULL), CUDA_ERROR_ILLEGAL_STATE);
    /* Everything it held is given back, its context included, and usable by another. */
    assert_true(tessel_fake_pid_used(0, k.pid) == 0);
    assert_true(tessel_fake_device_used(0) == mine);
    OK(cuMemAlloc_v2(&big, room + 64 * MiB));
    assert_int_equal(cuCheckpointProcessRestore(k.pid, NULL), CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(state_of(k.pid), CU_PROCESS_STATE_CHECKPOINTED); /* kept, retryable */
    OK(cuMemFree_v2(big));

    OK(cuCheckpointProcessRestore(k.pid, NULL));
    assert_int_equal(state_of(k.pid), CU_PROCESS_STATE_LOCKED);
    assert_true(tessel_fake_pid_used(0, k.pid) == held);
    assert_true(tessel_fake_device_used(0) == held + mine);
    OK(cuCheckpointProcessUnlock(k.pid, NULL));
    assert_int_equal(state_of(k.pid), CU_PROCESS_STATE_RUNNING);
    /* The child compares every byte of its four allocations at the same addresses. */
    assert_int_equal(finish(&k), 0);
}

/* ---- a multi-threaded target: its calls stop while locked ---- */

#define NTHREADS 4

typedef struct {
    unsigned long long calls[NTHREADS]; /* round trips done, per thread (shared with the test) */
    int bad;                            /* a round trip that lost data */
    int stop;
} counters_t;

static counters_t *ctr;
static CUcontext kid_ctx;

static void *worker(void *arg)
{
    int i = (int)(intptr_t)arg;
    cuCtxSetCurrent(kid_ctx);
    CUdeviceptr p;
    if (cuMemAlloc_v2(&p, 4096) != CUDA_SUCCESS) {
        ctr->bad = 1;
        return NULL;
    }
    unsigned char in[4096], out[4096];
    for (unsigned long long n = 0; !__atomic_load_n(&ctr->stop, __ATOMIC_SEQ_CST); n++) {
        memset(in, (int)(n + (unsigned)i), sizeof in);
        if (cuMemcpyHtoD_v2(p, in, sizeof in) != CUDA_SUCCESS ||
            cuMemcpyDtoH_v2(out, p, sizeof out) != CUDA_SUCCESS || memcmp(in, out, sizeof in))
            ctr->bad = 1;
        __atomic_store_n(&ctr->calls[i], n + 1, __ATOMIC_SEQ_CST);
    }
    return NULL;
}

static unsigned long long total_calls(void)
{
    unsigned long long t = 0;
    for (int i = 0; i < NTHREADS; i++)
        t += __atomic_load_n(&ctr->calls[i], __ATOMIC_SEQ_CST);
    return t;
}

/* Waits (up to 20 s) until every thread has done more than `than` round trips. */
static int all_past(const unsigned long long than[NTHREADS])
{
    for (int tries = 0; tries < 2000; tries++) {
        int all = 1;
        for (int i = 0; i < NTHREADS; i++)
            all &= __atomic_load_n(&ctr->calls[i], __ATOMIC_SEQ_CST) > than[i];
        if (all)
            return 1;
        sleep_ms(10);
    }
    return 0;
}

static void test_threads_blocked(void **state)
{
    (void)state;
    fresh("A:1G");
    ctr = mmap(NULL, sizeof *ctr, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(ctr != MAP_FAILED);
    memset(ctr, 0, sizeof *ctr);
    pid_t kid = fork();
    if (kid == 0) {
        alarm(60);
        if (cuInit(0) || cuDevicePrimaryCtxRetain(&kid_ctx, 0))
            _exit(2);
        pthread_t t[NTHREADS];
        for (int i = 0; i < NTHREADS; i++)
            pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
        for (int i = 0; i < NTHREADS; i++)
            pthread_join(t[i], NULL);
        _exit(ctr->bad ? 1 : 0);
    }
    unsigned long long zero[NTHREADS] = {0}, at[NTHREADS];
    assert_true(all_past(zero)); /* all four threads are making calls */
    OK(cuInit(0));
    OK(cuCheckpointProcessLock(kid, NULL));
    /* Locked: every thread waits in its next call; no round trip finishes any more. */
    unsigned long long locked = total_calls();
    sleep_ms(300);
    assert_true(total_calls() <= locked + NTHREADS); /* at most the one each had begun */
    unsigned long long settled = total_calls();
    OK(cuCheckpointProcessCheckpoint(kid, NULL));
    assert_true(tessel_fake_pid_used(0, kid) == 0);
    sleep_ms(300);
    assert_true(total_calls() == settled);
    OK(cuCheckpointProcessRestore(kid, NULL));
    for (int i = 0; i < NTHREADS; i++)
        at[i] = __atomic_load_n(&ctr->calls[i], __ATOMIC_SEQ_CST);
    OK(cuCheckpointProcessUnlock(kid, NULL));
    assert_true(all_past(at)); /* every thread goes on */
    __atomic_store_n(&ctr->stop, 1, __ATOMIC_SEQ_CST);
    int st = 0;
    assert_int_equal(waitpid(kid, &st, 0), kid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0); /* no round trip lost data */
    munmap(ctr, sizeof *ctr);
}

/* A lock whose timeout passes while a call is in progress fails; the target stays running. */
static void test_lock_timeout(void **state)
{
    (void)state;
    fresh("A:1G");
    int up[2];
    assert_int_equal(pipe(up), 0);
    pid_t kid = fork();
    if (kid == 0) {
        alarm(60);
        CUcontext c;
        CUmodule m;
        CUfunction f;
        int rc = cuInit(0) | cuDevicePrimaryCtxRetain(&c, 0) | cuCtxSetCurrent(c);
        rc |= cuModuleLoadData(&m, "x") | cuModuleGetFunction(&f, m, "fake_kernel_5000000us");
        rc |= cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
        if (rc || write(up[1], "r", 1) != 1)
            _exit(2);
        rc = cuCtxSynchronize(); /* in progress for 5 s */
        _exit(rc == CUDA_SUCCESS && cuCtxSynchronize() == CUDA_SUCCESS ? 0 : 1);
    }
    char b;
    assert_int_equal(read(up[0], &b, 1), 1);
    OK(cuInit(0));
    /* Until the child is inside cuCtxSynchronize (a loaded machine may be slow to get it
     * there), a lock can succeed: then it is undone and tried again. */
    CUcheckpointLockArgs la = {.timeoutMs = 20};
    CUresult rc = CUDA_SUCCESS;
    for (int tries = 0; tries < 40 && rc == CUDA_SUCCESS; tries++) {
        if ((rc = cuCheckpointProcessLock(kid, &la)) == CUDA_SUCCESS) {
            OK(cuCheckpointProcessUnlock(kid, NULL));
            sleep_ms(50);
        }
    }
    assert_int_equal(rc, CUDA_ERROR_NOT_READY);
    assert_int_equal(state_of(kid), CU_PROCESS_STATE_RUNNING);
    OK(cuCheckpointProcessLock(kid, NULL)); /* no timeout: waits for the call to return */
    OK(cuCheckpointProcessUnlock(kid, NULL));
    int st = 0;
    assert_int_equal(waitpid(kid, &st, 0), kid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    close(up[0]);
    close(up[1]);
}

/* A target killed while checkpointed takes nothing of anyone else's with it. */
static void test_kill_checkpointed(void **state)
{
    (void)state;
    fresh("A:1G");
    kid_t k = start_target(32 * MiB, 0);
    OK(cuInit(0));
    CUcontext c;
    OK(cuDevicePrimaryCtxRetain(&c, 0));
    OK(cuCtxSetCurrent(c));
    CUdeviceptr p;
    OK(cuMemAlloc_v2(&p, 100 * MiB));
    unsigned long long mine = tessel_fake_process_used(0);
    OK(cuCheckpointProcessLock(k.pid, NULL));
    OK(cuCheckpointProcessCheckpoint(k.pid, NULL));
    assert_true(tessel_fake_device_used(0) == mine);
    kill(k.pid, SIGKILL);
    int st;
    assert_int_equal(waitpid(k.pid, &st, 0), k.pid);
    assert_int_equal(cuCheckpointProcessRestore(k.pid, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuCheckpointProcessGetState(k.pid, &(CUprocessState){0}),
                     CUDA_ERROR_INVALID_VALUE);
    assert_true(tessel_fake_device_used(0) == mine); /* the reap took nothing of ours */
    close(k.to);
    close(k.from);
}

/* A driver without the API, and arguments the calls refuse. */
static void test_unsupported_and_args(void **state)
{
    (void)state;
    fresh("A:1G");
    CUprocessState s;
    assert_int_equal(cuCheckpointProcessLock(1, NULL), CUDA_ERROR_NOT_INITIALIZED);
    /* A target whose driver lacks the API serves no requests. */
    setenv("TESSEL_FAKE_CHECKPOINT", "0", 1);
    kid_t old = start_target(4 * MiB, 0);
    unsetenv("TESSEL_FAKE_CHECKPOINT");
    kid_t k = start_target(4 * MiB, 0); /* all forked before this process initialises CUDA */
    kid_t uvm = start_target(4 * MiB, 1);
    OK(cuInit(0));
    assert_int_equal(cuCheckpointProcessLock(old.pid, NULL), CUDA_ERROR_NOT_SUPPORTED);
    assert_int_equal(cuCheckpointProcessGetState(old.pid, &s), CUDA_ERROR_NOT_SUPPORTED);
    assert_int_equal(finish(&old), 0);
    /* Bad arguments and pids. */
    CUcheckpointLockArgs la = {.reserved0 = 1};
    assert_int_equal(cuCheckpointProcessLock(k.pid, &la), CUDA_ERROR_INVALID_VALUE);
    CUcheckpointCheckpointArgs ca = {.reserved = {0, 1}};
    assert_int_equal(cuCheckpointProcessCheckpoint(k.pid, &ca), CUDA_ERROR_INVALID_VALUE);
    CUcheckpointGpuPair pair = {{{0}}, {{0}}};
    CUcheckpointRestoreArgs ra = {.gpuPairs = &pair, .gpuPairsCount = 1};
    assert_int_equal(cuCheckpointProcessRestore(k.pid, &ra), CUDA_ERROR_NOT_SUPPORTED);
    assert_int_equal(cuCheckpointProcessGetState(k.pid, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuCheckpointProcessGetState(getpid(), &s), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuCheckpointProcessGetState(0, &s), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuCheckpointProcessGetState(getppid(), &s), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(state_of(k.pid), CU_PROCESS_STATE_RUNNING);
    assert_int_equal(finish(&k), 0);
    /* Managed memory cannot be checkpointed (r570): refused, the process stays locked with
     * everything in place and goes on after the unlock. */
    unsigned long long held = tessel_fake_pid_used(0, uvm.pid);
    OK(cuCheckpointProcessLock(uvm.pid, NULL));
    assert_int_equal(cuCheckpointProcessCheckpoint(uvm.pid, NULL), CUDA_ERROR_NOT_SUPPORTED);
    assert_int_equal(state_of(uvm.pid), CU_PROCESS_STATE_LOCKED);
    assert_true(tessel_fake_pid_used(0, uvm.pid) == held);
    OK(cuCheckpointProcessUnlock(uvm.pid, NULL));
    assert_int_equal(finish(&uvm), 0);
    /* This process's own driver without the API. */
    tessel_fake_reset();
    setenv("TESSEL_FAKE_CHECKPOINT", "0", 1);
    OK(cuInit(0));
    assert_int_equal(cuCheckpointProcessGetState(1, &s), CUDA_ERROR_NOT_SUPPORTED);
    tessel_fake_reset();
    setenv("TESSEL_FAKE_CHECKPOINT", "yes", 1);
    assert_int_equal(cuInit(0), CUDA_ERROR_INVALID_VALUE);
}

/* ---- a checkpointed process's stream memory operation and host function are held ----
 * As every entry point: the child's cuStreamWriteValue32_v2 made while it is checkpointed waits
 * in the driver until the restore and unlock, then writes its word; its cuLaunchHostFunc after
 * that runs its function; the bytes it held are back. */

typedef struct {
    int ready, go, wrote, ran;
} memop_flags_t;

static memop_flags_t *mf;

static void mark_ran(void *user)
{
    (void)user;
    __atomic_store_n(&mf->ran, 1, __ATOMIC_SEQ_CST);
}

static void test_memop_held(void **state)
{
    (void)state;
    fresh("A:1G");
    mf = mmap(NULL, sizeof *mf, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(mf != MAP_FAILED);
    memset(mf, 0, sizeof *mf);
    pid_t kid = fork();
    if (kid == 0) {
        alarm(60);
        CUcontext c;
        CUdeviceptr p;
        static unsigned char in[1 << 20], out[1 << 20];
        for (size_t i = 0; i < sizeof in; i++)
            in[i] = (unsigned char)(i * 13 + 5);
        if (cuInit(0) || cuDevicePrimaryCtxRetain(&c, 0) || cuCtxSetCurrent(c) ||
            cuMemAlloc_v2(&p, sizeof in) || cuMemcpyHtoD_v2(p, in, sizeof in))
            _exit(2);
        __atomic_store_n(&mf->ready, 1, __ATOMIC_SEQ_CST);
        while (!__atomic_load_n(&mf->go, __ATOMIC_SEQ_CST))
            sleep_ms(5);
        if (cuStreamWriteValue32_v2(NULL, p, 0xfeedf00du, 0))
            _exit(3);
        __atomic_store_n(&mf->wrote, 1, __ATOMIC_SEQ_CST);
        if (cuLaunchHostFunc(NULL, mark_ran, NULL) || !__atomic_load_n(&mf->ran, __ATOMIC_SEQ_CST))
            _exit(4);
        if (cuMemcpyDtoH_v2(out, p, sizeof out))
            _exit(5);
        uint32_t w;
        memcpy(&w, out, 4);
        _exit(w == 0xfeedf00du && memcmp(in + 4, out + 4, sizeof in - 4) == 0 ? 0 : 6);
    }
    for (int tries = 0; tries < 2000 && !__atomic_load_n(&mf->ready, __ATOMIC_SEQ_CST); tries++)
        sleep_ms(10);
    assert_true(mf->ready);
    OK(cuInit(0));
    OK(cuCheckpointProcessLock(kid, NULL));
    OK(cuCheckpointProcessCheckpoint(kid, NULL));
    assert_true(tessel_fake_pid_used(0, kid) == 0);
    __atomic_store_n(&mf->go, 1, __ATOMIC_SEQ_CST);
    sleep_ms(300);
    assert_int_equal(__atomic_load_n(&mf->wrote, __ATOMIC_SEQ_CST), 0); /* held in the driver */
    OK(cuCheckpointProcessRestore(kid, NULL));
    sleep_ms(100);
    assert_int_equal(__atomic_load_n(&mf->wrote, __ATOMIC_SEQ_CST), 0); /* still locked */
    OK(cuCheckpointProcessUnlock(kid, NULL));
    int st = 0;
    assert_int_equal(waitpid(kid, &st, 0), kid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0); /* the word written, the function run, bytes back */
    assert_int_equal(mf->wrote, 1);
    assert_int_equal(mf->ran, 1);
    munmap(mf, sizeof *mf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_round_trip, teardown),
        cmocka_unit_test_teardown(test_threads_blocked, teardown),
        cmocka_unit_test_teardown(test_lock_timeout, teardown),
        cmocka_unit_test_teardown(test_kill_checkpointed, teardown),
        cmocka_unit_test_teardown(test_unsupported_and_args, teardown),
        cmocka_unit_test_teardown(test_memop_held, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
