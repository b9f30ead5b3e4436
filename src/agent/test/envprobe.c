/* envprobe.c - libtessel-envprobe.so, a test helper (not part of Tessel): a library that a
 * hostile job names in LD_AUDIT or LD_PRELOAD.  Each process that loads it appends one line
 * "euid=N exe=PATH" to the file named by $TESSEL_PROBE_OUT, so a test can tell which
 * processes (root's tessel-shim, or only the job) loaded it.  Built without sanitizers: it is
 * loaded into programs that are not. */
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void record(const char *how)
{
    const char *out = getenv("TESSEL_PROBE_OUT");
    if (!out)
        return;
    char exe[512] = "?";
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0)
        exe[n] = '\0';
    char line[640];
    int len = snprintf(line, sizeof line, "euid=%u exe=%s via=%s\n", (unsigned)geteuid(), exe, how);
    int fd = open(out, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0)
        return;
    if (len > 0 && write(fd, line, (size_t)len) < 0) {
        /* a test helper: nothing more to do */
    }
    close(fd);
}

/* LD_AUDIT: the loader calls la_version first in every process that names the library. */
unsigned int la_version(unsigned int version);
unsigned int la_version(unsigned int version)
{
    record("audit");
    return version <= LAV_CURRENT ? version : LAV_CURRENT;
}

/* LD_PRELOAD (and the audit namespace's copy, which la_version already recorded). */
__attribute__((constructor)) static void probe_init(void)
{
    record("init");
}
