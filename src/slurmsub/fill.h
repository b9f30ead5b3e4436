/* fill.h - a request of tesseld's (subproto.h) into the job_desc_msg_t that sbatch would have
 * sent for the same options (Slurm 22.05's slurm_opt_create_job_desc and sbatch.c's
 * _fill_job_desc_from_opts, for the options tsj_sbatch_argv writes), without a cluster: unit-
 * tested in test/test_fill.c.  Used only by tessel-slurm-submit (main.c). */
#ifndef TESSEL_SLURMSUB_FILL_H
#define TESSEL_SLURMSUB_FILL_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <slurm/slurm.h>

#include "libutil/error.h"

/* The SPANK plugin whose options tesseld passes (SPANK_PLUGIN(tessel, 1) in
 * src/slurm/spank_tessel.c): sbatch names its options' variables after it. */
#define TSS_SPANK_PLUGIN "tessel"

/* What tss_fill allocates for the job_desc (its strings point into these and into the
 * request, which must outlive the submission). */
typedef struct {
    char **env; /* the job's environment, NULL-terminated */
    size_t nenv;
    char **spank; /* the job's SPANK environment (spank_job_env) */
    size_t nspank;
    char *tres; /* tres_per_node: "gres:shard:2" */
} tss_owned_t;

/* Fill d (slurm_init_job_desc_msg first) from req for an account of uid/gid: what sbatch
 * sends for the same options.  base_env (NULL-terminated) is the environment sbatch would have
 * exported: its own environment with what sbatch adds before any option (main.c builds it).
 * Added as sbatch adds them: SLURM_CPUS_PER_TASK with cpus_per_task; for --gpu-mem and
 * --gpu-share, the option's variable _SLURM_SPANK_OPTION_tessel_gpu_mem (in the environment
 * and the SPANK environment: plugstack.c's _option_setenv), the plugin's TESSEL_GPU_MEM_BYTES
 * and TESSEL_GPU_SHARE_PPM in the SPANK environment (spank_tessel.c's submit_env, from the
 * same parsing code, slurm_logic.c), and each SPANK variable again in the environment as
 * SLURM_SPANK_NAME (sbatch.c's _set_spank_env).  0, or -1 with err (EINVAL: a request not of
 * that shape, an option the plugin would refuse; ENOMEM); own is freed by tss_owned_free
 * either way. */
int tss_fill(json_t *req, char *const *base_env, uint32_t uid, uint32_t gid, job_desc_msg_t *d,
             tss_owned_t *own, tsl_error_t *err);
void tss_owned_free(tss_owned_t *own);

#endif
