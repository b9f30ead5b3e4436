/* wait.c - threads that wait for a job's state to change (long-poll GET /v1/jobs/{id}/wait,
 * log followers): the job model's notify hook (tick.c, job_changed) wakes them at the change,
 * so no waiter sleeps a fixed interval to learn that a job started or ended.
 *
 * Each waiter is a stack record in d->waiters (lock held) with a condition variable of its
 * own: a change of job 42 wakes the waiters of job 42 only, and a change costs one walk of the
 * list.  How many threads wait is bounded by libmicrohttpd's connection limits
 * (--max-connections, --max-connections-per-client), like any other connection; each wait is
 * bounded in time by its caller (TESSD_WAIT_MAX_MS for the API).
 */
#include <errno.h>
#include <time.h>

#include "daemon/daemon.h"

struct tessd_waiter {
    int64_t id;
    bool changed;
    pthread_cond_t cond;
    struct tessd_waiter *next;
};

int64_t tessd_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int tessd_wait_job(tessd_t *d, int64_t id, int64_t deadline_ms)
{
    if (atomic_load(&d->stopping))
        return 0;
    struct tessd_waiter w = {.id = id};
    pthread_condattr_t a;
    if (pthread_condattr_init(&a) != 0)
        return -1;
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(&w.cond, &a);
    pthread_condattr_destroy(&a);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    w.next = d->waiters;
    d->waiters = &w;
    struct timespec ts = {deadline_ms / 1000, (deadline_ms % 1000) * 1000000L};
    while (!w.changed && !atomic_load(&d->stopping))
        if (pthread_cond_timedwait(&w.cond, &d->lock, &ts) == ETIMEDOUT)
            break;
    for (struct tessd_waiter **p = &d->waiters; *p; p = &(*p)->next)
        if (*p == &w) {
            *p = w.next;
            break;
        }
    pthread_cond_destroy(&w.cond);
    return w.changed ? 1 : 0;
}

void tessd_wake_waiters(tessd_t *d, int64_t id)
{
    for (struct tessd_waiter *w = d->waiters; w; w = w->next)
        if (id < 0 || w->id == id) {
            w->changed = id >= 0;
            pthread_cond_signal(&w->cond);
        }
}
