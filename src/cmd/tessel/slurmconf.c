/* slurmconf.c - `tessel slurm-conf`: the gres.conf, slurm.conf and plugstack.conf lines of this
 * node for Tessel on Slurm (docs/slurm.md), from the GPUs NVML finds here (or N simulated ones
 * with --fake-gpus N), for an admin to paste.  Needs no tesseld. */
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/gpu.h"
#include "cmd/tessel/cli.h"
#include "libutil/size.h"

/* Shards per GPU by default: 4 (a quarter of a GPU each), what a lab splits a GPU into most
 * often; --shards-per-gpu changes it. */
#define DEFAULT_SHARDS 4

static void usage(FILE *f)
{
    fprintf(f, "usage: tessel slurm-conf [--shards-per-gpu N] [--node NAME] [--fake-gpus N] "
               "[--json]\n"
               "Print this node's gres.conf, slurm.conf, plugstack.conf and tessel_gpus.lua lines\n"
               "for Tessel's Slurm plugins (spank_tessel.so, job_submit.lua: docs/slurm.md), from\n"
               "the GPUs NVML finds.\n"
               "\n"
               "  --shards-per-gpu N  shards of each GPU (default 4): a job of S shards gets S/N\n"
               "                      of its GPU's memory and compute\n"
               "  --node NAME         the node's Slurm name (default: this host's short name)\n"
               "  --fake-gpus N       N SIMULATED GPUs instead of NVML's (tests, a dry run)\n"
               "  --json              print {\"gres_conf\", \"slurm_conf\", \"plugstack_conf\",\n"
               "                      \"tessel_gpus_lua\"}: each file's lines as one string\n");
}

int cmd_slurm_conf(cli_t *cli, int argc, char **argv)
{
    static const struct option opts[] = {
        {"shards-per-gpu", required_argument, NULL, 's'},
        {"node", required_argument, NULL, 'n'},
        {"fake-gpus", required_argument, NULL, 'f'},
        {"json", no_argument, NULL, CLI_OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int64_t shards = DEFAULT_SHARDS, fake = -1;
    char node[256] = "";
    tsl_error_t e;
    int c, rc;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        if (c == 's' && cli_parse_int(optarg, 1, 1000, &shards, &e) < 0)
            return cli_usage(cli, "--shards-per-gpu: %s", e.text);
        if (c == 'f' && cli_parse_int(optarg, 1, TAGENT_MAX_GPUS, &fake, &e) < 0)
            return cli_usage(cli, "--fake-gpus: %s", e.text);
        if (c == 'n') {
            size_t n = strlen(optarg);
            if (n == 0 || n >= sizeof node ||
                strspn(optarg, "abcdefghijklmnopqrstuvwxyz"
                               "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") != n)
                return cli_usage(cli, "--node '%.60s': a host name is letters, digits, - _ .",
                                 optarg);
            snprintf(node, sizeof node, "%s", optarg);
        }
        if (c != 's' && c != 'f' && c != 'n' &&
            (rc = cli_common_option(cli, c, argc, argv, usage)) >= 0)
            return rc;
    }
    if (optind < argc)
        return cli_usage(cli, "unexpected argument '%.60s'", argv[optind]);
    if (!node[0]) {
        if (gethostname(node, sizeof node - 1) < 0)
            return cli_fail("gethostname: cannot name this node (use --node)");
        node[strcspn(node, ".")] = '\0';
    }

    static tagent_gpu_t gpus[TAGENT_MAX_GPUS];
    int n;
    if (fake > 0) {
        n = (int)fake;
        for (int i = 0; i < n; i++)
            gpus[i] = (tagent_gpu_t){.index = i, .simulated = true};
    } else {
        tagent_nvml_t *nv = tagent_nvml_open("libnvidia-ml.so.1", &e);
        if (!nv)
            return cli_fail("no GPUs found: NVML: %s (--fake-gpus N for simulated ones)", e.text);
        n = tagent_nvml_inventory(nv, gpus, TAGENT_MAX_GPUS, false, &e);
        tagent_nvml_close(nv);
        if (n < 0)
            return cli_fail("NVML: %s", e.text);
        if (n == 0)
            return cli_fail("NVML finds no GPU on this node");
    }

    char files[64];
    if (n == 1)
        snprintf(files, sizeof files, "/dev/nvidia0");
    else
        snprintf(files, sizeof files, "/dev/nvidia[0-%d]", n - 1);
    char *text[4] = {NULL, NULL, NULL, NULL};
    size_t len[4];
    FILE *f[4];
    for (int k = 0; k < 4; k++)
        if (!(f[k] = open_memstream(&text[k], &len[k]))) {
            for (int j = 0; j < k; j++)
                fclose(f[j]);
            for (int j = 0; j < k; j++)
                free(text[j]);
            return cli_fail("out of memory");
        }
    fprintf(f[0],
            "# gres.conf of node %s (tessel slurm-conf): %d %sGPU%s, %" PRId64
            " shards each\nAutoDetect=off\nName=gpu File=%s\n",
            node, n, fake > 0 ? "SIMULATED " : "", n == 1 ? "" : "s", shards, files);
    for (int i = 0; i < n; i++) {
        char mem[32] = "memory unknown", part[32] = "";
        if (gpus[i].mem_total) {
            tsl_format_size(gpus[i].mem_total, mem, sizeof mem);
            tsl_format_size(gpus[i].mem_total / (uint64_t)shards, part, sizeof part);
        }
        /* NVML index i is /dev/nvidia<i> (docs/slurm.md: the plugin takes the same). */
        fprintf(f[0], "Name=shard Count=%" PRId64 " File=/dev/nvidia%d   # %s%s%s%s%s\n", shards, i,
                gpus[i].name[0] ? gpus[i].name : "GPU", gpus[i].name[0] ? ", " : " ", mem,
                part[0] ? ", a shard " : "", part);
    }
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    fprintf(f[1],
            "GresTypes=gpu,shard\nNodeName=%s CPUs=%ld RealMemory=%lld Gres=gpu:%d,shard:%" PRId64
            "\n",
            node, cpus > 0 ? cpus : 1,
            pages > 0 && psize > 0 ? (long long)pages * psize / (1024 * 1024) : 1LL, n, shards * n);
    fprintf(f[2], "required /usr/lib/x86_64-linux-gnu/slurm/spank_tessel.so\n");
    /* For job_submit.lua on the slurmctld host: gpu(NODE, NVML INDEX, BYTES, SHARDS). */
    for (int i = 0; i < n; i++) {
        if (gpus[i].mem_total)
            fprintf(f[3], "gpu(\"%s\", %d, %" PRIu64 ", %" PRId64 ")\n", node, i, gpus[i].mem_total,
                    shards);
        else
            fprintf(f[3], "-- GPU %d of %s: memory unknown (SIMULATED)\n", i, node);
    }
    bool okw = true;
    for (int k = 0; k < 4; k++)
        okw = fclose(f[k]) == 0 && okw;
    if (!okw) {
        for (int k = 0; k < 4; k++)
            free(text[k]);
        return cli_fail("out of memory");
    }
    if (cli->json) {
        json_t *j = json_pack("{s:s, s:s, s:s, s:s}", "gres_conf", text[0], "slurm_conf", text[1],
                              "plugstack_conf", text[2], "tessel_gpus_lua", text[3]);
        if (j)
            cli_print_json(j);
        json_decref(j);
    } else {
        printf("%s\n# slurm.conf\n%s\n# plugstack.conf (every node and submit host)\n%s\n"
               "-- tessel_gpus.lua (slurmctld host, beside job_submit.lua: every node's lines)\n%s",
               text[0], text[1], text[2], text[3]);
    }
    for (int k = 0; k < 4; k++)
        free(text[k]);
    return CLI_OK;
}
