/* fwd.c - a service replica's network namespace and the forwarder to it (see fwd.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent/fwd.h"

/* ---- the namespace -------------------------------------------------------------------------- */

int tagent_fwd_netns(tsl_error_t *err)
{
    int host = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (host < 0)
        return tsl_errprintf(err, "/proc/self/ns/net: %s", strerror(errno));
    if (unshare(CLONE_NEWNET) < 0) {
        int e = errno;
        close(host);
        errno = e;
        return tsl_errprintf(err, "unshare(CLONE_NEWNET): %s", strerror(e));
    }
    /* In the new namespace now: its loopback comes down; bring it up. */
    int ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    int e = ns < 0 ? errno : 0;
    const char *what = "/proc/self/ns/net";
    if (ns >= 0) {
        int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        struct ifreq ifr;
        memset(&ifr, 0, sizeof ifr);
        snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
        if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0 ||
            (ifr.ifr_flags |= IFF_UP, ioctl(s, SIOCSIFFLAGS, &ifr) < 0)) {
            e = errno;
            what = "loopback up";
            close(ns);
            ns = -1;
        }
        if (s >= 0)
            close(s);
    }
    /* Back to the shim's own namespace, whatever happened. */
    if (setns(host, CLONE_NEWNET) < 0) {
        e = errno;
        what = "setns back";
        if (ns >= 0)
            close(ns);
        ns = -1;
    }
    close(host);
    if (ns < 0) {
        errno = e;
        return tsl_errprintf(err, "%s: %s", what, strerror(e));
    }
    return ns;
}

/* ---- the socket ----------------------------------------------------------------------------- */

/* path's directory, opened (O_PATH) and checked: root's, writable by no one else.  The last
 * name goes to *name.  A descriptor, or -1 with errno. */
static int sock_dir(const char *path, const char **name)
{
    const char *slash = strrchr(path, '/');
    char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
    if (path[0] != '/' || !slash || !slash[1] || strlen(path) >= sizeof dir ||
        strcmp(slash + 1, ".") == 0 || strcmp(slash + 1, "..") == 0) {
        errno = strlen(path) >= sizeof dir ? ENAMETOOLONG : EINVAL;
        return -1;
    }
    memcpy(dir, path, (size_t)(slash - path));
    dir[slash - path] = '\0';
    int dfd = open(slash == path ? "/" : dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return -1;
    struct stat st;
    if (fstat(dfd, &st) < 0 || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
        close(dfd);
        errno = EPERM;
        return -1;
    }
    *name = slash + 1;
    return dfd;
}

/* Remove a socket at name below dfd; nothing there is fine, anything else EEXIST. */
static int unlink_sock(int dfd, const char *name)
{
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? 0 : -1;
    if (!S_ISSOCK(st.st_mode)) {
        errno = EEXIST;
        return -1;
    }
    return unlinkat(dfd, name, 0) < 0 && errno != ENOENT ? -1 : 0;
}

int tagent_fwd_listen(const char *path, uid_t uid, gid_t gid, tsl_error_t *err)
{
    return tagent_fwd_listen_mode(path, uid, gid, 0660, err);
}

int tagent_fwd_listen_mode(const char *path, uid_t uid, gid_t gid, mode_t mode, tsl_error_t *err)
{
    const char *name;
    int dfd = sock_dir(path, &name);
    if (dfd < 0)
        return tsl_errprintf(err, "%s: its directory must be root's, writable by no one else: %s",
                             path, strerror(errno));
    int fd = -1, e;
    if (unlink_sock(dfd, name) < 0) {
        e = errno;
        goto fail;
    }
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        e = errno;
        goto fail;
    }
    /* Bound through the checked directory's descriptor: the directory is root's, so nothing
     * can be renamed or planted in it between the check, the bind and the chown below. */
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (snprintf(a.sun_path, sizeof a.sun_path, "/proc/self/fd/%d/%s", dfd, name) >=
        (int)sizeof a.sun_path) {
        e = ENAMETOOLONG;
        goto fail;
    }
    /* Created 0600 (no moment where another account may connect), then opened to its two. */
    mode_t old = umask(0177);
    int rc = bind(fd, (struct sockaddr *)&a, sizeof a);
    e = errno;
    umask(old);
    if (rc < 0)
        goto fail;
    if (fchownat(dfd, name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0 ||
        fchmodat(dfd, name, mode & 0660, 0) < 0 || listen(fd, TAGENT_FWD_BACKLOG) < 0) {
        e = errno;
        unlinkat(dfd, name, 0);
        goto fail;
    }
    close(dfd);
    return fd;
fail:
    if (fd >= 0)
        close(fd);
    close(dfd);
    errno = e;
    return tsl_errprintf(err, "%s: %s", path, strerror(e));
}

int tagent_fwd_unlink(const char *path)
{
    const char *name;
    int dfd = sock_dir(path, &name);
    if (dfd < 0)
        return -1;
    int rc = unlink_sock(dfd, name);
    int e = errno;
    close(dfd);
    errno = e;
    return rc;
}

/* ---- the loop ------------------------------------------------------------------------------- */

/* One connection: c the client's (Unix), s the replica's (TCP); c2s and s2c the bytes on their
 * way, [off, len) still to write. */
typedef struct {
    int c, s;
    bool connecting; /* s's connect under way */
    bool c_eof, s_eof;
    bool c_shut, s_shut; /* the write side shut after the other's end */
    size_t c2s_off, c2s_len, s2c_off, s2c_len;
    char *c2s, *s2c;
} conn_t;

static void conn_close(conn_t *k)
{
    if (k->c >= 0)
        close(k->c);
    if (k->s >= 0)
        close(k->s);
    free(k->c2s);
    k->c = k->s = -1;
    k->c2s = k->s2c = NULL;
}

/* Whether the peer on fd (just accepted) may use the forwarder. */
static bool peer_ok(int fd, const tagent_fwd_peer_t *p)
{
    struct ucred cr;
    socklen_t len = sizeof cr;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 || len != sizeof cr)
        return false;
    return cr.uid == 0 || cr.uid == p->uid || (!p->no_group && cr.gid == p->gid);
}

/* A new connection for client fd c: its buffers and a non-blocking connect to the replica.
 * false when it cannot be made (the client is then closed by the caller). */
static bool conn_open(conn_t *k, int c, int port)
{
    memset(k, 0, sizeof *k);
    k->c = c;
    k->s = -1;
    k->c2s = malloc(2 * TAGENT_FWD_BUF);
    if (!k->c2s)
        return false;
    k->s2c = k->c2s + TAGENT_FWD_BUF;
    k->s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (k->s < 0)
        return false;
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (connect(k->s, (struct sockaddr *)&a, sizeof a) == 0)
        return true;
    if (errno != EINPROGRESS)
        return false;
    k->connecting = true;
    return true;
}

/* Read from fd into buf[len..] (at most TAGENT_FWD_BUF).  1: bytes read, 0: end of stream,
 * -1: an error, 2: nothing now. */
static int fill(int fd, char *buf, size_t *len)
{
    ssize_t r;
    do
        r = read(fd, buf + *len, TAGENT_FWD_BUF - *len);
    while (r < 0 && errno == EINTR);
    if (r > 0) {
        *len += (size_t)r;
        return 1;
    }
    if (r == 0)
        return 0;
    return errno == EAGAIN ? 2 : -1;
}

/* Write buf[*off..len) to fd; the buffer is emptied once all is written.  0, or -1 on an error
 * (the peer gone). */
static int flush(int fd, char *buf, size_t *off, size_t *len)
{
    while (*off < *len) {
        ssize_t w = send(fd, buf + *off, *len - *off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return errno == EAGAIN ? 0 : -1;
        *off += (size_t)w;
    }
    *off = *len = 0;
    return 0;
}

/* One connection's turn after poll (pc, ps: its two pollfds).  false: it is over. */
static bool conn_step(conn_t *k, const struct pollfd *pc, const struct pollfd *ps)
{
    if (k->connecting && ps->revents) {
        int soerr = 0;
        socklen_t l = sizeof soerr;
        if (getsockopt(k->s, SOL_SOCKET, SO_ERROR, &soerr, &l) < 0 || soerr)
            return false; /* the replica refused: the client sees the connection end */
        k->connecting = false;
    }
    if (k->connecting)
        return true;
    short cr = pc->revents, sr = ps->revents;
    if (cr & POLLNVAL || sr & POLLNVAL)
        return false;
    /* Client -> replica. */
    if ((cr & (POLLIN | POLLHUP | POLLERR)) && !k->c_eof && k->c2s_len < TAGENT_FWD_BUF) {
        int r = fill(k->c, k->c2s, &k->c2s_len);
        if (r < 0)
            return false;
        if (r == 0)
            k->c_eof = true;
    }
    if (k->c2s_len > k->c2s_off && flush(k->s, k->c2s, &k->c2s_off, &k->c2s_len) < 0)
        return false;
    /* Replica -> client. */
    if ((sr & (POLLIN | POLLHUP | POLLERR)) && !k->s_eof && k->s2c_len < TAGENT_FWD_BUF) {
        int r = fill(k->s, k->s2c, &k->s2c_len);
        if (r < 0)
            return false;
        if (r == 0)
            k->s_eof = true;
    }
    if (k->s2c_len > k->s2c_off && flush(k->c, k->s2c, &k->s2c_off, &k->s2c_len) < 0)
        return false;
    /* An end passed on once what came before it is written. */
    if (k->c_eof && !k->s_shut && k->c2s_len == 0) {
        shutdown(k->s, SHUT_WR);
        k->s_shut = true;
    }
    if (k->s_eof && !k->c_shut && k->s2c_len == 0) {
        shutdown(k->c, SHUT_WR);
        k->c_shut = true;
    }
    if (k->c_shut && k->s_shut)
        return false;
    /* A side that hung up with bytes still for it: nothing more can reach it. */
    if ((cr & (POLLHUP | POLLERR)) && k->s2c_len > 0 && !(cr & POLLOUT))
        return false;
    if ((sr & (POLLHUP | POLLERR)) && k->c2s_len > 0 && !(sr & POLLOUT))
        return false;
    return true;
}

/* The events a connection waits for on each side (0: none, the fd then left out of poll). */
static void conn_events(const conn_t *k, struct pollfd *pc, struct pollfd *ps)
{
    short ce = 0, se = 0;
    if (k->connecting) {
        se = POLLOUT;
    } else {
        if (!k->c_eof && k->c2s_len < TAGENT_FWD_BUF)
            ce |= POLLIN;
        if (k->s2c_len > 0)
            ce |= POLLOUT;
        if (!k->s_eof && k->s2c_len < TAGENT_FWD_BUF)
            se |= POLLIN;
        if (k->c2s_len > 0)
            se |= POLLOUT;
    }
    pc->fd = ce ? k->c : -1;
    pc->events = ce;
    pc->revents = 0;
    ps->fd = se ? k->s : -1;
    ps->events = se;
    ps->revents = 0;
}

/* Milliseconds the listener rests after the process ran out of descriptors (EMFILE): the
 * connections it holds end meanwhile, and the loop does not spin on a full table. */
#define FWD_EMFILE_PAUSE_MS 100

int tagent_fwd_loop(int lfd, const tagent_fwd_peer_t *p)
{
    static conn_t conns[TAGENT_FWD_MAX_CONN];
    static struct pollfd pfd[1 + 2 * TAGENT_FWD_MAX_CONN];
    size_t n = 0;
    bool paused = false;
    for (;;) {
        pfd[0].fd = n < TAGENT_FWD_MAX_CONN && !paused ? lfd : -1;
        pfd[0].events = POLLIN;
        pfd[0].revents = 0;
        for (size_t i = 0; i < n; i++)
            conn_events(&conns[i], &pfd[1 + 2 * i], &pfd[2 + 2 * i]);
        int rc = poll(pfd, 1 + 2 * n, paused ? FWD_EMFILE_PAUSE_MS : -1);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc < 0)
            return -1;
        paused = false;
        /* Each connection's turn; one that is over takes the last one's place. */
        size_t i = 0;
        while (i < n) {
            if (pfd[1 + 2 * i].revents || pfd[2 + 2 * i].revents) {
                if (!conn_step(&conns[i], &pfd[1 + 2 * i], &pfd[2 + 2 * i])) {
                    conn_close(&conns[i]);
                    n--;
                    if (i != n) {
                        conns[i] = conns[n];
                        pfd[1 + 2 * i] = pfd[1 + 2 * n];
                        pfd[2 + 2 * i] = pfd[2 + 2 * n];
                    }
                    continue;
                }
            }
            i++;
        }
        if (!(pfd[0].revents & POLLIN))
            continue;
        while (n < TAGENT_FWD_MAX_CONN) {
            int c = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (c < 0) {
                if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                    paused = true;
                break; /* EAGAIN: none left; ECONNABORTED and the like: the next poll */
            }
            if (!peer_ok(c, p)) {
                close(c);
                continue;
            }
            if (!conn_open(&conns[n], c, p->port)) {
                conn_close(&conns[n]);
                continue;
            }
            /* A connect that completed at once may already have bytes to move: the next poll
             * says so. */
            n++;
        }
    }
}

/* ---- the process ---------------------------------------------------------------------------- */

/* Every capability of this process, gone (effective, permitted, inheritable); the bounding
 * set does not matter, since the forwarder executes nothing. */
static int drop_caps(void)
{
    struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct d[2];
    memset(d, 0, sizeof d);
    return (int)syscall(SYS_capset, &h, d);
}

/* The forwarder's file descriptors: at least 1 + 2 * TAGENT_FWD_MAX_CONN and a few, raised to
 * what the hard limit allows (a shim may inherit 1024). */
static void raise_nofile(void)
{
    struct rlimit rl;
    rlim_t want = 2 * TAGENT_FWD_MAX_CONN + 64;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < want) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static void fwd_fail(const char *what)
{
    fprintf(stderr, "tessel-shim: forwarder: %s: %s\n", what, strerror(errno));
    _exit(1);
}

pid_t tagent_fwd_start(int lfd, int netns, const tagent_fwd_peer_t *p, long uid, long gid,
                       const char *const *cg, int n, tsl_error_t *err)
{
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0)
        return tsl_errprintf(err, "fork: %s", strerror(errno));
    if (pid > 0)
        return pid;
    /* The forwarder: keeps lfd (as 3), the namespace until it is joined, and stderr (the
     * shim's log). */
    if (netns == 3 && (netns = fcntl(3, F_DUPFD_CLOEXEC, 4)) < 0)
        fwd_fail("dup");
    if (lfd != 3 && dup3(lfd, 3, O_CLOEXEC) < 0)
        fwd_fail("dup");
    for (int c = 0; c < n; c++) {
        int fd = open(cg[c], O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, "0", 1) != 1)
            fwd_fail("cgroup");
        close(fd);
    }
    if (setns(netns, CLONE_NEWNET) < 0)
        fwd_fail("setns");
    close_range(4, ~0U, 0);
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0)
        fwd_fail("/dev/null");
    close(devnull);
    signal(SIGPIPE, SIG_IGN);
    raise_nofile();
    /* The job's account, without groups; or, for a job that runs as root, uid 0 without a
     * capability.  Either way no way back (checked), not dumpable (no ptrace or /proc/PID/mem
     * by the job's account, which runs the replica), no new privileges. */
    if (uid > 0) {
        if (syscall(SYS_setgroups, 0, NULL) < 0 || syscall(SYS_setgid, (gid_t)gid) < 0 ||
            syscall(SYS_setuid, (uid_t)uid) < 0)
            fwd_fail("setuid");
        if (syscall(SYS_setuid, 0) == 0 || geteuid() != (uid_t)uid || getuid() != (uid_t)uid) {
            errno = EPERM;
            fwd_fail("privdrop");
        }
    } else if (syscall(SYS_setgroups, 0, NULL) < 0) {
        fwd_fail("setgroups");
    }
    if (drop_caps() < 0)
        fwd_fail("capset");
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
        prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
        fwd_fail("prctl");
    /* The shim died before the death signal was set: nothing to serve for. */
    if (getppid() != parent)
        _exit(0);
    tagent_fwd_loop(3, p);
    fwd_fail("poll");
    return -1;
}
