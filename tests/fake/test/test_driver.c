/* test_driver.c - the fake libcuda.so.1 behaves: init and config errors, devices,
 * contexts and their memory, alloc/free accounting, OOM at the device size,
 * pitch, managed and host memory, copies, pools, VMM, arrays, call counters.
 * Each test starts from tessel_fake_reset() with its own environment. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "cudaabi/cuda_abi.h"
#include "tessel_fake.h"

#define MiB      (1ull << 20)
#define GiB      (1ull << 30)
#define OK(call) assert_int_equal((call), CUDA_SUCCESS)

static void clear_env(void)
{
    static const char *vars[] = {
        "TESSEL_FAKE_GPUS",       "TESSEL_FAKE_GPU_UUIDS",       "TESSEL_FAKE_KERNEL_US",
        "TESSEL_FAKE_CTX_MEM",    "TESSEL_FAKE_STATE",           "TESSEL_FAKE_ALLOC_GRANULE",
        "TESSEL_FAKE_CALLS_FILE", "TESSEL_FAKE_CTX_MEM_CREATED", "TESSEL_FAKE_MODULE_MEM",
        "TESSEL_FAKE_FUNC_MEM",   "CUDA_VISIBLE_DEVICES",        "TESSEL_FAKE_LAUNCH_MEM"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
}

/* Fresh fake with `gpus` (NULL: default) and context memory `ctx_mem`. */
static void start(const char *gpus, const char *ctx_mem)
{
    tessel_fake_reset();
    clear_env();
    if (gpus)
        setenv("TESSEL_FAKE_GPUS", gpus, 1);
    if (ctx_mem)
        setenv("TESSEL_FAKE_CTX_MEM", ctx_mem, 1);
    OK(cuInit(0));
    tessel_fake_reset_calls();
}

static int teardown(void **state)
{
    tessel_fake_reset();
    clear_env();
    return 0;
}

static CUcontext primary(int dev)
{
    CUcontext c = NULL;
    OK(cuDevicePrimaryCtxRetain(&c, dev));
    OK(cuCtxSetCurrent(c));
    return c;
}

static void test_init_errors(void **state)
{
    tessel_fake_reset();
    clear_env();
    CUdevice d;
    assert_int_equal(cuDeviceGet(&d, 0), CUDA_ERROR_NOT_INITIALIZED);
    int v = 0;
    OK(cuDriverGetVersion(&v)); /* allowed before cuInit */
    assert_int_equal(v, 13000);
    assert_int_equal(cuInit(1), CUDA_ERROR_INVALID_VALUE);

    static const char *bad[][2] = {
        {"TESSEL_FAKE_GPUS", "RTX4090"},    {"TESSEL_FAKE_GPUS", "0xA:1G"},
        {"TESSEL_FAKE_KERNEL_US", "soon"},  {"TESSEL_FAKE_GPU_UUIDS", "GPU-1"},
        {"TESSEL_FAKE_MODULE_MEM", "lots"}, {"TESSEL_FAKE_FUNC_MEM", "-1M"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tessel_fake_reset();
        clear_env();
        setenv(bad[i][0], bad[i][1], 1);
        assert_int_equal(cuInit(0), CUDA_ERROR_INVALID_VALUE);
        assert_int_equal(cuInit(0), CUDA_ERROR_INVALID_VALUE); /* sticky */
        assert_int_equal(cuDeviceGetCount(&v), CUDA_ERROR_NOT_INITIALIZED);
    }
    /* A state file describing other devices is refused. */
    char path[] = "/tmp/tessel-fake-state-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    tessel_fake_reset();
    clear_env();
    setenv("TESSEL_FAKE_STATE", path, 1);
    setenv("TESSEL_FAKE_GPUS", "A:1G", 1);
    OK(cuInit(0));
    tessel_fake_reset();
    setenv("TESSEL_FAKE_GPUS", "A:2G", 1);
    assert_int_equal(cuInit(0), CUDA_ERROR_INVALID_VALUE);
    tessel_fake_reset();
    unlink(path);
}

static void test_devices(void **state)
{
    start("2xRTX4090:24G,1xA100:80G:108", NULL);
    int n = 0;
    OK(cuDeviceGetCount(&n));
    assert_int_equal(n, 3);
    CUdevice d;
    OK(cuDeviceGet(&d, 2));
    assert_int_equal(d, 2);
    assert_int_equal(cuDeviceGet(&d, 3), CUDA_ERROR_INVALID_DEVICE);
    char name[64];
    OK(cuDeviceGetName(name, sizeof name, 0));
    assert_string_equal(name, "Fake RTX4090");
    OK(cuDeviceGetName(name, sizeof name, 2));
    assert_string_equal(name, "Fake A100");
    size_t total = 0;
    OK(cuDeviceTotalMem_v2(&total, 1));
    assert_true(total == 24 * GiB);
    unsigned t32 = 0;
    OK(cuDeviceTotalMem(&t32, 2));
    assert_true(t32 == 0xffffffffu); /* legacy 32-bit: clamped */
    int sms = 0, pitch = 0, major = 0;
    OK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 2));
    assert_int_equal(sms, 108);
    OK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
    assert_int_equal(sms, 80);
    OK(cuDeviceGetAttribute(&pitch, CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, 0));
    assert_int_equal(pitch, 32);
    OK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
    assert_int_equal(major, 9);
    assert_int_equal(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_MAX, 0),
                     CUDA_ERROR_INVALID_VALUE);
    CUuuid u0, u1, u1b;
    OK(cuDeviceGetUuid(&u0, 0));
    OK(cuDeviceGetUuid(&u1, 1));
    OK(cuDeviceGetUuid_v2(&u1b, 1));
    assert_memory_not_equal(u0.bytes, u1.bytes, 16);
    assert_memory_equal(u1.bytes, u1b.bytes, 16);
    char bus[32];
    OK(cuDeviceGetPCIBusId(bus, sizeof bus, 2));
    assert_string_equal(bus, "0000:03:00.0");
    OK(cuDeviceGetByPCIBusId(&d, "00000000:03:00.0"));
    assert_int_equal(d, 2);
    assert_int_equal(tessel_fake_calls("cuDeviceGetUuid"), 2);
    assert_int_equal(tessel_fake_calls("cuDeviceGetUuid_v2"), 1);
    assert_int_equal(tessel_fake_calls("cuDeviceTotalMem"), 1);
    assert_int_equal(tessel_fake_calls("cuDeviceTotalMem_v2"), 1);
}

static void test_uuid_override(void **state)
{
    tessel_fake_reset();
    clear_env();
    setenv("TESSEL_FAKE_GPUS", "2xA:1G", 1);
    setenv("TESSEL_FAKE_GPU_UUIDS", "GPU-00112233-4455-6677-8899-aabbccddeeff", 1);
    OK(cuInit(0));
    CUuuid u;
    OK(cuDeviceGetUuid_v2(&u, 0));
    static const unsigned char want[16] = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
                                           0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff};
    assert_memory_equal(u.bytes, want, 16);
}

static void test_contexts(void **state)
{
    start("2xA:8G", "300M");
    assert_true(tessel_fake_device_used(0) == 0);
    unsigned flags;
    int active;
    OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    assert_int_equal(active, 0);
    CUcontext p = primary(0);
    assert_true(tessel_fake_device_used(0) == 300 * MiB); /* context memory is charged */
    CUcontext p2;
    OK(cuDevicePrimaryCtxRetain(&p2, 0));
    assert_ptr_equal(p, p2);
    assert_true(tessel_fake_device_used(0) == 300 * MiB); /* once per primary context */
    OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    assert_int_equal(active, 1);

    CUcontext c3 = NULL, c4 = NULL;
    OK(cuCtxCreate_v4(&c3, NULL, 0, 1));
    CUcontext cur;
    OK(cuCtxGetCurrent(&cur));
    assert_ptr_equal(cur, c3); /* created contexts become current */
    CUdevice d;
    OK(cuCtxGetDevice(&d));
    assert_int_equal(d, 1);
    assert_true(tessel_fake_device_used(1) == 300 * MiB);
    OK(cuCtxCreate_v2(&c4, 0, 1));
    assert_true(tessel_fake_device_used(1) == 600 * MiB);
    CUdeviceptr m;
    OK(cuMemAlloc_v2(&m, 10 * MiB)); /* owned by c4 */
    assert_true(tessel_fake_device_used(1) == 610 * MiB);
    OK(cuCtxDestroy_v2(c4)); /* frees its memory */
    assert_true(tessel_fake_device_used(1) == 300 * MiB);
    OK(cuCtxGetCurrent(&cur));
    assert_ptr_equal(cur, c3);
    OK(cuCtxPopCurrent_v2(&cur));
    assert_ptr_equal(cur, c3);
    OK(cuCtxPushCurrent_v2(c3));
    OK(cuCtxDestroy(c3));
    assert_int_equal(cuCtxDestroy_v2(c3), CUDA_ERROR_INVALID_CONTEXT);
    assert_true(tessel_fake_device_used(1) == 0);
    assert_int_equal(cuCtxDestroy_v2(p), CUDA_ERROR_INVALID_CONTEXT); /* primary */

    OK(cuCtxSetCurrent(p));
    OK(cuDevicePrimaryCtxRelease_v2(0));
    assert_true(tessel_fake_device_used(0) == 300 * MiB);
    OK(cuDevicePrimaryCtxRelease(0));
    assert_true(tessel_fake_device_used(0) == 0);
    assert_int_equal(cuDevicePrimaryCtxRelease_v2(0), CUDA_ERROR_INVALID_CONTEXT);
    OK(cuDevicePrimaryCtxSetFlags_v2(0, CU_CTX_SCHED_BLOCKING_SYNC));
    OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    assert_int_equal(flags, CU_CTX_SCHED_BLOCKING_SYNC);
    primary(0);
    OK(cuMemAlloc_v2(&m, MiB));
    OK(cuDevicePrimaryCtxReset_v2(0)); /* everything goes */
    assert_true(tessel_fake_device_used(0) == 0);
    assert_int_equal(tessel_fake_calls("cuCtxCreate_v4"), 1);
    assert_int_equal(tessel_fake_calls("cuCtxCreate_v2"), 1);
    assert_int_equal(tessel_fake_calls("cuCtxCreate"), 0);
    assert_int_equal(tessel_fake_calls("cuCtxDestroy"), 1);
    assert_int_equal(tessel_fake_calls("cuCtxDestroy_v2"), 3);
    assert_int_equal(tessel_fake_calls("cuDevicePrimaryCtxRelease"), 1);
    assert_int_equal(tessel_fake_calls("cuDevicePrimaryCtxRelease_v2"), 2);

    /* A context needs its memory. */
    start("A:1G", "2G");
    CUcontext c;
    assert_int_equal(cuDevicePrimaryCtxRetain(&c, 0), CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(cuCtxCreate_v2(&c, 0, 0), CUDA_ERROR_OUT_OF_MEMORY);
    assert_true(tessel_fake_device_used(0) == 0);
}

static void test_alloc_accounting(void **state)
{
    start("A:1G", "0");
    CUdeviceptr p = 0;
    assert_int_equal(cuMemAlloc_v2(&p, MiB), CUDA_ERROR_INVALID_CONTEXT);
    primary(0);
    size_t fr = 0, tot = 0;
    OK(cuMemGetInfo_v2(&fr, &tot));
    assert_true(tot == GiB && fr == GiB);
    OK(cuMemAlloc_v2(&p, 100 * MiB));
    assert_true(p != 0);
    OK(cuMemGetInfo_v2(&fr, &tot));
    assert_true(fr == GiB - 100 * MiB);
    assert_true(tessel_fake_device_used(0) == 100 * MiB);
    assert_true(tessel_fake_process_used(0) == 100 * MiB);
    /* Real memory: write it all, read it back. */
    memset((void *)(uintptr_t)p, 0x5a, 100 * MiB);
    unsigned char buf[16];
    OK(cuMemcpyDtoH_v2(buf, p + 100 * MiB - 16, 16));
    assert_int_equal(buf[15], 0x5a);
    CUdeviceptr base = 0;
    size_t size = 0;
    OK(cuMemGetAddressRange_v2(&base, &size, p + 12345));
    assert_true(base == p && size == 100 * MiB);
    assert_int_equal(cuMemGetAddressRange_v2(&base, &size, 8), CUDA_ERROR_NOT_FOUND);
    /* Small allocations are charged in 512 B granules. */
    CUdeviceptr s;
    OK(cuMemAlloc_v2(&s, 1));
    assert_true(tessel_fake_device_used(0) == 100 * MiB + 512);
    OK(cuMemFree_v2(s));
    assert_int_equal(cuMemFree_v2(s), CUDA_ERROR_INVALID_VALUE); /* double free */
    assert_int_equal(cuMemFree_v2(p + 1), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemFree_v2(p));
    assert_true(tessel_fake_device_used(0) == 0);
    assert_int_equal(cuMemAlloc_v2(&p, 0), CUDA_ERROR_INVALID_VALUE);

    /* OOM exactly at the device size: the whole device fits, one more byte does not. */
    OK(cuMemAlloc_v2(&p, GiB));
    assert_int_equal(cuMemAlloc_v2(&s, 1), CUDA_ERROR_OUT_OF_MEMORY);
    OK(cuMemFree_v2(p));
    assert_int_equal(cuMemAlloc_v2(&p, GiB + 1), CUDA_ERROR_OUT_OF_MEMORY);
    assert_true(tessel_fake_device_used(0) == 0);
    CUdeviceptr many[8];
    for (int i = 0; i < 8; i++)
        OK(cuMemAlloc_v2(&many[i], 128 * MiB));
    assert_int_equal(cuMemAlloc_v2(&s, 512), CUDA_ERROR_OUT_OF_MEMORY);
    OK(cuMemGetInfo_v2(&fr, &tot));
    assert_true(fr == 0);
    for (int i = 0; i < 8; i++)
        OK(cuMemFree_v2(many[i]));

    /* Legacy 32-bit entry points: low addresses, 32-bit sizes. */
    CUdeviceptr_v1 p1 = 0;
    OK(cuMemAlloc(&p1, 4096));
    assert_true(p1 != 0);
    assert_true(tessel_fake_device_used(0) == 4096);
    unsigned f32, t32;
    OK(cuMemGetInfo(&f32, &t32));
    assert_true(t32 == GiB && f32 == GiB - 4096);
    OK(cuMemsetD8(p1, 7, 4096));
    unsigned char b1[4];
    OK(cuMemcpyDtoH(b1, p1 + 4092, 4));
    assert_int_equal(b1[3], 7);
    OK(cuMemFree(p1));
    assert_true(tessel_fake_device_used(0) == 0);

    assert_int_equal(tessel_fake_calls("cuMemAlloc"), 1);
    assert_int_equal(tessel_fake_calls("cuMemAlloc_v2"), 16);
    assert_int_equal(tessel_fake_calls("cuMemFree"), 1);
    assert_int_equal(tessel_fake_calls("cuMemGetInfo"), 1);
    assert_int_equal(tessel_fake_calls("cuMemGetInfo_v2"), 3);
}

static void test_granule(void **state)
{
    tessel_fake_reset();
    clear_env();
    setenv("TESSEL_FAKE_ALLOC_GRANULE", "2M", 1);
    setenv("TESSEL_FAKE_CTX_MEM", "0", 1);
    OK(cuInit(0));
    primary(0);
    CUdeviceptr p;
    OK(cuMemAlloc_v2(&p, 1));
    assert_true(tessel_fake_device_used(0) == 2 * MiB);
    OK(cuMemFree_v2(p));
}

/* Managed memory (README "Managed memory"): host pages at allocation (no device memory, free
 * memory unchanged), device memory once prefetched to a device, back on the host when
 * prefetched there, hints recorded, freed by cuMemFree_v2 wherever it is. */
static void test_managed_model(void **state)
{
    start("A:1G,B:1G", "0");
    primary(0);
    size_t f0 = 0, t0 = 0, f = 0, t = 0;
    OK(cuMemGetInfo_v2(&f0, &t0));
    CUdeviceptr m;
    OK(cuMemAllocManaged(&m, 100 * MiB, CU_MEM_ATTACH_GLOBAL));
    OK(cuMemGetInfo_v2(&f, &t));
    assert_true(f == f0 && tessel_fake_process_used(0) == 0);
    int res = 7, pt = 7, pid = 7;
    unsigned long long acc = 7;
    assert_int_equal(tessel_fake_managed(m + 5, &res, &pt, &pid, &acc), 0);
    assert_int_equal(res, -1);
    assert_int_equal(pt, 0);
    assert_true(acc == 0);

    CUmemLocation host = {CU_MEM_LOCATION_TYPE_HOST, 0}, d1 = {CU_MEM_LOCATION_TYPE_DEVICE, 1};
    OK(cuMemAdvise_v2(m, 100 * MiB, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, host));
    OK(cuMemAdvise(m, 100 * MiB, CU_MEM_ADVISE_SET_ACCESSED_BY, 0));
    assert_int_equal(tessel_fake_managed(m, &res, &pt, &pid, &acc), 0);
    assert_int_equal(pt, CU_MEM_LOCATION_TYPE_HOST);
    assert_true(acc == 1);
    OK(cuMemAdvise(m, 100 * MiB, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, 1));
    assert_int_equal(tessel_fake_managed(m, &res, &pt, &pid, &acc), 0);
    assert_int_equal(pt, CU_MEM_LOCATION_TYPE_DEVICE);
    assert_int_equal(pid, 1);
    OK(cuMemAdvise(m, 100 * MiB, CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, 0));
    OK(cuMemAdvise(m, 100 * MiB, CU_MEM_ADVISE_UNSET_ACCESSED_BY, 0));
    assert_int_equal(tessel_fake_managed(m, &res, &pt, &pid, &acc), 0);
    assert_true(pt == 0 && acc == 0);

    /* Prefetched to device 0: its memory there; to device 1: moved; to the host: gone. */
    OK(cuMemPrefetchAsync(m, MiB, 0, NULL));
    OK(cuMemGetInfo_v2(&f, &t));
    assert_true(f == f0 - 100 * MiB && tessel_fake_process_used(0) == 100 * MiB);
    assert_int_equal(tessel_fake_managed(m, &res, &pt, &pid, &acc), 0);
    assert_int_equal(res, 0);
    OK(cuMemPrefetchAsync_v2(m, MiB, d1, 0, NULL));
    assert_true(tessel_fake_device_used(0) == 0 && tessel_fake_device_used(1) == 100 * MiB);
    OK(cuMemPrefetchAsync(m, MiB, CU_DEVICE_CPU, NULL));
    assert_true(tessel_fake_device_used(0) == 0 && tessel_fake_device_used(1) == 0);
    /* Larger than the device's free memory: the pages stay on the host. */
    CUdeviceptr big;
    OK(cuMemAllocManaged(&big, 2048 * MiB, CU_MEM_ATTACH_GLOBAL));
    OK(cuMemPrefetchAsync(big, MiB, 0, NULL));
    assert_int_equal(tessel_fake_managed(big, &res, &pt, &pid, &acc), 0);
    assert_int_equal(res, -1);
    assert_true(tessel_fake_device_used(0) == 0);
    OK(cuMemFree_v2(big));

    OK(cuMemPrefetchAsync(m, MiB, 0, NULL));
    OK(cuMemFree_v2(m)); /* resident on the device: given back */
    assert_true(tessel_fake_device_used(0) == 0);
    assert_int_equal(tessel_fake_managed(m, &res, &pt, &pid, &acc), -1);
    CUdeviceptr d;
    OK(cuMemAlloc_v2(&d, MiB));
    assert_int_equal(tessel_fake_managed(d, &res, &pt, &pid, &acc), -1); /* not managed */
    OK(cuMemFree_v2(d));
}

static void test_pitch_managed_host(void **state)
{
    start("A:1G", "0");
    primary(0);
    CUdeviceptr p;
    size_t pitch = 0;
    OK(cuMemAllocPitch_v2(&p, &pitch, 1000, 10, 4));
    assert_int_equal(pitch, 1024); /* width rounded up to 512 B */
    assert_true(tessel_fake_device_used(0) == 10240);
    OK(cuMemFree_v2(p));
    OK(cuMemAllocPitch_v2(&p, &pitch, 512, 3, 16));
    assert_int_equal(pitch, 512);
    OK(cuMemFree_v2(p));
    assert_int_equal(cuMemAllocPitch_v2(&p, &pitch, 100, 10, 3), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemAllocPitch_v2(&p, &pitch, 0, 10, 4), CUDA_ERROR_INVALID_VALUE);
    CUdeviceptr_v1 p1;
    unsigned pitch1;
    OK(cuMemAllocPitch(&p1, &pitch1, 513, 2, 8));
    assert_int_equal(pitch1, 1024);
    OK(cuMemFree(p1));

    OK(cuMemAllocManaged(&p, 3 * MiB, CU_MEM_ATTACH_GLOBAL));
    assert_true(tessel_fake_device_used(0) == 0); /* host pages until migrated */
    memset((void *)(uintptr_t)p, 1, 3 * MiB);     /* host-accessible */
    OK(cuMemFree_v2(p));
    assert_int_equal(cuMemAllocManaged(&p, MiB, 0), CUDA_ERROR_INVALID_VALUE);

    void *h = NULL, *h2 = NULL;
    OK(cuMemAllocHost_v2(&h, 5 * MiB));
    OK(cuMemHostAlloc(&h2, MiB, CU_MEMHOSTALLOC_PORTABLE));
    assert_true(tessel_fake_device_used(0) == 0); /* host memory is not device memory */
    memset(h, 3, 5 * MiB);
    CUdeviceptr hd;
    OK(cuMemHostGetDevicePointer_v2(&hd, h, 0));
    assert_true(hd == (uintptr_t)h);
    OK(cuMemFreeHost(h));
    OK(cuMemFreeHost(h2));
    assert_int_equal(cuMemFreeHost(h2), CUDA_ERROR_INVALID_VALUE);
    char user[8192];
    OK(cuMemHostRegister_v2(user, sizeof user, 0));
    assert_int_equal(cuMemHostRegister_v2(user + 4096, 16, 0),
                     CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    OK(cuMemHostUnregister(user));
    assert_int_equal(cuMemHostUnregister(user), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
}

static void test_copies(void **state)
{
    start("A:1G", "0");
    primary(0);
    CUdeviceptr a, b;
    OK(cuMemAlloc_v2(&a, 4096));
    OK(cuMemAlloc_v2(&b, 4096));
    char src[4096], dst[4096];
    for (int i = 0; i < 4096; i++)
        src[i] = (char)(i * 7);
    OK(cuMemcpyHtoD_v2(a, src, sizeof src));
    OK(cuMemcpyDtoD_v2(b, a, 4096));
    memset(dst, 0, sizeof dst);
    OK(cuMemcpyDtoH_v2_ptds(dst, b, 4096));
    assert_memory_equal(src, dst, 4096);
    OK(cuMemsetD8_v2_ptds(b + 100, 0xee, 10));
    OK(cuMemcpyDtoH_v2(dst, b, 4096));
    assert_int_equal((unsigned char)dst[105], 0xee);
    assert_int_equal(dst[99], src[99]);
    /* Out of bounds / unknown device pointers are refused, not crashed on. */
    assert_int_equal(cuMemcpyHtoD_v2(a + 4000, src, 200), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemcpyDtoH_v2(dst, (uintptr_t)dst, 8), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemsetD8_v2(a, 0, 4097), CUDA_ERROR_INVALID_VALUE);
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuMemcpyHtoDAsync_v2(a, src + 1, 100, s));
    OK(cuMemcpyDtoHAsync_v2_ptsz(dst, a, 100, NULL));
    assert_memory_equal(dst, src + 1, 100);
    OK(cuMemsetD8Async(a, 1, 4096, s));
    OK(cuMemcpy(b, a, 4096)); /* unified */
    OK(cuMemcpyAsync_ptsz((uintptr_t)dst, b, 16, CU_STREAM_PER_THREAD));
    assert_int_equal(dst[15], 1);
    OK(cuStreamDestroy_v2(s));
    OK(cuMemFree_v2(a));
    OK(cuMemFree_v2(b));
    assert_int_equal(tessel_fake_calls("cuMemcpyDtoH_v2_ptds"), 1);
    assert_int_equal(tessel_fake_calls("cuMemcpyDtoH_v2"), 2);
    assert_int_equal(tessel_fake_calls("cuMemcpyDtoH"), 0);
    assert_int_equal(tessel_fake_calls("cuMemsetD8_v2_ptds"), 1);
    assert_int_equal(tessel_fake_calls("cuMemsetD8_v2"), 1);
}

/* 16- and 32-bit sets, 1D and 2D, each variant (cuda.h: the destination and a 2D set's pitch
 * aligned to the element's size, else CUDA_ERROR_INVALID_VALUE; out of bounds refused). */
static void test_wide_sets(void **state)
{
    start("A:1G", "0");
    primary(0);
    CUdeviceptr a;
    OK(cuMemAlloc_v2(&a, 4096));
    uint16_t h16[2048];
    uint32_t h32[1024];
    OK(cuMemsetD16_v2(a, 0xbeef, 2048));
    OK(cuMemcpyDtoH_v2(h16, a, sizeof h16));
    assert_int_equal(h16[0], 0xbeef);
    assert_int_equal(h16[2047], 0xbeef);
    OK(cuMemsetD32_v2_ptds(a + 8, 0xdeadbeef, 4));
    OK(cuMemcpyDtoH_v2(h32, a, sizeof h32));
    assert_int_equal(h32[1], 0xbeefbeef);
    assert_int_equal(h32[2], 0xdeadbeef);
    assert_int_equal(h32[5], 0xdeadbeef);
    assert_int_equal(h32[6], 0xbeefbeef);
    CUdeviceptr_v1 lo; /* the v1 exports: 32-bit pointers and sizes */
    OK(cuMemAlloc(&lo, 4096));
    OK(cuMemsetD8_v2(lo, 0, 4096));
    OK(cuMemsetD16(lo, 7, 1));
    OK(cuMemsetD32(lo + 4, 9, 1));
    OK(cuMemsetD16_v2_ptds(lo + 2, 8, 1));
    OK(cuMemsetD2D16(lo + 64, 64, 1, 2, 2));
    OK(cuMemsetD2D32(lo + 256, 64, 2, 2, 2));
    OK(cuMemcpyDtoH_v2(h16, lo, 512));
    assert_int_equal(h16[0], 7);
    assert_int_equal(h16[1], 8);
    assert_int_equal(h16[2], 9);
    assert_int_equal(h16[3], 0);
    assert_int_equal(h16[32 + 1], 1);
    assert_int_equal(h16[64 + 1], 1);
    assert_int_equal(h16[64 + 2], 0);
    assert_int_equal(h16[128 + 2], 2);
    assert_int_equal(h16[160 + 2], 2);
    OK(cuMemFree(lo));
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuMemsetD16Async(a, 1, 4, s));
    OK(cuMemsetD16Async_ptsz(a + 8, 2, 4, NULL));
    OK(cuMemsetD32Async(a + 16, 3, 2, s));
    OK(cuMemsetD32Async_ptsz(a + 24, 4, 2, NULL));
    OK(cuStreamSynchronize(s));
    OK(cuMemcpyDtoH_v2(h32, a, 32));
    assert_int_equal(h32[0], 0x00010001);
    assert_int_equal(h32[2], 0x00020002);
    assert_int_equal(h32[4], 3);
    assert_int_equal(h32[7], 4);
    /* 2D: 4 rows of 8 elements, 64 bytes apart; the gaps untouched. */
    OK(cuMemsetD8_v2(a, 0, 4096));
    OK(cuMemsetD2D32_v2(a, 64, 0x11223344, 8, 4));
    OK(cuMemsetD2D16_v2_ptds(a + 32, 64, 0x5566, 8, 4));
    OK(cuMemsetD2D16Async(a + 512, 64, 3, 2, 2, s));
    OK(cuMemsetD2D16Async_ptsz(a + 640, 64, 4, 2, 2, NULL));
    OK(cuMemsetD2D32Async(a + 768, 64, 5, 2, 2, s));
    OK(cuMemsetD2D32Async_ptsz(a + 896, 64, 6, 2, 2, NULL));
    OK(cuStreamSynchronize(s));
    OK(cuMemcpyDtoH_v2(h32, a, sizeof h32));
    for (int r = 0; r < 4; r++) {
        assert_int_equal(h32[r * 16], 0x11223344);
        assert_int_equal(h32[r * 16 + 7], 0x11223344);
        assert_int_equal(h32[r * 16 + 8], 0x55665566);
        assert_int_equal(h32[r * 16 + 11], 0x55665566);
        assert_int_equal(h32[r * 16 + 12], 0);
    }
    assert_int_equal(h32[128], 0x00030003);
    assert_int_equal(h32[160], 0x00040004);
    assert_int_equal(h32[192 + 17], 5);
    assert_int_equal(h32[224 + 17], 6);
    /* Misaligned destination or pitch, out of bounds: refused, nothing written. */
    assert_int_equal(cuMemsetD16_v2(a + 1, 1, 2), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemsetD32_v2(a + 2, 1, 2), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemsetD2D32_v2(a, 66, 1, 2, 2), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemsetD2D16_v2(a, 8, 1, 8, 2), CUDA_ERROR_INVALID_VALUE); /* pitch < row */
    assert_int_equal(cuMemsetD32_v2(a, 1, 1025), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemsetD2D16_v2(a, 1024, 1, 8, 5), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemcpyDtoH_v2(h32, a, 4));
    assert_int_equal(h32[0], 0x11223344);
    OK(cuMemsetD32_v2(a, 1, 0)); /* nothing to set */
    OK(cuStreamDestroy_v2(s));
    OK(cuMemFree_v2(a));
    assert_int_equal(tessel_fake_calls("cuMemsetD16_v2"), 2);
    assert_int_equal(tessel_fake_calls("cuMemsetD32_v2"), 3);
    assert_int_equal(tessel_fake_calls("cuMemsetD16_v2_ptds"), 1);
    assert_int_equal(tessel_fake_calls("cuMemsetD2D16_v2_ptds"), 1);
    assert_int_equal(tessel_fake_calls("cuMemsetD32Async_ptsz"), 1);
}

/* 3D copies: slices Pitch * Height apart on each side, offsets in x, y, z; refused: reserved
 * fields, a slice height below the copy's, out of bounds; arrays not supported (as 2D). */
static void test_copy3d(void **state)
{
    start("A:1G", "0");
    primary(0);
    CUdeviceptr a;
    OK(cuMemAlloc_v2(&a, 8192));
    OK(cuMemsetD8_v2(a, 0, 8192));
    unsigned char src[3][4][64], back[8192];
    for (int z = 0; z < 3; z++)
        for (int y = 0; y < 4; y++)
            for (int x = 0; x < 64; x++)
                src[z][y][x] = (unsigned char)(z * 50 + y * 10 + x);
    CUDA_MEMCPY3D c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = CU_MEMORYTYPE_HOST;
    c.srcHost = src;
    c.srcPitch = 64;
    c.srcHeight = 4;
    c.srcY = 1; /* rows 1-2 of slices 1-2 */
    c.srcZ = 1;
    c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c.dstDevice = a;
    c.dstPitch = 256;
    c.dstHeight = 8;
    c.dstXInBytes = 16;
    c.WidthInBytes = 32;
    c.Height = 2;
    c.Depth = 2;
    OK(cuMemcpy3D_v2(&c));
    OK(cuMemcpyDtoH_v2(back, a, sizeof back));
    for (int z = 0; z < 2; z++)
        for (int y = 0; y < 2; y++) {
            unsigned char *row = back + z * 256 * 8 + y * 256;
            assert_memory_equal(row + 16, &src[z + 1][y + 1][0], 32);
            assert_int_equal(row[15], 0);
            assert_int_equal(row[48], 0);
        }
    assert_int_equal(back[2 * 256], 0); /* the third row of a slice: not copied */
    /* Back to the host through the other variants. */
    unsigned char out[2][2][32];
    CUDA_MEMCPY3D r;
    memset(&r, 0, sizeof r);
    r.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    r.srcDevice = a;
    r.srcXInBytes = 16;
    r.srcPitch = 256;
    r.srcHeight = 8;
    r.dstMemoryType = CU_MEMORYTYPE_HOST;
    r.dstHost = out;
    r.dstPitch = 32;
    r.dstHeight = 2;
    r.WidthInBytes = 32;
    r.Height = 2;
    r.Depth = 2;
    memset(out, 0, sizeof out);
    OK(cuMemcpy3D_v2_ptds(&r));
    assert_memory_equal(out[1][1], &src[2][2][0], 32);
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    memset(out, 0, sizeof out);
    OK(cuMemcpy3DAsync_v2(&r, s));
    OK(cuStreamSynchronize(s));
    assert_memory_equal(out[0][1], &src[1][2][0], 32);
    memset(out, 0, sizeof out);
    OK(cuMemcpy3DAsync_v2_ptsz(&r, NULL));
    assert_memory_equal(out[1][0], &src[2][1][0], 32);
    OK(cuStreamDestroy_v2(s));
    /* Refused, nothing written. */
    CUDA_MEMCPY3D bad = c;
    bad.reserved0 = &bad;
    assert_int_equal(cuMemcpy3D_v2(&bad), CUDA_ERROR_INVALID_VALUE);
    bad = c;
    bad.dstHeight = 1; /* a slice shorter than the copy's 2 rows */
    assert_int_equal(cuMemcpy3D_v2(&bad), CUDA_ERROR_INVALID_VALUE);
    bad = c;
    bad.dstZ = 3; /* slices 3 and 4 of 2 KiB: past the 8 KiB */
    assert_int_equal(cuMemcpy3D_v2(&bad), CUDA_ERROR_INVALID_VALUE);
    bad = c;
    bad.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    assert_int_equal(cuMemcpy3D_v2(&bad), CUDA_ERROR_NOT_SUPPORTED);
    assert_int_equal(cuMemcpy3D_v2(NULL), CUDA_ERROR_INVALID_VALUE);
    unsigned char again[8192];
    OK(cuMemcpyDtoH_v2(again, a, sizeof again));
    assert_memory_equal(again, back, sizeof back);
    OK(cuMemFree_v2(a));
    assert_int_equal(tessel_fake_calls("cuMemcpy3D_v2"), 6);
    assert_int_equal(tessel_fake_calls("cuMemcpy3D_v2_ptds"), 1);
    assert_int_equal(tessel_fake_calls("cuMemcpy3DAsync_v2_ptsz"), 1);
}

static void test_2d_peer_hints(void **state)
{
    start("2xA:1G", "0");
    CUcontext c1;
    OK(cuDevicePrimaryCtxRetain(&c1, 1));
    CUcontext c0 = primary(0);
    CUdeviceptr p, q;
    size_t pitch;
    OK(cuMemAllocPitch_v2(&p, &pitch, 100, 8, 4));
    assert_int_equal(pitch, 512);
    OK(cuMemsetD2D8_v2(p, pitch, 0, 512, 8));
    OK(cuMemsetD2D8_v2_ptds(p + 10, pitch, 0xab, 20, 8));
    assert_int_equal(cuMemsetD2D8_v2(p, pitch, 1, 600, 2), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemsetD2D8_v2(p, pitch, 1, 100, 9), CUDA_ERROR_INVALID_VALUE);
    unsigned char host[8][32];
    memset(host, 0, sizeof host);
    CUDA_MEMCPY2D cp;
    memset(&cp, 0, sizeof cp);
    cp.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    cp.srcDevice = p;
    cp.srcXInBytes = 5;
    cp.srcPitch = pitch;
    cp.dstMemoryType = CU_MEMORYTYPE_HOST;
    cp.dstHost = host;
    cp.dstPitch = 32;
    cp.WidthInBytes = 30;
    cp.Height = 8;
    OK(cuMemcpy2DUnaligned_v2(&cp));
    assert_int_equal(host[7][4], 0);    /* column 9 */
    assert_int_equal(host[7][5], 0xab); /* column 10 */
    assert_int_equal(host[7][24], 0xab);
    assert_int_equal(host[7][25], 0);
    cp.Height = 9; /* past the allocation */
    assert_int_equal(cuMemcpy2D_v2(&cp), CUDA_ERROR_INVALID_VALUE);
    cp.Height = 8;
    cp.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    assert_int_equal(cuMemcpy2DAsync_v2(&cp, NULL), CUDA_ERROR_NOT_SUPPORTED);

    OK(cuCtxPushCurrent_v2(c1));
    OK(cuMemAlloc_v2(&q, 4096)); /* on device 1 */
    OK(cuCtxPopCurrent_v2(NULL));
    OK(cuMemcpyPeer(q, c1, p + 10, c0, 20));
    unsigned char b[20];
    OK(cuMemcpyDtoH_v2(b, q, 20));
    assert_int_equal(b[19], 0xab);
    assert_int_equal(cuMemcpyPeer(q, NULL, p, c0, 20), CUDA_ERROR_INVALID_CONTEXT);
    OK(cuMemcpyPeerAsync_ptsz(p, c0, q, c1, 20, NULL));

    void *h;
    OK(cuMemHostAlloc(&h, 100, CU_MEMHOSTALLOC_DEVICEMAP));
    unsigned fl = 0;
    OK(cuMemHostGetFlags(&fl, h));
    assert_int_equal(fl, CU_MEMHOSTALLOC_DEVICEMAP);
    OK(cuMemFreeHost(h));

    CUdeviceptr m;
    OK(cuMemAllocManaged(&m, MiB, CU_MEM_ATTACH_GLOBAL));
    OK(cuMemAdvise(m, MiB, CU_MEM_ADVISE_SET_READ_MOSTLY, 0));
    CUmemLocation host_loc = {CU_MEM_LOCATION_TYPE_HOST, 0};
    OK(cuMemAdvise_v2(m, MiB, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, host_loc));
    OK(cuMemPrefetchAsync(m, MiB, CU_DEVICE_CPU, NULL));
    CUmemLocation d1 = {CU_MEM_LOCATION_TYPE_DEVICE, 1};
    OK(cuMemPrefetchAsync_v2_ptsz(m, 4096, d1, 0, NULL));
    assert_int_equal(cuMemPrefetchAsync_v2(p, 4096, d1, 0, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemAdvise(m, 2 * MiB, CU_MEM_ADVISE_SET_READ_MOSTLY, 0),
                     CUDA_ERROR_INVALID_VALUE);

    CUmemoryPool pool;
    OK(cuDeviceGetDefaultMemPool(&pool, 0));
    CUmemAccess_flags af;
    CUmemLocation l0 = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
    OK(cuMemPoolGetAccess(&af, pool, &l0));
    assert_int_equal(af, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    OK(cuMemPoolGetAccess(&af, pool, &d1));
    assert_int_equal(af, CU_MEM_ACCESS_FLAGS_PROT_NONE);
    CUmemAccessDesc acc = {{CU_MEM_LOCATION_TYPE_DEVICE, 1}, CU_MEM_ACCESS_FLAGS_PROT_READ};
    OK(cuMemPoolSetAccess(pool, &acc, 1));
    OK(cuMemPoolGetAccess(&af, pool, &d1));
    assert_int_equal(af, CU_MEM_ACCESS_FLAGS_PROT_READ);
    assert_int_equal(tessel_fake_calls("cuMemsetD2D8_v2"), 3);
    assert_int_equal(tessel_fake_calls("cuMemsetD2D8_v2_ptds"), 1);
    assert_int_equal(tessel_fake_calls("cuMemPrefetchAsync_v2_ptsz"), 1);
}

static cuuint64_t pool_attr(CUmemoryPool p, CUmemPool_attribute a)
{
    cuuint64_t v = 0;
    OK(cuMemPoolGetAttribute(p, a, &v));
    return v;
}

static void test_pools(void **state)
{
    start("2xA:1G", "0");
    primary(0);
    CUmemoryPool def, cur;
    OK(cuDeviceGetDefaultMemPool(&def, 0));
    OK(cuDeviceGetMemPool(&cur, 0));
    assert_ptr_equal(def, cur);
    CUstream s;
    OK(cuStreamCreate(&s, 0));
    CUdeviceptr a, b;
    OK(cuMemAllocAsync(&a, 3 * MiB, s));
    /* The pool reserves whole 2 MiB chunks from the device. */
    assert_true(pool_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 4 * MiB);
    assert_true(pool_attr(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 3 * MiB);
    assert_true(tessel_fake_device_used(0) == 4 * MiB);
    OK(cuMemAllocAsync_ptsz(&b, 512 * 1024, s)); /* fits in the reservation */
    assert_true(tessel_fake_device_used(0) == 4 * MiB);
    memset((void *)(uintptr_t)b, 9, 512 * 1024);
    OK(cuMemFreeAsync(a, s));
    /* Freed memory returns to the pool, not to the device. */
    assert_true(pool_attr(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 512 * 1024);
    assert_true(pool_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 4 * MiB);
    assert_true(tessel_fake_device_used(0) == 4 * MiB);
    /* Release threshold 0 (default): synchronising releases what is unused. */
    OK(cuStreamSynchronize(s));
    assert_true(pool_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 2 * MiB);
    assert_true(tessel_fake_device_used(0) == 2 * MiB);
    assert_true(pool_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) == 4 * MiB);
    assert_true(pool_attr(def, CU_MEMPOOL_ATTR_USED_MEM_HIGH) == 3 * MiB + 512 * 1024);
    OK(cuMemFreeAsync_ptsz(b, s));

    /* A high threshold keeps the reservation across synchronisation... */
    cuuint64_t thr = 64 * MiB;
    OK(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &thr));
    assert_true(pool_attr(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) == 64 * MiB);
    OK(cuMemAllocAsync(&a, 40 * MiB, s));
    OK(cuMemFreeAsync(a, s));
    OK(cuCtxSynchronize());
    assert_true(pool_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 40 * MiB);
    assert_true(tessel_fake_device_used(0) == 40 * MiB);
    /* ...until cuMemPoolTrimTo. */
    OK(cuMemPoolTrimTo(def, 10 * MiB));
    assert_true(pool_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 10 * MiB);
    OK(cuMemPoolTrimTo(def, 0));
    assert_true(tessel_fake_device_used(0) == 0);
    cuuint64_t zero = 0;
    OK(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &zero));
    assert_true(pool_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) == 0);
    assert_int_equal(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &zero),
                     CUDA_ERROR_INVALID_VALUE);

    /* Explicit pools: the device's memory bounds them; destroy gives it all back. */
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 1;
    CUmemoryPool mine;
    OK(cuMemPoolCreate(&mine, &props));
    OK(cuMemAllocFromPoolAsync(&a, 700 * MiB, mine, s));
    assert_true(tessel_fake_device_used(1) == 700 * MiB);
    assert_int_equal(cuMemAllocFromPoolAsync_ptsz(&b, 400 * MiB, mine, s),
                     CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(cuDeviceSetMemPool(0, mine), CUDA_ERROR_INVALID_VALUE);
    OK(cuDeviceSetMemPool(1, mine));
    OK(cuDeviceGetMemPool(&cur, 1));
    assert_ptr_equal(cur, mine);
    OK(cuMemFree_v2(a)); /* cuMemFree takes pool memory back too */
    assert_true(pool_attr(mine, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 0);
    OK(cuMemPoolDestroy(mine));
    assert_true(tessel_fake_device_used(1) == 0);
    OK(cuDeviceGetMemPool(&cur, 1)); /* back to the default pool */
    OK(cuDeviceGetDefaultMemPool(&def, 1));
    assert_ptr_equal(cur, def);
    assert_int_equal(cuMemPoolDestroy(def), CUDA_ERROR_INVALID_VALUE);
    props.maxSize = 4 * MiB;
    OK(cuMemPoolCreate(&mine, &props));
    assert_int_equal(cuMemAllocFromPoolAsync(&a, 5 * MiB, mine, s), CUDA_ERROR_OUT_OF_MEMORY);
    OK(cuMemPoolDestroy(mine));
    CUmemLocation loc = {CU_MEM_LOCATION_TYPE_DEVICE, 1};
    OK(cuMemGetDefaultMemPool(&cur, &loc, CU_MEM_ALLOCATION_TYPE_PINNED));
    assert_ptr_equal(cur, def);
    OK(cuStreamDestroy_v2(s));
    assert_int_equal(tessel_fake_calls("cuMemAllocAsync"), 2);
    assert_int_equal(tessel_fake_calls("cuMemAllocAsync_ptsz"), 1);
    assert_int_equal(tessel_fake_calls("cuMemFreeAsync_ptsz"), 1);
    assert_int_equal(tessel_fake_calls("cuMemAllocFromPoolAsync"), 2);
    assert_int_equal(tessel_fake_calls("cuMemAllocFromPoolAsync_ptsz"), 1);
}

static void test_vmm(void **state)
{
    start("A:1G", "0");
    primary(0);
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t gran = 0;
    OK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    assert_int_equal(gran, 2 * MiB);
    OK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    assert_int_equal(gran, 2 * MiB);
    CUmemGenericAllocationHandle h;
    assert_int_equal(cuMemCreate(&h, MiB, &prop, 0), CUDA_ERROR_INVALID_VALUE); /* not granular */
    OK(cuMemCreate(&h, 8 * MiB, &prop, 0));
    assert_true(tessel_fake_device_used(0) == 8 * MiB); /* physical memory is charged */
    CUdeviceptr va;
    OK(cuMemAddressReserve(&va, 16 * MiB, 0, 0, 0));
    assert_true(va % (2 * MiB) == 0);
    assert_true(tessel_fake_device_used(0) == 8 * MiB); /* address space is free */
    OK(cuMemMap(va, 8 * MiB, 0, h, 0));
    assert_int_equal(cuMemMap(va, 8 * MiB, 0, h, 0), CUDA_ERROR_ALREADY_MAPPED);
    char buf[64] = "through the mapping";
    assert_int_equal(cuMemcpyHtoD_v2(va, buf, sizeof buf),
                     CUDA_ERROR_INVALID_VALUE); /* no access */
    CUmemAccessDesc acc = {{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    OK(cuMemSetAccess(va, 8 * MiB, &acc, 1));
    OK(cuMemcpyHtoD_v2(va + 4 * MiB, buf, sizeof buf));
    CUdeviceptr base;
    size_t size;
    OK(cuMemGetAddressRange_v2(&base, &size, va + 5));
    assert_true(base == va && size == 8 * MiB);
    /* Released while mapped: stays charged until unmapped. */
    OK(cuMemRelease(h));
    assert_true(tessel_fake_device_used(0) == 8 * MiB);
    char out[64];
    OK(cuMemcpyDtoH_v2(out, va + 4 * MiB, sizeof out));
    assert_string_equal(out, "through the mapping");
    OK(cuMemUnmap(va, 8 * MiB));
    assert_true(tessel_fake_device_used(0) == 0);
    OK(cuMemAddressFree(va, 16 * MiB));

    /* Two mappings of one handle share memory; freeing the range unmaps. */
    OK(cuMemCreate(&h, 2 * MiB, &prop, 0));
    OK(cuMemAddressReserve(&va, 4 * MiB, 4 * MiB, 0, 0));
    assert_true(va % (4 * MiB) == 0);
    OK(cuMemMap(va, 2 * MiB, 0, h, 0));
    OK(cuMemMap(va + 2 * MiB, 2 * MiB, 0, h, 0));
    OK(cuMemSetAccess(va, 4 * MiB, &acc, 1));
    OK(cuMemsetD8_v2(va, 0x42, 16));
    OK(cuMemcpyDtoH_v2(out, va + 2 * MiB, 16));
    assert_int_equal(out[15], 0x42);
    OK(cuMemRelease(h));
    assert_int_equal(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);
    assert_true(tessel_fake_device_used(0) == 2 * MiB);
    OK(cuMemAddressFree(va, 4 * MiB));
    assert_true(tessel_fake_device_used(0) == 0);

    /* VMM respects the device size. */
    assert_int_equal(cuMemCreate(&h, 1026 * MiB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
    prop.location.id = 3;
    assert_int_equal(cuMemCreate(&h, 2 * MiB, &prop, 0), CUDA_ERROR_INVALID_DEVICE);
}

static void test_arrays(void **state)
{
    start("A:1G", "0");
    primary(0);
    CUDA_ARRAY_DESCRIPTOR d2 = {1000, 100, CU_AD_FORMAT_FLOAT, 4};
    CUarray a, b, c;
    OK(cuArrayCreate_v2(&a, &d2));
    /* rows: 1000*4*4 = 16000 B padded to 16384; x100 rows */
    assert_true(tessel_fake_device_used(0) == 16384 * 100);
    CUDA_ARRAY_DESCRIPTOR got;
    OK(cuArrayGetDescriptor_v2(&got, a));
    assert_true(got.Width == 1000 && got.Height == 100 && got.NumChannels == 4);
    CUDA_ARRAY3D_DESCRIPTOR d3 = {64, 64, 64, CU_AD_FORMAT_UNSIGNED_INT8, 1, 0};
    OK(cuArray3DCreate_v2(&b, &d3));
    assert_true(tessel_fake_device_used(0) == 16384 * 100 + 512 * 64 * 64);
    CUDA_ARRAY_DESCRIPTOR_v1 d1 = {10, 0, CU_AD_FORMAT_HALF, 2}; /* 1D: 40 B -> one 512 B row */
    OK(cuArrayCreate(&c, &d1));
    assert_true(tessel_fake_device_used(0) == 16384 * 100 + 512 * 64 * 64 + 512);
    OK(cuArrayDestroy(a));
    OK(cuArrayDestroy(b));
    OK(cuArrayDestroy(c));
    assert_int_equal(cuArrayDestroy(c), CUDA_ERROR_INVALID_HANDLE);
    assert_true(tessel_fake_device_used(0) == 0);
    CUDA_ARRAY_DESCRIPTOR badc = {10, 10, CU_AD_FORMAT_FLOAT, 3};
    assert_int_equal(cuArrayCreate_v2(&a, &badc), CUDA_ERROR_INVALID_VALUE);
    CUDA_ARRAY3D_DESCRIPTOR badh = {10, 0, 5, CU_AD_FORMAT_FLOAT, 1, 0};
    assert_int_equal(cuArray3DCreate_v2(&a, &badh), CUDA_ERROR_INVALID_VALUE);

    /* Mip levels: 1024x1024 RGBA8 -> rows of 4096 B at level 0, halving. */
    CUDA_ARRAY3D_DESCRIPTOR m = {1024, 1024, 0, CU_AD_FORMAT_UNSIGNED_INT8, 4, 0};
    unsigned long long want = 0;
    for (unsigned l = 0, w = 1024; l<11; l++, w = w> 1 ? w / 2 : 1) {
        unsigned long long row = ((unsigned long long)w * 4 + 511) / 512 * 512;
        want += row * w;
    }
    assert_true(tessel_fake_array_bytes(&m, 11) == want);
    CUmipmappedArray mm;
    OK(cuMipmappedArrayCreate(&mm, &m, 11));
    assert_true(tessel_fake_device_used(0) == want); /* a multiple of 512 already */
    assert_int_equal(cuMipmappedArrayCreate(&mm, &m, 12), CUDA_ERROR_INVALID_VALUE);
    OK(cuMipmappedArrayDestroy(mm));
    assert_true(tessel_fake_device_used(0) == 0);
    /* Arrays die with their context. */
    OK(cuArrayCreate_v2(&a, &d2));
    OK(cuDevicePrimaryCtxReset_v2(0));
    assert_true(tessel_fake_device_used(0) == 0);
}

static void test_shared_state(void **state)
{
    char path[] = "/tmp/tessel-fake-state-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    unlink(path); /* the fake creates it */
    tessel_fake_reset();
    clear_env();
    setenv("TESSEL_FAKE_STATE", path, 1);
    setenv("TESSEL_FAKE_GPUS", "A:1G", 1);
    setenv("TESSEL_FAKE_CTX_MEM", "100M", 1);
    int go[2], done[2], ready[2];
    assert_int_equal(pipe(go), 0);
    assert_int_equal(pipe(done), 0);
    assert_int_equal(pipe(ready), 0);
    /* The second process is forked before the first initialises CUDA: a
     * child of an initialised process could not use CUDA at all. */
    pid_t kid = fork();
    if (kid == 0) {
        alarm(30); /* never outlive a failed parent */
        char r;
        if (read(ready[0], &r, 1) != 1)
            _exit(3);
        /* A second process sees the first one's use as the device's. */
        int rc = cuInit(0);
        CUcontext c;
        rc |= cuDevicePrimaryCtxRetain(&c, 0) | cuCtxSetCurrent(c);
        size_t fr = 0, tot = 0;
        rc |= cuMemGetInfo_v2(&fr, &tot);
        int ok = rc == 0 && fr == GiB - 400 * MiB; /* 2 contexts + 200M */
        CUdeviceptr q;
        ok &= cuMemAlloc_v2(&q, 700 * MiB) == CUDA_ERROR_OUT_OF_MEMORY;
        ok &= cuMemAlloc_v2(&q, 600 * MiB) == CUDA_SUCCESS;
        char c1 = ok ? 'y' : 'n';
        if (write(done[1], &c1, 1) != 1 || read(go[0], &c1, 1) != 1)
            _exit(2);
        _exit(ok ? 0 : 1); /* dies holding 700M without cleaning up, like a crash */
    }
    OK(cuInit(0));
    primary(0);
    CUdeviceptr p;
    OK(cuMemAlloc_v2(&p, 200 * MiB));
    assert_int_equal(write(ready[1], "r", 1), 1);
    close(done[1]);
    close(go[0]);
    char c1 = 0;
    if (read(done[0], &c1, 1) != 1) {
        int st;
        waitpid(kid, &st, 0);
        fail_msg("child died: status %#x", st);
    }
    assert_int_equal(c1, 'y');
    assert_true(tessel_fake_device_used(0) == 1000 * MiB);
    assert_true(tessel_fake_process_used(0) == 300 * MiB);
    assert_true(tessel_fake_pid_used(0, kid) == 700 * MiB);
    assert_true(tessel_fake_pid_used(0, getpid()) == 300 * MiB);
    /* Another tenant's memory, without a process: */
    assert_int_equal(tessel_fake_occupy(0, 24 * MiB), 0);
    assert_int_equal(tessel_fake_occupy(0, 1), -1); /* the device is full */
    size_t fr = 1, tot = 0;
    OK(cuMemGetInfo_v2(&fr, &tot));
    assert_true(fr == 0);
    assert_int_equal(tessel_fake_occupy(0, -(long long)(24 * MiB)), 0);
    assert_int_equal(write(go[1], "x", 1), 1);
    int st;
    assert_int_equal(waitpid(kid, &st, 0), kid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    /* A dead process's memory goes back to the device. */
    assert_true(tessel_fake_device_used(0) == 300 * MiB);
    OK(cuMemFree_v2(p));
    tessel_fake_reset();
    clear_env();
    close(go[1]);
    close(done[0]);
    unlink(path);
}

static void test_counters(void **state)
{
    start("A:1G", "0");
    tessel_fake_reset_calls();
    assert_int_equal(tessel_fake_calls_total(), 0);
    primary(0);
    CUdeviceptr p;
    OK(cuMemAlloc_v2(&p, 1));
    OK(cuMemFree_v2(p));
    assert_int_equal(tessel_fake_calls("cuDevicePrimaryCtxRetain"), 1);
    assert_int_equal(tessel_fake_calls("cuCtxSetCurrent"), 1);
    assert_int_equal(tessel_fake_calls("cuMemAlloc_v2"), 1);
    assert_int_equal(tessel_fake_calls("cuMemFree_v2"), 1);
    assert_int_equal(tessel_fake_calls_total(), 4);
    assert_int_equal(tessel_fake_calls("nonsense"), 0);
    const char **names;
    int n = tessel_fake_entry_points(&names);
    assert_true(n > 150);
    int seen = 0;
    for (int i = 0; i < n; i++)
        seen += strcmp(names[i], "cuMemcpyHtoD_v2_ptds") == 0;
    assert_int_equal(seen, 1);

    /* TESSEL_FAKE_CALLS_FILE: written at exit, one "name count" line each. */
    char path[] = "/tmp/tessel-fake-calls-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    pid_t kid = fork();
    if (kid == 0) {
        setenv("TESSEL_FAKE_CALLS_FILE", path, 1);
        tessel_fake_reset_calls();
        cuMemAlloc_v2(&p, 1);
        cuMemAlloc_v2(&p, 1);
        cuGetErrorName(CUDA_SUCCESS, (const char **)&names);
        exit(0);
    }
    int st;
    assert_int_equal(waitpid(kid, &st, 0), kid);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char text[512] = "";
    size_t len = fread(text, 1, sizeof text - 1, f);
    text[len] = '\0';
    fclose(f);
    unlink(path);
    assert_non_null(strstr(text, "cuMemAlloc_v2 2\n"));
    assert_non_null(strstr(text, "cuGetErrorName 1\n"));
}

/* Eight threads allocate, copy, launch and free at once on two devices. */
static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg, bad = 0;
    CUcontext c;
    bad |= cuDevicePrimaryCtxRetain(&c, id % 2) | cuCtxSetCurrent(c);
    CUstream s;
    CUmodule m;
    CUfunction f;
    CUevent e;
    bad |= cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) | cuModuleLoadData(&m, "x") |
           cuModuleGetFunction(&f, m, "fake_kernel_10us") | cuEventCreate(&e, 0);
    for (int i = 0; i < 200 && !bad; i++) {
        size_t size = (size_t)(1 + (i * 7919 + id * 104729) % (3 * MiB));
        CUdeviceptr p, q;
        bad |= cuMemAlloc_v2(&p, size) | cuMemAllocAsync(&q, size, s);
        bad |= cuMemsetD8_v2(p, (unsigned char)id, size) | cuMemcpyDtoD_v2(q, p, size);
        unsigned char last = 0;
        bad |= cuMemcpyDtoH_v2(&last, q + size - 1, 1);
        bad |= last != (unsigned char)id;
        bad |= cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL) | cuEventRecord(e, s);
        bad |= cuMemFreeAsync(q, s) | cuMemFree_v2(p);
        if (i % 50 == 0)
            bad |= cuStreamSynchronize(s) | cuEventQuery(e);
    }
    bad |= cuStreamSynchronize(s) | cuEventDestroy_v2(e) | cuModuleUnload(m) |
           cuStreamDestroy_v2(s) | cuDevicePrimaryCtxRelease_v2(id % 2);
    return (void *)(intptr_t)bad;
}

static void test_threads(void **state)
{
    start("2xA:1G", "100M");
    CUcontext keep[2];
    OK(cuDevicePrimaryCtxRetain(&keep[0], 0));
    OK(cuDevicePrimaryCtxRetain(&keep[1], 1));
    pthread_t t[8];
    for (int i = 0; i < 8; i++)
        assert_int_equal(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i), 0);
    for (int i = 0; i < 8; i++) {
        void *r;
        assert_int_equal(pthread_join(t[i], &r), 0);
        assert_null(r);
    }
    assert_int_equal(tessel_fake_device_kernels(0), 800);
    assert_int_equal(tessel_fake_device_kernels(1), 800);
    assert_true(tessel_fake_device_busy_ns(0) == 800 * 10000ull);
    CUmemoryPool pool;
    for (int d = 0; d < 2; d++) {
        OK(cuDeviceGetDefaultMemPool(&pool, d));
        OK(cuMemPoolTrimTo(pool, 0));
        /* only the retained contexts remain */
        assert_true(tessel_fake_device_used(d) == 100 * MiB);
    }
    assert_int_equal(tessel_fake_calls("cuMemAlloc_v2"), 1600);
    assert_int_equal(tessel_fake_calls("cuMemFreeAsync"), 1600);
}

static void test_errors_strings(void **state)
{
    const char *s = NULL;
    OK(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &s));
    assert_string_equal(s, "CUDA_ERROR_OUT_OF_MEMORY");
    OK(cuGetErrorString(CUDA_ERROR_NOT_READY, &s));
    assert_string_equal(s, "device not ready");
    assert_int_equal(cuGetErrorName((CUresult)12345, &s), CUDA_ERROR_INVALID_VALUE);
    const void *tbl = (const void *)1;
    CUuuid id = {{0}};
    assert_int_equal(cuGetExportTable(&tbl, &id), CUDA_ERROR_NOT_SUPPORTED);
    assert_null(tbl);
}

/* Fork: a child of a process that initialised CUDA cannot use it (every
 * call, cuInit included, fails with CUDA_ERROR_NOT_INITIALIZED, as on the
 * real driver); a child of a process that never did initialises as usual. */
static int child_init_rc(void)
{
    pid_t kid = fork();
    if (kid == 0) {
        int n = -1;
        CUresult a = cuInit(0), b = cuDeviceGetCount(&n), c = cuInit(0);
        /* exit code: 0 = all three succeeded, 3 = all three refused */
        _exit(a == b && b == c && (a == 0 || a == CUDA_ERROR_NOT_INITIALIZED) ? (int)a : 99);
    }
    int st = 0;
    assert_int_equal(waitpid(kid, &st, 0), kid);
    assert_true(WIFEXITED(st));
    return WEXITSTATUS(st);
}

static void test_fork_rule(void **state)
{
    tessel_fake_reset();
    clear_env();
    assert_int_equal(child_init_rc(), CUDA_SUCCESS); /* parent never initialised */
    OK(cuInit(0));
    assert_int_equal(child_init_rc(), CUDA_ERROR_NOT_INITIALIZED);
    primary(0); /* the parent keeps working */
    CUdeviceptr p;
    OK(cuMemAlloc_v2(&p, 1 * MiB));
    OK(cuMemFree_v2(p));
}

/* Context costs per device and per kind (primary / cuCtxCreate). */
static void test_ctx_costs(void **state)
{
    tessel_fake_reset();
    clear_env();
    setenv("TESSEL_FAKE_GPUS", "2xA:8G", 1);
    setenv("TESSEL_FAKE_CTX_MEM", "600M,500M", 1);
    setenv("TESSEL_FAKE_CTX_MEM_CREATED", "90M,80M", 1);
    OK(cuInit(0));
    primary(0);
    assert_true(tessel_fake_process_used(0) == 600 * MiB);
    CUcontext c;
    OK(cuCtxCreate_v2(&c, 0, 0));
    assert_true(tessel_fake_process_used(0) == 690 * MiB);
    OK(cuCtxDestroy_v2(c));
    OK(cuCtxCreate_v2(&c, 0, 1));
    assert_true(tessel_fake_process_used(1) == 80 * MiB);
    OK(cuCtxDestroy_v2(c));
    primary(1);
    assert_true(tessel_fake_process_used(1) == 500 * MiB);
}

/* Module memory: the module's code at load, each function's at its first
 * use (lazy loading), all of it back at unload or with the context; a
 * module that does not fit the device is refused with nothing spent. */
/* Libraries and kernels (CUDA 12.0, lazy loading): a library is charged as a module at load and
 * given back at unload; its kernels are named functions that cost nothing until their first
 * launch; cuKernelGetFunction gives a handle cuLaunchKernel takes; the argument checks. */
static void test_library(void **state)
{
    (void)state;
    tessel_fake_reset();
    clear_env();
    setenv("TESSEL_FAKE_GPUS", "A:1G", 1);
    setenv("TESSEL_FAKE_CTX_MEM", "100M", 1);
    setenv("TESSEL_FAKE_MODULE_MEM", "40M", 1);
    setenv("TESSEL_FAKE_FUNC_MEM", "3M", 1);
    setenv("TESSEL_FAKE_LAUNCH_MEM", "5M", 1);
    OK(cuInit(0));
    CUlibrary lib = NULL, lib2 = NULL;
    CUkernel k = NULL, k2 = NULL;
    CUfunction f = NULL;
    CUmodule m = NULL;
    /* Loaded with no context current: context-independent, nothing spent until its first use
     * in a context, which loads its module there (TESSEL_FAKE_MODULE_MEM), once a context. */
    CUlibrary ind = NULL;
    CUdeviceptr gp = 0;
    size_t gsz = 0;
    OK(cuLibraryLoadData(&ind, "image", NULL, NULL, 0, NULL, NULL, 0));
    assert_int_equal(cuLibraryGetModule(&m, ind), CUDA_ERROR_INVALID_CONTEXT);
    assert_int_equal(cuLibraryGetGlobal(&gp, &gsz, ind, "w"), CUDA_ERROR_INVALID_CONTEXT);
    primary(0);
    assert_true(tessel_fake_process_used(0) == 100 * MiB);
    assert_int_equal(cuLibraryGetGlobal(&gp, &gsz, ind, "w"), CUDA_ERROR_NOT_FOUND);
    assert_true(tessel_fake_process_used(0) == 140 * MiB);
    OK(cuLibraryGetModule(&m, ind));
    assert_int_equal(cuLibraryGetManaged(&gp, &gsz, ind, "t"), CUDA_ERROR_NOT_FOUND);
    assert_int_equal(cuLibraryGetGlobal(&gp, &gsz, ind, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuLibraryGetGlobal(&gp, &gsz, (CUlibrary)&gp, "w"), CUDA_ERROR_INVALID_HANDLE);
    assert_true(tessel_fake_process_used(0) == 140 * MiB); /* once a context */
    OK(cuLibraryUnload(ind));
    assert_true(tessel_fake_process_used(0) == 100 * MiB);
    assert_int_equal(cuLibraryLoadData(NULL, "image", NULL, NULL, 0, NULL, NULL, 0),
                     CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuLibraryLoadData(&lib, NULL, NULL, NULL, 0, NULL, NULL, 0),
                     CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuLibraryLoadData(&lib, "image", NULL, NULL, 1, NULL, NULL, 0),
                     CUDA_ERROR_INVALID_VALUE);
    CUlibraryOption bad = CU_LIBRARY_NUM_OPTIONS, keep = CU_LIBRARY_BINARY_IS_PRESERVED;
    void *one = (void *)1;
    assert_int_equal(cuLibraryLoadData(&lib, "image", NULL, NULL, 0, &bad, &one, 1),
                     CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuLibraryLoadFromFile(&lib, "/dev/null", NULL, NULL, 0, &keep, &one, 1),
                     CUDA_ERROR_INVALID_VALUE); /* preserved: an image in memory only */
    assert_int_equal(
        cuLibraryLoadFromFile(&lib, "/nonexistent/lib.cubin", NULL, NULL, 0, NULL, NULL, 0),
        CUDA_ERROR_FILE_NOT_FOUND);
    assert_int_equal(cuLibraryLoadFromFile(&lib, NULL, NULL, NULL, 0, NULL, NULL, 0),
                     CUDA_ERROR_INVALID_VALUE);
    assert_true(tessel_fake_process_used(0) == 100 * MiB); /* nothing spent */
    OK(cuLibraryLoadData(&lib, "image", NULL, NULL, 0, &keep, &one, 1));
    assert_true(tessel_fake_process_used(0) == 140 * MiB);
    OK(cuLibraryLoadFromFile(&lib2, "/dev/null", NULL, NULL, 0, NULL, NULL, 0));
    assert_true(tessel_fake_process_used(0) == 180 * MiB);
    /* Kernels: named, found again, nothing charged until the first launch. */
    assert_int_equal(cuLibraryGetKernel(NULL, lib, "k"), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuLibraryGetKernel(&k, lib, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuLibraryGetKernel(&k, (CUlibrary)&k, "k"), CUDA_ERROR_INVALID_HANDLE);
    OK(cuLibraryGetKernel(&k, lib, "fake_kernel_1us"));
    OK(cuLibraryGetKernel(&k2, lib, "fake_kernel_1us"));
    assert_ptr_equal(k, k2);
    assert_true(tessel_fake_process_used(0) == 180 * MiB);
    assert_int_equal(cuKernelGetFunction(NULL, k), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuKernelGetFunction(&f, (CUkernel)lib), CUDA_ERROR_INVALID_HANDLE);
    OK(cuKernelGetFunction(&f, k));
    OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    OK(cuCtxSynchronize());
    assert_true(tessel_fake_process_used(0) == 185 * MiB); /* the kernel's code, at launch */
    /* A module's function is no kernel, a kernel's library no module to cuModuleUnload. */
    CUmodule mm;
    CUfunction mf;
    OK(cuModuleLoadData(&mm, "image"));
    OK(cuModuleGetFunction(&mf, mm, "k"));
    assert_int_equal(cuKernelGetFunction(&f, (CUkernel)mf), CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(cuLibraryUnload((CUlibrary)mm), CUDA_ERROR_INVALID_HANDLE);
    OK(cuModuleUnload(mm));
    assert_true(tessel_fake_process_used(0) == 185 * MiB);
    assert_int_equal(cuLibraryGetModule(NULL, lib), CUDA_ERROR_INVALID_VALUE);
    OK(cuLibraryGetModule(&m, lib));
    assert_non_null(m);
    assert_int_equal(cuModuleUnload(m), CUDA_ERROR_INVALID_HANDLE);
    /* Attributes: read, and the two that can be set. */
    int v = -5;
    OK(cuKernelGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k, 0));
    assert_int_equal(v, 1024);
    OK(cuKernelGetAttribute(&v, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, k, 0));
    assert_int_equal(v, -1);
    assert_int_equal(cuKernelGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, k, 1),
                     CUDA_ERROR_INVALID_DEVICE);
    assert_int_equal(cuKernelGetAttribute(NULL, CU_FUNC_ATTRIBUTE_NUM_REGS, k, 0),
                     CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuKernelGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX, k, 0),
                     CUDA_ERROR_INVALID_VALUE);
    OK(cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 96 * 1024, k, 0));
    OK(cuKernelGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, k, 0));
    assert_int_equal(v, 96 * 1024);
    OK(cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 50, k, 0));
    OK(cuKernelGetAttribute(&v, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, k, 0));
    assert_int_equal(v, 50);
    assert_int_equal(cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_NUM_REGS, 8, k, 0),
                     CUDA_ERROR_INVALID_VALUE); /* read only */
    assert_int_equal(
        cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 101, k, 0),
        CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 0, k, 3),
                     CUDA_ERROR_INVALID_DEVICE);
    /* Unload: everything back, the handles stale. */
    OK(cuLibraryUnload(lib));
    assert_true(tessel_fake_process_used(0) == 140 * MiB);
    assert_int_equal(cuLibraryUnload(lib), CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(cuKernelGetFunction(&f, k), CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL),
                     CUDA_ERROR_INVALID_HANDLE);
    OK(cuLibraryUnload(lib2));
    assert_true(tessel_fake_process_used(0) == 100 * MiB);
    /* Looked up through cuGetProcAddress at the version cuda.h 13 gives. */
    void *fn = NULL;
    CUdriverProcAddressQueryResult qr;
    OK(cuGetProcAddress_v2("cuLibraryGetKernel", &fn, 12000, 0, &qr));
    assert_ptr_equal(fn, (void *)cuLibraryGetKernel);
    OK(cuGetProcAddress_v2("cuKernelSetAttribute", &fn, 13000, 0, &qr));
    assert_ptr_equal(fn, (void *)cuKernelSetAttribute);
}

static void test_module_mem(void **state)
{
    tessel_fake_reset();
    clear_env();
    setenv("TESSEL_FAKE_GPUS", "A:1G", 1);
    setenv("TESSEL_FAKE_CTX_MEM", "100M", 1);
    setenv("TESSEL_FAKE_MODULE_MEM", "40M", 1);
    setenv("TESSEL_FAKE_FUNC_MEM", "3M", 1);
    OK(cuInit(0));
    primary(0);
    CUmodule m, m2;
    CUfunction f, f2;
    OK(cuModuleLoadData(&m, "image"));
    assert_true(tessel_fake_process_used(0) == 140 * MiB);
    OK(cuModuleGetFunction(&f, m, "fake_kernel_1us"));
    assert_true(tessel_fake_process_used(0) == 143 * MiB);
    OK(cuModuleGetFunction(&f2, m, "fake_kernel_1us")); /* loaded already */
    assert_ptr_equal(f, f2);
    assert_true(tessel_fake_process_used(0) == 143 * MiB);
    OK(cuModuleGetFunction(&f2, m, "fake_kernel_2us"));
    assert_true(tessel_fake_process_used(0) == 146 * MiB);
    OK(cuModuleLoadData(&m2, "image"));
    assert_true(tessel_fake_process_used(0) == 186 * MiB);
    OK(cuModuleUnload(m));
    assert_true(tessel_fake_process_used(0) == 140 * MiB);
    assert_int_equal(cuModuleUnload(m), CUDA_ERROR_INVALID_HANDLE);
    assert_true(tessel_fake_process_used(0) == 140 * MiB);
    /* Destroying the context frees its modules. */
    CUcontext c;
    OK(cuCtxCreate_v2(&c, 0, 0));
    assert_true(tessel_fake_process_used(0) == 240 * MiB);
    OK(cuModuleLoadData(&m, "image"));
    OK(cuModuleGetFunction(&f, m, "k"));
    assert_true(tessel_fake_process_used(0) == 283 * MiB);
    OK(cuCtxDestroy_v2(c));
    assert_true(tessel_fake_process_used(0) == 140 * MiB);
    /* Out of device memory: refused, nothing spent. */
    CUdeviceptr p;
    primary(0);
    OK(cuMemAlloc_v2(&p, 1024 * MiB - 140 * MiB - 20 * MiB));
    assert_int_equal(cuModuleLoadData(&m, "image"), CUDA_ERROR_OUT_OF_MEMORY);
    assert_true(tessel_fake_process_used(0) == 1004 * MiB);
    OK(cuMemFree_v2(p));
    OK(cuMemAlloc_v2(&p, 1024 * MiB - 140 * MiB - 2 * MiB));
    assert_int_equal(cuModuleGetFunction(&f, m2, "k"), CUDA_ERROR_OUT_OF_MEMORY);
    assert_true(tessel_fake_process_used(0) == 1022 * MiB);
    OK(cuMemFree_v2(p));
    OK(cuModuleGetFunction(&f, m2, "k"));
    assert_true(tessel_fake_process_used(0) == 143 * MiB);
}

/* Launch memory: a function's code loaded at its first launch (the CUDA runtime's kernels), once
 * per function, given back with its module; a first launch that does not fit the device fails
 * with nothing spent, and a later one may try again. */
static void test_launch_mem(void **state)
{
    tessel_fake_reset();
    clear_env();
    setenv("TESSEL_FAKE_GPUS", "A:1G", 1);
    setenv("TESSEL_FAKE_CTX_MEM", "100M", 1);
    setenv("TESSEL_FAKE_MODULE_MEM", "40M", 1);
    setenv("TESSEL_FAKE_LAUNCH_MEM", "32M", 1);
    OK(cuInit(0));
    primary(0);
    CUmodule m;
    CUfunction f, g;
    OK(cuModuleLoadData(&m, "image"));
    OK(cuModuleGetFunction(&f, m, "fake_kernel_1us"));
    OK(cuModuleGetFunction(&g, m, "fake_kernel_2us"));
    assert_true(tessel_fake_process_used(0) == 140 * MiB); /* nothing at the look-up */
    OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    assert_true(tessel_fake_process_used(0) == 172 * MiB);
    OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL)); /* loaded already */
    assert_true(tessel_fake_process_used(0) == 172 * MiB);
    CUdeviceptr p;
    OK(cuMemAlloc_v2(&p, 1024 * MiB - 172 * MiB - 16 * MiB));
    assert_int_equal(cuLaunchKernel(g, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL),
                     CUDA_ERROR_OUT_OF_MEMORY);
    assert_true(tessel_fake_process_used(0) == 1008 * MiB);
    OK(cuMemFree_v2(p));
    OK(cuLaunchKernel(g, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    assert_true(tessel_fake_process_used(0) == 204 * MiB);
    OK(cuCtxSynchronize());
    OK(cuModuleUnload(m));
    assert_true(tessel_fake_process_used(0) == 100 * MiB);
    (void)state;
}

/* A kernel captured into a graph or added as a node is not run: nothing is placed until the
 * graph is instantiated, which places every kernel node's code and a context-independent
 * library's module (once a context), through each instantiation entry point; a graph whose
 * kernel's library was unloaded since is refused; no room: CUDA_ERROR_OUT_OF_MEMORY, no graph. */
static void test_graph_place(void **state)
{
    tessel_fake_reset();
    clear_env();
    setenv("TESSEL_FAKE_GPUS", "A:1G", 1);
    setenv("TESSEL_FAKE_CTX_MEM", "100M", 1);
    setenv("TESSEL_FAKE_MODULE_MEM", "40M", 1);
    setenv("TESSEL_FAKE_LAUNCH_MEM", "32M", 1);
    OK(cuInit(0));
    CUlibrary lib;
    CUkernel k;
    OK(cuLibraryLoadData(&lib, "image", NULL, NULL, 0, NULL, NULL, 0)); /* no context current */
    OK(cuLibraryGetKernel(&k, lib, "fake_kernel_1us"));
    primary(0);
    CUstream s;
    OK(cuStreamCreate(&s, 0));
    CUgraph gr = NULL;
    CUgraphExec x = NULL, x2 = NULL;
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuLaunchKernel((CUfunction)k, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
    OK(cuStreamEndCapture(s, &gr));
    assert_true(tessel_fake_process_used(0) == 100 * MiB); /* captured: nothing placed */
    OK(cuGraphInstantiateWithFlags(&x, gr, 0));
    assert_true(tessel_fake_process_used(0) == 172 * MiB); /* the library and the code */
    CUDA_GRAPH_INSTANTIATE_PARAMS ip = {.flags = 2, .hUploadStream = s};
    OK(cuGraphInstantiateWithParams(&x2, gr, &ip)); /* placed already */
    assert_int_equal(ip.result_out, CUDA_GRAPH_INSTANTIATE_SUCCESS);
    assert_true(tessel_fake_process_used(0) == 172 * MiB);
    assert_int_equal(cuGraphInstantiateWithParams(&x2, gr, NULL), CUDA_ERROR_INVALID_VALUE);
    OK(cuGraphLaunch(x, s));
    OK(cuStreamSynchronize(s));
    /* A second library's kernel put into the executable graph: placed then, in its context. */
    CUlibrary lib2;
    CUkernel k2;
    CUgraphNode nd = NULL;
    size_t nn = 1;
    CUcontext pc = NULL;
    OK(cuCtxGetCurrent(&pc));
    OK(cuCtxSetCurrent(NULL));
    OK(cuLibraryLoadData(&lib2, "image", NULL, NULL, 0, NULL, NULL, 0)); /* no context current */
    OK(cuLibraryGetKernel(&k2, lib2, "fake_kernel_2us"));
    OK(cuCtxSetCurrent(pc));
    OK(cuGraphGetNodes(gr, &nd, &nn));
    CUDA_KERNEL_NODE_PARAMS kp = {.func = (CUfunction)k2,
                                  .gridDimX = 1,
                                  .gridDimY = 1,
                                  .gridDimZ = 1,
                                  .blockDimX = 1,
                                  .blockDimY = 1,
                                  .blockDimZ = 1};
    OK(cuGraphExecKernelNodeSetParams_v2(x, nd, &kp));
    assert_true(tessel_fake_process_used(0) == 244 * MiB); /* its module and code */
    CUgraphExecUpdateResultInfo info;
    OK(cuGraphExecUpdate_v2(x, gr, &info)); /* back to the first kernel: placed already */
    assert_int_equal(info.result, CU_GRAPH_EXEC_UPDATE_SUCCESS);
    assert_true(tessel_fake_process_used(0) == 244 * MiB);
    assert_int_equal(cuGraphExecChildGraphNodeSetParams(x, nd, gr), CUDA_ERROR_NOT_SUPPORTED);
    OK(cuLibraryUnload(lib2));
    assert_true(tessel_fake_process_used(0) == 172 * MiB);
    OK(cuGraphExecDestroy(x));
    OK(cuGraphExecDestroy(x2));
    assert_true(tessel_fake_process_used(0) == 172 * MiB); /* the library stays in the context */
    /* The library unloaded: its kernel's node names a function that is gone. */
    OK(cuLibraryUnload(lib));
    assert_true(tessel_fake_process_used(0) == 100 * MiB);
    assert_int_equal(cuGraphInstantiate_v2(&x, gr, NULL, NULL, 0), CUDA_ERROR_INVALID_VALUE);
    OK(cuGraphDestroy(gr));
    /* No room for the kernel's code at the instantiation: refused, no graph made. */
    OK(cuLibraryLoadData(&lib, "image", NULL, NULL, 0, NULL, NULL, 0));
    OK(cuLibraryGetKernel(&k, lib, "fake_kernel_1us"));
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuLaunchKernel((CUfunction)k, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
    OK(cuStreamEndCapture(s, &gr));
    assert_true(tessel_fake_process_used(0) == 140 * MiB); /* loaded in the current context */
    CUdeviceptr p;
    OK(cuMemAlloc_v2(&p, 1024 * MiB - 140 * MiB - 16 * MiB));
    x = NULL;
    assert_int_equal(cuGraphInstantiate(&x, gr, NULL, NULL, 0), CUDA_ERROR_OUT_OF_MEMORY);
    assert_null(x);
    OK(cuMemFree_v2(p));
    OK(cuGraphInstantiate(&x, gr, NULL, NULL, 0));
    assert_true(tessel_fake_process_used(0) == 172 * MiB);
    OK(cuGraphExecDestroy(x));
    OK(cuGraphDestroy(gr));
    OK(cuStreamDestroy_v2(s));
    OK(cuLibraryUnload(lib));
    (void)state;
}

/* cuCtxSetLimit: the stack (per resident thread: SMs x 2048), printf FIFO
 * and malloc heap sizes are charged by their difference to the current size
 * on the context; refused with nothing changed past the device; given back
 * with the context. */
static void test_ctx_limits(void **state)
{
    tessel_fake_reset();
    clear_env();
    setenv("TESSEL_FAKE_GPUS", "A:2G:10", 1);
    setenv("TESSEL_FAKE_CTX_MEM", "100M", 1);
    OK(cuInit(0));
    size_t v = 0;
    assert_int_equal(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 1), CUDA_ERROR_INVALID_CONTEXT);
    CUcontext c;
    OK(cuCtxCreate_v2(&c, 0, 0));
    OK(cuCtxGetLimit(&v, CU_LIMIT_MALLOC_HEAP_SIZE));
    assert_int_equal(v, 8 * MiB);
    OK(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 108 * MiB));
    assert_true(tessel_fake_process_used(0) == 200 * MiB);
    OK(cuCtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE, 11 * MiB));
    assert_true(tessel_fake_process_used(0) == 210 * MiB);
    OK(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 1024 + 512)); /* +512 B x 10 SMs x 2048 threads */
    assert_true(tessel_fake_process_used(0) == 220 * MiB);
    OK(cuCtxGetLimit(&v, CU_LIMIT_STACK_SIZE));
    assert_int_equal(v, 1536);
    OK(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 8 * MiB)); /* shrinking gives back */
    assert_true(tessel_fake_process_used(0) == 120 * MiB);
    assert_int_equal(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 3 * GiB), CUDA_ERROR_OUT_OF_MEMORY);
    OK(cuCtxGetLimit(&v, CU_LIMIT_MALLOC_HEAP_SIZE));
    assert_int_equal(v, 8 * MiB);
    assert_true(tessel_fake_process_used(0) == 120 * MiB);
    assert_int_equal(cuCtxSetLimit((CUlimit)99, 1), CUDA_ERROR_INVALID_VALUE);
    OK(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 58 * MiB));
    OK(cuCtxDestroy_v2(c));
    assert_true(tessel_fake_process_used(0) == 0);
}

/* Stream memory operations: words written (v1, _v2, _ptsz), waits met or not, batches checked
 * whole before anything is written; misaligned, foreign or unknown-flag operations refused with
 * nothing written; a capturing stream refuses them. */
static void test_stream_memops(void **state)
{
    start("A:1G", "0");
    primary(0);
    CUdeviceptr a;
    OK(cuMemAlloc_v2(&a, 4096));
    OK(cuMemsetD8_v2(a, 0, 4096));
    uint32_t w32[4];
    uint64_t w64;
    OK(cuStreamWriteValue32_v2(NULL, a, 0x11111111u, 0));
    OK(cuStreamWriteValue32(NULL, a + 4, 0x22222222u, CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER));
    OK(cuStreamWriteValue32_v2_ptsz(CU_STREAM_PER_THREAD, a + 8, 0x33333333u, 0));
    OK(cuStreamWriteValue64_v2(NULL, a + 16, 0x4444444455555555ull, 0));
    OK(cuMemcpyDtoH_v2(w32, a, sizeof w32));
    OK(cuMemcpyDtoH_v2(&w64, a + 16, 8));
    assert_int_equal(w32[0], 0x11111111u);
    assert_int_equal(w32[1], 0x22222222u);
    assert_int_equal(w32[2], 0x33333333u);
    assert_int_equal(w32[3], 0);
    assert_true(w64 == 0x4444444455555555ull);
    /* Refused, nothing written: misaligned, outside device memory, v2 with the v1-only flag,
     * unknown flags. */
    assert_int_equal(cuStreamWriteValue32_v2(NULL, a + 2, 9, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuStreamWriteValue64_v2(NULL, a + 4, 9, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuStreamWriteValue32_v2(NULL, a + 4096, 9, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuStreamWriteValue32_v2(NULL, (CUdeviceptr)(uintptr_t)w32, 9, 0),
                     CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuStreamWriteValue32_v2(NULL, a, 9, CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER),
                     CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuStreamWaitValue32_v2(NULL, a, 0, 4), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemcpyDtoH_v2(w32, a, sizeof w32));
    assert_int_equal(w32[0], 0x11111111u);
    /* Waits: each condition, met and not met (not modelled: NOT_SUPPORTED). */
    OK(cuStreamWaitValue32_v2(NULL, a, 0x11111111u, CU_STREAM_WAIT_VALUE_EQ));
    OK(cuStreamWaitValue32(NULL, a, 0x11111110u, CU_STREAM_WAIT_VALUE_GEQ));
    OK(cuStreamWaitValue32_ptsz(NULL, a, 0x1u, CU_STREAM_WAIT_VALUE_AND));
    OK(cuStreamWaitValue32_v2(NULL, a + 12, 0x0u, CU_STREAM_WAIT_VALUE_NOR));
    OK(cuStreamWaitValue64_v2_ptsz(NULL, a + 16, 0x4444444455555555ull,
                                   CU_STREAM_WAIT_VALUE_EQ | CU_STREAM_WAIT_VALUE_FLUSH));
    assert_int_equal(cuStreamWaitValue32_v2(NULL, a, 0x11111112u, CU_STREAM_WAIT_VALUE_GEQ),
                     CUDA_ERROR_NOT_SUPPORTED);
    assert_int_equal(cuStreamWaitValue32_v2(NULL, a, 0x2u, CU_STREAM_WAIT_VALUE_AND),
                     CUDA_ERROR_NOT_SUPPORTED);
    assert_int_equal(cuStreamWaitValue64(NULL, a + 16, 1, CU_STREAM_WAIT_VALUE_EQ),
                     CUDA_ERROR_NOT_SUPPORTED);
    /* GEQ is cyclic: 1 is "after" 0xffffffff. */
    OK(cuStreamWriteValue32_v2(NULL, a + 12, 1, 0));
    OK(cuStreamWaitValue32_v2(NULL, a + 12, 0xffffffffu, CU_STREAM_WAIT_VALUE_GEQ));
    /* A batch: a write, a wait for it (met by the batch's own write), a 64-bit write, a barrier
     * (_v2 only). */
    CUstreamBatchMemOpParams b[4];
    memset(b, 0, sizeof b);
    b[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
    b[0].writeValue.address = a + 32;
    b[0].writeValue.value = 77;
    b[1].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
    b[1].waitValue.address = a + 32;
    b[1].waitValue.value = 77;
    b[1].waitValue.flags = CU_STREAM_WAIT_VALUE_EQ;
    b[2].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
    b[2].writeValue.address = a + 40;
    b[2].writeValue.value64 = 0x0102030405060708ull;
    b[3].memoryBarrier.operation = CU_STREAM_MEM_OP_BARRIER;
    assert_int_equal(cuStreamBatchMemOp(NULL, 4, b, 0), CUDA_ERROR_INVALID_VALUE); /* v1 */
    OK(cuMemcpyDtoH_v2(w32, a + 32, 4));
    assert_int_equal(w32[0], 0); /* nothing of a refused batch written */
    OK(cuStreamBatchMemOp_v2(NULL, 4, b, 0));
    OK(cuMemcpyDtoH_v2(w32, a + 32, 4));
    OK(cuMemcpyDtoH_v2(&w64, a + 40, 8));
    assert_int_equal(w32[0], 77);
    assert_true(w64 == 0x0102030405060708ull);
    /* A batch whose wait is not met, or one bad operation, or bad flags or count: nothing
     * written. */
    b[0].writeValue.value = 78;
    b[1].waitValue.value = 79;
    assert_int_equal(cuStreamBatchMemOp_v2_ptsz(NULL, 3, b, 0), CUDA_ERROR_NOT_SUPPORTED);
    b[1].waitValue.value = 78;
    b[2].writeValue.address = a + 41; /* misaligned */
    assert_int_equal(cuStreamBatchMemOp_v2(NULL, 3, b, 0), CUDA_ERROR_INVALID_VALUE);
    b[2].writeValue.address = a + 40;
    b[2].operation = (CUstreamBatchMemOpType)42;
    assert_int_equal(cuStreamBatchMemOp_v2(NULL, 3, b, 0), CUDA_ERROR_INVALID_VALUE);
    b[2].operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
    assert_int_equal(cuStreamBatchMemOp_v2(NULL, 3, b, 1), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuStreamBatchMemOp_v2(NULL, 256, b, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuStreamBatchMemOp_v2(NULL, 3, NULL, 0), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemcpyDtoH_v2(w32, a + 32, 4));
    assert_int_equal(w32[0], 77);
    OK(cuStreamBatchMemOp_ptsz(NULL, 0, NULL, 0)); /* nothing to do */
    /* A stream that captures refuses them; a bad stream is an invalid handle. */
    CUstream s;
    OK(cuStreamCreate(&s, 0));
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_int_equal(cuStreamWriteValue32_v2(s, a, 1, 0), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    assert_int_equal(cuStreamBatchMemOp_v2(s, 1, b, 0), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CUgraph gr;
    OK(cuStreamEndCapture(s, &gr));
    OK(cuGraphDestroy(gr));
    OK(cuStreamDestroy_v2(s));
    assert_int_equal(cuStreamWriteValue32_v2(s, a, 1, 0), CUDA_ERROR_INVALID_HANDLE);
    OK(cuMemFree_v2(a));
    assert_int_equal(tessel_fake_calls("cuStreamWriteValue32_v2"), 8);
    assert_int_equal(tessel_fake_calls("cuStreamBatchMemOp_v2"), 7);
}

/* The v1 (pre-3.2) asynchronous, 2D and 3D copies: 32-bit pointers and the v1 layouts, the same
 * copies as their _v2 forms (rows, slices, refusals). */
static void test_v1_copies(void **state)
{
    start("A:1G", "0");
    primary(0);
    CUdeviceptr_v1 a, b;
    OK(cuMemAlloc(&a, 8192));
    OK(cuMemAlloc(&b, 8192));
    unsigned char host[4096], back[4096];
    for (size_t i = 0; i < sizeof host; i++)
        host[i] = (unsigned char)(i * 7 + 1);
    OK(cuMemsetD8(a, 0, 8192));
    OK(cuMemcpyHtoDAsync(a, host, sizeof host, NULL));
    OK(cuMemcpyDtoDAsync(b, a, sizeof host, NULL));
    OK(cuMemcpyDtoHAsync(back, b, sizeof back, NULL));
    OK(cuStreamSynchronize(NULL));
    assert_memory_equal(back, host, sizeof host);
    assert_int_equal(cuMemcpyHtoDAsync(a + 8000, host, 4096, NULL), CUDA_ERROR_INVALID_VALUE);
    /* 2D: 3 rows of 100 bytes, 256 apart on the device, 100 apart on the host. */
    CUDA_MEMCPY2D_v1 c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = CU_MEMORYTYPE_HOST;
    c.srcHost = host;
    c.srcPitch = 100;
    c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c.dstDevice = a + 4096;
    c.dstPitch = 256;
    c.WidthInBytes = 100;
    c.Height = 3;
    OK(cuMemcpy2D(&c));
    OK(cuMemcpyDtoH(back, a + 4096, 612));
    for (int y = 0; y < 3; y++)
        assert_memory_equal(back + y * 256, host + y * 100, 100);
    assert_int_equal(back[100], 0); /* the gap between rows untouched */
    OK(cuMemcpy2DUnaligned(&c));
    OK(cuMemcpy2DAsync(&c, NULL));
    c.dstPitch = 50; /* rows overlap: refused */
    assert_int_equal(cuMemcpy2D(&c), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemcpy2D(NULL), CUDA_ERROR_INVALID_VALUE);
    /* 3D: 2 slices of 2 rows of 64 bytes, device to device, source offset by 1 row. */
    CUDA_MEMCPY3D_v1 d;
    memset(&d, 0, sizeof d);
    d.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    d.srcDevice = b;
    d.srcY = 1;
    d.srcPitch = 128;
    d.srcHeight = 3;
    d.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    d.dstDevice = a;
    d.dstPitch = 64;
    d.dstHeight = 2;
    d.WidthInBytes = 64;
    d.Height = 2;
    d.Depth = 2;
    OK(cuMemcpy3D(&d));
    OK(cuMemcpyDtoH(back, a, 256));
    /* Destination row r of slice z is source row 1 + r of slice z (3 rows of 128 apart). */
    for (int z = 0; z < 2; z++)
        for (int r = 0; r < 2; r++)
            assert_memory_equal(back + (z * 2 + r) * 64, host + (z * 3 + 1 + r) * 128, 64);
    OK(cuMemcpy3DAsync(&d, NULL));
    d.reserved0 = &d;
    assert_int_equal(cuMemcpy3D(&d), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemcpy3DAsync(NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemFree(a));
    OK(cuMemFree(b));
    assert_int_equal(tessel_fake_calls("cuMemcpy2D"), 3);
    assert_int_equal(tessel_fake_calls("cuMemcpy3D"), 2);
    assert_int_equal(tessel_fake_calls("cuMemcpy2D_v2"), 0);
}

/* 3D peer copies: the 3D copy with each device side's context named: live contexts required
 * (a host side's is not looked at), the slices copied, refusals with nothing written. */
static void test_copy3d_peer(void **state)
{
    start("2xA:1G", "0");
    CUcontext c1 = primary(1);
    CUdeviceptr b;
    OK(cuMemAlloc_v2(&b, 4096));
    OK(cuMemsetD8_v2(b, 0, 4096));
    CUcontext c0 = primary(0);
    unsigned char host[1024], back[1024];
    for (size_t i = 0; i < sizeof host; i++)
        host[i] = (unsigned char)(i * 3 + 2);
    CUDA_MEMCPY3D_PEER p;
    memset(&p, 0, sizeof p);
    p.srcMemoryType = CU_MEMORYTYPE_HOST;
    p.srcHost = host;
    p.srcPitch = 64;
    p.srcHeight = 4;
    p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    p.dstDevice = b;
    p.dstContext = c1; /* the other device's */
    p.dstPitch = 128;
    p.dstHeight = 2;
    p.WidthInBytes = 32;
    p.Height = 2;
    p.Depth = 2;
    OK(cuMemcpy3DPeer(&p));
    OK(cuMemcpyDtoH_v2(back, b, 512));
    /* Destination row r of slice z: source row r of slice z (4 rows of 64 per slice). */
    for (int z = 0; z < 2; z++)
        for (int r = 0; r < 2; r++)
            assert_memory_equal(back + (z * 2 + r) * 128, host + (z * 4 + r) * 64, 32);
    assert_int_equal(back[32], 0);
    OK(cuMemcpy3DPeer_ptds(&p));
    OK(cuMemcpy3DPeerAsync(&p, NULL));
    OK(cuMemcpy3DPeerAsync_ptsz(&p, CU_STREAM_PER_THREAD));
    p.dstContext = NULL;
    assert_int_equal(cuMemcpy3DPeer(&p), CUDA_ERROR_INVALID_CONTEXT);
    p.dstContext = (CUcontext)&p;
    assert_int_equal(cuMemcpy3DPeer(&p), CUDA_ERROR_INVALID_CONTEXT);
    p.dstContext = c0;
    p.dstLOD = 1;
    assert_int_equal(cuMemcpy3DPeer(&p), CUDA_ERROR_INVALID_VALUE);
    p.dstLOD = 0;
    p.Depth = 17; /* 17 slices of 256 bytes: past the 4 KiB allocation */
    memset(back, 0, sizeof back);
    OK(cuMemsetD8_v2(b, 0, 4096));
    assert_int_equal(cuMemcpy3DPeerAsync(&p, NULL), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemcpyDtoH_v2(back, b, sizeof back));
    for (size_t i = 0; i < sizeof back; i++)
        assert_int_equal(back[i], 0);
    assert_int_equal(cuMemcpy3DPeer(NULL), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemFree_v2(b));
    assert_int_equal(tessel_fake_calls("cuMemcpy3DPeer"), 5);
}

/* Batches of 1D copies: each copy done (v1 with failIdx, _v2, _ptsz); a batch refused whole
 * (bad attributes, a copy out of bounds: failIdx names it, the legacy stream) copies nothing. */
static void test_copy_batch(void **state)
{
    start("A:1G", "0");
    primary(0);
    CUdeviceptr a;
    OK(cuMemAlloc_v2(&a, 8192));
    OK(cuMemsetD8_v2(a, 0, 8192));
    CUstream s;
    OK(cuStreamCreate(&s, 0));
    unsigned char host[4096], back[8192];
    for (size_t i = 0; i < sizeof host; i++)
        host[i] = (unsigned char)(i * 5 + 3);
    CUdeviceptr dsts[3] = {a, a + 4096, a + 6000};
    CUdeviceptr srcs[3] = {(uintptr_t)host, (uintptr_t)(host + 100), a};
    size_t sizes[3] = {1000, 500, 1000};
    CUmemcpyAttributes at[2];
    memset(at, 0, sizeof at);
    at[0].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL;
    at[1].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    at[1].flags = CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE;
    size_t idx[2] = {0, 2}, fail = 7;
    /* The third copy reads what the first wrote only because the fake does them in order: not
     * promised by the driver, so the check below reads the first two only. */
    OK(cuMemcpyBatchAsync(dsts, srcs, sizes, 2, at, idx, 1, &fail, s));
    assert_true(fail == SIZE_MAX);
    OK(cuMemcpyDtoH_v2(back, a, sizeof back));
    assert_memory_equal(back, host, 1000);
    assert_memory_equal(back + 4096, host + 100, 500);
    assert_int_equal(back[1000], 0);
    OK(cuMemcpyBatchAsync_v2(dsts, srcs, sizes, 3, at, idx, 2, s));
    OK(cuMemcpyBatchAsync_v2_ptsz(dsts, srcs, sizes, 3, at, idx, 2, CU_STREAM_PER_THREAD));
    OK(cuMemcpyBatchAsync_ptsz(dsts, srcs, sizes, 3, at, idx, 2, NULL, s));
    /* Refused, nothing copied. */
    OK(cuMemsetD8_v2(a, 0, 8192));
    sizes[1] = 5000; /* past the allocation: the copy at index 1 is to blame */
    assert_int_equal(cuMemcpyBatchAsync(dsts, srcs, sizes, 3, at, idx, 2, &fail, s),
                     CUDA_ERROR_INVALID_VALUE);
    assert_true(fail == 1);
    sizes[1] = 500;
    assert_int_equal(cuMemcpyBatchAsync_v2(dsts, srcs, sizes, 3, at, idx, 2, NULL),
                     CUDA_ERROR_INVALID_VALUE); /* the legacy stream */
    assert_int_equal(cuMemcpyBatchAsync_v2(dsts, srcs, sizes, 3, at, idx, 2, CU_STREAM_LEGACY),
                     CUDA_ERROR_INVALID_VALUE);
    idx[0] = 1; /* the first entry must be 0 */
    assert_int_equal(cuMemcpyBatchAsync(dsts, srcs, sizes, 3, at, idx, 2, &fail, s),
                     CUDA_ERROR_INVALID_VALUE);
    assert_true(fail == SIZE_MAX);
    idx[0] = 0;
    idx[1] = 3; /* not below count */
    assert_int_equal(cuMemcpyBatchAsync_v2(dsts, srcs, sizes, 3, at, idx, 2, s),
                     CUDA_ERROR_INVALID_VALUE);
    idx[1] = 2;
    at[1].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_INVALID;
    assert_int_equal(cuMemcpyBatchAsync_v2(dsts, srcs, sizes, 3, at, idx, 2, s),
                     CUDA_ERROR_INVALID_VALUE);
    at[1].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_ANY;
    at[1].flags = 2;
    assert_int_equal(cuMemcpyBatchAsync_v2(dsts, srcs, sizes, 3, at, idx, 2, s),
                     CUDA_ERROR_INVALID_VALUE);
    at[1].flags = 0;
    assert_int_equal(cuMemcpyBatchAsync_v2(dsts, srcs, sizes, 2, at, idx, 3, s),
                     CUDA_ERROR_INVALID_VALUE); /* more attributes than copies */
    assert_int_equal(cuMemcpyBatchAsync_v2(dsts, srcs, sizes, 0, at, idx, 1, s),
                     CUDA_ERROR_INVALID_VALUE);
    OK(cuMemcpyDtoH_v2(back, a, sizeof back));
    for (size_t i = 0; i < sizeof back; i++)
        assert_int_equal(back[i], 0);
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_int_equal(cuMemcpyBatchAsync_v2(dsts, srcs, sizes, 3, at, idx, 2, s),
                     CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CUgraph gr;
    OK(cuStreamEndCapture(s, &gr));
    OK(cuGraphDestroy(gr));
    OK(cuStreamDestroy_v2(s));
    OK(cuMemFree_v2(a));
    assert_int_equal(tessel_fake_calls("cuMemcpyBatchAsync_v2"), 9);
}

struct hostrun {
    int n;
    int order[4];
    CUstream stream;
    CUresult status;
};

static void host_mark(void *user)
{
    struct hostrun *h = user;
    h->order[h->n++] = 1;
}

static void stream_mark(CUstream s, CUresult status, void *user)
{
    struct hostrun *h = user;
    h->order[h->n++] = 2;
    h->stream = s;
    h->status = status;
}

/* Host functions and callbacks run once the stream's earlier work is done, in order; NULL
 * functions, callback flags and capturing streams refused; cuGraphUpload checks its graph and
 * stream and queues nothing. */
static void test_host_funcs(void **state)
{
    tessel_fake_reset();
    clear_env();
    setenv("TESSEL_FAKE_GPUS", "A:1G", 1);
    setenv("TESSEL_FAKE_KERNEL_US", "20000", 1); /* a kernel takes 20 ms */
    OK(cuInit(0));
    tessel_fake_reset_calls();
    primary(0);
    CUmodule m;
    CUfunction f;
    OK(cuModuleLoadData(&m, "image"));
    OK(cuModuleGetFunction(&f, m, "k"));
    CUstream s;
    OK(cuStreamCreate(&s, 0));
    struct hostrun h;
    memset(&h, 0, sizeof h);
    OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
    assert_int_equal(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
    OK(cuLaunchHostFunc(s, host_mark, &h));
    assert_int_equal(h.n, 1);
    OK(cuStreamQuery(s)); /* it ran after the kernel */
    OK(cuStreamAddCallback(s, stream_mark, &h, 0));
    OK(cuLaunchHostFunc_ptsz(NULL, host_mark, &h));
    OK(cuStreamAddCallback_ptsz(CU_STREAM_PER_THREAD, stream_mark, &h, 0));
    assert_int_equal(h.n, 4);
    assert_int_equal(h.order[0], 1);
    assert_int_equal(h.order[1], 2);
    assert_int_equal(h.order[2], 1);
    assert_int_equal(h.order[3], 2);
    assert_int_equal(h.status, CUDA_SUCCESS);
    assert_true(h.stream == CU_STREAM_PER_THREAD); /* the stream as given */
    assert_int_equal(cuLaunchHostFunc(s, NULL, &h), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuStreamAddCallback(s, NULL, &h, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuStreamAddCallback(s, stream_mark, &h, 1), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuLaunchHostFunc((CUstream)&h, host_mark, &h), CUDA_ERROR_INVALID_HANDLE);
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_int_equal(cuLaunchHostFunc(s, host_mark, &h), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    assert_int_equal(cuStreamAddCallback(s, stream_mark, &h, 0),
                     CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL)); /* captured */
    CUgraph gr;
    OK(cuStreamEndCapture(s, &gr));
    assert_int_equal(h.n, 4);
    CUgraphExec x;
    OK(cuGraphInstantiateWithFlags(&x, gr, 0));
    OK(cuGraphUpload(x, s));
    OK(cuGraphUpload_ptsz(x, NULL));
    OK(cuStreamQuery(s)); /* nothing queued by an upload */
    assert_int_equal(cuGraphUpload(NULL, s), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuGraphUpload(x, (CUstream)&h), CUDA_ERROR_INVALID_HANDLE);
    OK(cuStreamBeginCapture(s));
    assert_int_equal(cuGraphUpload(x, s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CUgraph g2;
    OK(cuStreamEndCapture(s, &g2));
    OK(cuGraphDestroy(g2));
    OK(cuGraphLaunch(x, s));
    OK(cuStreamSynchronize(s));
    OK(cuGraphExecDestroy(x));
    OK(cuGraphDestroy(gr));
    OK(cuStreamDestroy_v2(s));
    assert_int_equal(tessel_fake_calls("cuLaunchHostFunc"), 4);
    assert_int_equal(tessel_fake_calls("cuGraphUpload"), 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_init_errors, teardown),
        cmocka_unit_test_teardown(test_devices, teardown),
        cmocka_unit_test_teardown(test_uuid_override, teardown),
        cmocka_unit_test_teardown(test_contexts, teardown),
        cmocka_unit_test_teardown(test_alloc_accounting, teardown),
        cmocka_unit_test_teardown(test_granule, teardown),
        cmocka_unit_test_teardown(test_pitch_managed_host, teardown),
        cmocka_unit_test_teardown(test_managed_model, teardown),
        cmocka_unit_test_teardown(test_copies, teardown),
        cmocka_unit_test_teardown(test_wide_sets, teardown),
        cmocka_unit_test_teardown(test_copy3d, teardown),
        cmocka_unit_test_teardown(test_stream_memops, teardown),
        cmocka_unit_test_teardown(test_v1_copies, teardown),
        cmocka_unit_test_teardown(test_copy3d_peer, teardown),
        cmocka_unit_test_teardown(test_copy_batch, teardown),
        cmocka_unit_test_teardown(test_host_funcs, teardown),
        cmocka_unit_test_teardown(test_2d_peer_hints, teardown),
        cmocka_unit_test_teardown(test_pools, teardown),
        cmocka_unit_test_teardown(test_vmm, teardown),
        cmocka_unit_test_teardown(test_arrays, teardown),
        cmocka_unit_test_teardown(test_shared_state, teardown),
        cmocka_unit_test_teardown(test_counters, teardown),
        cmocka_unit_test_teardown(test_threads, teardown),
        cmocka_unit_test_teardown(test_errors_strings, teardown),
        cmocka_unit_test_teardown(test_fork_rule, teardown),
        cmocka_unit_test_teardown(test_ctx_costs, teardown),
        cmocka_unit_test_teardown(test_module_mem, teardown),
        cmocka_unit_test_teardown(test_library, teardown),
        cmocka_unit_test_teardown(test_launch_mem, teardown),
        cmocka_unit_test_teardown(test_graph_place, teardown),
        cmocka_unit_test_teardown(test_ctx_limits, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
