/* nodefig.c - one node's GPU figures as JSON and Prometheus text, and the JSON read back with
 * every field checked (see nodefig.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libnodefig/nodefig.h"

void tnf_node_clear(tnf_node_t *n)
{
    if (!n)
        return;
    free(n->slices);
    memset(n, 0, sizeof *n);
}

int tnf_add_slice(tnf_node_t *n, const tnf_slice_t *s)
{
    if (n->nslices >= TNF_MAX_SLICES) {
        errno = E2BIG;
        return -1;
    }
    if (n->nslices == n->cap) {
        size_t cap = n->cap ? n->cap * 2 : 8; /* a node has a handful of slices */
        tnf_slice_t *ns = realloc(n->slices, cap * sizeof *ns);
        if (!ns) {
            errno = ENOMEM;
            return -1;
        }
        n->slices = ns;
        n->cap = cap;
    }
    n->slices[n->nslices++] = *s;
    return 0;
}

static json_t *size_or_null(bool known, uint64_t v)
{
    return known && v <= (uint64_t)INT64_MAX ? json_integer((json_int_t)v) : json_null();
}

json_t *tnf_to_json(const tnf_node_t *n)
{
    json_t *gpus = json_array(), *slices = json_array();
    for (int i = 0; gpus && i < n->ngpus; i++) {
        const tnf_gpu_t *g = &n->gpus[i];
        json_array_append_new(
            gpus,
            json_pack("{s:i, s:s, s:s, s:o, s:o, s:o}", "index", g->index, "uuid", g->uuid, "model",
                      g->model, "memory_total", size_or_null(true, g->memory_total), "memory_used",
                      size_or_null(g->used_known, g->memory_used), "utilization",
                      g->utilization >= 0 ? json_integer(g->utilization) : json_null()));
    }
    for (size_t i = 0; slices && i < n->nslices; i++) {
        const tnf_slice_t *s = &n->slices[i];
        json_array_append_new(
            slices, json_pack("{s:I, s:s, s:i, s:o, s:o, s:o}", "job", (json_int_t)s->job, "user",
                              s->user, "gpu", s->gpu, "memory_limit",
                              size_or_null(s->memory_limit > 0, s->memory_limit), "memory_used",
                              size_or_null(true, s->memory_used), "compute_limit",
                              s->compute_pct ? json_integer(s->compute_pct) : json_null()));
    }
    if (!gpus || !slices) {
        json_decref(gpus);
        json_decref(slices);
        return NULL;
    }
    return json_pack("{s:i, s:s, s:I, s:o, s:b, s:o, s:o}", "version", TNF_VERSION, "node", n->node,
                     "sampled_at_ms", (json_int_t)n->sampled_ms, "error",
                     n->error[0] ? json_string(n->error) : json_null(), "simulated", n->simulated,
                     "gpus", gpus, "slices", slices);
}

/* ---- reading ------------------------------------------------------------------------------ */

static int bad(tsl_error_t *err, const char *what, int e)
{
    errno = e;
    return tsl_errprintf(err, "the node's figures: %s", what);
}

/* A string field into buf: present, a string, shorter than len, no control character. */
static int get_str(json_t *o, const char *key, char *buf, size_t len, bool null_ok,
                   tsl_error_t *err)
{
    json_t *v = json_object_get(o, key);
    buf[0] = '\0';
    if (null_ok && (!v || json_is_null(v)))
        return 0;
    if (!json_is_string(v)) {
        char what[96];
        snprintf(what, sizeof what, "\"%s\" is not a string", key);
        return bad(err, what, EINVAL);
    }
    const char *s = json_string_value(v);
    size_t sl = json_string_length(v);
    bool ctl = sl != strlen(s);
    for (size_t i = 0; i < sl && !ctl; i++)
        ctl = (unsigned char)s[i] < 0x20 || s[i] == 0x7f;
    if (sl >= len || ctl) {
        char what[96];
        snprintf(what, sizeof what, "\"%s\" is too long or holds a control character", key);
        return bad(err, what, EINVAL);
    }
    memcpy(buf, s, sl + 1);
    return 0;
}

/* An integer field in [lo, hi]; *known false for null when null_ok. */
static int get_int(json_t *o, const char *key, int64_t lo, int64_t hi, bool null_ok, bool *known,
                   int64_t *out, tsl_error_t *err)
{
    json_t *v = json_object_get(o, key);
    if (known)
        *known = false;
    *out = 0;
    if (null_ok && (!v || json_is_null(v)))
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        char what[96];
        snprintf(what, sizeof what, "\"%s\" is not a number in %lld..%lld", key, (long long)lo,
                 (long long)hi);
        return bad(err, what, EINVAL);
    }
    *out = json_integer_value(v);
    if (known)
        *known = true;
    return 0;
}

int tnf_from_json(const char *text, size_t len, tnf_node_t *out, tsl_error_t *err)
{
    memset(out, 0, sizeof *out);
    if (len > TNF_MAX_JSON)
        return bad(err, "larger than 1 MiB", EINVAL);
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        char what[192];
        snprintf(what, sizeof what, "not JSON (%s, line %d)", je.text, je.line);
        return bad(err, what, EINVAL);
    }
    int rc = -1;
    int64_t v;
    bool known;
    json_t *gpus = json_object_get(root, "gpus"), *slices = json_object_get(root, "slices");
    if (!json_is_object(root)) {
        bad(err, "not an object", EINVAL);
        goto out;
    }
    if (get_int(root, "version", 0, INT32_MAX, false, NULL, &v, err) < 0)
        goto out;
    if (v != TNF_VERSION) {
        char what[96];
        snprintf(what, sizeof what, "version %lld, this tesseld reads %d", (long long)v,
                 TNF_VERSION);
        bad(err, what, EPROTO);
        goto out;
    }
    if (get_str(root, "node", out->node, sizeof out->node, false, err) < 0 ||
        get_str(root, "error", out->error, sizeof out->error, true, err) < 0 ||
        get_int(root, "sampled_at_ms", 0, INT64_MAX, false, NULL, &out->sampled_ms, err) < 0)
        goto out;
    json_t *sim = json_object_get(root, "simulated");
    if (sim && !json_is_boolean(sim)) {
        bad(err, "\"simulated\" is not true or false", EINVAL);
        goto out;
    }
    out->simulated = json_is_true(sim);
    if (!json_is_array(gpus) || !json_is_array(slices)) {
        bad(err, "\"gpus\" or \"slices\" is not an array", EINVAL);
        goto out;
    }
    if (json_array_size(gpus) > TNF_MAX_GPUS || json_array_size(slices) > TNF_MAX_SLICES) {
        bad(err, "more GPUs or slices than a node can have", EINVAL);
        goto out;
    }
    uint64_t seen = 0; /* bit i: GPU index i listed */
    size_t i;
    json_t *o;
    json_array_foreach(gpus, i, o)
    {
        tnf_gpu_t *g = &out->gpus[out->ngpus];
        if (!json_is_object(o)) {
            bad(err, "a GPU is not an object", EINVAL);
            goto out;
        }
        int64_t idx, total, used, util;
        if (get_int(o, "index", 0, TNF_MAX_GPUS - 1, false, NULL, &idx, err) < 0 ||
            get_str(o, "uuid", g->uuid, sizeof g->uuid, false, err) < 0 ||
            get_str(o, "model", g->model, sizeof g->model, false, err) < 0 ||
            get_int(o, "memory_total", 0, INT64_MAX, false, NULL, &total, err) < 0 ||
            get_int(o, "memory_used", 0, INT64_MAX, true, &g->used_known, &used, err) < 0 ||
            get_int(o, "utilization", 0, 100, true, &known, &util, err) < 0)
            goto out;
        if (seen & (1ull << idx)) {
            bad(err, "a GPU index is listed twice", EINVAL);
            goto out;
        }
        seen |= 1ull << idx;
        g->index = (int)idx;
        g->memory_total = (uint64_t)total;
        g->memory_used = (uint64_t)used;
        g->utilization = known ? (int)util : -1;
        out->ngpus++;
    }
    json_array_foreach(slices, i, o)
    {
        tnf_slice_t s = {0};
        int64_t job, gpu, lim, used, core;
        if (!json_is_object(o)) {
            bad(err, "a slice is not an object", EINVAL);
            goto out;
        }
        if (get_int(o, "job", 1, INT64_MAX, false, NULL, &job, err) < 0 ||
            get_str(o, "user", s.user, sizeof s.user, false, err) < 0 ||
            get_int(o, "gpu", 0, TNF_MAX_GPUS - 1, false, NULL, &gpu, err) < 0 ||
            get_int(o, "memory_limit", 1, INT64_MAX, true, NULL, &lim, err) < 0 ||
            get_int(o, "memory_used", 0, INT64_MAX, false, NULL, &used, err) < 0 ||
            get_int(o, "compute_limit", 1, 100, true, NULL, &core, err) < 0)
            goto out;
        if (!(seen & (1ull << gpu))) {
            bad(err, "a slice is on a GPU the node does not list", EINVAL);
            goto out;
        }
        s.job = job;
        s.gpu = (int)gpu;
        s.memory_limit = (uint64_t)lim;
        s.memory_used = (uint64_t)used;
        s.compute_pct = (unsigned)core;
        if (tnf_add_slice(out, &s) < 0) {
            bad(err, "out of memory", ENOMEM);
            goto out;
        }
    }
    rc = 0;
out:
    json_decref(root);
    return rc;
}

/* ---- Prometheus ----------------------------------------------------------------------------- */

#define L(n, v) ((tsl_label_t){(n), (v)})

static const tnf_gpu_t *gpu_of(const tnf_node_t *n, int index)
{
    for (int i = 0; i < n->ngpus; i++)
        if (n->gpus[i].index == index)
            return &n->gpus[i];
    return NULL;
}

void tnf_prom(tsl_prom_t *p, const tnf_node_t *const *nodes, size_t n)
{
    static const struct {
        const char *name, *help;
    } gfam[] = {
        {"tessel_gpu_info",
         "A GPU of the node (1), with its model and whether it is simulated (fake NVML)."},
        {"tessel_gpu_memory_total_bytes", "GPU memory."},
        {"tessel_gpu_memory_used_bytes",
         "GPU memory in use by every process, as the driver counts it (NVML)."},
        {"tessel_gpu_utilization_ratio",
         "Share of the last sample period in which a kernel ran on the GPU, 0-1 (NVML)."},
        {"tessel_gpu_slices", "Slurm jobs' slices on the GPU."},
    };
    for (size_t f = 0; f < sizeof gfam / sizeof gfam[0]; f++) {
        tsl_prom_family(p, gfam[f].name, "gauge", gfam[f].help);
        for (size_t k = 0; k < n; k++) {
            const tnf_node_t *nd = nodes[k];
            for (int i = 0; nd && i < nd->ngpus; i++) {
                const tnf_gpu_t *g = &nd->gpus[i];
                char gi[16];
                snprintf(gi, sizeof gi, "%d", g->index);
                tsl_label_t l[] = {L("node", nd->node), L("gpu", gi), L("uuid", g->uuid),
                                   L("model", g->model), L("simulated", nd->simulated ? "1" : "0")};
                uint64_t ns = 0;
                for (size_t s = 0; s < nd->nslices; s++)
                    ns += nd->slices[s].gpu == g->index;
                switch (f) {
                case 0: /* only the info carries simulated, as tesseld's own */
                    tsl_prom_u64(p, gfam[f].name, l, 5, 1);
                    break;
                case 1:
                    tsl_prom_u64(p, gfam[f].name, l, 4, g->memory_total);
                    break;
                case 2:
                    if (g->used_known)
                        tsl_prom_u64(p, gfam[f].name, l, 4, g->memory_used);
                    break;
                case 3:
                    if (g->utilization >= 0)
                        tsl_prom_f64(p, gfam[f].name, l, 4, g->utilization / 100.0);
                    break;
                default:
                    tsl_prom_u64(p, gfam[f].name, l, 4, ns);
                    break;
                }
            }
        }
    }
    static const struct {
        const char *name, *help;
    } sfam[] = {
        {"tessel_slice_memory_used_bytes",
         "GPU memory the job's processes hold on the GPU, as the interposer in the job counts "
         "it."},
        {"tessel_slice_memory_limit_bytes", "The slice's GPU-memory limit."},
        {"tessel_slice_compute_limit_ratio",
         "The compute share the slice is held to, 0-1 (absent: not known)."},
    };
    for (size_t f = 0; f < sizeof sfam / sizeof sfam[0]; f++) {
        tsl_prom_family(p, sfam[f].name, "gauge", sfam[f].help);
        for (size_t k = 0; k < n; k++) {
            const tnf_node_t *nd = nodes[k];
            for (size_t i = 0; nd && i < nd->nslices; i++) {
                const tnf_slice_t *s = &nd->slices[i];
                const tnf_gpu_t *g = gpu_of(nd, s->gpu);
                char gi[16], job[24];
                snprintf(gi, sizeof gi, "%d", s->gpu);
                snprintf(job, sizeof job, "%lld", (long long)s->job);
                tsl_label_t l[] = {L("node", nd->node), L("gpu", gi), L("uuid", g ? g->uuid : ""),
                                   L("job", job), L("user", s->user)};
                if (f == 0)
                    tsl_prom_u64(p, sfam[f].name, l, 5, s->memory_used);
                else if (f == 1 && s->memory_limit)
                    tsl_prom_u64(p, sfam[f].name, l, 5, s->memory_limit);
                else if (f == 2 && s->compute_pct)
                    tsl_prom_f64(p, sfam[f].name, l, 5, s->compute_pct / 100.0);
            }
        }
    }
    tsl_prom_family(p, "tessel_node_sampled_timestamp_seconds", "gauge",
                    "When the node's figures were taken (seconds since the epoch).");
    for (size_t k = 0; k < n; k++) {
        if (!nodes[k])
            continue;
        tsl_label_t l = L("node", nodes[k]->node);
        tsl_prom_f64(p, "tessel_node_sampled_timestamp_seconds", &l, 1,
                     (double)nodes[k]->sampled_ms / 1000.0);
    }
}
