/* ps.c - `tessel ps`: the caller's jobs (an admin's: everyone's) as a table, active ones by
 * default, finished ones too with -a (GET /v1/jobs). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd/tessel/cli.h"
#include "libutil/size.h"

/* Jobs per request: the API's largest page. */
#define PS_PAGE 10000
/* Widest COMMAND cell: the table stays on one line of a wide terminal. */
#define PS_COMMAND_WIDTH 40
/* Widest REASON cell: long enough for the figures of every reason tesseld gives (a reason with
 * four job ids is about 120 characters); the whole text is in --json and GET /v1/jobs/ID. */
#define PS_REASON_WIDTH 120

/* Jobs `ps -a` shows without --limit: the newest ones, enough for a screen or two; older ones
 * take --limit (or --json and paging through the API). */
#define PS_ALL_DEFAULT_LIMIT 100
/* Most jobs --limit may ask for. */
#define PS_MAX_LIMIT 1000000

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: tessel ps [-a] [--state STATES] [--limit N] [--user NAME] [--queue NAME]\n"
        "                 [--project NAME] [--json]\n"
        "List jobs: pending and running ones; with -a, finished ones too.\n"
        "A user sees only their own jobs, an admin everyone's; with --project, a member or\n"
        "viewer of a project that shares its jobs sees everyone's jobs of the project.\n"
        "Under tesseld's Slurm mode, -a also lists the jobs submitted to Slurm directly\n"
        "(sbatch), read-only, as slurm:N.\n"
        "\n"
        "  -a, --all        include finished jobs (the newest %d, see --limit)\n"
        "  --state STATES   only jobs in these states, comma-separated: pending, running,\n"
        "                   suspended, succeeded, failed, cancelled, preempted, or active,\n"
        "                   finished (a finished state lists the newest %d, see --limit);\n"
        "                   running includes the suspended jobs; `--state suspended` lists\n"
        "                   suspended and reclaimed jobs, with the GPU memory they gave back\n"
        "  --limit N        only the newest N jobs (default: every active job; with -a, %d)\n"
        "  --user NAME      only this user's jobs (admin)\n"
        "  --queue NAME     only this queue's jobs\n"
        "  --project NAME   only this project's jobs (docs/projects.md)\n"
        "  --json           print the API's JSON ({\"jobs\": [...]}, oldest first)\n"
        "\n"
        "STATE ends with '(requeued \u00d7N)' for a job the scheduler preempted N times and put\n"
        "back in its queue ('(preempted \u00d7N)' once it has finished).\n"
        "REASON says why a pending job waits, starting with its code (Resources, Priority,\n"
        "QueueLimit, GuaranteeLimit, Guarantee, Preempting, Reservation, Dependency; see\n"
        "docs/scheduler-queues.md), and how a finished job ended.\n"
        "SERVICES (when a job listed has any) gives each web service's name and URL; `tessel\n"
        "open JOB NAME` prints one that opens it in a browser (docs/job-services.md); and for a\n"
        "running job with a terminal, `terminal tessel attach ID` (docs/terminal.md).\n",
        PS_ALL_DEFAULT_LIMIT, PS_ALL_DEFAULT_LIMIT, PS_ALL_DEFAULT_LIMIT);
}

/* Whether --state's list names only states the API knows; *finished: one of them is final
 * (the list then gets -a's default limit). */
static bool states_valid(const char *list, bool *finished, char *bad, size_t len)
{
    static const char *const live[] = {"pending", "running", "suspended", "active"};
    static const char *const final[] = {"succeeded", "failed", "cancelled", "preempted",
                                        "finished"};
    *finished = false;
    const char *p = list;
    for (;;) {
        size_t n = strcspn(p, ",");
        bool ok = false;
        for (size_t i = 0; !ok && i < sizeof live / sizeof *live; i++)
            ok = n == strlen(live[i]) && strncmp(p, live[i], n) == 0;
        for (size_t i = 0; !ok && i < sizeof final / sizeof *final; i++)
            if (n == strlen(final[i]) && strncmp(p, final[i], n) == 0)
                ok = *finished = true;
        if (!ok) {
            snprintf(bad, len, "%.*s", (int)(n < 64 ? n : 64), p);
            return false;
        }
        if (!p[n])
            return true;
        p += n + 1;
    }
}

/* Append s, URL-escaped, to the query in buf. */
static void add_param(char *buf, size_t len, const char *key, const char *val)
{
    char *esc = tclient_escape(val);
    size_t n = strlen(buf);
    snprintf(buf + n, len - n, "%c%s=%s", strchr(buf, '?') ? '&' : '?', key, esc ? esc : "");
    free(esc);
}

static void command_cell(const json_t *argv, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    size_t i;
    json_t *a;
    json_array_foreach(argv, i, a)
    {
        const char *s = json_string_value(a);
        if (!s)
            continue;
        n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s%s", i ? " " : "", s);
        if (n >= len)
            break;
    }
    if (strlen(buf) > PS_COMMAND_WIDTH) {
        buf[PS_COMMAND_WIDTH - 3] = '\0';
        strcat(buf, "...");
    }
    for (char *p = buf; *p; p++)
        if (*p == '\n' || *p == '\t')
            *p = ' ';
}

/* Whether job runs (or is suspended) with a terminal one may attach to. */
static bool has_terminal(json_t *job)
{
    const char *st = json_string_value(json_object_get(job, "state"));
    return json_is_true(json_object_get(job, "tty")) && st &&
           (strcmp(st, "running") == 0 || strcmp(st, "suspended") == 0);
}

/* The job's web services: "NAME URL" each, comma-separated (a URL opens with a cookie: `tessel
 * open JOB NAME` gives one with a ticket); "-" when none. */
static void services_cell(json_t *job, char *buf, size_t len)
{
    size_t i;
    json_t *s;
    buf[0] = '\0';
    json_array_foreach(json_object_get(job, "services"), i, s)
    {
        size_t n = strlen(buf);
        const char *url = json_string_value(json_object_get(s, "url"));
        snprintf(buf + n, len - n, "%s%s %s", i ? ", " : "",
                 json_string_value(json_object_get(s, "name")), url ? url : "-");
    }
    /* A running job's terminal: how to attach to it. */
    if (has_terminal(job)) {
        size_t n = strlen(buf);
        snprintf(buf + n, len - n, "%sterminal tessel attach %lld", n ? ", " : "",
                 (long long)json_integer_value(json_object_get(job, "id")));
    }
    if (!buf[0])
        snprintf(buf, len, "-");
}

/* The job's reason (why it waits, how it ended), cut to PS_REASON_WIDTH; "-" when none. */
static void reason_cell(const json_t *job, char *buf, size_t len)
{
    const char *r = json_string_value(json_object_get(job, "reason"));
    snprintf(buf, len, "%s", r && *r ? r : "-");
    if (strlen(buf) > PS_REASON_WIDTH) {
        buf[PS_REASON_WIDTH - 3] = '\0';
        strcat(buf, "...");
    }
}

static void status_cell(const json_t *job, char *buf, size_t len)
{
    json_t *code = json_object_get(job, "exit_code");
    json_t *sig = json_object_get(job, "signal");
    if (json_is_integer(sig))
        snprintf(buf, len, "sig %lld", (long long)json_integer_value(sig));
    else if (json_is_integer(code))
        snprintf(buf, len, "%lld", (long long)json_integer_value(code));
    else
        snprintf(buf, len, "-");
}

/* -a with tesseld --slurm: the jobs submitted to Slurm directly (GET /v1/jobs?origin=slurm,
 * the newest `limit`), after Tessel's own, oldest first, read-only (id "slurm:N").  A tesseld
 * that cannot read Slurm: a warning, Tessel's jobs are listed all the same. */
static void add_slurm_jobs(cli_t *cli, json_t *ans, const char *user, const char *queue,
                           int64_t limit)
{
    char path[1100] = "/v1/jobs", n[32];
    add_param(path, sizeof path, "origin", "slurm");
    add_param(path, sizeof path, "order", "desc");
    snprintf(n, sizeof n, "%lld", (long long)limit);
    add_param(path, sizeof path, "limit", n);
    if (user)
        add_param(path, sizeof path, "user", user);
    if (queue)
        add_param(path, sizeof path, "queue", queue);
    json_t *page;
    tsl_error_t err;
    if (tclient_request(cli->client, "GET", path, NULL, &page, &err) < 0) {
        fprintf(stderr,
                "tessel: warning: the jobs submitted to Slurm directly are not listed: %s\n",
                err.text);
        return;
    }
    const char *why = json_string_value(json_object_get(page, "slurm_error"));
    if (why)
        fprintf(stderr, "tessel: warning: Slurm could not be read (%s): its own jobs as of %s\n",
                why, json_string_value(json_object_get(page, "slurm_as_of")) ?: "never");
    json_t *pj = json_object_get(page, "jobs"), *jobs = json_object_get(ans, "jobs");
    /* Only what a tesseld that knows origin=slurm marks as such (an older one ignores it). */
    for (size_t k = json_array_size(pj); k > 0; k--) {
        json_t *j = json_array_get(pj, k - 1);
        const char *o = json_string_value(json_object_get(j, "origin"));
        if (o && strcmp(o, "slurm") == 0)
            json_array_append(jobs, j);
    }
    json_decref(page);
}

int cmd_ps(cli_t *cli, int argc, char **argv)
{
    enum { O_USER = 256, O_QUEUE, O_JSON, O_LIMIT, O_PROJECT, O_STATE };
    static const struct option opts[] = {
        {"all", no_argument, NULL, 'a'},
        {"user", required_argument, NULL, O_USER},
        {"queue", required_argument, NULL, O_QUEUE},
        {"project", required_argument, NULL, O_PROJECT},
        {"state", required_argument, NULL, O_STATE},
        {"limit", required_argument, NULL, O_LIMIT},
        {"json", no_argument, NULL, O_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool all = false;
    int64_t limit = 0; /* 0: every matching job */
    tsl_error_t err;
    const char *user = NULL, *queue = NULL, *project = NULL, *states = NULL;
    bool finished = false;
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":ah", opts, NULL)) != -1) {
        switch (c) {
        case 'a':
            all = true;
            break;
        case O_USER:
            user = optarg;
            break;
        case O_QUEUE:
            queue = optarg;
            break;
        case O_PROJECT:
            project = optarg;
            break;
        case O_STATE: {
            char bad[80];
            if (strlen(optarg) > 120)
                return cli_usage(cli, "--state: too long (at most 120 characters)");
            if (!states_valid(optarg, &finished, bad, sizeof bad))
                return cli_usage(cli,
                                 "--state: unknown state '%s' (pending, running, suspended, "
                                 "succeeded, failed, cancelled, preempted, active, finished)",
                                 bad);
            states = optarg;
            break;
        }
        case O_LIMIT:
            if (cli_parse_int(optarg, 1, PS_MAX_LIMIT, &limit, &err) < 0)
                return cli_usage(cli, "--limit: %s", err.text);
            break;
        case O_JSON:
            cli->json = true;
            break;
        case 'h':
            usage(stdout);
            return CLI_OK;
        default:
            return cli_bad_option(cli, argc, argv, c);
        }
    }
    if (optind < argc)
        return cli_usage(cli, "unexpected argument '%s'", argv[optind]);
    if (all && states)
        return cli_usage(cli, "-a and --state: give one of them");
    if ((all || finished) && limit == 0)
        limit = PS_ALL_DEFAULT_LIMIT;
    char base[1024] = "/v1/jobs";
    if (states)
        add_param(base, sizeof base, "state", states);
    else if (!all)
        add_param(base, sizeof base, "state", "active");
    if (user)
        add_param(base, sizeof base, "user", user);
    if (queue)
        add_param(base, sizeof base, "queue", queue);
    if (project)
        add_param(base, sizeof base, "project", project);
    if (limit)
        add_param(base, sizeof base, "order", "desc");
    /* Without a limit: every matching job, a page at a time (ids ascending, ?after=).  With
     * one: the newest `limit`, newest first (?order=desc&before=), then turned around. */
    json_t *ans = json_pack("{s:[]}", "jobs");
    json_t *jobs = json_object_get(ans, "jobs");
    long long last = 0;
    for (;;) {
        char path[1100], a[32], n[32];
        long long want = PS_PAGE;
        if (limit && limit - (long long)json_array_size(jobs) < want)
            want = limit - (long long)json_array_size(jobs);
        snprintf(path, sizeof path, "%s", base);
        snprintf(n, sizeof n, "%lld", want);
        add_param(path, sizeof path, "limit", n);
        snprintf(a, sizeof a, "%lld", last);
        if (last)
            add_param(path, sizeof path, limit ? "before" : "after", a);
        json_t *page;
        if (cli_call(cli, "GET", path, NULL, &page) < 0) {
            json_decref(ans);
            return CLI_ERR;
        }
        json_t *pj = json_object_get(page, "jobs");
        size_t got = json_array_size(pj);
        json_array_extend(jobs, pj);
        if (got)
            last =
                (long long)json_integer_value(json_object_get(json_array_get(pj, got - 1), "id"));
        json_decref(page);
        if ((long long)got < want || last <= (limit ? 1 : 0) ||
            (limit && (long long)json_array_size(jobs) >= limit))
            break;
    }
    if (limit) { /* oldest first, as without a limit */
        size_t cnt = json_array_size(jobs);
        json_t *asc = json_array();
        for (size_t k = cnt; k > 0; k--)
            json_array_append(asc, json_array_get(jobs, k - 1));
        json_object_set_new(ans, "jobs", asc);
    }
    if (all)
        add_slurm_jobs(cli, ans, user, queue, limit);
    if (cli->json) {
        cli_print_json(ans);
        json_decref(ans);
        return CLI_OK;
    }
    static const char *const hdr[] = {">ID",     "USER",   "NAME",     "STATE", "EXIT",
                                      "QUEUE",   ">GPU",   ">GPU-MEM", "ON",    ">AGE",
                                      "COMMAND", "REASON", "SERVICES"};
    size_t i;
    json_t *j;
    /* SERVICES only when a job listed has web services or a terminal to attach to. */
    bool svc_col = false;
    json_array_foreach(json_object_get(ans, "jobs"), i, j) svc_col |=
        json_array_size(json_object_get(j, "services")) > 0 || has_terminal(j);
    cli_table_t *t = cli_table_new(svc_col ? 13 : 12, hdr);
    time_t now = time(NULL);
    json_array_foreach(json_object_get(ans, "jobs"), i, j)
    {
        char id[32], exitc[32], gpu[32], gmem[32], on[128], age[32], cmd[512], state[64];
        char reason[PS_REASON_WIDTH + 1];
        /* An array's element as squeue shows it: ARRAYID_INDEX. */
        const char *did = json_string_value(json_object_get(j, "display_id"));
        if (did)
            snprintf(id, sizeof id, "%s", did);
        else
            snprintf(id, sizeof id, "%lld",
                     (long long)json_integer_value(json_object_get(j, "id")));
        status_cell(j, exitc, sizeof exitc);
        double g = json_number_value(json_object_get(j, "gpu"));
        if (g > 1.0)
            snprintf(gpu, sizeof gpu, "%.0f", g);
        else
            cli_format_milli(json_integer_value(json_object_get(j, "gpu_milli")), gpu, sizeof gpu);
        json_t *gm = json_object_get(j, "gpu_mem");
        if (json_is_integer(gm) && json_integer_value(gm) > 0)
            tsl_format_size((uint64_t)json_integer_value(gm), gmem, sizeof gmem);
        else
            snprintf(gmem, sizeof gmem, "-");
        on[0] = '\0';
        size_t k;
        json_t *p;
        json_array_foreach(json_object_get(j, "placement"), k, p)
        {
            size_t n = strlen(on);
            /* tesseld --slurm: the Slurm node(s), not a GPU of this host. */
            const char *node = json_string_value(json_object_get(p, "node"));
            if (node)
                snprintf(on + n, sizeof on - n, "%s%s", k ? "," : "", node);
            else
                snprintf(on + n, sizeof on - n, "%sgpu%lld", k ? "," : "",
                         (long long)json_integer_value(json_object_get(p, "gpu")));
        }
        if (!on[0])
            snprintf(on, sizeof on, "-");
        int64_t sub = cli_parse_time(json_string_value(json_object_get(j, "submitted_at")));
        if (sub >= 0)
            cli_format_age((int64_t)now - sub, age, sizeof age);
        else
            snprintf(age, sizeof age, "-");
        command_cell(json_object_get(j, "argv"), cmd, sizeof cmd);
        cli_format_state(j, state, sizeof state);
        reason_cell(j, reason, sizeof reason);
        char svc[1024];
        services_cell(j, svc, sizeof svc);
        const char *row[] = {id,
                             json_string_value(json_object_get(j, "user")),
                             json_string_value(json_object_get(j, "name")),
                             state,
                             exitc,
                             json_string_value(json_object_get(j, "queue")),
                             gpu,
                             gmem,
                             on,
                             age,
                             cmd,
                             reason,
                             svc};
        cli_table_add(t, row);
    }
    cli_table_print(t, stdout);
    json_decref(ans);
    return CLI_OK;
}
