/* duration.h - parse the short durations people give a setting: "0", "45s", "15m", "2h",
 * "1d", or a sum such as "1h30m".  A number other than 0 needs its unit (as sizes need
 * theirs): "30" could be seconds or, as Slurm reads a bare number, minutes.
 *
 * (Time limits with Slurm's D-HH:MM:SS forms are the batch options' parser; this one is for
 * scheduler settings such as a queue's reservation delay.)
 */
#ifndef TESSEL_UTIL_DURATION_H
#define TESSEL_UTIL_DURATION_H

#include <stdint.h>

#include "libutil/error.h"

/* Parse s into *seconds, at most max.  0, or -1 with errno EINVAL (malformed, a bare number
 * other than 0) or ERANGE (above max) and one line in err; *seconds untouched on failure. */
int tsl_parse_seconds(const char *s, int64_t max, int64_t *seconds, tsl_error_t *err);

/* Print seconds back as "0", "45s", "15m", "1h30m", "2d" (largest unit first, zero parts
 * left out).  Returns buf. */
char *tsl_format_seconds(int64_t seconds, char *buf, size_t len);

#endif
