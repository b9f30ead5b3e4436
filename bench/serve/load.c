/* load.c - bench-serve-load: an open-loop load generator for the inference services' benchmark
 * (docs/serving.md, "Benchmark"): requests at Poisson arrivals of a fixed mean rate, each sent
 * at its time whatever the answers before it (libcurl's multi interface, one thread), so a
 * slow server makes requests wait, not fewer requests come (wrk and other closed-loop tools
 * send the next request only after an answer, and hide the queueing this measures).
 *
 *   bench-serve-load --url URL --rate R --seconds S [--token-file FILE] [--seed N]
 *                    [--max-inflight N] [--unix-socket PATH]
 *
 * --unix-socket: the requests go to that Unix socket (a replica's, through its forwarder)
 * rather than to URL's host and port.
 *
 * A request's latency runs from its arrival time (not from when libcurl got to it), so time a
 * request waits behind a late generator counts too.  Prints one line:
 *   sent=N ok=N errors=N seconds=S throughput=R p50_ms=X p90_ms=X p99_ms=X max_ms=X
 * The token (Authorization: Bearer) is read from a file, never from the command line. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* xorshift64*: a fixed seed gives the same arrivals in every run. */
static uint64_t rng_state = 88172645463325252ull;
static double uniform(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    uint64_t x = rng_state * 2685821657736338717ull;
    return ((double)(x >> 11) + 0.5) / 9007199254740992.0; /* (0, 1) */
}

static size_t discard(char *p, size_t size, size_t n, void *arg)
{
    (void)p;
    (void)arg;
    return size * n;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(const double *v, size_t n, double p)
{
    if (!n)
        return 0;
    size_t i = (size_t)ceil(p * (double)n) - 1;
    return v[i < n ? i : n - 1];
}

int main(int argc, char **argv)
{
    const char *url = NULL, *token_file = NULL, *unix_socket = NULL;
    double rate = 0, seconds = 0;
    long max_inflight = 4096;
    static const struct option opts[] = {
        {"url", required_argument, NULL, 'u'},
        {"rate", required_argument, NULL, 'r'},
        {"seconds", required_argument, NULL, 's'},
        {"token-file", required_argument, NULL, 't'},
        {"seed", required_argument, NULL, 'S'},
        {"max-inflight", required_argument, NULL, 'm'},
        {"unix-socket", required_argument, NULL, 'x'},
        {NULL, 0, NULL, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'u':
            url = optarg;
            break;
        case 'r':
            rate = atof(optarg);
            break;
        case 's':
            seconds = atof(optarg);
            break;
        case 't':
            token_file = optarg;
            break;
        case 'S':
            rng_state = strtoull(optarg, NULL, 10) | 1;
            break;
        case 'm':
            max_inflight = atol(optarg);
            break;
        case 'x':
            unix_socket = optarg;
            break;
        default:
            return 2;
        }
    }
    if (!url || !(rate > 0) || !(seconds > 0) || max_inflight < 1) {
        fprintf(stderr, "usage: bench-serve-load --url URL --rate R --seconds S "
                        "[--token-file FILE] [--seed N] [--max-inflight N] [--unix-socket PATH]\n");
        return 2;
    }
    char auth[256] = "";
    if (token_file) {
        FILE *f = fopen(token_file, "r");
        char tok[160] = "";
        if (!f || !fgets(tok, sizeof tok, f)) {
            fprintf(stderr, "bench-serve-load: %s: %s\n", token_file, strerror(errno));
            return 1;
        }
        fclose(f);
        tok[strcspn(tok, "\r\n")] = 0;
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", tok);
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURLM *multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, max_inflight);
    struct curl_slist *hdr = auth[0] ? curl_slist_append(NULL, auth) : NULL;
    size_t cap = (size_t)(rate * seconds * 1.5) + 1024, nlat = 0;
    double *lat = malloc(cap * sizeof *lat);
    if (!lat)
        return 1;
    long sent = 0, ok = 0, errors = 0, inflight = 0;
    double start = now_s(), end = start + seconds;
    double next = start - log(uniform()) / rate;
    for (;;) {
        double t = now_s();
        /* Every arrival due by now is sent now (an open loop never waits for answers). */
        while (next <= t && next < end) {
            CURL *e = curl_easy_init();
            double *at = malloc(sizeof *at);
            if (!e || !at)
                return 1;
            *at = next;
            curl_easy_setopt(e, CURLOPT_URL, url);
            if (unix_socket)
                curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, unix_socket);
            curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
            curl_easy_setopt(e, CURLOPT_PRIVATE, at);
            curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
            curl_easy_setopt(e, CURLOPT_TIMEOUT, 120L);
            if (hdr)
                curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdr);
            curl_multi_add_handle(multi, e);
            sent++;
            inflight++;
            next -= log(uniform()) / rate;
        }
        int running;
        curl_multi_perform(multi, &running);
        CURLMsg *m;
        int left;
        while ((m = curl_multi_info_read(multi, &left))) {
            if (m->msg != CURLMSG_DONE)
                continue;
            CURL *e = m->easy_handle;
            double *at;
            long code = 0;
            curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&at);
            curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
            if (m->data.result == CURLE_OK && code == 200) {
                ok++;
                if (nlat < cap)
                    lat[nlat++] = (now_s() - *at) * 1000.0;
            } else {
                errors++;
            }
            free(at);
            curl_multi_remove_handle(multi, e);
            curl_easy_cleanup(e);
            inflight--;
        }
        t = now_s();
        if (t >= end && inflight == 0)
            break;
        if (t > end + 120)
            break; /* answers that never come: counted as not ok */
        double wait = next < end ? next - t : 0.01;
        int ms = wait <= 0 ? 0 : (int)(wait * 1000.0);
        curl_multi_poll(multi, NULL, 0, ms > 10 ? 10 : ms, NULL);
    }
    double took = now_s() - start;
    qsort(lat, nlat, sizeof *lat, cmp_double);
    printf("sent=%ld ok=%ld errors=%ld seconds=%.2f throughput=%.1f p50_ms=%.3f p90_ms=%.3f "
           "p99_ms=%.3f max_ms=%.3f\n",
           sent, ok, errors + (sent - ok - errors), took, (double)ok / took, pct(lat, nlat, 0.5),
           pct(lat, nlat, 0.9), pct(lat, nlat, 0.99), nlat ? lat[nlat - 1] : 0.0);
    free(lat);
    curl_slist_free_all(hdr);
    curl_multi_cleanup(multi);
    curl_global_cleanup();
    return 0;
}
