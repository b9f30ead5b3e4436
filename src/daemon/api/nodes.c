/* nodes.c - GET /v1/nodes and GET /v1/gpus: inventory and live usage.
 *
 * Allocation figures come from the running jobs' placements (what libsched holds); used
 * memory, busy device time and the compute share come from each job's slice file, written by
 * the interposer inside the job.  No busy_ratio per GPU: the busy counters are read on demand,
 * not sampled by the tick, so there is no interval to divide by (a scraper can rate() the
 * tessel_gpu_slice_busy_seconds_total counter). */
#include <stdio.h>
#include <string.h>

#include "daemon/api/api.h"
#include "libshm/shm.h"

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* A byte figure as a JSON integer (never negative: saturates at INT64_MAX). */
static json_int_t jbytes(uint64_t v)
{
    return v > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v;
}

int api_slice_read(tessd_t *d, const tessd_run_t *r, int g, api_slice_t *out)
{
    memset(out, 0, sizeof *out);
    tshm_t *s = tessd_slice_open(d, r, NULL);
    if (!s)
        return -1;
    int found = -1;
    int n = tshm_ndevices(s);
    for (int i = 0; i < n; i++) {
        tshm_device_info_t info;
        if (tshm_device_info(s, i, &info) < 0)
            continue;
        bool match = memcmp(info.uuid, d->gpus[g].uuid_bin, 16) == 0;
        /* A one-GPU job whose slice has one device: that device is its GPU. */
        if (match || (n == 1 && r->member.ngpus == 1)) {
            out->used = info.used;
            out->busy_ns = info.busy_ns;
            out->launches = info.launches;
            out->core_limit = info.core_limit;
            /* The slice file is the job's: its spilled figure is held within tesseld's own
             * record of the limit (a job without oversubscription spills nothing), and the
             * limit shown is that record, never the file's (security review F4). */
            out->host_limit = r->gpu_oversub;
            out->host_used = info.host_used < r->gpu_oversub ? info.host_used : r->gpu_oversub;
            found = 0;
            break;
        }
    }
    tshm_close(s);
    /* A job whose GPU state is checkpointed (suspend.c) holds nothing on the device: its
     * slice's charge is what it takes back at the restore, not memory in use. */
    if (r->gpu_released)
        out->used = 0;
    return found;
}

uint64_t api_slice_used(tessd_t *d, const tessd_run_t *r, int g)
{
    api_slice_t sl;
    api_slice_read(d, r, g, &sl);
    return sl.used;
}

static json_t *gpu_json(tessd_t *d, int g)
{
    const tagent_gpu_t *gpu = &d->gpus[g];
    json_t *slices = json_array();
    int64_t milli = 0;
    uint64_t mem = 0, used = 0, spilled = 0;
    for (size_t i = 0; i < d->nruns; i++) {
        const tessd_run_t *r = &d->runs[i];
        for (uint32_t k = 0; k < r->member.ngpus; k++) {
            if (r->member.gpu[k] != g)
                continue;
            api_slice_t sl;
            api_slice_read(d, r, g, &sl);
            if (!r->gpu_released) { /* a checkpointed job's slice is released (suspend.c) */
                milli += r->member.milli_gpu;
                mem += r->member.gpu_mem_bytes;
            }
            used = sat_add(used, sl.used);
            spilled = sat_add(spilled, sl.host_used);
            /* Oversubscription (docs/interposer.md): what the slice spilled into host memory
             * past mem_limit, and how much it may (0: none). */
            json_array_append_new(
                slices,
                json_pack("{s:I, s:s, s:i, s:I, s:I, s:I, s:I, s:o, s:b, s:I, s:I}", "job_id",
                          (json_int_t)r->id, "user", r->user, "milli", (int)r->member.milli_gpu,
                          "mem_limit", (json_int_t)r->member.gpu_mem_bytes, "mem_used",
                          (json_int_t)sl.used, "busy_ms", (json_int_t)(sl.busy_ns / 1000000u),
                          "launches", (json_int_t)sl.launches, "compute_limit",
                          sl.core_limit ? json_integer(sl.core_limit) : json_null(), "suspended",
                          r->suspended_ms > 0, "mem_oversubscribed", jbytes(sl.host_used),
                          "mem_oversubscribe_limit", jbytes(sl.host_limit)));
        }
    }
    json_t *peers = json_array();
    for (int p = 0; p < d->ngpus; p++)
        if (gpu->nvlink_peers & (1u << p))
            json_array_append_new(peers, json_integer(p));
    int util = tagent_nvml_utilization(d->nvml, g);
    json_t *o = json_pack(
        "{s:i, s:s, s:s, s:s, s:b, s:I, s:i, s:o, s:I, s:I, s:I, s:I, s:o, s:o}", "index",
        gpu->index, "node", d->node_name, "uuid", gpu->uuid, "name", gpu->name, "simulated",
        gpu->simulated, "memory_total", (json_int_t)gpu->mem_total, "sm_count", (int)gpu->sm_count,
        "nvlink_peers", peers, "allocated_milli", (json_int_t)milli, "allocated_mem",
        (json_int_t)mem, "used_mem", jbytes(used), "oversubscribed_mem", jbytes(spilled),
        "utilization", util >= 0 ? json_integer(util) : json_null(), "slices", slices);
    return o;
}

static json_t *gpus_json(tessd_t *d)
{
    json_t *a = json_array();
    for (int g = 0; g < d->ngpus; g++)
        json_array_append_new(a, gpu_json(d, g));
    return a;
}

void api_nodes_list(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who))
        return;
    if (d->slurm) { /* the cluster's nodes, not tesseld's host (cluster.c) */
        api_cluster_nodes(d, rep);
        api_leave(d);
        return;
    }
    json_t *node =
        json_pack("{s:s, s:I, s:I, s:b, s:s, s:o}", "name", d->node_name, "cpus",
                  (json_int_t)d->ncpus, "mem", (json_int_t)d->mem_total, "simulated", d->simulated,
                  "cgroups", tagent_cgroup_mode_name(d->cg_mode), "gpus", gpus_json(d));
    thttp_json(rep, 200, json_pack("{s:[o]}", "nodes", node));
    api_leave(d);
}

void api_gpus_list(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    tessd_caller_t who;
    if (!api_enter(d, req, rep, &who))
        return;
    if (d->slurm)
        api_cluster_gpus(d, rep);
    else
        thttp_json(rep, 200, json_pack("{s:o}", "gpus", gpus_json(d)));
    api_leave(d);
}
