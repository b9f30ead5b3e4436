/* shm.c - the slice accounting file (see shm.h for the contract and
 * shm_layout.h for the records).
 *
 * Mappings: a handle maps the whole file.  When the process table grows the
 * file is extended and the handle maps it again at the new size, keeping the
 * older mappings alive until tshm_close, because the hot path holds pointers
 * (header, device records, own slot) into the mapping that was current when
 * they were taken.  All mappings are MAP_SHARED views of the same pages.
 * A read-only handle (tshm_open_ro) maps nothing: it holds a copy read with
 * pread (copy_read), because its reader may be root reading a user's file.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libshm/shm.h"
#include "libshm/shm_layout.h"
#include "libutil/procstat.h"

/* Doubling from TSHM_INITIAL_PROCS reaches 2^31 slots in 26 steps; 40 old
 * mappings is more than the file size can ever need. */
#define MAX_MAPS         40
#define TSHM_UNLIKELY(x) __builtin_expect(!!(x), 0)

struct tshm {
    int fd;
    int readonly; /* tshm_open_ro: a copy of the file (maps[0], malloc'd), read with pread */
    int reopen;   /* forked child: reopen fd before the next flock */
    char *path;   /* NULL for a private (memfd) slice */
    pthread_mutex_t lock; /* threads of this process; flock is per open file */
    struct tshm_header *hdr;
    struct tshm_device_rec *devs;
    size_t len; /* length of the newest mapping */
    void *maps[MAX_MAPS];
    size_t lens[MAX_MAPS];
    int nmaps;
    struct tshm_proc_rec *_Atomic self; /* own slot, NULL when unregistered */
    pid_t pid;
};

static size_t file_len(uint32_t cap)
{
    return (size_t)TSHM_PROCS_OFFSET + (size_t)cap * TSHM_PROC_SIZE;
}

static struct tshm_proc_rec *proc_at(const tshm_t *s, uint32_t i)
{
    return (struct tshm_proc_rec *)((char *)s->maps[s->nmaps - 1] + TSHM_PROCS_OFFSET +
                                    (size_t)i * TSHM_PROC_SIZE);
}

/* Map len bytes of the file as the newest mapping. */
static int map_file(tshm_t *s, size_t len)
{
    if (s->nmaps == MAX_MAPS) {
        errno = ENOMEM;
        return -1;
    }
    int prot = PROT_READ | (s->readonly ? 0 : PROT_WRITE);
    void *p = mmap(NULL, len, prot, MAP_SHARED, s->fd, 0);
    if (p == MAP_FAILED)
        return -1;
    s->maps[s->nmaps] = p;
    s->lens[s->nmaps] = len;
    s->nmaps++;
    s->len = len;
    if (s->nmaps == 1) {
        s->hdr = p;
        s->devs = (struct tshm_device_rec *)((char *)p + TSHM_DEVICES_OFFSET);
    }
    return 0;
}

static int validate(const struct tshm_header *h, size_t size, tsl_error_t *err);

/* A read-only handle holds a copy of the file, read with pread, never a
 * mapping: the file may belong to a job's user (tesseld reads the slices of
 * its jobs as root), who can truncate it at any moment, and a read through a
 * mapping past the new end of the file is SIGBUS in the reader.  The copy is
 * buffer maps[0] (malloc'd), want bytes read from offset 0; -1 with errno
 * (EINVAL: the file was shorter than that, i.e. shrank meanwhile). */
static int copy_read(tshm_t *s, size_t want)
{
    char *buf = s->nmaps ? s->maps[0] : NULL;
    if (!buf || s->lens[0] != want) {
        char *n = realloc(buf, want);
        if (!n)
            return -1;
        buf = n;
        s->maps[0] = buf;
        s->lens[0] = want;
        s->nmaps = 1;
    }
    s->hdr = (struct tshm_header *)buf;
    s->devs = (struct tshm_device_rec *)(buf + TSHM_DEVICES_OFFSET);
    s->len = 0;
    for (size_t got = 0; got < want;) {
        ssize_t n = pread(s->fd, buf + got, want - got, (off_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = EINVAL;
            return -1;
        }
        got += (size_t)n;
    }
    s->len = want;
    return 0;
}

/* A read-only handle's new copy: the header and device records (12 KiB), and
 * with procs the process table as far as the header's capacity, the file's
 * size and TSHM_RO_MAX_PROCS allow (only the readers of processes need it:
 * /metrics reads a slice of every running job with tesseld's lock held, and
 * a job may grow its file's table to the bound). */
static int copy_refresh(tshm_t *s, int procs, tsl_error_t *err)
{
    struct stat st;
    if (fstat(s->fd, &st) < 0)
        return tsl_errprintf(err, "%s", strerror(errno));
    if ((size_t)st.st_size < TSHM_PROCS_OFFSET) {
        errno = EINVAL;
        return tsl_errprintf(err, "too short for a slice file");
    }
    if (copy_read(s, TSHM_PROCS_OFFSET) < 0)
        return tsl_errprintf(err, "%s", strerror(errno));
    if (validate(s->hdr, (size_t)st.st_size, err) < 0)
        return -1;
    if (!procs)
        return 0;
    uint32_t cap = atomic_load(&s->hdr->proc_cap);
    if (cap > TSHM_RO_MAX_PROCS)
        cap = TSHM_RO_MAX_PROCS;
    size_t want = file_len(cap);
    if (want > (size_t)st.st_size)
        want = file_len((uint32_t)(((size_t)st.st_size - TSHM_PROCS_OFFSET) / TSHM_PROC_SIZE));
    if (copy_read(s, want) < 0)
        return tsl_errprintf(err, "%s", strerror(errno));
    return 0;
}

/* Remap when another process grew the table.  Caller holds s->lock. */
static int remap_if_grown(tshm_t *s)
{
    size_t want = file_len(atomic_load(&s->hdr->proc_cap));
    if (want <= s->len)
        return 0;
    return map_file(s, want);
}

static int validate(const struct tshm_header *h, size_t size, tsl_error_t *err)
{
    if (h->magic != TSHM_MAGIC) {
        errno = EINVAL;
        return tsl_errprintf(err, "not a Tessel slice file (bad magic)");
    }
    if (h->version != TSHM_VERSION) {
        errno = EPROTO;
        return tsl_errprintf(err, "slice file layout version %u, this build reads %u", h->version,
                             TSHM_VERSION);
    }
    if (h->header_size != TSHM_HEADER_SIZE || h->device_size != TSHM_DEVICE_SIZE ||
        h->proc_size != TSHM_PROC_SIZE || h->max_devices != TSHM_MAX_DEVICES ||
        h->procs_offset != TSHM_PROCS_OFFSET || size < file_len(TSHM_INITIAL_PROCS)) {
        /* (Not size vs proc_cap: the table may be growing right now; the
         * handle maps the rest when it needs it.) */
        errno = EINVAL;
        return tsl_errprintf(err, "slice file has inconsistent record sizes");
    }
    return 0;
}

static void init_header(struct tshm_header *h)
{
    h->version = TSHM_VERSION;
    h->header_size = TSHM_HEADER_SIZE;
    h->device_size = TSHM_DEVICE_SIZE;
    h->proc_size = TSHM_PROC_SIZE;
    h->max_devices = TSHM_MAX_DEVICES;
    h->devices_offset = TSHM_DEVICES_OFFSET;
    h->procs_offset = TSHM_PROCS_OFFSET;
    atomic_store(&h->proc_cap, TSHM_INITIAL_PROCS);
    atomic_thread_fence(memory_order_release);
    h->magic = TSHM_MAGIC;
}

static tshm_t *handle_new(void)
{
    tshm_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->fd = -1;
    pthread_mutex_init(&s->lock, NULL);
    return s;
}

/* Open path, creating it fully initialised if it does not exist: the new
 * file is written under a temporary name beside it and link()ed into place,
 * so no process ever sees a half-made slice and none has to wait on a lock
 * held by a creator that the scheduler preempted (with 300 processes
 * starting on 2 cores, that wait was the 99th percentile: tens of ms).
 * Falls back to O_CREAT + the flock protocol of tshm_attach when the
 * directory refuses the temporary file.  Returns an fd or -1 with errno. */
static int open_or_create(const char *path)
{
    for (int tries = 0; tries < 8; tries++) {
        int fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd >= 0 || errno != ENOENT)
            return fd;
        char tmp[PATH_MAX];
        if (snprintf(tmp, sizeof tmp, "%s.XXXXXX", path) >= (int)sizeof tmp)
            break;
        int t = mkostemp(tmp, O_CLOEXEC);
        if (t < 0)
            break;
        mode_t um = umask(0);
        umask(um);
        void *m = MAP_FAILED;
        if (fchmod(t, 0666 & ~um) == 0 && ftruncate(t, (off_t)file_len(TSHM_INITIAL_PROCS)) == 0)
            m = mmap(NULL, file_len(TSHM_INITIAL_PROCS), PROT_READ | PROT_WRITE, MAP_SHARED, t, 0);
        if (m == MAP_FAILED) {
            int saved = errno;
            unlink(tmp);
            close(t);
            errno = saved;
            return -1;
        }
        init_header(m);
        munmap(m, file_len(TSHM_INITIAL_PROCS));
        int rc = link(tmp, path), saved = errno;
        unlink(tmp);
        if (rc == 0)
            return t; /* the same file, now at path */
        close(t);
        if (saved != EEXIST) {
            errno = saved;
            break;
        }
        /* Another process won the race: open its file. */
    }
    return open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
}

int tshm_create(const char *path, uid_t uid, gid_t gid, mode_t mode, tsl_error_t *err)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s.XXXXXX", path) >= (int)sizeof tmp) {
        errno = ENAMETOOLONG;
        return tsl_errprintf(err, "%s: %s", path, strerror(errno));
    }
    int t = mkostemp(tmp, O_CLOEXEC);
    if (t < 0)
        return tsl_errprintf(err, "%s: %s", path, strerror(errno));
    struct tshm_header h;
    memset(&h, 0, sizeof h);
    init_header(&h);
    int rc = -1;
    /* Given to its owner once complete. */
    if (fchmod(t, mode) == 0 && ftruncate(t, (off_t)file_len(TSHM_INITIAL_PROCS)) == 0 &&
        pwrite(t, &h, sizeof h, 0) == (ssize_t)sizeof h && fchown(t, uid, gid) == 0)
        rc = link(tmp, path);
    int saved = errno;
    unlink(tmp);
    close(t);
    if (rc < 0) {
        errno = saved;
        return tsl_errprintf(err, "%s: %s", path, strerror(saved));
    }
    return 0;
}

tshm_t *tshm_attach(const char *path, tsl_error_t *err)
{
    tshm_t *s = handle_new();
    if (!s) {
        tsl_errprintf(err, "out of memory");
        return NULL;
    }
    const char *what = path ? path : "private slice";
    if (path) {
        s->path = strdup(path);
        if (!s->path)
            goto fail_errno;
        s->fd = open_or_create(path);
    } else {
        s->fd = memfd_create("tessel-slice", MFD_CLOEXEC);
    }
    if (s->fd < 0)
        goto fail_errno;
    /* Fast path, no lock: an initialised file (magic written last). */
    struct stat st;
    if (path && fstat(s->fd, &st) == 0 && (size_t)st.st_size >= TSHM_PROCS_OFFSET) {
        uint64_t magic = 0;
        if (pread(s->fd, &magic, sizeof magic, 0) == (ssize_t)sizeof magic && magic == TSHM_MAGIC) {
            if (map_file(s, (size_t)st.st_size) < 0)
                goto fail_errno;
            tsl_error_t e;
            if (validate(s->hdr, (size_t)st.st_size, &e) < 0) {
                tsl_errprintf(err, "%s: %s", what, e.text);
                goto fail;
            }
            return s;
        }
    }
    if (flock(s->fd, LOCK_EX) < 0)
        goto fail_errno;
    if (fstat(s->fd, &st) < 0)
        goto fail_unlock;
    if (st.st_size == 0) {
        if (ftruncate(s->fd, (off_t)file_len(TSHM_INITIAL_PROCS)) < 0)
            goto fail_unlock;
        if (map_file(s, file_len(TSHM_INITIAL_PROCS)) < 0)
            goto fail_unlock;
        init_header(s->hdr);
    } else {
        if ((size_t)st.st_size < TSHM_PROCS_OFFSET) {
            flock(s->fd, LOCK_UN);
            errno = EINVAL;
            tsl_errprintf(err, "%s: too short for a slice file (%lld bytes)", what,
                          (long long)st.st_size);
            goto fail;
        }
        if (map_file(s, (size_t)st.st_size) < 0)
            goto fail_unlock;
        tsl_error_t e;
        if (validate(s->hdr, (size_t)st.st_size, &e) < 0) {
            int saved = errno;
            flock(s->fd, LOCK_UN);
            errno = saved;
            tsl_errprintf(err, "%s: %s", what, e.text);
            goto fail;
        }
    }
    flock(s->fd, LOCK_UN);
    return s;

fail_unlock : {
    int saved = errno;
    flock(s->fd, LOCK_UN);
    errno = saved;
}
fail_errno:
    tsl_errprintf(err, "%s: %s", what, strerror(errno));
fail : {
    int saved = errno;
    tshm_close(s);
    errno = saved;
}
    return NULL;
}

tshm_t *tshm_open_ro(const char *path, tsl_error_t *err)
{
    tshm_t *s = handle_new();
    if (!s) {
        tsl_errprintf(err, "out of memory");
        return NULL;
    }
    s->readonly = 1;
    /* O_NONBLOCK: a FIFO put there instead must not block the reader. */
    s->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    struct stat st;
    if (s->fd < 0 || fstat(s->fd, &st) < 0) {
        tsl_errprintf(err, "%s: %s", path, strerror(errno));
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        errno = EINVAL;
        tsl_errprintf(err, "%s: not a regular file", path);
        goto fail;
    }
    tsl_error_t e;
    if (copy_refresh(s, 0, &e) < 0) {
        tsl_errprintf(err, "%s: %s", path, e.text);
        goto fail;
    }
    return s;
fail : {
    int saved = errno;
    tshm_close(s);
    errno = saved;
}
    return NULL;
}

/* The header of the slice file open on fd, read with pread and checked; 0 or
 * -1 with errno and err. */
static int fd_header(int fd, struct tshm_header *h, tsl_error_t *err)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return tsl_errprintf(err, "%s", strerror(errno));
    if (!S_ISREG(st.st_mode) || (size_t)st.st_size < TSHM_PROCS_OFFSET) {
        errno = EINVAL;
        return tsl_errprintf(err, "not a slice file (too short, or not a regular file)");
    }
    ssize_t n = pread(fd, h, sizeof *h, 0);
    if (n != (ssize_t)sizeof *h) {
        if (n >= 0)
            errno = EINVAL;
        return tsl_errprintf(err, "reading the header: %s", strerror(errno));
    }
    return validate(h, (size_t)st.st_size, err);
}

int tshm_fd_run_state(int fd, tsl_error_t *err)
{
    struct tshm_header h;
    if (fd_header(fd, &h, err) < 0)
        return -1;
    return atomic_load(&h.suspend) == TSHM_SUSPENDED ? TSHM_SUSPENDED : TSHM_RUNNING;
}

int tshm_fd_set_run(int fd, int state, tsl_error_t *err)
{
    if (state != TSHM_RUNNING && state != TSHM_SUSPENDED) {
        errno = EINVAL;
        return tsl_errprintf(err, "run state %d", state);
    }
    struct tshm_header h;
    if (fd_header(fd, &h, err) < 0)
        return -1;
    /* The word first, then the generation, as tshm_suspend does through a mapping; each an
     * aligned write of its own field (the interposer reads them with atomic loads). */
    uint32_t word = (uint32_t)state;
    uint64_t gen = atomic_load(&h.suspend_gen) + 1;
    if (pwrite(fd, &word, sizeof word, (off_t)offsetof(struct tshm_header, suspend)) !=
            (ssize_t)sizeof word ||
        pwrite(fd, &gen, sizeof gen, (off_t)offsetof(struct tshm_header, suspend_gen)) !=
            (ssize_t)sizeof gen) {
        if (errno == 0)
            errno = EIO;
        return tsl_errprintf(err, "writing the run state: %s", strerror(errno));
    }
    return 0;
}

int tshm_fd_idle(int fd, tshm_idle_t *out, tsl_error_t *err)
{
    struct tshm_header h;
    if (fd_header(fd, &h, err) < 0)
        return -1;
    out->work = atomic_load(&h.work) != 0;
    out->reclaim = atomic_load(&h.reclaim) != 0;
    out->wake = atomic_load(&h.wake) != 0;
    return 0;
}

/* Write the 32-bit header word at off (pwrite of its own aligned field, as tshm_fd_set_run). */
static int fd_put_word(int fd, size_t off, uint32_t v, tsl_error_t *err)
{
    if (pwrite(fd, &v, sizeof v, (off_t)off) != (ssize_t)sizeof v) {
        if (errno == 0)
            errno = EIO;
        return tsl_errprintf(err, "writing the slice's header: %s", strerror(errno));
    }
    return 0;
}

int tshm_fd_take_work(int fd, tsl_error_t *err)
{
    tshm_idle_t w;
    if (tshm_fd_idle(fd, &w, err) < 0)
        return -1;
    /* A launch between the read and the write is lost to the next read, but it was after
     * this read's 1 only if the word was 1 already: work is never missed for a whole tick. */
    if (w.work && fd_put_word(fd, offsetof(struct tshm_header, work), 0, err) < 0)
        return -1;
    return w.work;
}

int tshm_fd_set_reclaim(int fd, int on, tsl_error_t *err)
{
    struct tshm_header h;
    if (fd_header(fd, &h, err) < 0)
        return -1;
    /* wake first: a wake left from before must not restore the next reclaim at once */
    if (fd_put_word(fd, offsetof(struct tshm_header, wake), 0, err) < 0 ||
        fd_put_word(fd, offsetof(struct tshm_header, reclaim), on ? 1u : 0u, err) < 0)
        return -1;
    return 0;
}

void tshm_close(tshm_t *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->nmaps; i++) {
        if (s->readonly)
            free(s->maps[i]);
        else
            munmap(s->maps[i], s->lens[i]);
    }
    if (s->fd >= 0)
        close(s->fd);
    pthread_mutex_destroy(&s->lock);
    free(s->path);
    free(s);
}

/* The file lock, for a caller that holds s->lock.  A forked child first
 * reopens the file: its inherited descriptor shares the parent's flock. */
static int file_lock(tshm_t *s)
{
    if (s->reopen) {
        char buf[64];
        const char *p = s->path;
        if (!p) {
            snprintf(buf, sizeof buf, "/proc/self/fd/%d", s->fd);
            p = buf;
        }
        int fd = open(p, O_RDWR | O_CLOEXEC);
        if (fd < 0)
            return -1;
        close(s->fd);
        s->fd = fd;
        s->reopen = 0;
    }
    return flock(s->fd, LOCK_EX);
}

/* The in-process mutex, then the file lock. */
static int slow_lock(tshm_t *s)
{
    pthread_mutex_lock(&s->lock);
    if (file_lock(s) < 0) {
        int saved = errno;
        pthread_mutex_unlock(&s->lock);
        errno = saved;
        return -1;
    }
    return 0;
}

static void slow_unlock(tshm_t *s)
{
    flock(s->fd, LOCK_UN);
    pthread_mutex_unlock(&s->lock);
}

uint64_t tshm_proc_start_time(pid_t pid)
{
    tsl_procstat_t ps;
    return tsl_procstat_read(pid, &ps) < 0 ? 0 : ps.start_time;
}

/* A zombie has released its GPU memory already: treat it as dead. */
static int proc_is_zombie(pid_t pid)
{
    tsl_procstat_t ps;
    return tsl_procstat_read(pid, &ps) < 0 || ps.state == 'Z' || ps.state == 'X';
}

static void read_comm(char out[16])
{
    memset(out, 0, 16);
    int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, out, 15);
    close(fd);
    if (n > 0 && out[n - 1] == '\n')
        out[n - 1] = '\0';
}

/* thorough: compare start times (catches a reused pid, one /proc read per
 * slot, ~5 us).  Cheap: kill(pid, 0) only (~0.3 us), used at registration so
 * that 300 processes starting in one slice do not each read 300 /proc files
 * under the file lock. */
static int slot_dead(const struct tshm_proc_rec *r, int thorough)
{
    if (!thorough)
        return kill(r->pid, 0) < 0 && errno == ESRCH;
    uint64_t st = tshm_proc_start_time(r->pid);
    return st == 0 || st != r->start_time || proc_is_zombie(r->pid);
}

static void sat_sub(_Atomic uint64_t *v, uint64_t b);

static void give_back(tshm_t *s, struct tshm_proc_rec *r)
{
    for (int d = 0; d < TSHM_MAX_DEVICES; d++) {
        uint64_t b = atomic_exchange(&r->used[d], 0);
        if (b)
            sat_sub(&s->devs[d].used, b);
        uint64_t h = atomic_exchange(&r->host_used[d], 0);
        if (h)
            sat_sub(&s->devs[d].host_used, h);
    }
}

/* Free slot r after its owner's charges went back (state is BUSY). */
static void slot_clear(tshm_t *s, struct tshm_proc_rec *r)
{
    r->pid = 0;
    r->start_time = 0;
    memset(r->comm, 0, sizeof r->comm);
    /* A process killed inside a launch must not keep a suspend draining. */
    atomic_store(&r->launching, 0);
    atomic_store(&r->inflight, 0);
    atomic_store(&r->waiting, 0);
    atomic_store(&r->state, TSHM_PROC_FREE);
    atomic_fetch_add(&s->hdr->generation, 1);
}

/* Reclaim dead slots; lock-free: a slot moves ACTIVE -> BUSY by one
 * compare-and-swap, so exactly one process gives its charges back, however
 * many scan at once.  Caller holds s->lock (the in-process mutex that
 * guards the mapping list), not the file lock. */
enum reclaim_mode {
    RECLAIM_CHARGED,  /* slots holding bytes, pid gone (registration) */
    RECLAIM_ALL,      /* any slot whose pid is gone (before growing the table) */
    RECLAIM_THOROUGH, /* any slot whose pid is gone or reused (allocation failing) */
};

static int holds_bytes(struct tshm_proc_rec *r, uint32_t ndev)
{
    for (uint32_t d = 0; d < ndev; d++)
        if (atomic_load_explicit(&r->used[d], memory_order_relaxed) ||
            atomic_load_explicit(&r->host_used[d], memory_order_relaxed))
            return 1;
    return 0;
}

static int reclaim_scan(tshm_t *s, enum reclaim_mode mode)
{
    if (remap_if_grown(s) < 0)
        return -1;
    uint32_t ndev = atomic_load(&s->hdr->ndevices);
    uint32_t cap = atomic_load(&s->hdr->proc_cap);
    if (file_len(cap) > s->len)
        cap = (uint32_t)((s->len - TSHM_PROCS_OFFSET) / TSHM_PROC_SIZE);
    int n = 0;
    for (uint32_t i = 0; i < cap; i++) {
        struct tshm_proc_rec *r = proc_at(s, i);
        uint32_t st = TSHM_PROC_ACTIVE;
        if (atomic_load(&r->state) != TSHM_PROC_ACTIVE || r == atomic_load(&s->self))
            continue;
        if (mode == RECLAIM_CHARGED && !holds_bytes(r, ndev))
            continue;
        if (!slot_dead(r, mode == RECLAIM_THOROUGH))
            continue;
        if (!atomic_compare_exchange_strong(&r->state, &st, TSHM_PROC_BUSY))
            continue; /* another process is reclaiming it */
        give_back(s, r);
        slot_clear(s, r);
        n++;
    }
    return n;
}

/* Slots of earlier images of this process: a process that execs leaves its
 * old image's slot ACTIVE under the same pid and start time (the driver
 * freed that image's memory with it); its new image, registering now, is
 * the only image the pid can have, so such a slot is stale.  Reclaimed by
 * compare-and-swap like a dead process's (exactly once).  No syscall.
 * Caller holds s->lock. */
static int reclaim_earlier_images(tshm_t *s, pid_t pid)
{
    if (remap_if_grown(s) < 0)
        return -1;
    uint32_t cap = atomic_load(&s->hdr->proc_cap);
    if (file_len(cap) > s->len)
        cap = (uint32_t)((s->len - TSHM_PROCS_OFFSET) / TSHM_PROC_SIZE);
    int n = 0;
    for (uint32_t i = 0; i < cap; i++) {
        struct tshm_proc_rec *r = proc_at(s, i);
        uint32_t st = TSHM_PROC_ACTIVE;
        if (r->pid != pid || r == atomic_load(&s->self) || atomic_load(&r->state) != st)
            continue;
        if (!atomic_compare_exchange_strong(&r->state, &st, TSHM_PROC_BUSY))
            continue;
        give_back(s, r);
        slot_clear(s, r);
        n++;
    }
    return n;
}

int tshm_reclaim(tshm_t *s)
{
    if (s->readonly) {
        errno = EROFS;
        return -1;
    }
    pthread_mutex_lock(&s->lock);
    int n = reclaim_scan(s, RECLAIM_THOROUGH);
    int saved = errno;
    pthread_mutex_unlock(&s->lock);
    errno = saved;
    return n;
}

/* Claim a FREE slot by compare-and-swap; NULL when none.  s->lock held. */
static struct tshm_proc_rec *claim_free(tshm_t *s, uint32_t *seen)
{
    uint32_t cap = atomic_load(&s->hdr->proc_cap);
    if (file_len(cap) > s->len)
        cap = (uint32_t)((s->len - TSHM_PROCS_OFFSET) / TSHM_PROC_SIZE);
    *seen = cap;
    for (uint32_t i = 0; i < cap; i++) {
        struct tshm_proc_rec *r = proc_at(s, i);
        uint32_t st = TSHM_PROC_FREE;
        if (atomic_load(&r->state) == TSHM_PROC_FREE &&
            atomic_compare_exchange_strong(&r->state, &st, TSHM_PROC_BUSY))
            return r;
    }
    return NULL;
}

/* Double the process table under the file lock, unless its capacity is no
 * longer the `seen` one that was found full (another process grew it).
 * s->lock held. */
static int grow(tshm_t *s, uint32_t seen)
{
    if (file_lock(s) < 0)
        return -1;
    int rc = 0;
    uint32_t cap = atomic_load(&s->hdr->proc_cap);
    if (cap != seen) {
        /* Another process grew it since we scanned: map it and rescan. */
        if (file_len(cap) > s->len)
            rc = map_file(s, file_len(cap));
    } else if (cap * 2 < cap) {
        errno = ENOSPC;
        rc = -1;
    } else if (ftruncate(s->fd, (off_t)file_len(cap * 2)) < 0 ||
               map_file(s, file_len(cap * 2)) < 0) {
        rc = -1;
    } else {
        atomic_store(&s->hdr->proc_cap, cap * 2);
    }
    int saved = errno;
    flock(s->fd, LOCK_UN);
    errno = saved;
    return rc;
}

int tshm_register(tshm_t *s, tsl_error_t *err)
{
    if (s->readonly) {
        errno = EROFS;
        return tsl_errprintf(err, "slice opened read-only");
    }
    pid_t pid = getpid();
    if (atomic_load(&s->self) && s->pid == pid)
        return 0;
    pthread_mutex_lock(&s->lock);
    if (atomic_load(&s->self) && s->pid == pid) {
        pthread_mutex_unlock(&s->lock);
        return 0;
    }
    struct tshm_proc_rec *r = NULL;
    /* Only slots that hold bytes are checked here: with 300 processes
     * starting at once, checking every slot would cost each of them 300
     * kill() calls.  Dead slots holding nothing are recycled when the table
     * is full, before it grows. */
    if (reclaim_scan(s, RECLAIM_CHARGED) < 0 || reclaim_earlier_images(s, pid) < 0)
        goto fail;
    int swept = 0;
    uint32_t seen;
    while (!(r = claim_free(s, &seen))) {
        if (!swept++ && reclaim_scan(s, RECLAIM_ALL) > 0)
            continue;
        if (grow(s, seen) < 0)
            goto fail;
    }
    for (int d = 0; d < TSHM_MAX_DEVICES; d++) {
        atomic_store(&r->used[d], 0);
        atomic_store(&r->host_used[d], 0);
        atomic_store(&r->busy_ns[d], 0);
    }
    atomic_store(&r->launching, 0);
    atomic_store(&r->inflight, 0);
    atomic_store(&r->waiting, 0);
    r->pid = pid;
    r->start_time = tshm_proc_start_time(pid);
    read_comm(r->comm);
    atomic_store(&r->state, TSHM_PROC_ACTIVE); /* release: pid is visible first */
    atomic_fetch_add(&s->hdr->generation, 1);
    s->pid = pid;
    atomic_store(&s->self, r);
    pthread_mutex_unlock(&s->lock);
    return 0;
fail : {
    int saved = errno;
    pthread_mutex_unlock(&s->lock);
    errno = saved;
}
    return tsl_errprintf(err, "slice: cannot claim a process slot: %s", strerror(errno));
}

void tshm_unregister(tshm_t *s)
{
    if (!s || !atomic_load(&s->self))
        return;
    pthread_mutex_lock(&s->lock);
    struct tshm_proc_rec *r = atomic_exchange(&s->self, NULL);
    uint32_t st = TSHM_PROC_ACTIVE;
    if (r && s->pid == getpid() && atomic_compare_exchange_strong(&r->state, &st, TSHM_PROC_BUSY)) {
        give_back(s, r);
        slot_clear(s, r);
    }
    pthread_mutex_unlock(&s->lock);
}

void tshm_atfork_child(tshm_t *s)
{
    if (!s)
        return;
    atomic_store(&s->self, NULL);
    s->reopen = 1;
    pthread_mutex_init(&s->lock, NULL);
}

int tshm_registered(const tshm_t *s)
{
    return atomic_load_explicit(&((tshm_t *)s)->self, memory_order_relaxed) != NULL;
}

int tshm_device(tshm_t *s, const unsigned char uuid[16], uint64_t limit, tsl_error_t *err)
{
    if (s->readonly) {
        errno = EROFS;
        return tsl_errprintf(err, "slice opened read-only");
    }
    /* Known device: no lock (records are claimed in order, never freed). */
    uint32_t known = atomic_load(&s->hdr->ndevices);
    for (uint32_t i = 0; i < known; i++) {
        if (memcmp(s->devs[i].uuid, uuid, 16) == 0) {
            uint64_t old = atomic_load(&s->devs[i].limit);
            while (limit < old && !atomic_compare_exchange_weak(&s->devs[i].limit, &old, limit))
                ;
            return (int)i;
        }
    }
    if (slow_lock(s) < 0)
        return tsl_errprintf(err, "slice lock: %s", strerror(errno));
    int idx = -1;
    uint32_t n = atomic_load(&s->hdr->ndevices);
    for (uint32_t i = 0; i < n; i++) {
        if (memcmp(s->devs[i].uuid, uuid, 16) == 0) {
            idx = (int)i;
            break;
        }
    }
    if (idx >= 0) {
        uint64_t old = atomic_load(&s->devs[idx].limit);
        while (limit < old && !atomic_compare_exchange_weak(&s->devs[idx].limit, &old, limit))
            ;
    } else if (n < TSHM_MAX_DEVICES) {
        idx = (int)n;
        struct tshm_device_rec *d = &s->devs[idx];
        memcpy(d->uuid, uuid, 16);
        atomic_store(&d->limit, limit);
        atomic_store(&d->used, 0);
        atomic_store(&d->ctx_cost, 0);
        atomic_store(&d->ctx_cost_created, 0);
        atomic_store(&d->host_limit, 0);
        atomic_store(&d->host_used, 0);
        atomic_store(&d->state, TSHM_DEV_USED);
        atomic_store(&s->hdr->ndevices, n + 1);
    }
    slow_unlock(s);
    if (idx < 0) {
        errno = ENOSPC;
        return tsl_errprintf(err, "slice: more than %d devices", TSHM_MAX_DEVICES);
    }
    return idx;
}

int tshm_set_limit(tshm_t *s, int dev, uint64_t limit)
{
    if (s->readonly || dev < 0 || dev >= (int)atomic_load(&s->hdr->ndevices)) {
        errno = s->readonly ? EROFS : ERANGE;
        return -1;
    }
    atomic_store(&s->devs[dev].limit, limit);
    return 0;
}

int tshm_reserve(tshm_t *s, int dev, uint64_t bytes)
{
    struct tshm_proc_rec *me = atomic_load_explicit(&s->self, memory_order_relaxed);
    if (TSHM_UNLIKELY(!me)) /* unregistered (exit, or a fork child racing) */
        return -1;
    struct tshm_device_rec *d = &s->devs[dev];
    uint64_t limit = atomic_load_explicit(&d->limit, memory_order_relaxed);
    /* Own slot first: a SIGKILL between the two atomics then makes reclaim
     * give back at most this allocation too much (saturating at zero),
     * instead of leaking it from the slice for good. */
    atomic_fetch_add_explicit(&me->used[dev], bytes, memory_order_relaxed);
    uint64_t old = atomic_load_explicit(&d->used, memory_order_relaxed);
    do {
        if (bytes > limit || old > limit - bytes) {
            atomic_fetch_sub_explicit(&me->used[dev], bytes, memory_order_relaxed);
            return -1;
        }
    } while (!atomic_compare_exchange_weak_explicit(&d->used, &old, old + bytes,
                                                    memory_order_acq_rel, memory_order_relaxed));
    return 0;
}

void tshm_charge(tshm_t *s, int dev, uint64_t bytes)
{
    struct tshm_proc_rec *me = atomic_load_explicit(&s->self, memory_order_relaxed);
    if (TSHM_UNLIKELY(!me))
        return;
    atomic_fetch_add_explicit(&me->used[dev], bytes, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->devs[dev].used, bytes, memory_order_acq_rel);
}

static void sat_sub(_Atomic uint64_t *v, uint64_t b)
{
    uint64_t old = atomic_load_explicit(v, memory_order_relaxed);
    uint64_t nv;
    do {
        nv = old > b ? old - b : 0;
    } while (!atomic_compare_exchange_weak_explicit(v, &old, nv, memory_order_acq_rel,
                                                    memory_order_relaxed));
}

void tshm_release(tshm_t *s, int dev, uint64_t bytes)
{
    struct tshm_proc_rec *me = atomic_load_explicit(&s->self, memory_order_relaxed);
    /* Unregistered (after tshm_unregister at exit, or a fork child before
     * its first registration): whatever this process had charged went back
     * with its slot, so the device's counter holds none of it any more.
     * Subtracting again would release the bytes twice, taking them from the
     * other processes of the slice. */
    if (TSHM_UNLIKELY(!me))
        return;
    sat_sub(&me->used[dev], bytes);
    sat_sub(&s->devs[dev].used, bytes);
}

uint64_t tshm_limit(const tshm_t *s, int dev)
{
    if (dev < 0 || dev >= TSHM_MAX_DEVICES)
        return 0;
    return atomic_load_explicit(&s->devs[dev].limit, memory_order_relaxed);
}

uint64_t tshm_used(const tshm_t *s, int dev)
{
    if (dev < 0 || dev >= TSHM_MAX_DEVICES)
        return 0;
    return atomic_load_explicit(&s->devs[dev].used, memory_order_relaxed);
}

static _Atomic uint64_t *ctx_cost_field(const tshm_t *s, int dev, enum tshm_ctx_kind kind)
{
    if (dev < 0 || dev >= TSHM_MAX_DEVICES)
        return NULL;
    struct tshm_device_rec *d = &s->devs[dev];
    return kind == TSHM_CTX_CREATED ? &d->ctx_cost_created : &d->ctx_cost;
}

void tshm_set_ctx_cost_of(tshm_t *s, int dev, enum tshm_ctx_kind kind, uint64_t bytes)
{
    uint64_t zero = 0;
    _Atomic uint64_t *f = ctx_cost_field(s, dev, kind);
    if (f && !s->readonly)
        atomic_compare_exchange_strong(f, &zero, bytes);
}

uint64_t tshm_ctx_cost_of(const tshm_t *s, int dev, enum tshm_ctx_kind kind)
{
    _Atomic uint64_t *f = ctx_cost_field(s, dev, kind);
    return f ? atomic_load_explicit(f, memory_order_relaxed) : 0;
}

void tshm_set_ctx_cost(tshm_t *s, int dev, uint64_t bytes)
{
    tshm_set_ctx_cost_of(s, dev, TSHM_CTX_PRIMARY, bytes);
}

uint64_t tshm_ctx_cost(const tshm_t *s, int dev)
{
    return tshm_ctx_cost_of(s, dev, TSHM_CTX_PRIMARY);
}

uint64_t tshm_self_used(const tshm_t *s, int dev)
{
    struct tshm_proc_rec *me = atomic_load_explicit(&((tshm_t *)s)->self, memory_order_relaxed);
    if (!me || dev < 0 || dev >= TSHM_MAX_DEVICES)
        return 0;
    return atomic_load_explicit(&me->used[dev], memory_order_relaxed);
}

int tshm_refresh(tshm_t *s)
{
    if (s->readonly) {
        tsl_error_t e;
        return copy_refresh(s, 1, &e);
    }
    pthread_mutex_lock(&s->lock);
    int rc = remap_if_grown(s);
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int tshm_ndevices(const tshm_t *s)
{
    return (int)atomic_load(&s->hdr->ndevices);
}

int tshm_device_info(const tshm_t *s, int i, tshm_device_info_t *out)
{
    if (i < 0 || i >= tshm_ndevices(s)) {
        errno = ERANGE;
        return -1;
    }
    const struct tshm_device_rec *d = &s->devs[i];
    memcpy(out->uuid, d->uuid, 16);
    out->limit = atomic_load(&((struct tshm_device_rec *)d)->limit);
    out->used = atomic_load(&((struct tshm_device_rec *)d)->used);
    out->ctx_cost = atomic_load(&((struct tshm_device_rec *)d)->ctx_cost);
    out->ctx_cost_created = atomic_load(&((struct tshm_device_rec *)d)->ctx_cost_created);
    struct tshm_device_rec *w = (struct tshm_device_rec *)d;
    uint32_t fl = atomic_load(&w->core_flags);
    out->core_limit = atomic_load(&w->core_limit);
    out->core_mode = fl & TSHM_CORE_MODE_MASK;
    out->core_prio = (fl >> TSHM_CORE_PRIO_SHIFT) & 0xff;
    out->rate_ppm = atomic_load(&w->rate_ppm);
    out->busy_ns = atomic_load(&w->busy_ns);
    out->launches = atomic_load(&w->launches);
    out->waited_ns = atomic_load(&w->waited_ns);
    out->host_limit = atomic_load(&w->host_limit);
    out->host_used = atomic_load(&w->host_used);
    return 0;
}

int tshm_foreach_proc(tshm_t *s, tshm_proc_f fn, void *arg)
{
    if (tshm_refresh(s) < 0)
        return -1;
    uint32_t cap = atomic_load(&s->hdr->proc_cap);
    if (file_len(cap) > s->len)
        cap = (uint32_t)((s->len - TSHM_PROCS_OFFSET) / TSHM_PROC_SIZE);
    int n = 0;
    for (uint32_t i = 0; i < cap; i++) {
        struct tshm_proc_rec *r = proc_at(s, i);
        if (atomic_load(&r->state) != TSHM_PROC_ACTIVE)
            continue;
        tshm_proc_info_t p;
        memset(&p, 0, sizeof p);
        p.pid = r->pid;
        p.start_time = r->start_time;
        memcpy(p.comm, r->comm, sizeof p.comm);
        p.comm[15] = '\0';
        for (int d = 0; d < TSHM_MAX_DEVICES; d++) {
            p.used[d] = atomic_load(&r->used[d]);
            p.busy_ns[d] = atomic_load(&r->busy_ns[d]);
            p.host_used[d] = atomic_load(&r->host_used[d]);
        }
        p.inflight = atomic_load(&r->inflight);
        p.waiting = atomic_load(&r->waiting);
        int rc = fn(&p, arg);
        if (rc)
            return rc;
        n++;
    }
    return n;
}

/* ---- oversubscription (issue 21) ------------------------------------------ */

static int dev_ok(const tshm_t *s, int dev);

int tshm_host_config(tshm_t *s, int dev, uint64_t limit)
{
    if (s->readonly || !dev_ok(s, dev)) {
        errno = s->readonly ? EROFS : ERANGE;
        return -1;
    }
    if (limit == 0)
        return 0;
    _Atomic uint64_t *f = &s->devs[dev].host_limit;
    uint64_t old = atomic_load(f);
    while ((old == 0 || limit < old) && !atomic_compare_exchange_weak(f, &old, limit))
        ;
    return 0;
}

int tshm_set_host_limit(tshm_t *s, int dev, uint64_t limit)
{
    if (s->readonly || !dev_ok(s, dev)) {
        errno = s->readonly ? EROFS : ERANGE;
        return -1;
    }
    atomic_store(&s->devs[dev].host_limit, limit);
    return 0;
}

int tshm_reserve_host(tshm_t *s, int dev, uint64_t bytes)
{
    struct tshm_proc_rec *me = atomic_load_explicit(&s->self, memory_order_relaxed);
    if (TSHM_UNLIKELY(!me) || dev < 0 || dev >= TSHM_MAX_DEVICES)
        return -1;
    struct tshm_device_rec *d = &s->devs[dev];
    uint64_t limit = atomic_load_explicit(&d->host_limit, memory_order_relaxed);
    /* Own slot first, as tshm_reserve (a SIGKILL between the two leaks nothing). */
    atomic_fetch_add_explicit(&me->host_used[dev], bytes, memory_order_relaxed);
    uint64_t old = atomic_load_explicit(&d->host_used, memory_order_relaxed);
    do {
        if (bytes > limit || old > limit - bytes) {
            atomic_fetch_sub_explicit(&me->host_used[dev], bytes, memory_order_relaxed);
            return -1;
        }
    } while (!atomic_compare_exchange_weak_explicit(&d->host_used, &old, old + bytes,
                                                    memory_order_acq_rel, memory_order_relaxed));
    return 0;
}

void tshm_release_host(tshm_t *s, int dev, uint64_t bytes)
{
    struct tshm_proc_rec *me = atomic_load_explicit(&s->self, memory_order_relaxed);
    /* Unregistered: the charges left with the slot (see tshm_release). */
    if (TSHM_UNLIKELY(!me) || dev < 0 || dev >= TSHM_MAX_DEVICES)
        return;
    sat_sub(&me->host_used[dev], bytes);
    sat_sub(&s->devs[dev].host_used, bytes);
}

uint64_t tshm_host_limit(const tshm_t *s, int dev)
{
    if (dev < 0 || dev >= TSHM_MAX_DEVICES)
        return 0;
    return atomic_load_explicit(&s->devs[dev].host_limit, memory_order_relaxed);
}

uint64_t tshm_host_used(const tshm_t *s, int dev)
{
    if (dev < 0 || dev >= TSHM_MAX_DEVICES)
        return 0;
    return atomic_load_explicit(&s->devs[dev].host_used, memory_order_relaxed);
}

/* ---- compute (issue 6) ---------------------------------------------------- */

/* Refills closer together than this only read the bucket: at 1-2 us per
 * launch it spares a compare-and-swap on a shared line for all but one
 * launch in 10-20, and 20 us of device time is 0.002 % of a 1 s window. */
#define REFILL_MIN_NS 20000ll
/* Wall time credited at most per refill: a slice idle for hours must not
 * overflow the arithmetic (the cap clamps the result anyway). */
#define REFILL_MAX_NS 1000000000ll

static int dev_ok(const tshm_t *s, int dev)
{
    return dev >= 0 && dev < TSHM_MAX_DEVICES && dev < (int)atomic_load(&s->hdr->ndevices);
}

static uint32_t core_flags(unsigned mode, unsigned prio)
{
    return (mode & TSHM_CORE_MODE_MASK) | ((prio & 0xff) << TSHM_CORE_PRIO_SHIFT) | TSHM_CORE_SET;
}

void tshm_core_config(tshm_t *s, int dev, unsigned limit_pct, unsigned mode, unsigned prio)
{
    if (!s || s->readonly || !dev_ok(s, dev) || limit_pct > 100)
        return;
    struct tshm_device_rec *d = &s->devs[dev];
    uint32_t zero = 0;
    atomic_compare_exchange_strong(&d->core_flags, &zero, core_flags(mode, prio));
    if (limit_pct == 0)
        return;
    uint32_t old = atomic_load(&d->core_limit);
    while ((old == 0 || limit_pct < old) &&
           !atomic_compare_exchange_weak(&d->core_limit, &old, limit_pct))
        ;
}

int tshm_set_core(tshm_t *s, int dev, unsigned limit_pct, unsigned mode, unsigned prio)
{
    if (s->readonly || !dev_ok(s, dev) || limit_pct > 100 || mode > TSHM_CORE_SHARED ||
        prio > TSHM_PRIO_HIGH) {
        errno = s->readonly ? EROFS : ERANGE;
        return -1;
    }
    atomic_store(&s->devs[dev].core_flags, core_flags(mode, prio));
    atomic_store(&s->devs[dev].core_limit, limit_pct);
    return 0;
}

int64_t tshm_core_refill(tshm_t *s, int dev, uint64_t now_ns, uint32_t rate_ppm, int64_t cap_ns)
{
    struct tshm_device_rec *d = &s->devs[dev];
    uint64_t last = atomic_load_explicit(&d->refill_ns, memory_order_relaxed);
    if (TSHM_UNLIKELY(last == 0)) {
        atomic_compare_exchange_strong(&d->refill_ns, &last, now_ns);
    } else if (now_ns > last + REFILL_MIN_NS &&
               atomic_compare_exchange_strong_explicit(
                   &d->refill_ns, &last, now_ns, memory_order_acq_rel, memory_order_relaxed)) {
        int64_t dt = (int64_t)(now_ns - last);
        if (dt > REFILL_MAX_NS)
            dt = REFILL_MAX_NS;
        int64_t add = dt * (int64_t)rate_ppm / 1000000;
        int64_t c = atomic_fetch_add_explicit(&d->credit_ns, add, memory_order_acq_rel) + add;
        while (c > cap_ns && !atomic_compare_exchange_weak(&d->credit_ns, &c, cap_ns))
            ;
    }
    return atomic_load_explicit(&d->credit_ns, memory_order_relaxed);
}

void tshm_core_account(tshm_t *s, int dev, uint64_t busy_ns, uint64_t n, uint64_t prov_ns)
{
    struct tshm_device_rec *d = &s->devs[dev];
    atomic_fetch_sub_explicit(&d->credit_ns, (int64_t)busy_ns - (int64_t)prov_ns,
                              memory_order_acq_rel);
    atomic_fetch_add_explicit(&d->busy_ns, busy_ns, memory_order_relaxed);
    atomic_fetch_add_explicit(&d->launches, n, memory_order_relaxed);
    struct tshm_proc_rec *me = atomic_load_explicit(&s->self, memory_order_relaxed);
    if (me)
        atomic_fetch_add_explicit(&me->busy_ns[dev], busy_ns, memory_order_relaxed);
}

void tshm_core_debit(tshm_t *s, int dev, int64_t ns)
{
    atomic_fetch_sub_explicit(&s->devs[dev].credit_ns, ns, memory_order_acq_rel);
}

void tshm_core_reset(tshm_t *s, int dev, uint64_t now_ns)
{
    atomic_store(&s->devs[dev].refill_ns, now_ns);
    atomic_store(&s->devs[dev].credit_ns, 0);
}

uint64_t tshm_id(const tshm_t *s)
{
    struct stat st;
    if (fstat(s->fd, &st) < 0)
        return 0;
    uint64_t h = 1469598103934665603ull; /* FNV-1a over device and inode */
    uint64_t v[2] = {(uint64_t)st.st_dev, (uint64_t)st.st_ino};
    for (int i = 0; i < 2; i++)
        for (int b = 0; b < 8; b++) {
            h ^= (v[i] >> (8 * b)) & 0xff;
            h *= 1099511628211ull;
        }
    return h ? h : 1;
}

void tshm_core_waited(tshm_t *s, int dev, uint64_t ns)
{
    atomic_fetch_add_explicit(&s->devs[dev].waited_ns, ns, memory_order_relaxed);
}

void tshm_core_set_rate(tshm_t *s, int dev, uint32_t rate_ppm)
{
    if (atomic_load_explicit(&s->devs[dev].rate_ppm, memory_order_relaxed) != rate_ppm)
        atomic_store_explicit(&s->devs[dev].rate_ppm, rate_ppm, memory_order_relaxed);
}

unsigned tshm_core_limit(const tshm_t *s, int dev)
{
    if (dev < 0 || dev >= TSHM_MAX_DEVICES)
        return 0;
    return atomic_load_explicit(&((tshm_t *)s)->devs[dev].core_limit, memory_order_relaxed);
}

unsigned tshm_core_mode(const tshm_t *s, int dev)
{
    if (dev < 0 || dev >= TSHM_MAX_DEVICES)
        return 0;
    return atomic_load(&((tshm_t *)s)->devs[dev].core_flags) & TSHM_CORE_MODE_MASK;
}

unsigned tshm_core_prio(const tshm_t *s, int dev)
{
    if (dev < 0 || dev >= TSHM_MAX_DEVICES)
        return TSHM_PRIO_NORMAL;
    uint32_t fl = atomic_load(&((tshm_t *)s)->devs[dev].core_flags);
    return fl ? (fl >> TSHM_CORE_PRIO_SHIFT) & 0xff : TSHM_PRIO_NORMAL;
}

uint64_t tshm_core_busy(const tshm_t *s, int dev)
{
    if (dev < 0 || dev >= TSHM_MAX_DEVICES)
        return 0;
    return atomic_load(&((tshm_t *)s)->devs[dev].busy_ns);
}

int tshm_suspend(tshm_t *s)
{
    if (s->readonly) {
        errno = EROFS;
        return -1;
    }
    atomic_store(&s->hdr->suspend, TSHM_SUSPENDED);
    atomic_fetch_add(&s->hdr->suspend_gen, 1);
    return 0;
}

int tshm_resume(tshm_t *s)
{
    if (s->readonly) {
        errno = EROFS;
        return -1;
    }
    atomic_store(&s->hdr->suspend, TSHM_RUNNING);
    atomic_fetch_add(&s->hdr->suspend_gen, 1);
    return 0;
}

int tshm_run_state(const tshm_t *s)
{
    return (int)atomic_load(&((tshm_t *)s)->hdr->suspend);
}

int tshm_drained(tshm_t *s)
{
    if (tshm_run_state(s) != TSHM_SUSPENDED || tshm_refresh(s) < 0)
        return 0;
    uint32_t cap = atomic_load(&s->hdr->proc_cap);
    if (file_len(cap) > s->len)
        cap = (uint32_t)((s->len - TSHM_PROCS_OFFSET) / TSHM_PROC_SIZE);
    for (uint32_t i = 0; i < cap; i++) {
        struct tshm_proc_rec *r = proc_at(s, i);
        if (atomic_load(&r->state) == TSHM_PROC_FREE)
            continue;
        if (atomic_load(&r->launching) || atomic_load(&r->inflight))
            return 0;
    }
    return 1;
}

void tshm_note_work(tshm_t *s)
{
    if (TSHM_UNLIKELY(!atomic_load_explicit(&s->hdr->work, memory_order_relaxed)))
        atomic_store_explicit(&s->hdr->work, 1, memory_order_relaxed);
}

int tshm_reclaimed(const tshm_t *s)
{
    return atomic_load_explicit(&((tshm_t *)s)->hdr->reclaim, memory_order_acquire) != 0;
}

void tshm_wake(tshm_t *s)
{
    if (!atomic_load_explicit(&s->hdr->wake, memory_order_relaxed))
        atomic_store_explicit(&s->hdr->wake, 1, memory_order_release);
}

int tshm_launch_enter(tshm_t *s)
{
    struct tshm_proc_rec *me = atomic_load_explicit(&s->self, memory_order_relaxed);
    if (TSHM_UNLIKELY(!me))
        return atomic_load(&s->hdr->suspend) == TSHM_SUSPENDED;
    atomic_fetch_add(&me->launching, 1);
    if (TSHM_UNLIKELY(atomic_load(&s->hdr->suspend) == TSHM_SUSPENDED)) {
        atomic_fetch_sub(&me->launching, 1);
        return 1;
    }
    return 0;
}

void tshm_launch_exit(tshm_t *s)
{
    struct tshm_proc_rec *me = atomic_load_explicit(&s->self, memory_order_relaxed);
    if (me)
        atomic_fetch_sub_explicit(&me->launching, 1, memory_order_release);
}

void tshm_inflight_add(tshm_t *s, int delta)
{
    struct tshm_proc_rec *me = atomic_load_explicit(&s->self, memory_order_relaxed);
    if (me)
        atomic_fetch_add_explicit(&me->inflight, (uint32_t)delta, memory_order_release);
}

void tshm_waiting_add(tshm_t *s, int delta)
{
    struct tshm_proc_rec *me = atomic_load_explicit(&s->self, memory_order_relaxed);
    if (me)
        atomic_fetch_add_explicit(&me->waiting, (uint32_t)delta, memory_order_relaxed);
}
