/* jobs.c - /v1/jobs: submit, list, get, cancel, suspend, resume (logs are in logs.c; the
 * slice side of suspend and resume is suspend.c). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon/api/api.h"
#include "daemon/idle.h"
#include "daemon/oversub.h"
#include "daemon/pwcache.h"
#include "daemon/queuetree.h"
#include "daemon/slurmjob.h"
#include "daemon/container_launch.h"
#include "daemon/jobsvc.h"
#include "libutil/duration.h"
#include "libutil/jobenv.h"
#include "libutil/size.h"

/* Limits of a job spec, with their reasons: argv is bounded so that one job's record stays
 * well under the 64 KiB body limit and the kernel's ARG_MAX (env: TSL_ENV_MAX_*, jobenv.h). */
#define MAX_ARGV     256
#define MAX_NAME     64
#define MAX_PRIORITY 1000

json_t *api_job_json(tessd_t *d, const tstore_job_t *j)
{
    json_t *o = json_object();
    json_object_set_new(o, "id", json_integer(j->id));
    json_object_set_new(o, "origin", json_string("tessel"));
    json_object_set_new(o, "user", json_string(j->user));
    json_object_set_new(o, "name", j->name ? json_string(j->name) : json_null());
    json_t *argv = json_loads(j->argv_json, 0, NULL);
    json_object_set_new(o, "argv", argv ? argv : json_array());
    json_object_set_new(o, "shell", json_boolean(j->shell));
    char dir[PATH_MAX];
    tessd_job_dir(d, j->id, dir, sizeof dir);
    json_object_set_new(o, "cwd", json_string(j->cwd ? j->cwd : dir));
    json_object_set_new(o, "image", j->image ? json_string(j->image) : json_null());
    json_object_set_new(o, "tty", json_boolean(j->tty));
    json_t *folders = j->folders_json ? json_loads(j->folders_json, 0, NULL) : NULL;
    json_object_set_new(o, "folders", folders ? folders : json_array());
    json_object_set_new(o, "services", api_job_services_json(d, j));
    /* A running job whose GPU slice is suspended says "suspended" (the store keeps it running:
     * it holds its process and allocation); drained = nothing of it in flight any more. */
    bool suspended = j->state == TSTORE_RUNNING && j->suspended_ms > 0;
    json_object_set_new(o, "state",
                        json_string(suspended ? "suspended" : tstore_state_name(j->state)));
    json_object_set_new(o, "reason", j->reason ? json_string(j->reason) : json_null());
    /* Why it ended, as a fixed name (jobmodel.h's tjm_cause_t); null while it has not. */
    const char *cause = j->state >= TSTORE_SUCCEEDED ? tjm_cause_name(j->end_cause) : NULL;
    json_object_set_new(o, "end_cause", cause ? json_string(cause) : json_null());
    json_object_set_new(o, "reason_code",
                        j->state == TSTORE_PENDING && j->reason_code ? json_string(j->reason_code)
                                                                     : json_null());
    json_object_set_new(o, "queue", json_string(j->queue));
    json_object_set_new(o, "project", json_string(j->project ? j->project : "default"));
    json_object_set_new(o, "class", json_string(tstore_class_name(j->klass)));
    json_object_set_new(o, "priority", json_integer(j->priority));
    double gpu = j->gpus ? (double)j->gpus : j->gpu_milli / 1000.0;
    json_object_set_new(o, "gpu", json_real(gpu));
    json_object_set_new(o, "gpus", j->gpus ? json_integer(j->gpus) : json_null());
    json_object_set_new(o, "gpu_milli", json_integer(j->gpu_milli));
    json_object_set_new(o, "gpu_mem", json_integer((json_int_t)j->gpu_mem));
    /* Oversubscription (docs/interposer.md): bytes per GPU the slice may spill into host
     * memory, null when none; what it spills now is in the slices of GET /v1/gpus. */
    json_object_set_new(o, "gpu_mem_oversubscribe",
                        j->gpu_oversub ? json_integer((json_int_t)j->gpu_oversub) : json_null());
    json_object_set_new(o, "cpu", j->cpu_milli ? json_real(j->cpu_milli / 1000.0) : json_null());
    json_object_set_new(o, "mem", j->mem ? json_integer((json_int_t)j->mem) : json_null());
    json_t *pl = j->placement_json ? json_loads(j->placement_json, 0, NULL) : NULL;
    json_object_set_new(o, "placement", pl ? pl : json_array());
    json_object_set_new(o, "simulated", json_boolean(j->simulated));
    json_object_set_new(o, "submitted_at", api_time(j->submitted_ms));
    json_object_set_new(o, "started_at", api_time(j->started_ms));
    json_object_set_new(o, "finished_at", api_time(j->finished_ms));
    json_object_set_new(o, "exit_code",
                        j->has_exit_code ? json_integer(j->exit_code) : json_null());
    json_object_set_new(o, "signal", j->signal ? json_integer(j->signal) : json_null());
    json_object_set_new(o, "preemptions", json_integer(j->preemptions));
    json_object_set_new(o, "requeue", json_boolean(!j->no_requeue));
    json_object_set_new(o, "preemptible",
                        json_string(tstore_preempt_name(tstore_job_preemptible(j))));
    json_object_set_new(o, "suspended_at", api_time(suspended ? j->suspended_ms : 0));
    /* Suspended by a preemption: the job it made room for (null otherwise). */
    json_object_set_new(o, "suspended_for",
                        suspended && j->suspended_for ? json_integer(j->suspended_for)
                                                      : json_null());
    /* Why it is suspended: "idle" (an idle reclamation, docs/suspend.md), "preemption" (for
     * suspended_for), "request" (a person's or the GPU-memory watchdog's); null when not. */
    json_object_set_new(o, "suspended_reason",
                        !suspended          ? json_null()
                        : j->suspended_idle ? json_string("idle")
                        : j->suspended_for  ? json_string("preemption")
                                            : json_string("request"));
    /* Its own idle time in seconds (null: its queue's; 0: never). */
    json_object_set_new(o, "idle_reclaim",
                        j->idle_reclaim_s > 0   ? json_integer(j->idle_reclaim_s)
                        : j->idle_reclaim_s < 0 ? json_integer(0)
                                                : json_null());
    /* Bytes of GPU memory a suspended job gave back (its GPU state checkpointed,
     * docs/suspend.md); 0 when its suspend kept them; null when not suspended. */
    json_object_set_new(o, "gpu_released",
                        suspended ? json_integer((json_int_t)j->gpu_released) : json_null());
    /* --slurm: Slurm holds a suspended job (its processes stopped on the node); no slice
     * here to drain. */
    const tessd_run_t *r = suspended && !d->slurm ? tessd_run_find(d, j->id) : NULL;
    json_object_set_new(o, "drained",
                        suspended && !d->slurm ? json_boolean(r && tessd_slice_drained(d, r) == 1)
                                               : json_null());
    /* A step of the driver's checkpoint under way (suspend.c): "suspend" (the job is still
     * running until it ends), "restore" (still suspended), "undo" (a suspend tesseld did not
     * finish, put back at its start); null when none. */
    const tessd_run_t *cr =
        j->state == TSTORE_RUNNING && !d->slurm ? tessd_run_find(d, j->id) : NULL;
    static const char *const steps[] = {[TESSD_CKPT_SUSPEND] = "suspend",
                                        [TESSD_CKPT_RESTORE] = "restore",
                                        [TESSD_CKPT_UNDO] = "undo"};
    json_object_set_new(o, "checkpoint",
                        cr && cr->ckpt_op ? json_string(steps[cr->ckpt_op]) : json_null());
    api_batch_json(d, o, j);
    int64_t sid;
    json_object_set_new(o, "slurm_id",
                        d->slurm && tstore_slurm_get(d->store, j->id, &sid, NULL) == 0
                            ? json_integer(sid)
                            : json_null());
    return o;
}

static const char *const submit_fields[] = {
    "argv",         "shell",
    "name",         "cwd",
    "env",          "gpu",
    "gpus",         "gpu_mem",
    "cpu",          "mem",
    "queue",        "class",
    "priority",     "requeue",
    "time_limit",   "after",
    "array",        "project",
    "image",        "tty",
    "folders",      "gpu_mem_oversubscribe",
    "preemptible",  "services",
    "idle_reclaim", NULL,
};

json_t *api_job_services_json(tessd_t *d, const tstore_job_t *j)
{
    json_t *a = j->services_json ? json_loads(j->services_json, 0, NULL) : NULL;
    if (!json_is_array(a)) {
        json_decref(a);
        return json_array();
    }
    size_t i;
    json_t *o;
    json_array_foreach(a, i, o)
    {
        const char *name = json_string_value(json_object_get(o, "name"));
        char url[256];
        json_object_set_new(o, "url",
                            name && tessd_jobsvc_url(d, j->id, name, url, sizeof url) == 0
                                ? json_string(url)
                                : json_null());
    }
    return a;
}

/* A submission's "services" (docs/job-services.md) into *out (malloc'd JSON, NULL when none):
 * a process job of this tesseld run as root (the job gets a network namespace of its own) and
 * of the interactive class unless its class was given.  0, or -1 with rep filled. */
static int parse_services(tessd_t *d, json_t *body, tstore_job_t *j, char **out, thttp_reply_t *rep)
{
    json_t *v = json_object_get(body, "services");
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    tsl_error_t err;
    if (!(*out = tsd_svc_check(v, &err))) {
        thttp_error_errno(rep, errno, "services", err.text);
        return -1;
    }
    const char *why = j->image   ? "not for a container job yet"
                      : d->slurm ? "not with tesseld --slurm"
                      : !d->run_dir[0] || geteuid() != 0
                          ? "needs tesseld running as root (the job gets a network namespace of "
                            "its own)"
                          : NULL;
    if (why) {
        free(*out);
        *out = NULL;
        thttp_error(rep, 400, "invalid_value", "services", "services: %s", why);
        return -1;
    }
    json_t *c = json_object_get(body, "class");
    if (!c || json_is_null(c))
        j->klass = TSTORE_CLASS_INTERACTIVE;
    j->services_json = *out;
    return 0;
}

#define BAD(field, ...)                                                                            \
    do {                                                                                           \
        thttp_error(rep, 400, "invalid_value", field, __VA_ARGS__);                                \
        return -1;                                                                                 \
    } while (0)

/* Validate a submission into *j (strings point into body).  0, or -1 with rep filled. */
/* The host memory a job with oversubscription may spill in all: gpu_mem_oversubscribe on each
 * of its GPUs (saturating). */
static uint64_t oversub_total(const tstore_job_t *j)
{
    return tessd_oversub_total(j->gpu_oversub, j->gpu_count);
}

/* Did the submission name its own gpu_mem_oversubscribe (0 included)?  null or absent: its
 * queue's. */
static bool oversub_asked(json_t *body)
{
    json_t *v = json_object_get(body, "gpu_mem_oversubscribe");
    return v && !json_is_null(v);
}

static int parse_submit(tessd_t *d, json_t *body, tstore_job_t *j, thttp_reply_t *rep)
{
    if (thttp_check_fields(body, submit_fields, rep) < 0)
        return -1;
    json_t *argv = json_object_get(body, "argv");
    if (!argv) {
        thttp_error(rep, 400, "missing_field", "argv", "argv is required");
        return -1;
    }
    if (!json_is_array(argv) || json_array_size(argv) == 0 || json_array_size(argv) > MAX_ARGV)
        BAD("argv", "argv must be an array of 1 to %d strings", MAX_ARGV);
    size_t i;
    json_t *v;
    json_array_foreach(argv, i, v)
    {
        if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
            BAD("argv", "argv[%zu] must be a string without NUL bytes", i);
        if (i == 0 && json_string_length(v) == 0)
            BAD("argv", "argv[0] must not be empty");
    }
    v = json_object_get(body, "shell");
    if (v && !json_is_boolean(v))
        BAD("shell", "shell must be true or false");
    j->shell = v && json_is_true(v);
    if (j->shell && json_array_size(argv) != 1)
        BAD("argv", "with shell, argv must hold exactly one string (the command line)");
    v = json_object_get(body, "name");
    if (v && !json_is_null(v)) {
        if (!json_is_string(v) || json_string_length(v) > MAX_NAME)
            BAD("name", "name must be a string of at most %d bytes", MAX_NAME);
        j->name = (char *)json_string_value(v);
    }
    v = json_object_get(body, "cwd");
    if (v && !json_is_null(v)) {
        if (!json_is_string(v) || json_string_value(v)[0] != '/' ||
            json_string_length(v) >= PATH_MAX ||
            strlen(json_string_value(v)) != json_string_length(v))
            BAD("cwd", "cwd must be an absolute path");
        /* Whether it can be entered is checked as the job's user (api_jobs_submit). */
        j->cwd = (char *)json_string_value(v);
    }
    v = json_object_get(body, "image");
    if (v && !json_is_null(v)) {
        /* The name is checked in full (tessd_container_check), with the image's presence. */
        if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
            BAD("image", "image must be a string NAME[:TAG]");
        j->image = (char *)json_string_value(v);
    }
    /* A terminal (docs/terminal.md): the shim holds it (a container's: crun's, passed to the
     * shim), so only for a job this tesseld runs itself. */
    v = json_object_get(body, "tty");
    if (v && !json_is_boolean(v))
        BAD("tty", "tty must be true or false");
    j->tty = v && json_is_true(v);
    if (j->tty && d->slurm)
        BAD("tty", "tty: not with tesseld --slurm (Slurm runs the job: srun --pty)");
    if (j->tty && !d->run_dir[0])
        BAD("tty", "tty: needs tesseld running as root (the job's state directory holds the "
                   "terminal's socket)");
    v = json_object_get(body, "env");
    if (v && !json_is_null(v)) {
        if (!json_is_object(v))
            BAD("env", "env must be an object of strings");
        if (json_object_size(v) > TSL_ENV_MAX_VARS) {
            thttp_error(rep, 413, "payload_too_large", "env", "env has %zu variables, at most %d",
                        json_object_size(v), TSL_ENV_MAX_VARS);
            return -1;
        }
        const char *k;
        json_t *ev;
        size_t bytes = 0;
        json_object_foreach(v, k, ev)
        {
            if (!*k || strchr(k, '='))
                BAD("env", "env name '%s' is empty or holds '='", k);
            if (!json_is_string(ev) || strlen(json_string_value(ev)) != json_string_length(ev))
                BAD("env", "env '%s' must be a string without NUL bytes", k);
            const char *why = tsl_env_reserved(k);
            if (why)
                BAD("env", "env '%s': %s", k, why);
            bytes += strlen(k) + json_string_length(ev) + 2;
        }
        if (bytes > TSL_ENV_MAX_BYTES) {
            thttp_error(rep, 413, "payload_too_large", "env",
                        "env takes %zu bytes, at most %u (NAME=VALUE and a NUL each)", bytes,
                        TSL_ENV_MAX_BYTES);
            return -1;
        }
    }
    json_t *gpu = json_object_get(body, "gpu"), *gpus = json_object_get(body, "gpus");
    if (gpu && json_is_null(gpu))
        gpu = NULL;
    if (gpus && json_is_null(gpus))
        gpus = NULL;
    if (gpu && gpus)
        BAD("gpus", "give gpu or gpus, not both");
    if (gpu) {
        if (!json_is_number(gpu))
            BAD("gpu", "gpu must be a number");
        double g = json_number_value(gpu);
        if (!(g > 0) || !isfinite(g))
            BAD("gpu", "gpu must be above 0");
        if (g <= 1.0) {
            long milli = lround(g * 1000.0);
            if (milli < 1 || fabs(g * 1000.0 - (double)milli) > 1e-6)
                BAD("gpu", "gpu %g: a fraction of a GPU has at most 3 decimals (0.001..1)", g);
            j->gpu_milli = (int)milli;
            j->gpu_count = 1;
            if (milli == 1000)
                j->gpus = 1;
        } else {
            if (g != floor(g))
                BAD("gpu", "gpu %g: above 1, ask for whole GPUs (2, 3, ...), not a fraction", g);
            if (g > TSCHED_MAX_NODE_GPUS) {
                thttp_error(rep, 422, "unsatisfiable", "gpu", "gpu %g: a node has at most %d GPUs",
                            g, d->ngpus);
                return -1;
            }
            j->gpus = (int)g;
        }
    }
    if (gpus) {
        if (!json_is_integer(gpus) || json_integer_value(gpus) < 1)
            BAD("gpus", "gpus must be a whole number of at least 1");
        if (json_integer_value(gpus) > TSCHED_MAX_NODE_GPUS) {
            thttp_error(rep, 422, "unsatisfiable", "gpus", "gpus %lld: a node has at most %d GPUs",
                        (long long)json_integer_value(gpus), d->ngpus);
            return -1;
        }
        j->gpus = (int)json_integer_value(gpus);
    }
    if (j->gpus) {
        j->gpu_count = j->gpus;
        j->gpu_milli = TSCHED_MILLI;
    }
    v = json_object_get(body, "gpu_mem");
    if (v && !json_is_null(v)) {
        if (!j->gpu_count)
            BAD("gpu_mem", "gpu_mem needs gpu or gpus");
        if (api_get_size(v, "gpu_mem", &j->gpu_mem, rep) < 0)
            return -1;
    } else if (j->gpu_count) {
        /* Default: the job's share of the smallest GPU, so it fits on any of them: exactly
         * floor(mem * milli / 1000), in 64 bits without overflow or precision loss (mem =
         * 1000 q + r: q * milli + floor(r * milli / 1000)); 0.5 of 24 GiB is 12884901888. */
        uint64_t mem = d->min_gpu_mem, milli = (uint64_t)j->gpu_milli;
        j->gpu_mem = mem / TSCHED_MILLI * milli + mem % TSCHED_MILLI * milli / TSCHED_MILLI;
    }
    v = json_object_get(body, "cpu");
    if (v && !json_is_null(v)) {
        if (!json_is_number(v) || !(json_number_value(v) > 0) || !isfinite(json_number_value(v)))
            BAD("cpu", "cpu must be a number of cores above 0");
        double c = json_number_value(v);
        if (c > 1e6) {
            thttp_error(rep, 422, "unsatisfiable", "cpu", "cpu %g: this node has %ld CPUs", c,
                        d->ncpus);
            return -1;
        }
        j->cpu_milli = (int)lround(c * 1000.0);
        if (j->cpu_milli < 1)
            j->cpu_milli = 1;
    }
    v = json_object_get(body, "mem");
    if (v && !json_is_null(v) && api_get_size(v, "mem", &j->mem, rep) < 0)
        return -1;
    /* Spilled bytes are host memory of the job's processes: within its own memory limit (its
     * cgroup's) when it has one; unsatisfiable past the node's (checked with the others). */
    v = json_object_get(body, "gpu_mem_oversubscribe");
    if (v && !json_is_null(v) && !(json_is_integer(v) && json_integer_value(v) == 0)) {
        if (api_get_size(v, "gpu_mem_oversubscribe", &j->gpu_oversub, rep) < 0)
            return -1;
        if (j->gpu_oversub && !j->gpu_count)
            BAD("gpu_mem_oversubscribe", "gpu_mem_oversubscribe needs gpu or gpus");
        /* Per GPU: the job may spill that much on each of its GPUs. */
        if (j->mem && oversub_total(j) > j->mem)
            BAD("gpu_mem_oversubscribe", "gpu_mem_oversubscribe is host memory of the job, per "
                                         "GPU: times its GPUs it must not be above the job's mem");
        /* The hard bound of what the job's processes spill is its memory cgroup (the slice
         * file's count is the job's to rewrite; docs/security.md "Oversubscription"). */
        if (j->gpu_oversub && !j->mem && d->cg_mode != TAGENT_CG_NONE)
            BAD("mem", "gpu_mem_oversubscribe needs mem: the memory limit bounds what the job "
                       "spills into host memory");
    }
    v = json_object_get(body, "queue");
    if (v && !json_is_null(v)) {
        if (!json_is_string(v) || !tstore_name_valid(json_string_value(v)))
            BAD("queue", "queue must be a queue name");
        j->queue = (char *)json_string_value(v);
    } else {
        j->queue = (char *)"default";
    }
    /* The project is resolved under the lock (api_project_for_job); its name is checked here. */
    v = json_object_get(body, "project");
    if (v && !json_is_null(v) && (!json_is_string(v) || !tstore_name_valid(json_string_value(v))))
        BAD("project", "project must be a project name (1 to 32 of a-z, 0-9, '_' and '-', "
                       "starting with a letter)");
    v = json_object_get(body, "class");
    /* A job with a terminal is interactive work: of that class unless one is given (issue 19
     * item 4; a job with web services too, parse_services). */
    j->klass = j->tty ? TSTORE_CLASS_INTERACTIVE : TSTORE_CLASS_TRAINING;
    if (v && !json_is_null(v)) {
        int c = json_is_string(v) ? tstore_class_parse(json_string_value(v)) : -1;
        if (c < 0)
            BAD("class", "class must be interactive, training or inference");
        j->klass = (tstore_class_t)c;
    }
    v = json_object_get(body, "priority");
    if (v && !json_is_null(v)) {
        if (!json_is_integer(v) || json_integer_value(v) < -MAX_PRIORITY ||
            json_integer_value(v) > MAX_PRIORITY)
            BAD("priority", "priority must be a whole number from %d to %d", -MAX_PRIORITY,
                MAX_PRIORITY);
        j->priority = (int)json_integer_value(v);
    }
    v = json_object_get(body, "requeue");
    if (v && !json_is_null(v)) {
        if (!json_is_boolean(v))
            BAD("requeue", "requeue must be true or false");
        j->no_requeue = json_is_false(v);
    }
    /* What a preemption does to it (docs/suspend.md, "Preemption by suspension"); stored as
     * asked, the class's default in effect when not given.  Only training jobs are ever
     * preempted: any other class may say "never" only. */
    v = json_object_get(body, "preemptible");
    if (v && !json_is_null(v)) {
        int p = json_is_string(v) ? tstore_preempt_parse(json_string_value(v)) : -1;
        if (p < 0)
            BAD("preemptible", "preemptible must be suspend, requeue or never");
        if (p != TSTORE_PREEMPT_NEVER && j->klass != TSTORE_CLASS_TRAINING)
            BAD("preemptible",
                "preemptible: %s jobs are never preempted (only training jobs are): say never "
                "or leave it out",
                tstore_class_name(j->klass));
        j->preemptible = (tstore_preempt_t)p;
    }
    /* The job's own idle time before its GPU memory is given back (docs/suspend.md, "Idle
     * reclamation"): null its queue's, "off" or 0 never, whole seconds or a duration. */
    v = json_object_get(body, "idle_reclaim");
    if (v && !json_is_null(v)) {
        int64_t secs = -1;
        tsl_error_t e;
        if (json_is_integer(v) && json_integer_value(v) >= 0 &&
            json_integer_value(v) <= TESSD_IDLE_RECLAIM_MAX)
            secs = json_integer_value(v);
        else if (json_is_string(v) && tessd_idle_parse(json_string_value(v), &secs, &e) < 0)
            BAD("idle_reclaim", "%s", e.text);
        if (secs < 0)
            BAD("idle_reclaim",
                "idle_reclaim must be null (its queue's), \"off\" or 0 (never), whole seconds up "
                "to %d or a duration such as \"30m\"",
                TESSD_IDLE_RECLAIM_MAX);
        /* The floor (tesseld's --idle-reclaim-min): each reclamation is a checkpoint and a
         * restore of the job's memory on the node's one checkpoint queue, so a job may not
         * ask for them more often (docs/suspend.md, "How often a job may be reclaimed"). */
        long long floor_s = atomic_load(&d->idle_reclaim_min_s);
        if (secs > 0 && secs < floor_s) {
            char have[32], want[32];
            thttp_error(rep, 422, "unsatisfiable", "idle_reclaim",
                        "idle_reclaim %s is below this tesseld's floor of %s "
                        "(--idle-reclaim-min): ask %s or more, \"off\", or its queue's",
                        tsl_format_seconds(secs, have, sizeof have),
                        tsl_format_seconds(floor_s, want, sizeof want), want);
            return -1;
        }
        j->idle_reclaim_s = secs ? secs : -1;
    }
    return 0;
}

/* The path of a job's queue for a setting it may inherit (daemon/queuetree.h): leaf, then its
 * ancestors read from the store up to the first that sets it (own >= 0; a setting on the leaf
 * needs no more), at most cap queues (a parent missing ends it).  The queues read (>= 1), or 0
 * with the answer written (a store error). */
static size_t queue_path(tessd_t *d, const tstore_queue_t *leaf, tessd_queue_own_fn own,
                         tstore_queue_t *path, size_t cap, thttp_reply_t *rep)
{
    size_t n = 0;
    path[n++] = *leaf;
    while (own(&path[n - 1]) < 0 && path[n - 1].parent[0] && n < cap) {
        tsl_error_t err;
        if (tstore_queue_get(d->store, path[n - 1].parent, &path[n], &err) < 0) {
            if (errno == ENOENT)
                break;
            api_store_error(rep, &err);
            return 0;
        }
        n++;
    }
    return n;
}

/* Where a queue's setting in effect is set, for a 422's words: "" when on the job's queue leaf
 * itself, else ", from its parent queue 'from'". */
static void set_where(char *buf, size_t len, const char *from, const tstore_queue_t *leaf)
{
    buf[0] = '\0';
    if (strcmp(from, leaf->name) != 0)
        snprintf(buf, len, ", from its parent queue '%s'", from);
}

/* The queue's idle time is a maximum for its jobs (docs/suspend.md, "The setting"; the review
 * RV15b's L4): a job that is not an admin's may ask a shorter time (not below the floor,
 * parse_submit), its queue's, or anything in a queue that sets none; a longer time or never
 * is refused, 422 naming the queue's time and where it is set.  leaf: the job's queue; its
 * ancestors are read for a time it inherits.  0, or -1 with the answer written. */
static int check_idle_max(tessd_t *d, const tessd_caller_t *who, const tstore_job_t *j,
                          const tstore_queue_t *leaf, thttp_reply_t *rep)
{
    if (who->admin || j->idle_reclaim_s == 0)
        return 0;
    tstore_queue_t path[TSCHED_MAX_QUEUE_DEPTH + 1];
    size_t n = queue_path(d, leaf, tessd_idle_own, path, sizeof path / sizeof path[0], rep);
    if (!n)
        return -1;
    const char *from;
    int64_t qs = tessd_idle_queue(path, n, leaf->name, &from);
    if (tessd_idle_within_queue(j->idle_reclaim_s, qs))
        return 0;
    char have[32], most[32], where[TSTORE_NAME_MAX + 48];
    set_where(where, sizeof where, from, leaf);
    tsl_format_seconds(qs, most, sizeof most);
    thttp_error(rep, 422, "unsatisfiable", "idle_reclaim",
                "idle_reclaim %s is above queue '%s''s idle time of %s%s, the most its jobs may "
                "ask: ask %s or less, or leave it out (its queue's); only an admin may submit a "
                "job with a longer time or \"off\"",
                j->idle_reclaim_s < 0 ? "off"
                                      : tsl_format_seconds(j->idle_reclaim_s, have, sizeof have),
                leaf->name, most, where, most);
    return -1;
}

/* The queue's oversubscription (docs/interposer.md, "A queue's setting"): its value in effect
 * (its own or an ancestor's) is the default of a job that does not ask (given only where the
 * checks of a job's own value pass: tessd_oversub_default_fits; else the job has none), and
 * the most a job that is not an admin's may ask: more is refused, 422 naming the queue, its
 * value and where it is set.  asked: the submission named a value (0 included).  leaf: the
 * job's queue; its ancestors are read for a value it inherits.  0, or -1 with the answer
 * written (j untouched). */
static int apply_queue_oversub(tessd_t *d, const tessd_caller_t *who, bool asked, tstore_job_t *j,
                               const tstore_queue_t *leaf, thttp_reply_t *rep)
{
    if (asked && (who->admin || !j->gpu_oversub))
        return 0;
    tstore_queue_t path[TSCHED_MAX_QUEUE_DEPTH + 1];
    size_t n = queue_path(d, leaf, tessd_oversub_own, path, sizeof path / sizeof path[0], rep);
    if (!n)
        return -1;
    const char *from;
    uint64_t qv = tessd_oversub_queue(path, n, leaf->name, &from);
    if (!asked) {
        if (tessd_oversub_default_fits(qv, j->gpu_count, j->mem, d->cg_mode != TAGENT_CG_NONE,
                                       d->mem_total))
            j->gpu_oversub = qv;
        return 0;
    }
    if (tessd_oversub_within_queue(j->gpu_oversub, qv))
        return 0;
    char have[32], most[32], where[TSTORE_NAME_MAX + 48];
    set_where(where, sizeof where, from, leaf);
    tsl_format_size(j->gpu_oversub, have, sizeof have);
    tsl_format_size(qv, most, sizeof most);
    thttp_error(rep, 422, "unsatisfiable", "gpu_mem_oversubscribe",
                "gpu_mem_oversubscribe %s is above queue '%s''s gpu_mem_oversubscribe of %s per "
                "GPU%s, the most its jobs may ask: ask %s or less, or leave it out (its queue's); "
                "only an admin may submit a job with more",
                have, leaf->name, most, where, most);
    return -1;
}

/* An amount of resource k (0 milli-GPU, 1 bytes of GPU memory, 2 milli-CPU, 3 bytes of
 * memory) as people read it: "1.5 GPU", "8.00 GiB of GPU memory", "2 CPU", "16.0 GiB of
 * memory".  Returns buf. */
static char *amount(int k, int64_t v, char *buf, size_t len)
{
    char n[32];
    if (k == 1 || k == 3) {
        tsl_format_size((uint64_t)v, n, sizeof n);
        snprintf(buf, len, "%s of %smemory", n, k == 1 ? "GPU " : "");
        return buf;
    }
    snprintf(n, sizeof n, "%lld.%03lld", (long long)(v / 1000), (long long)(v % 1000));
    size_t l = strlen(n);
    while (n[l - 1] == '0')
        n[--l] = '\0';
    if (n[l - 1] == '.')
        n[--l] = '\0';
    snprintf(buf, len, "%s %s", n, k == 0 ? "GPU" : "CPU");
    return buf;
}

/* The queue must be a leaf, and a job that libsched never runs beyond the guarantee
 * (interactive, inference) must fit within the guarantee of its queue and of every ancestor,
 * in every resource.  0, or -1 with rep filled. */
static int check_queue(tessd_t *d, const tstore_job_t *j, const tstore_queue_t *leaf,
                       thttp_reply_t *rep)
{
    tsl_error_t err;
    int64_t children;
    if (tstore_queue_children(d->store, leaf->name, &children, &err) < 0) {
        api_store_error(rep, &err);
        return -1;
    }
    if (children > 0) {
        thttp_error(rep, 400, "invalid_value", "queue",
                    "queue '%s' has child queues: jobs go to a leaf queue", leaf->name);
        return -1;
    }
    if (j->klass == TSTORE_CLASS_TRAINING)
        return 0;
    tsched_job_t req;
    tessd_job_request(j, &req);
    uint64_t milli = req.ngpus > 1 || !req.milli_gpu ? TSCHED_MILLI : req.milli_gpu;
    int64_t want[4] = {(int64_t)(req.ngpus * milli), (int64_t)(req.ngpus * req.gpu_mem_bytes),
                       (int64_t)req.cpu_milli, (int64_t)req.mem_bytes};

    tstore_queue_t q = *leaf;
    for (int depth = 0; depth <= TSCHED_MAX_QUEUE_DEPTH; depth++) {
        int64_t g[4] = {q.guarantee.gpu_milli, q.guarantee.gpu_mem, q.guarantee.cpu_milli,
                        q.guarantee.mem};
        for (int k = 0; k < 4; k++) {
            if (g[k] >= 0 && want[k] > g[k]) {
                char gs[48], ws[48];
                thttp_error(rep, 422, "unsatisfiable", "class",
                            "a %s job must fit within queue '%s''s guarantee of %s "
                            "(it asks for %s); only training jobs may run beyond it",
                            tstore_class_name(j->klass), q.name, amount(k, g[k], gs, sizeof gs),
                            amount(k, want[k], ws, sizeof ws));
                return -1;
            }
        }
        if (!q.parent[0])
            break;
        char parent[TSTORE_NAME_MAX + 1];
        snprintf(parent, sizeof parent, "%s", q.parent);
        if (tstore_queue_get(d->store, parent, &q, &err) < 0) {
            /* Never skip the check: a job admitted beyond a guarantee breaks another's. */
            api_store_failure(rep, "ancestor queue's guarantee", &err);
            return -1;
        }
    }
    return 0;
}

/* 422 when the request could never run on this node, even with nothing else running. */
static int check_satisfiable(tessd_t *d, const tstore_job_t *j, thttp_reply_t *rep)
{
    if (j->gpu_count > d->ngpus) {
        thttp_error(rep, 422, "unsatisfiable", j->gpus ? "gpus" : "gpu",
                    "%d GPU(s) asked, this node has %d", j->gpu_count, d->ngpus);
        return -1;
    }
    if (j->gpu_count && j->gpu_mem > d->max_gpu_mem) {
        char want[32], have[32];
        tsl_format_size(j->gpu_mem, want, sizeof want);
        tsl_format_size(d->max_gpu_mem, have, sizeof have);
        thttp_error(rep, 422, "unsatisfiable", "gpu_mem",
                    "%s of GPU memory asked, the largest GPU has %s", want, have);
        return -1;
    }
    if (j->cpu_milli > d->ncpus * 1000) {
        thttp_error(rep, 422, "unsatisfiable", "cpu", "cpu %.3f: this node has %ld CPUs",
                    j->cpu_milli / 1000.0, d->ncpus);
        return -1;
    }
    if (j->mem > d->mem_total) {
        char want[32], have[32];
        tsl_format_size(j->mem, want, sizeof want);
        tsl_format_size(d->mem_total, have, sizeof have);
        thttp_error(rep, 422, "unsatisfiable", "mem", "%s of memory asked, this node has %s", want,
                    have);
        return -1;
    }
    if (oversub_total(j) > d->mem_total) {
        char want[32], have[32];
        tsl_format_size(oversub_total(j), want, sizeof want);
        tsl_format_size(d->mem_total, have, sizeof have);
        thttp_error(rep, 422, "unsatisfiable", "gpu_mem_oversubscribe",
                    "%s of host memory to spill into, this node has %s", want, have);
        return -1;
    }
    tsched_job_t req;
    tsched_member_t m;
    tsched_reason_t why = TSCHED_FIT;
    tessd_job_request(j, &req);
    int rc = tsched_place(d->empty, d->check_policy, &req, &m, &why);
    if (rc != 0) {
        thttp_error(rep, rc < 0 ? 400 : 422, rc < 0 ? "invalid_value" : "unsatisfiable", NULL,
                    "this job can never run on this node: %s", tsched_reason_str(why));
        return -1;
    }
    return 0;
}

/* One token of the caller's bucket in l (NULL: no limit); else 429 with Retry-After, saying
 * what is limited ("submission", "submit", "jobs") at which rate.  0, or -1 after filling
 * rep.  Lock held. */
static int take_rate(tessd_t *d, const tessd_caller_t *who, thttp_limiter_t *l, const char *what,
                     const char *verb, const char *noun, thttp_reply_t *rep)
{
    if (!l)
        return 0;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t wait =
        thttp_limiter_take(l, who->user, (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
    if (wait < 0) {
        thttp_error(rep, 500, "internal", NULL, "out of memory");
        return -1;
    }
    if (wait > 0) {
        long secs = (long)((wait + 999) / 1000);
        thttp_error(rep, 429, "too_many_requests", NULL,
                    "%s rate limit: %s %s may %s %g %s a second, %g at once; try again in %ld s",
                    what, who->admin ? "admin" : "user", who->user, verb,
                    who->admin ? d->admin_submit_rate : d->submit_rate, noun, d->submit_burst,
                    secs);
        snprintf(rep->extra_name, sizeof rep->extra_name, "Retry-After");
        snprintf(rep->extra_value, sizeof rep->extra_value, "%ld", secs);
        return -1;
    }
    return 0;
}

/* What one user may take before their job is even read: submissions a second (429 with
 * Retry-After above --submit-rate; admins only with --admin-submit-rate) and the disk
 * (507 below --disk-reserve free, so that a full disk never stops the store).  0, or -1 after
 * filling rep.  Lock held. */
static int check_submit_limits(tessd_t *d, const tessd_caller_t *who, thttp_reply_t *rep)
{
    if (take_rate(d, who, who->admin ? d->admin_submit_limit : d->submit_limit, "submission",
                  "submit", "jobs", rep) < 0)
        return -1;
    uint64_t avail, reserve;
    if (tessd_disk_space(d, &avail, &reserve) == 0 && avail < reserve) {
        char a[32], r[32];
        tsl_format_size(avail, a, sizeof a);
        tsl_format_size(reserve, r, sizeof r);
        thttp_error(rep, 507, "insufficient_storage", NULL,
                    "insufficient storage: %s free on the data directory's file system, reserve "
                    "%s; no new jobs until an admin frees space (running jobs go on)",
                    a, r);
        return -1;
    }
    return 0;
}

/* A job naming an image: a valid name of an image in the store, a runtime to run it
 * (container_launch.h); 400 or 422 otherwise, nothing stored.  0, or -1 with rep filled. */
static int check_image(tessd_t *d, const tstore_job_t *j, thttp_reply_t *rep)
{
    char why[512];
    const char *field = "image";
    int st = tessd_container_check(d, j->image, j->cwd, why, sizeof why, &field);
    if (st == 0)
        return 0;
    thttp_error(rep, st, st == 400 ? "invalid_value" : "unsatisfiable", field, "%s", why);
    return -1;
}

/* --slurm (docs/slurm-backend.md): the fields Tessel does not pass to Slurm yet, refused
 * rather than dropped. */
static int slurm_refuse(tessd_t *d, json_t *body, const tstore_job_t *j, thttp_reply_t *rep)
{
    static const char *const later[] = {"after", "array", "folders"};
    for (size_t i = 0; i < sizeof later / sizeof later[0]; i++) {
        json_t *v = json_object_get(body, later[i]);
        if (v && !json_is_null(v)) {
            thttp_error(rep, 400, "invalid_value", later[i],
                        "%s: not with tesseld --slurm yet (docs/slurm-backend.md)", later[i]);
            return -1;
        }
    }
    /* A queue goes to its partition (slurm-queues); default, when not mapped, to the
     * cluster's default partition. */
    if (strcmp(j->queue, "default") != 0 &&
        !tsj_qmap_find(d->slurm_qmap, d->slurm_nqmap, j->queue)) {
        char names[512] = "default";
        for (size_t i = 0; i < d->slurm_nqmap; i++)
            if (strcmp(d->slurm_qmap[i].queue, "default") != 0 &&
                strlen(names) + strlen(d->slurm_qmap[i].queue) + 3 < sizeof names)
                strcat(strcat(names, ", "), d->slurm_qmap[i].queue);
        BAD("queue",
            "queue '%s' has no Slurm partition (slurm-queues in tesseld.conf maps Tessel's queues "
            "onto partitions); the queues are: %s",
            j->queue, names);
    }
    if (j->klass != TSTORE_CLASS_TRAINING || j->priority != 0)
        BAD(j->priority ? "priority" : "class",
            "class and priority are Slurm's own with tesseld --slurm (not passed yet)");
    if (j->preemptible != TSTORE_PREEMPT_DEFAULT)
        BAD("preemptible", "preemption is Slurm's own with tesseld --slurm (preemptible is not "
                           "passed)");
    if (j->idle_reclaim_s)
        BAD("idle_reclaim", "idle reclamation is not done with tesseld --slurm (idle_reclaim is "
                            "not passed)");
    return 0;
}

/* The parts of a submission's record that come from its body as JSON text (argv, env: *argv_s
 * and *env_s, the caller's to free) and from the caller, for both the local and the Slurm
 * paths.  0, or -1 with the error answered. */
/* The job's project (the body's "project", else the submitter's default) into *p and j, with
 * its queue for a project other than 'default' (projects.c).  0, or -1 answered. */
static int job_project(tessd_t *d, const tessd_caller_t *who, json_t *body, tstore_job_t *j,
                       tstore_project_t *p, thttp_reply_t *rep)
{
    json_t *v = json_object_get(body, "project"), *q = json_object_get(body, "queue");
    return api_project_for_job(d, who, v && !json_is_null(v) ? json_string_value(v) : NULL,
                               q && !json_is_null(q), j, p, rep);
}

static int set_owner_body(tessd_t *d, json_t *body, char *user, tstore_job_t *j, char **argv_s,
                          char **env_s, thttp_reply_t *rep)
{
    *argv_s = json_dumps(json_object_get(body, "argv"), JSON_COMPACT);
    json_t *env = json_object_get(body, "env");
    *env_s = env && json_is_object(env) ? json_dumps(env, JSON_COMPACT) : strdup("{}");
    if (!*argv_s || !*env_s) {
        thttp_error(rep, 500, "internal", NULL, "out of memory");
        return -1;
    }
    j->user = user;
    j->argv_json = *argv_s;
    j->env_json = *env_s;
    j->simulated = j->gpu_count > 0 && d->simulated;
    return 0;
}

/* POST /v1/jobs with --slurm: checked as any submission, then sbatch as the caller's account
 * without the lock, then the job and its Slurm id in one transaction; a store that refuses
 * cancels the Slurm job again (nothing half-made on either side). */
static void slurm_submit(tessd_t *d, thttp_req_t *req, thttp_reply_t *rep, json_t *body)
{
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who))
        return;
    bool locked = true;
    tstore_job_t j = {0};
    api_batch_t batch = {0};
    char *argv_s = NULL, *env_s = NULL, why[512];
    json_t *gm = json_object_get(body, "gpu_mem");
    bool mem_given = gm && !json_is_null(gm);
    tstore_project_t proj;
    if (check_submit_limits(d, &who, rep) < 0 || parse_submit(d, body, &j, rep) < 0 ||
        job_project(d, &who, body, &j, &proj, rep) < 0 || slurm_refuse(d, body, &j, rep) < 0 ||
        api_batch_parse(body, &j, &batch, rep) < 0)
        goto out;
    if (!mem_given)
        j.gpu_mem = 0; /* the slice's default, the node's plugin decides */
    if (j.image && check_image(d, &j, rep) < 0)
        goto out;
    if (j.cwd && tessd_cwd_check(d, who.user, j.cwd, why, sizeof why) < 0) {
        thttp_error(rep, 400, "invalid_value", "cwd", "%s", why);
        goto out;
    }
    if (set_owner_body(d, body, who.user, &j, &argv_s, &env_s, rep) < 0)
        goto out;
    /* No cwd: the user's log directory (slurm.c), stored as the job's cwd. */
    char udir[PATH_MAX];
    if (!j.cwd) {
        if (tessd_pathf(udir, sizeof udir, "%s/%s", d->slurm_out, who.user) < 0) {
            thttp_error(rep, 500, "internal", NULL, "%s/%s: path too long", d->slurm_out, who.user);
            goto out;
        }
        j.cwd = udir;
    }
    /* Until its commit, the poll keeps a Slurm job it sees for the first time out of the view
     * of direct jobs: it may be this one (slurm.c, view_update). */
    d->slurm_inflight++;
    api_leave(d);
    locked = false;
    int64_t sid = 0;
    int st = tessd_slurm_submit(d, &j, j.cwd, &sid, why, sizeof why);
    if (st != 201) {
        pthread_mutex_lock(&d->lock);
        d->slurm_inflight--;
        pthread_mutex_unlock(&d->lock);
        thttp_error(rep, st,
                    st == 503   ? "unavailable"
                    : st == 422 ? "unsatisfiable"
                    : st == 400 ? "invalid_value"
                                : "internal",
                    NULL, "%s%s", st == 503 ? "Slurm is unavailable: " : "", why);
        goto out;
    }
    pthread_mutex_lock(&d->lock);
    locked = true;
    d->slurm_inflight--;
    j.submitted_ms = tessd_now_ms();
    tjm_t m;
    tessd_jobmodel(d, &m);
    tsl_error_t err;
    bool began = tstore_begin(d->store, &err) == 0;
    if (!began || tjm_submit(&m, &j, who.user, NULL, &err) < 0 ||
        tstore_slurm_set(d->store, j.id, sid, &err) < 0 || tstore_commit(d->store, &err) < 0) {
        if (began)
            tstore_rollback(d->store);
        bool full = tstore_last_full(d->store);
        api_leave(d);
        locked = false;
        char cwhy[256];
        int cst = tessd_slurm_cancel(d, who.user, sid, cwhy, sizeof cwhy);
        tessd_log("job of %s: Slurm job %lld submitted, the store refused it (%s): %s", who.user,
                  (long long)sid, err.text, cst == 200 ? "cancelled in Slurm" : cwhy);
        thttp_error(rep, full ? 507 : 500, full ? "insufficient_storage" : "internal", NULL,
                    "the store refused the job (%s); its Slurm job %lld was %s", err.text,
                    (long long)sid, cst == 200 ? "cancelled" : "not cancelled");
        goto out;
    }
    tessd_log("job %lld of %s is Slurm job %lld", (long long)j.id, who.user, (long long)sid);
    thttp_json(rep, 201, api_job_json(d, &j));
    snprintf(rep->location, sizeof rep->location, "/v1/jobs/%lld", (long long)j.id);
    /* No poll at once for a submission (the job is pending; the next poll, at most
     * --slurm-poll s away, sees it start): a squeue per submission kept squeue and slurmctld
     * busy for the whole of a burst, and every submission then waited on them
     * (bench/slurm/submit.sh, 2026-11-27: 5.0x sbatch's time a submission with it, 1.7x
     * without; docs/bench-submit.md). */
out:
    if (locked)
        api_leave(d);
    free(argv_s);
    free(env_s);
    api_batch_free(&batch);
    json_decref(body);
}

void api_jobs_submit(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    /* Parse and validate before taking the lock: most of the work needs no shared state. */
    json_t *body = thttp_body_object(req, rep, 0);
    if (!body)
        return;
    if (d->slurm) {
        slurm_submit(d, req, rep, body);
        return;
    }
    tessd_caller_t who;
    if (!api_enter_submit(d, req, rep, &who)) {
        json_decref(body);
        return;
    }
    tstore_job_t j = {0};
    api_batch_t batch = {0};
    char *argv_s = NULL, *env_s = NULL, *folders_s = NULL, *services_s = NULL;
    if (check_submit_limits(d, &who, rep) < 0)
        goto out;
    if (parse_submit(d, body, &j, rep) < 0 || parse_services(d, body, &j, &services_s, rep) < 0 ||
        api_batch_parse(body, &j, &batch, rep) < 0 || check_satisfiable(d, &j, rep) < 0)
        goto out;
    /* As root, a non-admin's job runs as its system account, never as root (unless
     * --allow-root-jobs): refused now rather than failed at its start. */
    char why[256];
    if (tessd_job_refused(d, who.user, who.admin, why, sizeof why)) {
        thttp_error(rep, 422, "unsatisfiable", NULL, "%s", why);
        goto out;
    }
    if (j.image && check_image(d, &j, rep) < 0)
        goto out;
    if (j.cwd) {
        /* Tried by a child as the job's account, which may take up to TESSD_CWD_TIMEOUT_MS (a
         * user's file system that does not answer): without the lock, nor a turn of the
         * store's group commit, so that it stalls no one else. */
        api_submit_pause(d);
        int rc = tessd_cwd_check(d, who.user, j.cwd, why, sizeof why);
        if (rc < 0)
            thttp_error(rep, 400, "invalid_value", "cwd", "%s", why);
        if (rc < 0 || !api_submit_resume(d, rep)) {
            free(argv_s);
            free(env_s);
            free(services_s);
            api_batch_free(&batch);
            json_decref(body);
            return;
        }
    }
    tstore_queue_t q;
    tstore_project_t proj;
    tsl_error_t err;
    if (job_project(d, &who, body, &j, &proj, rep) < 0 ||
        api_folders_for_job(d, &who, json_object_get(body, "folders"), &j, &folders_s, rep) < 0)
        goto out;
    /* A read-write folder at or over its quota (its project's): 507, the lock held or not. */
    bool paused;
    int fq = api_folders_job_quota(d, &j, &paused, rep);
    if (fq == -2) {
        free(folders_s);
        api_batch_free(&batch);
        json_decref(body);
        return;
    }
    if (fq < 0)
        goto out;
    /* The lock was released for the walks: the caller's token (revoked? their role?), the
     * project (gone?), their membership and their rights on the folders are checked again,
     * with the same answers as before. */
    if (paused) {
        free(folders_s);
        folders_s = NULL;
        j.folders_json = NULL;
        if (tessd_auth(d, req, rep, &who) < 0 || job_project(d, &who, body, &j, &proj, rep) < 0 ||
            api_folders_for_job(d, &who, json_object_get(body, "folders"), &j, &folders_s, rep) < 0)
            goto out;
    }
    if (tstore_queue_get(d->store, j.queue, &q, &err) < 0) {
        if (errno == ENOENT)
            thttp_error(rep, 400, "invalid_value", "queue", "no queue named '%s'", j.queue);
        else
            api_store_error(rep, &err);
        goto out;
    }
    if (!api_queue_may_submit(d, &who, &q, rep) || check_queue(d, &j, &q, rep) < 0 ||
        check_idle_max(d, &who, &j, &q, rep) < 0 ||
        apply_queue_oversub(d, &who, oversub_asked(body), &j, &q, rep) < 0 ||
        api_batch_check(d, &who, &batch, rep) < 0)
        goto out;
    /* A job its queue's limits (or an ancestor's) or this node can never hold waits forever:
     * refused now, with libsched's reason. */
    char never[TESSD_WAIT_TEXT];
    int feasible = tessd_job_feasible(d, &j, &q, never, sizeof never, &err);
    if (feasible <= 0) {
        if (feasible < 0)
            api_store_error(rep, &err);
        else
            thttp_error(rep, 422, "unsatisfiable", NULL, "this job can never run: %s", never);
        goto out;
    }
    if (set_owner_body(d, body, who.user, &j, &argv_s, &env_s, rep) < 0)
        goto out;
    j.submitted_ms = tessd_now_ms();
    /* Committed before the answer: an acknowledged job survives a crash of tesseld.  The
     * tick hands it to libsched (and says why it waits, if it does). */
    if (api_batch_add(d, &j, &batch, who.user, &err) < 0) {
        if (tstore_last_full(d->store))
            thttp_error(rep, 507, "insufficient_storage", NULL,
                        "insufficient storage: the store cannot grow (%s); no new jobs until an "
                        "admin frees space",
                        err.text);
        else
            api_store_error(rep, &err);
        goto out;
    }
    json_t *o = api_job_json(d, &j);
    if (batch.array)
        json_object_set_new(o, "array_size", json_integer(batch.array->n));
    thttp_json(rep, 201, o);
    snprintf(rep->location, sizeof rep->location, "/v1/jobs/%lld", (long long)j.id);
    d->sched_dirty = true;
    tessd_wake(d);
out:
    tstore_group_leave(d->store, NULL); /* a submission refused before its write ends its turn */
    api_leave(d);
    free(argv_s);
    free(env_s);
    free(folders_s);
    free(services_s);
    api_batch_free(&batch);
    json_decref(body);
}

/* ---- jobs submitted to Slurm directly (--slurm; docs/slurm-backend.md) --------------------
 * The poll's in-memory view (slurm.c): read-only, never in the store, never scheduled, counted
 * in no quota.  Their id is "slurm:N" (N: Slurm's job id), their "origin" "slurm". */

#define SLURM_PREFIX "slurm:"

/* The Unix account whose direct Slurm jobs the caller sees: the Tessel user's own (as root,
 * tesseld's users are the host's accounts), tesseld's own account in personal mode.  Returns
 * false when there is none (the caller sees no direct job). */
static bool slurm_account_of(const tessd_caller_t *who, char *buf, size_t len)
{
    tessd_pw_t pw;
    if (geteuid() == 0) {
        snprintf(buf, len, "%s", who->user);
        return true;
    }
    if (tessd_getpwuid(geteuid(), &pw) != 1)
        return false;
    snprintf(buf, len, "%s", pw.name);
    return true;
}

static bool slurm_visible(const tessd_caller_t *who, const tsj_seen_t *s)
{
    char acct[TSTORE_NAME_MAX + 272];
    if (who->admin)
        return true;
    return slurm_account_of(who, acct, sizeof acct) && strcmp(acct, s->user) == 0;
}

static json_t *unix_time(int64_t secs)
{
    return api_time(secs > 0 ? secs * 1000 : 0);
}

/* A direct Slurm job as GET /v1/jobs shows a job, the fields Slurm has no answer for null. */
static json_t *slurm_view_json(const tsj_seen_t *s)
{
    tsj_view_t v;
    tsj_view_state(s, &v);
    char id[48];
    snprintf(id, sizeof id, SLURM_PREFIX "%lld", (long long)s->slurm_id);
    const char *state = v.suspended ? "suspended" : tstore_state_name(v.state);
    bool pending = v.state == TSTORE_PENDING, ended = v.state >= TSTORE_SUCCEEDED;
    bool has_reason = s->reason[0] && strcmp(s->reason, "None") != 0;
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(id));
    json_object_set_new(o, "display_id", json_string(id));
    json_object_set_new(o, "origin", json_string("slurm"));
    json_object_set_new(o, "read_only", json_true());
    json_object_set_new(o, "slurm_id", json_integer(s->slurm_id));
    json_object_set_new(o, "user", json_string(s->user));
    json_object_set_new(o, "name", s->name[0] ? json_string(s->name) : json_null());
    json_object_set_new(o, "argv", json_array());
    json_object_set_new(o, "shell", json_false());
    json_object_set_new(o, "cwd", json_null());
    json_object_set_new(o, "state", json_string(state));
    json_object_set_new(o, "reason", has_reason ? json_string(s->reason) : json_null());
    json_object_set_new(o, "end_cause",
                        ended && tjm_cause_name(v.cause) ? json_string(tjm_cause_name(v.cause))
                                                         : json_null());
    json_object_set_new(o, "reason_code",
                        pending && has_reason ? json_string(s->reason) : json_null());
    /* Slurm's partition stands where a Tessel job has its queue. */
    json_object_set_new(o, "queue", json_string(s->partition));
    json_object_set_new(o, "partition", json_string(s->partition));
    json_object_set_new(o, "class", json_null());
    json_object_set_new(o, "priority", json_null());
    json_object_set_new(o, "gpu", json_real(0));
    json_object_set_new(o, "gpus", json_null());
    json_object_set_new(o, "gpu_milli", json_integer(0));
    json_object_set_new(o, "gpu_mem", json_integer(0));
    json_object_set_new(o, "cpu", s->cpus > 0 ? json_real(s->cpus) : json_null());
    json_object_set_new(o, "mem", json_null());
    json_t *pl = json_array();
    if (s->nodes[0] && !pending)
        json_array_append_new(pl, json_pack("{s:s}", "node", s->nodes));
    json_object_set_new(o, "placement", pl);
    json_object_set_new(o, "simulated", json_false());
    json_object_set_new(o, "submitted_at", unix_time(s->submit_time));
    json_object_set_new(o, "started_at", unix_time(pending ? 0 : s->start_time));
    json_object_set_new(o, "finished_at", unix_time(ended ? s->end_time : 0));
    json_object_set_new(o, "exit_code", v.has_exit_code ? json_integer(v.exit_code) : json_null());
    json_object_set_new(o, "signal", v.signal ? json_integer(v.signal) : json_null());
    json_object_set_new(o, "preemptions", json_integer(0));
    json_object_set_new(o, "requeue", json_null());
    json_object_set_new(o, "preemptible", json_null());
    json_object_set_new(o, "suspended_at", json_null());
    json_object_set_new(o, "suspended_for", json_null());
    json_object_set_new(o, "suspended_reason", json_null());
    json_object_set_new(o, "idle_reclaim", json_null());
    json_object_set_new(o, "gpu_released", json_null());
    json_object_set_new(o, "drained", json_null());
    json_object_set_new(o, "checkpoint", json_null());
    return o;
}

/* Whether ids names a direct Slurm job ("slurm:N"); then *sid = N (0 when N is not a job id). */
static bool slurm_direct_id(const char *ids, int64_t *sid)
{
    if (strncmp(ids, SLURM_PREFIX, strlen(SLURM_PREFIX)) != 0)
        return false;
    if (api_parse_id(ids + strlen(SLURM_PREFIX), sid) < 0)
        *sid = 0;
    return true;
}

/* Lock held.  The direct Slurm job ids names, if the caller may see it: *out (a copy), and 0;
 * else the error answered (404: none the caller may see; 503: Slurm could not be read and the
 * last view does not hold it) and -1. */
static int slurm_direct_load(tessd_t *d, const tessd_caller_t *who, const char *ids,
                             tsj_seen_t *out, thttp_reply_t *rep)
{
    int64_t sid = 0;
    slurm_direct_id(ids, &sid);
    const tsj_seen_t *s = NULL;
    bool fresh = false;
    if (d->slurm && sid > 0) {
        fresh = tessd_slurm_view(d) == 0;
        s = tessd_slurm_view_find(d, sid);
    }
    if (!s || !slurm_visible(who, s)) {
        if (d->slurm && sid > 0 && !fresh && !s)
            thttp_error(rep, 503, "unavailable", NULL,
                        "Slurm is unavailable: its jobs cannot be read (%s)", d->slurm_view_error);
        else
            thttp_error(rep, 404, "not_found", NULL, "no job '%s'", ids);
        return -1;
    }
    *out = *s;
    return 0;
}

bool api_slurm_direct_refuse(tessd_t *d, const tessd_caller_t *who, const char *ids,
                             const char *verb, thttp_reply_t *rep)
{
    int64_t sid;
    if (!slurm_direct_id(ids, &sid))
        return false;
    tsj_seen_t s;
    if (slurm_direct_load(d, who, ids, &s, rep) == 0)
        thttp_error(rep, 409, "conflict", NULL,
                    "not a Tessel job: submitted to Slurm directly (slurm id %lld); %s",
                    (long long)sid, verb);
    return true;
}

/* GET /v1/jobs?origin=slurm: the direct Slurm jobs the caller sees (an admin: everyone's, or
 * user's), by Slurm id (order=desc: newest first), at most f->limit, of the states in
 * f->state_mask (0: all). Lock held. */
static void slurm_direct_list(tessd_t *d, const tessd_caller_t *who, const tstore_job_filter_t *f,
                              thttp_reply_t *rep)
{
    json_t *arr = json_array();
    json_t *ans = json_pack("{s:o}", "jobs", arr);
    if (!d->slurm) {
        thttp_json(rep, 200, ans);
        return;
    }
    bool fresh = tessd_slurm_view(d) == 0;
    char acct[TSTORE_NAME_MAX + 272] = "";
    const char *user = f->user;
    if (!who->admin) {
        if (!slurm_account_of(who, acct, sizeof acct)) {
            thttp_json(rep, 200, ans);
            return;
        }
        user = acct;
    }
    for (size_t k = 0; k < d->slurm_view_n && (int)json_array_size(arr) < f->limit; k++) {
        const tsj_seen_t *s = &d->slurm_view[f->desc ? d->slurm_view_n - 1 - k : k];
        if (user && strcmp(s->user, user) != 0)
            continue;
        if (f->queue && strcmp(s->partition, f->queue) != 0)
            continue;
        tsj_view_t v;
        tsj_view_state(s, &v);
        if (f->state_mask && !(f->state_mask & 1u << v.state))
            continue;
        if (f->suspended_only && v.state == TSTORE_RUNNING && !v.suspended)
            continue;
        json_array_append_new(arr, slurm_view_json(s));
    }
    /* When Slurm was read: the view is the last poll's (it may be older when Slurm cannot be
     * read: slurm_error says why). */
    json_object_set_new(ans, "slurm_as_of", api_time(d->slurm_view_gen ? d->slurm_view_at : 0));
    json_object_set_new(ans, "slurm_error", fresh ? json_null() : json_string(d->slurm_view_error));
    thttp_json(rep, 200, ans);
}

typedef struct {
    tessd_t *d;
    json_t *arr;
} list_ctx_t;

static int add_job(const tstore_job_t *j, void *arg)
{
    list_ctx_t *c = arg;
    json_array_append_new(c->arr, api_job_json(c->d, j));
    return 0;
}

void api_jobs_list(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    tstore_job_filter_t f = {.limit = 1000};
    bool suspended = false;
    const char *s = thttp_query(req, "state");
    if (s) {
        char buf[128];
        snprintf(buf, sizeof buf, "%s", s);
        for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            int st = tstore_state_parse(t);
            if (strcmp(t, "active") == 0)
                f.state_mask |= 1u << TSTORE_PENDING | 1u << TSTORE_RUNNING;
            else if (strcmp(t, "suspended") == 0)
                suspended = true;
            else if (strcmp(t, "finished") == 0)
                f.state_mask |= ((1u << TSTORE_NSTATES) - 1) & ~3u;
            else if (st >= 0)
                f.state_mask |= 1u << st;
            else {
                thttp_error(rep, 400, "invalid_parameter", "state", "unknown state '%s'", t);
                return;
            }
        }
        /* "suspended" alone (or with finished states): of the running jobs, the suspended
         * ones; beside "running" or "active" it adds nothing. */
        if (suspended && !(f.state_mask & 1u << TSTORE_RUNNING)) {
            f.state_mask |= 1u << TSTORE_RUNNING;
            f.suspended_only = true;
        }
        if (!f.state_mask) {
            thttp_error(rep, 400, "invalid_parameter", "state", "state is empty");
            return;
        }
    }
    if ((s = thttp_query(req, "limit"))) {
        int64_t n;
        if (api_parse_id(s, &n) < 0 || n > 10000) {
            thttp_error(rep, 400, "invalid_parameter", "limit", "limit must be 1..10000");
            return;
        }
        f.limit = (int)n;
    }
    if ((s = thttp_query(req, "after"))) {
        if (strcmp(s, "0") != 0 && api_parse_id(s, &f.after) < 0) {
            thttp_error(rep, 400, "invalid_parameter", "after", "after must be a job id");
            return;
        }
    }
    if ((s = thttp_query(req, "order"))) {
        if (strcmp(s, "desc") != 0 && strcmp(s, "asc") != 0) {
            thttp_error(rep, 400, "invalid_parameter", "order", "order must be asc or desc");
            return;
        }
        f.desc = strcmp(s, "desc") == 0;
    }
    if ((s = thttp_query(req, "before"))) {
        if (!f.desc) {
            thttp_error(rep, 400, "invalid_parameter", "before", "before needs order=desc");
            return;
        }
        if (api_parse_id(s, &f.before) < 0) {
            thttp_error(rep, 400, "invalid_parameter", "before", "before must be a job id");
            return;
        }
    }
    f.queue = thttp_query(req, "queue");
    const char *user = thttp_query(req, "user");
    /* origin=slurm: the jobs submitted to Slurm directly (not pages of the store: all of them
     * at once, at most limit). */
    const char *origin = thttp_query(req, "origin");
    if (origin && strcmp(origin, "tessel") != 0 && strcmp(origin, "slurm") != 0) {
        thttp_error(rep, 400, "invalid_parameter", "origin", "origin must be tessel or slurm");
        return;
    }
    bool direct = origin && strcmp(origin, "slurm") == 0;
    if (direct && (f.after || f.before)) {
        thttp_error(rep, 400, "invalid_parameter", f.after ? "after" : "before",
                    "origin=slurm lists every job at once: no after or before");
        return;
    }
    const char *project = thttp_query(req, "project");
    if (project && !tstore_name_valid(project)) {
        thttp_error(rep, 400, "invalid_parameter", "project", "project must be a project name");
        return;
    }
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who))
        return;
    /* ?project=P: its jobs as the caller may see them (404 when P is not theirs): everyone's
     * when the project shares its jobs with them, else their own. */
    bool others = false;
    if (project && api_project_job_filter(d, &who, project, &f, &others, rep) < 0)
        goto out;
    if (!who.admin && !others) {
        if (user && strcmp(user, who.user) != 0) {
            thttp_error(rep, 403, "forbidden", "user", "only an admin may list other users' jobs");
            goto out;
        }
        user = who.user;
    }
    f.user = user;
    if (direct) {
        slurm_direct_list(d, &who, &f, rep);
        goto out;
    }
    list_ctx_t c = {d, json_array()};
    tsl_error_t err;
    if (tstore_job_list(d->store, &f, add_job, &c, &err) < 0) {
        json_decref(c.arr);
        api_store_error(rep, &err);
        goto out;
    }
    thttp_json(rep, 200, json_pack("{s:o}", "jobs", c.arr));
out:
    api_leave(d);
}

/* Load a job the caller may see (act: and act on: cancel, suspend, resume), or answer 404
 * (one they may not see, as one that does not exist) or 403 (one they see through a project
 * without the right to act on it).  Lock held.  0 or -1. */
static int load_visible(tessd_t *d, const tessd_caller_t *who, const char *ids, tstore_job_t *j,
                        bool act, thttp_reply_t *rep)
{
    int64_t id;
    tsl_error_t err;
    if (api_slurm_direct_refuse(
            d, who, ids, "Tessel only shows it (GET /v1/jobs/ID); use Slurm's commands", rep))
        return -1;
    if (api_batch_resolve_id(d, ids, &id) < 0) {
        thttp_error(rep, 404, "not_found", NULL, "no job '%s'", ids);
        return -1;
    }
    if (tstore_job_get(d->store, id, j, &err) < 0) {
        if (errno == ENOENT)
            thttp_error(rep, 404, "not_found", NULL, "no job %lld", (long long)id);
        else
            api_store_error(rep, &err);
        return -1;
    }
    tprj_job_right_t right;
    if (api_job_right(d, who, j, &right, &err) < 0) {
        tstore_job_clear(j);
        api_store_failure(rep, "job's project", &err);
        return -1;
    }
    if (right == TPRJ_JOB_NONE) {
        tstore_job_clear(j);
        thttp_error(rep, 404, "not_found", NULL, "no job %lld", (long long)id);
        return -1;
    }
    if (act && right != TPRJ_JOB_ACT) {
        thttp_error(rep, 403, "forbidden", NULL,
                    "job %lld is %s's, of project '%s': you ('%s') may see it, not act on it "
                    "(its owners and admins do)",
                    (long long)id, j->user, j->project, who->user);
        tstore_job_clear(j);
        return -1;
    }
    return 0;
}

/* A GET of one job the caller may see: answer() fills the reply (404 else).  Lock held. */
static void get_visible(thttp_req_t *req, thttp_reply_t *rep, tessd_t *d,
                        void (*answer)(tessd_t *d, const tstore_job_t *j, thttp_reply_t *rep))
{
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who))
        return;
    tstore_job_t j;
    if (load_visible(d, &who, req->params[0], &j, false, rep) == 0) {
        answer(d, &j, rep);
        tstore_job_clear(&j);
    }
    api_leave(d);
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static json_t *bytes_json(uint64_t v)
{
    return json_integer(v > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v);
}

/* A running job's use now, from its slice file, over its GPUs: device memory and bytes spilled
 * into host memory, apart (each slice's spilled figure within tesseld's own record of its
 * limit, api_slice_read; sums saturate); null when it does not run here.  Only in the answer
 * about one job: a listing would open every running job's slice file once per GPU under the
 * lock (security review F5), so api_job_json leaves these out. */
static void job_usage_json(tessd_t *d, const tstore_job_t *j, json_t *o)
{
    const tessd_run_t *ur =
        j->state == TSTORE_RUNNING && !d->slurm ? tessd_run_find(d, j->id) : NULL;
    uint64_t dev_used = 0, host_used = 0;
    for (uint32_t k = 0; ur && k < ur->member.ngpus; k++) {
        api_slice_t sl;
        api_slice_read(d, ur, ur->member.gpu[k], &sl);
        dev_used = sat_add(dev_used, sl.used);
        host_used = sat_add(host_used, sl.host_used);
    }
    bool live = ur && ur->member.ngpus;
    json_object_set_new(o, "gpu_mem_used", live ? bytes_json(dev_used) : json_null());
    json_object_set_new(o, "gpu_mem_oversubscribed", live ? bytes_json(host_used) : json_null());
}

static void answer_job(tessd_t *d, const tstore_job_t *j, thttp_reply_t *rep)
{
    json_t *o = api_job_json(d, j);
    job_usage_json(d, j, o);
    tsl_error_t err;
    /* One job's answer also lists its dependencies (jobs_batch.c). */
    if (api_batch_deps_json(d, o, j->id, &err) < 0) {
        json_decref(o);
        api_store_error(rep, &err);
    } else
        thttp_json(rep, 200, o);
}

void api_jobs_get(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    int64_t sid;
    if (slurm_direct_id(req->params[0], &sid)) {
        tessd_caller_t who;
        if (!api_enter(d, req, rep, &who))
            return;
        tsj_seen_t s;
        if (slurm_direct_load(d, &who, req->params[0], &s, rep) == 0)
            thttp_json(rep, 200, slurm_view_json(&s));
        api_leave(d);
        return;
    }
    get_visible(req, rep, ctx, answer_job);
}

/* GET /v1/jobs/{id}/wait?until=started|finished&timeout=SECONDS: a long poll.  Answers the
 * job as GET /v1/jobs/{id} does, once it has started (any state but pending) or finished (a
 * final state), or when timeout (default 30 s, at most TESSD_WAIT_MAX_MS) has passed, or when
 * tesseld stops: the caller looks at "state".  The thread sleeps without the lock, woken by
 * the job model's notify (wait.c). */
void api_jobs_wait(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    const char *until = thttp_query(req, "until");
    bool finished = until && strcmp(until, "finished") == 0;
    if (until && !finished && strcmp(until, "started") != 0) {
        thttp_error(rep, 400, "invalid_parameter", "until", "until must be started or finished");
        return;
    }
    int64_t timeout_ms = 30000;
    const char *s = thttp_query(req, "timeout");
    if (s) {
        char *e;
        errno = 0;
        double v = strtod(s, &e);
        if (!*s || *e || errno || !(v >= 0) || v * 1000 > TESSD_WAIT_MAX_MS) {
            thttp_error(rep, 400, "invalid_parameter", "timeout",
                        "timeout must be a number of seconds from 0 to %d",
                        TESSD_WAIT_MAX_MS / 1000);
            return;
        }
        timeout_ms = (int64_t)(v * 1000);
    }
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who))
        return;
    int64_t deadline = tessd_mono_ms() + timeout_ms;
    tstore_job_t j;
    while (load_visible(d, &who, req->params[0], &j, false, rep) == 0) {
        bool done = finished ? j.state >= TSTORE_SUCCEEDED : j.state != TSTORE_PENDING;
        if (done || tessd_mono_ms() >= deadline || atomic_load(&d->stopping)) {
            answer_job(d, &j, rep);
            tstore_job_clear(&j);
            break;
        }
        int64_t id = j.id;
        tstore_job_clear(&j);
        if (tessd_wait_job(d, id, deadline) < 0) {
            thttp_error(rep, 500, "internal", NULL, "waiting for job %lld: %s", (long long)id,
                        strerror(errno));
            break;
        }
    }
    api_leave(d);
}

/* --slurm: scancel as the job's owner's account (the caller is the owner or an admin: the ACL
 * is tesseld's), lock released meanwhile; then the job model's cancel (pending) or kill
 * (running: its end is recorded by the poll, as "killed").  Lock held on entry and return. */
static void slurm_cancel(tessd_t *d, const tessd_caller_t *who, tstore_job_t *j, thttp_reply_t *rep)
{
    int64_t sid, id = j->id;
    tsl_error_t err;
    char why[512], user[TSTORE_NAME_MAX + 1];
    if (tstore_slurm_get(d->store, id, &sid, &err) < 0) {
        thttp_error(rep, 409, "conflict", NULL, "job %lld is not a Slurm job", (long long)id);
        return;
    }
    snprintf(user, sizeof user, "%s", j->user);
    pthread_mutex_unlock(&d->lock);
    int st = tessd_slurm_cancel(d, user, sid, why, sizeof why);
    pthread_mutex_lock(&d->lock);
    if (st != 200) {
        thttp_error(rep, st, st == 503 ? "unavailable" : "conflict", NULL,
                    "job %lld (Slurm job %lld): %s%s", (long long)id, (long long)sid,
                    st == 503 ? "Slurm is unavailable: " : "", why);
        return;
    }
    tstore_job_clear(j);
    if (tstore_job_get(d->store, id, j, &err) < 0) {
        api_store_error(rep, &err);
        return;
    }
    int rc = 0;
    if (j->state == TSTORE_PENDING)
        rc = tessd_job_apply(d, id, TJM_EV_CANCEL, NULL, who->user, NULL, &err);
    else if (j->state == TSTORE_RUNNING && !j->cancel_ms) {
        tjm_change_t chg = {.now_ms = tessd_now_ms()};
        rc = tessd_job_apply(d, id, TJM_EV_KILL, &chg, who->user, "cancelling (scancel)", &err);
    }
    if (rc < 0) {
        api_store_error(rep, &err);
        return;
    }
    tstore_job_clear(j);
    if (tstore_job_get(d->store, id, j, &err) < 0) {
        api_store_error(rep, &err);
        return;
    }
    thttp_json(rep, 200, api_job_json(d, j));
    tessd_slurm_poll_soon(d);
}

void api_jobs_cancel(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    json_t *body = thttp_body_object(req, rep, 1);
    if (!body)
        return;
    static const char *const none[] = {NULL};
    if (thttp_check_fields(body, none, rep) < 0) {
        json_decref(body);
        return;
    }
    json_decref(body);
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who))
        return;
    tstore_job_t j;
    tsl_error_t err;
    if (api_slurm_direct_refuse(d, &who, req->params[0], "use scancel", rep) ||
        load_visible(d, &who, req->params[0], &j, true, rep) < 0)
        goto out;
    /* An array's id (not "40_0"): every element, as scancel (jobs_batch.c). */
    if (j.array_id == j.id && !strchr(req->params[0], '_')) {
        api_batch_cancel_array(d, &who, &j, rep);
        goto done;
    }
    if (d->slurm && j.state < TSTORE_SUCCEEDED) {
        slurm_cancel(d, &who, &j, rep);
        goto done;
    }
    if (j.state == TSTORE_PENDING) {
        if (tessd_job_apply(d, j.id, TJM_EV_CANCEL, NULL, who.user, NULL, &err) < 0) {
            api_store_error(rep, &err);
            goto done;
        }
        tessd_inbox_remove(d, j.id);
    } else if (j.state == TSTORE_RUNNING) {
        if (tessd_cancel_running(d, j.id, who.user, &err) < 0) {
            api_store_error(rep, &err);
            goto done;
        }
        tessd_wake(d);
    } else {
        thttp_error(rep, 409, "conflict", NULL, "job %lld has already finished (%s)",
                    (long long)j.id, tstore_state_name(j.state));
        goto done;
    }
    int64_t id = j.id;
    tstore_job_clear(&j);
    if (tstore_job_get(d->store, id, &j, &err) < 0) {
        api_store_error(rep, &err);
        goto out;
    }
    thttp_json(rep, 200, api_job_json(d, &j));
done:
    tstore_job_clear(&j);
out:
    api_leave(d);
}

typedef struct {
    json_t *arr;
    json_int_t dropped; /* suspend and resume records not kept (the "dropped" record's count) */
} events_t;

static int add_event(const tstore_event_t *e, void *arg)
{
    events_t *ev = arg;
    json_t *o = json_pack(
        "{s:I, s:o, s:s, s:s, s:o, s:s, s:o}", "id", (json_int_t)e->id, "time",
        api_time(e->time_ms), "who", e->who ? e->who : "", "event", e->event ? e->event : "",
        "from", e->from_state ? json_string(e->from_state) : json_null(), "to",
        e->to_state ? e->to_state : "", "why", e->why ? json_string(e->why) : json_null());
    json_t *detail = e->detail_json ? json_loads(e->detail_json, 0, NULL) : NULL;
    if (detail && e->event && strcmp(e->event, "dropped") == 0)
        ev->dropped = json_integer_value(json_object_get(detail, "count"));
    if (o)
        json_object_set_new(o, "detail", detail ? detail : json_object());
    else
        json_decref(detail);
    return o ? json_array_append_new(ev->arr, o) : -1;
}

static void answer_events(tessd_t *d, const tstore_job_t *j, thttp_reply_t *rep)
{
    events_t ev = {.arr = json_array()};
    tsl_error_t err;
    if (!ev.arr) {
        thttp_error(rep, 500, "internal", NULL, "out of memory");
    } else if (tstore_event_list(d->store, j->id, add_event, &ev, &err) < 0) {
        json_decref(ev.arr);
        api_store_error(rep, &err);
    } else {
        thttp_json(rep, 200,
                   json_pack("{s:I, s:o, s:I}", "job", (json_int_t)j->id, "events", ev.arr,
                             "dropped", ev.dropped));
    }
}

/* GET /v1/jobs/{id}/events: the job's event log, oldest first (owner or admin; 404 else).
 * "dropped": how many of its suspend and resume records were not kept (TSTORE_EVENTS_KEEP; one
 * record "dropped" stands in their place), 0 when none. */
void api_jobs_events(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    get_visible(req, rep, ctx, answer_events);
}

/* --slurm: tessel suspend/resume of a Slurm job.  The caller passed Tessel's ACL (owner or
 * admin: load_visible); the job must be running (suspend) or suspended (resume) with no stop
 * under way.  tesseld runs `scontrol suspend|resume ID` as itself (root: only a Slurm operator
 * may), the lock released meanwhile, then applies the job model's suspend or resume (the poll
 * may have seen it first: then nothing more).  Each counts against the caller's submission
 * rate (a process as root per request).  Lock held on entry and return. */
static void slurm_suspend(tessd_t *d, const tessd_caller_t *who, tstore_job_t *j, bool suspend,
                          thttp_reply_t *rep)
{
    long long id = (long long)j->id;
    const char *verb = suspend ? "suspend" : "resume";
    bool held = j->state == TSTORE_RUNNING && j->suspended_ms > 0;
    int64_t sid;
    tsl_error_t err;
    if (j->state != TSTORE_RUNNING) {
        thttp_error(rep, 409, "conflict", NULL, "job %lld is not running (%s): nothing to %s", id,
                    tstore_state_name(j->state), verb);
        return;
    }
    if (suspend && (j->cancel_ms || j->preempt_ms)) {
        thttp_error(rep, 409, "conflict", NULL, "job %lld is being cancelled: it is not suspended",
                    id);
        return;
    }
    if (suspend && held) {
        thttp_error(rep, 409, "conflict", NULL, "job %lld is already suspended", id);
        return;
    }
    if (!suspend && !held) {
        thttp_error(rep, 409, "conflict", NULL, "job %lld is not suspended (it is running)", id);
        return;
    }
    if (tstore_slurm_get(d->store, j->id, &sid, &err) < 0) {
        thttp_error(rep, 409, "conflict", NULL, "job %lld is not a Slurm job", id);
        return;
    }
    thttp_limiter_t *l = who->admin ? d->admin_submit_limit : d->submit_limit;
    if (l) {
        int64_t wait = thttp_limiter_take(l, who->user, tessd_mono_ms());
        if (wait != 0) {
            long secs = wait > 0 ? (long)((wait + 999) / 1000) : 1;
            thttp_error(rep, 429, "too_many_requests", NULL,
                        "rate limit: %s %s may ask %g Slurm commands (submissions, suspends, "
                        "resumes) a second; try again in %ld s",
                        who->admin ? "admin" : "user", who->user,
                        who->admin ? d->admin_submit_rate : d->submit_rate, secs);
            snprintf(rep->extra_name, sizeof rep->extra_name, "Retry-After");
            snprintf(rep->extra_value, sizeof rep->extra_value, "%ld", secs);
            return;
        }
    }
    char why[512];
    pthread_mutex_unlock(&d->lock);
    int st = tessd_slurm_suspend(d, sid, suspend, why, sizeof why);
    pthread_mutex_lock(&d->lock);
    if (st != 200) {
        thttp_error(rep, st,
                    st == 503   ? "unavailable"
                    : st == 409 ? "conflict"
                                : "internal",
                    NULL, "job %lld (Slurm job %lld): %s failed: %s%s", id, (long long)sid, verb,
                    st == 503 ? "Slurm is unavailable: " : "", why);
        return;
    }
    /* A poll whose squeue began before now may say what was true before: it does not suspend
     * or resume (slurm.c, apply_seen). */
    d->slurm_toggled = tessd_now_ms();
    tstore_job_clear(j);
    if (tstore_job_get(d->store, (int64_t)id, j, &err) < 0) {
        api_store_error(rep, &err);
        return;
    }
    bool now_held = j->state == TSTORE_RUNNING && j->suspended_ms > 0;
    if (j->state == TSTORE_RUNNING && now_held != suspend) {
        tjm_change_t chg = {.now_ms = tessd_now_ms()};
        if (tessd_job_apply(d, (int64_t)id, suspend ? TJM_EV_SUSPEND : TJM_EV_RESUME, &chg,
                            who->user, NULL, &err) < 0) {
            if (errno == EINVAL || errno == EBUSY) /* cancelled meanwhile */
                thttp_error(rep, 409, "conflict", NULL, "job %lld: %s", id, err.text);
            else
                api_store_error(rep, &err);
            return;
        }
    }
    tessd_log("job %lld (Slurm job %lld) %s by %s", id, (long long)sid,
              suspend ? "suspended" : "resumed", who->user);
    tstore_job_clear(j);
    if (tstore_job_get(d->store, (int64_t)id, j, &err) < 0) {
        api_store_error(rep, &err);
        return;
    }
    thttp_json(rep, 200, api_job_json(d, j));
}

/* POST /v1/jobs/{id}/suspend and .../resume: the job must be the caller's (or the caller an
 * admin), running, with a GPU slice, not being stopped; 409 with one line otherwise. */
static void suspend_or_resume(thttp_req_t *req, thttp_reply_t *rep, tessd_t *d, bool suspend)
{
    json_t *body = thttp_body_object(req, rep, 1);
    if (!body)
        return;
    static const char *const none[] = {NULL};
    if (thttp_check_fields(body, none, rep) < 0) {
        json_decref(body);
        return;
    }
    json_decref(body);
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who))
        return;
    tstore_job_t j;
    tsl_error_t err;
    /* Each adds a record to the job's event log and writes its slice file: a user may do it
     * as often as they may submit (--submit-rate, --submit-burst; admins with
     * --admin-submit-rate), from a bucket of its own. */
    if (take_rate(d, &who, who.admin ? d->admin_control_limit : d->control_limit,
                  "suspend and resume", "suspend or resume", "times", rep) < 0)
        goto out;
    if (api_slurm_direct_refuse(d, &who, req->params[0],
                                suspend ? "use scontrol suspend (Slurm's operators)"
                                        : "use scontrol resume (Slurm's operators)",
                                rep) ||
        load_visible(d, &who, req->params[0], &j, true, rep) < 0)
        goto out;
    long long id = (long long)j.id;
    const char *verb = suspend ? "suspend" : "resume";
    if (d->slurm) {
        slurm_suspend(d, &who, &j, suspend, rep);
        goto done;
    }
    tessd_run_t *r = j.state == TSTORE_RUNNING ? tessd_run_find(d, j.id) : NULL;
    if (!r) {
        thttp_error(rep, 409, "conflict", NULL, "job %lld is not running (%s): nothing to %s", id,
                    j.state == TSTORE_RUNNING ? "starting" : tstore_state_name(j.state), verb);
        goto done;
    }
    if (!tessd_has_slice(d, r)) {
        thttp_error(rep, 409, "conflict", NULL, "job %lld has no GPU slice to %s (%s)", id, verb,
                    r->member.ngpus ? "tesseld runs jobs without libtessel-cuda"
                                    : "it asked for no GPU");
        goto done;
    }
    if (suspend && (r->cancel_ms || r->preempt_ms)) {
        thttp_error(rep, 409, "conflict", NULL, "job %lld is being %s: it is not suspended", id,
                    r->cancel_ms ? "cancelled" : "preempted");
        goto done;
    }
    /* One step of the driver's checkpoint at a time (suspend.c): a second suspend, or a resume
     * while the suspend's checkpoint runs, is refused; a resume while its restore runs is the
     * resume already asked. */
    if (r->ckpt_op == TESSD_CKPT_SUSPEND || r->ckpt_op == TESSD_CKPT_UNDO ||
        (suspend && r->ckpt_op)) {
        thttp_error(rep, 409, "conflict", NULL,
                    "job %lld: its %s is in progress (the driver copies its GPU memory): %s when "
                    "it ends",
                    id,
                    r->ckpt_op == TESSD_CKPT_SUSPEND   ? "suspend"
                    : r->ckpt_op == TESSD_CKPT_RESTORE ? "restore"
                                                       : "recovery",
                    verb);
        goto done;
    }
    if (suspend && r->suspended_ms) {
        thttp_error(rep, 409, "conflict", NULL, "job %lld is already suspended", id);
        goto done;
    }
    if (!suspend && !r->suspended_ms) {
        thttp_error(rep, 409, "conflict", NULL, "job %lld is not suspended (it is running)", id);
        goto done;
    }
    /* A person's suspend asks the driver for a checkpoint (docs/suspend.md); a resume of a
     * job that gave its GPU memory back waits for room (1: still suspended). */
    int rc =
        suspend ? tessd_suspend_gpu(d, r, who.user, &err) : tessd_resume_gpu(d, r, who.user, &err);
    if (rc < 0) {
        tessd_log("job %lld: %s: %s", id, verb, err.text);
        /* -2: the job's own slice file is unusable (its user's doing), not tesseld's fault. */
        thttp_error(rep, rc == -2 ? 409 : 500, rc == -2 ? "conflict" : "internal", NULL,
                    "job %lld: %s failed: %s", id, verb, err.text);
        goto done;
    }
    if (suspend) {
        /* The checkpoint runs in a thread of its own: this request waits for it without
         * tesseld's lock (other requests and the tick go on) and answers its outcome. */
        if (tessd_ckpt_wait(d, (int64_t)id) < 0) {
            thttp_error(rep, 503, "unavailable", NULL,
                        "tesseld is shutting down: job %lld's suspend ends before it stops, or "
                        "is undone at its next start",
                        id);
            goto done;
        }
    } else {
        tessd_log("job %lld %s by %s", id,
                  rc == 1 ? "to be resumed (once its GPU has room)" : "resumed", who.user);
    }
    tstore_job_clear(&j);
    if (tstore_job_get(d->store, (int64_t)id, &j, &err) < 0) {
        api_store_error(rep, &err);
        goto out;
    }
    if (suspend && !(j.state == TSTORE_RUNNING && j.suspended_ms)) {
        thttp_error(rep, 409, "conflict", NULL,
                    "job %lld is not suspended: it was cancelled, preempted or ended during its "
                    "suspend (%s)",
                    id, tstore_state_name(j.state));
        goto done;
    }
    thttp_json(rep, 200, api_job_json(d, &j));
done:
    tstore_job_clear(&j);
out:
    api_leave(d);
}

void api_jobs_suspend(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    suspend_or_resume(req, rep, ctx, true);
}

void api_jobs_resume(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    suspend_or_resume(req, rep, ctx, false);
}
