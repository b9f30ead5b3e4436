/* exporter.c - tessel-node-exporter: a Slurm node's GPUs and its jobs' GPU slices, over HTTP,
 * for tesseld --slurm and for Prometheus (docs/slurm-backend.md, "The cluster's GPUs";
 * docs/metrics.md, "Per node").
 *
 *   tessel-node-exporter [--listen ADDR:PORT] [--statedir DIR] [--nvml LIB] [--interval SECS]
 *                        [--node NAME] [--once]
 *
 *   GET /metrics   Prometheus text (format 0.0.4): tessel_gpu_*, tessel_slice_* with node=
 *   GET /v1/node   the same figures as JSON (nodefig.h), what tesseld reads
 *
 * Threads: a sampler takes the figures every --interval seconds (NVML, then the state
 * directory: sample.h) and renders both answers once; the HTTP server's threads (libhttp over
 * libmicrohttpd: bounded connections, per-client bound, idle timeout) only copy the last
 * rendering under a mutex.  So a request never waits on NVML or on a job's file, a slow or
 * hung driver shows as figures that stop getting newer (their sampled_at_ms), and many
 * scrapers cost one sample per interval. */
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "exporter/sample.h"
#include "libhttp/http.h"
#include "libnodefig/nodefig.h"
#include "libutil/prom.h"

/* Default port: next to the Prometheus exporters' 9100-9999 range's common ones (node_exporter
 * 9100, dcgm-exporter 9400) and unused by them; tesseld's --slurm-node-port has the same. */
#define TEX_DEFAULT_PORT 9407
/* A scraper holds at most this many connections; tesseld holds one per node poll. */
#define TEX_MAX_CONNECTIONS 32
#define TEX_MAX_PER_CLIENT  4
/* A connection silent longer than this is closed (libhttp's idle timeout). */
#define TEX_TIMEOUT_S 10

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool stop;
    char *json, *prom; /* the last rendering, NUL-terminated; under lock */
    size_t json_len, prom_len;
    /* configuration */
    char node[64];
    const char *statedir, *nvml_path;
    unsigned interval_s;
    tagent_nvml_t *nvml; /* sampler thread only */
    bool simulated;      /* nvml is the fake one */
    char nvml_err[192];  /* as tnf_node_t.error */
} tex_t;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One sample into n (zeroed by the caller). */
static void sample(tex_t *x, tnf_node_t *n)
{
    snprintf(n->node, sizeof n->node, "%s", x->node);
    n->sampled_ms = now_ms();
    if (!x->nvml) {
        tsl_error_t err;
        x->nvml = tagent_nvml_open(x->nvml_path, &err);
        /* Tessel's fake NVML (tests/fake) exports its test hooks: its GPUs are simulated. */
        void *h = x->nvml ? dlopen(x->nvml_path, RTLD_NOW | RTLD_NOLOAD) : NULL;
        x->simulated = h && dlsym(h, "tessel_fake_nvml_calls");
        if (h)
            dlclose(h);
        if (!x->nvml)
            snprintf(x->nvml_err, sizeof x->nvml_err, "%.190s", err.text);
    }
    tagent_gpu_t gpus[TAGENT_MAX_GPUS];
    int ng = 0;
    if (x->nvml) {
        tsl_error_t err;
        ng = tagent_nvml_inventory(x->nvml, gpus, TAGENT_MAX_GPUS, false, &err);
        if (ng < 0) {
            snprintf(x->nvml_err, sizeof x->nvml_err, "%.190s", err.text);
            ng = 0;
        } else {
            x->nvml_err[0] = '\0';
        }
    }
    snprintf(n->error, sizeof n->error, "%s", x->nvml_err);
    n->simulated = x->simulated;
    for (int i = 0; i < ng && i < TNF_MAX_GPUS; i++) {
        tnf_gpu_t *g = &n->gpus[n->ngpus++];
        g->index = gpus[i].index;
        snprintf(g->uuid, sizeof g->uuid, "%s", gpus[i].uuid);
        snprintf(g->model, sizeof g->model, "%s", gpus[i].name);
        g->memory_total = gpus[i].mem_total;
        uint64_t total, used, freeb;
        g->used_known = tagent_nvml_memory(x->nvml, gpus[i].index, &total, &used, &freeb) == 0;
        g->memory_used = g->used_known ? used : 0;
        g->utilization = tagent_nvml_utilization(x->nvml, gpus[i].index);
    }
    tex_read_slices(x->statedir, gpus, ng, n);
}

/* Sample and render both answers; swap them in. */
static void refresh(tex_t *x)
{
    tnf_node_t n = {0};
    sample(x, &n);
    json_t *j = tnf_to_json(&n);
    char *json = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    tsl_prom_t p = {0};
    const tnf_node_t *one = &n;
    tnf_prom(&p, &one, 1);
    size_t plen = 0;
    char *prom = tsl_prom_take(&p, &plen);
    tnf_node_clear(&n);
    if (!json || !prom) { /* out of memory: the last rendering stays */
        free(json);
        free(prom);
        return;
    }
    pthread_mutex_lock(&x->lock);
    free(x->json);
    free(x->prom);
    x->json = json;
    x->json_len = strlen(json);
    x->prom = prom;
    x->prom_len = plen;
    pthread_mutex_unlock(&x->lock);
}

static void *sampler(void *arg)
{
    tex_t *x = arg;
    pthread_mutex_lock(&x->lock);
    while (!x->stop) {
        pthread_mutex_unlock(&x->lock);
        refresh(x);
        pthread_mutex_lock(&x->lock);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += x->interval_s;
        while (!x->stop && pthread_cond_timedwait(&x->cond, &x->lock, &until) != ETIMEDOUT) {
        }
    }
    pthread_mutex_unlock(&x->lock);
    return NULL;
}

static void serve(thttp_reply_t *rep, tex_t *x, bool json)
{
    pthread_mutex_lock(&x->lock);
    const char *src = json ? x->json : x->prom;
    size_t len = json ? x->json_len : x->prom_len;
    char *copy = src ? malloc(len + 1) : NULL;
    if (copy)
        memcpy(copy, src, len + 1);
    pthread_mutex_unlock(&x->lock);
    if (!copy) {
        thttp_error(rep, 503, "unavailable", NULL, "no figures yet");
        return;
    }
    rep->status = 200;
    rep->text = copy;
    rep->text_len = len;
    rep->content_type = json ? "application/json" : "text/plain; version=0.0.4";
}

static void h_metrics(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    (void)req;
    serve(rep, ctx, false);
}

static void h_node(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    (void)req;
    serve(rep, ctx, true);
}

static const thttp_route_t routes[] = {
    {"GET", "/metrics", h_metrics},
    {"GET", "/v1/node", h_node},
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tessel-node-exporter [options]\n"
            "Serve this Slurm node's GPUs and its jobs' GPU slices (spank_tessel.so) over HTTP:\n"
            "GET /metrics (Prometheus text) and GET /v1/node (JSON, for tesseld --slurm).\n"
            "\n"
            "  --listen ADDR:PORT  numeric IPv4 address and port (default 0.0.0.0:%d)\n"
            "  --statedir DIR      the SPANK plugin's state directory (default /run/tessel/slurm)\n"
            "  --nvml LIB          NVML library (default libnvidia-ml.so.1)\n"
            "  --interval SECS     seconds between samples, 1..60 (default 1)\n"
            "  --node NAME         the node's name in the figures (default: the hostname, up\n"
            "                      to its first dot, as Slurm names nodes)\n"
            "  --once              print one sample's JSON on standard output and exit\n",
            TEX_DEFAULT_PORT);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"listen", required_argument, NULL, 'l'}, {"statedir", required_argument, NULL, 's'},
        {"nvml", required_argument, NULL, 'n'},   {"interval", required_argument, NULL, 'i'},
        {"node", required_argument, NULL, 'N'},   {"once", no_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
    };
    tex_t x = {.statedir = "/run/tessel/slurm", .nvml_path = "libnvidia-ml.so.1", .interval_s = 1};
    char host[64] = "0.0.0.0";
    unsigned long port = TEX_DEFAULT_PORT;
    bool once = false;
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        char *e;
        switch (c) {
        case 'l': {
            const char *colon = strrchr(optarg, ':');
            port = colon ? strtoul(colon + 1, &e, 10) : 0;
            if (!colon || colon == optarg || (size_t)(colon - optarg) >= sizeof host || *e ||
                port > 65535 || !colon[1]) {
                fprintf(stderr, "tessel-node-exporter: --listen %s: expected ADDR:PORT\n", optarg);
                return 2;
            }
            snprintf(host, sizeof host, "%.*s", (int)(colon - optarg), optarg);
            break;
        }
        case 's':
            x.statedir = optarg;
            break;
        case 'n':
            x.nvml_path = optarg;
            break;
        case 'i':
            x.interval_s = (unsigned)strtoul(optarg, &e, 10);
            if (*e || x.interval_s < 1 || x.interval_s > 60) {
                fprintf(stderr, "tessel-node-exporter: --interval must be 1..60\n");
                return 2;
            }
            break;
        case 'N':
            if (!*optarg || strlen(optarg) >= sizeof x.node) {
                fprintf(stderr, "tessel-node-exporter: --node: 1 to 63 characters\n");
                return 2;
            }
            snprintf(x.node, sizeof x.node, "%s", optarg);
            break;
        case 'o':
            once = true;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        usage(stderr);
        return 2;
    }
    if (x.statedir[0] != '/') {
        fprintf(stderr, "tessel-node-exporter: --statedir must be an absolute path\n");
        return 2;
    }
    if (!x.node[0]) {
        char h[256] = "";
        gethostname(h, sizeof h - 1);
        h[strcspn(h, ".")] = '\0';
        snprintf(x.node, sizeof x.node, "%.63s", h[0] ? h : "localhost");
    }
    if (once) {
        refresh(&x);
        if (!x.json)
            return 1;
        printf("%s\n", x.json);
        free(x.json);
        free(x.prom);
        tagent_nvml_close(x.nvml);
        return 0;
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    pthread_mutex_init(&x.lock, NULL);
    pthread_cond_init(&x.cond, NULL);
    refresh(&x); /* the first figures before the first request */
    thttp_config_t hc = {.host = host,
                         .port = (uint16_t)port,
                         .max_body = 0,
                         .max_connections = TEX_MAX_CONNECTIONS,
                         .max_per_client = TEX_MAX_PER_CLIENT,
                         .timeout_s = TEX_TIMEOUT_S,
                         .routes = routes,
                         .nroutes = sizeof routes / sizeof routes[0],
                         .ctx = &x};
    tsl_error_t err;
    thttp_server_t *srv = thttp_start(&hc, &err);
    if (!srv) {
        fprintf(stderr, "tessel-node-exporter: %s\n", err.text);
        return 1;
    }
    pthread_t th;
    if (pthread_create(&th, NULL, sampler, &x) != 0) {
        fprintf(stderr, "tessel-node-exporter: cannot start the sampler\n");
        thttp_stop(srv);
        return 1;
    }
    fprintf(stderr,
            "tessel-node-exporter: node %s, http://%s:%u/metrics and /v1/node, %s, every %u s\n",
            x.node, host, (unsigned)thttp_port(srv), x.statedir, x.interval_s);
    int sig = 0;
    sigwait(&set, &sig);
    pthread_mutex_lock(&x.lock);
    x.stop = true;
    pthread_cond_signal(&x.cond);
    pthread_mutex_unlock(&x.lock);
    pthread_join(th, NULL);
    thttp_stop(srv);
    free(x.json);
    free(x.prom);
    tagent_nvml_close(x.nvml);
    return 0;
}
