/* projects.c - `tessel projects`: list and show projects (members, the quota and use of the
 * project's queue), create and delete them, manage members and roles, and the default project
 * (/v1/projects, /v1/users/NAME/default-project; docs/projects.md). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/tessel/cli.h"
#include "libutil/size.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tessel projects [ls] [--json]\n"
            "       tessel projects show NAME [--json]\n"
            "       tessel projects create NAME [--queue Q] [--owner USER] [--description TEXT]\n"
            "                              [--private-jobs]\n"
            "       tessel projects rm NAME [--force]\n"
            "       tessel projects add-member NAME USER [--role owner|member|viewer]\n"
            "       tessel projects rm-member NAME USER\n"
            "       tessel projects set-role NAME USER owner|member|viewer\n"
            "       tessel projects default [NAME] [--user USER]\n"
            "       tessel projects quota NAME SIZE|none   (admin)\n"
            "A project groups users, each an owner, member or viewer, and sends its jobs to its\n"
            "queue, whose guarantee and limit are its quota (docs/projects.md).  Members submit\n"
            "jobs in it (`tessel run --project NAME`), viewers see its jobs, owners manage its\n"
            "members; admins do everything.  `ls` lists your projects (an admin: all);\n"
            "`show` its members and its queue's use; `default` says or sets the project of\n"
            "your jobs submitted without --project; `quota` limits the space its folders use\n"
            "together (docs/folders.md).\n"
            "\n"
            "  --queue Q          the project's queue, a leaf queue (admin; default: default)\n"
            "  --owner USER       its first owner (admin; a user who creates one owns it)\n"
            "  --description TEXT one line for people (at most 256 bytes)\n"
            "  --private-jobs     members see only their own jobs of it (default: they see\n"
            "                     each other's)\n"
            "  --force            rm: delete it even with active jobs (admin; they run on)\n"
            "  --role ROLE        add-member: owner, member (default) or viewer\n"
            "  --user USER        default: another user's default project (admin)\n"
            "  --json             print the API's JSON\n");
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

static int list(cli_t *cli)
{
    int rc;
    json_t *ans = cli_get(cli, "/v1/projects", &rc);
    if (!ans)
        return rc;
    static const char *const hdr[] = {"NAME",         "QUEUE", "ROLE",       ">MEMBERS",
                                      ">ACTIVE-JOBS", "JOBS",  "DESCRIPTION"};
    cli_table_t *t = cli_table_new(7, hdr);
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(ans, "projects"), i, p)
    {
        char members[32], active[32];
        snprintf(members, sizeof members, "%lld",
                 (long long)json_integer_value(json_object_get(p, "members_count")));
        snprintf(active, sizeof active, "%lld",
                 (long long)json_integer_value(json_object_get(p, "jobs_active")));
        const char *row[] = {str(p, "name"),
                             str(p, "queue"),
                             str(p, "role"),
                             members,
                             active,
                             json_is_true(json_object_get(p, "share_jobs")) ? "shared" : "private",
                             json_string_value(json_object_get(p, "description"))};
        cli_table_add(t, row);
    }
    cli_table_print(t, stdout);
    json_decref(ans);
    return CLI_OK;
}

/* One line for a field of the project: "key  value" (value escaped). */
static void field(const char *key, const char *value)
{
    char *e = cli_escape(value);
    printf("%-12s %s\n", key, e);
    free(e);
}

static int show(cli_t *cli, const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "/v1/projects/%s", name);
    json_t *p = NULL, *q = NULL;
    if (cli_call(cli, "GET", path, NULL, &p) < 0)
        return CLI_ERR;
    /* Its queue: the quota and what the queue's jobs use (every user may read queues). */
    snprintf(path, sizeof path, "/v1/queues/%s", str(p, "queue"));
    if (cli_call(cli, "GET", path, NULL, &q) < 0) {
        json_decref(p);
        return CLI_ERR;
    }
    if (cli->json) {
        json_t *o = json_pack("{s:O, s:O}", "project", p, "queue", q);
        cli_print_json(o);
        json_decref(o);
        json_decref(p);
        json_decref(q);
        return CLI_OK;
    }
    char buf[128];
    field("name", str(p, "name"));
    field("description", str(p, "description"));
    field("your role", str(p, "role"));
    field("jobs", json_is_true(json_object_get(p, "share_jobs"))
                      ? "shared: members and viewers see each other's jobs of the project"
                      : "private: each member sees their own jobs only");
    snprintf(buf, sizeof buf, "%lld",
             (long long)json_integer_value(json_object_get(p, "jobs_active")));
    field("active jobs", buf);
    field("created", str(p, "created_at"));
    field("created by", str(p, "created_by"));
    /* Its folders' use and quota together (null: none, or not measured yet). */
    json_t *fq = json_object_get(p, "folder_quota"), *fu = json_object_get(p, "folder_used");
    char used[32] = "-", lim[32] = "none";
    if (json_is_integer(fu))
        tsl_format_size((uint64_t)json_integer_value(fu), used, sizeof used);
    if (json_is_integer(fq))
        tsl_format_size((uint64_t)json_integer_value(fq), lim, sizeof lim);
    snprintf(buf, sizeof buf, "%s used of %s (measured, refused at the API)", used, lim);
    field("folders", buf);
    field("queue", str(p, "queue"));
    printf("\nQuota and use of queue %s (used/guarantee/limit; '-': none):\n", str(p, "queue"));
    static const char *const qh[] = {"GPU", "GPU-MEM", "CPU", "MEM", ">PENDING", ">RUNNING"};
    cli_table_t *t = cli_table_new(6, qh);
    cli_queue_use_t u;
    cli_queue_use(q, &u);
    const char *qrow[] = {u.gpu, u.gpu_mem, u.cpu, u.mem, u.pending, u.running};
    cli_table_add(t, qrow);
    cli_table_print(t, stdout);
    if (!json_array_size(json_object_get(p, "members")) &&
        json_integer_value(json_object_get(p, "members_count")) > 0) {
        /* The project 'default': every user, listed to admins only. */
        printf("\nMembers: %lld (listed to admins only)\n",
               (long long)json_integer_value(json_object_get(p, "members_count")));
        json_decref(p);
        json_decref(q);
        return CLI_OK;
    }
    printf("\nMembers:\n");
    static const char *const mh[] = {"USER", "ROLE", "ADDED"};
    t = cli_table_new(3, mh);
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(p, "members"), i, m)
    {
        const char *row[] = {str(m, "user"), str(m, "role"), str(m, "added_at")};
        cli_table_add(t, row);
    }
    cli_table_print(t, stdout);
    json_decref(p);
    json_decref(q);
    return CLI_OK;
}

/* The caller's user name (GET /v1/whoami) into buf.  0, or -1 after the error. */
static int whoami(cli_t *cli, char *buf, size_t len)
{
    json_t *me = NULL;
    if (cli_call(cli, "GET", "/v1/whoami", NULL, &me) < 0)
        return -1;
    snprintf(buf, len, "%s", str(me, "user"));
    json_decref(me);
    return 0;
}

static int default_project(cli_t *cli, const char *project, const char *user)
{
    char me[64], path[256];
    if (!user) {
        if (whoami(cli, me, sizeof me) < 0)
            return CLI_ERR;
        user = me;
    }
    snprintf(path, sizeof path, "/v1/users/%s/default-project", user);
    json_t *body = project ? json_pack("{s:s}", "project", project) : NULL;
    json_t *ans = NULL;
    int rc = cli_call(cli, project ? "PUT" : "GET", path, body, &ans);
    json_decref(body);
    if (rc < 0)
        return CLI_ERR;
    if (cli->json)
        cli_print_json(ans);
    else if (project)
        printf("the default project of %s is now %s\n", str(ans, "user"), str(ans, "project"));
    else
        printf("%s\n", str(ans, "project"));
    json_decref(ans);
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

int cmd_projects(cli_t *cli, int argc, char **argv)
{
    enum { O_QUEUE = 256, O_OWNER, O_DESC, O_PRIVATE, O_FORCE, O_ROLE, O_USER };
    static const struct option opts[] = {
        {"queue", required_argument, NULL, O_QUEUE},
        {"owner", required_argument, NULL, O_OWNER},
        {"description", required_argument, NULL, O_DESC},
        {"private-jobs", no_argument, NULL, O_PRIVATE},
        {"force", no_argument, NULL, O_FORCE},
        {"role", required_argument, NULL, O_ROLE},
        {"user", required_argument, NULL, O_USER},
        {"json", no_argument, NULL, CLI_OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *queue = NULL, *owner = NULL, *desc = NULL, *role = NULL, *user = NULL;
    bool private_jobs = false, force = false;
    int c, rc;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case O_QUEUE:
            queue = optarg;
            break;
        case O_OWNER:
            owner = optarg;
            break;
        case O_DESC:
            desc = optarg;
            break;
        case O_PRIVATE:
            private_jobs = true;
            break;
        case O_FORCE:
            force = true;
            break;
        case O_ROLE:
            role = optarg;
            break;
        case O_USER:
            user = optarg;
            break;
        default:
            if ((rc = cli_common_option(cli, c, argc, argv, usage)) >= 0)
                return rc;
        }
    }
    const char *action = optind < argc ? argv[optind] : "ls";
    char *const *args = argv + optind + 1;
    int nargs = optind < argc ? argc - optind - 1 : 0;
    /* Which options each action takes: anything else is a usage error. */
    static const struct {
        const char *name;
        int nargs_min, nargs_max;
        bool queue, owner, desc, priv, force, role, user;
    } acts[] = {
        {"ls", 0, 0, false, false, false, false, false, false, false},
        {"list", 0, 0, false, false, false, false, false, false, false},
        {"show", 1, 1, false, false, false, false, false, false, false},
        {"create", 1, 1, true, true, true, true, false, false, false},
        {"rm", 1, 1, false, false, false, false, true, false, false},
        {"add-member", 2, 2, false, false, false, false, false, true, false},
        {"rm-member", 2, 2, false, false, false, false, false, false, false},
        {"set-role", 3, 3, false, false, false, false, false, false, false},
        {"default", 0, 1, false, false, false, false, false, false, true},
        {"quota", 2, 2, false, false, false, false, false, false, false},
    };
    size_t a;
    for (a = 0; a < sizeof acts / sizeof acts[0]; a++)
        if (strcmp(acts[a].name, action) == 0)
            break;
    if (a == sizeof acts / sizeof acts[0])
        return cli_usage(cli,
                         "unknown action '%s' (ls, show, create, rm, add-member, rm-member, "
                         "set-role, default, quota)",
                         action);
    if (nargs < acts[a].nargs_min || nargs > acts[a].nargs_max)
        return cli_usage(cli, "%s takes %s", action,
                         acts[a].nargs_max == 0 ? "no argument"
                         : acts[a].nargs_max == 1
                             ? (acts[a].nargs_min ? "one project name" : "at most a project name")
                         : a == 9                 ? "a project name and a size (or none)"
                         : acts[a].nargs_max == 2 ? "a project name and a user name"
                                                  : "a project name, a user name and a role");
    const struct {
        bool given, allowed;
        const char *opt;
    } given[] = {
        {queue != NULL, acts[a].queue, "--queue"},
        {owner != NULL, acts[a].owner, "--owner"},
        {desc != NULL, acts[a].desc, "--description"},
        {private_jobs, acts[a].priv, "--private-jobs"},
        {force, acts[a].force, "--force"},
        {role != NULL, acts[a].role, "--role"},
        {user != NULL, acts[a].user, "--user"},
    };
    for (size_t i = 0; i < sizeof given / sizeof given[0]; i++)
        if (given[i].given && !given[i].allowed)
            return cli_usage(cli, "%s does not take %s", action, given[i].opt);
    for (int i = 0; i < (a == 9 ? 1 : nargs); i++)
        if (!url_safe(args[i]))
            return cli_usage(cli, "'%s': not a name", args[i]);
    if (user && !url_safe(user))
        return cli_usage(cli, "'%s': not a user name", user);

    const char *name = nargs > 0 ? args[0] : NULL;
    char path[256], line[256];
    if (name)
        snprintf(path, sizeof path, "/v1/projects/%s", name);
    switch (a) {
    case 0:
    case 1:
        return list(cli);
    case 2:
        return show(cli, name);
    case 3: {
        json_t *body = json_pack("{s:s}", "name", name);
        if (queue)
            json_object_set_new(body, "queue", json_string(queue));
        if (owner)
            json_object_set_new(body, "owner", json_string(owner));
        if (desc)
            json_object_set_new(body, "description", json_string(desc));
        if (private_jobs)
            json_object_set_new(body, "share_jobs", json_false());
        snprintf(line, sizeof line, "project %s created (queue %s)", name,
                 queue ? queue : "default");
        return change(cli, "POST", "/v1/projects", body, line);
    }
    case 4:
        if (force)
            strncat(path, "?force=1", sizeof path - strlen(path) - 1);
        snprintf(line, sizeof line, "project %s deleted", name);
        return change(cli, "DELETE", path, NULL, line);
    case 5: {
        json_t *body = json_pack("{s:s, s:s}", "user", args[1], "role", role ? role : "member");
        strncat(path, "/members", sizeof path - strlen(path) - 1);
        snprintf(line, sizeof line, "%s added to project %s as %s", args[1], name,
                 role ? role : "member");
        return change(cli, "POST", path, body, line);
    }
    case 6:
        snprintf(path, sizeof path, "/v1/projects/%s/members/%s", name, args[1]);
        snprintf(line, sizeof line, "%s removed from project %s", args[1], name);
        return change(cli, "DELETE", path, NULL, line);
    case 7:
        snprintf(path, sizeof path, "/v1/projects/%s/members/%s", name, args[1]);
        snprintf(line, sizeof line, "%s is now %s of project %s", args[1], args[2], name);
        return change(cli, "PATCH", path, json_pack("{s:s}", "role", args[2]), line);
    case 8:
        return default_project(cli, name, user);
    default: {
        json_t *body = json_object();
        if (strcmp(args[1], "none") == 0) {
            json_object_set_new(body, "folder_quota", json_null());
        } else {
            uint64_t b;
            tsl_error_t err;
            if (cli_parse_size(args[1], &b, &err) < 0) {
                json_decref(body);
                return cli_usage(cli, "quota: %s", err.text);
            }
            json_object_set_new(body, "folder_quota", json_integer((json_int_t)b));
        }
        snprintf(line, sizeof line, "project %s: folder quota %s", name, args[1]);
        return change(cli, "PATCH", path, body, line);
    }
    }
}
