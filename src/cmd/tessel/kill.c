/* kill.c - `tessel kill`: cancel jobs (POST /v1/jobs/ID/cancel).  A pending job is cancelled
 * at once; a running one gets SIGTERM (SIGKILL 10 s later) and ends cancelled. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cmd/tessel/cli.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: tessel kill [--json] JOB...\n"
               "Cancel jobs: a pending job at once; a running job gets SIGTERM, then SIGKILL\n"
               "10 s later.  Prints one line per job; exit status 1 if any could not be\n"
               "cancelled (unknown, another user's, already finished).\n"
               "\n"
               "  --json           print the job objects as the API answers them\n");
}

int cmd_kill(cli_t *cli, int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'j':
            cli->json = true;
            break;
        case 'h':
            usage(stdout);
            return CLI_OK;
        default:
            return cli_bad_option(cli, argc, argv, c);
        }
    }
    if (optind >= argc)
        return cli_usage(cli, "no job id given");
    tsl_error_t err;
    int64_t id;
    for (int i = optind; i < argc; i++)
        if (cli_parse_id(argv[i], &id, &err) < 0)
            return cli_usage(cli, "%s", err.text);
    int rc = CLI_OK;
    json_t *all = json_array();
    for (int i = optind; i < argc; i++) {
        cli_parse_id(argv[i], &id, NULL);
        char path[96];
        snprintf(path, sizeof path, "/v1/jobs/%lld/cancel", (long long)id);
        json_t *job;
        if (cli_connect(cli) < 0) {
            rc = CLI_ERR;
            break;
        }
        if (tclient_request(cli->client, "POST", path, NULL, &job, &err) < 0) {
            /* tesseld's messages name the job; a transfer error does not. */
            if (tclient_status(cli->client) >= 400)
                cli_fail("%s", err.text);
            else
                cli_fail("job %lld: %s", (long long)id, err.text);
            rc = CLI_ERR;
            continue;
        }
        if (cli->json) {
            json_array_append(all, job);
        } else {
            const char *st = json_string_value(json_object_get(job, "state"));
            printf("job %lld: %s\n", (long long)id,
                   st && strcmp(st, "cancelled") == 0 ? "cancelled" : "cancelling");
        }
        json_decref(job);
    }
    if (cli->json)
        cli_print_json(all);
    json_decref(all);
    return rc;
}
