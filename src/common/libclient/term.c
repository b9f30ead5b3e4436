/* term.c - a job's terminal as the client sees it (tclient_term_*, include/tessel/client.h): the
 * WebSocket handshake (RFC 6455, section 4.1) on the light transport, then wslay's client
 * context on the connection.  Apart from client.c so that only programs that open a terminal
 * link wslay and nettle. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nettle/base64.h>
#include <jansson.h>
#include <wslay/wslay.h>

#include "libclient/upgrade.h"
#include "libutil/term.h"
#include "tessel/client.h"

/* Bytes the answer's read may carry past the handshake (the job's first output). */
#define TERM_EXTRA_MAX 16384

struct tclient_term {
    int fd;
    wslay_event_context_ptr ctx;
    tclient_term_msg_fn on_msg;
    void *arg;
    char extra[TERM_EXTRA_MAX];
    size_t extra_len, extra_off;
    bool eof;
    unsigned close_code;
    char close_reason[124];
};

static ssize_t on_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags, void *user)
{
    (void)flags;
    struct tclient_term *t = user;
    if (t->extra_off < t->extra_len) {
        size_t n = t->extra_len - t->extra_off;
        if (n > len)
            n = len;
        memcpy(buf, t->extra + t->extra_off, n);
        t->extra_off += n;
        return (ssize_t)n;
    }
    ssize_t n;
    do
        n = recv(t->fd, buf, len, MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    if (n <= 0) {
        t->eof = true;
        wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
        return -1;
    }
    return n;
}

static ssize_t on_send(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags,
                       void *user)
{
    (void)flags;
    struct tclient_term *t = user;
    ssize_t n;
    do
        n = send(t->fd, data, len, MSG_DONTWAIT | MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    if (n < 0) {
        t->eof = true;
        wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
        return -1;
    }
    return n;
}

/* The masks of a client's frames (RFC 6455, section 5.3). */
static int on_genmask(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, void *user)
{
    (void)ctx;
    (void)user;
    size_t got = 0;
    while (got < len) {
        ssize_t n = getrandom(buf + got, len - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        got += (size_t)n;
    }
    return 0;
}

static void on_ws_msg(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *arg,
                      void *user)
{
    (void)ctx;
    struct tclient_term *t = user;
    if (arg->opcode == WSLAY_CONNECTION_CLOSE) {
        t->close_code = arg->status_code;
        size_t n = arg->msg_length > 2 ? arg->msg_length - 2 : 0;
        if (n >= sizeof t->close_reason)
            n = sizeof t->close_reason - 1;
        if (n)
            memcpy(t->close_reason, arg->msg + 2, n);
        t->close_reason[n] = '\0';
        return;
    }
    if (arg->opcode == WSLAY_BINARY_FRAME && arg->msg_length > 0)
        t->on_msg(t->arg, arg->msg, arg->msg_length);
}

/* Open the WebSocket at path (attach or exec). */
static tclient_term_t *term_open(tclient_t *c, const char *path, tclient_term_msg_fn on_msg,
                                 void *arg, tsl_error_t *err)
{
    uint8_t raw[16];
    if (on_genmask(NULL, raw, sizeof raw, NULL) < 0) {
        tsl_errprintf(err, "random key: %s", strerror(errno));
        return NULL;
    }
    char key[BASE64_ENCODE_RAW_LENGTH(16) + 1];
    base64_encode_raw(key, sizeof raw, raw);
    key[BASE64_ENCODE_RAW_LENGTH(16)] = '\0';
    char headers[256];
    snprintf(headers, sizeof headers,
             "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
             "Sec-WebSocket-Key: %s\r\n",
             key);
    struct tclient_term *t = calloc(1, sizeof *t);
    if (!t) {
        errno = ENOMEM;
        tsl_errprintf(err, "out of memory");
        return NULL;
    }
    t->on_msg = on_msg;
    t->arg = arg;
    char accept[29];
    tsl_ws_accept(key, accept);
    if (tclient_upgrade(c, path, headers, accept, &t->fd, t->extra, sizeof t->extra, &t->extra_len,
                        err) < 0) {
        int e = errno;
        free(t);
        errno = e;
        return NULL;
    }
    struct wslay_event_callbacks cb = {.recv_callback = on_recv,
                                       .send_callback = on_send,
                                       .genmask_callback = on_genmask,
                                       .on_msg_recv_callback = on_ws_msg};
    if (wslay_event_context_client_init(&t->ctx, &cb, t) != 0) {
        close(t->fd);
        free(t);
        errno = ENOMEM;
        tsl_errprintf(err, "out of memory");
        return NULL;
    }
    wslay_event_config_set_max_recv_msg_length(t->ctx, TSL_TERM_MSG_MAX);
    return t;
}

tclient_term_t *tclient_term_open(tclient_t *c, int64_t id, tclient_term_msg_fn on_msg, void *arg,
                                  tsl_error_t *err)
{
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%lld/attach", (long long)id);
    return term_open(c, path, on_msg, arg, err);
}

tclient_term_t *tclient_term_exec(tclient_t *c, int64_t id, char *const *argv, int argc,
                                  tclient_term_msg_fn on_msg, void *arg, tsl_error_t *err)
{
    json_t *a = json_array();
    for (int i = 0; a && i < argc; i++) {
        json_t *v = json_string(argv[i]); /* NULL for text that is not UTF-8 */
        if (!v || json_array_append_new(a, v) < 0) {
            json_decref(a);
            errno = EINVAL;
            tsl_errprintf(err, "argument %d is not valid UTF-8", i + 1);
            return NULL;
        }
    }
    char *js = a ? json_dumps(a, JSON_COMPACT) : NULL;
    json_decref(a);
    size_t jl = js ? strlen(js) : 0;
    if (jl > TCLIENT_EXEC_ARGV_MAX) {
        free(js);
        errno = E2BIG;
        tsl_errprintf(err, "the command is too long (%zu bytes as JSON, at most %d)", jl,
                      TCLIENT_EXEC_ARGV_MAX);
        return NULL;
    }
    /* The path, with the JSON percent-encoded (RFC 3986: all but the unreserved). */
    char *path = js ? malloc(64 + 3 * jl) : NULL;
    if (!path) {
        free(js);
        errno = ENOMEM;
        tsl_errprintf(err, "out of memory");
        return NULL;
    }
    size_t o = (size_t)sprintf(path, "/v1/jobs/%lld/exec?argv=", (long long)id);
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < jl; i++) {
        unsigned char ch = (unsigned char)js[i];
        if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
            ch == '-' || ch == '.' || ch == '_' || ch == '~') {
            path[o++] = (char)ch;
        } else {
            path[o++] = '%';
            path[o++] = hex[ch >> 4];
            path[o++] = hex[ch & 15];
        }
    }
    path[o] = '\0';
    free(js);
    tclient_term_t *t = term_open(c, path, on_msg, arg, err);
    int e = errno;
    free(path);
    errno = e;
    return t;
}

int tclient_term_fd(const tclient_term_t *t)
{
    return t->fd;
}

short tclient_term_events(const tclient_term_t *t)
{
    short e = 0;
    if (wslay_event_want_read(t->ctx))
        e |= POLLIN;
    if (wslay_event_want_write(t->ctx))
        e |= POLLOUT;
    return e;
}

int tclient_term_send(tclient_term_t *t, const void *msg, size_t len)
{
    struct wslay_event_msg m = {.opcode = WSLAY_BINARY_FRAME, .msg = msg, .msg_length = len};
    if (wslay_event_queue_msg(t->ctx, &m) != 0) {
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

int tclient_term_io(tclient_term_t *t, short revents, tsl_error_t *err)
{
    /* Bytes that came with the handshake's answer are read first, whatever poll said. */
    if (((revents & (POLLIN | POLLHUP | POLLERR)) || t->extra_off < t->extra_len) &&
        wslay_event_want_read(t->ctx) && wslay_event_recv(t->ctx) != 0) {
        if (t->close_code)
            return 1;
        errno = ECONNRESET;
        return tsl_errprintf(err, "lost the connection to the job's terminal");
    }
    if (wslay_event_want_write(t->ctx) && wslay_event_send(t->ctx) != 0) {
        if (t->close_code)
            return 1;
        errno = ECONNRESET;
        return tsl_errprintf(err, "lost the connection to the job's terminal");
    }
    if (!wslay_event_want_read(t->ctx) && !wslay_event_want_write(t->ctx))
        return 1;
    return 0;
}

unsigned tclient_term_closed(const tclient_term_t *t, char *reason, size_t len)
{
    if (reason && len)
        snprintf(reason, len, "%s", t->close_reason);
    return t->close_code;
}

void tclient_term_free(tclient_term_t *t)
{
    if (!t)
        return;
    if (!t->eof && wslay_event_want_write(t->ctx) == 0 && !wslay_event_get_close_sent(t->ctx)) {
        wslay_event_queue_close(t->ctx, WSLAY_CODE_NORMAL_CLOSURE, NULL, 0);
        wslay_event_send(t->ctx);
    }
    wslay_event_context_free(t->ctx);
    close(t->fd);
    free(t);
}
