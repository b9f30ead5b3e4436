/* term.c - GET /v1/jobs/{id}/attach and /exec: a job's terminal, and a new process in a running
 * job on a terminal of its own, over a WebSocket (RFC 6455, docs/terminal.md).
 *
 * The handler checks the caller (the job's owner only), the job (running, submitted with a
 * terminal) and the handshake's headers, then answers 101 and keeps the connection's thread:
 * relay() connects to the shim's socket (STATE/tty.sock, agent/tty.h) and copies term.h
 * messages both ways, one WebSocket binary message for one datagram.  wslay frames the
 * WebSocket (no frame parser here).  What comes from the client is checked before it goes on:
 * INPUT and RESIZE only (RESIZE clamped), at most TSL_TERM_MSG_MAX bytes a message (wslay
 * closes with 1009 above it); anything else closes the connection with 1008.
 *
 * Flow control: the shim's output is read only while fewer than RELAY_QUEUE_MAX messages wait
 * for the client (a client that does not read makes the job wait, as a terminal does); the
 * client's input is read only while less than RELAY_IN_HIGH bytes wait for the shim.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <wslay/wslay.h>

#include "daemon/api/api.h"
#include "daemon/termconn.h"
#include "daemon/ticket.h"
#include "libutil/term.h"

/* Messages from the shim queued for the client at most: 8 x 16 KiB. */
#define RELAY_QUEUE_MAX 8
/* Bytes of the client's messages waiting for the shim: above RELAY_IN_HIGH the client's
 * socket is not read; one read of RELAY_READ_MAX bytes holds at most that many messages'
 * worth, so RELAY_IN_CAP is never reached by a client that follows the protocol. */
#define RELAY_IN_HIGH  (32u << 10)
#define RELAY_IN_CAP   (64u << 10)
#define RELAY_READ_MAX 4096
/* How often the relay looks whether tesseld is stopping (ms). */
#define RELAY_TICK_MS 250
/* How long to wait for the client's close after ours (ms). */
#define RELAY_CLOSE_WAIT_MS 2000
/* How long the handler waits for the shim's socket of a job that has just started (the shim
 * makes it before the job runs, tesseld records the start when it has spawned the shim). */
#define ATTACH_WAIT_MS 3000

typedef struct {
    int shim; /* the shim's socket, connected by the handler */
    int64_t id;
    char user[TSTORE_NAME_MAX + 1];
    tessd_t *d;
    /* The first message to the shim: ATTACH, or EXEC with the argv. */
    uint8_t first[TSL_TERM_MSG_MAX];
    size_t first_len;
    bool counted;      /* one of the user's terminal connections (termconn.h) */
    long long idle_ms; /* --term-idle-timeout */
} attach_t;

typedef struct {
    int fd; /* the client's socket */
    const char *extra;
    size_t extra_len;
    int shim;
    /* Messages for the shim: [2-byte length][message]... */
    uint8_t in[RELAY_IN_CAP];
    size_t in_len;
    bool bad;          /* the client broke the protocol: closing */
    long long last_ms; /* the last bytes from the client (a ping too) or output of the job */
} relay_t;

/* The terminal connections open at once (termconn.h), under d->lock. */
static tsd_termconns_t conns;

void api_ws_upgrade(thttp_reply_t *rep, const char *key, thttp_upgrade_f fn, void *arg,
                    void (*free_fn)(void *))
{
    rep->status = 101;
    snprintf(rep->extra_name, sizeof rep->extra_name, "Upgrade");
    snprintf(rep->extra_value, sizeof rep->extra_value, "websocket");
    snprintf(rep->extra2_name, sizeof rep->extra2_name, "Sec-WebSocket-Accept");
    char acc[29];
    tsl_ws_accept(key, acc);
    snprintf(rep->extra2_value, sizeof rep->extra2_value, "%s", acc);
    rep->upgrade = fn;
    rep->upgrade_arg = arg;
    rep->upgrade_free = free_fn;
}

static void attach_free(void *arg)
{
    attach_t *a = arg;
    if (a->shim >= 0)
        close(a->shim);
    if (a->counted) {
        pthread_mutex_lock(&a->d->lock);
        tsd_termconn_give(&conns, a->user);
        pthread_mutex_unlock(&a->d->lock);
    }
    free(a);
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static ssize_t on_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags, void *user)
{
    (void)flags;
    relay_t *r = user;
    if (r->extra_len > 0) {
        size_t n = len < r->extra_len ? len : r->extra_len;
        memcpy(buf, r->extra, n);
        r->extra += n;
        r->extra_len -= n;
        return (ssize_t)n;
    }
    /* The shim does not take input now: the client waits. */
    if (r->in_len > RELAY_IN_HIGH) {
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    ssize_t n;
    do
        n = recv(r->fd, buf, len < RELAY_READ_MAX ? len : RELAY_READ_MAX, MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    if (n <= 0) {
        wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
        return -1;
    }
    r->last_ms = now_ms(); /* any frame of the client's, a ping too, is activity */
    return n;
}

static ssize_t on_send(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags,
                       void *user)
{
    (void)flags;
    relay_t *r = user;
    ssize_t n;
    do
        n = send(r->fd, data, len, MSG_DONTWAIT | MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    if (n < 0) {
        wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
        return -1;
    }
    return n;
}

static void refuse(wslay_event_context_ptr ctx, relay_t *r, uint16_t code, const char *why)
{
    if (r->bad)
        return;
    r->bad = true;
    wslay_event_queue_close(ctx, code, (const uint8_t *)why, strlen(why));
    wslay_event_shutdown_read(ctx);
}

/* A message from the client: checked, then queued for the shim. */
static void on_msg(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *arg,
                   void *user)
{
    relay_t *r = user;
    if (wslay_is_ctrl_frame(arg->opcode) || r->bad)
        return; /* wslay answers pings and closes itself */
    if (arg->opcode != WSLAY_BINARY_FRAME) {
        refuse(ctx, r, WSLAY_CODE_UNSUPPORTED_DATA, "binary messages only (docs/terminal.md)");
        return;
    }
    tsl_term_msg_t m;
    if (tsl_term_parse(arg->msg, arg->msg_length, &m) < 0 ||
        (m.type != TSL_TERM_INPUT && m.type != TSL_TERM_RESIZE)) {
        refuse(ctx, r, WSLAY_CODE_POLICY_VIOLATION, "not a terminal message (docs/terminal.md)");
        return;
    }
    uint8_t resize[5];
    const uint8_t *p = arg->msg;
    size_t n = arg->msg_length;
    if (m.type == TSL_TERM_RESIZE) {
        n = tsl_term_resize_msg(resize, m.rows, m.cols);
        p = resize;
    }
    if (r->in_len + 2 + n > sizeof r->in) {
        refuse(ctx, r, WSLAY_CODE_POLICY_VIOLATION, "too much input at once");
        return;
    }
    r->in[r->in_len] = (uint8_t)(n >> 8);
    r->in[r->in_len + 1] = (uint8_t)n;
    memcpy(r->in + r->in_len + 2, p, n);
    r->in_len += 2 + n;
}

/* Send what waits for the shim, as long as it takes it.  -1 when the shim is gone. */
static int flush_in(relay_t *r)
{
    size_t off = 0;
    while (off < r->in_len) {
        size_t n = (size_t)r->in[off] << 8 | r->in[off + 1];
        ssize_t w = send(r->shim, r->in + off + 2, n, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w < 0 && (errno == EAGAIN || errno == EINTR))
            break;
        if (w < 0)
            return -1;
        off += 2 + n;
    }
    memmove(r->in, r->in + off, r->in_len - off);
    r->in_len -= off;
    return 0;
}

static void relay(void *arg, int fd, const char *extra, size_t extra_len)
{
    attach_t *a = arg;
    relay_t *r = calloc(1, sizeof *r);
    if (!r)
        return;
    r->fd = fd;
    r->extra = extra;
    r->extra_len = extra_len;
    r->shim = a->shim;
    r->last_ms = now_ms();
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    /* A keystroke's echo is a few bytes: sent at once, not held by Nagle's algorithm until the
     * client's delayed ACK (40 ms on Linux; bench/term measured 44 ms per key without this).
     * Fails harmlessly on the local socket. */
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct wslay_event_callbacks cb = {
        .recv_callback = on_recv, .send_callback = on_send, .on_msg_recv_callback = on_msg};
    wslay_event_context_ptr ctx;
    if (wslay_event_context_server_init(&ctx, &cb, r) != 0) {
        free(r);
        return;
    }
    wslay_event_config_set_max_recv_msg_length(ctx, TSL_TERM_MSG_MAX);
    /* An open terminal is activity for --interactive-idle, however quiet (it is closed itself
     * after --term-idle-timeout of silence, and the job's idle time counts from then). */
    tessd_jobsvc_touch(a->id, +1);
    tessd_log("job %lld: %s by %s", (long long)a->id,
              a->first[0] == TSL_TERM_EXEC ? "exec" : "terminal attached", a->user);
    bool shim_open = true, stopping = false;
    long long close_at = 0;
    static const char ended[] = "the job's terminal has closed";
    if (extra_len > 0 && wslay_event_recv(ctx) != 0)
        goto out;
    while (wslay_event_want_read(ctx) || wslay_event_want_write(ctx)) {
        if (!stopping && atomic_load(&a->d->stopping)) {
            stopping = true;
            static const char why[] = "tesseld is stopping (the job goes on: attach again)";
            wslay_event_queue_close(ctx, WSLAY_CODE_GOING_AWAY, (const uint8_t *)why,
                                    sizeof why - 1);
            close_at = now_ms();
        }
        if (!close_at && tsd_termconn_idle(r->last_ms, now_ms(), a->idle_ms)) {
            /* No frame from the client and no output for --term-idle-timeout: a silent
             * connection is not held for ever (docs/security.md). */
            char why[120];
            int n = snprintf(why, sizeof why,
                             "idle for %lld s: no input and no output (--term-idle-timeout); "
                             "the job goes on: attach again",
                             a->idle_ms / 1000);
            wslay_event_queue_close(ctx, WSLAY_CODE_GOING_AWAY, (const uint8_t *)why,
                                    n > 0 && (size_t)n < sizeof why ? (size_t)n : 0);
            tessd_log("job %lld: terminal of %s closed after %lld s idle", (long long)a->id,
                      a->user, a->idle_ms / 1000);
            close_at = now_ms();
        }
        if (close_at && now_ms() - close_at > RELAY_CLOSE_WAIT_MS)
            break;
        struct pollfd p[2] = {{.fd = fd}, {.fd = shim_open ? r->shim : -1}};
        if (wslay_event_want_read(ctx) && r->in_len <= RELAY_IN_HIGH)
            p[0].events |= POLLIN;
        if (wslay_event_want_write(ctx))
            p[0].events |= POLLOUT;
        if (!close_at && wslay_event_get_queued_msg_count(ctx) < RELAY_QUEUE_MAX)
            p[1].events |= POLLIN;
        if (r->in_len > 0)
            p[1].events |= POLLOUT;
        int k = poll(p, 2, RELAY_TICK_MS);
        if (k < 0 && errno != EINTR)
            break;
        if (k <= 0)
            continue;
        if ((p[0].revents & (POLLIN | POLLHUP | POLLERR)) && wslay_event_recv(ctx) != 0)
            break;
        /* Input the shim no longer takes (it is closing) is dropped; what it sent before its
         * close (the end) is still read below. */
        if (shim_open && r->in_len > 0 && flush_in(r) < 0)
            r->in_len = 0;
        if (shim_open && (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
            uint8_t m[TSL_TERM_MSG_MAX];
            ssize_t n = recv(r->shim, m, sizeof m, MSG_DONTWAIT);
            tsl_term_msg_t tm;
            if (n > 0 && tsl_term_parse(m, (size_t)n, &tm) == 0 &&
                (tm.type == TSL_TERM_OUTPUT || tm.type == TSL_TERM_NOTICE ||
                 tm.type == TSL_TERM_EXIT)) {
                r->last_ms = now_ms();
                struct wslay_event_msg wm = {
                    .opcode = WSLAY_BINARY_FRAME, .msg = m, .msg_length = (size_t)n};
                if (wslay_event_queue_msg(ctx, &wm) != 0)
                    break;
            } else if (n == 0 ||
                       (n < 0 && errno != EAGAIN && errno != EINTR && errno != ECONNRESET)) {
                /* ECONNRESET: the shim closed with a message of ours unread; said once, then
                 * what it sent before its close is read (the end), then 0. */
                /* The job has ended (its EXIT came before) or its shim is gone. */
                shim_open = false;
                wslay_event_queue_close(ctx, WSLAY_CODE_NORMAL_CLOSURE, (const uint8_t *)ended,
                                        sizeof ended - 1);
                close_at = now_ms();
            }
        }
        if (wslay_event_want_write(ctx) && wslay_event_send(ctx) != 0)
            break;
    }
out:
    tessd_jobsvc_touch(a->id, -1);
    tessd_log("job %lld: terminal detached (%s)", (long long)a->id, a->user);
    wslay_event_context_free(ctx);
    free(r);
}

/* Connect to the shim's socket, waiting a little for a shim that is still making it. */
static int dial_shim(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    long long until = now_ms() + ATTACH_WAIT_MS;
    for (;;) {
        int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (s < 0)
            return -1;
        if (connect(s, (struct sockaddr *)&sa, sizeof sa) == 0)
            return s;
        int e = errno;
        close(s);
        if ((e != ENOENT && e != ECONNREFUSED) || now_ms() >= until) {
            errno = e;
            return -1;
        }
        struct timespec ts = {.tv_nsec = 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* Whether the header's comma-separated value holds token (case-insensitive). */
static bool header_has(const char *value, const char *token)
{
    size_t tl = strlen(token);
    for (const char *p = value; p && *p;) {
        p += strspn(p, " \t,");
        size_t n = strcspn(p, ",");
        size_t m = n;
        while (m > 0 && (p[m - 1] == ' ' || p[m - 1] == '\t'))
            m--;
        if (m == tl && strncasecmp(p, token, tl) == 0)
            return true;
        p += n;
    }
    return false;
}

/* The tickets of the browser's terminals (daemon/ticket.h), under d->lock. */
static tsd_tickets_t tickets;

/* Cross-site WebSocket hijacking: a browser sends Origin with every WebSocket handshake; it
 * must be tesseld's own (the console's): http:// or https:// and the Host the browser asked.
 * A client that is not a browser sends none (the CLI): it is no page of someone else's. */
static bool origin_ok(thttp_req_t *req)
{
    const char *o = thttp_header(req, "Origin"), *host = thttp_header(req, "Host");
    if (!o)
        return true;
    const char *rest = strncmp(o, "http://", 7) == 0    ? o + 7
                       : strncmp(o, "https://", 8) == 0 ? o + 8
                                                        : NULL;
    return rest && host && *host && strcasecmp(rest, host) == 0;
}

/* With the lock held and the caller known: the job exists, is the caller's, has what the route
 * needs (a terminal for attach; for exec a job of a root tesseld without Slurm) and
 * runs.  true, or false with rep filled.  *j is cleared either way. */
static bool check_job(tessd_t *d, thttp_reply_t *rep, const tessd_caller_t *who, int64_t id,
                      bool exec, tstore_job_t *j)
{
    tsl_error_t err;
    if (tstore_job_get(d->store, id, j, &err) < 0) {
        if (errno == ENOENT)
            thttp_error(rep, 404, "not_found", NULL, "no job %lld", (long long)id);
        else
            api_store_error(rep, &err);
        return false;
    }
    bool ok = false;
    /* The owner only, admins included: typing into a job is acting as its user (a project's
     * members and admins see the job and its logs, docs/security.md). */
    if (strcmp(j->user, who->user) != 0) {
        tprj_job_right_t right;
        if (api_job_right(d, who, j, &right, &err) < 0)
            api_store_failure(rep, "job's project", &err);
        else if (right == TPRJ_JOB_NONE)
            thttp_error(rep, 404, "not_found", NULL, "no job %lld", (long long)id);
        else
            thttp_error(rep, 403, "forbidden", NULL,
                        "job %lld is %s's: only its owner may %s (you are '%s')", (long long)id,
                        j->user, exec ? "start a process in it" : "use its terminal", who->user);
    } else if (!exec && !j->tty) {
        thttp_error(rep, 409, "no_terminal", NULL,
                    "job %lld has no terminal (it was submitted without tty: tessel run -it)",
                    (long long)id);
    } else if (exec && (d->slurm || !d->run_dir[0])) {
        thttp_error(rep, 409, "no_exec", NULL,
                    "job %lld: exec into %s is not done yet (docs/terminal.md)", (long long)id,
                    d->slurm ? "a job Slurm runs" : "a job of a tesseld not root");
    } else if (j->state == TSTORE_PENDING) {
        thttp_error(rep, 409, "not_started", NULL, "job %lld has not started yet", (long long)id);
    } else if (j->state != TSTORE_RUNNING) {
        thttp_error(rep, 409, "finished", NULL, "job %lld has finished (%s)", (long long)id,
                    tstore_state_name(j->state));
    } else {
        ok = true;
    }
    if (!ok)
        tstore_job_clear(j);
    return ok;
}

/* The caller of a handshake that carries ?ticket= (a browser's): the lock taken, the ticket
 * redeemed for this job and route, and, when the request also identifies someone (a token, or
 * the local socket's peer), that must be the same user.  true with the lock held, or false with
 * rep filled and the lock released. */
static bool enter_ticket(tessd_t *d, thttp_req_t *req, thttp_reply_t *rep, const char *ticket,
                         bool exec, tessd_caller_t *who, int64_t *id)
{
    if (atomic_load(&d->stopping)) {
        thttp_error(rep, 503, "unavailable", NULL, "tesseld is shutting down");
        return false;
    }
    uid_t uid;
    bool also = thttp_header(req, "Authorization") || thttp_peer_cred(req, &uid, NULL, NULL) == 0;
    tessd_caller_t other;
    pthread_mutex_lock(&d->lock);
    if (also && tessd_auth(d, req, rep, &other) < 0)
        goto fail;
    if (api_batch_resolve_id(d, req->params[0], id) < 0) {
        thttp_error(rep, 404, "not_found", NULL, "no job '%s'", req->params[0]);
        goto fail;
    }
    tsd_ticket_t t;
    tsd_ticket_res_t r = tsd_ticket_redeem(&tickets, now_ms(), ticket, *id,
                                           exec ? TSD_TICKET_EXEC : TSD_TICKET_ATTACH, &t);
    if (r != TSD_TICKET_OK) {
        thttp_error(rep, 401, "bad_ticket", "ticket", "%s", tsd_ticket_res_str(r));
        goto fail;
    }
    if (also && strcmp(other.user, t.user) != 0) {
        thttp_error(rep, 403, "forbidden", "ticket",
                    "the ticket was issued to '%s', but this request comes from '%s'", t.user,
                    other.user);
        goto fail;
    }
    memset(who, 0, sizeof *who);
    snprintf(who->user, sizeof who->user, "%s", t.user);
    who->admin = t.admin;
    return true;
fail:
    pthread_mutex_unlock(&d->lock);
    return false;
}

/* The handler of both routes: exec_argv NULL for attach. */
static void open_terminal(thttp_req_t *req, thttp_reply_t *rep, tessd_t *d, json_t *exec_argv)
{
    if (!origin_ok(req)) {
        thttp_error(rep, 403, "bad_origin", NULL,
                    "a job's terminal opens only from tesseld's own console (Origin '%s' is not "
                    "this server's)",
                    thttp_header(req, "Origin"));
        return;
    }
    tessd_caller_t who;
    int64_t id;
    tstore_job_t j;
    char path[PATH_MAX + 16];
    const char *ticket = thttp_query(req, "ticket");
    if (ticket) {
        if (!enter_ticket(d, req, rep, ticket, exec_argv != NULL, &who, &id))
            return;
    } else {
        if (!api_enter(d, req, rep, &who))
            return;
        if (api_slurm_direct_refuse(d, &who, req->params[0], "use srun --pty", rep))
            goto out;
        if (api_batch_resolve_id(d, req->params[0], &id) < 0) {
            thttp_error(rep, 404, "not_found", NULL, "no job '%s'", req->params[0]);
            goto out;
        }
    }
    if (!check_job(d, rep, &who, id, exec_argv != NULL, &j))
        goto out;
    char state[PATH_MAX];
    tessd_state_dir(d, j.id, state, sizeof state);
    snprintf(path, sizeof path, "%s/tty.sock", state);
    tstore_job_clear(&j);
    api_leave(d);

    /* The handshake (RFC 6455, section 4.2.1): a GET with these headers, else 426. */
    const char *up = thttp_header(req, "Upgrade"), *conn = thttp_header(req, "Connection");
    const char *ver = thttp_header(req, "Sec-WebSocket-Version");
    const char *key = thttp_header(req, "Sec-WebSocket-Key");
    if (!up || !header_has(up, "websocket") || !conn || !header_has(conn, "upgrade") || !ver ||
        strcmp(ver, "13") != 0 || !tsl_ws_key_valid(key)) {
        thttp_error(rep, 426, "upgrade_required", NULL,
                    "a job's terminal is a WebSocket (version 13): GET with Upgrade: websocket, "
                    "Connection: Upgrade, Sec-WebSocket-Version: 13 and a Sec-WebSocket-Key");
        snprintf(rep->extra_name, sizeof rep->extra_name, "Sec-WebSocket-Version");
        snprintf(rep->extra_value, sizeof rep->extra_value, "13");
        return;
    }
    attach_t *a = calloc(1, sizeof *a);
    if (!a) {
        thttp_error(rep, 500, "internal", NULL, "out of memory");
        return;
    }
    a->d = d;
    a->id = id;
    a->shim = -1;
    snprintf(a->user, sizeof a->user, "%s", who.user);
    /* An upgraded connection holds its HTTP connection and thread until it closes: a user
     * holds at most --term-per-user of them, all users together half of --max-connections. */
    pthread_mutex_lock(&d->lock);
    unsigned per_user = d->term_per_user, total = d->term_max;
    a->idle_ms = d->term_idle_ms;
    tsd_termconn_res_t cr = tsd_termconn_take(&conns, who.user, per_user, total);
    pthread_mutex_unlock(&d->lock);
    if (cr != TSD_TERMCONN_OK) {
        free(a);
        if (cr == TSD_TERMCONN_USER_FULL)
            thttp_error(rep, 429, "too_many_terminals", NULL,
                        "you ('%s') have %u terminal connections open already (attach and exec "
                        "together; --term-per-user): close one first",
                        who.user, per_user);
        else
            thttp_error(rep, 503, "too_many_terminals", NULL,
                        "tesseld has %u terminal connections open, its most (half of "
                        "--max-connections): try again later",
                        total);
        return;
    }
    a->counted = true;
    a->first[0] = exec_argv ? TSL_TERM_EXEC : TSL_TERM_ATTACH;
    a->first_len = 1;
    size_t i;
    json_t *v;
    json_array_foreach(exec_argv, i, v)
    {
        size_t n = json_string_length(v) + 1;
        memcpy(a->first + a->first_len, json_string_value(v), n);
        a->first_len += n;
    }
    if ((a->shim = dial_shim(path)) < 0 ||
        send(a->shim, a->first, a->first_len, MSG_NOSIGNAL) != (ssize_t)a->first_len) {
        int e = errno;
        attach_free(a);
        if (e == ENOENT || e == ECONNREFUSED || e == EPIPE || e == ECONNRESET)
            thttp_error(rep, 409, "finished", NULL,
                        "job %lld's terminal is gone (the job is ending)", (long long)id);
        else
            thttp_error(rep, 500, "internal", NULL, "job %lld's terminal: %s", (long long)id,
                        strerror(e));
        return;
    }
    api_ws_upgrade(rep, key, relay, a, attach_free);
    return;
out:
    api_leave(d);
}

void api_jobs_attach(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    open_terminal(req, rep, ctx, NULL);
}

/* ?argv=["CMD","ARG",...] (JSON, URL-encoded): 1..TSL_TERM_EXEC_ARGS strings without NUL, the
 * first not empty, all of them together (each with a NUL) within one message. */
void api_jobs_exec(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    const char *q = thttp_query(req, "argv");
    json_t *argv = q ? json_loads(q, 0, NULL) : NULL;
    size_t total = 1, i;
    json_t *v;
    bool okv = json_is_array(argv) && json_array_size(argv) >= 1 &&
               json_array_size(argv) <= TSL_TERM_EXEC_ARGS;
    json_array_foreach(argv, i, v)
    {
        if (!okv)
            break;
        okv = json_is_string(v) && strlen(json_string_value(v)) == json_string_length(v) &&
              (i > 0 || json_string_length(v) > 0);
        total += okv ? json_string_length(v) + 1 : 0;
    }
    if (!okv || total > TSL_TERM_MSG_MAX) {
        json_decref(argv);
        thttp_error(rep, 400, "invalid_value", "argv",
                    "argv must be a JSON array of 1 to %d strings (the first not empty, no NUL, "
                    "%d bytes in all at most)",
                    TSL_TERM_EXEC_ARGS, TSL_TERM_MSG_MAX - 1);
        return;
    }
    open_terminal(req, rep, ctx, argv);
    json_decref(argv);
}

/* POST /v1/jobs/{id}/terminal-ticket {"route": "attach"|"exec"}: a ticket for a browser's
 * WebSocket (ticket.h), after the same checks as the handshake's. */
void api_jobs_terminal_ticket(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    json_t *body = thttp_body_object(req, rep, 1);
    if (!body)
        return;
    const char *route = "attach";
    json_t *rv = json_object_get(body, "route");
    if (rv && (!json_is_string(rv) || (strcmp(json_string_value(rv), "attach") != 0 &&
                                       strcmp(json_string_value(rv), "exec") != 0))) {
        json_decref(body);
        thttp_error(rep, 400, "invalid_value", "route", "route must be \"attach\" or \"exec\"");
        return;
    }
    if (rv)
        route = strcmp(json_string_value(rv), "exec") == 0 ? "exec" : "attach";
    json_decref(body);
    bool exec = route[0] == 'e';
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who))
        return;
    int64_t id;
    tstore_job_t j;
    if (api_slurm_direct_refuse(d, &who, req->params[0], "use srun --pty", rep))
        goto out;
    if (api_batch_resolve_id(d, req->params[0], &id) < 0) {
        thttp_error(rep, 404, "not_found", NULL, "no job '%s'", req->params[0]);
        goto out;
    }
    if (!check_job(d, rep, &who, id, exec, &j))
        goto out;
    tstore_job_clear(&j);
    uint8_t rnd[32];
    char t[TSD_TICKET_LEN + 1];
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
        thttp_error(rep, 500, "internal", NULL, "random bytes: %s", strerror(errno));
        goto out;
    }
    if (tsd_ticket_issue(&tickets, now_ms(), rnd, id, exec ? TSD_TICKET_EXEC : TSD_TICKET_ATTACH,
                         who.user, who.admin, t) < 0) {
        thttp_error(rep, 429, "too_many_tickets", NULL,
                    "too many terminal tickets waiting to be used (at most %d a user, %d in "
                    "all, each good for %d s)",
                    TSD_TICKET_PER_USER, TSD_TICKET_MAX, TSD_TICKET_TTL_MS / 1000);
        goto out;
    }
    char url[96];
    snprintf(url, sizeof url, "/v1/jobs/%lld/%s?ticket=%s", (long long)id, route, t);
    rep->status = 201;
    rep->json = json_pack("{s:s, s:I, s:s, s:i, s:s}", "ticket", t, "job", (json_int_t)id, "route",
                          route, "expires_in_s", TSD_TICKET_TTL_MS / 1000, "url", url);
out:
    api_leave(d);
}
