/* slurmsub.h - tesseld's pool of tessel-slurm-submit processes (slurmsub.c;
 * docs/slurm-backend.md, "The submitter"). */
#ifndef TESSEL_DAEMON_SLURMSUB_H
#define TESSEL_DAEMON_SLURMSUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "daemon/daemon.h"
#include "daemon/pwcache.h"

/* Submit request (tsj_submit_request's JSON) through a submitter of account pw (never root:
 * the caller checked).  201 with *slurm_id (as the submitter said: not yet checked against
 * Slurm); else the HTTP status and why: 503 no answer within slurm-timeout or the submitter
 * ended during the submission, 422/503 Slurm's refusal (tsj_sbatch_error of its lines), 500
 * the submitter could not be started or answered out of shape.  No lock of tesseld's held. */
int tessd_slurmsub_submit(tessd_t *d, const tessd_pw_t *pw, const char *request, int64_t *slurm_id,
                          char *why, size_t len);

/* Read what Slurm holds of the jobs ids[0..n) (and of every job when all) through tesseld's
 * reader (tessel-slurm-submit --read, read.h, started as tesseld at the first call and kept):
 * 0 with *answer ({"jobs": [...]}, the keys of squeue --json's jobs: tsj_parse_jobs; the
 * caller decrefs it); -1 with why when Slurm did not answer (its error, or none within
 * slurm-timeout: as a failed squeue); -2 with why when the reader failed (not started, ended,
 * an answer out of shape or above TSS_JOBS_MAX: it is ended, the next call starts another; or
 * it refused the request: it is kept; the caller may read by squeue instead).  Ids outside
 * 1..2^32-1 are not asked (slurmctld cannot hold them).  No lock of tesseld's held. */
int tessd_slurmsub_read(tessd_t *d, const int64_t *ids, size_t n, bool all, json_t **answer,
                        char *why, size_t len);

/* The poll's read through the reader: the jobs ids[0..n) (as tessd_slurmsub_read), and every
 * job when *all.  A read of every job that fails
 * in the reader (-2: an answer above its bound, any user can hold jobs enough) is made again
 * for the ids alone: *all is then false and view_why (vlen bytes) says why the view was not
 * read.  Returns as tessd_slurmsub_read. */
int tessd_slurmsub_read_poll(tessd_t *d, const int64_t *ids, size_t n, bool *all, json_t **answer,
                             char *view_why, size_t vlen, char *why, size_t len);

/* End the idle submitters (all: every one not in use, at shutdown; else those idle past a
 * minute), and the reader likewise.  Main thread. */
void tessd_slurmsub_reap(tessd_t *d, bool all);

#endif
