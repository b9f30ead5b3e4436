/* wire.h - libclient's light transport (wire.c), internal to libclient: HTTP/1.1 requests on a
 * socket of this process's own (tesseld's local Unix socket, or TCP when no proxy is set), the
 * answers parsed by Debian's http-parser.  libcurl (loaded only when needed, client.c) serves
 * every other case. */
#ifndef TESSEL_LIBCLIENT_WIRE_H
#define TESSEL_LIBCLIENT_WIRE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "tessel/error.h"

typedef struct wire wire_t;

/* A header of an answer (name as sent, value without surrounding blanks; both NUL-terminated and
 * cut at 63 bytes), and a piece of its body.  A sink returns 0 to go on, -1 to abandon the
 * request (wire_* then fail with ECANCELED). */
typedef int (*wire_header_fn)(void *arg, long status, const char *name, const char *value);
typedef int (*wire_body_fn)(void *arg, long status, const char *p, size_t n);

typedef struct {
    const char *path;      /* in: path and query, starting with '/' */
    wire_header_fn header; /* in: may be NULL */
    wire_body_fn body;     /* in: may be NULL (the body is read and dropped) */
    void *arg;
    long status; /* out: the answer's HTTP status, 0 until its status line came */
} wire_io_t;

/* A transport for url when the light transport can serve it: "unix:PATH" (tclient_url_socket),
 * or "http://HOST[:PORT][/PREFIX]" without user information.  NULL with errno EINVAL when it
 * cannot (the caller uses libcurl), ENOMEM when out of memory.  Connects lazily. */
wire_t *wire_new(const char *url, tsl_error_t *err);
void wire_destroy(wire_t *w);

/* One request on w's persistent connection: method io->path, the headers in `headers` (each
 * line ending in "\r\n", or NULL), and `body` (len bytes; NULL for none), within timeout_ms.  A
 * connection kept alive by an earlier answer that turns out closed before any byte of this
 * answer is replaced once, as browsers and libcurl do.  Returns 0 when the whole answer came
 * (io->status set, sinks called), else -1 with errno and one line in err: ECONNREFUSED tesseld
 * unreachable, ECONNRESET connection lost, ETIMEDOUT, EPROTO a malformed answer (or headers over
 * http-parser's 80 KiB), ECANCELED a sink gave up, ENOMEM. */
int wire_request(wire_t *w, const char *method, const char *headers, const char *body, size_t len,
                 wire_io_t *io, int timeout_ms, tsl_error_t *err);

/* A GET that asks to switch protocols (a WebSocket, docs/terminal.md), on a connection of its
 * own (not w's persistent one): io->path, the headers in `headers` (the handshake's and
 * Authorization), within timeout_ms.  Returns 0 with *fd the connection (non-blocking,
 * close-on-exec; the caller closes it) when tesseld answered 101 with Upgrade, and the bytes
 * that came after the answer's headers in extra (*extra_len, at most cap); 0 with *fd = -1 when
 * it answered anything else (io->status, the sinks called with its body); -1 with errno and err
 * as wire_request (EPROTO also for a 101 without Upgrade, or more than cap bytes after it). */
int wire_upgrade(wire_t *w, const char *headers, wire_io_t *io, int *fd, char *extra, size_t cap,
                 size_t *extra_len, int timeout_ms, tsl_error_t *err);

/* n GET requests at once, each on a connection of its own (closed when done), until every answer
 * is complete: within timeout_ms, or with no bound when timeout_ms < 0.  Every poll_ms it looks
 * at *stop (may be NULL) and fails with EINTR ("interrupted") once it is set.  The first
 * transfer failure ends them all (errno and err as wire_request). */
int wire_get_many(wire_t *w, const char *headers, wire_io_t *ios, int n, int timeout_ms,
                  int poll_ms, volatile sig_atomic_t *stop, tsl_error_t *err);

#endif
