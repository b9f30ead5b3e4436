/* test_nvml.c - the fake NVML agrees with the fake driver: devices, names,
 * UUIDs, PCI ids, SM counts, memory use (in-process and through the state
 * file), processes, utilisation; NVLink/topology; errors; call counters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "cudaabi/cuda_abi.h"
#include "cudaabi/nvml_abi.h"
#include "tessel_fake.h"

#define OK(call)  assert_int_equal((call), CUDA_SUCCESS)
#define NOK(call) assert_int_equal((call), NVML_SUCCESS)
#define MiB       (1ull << 20)
#define GiB       (1ull << 30)

static void nvml_down(void)
{
    while (nvmlShutdown() == NVML_SUCCESS)
        ;
}

static void start(const char *gpus)
{
    tessel_fake_reset();
    nvml_down();
    unsetenv("TESSEL_FAKE_STATE");
    unsetenv("TESSEL_FAKE_GPU_UUIDS");
    unsetenv("CUDA_VISIBLE_DEVICES");
    setenv("TESSEL_FAKE_CTX_MEM", "300M", 1);
    setenv("TESSEL_FAKE_GPUS", gpus, 1);
    OK(cuInit(0));
    NOK(nvmlInit_v2());
    tessel_fake_nvml_reset_calls();
}

static int teardown(void **state)
{
    tessel_fake_reset();
    nvml_down();
    unsetenv("CUDA_VISIBLE_DEVICES");
    return 0;
}

/* The driver again, with CUDA_VISIBLE_DEVICES set (read at cuInit); NVML goes on showing all. */
static CUresult restart_visible(const char *visible)
{
    tessel_fake_reset();
    setenv("CUDA_VISIBLE_DEVICES", visible, 1);
    return cuInit(0);
}

static void test_devices_agree(void **state)
{
    start("2xRTX4090:24G,1xA100:80G:108");
    int n = 0;
    unsigned nn = 0;
    OK(cuDeviceGetCount(&n));
    NOK(nvmlDeviceGetCount_v2(&nn));
    assert_int_equal(n, 3);
    assert_int_equal(nn, 3);
    for (int i = 0; i < n; i++) {
        nvmlDevice_t d;
        NOK(nvmlDeviceGetHandleByIndex_v2((unsigned)i, &d));
        unsigned idx;
        NOK(nvmlDeviceGetIndex(d, &idx));
        assert_int_equal(idx, i);

        char cname[96], nname[96];
        OK(cuDeviceGetName(cname, sizeof cname, i));
        NOK(nvmlDeviceGetName(d, nname, sizeof nname));
        assert_string_equal(cname, nname);

        CUuuid u;
        OK(cuDeviceGetUuid_v2(&u, i));
        char want[64], got[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
        const unsigned char *b = (const unsigned char *)u.bytes;
        snprintf(want, sizeof want,
                 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                 b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                 b[14], b[15]);
        NOK(nvmlDeviceGetUUID(d, got, sizeof got));
        assert_string_equal(want, got);
        nvmlDevice_t byuuid;
        NOK(nvmlDeviceGetHandleByUUID(got, &byuuid));
        assert_ptr_equal(byuuid, d);

        char bus[32];
        OK(cuDeviceGetPCIBusId(bus, sizeof bus, i));
        nvmlPciInfo_t pci;
        NOK(nvmlDeviceGetPciInfo_v3(d, &pci));
        assert_string_equal(pci.busIdLegacy, bus);
        assert_int_equal(pci.bus, i + 1);
        nvmlDevice_t bypci;
        NOK(nvmlDeviceGetHandleByPciBusId_v2(bus, &bypci));
        assert_ptr_equal(bypci, d);
        NOK(nvmlDeviceGetHandleByPciBusId(pci.busId, &bypci));
        assert_ptr_equal(bypci, d);
        nvmlPciInfo_v1_t pci1;
        NOK(nvmlDeviceGetPciInfo(d, &pci1));
        assert_string_equal(pci1.busId, bus);

        size_t total;
        OK(cuDeviceTotalMem_v2(&total, i));
        nvmlMemory_t m;
        NOK(nvmlDeviceGetMemoryInfo(d, &m));
        assert_true(m.total == total);

        int sms;
        OK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, i));
        nvmlDeviceAttributes_t at;
        NOK(nvmlDeviceGetAttributes_v2(d, &at));
        assert_int_equal(at.multiprocessorCount, sms);
        assert_true(at.memorySizeMB == total >> 20);
        unsigned cores;
        NOK(nvmlDeviceGetNumGpuCores(d, &cores));
        assert_int_equal(cores, (unsigned)sms * 128);
    }
    char ver[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
    NOK(nvmlSystemGetDriverVersion(ver, sizeof ver));
    assert_non_null(strstr(ver, "fake"));
    int cv = 0;
    NOK(nvmlSystemGetCudaDriverVersion_v2(&cv));
    assert_int_equal(cv, 13000);

    /* NVLink: the two RTX4090s of one entry are peers; the A100 is alone. */
    nvmlDevice_t d0, d1, d2;
    NOK(nvmlDeviceGetHandleByIndex(0, &d0));
    NOK(nvmlDeviceGetHandleByIndex(1, &d1));
    NOK(nvmlDeviceGetHandleByIndex(2, &d2));
    nvmlEnableState_t on;
    NOK(nvmlDeviceGetNvLinkState(d0, 0, &on));
    assert_int_equal(on, NVML_FEATURE_ENABLED);
    NOK(nvmlDeviceGetNvLinkState(d0, 1, &on));
    assert_int_equal(on, NVML_FEATURE_DISABLED);
    assert_int_equal(nvmlDeviceGetNvLinkState(d2, 0, &on), NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(nvmlDeviceGetNvLinkState(d0, 18, &on), NVML_ERROR_INVALID_ARGUMENT);
    nvmlPciInfo_t remote;
    NOK(nvmlDeviceGetNvLinkRemotePciInfo_v2(d0, 0, &remote));
    assert_string_equal(remote.busIdLegacy, "0000:02:00.0"); /* device 1 */
    NOK(nvmlDeviceGetNvLinkRemotePciInfo_v2(d1, 0, &remote));
    assert_string_equal(remote.busIdLegacy, "0000:01:00.0");
    assert_int_equal(nvmlDeviceGetNvLinkRemotePciInfo_v2(d0, 1, &remote),
                     NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(nvmlDeviceGetNvLinkRemotePciInfo_v2(d2, 0, &remote), NVML_ERROR_NOT_SUPPORTED);
    nvmlGpuTopologyLevel_t lvl;
    NOK(nvmlDeviceGetTopologyCommonAncestor(d0, d0, &lvl));
    assert_int_equal(lvl, NVML_TOPOLOGY_INTERNAL);
    NOK(nvmlDeviceGetTopologyCommonAncestor(d0, d2, &lvl));
    assert_int_equal(lvl, NVML_TOPOLOGY_HOSTBRIDGE);

    assert_int_equal(tessel_fake_nvml_calls("nvmlDeviceGetHandleByIndex"), 3);
    assert_int_equal(tessel_fake_nvml_calls("nvmlDeviceGetHandleByIndex_v2"), 3);
    assert_int_equal(tessel_fake_nvml_calls("nvmlDeviceGetPciInfo_v3"), 3);
    assert_int_equal(tessel_fake_nvml_calls("nvmlDeviceGetPciInfo"), 3);
    assert_int_equal(tessel_fake_nvml_calls("nvmlDeviceGetCount"), 0);
    assert_int_equal(tessel_fake_nvml_calls("nvmlDeviceGetCount_v2"), 1);
}

static void test_memory_in_process(void **state)
{
    start("2xA:8G");
    nvmlDevice_t d;
    NOK(nvmlDeviceGetHandleByIndex_v2(1, &d));
    nvmlMemory_t m;
    NOK(nvmlDeviceGetMemoryInfo(d, &m));
    assert_true(m.used == 0 && m.free == 8 * GiB);
    unsigned cnt = 4;
    nvmlProcessInfo_t pi[4];
    NOK(nvmlDeviceGetComputeRunningProcesses_v3(d, &cnt, pi));
    assert_int_equal(cnt, 0);

    CUcontext c;
    OK(cuDevicePrimaryCtxRetain(&c, 1));
    OK(cuCtxSetCurrent(c));
    CUdeviceptr p;
    OK(cuMemAlloc_v2(&p, GiB));
    size_t fr, tot;
    OK(cuMemGetInfo_v2(&fr, &tot));
    NOK(nvmlDeviceGetMemoryInfo(d, &m));
    assert_true(m.used == GiB + 300 * MiB);
    assert_true(m.used == tessel_fake_device_used(1));
    assert_true(m.free == fr && m.total == tot);
    nvmlMemory_v2_t m2;
    memset(&m2, 0, sizeof m2);
    assert_int_equal(nvmlDeviceGetMemoryInfo_v2(d, &m2), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    m2.version = nvmlMemory_v2;
    NOK(nvmlDeviceGetMemoryInfo_v2(d, &m2));
    assert_true(m2.used == m.used && m2.free == m.free && m2.reserved == 0);

    /* This process shows in the process list of device 1 only. */
    cnt = 0;
    assert_int_equal(nvmlDeviceGetComputeRunningProcesses_v3(d, &cnt, NULL),
                     NVML_ERROR_INSUFFICIENT_SIZE);
    assert_int_equal(cnt, 1);
    cnt = 4;
    NOK(nvmlDeviceGetComputeRunningProcesses_v3(d, &cnt, pi));
    assert_int_equal(cnt, 1);
    assert_int_equal(pi[0].pid, getpid());
    assert_true(pi[0].usedGpuMemory == GiB + 300 * MiB);
    assert_int_equal(pi[0].gpuInstanceId, 0xFFFFFFFFu);
    nvmlProcessInfo_v1_t p1[2];
    cnt = 2;
    NOK(nvmlDeviceGetComputeRunningProcesses(d, &cnt, p1));
    assert_int_equal(cnt, 1);
    assert_true(p1[0].usedGpuMemory == GiB + 300 * MiB);
    nvmlDevice_t d0;
    NOK(nvmlDeviceGetHandleByIndex_v2(0, &d0));
    cnt = 4;
    NOK(nvmlDeviceGetComputeRunningProcesses_v2(d0, &cnt, pi));
    assert_int_equal(cnt, 0);

    OK(cuMemFree_v2(p));
    OK(cuDevicePrimaryCtxRelease_v2(1));
    NOK(nvmlDeviceGetMemoryInfo(d, &m));
    assert_true(m.used == 0);
    cnt = 4;
    NOK(nvmlDeviceGetComputeRunningProcesses_v3(d, &cnt, pi));
    assert_int_equal(cnt, 0);
}

static void test_memory_across_processes(void **state)
{
    char path[] = "/tmp/tessel-fake-nvml-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    unlink(path);
    tessel_fake_reset();
    nvml_down();
    setenv("TESSEL_FAKE_GPUS", "A:4G", 1);
    setenv("TESSEL_FAKE_CTX_MEM", "0", 1);
    setenv("TESSEL_FAKE_STATE", path, 1);
    NOK(nvmlInit()); /* this process: NVML only, like tesseld */
    int up[2], down[2];
    assert_int_equal(pipe(up), 0);
    assert_int_equal(pipe(down), 0);
    pid_t kid = fork();
    if (kid == 0) {
        alarm(30);
        CUcontext c;
        CUdeviceptr p;
        int rc = cuInit(0) | cuDevicePrimaryCtxRetain(&c, 0) | cuCtxSetCurrent(c) |
                 cuMemAlloc_v2(&p, 3 * GiB);
        char ch = rc ? 'n' : 'y';
        if (write(up[1], &ch, 1) != 1 || read(down[0], &ch, 1) != 1)
            _exit(2);
        _exit(0); /* no cleanup: the reader must notice the process is gone */
    }
    close(up[1]);
    close(down[0]);
    char ch = 0;
    assert_int_equal(read(up[0], &ch, 1), 1);
    assert_int_equal(ch, 'y');
    nvmlDevice_t d;
    NOK(nvmlDeviceGetHandleByIndex(0, &d));
    nvmlMemory_t m;
    NOK(nvmlDeviceGetMemoryInfo(d, &m));
    assert_true(m.used == 3 * GiB && m.free == GiB);
    unsigned cnt = 2;
    nvmlProcessInfo_t pi[2];
    NOK(nvmlDeviceGetComputeRunningProcesses_v3(d, &cnt, pi));
    assert_int_equal(cnt, 1);
    assert_int_equal(pi[0].pid, kid);
    assert_true(pi[0].usedGpuMemory == 3 * GiB);
    assert_int_equal(write(down[1], "x", 1), 1);
    int st;
    assert_int_equal(waitpid(kid, &st, 0), kid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    NOK(nvmlDeviceGetMemoryInfo(d, &m));
    assert_true(m.used == 0);
    cnt = 2;
    NOK(nvmlDeviceGetComputeRunningProcesses_v3(d, &cnt, pi));
    assert_int_equal(cnt, 0);
    close(up[0]);
    close(down[1]);
    nvml_down();
    unsetenv("TESSEL_FAKE_STATE");
    unlink(path);
}

/* A process that has exited but is not reaped yet (a zombie) holds nothing any more: the real
 * driver frees its memory at exit, and NVML lists it no more. */
static void test_zombie_holds_nothing(void **state)
{
    char path[] = "/tmp/tessel-fake-nvml-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    unlink(path);
    tessel_fake_reset();
    nvml_down();
    setenv("TESSEL_FAKE_GPUS", "A:4G", 1);
    setenv("TESSEL_FAKE_CTX_MEM", "64M", 1);
    setenv("TESSEL_FAKE_STATE", path, 1);
    NOK(nvmlInit());
    int up[2];
    assert_int_equal(pipe(up), 0);
    pid_t kid = fork();
    if (kid == 0) {
        CUcontext c;
        CUdeviceptr p;
        int rc = cuInit(0) | cuDevicePrimaryCtxRetain(&c, 0) | cuCtxSetCurrent(c) |
                 cuMemAlloc_v2(&p, GiB);
        char ch = rc ? 'n' : 'y';
        if (write(up[1], &ch, 1) != 1)
            _exit(2);
        _exit(0); /* no cleanup */
    }
    close(up[1]);
    char ch = 0;
    assert_int_equal(read(up[0], &ch, 1), 1);
    assert_int_equal(ch, 'y');
    nvmlDevice_t d;
    NOK(nvmlDeviceGetHandleByIndex(0, &d));
    /* It exits; wait (without reaping) until it is a zombie. */
    char stat[64], buf[256];
    snprintf(stat, sizeof stat, "/proc/%d/stat", (int)kid);
    int zombie = 0;
    for (int i = 0; i < 3000 && !zombie; i++) {
        int sfd = open(stat, O_RDONLY);
        ssize_t n = sfd >= 0 ? read(sfd, buf, sizeof buf - 1) : -1;
        if (sfd >= 0)
            close(sfd);
        buf[n > 0 ? n : 0] = '\0';
        char *rp = strrchr(buf, ')');
        zombie = rp && rp[2] == 'Z';
        if (!zombie)
            usleep(10000);
    }
    assert_true(zombie);
    unsigned cnt = 2;
    nvmlProcessInfo_t pi[2];
    NOK(nvmlDeviceGetComputeRunningProcesses_v3(d, &cnt, pi));
    assert_int_equal(cnt, 0);
    int st;
    assert_int_equal(waitpid(kid, &st, 0), kid);
    close(up[0]);
    nvml_down();
    unsetenv("TESSEL_FAKE_STATE");
    unlink(path);
}

static void test_utilisation(void **state)
{
    start("A:1G");
    nvmlDevice_t d;
    NOK(nvmlDeviceGetHandleByIndex_v2(0, &d));
    nvmlUtilization_t u;
    NOK(nvmlDeviceGetUtilizationRates(d, &u));
    assert_int_equal(u.gpu, 0);
    CUcontext c;
    OK(cuDevicePrimaryCtxRetain(&c, 0));
    OK(cuCtxSetCurrent(c));
    CUmodule m;
    CUfunction f;
    OK(cuModuleLoadData(&m, "x"));
    OK(cuModuleGetFunction(&f, m, "fake_kernel_3600000000us"));
    OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    /* After a second of wall time the whole window lies inside the kernel. */
    struct timespec ts = {1, 100000000};
    while (nanosleep(&ts, &ts) != 0)
        ;
    NOK(nvmlDeviceGetUtilizationRates(d, &u));
    assert_int_equal(u.gpu, 100);
}

/* CUDA_VISIBLE_DEVICES as the real driver honours it: CUDA ordinal k is the k-th device of the
 * list, with that device's name, memory, UUID, PCI bus id and usage, as NVML (which ignores the
 * variable) shows them under the device's own index. */
static void test_visible_devices(void **state)
{
    start("A:1G,B:2G,C:4G");
    nvmlDevice_t nd[3];
    char uuid[3][NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    for (unsigned i = 0; i < 3; i++) {
        NOK(nvmlDeviceGetHandleByIndex_v2(i, &nd[i]));
        NOK(nvmlDeviceGetUUID(nd[i], uuid[i], sizeof uuid[i]));
    }

    OK(restart_visible("2,1"));
    int n = 0;
    OK(cuDeviceGetCount(&n));
    assert_int_equal(n, 2);
    unsigned nn = 0;
    NOK(nvmlDeviceGetCount_v2(&nn));
    assert_int_equal(nn, 3);
    CUdevice d;
    assert_int_equal(cuDeviceGet(&d, 2), CUDA_ERROR_INVALID_DEVICE);
    static const unsigned want[2] = {2, 1};
    for (int k = 0; k < 2; k++) {
        char name[64], bus[32], u[64];
        size_t total;
        OK(cuDeviceGet(&d, k));
        assert_int_equal(d, k); /* a CUdevice is the ordinal */
        OK(cuDeviceGetName(name, sizeof name, k));
        assert_string_equal(name, want[k] == 2 ? "Fake C" : "Fake B");
        OK(cuDeviceTotalMem_v2(&total, k));
        assert_true(total == (want[k] == 2 ? 4 * GiB : 2 * GiB));
        CUuuid cu;
        OK(cuDeviceGetUuid_v2(&cu, k));
        const unsigned char *b = (const unsigned char *)cu.bytes;
        snprintf(u, sizeof u,
                 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                 b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                 b[14], b[15]);
        assert_string_equal(u, uuid[want[k]]);
        OK(cuDeviceGetPCIBusId(bus, sizeof bus, k));
        nvmlPciInfo_t pci;
        NOK(nvmlDeviceGetPciInfo_v3(nd[want[k]], &pci));
        assert_string_equal(bus, pci.busIdLegacy);
        CUdevice back = -1;
        OK(cuDeviceGetByPCIBusId(&back, bus));
        assert_int_equal(back, k);
        int busno = 0;
        OK(cuDeviceGetAttribute(&busno, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, k));
        assert_int_equal(busno, (int)want[k] + 1);
    }
    /* A hidden device's bus id names no device. */
    char bus0[32];
    snprintf(bus0, sizeof bus0, "0000:01:00.0");
    assert_int_equal(cuDeviceGetByPCIBusId(&d, bus0), CUDA_ERROR_INVALID_DEVICE);

    /* Memory on ordinal 0 is used on device 2, as NVML shows it. */
    nvmlMemory_t before[3], after[3];
    for (int i = 0; i < 3; i++)
        NOK(nvmlDeviceGetMemoryInfo(nd[i], &before[i]));
    CUcontext c;
    OK(cuDevicePrimaryCtxRetain(&c, 0));
    OK(cuCtxSetCurrent(c));
    CUdeviceptr p;
    OK(cuMemAlloc_v2(&p, 100 * MiB));
    size_t fr = 0, tot = 0;
    OK(cuMemGetInfo_v2(&fr, &tot));
    assert_true(tot == 4 * GiB && fr == 4 * GiB - 400 * MiB);
    for (int i = 0; i < 3; i++)
        NOK(nvmlDeviceGetMemoryInfo(nd[i], &after[i]));
    assert_true(after[2].used - before[2].used == 400 * MiB); /* context + allocation */
    assert_true(after[0].used == before[0].used && after[1].used == before[1].used);
    assert_true(tessel_fake_process_used(0) == 400 * MiB); /* hooks take ordinals too */
    assert_true(tessel_fake_process_used(1) == 0);
    /* Device 2's whole memory is what ordinal 0 may fill. */
    CUdeviceptr big;
    assert_int_equal(cuMemAlloc_v2(&big, 4 * GiB - 399 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
    OK(cuMemFree_v2(p));
    OK(cuDevicePrimaryCtxRelease_v2(0));

    /* A UUID prefix names its device. */
    char prefix[16];
    snprintf(prefix, sizeof prefix, "%.12s", uuid[1]);
    OK(restart_visible(prefix));
    OK(cuDeviceGetCount(&n));
    assert_int_equal(n, 1);
    size_t total;
    OK(cuDeviceTotalMem_v2(&total, 0));
    assert_true(total == 2 * GiB);

    /* The empty string, or a first entry that names no device: no device at all.  cuInit fails
     * with CUDA_ERROR_NO_DEVICE and stays failed; nothing else is initialised. */
    static const char *none[] = {"", "-1", "3", "GPU-nosuch", "MIG-0"};
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        assert_int_equal(restart_visible(none[i]), CUDA_ERROR_NO_DEVICE);
        assert_int_equal(cuInit(0), CUDA_ERROR_NO_DEVICE);
        assert_int_equal(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
        NOK(nvmlDeviceGetCount_v2(&nn));
        assert_int_equal(nn, 3);
    }
}

/* TESSEL_FAKE_NVML_HANG_FILE: nvmlInit answers only once the file is gone. */
static void test_hang(void **state)
{
    nvml_down();
    char path[] = "/tmp/tessel-fake-hang-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    setenv("TESSEL_FAKE_NVML_HANG_FILE", path, 1);
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t kid = fork();
    if (kid == 0) {
        alarm(30); /* never outlive a failed parent */
        char c = nvmlInit_v2() == NVML_SUCCESS ? 'y' : 'n';
        _exit(write(p[1], &c, 1) == 1 ? 0 : 1);
    }
    close(p[1]);
    /* No answer while the file exists (a working hang never answers; a broken one would answer
     * at once, well within this wait). */
    struct pollfd pf = {.fd = p[0], .events = POLLIN};
    assert_int_equal(poll(&pf, 1, 300), 0);
    unlink(path);
    char c = 0;
    assert_int_equal(read(p[0], &c, 1), 1);
    assert_int_equal(c, 'y');
    int st;
    assert_int_equal(waitpid(kid, &st, 0), kid);
    close(p[0]);
    unsetenv("TESSEL_FAKE_NVML_HANG_FILE");
}

static void test_errors(void **state)
{
    tessel_fake_reset();
    nvml_down();
    tessel_fake_nvml_reset_calls();
    nvmlDevice_t d;
    unsigned n;
    assert_int_equal(nvmlDeviceGetCount_v2(&n), NVML_ERROR_UNINITIALIZED);
    assert_int_equal(nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
    setenv("TESSEL_FAKE_GPUS", "A", 1);
    assert_int_equal(nvmlInit_v2(), NVML_ERROR_INVALID_ARGUMENT);
    setenv("TESSEL_FAKE_GPUS", "A:1G", 1);
    NOK(nvmlInitWithFlags(NVML_INIT_FLAG_NO_GPUS));
    NOK(nvmlDeviceGetCount(&n));
    assert_int_equal(n, 0);
    NOK(nvmlShutdown());
    NOK(nvmlInit());
    NOK(nvmlInit_v2()); /* reference counted */
    NOK(nvmlShutdown());
    NOK(nvmlDeviceGetCount(&n));
    assert_int_equal(n, 1);
    assert_int_equal(nvmlDeviceGetHandleByIndex_v2(1, &d), NVML_ERROR_INVALID_ARGUMENT);
    NOK(nvmlDeviceGetHandleByIndex_v2(0, &d));
    char small[4];
    assert_int_equal(nvmlDeviceGetName(d, small, sizeof small), NVML_ERROR_INSUFFICIENT_SIZE);
    assert_int_equal(nvmlDeviceGetUUID(d, small, sizeof small), NVML_ERROR_INSUFFICIENT_SIZE);
    assert_int_equal(nvmlDeviceGetHandleByUUID("GPU-nope", &d), NVML_ERROR_NOT_FOUND);
    assert_int_equal(nvmlDeviceGetHandleByPciBusId_v2("0000:09:00.0", &d), NVML_ERROR_NOT_FOUND);
    nvmlMemory_t m;
    assert_int_equal(nvmlDeviceGetMemoryInfo((nvmlDevice_t)&m, &m), NVML_ERROR_INVALID_ARGUMENT);
    assert_string_equal(nvmlErrorString(NVML_ERROR_UNINITIALIZED), "Uninitialized");
    NOK(nvmlShutdown());
    assert_int_equal(nvmlDeviceGetCount(&n), NVML_ERROR_UNINITIALIZED);
    assert_int_equal(tessel_fake_nvml_calls("nvmlInit"), 1);
    assert_int_equal(tessel_fake_nvml_calls("nvmlInit_v2"), 2);
    assert_int_equal(tessel_fake_nvml_calls("nvmlInitWithFlags"), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_devices_agree, teardown),
        cmocka_unit_test_teardown(test_memory_in_process, teardown),
        cmocka_unit_test_teardown(test_memory_across_processes, teardown),
        cmocka_unit_test_teardown(test_zombie_holds_nothing, teardown),
        cmocka_unit_test_teardown(test_utilisation, teardown),
        cmocka_unit_test_teardown(test_visible_devices, teardown),
        cmocka_unit_test_teardown(test_hang, teardown),
        cmocka_unit_test_teardown(test_errors, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
