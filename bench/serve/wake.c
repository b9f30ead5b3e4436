/* wake.c - bench-serve-wake: what the hops of a proxied request cost on this machine before any
 * work is done in them: a byte sent through a chain of processes and back (each hop a process
 * that reads from the one before and writes to the next, over Unix stream sockets), after an
 * idle gap between messages, as requests at a low rate find every process asleep.  A request
 * straight to a replica is one hop (client -> replica); through the services' proxy it is three
 * (client -> HAProxy -> forwarder -> replica), each process woken once on the way there and
 * once on the way back (docs/serving.md, "What a hop costs").
 *
 *   bench-serve-wake [--count 500] [--gap-us 20000] [--hops 1,3]
 *
 * Prints, per number of hops, the median and p90 round trip in microseconds, and the
 * difference of the medians against the first.  --gap-us 0 sends the next byte at once (the
 * processes stay awake: the cost of the system calls and of switching alone). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HOPS_MAX 8

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

static int io1(int fd, char *c, int wr)
{
    for (;;) {
        ssize_t r = wr ? write(fd, c, 1) : read(fd, c, 1);
        if (r == 1)
            return 0;
        if (r < 0 && errno == EINTR)
            continue;
        return -1;
    }
}

/* Hop i: reads a byte from its left end, passes it on to hop i + 1 (if any) and waits for it
 * back, then answers on its left end; exits at the end of its input. */
static void hop(int left, int right)
{
    char c;
    while (io1(left, &c, 0) == 0) {
        if (right >= 0 && (io1(right, &c, 1) < 0 || io1(right, &c, 0) < 0))
            break;
        if (io1(left, &c, 1) < 0)
            break;
    }
    _exit(0);
}

/* Round trips through a chain of n hops: their median and p90 in ns, in med and p90.  0, or -1
 * when a process or socket could not be made. */
static int chain(int n, int count, int gap_us, long long *med, long long *p90)
{
    int sv[HOPS_MAX][2];
    pid_t pid[HOPS_MAX];
    for (int i = 0; i < n; i++)
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv[i]) < 0)
            return -1;
    for (int i = 0; i < n; i++) {
        pid[i] = fork();
        if (pid[i] < 0)
            return -1;
        if (pid[i] == 0) {
            /* Only its own two ends stay open, so that each hop sees its input end. */
            for (int k = 0; k < n; k++) {
                if (k != i)
                    close(sv[k][1]);
                if (k != i + 1)
                    close(sv[k][0]);
            }
            hop(sv[i][1], i + 1 < n ? sv[i + 1][0] : -1);
        }
    }
    for (int i = 0; i < n; i++) {
        close(sv[i][1]);
        if (i > 0)
            close(sv[i][0]);
    }
    long long *rt = malloc((size_t)count * sizeof *rt);
    int rc = rt ? 0 : -1;
    for (int k = 0; rc == 0 && k < count; k++) {
        if (gap_us > 0) {
            struct timespec g = {gap_us / 1000000, (long)(gap_us % 1000000) * 1000};
            nanosleep(&g, NULL);
        }
        char c = 'x';
        long long t0 = now_ns();
        if (io1(sv[0][0], &c, 1) < 0 || io1(sv[0][0], &c, 0) < 0)
            rc = -1;
        rt[k] = now_ns() - t0;
    }
    close(sv[0][0]);
    for (int i = 0; i < n; i++)
        waitpid(pid[i], NULL, 0);
    if (rc == 0) {
        qsort(rt, (size_t)count, sizeof *rt, cmp_ll);
        *med = rt[count / 2];
        *p90 = rt[(count * 9) / 10];
    }
    free(rt);
    return rc;
}

int main(int argc, char **argv)
{
    int count = 500, gap_us = 20000, hops[HOPS_MAX], nh = 0;
    const char *list = "1,3";
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--count") == 0)
            count = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--gap-us") == 0)
            gap_us = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--hops") == 0)
            list = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--count N] [--gap-us US] [--hops 1,3]\n", argv[0]);
            return 2;
        }
    }
    char *copy = strdup(list), *save = NULL;
    for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; t && nh < HOPS_MAX;
         t = strtok_r(NULL, ",", &save))
        hops[nh++] = atoi(t);
    free(copy);
    if (count < 10 || gap_us < 0 || nh == 0) {
        fprintf(stderr, "%s: --count must be at least 10, --gap-us 0 or more, --hops 1..%d\n",
                argv[0], HOPS_MAX);
        return 2;
    }
    for (int i = 0; i < nh; i++)
        if (hops[i] < 1 || hops[i] > HOPS_MAX) {
            fprintf(stderr, "%s: --hops: each 1..%d\n", argv[0], HOPS_MAX);
            return 2;
        }
    signal(SIGPIPE, SIG_IGN);
    printf("# bench-serve-wake: %d round trips a chain, %d us between them\n", count, gap_us);
    printf("%-6s %12s %12s %16s\n", "hops", "p50 us", "p90 us", "p50 - first us");
    long long first = 0;
    for (int i = 0; i < nh; i++) {
        long long med, p90;
        if (chain(hops[i], count, gap_us, &med, &p90) < 0) {
            fprintf(stderr, "%s: %d hops: %s\n", argv[0], hops[i], strerror(errno));
            return 1;
        }
        if (i == 0)
            first = med;
        printf("%-6d %12.1f %12.1f %16.1f\n", hops[i], med / 1e3, p90 / 1e3, (med - first) / 1e3);
    }
    return 0;
}
