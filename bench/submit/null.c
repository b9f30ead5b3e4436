/* null.c - bench-null-server: the floor under bench-submit's figures on this machine.
 *
 * An HTTP server built on tesseld's own HTTP layer (libhttp: libmicrohttpd, one thread per
 * connection, as tesseld) that answers POST /v1/jobs the way tesseld does on the wire (the
 * body parsed as a JSON object, 201 and a small JSON object with an id) but does nothing else:
 * no lock, no store, no scheduler.  bench/submit/run.sh runs bench-submit against it with
 * BENCH_NULL=1, so that the latency a machine adds by itself (scheduling the client and server
 * threads, loopback TCP, HTTP and JSON on both sides) is measured with the same client, the
 * same pacing and the same counting as tesseld's figures (docs/bench-submit.md).
 *
 *   bench-null-server PORTFILE    (writes "127.0.0.1:PORT" to PORTFILE, serves until SIGTERM)
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "libhttp/http.h"

static atomic_llong next_id = 1;

static void submit(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    (void)ctx;
    json_t *body = thttp_body_object(req, rep, 0);
    if (!body)
        return; /* answered 400 */
    json_decref(body);
    thttp_json(rep, 201,
               json_pack("{s:I, s:s}", "id", (json_int_t)atomic_fetch_add(&next_id, 1), "state",
                         "pending"));
}

/* bench-submit creates its holding queue first; an existing one is fine for it. */
static void queue(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    (void)ctx;
    json_t *body = thttp_body_object(req, rep, 0);
    if (!body)
        return;
    json_decref(body);
    thttp_json(rep, 201, json_pack("{s:s}", "name", "bench-hold"));
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: bench-null-server PORTFILE\n");
        return 2;
    }
    static const thttp_route_t routes[] = {
        {"POST", "/v1/jobs", submit},
        {"POST", "/v1/queues", queue},
    };
    thttp_config_t cfg = {
        .host = "127.0.0.1",
        .max_body = 1 << 20,
        .routes = routes,
        .nroutes = sizeof routes / sizeof routes[0],
    };
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* the server's threads inherit it */
    tsl_error_t err;
    thttp_server_t *s = thttp_start(&cfg, &err);
    if (!s) {
        fprintf(stderr, "bench-null-server: %s\n", err.text);
        return 1;
    }
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]) >= (int)sizeof tmp) {
        fprintf(stderr, "bench-null-server: %s: path too long\n", argv[1]);
        thttp_stop(s);
        return 1;
    }
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "127.0.0.1:%u\n", (unsigned)thttp_port(s)) < 0 || fclose(f) != 0 ||
        rename(tmp, argv[1]) != 0) {
        perror("bench-null-server: port file");
        thttp_stop(s);
        return 1;
    }
    int sig = 0;
    sigwait(&set, &sig);
    thttp_stop(s);
    return 0;
}
