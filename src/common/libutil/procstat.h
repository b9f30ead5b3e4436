/* procstat.h - the few fields Tessel reads from /proc/PID/stat.
 *
 * Field 2 (the command name) is in parentheses and may hold anything, spaces and ')' included:
 * the fields after it are counted from the last ')' of the line (proc(5)).
 */
#ifndef TESSEL_UTIL_PROCSTAT_H
#define TESSEL_UTIL_PROCSTAT_H

#include <stdint.h>
#include <sys/types.h>

typedef struct {
    char state;          /* field 3: R, S, D, T, t, Z, X, ... */
    pid_t ppid;          /* field 4 */
    uint64_t start_time; /* field 22: clock ticks after boot */
    char comm[16];       /* field 2, the command name (the kernel keeps at most 15 bytes) */
} tsl_procstat_t;

/* Parse one /proc/PID/stat line.  Returns 0, or -1 with errno = EINVAL when it has no ')' or
 * fewer than 22 fields; *out is untouched on failure. */
int tsl_procstat_parse(const char *line, tsl_procstat_t *out);

/* Read and parse /proc/PID/stat.  Returns 0, or -1 with errno set (ENOENT: pid is gone; EINVAL:
 * unreadable line); *out is untouched on failure. */
int tsl_procstat_read(pid_t pid, tsl_procstat_t *out);

#endif
