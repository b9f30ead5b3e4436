/* batchspec.h - the batch options people write as Slurm users do: time limits, job
 * dependencies and job arrays.  Parsed here once, for the CLI (early, clear errors) and for
 * tesseld (which takes the same strings in its API and trusts nothing the client checked).
 *
 * Time limits (sbatch --time): "MM", "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM", "D-HH:MM:SS",
 * or a number with a unit "30s", "10m", "2h", "1d"; "unlimited" (or "infinite") = 0, no
 * limit.  Slurm reads a bare number as minutes, and so do we.
 *
 * Dependencies (sbatch --dependency, and Tessel's shorter --after): a comma-separated list of
 * "JOB" or "JOB:ok|any|notok" (a bare JOB means ok: run after it succeeded), or Slurm's
 * "afterok:12:13,afterany:14,afternotok:15".  Slurm's "?" (any of) is not supported.
 *
 * Arrays (sbatch --array): "0-99", "1,3,5", "0-10:2", any comma-separated mix of them, then
 * "%N" for at most N elements running at once.  Indices are sorted and made unique.
 */
#ifndef TESSEL_UTIL_BATCHSPEC_H
#define TESSEL_UTIL_BATCHSPEC_H

#include <stddef.h>
#include <stdint.h>

#include "libutil/error.h"

/* Longest time limit: 365 days (Slurm's own bound is larger, but a year is far above any job
 * on a shared lab GPU and keeps every sum of milliseconds far from overflow). */
#define TSL_TIME_MAX_S (365LL * 24 * 3600)

/* Parse s into *seconds (0 = no limit).  0, or -1 with errno EINVAL (malformed) or ERANGE
 * (above TSL_TIME_MAX_S) and one line in err; *seconds untouched on failure. */
int tsl_parse_duration(const char *s, int64_t *seconds, tsl_error_t *err);

/* Print seconds as people write them back: "30m", "1h30m", "2d", "45s", "1d2h0m5s" (units
 * from the largest non-zero one down to the smallest non-zero one); "unlimited" for 0.
 * Returns buf. */
char *tsl_format_duration(int64_t seconds, char *buf, size_t len);

typedef enum {
    TSL_DEP_OK = 0,    /* the job succeeded (exit 0) */
    TSL_DEP_ANY = 1,   /* the job ended, however */
    TSL_DEP_NOTOK = 2, /* the job ended otherwise than succeeded */
} tsl_dep_kind_t;

typedef struct {
    int64_t job;
    tsl_dep_kind_t kind;
} tsl_dep_t;

/* Most dependencies of one job: a pipeline step waits on a handful; 64 bounds the store
 * rows and the work of each check. */
#define TSL_DEPS_MAX 64

/* Name of a kind as written after the colon ("ok", "any", "notok"); parse returns -1 for an
 * unknown one. */
const char *tsl_dep_kind_name(tsl_dep_kind_t k);
int tsl_dep_kind_parse(const char *s);

/* Parse s into deps[0..*n-1] (at most max).  A job named twice keeps its last kind.  0, or
 * -1 with errno EINVAL (malformed, job id not a positive number) or E2BIG (more than max) and
 * one line in err. */
int tsl_parse_deps(const char *s, tsl_dep_t *deps, size_t max, size_t *n, tsl_error_t *err);

/* Largest array index and most elements of one array (Slurm's MaxArraySize is 1001 by
 * default: indices 0..1000).  One submission of 1,000 elements is one transaction of 1,000
 * rows (~10 ms); more would hold tesseld's lock for long. */
#define TSL_ARRAY_INDEX_MAX    1000
#define TSL_ARRAY_ELEMENTS_MAX 1001

typedef struct {
    uint32_t n;                            /* number of elements, >= 1 */
    uint32_t max_running;                  /* %N; 0 = no limit */
    int32_t index[TSL_ARRAY_ELEMENTS_MAX]; /* sorted, unique */
} tsl_array_t;

/* Parse s into *a.  0, or -1 with errno EINVAL (malformed, empty, step 0, a range backwards)
 * or ERANGE (an index above TSL_ARRAY_INDEX_MAX) and one line in err. */
int tsl_parse_array(const char *s, tsl_array_t *a, tsl_error_t *err);

#endif
