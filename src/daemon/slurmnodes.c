/* slurmnodes.c - tesseld --slurm's poll of the cluster's nodes: sinfo, then every node's
 * tessel-node-exporter over HTTP with libcurl, in a thread of its own (see slurmnodes.h). */
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/daemon.h"
#include "daemon/slurmnodes.h"

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- one poll ------------------------------------------------------------------------------ */

typedef struct {
    CURL *h;
    char *buf;
    size_t len;
    bool too_big;
    char errbuf[CURL_ERROR_SIZE];
} fetch_t;

static size_t on_body(char *p, size_t size, size_t nmemb, void *arg)
{
    fetch_t *f = arg;
    size_t n = size * nmemb;
    if (f->len + n > TNF_MAX_JSON) {
        f->too_big = true;
        return 0; /* libcurl stops this transfer */
    }
    char *nb = realloc(f->buf, f->len + n + 1);
    if (!nb)
        return 0;
    memcpy(nb + f->len, p, n);
    f->len += n;
    nb[f->len] = '\0';
    f->buf = nb;
    return n;
}

/* Ask every node's exporter at once; fill each node's figures or error. */
static void fetch_all(tessd_t *d, tsn_node_t *nodes, size_t n)
{
    CURLM *m = curl_multi_init();
    fetch_t *f = calloc(n ? n : 1, sizeof *f);
    if (!m || !f) {
        for (size_t i = 0; i < n; i++)
            snprintf(nodes[i].error, sizeof nodes[i].error, "out of memory");
        curl_multi_cleanup(m);
        free(f);
        return;
    }
    curl_multi_setopt(m, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)TSN_PARALLEL);
    for (size_t i = 0; i < n; i++) {
        char url[160];
        const char *a = nodes[i].slurm.addr;
        /* An IPv6 address goes in brackets; names and addresses are plain (tsn_parse_sinfo). */
        snprintf(url, sizeof url,
                 strchr(a, ':') ? "http://[%s]:%lu/v1/node" : "http://%s:%lu/v1/node", a,
                 d->slurm_node_port);
        CURL *h = curl_easy_init();
        if (!h) {
            snprintf(nodes[i].error, sizeof nodes[i].error, "out of memory");
            continue;
        }
        f[i].h = h;
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http");
        curl_easy_setopt(h, CURLOPT_NOPROXY, "*"); /* the nodes are asked directly, never a proxy */
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)TSN_CONNECT_MS);
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)TSN_FETCH_MS);
        curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)TNF_MAX_JSON);
        curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &f[i]);
        curl_easy_setopt(h, CURLOPT_ERRORBUFFER, f[i].errbuf);
        curl_easy_setopt(h, CURLOPT_PRIVATE, &nodes[i]);
        curl_multi_add_handle(m, h);
    }
    int running = 1;
    while (running) {
        if (curl_multi_perform(m, &running) != CURLM_OK)
            break;
        if (running)
            curl_multi_poll(m, NULL, 0, 200, NULL);
    }
    int left;
    CURLMsg *msg;
    while ((msg = curl_multi_info_read(m, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        size_t i = 0;
        while (i < n && f[i].h != msg->easy_handle)
            i++;
        if (i == n)
            continue;
        tsn_node_t *nd = &nodes[i];
        long code = 0;
        curl_easy_getinfo(f[i].h, CURLINFO_RESPONSE_CODE, &code);
        if (msg->data.result != CURLE_OK) {
            snprintf(nd->error, sizeof nd->error, "its exporter (port %lu) did not answer: %.180s",
                     d->slurm_node_port,
                     f[i].too_big     ? "answer larger than 1 MiB"
                     : f[i].errbuf[0] ? f[i].errbuf
                                      : curl_easy_strerror(msg->data.result));
            continue;
        }
        if (code != 200) {
            snprintf(nd->error, sizeof nd->error, "its exporter answered HTTP %ld", code);
            continue;
        }
        tnf_node_t figs;
        tsl_error_t err;
        if (tnf_from_json(f[i].buf ? f[i].buf : "", f[i].len, &figs, &err) < 0) {
            snprintf(nd->error, sizeof nd->error, "its exporter's answer: %.200s", err.text);
            tnf_node_clear(&figs);
            continue;
        }
        /* Slurm's name is the node's name, whatever the exporter calls itself. */
        snprintf(figs.node, sizeof figs.node, "%s", nd->slurm.name);
        tnf_node_clear(&nd->figs);
        nd->figs = figs;
        nd->has_figs = true;
        nd->answered = true;
        nd->last_ok_ms = wall_ms();
        nd->error[0] = '\0';
        if (figs.error[0])
            snprintf(nd->error, sizeof nd->error, "NVML on the node: %s", figs.error);
    }
    for (size_t i = 0; i < n; i++) {
        if (f[i].h) {
            curl_multi_remove_handle(m, f[i].h);
            curl_easy_cleanup(f[i].h);
        }
        free(f[i].buf);
    }
    free(f);
    curl_multi_cleanup(m);
}

static void poll_once(tsn_state_t *s)
{
    tessd_t *d = s->d;
    static const char *const args[] = {"--json", NULL};
    char *out = NULL, why[256] = "";
    size_t outlen = 0;
    tsn_slurm_node_t *sn = NULL;
    size_t nsn = 0;
    tsl_error_t err;
    if (tessd_slurm_read(d, "sinfo", args, &out, &outlen, why, sizeof why) < 0) {
        /* Slurm does not answer: the nodes stay as they were, the failure is said. */
    } else if (tsn_parse_sinfo(out, outlen, &sn, &nsn, &err) < 0) {
        snprintf(why, sizeof why, "%s", err.text);
    }
    free(out);
    if (why[0]) {
        /* Slurm does not answer (slurmctld down): the nodes are those of the last list, as
         * Slurm last described them, and are still asked for their figures: the GPUs stay
         * live while the controller is away; the failure is said (poll.error). */
        pthread_mutex_lock(&s->lock);
        bool first = !s->error[0];
        snprintf(s->error, sizeof s->error, "%s", why);
        nsn = s->n;
        sn = nsn ? calloc(nsn, sizeof *sn) : NULL;
        for (size_t i = 0; sn && i < nsn; i++)
            sn[i] = s->nodes[i].slurm;
        if (!sn)
            nsn = 0;
        pthread_mutex_unlock(&s->lock);
        if (first)
            tessd_log("slurm: cannot list the nodes (their last list is asked): %s", why);
    }
    /* The new list, each node with its last figures (kept when it does not answer now). */
    tsn_node_t *nodes = calloc(nsn ? nsn : 1, sizeof *nodes);
    if (!nodes) {
        free(sn);
        return;
    }
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < nsn; i++) {
        nodes[i].slurm = sn[i];
        for (size_t j = 0; j < s->n; j++) {
            if (strcmp(s->nodes[j].slurm.name, sn[i].name) != 0)
                continue;
            if (tsn_node_copy(&nodes[i], &s->nodes[j]) == 0)
                nodes[i].slurm = sn[i];
            nodes[i].answered = false;
            break;
        }
    }
    pthread_mutex_unlock(&s->lock);
    free(sn);
    fetch_all(d, nodes, nsn);
    int64_t now = wall_ms();
    for (size_t i = 0; i < nsn; i++) {
        tsn_node_t *nd = &nodes[i];
        nd->status = nd->slurm.down    ? TSN_DOWN
                     : nd->slurm.drain ? TSN_DRAIN
                     : nd->answered    ? TSN_UP
                                       : TSN_UNREACHABLE;
    }
    pthread_mutex_lock(&s->lock);
    /* Log each node's changes of status once. */
    for (size_t i = 0; i < nsn; i++) {
        tsn_status_t was = TSN_UNKNOWN;
        for (size_t j = 0; j < s->n; j++)
            if (strcmp(s->nodes[j].slurm.name, nodes[i].slurm.name) == 0)
                was = s->nodes[j].status;
        if (was != nodes[i].status && (was != TSN_UNKNOWN || nodes[i].status != TSN_UP))
            tessd_log("slurm: node %s is %s%s%s", nodes[i].slurm.name,
                      tsn_status_name(nodes[i].status), nodes[i].error[0] ? ": " : "",
                      nodes[i].error);
    }
    if (s->error[0] && !why[0])
        tessd_log("slurm: the nodes can be listed again");
    tsn_nodes_free(s->nodes, s->n);
    s->nodes = nodes;
    s->n = nsn;
    s->polled_ms = now;
    snprintf(s->error, sizeof s->error, "%s", why);
    pthread_mutex_unlock(&s->lock);
}

static void *poller(void *arg)
{
    tsn_state_t *s = arg;
    pthread_mutex_lock(&s->lock);
    while (!s->stop) {
        pthread_mutex_unlock(&s->lock);
        poll_once(s);
        pthread_mutex_lock(&s->lock);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += (time_t)((tessd_t *)s->d)->slurm_node_poll_s;
        while (!s->stop && pthread_cond_timedwait(&s->cond, &s->lock, &until) != ETIMEDOUT) {
        }
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

int tessd_nodes_start(tessd_t *d, tsl_error_t *err)
{
    if (!d->slurm || d->slurm_node_port == 0)
        return 0;
    if (curl_global_init(CURL_GLOBAL_NOTHING) != CURLE_OK) {
        errno = EIO;
        return tsl_errprintf(err, "libcurl does not start");
    }
    tsn_state_t *s = calloc(1, sizeof *s);
    if (!s) {
        errno = ENOMEM;
        return tsl_errprintf(err, "out of memory");
    }
    s->d = d;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    if (pthread_create(&s->thread, NULL, poller, s) != 0) {
        free(s);
        errno = EAGAIN;
        return tsl_errprintf(err, "cannot start the nodes' poll");
    }
    s->started = true;
    d->nodes = s;
    return 0;
}

void tessd_nodes_stop(tessd_t *d)
{
    tsn_state_t *s = d->nodes;
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    s->stop = true;
    pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    tsn_nodes_free(s->nodes, s->n);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    free(s);
    d->nodes = NULL;
    curl_global_cleanup();
}
