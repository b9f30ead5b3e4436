/* main.c - `tessel`, the CLI of tesseld: global options, the subcommand table, and the error,
 * connection and JSON helpers every subcommand uses.  Subcommands live one per file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/tessel/cli.h"

#define TESSEL_VERSION "0.1.0"

static const cli_command_t commands[] = {
    {"run", cmd_run, "submit a job; stream its output and exit with its status (-d: detach)"},
    {"ps", cmd_ps, "list your active jobs (-a: finished ones too)"},
    {"logs", cmd_logs, "print a job's output (-f: follow it)"},
    {"kill", cmd_kill, "cancel jobs"},
    {"suspend", cmd_suspend, "hold a running job's GPU work (--wait: until drained)"},
    {"resume", cmd_resume, "let a suspended job's GPU work go on"},
    {"gpus", cmd_gpus, "GPUs: slices, memory used and limits, utilisation"},
    {"queues", cmd_queues, "list queues (admin: add, set, rm)"},
    {"users", cmd_users, "list, add and remove users (admin)"},
    {"tokens", cmd_tokens, "list, create and revoke API tokens"},
    {"login", cmd_login, "check a token and keep it, with tesseld's URL, in the config file"},
    {"whoami", cmd_whoami, "who the configured token belongs to"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: tessel COMMAND [OPTION]... [ARG]...\n\n"
               "Commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n"
               "Every command takes --help, and --json (before or after the command) to print the\n"
               "API's JSON instead of a table.\n"
               "\n"
               "Configuration: tesseld's URL and your token come from the config file that\n"
               "`tessel login` writes (~/.config/tessel/config, or $TESSEL_CONFIG);\n"
               "TESSEL_URL and TESSEL_TOKEN override it.  Default URL: " TCLIENT_DEFAULT_URL ".\n"
               "\n"
               "Exit status: 0 success, 1 error (one line on stderr), 2 usage error.\n"
               "`tessel run` in the foreground exits with the job's status: its exit code,\n"
               "128+N when signal N killed it, 123 preempted, 124 cancelled, 125 never started.\n");
}

int main(int argc, char **argv)
{
    cli_t cli = {0};
    static char help[] = "--help";
    char *hargv[4] = {NULL, NULL, NULL, NULL};
    if (argc < 2) {
        usage(stderr);
        return CLI_USAGE;
    }
    /* `tessel --json CMD ...` = `tessel CMD --json ...` */
    while (argc > 1 && strcmp(argv[1], "--json") == 0) {
        cli.json = true;
        argv[1] = argv[0];
        argv++;
        argc--;
    }
    if (argc < 2) {
        usage(stderr);
        return CLI_USAGE;
    }
    const char *c = argv[1];
    if (strcmp(c, "--help") == 0 || strcmp(c, "-h") == 0 || strcmp(c, "help") == 0) {
        if (argc > 2 && strcmp(c, "help") == 0) {
            /* `tessel help CMD` = `tessel CMD --help` */
            hargv[0] = argv[0];
            hargv[1] = argv[2];
            hargv[2] = help;
            argc = 3;
            argv = hargv;
            c = argv[1];
        } else {
            usage(stdout);
            return CLI_OK;
        }
    }
    if (strcmp(c, "--version") == 0 || strcmp(c, "version") == 0) {
        printf("tessel %s\n", TESSEL_VERSION);
        return CLI_OK;
    }
    const cli_command_t *cmd = NULL;
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(commands[i].name, c) == 0)
            cmd = &commands[i];
    if (!cmd)
        return cli_usage(NULL, "unknown command '%s'", c);
    cli.cmd = cmd->name;
    tsl_error_t err;
    if (tclient_config_load(&cli.cfg, &err) < 0)
        return cli_fail("%s", err.text);
    int rc = cmd->fn(&cli, argc - 1, argv + 1);
    tclient_destroy(cli.client);
    if (fflush(stdout) != 0 && rc == CLI_OK)
        rc = cli_fail("writing the output: %s", strerror(errno));
    return rc;
}
