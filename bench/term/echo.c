/* bench-term-echo: how long a keystroke takes to come back through a job's terminal
 * (docs/terminal.md, "Measured").  One byte is sent, the time until it is echoed is taken, N
 * times, one keystroke at a time (a person typing), and the percentiles printed:
 *
 *   bench-term-echo tessel URL TOKEN JOB N   through tesseld's WebSocket and the job's shim
 *                                            (tclient_term_*: what `tessel attach` does)
 *   bench-term-echo local N                  the floor: a pseudo-terminal of this process's
 *                                            own with `cat` on it (the kernel's echo alone)
 *
 * The job's terminal echoes (the line discipline, as for a person's shell); `cat >/dev/null`
 * reads the lines so that its input queue never fills.  Output: one line "p50 p90 p99 max" in
 * microseconds. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "libutil/term.h"
#include "tessel/client.h"

static long long now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int cmp(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

static void report(long long *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    printf("%lld %lld %lld %lld\n", v[n / 2], v[n * 9 / 10], v[n * 99 / 100], v[n - 1]);
}

/* What came back for the keystroke: set when an OUTPUT holds the byte awaited. */
static int want = -1, got;

static void on_msg(void *arg, const uint8_t *m, size_t len)
{
    (void)arg;
    if (len > 1 && m[0] == TSL_TERM_OUTPUT && memchr(m + 1, want, len - 1))
        got = 1;
}

/* The key of round i: letters, a return every 60 (cat then reads the line). */
static char key(int i)
{
    return i % 60 == 59 ? '\r' : (char)('a' + i % 26);
}

static int via_tessel(const char *url, const char *token, long long id, int n)
{
    tsl_error_t err;
    tclient_t *c = tclient_new(url, token, &err);
    tclient_term_t *t = c ? tclient_term_open(c, id, on_msg, NULL, &err) : NULL;
    if (!t) {
        fprintf(stderr, "bench-term-echo: %s\n", err.text);
        return 1;
    }
    long long *v = calloc((size_t)n, sizeof *v);
    /* Let the replay of what the job wrote before come and go. */
    for (long long until = now_us() + 300000; now_us() < until;) {
        struct pollfd p = {.fd = tclient_term_fd(t), .events = tclient_term_events(t)};
        poll(&p, 1, 50);
        if (tclient_term_io(t, p.revents, &err) != 0)
            return 1;
    }
    for (int i = 0; i < n; i++) {
        char k = key(i);
        uint8_t m[2] = {TSL_TERM_INPUT, (uint8_t)k};
        want = k == '\r' ? '\n' : k;
        got = 0;
        long long t0 = now_us();
        tclient_term_send(t, m, 2);
        while (!got) {
            struct pollfd p = {.fd = tclient_term_fd(t), .events = tclient_term_events(t)};
            if (poll(&p, 1, 5000) <= 0) {
                fprintf(stderr, "bench-term-echo: no echo in 5 s\n");
                return 1;
            }
            if (tclient_term_io(t, p.revents, &err) != 0) {
                fprintf(stderr, "bench-term-echo: %s\n", err.text);
                return 1;
            }
        }
        v[i] = now_us() - t0;
    }
    report(v, n);
    tclient_term_free(t);
    tclient_destroy(c);
    free(v);
    return 0;
}

static int local(int n)
{
    int ptm = posix_openpt(O_RDWR | O_NOCTTY);
    if (ptm < 0 || grantpt(ptm) < 0 || unlockpt(ptm) < 0)
        return 1;
    pid_t pid = fork();
    if (pid == 0) {
        setsid();
        int pts = open(ptsname(ptm), O_RDWR);
        dup2(pts, 0);
        dup2(open("/dev/null", O_WRONLY), 1);
        execlp("cat", "cat", (char *)NULL);
        _exit(127);
    }
    long long *v = calloc((size_t)n, sizeof *v);
    usleep(100000);
    for (int i = 0; i < n; i++) {
        char k = key(i), b[256];
        want = k == '\r' ? '\n' : k;
        long long t0 = now_us();
        if (write(ptm, &k, 1) != 1)
            return 1;
        for (int seen = 0; !seen;) {
            struct pollfd p = {.fd = ptm, .events = POLLIN};
            if (poll(&p, 1, 5000) <= 0)
                return 1;
            ssize_t r = read(ptm, b, sizeof b);
            seen = r > 0 && memchr(b, want, (size_t)r) != NULL;
        }
        v[i] = now_us() - t0;
    }
    report(v, n);
    kill(pid, 9);
    waitpid(pid, NULL, 0);
    free(v);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 6 && strcmp(argv[1], "tessel") == 0)
        return via_tessel(argv[2], argv[3], atoll(argv[4]), atoi(argv[5]));
    if (argc == 3 && strcmp(argv[1], "local") == 0)
        return local(atoi(argv[2]));
    fprintf(stderr, "usage: bench-term-echo tessel URL TOKEN JOB N | local N\n");
    return 2;
}
