/* size.h - parse and print byte sizes the way users write them.
 *
 * Accepted: a plain byte count ("1073741824"), or a number (integer or with
 * a decimal fraction) followed by a binary suffix K, M, G, T, P, optionally
 * written Ki/KiB/KB (all binary: 1K = 1024).  Case-insensitive suffix,
 * no sign, no spaces inside, nothing after the suffix.
 */
#ifndef TESSEL_UTIL_SIZE_H
#define TESSEL_UTIL_SIZE_H

#include <stddef.h>
#include <stdint.h>

#include "libutil/error.h"

/* Parse s into *bytes.  Returns 0, or -1 with errno = EINVAL (malformed) or
 * ERANGE (above UINT64_MAX) and a message in err.  *bytes is untouched on
 * failure. */
int tsl_parse_size(const char *s, uint64_t *bytes, tsl_error_t *err);

/* The same for a size a person types (command-line options, size strings in the API): a unit
 * is required, so that "8" is not read as 8 bytes.  A bare number fails with EINVAL and a
 * message that suggests the unit meant ("'8': a size needs a unit, e.g. 8G (or 8B for
 * bytes)"); "8B" is 8 bytes.  "0" needs none (it is 0 in every unit). */
int tsl_parse_size_unit(const char *s, uint64_t *bytes, tsl_error_t *err);

/* Print bytes as the largest binary unit that keeps 3 significant digits,
 * e.g. "6.00 GiB", "512 MiB", "100 B".  Returns buf. */
char *tsl_format_size(uint64_t bytes, char *buf, size_t len);

/* The resources Tessel counts, in the order of tsched_res_t and of the API's objects. */
typedef enum {
    TSL_RES_GPU = 0, /* milli-GPU */
    TSL_RES_GPU_MEM, /* bytes */
    TSL_RES_CPU,     /* milli-CPU */
    TSL_RES_MEM,     /* bytes */
} tsl_res_t;

/* An amount of resource res as people read it, the one formatter of amounts for messages:
 * "1.5 GPU", "8 CPU", "0.25 CPU", "40.0 GiB" (tsl_format_size); "none" for UINT64_MAX (not
 * governed, no cap).  Returns buf. */
char *tsl_format_amount(tsl_res_t res, uint64_t v, char *buf, size_t len);

#endif
