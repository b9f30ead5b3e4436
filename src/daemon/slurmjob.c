/* slurmjob.c - the pure logic of tesseld --slurm: sbatch's arguments and script, squeue's
 * answer, Slurm's states onto the job model.  See slurmjob.h and docs/slurm-backend.md. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <jansson.h>

#include "daemon/slurmjob.h"
#include "libutil/utf8.h"

static const struct {
    const char *name;
    int state; /* tsj_state_t; -2: CONFIGURING (started or not) */
} state_names[] = {
    {"PENDING", TSJ_PENDING},
    {"REQUEUED", TSJ_PENDING},
    {"REQUEUE_HOLD", TSJ_PENDING},
    {"REQUEUE_FED", TSJ_PENDING},
    {"SPECIAL_EXIT", TSJ_PENDING},
    {"RESV_DEL_HOLD", TSJ_PENDING},
    {"CONFIGURING", -2},
    {"RUNNING", TSJ_RUNNING},
    {"COMPLETING", TSJ_RUNNING},
    {"SUSPENDED", TSJ_SUSPENDED},
    {"SIGNALING", TSJ_RUNNING},
    {"STAGE_OUT", TSJ_RUNNING},
    {"RESIZING", TSJ_RUNNING},
    {"STOPPED", TSJ_RUNNING},
    {"COMPLETED", TSJ_COMPLETED},
    {"FAILED", TSJ_FAILED},
    {"CANCELLED", TSJ_CANCELLED},
    {"TIMEOUT", TSJ_TIMEOUT},
    {"DEADLINE", TSJ_TIMEOUT},
    {"OUT_OF_MEMORY", TSJ_OOM},
    {"NODE_FAIL", TSJ_NODE_FAIL},
    {"BOOT_FAIL", TSJ_LAUNCH_FAIL},
    {"LAUNCH_FAILED", TSJ_LAUNCH_FAIL},
    {"PREEMPTED", TSJ_PREEMPTED},
};

static const char *const tsj_names[TSJ_NSTATES] = {
    [TSJ_PENDING] = "pending",         [TSJ_RUNNING] = "running",     [TSJ_SUSPENDED] = "suspended",
    [TSJ_COMPLETED] = "completed",     [TSJ_FAILED] = "failed",       [TSJ_CANCELLED] = "cancelled",
    [TSJ_TIMEOUT] = "timeout",         [TSJ_OOM] = "out_of_memory",   [TSJ_NODE_FAIL] = "node_fail",
    [TSJ_LAUNCH_FAIL] = "launch_fail", [TSJ_PREEMPTED] = "preempted",
};

int tsj_state_parse(const char *name, bool started)
{
    for (size_t i = 0; i < sizeof state_names / sizeof state_names[0]; i++)
        if (strcmp(name, state_names[i].name) == 0)
            return state_names[i].state == -2 ? (started ? TSJ_RUNNING : TSJ_PENDING)
                                              : state_names[i].state;
    return -1;
}

const char *tsj_state_name(tsj_state_t s)
{
    return (unsigned)s < TSJ_NSTATES ? tsj_names[s] : "unknown";
}

/* o's string key into buf (len bytes), cut at a character's end: a name cut inside a
 * character would be refused by jansson where tesseld writes it back (review of the reader,
 * 2026-11-28, L3: the job's "name" key went missing from GET /v1/jobs?origin=slurm). */
static void copy_str(json_t *o, const char *key, char *buf, size_t len)
{
    json_t *v = json_object_get(o, key);
    tsl_utf8_clean(json_is_string(v) ? json_string_value(v) : "", buf, len);
}

int tsj_parse_squeue(const char *text, size_t len, tsj_seen_t **out, size_t *n, tsl_error_t *err)
{
    *out = NULL;
    *n = 0;
    json_error_t je;
    json_t *root = json_loadb(text, len, 0, &je);
    if (!root || !json_is_object(root)) {
        json_decref(root);
        errno = EINVAL;
        return tsl_errprintf(err, "squeue --json: not JSON (%s)", root ? "not an object" : je.text);
    }
    json_t *errs = json_object_get(root, "errors");
    if (json_is_array(errs) && json_array_size(errs) > 0) {
        json_t *e0 = json_array_get(errs, 0);
        json_t *d = json_object_get(e0, "description"), *e = json_object_get(e0, "error");
        tsl_errprintf(err, "squeue: %s (%s)", json_is_string(d) ? json_string_value(d) : "error",
                      json_is_string(e) ? json_string_value(e) : "no detail");
        json_decref(root);
        errno = EIO;
        return -1;
    }
    int rc = tsj_parse_jobs(root, "squeue --json", out, n, err);
    json_decref(root);
    return rc;
}

int tsj_parse_jobs(json_t *root, const char *what, tsj_seen_t **out, size_t *n, tsl_error_t *err)
{
    *out = NULL;
    *n = 0;
    json_t *jobs = json_object_get(root, "jobs");
    if (!json_is_array(jobs)) {
        errno = EINVAL;
        return tsl_errprintf(err, "%s: no \"jobs\" array", what);
    }
    size_t cap = json_array_size(jobs);
    tsj_seen_t *v = cap ? calloc(cap, sizeof *v) : NULL;
    if (cap && !v) {
        errno = ENOMEM;
        return tsl_errprintf(err, "%s: out of memory", what);
    }
    size_t c = 0, i;
    json_t *o;
    json_array_foreach(jobs, i, o)
    {
        json_t *id = json_object_get(o, "job_id"), *st = json_object_get(o, "job_state");
        if (!json_is_integer(id) || !json_is_string(st))
            continue;
        json_t *start = json_object_get(o, "start_time"), *ec = json_object_get(o, "exit_code");
        tsj_seen_t *s = &v[c];
        s->slurm_id = json_integer_value(id);
        s->start_time = json_is_integer(start) ? json_integer_value(start) : 0;
        s->wait_status = json_is_integer(ec) ? (int)json_integer_value(ec) : 0;
        copy_str(o, "nodes", s->nodes, sizeof s->nodes);
        copy_str(o, "state_reason", s->reason, sizeof s->reason);
        copy_str(o, "user_name", s->user, sizeof s->user);
        json_t *uid = json_object_get(o, "user_id");
        s->uid =
            json_is_integer(uid) && json_integer_value(uid) >= 0 ? json_integer_value(uid) : -1;
        copy_str(o, "name", s->name, sizeof s->name);
        copy_str(o, "partition", s->partition, sizeof s->partition);
        json_t *sub = json_object_get(o, "submit_time"), *end = json_object_get(o, "end_time");
        json_t *cpus = json_object_get(o, "cpus");
        s->submit_time = json_is_integer(sub) ? json_integer_value(sub) : 0;
        s->end_time = json_is_integer(end) ? json_integer_value(end) : 0;
        s->cpus = json_is_integer(cpus) ? (int)json_integer_value(cpus) : 0;
        /* Slurm gives a pending job an expected start time: started means nodes are given. */
        int state = tsj_state_parse(json_string_value(st), s->nodes[0] != '\0');
        s->known = state >= 0;
        s->state = state < 0 ? TSJ_PENDING : (tsj_state_t)state;
        c++;
    }
    if (!c) {
        free(v);
        v = NULL;
    }
    *out = v;
    *n = c;
    return 0;
}

/* One field of a sacct --parsable2 line: [*p, next '|' or end) into buf (cut to len - 1);
 * *p moves past the '|'.  false when the line has no more fields. */
static bool sacct_field(const char **p, const char *end, char *buf, size_t len)
{
    if (!*p)
        return false;
    const char *bar = memchr(*p, '|', (size_t)(end - *p));
    const char *stop = bar ? bar : end;
    size_t n = (size_t)(stop - *p);
    if (n >= len)
        n = len - 1;
    memcpy(buf, *p, n);
    buf[n] = '\0';
    *p = bar ? bar + 1 : NULL;
    return true;
}

int tsj_parse_sacct(const char *text, size_t len, tsj_seen_t **out, size_t *n, tsl_error_t *err)
{
    *out = NULL;
    *n = 0;
    size_t cap = 0;
    for (size_t i = 0; i < len; i++)
        cap += text[i] == '\n';
    if (len && text[len - 1] != '\n')
        cap++;
    tsj_seen_t *v = cap ? calloc(cap, sizeof *v) : NULL;
    if (cap && !v) {
        errno = ENOMEM;
        return tsl_errprintf(err, "sacct: out of memory");
    }
    size_t c = 0;
    const char *line = text, *end_all = text + len;
    while (line < end_all) {
        const char *nl = memchr(line, '\n', (size_t)(end_all - line));
        const char *end = nl ? nl : end_all, *p = line, *l0 = line;
        line = nl ? nl + 1 : end_all;
        if (end == p)
            continue;
        char id[32], state[64], ec[32], uid[32], start[64];
        tsj_seen_t *s = &v[c];
        if (!sacct_field(&p, end, id, sizeof id) || !sacct_field(&p, end, state, sizeof state) ||
            !sacct_field(&p, end, ec, sizeof ec) ||
            !sacct_field(&p, end, s->user, sizeof s->user) ||
            !sacct_field(&p, end, uid, sizeof uid) ||
            !sacct_field(&p, end, s->nodes, sizeof s->nodes) ||
            !sacct_field(&p, end, start, sizeof start) || p) {
            free(v);
            errno = EINVAL;
            return tsl_errprintf(err, "sacct: not a line of 7 fields: '%.*s'",
                                 (int)(end - l0 < 80 ? end - l0 : 80), l0);
        }
        char *e;
        errno = 0;
        long long sid = strtoll(id, &e, 10);
        unsigned code, sig;
        char rest;
        if (errno || *e || sid <= 0 || sscanf(ec, "%u:%u%c", &code, &sig, &rest) != 2 ||
            code > 255 || sig > 127) {
            free(v);
            errno = EINVAL;
            return tsl_errprintf(err, "sacct: job '%s' exit code '%s': not Slurm's", id, ec);
        }
        /* UID: empty when slurmdbd has none (uid -1: tsj_applies refuses). */
        s->uid = -1;
        if (uid[0]) {
            errno = 0;
            long long u = strtoll(uid, &e, 10);
            if (errno || *e || u < 0 || u > UINT32_MAX) {
                free(v);
                errno = EINVAL;
                return tsl_errprintf(err, "sacct: job '%s' UID '%s': not a uid", id, uid);
            }
            s->uid = u;
        }
        s->slurm_id = sid;
        /* ExitCode is "status:signal" (3:0, 0:9); a signal wins, as in a wait status. */
        s->wait_status = sig ? (int)sig : (int)code << 8;
        /* "CANCELLED by 1000": the state is the first word. */
        state[strcspn(state, " ")] = '\0';
        /* Start is a date once it started ("2026-11-27T11:15:11"), else "Unknown"/"None". */
        s->start_time = start[0] >= '0' && start[0] <= '9' ? 1 : 0;
        if (strcmp(s->nodes, "None assigned") == 0)
            s->nodes[0] = '\0';
        int st = tsj_state_parse(state, s->start_time > 0);
        s->known = st >= 0;
        s->state = st < 0 ? TSJ_PENDING : (tsj_state_t)st;
        c++;
    }
    if (!c) {
        free(v);
        v = NULL;
    }
    *out = v;
    *n = c;
    return 0;
}

/* The end event of a running job j from Slurm's ended state s. */
static void plan_end(const tstore_job_t *j, const tsj_seen_t *s, tsj_plan_t *p, int64_t now)
{
    tjm_change_t *chg = &p->chg[p->n];
    memset(chg, 0, sizeof *chg);
    chg->now_ms = now;
    int ws = s ? s->wait_status : 0;
    int ex = -1, sig = 0;
    if (WIFSIGNALED(ws))
        sig = WTERMSIG(ws);
    else
        ex = WEXITSTATUS(ws);
    tjm_cause_t fail = TJM_CAUSE_NONE;
    tjm_event_t ev;
    switch (s ? s->state : TSJ_NSTATES) {
    case TSJ_COMPLETED:
        ex = 0;
        sig = 0;
        break;
    case TSJ_FAILED:
        /* FAILED with a status of 0 (a launch that failed before the script ran): failed. */
        if (sig == 0 && ex == 0)
            ex = 1;
        break;
    case TSJ_CANCELLED:
        if (sig == 0) {
            sig = SIGTERM; /* scancel's default */
            ex = -1;
        }
        break;
    case TSJ_TIMEOUT:
        snprintf(p->why, sizeof p->why, "Slurm's time limit");
        break;
    case TSJ_OOM:
        fail = TJM_CAUSE_HOST_OOM;
        snprintf(p->why, sizeof p->why, "out of memory (Slurm: OUT_OF_MEMORY)");
        break;
    case TSJ_NODE_FAIL:
        fail = TJM_CAUSE_LOST;
        snprintf(p->why, sizeof p->why, "its node failed (Slurm: NODE_FAIL on %.100s)",
                 s->nodes[0] ? s->nodes : "?");
        break;
    case TSJ_LAUNCH_FAIL:
        fail = TJM_CAUSE_LAUNCH_FAILURE;
        snprintf(p->why, sizeof p->why, "Slurm could not launch it (%s)", s->reason);
        break;
    case TSJ_PREEMPTED:
        if (sig == 0) {
            sig = SIGTERM;
            ex = -1;
        }
        snprintf(p->why, sizeof p->why, "preempted by Slurm");
        break;
    default: /* Slurm does not know it any more */
        fail = TJM_CAUSE_LOST;
        ex = -1;
        sig = 0;
        snprintf(p->why, sizeof p->why,
                 "Slurm no longer knows its job (it ended longer than slurmctld's MinJobAge ago, "
                 "or was removed): its exit status is lost");
        break;
    }
    if (s && s->state == TSJ_TIMEOUT) {
        ev = TJM_EV_TIMEOUT;
    } else {
        ev = tjm_end_event(j, ex, sig, fail, &chg->cause);
        /* A preemption and its requeue are Tessel's own scheduler's (never asked here). */
        if (ev == TJM_EV_REQUEUE || ev == TJM_EV_PREEMPTED) {
            ev = TJM_EV_FAIL;
            chg->cause = sig ? TJM_CAUSE_SIGNAL : TJM_CAUSE_EXIT;
        }
    }
    if (ev != TJM_EV_LAUNCH_FAIL && ev != TJM_EV_TIMEOUT) {
        if (sig > 0)
            chg->signal = sig;
        else if (ex >= 0) {
            chg->has_exit_code = true;
            chg->exit_code = ex;
        }
    }
    if (ev == TJM_EV_KILLED)
        p->why[0] = '\0';
    p->ev[p->n++] = ev;
}

void tsj_plan(const tstore_job_t *j, const tsj_seen_t *s, int64_t now_ms, tsj_plan_t *p)
{
    memset(p, 0, sizeof *p);
    bool ended = !s || s->state >= TSJ_COMPLETED;
    if (j->state == TSTORE_PENDING) {
        if (s && s->state == TSJ_PENDING) {
            if (s->reason[0] && strcmp(s->reason, "None") != 0 &&
                (!j->reason_code || strcmp(j->reason_code, s->reason) != 0))
                snprintf(p->wait_code, sizeof p->wait_code, "%s", s->reason);
            return;
        }
        /* Cancelled before it started: the job model's cancel of a pending job. */
        if (s && s->state == TSJ_CANCELLED && !s->start_time && !s->nodes[0]) {
            p->chg[0].now_ms = now_ms;
            p->ev[p->n++] = TJM_EV_CANCEL;
            return;
        }
        json_t *a = json_array();
        if (s && s->nodes[0])
            json_array_append_new(a, json_pack("{s:s}", "node", s->nodes));
        char *pl = a ? json_dumps(a, JSON_COMPACT) : NULL;
        json_decref(a);
        snprintf(p->placement, sizeof p->placement, "%s", pl ? pl : "[]");
        free(pl);
        p->chg[0].now_ms = now_ms;
        p->chg[0].placement_json = p->placement;
        p->ev[p->n++] = TJM_EV_START;
        if (s && s->state == TSJ_SUSPENDED) {
            p->chg[1].now_ms = now_ms;
            p->ev[p->n++] = TJM_EV_SUSPEND;
        } else if (ended) {
            /* The start as the end's job sees it: running, as after the start. */
            tstore_job_t started = *j;
            started.state = TSTORE_RUNNING;
            plan_end(&started, s, p, now_ms);
        }
        return;
    }
    if (j->state == TSTORE_RUNNING && ended) {
        plan_end(j, s, p, now_ms);
        return;
    }
    /* Held or let go by an operator (scontrol suspend/resume: tesseld's own, for tessel
     * suspend, or another's): the job model's suspend and resume.  Not while a stop is under
     * way (the model's guard): the stop's end comes next. */
    if (!s || j->state != TSTORE_RUNNING)
        return;
    bool held = j->suspended_ms > 0;
    if (s->state == TSJ_SUSPENDED && !held && !j->cancel_ms && !j->preempt_ms) {
        p->chg[0].now_ms = now_ms;
        p->ev[p->n++] = TJM_EV_SUSPEND;
    } else if (held && s->state == TSJ_RUNNING) {
        p->chg[0].now_ms = now_ms;
        p->ev[p->n++] = TJM_EV_RESUME;
    }
    /* Running in both, or pending again in Slurm (its requeue): nothing to record (the job
     * model has no running -> pending but for Tessel's own preemption and recovery). */
}

/* ---- sbatch ------------------------------------------------------------------------------ */

static bool has_control(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return true;
    return false;
}

static int add_arg(char **argv, size_t *n, tsl_error_t *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int add_arg(char **argv, size_t *n, tsl_error_t *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vasprintf(&argv[*n], fmt, ap);
    va_end(ap);
    if (rc < 0) {
        argv[*n] = NULL;
        errno = ENOMEM;
        return tsl_errprintf(err, "sbatch: out of memory");
    }
    (*n)++;
    return 0;
}

/* Most arguments tsj_sbatch_argv writes, with the NULL. */
#define SBATCH_MAX_ARGS 22

/* The checks of both paths (sbatch's arguments, the submitter's request): values Slurm could
 * misread.  0, or -1 with errno EINVAL and err. */
static int submit_check(const tsj_submit_t *s, tsl_error_t *err)
{
    const char *name = s->name ? s->name : "tessel";
    if (has_control(name) || !name[0]) {
        errno = EINVAL;
        return tsl_errprintf(err, "name: a Slurm job's name must be printable, without control "
                                  "characters");
    }
    if (!s->cwd || s->cwd[0] != '/' || has_control(s->cwd)) {
        errno = EINVAL;
        return tsl_errprintf(err, "cwd must be an absolute path without control characters");
    }
    if ((s->partition && (has_control(s->partition) || strchr(s->partition, ' '))) ||
        (s->qos && (has_control(s->qos) || strchr(s->qos, ' ')))) {
        errno = EINVAL;
        return tsl_errprintf(err, "a partition or QOS name must be one printable word");
    }
    if (!s->out_dir || s->out_dir[0] != '/' || strchr(s->out_dir, '%') || has_control(s->out_dir)) {
        errno = EINVAL;
        return tsl_errprintf(err, "the output directory must be an absolute path without '%%'");
    }
    return 0;
}

void tsj_opts(const tsj_submit_t *s, tsj_opts_t *o)
{
    memset(o, 0, sizeof *o);
    if (s->gpus > 1) {
        snprintf(o->gres, sizeof o->gres, "gpu:%d", s->gpus);
    } else if (s->gpus == 1 || s->gpu_milli >= 1000) {
        if (s->shards)
            snprintf(o->gres, sizeof o->gres, "shard:%u", s->shards);
        else
            snprintf(o->gres, sizeof o->gres, "gpu:1");
    } else if (s->gpu_milli > 0) {
        /* ceil(F x C) shards: at least the part asked; --gpu-share holds it to F. */
        if (s->shards)
            snprintf(o->gres, sizeof o->gres, "shard:%u",
                     (unsigned)(((uint64_t)s->gpu_milli * s->shards + 999) / 1000));
        snprintf(o->gpu_share, sizeof o->gpu_share, "%d.%03d", s->gpu_milli / 1000,
                 s->gpu_milli % 1000);
    }
    /* The plugin wants a unit: KiB, rounded up (a limit a byte above the one asked). */
    if (s->gpu_mem && (s->gpus || s->gpu_milli))
        snprintf(o->gpu_mem, sizeof o->gpu_mem, "%" PRIu64 "K", (s->gpu_mem + 1023) / 1024);
    if (s->cpu_milli > 0)
        o->cpus = (s->cpu_milli + 999) / 1000;
    if (s->mem > 0)
        o->mem_mb = (s->mem + (1 << 20) - 1) >> 20;
    if (s->time_limit_s > 0)
        o->time_min = (s->time_limit_s + 59) / 60;
}

char **tsj_sbatch_argv(const char *sbatch, const tsj_submit_t *s, tsl_error_t *err)
{
    if (submit_check(s, err) < 0)
        return NULL;
    const char *name = s->name ? s->name : "tessel";
    tsj_opts_t o;
    tsj_opts(s, &o);
    char **argv = calloc(SBATCH_MAX_ARGS, sizeof *argv);
    if (!argv) {
        errno = ENOMEM;
        tsl_errprintf(err, "sbatch: out of memory");
        return NULL;
    }
    size_t n = 0;
    int rc = add_arg(argv, &n, err, "%s", sbatch);
    rc = rc ?: add_arg(argv, &n, err, "--parsable");
    rc = rc ?: add_arg(argv, &n, err, "--job-name=%s", name);
    rc = rc ?: add_arg(argv, &n, err, "--chdir=%s", s->cwd);
    rc = rc ?: add_arg(argv, &n, err, "--output=%s/%%j.out", s->out_dir);
    rc = rc ?: add_arg(argv, &n, err, "--error=%s/%%j.err", s->out_dir);
    if (o.gres[0])
        rc = rc ?: add_arg(argv, &n, err, "--gres=%s", o.gres);
    if (o.gpu_share[0])
        rc = rc ?: add_arg(argv, &n, err, "--gpu-share=%s", o.gpu_share);
    if (o.gpu_mem[0])
        rc = rc ?: add_arg(argv, &n, err, "--gpu-mem=%s", o.gpu_mem);
    if (o.cpus)
        rc = rc ?: add_arg(argv, &n, err, "--cpus-per-task=%d", o.cpus);
    if (o.mem_mb)
        rc = rc ?: add_arg(argv, &n, err, "--mem=%" PRIu64 "M", o.mem_mb);
    if (s->no_requeue)
        rc = rc ?: add_arg(argv, &n, err, "--no-requeue");
    if (o.time_min)
        rc = rc ?: add_arg(argv, &n, err, "--time=%" PRId64, o.time_min);
    if (s->partition && s->partition[0])
        rc = rc ?: add_arg(argv, &n, err, "--partition=%s", s->partition);
    if (s->qos && s->qos[0])
        rc = rc ?: add_arg(argv, &n, err, "--qos=%s", s->qos);
    if (rc < 0) {
        tsj_argv_free(argv);
        return NULL;
    }
    argv[n] = NULL;
    return argv;
}

char *tsj_submit_request(const tsj_submit_t *s, const char *script, tsl_error_t *err)
{
    if (submit_check(s, err) < 0)
        return NULL;
    tsj_opts_t o;
    tsj_opts(s, &o);
    char out[PATH_MAX + 16], er[PATH_MAX + 16];
    snprintf(out, sizeof out, "%s/%%j.out", s->out_dir);
    snprintf(er, sizeof er, "%s/%%j.err", s->out_dir);
    json_t *r = json_pack("{s:s, s:s, s:s, s:s, s:s}", "name", s->name ? s->name : "tessel", "cwd",
                          s->cwd, "stdout", out, "stderr", er, "script", script);
    int bad = !r;
    if (r && o.gres[0])
        bad |= json_object_set_new(r, "gres", json_string(o.gres));
    if (r && o.gpu_share[0])
        bad |= json_object_set_new(r, "gpu_share", json_string(o.gpu_share));
    if (r && o.gpu_mem[0])
        bad |= json_object_set_new(r, "gpu_mem", json_string(o.gpu_mem));
    if (r && o.cpus)
        bad |= json_object_set_new(r, "cpus_per_task", json_integer(o.cpus));
    if (r && o.mem_mb)
        bad |= json_object_set_new(r, "mem_mb", json_integer((json_int_t)o.mem_mb));
    if (r && o.time_min)
        bad |= json_object_set_new(r, "time_min", json_integer(o.time_min));
    if (r && s->no_requeue)
        bad |= json_object_set_new(r, "requeue", json_false());
    if (r && s->partition && s->partition[0])
        bad |= json_object_set_new(r, "partition", json_string(s->partition));
    if (r && s->qos && s->qos[0])
        bad |= json_object_set_new(r, "qos", json_string(s->qos));
    /* json_string is NULL for text that is not UTF-8 (a script's values may be any bytes):
     * set_new fails then, and the request is refused rather than sent without it. */
    char *text = bad ? NULL : json_dumps(r, JSON_COMPACT);
    json_decref(r);
    if (!text) {
        errno = bad ? EINVAL : ENOMEM;
        tsl_errprintf(err, bad ? "the job's script or names are not UTF-8 text"
                               : "request: out of memory");
    }
    return text;
}

void tsj_argv_free(char **argv)
{
    if (!argv)
        return;
    for (char **a = argv; *a; a++)
        free(*a);
    free(argv);
}

/* ---- the script -------------------------------------------------------------------------- */

typedef struct {
    char *buf;
    size_t len, cap;
    bool oom;
} sbuf_t;

static void sb_add(sbuf_t *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (b->len + n + 1 > cap)
            cap *= 2;
        char *nb = realloc(b->buf, cap);
        if (!nb) {
            b->oom = true;
            return;
        }
        b->buf = nb;
        b->cap = cap;
    }
    memcpy(b->buf + b->len, s, n);
    b->len += n;
    b->buf[b->len] = '\0';
}

static void sb_str(sbuf_t *b, const char *s)
{
    sb_add(b, s, strlen(s));
}

/* ' VALUE': a space and value single-quoted for sh (a ' inside is written '\''). */
static void sb_quoted(sbuf_t *b, const char *s)
{
    sb_str(b, " '");
    for (const char *q; (q = strchr(s, '\'')); s = q + 1) {
        sb_add(b, s, (size_t)(q - s));
        sb_str(b, "'\\''");
    }
    sb_str(b, s);
    sb_str(b, "'");
}

/* ' NAME=VALUE' as one quoted word. */
static void sb_env(sbuf_t *b, const char *name, const char *value)
{
    char *kv;
    if (asprintf(&kv, "%s=%s", name, value) < 0) {
        b->oom = true;
        return;
    }
    sb_quoted(b, kv);
    free(kv);
}

bool tsj_env_slurms(const char *name)
{
    return strncmp(name, "SLURM_", 6) == 0 || strncmp(name, "SBATCH_", 7) == 0 ||
           strncmp(name, "SRUN_", 5) == 0 || strncmp(name, "SALLOC_", 7) == 0;
}

char *tsj_script(const char *user, const char *argv_json, bool shell, const char *env_json,
                 const char *fake_gpus, tsl_error_t *err)
{
    json_t *argv = json_loads(argv_json, 0, NULL);
    json_t *env = env_json ? json_loads(env_json, 0, NULL) : json_object();
    if (!json_is_array(argv) || json_array_size(argv) == 0 || !json_is_object(env) ||
        (shell && json_array_size(argv) != 1)) {
        json_decref(argv);
        json_decref(env);
        errno = EINVAL;
        tsl_errprintf(err, "argv or env is not what a job holds");
        return NULL;
    }
    sbuf_t b = {0};
    char head[160];
    /* The user's name is a Tessel name ([a-z][a-z0-9_-]*): safe in a comment. */
    snprintf(head, sizeof head, "#!/bin/sh\n# a job of tessel's (user %s)\n", user);
    sb_str(&b, head);
    /* The first command line: sbatch reads #SBATCH options only above it. */
    sb_str(&b, "exec /usr/bin/env --");
    const char *k;
    json_t *v;
    json_object_foreach(env, k, v)
    {
        if (!json_is_string(v) || tsj_env_slurms(k) ||
            (fake_gpus && strcmp(k, "TESSEL_FAKE_GPUS") == 0))
            continue;
        sb_env(&b, k, json_string_value(v));
    }
    if (fake_gpus)
        sb_env(&b, "TESSEL_FAKE_GPUS", fake_gpus);
    size_t i;
    if (shell) {
        sb_str(&b, " /bin/sh -c");
        sb_quoted(&b, json_string_value(json_array_get(argv, 0)));
    } else {
        /* Through sh's exec "$@": argv[0] may hold '=', which env would take for a variable. */
        sb_str(&b, " /bin/sh -c 'exec \"$@\"' tessel");
        json_array_foreach(argv, i, v) sb_quoted(&b, json_is_string(v) ? json_string_value(v) : "");
    }
    sb_str(&b, "\n");
    json_decref(argv);
    json_decref(env);
    if (b.oom) {
        free(b.buf);
        errno = ENOMEM;
        tsl_errprintf(err, "script: out of memory");
        return NULL;
    }
    return b.buf;
}

int tsj_parse_jobid(const char *text, int64_t *id)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || v <= 0 || (*end && *end != ';' && *end != '\n'))
        return -1;
    *id = v;
    return 0;
}

int tsj_sbatch_error(const char *text, bool timed_out, char *msg, size_t len)
{
    if (timed_out) {
        snprintf(msg, len, "Slurm did not answer in time: slurmctld may be down");
        return 503;
    }
    /* Every line that says something, joined by "; ": a plugin's refusal comes before
     * Slurm's own last line ("Batch job submission failed: Unspecified error"). */
    size_t n = 0;
    msg[0] = '\0';
    for (const char *l = text; l && *l && n + 1 < len;) {
        const char *e = strchr(l, '\n');
        size_t ll = e ? (size_t)(e - l) : strlen(l);
        if (ll > 0)
            n += (size_t)snprintf(msg + n, len - n, "%s%.*s", n ? "; " : "", (int)ll, l);
        if (n >= len)
            n = len - 1;
        l = e ? e + 1 : NULL;
    }
    if (n > 400 && len > 404)
        snprintf(msg + 400, len - 400, "...");
    if (!n) {
        snprintf(msg, len, "sbatch failed without a message");
        return 500;
    }
    if (strstr(text, "Unable to contact slurm controller") || strstr(text, "Socket timed out") ||
        strstr(text, "Slurm backup controller in standby"))
        return 503;
    return 422;
}

bool tsj_applies(const tsj_seen_t *s, int64_t owner_uid)
{
    if (!s)
        return true;
    if (!s->known)
        return false;
    return owner_uid >= 0 && s->uid >= 0 && s->uid == owner_uid;
}

void tsj_view_state(const tsj_seen_t *s, tsj_view_t *v)
{
    memset(v, 0, sizeof *v);
    int ws = s->wait_status;
    int sig = WIFSIGNALED(ws) ? WTERMSIG(ws) : 0, ex = WIFSIGNALED(ws) ? -1 : WEXITSTATUS(ws);
    v->state = TSTORE_FAILED;
    switch (s->state) {
    case TSJ_PENDING:
        v->state = TSTORE_PENDING;
        return;
    case TSJ_SUSPENDED:
        v->suspended = true;
        /* fall through */
    case TSJ_RUNNING:
        v->state = TSTORE_RUNNING;
        return;
    case TSJ_COMPLETED:
        v->state = TSTORE_SUCCEEDED;
        v->cause = TJM_CAUSE_EXIT;
        sig = 0;
        ex = 0;
        break;
    case TSJ_FAILED:
        v->cause = sig ? TJM_CAUSE_SIGNAL : TJM_CAUSE_EXIT;
        if (!sig && ex == 0)
            ex = 1; /* as tsj_plan: FAILED with a status of 0 failed all the same */
        break;
    case TSJ_CANCELLED:
        v->state = TSTORE_CANCELLED;
        v->cause = TJM_CAUSE_CANCELLED;
        break;
    case TSJ_TIMEOUT:
        v->cause = TJM_CAUSE_TIME_LIMIT;
        break;
    case TSJ_OOM:
        v->cause = TJM_CAUSE_HOST_OOM;
        break;
    case TSJ_NODE_FAIL:
        v->cause = TJM_CAUSE_LOST;
        sig = 0;
        ex = -1;
        break;
    case TSJ_LAUNCH_FAIL:
        v->cause = TJM_CAUSE_LAUNCH_FAILURE;
        sig = 0;
        ex = -1;
        break;
    case TSJ_PREEMPTED:
    default:
        v->cause = TJM_CAUSE_SIGNAL;
        if (!sig)
            sig = SIGTERM;
        break;
    }
    if (sig > 0)
        v->signal = sig;
    else if (ex >= 0 && v->state != TSTORE_CANCELLED) {
        v->has_exit_code = true;
        v->exit_code = ex;
    }
}

/* ---- queues onto partitions -------------------------------------------------------------- */

static bool slurm_name_ok(const char *s, size_t len)
{
    if (len == 0 || len > TSJ_NAME_MAX)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.'))
            return false;
    }
    return true;
}

static bool queue_name_ok(const char *s, size_t len)
{
    if (len == 0 || len > TSJ_NAME_MAX ||
        !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= '0' && s[0] <= '9')))
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
            return false;
    }
    return true;
}

const tsj_qmap_t *tsj_qmap_find(const tsj_qmap_t *m, size_t n, const char *queue)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(m[i].queue, queue) == 0)
            return &m[i];
    return NULL;
}

int tsj_parse_qmap(const char *text, tsj_qmap_t **out, size_t *n, tsl_error_t *err)
{
    *out = NULL;
    *n = 0;
    tsj_qmap_t *v = NULL;
    size_t c = 0;
    for (const char *p = text; *p;) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p)
            break;
        const char *end = p + strcspn(p, " \t");
        int wl = (int)(end - p);
        const char *eq = memchr(p, '=', (size_t)(end - p));
        const char *comma = eq ? memchr(eq, ',', (size_t)(end - eq)) : NULL;
        const char *pe = comma ? comma : end;
        if (!eq || !queue_name_ok(p, (size_t)(eq - p)) ||
            !slurm_name_ok(eq + 1, (size_t)(pe - eq - 1)) ||
            (comma && !slurm_name_ok(comma + 1, (size_t)(end - comma - 1)))) {
            free(v);
            errno = EINVAL;
            return tsl_errprintf(err,
                                 "'%.*s': expected QUEUE=PARTITION or QUEUE=PARTITION,QOS (names "
                                 "of letters, digits, '_', '-', '.', at most %d bytes)",
                                 wl > 80 ? 80 : wl, p, TSJ_NAME_MAX);
        }
        tsj_qmap_t m = {0};
        memcpy(m.queue, p, (size_t)(eq - p));
        memcpy(m.partition, eq + 1, (size_t)(pe - eq - 1));
        if (comma)
            memcpy(m.qos, comma + 1, (size_t)(end - comma - 1));
        if (tsj_qmap_find(v, c, m.queue)) {
            free(v);
            errno = EINVAL;
            return tsl_errprintf(err, "queue '%s' is mapped twice", m.queue);
        }
        tsj_qmap_t *nv = realloc(v, (c + 1) * sizeof *nv);
        if (!nv) {
            free(v);
            errno = ENOMEM;
            return tsl_errprintf(err, "out of memory");
        }
        v = nv;
        v[c++] = m;
        p = end;
    }
    *out = v;
    *n = c;
    return 0;
}

/* Append word to the comma-separated list buf unless it is there. */
static void list_add(char *buf, size_t len, const char *word)
{
    size_t wl = strlen(word);
    for (const char *p = buf; *p;) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == wl && strncmp(p, word, wl) == 0)
            return;
        p = e ? e + 1 : p + l;
    }
    size_t n = strlen(buf);
    if (n + (n ? 1 : 0) + wl + 1 > len) {
        if (len > 4 && strcmp(buf + (n >= 3 ? n - 3 : 0), "...") != 0 && n + 4 <= len)
            strcat(buf, "...");
        return;
    }
    if (n)
        strcat(buf, ",");
    strcat(buf, word);
}

int tsj_parse_sinfo(const char *text, size_t len, tsj_partition_t **out, size_t *n,
                    tsl_error_t *err)
{
    *out = NULL;
    *n = 0;
    json_error_t je;
    json_t *root = json_loadb(text, len, 0, &je);
    if (!json_is_object(root)) {
        json_decref(root);
        errno = EINVAL;
        return tsl_errprintf(err, "sinfo --json: not JSON (%s)", root ? "not an object" : je.text);
    }
    json_t *errs = json_object_get(root, "errors");
    if (json_is_array(errs) && json_array_size(errs) > 0) {
        json_t *d = json_object_get(json_array_get(errs, 0), "description");
        tsl_errprintf(err, "sinfo: %s", json_is_string(d) ? json_string_value(d) : "error");
        json_decref(root);
        errno = EIO;
        return -1;
    }
    json_t *nodes = json_object_get(root, "nodes");
    if (!json_is_array(nodes)) {
        json_decref(root);
        errno = EINVAL;
        return tsl_errprintf(err, "sinfo --json: no \"nodes\" array");
    }
    tsj_partition_t *v = NULL;
    size_t c = 0, i, k;
    json_t *node, *part;
    json_array_foreach(nodes, i, node)
    {
        json_t *name = json_object_get(node, "name"), *state = json_object_get(node, "state");
        json_t *cpus = json_object_get(node, "cpus"), *alloc = json_object_get(node, "alloc_cpus");
        json_t *gres = json_object_get(node, "gres");
        json_array_foreach(json_object_get(node, "partitions"), k, part)
        {
            if (!json_is_string(part))
                continue;
            tsj_partition_t *p = NULL;
            for (size_t x = 0; x < c && !p; x++)
                if (strcmp(v[x].name, json_string_value(part)) == 0)
                    p = &v[x];
            if (!p) {
                tsj_partition_t *nv = realloc(v, (c + 1) * sizeof *nv);
                if (!nv) {
                    free(v);
                    json_decref(root);
                    errno = ENOMEM;
                    return tsl_errprintf(err, "out of memory");
                }
                v = nv;
                p = &v[c++];
                memset(p, 0, sizeof *p);
                snprintf(p->name, sizeof p->name, "%s", json_string_value(part));
                snprintf(p->gres, sizeof p->gres, "%s",
                         json_is_string(gres) ? json_string_value(gres) : "");
            }
            p->nodes++;
            p->cpus += json_is_integer(cpus) ? (int)json_integer_value(cpus) : 0;
            p->alloc_cpus += json_is_integer(alloc) ? (int)json_integer_value(alloc) : 0;
            if (json_is_string(name))
                list_add(p->node_names, sizeof p->node_names, json_string_value(name));
            if (json_is_string(state))
                list_add(p->states, sizeof p->states, json_string_value(state));
        }
    }
    json_decref(root);
    *out = v;
    *n = c;
    return 0;
}
