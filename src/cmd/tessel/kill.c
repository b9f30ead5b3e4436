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

static bool cancelled(cli_t *cli, long long id, json_t **job, void *arg)
{
    (void)arg;
    if (!cli->json) {
        const char *st = json_string_value(json_object_get(*job, "state"));
        printf("job %lld: %s\n", id,
               st && strcmp(st, "cancelled") == 0 ? "cancelled" : "cancelling");
    }
    return true;
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
    return cli_job_action(cli, argc, argv, optind, "cancel", cancelled, NULL);
}
