/* procstat.c - the few fields Tessel reads from /proc/PID/stat (procstat.h). */
#include "libutil/procstat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int tsl_procstat_parse(const char *line, tsl_procstat_t *out)
{
    const char *p = strrchr(line, ')');
    if (!p || p[1] != ' ') {
        errno = EINVAL;
        return -1;
    }
    tsl_procstat_t v = {.state = p[2]};
    /* The name lies between the first '(' and the last ')'. */
    const char *name = strchr(line, '(');
    size_t len = name && name < p ? (size_t)(p - name - 1) : 0;
    if (len >= sizeof v.comm)
        len = sizeof v.comm - 1;
    if (len)
        memcpy(v.comm, name + 1, len);
    v.comm[len] = '\0';
    p += 2; /* field 3 */
    for (int field = 3; field < 22; field++) {
        if (field == 4) {
            char *end;
            long pp = strtol(p, &end, 10);
            if (end == p || *end != ' ') {
                errno = EINVAL;
                return -1;
            }
            v.ppid = (pid_t)pp;
        }
        p = strchr(p, ' ');
        if (!p) {
            errno = EINVAL;
            return -1;
        }
        p++;
    }
    char *end;
    errno = 0;
    unsigned long long st = strtoull(p, &end, 10);
    if (end == p || errno) {
        errno = EINVAL;
        return -1;
    }
    v.start_time = st;
    *out = v;
    return 0;
}

int tsl_procstat_read(pid_t pid, tsl_procstat_t *out)
{
    /* One read of up to 1 KiB: the name is at most 16 bytes and field 22 comes early. */
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    int e = errno;
    close(fd);
    if (n < 0) {
        errno = e == ESRCH ? ENOENT : e;
        return -1;
    }
    buf[n] = '\0';
    return tsl_procstat_parse(buf, out);
}
