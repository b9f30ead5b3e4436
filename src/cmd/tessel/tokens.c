/* tokens.c - `tessel tokens`: list, create and revoke API tokens (/v1/tokens).  Users manage
 * their own; an admin anyone's. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cmd/tessel/cli.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: tessel tokens [list] [--user NAME] [--json]\n"
               "       tessel tokens add [--user NAME] [--name LABEL]\n"
               "       tessel tokens rm ID\n"
               "List your API tokens (an admin: anyone's with --user), create one (its secret\n"
               "is printed once, on stdout), or revoke one.\n"
               "\n"
               "  --user NAME      whose tokens (admin; default: yours)\n"
               "  --name LABEL     a label for the new token (\"laptop\")\n"
               "  --json           print the API's JSON\n");
}

static int list(cli_t *cli, const char *user)
{
    char path[256] = "/v1/tokens";
    if (user) {
        char *esc = tclient_escape(user);
        snprintf(path, sizeof path, "/v1/tokens?user=%s", esc ? esc : "");
        free(esc);
    }
    int rc;
    json_t *ans = cli_get(cli, path, &rc);
    if (!ans)
        return rc;
    static const char *const hdr[] = {">ID", "USER", "NAME", "CREATED"};
    cli_table_t *t = cli_table_new(4, hdr);
    size_t i;
    json_t *k;
    json_array_foreach(json_object_get(ans, "tokens"), i, k)
    {
        char id[32];
        snprintf(id, sizeof id, "%lld", (long long)json_integer_value(json_object_get(k, "id")));
        const char *row[] = {id, json_string_value(json_object_get(k, "user")),
                             json_string_value(json_object_get(k, "name")),
                             json_string_value(json_object_get(k, "created_at"))};
        cli_table_add(t, row);
    }
    cli_table_print(t, stdout);
    json_decref(ans);
    return CLI_OK;
}

json_t *cli_token_create(cli_t *cli, const char *user, const char *label)
{
    json_t *body = json_object();
    if (user)
        json_object_set_new(body, "user", json_string(user));
    if (label)
        json_object_set_new(body, "name", json_string(label));
    json_t *tok = NULL;
    int r = cli_call(cli, "POST", "/v1/tokens", body, &tok);
    json_decref(body);
    return r < 0 ? NULL : tok;
}

void cli_token_print_secret(const json_t *tok)
{
    printf("%s\n", json_string_value(json_object_get(tok, "token")));
}

int cmd_tokens(cli_t *cli, int argc, char **argv)
{
    enum { O_USER = 256, O_NAME };
    static const struct option opts[] = {
        {"user", required_argument, NULL, O_USER},
        {"name", required_argument, NULL, O_NAME},
        {"json", no_argument, NULL, CLI_OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *user = NULL, *label = NULL;
    int c, rc;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case O_USER:
            user = optarg;
            break;
        case O_NAME:
            label = optarg;
            break;
        default:
            if ((rc = cli_common_option(cli, c, argc, argv, usage)) >= 0)
                return rc;
        }
    }
    const char *action = optind < argc ? argv[optind] : "list";
    int nargs = argc - optind;
    if (strcmp(action, "list") == 0) {
        if (nargs > 1 || label)
            return cli_usage(cli, "list takes only --user and --json");
        return list(cli, user);
    }
    if (strcmp(action, "add") == 0) {
        if (nargs != 1)
            return cli_usage(cli, "add takes no arguments (use --user, --name)");
        json_t *tok = cli_token_create(cli, user, label);
        if (!tok)
            return CLI_ERR;
        if (cli->json)
            cli_print_json(tok);
        else
            cli_token_print_secret(tok);
        json_decref(tok);
        return CLI_OK;
    }
    if (strcmp(action, "rm") == 0) {
        if (nargs != 2 || user || label)
            return cli_usage(cli, "rm takes one token id");
        int64_t id;
        tsl_error_t err;
        if (cli_parse_int(argv[optind + 1], 1, INT64_MAX, &id, &err) < 0)
            return cli_usage(cli, "token id %s", err.text);
        char path[64];
        snprintf(path, sizeof path, "/v1/tokens/%lld", (long long)id);
        if (cli_call(cli, "DELETE", path, NULL, NULL) < 0)
            return CLI_ERR;
        if (!cli->json)
            printf("token %lld revoked\n", (long long)id);
        return CLI_OK;
    }
    return cli_usage(cli, "unknown action '%s' (list, add, rm)", action);
}
