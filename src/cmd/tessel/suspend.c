/* suspend.c - `tessel suspend` and `tessel resume`: hold a running job's GPU work and let it go
 * on (POST /v1/jobs/ID/suspend, .../resume).  With --wait, `suspend` polls GET /v1/jobs/ID until
 * the job's slice reports "drained" (nothing of it in flight on the GPU), or --timeout. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cmd/tessel/cli.h"
#include "libutil/size.h"

/* Default --timeout: a drain waits for the kernels already queued, normally milliseconds to
 * a few seconds; a minute covers long kernels without leaving a script hanging for ever. */
#define SUSPEND_WAIT_DEFAULT_S 60
#define SUSPEND_WAIT_MAX_S     86400
/* Poll period of --wait: one small GET; a person does not notice 100 ms. */
#define SUSPEND_POLL_MS 100

static void usage_suspend(FILE *f)
{
    fprintf(f,
            "usage: tessel suspend [--wait [--timeout SECONDS]] [--json] JOB...\n"
            "Suspend running jobs' GPU work: their new kernel launches wait inside\n"
            "libtessel-cuda (no signal is sent), the work already queued drains; the jobs keep\n"
            "their processes, GPU memory and place.  `tessel resume` lets them go on.\n"
            "Under tesseld's Slurm mode, Slurm suspends the job (scontrol suspend: its\n"
            "processes are stopped on its node, it keeps its allocation).\n"
            "Prints one line per job; exit status 1 if any could not be suspended (unknown,\n"
            "another user's, not running, no GPU slice) or, with --wait, did not drain.\n"
            "\n"
            "  --wait           wait until nothing of the job is in flight on the GPU\n"
            "  --timeout SECONDS  with --wait, give up after this long (default %d)\n"
            "  --json           print the job objects as the API answers them\n",
            SUSPEND_WAIT_DEFAULT_S);
}

static void usage_resume(FILE *f)
{
    fprintf(f, "usage: tessel resume [--json] JOB...\n"
               "Resume suspended jobs: their held kernel launches go on.  Prints one line per\n"
               "job; exit status 1 if any could not be resumed (unknown, another user's, not\n"
               "suspended).\n"
               "\n"
               "  --json           print the job objects as the API answers them\n");
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Poll job id until drained; *job is replaced by the latest answer.  0, or -1 after printing
 * why (timeout, the job no longer suspended, an error). */
static int wait_drained(cli_t *cli, long long id, json_t **job, int64_t timeout_s)
{
    double end = now_s() + (double)timeout_s;
    char path[96];
    snprintf(path, sizeof path, "/v1/jobs/%lld", id);
    for (;;) {
        const char *st = json_string_value(json_object_get(*job, "state"));
        if (!st || strcmp(st, "suspended") != 0) {
            cli_fail("job %lld: no longer suspended (%s) before it drained", id, st ? st : "?");
            return -1;
        }
        /* null: nothing of a slice to drain (tesseld --slurm: Slurm stopped the processes). */
        json_t *dr = json_object_get(*job, "drained");
        if (json_is_true(dr) || json_is_null(dr))
            return 0;
        if (now_s() >= end) {
            cli_fail("job %lld: suspended, but its GPU work had not drained after %lld s", id,
                     (long long)timeout_s);
            return -1;
        }
        struct timespec ts = {0, SUSPEND_POLL_MS * 1000000L};
        nanosleep(&ts, NULL);
        tsl_error_t err;
        json_t *next;
        if (tclient_request(cli->client, "GET", path, NULL, &next, &err) < 0) {
            cli_fail("job %lld: %s", id, err.text);
            return -1;
        }
        json_decref(*job);
        *job = next;
    }
}

struct done_arg {
    bool suspend, wait;
    int64_t timeout;
};

static bool done(cli_t *cli, long long id, json_t **job, void *arg)
{
    const struct done_arg *a = arg;
    if (a->wait && wait_drained(cli, id, job, a->timeout) < 0)
        return false;
    if (cli->json)
        return true;
    const char *st = json_string_value(json_object_get(*job, "state"));
    json_int_t rel = json_integer_value(json_object_get(*job, "gpu_released"));
    char sz[32];
    if (!a->suspend && st && strcmp(st, "suspended") == 0) {
        /* Its GPU memory was given back: restored once its GPU has room (docs/suspend.md). */
        const char *why = json_string_value(json_object_get(*job, "reason"));
        printf("job %lld: resume asked (%s)\n", id, why ? why : "waiting for its GPU");
    } else if (!a->suspend)
        printf("job %lld: resumed\n", id);
    else if (rel > 0)
        printf("job %lld: suspended (gpu released %s)\n", id,
               tsl_format_size((uint64_t)rel, sz, sizeof sz));
    else if (json_is_null(json_object_get(*job, "drained")))
        printf("job %lld: suspended\n", id); /* tesseld --slurm: by Slurm, on its node */
    else
        printf("job %lld: suspended (%s)\n", id,
               json_is_true(json_object_get(*job, "drained")) ? "drained" : "draining");
    return true;
}

static int run(cli_t *cli, int argc, char **argv, bool suspend)
{
    enum { O_TIMEOUT = 256 };
    static const struct option sopts[] = {
        {"json", no_argument, NULL, CLI_OPT_JSON},
        {"wait", no_argument, NULL, 'w'},
        {"timeout", required_argument, NULL, O_TIMEOUT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static const struct option ropts[] = {
        {"json", no_argument, NULL, CLI_OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool wait = false, timeout_given = false;
    int64_t timeout = SUSPEND_WAIT_DEFAULT_S;
    tsl_error_t err;
    int c, rc;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", suspend ? sopts : ropts, NULL)) != -1) {
        switch (c) {
        case 'w':
            wait = true;
            break;
        case O_TIMEOUT:
            if (cli_parse_int(optarg, 1, SUSPEND_WAIT_MAX_S, &timeout, &err) < 0)
                return cli_usage(cli, "--timeout: %s", err.text);
            timeout_given = true;
            break;
        default:
            if ((rc = cli_common_option(cli, c, argc, argv,
                                        suspend ? usage_suspend : usage_resume)) >= 0)
                return rc;
        }
    }
    if (timeout_given && !wait)
        return cli_usage(cli, "--timeout needs --wait");
    struct done_arg a = {suspend, wait, timeout};
    return cli_job_action(cli, argc, argv, optind, suspend ? "suspend" : "resume", done, &a);
}

int cmd_suspend(cli_t *cli, int argc, char **argv)
{
    return run(cli, argc, argv, true);
}

int cmd_resume(cli_t *cli, int argc, char **argv)
{
    return run(cli, argc, argv, false);
}
