/* serve_run.h - inference services in tesseld (serve_run.c; docs/serving.md): the replicas
 * kept, HAProxy run and weighed.  Every call: main thread or a handler, lock held. */
#ifndef TESSEL_DAEMON_SERVE_RUN_H
#define TESSEL_DAEMON_SERVE_RUN_H

#include "daemon/daemon.h"

/* At start (after recovery, before the HTTP servers): <data>/serve (0700, tesseld's), and the
 * proxy a previous tesseld left, to take over.  0, or -1 with err. */
int tessd_serve_init(tessd_t *d, tsl_error_t *err);
/* At exit: memory only; the proxy keeps serving until the next tesseld takes it over. */
void tessd_serve_stop(tessd_t *d);
/* The tick (lock held): supervision, the proxy, the weights, each when due. */
void tessd_serve_tick(tessd_t *d);
/* The tick's waitpid: a child ended (the proxy, when pid is its). */
void tessd_serve_reaped(tessd_t *d, pid_t pid, int status);
/* The proxy's pid (a child of tesseld's, or one taken over), 0 when none runs. */
pid_t tessd_serve_proxy_pid(const tessd_t *d);
/* Bring sv's active replicas to sv->replicas now (submit, or stop the newest).  0, or -1. */
int tessd_serve_reconcile(tessd_t *d, const tstore_service_t *sv, tsl_error_t *err);
/* Stop every active replica of sv (its deletion).  0, or -1 with err. */
int tessd_serve_stop_replicas(tessd_t *d, const tstore_service_t *sv, tsl_error_t *err);
/* A port free on 127.0.0.1 that no service nor active replica holds; 0 when none found. */
int tessd_serve_free_port(tessd_t *d);
/* At a job's launch: whether job is a service's replica that runs in a network namespace of its
 * own behind a Unix socket (tesseld as root; docs/serving.md, "How a replica is reached"): 1 and
 * *port, sock (its path), *gid (HAProxy's group); 0 when it is no replica or shares the host's
 * network (*port set when a replica); -1 with err. */
int tessd_serve_replica_net(tessd_t *d, int64_t job, int *port, char *sock, size_t len, gid_t *gid,
                            tsl_error_t *err);
/* Why no service can run on this node (no haproxy account), or NULL. */
const char *tessd_serve_unusable(tessd_t *d);

/* What the proxy measured of a replica. */
typedef struct {
    int weight;        /* 0: none computed yet (the configuration's, TSV_WEIGHT_MAX) */
    double mu;         /* service rate, requests/s (0: not measured yet) */
    double lambda;     /* arrival rate, requests/s */
    double latency_ms; /* mean response time over its last 1024 requests */
    char status[16];   /* HAProxy's: "UP", "DOWN", ... ("" before the first reading) */
} tessd_serve_fig_t;
/* 0 and *out, or -1 when tesseld has no figures of job. */
/* Why the service's missing replicas are not submitted (its owner gone, its queue no longer
 * admitting them, their submission rate spent), or NULL. */
const char *tessd_serve_held(tessd_t *d, int64_t service);
int tessd_serve_figures(tessd_t *d, int64_t job, tessd_serve_fig_t *out);

#endif
