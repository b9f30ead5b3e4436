/* open.c - a job's web services from the CLI (docs/job-services.md): `tessel open JOB [NAME]`
 * prints a URL that opens one (POST /v1/jobs/ID/services/NAME/ticket: a ticket good for 30 s
 * and one use, which the browser trades for a cookie), and `tessel notebook` runs Jupyter as a
 * job (`tessel run --service jupyter`). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/tessel/cli.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: tessel open [--json] JOB [NAME]\n"
               "Print a URL that opens web service NAME of running job JOB (default: its first\n"
               "service) in a browser, for you (the job's owner) or an admin.  The URL holds a\n"
               "ticket good for one use within 30 seconds; the browser keeps a session cookie\n"
               "for that service afterwards (12 hours, while the job runs).\n"
               "\n"
               "  --json           print the API's answer (ticket, url, expires_in_s)\n");
}

/* The ticket of job id's service name: its answer (the caller releases it), or NULL after
 * printing why with report, silently without. */
static json_t *ticket(cli_t *cli, int64_t id, const char *name, bool report)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/jobs/%lld/services/%s/ticket", (long long)id, name);
    json_t *a = NULL;
    tsl_error_t err;
    if (report) {
        if (cli_call(cli, "POST", path, NULL, &a) < 0)
            return NULL;
    } else if (cli_connect(cli) < 0 ||
               tclient_request(cli->client, "POST", path, NULL, &a, &err) < 0) {
        return NULL;
    }
    return a;
}

void run_print_service_urls(cli_t *cli, int64_t id)
{
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%lld", (long long)id);
    json_t *job = NULL;
    tsl_error_t err;
    if (tclient_request(cli->client, "GET", path, NULL, &job, &err) < 0)
        return;
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(job, "services"), i, s)
    {
        const char *name = json_string_value(json_object_get(s, "name"));
        json_t *t = name ? ticket(cli, id, name, false) : NULL;
        const char *url = json_string_value(json_object_get(t, "url"));
        if (url)
            fprintf(stderr,
                    "tessel: job %lld: open %s at %s (good for 30 s; tessel open %lld %s "
                    "for another)\n",
                    (long long)id, name, url, (long long)id, name);
        json_decref(t);
    }
    json_decref(job);
}

int cmd_open(cli_t *cli, int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, CLI_OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
        switch (c) {
        case CLI_OPT_JSON:
            cli->json = true;
            break;
        case 'h':
            usage(stdout);
            return CLI_OK;
        default:
            return cli_bad_option(cli, argc, argv, c);
        }
    }
    if (argc - optind < 1 || argc - optind > 2)
        return cli_usage(cli, "give a job id and, optionally, a service's name");
    int64_t id;
    tsl_error_t err;
    if (cli_parse_id(argv[optind], &id, &err) < 0)
        return cli_usage(cli, "%s", err.text);
    const char *name = argc - optind == 2 ? argv[optind + 1] : NULL;
    json_t *job = NULL;
    char *first = NULL;
    if (!name) {
        char path[64];
        snprintf(path, sizeof path, "/v1/jobs/%lld", (long long)id);
        if (cli_call(cli, "GET", path, NULL, &job) < 0)
            return CLI_ERR;
        const char *n = json_string_value(
            json_object_get(json_array_get(json_object_get(job, "services"), 0), "name"));
        if (!n) {
            json_decref(job);
            return cli_fail("job %lld has no web service (tessel run --service)", (long long)id);
        }
        first = strdup(n);
        json_decref(job);
        if (!first)
            return cli_fail("out of memory");
        name = first;
    }
    if (strlen(name) > 16 || strpbrk(name, "/?#%")) {
        free(first);
        return cli_usage(cli, "'%s' is not a service's name", name);
    }
    json_t *t = ticket(cli, id, name, true);
    free(first);
    if (!t)
        return CLI_ERR;
    if (cli->json)
        cli_print_json(t);
    else
        printf("%s\n", json_string_value(json_object_get(t, "url")));
    json_decref(t);
    return CLI_OK;
}

static void notebook_usage(FILE *f)
{
    fprintf(f, "usage: tessel notebook [OPTION]... [-- COMMAND [ARG]...]\n"
               "Run Jupyter as a job: tessel run --service jupyter with these options (tessel run\n"
               "--help lists them: --gpu, --mem, --cwd, -d, --json...).  Without COMMAND the job\n"
               "runs Debian's jupyter-notebook on 127.0.0.1:8888 in its own network, its base\n"
               "URL the job's; a COMMAND given must start a Jupyter there itself.  Once it runs,\n"
               "the URL that opens it is printed (tessel open JOB for another); Ctrl-C ends it.\n");
}

int cmd_notebook(cli_t *cli, int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            notebook_usage(stdout);
            return CLI_OK;
        }
    /* run's arguments: "run --service jupyter" and ours. */
    char **av = calloc((size_t)argc + 3, sizeof *av);
    if (!av)
        return cli_fail("out of memory");
    av[0] = (char *)"run";
    av[1] = (char *)"--service";
    av[2] = (char *)"jupyter";
    for (int i = 1; i < argc; i++)
        av[i + 2] = argv[i];
    int rc = cmd_run(cli, argc + 2, av);
    free(av);
    return rc;
}
