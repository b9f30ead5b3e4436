/* tmpdir.h - a temporary directory per test case, for the daemon's unit tests. */
#ifndef TESSEL_DAEMON_TEST_TMPDIR_H
#define TESSEL_DAEMON_TEST_TMPDIR_H

#include <stdio.h>
#include <stdlib.h>

/* Create /tmp/tessel-test-NAME-XXXXXX into dir (len bytes).  0, or -1 with errno. */
static inline int test_tmpdir(char *dir, size_t len, const char *name)
{
    snprintf(dir, len, "/tmp/tessel-test-%s-XXXXXX", name);
    return mkdtemp(dir) ? 0 : -1;
}

/* Remove dir and all below it (a path made by test_tmpdir: no quote in it).  0 or -1. */
static inline int test_tmpdir_remove(const char *dir)
{
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

#endif
