/* gpuspeed.h - GPU models' relative speeds (issue 22, item 4; docs/scheduler-queues.md,
 * "Normalised GPUs"): the value formats (a speed, tesseld.conf's gpu-speeds list) and the
 * speed in effect for a model.  Pure: no store, no daemon; tesseld's glue is in sched.c
 * (tessd_gpu_speeds_apply) and api/gpumodels.c.
 */
#ifndef TESSEL_DAEMON_GPUSPEED_H
#define TESSEL_DAEMON_GPUSPEED_H

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

#endif
