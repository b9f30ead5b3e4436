/* kill.c - `tessel kill`: cancel jobs (POST /v1/jobs/ID/cancel).  A pending job is cancelled
 * at once; a running one gets SIGTERM (SIGKILL 10 s later) and ends cancelled.  As scancel:
 * an array's id cancels every element of it, ARRAYID_INDEX one element. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cmd/tessel/cli.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: tessel kill [--json] JOB...\n"
               "Cancel jobs: a pending job at once; a running job gets SIGTERM, then SIGKILL\n"
               "10 s later.  JOB is a job id, an array's id (every element of it) or one\n"
               "element, ARRAYID_INDEX (40_3).  Prints one line per job; exit status 1 if\n"
               "any could not be cancelled (unknown, another user's, already finished).\n"
               "\n"
               "  --json           print the job objects as the API answers them\n");
}

static bool cancelled(cli_t *cli, long long id, json_t **job, void *arg)
{
    (void)arg;
    if (!cli->json) {
        const char *st = json_string_value(json_object_get(*job, "state"));
        json_t *n = json_object_get(*job, "array_cancelled");
        if (json_is_integer(n))
            printf("array %lld: %lld element(s) cancelled or cancelling\n", id,
                   (long long)json_integer_value(n));
        else {
            /* An array's element as squeue shows it: 40_3. */
            const char *did = json_string_value(json_object_get(*job, "display_id"));
            char label[32];
            snprintf(label, sizeof label, "%lld", id);
            printf("job %s: %s\n", did ? did : label,
                   st && strcmp(st, "cancelled") == 0 ? "cancelled" : "cancelling");
        }
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
