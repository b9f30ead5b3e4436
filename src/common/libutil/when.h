/* when.h - points in time the way people write them for `--since` (tessel logs), as docker
 * logs and kubectl logs take them.
 *
 * Accepted:
 *   a duration before now: a number and a unit s, m, h or d, or several ("10m", "2h",
 *     "1h30m", "90s");
 *   an RFC 3339 time: "2026-11-26T07:00:00Z", "2026-11-26T09:00:00+02:00", fractions of a
 *     second allowed (and cut);
 *   a local time: "2026-11-26 07:00:00" or "2026-11-26T07:00:00" (no zone: this machine's
 *     time zone), or a date alone "2026-11-26" (its midnight).
 * A bare number is refused (seconds? minutes?) with a message that suggests the units.
 */
#ifndef TESSEL_UTIL_WHEN_H
#define TESSEL_UTIL_WHEN_H

#include <stdint.h>

#include "libutil/error.h"

/* Parse s, relative to now (Unix seconds), into *t (Unix seconds).  0, or -1 with errno
 * EINVAL (or ERANGE) and one line in err; *t untouched on failure. */
int tsl_parse_when(const char *s, int64_t now, int64_t *t, tsl_error_t *err);

#endif
