/* config.c - the table of tesseld's options and what reads it: the command line (getopt_long)
 * and the configuration file (INI through libinih).  See config.h. */
#include <errno.h>
#include <getopt.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/gpu.h"
#include "daemon/ckptslot.h"
#include "daemon/config.h"
#include "daemon/jobsvc.h"
#include "daemon/gpuspeed.h"
#include "daemon/slurmjob.h"
#include "libutil/batchspec.h"
#include "libutil/duration.h"
#include "libutil/size.h"
#include "tessel/client.h"
#include "tessel/sched.h"
#include "tessel/sched_queue.h"

bool tessd_test_kill_step_valid(const char *step); /* launch.c */

typedef enum {
    T_STR,    /* char[size]; check() when given */
    T_BOOL,   /* bool: yes/no (a bare flag: yes) */
    T_ENUM,   /* int: index in choices "a|b|c" */
    T_UINT,   /* unsigned long in [lo, hi] */
    T_DOUBLE, /* double in [lo, hi] */
    T_SIZE,   /* uint64_t (tsl_parse_size) in [lo, hi] */
    T_SECS,   /* int64_t (tsl_parse_seconds: 0, 45s, 15m, 1h30m, 2d) at most hi */
    T_CUSTOM, /* set() */
} opt_type_t;

struct tessd_opt {
    const char *name;
    opt_type_t type;
    size_t off, size;
    double lo, hi;
    const char *choices;  /* T_ENUM */
    const char *def;      /* default text, parsed like a given value; NULL = "" */
    unsigned flags;       /* TESSD_OPT_* */
    const char *alias_of; /* a flag that sets another option to flag_value */
    const char *flag_value;
    int (*check)(const char *v, tsl_error_t *err);                /* T_STR */
    int (*set)(tessd_conf_t *c, const char *v, tsl_error_t *err); /* T_CUSTOM */
};

static int check_listen(const char *v, tsl_error_t *err);
static int check_svc_domain(const char *v, tsl_error_t *err);
static int check_svc_listen(const char *v, tsl_error_t *err);
static int check_socket(const char *v, tsl_error_t *err);
static int check_abs(const char *v, tsl_error_t *err);
static int check_fake(const char *v, tsl_error_t *err);
static int check_policy(const char *v, tsl_error_t *err);
static int check_kill_step(const char *v, tsl_error_t *err);
static int check_qmap(const char *v, tsl_error_t *err);
static int check_submit(const char *v, tsl_error_t *err);
static int check_speeds(const char *v, tsl_error_t *err);
static int set_disk_reserve(tessd_conf_t *c, const char *v, tsl_error_t *err);
static int set_kill_wait(tessd_conf_t *c, const char *v, tsl_error_t *err);
static int set_admin_rate(tessd_conf_t *c, const char *v, tsl_error_t *err);

#define F(field) offsetof(tessd_conf_t, field), sizeof(((tessd_conf_t *)0)->field)
#define LIVE     TESSD_OPT_LIVE
#define FLAG     TESSD_OPT_FLAG_ONLY

/* THE table: one entry per option of `tesseld --help`, in the order of etc/tesseld.conf. */
const tessd_opt_t tessd_opts[] = {
    /* Mode, paths and addresses (a restart applies them). */
    {"mode", T_ENUM, F(mode), .choices = "auto|system|personal", .def = "auto"},
    {"system", T_ENUM, F(mode), .flags = FLAG, .alias_of = "mode", .flag_value = "system"},
    {"personal", T_ENUM, F(mode), .flags = FLAG, .alias_of = "mode", .flag_value = "personal"},
    {"data-dir", T_STR, F(data_dir), .check = check_abs},
    {"socket", T_STR, F(socket), .check = check_socket},
    {"no-socket", T_BOOL, F(no_socket), .def = "no"},
    {"local-users", T_ENUM, F(local_users), .choices = "create|existing", .def = "create",
     .flags = LIVE},
    {"user-projects", T_BOOL, F(user_projects), .def = "no", .flags = LIVE},
    {"folder-root", T_STR, F(folder_root), .check = check_abs},
    {"listen", T_STR, F(listen), .def = "127.0.0.1:7470", .check = check_listen},
    {"no-listen", T_BOOL, F(no_listen), .def = "no"},
    {"services-listen", T_STR, F(services_listen), .check = check_svc_listen},
    {"services-domain", T_STR, F(services_domain), .def = TSD_SVC_DOMAIN_DEFAULT,
     .check = check_svc_domain},
    {"fake-gpus", T_STR, F(fake_gpus), .check = check_fake},
    {"fake-gpus-if-none", T_STR, F(fake_gpus_if_none), .check = check_fake},
    {"fake-lib-dir", T_STR, F(fake_lib_dir), .def = NULL},
    {"nvml", T_STR, F(nvml), .def = "libnvidia-ml.so.1"},
    {"interposer", T_STR, F(interposer), .check = check_abs},
    {"shim", T_STR, F(shim), .check = check_abs},
    {"haproxy", T_STR, F(haproxy), .def = "/usr/sbin/haproxy", .check = check_abs},
    {"policy", T_STR, F(policy), .def = "tessel", .check = check_policy},
    {"gpu-speeds", T_STR, F(gpu_speeds), .check = check_speeds},
    {"cgroup-root", T_STR, F(cgroup_root), .def = "/sys/fs/cgroup", .check = check_abs},
    {"no-cgroups", T_BOOL, F(no_cgroups), .def = "no"},
    {"web-root", T_STR, F(web_root), .def = NULL},
    /* Scheduling. */
    {"min-runtime", T_DOUBLE, F(min_runtime), .lo = 0, .hi = 1e9, .def = "60", .flags = LIVE},
    {"reserve-after", T_SECS, F(reserve_after), .hi = 7 * 86400, .def = "15m", .flags = LIVE},
    {"durability", T_ENUM, F(durability), .choices = "normal|full", .def = "normal"},
    /* Jobs. */
    {"allow-root-jobs", T_BOOL, F(allow_root_jobs), .def = "no"},
    {"no-root-jobs", T_BOOL, F(allow_root_jobs), .flags = FLAG, .alias_of = "allow-root-jobs",
     .flag_value = "no"},
    {"gpu-mem-violation", T_ENUM, F(gpu_mem_violation), .choices = "kill|suspend", .def = "kill",
     .flags = LIVE},
    {"allow-user-namespaces", T_BOOL, F(allow_user_namespaces), .def = "no"},
    {"log-limit", T_SIZE, F(log_limit), .hi = 1e18, .def = "64M", .flags = LIVE},
    {"kill-wait", T_CUSTOM, F(kill_wait), .def = "30s", .flags = LIVE, .set = set_kill_wait},
    {"job-log-retention", T_SECS, F(job_log_retention), .hi = 100 * 365 * 86400.0, .def = "30d",
     .flags = LIVE},
    /* Usage history (the console's charts; histagg.h checks the interval divides a minute). */
    {"history-interval", T_SECS, F(history_interval), .lo = 1, .hi = 60, .def = "10s"},
    {"history-retention", T_SECS, F(history_retention), .lo = 3600, .hi = 400 * 86400.0,
     .def = "8d"},
    /* tesseld's own log. */
    {"log", T_ENUM, F(log_to), .choices = "auto|syslog|stderr", .def = "auto"},
    {"log-level", T_ENUM, F(log_level), .choices = "error|warning|info|debug", .def = "info",
     .flags = LIVE},
    /* What one client may take. */
    {"max-connections", T_UINT, F(max_connections), .lo = 1, .hi = 65536, .def = "1024"},
    {"max-connections-per-client", T_UINT, F(max_per_client), .lo = 1, .hi = 65536, .def = "256"},
    {"request-timeout", T_UINT, F(request_timeout), .lo = 1, .hi = 86400, .def = "30"},
    {"term-idle-timeout", T_SECS, F(term_idle_timeout), .lo = 1, .hi = 7 * 86400, .def = "30m"},
    {"term-per-user", T_UINT, F(term_per_user), .lo = 1, .hi = 65536, .def = "16"},
    {"interactive-idle", T_SECS, F(interactive_idle), .lo = 0, .hi = 30 * 86400, .def = "0"},
    /* The shortest idle time a job may give itself (docs/suspend.md, "Idle reclamation"). */
    {"idle-reclaim-min", T_SECS, F(idle_reclaim_min), .lo = 0, .hi = 30 * 86400, .def = "5m",
     .flags = LIVE},
    {"ckpt-copies-per-gpu", T_UINT, F(ckpt_copies_per_gpu), .lo = 1, .hi = TESSD_CSLOT_MAX_PER_GPU,
     .def = "1"},
    {"max-body", T_SIZE, F(max_body), .lo = 1024, .hi = 16 << 20, .def = "64K"},
    {"max-services-per-user", T_UINT, F(max_services_per_user), .lo = 0, .hi = 256, .def = "16",
     .flags = LIVE},
    {"submit-rate", T_DOUBLE, F(submit_rate), .lo = 0, .hi = 1e6, .def = "5", .flags = LIVE},
    {"submit-burst", T_UINT, F(submit_burst), .lo = 1, .hi = 1000000, .def = "50", .flags = LIVE},
    {"admin-submit-rate", T_CUSTOM, F(admin_submit_rate), .flags = LIVE, .set = set_admin_rate},
    {"disk-reserve", T_CUSTOM, F(disk_reserve), .def = "256M", .flags = LIVE,
     .set = set_disk_reserve},
    /* Jobs as Slurm jobs (docs/slurm-backend.md). */
    {"slurm", T_BOOL, F(slurm), .def = "no"},
    {"slurm-conf", T_STR, F(slurm_conf), .check = check_abs},
    {"slurm-bin", T_STR, F(slurm_bin), .def = "/usr/bin", .check = check_abs},
    {"slurm-shards", T_UINT, F(slurm_shards), .lo = 0, .hi = 64, .def = "0"},
    {"slurm-poll", T_UINT, F(slurm_poll), .lo = 1, .hi = 60, .def = "1"},
    {"slurm-timeout", T_UINT, F(slurm_timeout), .lo = 1, .hi = 600, .def = "20"},
    {"slurm-output-dir", T_STR, F(slurm_output_dir), .check = check_abs},
    {"slurm-queues", T_STR, F(slurm_queues), .check = check_qmap},
    {"slurm-submit", T_STR, F(slurm_submit), .def = "auto", .check = check_submit},
    {"slurm-node-port", T_UINT, F(slurm_node_port), .lo = 0, .hi = 65535, .def = "9407"},
    {"slurm-node-poll", T_UINT, F(slurm_node_poll), .lo = 1, .hi = 60, .def = "2"},
    /* For tests only: flags, not keys of the file. */
    {"test-kill-at", T_STR, F(test_kill_at), .flags = FLAG, .check = check_kill_step},
    {"test-start-files", T_BOOL, F(test_start_files), .def = "no", .flags = FLAG},
    {"test-tick-ms", T_UINT, F(test_tick_ms), .lo = 1, .hi = 3600000, .flags = FLAG},
    {"test-pass-gap-ms", T_UINT, F(test_pass_gap_ms), .lo = 0, .hi = 3600000, .flags = FLAG},
    {"test-psusp-ckpt-ms", T_UINT, F(test_psusp_ckpt_ms), .lo = 1, .hi = 3600000, .flags = FLAG},
    {"test-retention-step", T_UINT, F(test_retention_step), .lo = 1, .hi = 1000000, .flags = FLAG},
};
const size_t tessd_nopts = sizeof tessd_opts / sizeof tessd_opts[0];

const char *tessd_opt_name(size_t i)
{
    return tessd_opts[i].name;
}
unsigned tessd_opt_flags(size_t i)
{
    return tessd_opts[i].flags;
}
const char *tessd_opt_default(size_t i)
{
    return tessd_opts[i].def ? tessd_opts[i].def : "";
}

static int check_abs(const char *v, tsl_error_t *err)
{
    if (v[0] && v[0] != '/')
        return tsl_errprintf(err, "expected an absolute path");
    return 0;
}

/* slurm-queues: QUEUE=PARTITION[,QOS] ... (slurmjob.h). */
static int check_speeds(const char *v, tsl_error_t *err)
{
    return tessd_speeds_lookup(v, NULL, NULL, err) < 0 ? -1 : 0;
}

/* slurm-submit: how jobs reach Slurm (slurm.c, slurmsub.c). */
static int check_submit(const char *v, tsl_error_t *err)
{
    if (strcmp(v, "auto") && strcmp(v, "libslurm") && strcmp(v, "sbatch"))
        return tsl_errprintf(err, "expected auto, libslurm or sbatch");
    return 0;
}

static int check_qmap(const char *v, tsl_error_t *err)
{
    tsj_qmap_t *m;
    size_t n;
    if (tsj_parse_qmap(v, &m, &n, err) < 0)
        return -1;
    free(m);
    return 0;
}

/* check_listen, or "" (none). */
/* --services-listen: HOST:PORT as for --listen, and HOST a loopback address (127.0.0.0/8 or
 * localhost): the services listener tells whose each connection is from the kernel's view of
 * its other end, which only a process of this machine has (docs/job-services.md). */
static int check_svc_listen(const char *v, tsl_error_t *err)
{
    if (!v[0])
        return 0;
    if (check_listen(v, err) < 0)
        return -1;
    if (strncmp(v, "localhost:", 10) == 0 || strncmp(v, "127.", 4) == 0)
        return 0;
    return tsl_errprintf(err,
                         "HOST must be a loopback address (127.0.0.1 or localhost): jobs' services "
                         "are served to this machine's own processes alone (from another "
                         "machine, through ssh -L; docs/job-services.md)");
}

static int check_svc_domain(const char *v, tsl_error_t *err)
{
    if (tsd_svc_domain_valid(v))
        return 0;
    tsl_errprintf(err,
                  "'%s' is not a domain for the services' host names (labels of a-z, 0-9 and "
                  "'-', at most %d bytes)",
                  v, TSD_SVC_DOMAIN_MAX);
    return -1;
}

static int check_listen(const char *v, tsl_error_t *err)
{
    const char *colon = strrchr(v, ':');
    char *e;
    errno = 0;
    unsigned long port = colon ? strtoul(colon + 1, &e, 10) : 0;
    if (!colon || colon == v || !colon[1] || *e || errno || port > 65535)
        return tsl_errprintf(err, "expected HOST:PORT");
    char host[64];
    snprintf(host, sizeof host, "%.*s", (int)(colon - v), v);
    unsigned char a[4];
    if (strcmp(host, "localhost") != 0 && (size_t)(colon - v) < sizeof host &&
        sscanf(host, "%hhu.%hhu.%hhu.%hhu%c", &a[0], &a[1], &a[2], &a[3], &(char){0}) != 4)
        return tsl_errprintf(err, "HOST must be a numeric IPv4 address");
    return 0;
}

static int check_socket(const char *v, tsl_error_t *err)
{
    if (v[0] && (v[0] != '/' || strlen(v) > TCLIENT_SOCKET_PATH_MAX))
        return tsl_errprintf(err, "expected an absolute path of at most %d bytes",
                             TCLIENT_SOCKET_PATH_MAX);
    return 0;
}

static int check_fake(const char *v, tsl_error_t *err)
{
    tagent_gpu_t probe[TAGENT_MAX_GPUS];
    return v[0] ? (tagent_fake_spec_parse(v, probe, TAGENT_MAX_GPUS, err) < 0 ? -1 : 0) : 0;
}

static int check_policy(const char *v, tsl_error_t *err)
{
    tsched_policy_t *p = tsched_policy_create(v, err);
    if (!p)
        return -1;
    tsched_policy_destroy(p);
    return 0;
}

static int check_kill_step(const char *v, tsl_error_t *err)
{
    if (v[0] && !tessd_test_kill_step_valid(v))
        return tsl_errprintf(err, "expected running, dir, cgroup, spawned or recorded");
    return 0;
}

/* SIZE (tsl_parse_size) or N% (0 <= N < 100) of the data directory's file system. */
static int set_disk_reserve(tessd_conf_t *c, const char *v, tsl_error_t *err)
{
    size_t n = strlen(v);
    if (n > 1 && v[n - 1] == '%') {
        char *e;
        double x = strtod(v, &e);
        if (e != v + n - 1 || !(x >= 0 && x < 100))
            return tsl_errprintf(err, "expected a percentage from 0 to 99%%");
        c->disk_reserve_pct = x;
        c->disk_reserve = 0;
        return 0;
    }
    tsl_error_t e;
    uint64_t b;
    if (tsl_parse_size(v, &b, &e) < 0)
        return tsl_errprintf(err, "%s (e.g. 1G or 5%%)", e.text);
    c->disk_reserve = b;
    c->disk_reserve_pct = 0;
    return 0;
}

/* Admins' submissions a second, > 0; empty: admins are not limited. */
static int set_admin_rate(tessd_conf_t *c, const char *v, tsl_error_t *err)
{
    char *e;
    double x = v[0] ? strtod(v, &e) : 0;
    if (v[0] && (*e || !(x > 0 && x <= 1e6)))
        return tsl_errprintf(err, "expected submissions a second, a number > 0 (empty: admins "
                                  "are not limited)");
    c->admin_submit_rate = x;
    return 0;
}

/* Slurm's KillWait: 30s, 2m, MM:SS, at most an hour. */
static int set_kill_wait(tessd_conf_t *c, const char *v, tsl_error_t *err)
{
    int64_t kw = 0;
    tsl_error_t e;
    if (tsl_parse_duration(v, &kw, &e) < 0)
        return tsl_errprintf(err, "%s", e.text);
    if (kw > 3600)
        return tsl_errprintf(err, "at most 1h");
    c->kill_wait = kw;
    return 0;
}

static const tessd_opt_t *opt_find(const char *name)
{
    for (size_t i = 0; i < tessd_nopts; i++)
        if (strcmp(tessd_opts[i].name, name) == 0)
            return &tessd_opts[i];
    return NULL;
}

/* "a|b|c" -> "a, b or c" into buf. */
static const char *choices_text(const char *choices, char *buf, size_t len)
{
    size_t n = 0, bars = 0;
    for (const char *p = choices; *p; p++)
        bars += *p == '|';
    buf[0] = '\0';
    for (const char *p = choices; *p && n + 8 < len; p++) {
        if (*p == '|') {
            const char *sep = --bars == 0 ? " or " : ", ";
            n += (size_t)snprintf(buf + n, len - n, "%s", sep);
        } else {
            buf[n++] = *p;
            buf[n] = '\0';
        }
    }
    return buf;
}

/* 1024 -> "1K", 16 MiB -> "16M", as sizes are given. */
static const char *size_text(uint64_t b, char *buf, size_t len)
{
    static const char units[] = "KMGT";
    int u = -1;
    while (u < 3 && b >= 1024 && b % 1024 == 0) {
        b /= 1024;
        u++;
    }
    if (u >= 0)
        snprintf(buf, len, "%llu%c", (unsigned long long)b, units[u]);
    else
        snprintf(buf, len, "%llu", (unsigned long long)b);
    return buf;
}

/* Parse v for o into c, and keep its normalised text.  0, or -1 with err (the reason). */
static int opt_set(tessd_conf_t *c, const tessd_opt_t *o, const char *v, tsl_error_t *err)
{
    char *field = (char *)c + o->off;
    char norm[64] = "";
    const char *text = v;
    char *e;
    switch (o->type) {
    case T_STR:
        if (strlen(v) >= o->size)
            return tsl_errprintf(err, "longer than %zu bytes", o->size - 1);
        if (o->check && o->check(v, err) < 0)
            return -1;
        memcpy(field, v, strlen(v) + 1);
        break;
    case T_BOOL: {
        static const char *const yes[] = {"yes", "true", "on", "1"}, *const no[] = {"no", "false",
                                                                                    "off", "0"};
        int b = -1;
        for (int i = 0; i < 4; i++) {
            if (strcasecmp(v, yes[i]) == 0)
                b = 1;
            if (strcasecmp(v, no[i]) == 0)
                b = 0;
        }
        if (b < 0)
            return tsl_errprintf(err, "expected yes or no");
        *(bool *)field = b;
        text = b ? "yes" : "no";
        break;
    }
    case T_ENUM: {
        int idx = 0;
        size_t vl = strlen(v);
        for (const char *p = o->choices;; idx++) {
            const char *bar = strchr(p, '|');
            size_t l = bar ? (size_t)(bar - p) : strlen(p);
            if (l == vl && strncmp(p, v, l) == 0) {
                *(int *)field = idx;
                break;
            }
            if (!bar) {
                char buf[128];
                return tsl_errprintf(err, "expected %s", choices_text(o->choices, buf, sizeof buf));
            }
            p = bar + 1;
        }
        break;
    }
    case T_UINT: {
        errno = 0;
        unsigned long x = strtoul(v, &e, 10);
        if (!*v || *e || errno || v[0] == '-' || x < o->lo || x > o->hi)
            return tsl_errprintf(err, "expected a whole number from %.0f to %.0f", o->lo, o->hi);
        *(unsigned long *)field = x;
        break;
    }
    case T_DOUBLE: {
        double x = strtod(v, &e);
        if (!*v || *e || !(x >= o->lo && x <= o->hi)) {
            if (o->off == offsetof(tessd_conf_t, min_runtime))
                return tsl_errprintf(err, "expected seconds >= 0");
            return tsl_errprintf(err, "expected submissions a second, a number from 0 to %.0f",
                                 o->hi);
        }
        *(double *)field = x;
        break;
    }
    case T_SIZE: {
        uint64_t b;
        tsl_error_t se;
        if (tsl_parse_size(v, &b, &se) < 0)
            return tsl_errprintf(err, "%s", se.text);
        if (b < o->lo || (double)b > o->hi) {
            char lo[32], hi[32];
            return tsl_errprintf(err, "expected a size from %s to %s",
                                 size_text((uint64_t)o->lo, lo, sizeof lo),
                                 size_text((uint64_t)o->hi, hi, sizeof hi));
        }
        *(uint64_t *)field = b;
        break;
    }
    case T_SECS: {
        int64_t s;
        if (tsl_parse_seconds(v, (int64_t)o->hi, &s, err) < 0)
            return -1;
        *(int64_t *)field = s;
        tsl_format_seconds(s, norm, sizeof norm);
        text = norm;
        break;
    }
    case T_CUSTOM:
        if (o->set(c, v, err) < 0)
            return -1;
        break;
    }
    /* An alias keeps the text of the option it sets. */
    size_t i = (size_t)((o->alias_of ? opt_find(o->alias_of) : o) - tessd_opts);
    char *dup = strdup(text);
    if (!dup)
        return tsl_errprintf(err, "out of memory");
    free(c->text[i]);
    c->text[i] = dup;
    return 0;
}

int tessd_conf_defaults(tessd_conf_t *c, tsl_error_t *err)
{
    memset(c, 0, sizeof *c);
    c->text = calloc(tessd_nopts, sizeof *c->text);
    if (!c->text)
        return tsl_errprintf(err, "out of memory");
    for (size_t i = 0; i < tessd_nopts; i++) {
        const tessd_opt_t *o = &tessd_opts[i];
        if (o->alias_of)
            continue;
        tsl_error_t e;
        if (opt_set(c, o, o->def ? o->def : "", &e) < 0 && o->def) {
            tessd_conf_free(c);
            return tsl_errprintf(err, "%s: bad default %s: %s", o->name, o->def, e.text);
        }
        if (!c->text[i] && !(c->text[i] = strdup(""))) {
            tessd_conf_free(c);
            return tsl_errprintf(err, "out of memory");
        }
    }
    /* libsched's own defaults, which the table repeats (t3100 checks they agree). */
    tsched_sched_config_t sc;
    tsched_sched_config_default(&sc);
    if (c->min_runtime != sc.min_runtime || (double)c->reserve_after != sc.reserve_after) {
        tessd_conf_free(c);
        return tsl_errprintf(err, "the table's min-runtime or reserve-after is not libsched's");
    }
    return 0;
}

void tessd_conf_free(tessd_conf_t *c)
{
    if (!c->text)
        return;
    for (size_t i = 0; i < tessd_nopts; i++)
        free(c->text[i]);
    free(c->text);
    c->text = NULL;
}

int tessd_conf_set(tessd_conf_t *c, const char *name, const char *value, bool from_file,
                   tsl_error_t *err)
{
    const tessd_opt_t *o = opt_find(name);
    if (!o || (from_file && (o->flags & FLAG)))
        return tsl_errprintf(err, "%s: unknown key", name);
    const tessd_opt_t *target = o->alias_of ? opt_find(o->alias_of) : NULL;
    tsl_error_t e;
    if (opt_set(c, target ? target : o, target ? o->flag_value : value, &e) < 0)
        return tsl_errprintf(err, "%s: %s", name, e.text);
    return 0;
}

/* The file reader: libinih's handler gets no line number, so the reader counts them. */
typedef struct {
    FILE *f;
    int line;
    bool too_long;
    tessd_conf_t *c;
    bool *seen;
    int err_line;
    tsl_error_t err;
} file_ctx_t;

static char *file_reader(char *str, int num, void *stream)
{
    file_ctx_t *x = stream;
    if (!fgets(str, num, x->f))
        return NULL;
    x->line++;
    size_t n = strlen(str);
    if (n == (size_t)num - 1 && str[n - 1] != '\n' && !feof(x->f) && !x->err_line) {
        x->err_line = x->line;
        tsl_errprintf(&x->err, "line longer than %d bytes", num - 2);
    }
    /* No continuation lines: an indented line is a line of its own (libinih would append it
     * to the value above). */
    size_t sp = strspn(str, " \t");
    memmove(str, str + sp, n - sp + 1);
    if (str[0] == '[' && !x->err_line) {
        x->err_line = x->line;
        tsl_errprintf(&x->err, "%.*s: the file has no sections", (int)strcspn(str, "\r\n"), str);
    }
    return str;
}

static int file_handler(void *user, const char *section, const char *name, const char *value)
{
    file_ctx_t *x = user;
    if (x->err_line)
        return 1;
    tsl_error_t e;
    {
        const tessd_opt_t *o = opt_find(name);
        size_t i = o ? (size_t)(o - tessd_opts) : 0;
        if (o && x->seen[i] && !(o->flags & FLAG)) {
            tsl_errprintf(&e, "%s: given twice", name);
        } else if (tessd_conf_set(x->c, name, value, true, &e) == 0) {
            x->seen[i] = true;
            return 1;
        }
    }
    x->err_line = x->line;
    x->err = e;
    return 0;
}

int tessd_conf_load_file(tessd_conf_t *c, const char *path, tsl_error_t *err)
{
    file_ctx_t x = {.c = c};
    x.f = fopen(path, "re");
    if (!x.f)
        return tsl_errprintf(err, "%s: %s", path, strerror(errno));
    x.seen = calloc(tessd_nopts, sizeof *x.seen);
    if (!x.seen) {
        fclose(x.f);
        return tsl_errprintf(err, "out of memory");
    }
    /* Parse into a copy: a bad file leaves c as it was. */
    tessd_conf_t tmp = *c;
    tmp.text = calloc(tessd_nopts, sizeof *tmp.text);
    int rc = tmp.text ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < tessd_nopts; i++)
        if (c->text[i] && !(tmp.text[i] = strdup(c->text[i])))
            rc = -1;
    if (rc < 0) {
        tessd_conf_free(&tmp);
        free(x.seen);
        fclose(x.f);
        return tsl_errprintf(err, "out of memory");
    }
    x.c = &tmp;
    int line = ini_parse_stream(file_reader, &x, file_handler, &x);
    bool read_err = ferror(x.f);
    fclose(x.f);
    free(x.seen);
    if (x.err_line && (line <= 0 || x.err_line <= line))
        rc = tsl_errprintf(err, "%s:%d: %s", path, x.err_line, x.err.text);
    else if (line > 0)
        rc = tsl_errprintf(err, "%s:%d: expected KEY = VALUE", path, line);
    else if (line < 0 || read_err)
        rc = tsl_errprintf(err, "%s: cannot read it", path);
    if (rc < 0) {
        tessd_conf_free(&tmp);
        return -1;
    }
    tessd_conf_free(c);
    *c = tmp;
    return 0;
}

int tessd_check_root_owned(const char *path, const char *what, tsl_error_t *err)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        slash[1] = '\0';
    else if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    const char *paths[2] = {path, dir};
    for (int k = 0; k < 2; k++) {
        struct stat st;
        if (stat(paths[k], &st) < 0)
            return tsl_errprintf(err, "%s: %s", paths[k], strerror(errno));
        if (st.st_uid != 0 || (st.st_mode & 022))
            return tsl_errprintf(err,
                                 "%s: %s%s must be owned by root and writable by no one else "
                                 "(it is uid %u, mode %04o)",
                                 paths[k], what, k ? "'s directory" : "", (unsigned)st.st_uid,
                                 (unsigned)(st.st_mode & 07777));
    }
    return 0;
}

int tessd_check_submitter(const char *sub, bool as_root, tsl_error_t *err)
{
    struct stat st;
    if (stat(sub, &st) < 0)
        return tsl_errprintf(err, "%s: %s", sub, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return tsl_errprintf(err, "%s: not a regular file", sub);
    if (!as_root)
        return access(sub, X_OK) == 0 ? 0 : tsl_errprintf(err, "%s: %s", sub, strerror(errno));
    if (tessd_check_root_owned(sub, "tessel-slurm-submit", err) < 0)
        return -1;
    if (!(st.st_mode & S_IXOTH))
        return tsl_errprintf(err,
                             "%s: tessel-slurm-submit must be executable by others (mode %04o; "
                             "0711 as installed)",
                             sub, (unsigned)(st.st_mode & 07777));
    return 0;
}

int tessd_args_parse(int argc, char **argv, tessd_args_t *args, tsl_error_t *err)
{
    enum { A_CONFIG = 1000, A_CHECK, A_HELP, A_VERSION };
    memset(args, 0, sizeof *args);
    struct option *lo = calloc(tessd_nopts + 5, sizeof *lo);
    args->name = calloc((size_t)argc + 1, sizeof *args->name);
    args->val = calloc((size_t)argc + 1, sizeof *args->val);
    if (!lo || !args->name || !args->val) {
        free(lo);
        tessd_args_free(args);
        return tsl_errprintf(err, "out of memory");
    }
    size_t k = 0;
    for (size_t i = 0; i < tessd_nopts; i++) {
        const tessd_opt_t *o = &tessd_opts[i];
        bool bare = o->type == T_BOOL || o->alias_of;
        lo[k++] = (struct option){o->name, bare ? no_argument : required_argument, NULL, (int)i};
    }
    lo[k++] = (struct option){"config", required_argument, NULL, A_CONFIG};
    lo[k++] = (struct option){"check-config", no_argument, NULL, A_CHECK};
    lo[k++] = (struct option){"help", no_argument, NULL, A_HELP};
    lo[k++] = (struct option){"version", no_argument, NULL, A_VERSION};
    int c, rc = 0;
    const char *mode = NULL;
    optind = 1;
    while (rc == 0 && (c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        if (c == A_CONFIG) {
            args->config = optarg;
        } else if (c == A_CHECK) {
            args->check_config = true;
        } else if (c == A_HELP || c == A_VERSION) {
            *(c == A_HELP ? &args->help : &args->version) = true;
            rc = 1;
        } else if (c >= 0 && (size_t)c < tessd_nopts) {
            const tessd_opt_t *o = &tessd_opts[c];
            const char *v = o->alias_of ? o->flag_value : optarg ? optarg : "yes";
            if (o->alias_of && strcmp(o->alias_of, "mode") == 0) {
                if (mode && strcmp(mode, v) != 0)
                    rc = tsl_errprintf(err, "give one of --system and --personal");
                mode = v;
            }
            args->name[args->n] = o->name;
            args->val[args->n++] = o->alias_of ? NULL : v;
        } else {
            rc = -1;
            err->text[0] = '\0'; /* getopt said it */
        }
    }
    if (rc == 0 && optind < argc)
        rc = tsl_errprintf(err, "%s: unexpected argument", argv[optind]);
    free(lo);
    if (rc < 0)
        tessd_args_free(args);
    return rc;
}

void tessd_args_free(tessd_args_t *args)
{
    free(args->name);
    free(args->val);
    args->name = args->val = NULL;
    args->n = 0;
}

int tessd_conf_apply_args(tessd_conf_t *c, const tessd_args_t *args, tsl_error_t *err)
{
    for (size_t i = 0; i < args->n; i++) {
        tsl_error_t e;
        if (tessd_conf_set(c, args->name[i], args->val[i], false, &e) < 0)
            /* "NAME: why" -> "--NAME VALUE: why" */
            return tsl_errprintf(err, "--%s%s%s: %s", args->name[i], args->val[i] ? " " : "",
                                 args->val[i] ? args->val[i] : "",
                                 e.text + strlen(args->name[i]) + 2);
    }
    return 0;
}

int tessd_conf_check(const tessd_conf_t *c, tsl_error_t *err)
{
    if (c->no_socket && c->no_listen)
        return tsl_errprintf(err, "--no-socket and --no-listen leave no way to reach tesseld");
    if (c->no_socket && c->socket[0])
        return tsl_errprintf(err, "give one of --socket and --no-socket");
    if (c->slurm) {
        /* The commands tesseld runs, by absolute path (never found through a PATH). */
        static const char *const cmds[] = {"sbatch", "squeue", "scancel", "scontrol", "sinfo"};
        for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
            char path[PATH_MAX + 16];
            snprintf(path, sizeof path, "%s/%s", c->slurm_bin, cmds[i]);
            if (access(path, X_OK) < 0)
                return tsl_errprintf(err, "--slurm: %s: %s (--slurm-bin)", path, strerror(errno));
        }
        if (c->slurm_conf[0] && access(c->slurm_conf, R_OK) < 0)
            return tsl_errprintf(err, "--slurm-conf %s: %s", c->slurm_conf, strerror(errno));
        /* Slurm reads '%' in --output as a pattern (%j, %u, ...). */
        if (strchr(c->slurm_output_dir, '%') || strchr(c->data_dir, '%'))
            return tsl_errprintf(err, "--slurm: the output directory's path must not hold '%%'");
    }
    return 0;
}

void tessd_conf_print(const tessd_conf_t *c, void *file)
{
    for (size_t i = 0; i < tessd_nopts; i++)
        if (!(tessd_opts[i].flags & FLAG))
            fprintf(file, "%s = %s\n", tessd_opts[i].name, c->text[i] ? c->text[i] : "");
}

void tessd_conf_diff(const tessd_conf_t *a, const tessd_conf_t *b, void (*fn)(size_t i, void *ud),
                     void *ud)
{
    for (size_t i = 0; i < tessd_nopts; i++)
        if (!tessd_opts[i].alias_of &&
            strcmp(a->text[i] ? a->text[i] : "", b->text[i] ? b->text[i] : "") != 0)
            fn(i, ud);
}

void tessd_conf_take(tessd_conf_t *to, const tessd_conf_t *from, size_t i)
{
    const tessd_opt_t *o = &tessd_opts[i];
    memcpy((char *)to + o->off, (const char *)from + o->off, o->size);
    if (o->type == T_CUSTOM && o->set == set_disk_reserve)
        to->disk_reserve_pct = from->disk_reserve_pct;
    char *dup = strdup(from->text[i] ? from->text[i] : "");
    if (dup) {
        free(to->text[i]);
        to->text[i] = dup;
    }
}
