/* cluster.c - tesseld --slurm: the cluster's nodes and GPUs in GET /v1/nodes, GET /v1/gpus and
 * /metrics, from the last poll of the nodes (slurmnodes.h; docs/slurm-backend.md, "The
 * cluster's GPUs").
 *
 * A GPU's JSON keeps the fields of a single box's (nodes.c: index, node, uuid, name,
 * memory_total, allocated_mem, used_mem, utilization, slices with job_id, user, mem_limit,
 * mem_used, compute_limit), so that the CLI and the console read both, and adds the node's
 * state, the driver's memory used and the time of the figures.  A slice's job_id is Tessel's
 * id when the Slurm job is one of tesseld's active jobs (one store query per request, under
 * the lock), else null; slurm_id is always there.  The nodes' copy is taken under the poll's
 * own mutex (a few microseconds), never while a node is asked. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/api/api.h"

typedef struct {
    tsn_node_t *nodes;
    size_t n;
    int64_t polled_ms;
    char why[256];
    tstore_slurm_pair_t *pairs; /* tesseld's active Slurm jobs (NULL: none, or unread) */
    size_t npairs;
} view_t;

/* Lock held (the store). */
static void view_take(tessd_t *d, view_t *v)
{
    memset(v, 0, sizeof *v);
    v->nodes = tsn_snapshot(d->nodes, &v->n, &v->polled_ms, v->why, sizeof v->why);
    if (!d->nodes)
        snprintf(v->why, sizeof v->why, "the nodes are not asked (--slurm-node-port 0)");
    tsl_error_t err;
    if (tstore_slurm_active(d->store, &v->pairs, &v->npairs, &err) < 0) {
        v->pairs = NULL;
        v->npairs = 0;
    }
}

static void view_free(view_t *v)
{
    tsn_nodes_free(v->nodes, v->n);
    free(v->pairs);
}

static json_t *tessel_id(const view_t *v, int64_t slurm_id)
{
    for (size_t i = 0; i < v->npairs; i++)
        if (v->pairs[i].slurm_id == slurm_id)
            return json_integer(v->pairs[i].job);
    return json_null();
}

static json_t *node_state_json(const tsn_node_t *nd)
{
    return json_pack("{s:s, s:s, s:s, s:b, s:s, s:o, s:o, s:o}", "name", nd->slurm.name, "address",
                     nd->slurm.addr, "state", tsn_status_name(nd->status), "drain", nd->slurm.drain,
                     "slurm_state", nd->slurm.state, "reason",
                     nd->slurm.reason[0] ? json_string(nd->slurm.reason) : json_null(), "error",
                     nd->error[0] ? json_string(nd->error) : json_null(), "last_answer_at",
                     api_time(nd->last_ok_ms));
}

static json_t *gpu_json(const view_t *v, const tsn_node_t *nd, const tnf_gpu_t *g)
{
    json_t *slices = json_array();
    uint64_t lim = 0, used = 0;
    unsigned milli = 0;
    for (size_t i = 0; i < nd->figs.nslices; i++) {
        const tnf_slice_t *s = &nd->figs.slices[i];
        if (s->gpu != g->index)
            continue;
        lim += s->memory_limit;
        used += s->memory_used;
        milli += s->compute_pct * 10;
        json_array_append_new(
            slices,
            json_pack("{s:o, s:I, s:s, s:i, s:o, s:I, s:o, s:b}", "job_id", tessel_id(v, s->job),
                      "slurm_id", (json_int_t)s->job, "user", s->user, "milli",
                      (int)(s->compute_pct * 10), "mem_limit",
                      s->memory_limit ? json_integer((json_int_t)s->memory_limit) : json_null(),
                      "mem_used", (json_int_t)s->memory_used, "compute_limit",
                      s->compute_pct ? json_integer(s->compute_pct) : json_null(), "suspended",
                      false));
    }
    return json_pack(
        "{s:i, s:s, s:s, s:s, s:s, s:b, s:I, s:o, s:i, s:[], s:I, s:I, s:I, s:o, s:o, s:o}",
        "index", g->index, "node", nd->slurm.name, "node_state", tsn_status_name(nd->status),
        "uuid", g->uuid, "name", g->model, "simulated", nd->figs.simulated, "memory_total",
        (json_int_t)g->memory_total, "memory_used",
        g->used_known ? json_integer((json_int_t)g->memory_used) : json_null(), "sm_count", 0,
        "nvlink_peers", "allocated_milli", (json_int_t)milli, "allocated_mem", (json_int_t)lim,
        "used_mem", (json_int_t)used, "utilization",
        g->utilization >= 0 ? json_integer(g->utilization) : json_null(), "figures_at",
        api_time(nd->figs.sampled_ms), "slices", slices);
}

/* Every node's GPUs, node by node (sinfo's order). */
static json_t *gpus_json(const view_t *v)
{
    json_t *a = json_array();
    for (size_t k = 0; k < v->n; k++)
        for (int i = 0; v->nodes[k].has_figs && i < v->nodes[k].figs.ngpus; i++)
            json_array_append_new(a, gpu_json(v, &v->nodes[k], &v->nodes[k].figs.gpus[i]));
    return a;
}

/* The poll's own state: when it last ran, and why it failed. */
static json_t *poll_json(const view_t *v)
{
    return json_pack("{s:o, s:o}", "polled_at", api_time(v->polled_ms), "error",
                     v->why[0] ? json_string(v->why) : json_null());
}

void api_cluster_gpus(tessd_t *d, thttp_reply_t *rep)
{
    view_t v;
    view_take(d, &v);
    json_t *nodes = json_array();
    for (size_t k = 0; k < v.n; k++)
        json_array_append_new(nodes, node_state_json(&v.nodes[k]));
    thttp_json(
        rep, 200,
        json_pack("{s:o, s:o, s:o}", "gpus", gpus_json(&v), "nodes", nodes, "poll", poll_json(&v)));
    view_free(&v);
}

void api_cluster_nodes(tessd_t *d, thttp_reply_t *rep)
{
    view_t v;
    view_take(d, &v);
    json_t *nodes = json_array();
    for (size_t k = 0; k < v.n; k++) {
        const tsn_node_t *nd = &v.nodes[k];
        json_t *o = node_state_json(nd);
        json_t *gpus = json_array();
        for (int i = 0; nd->has_figs && i < nd->figs.ngpus; i++)
            json_array_append_new(gpus, gpu_json(&v, nd, &nd->figs.gpus[i]));
        json_object_set_new(o, "figures_at",
                            nd->has_figs ? api_time(nd->figs.sampled_ms) : json_null());
        json_object_set_new(o, "simulated", json_boolean(nd->figs.simulated));
        json_object_set_new(o, "gpus", gpus);
        json_array_append_new(nodes, o);
    }
    thttp_json(rep, 200, json_pack("{s:o, s:o}", "nodes", nodes, "poll", poll_json(&v)));
    view_free(&v);
}

#define L(n, v) ((tsl_label_t){(n), (v)})

void api_cluster_metrics(tessd_t *d, tsl_prom_t *p)
{
    size_t n = 0;
    int64_t polled = 0;
    tsn_node_t *nodes = tsn_snapshot(d->nodes, &n, &polled, NULL, 0);
    const tnf_node_t **figs = n ? calloc(n, sizeof *figs) : NULL;
    for (size_t k = 0; figs && k < n; k++)
        figs[k] = nodes[k].has_figs ? &nodes[k].figs : NULL;
    tnf_prom(p, figs, figs ? n : 0);
    free(figs);
    tsl_prom_family(p, "tessel_node_up", "gauge",
                    "1 when the node's exporter answered tesseld's last poll, else 0.");
    for (size_t k = 0; k < n; k++) {
        tsl_label_t l = L("node", nodes[k].slurm.name);
        tsl_prom_u64(p, "tessel_node_up", &l, 1, nodes[k].answered);
    }
    tsl_prom_family(p, "tessel_node_info", "gauge",
                    "A node of the Slurm cluster (1), with tesseld's state of it (up, down, drain, "
                    "unreachable) and Slurm's.");
    for (size_t k = 0; k < n; k++) {
        tsl_label_t l[] = {L("node", nodes[k].slurm.name),
                           L("state", tsn_status_name(nodes[k].status)),
                           L("slurm_state", nodes[k].slurm.state)};
        tsl_prom_u64(p, "tessel_node_info", l, 3, 1);
    }
    tsl_prom_family(p, "tessel_node_last_answer_timestamp_seconds", "gauge",
                    "When the node's exporter last answered (seconds since the epoch).");
    for (size_t k = 0; k < n; k++) {
        if (!nodes[k].last_ok_ms)
            continue;
        tsl_label_t l = L("node", nodes[k].slurm.name);
        tsl_prom_f64(p, "tessel_node_last_answer_timestamp_seconds", &l, 1,
                     (double)nodes[k].last_ok_ms / 1000.0);
    }
    tsn_nodes_free(nodes, n);
}
