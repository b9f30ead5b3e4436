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
    int rc = cli_json_help_args(cli, argc, argv, usage);
    if (rc >= 0)
        return rc;
    return cli_job_action(cli, argc, argv, optind, "cancel", cancelled, NULL);
}
