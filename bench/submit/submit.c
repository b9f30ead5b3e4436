/* submit.c - bench-submit: job submissions per second and their latency, with N concurrent
 * clients (threads), each on its own persistent HTTP connection (a libclient handle).
 *
 * The jobs must not load the machine: by default they go to a queue created with
 * max_gpu_milli 0 (a queue that starts nothing), so they stay pending and the figures measure
 * the API and the store, not job start-up.  Run it against a tesseld of its own (see
 * bench/submit/run.sh), never a production one: it leaves every job it submits in the store.
 *
 *   bench-submit [--threads 4] [--seconds 10 | --count N] [--rate R] [--queue bench-hold]
 *                [--ids FILE] [--per-second] [--preload N] [--scrape-hz H]
 *
 * Without --rate each client submits as fast as it can (closed loop: the throughput ceiling,
 * with the queueing delay that comes with it).  With --rate R the clients together send R
 * submissions per second on a fixed schedule, and a latency counts from the time a submission
 * was due, not the time it was sent (so a stall is not hidden by the requests it delayed).
 *
 * --preload N first fills the store with N finished jobs (arrays of 1,000 pending elements in the
 * holding queue, each cancelled as a whole: two requests per 1,000 jobs, through the API).
 * --scrape-hz H runs one more thread that GETs /metrics H times a second on a fixed schedule
 * while the clients submit (as Prometheus would, faster), and prints its latency (counted from
 * when each scrape was due, like the submissions').
 *
 * URL and token as for `tessel` (config file, TESSEL_URL, TESSEL_TOKEN); the token must be an
 * admin's to create the queue.  Prints submissions/s and p50/p99/max latency; exit status 1
 * when any submission failed.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "tessel/client.h"

/* Most client threads: each holds one connection, tesseld serves each with a thread. */
#define BENCH_MAX_THREADS 256

typedef struct {
    int index;
    const char *url, *token, *queue;
    double deadline;      /* monotonic seconds; 0: count-bound */
    double start, period; /* with --rate: this client's schedule (period 0: as fast as it can) */
    double t_start;       /* start of the run (monotonic seconds) */
    atomic_long *left;    /* submissions left when count-bound */
    FILE *ids;
    pthread_mutex_t *ids_lock;
    /* out */
    double *lat; /* seconds, one per acknowledged submission */
    double *end; /* when each ended, seconds since the start of the run */
    size_t n, cap;
    long errors;
    char first_error[256];
} worker_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *work(void *arg)
{
    worker_t *w = arg;
    tsl_error_t err;
    tclient_t *c = tclient_new(w->url, w->token, &err);
    if (!c) {
        w->errors++;
        snprintf(w->first_error, sizeof w->first_error, "%s", err.text);
        return NULL;
    }
    json_t *job = json_pack("{s:[s], s:f, s:s, s:s}", "argv", "true", "gpu", 0.5, "queue", w->queue,
                            "name", "bench");
    for (long k = 0;; k++) {
        if (w->deadline > 0 ? now_s() >= w->deadline : atomic_fetch_sub(w->left, 1) <= 0)
            break;
        double t0 = now_s();
        if (w->period > 0) {
            double due = w->start + (double)k * w->period;
            if (due > t0) {
                double d = due - t0;
                struct timespec ts = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
                nanosleep(&ts, NULL);
            }
            t0 = due;
        }
        json_t *ans = NULL;
        int r = tclient_request(c, "POST", "/v1/jobs", job, w->ids ? &ans : NULL, &err);
        double t1 = now_s();
        if (r < 0) {
            if (!w->errors++)
                snprintf(w->first_error, sizeof w->first_error, "%s", err.text);
            continue;
        }
        if (w->ids) {
            pthread_mutex_lock(w->ids_lock);
            fprintf(w->ids, "%lld\n", (long long)json_integer_value(json_object_get(ans, "id")));
            fflush(w->ids);
            pthread_mutex_unlock(w->ids_lock);
            json_decref(ans);
        }
        if (w->n == w->cap) {
            w->cap = w->cap ? w->cap * 2 : 4096;
            double *l = realloc(w->lat, w->cap * sizeof *l);
            double *e = l ? realloc(w->end, w->cap * sizeof *e) : NULL;
            if (!l || !e)
                abort();
            w->lat = l;
            w->end = e;
        }
        w->lat[w->n] = t1 - t0;
        w->end[w->n++] = t1 - w->t_start;
    }
    json_decref(job);
    tclient_destroy(c);
    return NULL;
}

/* The /metrics scraper (--scrape-hz): one connection, a fixed schedule. */
typedef struct {
    const char *url; /* http://host:port */
    double period, start, deadline;
    atomic_bool *done; /* the clients have finished */
    /* out */
    double *lat;
    size_t n, cap;
    long errors;
    size_t bytes; /* size of the last answer */
    char first_error[256];
} scraper_t;

static size_t count_bytes(char *p, size_t size, size_t n, void *arg)
{
    (void)p;
    *(size_t *)arg += size * n;
    return size * n;
}

static void *scrape(void *arg)
{
    scraper_t *s = arg;
    CURL *h = curl_easy_init();
    if (!h) {
        s->errors++;
        snprintf(s->first_error, sizeof s->first_error, "curl_easy_init failed");
        return NULL;
    }
    char url[600];
    snprintf(url, sizeof url, "%s/metrics", s->url);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, count_bytes);
    for (long k = 0;; k++) {
        double due = s->start + (double)k * s->period;
        if (atomic_load(s->done) || due >= s->deadline)
            break;
        double t0 = now_s();
        if (due > t0) {
            double d = due - t0;
            struct timespec ts = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
            nanosleep(&ts, NULL);
        }
        size_t bytes = 0;
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &bytes);
        CURLcode rc = curl_easy_perform(h);
        long code = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
        double t1 = now_s();
        if (rc != CURLE_OK || code != 200) {
            if (!s->errors++)
                snprintf(s->first_error, sizeof s->first_error, "GET /metrics: %s (HTTP %ld)",
                         curl_easy_strerror(rc), code);
            continue;
        }
        s->bytes = bytes;
        if (s->n == s->cap) {
            s->cap = s->cap ? s->cap * 2 : 1024;
            s->lat = realloc(s->lat, s->cap * sizeof *s->lat);
            if (!s->lat)
                abort();
        }
        s->lat[s->n++] = t1 - due;
    }
    curl_easy_cleanup(h);
    return NULL;
}

/* --preload: n finished jobs, 1,000 at a time (an array, then its cancel).  0 or -1. */
static int preload(tclient_t *c, const char *queue, long n)
{
    tsl_error_t err;
    double t0 = now_s();
    for (long done = 0; done < n;) {
        long k = n - done < 1000 ? n - done : 1000;
        char range[32];
        snprintf(range, sizeof range, "0-%ld", k - 1);
        json_t *job = json_pack("{s:[s], s:f, s:s, s:s, s:s}", "argv", "true", "gpu", 0.5, "queue",
                                queue, "name", "preload", "array", range);
        json_t *ans = NULL;
        int r = tclient_request(c, "POST", "/v1/jobs", job, &ans, &err);
        json_decref(job);
        if (r < 0) {
            fprintf(stderr, "bench-submit: preload: %s\n", err.text);
            return -1;
        }
        char path[64];
        snprintf(path, sizeof path, "/v1/jobs/%lld/cancel",
                 (long long)json_integer_value(json_object_get(ans, "id")));
        json_decref(ans);
        if (tclient_request(c, "POST", path, NULL, NULL, &err) < 0) {
            fprintf(stderr, "bench-submit: preload: cancel: %s\n", err.text);
            return -1;
        }
        done += k;
    }
    printf("preloaded %ld finished jobs in %.1f s\n", n, now_s() - t0);
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The q-quantile by the nearest-rank method (q in (0, 1]). */
static double quantile(const double *v, size_t n, double q)
{
    size_t rank = (size_t)(q * (double)n + 0.999999);
    if (rank < 1)
        rank = 1;
    if (rank > n)
        rank = n;
    return v[rank - 1];
}

static void usage(FILE *f)
{
    fprintf(f, "usage: bench-submit [--threads N] [--seconds S | --count N] [--queue NAME]\n"
               "                    [--ids FILE]\n"
               "  --threads N    concurrent clients, one connection each (default 4)\n"
               "  --seconds S    submit for S seconds (default 10)\n"
               "  --count N      submit N jobs in all instead\n"
               "  --rate R       R submissions per second in all, on a fixed schedule; latency\n"
               "                 counts from when each was due (default: as fast as possible)\n"
               "  --queue NAME   queue to submit to; created with max_gpu_milli 0 so that its\n"
               "                 jobs stay pending (default bench-hold)\n"
               "  --ids FILE     append each acknowledged job id to FILE as it comes\n"
               "  --per-second   also print submissions, p99 and max latency for each second\n"
               "  --preload N    first fill the store with N finished (cancelled) jobs\n"
               "  --scrape-hz H  GET /metrics H times a second while submitting (http URL)\n");
}

int main(int argc, char **argv)
{
    int threads = 4;
    double seconds = 10, rate = 0;
    long count = 0;
    const char *queue = "bench-hold", *ids_path = NULL;
    bool per_second = false;
    long preload_n = 0;
    double scrape_hz = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(a, "--per-second") == 0) {
            per_second = true;
            continue;
        }
        if (!v) {
            usage(stderr);
            return 2;
        }
        if (strcmp(a, "--threads") == 0)
            threads = atoi(v);
        else if (strcmp(a, "--seconds") == 0)
            seconds = atof(v);
        else if (strcmp(a, "--count") == 0)
            count = atol(v);
        else if (strcmp(a, "--rate") == 0)
            rate = atof(v);
        else if (strcmp(a, "--queue") == 0)
            queue = v;
        else if (strcmp(a, "--ids") == 0)
            ids_path = v;
        else if (strcmp(a, "--preload") == 0)
            preload_n = atol(v);
        else if (strcmp(a, "--scrape-hz") == 0)
            scrape_hz = atof(v);
        else {
            usage(stderr);
            return 2;
        }
        i++;
    }
    if (threads < 1 || threads > BENCH_MAX_THREADS || seconds <= 0 || count < 0 || rate < 0 ||
        preload_n < 0 || scrape_hz < 0 || scrape_hz > 1000) {
        fprintf(stderr,
                "bench-submit: --threads 1..%d, --seconds above 0, --count, --rate and "
                "--preload >= 0, --scrape-hz 0..1000\n",
                BENCH_MAX_THREADS);
        return 2;
    }
    tclient_config_t cfg;
    tsl_error_t err;
    if (tclient_config_load(&cfg, &err) < 0) {
        fprintf(stderr, "bench-submit: %s\n", err.text);
        return 1;
    }
    /* The holding queue (409: it exists already, fine). */
    tclient_t *c = tclient_new(cfg.url, cfg.token, &err);
    if (!c) {
        fprintf(stderr, "bench-submit: %s\n", err.text);
        return 1;
    }
    json_t *q = json_pack("{s:s, s:i}", "name", queue, "max_gpu_milli", 0);
    if (tclient_request(c, "POST", "/v1/queues", q, NULL, &err) < 0 && errno != EEXIST) {
        fprintf(stderr, "bench-submit: creating queue %s: %s\n", queue, err.text);
        json_decref(q);
        tclient_destroy(c);
        return 1;
    }
    json_decref(q);
    if (preload_n && preload(c, queue, preload_n) < 0) {
        tclient_destroy(c);
        return 1;
    }
    tclient_destroy(c);
    if (scrape_hz > 0 && strncmp(cfg.url, "http://", 7) != 0) {
        fprintf(stderr, "bench-submit: --scrape-hz needs an http:// URL, not %s\n", cfg.url);
        return 2;
    }

    FILE *ids = NULL;
    if (ids_path && !(ids = fopen(ids_path, "a"))) {
        fprintf(stderr, "bench-submit: %s: %s\n", ids_path, strerror(errno));
        return 1;
    }
    pthread_mutex_t ids_lock = PTHREAD_MUTEX_INITIALIZER;
    atomic_long left = count;
    worker_t *w = calloc((size_t)threads, sizeof *w);
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    if (!w || !tid)
        abort();
    double t0 = now_s();
    atomic_bool clients_done = false;
    scraper_t scr = {.url = cfg.url,
                     .period = scrape_hz > 0 ? 1.0 / scrape_hz : 0,
                     .start = t0,
                     .deadline = count ? 1e300 : t0 + seconds,
                     .done = &clients_done};
    pthread_t scr_tid;
    if (scrape_hz > 0 && pthread_create(&scr_tid, NULL, scrape, &scr) != 0) {
        fprintf(stderr, "bench-submit: pthread_create: %s\n", strerror(errno));
        return 1;
    }
    for (int i = 0; i < threads; i++) {
        w[i] = (worker_t){.index = i,
                          .url = cfg.url,
                          .token = cfg.token,
                          .queue = queue,
                          .deadline = count ? 0 : t0 + seconds,
                          .left = &left,
                          .ids = ids,
                          .ids_lock = &ids_lock,
                          /* Clients interleave: client i starts i/threads of a period late. */
                          .period = rate > 0 ? (double)threads / rate : 0,
                          .start = rate > 0 ? t0 + (double)i / rate : t0,
                          .t_start = t0};
        if (pthread_create(&tid[i], NULL, work, &w[i]) != 0) {
            fprintf(stderr, "bench-submit: pthread_create: %s\n", strerror(errno));
            return 1;
        }
    }
    for (int i = 0; i < threads; i++)
        pthread_join(tid[i], NULL);
    double elapsed = now_s() - t0;
    atomic_store(&clients_done, true);
    if (scrape_hz > 0)
        pthread_join(scr_tid, NULL);
    if (ids)
        fclose(ids);
    size_t n = 0;
    long errors = 0;
    const char *first = NULL;
    for (int i = 0; i < threads; i++) {
        n += w[i].n;
        errors += w[i].errors;
        if (w[i].errors && !first)
            first = w[i].first_error;
    }
    double *all = malloc((n ? n : 1) * sizeof *all);
    if (!all)
        abort();
    if (per_second) {
        /* Latencies of the submissions that ended in each second of the run. */
        int secs = (int)elapsed + 1;
        for (int sec = 0; sec < secs; sec++) {
            size_t m = 0;
            for (int i = 0; i < threads; i++)
                for (size_t j = 0; j < w[i].n; j++)
                    if ((int)w[i].end[j] == sec)
                        all[m++] = w[i].lat[j];
            if (!m)
                continue;
            qsort(all, m, sizeof *all, cmp_double);
            printf("second %3d: %6zu submissions, p99 %7.2f ms, max %7.2f ms\n", sec, m,
                   quantile(all, m, 0.99) * 1e3, all[m - 1] * 1e3);
        }
    }
    size_t k = 0;
    for (int i = 0; i < threads; i++) {
        memcpy(all + k, w[i].lat, w[i].n * sizeof *all);
        k += w[i].n;
        free(w[i].lat);
        free(w[i].end);
    }
    qsort(all, n, sizeof *all, cmp_double);
    char pace[64] = "as fast as possible";
    if (rate > 0)
        snprintf(pace, sizeof pace, "paced at %.0f/s", rate);
    printf("bench-submit: %d clients, %s, %.2f s, queue %s, %s\n", threads, pace, elapsed, queue,
           cfg.url);
    printf("submitted %zu jobs: %.0f /s; latency p50 %.2f ms, p99 %.2f ms, max %.2f ms; "
           "%ld errors\n",
           n, (double)n / elapsed, n ? quantile(all, n, 0.50) * 1e3 : 0.0,
           n ? quantile(all, n, 0.99) * 1e3 : 0.0, n ? all[n - 1] * 1e3 : 0.0, errors);
    if (first)
        printf("first error: %s\n", first);
    if (scrape_hz > 0) {
        qsort(scr.lat, scr.n, sizeof *scr.lat, cmp_double);
        printf("metrics: %zu scrapes at %.0f Hz, %zu bytes; latency p50 %.2f ms, p99 %.2f ms, "
               "max %.2f ms; %ld errors\n",
               scr.n, scrape_hz, scr.bytes, scr.n ? quantile(scr.lat, scr.n, 0.50) * 1e3 : 0.0,
               scr.n ? quantile(scr.lat, scr.n, 0.99) * 1e3 : 0.0,
               scr.n ? scr.lat[scr.n - 1] * 1e3 : 0.0, scr.errors);
        if (scr.errors)
            printf("first metrics error: %s\n", scr.first_error);
        free(scr.lat);
        errors += scr.errors;
    }
    free(all);
    free(w);
    free(tid);
    return errors ? 1 : 0;
}
