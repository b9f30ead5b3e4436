/* ctrstop.c - a hostile process for t7040: run inside a container job as the job's user, it
 * watches for new children of the shim (SHIMPID, the container's first process's parent: the
 * container has no pid namespace) and sends each SIGSTOP, as a job that wants to freeze its
 * shim would.  Prints "stopped PID NAME" for each signal that was allowed (its own exec'd
 * processes may be stopped; the test expects no tessel-shim among them) and "saw PID" the
 * first time it meets each child (so the test knows it did look).  Runs until killed.
 *
 *   ctrstop SHIMPID
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The parent pid of process p from /proc/p/stat, or -1; its name in comm. */
static int parent_of(int p, char *comm, size_t size)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", p);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    const char *r = strrchr(buf, ')'), *l = strchr(buf, '(');
    if (l && r && r > l)
        snprintf(comm, size, "%.*s", (int)(r - l - 1), l + 1);
    char state;
    int ppid;
    if (!r || sscanf(r + 1, " %c %d", &state, &ppid) != 2 || state == 'T')
        return -1;
    return ppid;
}

/* Looks at process p: a child of shim, met for the first time or not, stopped if allowed. */
static void try_one(int p, int shim, int *seen, unsigned *nseen)
{
    char comm[64] = "?";
    if (p <= 1 || p == getpid() || parent_of(p, comm, sizeof comm) != shim)
        return;
    int known = 0;
    for (unsigned k = 0; k < 64 && !known; k++)
        known = seen[k] == p;
    if (!known) {
        seen[(*nseen)++ % 64] = p;
        printf("saw %d\n", p);
    }
    if (kill(p, SIGSTOP) == 0)
        printf("stopped %d %s\n", p, comm);
}

/* The last pid the kernel gave out (/proc/sys/kernel/ns_last_pid), or 0. */
static int last_pid(void)
{
    char b[32];
    int fd = open("/proc/sys/kernel/ns_last_pid", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, b, sizeof b - 1);
    close(fd);
    if (n <= 0)
        return 0;
    b[n] = '\0';
    return atoi(b);
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    int shim = atoi(argv[1]);
    int seen[64] = {0};
    unsigned nseen = 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* The newest pids, in a tight loop (a child of the shim lives for milliseconds), and
     * every so often all of /proc. */
    for (unsigned long round = 0;; round++) {
        int last = last_pid();
        for (int p = last - 4; last > 0 && p <= last + 4; p++)
            try_one(p, shim, seen, &nseen);
        if (round % 256)
            continue;
        DIR *d = opendir("/proc");
        if (!d)
            return 1;
        struct dirent *e;
        while ((e = readdir(d)))
            try_one(atoi(e->d_name), shim, seen, &nseen);
        closedir(d);
    }
}
