/* test_health.c - GET /healthz (health.c), GET /metrics (metrics.c) and GET /v1/nodes, /v1/gpus
 * (nodes.c) as handlers, without HTTP: the daemon state is built by hand (fake GPUs, running jobs'
 * placements, a real store for the job counts) and the answers are read back.  Checked: 503
 * while stopping; the Prometheus text (every family with HELP and TYPE, a job count per state
 * and their total, per-GPU memory and allocations summed over the jobs placed there, one busy
 * counter per slice, text that outgrows the first buffer); the job counts kept by the job model
 * (states, starts, ends by cause), served without reading the jobs table; the inventory JSON
 * (allocations and slices per GPU, NVLink peers, no utilisation without NVML, the cgroup
 * mode).  Slices are not open (no interposer): used memory and
 * busy time read 0. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "daemon/api/api.h"
#include "daemon/test/tmpdir.h"

/* --- doubles of routes.c and suspend.c ------------------------------------------------------ */

static int g_entered, g_left;

bool api_enter(tessd_t *d, thttp_req_t *req, thttp_reply_t *rep, tessd_caller_t *who)
{
    g_entered++;
    return true;
}

void api_leave(tessd_t *d)
{
    g_left++;
}

void api_store_error(thttp_reply_t *rep, const tsl_error_t *err)
{
    thttp_error(rep, 500, "internal", NULL, "%s", err->text);
}

json_t *api_time(int64_t ms)
{
    return ms > 0 ? json_integer(ms) : json_null(); /* routes.c writes ISO 8601: not tested here */
}

tshm_t *tessd_slice_open(tessd_t *d, const tessd_run_t *r, tsl_error_t *err)
{
    errno = ENOENT;
    return NULL;
}

/* --- fixture ------------------------------------------------------------------------------- */

typedef struct {
    tessd_t d;
    char dir[64];
} fix_t;

static int setup(void **state)
{
    fix_t *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    if (test_tmpdir(f->dir, sizeof f->dir, "health") < 0)
        return -1;
    char path[128];
    snprintf(path, sizeof path, "%s/tessel.db", f->dir);
    f->d.store = tstore_open(path, NULL);
    if (!f->d.store)
        return -1;
    pthread_mutex_init(&f->d.lock, NULL);
    snprintf(f->d.node_name, sizeof f->d.node_name, "node1");
    f->d.ncpus = 16;
    f->d.mem_total = 64ull << 30;
    f->d.simulated = true;
    tsl_error_t err;
    f->d.ngpus = tagent_fake_spec_parse("2xRTX4090:24G,A100:40G", f->d.gpus, TAGENT_MAX_GPUS, &err);
    if (f->d.ngpus != 3)
        return -1;
    f->d.gpus[0].nvlink_peers = 1u << 1;
    f->d.gpus[1].nvlink_peers = 1u << 0;
    g_entered = g_left = 0;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fix_t *f = *state;
    tstore_close(f->d.store);
    free(f->d.runs);
    pthread_mutex_destroy(&f->d.lock);
    int rc = test_tmpdir_remove(f->dir);
    free(f);
    return rc;
}

/* A running job holding milli and mem on each of the GPUs listed (-1 ends the list). */
static void run(fix_t *f, int64_t id, const char *user, uint32_t milli, uint64_t mem, ...)
{
    tessd_t *d = &f->d;
    tessd_run_t *nr = realloc(d->runs, (d->nruns + 1) * sizeof *nr);
    assert_non_null(nr);
    d->runs = nr;
    tessd_run_t *r = &d->runs[d->nruns++];
    memset(r, 0, sizeof *r);
    r->id = id;
    snprintf(r->user, sizeof r->user, "%s", user);
    r->member.milli_gpu = milli;
    r->member.gpu_mem_bytes = mem;
    va_list ap;
    va_start(ap, mem);
    for (int g; (g = va_arg(ap, int)) >= 0;)
        r->member.gpu[r->member.ngpus++] = (uint8_t)g;
    va_end(ap);
}

static void submit(fix_t *f, int n)
{
    for (int i = 0; i < n; i++) {
        tstore_job_t j = {0};
        j.user = (char *)"alice";
        j.argv_json = (char *)"[\"true\"]";
        j.env_json = (char *)"{}";
        j.queue = (char *)"default";
        j.submitted_ms = 1000;
        tjm_t m = {.store = f->d.store};
        assert_int_equal(tjm_submit(&m, &j, "alice", NULL, NULL), 0);
    }
}

/* --- /healthz ------------------------------------------------------------------------------ */

static void test_healthz(void **state)
{
    fix_t *f = *state;
    thttp_req_t req = {0};
    thttp_reply_t rep = {0};
    api_healthz(&req, &rep, &f->d);
    assert_int_equal(rep.status, 200);
    assert_string_equal(json_string_value(json_object_get(rep.json, "status")), "ok");
    assert_string_equal(json_string_value(json_object_get(rep.json, "version")), TESSD_VERSION);
    assert_true(json_is_true(json_object_get(rep.json, "simulated")));
    json_decref(rep.json);
    atomic_store(&f->d.stopping, true);
    memset(&rep, 0, sizeof rep);
    api_healthz(&req, &rep, &f->d);
    assert_int_equal(rep.status, 503);
    json_decref(rep.json);
}

/* --- /metrics ------------------------------------------------------------------------------ */

static char *metrics(fix_t *f, int *status)
{
    thttp_req_t req = {0};
    thttp_reply_t rep = {0};
    api_metrics(&req, &rep, &f->d);
    *status = rep.status;
    if (rep.json) {
        json_decref(rep.json);
        return NULL;
    }
    assert_non_null(rep.text);
    assert_int_equal(strlen(rep.text), rep.text_len);
    assert_string_equal(rep.content_type, "text/plain; version=0.0.4");
    return (char *)rep.text;
}

static bool has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)); p += n)
        if ((p == text || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0'))
            return true;
    return false;
}

static void test_metrics(void **state)
{
    fix_t *f = *state;
    submit(f, 3);
    run(f, 11, "alice", 500, 12ull << 30, 0, -1);
    run(f, 12, "bob", 250, 6ull << 30, 0, -1);
    run(f, 13, "carol", 1000, 40ull << 30, 2, -1);
    run(f, 14, "dave", 1000, 24ull << 30, 0, 1, -1);
    int status;
    char *t = metrics(f, &status);
    assert_int_equal(status, 200);
    assert_true(has_line(t, "tessel_jobs{state=\"pending\"} 3"));
    assert_true(has_line(t, "tessel_jobs{state=\"running\"} 0"));
    assert_true(has_line(t, "tessel_jobs_submitted_total 3"));
    assert_true(has_line(t, "tessel_jobs_started_total 0"));
    assert_true(has_line(t, "tessel_jobs_ended_total{cause=\"cancelled\"} 0"));
    assert_true(has_line(t, "tessel_store_checkpoints_total 0"));
    assert_true(has_line(t, "tessel_store_checkpoint_errors_total 0"));
    assert_true(has_line(t, "tessel_store_checkpoint_catchups_total 0"));
    assert_true(has_line(t, "tessel_store_wal_restarts_total 0"));
    assert_true(has_line(t, "tessel_gpus{simulated=\"1\"} 3"));
    char line[512];
    /* GPU 0: alice 500 + bob 250 + dave 1000 milli; 12 + 6 + 24 GiB. */
    snprintf(line, sizeof line,
             "tessel_gpu_allocated_milli{gpu=\"0\",uuid=\"%s\",name=\"%s\",simulated=\"1\"} 1750",
             f->d.gpus[0].uuid, f->d.gpus[0].name);
    assert_true(has_line(t, line));
    snprintf(line, sizeof line,
             "tessel_gpu_allocated_memory_bytes{gpu=\"0\",uuid=\"%s\",name=\"%s\",simulated=\"1\"} "
             "%llu",
             f->d.gpus[0].uuid, f->d.gpus[0].name, 42ull << 30);
    assert_true(has_line(t, line));
    snprintf(line, sizeof line,
             "tessel_gpu_allocated_milli{gpu=\"1\",uuid=\"%s\",name=\"%s\",simulated=\"1\"} 1000",
             f->d.gpus[1].uuid, f->d.gpus[1].name);
    assert_true(has_line(t, line));
    snprintf(line, sizeof line,
             "tessel_gpu_memory_bytes{gpu=\"2\",uuid=\"%s\",name=\"A100\",simulated=\"1\"} %llu",
             f->d.gpus[2].uuid, 40ull << 30);
    assert_true(has_line(t, line));
    snprintf(line, sizeof line,
             "tessel_gpu_used_memory_bytes{gpu=\"2\",uuid=\"%s\",name=\"A100\",simulated=\"1\"} 0",
             f->d.gpus[2].uuid);
    assert_true(has_line(t, line));
    /* One busy counter per (GPU, job): dave's on both of his. */
    snprintf(line, sizeof line,
             "tessel_gpu_slice_busy_seconds_total{gpu=\"1\",uuid=\"%s\",job=\"14\","
             "simulated=\"1\"} 0.000000000",
             f->d.gpus[1].uuid);
    assert_true(has_line(t, line));
    int busy = 0;
    for (const char *p = t; (p = strstr(p, "\ntessel_gpu_slice_busy_seconds_total{")); p++)
        busy++;
    assert_int_equal(busy, 5);
    /* Every family has its HELP and TYPE. */
    static const char *const fam[] = {"tessel_jobs",
                                      "tessel_jobs_submitted_total",
                                      "tessel_jobs_started_total",
                                      "tessel_jobs_ended_total",
                                      "tessel_jobs_suspended_total",
                                      "tessel_jobs_suspended",
                                      "tessel_jobs_suspended_released_bytes",
                                      "tessel_store_checkpoints_total",
                                      "tessel_store_checkpoint_errors_total",
                                      "tessel_store_checkpoint_catchups_total",
                                      "tessel_store_wal_restarts_total",
                                      "tessel_gpus",
                                      "tessel_gpu_memory_bytes",
                                      "tessel_gpu_allocated_milli",
                                      "tessel_gpu_allocated_memory_bytes",
                                      "tessel_gpu_used_memory_bytes",
                                      "tessel_gpu_slice_busy_seconds_total",
                                      "tessel_http_requests_total"};
    for (size_t i = 0; i < sizeof fam / sizeof fam[0]; i++) {
        snprintf(line, sizeof line, "# HELP %s ", fam[i]);
        assert_non_null(strstr(t, line));
        snprintf(line, sizeof line, "# TYPE %s ", fam[i]);
        assert_non_null(strstr(t, line));
    }
    free(t);
}

static void test_metrics_large(void **state)
{
    fix_t *f = *state;
    /* 200 jobs: the text outgrows its first 4 KiB buffer several times over. */
    for (int i = 0; i < 200; i++)
        run(f, 1000 + i, "alice", 5, 1u << 20, i % 3, -1);
    int status;
    char *t = metrics(f, &status);
    assert_int_equal(status, 200);
    assert_true(strlen(t) > 4 * 4096);
    char line[512];
    snprintf(line, sizeof line,
             "tessel_gpu_slice_busy_seconds_total{gpu=\"1\",uuid=\"%s\",job=\"1199\","
             "simulated=\"1\"} 0.000000000",
             f->d.gpus[1].uuid); /* job 1199 is the 200th, on GPU 199 % 3 = 1 */
    assert_true(has_line(t, line));
    snprintf(line, sizeof line,
             "tessel_gpu_allocated_milli{gpu=\"0\",uuid=\"%s\",name=\"%s\",simulated=\"1\"} 335",
             f->d.gpus[0].uuid, f->d.gpus[0].name); /* 67 jobs x 5 */
    assert_true(has_line(t, line));
    assert_true(has_line(t, "# HELP tessel_http_requests_total Answers sent, by status."));
    free(t);
}

/* The job counts follow the job model's changes (a start, a suspension, ends by cause), and
 * /metrics reads its counts, never the jobs table: with the table dropped behind its back by
 * another process, it still answers 200 with the same counts. */
static void test_metrics_counts(void **state)
{
    fix_t *f = *state;
    submit(f, 4); /* ids 1-4 */
    tjm_t m = {.store = f->d.store};
    tjm_change_t pl = {.placement_json = "[]"};
    tjm_change_t fail = {.cause = TJM_CAUSE_HOST_OOM};
    assert_int_equal(tjm_apply(&m, 1, TJM_EV_START, &pl, "tesseld", NULL, NULL), 0);
    assert_int_equal(tjm_apply(&m, 2, TJM_EV_START, &pl, "tesseld", NULL, NULL), 0);
    assert_int_equal(tjm_apply(&m, 2, TJM_EV_SUSPEND, NULL, "alice", NULL, NULL), 0);
    assert_int_equal(tjm_apply(&m, 3, TJM_EV_START, &pl, "tesseld", NULL, NULL), 0);
    assert_int_equal(tjm_apply(&m, 3, TJM_EV_FAIL, &fail, "tesseld", NULL, NULL), 0);
    assert_int_equal(tjm_apply(&m, 4, TJM_EV_CANCEL, NULL, "alice", NULL, NULL), 0);
    char path[128];
    snprintf(path, sizeof path, "%s/tessel.db", f->dir);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "PRAGMA foreign_keys=OFF; DROP TABLE jobs", NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    int status;
    char *t = metrics(f, &status);
    assert_int_equal(status, 200);
    assert_true(has_line(t, "tessel_jobs{state=\"pending\"} 0"));
    assert_true(has_line(t, "tessel_jobs{state=\"running\"} 2")); /* one suspended */
    assert_true(has_line(t, "tessel_jobs{state=\"failed\"} 1"));
    assert_true(has_line(t, "tessel_jobs{state=\"cancelled\"} 1"));
    assert_true(has_line(t, "tessel_jobs_submitted_total 4"));
    assert_true(has_line(t, "tessel_jobs_started_total 3"));
    assert_true(has_line(t, "tessel_jobs_ended_total{cause=\"host_oom\"} 1"));
    assert_true(has_line(t, "tessel_jobs_ended_total{cause=\"cancelled\"} 1"));
    assert_true(has_line(t, "tessel_jobs_ended_total{cause=\"exit\"} 0"));
    free(t);
    assert_int_equal(pthread_mutex_trylock(&f->d.lock), 0);
    pthread_mutex_unlock(&f->d.lock);
}

/* --- /v1/nodes, /v1/gpus ------------------------------------------------------------------- */

static void test_nodes(void **state)
{
    fix_t *f = *state;
    run(f, 11, "alice", 500, 12ull << 30, 0, -1);
    run(f, 14, "dave", 1000, 24ull << 30, 0, 1, -1);
    f->d.runs[1].suspended_ms = 5;
    thttp_req_t req = {0};
    thttp_reply_t rep = {0};
    api_nodes_list(&req, &rep, &f->d);
    assert_int_equal(rep.status, 200);
    assert_int_equal(g_entered, 1);
    assert_int_equal(g_left, 1);
    json_t *node = json_array_get(json_object_get(rep.json, "nodes"), 0);
    assert_non_null(node);
    assert_string_equal(json_string_value(json_object_get(node, "name")), "node1");
    assert_int_equal(json_integer_value(json_object_get(node, "cpus")), 16);
    assert_true(json_integer_value(json_object_get(node, "mem")) == (json_int_t)(64ull << 30));
    assert_string_equal(json_string_value(json_object_get(node, "cgroups")),
                        tagent_cgroup_mode_name(f->d.cg_mode));
    json_t *gpus = json_object_get(node, "gpus");
    assert_int_equal(json_array_size(gpus), 3);
    json_t *g0 = json_array_get(gpus, 0);
    assert_int_equal(json_integer_value(json_object_get(g0, "allocated_milli")), 1500);
    assert_true(json_integer_value(json_object_get(g0, "allocated_mem")) ==
                (json_int_t)(36ull << 30));
    assert_int_equal(json_integer_value(json_object_get(g0, "used_mem")), 0);
    assert_true(json_is_null(json_object_get(g0, "utilization"))); /* no NVML */
    json_t *peers = json_object_get(g0, "nvlink_peers");
    assert_int_equal(json_array_size(peers), 1);
    assert_int_equal(json_integer_value(json_array_get(peers, 0)), 1);
    json_t *sl = json_object_get(g0, "slices");
    assert_int_equal(json_array_size(sl), 2);
    json_t *s1 = json_array_get(sl, 1);
    assert_int_equal(json_integer_value(json_object_get(s1, "job_id")), 14);
    assert_string_equal(json_string_value(json_object_get(s1, "user")), "dave");
    assert_int_equal(json_integer_value(json_object_get(s1, "milli")), 1000);
    assert_true(json_is_null(json_object_get(s1, "compute_limit")));
    assert_true(json_is_true(json_object_get(s1, "suspended")));
    assert_true(json_is_false(json_object_get(json_array_get(sl, 0), "suspended")));
    json_t *g2 = json_array_get(gpus, 2);
    assert_string_equal(json_string_value(json_object_get(g2, "name")), "A100");
    assert_int_equal(json_array_size(json_object_get(g2, "slices")), 0);
    assert_int_equal(json_array_size(json_object_get(g2, "nvlink_peers")), 0);
    json_decref(rep.json);

    /* /v1/gpus: the same GPUs, without the node around them. */
    memset(&rep, 0, sizeof rep);
    api_gpus_list(&req, &rep, &f->d);
    assert_int_equal(rep.status, 200);
    json_t *g = json_object_get(rep.json, "gpus");
    assert_int_equal(json_array_size(g), 3);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(g, 1), "allocated_milli")),
                     1000);
    json_decref(rep.json);
    assert_int_equal(g_left, 2);
}

/* --slurm: the cluster's nodes (cluster.c) from a hand-made poll state: n1 answered (two GPUs,
 * a slice of Slurm job 77, tesseld's job 5, and one of a job sbatch'd directly), n2 did not
 * answer this poll (its last figures kept), n3 is DOWN in Slurm and never answered. */
static void test_cluster(void **state)
{
    fix_t *f = *state;
    tsl_error_t err;
    /* A job of tesseld's, pending, is Slurm's 77 (the store maps them). */
    submit(f, 1);
    int64_t id = 1;
    assert_int_equal(tstore_slurm_set(f->d.store, id, 77, &err), 0);
    tsn_state_t s;
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.lock, NULL);
    s.n = 3;
    s.nodes = calloc(3, sizeof *s.nodes);
    assert_non_null(s.nodes);
    s.polled_ms = 1000;
    const char *names[] = {"n1", "n2", "n3"};
    for (int k = 0; k < 3; k++) {
        tsn_node_t *nd = &s.nodes[k];
        snprintf(nd->slurm.name, sizeof nd->slurm.name, "%s", names[k]);
        snprintf(nd->slurm.addr, sizeof nd->slurm.addr, "10.0.0.%d", k + 1);
        snprintf(nd->slurm.state, sizeof nd->slurm.state, k == 2 ? "down" : "mixed");
        if (k == 2)
            continue;
        nd->has_figs = true;
        nd->last_ok_ms = 900 + k;
        snprintf(nd->figs.node, sizeof nd->figs.node, "%s", names[k]);
        nd->figs.sampled_ms = 800 + k;
        nd->figs.simulated = true;
        nd->figs.ngpus = 2;
        for (int g = 0; g < 2; g++) {
            nd->figs.gpus[g].index = g;
            snprintf(nd->figs.gpus[g].uuid, sizeof nd->figs.gpus[g].uuid, "GPU-%d-%d", k, g);
            snprintf(nd->figs.gpus[g].model, sizeof nd->figs.gpus[g].model, "FakeGPU");
            nd->figs.gpus[g].memory_total = 8ull << 30;
            nd->figs.gpus[g].utilization = -1;
        }
    }
    s.nodes[0].status = TSN_UP;
    s.nodes[0].answered = true;
    s.nodes[1].status = TSN_UNREACHABLE;
    snprintf(s.nodes[1].error, sizeof s.nodes[1].error, "its exporter did not answer");
    s.nodes[2].status = TSN_DOWN;
    tnf_slice_t a = {.job = 77,
                     .gpu = 1,
                     .memory_limit = 4ull << 30,
                     .memory_used = 1ull << 29,
                     .compute_pct = 50};
    snprintf(a.user, sizeof a.user, "alice");
    tnf_slice_t b = {.job = 90,
                     .gpu = 1,
                     .memory_limit = 2ull << 30,
                     .memory_used = 3ull << 20,
                     .compute_pct = 25};
    snprintf(b.user, sizeof b.user, "bob");
    assert_int_equal(tnf_add_slice(&s.nodes[0].figs, &a), 0);
    assert_int_equal(tnf_add_slice(&s.nodes[0].figs, &b), 0);
    f->d.slurm = true;
    f->d.nodes = &s;

    thttp_req_t req = {0};
    thttp_reply_t rep = {0};
    api_gpus_list(&req, &rep, &f->d);
    assert_int_equal(rep.status, 200);
    json_t *g = json_object_get(rep.json, "gpus");
    assert_int_equal(json_array_size(g), 4); /* n1's and n2's; n3 never answered */
    json_t *g1 = json_array_get(g, 1);
    assert_string_equal(json_string_value(json_object_get(g1, "node")), "n1");
    assert_string_equal(json_string_value(json_object_get(g1, "node_state")), "up");
    assert_true(json_is_true(json_object_get(g1, "simulated")));
    assert_true(json_integer_value(json_object_get(g1, "allocated_mem")) ==
                (json_int_t)(6ull << 30));
    assert_true(json_integer_value(json_object_get(g1, "used_mem")) ==
                (json_int_t)((1ull << 29) + (3ull << 20)));
    json_t *sl = json_object_get(g1, "slices");
    assert_int_equal(json_array_size(sl), 2);
    json_t *s0 = json_array_get(sl, 0), *s1 = json_array_get(sl, 1);
    assert_int_equal(json_integer_value(json_object_get(s0, "job_id")), id);
    assert_int_equal(json_integer_value(json_object_get(s0, "slurm_id")), 77);
    assert_true(json_integer_value(json_object_get(s0, "mem_used")) == (json_int_t)(1ull << 29));
    assert_int_equal(json_integer_value(json_object_get(s0, "compute_limit")), 50);
    assert_true(json_is_null(json_object_get(s1, "job_id"))); /* not one of tesseld's */
    assert_string_equal(json_string_value(json_object_get(s1, "user")), "bob");
    json_t *g2 = json_array_get(g, 2);
    assert_string_equal(json_string_value(json_object_get(g2, "node_state")), "unreachable");
    assert_int_equal(json_integer_value(json_object_get(g2, "figures_at")), 801);
    json_t *nodes = json_object_get(rep.json, "nodes");
    assert_int_equal(json_array_size(nodes), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(nodes, 2), "state")),
                        "down");
    json_decref(rep.json);

    memset(&rep, 0, sizeof rep);
    api_nodes_list(&req, &rep, &f->d);
    assert_int_equal(rep.status, 200);
    nodes = json_object_get(rep.json, "nodes");
    assert_int_equal(json_array_size(nodes), 3);
    json_t *n2 = json_array_get(nodes, 1);
    assert_string_equal(json_string_value(json_object_get(n2, "state")), "unreachable");
    assert_int_equal(json_integer_value(json_object_get(n2, "last_answer_at")), 901);
    assert_string_equal(json_string_value(json_object_get(n2, "error")),
                        "its exporter did not answer");
    assert_int_equal(json_array_size(json_object_get(n2, "gpus")), 2);
    json_t *n3 = json_array_get(nodes, 2);
    assert_true(json_is_null(json_object_get(n3, "last_answer_at")));
    assert_int_equal(json_array_size(json_object_get(n3, "gpus")), 0);
    json_decref(rep.json);

    int st;
    char *text = metrics(f, &st);
    assert_int_equal(st, 200);
    assert_true(has_line(text,
                         "tessel_slice_memory_used_bytes{node=\"n1\",gpu=\"1\",uuid=\"GPU-0-1\","
                         "job=\"77\",user=\"alice\"} 536870912"));
    assert_true(has_line(text, "tessel_slice_memory_limit_bytes{node=\"n1\",gpu=\"1\",uuid=\"GPU-0-"
                               "1\",job=\"90\",user=\"bob\"} 2147483648"));
    assert_true(has_line(text,
                         "tessel_gpu_memory_total_bytes{node=\"n2\",gpu=\"0\",uuid=\"GPU-1-0\","
                         "model=\"FakeGPU\"} 8589934592"));
    assert_true(has_line(text, "tessel_node_up{node=\"n1\"} 1"));
    assert_true(has_line(text, "tessel_node_up{node=\"n2\"} 0"));
    assert_true(has_line(text, "tessel_node_up{node=\"n3\"} 0"));
    assert_true(
        has_line(text, "tessel_node_info{node=\"n3\",state=\"down\",slurm_state=\"down\"} 1"));
    /* tesseld's own host's GPUs are not the cluster's: none of them under --slurm. */
    assert_null(strstr(text, "RTX4090"));
    free(text);
    f->d.slurm = false;
    f->d.nodes = NULL;
    tsn_nodes_free(s.nodes, s.n);
    pthread_mutex_destroy(&s.lock);
}

/* has_line of a formatted line. */
static bool has_linef(const char *text, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool has_linef(const char *text, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    return has_line(text, line);
}

/* The series of docs/metrics.md: build_info; queue depth from the scheduler's last snapshot;
 * per-GPU inventory (no NVML here: no utilisation, no driver memory); per-slice limit, share,
 * user and queue, one line per (job, GPU); the histograms as the daemon holds them; and a label
 * value that needs escaping. */
static void test_metrics_series(void **state)
{
    fix_t *f = *state;
    tessd_t *d = &f->d;
    run(f, 21, "alice", 500, 8ull << 30, 0, -1);
    snprintf(d->runs[0].queue, sizeof d->runs[0].queue, "train");
    run(f, 22, "bob", 1000, 40ull << 30, 2, 1, -1);
    snprintf(d->runs[1].queue, sizeof d->runs[1].queue, "default");
    d->runs[1].suspended_ms = 5;
    d->qsnap = calloc(2, sizeof *d->qsnap);
    assert_non_null(d->qsnap);
    d->nqsnap = 2;
    snprintf(d->qsnap[0].name, sizeof d->qsnap[0].name, "default");
    d->qsnap[0].pending = 7;
    d->qsnap[0].running = 1;
    snprintf(d->qsnap[1].name, sizeof d->qsnap[1].name, "train");
    d->qsnap[1].running = 1;
    snprintf(d->gpus[2].name, sizeof d->gpus[2].name, "A100 \"SXM\"");
    assert_int_equal(
        tsl_hist_init(&d->job_pending_hist, tsl_hist_seconds_to_days, tsl_hist_seconds_to_days_n),
        0);
    tsl_hist_observe(&d->job_pending_hist, 42);
    tsl_hist_observe(&d->job_pending_hist, 3 * 86400);
    int status;
    char *t = metrics(f, &status);
    assert_int_equal(status, 200);
    free(d->qsnap);
    d->qsnap = NULL;
    d->nqsnap = 0;
    char line[512];
    snprintf(line, sizeof line, "tessel_build_info{version=\"%s\",commit=\"", TESSD_VERSION);
    assert_non_null(strstr(t, line));
    assert_true(has_line(t, "tessel_queue_jobs{queue=\"default\",state=\"pending\"} 7"));
    assert_true(has_line(t, "tessel_queue_jobs{queue=\"default\",state=\"running\"} 1"));
    assert_true(has_line(t, "tessel_queue_jobs{queue=\"train\",state=\"pending\"} 0"));
    assert_true(has_linef(
        t, "tessel_gpu_memory_total_bytes{gpu=\"2\",uuid=\"%s\",model=\"A100 \\\"SXM\\\"\"} %llu",
        d->gpus[2].uuid, 40ull << 30));
    assert_true(has_linef(t, "tessel_gpu_slices{gpu=\"1\",uuid=\"%s\",model=\"%s\"} 1",
                          d->gpus[1].uuid, d->gpus[1].name));
    assert_null(strstr(t, "\ntessel_gpu_utilization_ratio{"));
    assert_null(strstr(t, "\ntessel_gpu_memory_used_bytes{"));
    assert_true(
        has_linef(t,
                  "tessel_slice_memory_limit_bytes{gpu=\"0\",uuid=\"%s\",job=\"21\",user=\"alice\","
                  "queue=\"train\"} %llu",
                  d->gpus[0].uuid, 8ull << 30));
    assert_true(
        has_linef(t,
                  "tessel_slice_gpu_share_ratio{gpu=\"1\",uuid=\"%s\",job=\"22\",user=\"bob\","
                  "queue=\"default\"} 1",
                  d->gpus[1].uuid));
    assert_true(has_linef(t,
                          "tessel_slice_suspended{gpu=\"2\",uuid=\"%s\",job=\"22\",user=\"bob\","
                          "queue=\"default\"} 1",
                          d->gpus[2].uuid));
    int n = 0;
    for (const char *p = t; (p = strstr(p, "\ntessel_slice_memory_used_bytes{")); p++)
        n++;
    assert_int_equal(n, 3); /* alice on GPU 0, bob on GPUs 1 and 2 */
    assert_true(has_line(t, "tessel_job_pending_seconds_bucket{le=\"30\"} 0"));
    assert_true(has_line(t, "tessel_job_pending_seconds_bucket{le=\"60\"} 1"));
    assert_true(has_line(t, "tessel_job_pending_seconds_bucket{le=\"259200\"} 2"));
    assert_true(has_line(t, "tessel_job_pending_seconds_bucket{le=\"+Inf\"} 2"));
    assert_true(has_line(t, "tessel_job_pending_seconds_sum 259242.000000"));
    assert_true(has_line(t, "tessel_job_pending_seconds_count 2"));
    assert_true(has_line(t, "tessel_job_run_seconds_count 0"));
    assert_true(has_line(t, "tessel_sched_pass_duration_seconds_count 0"));
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_healthz, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metrics, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metrics_large, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metrics_counts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metrics_series, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nodes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cluster, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
