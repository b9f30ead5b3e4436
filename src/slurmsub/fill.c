/* fill.c - a request into sbatch's job_desc_msg_t (fill.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slurm/slurm_logic.h"
#include "slurmsub/fill.h"

/* Add or replace NAME=VALUE in *v (env_array_overwrite's rule: a name once). */
static int env_set(char ***v, size_t *n, const char *name, const char *value)
{
    char *kv;
    if (asprintf(&kv, "%s=%s", name, value) < 0)
        return -1;
    size_t nl = strlen(name);
    for (size_t i = 0; i < *n; i++)
        if (strncmp((*v)[i], name, nl) == 0 && (*v)[i][nl] == '=') {
            free((*v)[i]);
            (*v)[i] = kv;
            return 0;
        }
    char **nv = realloc(*v, (*n + 2) * sizeof *nv);
    if (!nv) {
        free(kv);
        return -1;
    }
    nv[(*n)++] = kv;
    nv[*n] = NULL;
    *v = nv;
    return 0;
}

void tss_owned_free(tss_owned_t *own)
{
    for (size_t i = 0; i < own->nenv; i++)
        free(own->env[i]);
    for (size_t i = 0; i < own->nspank; i++)
        free(own->spank[i]);
    free(own->env);
    free(own->spank);
    free(own->tres);
    memset(own, 0, sizeof *own);
}

static const char *const known[] = {
    "name",    "cwd",           "stdout", "stderr",   "script",  "gres",      "gpu_share",
    "gpu_mem", "cpus_per_task", "mem_mb", "time_min", "requeue", "partition", "qos"};

/* A positive integer member (0 when absent), or -1. */
static int64_t pos_int(json_t *req, const char *key, int64_t max)
{
    json_t *v = json_object_get(req, key);
    if (!v)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) <= 0 || json_integer_value(v) > max)
        return -1;
    return json_integer_value(v);
}

/* A string member without control characters (NULL when absent; "" is refused). */
static const char *str(json_t *req, const char *key, bool *bad)
{
    json_t *v = json_object_get(req, key);
    if (!v)
        return NULL;
    const char *s = json_string_value(v);
    if (!s || !s[0] || strlen(s) != json_string_length(v))
        *bad = true;
    return *bad ? NULL : s;
}

int tss_fill(json_t *req, char *const *base_env, uint32_t uid, uint32_t gid, job_desc_msg_t *d,
             tss_owned_t *own, tsl_error_t *err)
{
    memset(own, 0, sizeof *own);
    slurm_init_job_desc_msg(d);
    if (!json_is_object(req))
        goto bad;
    const char *k;
    json_t *v;
    json_object_foreach(req, k, v)
    {
        size_t i = 0;
        while (i < sizeof known / sizeof known[0] && strcmp(k, known[i]) != 0)
            i++;
        if (i == sizeof known / sizeof known[0]) {
            errno = EINVAL;
            return tsl_errprintf(err, "request: unknown member '%.40s'", k);
        }
    }
    bool bad = false;
    const char *name = str(req, "name", &bad), *cwd = str(req, "cwd", &bad);
    const char *out = str(req, "stdout", &bad), *er = str(req, "stderr", &bad);
    const char *script = str(req, "script", &bad), *gres = str(req, "gres", &bad);
    const char *share = str(req, "gpu_share", &bad), *mem = str(req, "gpu_mem", &bad);
    const char *part = str(req, "partition", &bad), *qos = str(req, "qos", &bad);
    int64_t cpus = pos_int(req, "cpus_per_task", 65535);
    int64_t mem_mb = pos_int(req, "mem_mb", INT64_C(1) << 50);
    int64_t tmin = pos_int(req, "time_min", UINT32_MAX - 1);
    json_t *rq = json_object_get(req, "requeue");
    if (bad || !name || !cwd || !out || !er || !script || cpus < 0 || mem_mb < 0 || tmin < 0 ||
        (rq && !json_is_false(rq)) || cwd[0] != '/')
        goto bad;

    /* As slurm_opt_create_job_desc with set_defaults (sbatch: one task, one node's worth). */
    d->name = (char *)name;
    d->work_dir = (char *)cwd;
    d->std_out = (char *)out;
    d->std_err = (char *)er;
    d->script = (char *)script;
    d->user_id = uid;
    d->group_id = gid;
    d->contiguous = 0;
    d->mail_type = 0;
    d->min_cpus = 1;
    if (cpus) {
        d->bitflags |= JOB_CPUS_SET;
        d->cpus_per_task = (uint16_t)cpus;
        d->min_cpus = (uint32_t)cpus;
        d->pn_min_cpus = (uint16_t)cpus; /* sbatch's _opt_verify */
    }
    if (mem_mb)
        d->pn_min_memory = (uint64_t)mem_mb;
    if (tmin)
        d->time_limit = (uint32_t)tmin;
    if (rq)
        d->requeue = 0;
    d->partition = (char *)part;
    d->qos = (char *)qos;
    if (gres && asprintf(&own->tres, "gres:%s", gres) < 0) {
        own->tres = NULL;
        goto oom;
    }
    d->tres_per_node = own->tres;

    for (char *const *e = base_env; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq)
            continue;
        char nm[256];
        if ((size_t)(eq - *e) >= sizeof nm)
            continue;
        memcpy(nm, *e, (size_t)(eq - *e));
        nm[eq - *e] = '\0';
        if (env_set(&own->env, &own->nenv, nm, eq + 1) < 0)
            goto oom;
    }
    /* sbatch's _opt_verify exports the job's name. */
    if (env_set(&own->env, &own->nenv, "SLURM_JOB_NAME", name) < 0)
        goto oom;
    /* The options in the order the plugin registers them (--gpu-mem, --gpu-share), then what
     * its submit_env adds, as sbatch runs them (spank_init_post_opt). */
    uint64_t bytes = 0;
    unsigned ppm = 0;
    if (mem && tslurm_parse_mem(mem, &bytes, err) < 0)
        goto inval;
    if (share && tslurm_parse_share(share, &ppm, err) < 0)
        goto inval;
    const struct {
        const char *opt, *val;
    } opts[] = {{"_SLURM_SPANK_OPTION_" TSS_SPANK_PLUGIN "_gpu_mem", mem},
                {"_SLURM_SPANK_OPTION_" TSS_SPANK_PLUGIN "_gpu_share", share}};
    for (size_t i = 0; i < 2; i++)
        if (opts[i].val && (env_set(&own->env, &own->nenv, opts[i].opt, opts[i].val) < 0 ||
                            env_set(&own->spank, &own->nspank, opts[i].opt, opts[i].val) < 0))
            goto oom;
    char num[32];
    if (bytes) {
        snprintf(num, sizeof num, "%" PRIu64, bytes);
        if (env_set(&own->spank, &own->nspank, TSLURM_ENV_MEM, num) < 0)
            goto oom;
    }
    if (ppm) {
        snprintf(num, sizeof num, "%u", ppm);
        if (env_set(&own->spank, &own->nspank, TSLURM_ENV_SHARE, num) < 0)
            goto oom;
    }
    for (size_t i = 0; i < own->nspank; i++) {
        char nm[300];
        const char *eq = strchr(own->spank[i], '=');
        snprintf(nm, sizeof nm, "SLURM_SPANK_%.*s", (int)(eq - own->spank[i]), own->spank[i]);
        if (env_set(&own->env, &own->nenv, nm, eq + 1) < 0)
            goto oom;
    }
    if (cpus) {
        snprintf(num, sizeof num, "%" PRId64, cpus);
        if (env_set(&own->env, &own->nenv, "SLURM_CPUS_PER_TASK", num) < 0)
            goto oom;
    }
    d->environment = own->env;
    d->env_size = (uint32_t)own->nenv;
    d->spank_job_env = own->spank;
    d->spank_job_env_size = (uint32_t)own->nspank;
    return 0;
bad:
    tss_owned_free(own);
    errno = EINVAL;
    return tsl_errprintf(err, "request: not what tesseld sends");
inval:
    tss_owned_free(own);
    errno = EINVAL;
    return -1;
oom:
    tss_owned_free(own);
    errno = ENOMEM;
    return tsl_errprintf(err, "out of memory");
}
