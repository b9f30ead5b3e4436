/* test_sockowner.c - tsl_tcp_peer_owner: the account at the other end of a loopback TCP
 * connection, as the kernel knows it (IPv4 and IPv6), another account's socket, a peer that
 * closed, and sockets that are not TCP. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "libutil/sockowner.h"

#define OTHER_UID 65534 /* nobody */

/* A listener on the loopback address of family af; its address into sa. */
static int listener(int af, struct sockaddr_storage *sa, socklen_t *len)
{
    int l = socket(af, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(l >= 0);
    memset(sa, 0, sizeof *sa);
    if (af == AF_INET) {
        struct sockaddr_in *a = (void *)sa;
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        *len = sizeof *a;
    } else {
        struct sockaddr_in6 *a = (void *)sa;
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_loopback;
        *len = sizeof *a;
    }
    assert_int_equal(bind(l, (struct sockaddr *)sa, *len), 0);
    assert_int_equal(listen(l, 8), 0);
    assert_int_equal(getsockname(l, (struct sockaddr *)sa, len), 0);
    return l;
}

static void own_socket(int af)
{
    struct sockaddr_storage sa;
    socklen_t len;
    int l = listener(af, &sa, &len);
    int c = socket(af, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_int_equal(connect(c, (struct sockaddr *)&sa, len), 0);
    int s = accept(l, NULL, NULL);
    assert_true(s >= 0);
    uid_t uid = (uid_t)-1;
    /* Both ends: the server's view of the client, and the client's of the server. */
    assert_int_equal(tsl_tcp_peer_owner(s, &uid), 1);
    assert_int_equal(uid, geteuid());
    uid = (uid_t)-1;
    assert_int_equal(tsl_tcp_peer_owner(c, &uid), 1);
    assert_int_equal(uid, geteuid());
    /* The client closes its end: no process holds it (an orphan in FIN_WAIT2 or a time-wait
     * entry, which the kernel reports with uid 0): not an owner. */
    close(c);

    uid = 4242;
    assert_int_equal(tsl_tcp_peer_owner(s, &uid), 0);
    assert_int_equal(uid, 4242);
    close(s);
    close(l);
}

static void test_own_v4(void **state)
{
    (void)state;
    own_socket(AF_INET);
}

static void test_own_v6(void **state)
{
    (void)state;
    own_socket(AF_INET6);
}

/* A socket made by a process of another account: its uid, not ours (as root: the child drops
 * to nobody before it makes its socket). */
static void test_other_account(void **state)
{
    (void)state;
    if (geteuid() != 0)
        fail_msg("needs root: a client of another account (uid %d) is made by setuid", OTHER_UID);
    struct sockaddr_storage sa;
    socklen_t len;
    int l = listener(AF_INET, &sa, &len);
    int go[2];
    assert_int_equal(pipe(go), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char b;
        if (setgid(OTHER_UID) < 0 || setuid(OTHER_UID) < 0)
            _exit(2);
        int c = socket(AF_INET, SOCK_STREAM, 0);
        if (c < 0 || connect(c, (struct sockaddr *)&sa, len) < 0)
            _exit(3);
        (void)!read(go[0], &b, 1); /* holds its socket until the parent has looked */
        _exit(0);
    }
    int s = accept(l, NULL, NULL);
    assert_true(s >= 0);
    uid_t uid = 0;
    int rc = tsl_tcp_peer_owner(s, &uid);
    assert_int_equal(write(go[1], "x", 1), 1);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_int_equal(rc, 1);
    assert_int_equal(uid, OTHER_UID);
    close(s);
    close(l);
    close(go[0]);
    close(go[1]);
}

/* Not a connected TCP socket: an error, never an owner. */
static void test_not_tcp(void **state)
{
    (void)state;
    int sv[2];
    uid_t uid;
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    assert_int_equal(tsl_tcp_peer_owner(sv[0], &uid), -1);
    assert_int_equal(errno, EAFNOSUPPORT);
    close(sv[0]);
    close(sv[1]);
    int u = socket(AF_INET, SOCK_DGRAM, 0);
    assert_int_equal(tsl_tcp_peer_owner(u, &uid), -1);
    close(u);
    int t = socket(AF_INET, SOCK_STREAM, 0); /* not connected */
    assert_int_equal(tsl_tcp_peer_owner(t, &uid), -1);
    assert_int_equal(errno, ENOTCONN);
    close(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_own_v4),
        cmocka_unit_test(test_own_v6),
        cmocka_unit_test(test_other_account),
        cmocka_unit_test(test_not_tcp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
