/* tty.c - a job's terminal in tessel-shim (see tty.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "agent/tty.h"
#include "libutil/term.h"

/* Clients that may wait in the listen queue: tesseld connects one at a time per attach. */
#define TTY_BACKLOG 4
/* How long a new connection may take to say what it is for (tesseld sends it at once). */
#define TTY_HELLO_MS 1000
/* How long the end of an EXEC's process waits for its client to take the last output. */
#define TTY_EXEC_FLUSH_MS 500

/* A process started by EXEC, on a terminal of its own.  In use while cli >= 0 or pid > 0. */
typedef struct {
    int cli, ptm;
    pid_t pid;
    pid_t sid; /* a container's process: its session (the runtime is pid), or 0 */
    uint8_t out[TSL_TERM_MSG_MAX]; /* a message the client has not taken yet */
    size_t out_len;
    uint8_t in[TSL_TERM_INPUT_MAX];
    size_t in_len, in_off;
} exec_t;

struct tagent_tty {
    int ptm, pts, lsn, cli;
    bool ptm_eof;
    long uid, gid;
    tagent_exec_fn exec_fn;
    tagent_exec_console_fn console_fn;
    void *exec_arg;
    exec_t ex[TAGENT_EXEC_MAX];
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    dev_t sock_dev; /* the socket file this shim made: only it is removed at the end */
    ino_t sock_ino;
    tagent_ring_t ring;
    /* Typed input not yet taken by the PTY. */
    uint8_t in[TSL_TERM_INPUT_MAX];
    size_t in_len, in_off;
};

size_t tagent_ring_room(const tagent_ring_t *r)
{
    return sizeof r->buf - r->len;
}

void tagent_ring_consume(tagent_ring_t *r, size_t n)
{
    if (n > r->len)
        n = r->len;
    memmove(r->buf, r->buf + n, r->len - n);
    r->len -= n;
}

size_t tagent_ring_put(tagent_ring_t *r, const void *p, size_t n, bool drop)
{
    const uint8_t *b = p;
    if (!drop) {
        if (n > tagent_ring_room(r))
            n = tagent_ring_room(r);
        memcpy(r->buf + r->len, b, n);
        r->len += n;
        return n;
    }
    size_t taken = n;
    if (n >= sizeof r->buf) {
        /* Only the last ring-full of the new bytes stays. */
        r->lost += r->len + (n - sizeof r->buf);
        b += n - sizeof r->buf;
        n = sizeof r->buf;
        r->len = 0;
    } else if (n > tagent_ring_room(r)) {
        size_t gone = n - tagent_ring_room(r);
        r->lost += gone;
        tagent_ring_consume(r, gone);
    }
    memcpy(r->buf + r->len, b, n);
    r->len += n;
    return taken;
}

static void set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* A pseudo-terminal: the master (close-on-exec) into *ptm, the slave (close-on-exec, the job
 * user's when uid >= 0) into *pts, window 24x80.  0, or -1 with err. */
static int make_pty(long uid, long gid, int *ptm, int *pts, tsl_error_t *err)
{
    char name[64];
    *pts = -1;
    *ptm = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (*ptm < 0 || grantpt(*ptm) < 0 || unlockpt(*ptm) < 0 ||
        ptsname_r(*ptm, name, sizeof name) != 0) {
        tsl_errprintf(err, "pseudo-terminal: %s", strerror(errno));
        goto fail;
    }
    *pts = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (*pts < 0) {
        tsl_errprintf(err, "%s: %s", name, strerror(errno));
        goto fail;
    }
    /* The job's user owns its terminal, as login makes it (group tty when there is one, so
     * that write(1) and mesg work; the job's own group otherwise), readable by nobody else. */
    if (uid >= 0) {
        struct group *g = getgrnam("tty");
        gid_t tg = g ? g->gr_gid : (gid_t)gid;
        if (fchown(*pts, (uid_t)uid, tg) < 0 || fchmod(*pts, 0620) < 0) {
            tsl_errprintf(err, "%s: %s", name, strerror(errno));
            goto fail;
        }
    }
    struct winsize ws = {.ws_row = 24, .ws_col = 80};
    ioctl(*ptm, TIOCSWINSZ, &ws);
    set_nonblock(*ptm);
    return 0;
fail:;
    int saved = errno;
    if (*pts >= 0)
        close(*pts);
    if (*ptm >= 0)
        close(*ptm);
    *ptm = *pts = -1;
    errno = saved;
    return -1;
}

tagent_tty_t *tagent_tty_open(const char *sock_path, bool pty, long uid, long gid, tsl_error_t *err)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(sock_path) >= sizeof a.sun_path) {
        errno = ENAMETOOLONG;
        tsl_errprintf(err, "%s: too long for a socket's address", sock_path);
        return NULL;
    }
    tagent_tty_t *t = calloc(1, sizeof *t);
    if (!t) {
        tsl_errprintf(err, "out of memory");
        return NULL;
    }
    t->ptm = t->pts = t->lsn = t->cli = -1;
    t->ptm_eof = !pty;
    t->uid = uid;
    t->gid = gid;
    for (int k = 0; k < TAGENT_EXEC_MAX; k++)
        t->ex[k].cli = t->ex[k].ptm = -1;
    memcpy(t->path, sock_path, strlen(sock_path) + 1);
    memcpy(a.sun_path, sock_path, strlen(sock_path) + 1);
    if (pty && make_pty(uid, gid, &t->ptm, &t->pts, err) < 0)
        goto fail;
    t->lsn = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (t->lsn < 0) {
        tsl_errprintf(err, "socket: %s", strerror(errno));
        goto fail;
    }
    /* The state directory is root's (tesseld's): what is there at this name is an earlier
     * attempt's socket. */
    if (unlink(sock_path) < 0 && errno != ENOENT) {
        tsl_errprintf(err, "%s: %s", sock_path, strerror(errno));
        goto fail;
    }
    mode_t old = umask(077);
    int rc = bind(t->lsn, (struct sockaddr *)&a, sizeof a);
    umask(old);
    struct stat st;
    if (rc < 0 || listen(t->lsn, TTY_BACKLOG) < 0 || lstat(sock_path, &st) < 0) {
        tsl_errprintf(err, "%s: %s", sock_path, strerror(errno));
        goto fail;
    }
    t->sock_dev = st.st_dev;
    t->sock_ino = st.st_ino;
    return t;
fail:;
    int saved = errno;
    if (t->lsn >= 0)
        close(t->lsn);
    if (t->pts >= 0)
        close(t->pts);
    if (t->ptm >= 0)
        close(t->ptm);
    free(t);
    errno = saved;
    return NULL;
}

void tagent_tty_set_exec(tagent_tty_t *t, tagent_exec_fn fn, void *arg)
{
    t->exec_fn = fn;
    t->exec_arg = arg;
}

void tagent_tty_set_exec_console(tagent_tty_t *t, tagent_exec_console_fn fn, void *arg)
{
    t->console_fn = fn;
    t->exec_arg = arg;
}

void tagent_tty_set_master(tagent_tty_t *t, int ptm)
{
    if (t->ptm >= 0)
        close(t->ptm);
    t->ptm = ptm;
    t->ptm_eof = false;
    struct winsize ws = {.ws_row = 24, .ws_col = 80};
    ioctl(ptm, TIOCSWINSZ, &ws);
    set_nonblock(ptm);
}

int tagent_tty_slave(const tagent_tty_t *t)
{
    return t->pts;
}

void tagent_tty_close_slave(tagent_tty_t *t)
{
    if (t->pts >= 0)
        close(t->pts);
    t->pts = -1;
}

/* Send one message to the client without waiting.  0, 1 when it would wait (nothing sent), -1
 * when the client is gone (it is closed). */
static int send_msg(tagent_tty_t *t, const uint8_t *m, size_t n)
{
    ssize_t w = send(t->cli, m, n, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (w == (ssize_t)n)
        return 0;
    if (w < 0 && (errno == EAGAIN || errno == EINTR))
        return 1;
    close(t->cli);
    t->cli = -1;
    return -1;
}

/* A NOTICE or EXIT to fd, waiting up to wait_ms for room (best effort). */
static void send_text_fd(int fd, char type, const char *text, int wait_ms)
{
    uint8_t m[1 + TSL_TERM_TEXT_MAX];
    size_t n = strlen(text);
    if (n > TSL_TERM_TEXT_MAX)
        n = TSL_TERM_TEXT_MAX;
    m[0] = (uint8_t)type;
    memcpy(m + 1, text, n);
    if (wait_ms > 0) {
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        poll(&p, 1, wait_ms);
    }
    if (send(fd, m, n + 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
        /* The client is gone or full: it learns the end from the closed connection. */
    }
}

static void send_text(tagent_tty_t *t, char type, const char *text)
{
    uint8_t m[1 + TSL_TERM_TEXT_MAX];
    size_t n = strlen(text);
    if (n > TSL_TERM_TEXT_MAX)
        n = TSL_TERM_TEXT_MAX;
    m[0] = (uint8_t)type;
    memcpy(m + 1, text, n);
    if (t->cli >= 0)
        send_msg(t, m, n + 1);
}

/* Send what the ring holds, as long as the client takes it. */
static void flush_ring(tagent_tty_t *t)
{
    static uint8_t m[TSL_TERM_MSG_MAX];
    while (t->cli >= 0 && t->ring.len > 0) {
        size_t n = t->ring.len < TSL_TERM_OUTPUT_MAX ? t->ring.len : TSL_TERM_OUTPUT_MAX;
        m[0] = TSL_TERM_OUTPUT;
        memcpy(m + 1, t->ring.buf, n);
        if (send_msg(t, m, n + 1) != 0)
            return;
        tagent_ring_consume(&t->ring, n);
    }
}

/* Read what the PTY has now into the log and the ring.  With a client, at most what the ring
 * has room for (the job waits for the client); without, the ring's oldest bytes give way. */
static void read_ptm(tagent_tty_t *t, tagent_logcap_t *lc, size_t max_total)
{
    static uint8_t buf[TSL_TERM_OUTPUT_MAX];
    size_t total = 0;
    while (!t->ptm_eof && total < max_total) {
        size_t want = sizeof buf;
        if (t->cli >= 0 && tagent_ring_room(&t->ring) < want)
            want = tagent_ring_room(&t->ring);
        if (want == 0)
            break;
        ssize_t n = read(t->ptm, buf, want);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            break;
        if (n <= 0) {
            /* EIO: every process holding the slave has closed it. */
            t->ptm_eof = true;
            break;
        }
        tagent_logcap_write(lc, buf, (size_t)n);
        tagent_ring_put(&t->ring, buf, (size_t)n, t->cli < 0);
        total += (size_t)n;
        flush_ring(t);
    }
}

/* Write typed input that waits to the PTY. */
static void write_ptm(tagent_tty_t *t)
{
    while (t->in_off < t->in_len) {
        ssize_t n = write(t->ptm, t->in + t->in_off, t->in_len - t->in_off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n <= 0) {
            t->in_off = t->in_len; /* the terminal is gone: the input with it */
            break;
        }
        t->in_off += (size_t)n;
    }
    t->in_len = t->in_off = 0;
}

/* A message from the client. */
static void client_msg(tagent_tty_t *t)
{
    uint8_t m[TSL_TERM_MSG_MAX + 1];
    ssize_t n = recv(t->cli, m, sizeof m, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        close(t->cli);
        t->cli = -1;
        return;
    }
    tsl_term_msg_t msg;
    if (tsl_term_parse(m, (size_t)n, &msg) < 0)
        return; /* tesseld checks what it relays: nothing else comes */
    if (msg.type == TSL_TERM_INPUT) {
        memcpy(t->in, msg.data, msg.len);
        t->in_len = msg.len;
        t->in_off = 0;
        write_ptm(t);
    } else if (msg.type == TSL_TERM_RESIZE) {
        /* The kernel sends SIGWINCH to the terminal's foreground process group. */
        struct winsize ws = {.ws_row = (unsigned short)msg.rows,
                             .ws_col = (unsigned short)msg.cols};
        ioctl(t->ptm, TIOCSWINSZ, &ws);
    }
}

/* Attach c (a new client) to the job's terminal.  The one before is told and closed. */
static void attach_client(tagent_tty_t *t, int c)
{
    if (t->ptm < 0 && t->pts < 0) {
        send_text_fd(c, TSL_TERM_NOTICE, "this job has no terminal", 0);
        close(c);
        return;
    }
    if (t->cli >= 0) {
        send_text(t, TSL_TERM_NOTICE, "detached: the terminal was attached from elsewhere");
        if (t->cli >= 0)
            close(t->cli);
    }
    t->cli = c;
    if (t->ring.lost) {
        char text[TSL_TERM_TEXT_MAX];
        snprintf(text, sizeof text,
                 "%llu bytes of earlier output not shown (tessel logs has the whole)",
                 (unsigned long long)t->ring.lost);
        send_text(t, TSL_TERM_NOTICE, text);
        t->ring.lost = 0;
    }
    flush_ring(t);
}

static void exec_close(exec_t *e)
{
    if (e->cli >= 0)
        close(e->cli);
    if (e->ptm >= 0)
        close(e->ptm);
    e->cli = e->ptm = -1;
    e->out_len = e->in_len = e->in_off = 0;
}

/* Start an EXEC's process for client c.  On failure c is told why and closed. */
static void exec_client(tagent_tty_t *t, int c, const tsl_term_msg_t *m)
{
    exec_t *e = NULL;
    for (int k = 0; k < TAGENT_EXEC_MAX && !e; k++)
        if (t->ex[k].cli < 0 && t->ex[k].pid <= 0)
            e = &t->ex[k];
    char buf[TSL_TERM_MSG_MAX], *argv[TSL_TERM_EXEC_ARGS + 1], why[TSL_TERM_TEXT_MAX] = "";
    int pts = -1;
    tsl_error_t err;
    if (!t->exec_fn && !t->console_fn) {
        snprintf(why, sizeof why, "no new process can be started in this job");
    } else if (!e) {
        snprintf(why, sizeof why, "%d processes started by exec already run in this job",
                 TAGENT_EXEC_MAX);
    } else if (tsl_term_exec_argv(m, buf, argv) < 0) {
        snprintf(why, sizeof why, "exec: a malformed command");
    } else if (t->console_fn) {
        e->sid = 0;
        if ((e->pid = t->console_fn(t->exec_arg, argv, &e->ptm, &e->sid, why, sizeof why)) < 0) {
            e->pid = 0;
            e->ptm = -1;
            if (!why[0])
                snprintf(why, sizeof why, "exec: the process could not be started");
        } else {
            set_nonblock(e->ptm);
        }
    } else if (make_pty(t->uid, t->gid, &e->ptm, &pts, &err) < 0) {
        snprintf(why, sizeof why, "exec: %.200s", err.text);
    } else if ((e->pid = t->exec_fn(t->exec_arg, argv, pts, why, sizeof why)) < 0) {
        e->pid = 0;
        close(e->ptm);
        e->ptm = -1;
    }
    if (pts >= 0)
        close(pts);
    if (why[0]) {
        send_text_fd(c, TSL_TERM_NOTICE, why, 0);
        send_text_fd(c, TSL_TERM_EXIT, "error exec", 0);
        close(c);
        return;
    }
    e->cli = c;
}

/* A new client: tesseld (the shim's own uid) only; its first message says what for. */
static void client_new(tagent_tty_t *t)
{
    int c = accept4(t->lsn, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (c < 0)
        return;
    struct ucred cr;
    socklen_t cl = sizeof cr;
    if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 || cr.uid != geteuid()) {
        close(c);
        return;
    }
    struct pollfd p = {.fd = c, .events = POLLIN};
    uint8_t m[TSL_TERM_MSG_MAX + 1];
    ssize_t n = poll(&p, 1, TTY_HELLO_MS) == 1 ? recv(c, m, sizeof m, MSG_DONTWAIT) : -1;
    tsl_term_msg_t msg;
    if (n <= 0 || tsl_term_parse(m, (size_t)n, &msg) < 0) {
        close(c);
        return;
    }
    if (msg.type == TSL_TERM_ATTACH)
        attach_client(t, c);
    else if (msg.type == TSL_TERM_EXEC)
        exec_client(t, c, &msg);
    else
        close(c);
}

/* An EXEC's terminal has output: to its client, one message at a time. */
static void exec_out(exec_t *e)
{
    while (e->cli >= 0 && e->ptm >= 0) {
        if (e->out_len > 0) {
            ssize_t w = send(e->cli, e->out, e->out_len, MSG_DONTWAIT | MSG_NOSIGNAL);
            if (w < 0 && (errno == EAGAIN || errno == EINTR))
                return;
            if (w < 0) {
                /* The client is gone: its terminal hangs up (SIGHUP to the process). */
                exec_close(e);
                return;
            }
            e->out_len = 0;
        }
        ssize_t n = read(e->ptm, e->out + 1, TSL_TERM_OUTPUT_MAX);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        if (n <= 0) {
            /* EIO: nothing holds the terminal any more; the end comes with the reap. */
            close(e->ptm);
            e->ptm = -1;
            return;
        }
        e->out[0] = TSL_TERM_OUTPUT;
        e->out_len = (size_t)n + 1;
    }
}

/* A message from an EXEC's client. */
static void exec_in(exec_t *e)
{
    uint8_t m[TSL_TERM_MSG_MAX + 1];
    ssize_t n = recv(e->cli, m, sizeof m, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        exec_close(e); /* the terminal hangs up: SIGHUP to the process's foreground */
        return;
    }
    tsl_term_msg_t msg;
    if (tsl_term_parse(m, (size_t)n, &msg) < 0 || e->ptm < 0)
        return;
    if (msg.type == TSL_TERM_INPUT) {
        memcpy(e->in, msg.data, msg.len);
        e->in_len = msg.len;
        e->in_off = 0;
    } else if (msg.type == TSL_TERM_RESIZE) {
        struct winsize ws = {.ws_row = (unsigned short)msg.rows,
                             .ws_col = (unsigned short)msg.cols};
        ioctl(e->ptm, TIOCSWINSZ, &ws);
    }
}

static void exec_write(exec_t *e)
{
    while (e->ptm >= 0 && e->in_off < e->in_len) {
        ssize_t n = write(e->ptm, e->in + e->in_off, e->in_len - e->in_off);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        if (n <= 0)
            break;
        e->in_off += (size_t)n;
    }
    e->in_len = e->in_off = 0;
}

bool tagent_tty_reaped(tagent_tty_t *t, pid_t pid, int status)
{
    if (!t || pid <= 0)
        return false;
    for (int k = 0; k < TAGENT_EXEC_MAX; k++) {
        exec_t *e = &t->ex[k];
        if (e->pid != pid)
            continue;
        e->pid = 0;
        e->sid = 0;
        /* What its terminal holds now, then its end. */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        long long end = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + TTY_EXEC_FLUSH_MS;
        while (e->cli >= 0 && (e->ptm >= 0 || e->out_len > 0)) {
            exec_out(e);
            if (e->cli < 0 || (e->ptm < 0 && e->out_len == 0))
                break;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            long long left = end - ((long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
            if (left <= 0)
                break;
            struct pollfd p = {.fd = e->out_len ? e->cli : e->ptm,
                               .events = e->out_len ? POLLOUT : POLLIN};
            if (poll(&p, 1, (int)left) <= 0)
                break;
        }
        if (e->cli >= 0) {
            char text[32];
            if (WIFSIGNALED(status))
                snprintf(text, sizeof text, "signal %d", WTERMSIG(status));
            else
                snprintf(text, sizeof text, "exit %d", WEXITSTATUS(status));
            send_text_fd(e->cli, TSL_TERM_EXIT, text, 200);
        }
        exec_close(e);
        return true;
    }
    return false;
}

int tagent_tty_pollfds(tagent_tty_t *t, struct pollfd *p)
{
    int n = 0;
    short pe = 0;
    /* With a client and a full ring, the job waits for the client. */
    if (!t->ptm_eof && (t->cli < 0 || tagent_ring_room(&t->ring) > 0))
        pe |= POLLIN;
    if (t->in_len > 0)
        pe |= POLLOUT;
    p[n++] = (struct pollfd){.fd = pe ? t->ptm : -1, .events = pe};
    p[n++] = (struct pollfd){.fd = t->lsn, .events = POLLIN};
    short ce = 0;
    if (t->in_len == 0)
        ce |= POLLIN;
    if (t->ring.len > 0)
        ce |= POLLOUT;
    p[n++] = (struct pollfd){.fd = t->cli >= 0 ? t->cli : -1, .events = ce};
    for (int k = 0; k < TAGENT_EXEC_MAX; k++) {
        exec_t *e = &t->ex[k];
        short me = (e->out_len == 0 ? POLLIN : 0) | (e->in_len > 0 ? POLLOUT : 0);
        short ee = (e->in_len == 0 ? POLLIN : 0) | (e->out_len > 0 ? POLLOUT : 0);
        p[n++] = (struct pollfd){.fd = e->cli >= 0 && e->ptm >= 0 ? e->ptm : -1, .events = me};
        p[n++] = (struct pollfd){.fd = e->cli, .events = ee};
    }
    return n;
}

void tagent_tty_handle(tagent_tty_t *t, const struct pollfd *p, int n, tagent_logcap_t *lc)
{
    if (n < TAGENT_TTY_NFDS)
        return;
    if (p[0].fd >= 0 && (p[0].revents & POLLOUT))
        write_ptm(t);
    if (p[0].fd >= 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR)))
        read_ptm(t, lc, TAGENT_TTY_RING);
    if (p[2].fd >= 0 && t->cli == p[2].fd) {
        if (p[2].revents & POLLOUT)
            flush_ring(t);
        if (t->cli >= 0 && (p[2].revents & (POLLIN | POLLHUP | POLLERR)))
            client_msg(t);
    }
    for (int k = 0; k < TAGENT_EXEC_MAX; k++) {
        exec_t *e = &t->ex[k];
        const struct pollfd *pm = &p[3 + 2 * k], *pc = &p[4 + 2 * k];
        if (pc->fd >= 0 && pc->fd == e->cli && (pc->revents & POLLOUT))
            exec_out(e);
        if (pm->fd >= 0 && pm->fd == e->ptm && (pm->revents & POLLOUT))
            exec_write(e);
        if (pm->fd >= 0 && pm->fd == e->ptm && (pm->revents & (POLLIN | POLLHUP | POLLERR)))
            exec_out(e);
        if (pc->fd >= 0 && pc->fd == e->cli && (pc->revents & (POLLIN | POLLHUP | POLLERR))) {
            exec_in(e);
            exec_write(e);
        }
    }
    if (p[1].revents & POLLIN)
        client_new(t);
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void tagent_tty_finish(tagent_tty_t *t, const char *exit_text, tagent_logcap_t *lc)
{
    if (!t)
        return;
    /* What the job wrote last (a process it left behind may hold the terminal still: only
     * what is there now is read). */
    if (t->ptm >= 0)
        read_ptm(t, lc, 2u << 20);
    long long end = now_ms() + TAGENT_TTY_FLUSH_MS;
    while (t->cli >= 0 && t->ring.len > 0) {
        flush_ring(t);
        long long left = end - now_ms();
        if (t->cli < 0 || t->ring.len == 0 || left <= 0)
            break;
        struct pollfd p = {.fd = t->cli, .events = POLLOUT};
        poll(&p, 1, (int)left);
    }
    if (t->cli >= 0) {
        /* The end waits for room too (it is small: a full socket empties within the flush). */
        struct pollfd p = {.fd = t->cli, .events = POLLOUT};
        poll(&p, 1, 200);
        send_text(t, TSL_TERM_EXIT, exit_text);
    }
    if (t->cli >= 0)
        close(t->cli);
    /* Processes started by exec do not outlive the job. */
    for (int k = 0; k < TAGENT_EXEC_MAX; k++) {
        exec_t *e = &t->ex[k];
        if (e->pid > 0) {
            kill(-e->pid, SIGKILL);
            /* A container's process leads a session of its own on its terminal. */
            if (e->sid > 1)
                kill(-e->sid, SIGKILL);
            if (e->cli >= 0) {
                send_text_fd(e->cli, TSL_TERM_NOTICE, "the job has ended", 0);
                send_text_fd(e->cli, TSL_TERM_EXIT, "signal 9", 0);
            }
        }
        exec_close(e);
    }
    close(t->lsn);
    /* Only the socket this shim made (a later attempt's shim may have made its own there). */
    struct stat st;
    if (lstat(t->path, &st) == 0 && st.st_dev == t->sock_dev && st.st_ino == t->sock_ino)
        unlink(t->path);
    if (t->pts >= 0)
        close(t->pts);
    if (t->ptm >= 0)
        close(t->ptm);
    free(t);
}
