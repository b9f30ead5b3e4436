/* fill.c - bench-history-fill: a week of usage history through tesseld's real write path
 * (thist_write: 10 s samples, 1-minute and 10-minute means, pruning at the default plan) for
 * 8 GPUs, 4 queues and 6 users, into a tesseld store; and, as the baseline, the same samples
 * kept as they are (every 10 s sample for the whole week, no downsampling) in a second store.
 * Prints both stores' sizes side by side, their ratio and the figure's budget (50 MB), and
 * what one sample of every series costs to write.
 *
 *   bench-history-fill DB NAIVE_DB UUIDS_FILE [DAYS]
 *
 * UUIDS_FILE: the GPUs' UUIDs, one a line (those of the tesseld that will serve DB).  DAYS:
 * the span filled (default 7, a week, plus the hour before it).  The figures are synthetic but
 * shaped like a lab's: each GPU busy in working hours with a job, idle at night, some jobs at
 * 0 %; memory in use with the jobs; queues and users with jobs running and pending.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "daemon/histagg.h"

#define NGPUS   8
#define NQUEUES 4
#define NUSERS  6

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The database file and its WAL after close, bytes. */
static long long file_size(const char *path)
{
    struct stat st;
    long long n = stat(path, &st) == 0 ? (long long)st.st_size : 0;
    char wal[4200];
    snprintf(wal, sizeof wal, "%s-wal", path);
    if (stat(wal, &st) == 0)
        n += (long long)st.st_size;
    return n;
}

/* Deterministic pseudo-random in [0, 1). */
static double rnd(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return ((*s >> 8) & 0xffff) / 65536.0;
}

int main(int argc, char **argv)
{
    if (argc < 4 || argc > 5) {
        fprintf(stderr, "usage: bench-history-fill DB NAIVE_DB UUIDS_FILE [DAYS]\n");
        return 1;
    }
    int days = argc == 5 ? atoi(argv[4]) : 7;
    char uuids[NGPUS][TSTORE_HIST_NAME_MAX];
    FILE *f = fopen(argv[3], "r");
    int ng = 0;
    while (f && ng < NGPUS && fgets(uuids[ng], sizeof uuids[ng], f)) {
        uuids[ng][strcspn(uuids[ng], "\n")] = 0;
        if (uuids[ng][0])
            ng++;
    }
    if (f)
        fclose(f);
    if (ng != NGPUS) {
        fprintf(stderr, "bench-history-fill: %s: expected %d UUIDs\n", argv[3], NGPUS);
        return 1;
    }
    tsl_error_t err;
    thist_plan_t plan;
    if (thist_plan(THIST_INTERVAL_DEFAULT, THIST_RETENTION_DEFAULT, &plan, &err) < 0)
        return 1;
    tstore_t *st = tstore_open(argv[1], &err);
    tstore_t *naive = st ? tstore_open(argv[2], &err) : NULL;
    thist_writer_t *w = thist_writer_new(&plan);
    if (!st || !naive || !w) {
        fprintf(stderr, "bench-history-fill: %s\n", err.text);
        return 1;
    }
    static const char *const queues[NQUEUES] = {"default", "train", "interactive", "inference"};
    static const char *const users[NUSERS] = {"alice", "bob", "carol", "dave", "erin", "frank"};
    enum { NS = NGPUS + NQUEUES + NUSERS };
    tstore_hist_t s[NS];
    int step = plan.tier[0].step;
    int64_t end = (int64_t)time(NULL);
    end -= end % step;
    int64_t start = end - (int64_t)days * 86400 - 3600;
    unsigned seed = 42;
    double w_time = 0, n_time = 0;
    long samples = 0;
    tstore_begin(naive, &err);
    for (int64_t t = start; t <= end; t += step) {
        int hour = (int)((t / 3600) % 24);
        bool day = hour >= 8 && hour < 20;
        for (int g = 0; g < NGPUS; g++) {
            thist_sample_init(&s[g], TSTORE_HIST_GPU, uuids[g], t, step);
            /* Busy by day on most GPUs; GPU 7 idle all week; GPU 6 with a job at 0 %. */
            bool job = g < 6 ? (day || g < 2) : g == 6;
            s[g].idle = !job;
            if (job) {
                s[g].busy = s[g].busy_max = g == 6 ? 0 : floor(40 + 60 * rnd(&seed));
                s[g].running = 1 + (g & 1);
                s[g].milli = 500.0 * s[g].running;
                s[g].mem_alloc = 12e9 * s[g].running;
                s[g].mem_used = floor(s[g].mem_alloc * (0.3 + 0.6 * rnd(&seed)));
            }
        }
        for (int q = 0; q < NQUEUES; q++) {
            thist_sample_init(&s[NGPUS + q], TSTORE_HIST_QUEUE, queues[q], t, step);
            s[NGPUS + q].running = day ? 3 - q % 3 : 1;
            s[NGPUS + q].pending = day ? q : 0;
            s[NGPUS + q].milli = 500.0 * s[NGPUS + q].running;
            s[NGPUS + q].mem_alloc = 12e9 * s[NGPUS + q].running;
            s[NGPUS + q].mem_used = floor(s[NGPUS + q].mem_alloc * 0.6);
        }
        for (int u = 0; u < NUSERS; u++) {
            thist_sample_init(&s[NGPUS + NQUEUES + u], TSTORE_HIST_USER, users[u], t, step);
            tstore_hist_t *x = &s[NGPUS + NQUEUES + u];
            x->running = day ? 1 + u % 2 : u < 2;
            x->pending = day && u == 0 ? 2 : 0;
            x->milli = 500.0 * x->running;
            x->mem_alloc = 12e9 * x->running;
            x->mem_used = floor(x->mem_alloc * 0.5);
        }
        double t0 = now_s();
        if (thist_write(w, st, t, s, NS, &err) < 0) {
            fprintf(stderr, "bench-history-fill: %s\n", err.text);
            return 1;
        }
        double t1 = now_s();
        /* The baseline keeps every raw sample (same table, no tiers, no pruning), written in
         * batches: its cost is not the figure, its size is. */
        if (tstore_hist_put(naive, s, NS, &err) < 0) {
            fprintf(stderr, "bench-history-fill: naive: %s\n", err.text);
            return 1;
        }
        n_time += now_s() - t1;
        w_time += t1 - t0;
        samples++;
    }
    tstore_commit(naive, &err);
    thist_writer_free(w);
    tstore_close(st);
    tstore_close(naive);
    long long a = file_size(argv[1]), b = file_size(argv[2]);
    printf(
        "filled: %ld samples of %d series (%d GPUs, %d queues, %d users), %d days + 1 h at %d s\n",
        samples, NS, NGPUS, NQUEUES, NUSERS, days, step);
    printf("store size, tiered (10 s 1 d, 1 min 7 d, 10 min 8 d): %8.1f MB\n", a / 1e6);
    printf("store size, baseline (every 10 s sample kept):      %8.1f MB\n", b / 1e6);
    printf("ratio tiered/baseline: %.3f   budget 50 MB: %s (%.0f%% of it)\n", (double)a / b,
           a < 50000000 ? "met" : "NOT met", 100.0 * a / 50e6);
    printf("write path: %.3f ms per sample of all %d series (thist_write, one transaction)\n",
           1e3 * w_time / samples, NS);
    return 0;
}
