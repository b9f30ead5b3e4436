/* health.c - GET /healthz and GET /metrics (Prometheus text format 0.0.4); no auth. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/api/api.h"

void api_healthz(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    if (atomic_load(&d->stopping)) {
        thttp_error(rep, 503, "unavailable", NULL, "tesseld is shutting down");
        return;
    }
    thttp_json(rep, 200,
               json_pack("{s:s, s:s, s:b}", "status", "ok", "version", TESSD_VERSION, "simulated",
                         d->simulated));
}

typedef struct {
    char *buf;
    size_t len, cap;
} sbuf_t;

static void sb_printf(sbuf_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf_t *s, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(s->buf ? s->buf + s->len : NULL, s->buf ? s->cap - s->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0)
            return;
        if (s->buf && s->len + (size_t)n < s->cap) {
            s->len += (size_t)n;
            return;
        }
        size_t cap = s->cap ? s->cap * 2 : 4096;
        while (cap < s->len + (size_t)n + 1)
            cap *= 2;
        char *b = realloc(s->buf, cap);
        if (!b)
            return;
        s->buf = b;
        s->cap = cap;
    }
}

void api_metrics(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    sbuf_t s = {0};
    /* Counts the job model keeps as it writes (jobmodel.h, TJM_TALLY_*), loaded at start:
     * no scan of the jobs table here, whatever its size. */
    pthread_mutex_lock(&d->lock);
    int64_t tally[TJM_TALLY_NSLOTS];
    for (unsigned i = 0; i < TJM_TALLY_NSLOTS; i++)
        tally[i] = tstore_tally_get(d->store, i);
    sb_printf(&s, "# HELP tessel_jobs Jobs by state.\n# TYPE tessel_jobs gauge\n");
    for (int i = 0; i < TSTORE_NSTATES; i++) {
        /* The store's states: running counts the suspended ones (as GET /v1/jobs?state=). */
        int64_t n = tally[TJM_TALLY_STATE + i];
        if (i == TSTORE_RUNNING)
            n += tally[TJM_TALLY_STATE + TJM_SUSPENDED];
        sb_printf(&s, "tessel_jobs{state=\"%s\"} %lld\n", tstore_state_name((tstore_state_t)i),
                  (long long)n);
    }
    sb_printf(&s,
              "# HELP tessel_jobs_submitted_total Jobs accepted since the store was "
              "created.\n# TYPE tessel_jobs_submitted_total counter\n"
              "tessel_jobs_submitted_total %lld\n",
              (long long)tally[TJM_TALLY_SUBMITTED]);
    sb_printf(&s,
              "# HELP tessel_jobs_started_total Starts of jobs (a requeued job starts again) "
              "since the store was created.\n# TYPE tessel_jobs_started_total counter\n"
              "tessel_jobs_started_total %lld\n",
              (long long)tally[TJM_TALLY_STARTED]);
    sb_printf(&s, "# HELP tessel_jobs_ended_total Jobs ended since the store was created, by "
                  "end cause.\n# TYPE tessel_jobs_ended_total counter\n");
    for (int c = TJM_CAUSE_NONE + 1; c < TJM_NCAUSES; c++)
        sb_printf(&s, "tessel_jobs_ended_total{cause=\"%s\"} %lld\n",
                  tjm_cause_name((tjm_cause_t)c), (long long)tally[TJM_TALLY_ENDED + c]);
    tstore_maint_stats_t ms;
    tstore_maint_stats(d->store, &ms);
    sb_printf(&s,
              "# HELP tessel_store_checkpoints_total WAL checkpoints run by the store's "
              "maintenance thread.\n# TYPE tessel_store_checkpoints_total counter\n"
              "tessel_store_checkpoints_total %llu\n"
              "# HELP tessel_store_checkpoint_errors_total WAL checkpoints that failed.\n"
              "# TYPE tessel_store_checkpoint_errors_total counter\n"
              "tessel_store_checkpoint_errors_total %llu\n",
              (unsigned long long)ms.checkpoints, (unsigned long long)ms.errors);
    sb_printf(&s,
              "# HELP tessel_gpus GPUs managed by this tesseld.\n# TYPE tessel_gpus gauge\n"
              "tessel_gpus{simulated=\"%d\"} %d\n",
              d->simulated ? 1 : 0, d->ngpus);
    static const char *const fam[] = {"tessel_gpu_memory_bytes", "tessel_gpu_allocated_milli",
                                      "tessel_gpu_allocated_memory_bytes",
                                      "tessel_gpu_used_memory_bytes"};
    static const char *const help[] = {"GPU memory.", "Milli-GPUs placed on the GPU.",
                                       "GPU-memory limits placed on the GPU.",
                                       "GPU memory the jobs' slices report in use."};
    for (int f = 0; f < 4; f++) {
        sb_printf(&s, "# HELP %s %s\n# TYPE %s gauge\n", fam[f], help[f], fam[f]);
        for (int g = 0; g < d->ngpus; g++) {
            uint64_t v = 0;
            if (f == 0)
                v = d->gpus[g].mem_total;
            for (size_t i = 0; f > 0 && i < d->nruns; i++) {
                const tessd_run_t *r = &d->runs[i];
                for (uint32_t k = 0; k < r->member.ngpus; k++) {
                    if (r->member.gpu[k] != g)
                        continue;
                    if (f == 1)
                        v += r->member.milli_gpu;
                    else if (f == 2)
                        v += r->member.gpu_mem_bytes;
                    else
                        v += api_slice_used(d, r, g);
                }
            }
            sb_printf(&s, "%s{gpu=\"%d\",uuid=\"%s\",name=\"%s\",simulated=\"%d\"} %llu\n", fam[f],
                      g, d->gpus[g].uuid, d->gpus[g].name, d->gpus[g].simulated ? 1 : 0,
                      (unsigned long long)v);
        }
    }
    /* Busy device time per slice: a counter per running job (it starts with the job and
     * disappears when the job ends, like any per-target counter Prometheus sees reset). */
    sb_printf(&s, "# HELP tessel_gpu_slice_busy_seconds_total Device time a job's slice has "
                  "used on the GPU (measured by the interposer).\n"
                  "# TYPE tessel_gpu_slice_busy_seconds_total counter\n");
    for (int g = 0; g < d->ngpus; g++) {
        for (size_t i = 0; i < d->nruns; i++) {
            const tessd_run_t *r = &d->runs[i];
            for (uint32_t k = 0; k < r->member.ngpus; k++) {
                if (r->member.gpu[k] != g)
                    continue;
                api_slice_t sl;
                api_slice_read(d, r, g, &sl);
                sb_printf(&s,
                          "tessel_gpu_slice_busy_seconds_total{gpu=\"%d\",uuid=\"%s\",job=\"%lld\","
                          "simulated=\"%d\"} %llu.%09llu\n",
                          g, d->gpus[g].uuid, (long long)r->id, d->gpus[g].simulated ? 1 : 0,
                          (unsigned long long)(sl.busy_ns / 1000000000u),
                          (unsigned long long)(sl.busy_ns % 1000000000u));
            }
        }
    }
    pthread_mutex_unlock(&d->lock);
    sb_printf(&s, "# HELP tessel_http_requests_total Answers sent, by status.\n"
                  "# TYPE tessel_http_requests_total counter\n");
    for (int code = 100; code < 600; code++) {
        uint64_t n = thttp_status_count(d->http, code) + thttp_status_count(d->http_unix, code);
        if (n)
            sb_printf(&s, "tessel_http_requests_total{code=\"%d\"} %llu\n", code,
                      (unsigned long long)n);
    }
    /* Scheduling passes (daemon.h, pass.h): events coalesced into passes, and the passes
     * that ran a cycle of libsched. */
    sb_printf(&s,
              "# HELP tessel_sched_passes_total Scheduling passes run (events coalesced).\n"
              "# TYPE tessel_sched_passes_total counter\ntessel_sched_passes_total %llu\n"
              "# HELP tessel_sched_cycles_total Passes that ran a scheduling cycle.\n"
              "# TYPE tessel_sched_cycles_total counter\ntessel_sched_cycles_total %llu\n",
              (unsigned long long)atomic_load(&d->sched_passes),
              (unsigned long long)atomic_load(&d->sched_cycles));
    if (!s.buf) {
        thttp_error(rep, 500, "internal", NULL, "out of memory");
        return;
    }
    rep->status = 200;
    rep->text = s.buf;
    rep->text_len = s.len;
    rep->content_type = "text/plain; version=0.0.4";
}
