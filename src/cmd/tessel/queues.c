/* queues.c - `tessel queues`: list queues; admins add, change and remove them
 * (/v1/queues). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cmd/tessel/cli.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: tessel queues [list] [--json]\n"
               "       tessel queues add NAME [--priority N] [--max-gpu GPUS]   (admin)\n"
               "       tessel queues set NAME [--priority N] [--max-gpu GPUS|none]   (admin)\n"
               "       tessel queues rm NAME   (admin)\n"
               "List queues with their pending and running jobs, or manage them.\n"
               "\n"
               "  --priority N     queue priority, higher first (-1000..1000)\n"
               "  --max-gpu GPUS   cap on the GPUs its running jobs hold together (1.5, 2;\n"
               "                   0 holds every job; none lifts the cap)\n"
               "  --json           print the API's JSON\n");
}

/* --max-gpu: "none", or GPUs with up to 3 decimals (0 allowed: a queue that starts nothing). */
static int parse_cap(const char *s, json_t **out, tsl_error_t *err)
{
    if (strcmp(s, "none") == 0) {
        *out = json_null();
        return 0;
    }
    if (strcmp(s, "0") == 0) {
        *out = json_integer(0);
        return 0;
    }
    int64_t whole;
    tsl_error_t e;
    const char *dot = strchr(s, '.');
    /* Reuse --gpu's parser for the digits; a cap may exceed 1 with decimals. */
    if (dot) {
        char w[32];
        size_t n = (size_t)(dot - s);
        if (n == 0 || n >= sizeof w)
            goto bad;
        memcpy(w, s, n);
        w[n] = '\0';
        int64_t frac;
        char f[16];
        if (snprintf(f, sizeof f, "0%s", dot) >= (int)sizeof f)
            goto bad;
        if (cli_parse_int(w, 0, 1024, &whole, &e) < 0 || cli_parse_gpu(f, &frac, &e) < 0)
            goto bad;
        *out = json_integer(whole * 1000 + frac);
        return 0;
    }
    if (cli_parse_int(s, 0, 1024, &whole, &e) < 0)
        goto bad;
    *out = json_integer(whole * 1000);
    return 0;
bad:
    return tsl_errprintf(err, "--max-gpu: '%s': expected GPUs such as 1.5 or 2, or none", s);
}

static int list(cli_t *cli)
{
    json_t *ans;
    if (cli_call(cli, "GET", "/v1/queues", NULL, &ans) < 0)
        return CLI_ERR;
    if (cli->json) {
        cli_print_json(ans);
        json_decref(ans);
        return CLI_OK;
    }
    static const char *const hdr[] = {"NAME", ">PRIORITY", ">MAX-GPU", ">PENDING", ">RUNNING"};
    cli_table_t *t = cli_table_new(5, hdr);
    size_t i;
    json_t *q;
    json_array_foreach(json_object_get(ans, "queues"), i, q)
    {
        char prio[32], cap[32], pend[32], run[32];
        snprintf(prio, sizeof prio, "%lld",
                 (long long)json_integer_value(json_object_get(q, "priority")));
        json_t *m = json_object_get(q, "max_gpu_milli");
        if (json_is_integer(m))
            cli_format_milli(json_integer_value(m), cap, sizeof cap);
        else
            snprintf(cap, sizeof cap, "none");
        snprintf(pend, sizeof pend, "%lld",
                 (long long)json_integer_value(json_object_get(q, "pending")));
        snprintf(run, sizeof run, "%lld",
                 (long long)json_integer_value(json_object_get(q, "running")));
        const char *row[] = {json_string_value(json_object_get(q, "name")), prio, cap, pend, run};
        cli_table_add(t, row);
    }
    cli_table_print(t, stdout);
    json_decref(ans);
    return CLI_OK;
}

int cmd_queues(cli_t *cli, int argc, char **argv)
{
    enum { O_PRIO = 256, O_CAP, O_JSON };
    static const struct option opts[] = {
        {"priority", required_argument, NULL, O_PRIO},
        {"max-gpu", required_argument, NULL, O_CAP},
        {"json", no_argument, NULL, O_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    json_t *body = json_object();
    tsl_error_t err;
    int c, rc = CLI_ERR;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case O_PRIO: {
            int64_t p;
            if (cli_parse_int(optarg, -1000, 1000, &p, &err) < 0) {
                rc = cli_usage(cli, "--priority: %s", err.text);
                goto out;
            }
            json_object_set_new(body, "priority", json_integer(p));
            break;
        }
        case O_CAP: {
            json_t *cap = NULL;
            if (parse_cap(optarg, &cap, &err) < 0) {
                rc = cli_usage(cli, "%s", err.text);
                goto out;
            }
            json_object_set_new(body, "max_gpu_milli", cap);
            break;
        }
        case O_JSON:
            cli->json = true;
            break;
        case 'h':
            usage(stdout);
            rc = CLI_OK;
            goto out;
        default:
            rc = cli_bad_option(cli, argc, argv, c);
            goto out;
        }
    }
    const char *action = optind < argc ? argv[optind] : "list";
    const char *name = optind + 1 < argc ? argv[optind + 1] : NULL;
    int nargs = argc - optind;
    if (strcmp(action, "list") == 0) {
        if (nargs > 1 || json_object_size(body)) {
            rc = cli_usage(cli, "list takes no arguments or options but --json");
            goto out;
        }
        rc = list(cli);
        goto out;
    }
    bool add = strcmp(action, "add") == 0, set = strcmp(action, "set") == 0,
         rm = strcmp(action, "rm") == 0;
    if (!add && !set && !rm) {
        rc = cli_usage(cli, "unknown action '%s' (list, add, set, rm)", action);
        goto out;
    }
    if (nargs != 2) {
        rc = cli_usage(cli, "%s takes one queue name", action);
        goto out;
    }
    if (rm && json_object_size(body)) {
        rc = cli_usage(cli, "rm takes no options");
        goto out;
    }
    if (set && !json_object_size(body)) {
        rc = cli_usage(cli, "set needs --priority or --max-gpu");
        goto out;
    }
    char path[256];
    snprintf(path, sizeof path, "/v1/queues/%s", name);
    if (strchr(name, '/') || strchr(name, '?') || strchr(name, '%')) {
        rc = cli_usage(cli, "'%s': not a queue name", name);
        goto out;
    }
    json_t *ans = NULL;
    if (add) {
        json_object_set_new(body, "name", json_string(name));
        if (cli_call(cli, "POST", "/v1/queues", body, &ans) < 0)
            goto out;
    } else if (set) {
        if (cli_call(cli, "PATCH", path, body, &ans) < 0)
            goto out;
    } else if (cli_call(cli, "DELETE", path, NULL, NULL) < 0) {
        goto out;
    }
    if (cli->json && ans)
        cli_print_json(ans);
    else if (!cli->json)
        printf("queue %s %s\n", name, add ? "created" : set ? "changed" : "removed");
    json_decref(ans);
    rc = CLI_OK;
out:
    json_decref(body);
    return rc;
}
