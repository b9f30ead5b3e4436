/* test_procaddr.c - cuGetProcAddress(_v2) of the fake: every lookup the CUDA 13
 * runtime makes ($TESSEL_SHARED/cuda/cudart13_requests.tsv) is replayed; memory
 * entry points must resolve to the right variant, every resolved pointer must
 * count as that variant when called, the rest must answer NOT_FOUND. */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cudaabi/cuda_abi.h"
#include "tessel_fake.h"

/* Independent statement of the driver's variants for the memory entry points
 * the runtime looks up: _v2 from v2_at, per-thread suffix from pt_at. */
static const struct {
    const char *name;
    int v2_at;
    const char *pt;
    int pt_at;
} memory[] = {
    {"cuDeviceTotalMem", 3020, NULL, 0},
    {"cuDeviceGetDefaultMemPool", 0, NULL, 0},
    {"cuDeviceSetMemPool", 0, NULL, 0},
    {"cuDeviceGetMemPool", 0, NULL, 0},
    {"cuMemGetInfo", 3020, NULL, 0},
    {"cuMemAllocManaged", 0, NULL, 0},
    {"cuMemAlloc", 3020, NULL, 0},
    {"cuMemAllocPitch", 3020, NULL, 0},
    {"cuMemFree", 3020, NULL, 0},
    {"cuMemGetAddressRange", 3020, NULL, 0},
    {"cuMemFreeHost", 0, NULL, 0},
    {"cuMemHostAlloc", 0, NULL, 0},
    {"cuMemHostGetDevicePointer", 3020, NULL, 0},
    {"cuMemHostRegister", 6050, NULL, 0},
    {"cuMemHostUnregister", 0, NULL, 0},
    {"cuMemAllocAsync", 0, "_ptsz", 11020},
    {"cuMemAllocFromPoolAsync", 0, "_ptsz", 11020},
    {"cuMemFreeAsync", 0, "_ptsz", 11020},
    {"cuMemPoolTrimTo", 0, NULL, 0},
    {"cuMemPoolSetAttribute", 0, NULL, 0},
    {"cuMemPoolGetAttribute", 0, NULL, 0},
    {"cuMemPoolSetAccess", 0, NULL, 0},
    {"cuMemPoolCreate", 0, NULL, 0},
    {"cuMemPoolDestroy", 0, NULL, 0},
    {"cuMemGetDefaultMemPool", 0, NULL, 0},
    {"cuMemGetMemPool", 0, NULL, 0},
    {"cuMemSetMemPool", 0, NULL, 0},
    {"cuMemcpy", 0, "_ptds", 7000},
    {"cuMemcpyAsync", 0, "_ptsz", 7000},
    {"cuMemcpyHtoD", 3020, "_ptds", 7000},
    {"cuMemcpyDtoH", 3020, "_ptds", 7000},
    {"cuMemcpyDtoD", 3020, "_ptds", 7000},
    {"cuMemcpyHtoDAsync", 3020, "_ptsz", 7000},
    {"cuMemcpyDtoHAsync", 3020, "_ptsz", 7000},
    {"cuMemcpyDtoDAsync", 3020, "_ptsz", 7000},
    {"cuMemsetD8", 3020, "_ptds", 7000},
    {"cuMemsetD8Async", 0, "_ptsz", 7000},
    {"cuArrayCreate", 3020, NULL, 0},
    {"cuArray3DCreate", 3020, NULL, 0},
    {"cuArrayGetDescriptor", 3020, NULL, 0},
    {"cuArray3DGetDescriptor", 3020, NULL, 0},
    {"cuArrayDestroy", 0, NULL, 0},
    {"cuMipmappedArrayCreate", 0, NULL, 0},
    {"cuMipmappedArrayDestroy", 0, NULL, 0},
    {"cuMemsetD2D8", 3020, "_ptds", 7000},
    {"cuMemsetD2D8Async", 0, "_ptsz", 7000},
    {"cuMemcpyPeer", 0, "_ptds", 7000},
    {"cuMemcpyPeerAsync", 0, "_ptsz", 7000},
    {"cuMemcpy2DUnaligned", 3020, "_ptds", 7000},
    {"cuMemcpy2DAsync", 3020, "_ptsz", 7000},
    {"cuMemHostGetFlags", 0, NULL, 0},
    {"cuMemPoolGetAccess", 0, NULL, 0},
    {"cuMemAdvise", 12020, NULL, 0},
    {"cuMemPrefetchAsync", 12020, "_ptsz", 8000},
};

static int expected(const char *name, int ver, unsigned flags, char *out, size_t len)
{
    for (size_t i = 0; i < sizeof memory / sizeof memory[0]; i++) {
        if (strcmp(memory[i].name, name) != 0)
            continue;
        int v2 = memory[i].v2_at && ver >= memory[i].v2_at;
        int pt = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && memory[i].pt &&
                 ver >= memory[i].pt_at;
        snprintf(out, len, "%s%s%s", name, v2 ? "_v2" : "", pt ? memory[i].pt : "");
        return 1;
    }
    return 0;
}

typedef CUresult (*any_fn)(void *, void *, void *, void *, void *, void *);

/* Call p with zero arguments before cuInit: every fake entry point counts
 * the call, then refuses (NOT_INITIALIZED / INVALID_VALUE) without touching
 * them.  Returns the name of the one counter that moved, or NULL. */
static const char *counted_as(void *p)
{
    const char **names;
    int n = tessel_fake_entry_points(&names);
    tessel_fake_reset_calls();
    ((any_fn)p)(NULL, NULL, NULL, NULL, NULL, NULL);
    if (tessel_fake_calls_total() != 1)
        return NULL;
    for (int i = 0; i < n; i++)
        if (tessel_fake_calls(names[i]) == 1)
            return names[i];
    return NULL;
}

/* Where the runtime's lookups are recorded ($TESSEL_SHARED, default ../shared). */
static void requests_path(char *path, size_t len)
{
    const char *shared = getenv("TESSEL_SHARED");
    snprintf(path, len, "%s/cuda/cudart13_requests.tsv", shared ? shared : "../shared");
}

static void test_replay_runtime(void **state)
{
    char path[4096];
    requests_path(path, sizeof path);
    FILE *f = fopen(path, "r");
    assert_non_null(f); /* main() runs this test only when the file is readable */
    char line[512];
    int lines = 0, resolved = 0, mem = 0, missing = 0;
    while (fgets(line, sizeof line, f)) {
        char sym[256];
        int ver;
        unsigned flags;
        if (sscanf(line, "%255s %d %u", sym, &ver, &flags) != 3)
            continue; /* the first line: the runtime's own dlsym */
        lines++;
        void *p = (void *)1;
        CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)77;
        CUresult rc = cuGetProcAddress_v2(sym, &p, ver, flags, &st);
        char want[300];
        if (expected(sym, ver, flags, want, sizeof want)) {
            mem++;
            if (rc != CUDA_SUCCESS)
                fail_msg("%s@%d/%u: memory entry point did not resolve (%d)", sym, ver, flags, rc);
            assert_int_equal(st, CU_GET_PROC_ADDRESS_SUCCESS);
            if (p != dlsym(RTLD_DEFAULT, want))
                fail_msg("%s@%d/%u: not %s", sym, ver, flags, want);
        }
        if (rc == CUDA_SUCCESS) {
            resolved++;
            assert_int_equal(st, CU_GET_PROC_ADDRESS_SUCCESS);
            assert_non_null(p);
            const char *as = counted_as(p);
            if (!as || strncmp(as, sym, strlen(sym)) != 0)
                fail_msg("%s@%d/%u: the function counts as %s", sym, ver, flags,
                         as ? as : "nothing");
            if (mem && expected(sym, ver, flags, want, sizeof want) && strcmp(as, want) != 0)
                fail_msg("%s@%d/%u: counted as %s, not %s", sym, ver, flags, as, want);
        } else {
            missing++;
            assert_int_equal(rc, CUDA_ERROR_NOT_FOUND);
            assert_true(st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND ||
                        st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
            assert_null(p);
        }
    }
    fclose(f);
    print_message("%d lookups: %d resolved (%d memory entry points), %d not found\n", lines,
                  resolved, mem, missing);
    assert_int_equal(lines, 439); /* 440 lines: the first is the runtime's dlsym */
    assert_true(mem >= 75);
}

static void *lookup(const char *sym, int ver, unsigned flags, CUresult want_rc,
                    CUdriverProcAddressQueryResult want_st)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult st;
    assert_int_equal(cuGetProcAddress_v2(sym, &p, ver, flags, &st), want_rc);
    assert_int_equal(st, want_st);
    return p;
}

#define FOUND(sym, ver, flags, fn)                                                                 \
    assert_ptr_equal(lookup(sym, ver, flags, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS), (void *)fn)

static void test_versions(void **state)
{
    FOUND("cuCtxCreate", 2000, 0, cuCtxCreate);
    FOUND("cuCtxCreate", 3020, 0, cuCtxCreate_v2);
    FOUND("cuCtxCreate", 11040, 0, cuCtxCreate_v3);
    FOUND("cuCtxCreate", 12000, 0, cuCtxCreate_v3);
    FOUND("cuCtxCreate", 12050, 0, cuCtxCreate_v4);
    FOUND("cuCtxCreate", 13000, 0, cuCtxCreate_v4);
    FOUND("cuGetProcAddress", 11030, 0, cuGetProcAddress);
    FOUND("cuGetProcAddress", 12000, 0, cuGetProcAddress_v2);
    FOUND("cuMemAlloc", 2000, 0, cuMemAlloc);
    FOUND("cuMemAlloc", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, cuMemAlloc_v2);
    FOUND("cuMemcpyHtoD", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
          cuMemcpyHtoD_v2_ptds);
    FOUND("cuMemcpyHtoD", 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, cuMemcpyHtoD_v2);
    FOUND("cuMemcpyHtoD", 6000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, cuMemcpyHtoD_v2);
    FOUND("cuLaunchKernel", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
          cuLaunchKernel_ptsz);
    FOUND("cuLaunchKernel", 12000, 0, cuLaunchKernel);
    FOUND("cuEventElapsedTime", 12000, 0, cuEventElapsedTime);
    FOUND("cuEventElapsedTime", 12080, 0, cuEventElapsedTime_v2);
    FOUND("cuDevicePrimaryCtxRelease", 11000, 0, cuDevicePrimaryCtxRelease_v2);
    FOUND("cuGraphInstantiate", 12000, 0, cuGraphInstantiateWithFlags);
    FOUND("cuStreamBeginCapture", 10010, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
          cuStreamBeginCapture_v2_ptsz);
    FOUND("cuCtxSynchronize", 13000, 0, cuCtxSynchronize_v2);
    lookup("cuMemAllocAsync", 11000, 0, CUDA_ERROR_NOT_FOUND,
           CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    lookup("cuNoSuchThing", 13000, 0, CUDA_ERROR_NOT_FOUND, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    lookup("cuMemAlloc_v2", 13000, 0, CUDA_ERROR_NOT_FOUND,
           CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND); /* names are base names */
    void *p = NULL;
    assert_int_equal(cuGetProcAddress_v2("cuMemAlloc", &p, 13000, 4, NULL),
                     CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuGetProcAddress_v2(NULL, &p, 13000, 0, NULL), CUDA_ERROR_INVALID_VALUE);
    /* The v1 signature has no status argument and the same answers. */
    assert_int_equal(cuGetProcAddress("cuMemFree", &p, 3020, 0), CUDA_SUCCESS);
    assert_ptr_equal(p, (void *)cuMemFree_v2);
    assert_int_equal(cuGetProcAddress("cuNope", &p, 3020, 0), CUDA_ERROR_NOT_FOUND);
    assert_null(p);
}

static void test_counters_per_variant(void **state)
{
    tessel_fake_reset_calls();
    cuGetProcAddress_v2("cuMemAlloc", NULL, 0, 0, NULL);
    cuGetProcAddress("cuMemAlloc", NULL, 0, 0);
    cuGetProcAddress("cuMemAlloc", NULL, 0, 0);
    assert_int_equal(tessel_fake_calls("cuGetProcAddress_v2"), 1);
    assert_int_equal(tessel_fake_calls("cuGetProcAddress"), 2);
    assert_string_equal(counted_as((void *)cuMemcpyHtoD), "cuMemcpyHtoD");
    assert_string_equal(counted_as((void *)cuMemcpyHtoD_v2), "cuMemcpyHtoD_v2");
    assert_string_equal(counted_as((void *)cuMemcpyHtoD_v2_ptds), "cuMemcpyHtoD_v2_ptds");
    assert_string_equal(counted_as((void *)cuLaunchKernelEx_ptsz), "cuLaunchKernelEx_ptsz");
    assert_string_equal(counted_as((void *)cuGraphLaunch_ptsz), "cuGraphLaunch_ptsz");
    /* Every exported entry point counts as itself. */
    const char **names;
    int n = tessel_fake_entry_points(&names);
    for (int i = 0; i < n; i++) {
        void *fn = dlsym(RTLD_DEFAULT, names[i]);
        assert_non_null(fn);
        const char *as = counted_as(fn);
        if (!as || strcmp(as, names[i]) != 0)
            fail_msg("%s counts as %s", names[i], as ? as : "nothing");
    }
}

int main(void)
{
    /* cmocka 1.1's TAP output prints a skipped test as "not ok # SKIP", which
     * prove counts as a failure: leave the replay out, with a TAP comment,
     * when the recording is not there (a clone without ../shared). */
    char path[4096];
    requests_path(path, sizeof path);
    const struct CMUnitTest with_replay[] = {
        cmocka_unit_test(test_replay_runtime),
        cmocka_unit_test(test_versions),
        cmocka_unit_test(test_counters_per_variant),
    };
    if (access(path, R_OK) == 0)
        return cmocka_run_group_tests(with_replay, NULL, NULL);
    printf("# %s not readable: the runtime replay is left out\n", path);
    /* (the macro takes sizeof of an array; a tail of one needs the function) */
    return _cmocka_run_group_tests("tests", &with_replay[1],
                                   sizeof with_replay / sizeof with_replay[0] - 1, NULL, NULL);
}
