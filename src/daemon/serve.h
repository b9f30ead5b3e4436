/* serve.h - inference services (issue 22, docs/serving.md): the pure parts.
 *
 * A service is N replicas of an HTTP server, each an ordinary job of the inference class (a row
 * of service_replicas says whose it is), behind one endpoint served by HAProxy, which tesseld
 * starts as its child, configures and weighs (serve_run.c).  This file holds what needs no
 * daemon, no process and no clock, each unit-tested (src/daemon/test/test_serve.c):
 *
 *   tsv_spec_parse   the replicas' job as a service's creation gives it (JSON), checked and
 *                    normalised into the spec tesseld stores and submits again and again;
 *   tsv_meter_update the measure of one replica's service rate and arrival rate from two
 *                    readings of HAProxy's counters;
 *   tsv_weights      the HAProxy weights that make mu_i / lambda_i equal across replicas;
 *   tsv_haproxy_cfg  HAProxy's configuration for every service;
 *   tsv_stat_parse   HAProxy's `show stat json` answer, per server.
 */
#ifndef TESSEL_DAEMON_SERVE_H
#define TESSEL_DAEMON_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* Most replicas of one service: a lab's service on one node has a handful; 64 bounds the
 * proxy's configuration and the work of one measurement. */
#define TSV_MAX_REPLICAS 64
/* Most services of the whole node: the proxy's configuration is built from at most this many,
 * and a service past it is refused at its creation (409), never left without a frontend. */
#define TSV_MAX_SERVICES 256
/* Longest reason a service gives for replicas it lacks (GET /v1/services/NAME "held"). */
#define TSV_HELD_MAX 200
/* An old HAProxy (the one a reload replaces) ends the requests it holds within this many
 * seconds, then exits (hard-stop-after): reloads never pile up processes. */
#define TSV_HARD_STOP_S 10
/* Most requests one replica serves at once (the proxy's maxconn per server). */
#define TSV_MAX_CONCURRENCY 1024
/* HAProxy's weights run from 0 to 256; 0 would take a replica out of rotation, which the health
 * check does, not the weights. */
#define TSV_WEIGHT_MAX 256
#define TSV_WEIGHT_MIN 1
/* Smoothing of the measured service rate: each reading counts for this much of the new figure
 * (an exponentially weighted mean over about 1/alpha readings: ~6 s at one reading each 2 s). */
#define TSV_ALPHA 0.3

/* The checked fields of a service's replicas' job (a JSON object in the store). */
typedef struct {
    json_t *argv;  /* array of strings (borrowed from the parsed body) */
    json_t *env;   /* object of strings, or NULL */
    int gpus;      /* whole GPUs, or 0 */
    int gpu_milli; /* per GPU; 0 = no GPU */
    int gpu_count;
    uint64_t gpu_mem; /* per GPU; 0: the default share (the caller's) */
    int cpu_milli;
    uint64_t mem;
    const char *queue; /* NULL: "default" */
} tsv_spec_t;

/* Check body's job fields (argv, env, gpu, gpu_mem, cpu, mem, queue) into *out (strings and
 * arrays borrowed from body).  0, or -1 with the field at fault in *field and one line in why.
 * The names PORT and TESSEL_SERVICE are the replica's (set by tesseld); env may not set them. */
int tsv_spec_parse(json_t *body, tsv_spec_t *out, const char **field, char *why, size_t len);
/* The stored form of a spec: a new JSON object (the caller's), NULL when out of memory. */
json_t *tsv_spec_json(const tsv_spec_t *s);

/* One replica's measure, from HAProxy's counters. */
typedef struct {
    bool primed;       /* a first reading was taken */
    uint64_t req_tot;  /* HTTP requests answered, at the last reading */
    int64_t at_ms;     /* the last reading's time */
    double mu;         /* service rate, requests/s (0 = not measured yet) */
    double lambda;     /* arrival rate, requests/s, over the last interval */
    double latency_ms; /* mean response time (HAProxy's rtime, last 1024 requests) */
} tsv_meter_t;

/* A reading: req_tot (the server's count of requests), rtime_ms (its mean response time over
 * its last 1024 requests, 0 when none), scur (requests it holds now), concurrency (the most
 * the proxy lets it hold: maxconn; 0 = no limit).  The rate measured:
 *   - with a limit c, the proxy queues the rest, so rtime is the service time: mu = c / rtime;
 *   - without one, the replica queues what it gets and rtime (W) counts that wait: the
 *     estimate is a single queue's, W = 1 / (mu - lambda), so mu = lambda + 1 / W.  Its bias
 *     (deterministic service times: too high by up to the utilisation) is the same for
 *     replicas at the same utilisation, so weights proportional to it stop where every
 *     replica holds the same number of requests (lambda_i W_i equal: Little's law), that is
 *     at equal utilisation, the split sought.  scur is not used (kept for the figures).
 * Readings are smoothed (TSV_ALPHA); a reading with no request since the last one keeps the
 * measure.  A counter that went back (the proxy was restarted) starts over from this reading. */
void tsv_meter_update(tsv_meter_t *m, uint64_t req_tot, double rtime_ms, int64_t scur,
                      int concurrency, int64_t now_ms);

/* Weights for n replicas of measured service rates mu[i] (0: not measured): proportional to mu
 * (so the share of traffic lambda_i = Lambda * w_i / sum(w) makes mu_i / lambda_i the same for
 * all), the largest TSV_WEIGHT_MAX, none below TSV_WEIGHT_MIN; a replica not measured yet gets
 * the mean rate of those measured (all equal when none is). */
void tsv_weights(const double *mu, size_t n, int *w);

/* HAProxy's configuration. */
/* Bytes of a replica's Unix socket path with its NUL (sockaddr_un's sun_path). */
#define TSV_SOCK_MAX 108
typedef struct {
    int64_t job;
    int port;
    int weight;
    /* The replica's Unix socket (its port is in a network namespace of its own, reached through
     * its forwarder), or "": 127.0.0.1:port on the host's network. */
    char sock[TSV_SOCK_MAX];
} tsv_cfg_replica_t;
typedef struct {
    const char *name;
    int port;
    const char *health;
    int concurrency;
    const char *tokens_file; /* the service's callers: SHA-256 (hex) of each token, one a line */
    const tsv_cfg_replica_t *replicas;
    size_t nreplicas;
} tsv_cfg_service_t;
/* The configuration text (malloc'd, the caller frees; NULL when out of memory): one frontend
 * per service on 127.0.0.1:port that answers 401 unless the request's bearer token hashes to
 * a line of its tokens_file, and drops the Authorization header before the replica sees it;
 * one backend with its replicas ("r<job>", unix@<sock>, or 127.0.0.1:<port> for a replica
 * without a socket; health-checked at health, maxconn
 * concurrency) weighted by weight (with_weights false: all TSV_WEIGHT_MAX, the text to compare
 * when deciding whether the proxy must be reloaded).  sock: the runtime API's socket.  user,
 * group: the account HAProxy drops to once it has bound its ports, opened its socket and read
 * its files (NULL: it keeps its own). */
char *tsv_haproxy_cfg(const char *sock, const tsv_cfg_service_t *svc, size_t n, bool with_weights,
                      const char *user, const char *group);

/* One server's figures from `show stat json`. */
typedef struct {
    const char *backend; /* "be_<service>" (borrowed from the parsed answer) */
    const char *server;  /* "r<job>" */
    uint64_t req_tot;
    double rtime_ms;
    int64_t scur, qcur;
    const char *status; /* "UP", "DOWN", "MAINT", ... */
} tsv_stat_t;
/* Parse the answer of `show stat json` and call cb for each server (not FRONTEND or BACKEND).
 * 0, or -1 when the text is not that answer. */
int tsv_stat_parse(const char *text, int (*cb)(const tsv_stat_t *s, void *arg), void *arg);

#endif
