/* test_tty.c - the ring of a job's terminal output kept for a client (agent/tty.h), and the
 * terminal itself: a PTY and its socket, driven through tagent_tty_* as tessel-shim does.
 * A container job's (ctr_session): a master given by the runtime (tagent_tty_set_master), and
 * EXEC through a runtime that stays the process's parent while the process leads a session of
 * its own: both killed when the job ends. */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/tty.h"
#include "libutil/term.h"

static tagent_ring_t ring;

static void ring_keep(void **state)
{
    (void)state;
    memset(&ring, 0, sizeof ring);
    /* Without drop (a client attached): only what fits is taken. */
    static uint8_t big[TAGENT_TTY_RING + 100];
    memset(big, 'a', sizeof big);
    assert_int_equal(tagent_ring_put(&ring, big, TAGENT_TTY_RING - 10, false),
                     TAGENT_TTY_RING - 10);
    assert_int_equal(tagent_ring_put(&ring, "0123456789abc", 13, false), 10);
    assert_int_equal(ring.len, TAGENT_TTY_RING);
    assert_int_equal(tagent_ring_room(&ring), 0);
    assert_int_equal(ring.lost, 0);
    assert_memory_equal(ring.buf + TAGENT_TTY_RING - 10, "0123456789", 10);
    tagent_ring_consume(&ring, TAGENT_TTY_RING - 4);
    assert_int_equal(ring.len, 4);
    assert_memory_equal(ring.buf, "6789", 4);
    tagent_ring_consume(&ring, 100); /* more than there is: empty */
    assert_int_equal(ring.len, 0);
}

static void ring_drop(void **state)
{
    (void)state;
    memset(&ring, 0, sizeof ring);
    static uint8_t big[TAGENT_TTY_RING + 100];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (uint8_t)(i % 251);
    /* Without a client: the oldest give way and are counted. */
    assert_int_equal(tagent_ring_put(&ring, big, 1000, true), 1000);
    assert_int_equal(tagent_ring_put(&ring, big, TAGENT_TTY_RING, true), TAGENT_TTY_RING);
    assert_int_equal(ring.len, TAGENT_TTY_RING);
    assert_int_equal(ring.lost, 1000);
    assert_memory_equal(ring.buf, big, TAGENT_TTY_RING);
    /* More than a ring at once: its last ring-full stays. */
    memset(&ring, 0, sizeof ring);
    tagent_ring_put(&ring, "xyz", 3, true);
    assert_int_equal(tagent_ring_put(&ring, big, sizeof big, true), sizeof big);
    assert_int_equal(ring.len, TAGENT_TTY_RING);
    assert_int_equal(ring.lost, 3 + 100);
    assert_memory_equal(ring.buf, big + 100, TAGENT_TTY_RING);
    /* A little over the room: exactly that much of the oldest goes. */
    memset(&ring, 0, sizeof ring);
    tagent_ring_put(&ring, big, TAGENT_TTY_RING - 5, true);
    tagent_ring_put(&ring, "0123456789", 10, true);
    assert_int_equal(ring.lost, 5);
    assert_memory_equal(ring.buf, big + 5, TAGENT_TTY_RING - 10);
    assert_memory_equal(ring.buf + TAGENT_TTY_RING - 10, "0123456789", 10);
}

/* Run the terminal's loop until pred or about 2 s of polls. */
static void spin(tagent_tty_t *t, int rounds)
{
    for (int i = 0; i < rounds; i++) {
        struct pollfd p[TAGENT_TTY_NFDS];
        int n = tagent_tty_pollfds(t, p);
        if (poll(p, (nfds_t)n, 10) > 0)
            tagent_tty_handle(t, p, n, NULL);
    }
}

static int dial(const char *path)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    int c = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    assert_true(c >= 0);
    assert_int_equal(connect(c, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(send(c, "a", 1, 0), 1); /* ATTACH */
    return c;
}

static ssize_t recv_wait(int fd, uint8_t *buf, size_t len, tagent_tty_t *t)
{
    for (int i = 0; i < 200; i++) {
        ssize_t n = recv(fd, buf, len, MSG_DONTWAIT);
        if (n >= 0 || errno != EAGAIN)
            return n;
        spin(t, 1);
    }
    return -1;
}

static void terminal(void **state)
{
    (void)state;
    char dir[] = "/tmp/test-tty-XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/tty.sock", dir);
    tsl_error_t err;
    tagent_tty_t *t = tagent_tty_open(path, true, -1, -1, &err);
    assert_non_null(t);
    int pts = tagent_tty_slave(t);
    struct winsize ws;
    assert_int_equal(ioctl(pts, TIOCGWINSZ, &ws), 0);
    assert_int_equal(ws.ws_row, 24);
    assert_int_equal(ws.ws_col, 80);
    /* Output before any client: kept for the first one. */
    assert_int_equal(write(pts, "before\n", 7), 7);
    spin(t, 5);
    int c = dial(path);
    uint8_t m[TSL_TERM_MSG_MAX + 1];
    ssize_t n = recv_wait(c, m, sizeof m, t);
    assert_true(n > 1);
    assert_int_equal(m[0], TSL_TERM_OUTPUT);
    assert_memory_equal(m + 1, "before\r\n", 8); /* the terminal's ONLCR */
    /* A resize reaches the terminal, clamped. */
    uint8_t r[5] = {TSL_TERM_RESIZE, 0xff, 0xff, 0, 40};
    assert_int_equal(send(c, r, 5, 0), 5);
    spin(t, 5);
    assert_int_equal(ioctl(pts, TIOCGWINSZ, &ws), 0);
    assert_int_equal(ws.ws_row, TSL_TERM_DIM_MAX);
    assert_int_equal(ws.ws_col, 40);
    /* Typed input reaches the job's side. */
    struct termios tio;
    tcgetattr(pts, &tio);
    cfmakeraw(&tio);
    tcsetattr(pts, TCSANOW, &tio);
    assert_int_equal(send(c, "iabc", 4, 0), 4);
    spin(t, 5);
    char in[8] = "";
    assert_int_equal(read(pts, in, sizeof in), 3);
    assert_memory_equal(in, "abc", 3);
    /* A second client takes the terminal; the first is told and closed. */
    int c2 = dial(path);
    spin(t, 5);
    n = recv_wait(c, m, sizeof m, t);
    assert_true(n > 1);
    assert_int_equal(m[0], TSL_TERM_NOTICE);
    assert_int_equal(recv_wait(c, m, sizeof m, t), 0);
    close(c);
    /* The end: the last output, then EXIT, then the socket closes and is removed. */
    assert_int_equal(write(pts, "last", 4), 4);
    spin(t, 5);
    tagent_tty_finish(t, "exit 3", NULL);
    n = recv(c2, m, sizeof m, 0);
    assert_int_equal(n, 5);
    assert_memory_equal(m, "olast", 5);
    n = recv(c2, m, sizeof m, 0);
    assert_int_equal(n, 7);
    assert_memory_equal(m, "xexit 3", 7);
    assert_int_equal(recv(c2, m, sizeof m, 0), 0);
    close(c2);
    assert_int_equal(access(path, F_OK), -1);
    rmdir(dir);
}

/* tagent_exec_fn of the test: argv on pts, forked as tessel-shim does it. */
static pid_t test_exec(void *arg, char **argv, int pts, char *why, size_t wlen)
{
    (void)arg;
    pid_t pid = fork();
    if (pid == 0) {
        setsid();
        ioctl(pts, TIOCSCTTY, 0);
        dup2(pts, 0);
        dup2(pts, 1);
        dup2(pts, 2);
        execvp(argv[0], argv);
        _exit(127);
    }
    if (pid < 0)
        snprintf(why, wlen, "fork failed");
    return pid;
}

static void exec_session(void **state)
{
    (void)state;
    char dir[] = "/tmp/test-tty-XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/tty.sock", dir);
    tsl_error_t err;
    /* A job without a terminal of its own: ATTACH is refused, EXEC is served. */
    tagent_tty_t *t = tagent_tty_open(path, false, -1, -1, &err);
    assert_non_null(t);
    assert_int_equal(tagent_tty_slave(t), -1);
    int c = dial(path); /* ATTACH */
    uint8_t m[TSL_TERM_MSG_MAX + 1];
    spin(t, 5);
    ssize_t n = recv_wait(c, m, sizeof m, t);
    assert_true(n > 1);
    assert_int_equal(m[0], TSL_TERM_NOTICE);
    close(c);
    /* EXEC before an exec function is set: refused with the end "error exec". */
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    static const char cmd[] = "esh\0-c\0echo hi-$((6*7)); exit 3";
    c = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    assert_int_equal(connect(c, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(send(c, cmd, sizeof cmd, 0), (ssize_t)sizeof cmd);
    spin(t, 3);
    assert_int_equal(recv_wait(c, m, sizeof m, t) > 0 && m[0] == TSL_TERM_NOTICE, 1);
    n = recv_wait(c, m, sizeof m, t);
    assert_int_equal(n, 11);
    assert_memory_equal(m, "xerror exec", 11);
    close(c);
    tagent_tty_set_exec(t, test_exec, NULL);
    c = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    assert_int_equal(connect(c, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(send(c, cmd, sizeof cmd, 0), (ssize_t)sizeof cmd);
    /* Its output, then its end once reaped (the shim's loop reaps; here the test). */
    char out[256] = "";
    size_t olen = 0;
    bool ended = false;
    for (int i = 0; i < 400 && !ended; i++) {
        spin(t, 1);
        int st;
        pid_t w = waitpid(-1, &st, WNOHANG);
        if (w > 0)
            assert_true(tagent_tty_reaped(t, w, st));
        while ((n = recv(c, m, sizeof m, MSG_DONTWAIT)) > 0) {
            if (m[0] == TSL_TERM_OUTPUT && olen + (size_t)n < sizeof out) {
                memcpy(out + olen, m + 1, (size_t)n - 1);
                olen += (size_t)n - 1;
            } else if (m[0] == TSL_TERM_EXIT) {
                assert_int_equal(n, 7);
                assert_memory_equal(m, "xexit 3", 7);
                ended = true;
            }
        }
    }
    assert_true(ended);
    assert_non_null(strstr(out, "hi-42"));
    assert_false(tagent_tty_reaped(t, 1, 0)); /* not one of its processes */
    close(c);
    tagent_tty_finish(t, "exit 0", NULL);
    rmdir(dir);
}

/* tagent_exec_console_fn of the test, as crun exec: a runtime process (the returned pid, in a
 * group of its own) forks the process in a session of its own on a terminal the "runtime"
 * made, and waits for it; the master comes back.  The process's pid into inner. */
static pid_t inner;
static pid_t test_console(void *arg, char **argv, int *ptm, pid_t *sid, char *why, size_t wlen)
{
    (void)arg;
    int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    char name[64];
    int pfd[2];
    if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0 || ptsname_r(m, name, sizeof name) != 0 ||
        pipe(pfd) < 0) {
        snprintf(why, wlen, "no terminal");
        return -1;
    }
    pid_t rt = fork();
    if (rt == 0) {
        setsid();
        pid_t p = fork();
        if (p == 0) {
            setsid();
            int s = open(name, O_RDWR);
            ioctl(s, TIOCSCTTY, 0);
            dup2(s, 0);
            dup2(s, 1);
            dup2(s, 2);
            pid_t me = getpid();
            if (write(pfd[1], &me, sizeof me) != (ssize_t)sizeof me)
                _exit(126);
            execvp(argv[0], argv);
            _exit(127);
        }
        int st;
        waitpid(p, &st, 0);
        _exit(WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st));
    }
    close(pfd[1]);
    assert_int_equal(read(pfd[0], &inner, sizeof inner), (ssize_t)sizeof inner);
    close(pfd[0]);
    *ptm = m;
    pid_t s = 0;
    *sid = ioctl(m, TIOCGSID, &s) == 0 ? s : 0;
    return rt;
}

static void ctr_session(void **state)
{
    (void)state;
    /* The test reaps the process its runtime leaves (tessel-shim is a subreaper too). */
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    char dir[] = "/tmp/test-tty-XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/tty.sock", dir);
    tsl_error_t err;
    tagent_tty_t *t = tagent_tty_open(path, false, -1, -1, &err);
    assert_non_null(t);
    /* The runtime's master: the job's terminal from then on. */
    int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    char name[64];
    assert_true(m >= 0 && grantpt(m) == 0 && unlockpt(m) == 0);
    assert_int_equal(ptsname_r(m, name, sizeof name), 0);
    int s = open(name, O_RDWR | O_NOCTTY);
    assert_true(s >= 0);
    tagent_tty_set_master(t, m);
    struct winsize ws;
    assert_int_equal(ioctl(s, TIOCGWINSZ, &ws), 0);
    assert_int_equal(ws.ws_row * 1000 + ws.ws_col, 24 * 1000 + 80);
    int c = dial(path);
    assert_int_equal(write(s, "from-ctr", 8), 8);
    uint8_t msg[TSL_TERM_MSG_MAX + 1];
    ssize_t n = recv_wait(c, msg, sizeof msg, t);
    assert_true(n > 1);
    assert_int_equal(msg[0], TSL_TERM_OUTPUT);
    assert_memory_equal(msg + 1, "from-ctr", 8);

    /* EXEC through the runtime: the process runs, its session is known. */
    tagent_tty_set_exec_console(t, test_console, NULL);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    static const char cmd[] = "esleep\0"
                              "100";
    int e = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    assert_int_equal(connect(e, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(send(e, cmd, sizeof cmd, 0), (ssize_t)sizeof cmd);
    inner = 0;
    for (int i = 0; i < 200 && inner == 0; i++)
        spin(t, 1);
    assert_true(inner > 0);
    assert_int_equal(kill(inner, 0), 0);
    /* The job ends: the runtime and the process are killed, the client told. */
    tagent_tty_finish(t, "exit 0", NULL);
    /* Reaped by its runtime or, the runtime killed first, by this process (a subreaper). */
    bool gone = false;
    for (int i = 0; i < 500 && !gone; i++) {
        while (waitpid(-1, NULL, WNOHANG) > 0) {
        }
        gone = kill(inner, 0) < 0 && errno == ESRCH;
        if (!gone)
            usleep(10000);
    }
    assert_true(gone);
    bool told = false;
    while ((n = recv(e, msg, sizeof msg, MSG_DONTWAIT)) > 0)
        told |= n == 9 && memcmp(msg, "xsignal 9", 9) == 0;
    assert_true(told);
    close(e);
    close(c);
    close(s);
    rmdir(dir);
    prctl(PR_SET_CHILD_SUBREAPER, 0);
}

static void too_long(void **state)
{
    (void)state;
    char path[200];
    memset(path, 'a', sizeof path - 1);
    path[0] = '/';
    path[sizeof path - 1] = '\0';
    tsl_error_t err;
    errno = 0;
    assert_null(tagent_tty_open(path, true, -1, -1, &err));
    assert_int_equal(errno, ENAMETOOLONG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ring_keep),    cmocka_unit_test(ring_drop), cmocka_unit_test(terminal),
        cmocka_unit_test(exec_session), cmocka_unit_test(too_long),  cmocka_unit_test(ctr_session),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
