/* cli.c - helpers every `tessel` subcommand shares: one-line errors and usage errors, the
 * connection to tesseld, JSON output, the GET-then-table-or-JSON of listing commands. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cmd/tessel/cli.h"

/* A message, formatted and escaped: it quotes the API's answers and user input (cli_escape).
 * The caller frees it. */
static char *message(const char *fmt, va_list ap)
{
    char buf[1024];
    vsnprintf(buf, sizeof buf, fmt, ap);
    return cli_escape(buf);
}

int cli_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *e = message(fmt, ap);
    va_end(ap);
    fprintf(stderr, "tessel: %s\n", e);
    free(e);
    return CLI_ERR;
}

int cli_usage(const cli_t *cli, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *e = message(fmt, ap);
    va_end(ap);
    if (cli && cli->cmd)
        fprintf(stderr, "tessel %s: %s (see 'tessel %s --help')\n", cli->cmd, e, cli->cmd);
    else
        fprintf(stderr, "tessel: %s (see 'tessel --help')\n", e);
    free(e);
    return CLI_USAGE;
}

int cli_bad_option(const cli_t *cli, int argc, char **argv, int opt)
{
    const char *arg = optind - 1 < argc && optind >= 1 ? argv[optind - 1] : "?";
    if (opt == ':') {
        if (optopt && optopt < 256)
            return cli_usage(cli, "option '-%c' needs a value", optopt);
        return cli_usage(cli, "option '%s' needs a value", arg);
    }
    if (optopt && optopt < 256)
        return cli_usage(cli, "unknown option '-%c'", optopt);
    return cli_usage(cli, "unknown option '%s'", arg);
}

int cli_common_option(cli_t *cli, int c, int argc, char **argv, void (*usage)(FILE *f))
{
    if (c == CLI_OPT_JSON) {
        cli->json = true;
        return -1;
    }
    if (c == 'h') {
        usage(stdout);
        return CLI_OK;
    }
    return cli_bad_option(cli, argc, argv, c);
}

int cli_write_fd(const char *data, size_t len, void *arg)
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

bool cli_conn_lost(int e)
{
    return e == ECONNRESET || e == ECONNREFUSED || e == ETIMEDOUT || e == EAGAIN;
}

int cli_connect(cli_t *cli)
{
    if (cli->client)
        return 0;
    tsl_error_t err;
    cli->client = tclient_new(cli->cfg.url, cli->cfg.token, &err);
    if (!cli->client) {
        cli_fail("%s", err.text);
        return -1;
    }
    return 0;
}

int cli_call(cli_t *cli, const char *method, const char *path, const json_t *body, json_t **answer)
{
    if (cli_connect(cli) < 0)
        return -1;
    tsl_error_t err;
    if (tclient_request(cli->client, method, path, body, answer, &err) < 0) {
        cli_fail("%s", err.text);
        return -1;
    }
    return 0;
}

json_t *cli_get(cli_t *cli, const char *path, int *rc)
{
    json_t *ans;
    if (cli_call(cli, "GET", path, NULL, &ans) < 0) {
        *rc = CLI_ERR;
        return NULL;
    }
    if (cli->json) {
        cli_print_json(ans);
        json_decref(ans);
        *rc = CLI_OK;
        return NULL;
    }
    return ans;
}

int cli_job_action(cli_t *cli, int argc, char **argv, int first, const char *action,
                   cli_job_done_fn done, void *arg)
{
    if (first >= argc)
        return cli_usage(cli, "no job id given");
    tsl_error_t err;
    int64_t id;
    for (int i = first; i < argc; i++)
        if (cli_parse_job_ref(argv[i], &id, &err) < 0)
            return cli_usage(cli, "%s", err.text);
    int rc = CLI_OK;
    json_t *all = json_array();
    for (int i = first; i < argc; i++) {
        cli_parse_job_ref(argv[i], &id, NULL);
        char path[96];
        /* As written: "42", or an array's element "40_3" (the API resolves it). */
        snprintf(path, sizeof path, "/v1/jobs/%s/%s", argv[i], action);
        if (cli_connect(cli) < 0) {
            rc = CLI_ERR;
            break;
        }
        json_t *job;
        if (tclient_request(cli->client, "POST", path, NULL, &job, &err) < 0) {
            /* tesseld's messages name the job; a transfer error does not. */
            if (tclient_status(cli->client) >= 400)
                cli_fail("%s", err.text);
            else
                cli_fail("job %s: %s", argv[i], err.text);
            rc = CLI_ERR;
            continue;
        }
        json_t *jid = json_object_get(job, "id");
        if (json_is_integer(jid))
            id = json_integer_value(jid);
        if (!done(cli, (long long)id, &job, arg))
            rc = CLI_ERR;
        if (cli->json)
            json_array_append(all, job);
        json_decref(job);
    }
    if (cli->json)
        cli_print_json(all);
    json_decref(all);
    return rc;
}

int cli_json_help_args(cli_t *cli, int argc, char **argv, void (*usage)(FILE *f))
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, CLI_OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c, rc;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1)
        if ((rc = cli_common_option(cli, c, argc, argv, usage)) >= 0)
            return rc;
    return -1;
}

int cli_json_only_args(cli_t *cli, int argc, char **argv, void (*usage)(FILE *f))
{
    int rc = cli_json_help_args(cli, argc, argv, usage);
    if (rc >= 0)
        return rc;
    if (optind < argc)
        return cli_usage(cli, "unexpected argument '%s'", argv[optind]);
    return -1;
}

void cli_print_json(const json_t *j)
{
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_ENCODE_ANY);
    if (s) {
        fputs(s, stdout);
        fputc('\n', stdout);
        free(s);
    }
}
