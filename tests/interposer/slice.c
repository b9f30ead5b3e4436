/* slice.c - tcu-slice: read a slice file through libshm's API the way
 * tesseld shows usage per device and process, and suspend or resume it.
 *
 * Usage: tcu-slice PATH [suspend|resume|state|setlimit:BYTES|sethost:BYTES|sethostused:BYTES|
 *                        thrash:S|junklock:S]
 * Output without a command: "device I limit=L used=U ctx_cost=C ctx_cost_created=K
 *         core_limit=P core_mode=M core_prio=R rate_ppm=Q busy_ns=B launches=N waited_ns=W
 *         host_limit=HL host_used=HU" per device, then "proc PID comm=NAME used=U0 host=S0
 *         busy=B0 inflight=F waiting=H" per process (device 0), then "procs N used_sum=S
 * busy_sum=T" (sums over processes of device 0). suspend / resume: tshm_suspend / tshm_resume,
 * print "ok". state: "state suspended=0|1 drained=0|1 busy_ns=B launches=N" (device 0).
 * setlimit:BYTES: tshm_set_limit of device 0, as a job rewriting its own slice file would
 *         (the file is its user's); print "ok".
 * sethost:BYTES: tshm_set_host_limit of device 0 (the oversubscription's host limit), the same
 *         way; print "ok".
 * sethostused:BYTES: a hostile job: write device 0's slice-wide spilled count (host_used)
 *         straight into the file, under the processes that keep it; print "ok".
 * thrash:SECONDS: a hostile job: make the slice (one device, 1 GiB), print "ok", then for
 *         SECONDS truncate the file to nothing and write it back, as fast as it can, so that a
 *         reader that maps it (rather than copying it) faults past its end.
 * junklock:SECONDS: a hostile job: replace the file's content with bytes that are no slice
 *         (its size kept), hold an exclusive flock on it, print "ok", and sleep SECONDS.
 * wake, reclaim, work: a hostile job writing idle reclamation's header words itself (the file
 *         is its user's; docs/suspend.md, "Idle reclamation"): the wake word (a restore asked),
 *         the reclaim word set, or the work word; print "ok", or "failed" and exit 1 (the file
 *         cannot be opened for writing: another account's).
 * takework: what tesseld's idle tick does (tshm_fd_take_work): read the work word and clear
 *         it; print "work=0|1", or "failed" and exit 1.
 * idle:   the three idle words as tesseld reads them (tshm_fd_idle), changing nothing: print
 *         "work=W reclaim=R wake=K", or "failed" and exit 1.
 */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "libshm/shm.h"
#include "libshm/shm_layout.h"

struct sums {
    unsigned long long used, busy;
};

static int show(const tshm_proc_info_t *p, void *arg)
{
    struct sums *s = arg;
    s->used += p->used[0];
    s->busy += p->busy_ns[0];
    printf("proc %d comm=%s used=%llu host=%llu busy=%llu inflight=%u waiting=%u\n", (int)p->pid,
           p->comm, (unsigned long long)p->used[0], (unsigned long long)p->host_used[0],
           (unsigned long long)p->busy_ns[0], p->inflight, p->waiting);
    return 0;
}

/* thrash:SECONDS and junklock:SECONDS (see the header). */
static int hostile(const char *path, const char *cmd)
{
    int thrash = strncmp(cmd, "thrash:", 7) == 0;
    double secs = strtod(strchr(cmd, ':') + 1, NULL);
    tsl_error_t err = {{0}};
    tshm_t *s = tshm_attach(path, &err);
    static const unsigned char uuid[16];
    if (!s || tshm_device(s, uuid, 1ull << 30, &err) < 0) {
        fprintf(stderr, "tcu-slice: %s\n", err.text);
        return 1;
    }
    tshm_close(s);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        perror("tcu-slice: open");
        return 1;
    }
    size_t len = (size_t)st.st_size;
    char *buf = malloc(len);
    if (!buf || pread(fd, buf, len, 0) != (ssize_t)len) {
        perror("tcu-slice: read");
        return 1;
    }
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (!thrash) {
        memset(buf, 0x5a, len);
        if (pwrite(fd, buf, len, 0) != (ssize_t)len || flock(fd, LOCK_EX) < 0) {
            perror("tcu-slice: junk");
            return 1;
        }
        printf("ok\n");
        fflush(stdout);
        struct timespec d = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
        nanosleep(&d, NULL);
        return 0;
    }
    printf("ok\n");
    fflush(stdout);
    unsigned long rounds = 0;
    do {
        if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, len, 0) != (ssize_t)len) {
            perror("tcu-slice: thrash");
            return 1;
        }
        rounds++;
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
    printf("rounds %lu\n", rounds);
    return 0;
}

/* sethostused:BYTES: device 0's host_used rewritten in place, as the job may (its file). */
static int set_host_used(const char *path, const char *bytes)
{
    uint64_t v = strtoull(bytes, NULL, 10);
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    off_t at = TSHM_DEVICES_OFFSET + offsetof(struct tshm_device_rec, host_used);
    int ok = fd >= 0 && pwrite(fd, &v, sizeof v, at) == (ssize_t)sizeof v;
    if (fd >= 0)
        close(fd);
    printf("%s\n", ok ? "ok" : "failed");
    return ok ? 0 : 1;
}

/* wake, reclaim, work: the header word written with pwrite, as any writer of the file may. */
static int set_word(const char *path, const char *cmd)
{
    size_t at = strcmp(cmd, "wake") == 0      ? offsetof(struct tshm_header, wake)
                : strcmp(cmd, "reclaim") == 0 ? offsetof(struct tshm_header, reclaim)
                                              : offsetof(struct tshm_header, work);
    uint32_t one = 1;
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    int ok = fd >= 0 && pwrite(fd, &one, sizeof one, (off_t)at) == (ssize_t)sizeof one;
    if (fd < 0)
        perror("tcu-slice: open");
    else
        close(fd);
    printf("%s\n", ok ? "ok" : "failed");
    return ok ? 0 : 1;
}

/* idle: the idle words, read only. */
static int idle_words(const char *path)
{
    tsl_error_t err = {{0}};
    tshm_idle_t w;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    int rc = fd >= 0 ? tshm_fd_idle(fd, &w, &err) : -1;
    if (fd < 0)
        perror("tcu-slice: open");
    else
        close(fd);
    if (rc < 0) {
        if (fd >= 0)
            fprintf(stderr, "tcu-slice: %s\n", err.text);
        printf("failed\n");
        return 1;
    }
    printf("work=%d reclaim=%d wake=%d\n", w.work, w.reclaim, w.wake);
    return 0;
}

/* takework: tesseld's look at the work word (read and clear). */
static int take_work(const char *path)
{
    tsl_error_t err = {{0}};
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    int w = fd >= 0 ? tshm_fd_take_work(fd, &err) : -1;
    if (fd < 0)
        perror("tcu-slice: open");
    else
        close(fd);
    if (w < 0) {
        if (fd >= 0)
            fprintf(stderr, "tcu-slice: %s\n", err.text);
        printf("failed\n");
        return 1;
    }
    printf("work=%d\n", w);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: tcu-slice PATH "
                        "[suspend|resume|state|setlimit:BYTES|sethost:BYTES|sethostused:BYTES|"
                        "thrash:SECONDS|junklock:SECONDS|wake|reclaim|work|takework|idle]\n");
        return 2;
    }
    const char *cmd = argc == 3 ? argv[2] : NULL;
    if (cmd && (strncmp(cmd, "thrash:", 7) == 0 || strncmp(cmd, "junklock:", 9) == 0))
        return hostile(argv[1], cmd);
    if (cmd && strncmp(cmd, "sethostused:", 12) == 0)
        return set_host_used(argv[1], cmd + 12);
    if (cmd &&
        (strcmp(cmd, "wake") == 0 || strcmp(cmd, "reclaim") == 0 || strcmp(cmd, "work") == 0))
        return set_word(argv[1], cmd);
    if (cmd && strcmp(cmd, "takework") == 0)
        return take_work(argv[1]);
    if (cmd && strcmp(cmd, "idle") == 0)
        return idle_words(argv[1]);
    int setlimit = cmd && strncmp(cmd, "setlimit:", 9) == 0;
    int sethost = cmd && strncmp(cmd, "sethost:", 8) == 0;
    int control =
        cmd && (strcmp(cmd, "suspend") == 0 || strcmp(cmd, "resume") == 0 || setlimit || sethost);
    tsl_error_t err = {{0}};
    tshm_t *s = control ? tshm_attach(argv[1], &err) : tshm_open_ro(argv[1], &err);
    if (!s) {
        fprintf(stderr, "tcu-slice: %s\n", err.text);
        return 1;
    }
    if (control) {
        int rc = setlimit  ? tshm_set_limit(s, 0, strtoull(cmd + 9, NULL, 10))
                 : sethost ? tshm_set_host_limit(s, 0, strtoull(cmd + 8, NULL, 10))
                 : strcmp(cmd, "suspend") == 0 ? tshm_suspend(s)
                                               : tshm_resume(s);
        printf("%s\n", rc == 0 ? "ok" : "failed");
        tshm_close(s);
        return rc == 0 ? 0 : 1;
    }
    if (cmd && strcmp(cmd, "state") == 0) {
        tshm_device_info_t d;
        memset(&d, 0, sizeof d);
        if (tshm_ndevices(s) > 0)
            tshm_device_info(s, 0, &d);
        printf("state suspended=%d drained=%d busy_ns=%llu launches=%llu\n",
               tshm_run_state(s) == TSHM_SUSPENDED, tshm_drained(s), (unsigned long long)d.busy_ns,
               (unsigned long long)d.launches);
        tshm_close(s);
        return 0;
    }
    if (cmd) {
        fprintf(stderr, "tcu-slice: unknown command %s\n", cmd);
        tshm_close(s);
        return 2;
    }
    for (int i = 0; i < tshm_ndevices(s); i++) {
        tshm_device_info_t d;
        if (tshm_device_info(s, i, &d) == 0)
            printf("device %d limit=%llu used=%llu ctx_cost=%llu ctx_cost_created=%llu "
                   "core_limit=%u core_mode=%u "
                   "core_prio=%u rate_ppm=%u busy_ns=%llu launches=%llu waited_ns=%llu "
                   "host_limit=%llu host_used=%llu\n",
                   i, (unsigned long long)d.limit, (unsigned long long)d.used,
                   (unsigned long long)d.ctx_cost, (unsigned long long)d.ctx_cost_created,
                   d.core_limit, d.core_mode, d.core_prio, d.rate_ppm,
                   (unsigned long long)d.busy_ns, (unsigned long long)d.launches,
                   (unsigned long long)d.waited_ns, (unsigned long long)d.host_limit,
                   (unsigned long long)d.host_used);
    }
    struct sums sum = {0, 0};
    int n = tshm_foreach_proc(s, show, &sum);
    printf("procs %d used_sum=%llu busy_sum=%llu\n", n, sum.used, sum.busy);
    tshm_close(s);
    return 0;
}
