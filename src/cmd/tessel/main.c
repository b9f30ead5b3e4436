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
    {"attach", cmd_attach, "attach this terminal to a job's (run -it); Ctrl-P Ctrl-Q detaches"},
    {"exec", cmd_exec, "run a command inside a running job, on a terminal (same user, slice)"},
    {"shell", cmd_shell, "a shell inside a running job (tessel exec JOB -- $SHELL)"},
    {"open", cmd_open, "a URL that opens a job's web service (run --service) in a browser"},
    {"notebook", cmd_notebook, "run Jupyter as a job and print the URL that opens it"},
    {"show", cmd_show, "show one job: its fields, why it ended, its history"},
    {"kill", cmd_kill, "cancel jobs"},
    {"suspend", cmd_suspend, "hold a running job's GPU work (--wait: until drained)"},
    {"resume", cmd_resume, "let a suspended job's GPU work go on"},
    {"gpus", cmd_gpus, "GPUs: slices, memory used and limits, utilisation"},
    {"nodes", cmd_nodes, "nodes: CPUs, memory, GPUs and what is placed on them"},
    {"images", cmd_images, "container images jobs may name (tessel run --image)"},
    {"queues", cmd_queues, "list queues (admin: add, set, rm)"},
    {"gpu-models", cmd_gpu_models, "GPU models' relative speeds for ngpu limits (admin: set)"},
    {"users", cmd_users, "list, add and remove users (admin)"},
    {"tokens", cmd_tokens, "list, create and revoke API tokens"},
    {"projects", cmd_projects, "projects: members, roles, queue, default project"},
    {"folders", cmd_folders, "virtual folders: create, share (ro/rw), du, rm (alias: folder)"},
    {"serve", cmd_serve, "run an inference service: N replicas behind one endpoint"},
    {"services", cmd_services, "inference services: replicas, rates, scale, rm, tokens"},
    {"login", cmd_login, "check a token and keep it, with tesseld's URL, in the config file"},
    {"whoami", cmd_whoami, "who tesseld takes you for (token's user, or your account)"},
    {"slurm-conf", cmd_slurm_conf, "this node's gres.conf/slurm.conf lines for Tessel on Slurm"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: tessel [--url URL] COMMAND [OPTION]... [ARG]...\n\n"
               "Commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-11s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n"
               "Every command takes --help, and --json (before or after the command) to print the\n"
               "API's JSON instead of a table.\n"
               "\n"
               "Where tesseld is: --url URL (before the command), else TESSEL_URL, else the URL\n"
               "that `tessel login` saved (~/.config/tessel/config, or $TESSEL_CONFIG), else\n"
               "tesseld's local socket when it exists and no token is configured (your own\n"
               "account is your identity there: no token needed), else " TCLIENT_DEFAULT_URL ".\n"
               "URLs: http://HOST:PORT, or unix:PATH for a local socket.  The token comes from\n"
               "TESSEL_TOKEN, else the config file.\n"
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
    /* `tessel --json CMD ...` = `tessel CMD --json ...`; `--url URL` before the command sets
     * tesseld's address for this run (as TESSEL_URL does). */
    const char *url = NULL;
    for (;;) {
        int eat = 0;
        if (argc > 1 && strcmp(argv[1], "--json") == 0) {
            cli.json = true;
            eat = 1;
        } else if (argc > 2 && strcmp(argv[1], "--url") == 0) {
            url = argv[2];
            eat = 2;
        } else if (argc > 1 && strncmp(argv[1], "--url=", 6) == 0) {
            url = argv[1] + 6;
            eat = 1;
        } else {
            break;
        }
        argv[eat] = argv[0];
        argv += eat;
        argc -= eat;
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
    if (strcmp(c, "folder") == 0) /* the and Backend.AI's word */
        c = "folders";
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(commands[i].name, c) == 0)
            cmd = &commands[i];
    if (!cmd)
        return cli_usage(NULL, "unknown command '%s'", c);
    cli.cmd = cmd->name;
    tsl_error_t err;
    if (tclient_config_load(&cli.cfg, &err) < 0)
        return cli_fail("%s", err.text);
    if (url) {
        size_t n = strlen(url);
        while (n > 0 && url[n - 1] == '/')
            n--;
        if (n == 0 || n >= sizeof cli.cfg.url)
            return cli_usage(NULL, "--url: '%s': not a URL", url);
        snprintf(cli.cfg.url, sizeof cli.cfg.url, "%.*s", (int)n, url);
        cli.cfg.url_from_env = true;
        cli.cfg.url_is_default = false;
    }
    int rc = cmd->fn(&cli, argc - 1, argv + 1);
    tclient_destroy(cli.client);
    if (fflush(stdout) != 0 && rc == CLI_OK)
        rc = cli_fail("writing the output: %s", strerror(errno));
    return rc;
}
