/* gpuspeed.h - GPU models' relative speeds (issue 22, item 4; docs/scheduler-queues.md,
 * "Normalised GPUs"): the value formats (a speed, tesseld.conf's gpu-speeds list) and the
 * speed in effect for a model.  Pure: no store, no daemon; tesseld's glue is in sched.c
 * (tessd_gpu_speeds_apply) and api/gpumodels.c.
 */
#ifndef TESSEL_DAEMON_GPUSPEED_H
#define TESSEL_DAEMON_GPUSPEED_H

#include <stddef.h>
#include <stdint.h>

#include "tessel/error.h"

/* Slowest and fastest relative speed accepted, milli (0.001 to 1000): three orders of
 * magnitude either side of the reference is beyond any two GPUs on sale together (a T4 to a
 * B200 is about 30x), and keeps milli-GPU x speed far inside 64 bits. */
#define TESSD_SPEED_MIN 1
#define TESSD_SPEED_MAX 1000000

/* "3", "0.33", "1.5": a relative speed (1 = the reference) into milli; at most 3 decimals,
 * TESSD_SPEED_MIN..MAX.  0, or -1 with err ("speed '...': ..."). */
int tessd_speed_parse(const char *s, uint32_t *milli, tsl_error_t *err);

/* A GPU model name as an admin may name it: 1..63 bytes of printable ASCII without ',' and
 * '=' (the separators of gpu-speeds), '/' or a leading or trailing space.  1 or 0. */
int tessd_model_name_valid(const char *name);

/* tesseld.conf's gpu-speeds: "MODEL=SPEED,MODEL=SPEED" ("" = none).  Checks the whole list;
 * when model is not NULL and the list names it, *milli gets its speed.  Returns 1 (found),
 * 0 (not named, or model NULL), -1 with err for a bad list. */
int tessd_speeds_lookup(const char *list, const char *model, uint32_t *milli, tsl_error_t *err);

/* A measured calibration from the inference services' live rates (docs/scheduler-queues.md,
 * "Normalised GPUs"): one observation per replica with a measured rate. */
typedef struct {
    int64_t group;     /* the service: only replicas of one service compare */
    const char *model; /* the model of the GPU it runs on (one GPU) */
    uint32_t milli;    /* its share of that GPU: only equal shares compare */
    double rate;       /* requests per second it serves (its measured service rate), > 0 */
} tessd_rate_obs_t;

typedef struct {
    char model[64];
    uint32_t speed; /* milli, TESSD_SPEED_MIN..MAX */
    int cells;      /* (service, share) pairs in which it was compared with the reference */
} tessd_speed_est_t;

/* Each model's speed relative to `reference`, whose speed is ref_speed (milli): within every
 * (service, share) cell holding both, the model's mean rate over the reference's mean rate;
 * across cells, the geometric mean of those ratios; times ref_speed, rounded and clamped to
 * TESSD_SPEED_MIN..MAX.  The reference comes first in out (ref_speed; cells: the most any
 * model was compared with it in); a model never seen beside the reference is left out. Observations
 * with a rate <= 0 or no model are ignored.  *nout: entries written (at most max).  0, or -1 with
 * errno EINVAL and err when no model could be compared with the reference. */
int tessd_speeds_from_rates(const tessd_rate_obs_t *obs, size_t n, const char *reference,
                            uint32_t ref_speed, tessd_speed_est_t *out, size_t max, size_t *nout,
                            tsl_error_t *err);

#endif
