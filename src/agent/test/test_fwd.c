/* test_fwd.c - a service replica's forwarder (agent/fwd.h): the socket's checks and modes, and
 * the copying loop against a scripted TCP server on 127.0.0.1 (round trips, a client that
 * sends nothing while another is served, a half-close, 1 MiB back through full buffers, a
 * replica that refuses, a peer the forwarder does not admit). */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/fwd.h"

/* Bytes the server sends for "big": more than the forwarder's buffers many times over. */
#define BIG (1u << 20)

static char dir[64];
static char sock_path[96];
static pid_t server_pid, fwd_pid;
static int server_port;

/* The scripted replica: a child per connection; reads a line (or up to EOF) and answers:
 * "echo X" -> "X", "big" -> BIG bytes of a pattern, "wait" -> reads to EOF, then "got-eof". */
static void serve_one(int c)
{
    char req[256];
    size_t len = 0;
    while (len < sizeof req - 1) {
        ssize_t r = read(c, req + len, 1);
        if (r <= 0 || req[len] == '\n')
            break;
        len++;
    }
    req[len] = '\0';
    if (strncmp(req, "echo ", 5) == 0) {
        if (write(c, req + 5, len - 5) < 0)
            _exit(1);
    } else if (strcmp(req, "big") == 0) {
        static char buf[BIG];
        for (size_t i = 0; i < BIG; i++)
            buf[i] = (char)(i * 7 % 251);
        size_t off = 0;
        while (off < BIG) {
            ssize_t w = write(c, buf + off, BIG - off);
            if (w <= 0)
                _exit(1);
            off += (size_t)w;
        }
    } else if (strcmp(req, "wait") == 0) {
        char b;
        while (read(c, &b, 1) > 0) {
        }
        if (write(c, "got-eof", 7) < 0)
            _exit(1);
    }
    close(c);
    _exit(0);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/test_fwd.XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    chmod(dir, 0755);
    snprintf(sock_path, sizeof sock_path, "%s/r1.sock", dir);
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 64) < 0 ||
        getsockname(l, (struct sockaddr *)&a, &al) < 0)
        return -1;
    server_port = ntohs(a.sin_port);
    server_pid = fork();
    if (server_pid == 0) {
        /* Ends with the test, whatever happens to it, and never holds its output (the
         * harness reads it to its end). */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int nul = open("/dev/null", O_WRONLY);
        dup2(nul, 1);
        dup2(nul, 2);
        signal(SIGCHLD, SIG_IGN);
        for (;;) {
            int c = accept(l, NULL, NULL);
            if (c < 0)
                continue;
            if (fork() == 0)
                serve_one(c);
            close(c);
        }
    }
    close(l);
    return server_pid > 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    if (fwd_pid > 0) {
        kill(fwd_pid, SIGKILL);
        waitpid(fwd_pid, NULL, 0);
        fwd_pid = 0;
    }
    kill(server_pid, SIGKILL);
    waitpid(server_pid, NULL, 0);
    unlink(sock_path);
    rmdir(dir);
    return 0;
}

/* A forwarder on sock_path to port, admitting uid/gid (and root): the loop in a child. */
static void start_fwd(int port, uid_t uid, gid_t gid)
{
    tsl_error_t err;
    int l = tagent_fwd_listen(sock_path, uid, gid, &err);
    assert_true(l >= 0);
    tagent_fwd_peer_t p = {.uid = uid, .gid = gid, .port = port};
    fwd_pid = fork();
    assert_true(fwd_pid >= 0);
    if (fwd_pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int nul = open("/dev/null", O_WRONLY);
        dup2(nul, 1);
        tagent_fwd_loop(l, &p);
        _exit(1);
    }
    close(l);
}

static int dial(void)
{
    int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", sock_path);
    assert_true(c >= 0);
    assert_int_equal(connect(c, (struct sockaddr *)&a, sizeof a), 0);
    return c;
}

/* Everything c sends until its end, into buf (at most cap); the count, -1 on an error. */
static ssize_t read_all(int c, char *buf, size_t cap)
{
    size_t len = 0;
    for (;;) {
        ssize_t r = read(c, buf + len, cap - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return errno == ECONNRESET ? (ssize_t)len : -1;
        if (r == 0 || (len += (size_t)r) == cap)
            return (ssize_t)len;
    }
}

static void send_str(int c, const char *s)
{
    assert_int_equal(send(c, s, strlen(s), MSG_NOSIGNAL), (ssize_t)strlen(s));
}

/* The socket: root's directory only, 0660, owner and group as asked; a stale socket replaced,
 * anything else at the name refused; unlink removes it. */
static void listen_checks(void **state)
{
    (void)state;
    tsl_error_t err;
    int l = tagent_fwd_listen(sock_path, 4242, 4343, &err);
    assert_true(l >= 0);
    struct stat st;
    assert_int_equal(lstat(sock_path, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0660);
    assert_int_equal(st.st_uid, 4242);
    assert_int_equal(st.st_gid, 4343);
    close(l);
    /* Left behind by a shim killed before it cleaned up: replaced. */
    l = tagent_fwd_listen(sock_path, 4242, 4343, &err);
    assert_true(l >= 0);
    close(l);
    assert_int_equal(tagent_fwd_unlink(sock_path), 0);
    assert_int_equal(lstat(sock_path, &st), -1);
    assert_int_equal(tagent_fwd_unlink(sock_path), 0); /* nothing there: fine */
    /* Anything but a socket at the name: refused, left alone. */
    int f = open(sock_path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    assert_true(f >= 0);
    close(f);
    assert_int_equal(tagent_fwd_listen(sock_path, 4242, 4343, &err), -1);
    assert_int_equal(errno, EEXIST);
    assert_int_equal(tagent_fwd_unlink(sock_path), -1);
    assert_int_equal(errno, EEXIST);
    assert_int_equal(lstat(sock_path, &st), 0);
    unlink(sock_path);
    /* A directory others may write: refused. */
    chmod(dir, 0777);
    assert_int_equal(tagent_fwd_listen(sock_path, 4242, 4343, &err), -1);
    assert_int_equal(errno, EPERM);
    assert_non_null(strstr(err.text, "root's"));
    chmod(dir, 0755);
    /* A path longer than a socket's, and a relative one. */
    char longp[200];
    memset(longp, 'a', sizeof longp - 1);
    longp[0] = '/';
    longp[sizeof longp - 1] = '\0';
    assert_int_equal(tagent_fwd_listen(longp, 0, 0, &err), -1);
    assert_int_equal(errno, ENAMETOOLONG);
    assert_int_equal(tagent_fwd_listen("rel/r1.sock", 0, 0, &err), -1);
    assert_int_equal(errno, EINVAL);
}

/* Round trips; a connection that sends nothing blocks no other. */
static void copy_both_ways(void **state)
{
    (void)state;
    start_fwd(server_port, 4242, 4343);
    int idle = dial(); /* sends nothing, for the whole test */
    for (int i = 0; i < 20; i++) {
        int c = dial();
        char req[32], want[16], got[64];
        snprintf(want, sizeof want, "r%d", i);
        snprintf(req, sizeof req, "echo %s\n", want);
        send_str(c, req);
        ssize_t n = read_all(c, got, sizeof got);
        assert_int_equal(n, (ssize_t)strlen(want));
        assert_memory_equal(got, want, (size_t)n);
        close(c);
    }
    /* A half-close: the request ends with the client's end of stream; the answer still
     * comes back. */
    int c = dial();
    send_str(c, "wait\nsome body");
    assert_int_equal(shutdown(c, SHUT_WR), 0);
    char got[64];
    ssize_t n = read_all(c, got, sizeof got);
    assert_int_equal(n, 7);
    assert_memory_equal(got, "got-eof", 7);
    close(c);
    close(idle);
}

/* 1 MiB from the replica, through buffers of TAGENT_FWD_BUF, byte for byte, while the client
 * reads slowly at first. */
static void big_answer(void **state)
{
    (void)state;
    start_fwd(server_port, 4242, 4343);
    int c = dial();
    send_str(c, "big\n");
    usleep(100 * 1000); /* the forwarder's buffers and the sockets fill meanwhile */
    static char got[BIG + 16];
    ssize_t n = read_all(c, got, sizeof got);
    assert_int_equal(n, BIG);
    for (size_t i = 0; i < BIG; i++)
        if (got[i] != (char)(i * 7 % 251))
            fail_msg("byte %zu differs", i);
    close(c);
}

/* Nothing listens on the replica's port: the client's connection ends, the forwarder lives. */
static void replica_refuses(void **state)
{
    (void)state;
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(l, (struct sockaddr *)&a, &al), 0);
    close(l); /* a port with nothing on it */
    start_fwd(ntohs(a.sin_port), 4242, 4343);
    for (int i = 0; i < 3; i++) {
        int c = dial();
        /* The forwarder may have closed it already (EPIPE): what counts is the end below. */
        if (send(c, "echo x\n", 7, MSG_NOSIGNAL) < 0)
            assert_true(errno == EPIPE || errno == ECONNRESET);
        char got[16];
        assert_int_equal(read_all(c, got, sizeof got), 0);
        close(c);
    }
    assert_int_equal(waitpid(fwd_pid, NULL, WNOHANG), 0);
}

/* A peer neither root, nor the account, nor of the group: closed at once, nothing forwarded
 * (the socket's mode opened for the test, so that only SO_PEERCRED decides). */
static void peer_refused(void **state)
{
    (void)state;
    start_fwd(server_port, 4242, 4343);
    chmod(sock_path, 0666);
    pid_t kid = fork();
    assert_true(kid >= 0);
    if (kid == 0) {
        if (syscall(SYS_setgroups, 0, NULL) < 0 || syscall(SYS_setgid, 65534) < 0 ||
            syscall(SYS_setuid, 65534) < 0)
            _exit(2);
        int c = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        snprintf(a.sun_path, sizeof a.sun_path, "%s", sock_path);
        if (connect(c, (struct sockaddr *)&a, sizeof a) < 0)
            _exit(3);
        if (send(c, "echo no\n", 8, MSG_NOSIGNAL) < 0) {
            /* closed already: fine */
        }
        char got[16];
        _exit(read_all(c, got, sizeof got) == 0 ? 0 : 4);
    }
    int st;
    assert_int_equal(waitpid(kid, &st, 0), kid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    /* The account itself is admitted (root here, as the test runs). */
    int c = dial();
    send_str(c, "echo yes\n");
    char got[16];
    assert_int_equal(read_all(c, got, sizeof got), 3);
    close(c);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    if (geteuid() != 0) {
        /* The socket's owner and group are set with chown: root's work, as in the shim. */
        printf("1..1\nnot ok 1 - test_fwd must run as root (the shim's forwarder is set up by "
               "root)\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(listen_checks, setup, teardown),
        cmocka_unit_test_setup_teardown(copy_both_ways, setup, teardown),
        cmocka_unit_test_setup_teardown(big_answer, setup, teardown),
        cmocka_unit_test_setup_teardown(replica_refuses, setup, teardown),
        cmocka_unit_test_setup_teardown(peer_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
