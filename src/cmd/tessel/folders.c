/* folders.c - `tessel folders` (also `tessel folder`): virtual folders, their shares and their
 * use (/v1/folders; docs/folders.md). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/tessel/cli.h"
#include "libutil/size.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: tessel folders [ls] [--json]\n"
               "       tessel folders show NAME [--json]\n"
               "       tessel folders create NAME [--project P]\n"
               "       tessel folders share NAME USER --ro|--rw\n"
               "       tessel folders share NAME --project P --ro|--rw\n"
               "       tessel folders unshare NAME USER\n"
               "       tessel folders unshare NAME --project P\n"
               "       tessel folders du NAME [--json]\n"
               "       tessel folders quota NAME SIZE|none   (admin)\n"
               "       tessel folders rm NAME [--yes] [--force]\n"
               "A folder is a directory that tesseld keeps for you under its folder root; only\n"
               "those it is shared with may read it (ro) or also write it (rw), from a job, a\n"
               "shell or the API: the same rights are on the directory's POSIX ACLs\n"
               "(docs/folders.md).  `ls` lists the folders you may reach (an admin: all) and\n"
               "their paths; a folder of a project (--project) is its owners' and members' (rw)\n"
               "and its viewers' (ro).  Its owner, the owners of its project and admins share,\n"
               "unshare and delete it.  `quota` (admin) limits its size: once it is measured at\n"
               "or over it, uploads and jobs mounting it read-write are refused.  `tessel\n"
               "folder` is the same command.\n"
               "\n"
               "  --project P  create: the folder's project; share, unshare: the project shared\n"
               "               with (its viewers get ro whatever the share says)\n"
               "  --ro, --rw   share: read-only or read-write (a share again changes the mode)\n"
               "  --yes        rm: do not ask (rm deletes the folder and every file in it; on a\n"
               "               terminal it asks for the folder's name, elsewhere --yes is needed)\n"
               "  --force      rm: even while active jobs mount it (they see its files go)\n"
               "  --json       print the API's JSON\n");
}

/* A name that goes into a URL path: no '/', '?', '%' or '#' (tesseld checks the rest). */
static bool url_safe(const char *s)
{
    return *s && !strpbrk(s, "/?%#");
}

static const char *str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "-";
}

/* A size of the API (an integer of bytes) as "1.50GiB" (one word: a table's column); "-"
 * for null. */
static void size_of(const json_t *v, char *buf, size_t len)
{
    if (!json_is_integer(v)) {
        snprintf(buf, len, "-");
        return;
    }
    char s[32];
    tsl_format_size((uint64_t)json_integer_value(v), s, sizeof s);
    size_t o = 0;
    for (const char *c = s; *c && o + 1 < len; c++)
        if (*c != ' ')
            buf[o++] = *c;
    buf[o] = '\0';
}

static int list(cli_t *cli)
{
    int rc;
    json_t *ans = cli_get(cli, "/v1/folders", &rc);
    if (!ans)
        return rc;
    static const char *const hdr[] = {"NAME", "OWNER", "PROJECT", "ACCESS",
                                      "PATH", "USED",  "QUOTA",   "PROJECT-QUOTA"};
    cli_table_t *t = cli_table_new(8, hdr);
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(ans, "folders"), i, f)
    {
        /* Sizes: '-' when not measured yet or none; the project's as USED/QUOTA. */
        char used[32], quota[32], pu[32], pq[32], proj[72];
        size_of(json_object_get(f, "used"), used, sizeof used);
        size_of(json_object_get(f, "quota"), quota, sizeof quota);
        size_of(json_object_get(f, "project_used"), pu, sizeof pu);
        size_of(json_object_get(f, "project_quota"), pq, sizeof pq);
        snprintf(proj, sizeof proj, "%s/%s", pu, pq);
        const char *row[] = {str(f, "name"),
                             str(f, "owner"),
                             str(f, "project"),
                             str(f, "access"),
                             str(f, "path"),
                             used,
                             quota,
                             json_is_integer(json_object_get(f, "project_quota")) ? proj : "-"};
        cli_table_add(t, row);
    }
    cli_table_print(t, stdout);
    json_decref(ans);
    return CLI_OK;
}

static int show(cli_t *cli, const char *path)
{
    json_t *f = NULL;
    if (cli_call(cli, "GET", path, NULL, &f) < 0)
        return CLI_ERR;
    if (cli->json) {
        cli_print_json(f);
        json_decref(f);
        return CLI_OK;
    }
    static const char *const keys[][2] = {{"name", "name"},       {"owner", "owner"},
                                          {"project", "project"}, {"your access", "access"},
                                          {"path", "path"},       {"created", "created_at"}};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        char *e = cli_escape(str(f, keys[k][1]));
        printf("%-12s %s\n", keys[k][0], e);
        free(e);
    }
    json_t *q = json_object_get(f, "quota"), *u = json_object_get(f, "used");
    if (json_is_integer(q))
        printf("%-12s %lld bytes\n", "quota", (long long)json_integer_value(q));
    else
        printf("%-12s none\n", "quota");
    if (json_is_integer(u))
        printf("%-12s %lld bytes (measured %s)\n", "used", (long long)json_integer_value(u),
               str(f, "used_at"));
    json_t *pq = json_object_get(f, "project_quota"), *pu = json_object_get(f, "project_used");
    if (json_is_integer(pq) && json_is_integer(pu))
        printf("%-12s %lld bytes, its folders use %lld bytes\n", "project quota",
               (long long)json_integer_value(pq), (long long)json_integer_value(pu));
    else if (json_is_integer(pq))
        printf("%-12s %lld bytes, its folders' use not measured yet\n", "project quota",
               (long long)json_integer_value(pq));
    printf("\nShared with:\n");
    static const char *const hdr[] = {"USER", "PROJECT", "MODE", "ADDED"};
    cli_table_t *t = cli_table_new(4, hdr);
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(f, "shares"), i, s)
    {
        const char *row[] = {str(s, "user"), str(s, "project"), str(s, "mode"), str(s, "added_at")};
        cli_table_add(t, row);
    }
    cli_table_print(t, stdout);
    json_decref(f);
    return CLI_OK;
}

static int du(cli_t *cli, const char *path)
{
    json_t *u = NULL;
    if (cli_call(cli, "GET", path, NULL, &u) < 0)
        return CLI_ERR;
    if (cli->json) {
        cli_print_json(u);
    } else {
        long long bytes = (long long)json_integer_value(json_object_get(u, "bytes"));
        printf("%s: %lld bytes (%.1f MiB) in %lld objects%s\n", str(u, "name"), bytes,
               (double)bytes / (1024.0 * 1024.0),
               (long long)json_integer_value(json_object_get(u, "objects")),
               json_is_true(json_object_get(u, "complete")) ? ""
                                                            : " at least (too many to count all)");
    }
    json_decref(u);
    return CLI_OK;
}

/* Send a change; print the answer with --json, else line (when not NULL). */
static int change(cli_t *cli, const char *method, const char *path, json_t *body, const char *line)
{
    json_t *ans = NULL;
    int rc = cli_call(cli, method, path, body, &ans);
    json_decref(body);
    if (rc < 0)
        return CLI_ERR;
    if (cli->json && ans)
        cli_print_json(ans);
    else if (!cli->json && line)
        printf("%s\n", line);
    json_decref(ans);
    return CLI_OK;
}

/* rm's question on a terminal: true when the person typed the folder's name. */
static bool confirmed(const char *name)
{
    if (!isatty(0))
        return false;
    fprintf(stderr, "Delete folder %s and every file in it?  Type its name to confirm: ", name);
    char line[128];
    if (!fgets(line, sizeof line, stdin))
        return false;
    line[strcspn(line, "\n")] = '\0';
    return strcmp(line, name) == 0;
}

int cmd_folders(cli_t *cli, int argc, char **argv)
{
    enum { O_PROJECT = 256, O_RO, O_RW, O_YES, O_FORCE };
    static const struct option opts[] = {
        {"project", required_argument, NULL, O_PROJECT},
        {"ro", no_argument, NULL, O_RO},
        {"rw", no_argument, NULL, O_RW},
        {"yes", no_argument, NULL, O_YES},
        {"force", no_argument, NULL, O_FORCE},
        {"json", no_argument, NULL, CLI_OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *project = NULL;
    bool ro = false, rw = false, yes = false, force = false;
    int c, rc;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case O_PROJECT:
            project = optarg;
            break;
        case O_RO:
            ro = true;
            break;
        case O_RW:
            rw = true;
            break;
        case O_YES:
            yes = true;
            break;
        case O_FORCE:
            force = true;
            break;
        default:
            if ((rc = cli_common_option(cli, c, argc, argv, usage)) >= 0)
                return rc;
        }
    }
    const char *action = optind < argc ? argv[optind] : "ls";
    char *const *args = argv + optind + 1;
    int nargs = optind < argc ? argc - optind - 1 : 0;
    /* Which arguments and options each action takes: anything else is a usage error. */
    static const struct {
        const char *name;
        int nargs_min, nargs_max;
        bool project, mode, yes;
    } acts[] = {
        {"ls", 0, 0, false, false, false},    {"list", 0, 0, false, false, false},
        {"show", 1, 1, false, false, false},  {"create", 1, 1, true, false, false},
        {"share", 1, 2, true, true, false},   {"unshare", 1, 2, true, false, false},
        {"du", 1, 1, false, false, false},    {"rm", 1, 1, false, false, true},
        {"quota", 2, 2, false, false, false},
    };
    size_t a;
    for (a = 0; a < sizeof acts / sizeof acts[0]; a++)
        if (strcmp(acts[a].name, action) == 0)
            break;
    if (a == sizeof acts / sizeof acts[0])
        return cli_usage(
            cli, "unknown action '%s' (ls, show, create, share, unshare, du, rm, quota)", action);
    if (nargs < acts[a].nargs_min || nargs > acts[a].nargs_max)
        return cli_usage(cli, "%s takes %s", action,
                         acts[a].nargs_max == 0   ? "no argument"
                         : acts[a].nargs_max == 1 ? "one folder name"
                         : a == 8                 ? "a folder name and a size (or none)"
                                                  : "a folder name and a user (or --project P)");
    const struct {
        bool given, allowed;
        const char *opt;
    } given[] = {
        {project != NULL, acts[a].project, "--project"},
        {ro, acts[a].mode, "--ro"},
        {rw, acts[a].mode, "--rw"},
        {yes, acts[a].yes, "--yes"},
        {force, acts[a].yes, "--force"},
    };
    for (size_t i = 0; i < sizeof given / sizeof given[0]; i++)
        if (given[i].given && !given[i].allowed)
            return cli_usage(cli, "%s does not take %s", action, given[i].opt);
    for (int i = 0; i < nargs; i++)
        if (!url_safe(args[i]))
            return cli_usage(cli, "'%s': not a name", args[i]);
    if (project && !url_safe(project))
        return cli_usage(cli, "'%s': not a project name", project);
    /* share and unshare: a user or --project, not both. */
    if ((a == 4 || a == 5) && (nargs == 2) == (project != NULL))
        return cli_usage(cli, "%s takes a user or --project P (one of them)", action);
    if (a == 4 && ro == rw)
        return cli_usage(cli, "share takes --ro or --rw (one of them)");

    const char *name = nargs > 0 ? args[0] : NULL;
    char path[256], line[256];
    if (name)
        snprintf(path, sizeof path, "/v1/folders/%s", name);
    switch (a) {
    case 0:
    case 1:
        return list(cli);
    case 2:
        return show(cli, path);
    case 3: {
        json_t *body = json_pack("{s:s}", "name", name);
        if (project)
            json_object_set_new(body, "project", json_string(project));
        snprintf(line, sizeof line, "folder %s created%s%s", name, project ? " in project " : "",
                 project ? project : "");
        return change(cli, "POST", "/v1/folders", body, line);
    }
    case 4: {
        json_t *body = json_pack("{s:s, s:s}", project ? "project" : "user",
                                 project ? project : args[1], "mode", rw ? "rw" : "ro");
        strncat(path, "/shares", sizeof path - strlen(path) - 1);
        snprintf(line, sizeof line, "folder %s shared with %s %s (%s)", name,
                 project ? "project" : "user", project ? project : args[1],
                 rw ? "read-write" : "read-only");
        return change(cli, "POST", path, body, line);
    }
    case 5:
        snprintf(path, sizeof path, "/v1/folders/%s/shares/%s/%s", name,
                 project ? "projects" : "users", project ? project : args[1]);
        snprintf(line, sizeof line, "folder %s no longer shared with %s %s", name,
                 project ? "project" : "user", project ? project : args[1]);
        return change(cli, "DELETE", path, NULL, line);
    case 8: {
        json_t *body = json_object();
        if (strcmp(args[1], "none") == 0) {
            json_object_set_new(body, "quota", json_null());
        } else {
            uint64_t b;
            tsl_error_t err;
            if (cli_parse_size(args[1], &b, &err) < 0) {
                json_decref(body);
                return cli_usage(cli, "quota: %s", err.text);
            }
            json_object_set_new(body, "quota", json_integer((json_int_t)b));
        }
        snprintf(line, sizeof line, "folder %s: quota %s", name, args[1]);
        return change(cli, "PATCH", path, body, line);
    }
    case 6:
        strncat(path, "/usage", sizeof path - strlen(path) - 1);
        return du(cli, path);
    default:
        if (!yes && !confirmed(name))
            return cli_fail("folder %s not deleted: confirm on a terminal, or give --yes", name);
        if (force)
            strncat(path, "?force=1", sizeof path - strlen(path) - 1);
        snprintf(line, sizeof line, "folder %s deleted", name);
        return change(cli, "DELETE", path, NULL, line);
    }
}
