/* gpus.c - `tessel gpus`: every GPU with its slices, memory used and limits, utilisation
 * (GET /v1/gpus); simulated GPUs are labelled as such.  Against tesseld --slurm the answer
 * also lists the cluster's nodes ("nodes"): the GPUs are then shown node by node, with a NODE
 * column, each slice with its Slurm job id, and a line for each node that is not up (down or
 * drained in Slurm, or its exporter not answering: with the time of its last figures). */
#include <string.h>
#include <stdio.h>

#include "cmd/tessel/cli.h"
#include "libutil/size.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: tessel gpus [--json]\n"
               "Show each GPU: the share placed on it (ALLOC, in GPUs), its memory used by the\n"
               "jobs and promised to them as limits, utilisation, and each job's slice (BUSY:\n"
               "the device time its processes have used, in seconds).\n"
               "\n"
               "  --json           print the API's JSON ({\"gpus\": [...]})\n");
}

static const char *size_cell(const json_t *v, char *buf, size_t len)
{
    if (!json_is_integer(v))
        return "-";
    return tsl_format_size((uint64_t)json_integer_value(v), buf, len);
}

/* Slices that may spill past their GPU memory into host memory (oversubscription,
 * docs/interposer.md): one line each after the slices, "job J on GPU G: U spilled into host
 * memory (limit L)"; nothing for the others. */
static void oversub_lines(const json_t *list)
{
    size_t i, k;
    json_t *gpu, *sl;
    json_array_foreach(list, i, gpu)
    {
        json_array_foreach(json_object_get(gpu, "slices"), k, sl)
        {
            json_t *lim = json_object_get(sl, "mem_oversubscribe_limit");
            if (!json_is_integer(lim) || json_integer_value(lim) <= 0)
                continue;
            char u[32], l[32];
            printf("job %lld on GPU %lld: %s spilled into host memory (limit %s)\n",
                   (long long)json_integer_value(json_object_get(sl, "job_id")),
                   (long long)json_integer_value(json_object_get(gpu, "index")),
                   size_cell(json_object_get(sl, "mem_oversubscribed"), u, sizeof u),
                   size_cell(lim, l, sizeof l));
        }
    }
}

int cmd_gpus(cli_t *cli, int argc, char **argv)
{
    int rc = cli_json_only_args(cli, argc, argv, usage);
    if (rc >= 0)
        return rc;
    json_t *ans = cli_get(cli, "/v1/gpus", &rc);
    if (!ans)
        return rc;
    json_t *nodes = json_object_get(ans, "nodes");
    bool cluster = json_is_array(nodes);
    /* On a cluster, a NODE column first; a slice's JOB is Tessel's id ("-" for a job
     * submitted to Slurm directly) and SLURM its Slurm id. */
    static const char *const ghdr[] = {"NODE",   ">GPU",      "NAME",        ">MEMORY", ">SLICES",
                                       ">ALLOC", ">MEM-USED", ">MEM-LIMITS", ">UTIL",   "KIND"};
    static const char *const shdr[] = {"NODE",   ">GPU",      ">JOB",       ">SLURM", "USER",
                                       ">SHARE", ">MEM-USED", ">MEM-LIMIT", ">BUSY",  "USE"};
    int off = cluster ? 0 : 1; /* without a cluster: no NODE (nor SLURM) column */
    cli_table_t *g = cli_table_new(10 - off, ghdr + off);
    static const char *const shdr1[] = {">GPU",      ">JOB",       "USER",  ">SHARE",
                                        ">MEM-USED", ">MEM-LIMIT", ">BUSY", "USE"};
    cli_table_t *s = cluster ? cli_table_new(10, shdr) : cli_table_new(8, shdr1);
    int nslices = 0, nsim = 0;
    size_t i;
    json_t *gpu;
    json_t *list = json_object_get(ans, "gpus");
    json_array_foreach(list, i, gpu)
    {
        char idx[16], mem[32], ns[16], alloc[32], used[32], lim[32], util[16];
        const char *node = json_string_value(json_object_get(gpu, "node"));
        if (!node)
            node = "-";
        json_int_t index = json_integer_value(json_object_get(gpu, "index"));
        snprintf(idx, sizeof idx, "%lld", (long long)index);
        json_t *slices = json_object_get(gpu, "slices");
        snprintf(ns, sizeof ns, "%zu", json_array_size(slices));
        cli_format_milli(json_integer_value(json_object_get(gpu, "allocated_milli")), alloc,
                         sizeof alloc);
        json_t *u = json_object_get(gpu, "utilization");
        if (json_is_integer(u))
            snprintf(util, sizeof util, "%lld%%", (long long)json_integer_value(u));
        else
            snprintf(util, sizeof util, "-");
        bool sim = json_is_true(json_object_get(gpu, "simulated"));
        nsim += sim;
        const char *row[] = {node,
                             idx,
                             json_string_value(json_object_get(gpu, "name")),
                             size_cell(json_object_get(gpu, "memory_total"), mem, sizeof mem),
                             ns,
                             alloc,
                             size_cell(json_object_get(gpu, "used_mem"), used, sizeof used),
                             size_cell(json_object_get(gpu, "allocated_mem"), lim, sizeof lim),
                             util,
                             sim ? "simulated" : "real"};
        cli_table_add(g, row + off);
        size_t k;
        json_t *sl;
        json_array_foreach(slices, k, sl)
        {
            char job[32], sid[32], share[32], mu[32], ml[32], pct[32], busy[32];
            json_t *jid = json_object_get(sl, "job_id");
            if (json_is_integer(jid))
                snprintf(job, sizeof job, "%lld", (long long)json_integer_value(jid));
            else
                snprintf(job, sizeof job, "-");
            snprintf(sid, sizeof sid, "%lld",
                     (long long)json_integer_value(json_object_get(sl, "slurm_id")));
            cli_format_milli(json_integer_value(json_object_get(sl, "milli")), share, sizeof share);
            json_int_t used_b = json_integer_value(json_object_get(sl, "mem_used"));
            json_int_t lim_b = json_integer_value(json_object_get(sl, "mem_limit"));
            if (lim_b > 0)
                snprintf(pct, sizeof pct, "%lld%% of its limit", (long long)(used_b * 100 / lim_b));
            else
                snprintf(pct, sizeof pct, "-");
            /* BUSY: device time the slice has used (seconds), measured by the interposer. */
            json_t *b = json_object_get(sl, "busy_ms");
            if (json_is_integer(b))
                snprintf(busy, sizeof busy, "%lld.%01llds", (long long)json_integer_value(b) / 1000,
                         (long long)(json_integer_value(b) % 1000) / 100);
            else
                snprintf(busy, sizeof busy, "-");
            const char *user = json_string_value(json_object_get(sl, "user"));
            const char *mus = size_cell(json_object_get(sl, "mem_used"), mu, sizeof mu);
            const char *mls = size_cell(json_object_get(sl, "mem_limit"), ml, sizeof ml);
            if (cluster) {
                const char *srow[] = {node, idx, job, sid, user, share, mus, mls, busy, pct};
                cli_table_add(s, srow);
            } else {
                const char *srow[] = {idx, job, user, share, mus, mls, busy, pct};
                cli_table_add(s, srow);
            }
            nslices++;
        }
    }
    cli_table_print(g, stdout);
    if (nslices) {
        printf("\n");
        cli_table_print(s, stdout);
        oversub_lines(list);
    } else {
        cli_table_free(s);
        printf("\nno slices: no job holds a GPU\n");
    }
    /* The nodes that are not up, and why, with the time of their last figures. */
    size_t k;
    json_t *nd;
    bool first = true;
    json_array_foreach(nodes, k, nd)
    {
        const char *st = json_string_value(json_object_get(nd, "state"));
        if (!st || strcmp(st, "up") == 0)
            continue;
        const char *reason = json_string_value(json_object_get(nd, "reason"));
        const char *error = json_string_value(json_object_get(nd, "error"));
        const char *last = json_string_value(json_object_get(nd, "last_answer_at"));
        printf("%snode %s: %s", first ? "\n" : "", json_string_value(json_object_get(nd, "name")),
               st);
        first = false;
        if (reason)
            printf(" (%s)", reason);
        if (error)
            printf(": %s", error);
        printf("; %s%s\n", last ? "its last figures are of " : "no figures from it yet",
               last ? last : "");
    }
    if (nsim)
        printf("\n%d GPU(s) SIMULATED (%s): no real GPU behind them\n", nsim,
               cluster ? "the nodes' fake NVML" : "tesseld --fake-gpus");
    json_decref(ans);
    return CLI_OK;
}
