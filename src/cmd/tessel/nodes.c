/* nodes.c - `tessel nodes`: the nodes tesseld schedules on, as sinfo lists them: CPUs,
 * memory, GPUs (how many, how much of them is placed), cgroup mode (GET /v1/nodes).  Against
 * tesseld --slurm the nodes are the cluster's: their state (tesseld's and Slurm's), GPUs, the
 * time of their exporter's last answer, and why a node is not up. */
#include <stdbool.h>
#include <stdio.h>

#include "cmd/tessel/cli.h"
#include "libutil/size.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: tessel nodes [--json]\n"
               "List the nodes: CPUs, memory, GPUs (ALLOC: the share of them placed on jobs,\n"
               "in GPUs), and how job limits are enforced (CGROUPS: v1, v2, or none).\n"
               "`tessel gpus` shows each GPU.\n"
               "\n"
               "  --json           print the API's JSON ({\"nodes\": [...]})\n");
}

/* A node's GPU columns: how many, the share of them placed (in GPUs), their memory (false:
 * none known, gmem not set). */
static bool gpu_columns(json_t *node, char ngpus[24], char alloc[32], char gmem[32])
{
    json_t *gpus = json_object_get(node, "gpus");
    snprintf(ngpus, 24, "%zu", json_array_size(gpus));
    int64_t milli = 0;
    uint64_t total = 0;
    size_t k;
    json_t *g;
    json_array_foreach(gpus, k, g)
    {
        milli += json_integer_value(json_object_get(g, "allocated_milli"));
        total += (uint64_t)json_integer_value(json_object_get(g, "memory_total"));
    }
    cli_format_milli(milli, alloc, 32);
    if (total)
        tsl_format_size(total, gmem, 32);
    return total > 0;
}

/* tesseld --slurm: the cluster's nodes (docs/slurm-backend.md, "The cluster's GPUs"). */
static int cluster_nodes(json_t *ans)
{
    static const char *const hdr[] = {"NAME",     "STATE",       "SLURM", ">GPUS", ">ALLOC",
                                      ">GPU-MEM", "LAST-ANSWER", "KIND",  "WHY"};
    cli_table_t *t = cli_table_new(9, hdr);
    size_t i;
    json_t *node;
    json_array_foreach(json_object_get(ans, "nodes"), i, node)
    {
        char ngpus[24], alloc[32], gmem[32], slurm[48];
        bool has_mem = gpu_columns(node, ngpus, alloc, gmem);
        const char *st = json_string_value(json_object_get(node, "slurm_state"));
        snprintf(slurm, sizeof slurm, "%s%s", st ? st : "-",
                 json_is_true(json_object_get(node, "drain")) ? "+drain" : "");
        const char *why = json_string_value(json_object_get(node, "reason"));
        if (!why)
            why = json_string_value(json_object_get(node, "error"));
        const char *row[] = {json_string_value(json_object_get(node, "name")),
                             json_string_value(json_object_get(node, "state")),
                             slurm,
                             ngpus,
                             alloc,
                             has_mem ? gmem : NULL,
                             json_string_value(json_object_get(node, "last_answer_at")),
                             json_is_true(json_object_get(node, "simulated")) ? "simulated"
                                                                              : "real",
                             why};
        cli_table_add(t, row);
    }
    cli_table_print(t, stdout);
    const char *perr = json_string_value(json_object_get(json_object_get(ans, "poll"), "error"));
    if (perr)
        printf("\nthe nodes cannot be listed now (their last list is shown): %s\n", perr);
    json_decref(ans);
    return CLI_OK;
}

int cmd_nodes(cli_t *cli, int argc, char **argv)
{
    int rc = cli_json_only_args(cli, argc, argv, usage);
    if (rc >= 0)
        return rc;
    json_t *ans = cli_get(cli, "/v1/nodes", &rc);
    if (!ans)
        return rc;
    if (json_object_get(ans, "poll"))
        return cluster_nodes(ans);
    static const char *const hdr[] = {"NAME",   ">CPUS",    ">MEMORY", ">GPUS",
                                      ">ALLOC", ">GPU-MEM", "CGROUPS", "KIND"};
    cli_table_t *t = cli_table_new(8, hdr);
    size_t i;
    json_t *node;
    json_array_foreach(json_object_get(ans, "nodes"), i, node)
    {
        char cpus[24], mem[32], ngpus[24], alloc[32], gmem[32];
        snprintf(cpus, sizeof cpus, "%lld",
                 (long long)json_integer_value(json_object_get(node, "cpus")));
        tsl_format_size((uint64_t)json_integer_value(json_object_get(node, "mem")), mem,
                        sizeof mem);
        bool has_mem = gpu_columns(node, ngpus, alloc, gmem);
        const char *row[] = {json_string_value(json_object_get(node, "name")),
                             cpus,
                             mem,
                             ngpus,
                             alloc,
                             has_mem ? gmem : NULL,
                             json_string_value(json_object_get(node, "cgroups")),
                             json_is_true(json_object_get(node, "simulated")) ? "simulated"
                                                                              : "real"};
        cli_table_add(t, row);
    }
    cli_table_print(t, stdout);
    json_decref(ans);
    return CLI_OK;
}
