/* jobsvc.h - a job's web services (issue 19, item 3; docs/job-services.md): the pure rules.
 *
 * A job submitted with "services": [{"name": "jupyter", "port": 8888}, ...] runs in a network
 * namespace of its own (tessel-shim --svc, fwd.h), where each service listens on
 * 127.0.0.1:PORT; the shim serves each on a Unix socket <data>/jobsvc/j<ID>-<NAME>.sock,
 * root's and the job owner's only.  This file holds what needs no I/O: the names allowed, the
 * check of a submission's value, the sockets' paths.  Prefix tsd_svc_. */
#ifndef TESSEL_DAEMON_JOBSVC_H
#define TESSEL_DAEMON_JOBSVC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "libutil/error.h"

/* Longest service name: short enough for a URL segment and for the socket's path (the whole
 * must fit a Unix socket's 107 bytes with the data directory in front). */
#define TSD_SVC_NAME_MAX 16
/* Services of one job (tessel-shim's TAGENT_SVC_MAX: one forwarder process each). */
#define TSD_SVC_MAX 4
/* The directory of the services' sockets, below tesseld's data directory. */
#define TSD_SVC_DIR "jobsvc"

/* Whether name is a service name: 1 to TSD_SVC_NAME_MAX of a-z, 0-9 and '-', starting with a
 * letter and not ending with '-'. */
bool tsd_svc_name_valid(const char *name);

/* Whether browsers fetch from port (TCP): false for the ports they refuse whatever the page
 * (Chromium's and Firefox's restricted ports, net::ERR_UNSAFE_PORT: 22, 25, 601, 636, 993,
 * 6000, ...); the services are for browsers, so such a port is refused for them. */
bool tsd_svc_port_browser_ok(unsigned port);

/* Check a submission's "services" value v: an array of 1 to TSD_SVC_MAX objects with exactly
 * the members "name" (tsd_svc_name_valid) and "port" (an integer 1..65535), names and ports
 * each different.  A new compact JSON text of the array (malloc'd: the caller frees it), or
 * NULL with errno (EINVAL; ENOMEM) and a line for the person in err. */
char *tsd_svc_check(const json_t *v, tsl_error_t *err);

/* The socket of job's service name: "<data_dir>/jobsvc/j<job>-<name>.sock" into buf.  0, or -1
 * with errno ENAMETOOLONG when it is longer than len - 1 or than a Unix socket's path (107
 * bytes), EINVAL when name is not valid. */
int tsd_svc_sock(const char *data_dir, int64_t job, const char *name, char *buf, size_t len);

/* ---- a service's own origin (docs/job-services.md, "The URL") --------------------------------
 *
 * Each service is served at a host name of its own, j<job>-<name>.<domain>, so that each is an
 * origin of its own in a browser: one service's pages can never script or read another's,
 * and its cookie is host-only (no Domain attribute).  domain is tesseld's --services-domain
 * (default TSD_SVC_DOMAIN_DEFAULT: browsers and curl resolve every name under localhost to
 * the loopback address). */
#define TSD_SVC_DOMAIN_DEFAULT "localhost"
#define TSD_SVC_DOMAIN_MAX     100 /* bytes of a domain, the NUL not counted */

/* Whether d is a domain for the services' host names: 1 to TSD_SVC_DOMAIN_MAX bytes, labels
 * of 1 to 63 of a-z, 0-9 and '-' (neither first nor last) separated by single dots. */
bool tsd_svc_domain_valid(const char *d);

/* Parse a request's Host header: exactly "j<job>-<name>.<domain>" with an optional ":<port>"
 * (1 to 5 digits); job a decimal number > 0 without a leading zero, name tsd_svc_name_valid,
 * domain equal to domain.  Lower case only (what browsers send).  0 with *job and name
 * (TSD_SVC_NAME_MAX + 1 bytes) set, or -1 for anything else. */
int tsd_svc_host_parse(const char *host, const char *domain, int64_t *job, char *name);

/* Whether a request may go to the service (cross-site request forgery): a safe method (GET,
 * HEAD, OPTIONS) that is no WebSocket handshake always may; any other request (POST, PUT, ...,
 * a WebSocket) only when its Sec-Fetch-Site, if sent, is "same-origin" or "none", and its
 * Origin, if sent, is "http://" followed by host (the Host header the request came with: its
 * own service's origin).  NULL when it may, else the reason (a static string). */
const char *tsd_svc_request_refused(const char *method, bool websocket, const char *fetch_site,
                                    const char *origin, const char *host);

/* A service's Set-Cookie header value, filtered before it goes to the browser: dropped (1)
 * when it names tesseld's own cookie TSD_SVC_COOKIE or is empty; else (0) written to out
 * (len bytes) without any Domain attribute (a cookie of a service stays host-only, on its own
 * host); -1 when out is too short (dropped too). */
int tsd_svc_set_cookie_filter(const char *value, char *out, size_t len);

/* ---- the last activity of the jobs' services (--interactive-idle) ------------------------------
 *
 * An entry per job whose services had a request (or hold a WebSocket) since tesseld started.
 * Entries are never evicted to make room: a job's entry goes only when tsd_svc_act_prune finds
 * the job no longer running, so the table holds at most the running jobs with services.  Not
 * thread-safe (the caller's lock). */
typedef struct {
    int64_t job;
    long long last_ms; /* the last request or WebSocket traffic (any clock, ms) */
    unsigned open_ws;  /* WebSockets open now */
} tsd_svc_act_t;
typedef struct {
    tsd_svc_act_t *v;
    size_t n, cap;
    bool lost; /* an entry could not be made (out of memory) */
} tsd_svc_acts_t;

/* Job's activity at now_ms: its entry (made when missing) gets the time, and ws_delta +1/-1
 * open WebSockets (0: none changes; never below 0).  0, or -1 with errno ENOMEM (a->lost set,
 * nothing recorded). */
int tsd_svc_act_touch(tsd_svc_acts_t *a, int64_t job, long long now_ms, int ws_delta);
/* Job's entry, or NULL. */
const tsd_svc_act_t *tsd_svc_act_find(const tsd_svc_acts_t *a, int64_t job);
/* Drop the entries of the jobs for which running(ctx, job) is false. */
void tsd_svc_act_prune(tsd_svc_acts_t *a, bool (*running)(void *ctx, int64_t job), void *ctx);
/* Whether a running job (started at started_ms) is idle at now_ms for idle_ms: no WebSocket
 * open and no activity for idle_ms since the later of its start and its last activity.  A
 * job without an entry is idle since its start -- unless an entry was ever lost (a->lost):
 * then never (a job is not cancelled on a missing entry). */
bool tsd_svc_act_idle(const tsd_svc_acts_t *a, int64_t job, long long started_ms, long long now_ms,
                      long long idle_ms);
void tsd_svc_act_free(tsd_svc_acts_t *a);

/* ---- the session cookie (docs/job-services.md, "From a browser") ----------------------------
 *
 * A browser that redeemed a ticket on a service's host gets a cookie, "tessel-svc", host-only
 * (no Domain: it goes with that service's requests only), Path=/, HttpOnly, SameSite=Strict.
 * Its value is "<user>:<expires>:<mac>": the user the ticket was issued to, the second it
 * expires (Unix time), and HMAC-SHA256 (nettle) under tesseld's key of the job, the service's
 * name, the user and the expiry, in hexadecimal.  It is checked at every request, then the
 * job's state and owner are (a cookie of a job that ended opens nothing).  The key is 32 random
 * bytes kept by tesseld (root's, 0600), so cookies outlive a restart of tesseld. */
#define TSD_SVC_COOKIE     "tessel-svc"
#define TSD_SVC_COOKIE_KEY 32
#define TSD_SVC_COOKIE_MAX 128 /* a value's bytes, NUL included */
/* A cookie's life: a working day, so that a notebook open all day does not ask again; a new one
 * comes from `tessel open` or the console at any time. */
#define TSD_SVC_COOKIE_TTL_S (12 * 3600)

/* The value of a cookie for user on job's service name, expiring at expires_s, into out (at
 * least TSD_SVC_COOKIE_MAX bytes).  0, or -1 with errno EINVAL (a user name that is not a
 * store name, a name not valid). */
int tsd_svc_cookie_make(const uint8_t key[TSD_SVC_COOKIE_KEY], int64_t job, const char *name,
                        const char *user, long long expires_s, char out[TSD_SVC_COOKIE_MAX]);

/* Whether value is a cookie for job's service name that has not expired at now_s: true and the
 * user into user (TSTORE_NAME_MAX + 1 bytes), or false (malformed, another job or service, a
 * MAC that does not match, expired).  The MAC is compared in time independent of where it
 * differs. */
bool tsd_svc_cookie_check(const uint8_t key[TSD_SVC_COOKIE_KEY], int64_t job, const char *name,
                          const char *value, long long now_s, char *user, size_t user_len);

#endif
