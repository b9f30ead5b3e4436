/* bench_interposer.c - bench-interposer: what libtessel-cuda adds per call.
 *
 * Usage: bench-interposer [--preload PATH] [--iters N] [--procs N]
 *
 * Per call, in one process: the driver's entry points called directly, and
 * the hooks of PATH (default: ../lib/libtessel-cuda.so next to this
 * program; dlopened privately, so the very code a preloaded hook runs),
 * in alternating rounds of N calls; prints nanoseconds without, with, the
 * difference and the ratio for
 *   cuMemAlloc_v2 + cuMemFree_v2 of 1 MiB (a pair), cuLaunchKernel (a
 *   kernel of simulated length 0), cuMemGetInfo_v2.
 * Each figure is the best of 15 rounds (the machine is shared: the best
 * round is the one least disturbed).  Then it starts --procs processes
 * at once in one slice (TESSEL_SLICE) and reports how long, from the first
 * dlsym to the return of cuInit, each took to start, without and with the
 * interposer: mean, median, 99th percentile, and the mean added.
 *
 * The driver is whatever libcuda.so.1 the loader finds: the fake one (set
 * LD_LIBRARY_PATH=build/tests/fake) or a real one on a GPU host.
 * Internal mode: "start" (one process of the startup test).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cudaabi/cuda_abi.h"

#define ROUNDS 15

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *sym(const char *name)
{
    void *p = dlsym(RTLD_DEFAULT, name);
    if (!p) {
        fprintf(stderr, "bench-interposer: no %s\n", name);
        exit(2);
    }
    return p;
}

static void check(CUresult r, const char *what)
{
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "bench-interposer: %s failed (%d)\n", what, (int)r);
        exit(2);
    }
}

struct calls {
    cuMemAlloc_v2_fn alloc;
    cuMemFree_v2_fn free;
    cuLaunchKernel_fn launch;
    cuMemGetInfo_v2_fn info;
};

static void *lookup(void *h, const char *name)
{
    void *p = dlsym(h, name);
    if (!p) {
        fprintf(stderr, "bench-interposer: no %s\n", name);
        exit(2);
    }
    return p;
}

static void calls_from(void *h, struct calls *c)
{
    c->alloc = (cuMemAlloc_v2_fn)lookup(h, "cuMemAlloc_v2");
    c->free = (cuMemFree_v2_fn)lookup(h, "cuMemFree_v2");
    c->launch = (cuLaunchKernel_fn)lookup(h, "cuLaunchKernel");
    c->info = (cuMemGetInfo_v2_fn)lookup(h, "cuMemGetInfo_v2");
}

/* One round of iters calls of each kind through c; ns per call into v. */
static void round_of(const struct calls *c, CUfunction fn, long iters, double v[3])
{
    uint64_t t0 = now_ns();
    for (long i = 0; i < iters; i++) {
        CUdeviceptr p;
        check(c->alloc(&p, 1 << 20), "cuMemAlloc_v2");
        check(c->free(p), "cuMemFree_v2");
    }
    uint64_t t1 = now_ns();
    for (long i = 0; i < iters; i++)
        check(c->launch(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), "cuLaunchKernel");
    uint64_t t2 = now_ns();
    for (long i = 0; i < iters; i++) {
        size_t f, t;
        check(c->info(&f, &t), "cuMemGetInfo_v2");
    }
    uint64_t t3 = now_ns();
    v[0] = (double)(t1 - t0) / iters;
    v[1] = (double)(t2 - t1) / iters;
    v[2] = (double)(t3 - t2) / iters;
}

/* Per-call cost, in this process: the driver's entry points straight, and
 * the interposer's hooks (libtessel-cuda.so dlopened privately: the same
 * code a preloaded hook runs), rounds alternating between the two so that
 * the machine's other load hits both alike; the best round of each kept. */
static int per_call(const char *preload, long iters, double a[3], double b[3])
{
    if (!dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL)) {
        fprintf(stderr, "bench-interposer: %s\n", dlerror());
        return -1;
    }
    struct calls direct, hooked;
    calls_from(RTLD_DEFAULT, &direct);
    void *ip = dlopen(preload, RTLD_NOW | RTLD_LOCAL);
    if (!ip) {
        fprintf(stderr, "bench-interposer: %s\n", dlerror());
        return -1;
    }
    calls_from(ip, &hooked);
    if (hooked.alloc == direct.alloc) {
        fprintf(stderr, "bench-interposer: the hook is the driver's own function\n");
        return -1;
    }
    CUcontext ctx;
    CUmodule mod;
    CUfunction fn;
    check(((cuInit_fn)lookup(ip, "cuInit"))(0), "cuInit");
    check(((cuDevicePrimaryCtxRetain_fn)lookup(ip, "cuDevicePrimaryCtxRetain"))(&ctx, 0), "retain");
    check(((cuCtxSetCurrent_fn)sym("cuCtxSetCurrent"))(ctx), "cuCtxSetCurrent");
    static const char image[] = "bench";
    check(((cuModuleLoadData_fn)sym("cuModuleLoadData"))(&mod, image), "cuModuleLoadData");
    check(((cuModuleGetFunction_fn)sym("cuModuleGetFunction"))(&fn, mod, "k"), "GetFunction");
    cuCtxSynchronize_fn sync = (cuCtxSynchronize_fn)sym("cuCtxSynchronize");
    for (int k = 0; k < 3; k++)
        a[k] = b[k] = 1e300;
    for (int r = 0; r < ROUNDS; r++) {
        double x[3], y[3];
        /* Swap which side goes first every round: no order effect. */
        if (r & 1) {
            round_of(&hooked, fn, iters, y);
            sync();
            round_of(&direct, fn, iters, x);
            sync();
        } else {
            round_of(&direct, fn, iters, x);
            sync();
            round_of(&hooked, fn, iters, y);
            sync();
        }
        for (int k = 0; k < 3; k++) {
            a[k] = x[k] < a[k] ? x[k] : a[k];
            b[k] = y[k] < b[k] ? y[k] : b[k];
        }
    }
    return 0;
}

/* Child: one startup, from the first lookup to cuInit's return; waits on
 * fd 3 (the start line) first; prints ns. */
static int start(void)
{
    char c;
    if (read(3, &c, 1) < 0)
        return 2;
    uint64_t t0 = now_ns();
    if (!dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL))
        return 2;
    cuInit_fn init = (cuInit_fn)sym("cuInit");
    check(init(0), "cuInit");
    /* The first counted call registers nothing more; cuInit is where the
     * interposer attaches the slice and claims its process slot. */
    uint64_t t1 = now_ns();
    printf("%llu\n", (unsigned long long)(t1 - t0));
    return 0;
}

/* Run argv[0] MODE ARG with or without the preload; capture stdout. */
static pid_t spawn(const char *self, const char *preload, char *const args[], int startfd, int *out)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) /* later children must not hold it open */
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        dup2(p[1], 1);
        close(p[0]);
        close(p[1]);
        if (startfd == 3)
            fcntl(3, F_SETFD, 0); /* keep it across exec */
        else if (startfd >= 0)
            dup2(startfd, 3); /* dup2 clears close-on-exec */
        if (preload)
            setenv("LD_PRELOAD", preload, 1);
        else
            unsetenv("LD_PRELOAD");
        execv(self, args);
        _exit(127);
    }
    close(p[1]);
    *out = p[0];
    return pid;
}

static int read_all(int fd, char *buf, size_t len)
{
    size_t n = 0;
    ssize_t r;
    while (n < len - 1 && (r = read(fd, buf + n, len - 1 - n)) > 0)
        n += (size_t)r;
    buf[n] = '\0';
    close(fd);
    return (int)n;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Start nprocs processes at once; fill ns[] with their startup times. */
static int startup(const char *self, const char *preload, int nprocs, uint64_t *ns)
{
    int go[2];
    if (pipe2(go, O_CLOEXEC) < 0) /* children keep only fd 3, the read end */
        return -1;
    pid_t *pids = calloc((size_t)nprocs, sizeof *pids);
    int *fds = calloc((size_t)nprocs, sizeof *fds);
    char *args[] = {(char *)self, "start", NULL};
    for (int i = 0; i < nprocs; i++) {
        pids[i] = spawn(self, preload, args, go[0], &fds[i]);
        if (pids[i] < 0)
            return -1;
    }
    close(go[0]);
    usleep(200000); /* let every child reach its read() */
    close(go[1]);   /* EOF: all start at once */
    int bad = 0;
    for (int i = 0; i < nprocs; i++) {
        char buf[64];
        int st;
        read_all(fds[i], buf, sizeof buf);
        waitpid(pids[i], &st, 0);
        unsigned long long v;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || sscanf(buf, "%llu", &v) != 1) {
            if (!bad)
                fprintf(stderr, "bench-interposer: start child: status 0x%x, output '%s'\n", st,
                        buf);
            bad++;
        } else
            ns[i] = v;
    }
    free(pids);
    free(fds);
    if (bad)
        return -1;
    qsort(ns, (size_t)nprocs, sizeof *ns, cmp_u64);
    return 0;
}

static double mean(const uint64_t *v, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += (double)v[i];
    return s / n;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "start") == 0)
        return start();
    if (argc >= 4 && strcmp(argv[1], "percall") == 0) {
        double a[3], b[3];
        if (per_call(argv[2], atol(argv[3]), a, b) < 0)
            return 1;
        printf("%.2f %.2f %.2f %.2f %.2f %.2f\n", a[0], a[1], a[2], b[0], b[1], b[2]);
        return 0;
    }

    char self[PATH_MAX], preload[PATH_MAX + 32];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n < 0)
        return 2;
    self[n] = '\0';
    long iters = 200000;
    int nprocs = 300;
    char *dir = strdup(self);
    *strrchr(dir, '/') = '\0';
    snprintf(preload, sizeof preload, "%s/../lib/libtessel-cuda.so", dir);
    free(dir);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--preload") == 0 && i + 1 < argc)
            snprintf(preload, sizeof preload, "%s", argv[++i]);
        else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc)
            iters = atol(argv[++i]);
        else if (strcmp(argv[i], "--procs") == 0 && i + 1 < argc)
            nprocs = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench-interposer [--preload PATH] [--iters N] [--procs N]\n");
            return 2;
        }
    }
    if (access(preload, R_OK) != 0) {
        fprintf(stderr, "bench-interposer: %s: %s\n", preload, strerror(errno));
        return 2;
    }
    /* One slice for the whole run; a limit far above what is used. */
    char slice[] = "/tmp/tessel-bench-slice-XXXXXX";
    int sfd = mkstemp(slice);
    if (sfd < 0)
        return 2;
    close(sfd);
    unlink(slice);
    setenv("TESSEL_SLICE", slice, 1);
    if (!getenv("TESSEL_CUDA_MEM_LIMIT"))
        setenv("TESSEL_CUDA_MEM_LIMIT", "6G", 1);

    /* Per call: on the driver the loader finds (the fake GPU in CI), then on
     * the do-nothing driver next to this program, which leaves only the
     * interposer's own cost. */
    char nulldir[PATH_MAX + 16];
    snprintf(nulldir, sizeof nulldir, "%s", self);
    *strrchr(nulldir, '/') = '\0';
    strcat(nulldir, "/nulldrv");
    const char *oldlp = getenv("LD_LIBRARY_PATH");
    char *savedlp = oldlp ? strdup(oldlp) : NULL;
    static const char *names[3] = {"cuMemAlloc_v2+cuMemFree_v2 (1 MiB)", "cuLaunchKernel",
                                   "cuMemGetInfo_v2"};
    printf("bench-interposer: %ld calls x %d rounds per side, alternating, best round; hooks "
           "of %s\n",
           iters, ROUNDS, preload);
    /* Pass 2: the do-nothing driver again, with a compute limit set that
     * never binds (its kernels take 0 ns): the cost of the compute-share
     * path itself (issue 6: at most 200 ns added per launch). */
    char regdir[] = "/tmp/tessel-bench-registry-XXXXXX";
    if (!mkdtemp(regdir))
        return 2;
    setenv("TESSEL_DEVICE_REGISTRY", regdir, 1);
    unsetenv("TESSEL_CUDA_CORE_LIMIT");
    double launch_plain = 0, launch_base = 0, launch_found = 0;
    for (int drv = 0; drv < 4; drv++) {
        char nbuf[32], buf[256];
        double a[3], b[3];
        snprintf(nbuf, sizeof nbuf, "%ld", iters);
        char *args[] = {self, "percall", preload, nbuf, NULL};
        if (drv == 2)
            setenv("TESSEL_CUDA_CORE_LIMIT", "90", 1);
        if (drv == 3) { /* back to the driver found, limit still set */
            if (savedlp)
                setenv("LD_LIBRARY_PATH", savedlp, 1);
            else
                unsetenv("LD_LIBRARY_PATH");
        }
        if (drv == 1) {
            char *lp = malloc(strlen(nulldir) + (savedlp ? strlen(savedlp) : 0) + 2);
            sprintf(lp, "%s%s%s", nulldir, savedlp ? ":" : "", savedlp ? savedlp : "");
            setenv("LD_LIBRARY_PATH", lp, 1);
            free(lp);
        }
        int fd, st;
        pid_t pid = spawn(self, NULL, args, -1, &fd);
        if (pid < 0)
            return 1;
        read_all(fd, buf, sizeof buf);
        waitpid(pid, &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 ||
            sscanf(buf, "%lf %lf %lf %lf %lf %lf", &a[0], &a[1], &a[2], &b[0], &b[1], &b[2]) != 6) {
            fprintf(stderr, "bench-interposer: per-call child failed\n");
            return 1;
        }
        printf("\n%s\n", drv == 0   ? "driver: libcuda.so.1 as found (LD_LIBRARY_PATH)"
                         : drv == 1 ? "driver: do-nothing (bench/interposer/nulldrv.c): the "
                                      "interposer's own cost"
                         : drv == 2 ? "driver: do-nothing, TESSEL_CUDA_CORE_LIMIT=90 set, never "
                                      "binding (0 ns kernels)"
                                    : "driver: libcuda.so.1 as found, TESSEL_CUDA_CORE_LIMIT=90 "
                                      "set, never binding: the driver calls the measurement "
                                      "makes are counted");
        printf("%-36s %12s %12s %12s %8s\n", "call", "without ns", "with ns", "added ns", "ratio");
        for (int k = 0; k < 3; k++)
            printf("%-36s %12.1f %12.1f %12.1f %8.2f\n", names[k], a[k], b[k], b[k] - a[k],
                   b[k] / a[k]);
        if (drv == 0)
            launch_found = a[1];
        if (drv == 1)
            launch_plain = b[1];
        if (drv == 2)
            launch_base = a[1];
        if (drv == 2)
            printf("launch with a non-binding compute limit: %.1f ns added per launch vs no "
                   "interposer (ratio %.2f), %.1f ns vs the interposer without a limit\n",
                   b[1] - launch_base, b[1] / launch_base, b[1] - launch_plain);
        if (drv == 3)
            printf("launch with a non-binding compute limit, driver as found: %.1f ns added per "
                   "launch vs no interposer (ratio %.2f; this pass's own baseline %.1f ns, the "
                   "first table's %.1f ns)\n",
                   b[1] - a[1], b[1] / a[1], a[1], launch_found);
    }
    unsetenv("TESSEL_CUDA_CORE_LIMIT");
    {
        char reg[PATH_MAX + 64];
        snprintf(reg, sizeof reg, "rm -rf '%s'", regdir);
        if (system(reg) != 0)
            fprintf(stderr, "bench-interposer: could not remove %s\n", regdir);
    }
    /* The startup runs use the driver found first, as the first table. */
    if (savedlp)
        setenv("LD_LIBRARY_PATH", savedlp, 1);
    else
        unsetenv("LD_LIBRARY_PATH");
    free(savedlp);

    /* Startup: 3 alternating runs per side, the one with the lowest mean
     * kept (as above: the least disturbed by the machine's other work).
     * Each run uses a fresh slice file. */
    uint64_t *s0 = calloc((size_t)nprocs, sizeof *s0), *s1 = calloc((size_t)nprocs, sizeof *s1);
    uint64_t *t0 = calloc((size_t)nprocs, sizeof *t0), *t1 = calloc((size_t)nprocs, sizeof *t1);
    double m0 = 1e300, m1 = 1e300;
    for (int rep = 0; rep < 3; rep++) {
        unlink(slice);
        if (startup(self, NULL, nprocs, t0) < 0 || startup(self, preload, nprocs, t1) < 0) {
            fprintf(stderr, "bench-interposer: a startup child failed\n");
            unlink(slice);
            return 1;
        }
        if (mean(t0, nprocs) < m0) {
            m0 = mean(t0, nprocs);
            memcpy(s0, t0, (size_t)nprocs * sizeof *s0);
        }
        if (mean(t1, nprocs) < m1) {
            m1 = mean(t1, nprocs);
            memcpy(s1, t1, (size_t)nprocs * sizeof *s1);
        }
    }
    free(t0);
    free(t1);
    int p99 = (nprocs * 99) / 100;
    if (p99 >= nprocs)
        p99 = nprocs - 1;
    printf("\nstartup of %d processes at once in one slice (first dlsym .. cuInit returned;\n"
           "best of 3 runs by mean)\n",
           nprocs);
    printf("%-36s %12s %12s %12s\n", "", "mean us", "median us", "p99 us");
    printf("%-36s %12.1f %12.1f %12.1f\n", "without interposer", mean(s0, nprocs) / 1e3,
           s0[nprocs / 2] / 1e3, s0[p99] / 1e3);
    printf("%-36s %12.1f %12.1f %12.1f\n", "with interposer", mean(s1, nprocs) / 1e3,
           s1[nprocs / 2] / 1e3, s1[p99] / 1e3);
    printf("%-36s %12.1f %12.1f %12.1f\n", "added", (mean(s1, nprocs) - mean(s0, nprocs)) / 1e3,
           ((double)s1[nprocs / 2] - (double)s0[nprocs / 2]) / 1e3,
           ((double)s1[p99] - (double)s0[p99]) / 1e3);
    free(s0);
    free(s1);
    unlink(slice);
    return 0;
}
