/* fake_state.c - shared device state of the fake GPUs (see fake_state.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fake_state.h"

uint64_t tfake_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void tfake_sleep_until(uint64_t t_ns)
{
    struct timespec ts = {.tv_sec = (time_t)(t_ns / 1000000000ull),
                          .tv_nsec = (long)(t_ns % 1000000000ull)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

static int init_mutex(pthread_mutex_t *m)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    int rc = pthread_mutex_init(m, &a);
    pthread_mutexattr_destroy(&a);
    return rc;
}

static void init_state(tfake_shared_t *s, const tfake_config_t *cfg)
{
    memset(s, 0, sizeof *s);
    init_mutex(&s->lock);
    s->ndev = cfg->ndev;
    for (int i = 0; i < cfg->ndev; i++)
        s->dev[i].total = cfg->dev[i].mem;
    s->version = TFAKE_STATE_VERSION;
    __atomic_store_n(&s->magic, TFAKE_STATE_MAGIC, __ATOMIC_RELEASE);
}

static int same_devices(const tfake_shared_t *s, const tfake_config_t *cfg)
{
    if (s->version != TFAKE_STATE_VERSION || s->ndev != cfg->ndev)
        return 0;
    for (int i = 0; i < cfg->ndev; i++)
        if (s->dev[i].total != cfg->dev[i].mem)
            return 0;
    return 1;
}

tfake_shared_t *tfake_state_open(const tfake_config_t *cfg, tsl_error_t *err)
{
    size_t len = sizeof(tfake_shared_t);
    if (!cfg->state_path[0]) {
        tfake_shared_t *s =
            mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (s == MAP_FAILED) {
            tsl_errprintf(err, "fake state: mmap: %s", strerror(errno));
            return NULL;
        }
        init_state(s, cfg);
        return s;
    }
    int fd = open(cfg->state_path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) {
        tsl_errprintf(err, "TESSEL_FAKE_STATE: %s: %s", cfg->state_path, strerror(errno));
        return NULL;
    }
    /* flock serialises the first initialisation between racing processes. */
    while (flock(fd, LOCK_EX) < 0 && errno == EINTR)
        ;
    struct stat st;
    tfake_shared_t *s = MAP_FAILED;
    int fresh = 0;
    if (fstat(fd, &st) < 0)
        goto fail;
    if ((size_t)st.st_size < len) {
        if (st.st_size != 0) {
            errno = EINVAL;
            goto fail;
        }
        if (ftruncate(fd, (off_t)len) < 0)
            goto fail;
        fresh = 1;
    }
    s = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (s == MAP_FAILED)
        goto fail;
    if (fresh || __atomic_load_n(&s->magic, __ATOMIC_ACQUIRE) != TFAKE_STATE_MAGIC)
        init_state(s, cfg);
    if (!same_devices(s, cfg)) {
        munmap(s, len);
        flock(fd, LOCK_UN);
        close(fd);
        tsl_errprintf(err,
                      "TESSEL_FAKE_STATE: %s describes other devices than TESSEL_FAKE_GPUS "
                      "(remove the file or use the same TESSEL_FAKE_GPUS)",
                      cfg->state_path);
        errno = EINVAL;
        return NULL;
    }
    flock(fd, LOCK_UN);
    close(fd);
    return s;
fail:;
    int e = errno;
    if (s != MAP_FAILED)
        munmap(s, len);
    flock(fd, LOCK_UN);
    close(fd);
    tsl_errprintf(err, "TESSEL_FAKE_STATE: %s: %s", cfg->state_path,
                  e == EINVAL ? "not a fake state file" : strerror(e));
    errno = e;
    return NULL;
}

void tfake_state_close(tfake_shared_t *s)
{
    if (s)
        munmap(s, sizeof *s);
}

void tfake_state_lock(tfake_shared_t *s)
{
    int rc = pthread_mutex_lock(&s->lock);
    if (rc == EOWNERDEAD)
        pthread_mutex_consistent(&s->lock); /* a process died holding it: counters still valid */
}

void tfake_state_unlock(tfake_shared_t *s)
{
    pthread_mutex_unlock(&s->lock);
}

static void drop_slot(tfake_shared_t *s, tfake_procstate_t *p)
{
    for (int d = 0; d < s->ndev; d++) {
        uint64_t u = p->used[d];
        s->dev[d].used = s->dev[d].used > u ? s->dev[d].used - u : 0;
    }
    memset(p, 0, sizeof *p);
}

void tfake_state_reap(tfake_shared_t *s)
{
    for (int i = 0; i < TFAKE_MAX_PROCS; i++) {
        tfake_procstate_t *p = &s->proc[i];
        if (p->pid != 0 && kill(p->pid, 0) < 0 && errno == ESRCH)
            drop_slot(s, p);
    }
}

tfake_procstate_t *tfake_state_proc(tfake_shared_t *s)
{
    pid_t me = getpid();
    for (int i = 0; i < TFAKE_MAX_PROCS; i++)
        if (s->proc[i].pid == me)
            return &s->proc[i];
    tfake_state_reap(s);
    for (int i = 0; i < TFAKE_MAX_PROCS; i++) {
        if (s->proc[i].pid == 0) {
            memset(&s->proc[i], 0, sizeof s->proc[i]);
            s->proc[i].pid = me;
            return &s->proc[i];
        }
    }
    return NULL;
}

void tfake_state_release_proc(tfake_shared_t *s)
{
    pid_t me = getpid();
    for (int i = 0; i < TFAKE_MAX_PROCS; i++)
        if (s->proc[i].pid == me)
            drop_slot(s, &s->proc[i]);
}

int tfake_state_charge(tfake_shared_t *s, int dev, uint64_t bytes)
{
    tfake_devstate_t *d = &s->dev[dev];
    tfake_procstate_t *p = tfake_state_proc(s);
    if (p && (bytes > d->total || d->used > d->total - bytes))
        tfake_state_reap(s); /* a dead process may still hold what we need */
    if (!p || bytes > d->total || d->used > d->total - bytes)
        return -1;
    d->used += bytes;
    p->used[dev] += bytes;
    return 0;
}

void tfake_state_uncharge(tfake_shared_t *s, int dev, uint64_t bytes)
{
    tfake_devstate_t *d = &s->dev[dev];
    tfake_procstate_t *p = tfake_state_proc(s);
    if (p && bytes > p->used[dev])
        bytes = p->used[dev];
    d->used = d->used > bytes ? d->used - bytes : 0;
    if (p)
        p->used[dev] -= bytes;
}

tfake_procstate_t *tfake_state_find(tfake_shared_t *s, pid_t pid)
{
    for (int i = 0; pid > 0 && i < TFAKE_MAX_PROCS; i++)
        if (s->proc[i].pid == pid)
            return &s->proc[i];
    return NULL;
}

uint64_t tfake_state_schedule(tfake_shared_t *s, int dev, uint64_t after_ns, uint64_t dur_ns)
{
    tfake_devstate_t *d = &s->dev[dev];
    uint64_t start = tfake_now_ns();
    if (after_ns > start)
        start = after_ns;
    if (d->tail_ns > start)
        start = d->tail_ns;
    uint64_t end = start + dur_ns;
    d->tail_ns = end;
    d->busy_ns += dur_ns;
    d->kernels++;
    tfake_procstate_t *p = tfake_state_proc(s);
    if (p)
        p->busy_ns[dev] += dur_ns;
    if (dur_ns) {
        uint32_t last = (d->ring_next + TFAKE_RING - 1) % TFAKE_RING;
        if (d->ring[last].end_ns == start && d->ring[last].end_ns != 0) {
            d->ring[last].end_ns = end;
        } else {
            d->ring[d->ring_next].start_ns = start;
            d->ring[d->ring_next].end_ns = end;
            d->ring_next = (d->ring_next + 1) % TFAKE_RING;
        }
    }
    return end;
}

unsigned tfake_state_util(tfake_shared_t *s, int dev)
{
    tfake_devstate_t *d = &s->dev[dev];
    uint64_t now = tfake_now_ns();
    uint64_t from = now > TFAKE_UTIL_WINDOW_NS ? now - TFAKE_UTIL_WINDOW_NS : 0;
    uint64_t busy = 0;
    for (int i = 0; i < TFAKE_RING; i++) {
        uint64_t a = d->ring[i].start_ns, b = d->ring[i].end_ns;
        if (b <= a)
            continue;
        if (a < from)
            a = from;
        if (b > now)
            b = now;
        if (b > a)
            busy += b - a;
    }
    uint64_t pct = busy * 100 / TFAKE_UTIL_WINDOW_NS;
    return pct > 100 ? 100 : (unsigned)pct;
}
