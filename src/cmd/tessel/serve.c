/* serve.c - `tessel serve` (create an inference service) and `tessel services` (list, show,
 * scale, remove, token): /v1/services (docs/serving.md). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/tessel/cli.h"

static void serve_usage(FILE *f)
{
    fprintf(f, "usage: tessel serve NAME [--replicas N] [--gpu G] [--gpu-mem SIZE] [--cpu N]\n"
               "                    [--mem SIZE] [--queue Q] [--health PATH] [--port PORT]\n"
               "                    [--concurrency C] [--split capacity|even]\n"
               "                    [--env NAME=VALUE]... -- CMD [ARG]...\n"
               "Keep N replicas of an HTTP inference server running, each a job of the inference\n"
               "class in a GPU slice, behind one endpoint on 127.0.0.1 (HAProxy) that splits the\n"
               "traffic by each replica's measured speed (docs/serving.md).  Each replica listens\n"
               "on 127.0.0.1:$PORT (set by Tessel) and answers 200 at the health path.  Callers\n"
               "send `Authorization: Bearer TOKEN`: one of your API tokens or a service token\n"
               "(`tessel services token NAME`).\n"
               "\n"
               "  --replicas N       replicas to keep running (default 1, at most 64)\n"
               "  --gpu G            each replica's GPU share: 0.25, or whole GPUs (1, 2, ...)\n"
               "  --gpu-mem SIZE     each replica's GPU memory (\"6G\"; default: its share)\n"
               "  --cpu N            each replica's CPU cores\n"
               "  --mem SIZE         each replica's memory\n"
               "  --queue Q          the replicas' queue (default: default)\n"
               "  --health PATH      the health check's path (default /health)\n"
               "  --port PORT        the endpoint's port (default: a free one)\n"
               "  --concurrency C    requests one replica serves at once (default 1; 0: no limit\n"
               "                     at the proxy, the replica queues what it gets)\n"
               "  --split MODE       capacity: weights from each replica's measured rate\n"
               "                     (default); even: equal weights\n"
               "  --env NAME=VALUE   an environment variable of the replicas (repeatable)\n"
               "  --json             print the API's JSON\n");
}

static void services_usage(FILE *f)
{
    fprintf(f, "usage: tessel services [ls] [--json]\n"
               "       tessel services show NAME [--json]\n"
               "       tessel services scale NAME N\n"
               "       tessel services rm NAME\n"
               "       tessel services token NAME [--name LABEL]\n"
               "       tessel services tokens NAME [--json]\n"
               "       tessel services token-rm NAME ID\n"
               "Your inference services (an admin: all).  `show` lists each replica's GPU,\n"
               "health, weight, measured service rate, share of the traffic and latency;\n"
               "`scale` sets the number of replicas; `rm` stops them and removes the service;\n"
               "`token` makes a token that may call the service (printed once), `tokens`\n"
               "lists them, `token-rm` revokes one.\n"
               "\n"
               "  --name LABEL     a label for the new token\n"
               "  --json           print the API's JSON\n");
}

/* A name that goes into a URL path: no '/', '?', '%' or '#' (tesseld checks the rest). */
static bool url_safe(const char *s)
{
    return *s && !strpbrk(s, "/?%#");
}

int cmd_serve(cli_t *cli, int argc, char **argv)
{
    enum {
        O_REPLICAS = 256,
        O_GPU,
        O_GPU_MEM,
        O_CPU,
        O_MEM,
        O_QUEUE,
        O_HEALTH,
        O_PORT,
        O_CONC,
        O_SPLIT,
        O_ENV
    };
    static const struct option opts[] = {
        {"replicas", required_argument, NULL, O_REPLICAS},
        {"gpu", required_argument, NULL, O_GPU},
        {"gpu-mem", required_argument, NULL, O_GPU_MEM},
        {"cpu", required_argument, NULL, O_CPU},
        {"mem", required_argument, NULL, O_MEM},
        {"queue", required_argument, NULL, O_QUEUE},
        {"health", required_argument, NULL, O_HEALTH},
        {"port", required_argument, NULL, O_PORT},
        {"concurrency", required_argument, NULL, O_CONC},
        {"split", required_argument, NULL, O_SPLIT},
        {"env", required_argument, NULL, O_ENV},
        {"json", no_argument, NULL, CLI_OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    json_t *body = json_object(), *env = json_object();
    int c, rc = CLI_USAGE;
    int64_t n;
    uint64_t bytes;
    tsl_error_t err;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case O_REPLICAS:
            if (cli_parse_int(optarg, 0, 64, &n, &err) < 0) {
                rc = cli_usage(cli, "--replicas %s", err.text);
                goto out;
            }
            json_object_set_new(body, "replicas", json_integer(n));
            break;
        case O_GPU: {
            int64_t milli;
            if (cli_parse_gpu(optarg, &milli, &err) == 0) {
                json_object_set_new(body, "gpu", json_real((double)milli / 1000.0));
            } else if (cli_parse_gpus(optarg, &n, &err) == 0) {
                json_object_set_new(body, "gpu", json_integer(n));
            } else {
                rc = cli_usage(cli, "--gpu %s", err.text);
                goto out;
            }
            break;
        }
        case O_GPU_MEM:
        case O_MEM:
            if (cli_parse_size(optarg, &bytes, &err) < 0) {
                rc = cli_usage(cli, "--%s %s", c == O_MEM ? "mem" : "gpu-mem", err.text);
                goto out;
            }
            json_object_set_new(body, c == O_MEM ? "mem" : "gpu_mem",
                                json_integer((json_int_t)bytes));
            break;
        case O_CPU: {
            char *end;
            double v = strtod(optarg, &end);
            if (*end || !(v > 0)) {
                rc = cli_usage(cli, "--cpu %s: a number of cores above 0", optarg);
                goto out;
            }
            json_object_set_new(body, "cpu", json_real(v));
            break;
        }
        case O_QUEUE:
            json_object_set_new(body, "queue", json_string(optarg));
            break;
        case O_HEALTH:
            json_object_set_new(body, "health", json_string(optarg));
            break;
        case O_PORT:
            if (cli_parse_int(optarg, 1, 65535, &n, &err) < 0) {
                rc = cli_usage(cli, "--port %s", err.text);
                goto out;
            }
            json_object_set_new(body, "port", json_integer(n));
            break;
        case O_CONC:
            if (cli_parse_int(optarg, 0, 1024, &n, &err) < 0) {
                rc = cli_usage(cli, "--concurrency %s", err.text);
                goto out;
            }
            json_object_set_new(body, "concurrency", json_integer(n));
            break;
        case O_SPLIT:
            if (strcmp(optarg, "capacity") != 0 && strcmp(optarg, "even") != 0) {
                rc = cli_usage(cli, "--split %s: capacity or even", optarg);
                goto out;
            }
            json_object_set_new(body, "split", json_string(optarg));
            break;
        case O_ENV: {
            const char *eq = strchr(optarg, '=');
            if (!eq || eq == optarg) {
                rc = cli_usage(cli, "--env %s: NAME=VALUE", optarg);
                goto out;
            }
            char name[256];
            snprintf(name, sizeof name, "%.*s", (int)(eq - optarg), optarg);
            json_object_set_new(env, name, json_string(eq + 1));
            break;
        }
        default:
            if ((rc = cli_common_option(cli, c, argc, argv, serve_usage)) >= 0)
                goto out;
        }
    }
    if (argc - optind < 2) {
        rc = cli_usage(cli, "give a NAME and, after --, the replicas' command");
        goto out;
    }
    json_object_set_new(body, "name", json_string(argv[optind]));
    json_t *cmd = json_array();
    for (int i = optind + 1; i < argc; i++)
        json_array_append_new(cmd, json_string(argv[i]));
    json_object_set_new(body, "argv", cmd);
    if (json_object_size(env))
        json_object_set(body, "env", env);
    json_t *ans = NULL;
    if (cli_call(cli, "POST", "/v1/services", body, &ans) < 0) {
        rc = CLI_ERR;
        goto out;
    }
    if (cli->json)
        cli_print_json(ans);
    else
        printf("service %s: %lld replica(s), endpoint %s\n",
               json_string_value(json_object_get(ans, "name")),
               (long long)json_integer_value(json_object_get(ans, "replicas")),
               json_string_value(json_object_get(ans, "endpoint")));
    json_decref(ans);
    rc = CLI_OK;
out:
    json_decref(env);
    json_decref(body);
    return rc;
}

static int list(cli_t *cli)
{
    int rc;
    json_t *ans = cli_get(cli, "/v1/services", &rc);
    if (!ans)
        return rc;
    static const char *const hdr[] = {"NAME", "OWNER", ">RUNNING", ">REPLICAS", "ENDPOINT"};
    cli_table_t *t = cli_table_new(5, hdr);
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(ans, "services"), i, s)
    {
        char run[32], want[32];
        snprintf(run, sizeof run, "%lld",
                 (long long)json_integer_value(json_object_get(s, "running")));
        snprintf(want, sizeof want, "%lld",
                 (long long)json_integer_value(json_object_get(s, "replicas")));
        const char *row[] = {json_string_value(json_object_get(s, "name")),
                             json_string_value(json_object_get(s, "owner")), run, want,
                             json_string_value(json_object_get(s, "endpoint"))};
        cli_table_add(t, row);
    }
    cli_table_print(t, stdout);
    json_decref(ans);
    return CLI_OK;
}

/* A number of the answer with a format, "-" when null. */
static const char *num(const json_t *o, const char *key, const char *fmt, double scale, char *buf,
                       size_t len)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_number(v))
        return "-";
    snprintf(buf, len, fmt, json_number_value(v) * scale);
    return buf;
}

static int show(cli_t *cli, const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "/v1/services/%s", name);
    int rc;
    json_t *s = cli_get(cli, path, &rc);
    if (!s)
        return rc;
    printf("%-12s %s\n", "name", json_string_value(json_object_get(s, "name")));
    printf("%-12s %s\n", "owner", json_string_value(json_object_get(s, "owner")));
    printf("%-12s %s\n", "endpoint", json_string_value(json_object_get(s, "endpoint")));
    printf("%-12s %s\n", "health", json_string_value(json_object_get(s, "health")));
    printf("%-12s %lld running of %lld\n", "replicas",
           (long long)json_integer_value(json_object_get(s, "running")),
           (long long)json_integer_value(json_object_get(s, "replicas")));
    printf("\n");
    static const char *const hdr[] = {">JOB",    "STATE",   "GPU",    "HEALTH",
                                      ">WEIGHT", ">RATE/s", ">SHARE", ">LATENCY-MS"};
    cli_table_t *t = cli_table_new(8, hdr);
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(s, "replica_jobs"), i, r)
    {
        char job[32], gpu[128] = "-", w[32], rate[32], share[32], lat[32];
        snprintf(job, sizeof job, "%lld", (long long)json_integer_value(json_object_get(r, "job")));
        json_t *g = json_array_get(json_object_get(r, "gpus"), 0);
        if (g)
            snprintf(gpu, sizeof gpu, "%lld:%s %.3g",
                     (long long)json_integer_value(json_object_get(g, "index")),
                     json_string_value(json_object_get(g, "model")),
                     (double)json_integer_value(json_object_get(g, "milli")) / 1000.0);
        const char *row[] = {job,
                             json_string_value(json_object_get(r, "state")),
                             gpu,
                             json_string_value(json_object_get(r, "health")),
                             num(r, "weight", "%.0f", 1, w, sizeof w),
                             num(r, "service_rate", "%.1f", 1, rate, sizeof rate),
                             num(r, "share", "%.0f%%", 100, share, sizeof share),
                             num(r, "latency_ms", "%.1f", 1, lat, sizeof lat)};
        cli_table_add(t, row);
    }
    cli_table_print(t, stdout);
    json_decref(s);
    return CLI_OK;
}

int cmd_services(cli_t *cli, int argc, char **argv)
{
    enum { O_NAME = 256 };
    static const struct option opts[] = {
        {"name", required_argument, NULL, O_NAME},
        {"json", no_argument, NULL, CLI_OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *label = NULL;
    int c, rc;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        if (c == O_NAME)
            label = optarg;
        else if ((rc = cli_common_option(cli, c, argc, argv, services_usage)) >= 0)
            return rc;
    }
    const char *action = optind < argc ? argv[optind] : "ls";
    int nargs = argc - optind;
    const char *name = nargs > 1 ? argv[optind + 1] : NULL;
    if (name && !url_safe(name))
        return cli_usage(cli, "'%s' is not a service name", name);
    if (label && strcmp(action, "token") != 0)
        return cli_usage(cli, "--name is for token");
    if (strcmp(action, "ls") == 0 || strcmp(action, "list") == 0) {
        if (nargs > 1)
            return cli_usage(cli, "ls takes no arguments");
        return list(cli);
    }
    if (strcmp(action, "show") == 0) {
        if (nargs != 2)
            return cli_usage(cli, "show takes one service name");
        return show(cli, name);
    }
    char path[256];
    snprintf(path, sizeof path, "/v1/services/%s", name ? name : "");
    json_t *ans = NULL;
    if (strcmp(action, "scale") == 0) {
        int64_t n;
        tsl_error_t err;
        if (nargs != 3)
            return cli_usage(cli, "scale takes a service name and a number of replicas");
        if (cli_parse_int(argv[optind + 2], 0, 64, &n, &err) < 0)
            return cli_usage(cli, "replicas %s", err.text);
        json_t *body = json_pack("{s:I}", "replicas", (json_int_t)n);
        rc = cli_call(cli, "PATCH", path, body, &ans);
        json_decref(body);
        if (rc < 0)
            return CLI_ERR;
        if (cli->json)
            cli_print_json(ans);
        else
            printf("service %s: %lld replica(s)\n", name, (long long)n);
    } else if (strcmp(action, "rm") == 0) {
        if (nargs != 2)
            return cli_usage(cli, "rm takes one service name");
        if (cli_call(cli, "DELETE", path, NULL, &ans) < 0)
            return CLI_ERR;
        if (cli->json)
            cli_print_json(ans);
        else
            printf("service %s removed (its replicas stop)\n", name);
    } else if (strcmp(action, "token") == 0) {
        if (nargs != 2)
            return cli_usage(cli, "token takes one service name");
        strncat(path, "/tokens", sizeof path - strlen(path) - 1);
        json_t *body = json_object();
        if (label)
            json_object_set_new(body, "name", json_string(label));
        rc = cli_call(cli, "POST", path, body, &ans);
        json_decref(body);
        if (rc < 0)
            return CLI_ERR;
        if (cli->json)
            cli_print_json(ans);
        else
            printf("%s\n", json_string_value(json_object_get(ans, "token")));
    } else if (strcmp(action, "tokens") == 0) {
        if (nargs != 2)
            return cli_usage(cli, "tokens takes one service name");
        strncat(path, "/tokens", sizeof path - strlen(path) - 1);
        json_t *l = cli_get(cli, path, &rc);
        if (!l)
            return rc;
        static const char *const hdr[] = {">ID", "NAME", "CREATED"};
        cli_table_t *t = cli_table_new(3, hdr);
        size_t i;
        json_t *k;
        json_array_foreach(json_object_get(l, "tokens"), i, k)
        {
            char id[32];
            snprintf(id, sizeof id, "%lld",
                     (long long)json_integer_value(json_object_get(k, "id")));
            const char *row[] = {id, json_string_value(json_object_get(k, "name")),
                                 json_string_value(json_object_get(k, "created_at"))};
            cli_table_add(t, row);
        }
        cli_table_print(t, stdout);
        json_decref(l);
        return CLI_OK;
    } else if (strcmp(action, "token-rm") == 0) {
        int64_t id;
        tsl_error_t err;
        if (nargs != 3)
            return cli_usage(cli, "token-rm takes a service name and a token id");
        if (cli_parse_int(argv[optind + 2], 1, INT64_MAX, &id, &err) < 0)
            return cli_usage(cli, "token id %s", err.text);
        char p2[320];
        snprintf(p2, sizeof p2, "%s/tokens/%lld", path, (long long)id);
        if (cli_call(cli, "DELETE", p2, NULL, NULL) < 0)
            return CLI_ERR;
        if (!cli->json)
            printf("token %lld of service %s revoked\n", (long long)id, name);
        return CLI_OK;
    } else {
        return cli_usage(cli, "unknown action '%s' (ls, show, scale, rm, token, tokens, token-rm)",
                         action);
    }
    json_decref(ans);
    return CLI_OK;
}
