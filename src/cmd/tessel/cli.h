/* cli.h - what the `tessel` subcommands share: the context (configuration, connection,
 * --json), exit codes, argument parsers, output helpers (tables, sizes, GPU shares).
 *
 * Exit codes (docs/cli.md): 0 success, 1 error (one line on stderr: "tessel: MESSAGE"),
 * 2 usage error.  `tessel run` in the foreground exits with the job's own status instead:
 * its exit code, 128+N when a signal N killed it, and TESSEL_EXIT_* below when it never ran
 * to an end of its own.
 */
#ifndef TESSEL_CMD_CLI_H
#define TESSEL_CMD_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "libutil/error.h"
#include "tessel/client.h"

enum {
    CLI_OK = 0,
    CLI_ERR = 1,
    CLI_USAGE = 2,
    /* `tessel run` (foreground), when the job did not end by itself: */
    TESSEL_EXIT_PREEMPTED = 123, /* the scheduler stopped it to make room */
    TESSEL_EXIT_CANCELLED = 124, /* cancelled (`tessel kill`, an admin, Ctrl-C) */
    TESSEL_EXIT_NOSTART = 125,   /* it could not start (exec failed, tesseld stopped meanwhile) */
};

typedef struct {
    tclient_config_t cfg;
    tclient_t *client; /* made by cli_connect */
    bool json;         /* --json: print the API's JSON */
    const char *cmd;   /* subcommand name, for messages */
} cli_t;

typedef struct {
    const char *name;
    int (*fn)(cli_t *cli, int argc, char **argv);
    const char *summary;
} cli_command_t;

/* Subcommands (one file each).  argv[0] is the subcommand's name. */
int cmd_run(cli_t *cli, int argc, char **argv);
int cmd_ps(cli_t *cli, int argc, char **argv);
int cmd_logs(cli_t *cli, int argc, char **argv);
int cmd_kill(cli_t *cli, int argc, char **argv);
int cmd_show(cli_t *cli, int argc, char **argv);
int cmd_suspend(cli_t *cli, int argc, char **argv);
int cmd_resume(cli_t *cli, int argc, char **argv);
int cmd_gpus(cli_t *cli, int argc, char **argv);
int cmd_nodes(cli_t *cli, int argc, char **argv);
int cmd_images(cli_t *cli, int argc, char **argv);
int cmd_slurm_conf(cli_t *cli, int argc, char **argv);
int cmd_queues(cli_t *cli, int argc, char **argv);
int cmd_gpu_models(cli_t *cli, int argc, char **argv);
int cmd_users(cli_t *cli, int argc, char **argv);
int cmd_tokens(cli_t *cli, int argc, char **argv);
int cmd_login(cli_t *cli, int argc, char **argv);
int cmd_whoami(cli_t *cli, int argc, char **argv);
int cmd_projects(cli_t *cli, int argc, char **argv);
int cmd_attach(cli_t *cli, int argc, char **argv);
int cmd_exec(cli_t *cli, int argc, char **argv);
int cmd_shell(cli_t *cli, int argc, char **argv);
/* open.c: a job's web services (docs/job-services.md). */
int cmd_open(cli_t *cli, int argc, char **argv);
int cmd_notebook(cli_t *cli, int argc, char **argv);

/* ---- a job's terminal (attach.c, docs/terminal.md) ---- */

/* Attach this terminal to job id's (the job must be running and have one): raw mode when
 * stdin is a terminal, our window size sent at once and at each SIGWINCH, Ctrl-P Ctrl-Q
 * detaches; with input, stdin's bytes go to the job (when stdin is not a terminal, its end is
 * sent as one Ctrl-D).  Returns the job's exit status (cli.h: code, 128+signal) when it ended
 * while attached, CLI_OK after a detach, CLI_ERR after printing why it failed, or
 * CLI_TERM_GONE (nothing printed) when tesseld answered that the job has finished or is not
 * running any more. */
#define CLI_TERM_GONE (-2)
/* With argv (argc strings; NULL: attach), a new process in the job on a terminal of its own
 * (tessel exec): the same session, its status that process's. */
int cli_term_session(cli_t *cli, int64_t id, char *const *argv, int argc, bool input, bool quiet);
int cmd_folders(cli_t *cli, int argc, char **argv);
int cmd_serve(cli_t *cli, int argc, char **argv);
int cmd_services(cli_t *cli, int argc, char **argv);

/* ---- errors and connection (main.c) ---- */

/* Print "tessel: MESSAGE" on stderr; returns CLI_ERR. */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print "tessel CMD: MESSAGE (see 'tessel CMD --help')" on stderr; returns CLI_USAGE. */
int cli_usage(const cli_t *cli, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Open the connection from cli->cfg once; 0, or -1 after printing the error. */
int cli_connect(cli_t *cli);
/* A request through cli->client; on failure prints "tessel: MESSAGE" and returns -1. */
int cli_call(cli_t *cli, const char *method, const char *path, const json_t *body, json_t **answer);
/* Print j as indented JSON on stdout, with a newline. */
void cli_print_json(const json_t *j);
/* GET path for a command that prints a table or, with --json, the API's answer.  Returns the
 * answer (the caller prints its table and releases it); or NULL with *rc = CLI_OK when --json
 * printed it already, or with *rc = CLI_ERR after printing the error. */
json_t *cli_get(cli_t *cli, const char *path, int *rc);
/* Parse the options of a command that takes only --json and --help, and no argument; usage
 * prints its help.  Returns -1 to go on, else the exit status (help printed, usage error). */
int cli_json_only_args(cli_t *cli, int argc, char **argv, void (*usage)(FILE *f));
/* getopt_long's message for the option at optind-1, as one usage line; returns CLI_USAGE. */
int cli_bad_option(const cli_t *cli, int argc, char **argv, int opt);
/* The value of --json in every command's option table. */
#define CLI_OPT_JSON 'j'
/* The default branch of a command's getopt loop: CLI_OPT_JSON sets cli->json and returns -1
 * (go on); 'h' (--help) prints usage on stdout and returns CLI_OK; anything else is a usage
 * error (cli_bad_option, CLI_USAGE). */
int cli_common_option(cli_t *cli, int c, int argc, char **argv, void (*usage)(FILE *f));
/* Parse a command's options when it has only --json and --help, leaving its arguments from
 * optind on; returns -1 to go on, else the exit status (help printed, usage error). */
int cli_json_help_args(cli_t *cli, int argc, char **argv, void (*usage)(FILE *f));
/* Write all of data to the descriptor *(int *)arg (a tclient_write_fn); 0 or -1. */
int cli_write_fd(const char *data, size_t len, void *arg);
/* errno of a lost connection to tesseld (it restarts or stops): worth trying again. */
bool cli_conn_lost(int e);
/* After a job action's answer: may replace *job (a reference the caller releases), prints the
 * human line unless cli->json; false when the job counts as failed (why already printed). */
typedef bool (*cli_job_done_fn)(cli_t *cli, long long id, json_t **job, void *arg);
/* `tessel kill|suspend|resume JOB...`: every argv[first..argc) must be a job id (else a usage
 * error, nothing sent); then POST /v1/jobs/ID/<action> for each, done() on each answer, and
 * with --json the answers printed as one array.  CLI_OK, or CLI_ERR if any job failed. */
int cli_job_action(cli_t *cli, int argc, char **argv, int first, const char *action,
                   cli_job_done_fn done, void *arg);

/* ---- queues (queues.c) ---- */

/* "USED/GUARANTEE/LIMIT" of resource key ("gpu", "gpu_mem", "cpu", "mem") of a queue object
 * of the API, as `tessel queues` shows it ("-" for none). */
void cli_queue_res_cell(const json_t *q, const char *key, char *buf, size_t len);

/* A queue's use, as the columns GPU, GPU-MEM, CPU, MEM (cli_queue_res_cell), PENDING, RUNNING. */
typedef struct {
    char gpu[128], ngpu[128], gpu_mem[128], cpu[128], mem[128], pending[32], running[32];
} cli_queue_use_t;
void cli_queue_use(const json_t *q, cli_queue_use_t *u);

/* ---- tokens (tokens.c) ---- */

/* POST /v1/tokens for user (NULL: the caller's own) with label (may be NULL): the token
 * object (new reference; its "token" is the secret), or NULL after printing the error. */
json_t *cli_token_create(cli_t *cli, const char *user, const char *label);
/* Print a new token's secret, alone on a line on stdout. */
void cli_token_print_secret(const json_t *tok);

/* ---- parsing (args.c); each returns 0, or -1 with one line in err ---- */

/* --gpu: a share 0 < x <= 1 of one GPU in thousandths (at most 3 decimals), or a whole number
 * N >= 1 of GPUs.  *milli is x*1000 for a share, N*1000 for whole GPUs. */
int cli_parse_gpu(const char *s, int64_t *milli, tsl_error_t *err);
/* --gpus: a whole number 1..1024. */
int cli_parse_gpus(const char *s, int64_t *n, tsl_error_t *err);
/* --cpu: a number of cores > 0 (fractions allowed), at most 4096. */
int cli_parse_cpu(const char *s, double *cpu, tsl_error_t *err);
/* A size above 0 with a unit (tsl_parse_size_unit): "8" is an error that suggests "8G". */
int cli_parse_size(const char *s, uint64_t *bytes, tsl_error_t *err);
/* An integer in [lo, hi]. */
int cli_parse_int(const char *s, int64_t lo, int64_t hi, int64_t *v, tsl_error_t *err);
/* --class: interactive, training or inference. */
int cli_parse_class(const char *s, tsl_error_t *err);
/* A job id (integer >= 1). */
int cli_parse_id(const char *s, int64_t *id, tsl_error_t *err);
/* A job submitted to Slurm directly, as tesseld --slurm lists it: "slurm:N" (N >= 1, Slurm's
 * id, into *id).  0, or -1 (not such a name; nothing printed). */
int cli_parse_slurm_ref(const char *s, int64_t *id);
/* A job as `kill`, `suspend` and `resume` take it: an id, an array's element "40_3" (as
 * squeue shows it), or "slurm:N"; *id gets the id (the array's, for an element; Slurm's). */
int cli_parse_job_ref(const char *s, int64_t *id, tsl_error_t *err);

/* A queue's amount of GPUs or CPU cores: a number >= 0 with at most 3 decimals, in
 * thousandths. */
int cli_parse_amount(const char *s, int64_t *milli, tsl_error_t *err);
/* --guarantee / --limit of `tessel queues` (opt names the option in messages): "none", or
 * RES=VALUE[,RES=VALUE...] with RES gpu, gpu-mem, cpu or mem (gpu_mem also accepted) and VALUE
 * "none", an amount (gpu, cpu) or a size (gpu-mem, mem).  *out (new reference): JSON null for
 * "none", else an object with the API's members given ({"gpu": 1.5, "gpu_mem": 42949672960},
 * null for a "none" VALUE). */
int cli_parse_resources(const char *opt, const char *s, json_t **out, tsl_error_t *err);

/* ---- the job's environment (args.c) ---- */

/* One --env / --export item: KEY=VALUE, or KEY (copied from our environment: it must be set).
 * Refused: an empty or blank-holding KEY, and the names Tessel sets (tsl_env_reserved). */
int cli_env_item(const char *item, tsl_error_t *err);
/* Set a checked item in env (a JSON object); -1 when its value is not UTF-8. */
int cli_env_set(json_t *env, const char *item, tsl_error_t *err);
/* --env-file: KEY=VALUE (or KEY) lines, blank lines and # comments; CR-LF allowed.  Sets each
 * in env, in order.  A bad line fails as "FILE:LINE: why"; env may hold the lines before it. */
int cli_env_file(const char *path, json_t *env, tsl_error_t *err);
/* Copy envp ("K=V" strings, the caller's environment) into env, as `sbatch --export=ALL`
 * does, leaving out the names Tessel sets (tsl_env_reserved), our own TESSEL_URL,
 * TESSEL_TOKEN and TESSEL_CONFIG, the shell's own PWD, OLDPWD, SHLVL and _; and values that
 * are not UTF-8, which *skipped counts.  Returns 0. */
int cli_env_export_all(char *const *envp, json_t *env, size_t *skipped);
/* 0 when env is within tesseld's bounds (TSL_ENV_MAX_VARS, TSL_ENV_MAX_BYTES); else -1, E2BIG,
 * and a message that says how big it is and what to do. */
int cli_env_check_size(const json_t *env, tsl_error_t *err);

/* `tessel run`'s request, parsed from its arguments (run.c). */
typedef struct {
    int64_t gpu_milli;     /* -1: not given */
    int64_t gpus;          /* -1: not given */
    uint64_t gpu_mem, mem; /* 0: not given */
    uint64_t gpu_oversub;  /* --gpu-mem-oversubscribe, 0: none */
    bool gpu_oversub_set;  /* given (0 included): else the queue's (not sent) */
    double cpu;            /* 0: not given */
    const char *queue, *klass, *name, *cwd;
    const char *project; /* --project: NULL = the user's default project */
    const char *image;   /* --image NAME[:TAG]: run in a container (docs/containers.md) */
    /* --folder NAME[:ro] (repeatable): virtual folders mounted at /tessel/folders/NAME in the
     * job (docs/folders.md), nfolders of them, in order (room for argc in env_files' way). */
    const char **folders;
    int nfolders;
    int64_t priority;
    bool has_priority;
    bool detach, shell, quiet;
    bool no_requeue;          /* --no-requeue: "requeue": false */
    const char *preemptible;  /* --preemptible: "suspend", "requeue", "never"; NULL: not given */
    const char *idle_reclaim; /* --idle-reclaim: "off" or a duration; NULL: the queue's */
    char **env;               /* --env and --export items: KEY=VALUE or KEY (taken from our
                                 environment), nenv of them, in order */
    int nenv;
    const char **env_files; /* --env-file paths, nenv_files of them, in order */
    int nenv_files;
    bool no_env;             /* --no-env, --export=NONE: not the caller's environment */
    char *const *caller_env; /* the caller's environment (environ; tests set their own) */
    char **owned;            /* copies of --export values that env points into */
    int nowned;
    char **argv; /* the command, argc of them */
    int argc;
    /* Batch options (checked here with libutil/batchspec.h, sent as written): --time,
     * --after (or Slurm's --dependency), --array; NULL when not given. */
    const char *time_limit, *after, *array;
    /* -it (docs/terminal.md): the job gets a terminal (--tty) and this one is attached to it;
     * --interactive (-i) sends what is typed (without it, the terminal only shows). */
    bool tty, interactive;
    /* --service jupyter | NAME=PORT (docs/job-services.md), nservices of them (at most
     * RUN_SERVICES_MAX), as written. */
    const char *services[4];
    int nservices;
} run_opts_t;

#define RUN_SERVICES_MAX 4
/* The port Jupyter listens on in its job (the job's own network namespace: never taken by
 * another job), and the command `--service jupyter` runs without one given: Debian's
 * jupyter-notebook on 127.0.0.1 there, its token off because tesseld authenticates (only the
 * owner and admins reach it: docs/security.md), at the root of its own host name
 * (http://jID-jupyter.DOMAIN:PORT/). */
#define RUN_JUPYTER_PORT 8888
#define RUN_JUPYTER_CMD                                                                            \
    "exec jupyter-notebook --no-browser --ip=127.0.0.1 --port=8888 --NotebookApp.token= "          \
    "--NotebookApp.password= --NotebookApp.allow_remote_access=True"

/* `tessel run --service` and `tessel notebook`: print, on stderr, a URL that opens each of job
 * id's services (a ticket each, good for 30 s: tessel open gives new ones).  Nothing for a job
 * without services, or one that is not running. */
void run_print_service_urls(cli_t *cli, int64_t id);

/* Parse `run`'s arguments (argv[0] = "run").  Returns 0, CLI_USAGE after printing one usage
 * line, or -1 when --help was printed.  opts->env is allocated: run_opts_free. */
int run_parse(cli_t *cli, int argc, char **argv, run_opts_t *opts);
void run_opts_free(run_opts_t *opts);
/* The POST /v1/jobs body for opts (new reference), or NULL with err. */
json_t *run_request(const run_opts_t *opts, tsl_error_t *err);
/* The exit status `tessel run` reports for a finished job object. */
int run_exit_status(const json_t *job);

/* ---- output (fmt.c) ---- */

/* milli-GPUs as a person writes them: 500 -> "0.5", 1000 -> "1", 2000 -> "2", 125 -> "0.125". */
char *cli_format_milli(int64_t milli, char *buf, size_t len);
/* A job's state for people: "pending", or "pending (requeued ×2)" for a job the scheduler
 * preempted and put back twice; a finished one "succeeded (preempted ×1)"; a suspended one
 * "suspended (drained)" or "suspended (draining)".  Returns buf. */
char *cli_format_state(const json_t *job, char *buf, size_t len);
/* Seconds as a short age: "12s", "5m", "3h", "2d". */
char *cli_format_age(int64_t secs, char *buf, size_t len);
/* A setting a queue inherits down the tree, as a cell of `tessel queues` (IDLE, OVERSUB):
 * value, the setting in effect as people read it ("30m", "off", "8.0 GiB", "none"), then in
 * brackets the queue it is set on (from, at most 64 characters of it) when that is not the
 * row's queue itself: "30m(org)"; none ("-", or what an older tesseld's answer gives) when
 * from is NULL (no queue on its path sets one, or the API names none).  Returns buf. */
char *cli_format_inherited(const char *value, const char *from, const char *queue, const char *none,
                           char *buf, size_t len);
/* Parse an API time ("2026-11-21T19:40:03.512Z") into Unix seconds; -1 if not one. */
int64_t cli_parse_time(const char *s);

/* Text from the API (names, commands, messages: anyone's input) made safe to print on a
 * terminal: C0 controls and DEL become \n, \t, \r or \xHH; C1 controls and the bidirectional
 * overrides/isolates (U+200E/F, U+202A-E, U+2066-9) \uHHHH; each byte that is not part of valid
 * UTF-8 \xHH.  Printable ASCII and other valid UTF-8 are kept; a backslash is kept as is.
 * NULL reads as "".  Returns a malloc'd string (the caller frees it); aborts when out of memory.
 * Tables escape every cell; --json output is never escaped (it is exact). */
char *cli_escape(const char *s);

typedef struct cli_table cli_table_t;
/* A table with ncols columns; headers prefixed with '>' are right-aligned (numbers). */
cli_table_t *cli_table_new(int ncols, const char *const *headers);
/* Append a row: ncols strings (NULL prints as "-"); they are copied, escaped (cli_escape). */
void cli_table_add(cli_table_t *t, const char *const *cells);
/* Print with columns padded to their widest cell, two spaces apart; then free. */
void cli_table_print(cli_table_t *t, FILE *f);
void cli_table_free(cli_table_t *t);

#endif
