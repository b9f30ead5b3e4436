/* term.c - a job's terminal as the client sees it (tclient_term_*, include/tessel/client.h): the
 * WebSocket handshake (RFC 6455, section 4.1) on the light transport, then wslay's client
 * context on the connection.  libwslay and libnettle are loaded with dlopen at the first
 * terminal, as libcurl is for a proxy (client.c): `tessel` links neither, so that every other
 * command starts as fast as before (docs/cli.md, "Performance": two more shared objects cost
 * 0.15-0.8 ms on each start, measured 2026-11-27). */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nettle/base64.h>
#include <nettle/sha1.h>
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

/* libwslay's and libnettle's entry points this file uses, found by dlopen (load_libs). */
static struct {
    int (*event_context_client_init)(wslay_event_context_ptr *,
                                     const struct wslay_event_callbacks *, void *);
    void (*event_config_set_max_recv_msg_length)(wslay_event_context_ptr, uint64_t);
    int (*event_want_read)(wslay_event_context_ptr);
    int (*event_want_write)(wslay_event_context_ptr);
    int (*event_recv)(wslay_event_context_ptr);
    int (*event_send)(wslay_event_context_ptr);
    int (*event_queue_msg)(wslay_event_context_ptr, const struct wslay_event_msg *);
    int (*event_queue_close)(wslay_event_context_ptr, uint16_t, const uint8_t *, size_t);
    int (*event_get_close_sent)(wslay_event_context_ptr);
    void (*event_context_free)(wslay_event_context_ptr);
    void (*event_set_error)(wslay_event_context_ptr, int);
} W;
static struct {
    void (*base64_encode_raw)(char *, size_t, const uint8_t *);
    void (*sha1_init)(struct sha1_ctx *);
    void (*sha1_update)(struct sha1_ctx *, size_t, const uint8_t *);
    void (*sha1_digest)(struct sha1_ctx *, size_t, uint8_t *);
} N;
static pthread_once_t libs_once = PTHREAD_ONCE_INIT;
static char libs_err[200];

/* Fill W and N (once); libs_err says what is missing when they could not be loaded. */
static void load_libs(void)
{
    void *w = dlopen("libwslay.so.1", RTLD_NOW | RTLD_LOCAL);
    void *n = dlopen("libnettle.so.8", RTLD_NOW | RTLD_LOCAL);
    if (!w || !n) {
        snprintf(libs_err, sizeof libs_err,
                 "a job's terminal needs libwslay1 and libnettle8 (apt install them): %s",
                 dlerror());
        return;
    }
    static const char *const wn[] = {
        "wslay_event_context_client_init",
        "wslay_event_config_set_max_recv_msg_length",
        "wslay_event_want_read",
        "wslay_event_want_write",
        "wslay_event_recv",
        "wslay_event_send",
        "wslay_event_queue_msg",
        "wslay_event_queue_close",
        "wslay_event_get_close_sent",
        "wslay_event_context_free",
        "wslay_event_set_error",
    };
    static const char *const nn[] = {"nettle_base64_encode_raw", "nettle_sha1_init",
                                     "nettle_sha1_update", "nettle_sha1_digest"};
    void *wf[sizeof wn / sizeof wn[0]], *nf[sizeof nn / sizeof nn[0]];
    _Static_assert(sizeof wf == sizeof W, "one name per wslay entry point");
    _Static_assert(sizeof nf == sizeof N, "one name per nettle entry point");
    for (size_t i = 0; i < sizeof wn / sizeof wn[0]; i++)
        if (!(wf[i] = dlsym(w, wn[i]))) {
            snprintf(libs_err, sizeof libs_err, "libwslay lacks %s", wn[i]);
            return;
        }
    for (size_t i = 0; i < sizeof nn / sizeof nn[0]; i++)
        if (!(nf[i] = dlsym(n, nn[i]))) {
            snprintf(libs_err, sizeof libs_err, "libnettle lacks %s", nn[i]);
            return;
        }
    memcpy(&W, wf, sizeof W);
    memcpy(&N, nf, sizeof N);
}

/* The Sec-WebSocket-Accept value for key (libutil's tsl_ws_accept, through the loaded nettle). */
static void ws_accept(const char *key, char out[29])
{
    static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"; /* RFC 6455, 1.3 */
    struct sha1_ctx ctx;
    uint8_t digest[SHA1_DIGEST_SIZE];
    N.sha1_init(&ctx);
    N.sha1_update(&ctx, strlen(key), (const uint8_t *)key);
    N.sha1_update(&ctx, sizeof guid - 1, (const uint8_t *)guid);
    N.sha1_digest(&ctx, sizeof digest, digest);
    N.base64_encode_raw(out, sizeof digest, digest);
    out[BASE64_ENCODE_RAW_LENGTH(SHA1_DIGEST_SIZE)] = '\0';
}

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
        W.event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    if (n <= 0) {
        t->eof = true;
        W.event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
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
        W.event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    if (n < 0) {
        t->eof = true;
        W.event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
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
    pthread_once(&libs_once, load_libs);
    if (!W.event_set_error || !N.sha1_digest) {
        errno = ENOSYS;
        tsl_errprintf(err, "%s", libs_err);
        return NULL;
    }
    uint8_t raw[16];
    if (on_genmask(NULL, raw, sizeof raw, NULL) < 0) {
        tsl_errprintf(err, "random key: %s", strerror(errno));
        return NULL;
    }
    char key[BASE64_ENCODE_RAW_LENGTH(16) + 1];
    N.base64_encode_raw(key, sizeof raw, raw);
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
    ws_accept(key, accept);
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
    if (W.event_context_client_init(&t->ctx, &cb, t) != 0) {
        close(t->fd);
        free(t);
        errno = ENOMEM;
        tsl_errprintf(err, "out of memory");
        return NULL;
    }
    W.event_config_set_max_recv_msg_length(t->ctx, TSL_TERM_MSG_MAX);
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
    if (W.event_want_read(t->ctx))
        e |= POLLIN;
    if (W.event_want_write(t->ctx))
        e |= POLLOUT;
    return e;
}

int tclient_term_send(tclient_term_t *t, const void *msg, size_t len)
{
    struct wslay_event_msg m = {.opcode = WSLAY_BINARY_FRAME, .msg = msg, .msg_length = len};
    if (W.event_queue_msg(t->ctx, &m) != 0) {
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

int tclient_term_io(tclient_term_t *t, short revents, tsl_error_t *err)
{
    /* Bytes that came with the handshake's answer are read first, whatever poll said. */
    if (((revents & (POLLIN | POLLHUP | POLLERR)) || t->extra_off < t->extra_len) &&
        W.event_want_read(t->ctx) && W.event_recv(t->ctx) != 0) {
        if (t->close_code)
            return 1;
        errno = ECONNRESET;
        return tsl_errprintf(err, "lost the connection to the job's terminal");
    }
    if (W.event_want_write(t->ctx) && W.event_send(t->ctx) != 0) {
        if (t->close_code)
            return 1;
        errno = ECONNRESET;
        return tsl_errprintf(err, "lost the connection to the job's terminal");
    }
    if (!W.event_want_read(t->ctx) && !W.event_want_write(t->ctx))
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
    if (!t->eof && W.event_want_write(t->ctx) == 0 && !W.event_get_close_sent(t->ctx)) {
        W.event_queue_close(t->ctx, WSLAY_CODE_NORMAL_CLOSURE, NULL, 0);
        W.event_send(t->ctx);
    }
    W.event_context_free(t->ctx);
    close(t->fd);
    free(t);
}
