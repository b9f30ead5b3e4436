/* login.c - `tessel login`: check a token against tesseld (GET /v1/whoami) and keep it, with
 * tesseld's URL, in the config file (mode 0600); and `tessel whoami`. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "cmd/tessel/cli.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tessel login [--url URL] [--token TOKEN | --token-file FILE | --data-dir DIR]\n"
            "Check a token against tesseld and save the URL and token in the config file\n"
            "(~/.config/tessel/config or $TESSEL_CONFIG, mode 0600).  Without a token option,\n"
            "TESSEL_TOKEN is used, else the token is read from stdin.\n"
            "\n"
            "  --url URL        tesseld's address (default: TESSEL_URL, the saved one, or\n"
            "                   " TCLIENT_DEFAULT_URL "; unix:PATH for a local socket)\n"
            "  --token TOKEN    the token (visible in `ps`: prefer --token-file)\n"
            "  --token-file F   read the token from file F\n"
            "  --data-dir DIR   a local tesseld's data dir: its admin.token, and its address\n"
            "                   from DIR/tesseld.addr when there is one\n"
            "  --json           print who you are as JSON\n");
}

/* Read the first line of path (or stdin for NULL) into buf, without the newline. */
static int read_line(const char *path, char *buf, size_t len, tsl_error_t *err)
{
    FILE *f = path ? fopen(path, "r") : stdin;
    if (!f)
        return tsl_errprintf(err, "%s: %s", path, strerror(errno));
    struct termios old, quiet;
    bool tty = !path && isatty(fileno(f)) && tcgetattr(fileno(f), &old) == 0;
    if (tty) {
        fprintf(stderr, "token: ");
        quiet = old;
        quiet.c_lflag &= ~(tcflag_t)ECHO;
        tcsetattr(fileno(f), TCSAFLUSH, &quiet);
    }
    char *r = fgets(buf, (int)len, f);
    if (tty) {
        tcsetattr(fileno(f), TCSAFLUSH, &old);
        fputc('\n', stderr);
    }
    if (path)
        fclose(f);
    if (!r) {
        errno = EINVAL;
        return tsl_errprintf(err, "%s: no token in it", path ? path : "stdin");
    }
    buf[strcspn(buf, "\r\n")] = '\0';
    if (!buf[0]) {
        errno = EINVAL;
        return tsl_errprintf(err, "%s: empty token", path ? path : "stdin");
    }
    return 0;
}

int cmd_login(cli_t *cli, int argc, char **argv)
{
    enum { O_URL = 256, O_TOKEN, O_TOKEN_FILE, O_DATA_DIR };
    static const struct option opts[] = {
        {"url", required_argument, NULL, O_URL},
        {"token", required_argument, NULL, O_TOKEN},
        {"token-file", required_argument, NULL, O_TOKEN_FILE},
        {"data-dir", required_argument, NULL, O_DATA_DIR},
        {"json", no_argument, NULL, CLI_OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *url = NULL, *token = NULL, *token_file = NULL, *data_dir = NULL;
    int c, rc;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case O_URL:
            url = optarg;
            break;
        case O_TOKEN:
            token = optarg;
            break;
        case O_TOKEN_FILE:
            token_file = optarg;
            break;
        case O_DATA_DIR:
            data_dir = optarg;
            break;
        default:
            if ((rc = cli_common_option(cli, c, argc, argv, usage)) >= 0)
                return rc;
        }
    }
    if (optind < argc)
        return cli_usage(cli, "unexpected argument '%s'", argv[optind]);
    if (!!token + !!token_file + !!data_dir > 1)
        return cli_usage(cli, "give one of --token, --token-file, --data-dir");
    tclient_config_t cfg = cli->cfg;
    tsl_error_t err;
    char line[512], path[4200];
    if (data_dir) {
        snprintf(path, sizeof path, "%s/tesseld.addr", data_dir);
        char addr[256];
        if (!url && read_line(path, addr, sizeof addr, NULL) == 0)
            snprintf(cfg.url, sizeof cfg.url, "http://%s", addr);
        snprintf(path, sizeof path, "%s/admin.token", data_dir);
        token_file = path;
    }
    /* A token is for a TCP address: on the local socket the kernel already says who you are
     * (and a token of another user is refused there).  So without --url, TESSEL_URL or a saved
     * URL, login goes to the default TCP address, not to the socket. */
    if (!url && cfg.url_is_default && !data_dir)
        snprintf(cfg.url, sizeof cfg.url, "%s", TCLIENT_DEFAULT_URL);
    if (url) {
        size_t n = strlen(url);
        while (n > 0 && url[n - 1] == '/')
            n--;
        if (n == 0 || n >= sizeof cfg.url)
            return cli_usage(cli, "--url: '%s': not a URL", url);
        snprintf(cfg.url, sizeof cfg.url, "%.*s", (int)n, url);
    }
    if (token) {
        snprintf(line, sizeof line, "%s", token);
    } else if (token_file || !cfg.token_from_env) {
        if (read_line(token_file, line, sizeof line, &err) < 0)
            return cli_fail("%s", err.text);
    } else {
        snprintf(line, sizeof line, "%s", cfg.token);
    }
    if (strlen(line) >= sizeof cfg.token)
        return cli_fail("the token is too long");
    memcpy(cfg.token, line, strlen(line) + 1);

    tclient_t *c2 = tclient_new(cfg.url, cfg.token, &err);
    if (!c2)
        return cli_fail("%s", err.text);
    json_t *me;
    if (tclient_request(c2, "GET", "/v1/whoami", NULL, &me, &err) < 0) {
        tclient_destroy(c2);
        return cli_fail("%s", err.text);
    }
    tclient_destroy(c2);
    if (tclient_config_save(&cfg, cfg.path, &err) < 0) {
        json_decref(me);
        return cli_fail("%s", err.text);
    }
    if (cli->json)
        cli_print_json(me);
    else
        printf("logged in to %s as %s (%s); saved in %s\n", cfg.url,
               json_string_value(json_object_get(me, "user")),
               json_string_value(json_object_get(me, "role")), cfg.path);
    json_decref(me);
    return CLI_OK;
}

static void whoami_usage(FILE *f)
{
    fprintf(f, "usage: tessel whoami [--json]\n"
               "Print who tesseld takes you for (the configured token's user, or on the local\n"
               "socket your own account), your role, and tesseld's URL.\n");
}

int cmd_whoami(cli_t *cli, int argc, char **argv)
{
    int rc = cli_json_only_args(cli, argc, argv, whoami_usage);
    if (rc >= 0)
        return rc;
    json_t *me;
    if (cli_call(cli, "GET", "/v1/whoami", NULL, &me) < 0)
        return CLI_ERR;
    if (cli->json)
        cli_print_json(me);
    else
        printf("%s (%s) at %s\n", json_string_value(json_object_get(me, "user")),
               json_string_value(json_object_get(me, "role")), cli->cfg.url);
    json_decref(me);
    return CLI_OK;
}
