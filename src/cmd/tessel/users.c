/* users.c - `tessel users` (admin): list users, add one (and a first token for them), remove
 * one (/v1/users, /v1/tokens). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cmd/tessel/cli.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: tessel users [list] [--json]\n"
               "       tessel users add NAME [--admin]\n"
               "       tessel users rm NAME\n"
               "Manage users (admin only).  `add` creates the user and a first API token,\n"
               "printed once on stdout: hand it to them for `tessel login`.  `rm` revokes the\n"
               "user's tokens; their jobs stay.\n"
               "\n"
               "  --admin          the new user is an admin\n"
               "  --json           print the API's JSON\n");
}

static int list(cli_t *cli)
{
    int rc;
    json_t *ans = cli_get(cli, "/v1/users", &rc);
    if (!ans)
        return rc;
    static const char *const hdr[] = {"NAME", "ROLE", ">ACTIVE-JOBS", "CREATED"};
    cli_table_t *t = cli_table_new(4, hdr);
    size_t i;
    json_t *u;
    json_array_foreach(json_object_get(ans, "users"), i, u)
    {
        char n[32];
        snprintf(n, sizeof n, "%lld",
                 (long long)json_integer_value(json_object_get(u, "jobs_active")));
        const char *row[] = {json_string_value(json_object_get(u, "name")),
                             json_string_value(json_object_get(u, "role")), n,
                             json_string_value(json_object_get(u, "created_at"))};
        cli_table_add(t, row);
    }
    cli_table_print(t, stdout);
    json_decref(ans);
    return CLI_OK;
}

int cmd_users(cli_t *cli, int argc, char **argv)
{
    enum { O_ADMIN = 256 };
    static const struct option opts[] = {
        {"admin", no_argument, NULL, O_ADMIN},
        {"json", no_argument, NULL, CLI_OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool admin = false;
    int c, rc;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case O_ADMIN:
            admin = true;
            break;
        default:
            if ((rc = cli_common_option(cli, c, argc, argv, usage)) >= 0)
                return rc;
        }
    }
    const char *action = optind < argc ? argv[optind] : "list";
    int nargs = argc - optind;
    if (strcmp(action, "list") == 0) {
        if (nargs > 1 || admin)
            return cli_usage(cli, "list takes no arguments or options but --json");
        return list(cli);
    }
    bool add = strcmp(action, "add") == 0, rm = strcmp(action, "rm") == 0;
    if (!add && !rm)
        return cli_usage(cli, "unknown action '%s' (list, add, rm)", action);
    if (nargs != 2)
        return cli_usage(cli, "%s takes one user name", action);
    const char *name = argv[optind + 1];
    if (strchr(name, '/') || strchr(name, '?') || strchr(name, '%'))
        return cli_usage(cli, "'%s': not a user name", name);
    if (rm) {
        if (admin)
            return cli_usage(cli, "rm takes no options");
        char path[256];
        snprintf(path, sizeof path, "/v1/users/%s", name);
        if (cli_call(cli, "DELETE", path, NULL, NULL) < 0)
            return CLI_ERR;
        if (!cli->json)
            printf("user %s removed, their tokens revoked\n", name);
        return CLI_OK;
    }
    json_t *body = json_pack("{s:s, s:s}", "name", name, "role", admin ? "admin" : "user");
    json_t *user = NULL, *tok = NULL;
    rc = CLI_ERR;
    if (cli_call(cli, "POST", "/v1/users", body, &user) < 0)
        goto out;
    if (!(tok = cli_token_create(cli, name, "created by tessel users add")))
        goto out;
    if (cli->json) {
        json_object_set(user, "token", json_object_get(tok, "token"));
        cli_print_json(user);
    } else {
        fprintf(stderr, "tessel: user %s (%s) created; their API token (shown only now):\n", name,
                admin ? "admin" : "user");
        cli_token_print_secret(tok);
    }
    rc = CLI_OK;
out:
    json_decref(body);
    json_decref(user);
    json_decref(tok);
    return rc;
}
