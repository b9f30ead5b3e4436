/* bench_ckpt.c - what suspending a job that holds SIZE of device memory through the driver's
 * checkpoint API costs, against the floor: copying SIZE device-to-host and back.
 *
 *   bench-ckpt [SIZE [ROUNDS]]        SIZE in tsl_parse_size syntax (default 8G), ROUNDS 3
 *
 * A target process (forked first, so that it may use CUDA) allocates SIZE of device memory and
 * writes every byte of it.  Then, ROUNDS times, one after the other on the same memory:
 *   baseline = the target itself copies its SIZE device-to-host (cuMemcpyDtoH_v2, into a fresh
 *              malloc'd buffer, as a checkpoint's host copy is) and back (cuMemcpyHtoD_v2)
 *   suspend  = this process: cuCheckpointProcessLock + cuCheckpointProcessCheckpoint of it
 *   resume   = cuCheckpointProcessRestore + cuCheckpointProcessUnlock
 * Interleaved, so that a change of the machine's load hits both alike; at most 2 x SIZE of host
 * memory at any time.  Prints each round and the medians side by side with their ratio; the
 * target (issue 21): ratio <= 2.
 *
 * Built against the fake driver (tests/fake: its "device" memory is host memory, so the
 * baseline is the host's copy bandwidth); on a GPU host, LD_LIBRARY_PATH naming the real
 * libcuda.so.1 runs the same comparison there (driver r570 or later).  Needs TESSEL_FAKE_*
 * only on the fake: it sets TESSEL_FAKE_GPUS and TESSEL_FAKE_STATE itself when they are unset.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cudaabi/cuda_abi.h"
#include "libutil/size.h"

#define MAX_ROUNDS 20

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, int rc)
{
    fprintf(stderr, "bench-ckpt: %s failed (CUresult %d)\n", what, rc);
    exit(1);
}

#define CK(call)                                                                                   \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_ != CUDA_SUCCESS)                                                                   \
            die(#call, rc_);                                                                       \
    } while (0)

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void context(void)
{
    CUcontext c;
    CK(cuDevicePrimaryCtxRetain(&c, 0));
    CK(cuCtxSetCurrent(c));
}

/* The target: allocates and fills size, says 'r'; then for each 'c' copies it to a fresh host
 * buffer and back and answers the seconds it took (a double); exits at 'q'. */
static void target(int in, int out, size_t size)
{
    char b;
    CUdeviceptr p;
    CK(cuInit(0));
    context();
    CK(cuMemAlloc_v2(&p, size));
    CK(cuMemsetD8_v2(p, 0x5a, size));
    if (write(out, "r", 1) != 1)
        _exit(2);
    while (read(in, &b, 1) == 1 && b == 'c') {
        double t0 = now_s();
        void *host = malloc(size);
        if (!host)
            _exit(3);
        CK(cuMemcpyDtoH_v2(host, p, size));
        CK(cuMemcpyHtoD_v2(p, host, size));
        free(host);
        double t = now_s() - t0;
        if (write(out, &t, sizeof t) != sizeof t)
            _exit(2);
    }
    _exit(0);
}

int main(int argc, char **argv)
{
    uint64_t size = 8ull << 30;
    int rounds = argc > 2 ? atoi(argv[2]) : 3;
    tsl_error_t err;
    if ((argc > 1 && tsl_parse_size(argv[1], &size, &err) < 0) || size == 0 || rounds < 1 ||
        rounds > MAX_ROUNDS) {
        fprintf(stderr, "usage: bench-ckpt [SIZE [ROUNDS (1..%d)]]\n", MAX_ROUNDS);
        return 2;
    }
    char state[64] = "";
    if (!getenv("TESSEL_FAKE_STATE")) {
        snprintf(state, sizeof state, "/tmp/bench-ckpt-%d", (int)getpid());
        setenv("TESSEL_FAKE_STATE", state, 1);
    }
    char gpus[64];
    snprintf(gpus, sizeof gpus, "1xBench:%lluM", (unsigned long long)(size >> 20) + 512);
    setenv("TESSEL_FAKE_GPUS", gpus, 0);

    int down[2], up[2];
    if (pipe(down) < 0 || pipe(up) < 0)
        return perror("pipe"), 1;
    pid_t kid = fork();
    if (kid < 0)
        return perror("fork"), 1;
    if (kid == 0)
        target(down[0], up[1], (size_t)size);

    char b;
    if (read(up[0], &b, 1) != 1) {
        fprintf(stderr, "bench-ckpt: the target could not allocate %llu bytes\n",
                (unsigned long long)size);
        return 1;
    }
    CK(cuInit(0));
    int ver = 0;
    cuDriverGetVersion(&ver);
    double copy[MAX_ROUNDS], susp[MAX_ROUNDS], res[MAX_ROUNDS];
    for (int i = 0; i < rounds; i++) {
        if (write(down[1], "c", 1) != 1 ||
            read(up[0], &copy[i], sizeof copy[i]) != (ssize_t)sizeof copy[i]) {
            fprintf(stderr, "bench-ckpt: the target's copy failed\n");
            return 1;
        }
        double t0 = now_s();
        CK(cuCheckpointProcessLock(kid, NULL));
        CK(cuCheckpointProcessCheckpoint(kid, NULL));
        double t1 = now_s();
        CK(cuCheckpointProcessRestore(kid, NULL));
        CK(cuCheckpointProcessUnlock(kid, NULL));
        susp[i] = t1 - t0;
        res[i] = now_s() - t1;
        printf("round %d: copy D2H+H2D %.3f s, suspend %.3f s, resume %.3f s\n", i + 1, copy[i],
               susp[i], res[i]);
        fflush(stdout);
    }
    if (write(down[1], "q", 1) != 1)
        return 1;
    waitpid(kid, NULL, 0);
    if (state[0])
        unlink(state);

    double both[MAX_ROUNDS];
    for (int i = 0; i < rounds; i++)
        both[i] = susp[i] + res[i];
    double c = median(copy, rounds), s = median(susp, rounds), r = median(res, rounds),
           sr = median(both, rounds);
    printf("size %llu MiB, driver %d, %d rounds (medians)\n", (unsigned long long)(size >> 20), ver,
           rounds);
    printf("baseline copy D2H+H2D  %8.3f s  (%.2f GiB/s each way)\n", c,
           2.0 * (double)size / (double)(1ull << 30) / c);
    printf("suspend (lock+ckpt)    %8.3f s\n", s);
    printf("resume (restore+unlock)%8.3f s\n", r);
    printf("suspend + resume       %8.3f s  ratio to baseline %.2f (target <= 2)\n", sr, sr / c);
    return 0;
}
