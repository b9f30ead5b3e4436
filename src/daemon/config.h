/* config.h - tesseld's settings: ONE table of options (config.c) that drives both the command
 * line (--NAME VALUE) and the configuration file (NAME = VALUE, INI read by libinih).
 *
 * Order of a start (main.c) and of a reload (SIGHUP):
 *   tessd_conf_defaults(c)             every option at its table default
 *   tessd_conf_load_file(c, path)      the file, if any (errors name file, line and key)
 *   tessd_conf_apply_args(c, args)     the command line over it (flags override the file)
 *   tessd_conf_check(c)                what involves several options
 * tessd_conf_args() reads argv once (getopt_long, built from the same table) and keeps the
 * flags given, so that a reload applies them again over the new file.
 *
 * Adding an option: one entry in tessd_opts[] (config.c) with a field of tessd_conf_t, a line
 * in usage() (main.c), a key in etc/tesseld.conf (t3100 checks it is there), and, when it can
 * change without a restart, TESSD_OPT_LIVE and its application in tessd_conf_apply_live.
 */
#ifndef TESSEL_DAEMON_CONFIG_H
#define TESSEL_DAEMON_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libutil/error.h"

/* Log levels, syslog's order (--log-level). */
typedef enum {
    TESSD_LOG_ERROR = 0,
    TESSD_LOG_WARNING,
    TESSD_LOG_INFO,
    TESSD_LOG_DEBUG,
} tessd_log_level_t;

/* Where tesseld's own messages go (--log). */
typedef enum { TESSD_LOGTO_AUTO = 0, TESSD_LOGTO_SYSLOG, TESSD_LOGTO_STDERR } tessd_log_to_t;

/* The default configuration file of each mode (personal: under $XDG_CONFIG_HOME or
 * ~/.config, read when present). */
#define TESSD_SYSTEM_CONFIG "/etc/tessel/tesseld.conf"

/* Every setting of tesseld, typed.  Strings "" = not given (the default is resolved at
 * start, e.g. paths next to the executable). */
typedef struct {
    int mode; /* 0 auto (by euid), 1 system, 2 personal */
    char data_dir[PATH_MAX];
    char socket[PATH_MAX];
    bool no_socket;
    int local_users;            /* 0 create, 1 existing */
    bool user_projects;         /* users (not only admins) may create projects (docs/projects.md) */
    char folder_root[PATH_MAX]; /* virtual folders' directories ("" = <data-dir>/folders) */
    char listen[128];
    bool no_listen;
    char services_listen[128]; /* a job's web services' listener ("" = none) */
    char services_domain[104]; /* their host names' domain: j<ID>-<NAME>.<this> */
    char fake_gpus[256];
    char fake_gpus_if_none[256];
    char fake_lib_dir[PATH_MAX];
    char nvml[PATH_MAX];
    char interposer[PATH_MAX];
    char shim[PATH_MAX];
    char haproxy[PATH_MAX]; /* the inference services' proxy (docs/serving.md) */
    char policy[64];
    char cgroup_root[PATH_MAX];
    bool no_cgroups;
    char web_root[PATH_MAX];
    double min_runtime;    /* s */
    int64_t reserve_after; /* s */
    int durability;        /* 0 normal, 1 full */
    bool allow_root_jobs;
    int gpu_mem_violation; /* 0 kill, 1 suspend */
    bool allow_user_namespaces;
    uint64_t log_limit;
    int64_t kill_wait;         /* s */
    int64_t job_log_retention; /* s, 0 = keep */
    int64_t history_interval;  /* s: usage history sampling (histagg.h) */
    int64_t history_retention; /* s */
    int log_to;                /* tessd_log_to_t */
    int log_level;             /* tessd_log_level_t */
    unsigned long max_connections, max_per_client, request_timeout;
    unsigned long max_services_per_user; /* inference services one user may own (0: none) */
    int64_t term_idle_timeout;   /* s: a terminal WebSocket with no traffic this long closes */
    unsigned long term_per_user; /* terminal WebSockets of one user at once */
    int64_t interactive_idle;    /* s: a job with services idle this long is cancelled (0: never) */
    int64_t idle_reclaim_min;    /* s: the shortest idle_reclaim a job may give itself (0: none) */
    unsigned long ckpt_copies_per_gpu; /* checkpoint copies on one GPU at once (ckptslot.h) */
    uint64_t max_body;
    double submit_rate, admin_submit_rate;
    unsigned long submit_burst;
    uint64_t disk_reserve;   /* bytes, 0 with a percentage */
    double disk_reserve_pct; /* 0 with a size */
    /* --slurm (docs/slurm-backend.md) */
    bool slurm;
    char slurm_conf[PATH_MAX];
    char slurm_bin[PATH_MAX];
    unsigned long slurm_shards, slurm_poll, slurm_timeout;
    unsigned long slurm_node_port, slurm_node_poll; /* the nodes' exporters (slurmnodes.h) */
    char slurm_output_dir[PATH_MAX];
    char gpu_speeds[1024];   /* MODEL=SPEED,... (gpuspeed.h, tessd_speeds_lookup) */
    char slurm_submit[16];   /* auto, libslurm or sbatch (docs/slurm-backend.md) */
    char slurm_queues[1024]; /* QUEUE=PARTITION[,QOS] ... (slurmjob.h, tsj_parse_qmap) */
    char test_kill_at[16];
    bool test_start_files; /* --test-start-files: start jobs as 7fa4294 did (launch.c) */
    unsigned long test_tick_ms, test_pass_gap_ms, test_retention_step, test_psusp_ckpt_ms;
    /* The normalised text of each option's value, in table order (for --check-config and to
     * tell what a reload changes); owned, freed by tessd_conf_free. */
    char **text;
} tessd_conf_t;

enum {
    TESSD_OPT_LIVE = 1,      /* a reload (SIGHUP) applies it; else it needs a restart */
    TESSD_OPT_FLAG_ONLY = 2, /* not a key of the file (the --test-* options, aliases) */
};

typedef struct tessd_opt tessd_opt_t; /* config.c */
extern const size_t tessd_nopts;
/* Name (flag and key), flags (TESSD_OPT_*) and default text of option i, for tests. */
const char *tessd_opt_name(size_t i);
unsigned tessd_opt_flags(size_t i);
const char *tessd_opt_default(size_t i);

/* Every option at its default.  0, or -1 (out of memory) with err. */
int tessd_conf_defaults(tessd_conf_t *c, tsl_error_t *err);
void tessd_conf_free(tessd_conf_t *c);

/* Set one option by name from text (a key of the file, or a flag's name without "--").  0,
 * or -1 with err = "NAME: why" (unknown name, bad value). */
int tessd_conf_set(tessd_conf_t *c, const char *name, const char *value, bool from_file,
                   tsl_error_t *err);

/* Read an INI file: NAME = VALUE lines, '#' or ';' comments, no sections.  An unknown key,
 * a key given twice, a bad value or a malformed line is an error "PATH:LINE: KEY: why".
 * Values already in c stay for the keys the file does not give.  0, or -1 with err. */
int tessd_conf_load_file(tessd_conf_t *c, const char *path, tsl_error_t *err);

/* path and its directory are root's and writable by no one else: the configuration file as
 * root (whoever could write it could choose the interposer and the shim root runs), and an
 * explicit --shim or --interposer in system mode.  0, or -1 with err "PATH: WHAT[' s
 * directory] must be owned by root ...". */
int tessd_check_root_owned(const char *path, const char *what, tsl_error_t *err);

/* Whether tesseld may start sub (tessel-slurm-submit) as every account that submits: a regular
 * file; as_root (tesseld is root) also root's and writable by no one else, in a directory of
 * the same kind (tessd_check_root_owned, as the Slurm commands), and executable by others
 * (installed 0711); else executable by tesseld (review of the submitter, 2026-11-28, L2).  0,
 * or -1 with err. */
int tessd_check_submitter(const char *sub, bool as_root, tsl_error_t *err);

/* The command line. */
typedef struct {
    const char *config;       /* --config FILE, or NULL */
    bool check_config;        /* --check-config */
    bool help, version;       /* --help, --version */
    size_t n;                 /* flags given, in order */
    const char **name, **val; /* each flag's option name and value ("yes" for a bare flag) */
} tessd_args_t;

/* Parse argv with getopt_long (options built from the table).  0; 1 after --help or
 * --version; -1 (usage error: the message is printed by getopt or in err).  args owns
 * arrays freed by tessd_args_free; the strings are argv's. */
int tessd_args_parse(int argc, char **argv, tessd_args_t *args, tsl_error_t *err);
void tessd_args_free(tessd_args_t *args);
/* Apply the flags to c (after the file).  0, or -1 with err = "--NAME VALUE: why". */
int tessd_conf_apply_args(tessd_conf_t *c, const tessd_args_t *args, tsl_error_t *err);

/* What involves several options (--no-socket with --no-listen, ...).  0, or -1 with err. */
int tessd_conf_check(const tessd_conf_t *c, tsl_error_t *err);

/* Print "NAME = VALUE" for each option of the file, one a line. */
void tessd_conf_print(const tessd_conf_t *c, void *file);

/* Options whose value differs between a and b: calls fn(i, ud) for each. */
void tessd_conf_diff(const tessd_conf_t *a, const tessd_conf_t *b, void (*fn)(size_t i, void *ud),
                     void *ud);

/* Option i of from into to (value and text): a live option a reload applies. */
void tessd_conf_take(tessd_conf_t *to, const tessd_conf_t *from, size_t i);

#endif
