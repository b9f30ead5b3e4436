/* logs.c - `tessel logs`: a job's output, stdout to stdout and stderr to stderr (two
 * requests at once), optionally followed until the job has finished. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd/tessel/cli.h"

/* As `tessel run`: how long -f keeps trying to reach a tesseld that went away, and the pause
 * between two attempts. */
#define LOGS_RECONNECT_S 60
#define LOGS_RETRY_MS    250

static void usage(FILE *f)
{
    fprintf(f, "usage: tessel logs [-f] [--stdout | --stderr] JOB\n"
               "Print a job's output: its stdout on stdout, its stderr on stderr.\n"
               "\n"
               "  -f, --follow     keep printing new output until the job has finished (across\n"
               "                   a restart of tesseld)\n"
               "  --stdout         only its stdout\n"
               "  --stderr         only its stderr\n");
}

static int write_fd(const char *data, size_t len, void *arg)
{
    int fd = *(int *)arg;
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

int cmd_logs(cli_t *cli, int argc, char **argv)
{
    enum { O_STDOUT = 256, O_STDERR, O_JSON };
    static const struct option opts[] = {
        {"follow", no_argument, NULL, 'f'},      {"stdout", no_argument, NULL, O_STDOUT},
        {"stderr", no_argument, NULL, O_STDERR}, {"json", no_argument, NULL, O_JSON},
        {"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0},
    };
    bool follow = false, want_out = true, want_err = true;
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":fh", opts, NULL)) != -1) {
        switch (c) {
        case 'f':
            follow = true;
            break;
        case O_STDOUT:
            want_err = false;
            break;
        case O_STDERR:
            want_out = false;
            break;
        case O_JSON:
            return cli_usage(cli, "logs are plain text: --json does not apply");
        case 'h':
            usage(stdout);
            return CLI_OK;
        default:
            return cli_bad_option(cli, argc, argv, c);
        }
    }
    if (!want_out && !want_err)
        return cli_usage(cli, "give --stdout or --stderr, not both");
    if (optind != argc - 1)
        return cli_usage(cli, optind >= argc ? "no job id given" : "one job id at a time");
    tsl_error_t err;
    int64_t id;
    if (cli_parse_id(argv[optind], &id, &err) < 0)
        return cli_usage(cli, "%s", err.text);
    if (cli_connect(cli) < 0)
        return CLI_ERR;
    int out_fd = 1, err_fd = 2;
    tclient_log_t logs[2];
    int n = 0;
    memset(logs, 0, sizeof logs);
    if (want_out)
        logs[n++] = (tclient_log_t){.stream = "stdout", .write = write_fd, .arg = &out_fd};
    if (want_err)
        logs[n++] = (tclient_log_t){.stream = "stderr", .write = write_fd, .arg = &err_fd};
    /* Following, ride out a tesseld restart: resume each stream at its offset. */
    time_t lost_since = 0;
    while (tclient_logs(cli->client, id, logs, n, follow, NULL, &err) < 0) {
        int e = errno;
        bool lost = e == ECONNRESET || e == ECONNREFUSED || e == ETIMEDOUT || e == EAGAIN;
        if (follow && lost) {
            time_t now = time(NULL);
            if (!lost_since)
                lost_since = now;
            if (now - lost_since <= LOGS_RECONNECT_S) {
                struct timespec ts = {0, LOGS_RETRY_MS * 1000000L};
                nanosleep(&ts, NULL);
                json_t *probe = NULL;
                if (tclient_request(cli->client, "GET", "/v1/whoami", NULL, &probe, NULL) == 0)
                    lost_since = 0;
                json_decref(probe);
                continue;
            }
        }
        /* tesseld's messages name the job; a transfer error does not. */
        if (tclient_status(cli->client) >= 400)
            return cli_fail("%s", err.text);
        return cli_fail("job %lld: %s", (long long)id, err.text);
    }
    return CLI_OK;
}
