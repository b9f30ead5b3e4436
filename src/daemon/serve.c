/* serve.c - inference services: the pure parts (serve.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/serve.h"
#include "libstore/store.h"
#include "libutil/error.h"
#include "libutil/jobenv.h"
#include "libutil/size.h"

/* A job's argv: at most this many strings (as POST /v1/jobs). */
#define TSV_MAX_ARGV 256

#define BAD(f, ...)                                                                                \
    do {                                                                                           \
        *field = f;                                                                                \
        snprintf(why, len, __VA_ARGS__);                                                           \
        return -1;                                                                                 \
    } while (0)

static int get_size(json_t *v, uint64_t *out)
{
    if (json_is_integer(v) && json_integer_value(v) > 0) {
        *out = (uint64_t)json_integer_value(v);
        return 0;
    }
    if (json_is_string(v) && tsl_parse_size_unit(json_string_value(v), out, NULL) == 0 && *out > 0)
        return 0;
    return -1;
}

int tsv_spec_parse(json_t *body, tsv_spec_t *out, const char **field, char *why, size_t len)
{
    memset(out, 0, sizeof *out);
    json_t *argv = json_object_get(body, "argv");
    if (!json_is_array(argv) || json_array_size(argv) == 0 || json_array_size(argv) > TSV_MAX_ARGV)
        BAD("argv", "argv must be an array of 1 to %d strings (the replica's command)",
            TSV_MAX_ARGV);
    size_t i;
    json_t *v;
    json_array_foreach(argv, i, v)
    {
        if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
            BAD("argv", "argv[%zu] must be a string without NUL bytes", i);
        if (i == 0 && json_string_length(v) == 0)
            BAD("argv", "argv[0] must not be empty");
    }
    out->argv = argv;
    v = json_object_get(body, "env");
    if (v && !json_is_null(v)) {
        if (!json_is_object(v) || json_object_size(v) > TSL_ENV_MAX_VARS)
            BAD("env", "env must be an object of at most %d strings", TSL_ENV_MAX_VARS);
        const char *k;
        json_t *ev;
        size_t bytes = 0;
        json_object_foreach(v, k, ev)
        {
            if (!*k || strchr(k, '='))
                BAD("env", "env name '%s' is empty or holds '='", k);
            if (!json_is_string(ev) || strlen(json_string_value(ev)) != json_string_length(ev))
                BAD("env", "env '%s' must be a string without NUL bytes", k);
            if (strcmp(k, "PORT") == 0 || strcmp(k, "TESSEL_SERVICE") == 0)
                BAD("env", "env '%s': set by Tessel for each replica", k);
            const char *r = tsl_env_reserved(k);
            if (r)
                BAD("env", "env '%s': %s", k, r);
            bytes += strlen(k) + json_string_length(ev) + 2;
        }
        if (bytes > TSL_ENV_MAX_BYTES)
            BAD("env", "env takes %zu bytes, at most %u", bytes, TSL_ENV_MAX_BYTES);
        out->env = v;
    }
    v = json_object_get(body, "gpu");
    if (v && !json_is_null(v)) {
        double g = json_is_number(v) ? json_number_value(v) : -1;
        if (!(g > 0) || !isfinite(g) || g > 64)
            BAD("gpu", "gpu must be a number above 0 (a fraction up to 1, or whole GPUs)");
        if (g <= 1.0) {
            long milli = lround(g * 1000.0);
            if (milli < 1 || fabs(g * 1000.0 - (double)milli) > 1e-6)
                BAD("gpu", "gpu %g: a fraction of a GPU has at most 3 decimals (0.001..1)", g);
            out->gpu_milli = (int)milli;
            out->gpu_count = 1;
            out->gpus = milli == 1000 ? 1 : 0;
        } else {
            if (g != floor(g))
                BAD("gpu", "gpu %g: above 1, ask for whole GPUs (2, 3, ...), not a fraction", g);
            out->gpus = out->gpu_count = (int)g;
            out->gpu_milli = 1000;
        }
    }
    v = json_object_get(body, "gpu_mem");
    if (v && !json_is_null(v)) {
        if (!out->gpu_count)
            BAD("gpu_mem", "gpu_mem needs gpu");
        if (get_size(v, &out->gpu_mem) < 0)
            BAD("gpu_mem", "gpu_mem must be a byte count above 0 or a size such as \"6G\"");
    }
    v = json_object_get(body, "cpu");
    if (v && !json_is_null(v)) {
        double c = json_is_number(v) ? json_number_value(v) : -1;
        if (!(c > 0) || !isfinite(c) || c > 1e6)
            BAD("cpu", "cpu must be a number of cores above 0");
        out->cpu_milli = (int)lround(c * 1000.0);
        if (out->cpu_milli < 1)
            out->cpu_milli = 1;
    }
    v = json_object_get(body, "mem");
    if (v && !json_is_null(v) && get_size(v, &out->mem) < 0)
        BAD("mem", "mem must be a byte count above 0 or a size such as \"8G\"");
    v = json_object_get(body, "queue");
    if (v && !json_is_null(v)) {
        if (!json_is_string(v) || !tstore_name_valid(json_string_value(v)))
            BAD("queue", "queue must be a queue name");
        out->queue = json_string_value(v);
    }
    return 0;
}

json_t *tsv_spec_json(const tsv_spec_t *s)
{
    return json_pack("{s:O, s:o, s:i, s:i, s:i, s:I, s:i, s:I, s:s}", "argv", s->argv, "env",
                     s->env ? json_deep_copy(s->env) : json_object(), "gpus", s->gpus, "gpu_milli",
                     s->gpu_milli, "gpu_count", s->gpu_count, "gpu_mem", (json_int_t)s->gpu_mem,
                     "cpu_milli", s->cpu_milli, "mem", (json_int_t)s->mem, "queue",
                     s->queue ? s->queue : "default");
}

void tsv_meter_update(tsv_meter_t *m, uint64_t req_tot, double rtime_ms, int64_t scur,
                      int concurrency, int64_t now_ms)
{
    if (!m->primed || req_tot < m->req_tot || now_ms <= m->at_ms) {
        m->primed = true;
        m->req_tot = req_tot;
        m->at_ms = now_ms;
        m->lambda = 0;
        return;
    }
    uint64_t served = req_tot - m->req_tot;
    m->lambda = (double)served * 1000.0 / (double)(now_ms - m->at_ms);
    m->req_tot = req_tot;
    m->at_ms = now_ms;
    if (served == 0 || !(rtime_ms > 0))
        return; /* nothing new to learn from */
    m->latency_ms = rtime_ms;
    double mu;
    if (concurrency > 0)
        mu = concurrency * 1000.0 / rtime_ms;
    else
        mu = m->lambda + 1000.0 / rtime_ms; /* M/M/1: W = 1 / (mu - lambda) */
    (void)scur;
    m->mu = m->mu > 0 ? (1 - TSV_ALPHA) * m->mu + TSV_ALPHA * mu : mu;
}

void tsv_weights(const double *mu, size_t n, int *w)
{
    double sum = 0, max = 0;
    size_t known = 0;
    for (size_t i = 0; i < n; i++) {
        if (mu[i] > 0) {
            sum += mu[i];
            known++;
            if (mu[i] > max)
                max = mu[i];
        }
    }
    double mean = known ? sum / (double)known : 0;
    for (size_t i = 0; i < n; i++) {
        if (!known) {
            w[i] = TSV_WEIGHT_MAX;
            continue;
        }
        double m = mu[i] > 0 ? mu[i] : mean;
        long x = lround(TSV_WEIGHT_MAX * m / max);
        w[i] = x < TSV_WEIGHT_MIN ? TSV_WEIGHT_MIN : x > TSV_WEIGHT_MAX ? TSV_WEIGHT_MAX : (int)x;
    }
}

char *tsv_haproxy_cfg(const char *sock, const tsv_cfg_service_t *svc, size_t n, bool with_weights,
                      const char *user, const char *group)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    if (!f)
        return NULL;
    /* Written by tesseld: the proxy of the inference services (docs/serving.md). */
    fprintf(f,
            "# written by tesseld (docs/serving.md): do not edit\n"
            "global\n"
            "    stats socket %s mode 600 level admin\n"
            "    maxconn 8192\n"
            /* The process a reload replaces exits within this, requests held or not. */
            "    hard-stop-after %ds\n"
            /* One thread (docs/serving.md, "One HAProxy thread"): HAProxy 2.6 starts one per
             * CPU; a request's stream and its kept-alive connection to the replica stay on one
             * thread anyway, and on a small node the second thread only competes with the
             * replicas and the forwarders for the CPUs.  Measured at the benchmark's 50
             * requests/s (2026-11-28): 0.22 ms of HAProxy's CPU a request against 0.35 ms with
             * two threads.  One connection (served by one thread whatever nbthread says) carried
             * 2,400 requests a second through the proxy and the forwarder to a stand-in on this
             * 2-CPU machine at load 8 (wrk -c1): far above what the replicas of one node serve. */
            "    nbthread 1\n",
            sock, TSV_HARD_STOP_S);
    if (user && group)
        fprintf(f, "    user %s\n    group %s\n", user, group);
    fprintf(f, "defaults\n"
               "    mode http\n"
               "    option http-keep-alive\n"
               "    timeout connect 5s\n"
               "    timeout client 120s\n"
               "    timeout server 120s\n"
               "    timeout queue 60s\n"
               "    timeout http-request 10s\n"
               /* A replica that died between two health checks: the request goes to another. */
               "    retries 2\n"
               "    option redispatch 1\n");
    for (size_t i = 0; i < n; i++) {
        const tsv_cfg_service_t *s = &svc[i];
        fprintf(f,
                "frontend fe_%s\n"
                "    bind 127.0.0.1:%d\n"
                "    acl tessel_caller req.hdr(authorization),word(2,' '),sha2(256),hex,lower"
                " -m str -f %s\n"
                "    http-request deny deny_status 401 unless tessel_caller\n"
                "    http-request del-header authorization\n"
                "    default_backend be_%s\n"
                "backend be_%s\n"
                "    balance roundrobin\n"
                "    option httpchk GET %s\n"
                "    default-server check inter 1s fall 2 rise 1",
                s->name, s->port, s->tokens_file, s->name, s->name, s->health);
        if (s->concurrency > 0)
            fprintf(f, " maxconn %d", s->concurrency);
        fputc('\n', f);
        for (size_t k = 0; k < s->nreplicas; k++) {
            const tsv_cfg_replica_t *r = &s->replicas[k];
            int w = with_weights ? r->weight : TSV_WEIGHT_MAX;
            if (r->sock[0])
                fprintf(f, "    server r%lld unix@%s weight %d\n", (long long)r->job, r->sock, w);
            else
                fprintf(f, "    server r%lld 127.0.0.1:%d weight %d\n", (long long)r->job, r->port,
                        w);
        }
    }
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* A field's value as text or number. */
static const char *val_str(json_t *v)
{
    return json_string_value(json_object_get(v, "value"));
}

static double val_num(json_t *v)
{
    json_t *x = json_object_get(v, "value");
    return json_is_number(x) ? json_number_value(x) : 0;
}

int tsv_stat_parse(const char *text, int (*cb)(const tsv_stat_t *s, void *arg), void *arg)
{
    json_t *root = json_loads(text, 0, NULL);
    if (!json_is_array(root)) {
        json_decref(root);
        return -1;
    }
    size_t i;
    json_t *rec;
    int rc = 0;
    json_array_foreach(root, i, rec)
    {
        if (!json_is_array(rec))
            continue;
        tsv_stat_t s = {0};
        bool server = false, has_req = false;
        uint64_t stot = 0;
        size_t k;
        json_t *fld;
        json_array_foreach(rec, k, fld)
        {
            const char *name =
                json_string_value(json_object_get(json_object_get(fld, "field"), "name"));
            json_t *v = json_object_get(fld, "value");
            if (!name || !v)
                continue;
            const char *ot = json_string_value(json_object_get(fld, "objType"));
            if (ot && strcmp(ot, "Server") == 0)
                server = true;
            if (strcmp(name, "pxname") == 0)
                s.backend = val_str(v);
            else if (strcmp(name, "svname") == 0)
                s.server = val_str(v);
            else if (strcmp(name, "req_tot") == 0) {
                s.req_tot = (uint64_t)val_num(v);
                has_req = true;
            } else if (strcmp(name, "stot") == 0)
                stot = (uint64_t)val_num(v);
            else if (strcmp(name, "rtime") == 0)
                s.rtime_ms = val_num(v);
            else if (strcmp(name, "scur") == 0)
                s.scur = (int64_t)val_num(v);
            else if (strcmp(name, "qcur") == 0)
                s.qcur = (int64_t)val_num(v);
            else if (strcmp(name, "status") == 0)
                s.status = val_str(v);
        }
        if (!has_req)
            s.req_tot = stot; /* connections: a server without its count of requests */
        if (server && s.backend && s.server && (rc = cb(&s, arg)) != 0)
            break;
    }
    json_decref(root);
    return rc < 0 ? -1 : 0;
}
