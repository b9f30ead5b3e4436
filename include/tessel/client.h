/* client.h - libclient: a client of tesseld's HTTP JSON API (docs/api.md), used by the
 * `tessel` CLI and the submission benchmark.
 *
 * Two parts:
 *   - configuration: where tesseld listens and which token to present, read from the config
 *     file that `tessel login` writes, overridden by TESSEL_URL / TESSEL_TOKEN;
 *   - a connection (tclient_t): one libcurl handle that keeps its HTTP/1.1 connection open
 *     between requests.  A tclient_t is not thread-safe: give each thread its own.
 *
 * Errors follow the Tessel convention: -1 (or NULL) with errno set, and one line for a person
 * in the optional tsl_error_t.  For an API error that line is tesseld's own "message"; the
 * HTTP status and the API's error code stay available from the handle.
 */
#ifndef TESSEL_CLIENT_H
#define TESSEL_CLIENT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "tessel/error.h"

/* Where tesseld listens on TCP when nothing else is configured (its own default --listen). */
#define TCLIENT_DEFAULT_URL "http://127.0.0.1:7470"

/* ---- where tesseld lives (docs/tesseld.md, "System mode and personal mode") ---------------- */

/* System mode (a lab's tesseld, run as root): data and the local socket. */
#define TCLIENT_SYSTEM_DATA_DIR "/var/lib/tessel"
#define TCLIENT_SYSTEM_SOCKET   "/run/tessel/tesseld.sock"
/* Longest Unix socket path (sockaddr_un.sun_path less its NUL). */
#define TCLIENT_SOCKET_PATH_MAX 107

typedef struct {
    char data_dir[4096];
    char socket[TCLIENT_SOCKET_PATH_MAX + 1];
} tclient_paths_t;

/* tesseld's default data directory and socket, from the environment's values given here (NULL
 * or "" = unset; only absolute paths are taken).  System mode: TCLIENT_SYSTEM_DATA_DIR and
 * TCLIENT_SYSTEM_SOCKET.  Personal mode: $XDG_DATA_HOME/tessel, else $HOME/.local/share/tessel;
 * the socket $XDG_RUNTIME_DIR/tessel/tesseld.sock, else <data dir>/tesseld.sock (both
 * directories are the user's own, mode 0700).  Returns 0, or -1 with errno (ENOENT: personal
 * mode without HOME; ENAMETOOLONG: a path does not fit) and err. */
int tclient_default_paths(bool system, const char *home, const char *xdg_data_home,
                          const char *xdg_runtime_dir, tclient_paths_t *out, tsl_error_t *err);

/* The socket path of a "unix:PATH" or "unix://PATH" URL (PATH absolute), or NULL when url is
 * not one.  The result points into url. */
const char *tclient_url_socket(const char *url);

/* s percent-encoded for a URL's query or path (every byte but A-Z a-z 0-9 - . _ ~, as RFC 3986
 * leaves unreserved), or NULL with errno ENOMEM.  The caller frees it. */
char *tclient_escape(const char *s);

/* ---- configuration ------------------------------------------------------------------------ */

typedef struct {
    char url[512];   /* base URL, no trailing slash; or unix:PATH */
    char token[256]; /* "tsl_..." or "" when none */
    char path[4096]; /* the config file consulted (it may not exist) */
    bool url_from_env;
    bool token_from_env;
    bool url_is_default; /* neither the file nor the environment named a URL */
} tclient_config_t;

/* The config file's path: $TESSEL_CONFIG if set, else $XDG_CONFIG_HOME/tessel/config, else
 * $HOME/.config/tessel/config.  Returns 0, or -1 (ENOENT: no HOME) with a message. */
int tclient_config_path(char *buf, size_t len, tsl_error_t *err);

/* Fill cfg: defaults, then the config file (absent is fine), then TESSEL_URL and TESSEL_TOKEN
 * from the environment.  When none of them names a URL or a token, the URL is the local
 * socket of a running tesseld when one exists (the personal one's, then the system's: see
 * tclient_default_paths), so that a user of the machine needs no token; else
 * TCLIENT_DEFAULT_URL.  Returns 0, or -1 when the file exists but cannot be read or parsed
 * (EINVAL, with the file name and line in err). */
int tclient_config_load(tclient_config_t *cfg, tsl_error_t *err);

/* Read one config file into cfg (only the keys it sets).  The format is lines of
 * `key = value` (keys: url, token), '#' comments and blank lines.  Returns 0, or -1 with errno
 * (ENOENT when absent, EINVAL when malformed).  cfg is untouched on failure. */
int tclient_config_read(tclient_config_t *cfg, const char *path, tsl_error_t *err);

/* Write url and token to path, atomically (temporary file + rename), mode 0600, creating the
 * directory (mode 0700) when needed.  Returns 0 or -1 with errno and err. */
int tclient_config_save(const tclient_config_t *cfg, const char *path, tsl_error_t *err);

/* ---- connection ----------------------------------------------------------------------------- */

typedef struct tclient tclient_t;

/* A connection to url (http://HOST:PORT, no path; or unix:PATH for tesseld's local socket)
 * presenting token (NULL or "" = none).
 * Nothing is sent yet.  Returns NULL with errno (EINVAL for a URL that is not http://,
 * ENOMEM) and err.  Release with tclient_destroy. */
tclient_t *tclient_new(const char *url, const char *token, tsl_error_t *err);
void tclient_destroy(tclient_t *c);

/* One request: METHOD base-url+path (path starts with '/', may carry a query string), with
 * body serialised as JSON when non-NULL.  On a 2xx answer returns 0 and, when answer is
 * non-NULL, stores the decoded JSON there (the caller owns it; a 204 gives json_null()).
 * On an error answer returns -1 with errno from the status (EINVAL 400, EACCES 401, EPERM 403,
 * ENOENT 404, EEXIST 409, E2BIG 413, EDOM 422, EAGAIN 503, EIO otherwise) and tesseld's
 * message in err; when tesseld cannot be reached, -1 with ECONNREFUSED (or ETIMEDOUT, EIO). */
int tclient_request(tclient_t *c, const char *method, const char *path, const json_t *body,
                    json_t **answer, tsl_error_t *err);

/* HTTP status of the last answer (0 when none came), and the API error code of the last error
 * answer ("not_found", ...; "" when none).  Valid until the next request on c. */
long tclient_status(const tclient_t *c);
const char *tclient_error_code(const tclient_t *c);

/* Decode an error answer (status >= 400, body as received) into errno's value (returned) and
 * one line in err: tesseld's message, or "HTTP <status>" when the body is not an API error. */
int tclient_decode_error(long status, const char *body, size_t len, char *code, size_t codelen,
                         tsl_error_t *err);

/* ---- logs ------------------------------------------------------------------------------------ */

/* Receives len bytes of a job's output; returns 0 to go on, -1 to stop everything. */
typedef int (*tclient_write_fn)(const char *data, size_t len, void *arg);

typedef struct {
    const char *stream;     /* "stdout" or "stderr" */
    uint64_t offset;        /* in: where to start; out: advanced by the bytes delivered */
    tclient_write_fn write; /* where the bytes go */
    void *arg;
    char state[16]; /* out: X-Tessel-Job-State of the answer ("" if none) */
    /* in: start at the last `tail` lines (has_tail) and/or at the output written since Unix
     * time `since` (has_since), the later of the two, but not before offset.  tesseld says
     * where that is; offset is set to it and positioned to true, and later calls (a resume)
     * go on from offset without asking again. */
    bool has_tail, has_since, positioned;
    uint64_t tail;
    int64_t since;
} tclient_log_t;

/* Fetch n log streams of job `id` at once (GET /v1/jobs/ID/logs), each on its own
 * connection; with follow, until tesseld ends every stream (the job has finished and all its
 * output was sent).  *stop (may be NULL), set by a signal handler, makes the call return early
 * with -1 and errno EINTR.  Returns 0 when every stream ended normally; -1 with errno and err
 * on an API error (ENOENT: no such job), a lost connection (ECONNRESET, ECONNREFUSED) or a
 * write function that asked to stop (ECANCELED).  Offsets say how far each stream got, so a
 * caller may resume. */
int tclient_logs(tclient_t *c, int64_t id, tclient_log_t *logs, int n, bool follow,
                 volatile sig_atomic_t *stop, tsl_error_t *err);

/* ---- a job's terminal ------------------------------------------------------------------------ */

/* A WebSocket to a job's terminal (GET /v1/jobs/ID/attach, docs/terminal.md), over the light
 * transport only (no proxy).  Messages are those of docs/terminal.md: a type byte ('i' input,
 * 'r' resize; from the job 'o' output, 'n' notice, 'x' exit) and a payload.  libwslay.so.1 and
 * libnettle.so.8 are loaded with dlopen at the first terminal (link -ldl): ENOSYS and err
 * when they are not there. */
typedef struct tclient_term tclient_term_t;

/* Receives one message from the job (len >= 1). */
typedef void (*tclient_term_msg_fn)(void *arg, const uint8_t *msg, size_t len);

/* Open job id's terminal; on_msg is called for each message from the job.  NULL with errno
 * and err on a refusal (errno as tclient_request: EPERM not the owner, ENOENT no such job,
 * EEXIST (409) no terminal or not running, with tclient_error_code(c): "no_terminal",
 * "not_started", "finished"), a failed transfer, or ENOTSUP through a proxy. */
tclient_term_t *tclient_term_open(tclient_t *c, int64_t id, tclient_term_msg_fn on_msg, void *arg,
                                  tsl_error_t *err);
/* Start argv (argc strings) in running job id on a terminal of its own (GET
 * /v1/jobs/ID/exec): the same account, groups, cgroups, mount namespace, environment and cwd as
 * the job's; the messages as tclient_term_open's, EXIT being that process's end.  Refusals as
 * tclient_term_open's (EEXIST: not running, or code "no_exec"), and E2BIG for a command over
 * TCLIENT_EXEC_ARGV_MAX bytes as JSON (it travels in the request's line, which tesseld bounds
 * with its headers to 32 KiB). */
#define TCLIENT_EXEC_ARGV_MAX 8192
tclient_term_t *tclient_term_exec(tclient_t *c, int64_t id, char *const *argv, int argc,
                                  tclient_term_msg_fn on_msg, void *arg, tsl_error_t *err);
/* The connection's descriptor, and the poll events it waits for now. */
int tclient_term_fd(const tclient_term_t *t);
short tclient_term_events(const tclient_term_t *t);
/* Queue one message for the job (sent by tclient_term_io).  0, or -1 with errno ENOMEM. */
int tclient_term_send(tclient_term_t *t, const void *msg, size_t len);
/* Read and write what the connection allows now (revents from poll; 0 to only write).
 * Returns 0 while open, 1 once it has closed (the close's code and reason in
 * tclient_term_closed), -1 with errno and err when the connection was lost. */
int tclient_term_io(tclient_term_t *t, short revents, tsl_error_t *err);
/* The close tesseld sent: its code (1000 normal, 1001 tesseld stopping, ...; 0 when none came)
 * and reason (NUL-terminated, cut to len). */
unsigned tclient_term_closed(const tclient_term_t *t, char *reason, size_t len);
/* Close (a close message first, best effort) and free.  Accepts NULL. */
void tclient_term_free(tclient_term_t *t);

#endif
