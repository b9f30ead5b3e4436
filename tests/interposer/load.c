/* load.c - tcu-load: a GPU load of known simulated kernel time on the fake
 * driver, for the compute-share tests (tests/t/t052*-interposer-*.t).
 *
 * Usage: tcu-load [OPTION...]
 *   --dev=N        CUDA device ordinal (default 0)
 *   --us=N         simulated duration of each kernel, us (default 1000)
 *   --loop=KIND    heavy: launch after launch, one synchronisation at the end;
 *                  sync: launch, cuStreamSynchronize, launch ... (default heavy)
 *   --path=PATH    launch (cuLaunchKernel, default stream), ptsz
 *                  (cuLaunchKernel_ptsz), ex (cuLaunchKernelEx), coop
 *                  (cuLaunchCooperativeKernel), graph (cuGraphLaunch of a
 *                  captured graph of 4 kernels of us/4 each), multi
 *                  (cuLaunchCooperativeKernelMultiDevice, one entry)
 *   --ms=N         run for N ms of the fake's clock (default 2000)
 *   --until=PATH   run until PATH exists instead (checked every launch)
 *   --go=PATH      print "ready", then wait for PATH to exist before starting
 *   --window=N     report the share over windows of N ms (default 1000)
 *   --gap=N        host time between launches: sleep N us after each launch
 *                  (after its synchronisation in a sync loop; default 0),
 *                  for loads that use less than their share
 *   --thread       run all of it (context included) in a thread of its own,
 *                  print "thread ended" once that thread has exited
 *   --linger=PATH  before exiting, wait for PATH to exist
 *
 * Output, after the final synchronisation (figures from the fake's
 * simulated timeline: tessel_fake_process_busy_ns and tessel_fake_now_ns):
 *   "load share=P busy=B span=S launches=N windows=W1,W2,... t0=T0 t1=T1
 *    wends=E1,E2,..."
 * P = 100 x busy / span, in percent with one decimal; W the share of each
 * complete window, E its end (the fake's clock, ns; it began at the previous
 * end, the first at T0); span from the first launch (T0) to the end of the
 * last kernel (T1).  Each window ends once this process's stream has drained
 * (a synchronisation at its end), so that what it counts ran inside it.  Exit
 * status 0, or 2 on a driver error.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cudaabi/cuda_abi.h"

typedef unsigned long long (*u_dev_fn)(int);
typedef unsigned long long (*u_void_fn)(void);
typedef int (*setus_fn)(CUfunction, unsigned long long);

static void *get(const char *name)
{
    void *p = dlsym(RTLD_DEFAULT, name);
    if (!p) {
        fprintf(stderr, "tcu-load: no %s\n", name);
        exit(2);
    }
    return p;
}

static void check(CUresult rc, const char *what)
{
    if (rc != CUDA_SUCCESS) {
        fprintf(stderr, "tcu-load: %s: error %d\n", what, (int)rc);
        exit(2);
    }
}

static const char *opt(int argc, char **argv, const char *name, const char *def)
{
    size_t n = strlen(name);
    for (int i = 1; i < argc; i++)
        if (strncmp(argv[i], name, n) == 0 && argv[i][n] == '=')
            return argv[i] + n + 1;
    return def;
}

static int run(int argc, char **argv)
{
    int dev = atoi(opt(argc, argv, "--dev", "0"));
    unsigned long long us = strtoull(opt(argc, argv, "--us", "1000"), NULL, 10);
    const char *loop = opt(argc, argv, "--loop", "heavy");
    const char *path = opt(argc, argv, "--path", "launch");
    unsigned long long ms = strtoull(opt(argc, argv, "--ms", "2000"), NULL, 10);
    unsigned long long win = strtoull(opt(argc, argv, "--window", "1000"), NULL, 10);
    const char *until = opt(argc, argv, "--until", NULL);
    const char *go = opt(argc, argv, "--go", NULL);
    int sync = strcmp(loop, "sync") == 0;
    unsigned long long gap = strtoull(opt(argc, argv, "--gap", "0"), NULL, 10);

    if (!dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL)) {
        fprintf(stderr, "tcu-load: %s\n", dlerror());
        return 2;
    }
    u_dev_fn busy = (u_dev_fn)get("tessel_fake_process_busy_ns");
    u_void_fn now = (u_void_fn)get("tessel_fake_now_ns");
    setus_fn setus = (setus_fn)get("tessel_fake_set_kernel_us");

    CUdevice d;
    CUcontext ctx;
    CUmodule mod;
    CUfunction f;
    CUstream st;
    check(((cuInit_fn)get("cuInit"))(0), "cuInit");
    check(((cuDeviceGet_fn)get("cuDeviceGet"))(&d, dev), "cuDeviceGet");
    check(((cuDevicePrimaryCtxRetain_fn)get("cuDevicePrimaryCtxRetain"))(&ctx, d), "retain");
    check(((cuCtxSetCurrent_fn)get("cuCtxSetCurrent"))(ctx), "cuCtxSetCurrent");
    check(((cuModuleLoadData_fn)get("cuModuleLoadData"))(&mod, "image"), "cuModuleLoadData");
    check(((cuModuleGetFunction_fn)get("cuModuleGetFunction"))(&f, mod, "k"), "getfunction");
    check(((cuStreamCreate_fn)get("cuStreamCreate"))(&st, CU_STREAM_NON_BLOCKING), "stream");
    cuStreamSynchronize_fn ssync = (cuStreamSynchronize_fn)get("cuStreamSynchronize");
    cuLaunchKernel_fn launch = (cuLaunchKernel_fn)get("cuLaunchKernel");
    cuLaunchKernel_ptsz_fn launch_pt = (cuLaunchKernel_ptsz_fn)get("cuLaunchKernel_ptsz");
    cuLaunchKernelEx_fn launch_ex = (cuLaunchKernelEx_fn)get("cuLaunchKernelEx");
    cuLaunchCooperativeKernel_fn coop =
        (cuLaunchCooperativeKernel_fn)get("cuLaunchCooperativeKernel");
    cuLaunchCooperativeKernelMultiDevice_fn multi =
        (cuLaunchCooperativeKernelMultiDevice_fn)get("cuLaunchCooperativeKernelMultiDevice");
    cuGraphLaunch_fn glaunch = (cuGraphLaunch_fn)get("cuGraphLaunch");

    int kind = strcmp(path, "launch") == 0  ? 0
               : strcmp(path, "ptsz") == 0  ? 1
               : strcmp(path, "ex") == 0    ? 2
               : strcmp(path, "coop") == 0  ? 3
               : strcmp(path, "graph") == 0 ? 4
               : strcmp(path, "multi") == 0 ? 5
                                            : -1;
    if (kind < 0) {
        fprintf(stderr, "tcu-load: unknown path %s\n", path);
        return 2;
    }
    CUgraphExec exec = NULL;
    if (kind == 4) {
        check(setus(f, us / 4), "set_kernel_us");
        check(((cuStreamBeginCapture_v2_fn)get("cuStreamBeginCapture_v2"))(
                  st, CU_STREAM_CAPTURE_MODE_GLOBAL),
              "begin capture");
        for (int i = 0; i < 4; i++)
            check(launch(f, 1, 1, 1, 32, 1, 1, 0, st, NULL, NULL), "captured launch");
        CUgraph g;
        check(((cuStreamEndCapture_fn)get("cuStreamEndCapture"))(st, &g), "end capture");
        check(((cuGraphInstantiateWithFlags_fn)get("cuGraphInstantiateWithFlags"))(&exec, g, 0),
              "instantiate");
    } else {
        check(setus(f, us), "set_kernel_us");
    }

    if (go) {
        printf("ready\n");
        fflush(stdout);
    }
    while (go && access(go, F_OK) != 0)
        usleep(2000);

    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = 32;
    cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.hStream = st;
    CUDA_LAUNCH_PARAMS mp;
    memset(&mp, 0, sizeof mp);
    mp.function = f;
    mp.gridDimX = mp.gridDimY = mp.gridDimZ = 1;
    mp.blockDimX = 32;
    mp.blockDimY = mp.blockDimZ = 1;
    mp.hStream = st;

    unsigned long long b0 = busy(dev), t0 = now(), end = t0 + ms * 1000000ull;
    unsigned long long wstart = t0, wbusy = b0, launches = 0;
    char windows[4096] = "", wends[8192] = "";
    size_t wl = 0, el = 0;
    for (;;) {
        unsigned long long t = now();
        if (until ? access(until, F_OK) == 0 : t >= end)
            break;
        if (t >= wstart + win * 1000000ull) {
            /* A window ends with this process's queue drained: busy counts a kernel when it
             * is scheduled, so kernels still queued at t would count in this window and
             * their run in none (a share above 100 % under a loaded host, below in the
             * next window). */
            check(ssync(st), "cuStreamSynchronize");
            t = now();
            unsigned long long b = busy(dev);
            int n = snprintf(windows + wl, sizeof windows - wl, "%s%.1f", wl ? "," : "",
                             100.0 * (double)(b - wbusy) / (double)(t - wstart));
            if (n > 0 && (size_t)n < sizeof windows - wl)
                wl += (size_t)n;
            n = snprintf(wends + el, sizeof wends - el, "%s%llu", el ? "," : "", t);
            if (n > 0 && (size_t)n < sizeof wends - el)
                el += (size_t)n;
            wstart = t;
            wbusy = b;
        }
        CUresult rc;
        switch (kind) {
        case 0:
            rc = launch(f, 1, 1, 1, 32, 1, 1, 0, st, NULL, NULL);
            break;
        case 1:
            rc = launch_pt(f, 1, 1, 1, 32, 1, 1, 0, st, NULL, NULL);
            break;
        case 2:
            rc = launch_ex(&cfg, f, NULL, NULL);
            break;
        case 3:
            rc = coop(f, 1, 1, 1, 32, 1, 1, 0, st, NULL);
            break;
        case 4:
            rc = glaunch(exec, st);
            break;
        default:
            rc = multi(&mp, 1, 0);
            break;
        }
        check(rc, path);
        launches++;
        if (sync)
            check(ssync(st), "cuStreamSynchronize");
        if (gap)
            usleep((useconds_t)gap);
    }
    check(ssync(st), "cuStreamSynchronize");
    unsigned long long t1 = now(), b1 = busy(dev);
    printf("load share=%.1f busy=%llu span=%llu launches=%llu windows=%s t0=%llu t1=%llu "
           "wends=%s\n",
           100.0 * (double)(b1 - b0) / (double)(t1 - t0), b1 - b0, t1 - t0, launches,
           wl ? windows : "none", t0, t1, el ? wends : "none");
    fflush(stdout);
    return 0;
}

struct args {
    int argc;
    char **argv;
    int rc;
};

static void *run_thread(void *p)
{
    struct args *a = p;
    a->rc = run(a->argc, a->argv);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *linger = opt(argc, argv, "--linger", NULL);
    struct args a = {argc, argv, 0};
    int threaded = 0;
    for (int i = 1; i < argc; i++)
        threaded |= strcmp(argv[i], "--thread") == 0;
    if (!threaded)
        a.rc = run(argc, argv);
    else {
        pthread_t t;
        if (pthread_create(&t, NULL, run_thread, &a) != 0 || pthread_join(t, NULL) != 0) {
            fprintf(stderr, "tcu-load: cannot run the thread\n");
            return 2;
        }
        printf("thread ended\n");
        fflush(stdout);
    }
    while (linger && access(linger, F_OK) != 0)
        usleep(2000);
    return a.rc;
}
