/* gpumodels.c - `tessel gpu-models`: the GPU models of the node with their relative speed,
 * which queue limits in normal GPU units (ngpu) count (/v1/gpu-models, docs/scheduler-queues.md,
 * "Normalised GPUs"); an admin sets and resets a model's speed. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/tessel/cli.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: tessel gpu-models [list] [--json]\n"
               "       tessel gpu-models set MODEL SPEED   (admin)\n"
               "       tessel gpu-models reset MODEL       (admin)\n"
               "       tessel gpu-models calibrate REFERENCE [--apply]   (admin)\n"
               "List the GPU models of this node (and any other with a speed set) with their\n"
               "relative speed: 1 is the reference GPU, 3 a GPU that does three times its\n"
               "work.  A queue limit in normal GPU units (ngpu, see tessel queues --help)\n"
               "counts each GPU a job holds at its model's speed.  set: an admin's speed\n"
               "(0.001 to 1000, at most 3 decimals), which wins over tesseld.conf's gpu-speeds;\n"
               "reset: back to the configuration's, else 1.  MODEL as listed (quote spaces).\n"
               "\n"
               "calibrate: each model's speed against REFERENCE measured from the inference\n"
               "services' live rates (replicas of one service with equal shares on different\n"
               "models); --apply sets them as an admin's speeds.\n"
               "\n"
               "  --apply          (calibrate) set the measured speeds\n"
               "  --json           print the API's JSON\n"
               "\n"
               "SOURCE says where the speed comes from: default (1), config (gpu-speeds in\n"
               "tesseld.conf) or admin (set here; SET BY names who).\n");
}

static int list(cli_t *cli)
{
    int rc;
    json_t *ans = cli_get(cli, "/v1/gpu-models", &rc);
    if (!ans)
        return rc;
    static const char *const hdr[] = {"MODEL", ">GPUS", ">SPEED", "SOURCE", "SET BY"};
    cli_table_t *t = cli_table_new(5, hdr);
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(ans, "gpu_models"), i, m)
    {
        char gpus[32], speed[32];
        snprintf(gpus, sizeof gpus, "%lld",
                 (long long)json_integer_value(json_object_get(m, "gpus")));
        double sp = json_number_value(json_object_get(m, "speed"));
        cli_format_milli((int64_t)(sp * 1000.0 + 0.5), speed, sizeof speed);
        const json_t *by = json_object_get(m, "set_by");
        const char *row[] = {json_string_value(json_object_get(m, "model")), gpus, speed,
                             json_string_value(json_object_get(m, "source")),
                             json_is_string(by) ? json_string_value(by) : "-"};
        cli_table_add(t, row);
    }
    cli_table_print(t, stdout);
    json_decref(ans);
    return CLI_OK;
}

/* POST /v1/gpu-models/calibrate: the measured speeds, a table (or the JSON). */
static int calibrate(cli_t *cli, const char *ref, bool apply)
{
    json_t *body = json_pack("{s:s, s:b}", "reference", ref, "apply", apply), *ans = NULL;
    int rc = CLI_ERR;
    if (cli_call(cli, "POST", "/v1/gpu-models/calibrate", body, &ans) == 0) {
        if (cli->json) {
            cli_print_json(ans);
        } else {
            static const char *const hdr[] = {"MODEL", ">SPEED", ">SERVICES"};
            cli_table_t *t = cli_table_new(3, hdr);
            size_t i;
            json_t *m;
            json_array_foreach(json_object_get(ans, "speeds"), i, m)
            {
                char speed[32], cells[32];
                double sp = json_number_value(json_object_get(m, "speed"));
                cli_format_milli((int64_t)(sp * 1000.0 + 0.5), speed, sizeof speed);
                snprintf(cells, sizeof cells, "%lld",
                         (long long)json_integer_value(json_object_get(m, "cells")));
                const char *row[] = {json_string_value(json_object_get(m, "model")), speed, cells};
                cli_table_add(t, row);
            }
            cli_table_print(t, stdout);
            printf("%s\n", apply ? "applied: these are now the models' speeds"
                                 : "not applied (--apply sets them)");
        }
        rc = CLI_OK;
    }
    json_decref(body);
    json_decref(ans);
    return rc;
}

int cmd_gpu_models(cli_t *cli, int argc, char **argv)
{
    enum { O_APPLY = 256 };
    static const struct option opts[] = {
        {"apply", no_argument, NULL, O_APPLY},
        {"json", no_argument, NULL, CLI_OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool apply = false;
    int c, rc;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        if (c == O_APPLY)
            apply = true;
        else if ((rc = cli_common_option(cli, c, argc, argv, usage)) >= 0)
            return rc;
    }
    int n = argc - optind;
    char **a = argv + optind;
    if (n >= 1 && strcmp(a[0], "calibrate") == 0) {
        if (n != 2)
            return cli_usage(
                cli, "calibrate needs REFERENCE, the model the others are measured against");
        return calibrate(cli, a[1], apply);
    }
    if (apply)
        return cli_usage(cli, "--apply goes with calibrate");
    if (n == 0 || (n == 1 && strcmp(a[0], "list") == 0))
        return list(cli);
    bool set = strcmp(a[0], "set") == 0, reset = strcmp(a[0], "reset") == 0;
    if (!set && !reset)
        return cli_usage(cli, "unknown action '%s' (list, set, reset, calibrate)", a[0]);
    if (n != (set ? 3 : 2))
        return cli_usage(cli, set ? "set needs MODEL and SPEED" : "reset needs MODEL");
    if (!a[1][0] || strchr(a[1], '/'))
        return cli_usage(cli, "'%s': not a GPU model name", a[1]);
    char *esc = tclient_escape(a[1]);
    if (!esc)
        return cli_fail("out of memory");
    char path[512];
    snprintf(path, sizeof path, "/v1/gpu-models/%s", esc);
    free(esc);
    json_t *body = NULL, *ans = NULL;
    if (set) {
        body = json_object();
        json_object_set_new(body, "speed", json_string(a[2]));
    }
    rc = CLI_ERR;
    if (cli_call(cli, set ? "PUT" : "DELETE", path, body, &ans) == 0) {
        if (cli->json) {
            cli_print_json(ans);
        } else {
            char speed[32];
            double sp = json_number_value(json_object_get(ans, "speed"));
            cli_format_milli((int64_t)(sp * 1000.0 + 0.5), speed, sizeof speed);
            printf("GPU model '%s': speed %s (%s)\n", a[1], speed,
                   json_string_value(json_object_get(ans, "source")));
        }
        rc = CLI_OK;
    }
    json_decref(body);
    json_decref(ans);
    return rc;
}
