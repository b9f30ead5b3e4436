/* slurmsub.h - tesseld's pool of tessel-slurm-submit processes (slurmsub.c;
 * docs/slurm-backend.md, "The submitter"). */
#ifndef TESSEL_DAEMON_SLURMSUB_H
#define TESSEL_DAEMON_SLURMSUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/daemon.h"
#include "daemon/pwcache.h"

/* Submit request (tsj_submit_request's JSON) through a submitter of account pw (never root:
 * the caller checked).  201 with *slurm_id (as the submitter said: not yet checked against
 * Slurm); else the HTTP status and why: 503 no answer within slurm-timeout or the submitter
 * ended during the submission, 422/503 Slurm's refusal (tsj_sbatch_error of its lines), 500
 * the submitter could not be started or answered out of shape.  No lock of tesseld's held. */
int tessd_slurmsub_submit(tessd_t *d, const tessd_pw_t *pw, const char *request, int64_t *slurm_id,
                          char *why, size_t len);

/* End the idle submitters (all: every one not in use, at shutdown; else those idle past a
 * minute).  Main thread. */
void tessd_slurmsub_reap(tessd_t *d, bool all);

#endif
