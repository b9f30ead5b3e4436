/* http.h - thin glue over libmicrohttpd + jansson for tesseld's JSON API.
 *
 * What it does: runs an MHD daemon (one thread per connection, so a handler may block, e.g. to
 * follow a log), collects the request body up to a limit (413 above it), matches the path
 * against a route table (data, one line per route: method, pattern with {name} segments,
 * handler), answers 404/405 itself, and turns a handler's reply (a JSON value, text, or a
 * streaming reader) into an MHD response.  Every error answer has the body
 *     {"error": {"code": "...", "message": "...", "field": "..."}}
 * built by thttp_error(); thttp_error_errno() maps errno to status and code in one place.
 *
 * Lifecycle of one request: MHD calls us with the headers -> body chunks are appended ->
 * on the last call the route is matched and the handler runs in the connection's thread ->
 * the reply is queued -> libhttp frees the reply and the request.
 */
#ifndef TESSEL_HTTP_H
#define TESSEL_HTTP_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "libutil/error.h"

#define THTTP_MAX_PARAMS 4

/* Defaults of thttp_config_t, with their reasons.  Each connection holds one thread (a handler
 * may block to follow a log), so connections are bounded twice: all together (threads, file
 * descriptors) and per client address, so that one client cannot take them all; and a silent
 * connection is closed after a while.  A client of the CLI or console holds one to a few
 * connections (a request, a log being followed), but every local user connects from the same
 * address (127.0.0.1), so the bound is shared by all of them: 256 leaves room for a script
 * submitting 200 jobs in parallel or a few dozen users following logs, and keeps 768 of the
 * 1024 slots for other clients while one address holds all of its own. */
#define THTTP_DEFAULT_MAX_CONNECTIONS 1024u
#define THTTP_DEFAULT_MAX_PER_CLIENT  256u
/* Long enough for a person typing a request by hand or a client on a loaded machine; a log
 * being followed is not silent (tesseld polls the file in the connection's thread). */
#define THTTP_DEFAULT_TIMEOUT_S 30u
/* libmicrohttpd's own default of a connection's memory (MHD_OPTION_CONNECTION_MEMORY_LIMIT). */
#define THTTP_DEFAULT_CONN_MEMORY (32u << 10)
/* Local accounts the Unix listener tracks at once for its per-uid bound (max_per_client); a
 * connection from one more account is closed until one of them has none left.  A lab has
 * far fewer users connected at the same moment. */
#define THTTP_UNIX_UIDS 256
/* Keys (users) whose requests hold bodies at once (max_body_per_key), and a key's length. */
#define THTTP_BODY_KEYS    256
#define THTTP_BODY_KEY_MAX 72

typedef struct thttp_server thttp_server_t;

/* A request as handlers see it.  Valid only during the handler call. */
typedef struct {
    const char *method;
    const char *path;
    const char *body; /* NUL-terminated, body_len bytes; "" when none */
    size_t body_len;
    const char *params[THTTP_MAX_PARAMS]; /* {name} segments of the pattern, in order */
    int nparams;
    /* The URL as the client sent it (path and query, not decoded) when the server's config
     * has keep_raw_uri (a proxy forwards it as it came), else NULL. */
    const char *raw_uri;
    void *conn; /* struct MHD_Connection * */
} thttp_req_t;

/* Streaming body: called with the byte position; returns bytes written into buf (> 0),
 * THTTP_STREAM_END when done, THTTP_STREAM_ERROR to abort.  May block (thread per
 * connection). */
typedef ssize_t (*thttp_stream_f)(void *arg, uint64_t pos, char *buf, size_t max);
#define THTTP_STREAM_END   ((ssize_t)-1)
#define THTTP_STREAM_ERROR ((ssize_t)-2)

/* A connection switched to another protocol (status 101, a WebSocket): called in the
 * connection's thread, which it may hold as long as it needs, with the connection's socket
 * (blocking; the callee may change that) and the bytes the client sent after its request
 * (extra, extra_len: already read from the socket).  libhttp closes the socket when it returns,
 * then frees arg with upgrade_free. */
typedef void (*thttp_upgrade_f)(void *arg, int fd, const char *extra, size_t extra_len);

/* What a handler fills.  Exactly one of json, text, stream, upgrade (or none for an empty
 * body). */
typedef struct {
    int status;   /* default 200 */
    json_t *json; /* reference stolen by libhttp */
    char *text;   /* malloc'd, freed by libhttp */
    size_t text_len;
    const char *content_type; /* for text/stream; default text/plain */
    thttp_stream_f stream;
    void *stream_arg;
    void (*stream_free)(void *arg);
    bool head_only;     /* libhttp's: the request was a HEAD (a stream is then not read) */
    char location[128]; /* Location header when non-empty */
    char extra_name[32], extra_value[64];   /* one more header when non-empty */
    char extra2_name[32], extra2_value[64]; /* and another */
    char extra3_name[32], extra3_value[64]; /* and a third */
    /* With status 101: the protocol's headers in extra*_name/value (Upgrade,
     * Sec-WebSocket-Accept), and what takes the connection over. */
    thttp_upgrade_f upgrade;
    void *upgrade_arg;
    void (*upgrade_free)(void *arg);
    /* More headers (a proxy's): headers_len bytes of "NAME\0VALUE\0" pairs, added as they are;
     * malloc'd, freed by libhttp (thttp_reply_header appends one). */
    char *headers;
    size_t headers_len;
    /* on_headers only, with no status: whose the request's body is (a user's name): it counts
     * toward that key's share of the bodies held at once (max_body_per_key). */
    char body_key[THTTP_BODY_KEY_MAX];
} thttp_reply_t;

/* Append the header name: value to rep->headers.  0, or -1 with errno ENOMEM (rep unchanged)
 * or EINVAL (a name or value holding CR or LF: never sent). */
int thttp_reply_header(thttp_reply_t *rep, const char *name, const char *value);

typedef void (*thttp_handler_f)(thttp_req_t *req, thttp_reply_t *rep, void *ctx);

typedef struct {
    const char *method;  /* "GET", "POST", ... */
    const char *pattern; /* "/v1/jobs/{id}/logs" */
    thttp_handler_f fn;
} thttp_route_t;

typedef struct {
    const char *host;         /* numeric IPv4 or IPv6 address, e.g. "127.0.0.1", "::1" */
    uint16_t port;            /* 0 = pick a free port (see thttp_port) */
    size_t max_body;          /* bytes; larger bodies get 413 */
    unsigned max_connections; /* all clients together; 0: THTTP_DEFAULT_MAX_CONNECTIONS */
    /* Connections one client address may hold at once; the next one is closed as soon as it
     * is accepted (no answer).  0: THTTP_DEFAULT_MAX_PER_CLIENT. */
    unsigned max_per_client;
    /* Seconds a connection may stay silent (no byte received or sent) before it is closed:
     * a slow client holds a thread this long at most per byte.  0: THTTP_DEFAULT_TIMEOUT_S. */
    unsigned timeout_s;
    const thttp_route_t *routes;
    size_t nroutes;
    void *ctx;         /* passed to handlers */
    bool keep_raw_uri; /* handlers get thttp_req_t.raw_uri */
    /* Called once a request's headers are in, before any byte of its body is read (req has
     * no body and no params): a handler that sets rep->status answers the request at once,
     * its body never read (MHD closes the connection after the answer when one was sent).
     * For a listener that authenticates from headers alone: an unauthenticated upload costs
     * no memory.  NULL: none. */
    thttp_handler_f on_headers;
    /* Bytes of request bodies all of this server's requests may hold in memory at once (the
     * buffers' capacity); a request whose body would go above it is answered 503
     * bodies_busy with Retry-After, its body discarded as it comes.  0: no bound but
     * max_body per request. */
    size_t max_body_total;
    /* Bytes of bodies the requests of one key (thttp_reply_t.body_key, set by on_headers)
     * may hold at once; a request past it is answered 429 bodies_busy with Retry-After, its
     * body discarded.  So that one user cannot take all of max_body_total.  0: no bound per
     * key.  At most THTTP_BODY_KEYS keys hold bodies at once (a request of one more: 503). */
    size_t max_body_per_key;
    /* Count the bodies held with this server's (both bounds shared, its own ignored): two
     * listeners of one service (IPv4 and IPv6) that share their bounds.  It must outlive this
     * server.  NULL: its own. */
    const thttp_server_t *share_bodies;
    /* Bytes a connection may use for a request's head (its line and headers: a request with
     * more gets 431 from libmicrohttpd) and its buffers.  0: THTTP_DEFAULT_CONN_MEMORY. */
    size_t conn_memory;
    /* TCP: max_per_client counts the connections of each local account (the owner of the
     * socket at the other end, libutil's tsl_tcp_peer_owner) instead of each address, as the
     * Unix listener does by SO_PEERCRED; a peer that is no process of this machine is closed
     * at once.  For a loopback listener, where every account has the same addresses. */
    bool limit_per_uid;
} thttp_config_t;

/* Start serving.  Returns NULL with errno and err on failure.  The listening socket has
 * SO_REUSEADDR (a restart may bind while old connections are in TIME_WAIT) but never
 * SO_REUSEPORT: a second server on the same address and port fails with EADDRINUSE (and err
 * names the process that holds the port when thttp_port_holder finds it) rather than share
 * the clients with the first. */
thttp_server_t *thttp_start(const thttp_config_t *cfg, tsl_error_t *err);
/* Stop accepting, wait for the connections' threads, free.  Accepts NULL. */
void thttp_stop(thttp_server_t *s);
uint16_t thttp_port(const thttp_server_t *s);

/* Serve the same routes on a Unix stream socket at path (its own MHD daemon; stop it with
 * thttp_stop, which also removes the socket file).  A socket file at path that refuses
 * connections (a server that died) is replaced; one where a server listens is refused
 * (EADDRINUSE), and anything else there too (EEXIST), both left alone.  The socket
 * gets mode (e.g. 0666: whoever can reach the directory may connect; access is decided per
 * request from the peer's credentials, thttp_peer_cred).  cfg->host and cfg->port are not
 * used.  The bounds are the TCP listener's: max_connections, timeout_s, and max_per_client
 * per peer uid (SO_PEERCRED) instead of per address.  NULL with errno and err on failure. */
thttp_server_t *thttp_start_unix(const thttp_config_t *cfg, const char *path, mode_t mode,
                                 tsl_error_t *err);
/* The kernel's credentials of the process at the other end of req's connection, as they were
 * when it connected (SO_PEERCRED): 0 and *uid, *gid, *pid (any may be NULL) for a Unix
 * socket; 1 when the connection is not a Unix socket (TCP: no credentials); -1 with errno on
 * failure. */
int thttp_peer_cred(thttp_req_t *req, uid_t *uid, gid_t *gid, pid_t *pid);
/* Number of answers sent with this status so far (100..599), for /metrics; 0 for s NULL. */
/* The process that listens on TCP port `port` (IPv4 or IPv6, any address): its PID and its
 * command name (/proc/PID/comm) into comm.  Found through /proc/net/tcp{,6} (the socket's
 * inode) and /proc/[pid]/fd; only processes whose fds we may read are seen (all as root).
 * Returns the PID, 0 when no listener or no visible holder was found. */
pid_t thttp_port_holder(uint16_t port, char *comm, size_t comm_len);

/* A token bucket per key (a user name): `rate` tokens a second, at most `burst` kept.  For
 * rate limits of submissions.  Thread-safe.  Keys are copied; one bucket per distinct key is
 * kept for the limiter's life (keys are authenticated user names, so they are few). */
typedef struct thttp_limiter thttp_limiter_t;
/* NULL with errno EINVAL when rate <= 0 or burst < 1, ENOMEM when out of memory. */
thttp_limiter_t *thttp_limiter_new(double rate, double burst);
void thttp_limiter_free(thttp_limiter_t *l);
/* Take one token of key's bucket at time now_ms (any monotonic clock, in ms; a new bucket is
 * full).  Returns 0 when taken, else the milliseconds until a token is there (>= 1; nothing
 * taken), or -1 with errno ENOMEM. */
int64_t thttp_limiter_take(thttp_limiter_t *l, const char *key, int64_t now_ms);

/* Number of answers sent with this status so far (100..599), for /metrics. */
uint64_t thttp_status_count(const thttp_server_t *s, int status);

/* Fill rep with an error answer.  field may be NULL. */
void thttp_error(thttp_reply_t *rep, int status, const char *code, const char *field,
                 const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Error answer from errno: ENOENT 404 not_found, EEXIST/EBUSY 409 conflict, EACCES/EPERM 403
 * forbidden, EINVAL/ERANGE 400 invalid_value, EFBIG 413, ENOSPC 422 unsatisfiable,
 * ESHUTDOWN 503, anything else 500 internal.  text is the message. */
void thttp_error_errno(thttp_reply_t *rep, int errnum, const char *field, const char *text);
/* Status and code for an errno (the table above). */
int thttp_status_of_errno(int errnum, const char **code);

void thttp_json(thttp_reply_t *rep, int status, json_t *json);

/* Parse the body as a JSON object.  Returns a new reference, or NULL after filling rep with
 * 400 invalid_json.  An empty body parses as {} when empty_ok. */
json_t *thttp_body_object(thttp_req_t *req, thttp_reply_t *rep, int empty_ok);
/* 0 when every member of obj is in allowed (NULL-terminated); else -1 after filling rep with
 * 400 unknown_field naming the first stranger. */
int thttp_check_fields(json_t *obj, const char *const *allowed, thttp_reply_t *rep);

/* Header and query lookups (NULL when absent). */
const char *thttp_header(thttp_req_t *req, const char *name);
const char *thttp_query(thttp_req_t *req, const char *name);

/* Match path against pattern; fills params.  Returns 1 on a match.  A pattern's last segment
 * "{*}" matches the rest of the path, "" included ("/a/{*}" matches "/a/" and "/a/b/c", whose
 * parameter is "b/c"; not "/a").  (Exposed for tests.) */
int thttp_match(const char *pattern, const char *path, char *scratch, size_t scratch_len,
                const char **params, int *nparams);

#endif
