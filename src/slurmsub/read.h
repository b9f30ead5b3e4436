/* read.h - tessel-slurm-submit --read: tesseld's reader of Slurm's jobs (docs/slurm-backend.md,
 * "Reading the jobs' states").  tesseld starts one, as itself, and asks it at each poll for the
 * jobs it has in Slurm, over the frames of subproto.h:
 *
 *   {"ids": [N, ...], "all": B}    the jobs of these ids; with "all" true, every job slurmctld
 *                                  holds (the view of the jobs submitted to Slurm directly)
 *   {"jobs": [JOB, ...]}           the answer: each JOB an object with the keys (and the
 *                                  values) of squeue --json's job of Slurm 22.05 that tesseld
 *                                  reads: job_id, job_state, state_reason, start_time,
 *                                  submit_time, end_time, exit_code, nodes, user_id, user_name,
 *                                  name, partition, cpus.  A job slurmctld does not hold (ended
 *                                  past MinJobAge, or never) is not in it
 *   {"errno": E, "error": "TEXT"}  Slurm did not answer (slurm_strerror(E))
 *   {"refused": "TEXT"}            the reader's own failure: a request not of that shape, out of
 *                                  memory (tesseld reads that poll by squeue)
 *
 * Each string is made UTF-8, its control characters '?', and cut to what tesseld keeps of it
 * (TSS_KEEP_*): a job is at most about 800 bytes of an answer whatever its owner named it.
 *
 * It replaces squeue --json, which formats every field of every job slurmctld holds (about a
 * hundred a job) and made the polls the largest cost of a submission through tesseld
 * (docs/bench-submit.md).  The pure parts are here, unit-tested in test/test_read.c. */
#ifndef TESSEL_SLURMSUB_READ_H
#define TESSEL_SLURMSUB_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <slurm/slurm.h>

#include "libutil/error.h"

/* Bytes kept of a job's strings, NUL included: tesseld's tsj_seen_t (src/daemon/slurmjob.h)
 * keeps no more. */
#define TSS_KEEP_NAME  128
#define TSS_KEEP_NODES 256
#define TSS_KEEP_SHORT 64

/* Most ids one request may name: tesseld's active jobs of one poll. */
#define TSS_READ_IDS_MAX 1000000u
/* At most this many ids are read one by one (slurm_load_job each: slurmctld packs only those,
 * at the price of an RPC and a munge credential each, about 0.8 ms); more, or "all", and every
 * job is loaded at once (one slurm_load_jobs) and filtered here: with 500 jobs held, 10 ids one
 * by one took as long as all 500 at once (bench/slurm/poll.sh, docs/slurm-backend.md). */
#define TSS_READ_ONE_BY_ONE 8u

/* A request: 0 with *ids (malloc'd, sorted, no repeats; NULL when *n is 0) and *all, or -1
 * with err (EINVAL: not an object of those keys only, an id not an integer in 1..2^32-1, more
 * than TSS_READ_IDS_MAX of them). */
int tss_read_request(const char *text, size_t len, uint32_t **ids, size_t *n, bool *all,
                     tsl_error_t *err);

/* Job j as squeue --json writes it (the keys above).  NULL when out of memory. */
json_t *tss_job_json(const slurm_job_info_t *j);

/* Add to jobs (a JSON array) the records of m that are asked for: every one when all, else
 * those whose job_id is in ids[0..n) (sorted).  0, or -1 when out of memory. */
int tss_read_add(json_t *jobs, const job_info_msg_t *m, const uint32_t *ids, size_t n, bool all);

/* The reader's loop on fds 0 and 1 (main.c's --read): 0 at the end of tesseld's requests. */
int tss_read_main(void);

#endif
