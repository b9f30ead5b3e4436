/* show.c - `tessel show JOB`: everything about one job, as `scontrol show job` does: its
 * fields (GET /v1/jobs/ID), why it ended, then its history (GET /v1/jobs/ID/events) as a
 * table.  --json prints {"job": ..., "events": [...]}. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/tessel/cli.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: tessel show [--json] JOB\n"
               "Show one job: its fields (state, end cause, reason, resources, placement,\n"
               "times, exit status), then its history: every change of its state, when, by\n"
               "whom and why (submit, start, preempt, requeue, cancel, end...).\n"
               "JOB is a job id, or slurm:N for a job submitted to Slurm directly (under\n"
               "tesseld's Slurm mode; its fields only).\n"
               "\n"
               "  --json           print {\"job\": ..., \"events\": [...]} as the API answers\n");
}

/* A member as text: strings as they are, null as "-", anything else as compact JSON. */
static char *member_text(const json_t *v)
{
    if (!v || json_is_null(v))
        return strdup("-");
    if (json_is_string(v))
        return strdup(json_string_value(v));
    if (json_is_real(v)) {
        char buf[64];
        snprintf(buf, sizeof buf, "%g", json_real_value(v));
        return strdup(buf);
    }
    return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}

/* The job's fields, one "Name=value" line each, in the API's order (escaped: anyone's text). */
static void print_fields(const json_t *job)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)job, key, v)
    {
        char *t = member_text(v);
        char *e = cli_escape(t ? t : "?");
        printf("%-14s %s\n", key, e);
        free(e);
        free(t);
    }
}

static void print_events(const json_t *events)
{
    static const char *const head[] = {"TIME", "WHO", "EVENT", "FROM", "TO", "WHY", "DETAIL"};
    cli_table_t *t = cli_table_new(7, head);
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e)
    {
        json_t *d = json_object_get(e, "detail");
        char *detail = d && json_object_size(d) ? json_dumps(d, JSON_COMPACT) : NULL;
        const char *cells[7] = {
            json_string_value(json_object_get(e, "time")),
            json_string_value(json_object_get(e, "who")),
            json_string_value(json_object_get(e, "event")),
            json_string_value(json_object_get(e, "from")),
            json_string_value(json_object_get(e, "to")),
            json_string_value(json_object_get(e, "why")),
            detail,
        };
        cli_table_add(t, cells);
        free(detail);
    }
    cli_table_print(t, stdout);
}

int cmd_show(cli_t *cli, int argc, char **argv)
{
    /* The job id apart (ids never start with '-'), the options are --json and --help. */
    char **opts = calloc((size_t)argc + 1, sizeof *opts);
    if (!opts)
        return cli_fail("out of memory");
    const char *ids = NULL;
    int n = 0, njobs = 0;
    for (int i = 0; i < argc; i++) {
        if (i > 0 && argv[i][0] != '-') {
            ids = argv[i];
            njobs++;
        } else {
            opts[n++] = argv[i];
        }
    }
    int rc = cli_json_only_args(cli, n, opts, usage);
    free(opts);
    if (rc >= 0)
        return rc;
    if (njobs != 1)
        return cli_usage(cli, "give one job id");
    int64_t id;
    tsl_error_t err;
    char path[64];
    json_t *job = NULL, *ev = NULL;
    /* tesseld --slurm: a job submitted to Slurm directly has its fields, no Tessel history. */
    if (cli_parse_slurm_ref(ids, &id) == 0) {
        if (cli_connect(cli) < 0)
            return CLI_ERR;
        snprintf(path, sizeof path, "/v1/jobs/slurm:%lld", (long long)id);
        if (cli_call(cli, "GET", path, NULL, &job) < 0)
            return CLI_ERR;
        if (cli->json) {
            json_t *o = json_pack("{s:O, s:[]}", "job", job, "events");
            cli_print_json(o);
            json_decref(o);
        } else {
            print_fields(job);
            printf("\n(submitted to Slurm directly: no Tessel history; Slurm's own commands "
                   "act on it)\n");
        }
        json_decref(job);
        return CLI_OK;
    }
    if (cli_parse_id(ids, &id, &err) < 0)
        return cli_usage(cli, "%s", err.text);
    if (cli_connect(cli) < 0)
        return CLI_ERR;
    snprintf(path, sizeof path, "/v1/jobs/%lld", (long long)id);
    if (cli_call(cli, "GET", path, NULL, &job) < 0)
        return CLI_ERR;
    snprintf(path, sizeof path, "/v1/jobs/%lld/events", (long long)id);
    if (cli_call(cli, "GET", path, NULL, &ev) < 0) {
        json_decref(job);
        return CLI_ERR;
    }
    json_t *events = json_object_get(ev, "events");
    if (!json_is_array(events)) {
        json_decref(job);
        json_decref(ev);
        return cli_fail("job %lld: tesseld answered no event list", (long long)id);
    }
    if (cli->json) {
        json_t *o = json_pack("{s:O, s:O}", "job", job, "events", events);
        cli_print_json(o);
        json_decref(o);
    } else {
        print_fields(job);
        printf("\n");
        print_events(events);
    }
    json_decref(job);
    json_decref(ev);
    return CLI_OK;
}
