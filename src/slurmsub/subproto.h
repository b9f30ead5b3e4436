/* subproto.h - the frames between tesseld and tessel-slurm-submit (docs/slurm-backend.md, "The
 * submitter"): each message is a 4-byte big-endian length and that many bytes of JSON (jansson
 * parses it; no text format of our own).  tesseld sends one request per job (slurmjob.h,
 * tsj_submit_request), the submitter answers one object:
 *
 *   {"job_id": N}                                     the job is Slurm's job N
 *   {"errno": E, "error": "TEXT", "log": "LINES"}     Slurm refused it: E its error code (-1:
 *                                                     SLURM_ERROR, "Unspecified error"), TEXT
 *                                                     slurm_strerror(E), LOGS what libslurm
 *                                                     printed meanwhile (a job_submit plugin's
 *                                                     message), at most TSS_LOG_MAX bytes
 *
 * Used by both sides: tesseld (src/daemon/slurmsub.c) and the submitter (main.c).  A frame is
 * read whole or not at all: a length above the reader's bound, a short read or a time out is an
 * error, and nothing of a partial frame is returned. */
#ifndef TESSEL_SLURMSUB_SUBPROTO_H
#define TESSEL_SLURMSUB_SUBPROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libutil/error.h"

/* Largest request: the script holds the job's environment and command (tesseld bounds both
 * well below this; docs/api.md), plus the names. */
#define TSS_REQUEST_MAX (8u << 20)
/* Largest answer: an id, or an error with libslurm's lines. */
#define TSS_ANSWER_MAX (32u << 10)
/* Largest answer of the reader (tessel-slurm-submit --read): every job slurmctld holds, about
 * 210 bytes each with short names, at most about 800 (read.h).  16 MiB: 21,000 jobs of the
 * longest strings, 80,000 of short ones (squeue's 64 MiB held about 21,000); a read of every job
 * above it fails the view only (slurm.c, read_jobs), and keeps tesseld's parse of one answer
 * near 200 MiB at most (review of the reader, 2026-11-28, L5). */
#define TSS_JOBS_MAX (16u << 20)
/* Most bytes of libslurm's printed lines kept in an answer. */
#define TSS_LOG_MAX (8u << 10)

/* Write one frame of len bytes to fd, by deadline_ms (CLOCK_MONOTONIC milliseconds; -1: no
 * deadline, fd blocking).  0, or -1 with errno (ETIMEDOUT, EPIPE, EMSGSIZE above 4 GiB...). */
int tss_frame_write(int fd, const char *buf, size_t len, int64_t deadline_ms);

/* Read one frame from fd, at most max bytes, by deadline_ms (as above).  0 with *out (malloc'd,
 * NUL-terminated, the caller frees it) and *len; -1 with errno: ENODATA at a clean end of
 * file before any byte, EPROTO a frame cut short, EMSGSIZE a length above max, ETIMEDOUT. */
int tss_frame_read(int fd, size_t max, int64_t deadline_ms, char **out, size_t *len);

/* CLOCK_MONOTONIC in milliseconds. */
int64_t tss_mono_ms(void);

/* An answer read back.  Returns 0 with *job_id > 0 (submitted), 1 with *code and msg (Slurm
 * refused it: msg has libslurm's lines then "sbatch: error: Batch job submission failed:
 * TEXT", the lines sbatch prints for the same refusal), or -1 with err (not an answer of that
 * shape, or one with a key besides job_id, or besides errno, error and log: the submitter is
 * not trusted). */
int tss_answer_parse(const char *text, size_t len, int64_t *job_id, int *code, char *msg,
                     size_t msglen, tsl_error_t *err);

#endif
