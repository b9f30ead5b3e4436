/* pass.h - when tesseld's main loop runs a scheduling pass (tessd_tick): the coalescing of
 * events, pure (no clock, no I/O: the caller passes the time), so that it is unit-tested with a
 * fake clock (src/daemon/test/test_pass.c).
 *
 * Events are what may change a decision: a submission, a job's end (its supervisor's SIGCHLD),
 * a cancel, a suspend or resume, a queue or limit edit, the jobs a pass could not start at
 * once.  Each asks for a pass at once, but:
 *   - two passes start at least gap_ms apart (a burst of 200 submissions in 30 ms makes a
 *     handful of passes, not 200: the lock stays with the API between them);
 *   - events that arrive while a pass runs, however many, make exactly one more pass;
 *   - without events a pass still runs every period_ms, for the rules of time alone (time
 *     limits, the SIGKILL after a grace period, the GPU-memory watchdog's records, the first
 *     look at a new job's pid record, reservations and fair-share decay).
 *
 * Use (main thread):
 *     tessd_pass_init(&p, gap, period, now);
 *     loop: poll(fds, tessd_pass_timeout(&p, now));  each event: tessd_pass_event(&p);
 *           if (tessd_pass_timeout(&p, now) == 0) { tessd_pass_begin(&p, now); tick;
 *                                                  tessd_pass_end(&p); }
 */
#ifndef TESSEL_DAEMON_PASS_H
#define TESSEL_DAEMON_PASS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    int64_t gap_ms;    /* least time between the starts of two passes */
    int64_t period_ms; /* longest time between two passes */
    int64_t last_ms;   /* start of the last pass (init: the time given to init) */
    bool pending;      /* an event came that no pass has taken yet */
    bool running;      /* between begin and end */
    uint64_t passes;   /* passes begun */
    uint64_t events;   /* events seen */
} tessd_pass_t;

/* gap_ms >= 0, period_ms >= gap_ms (both clamped so); now: the caller's monotonic clock.  The
 * first pass is due at once (events of the start-up, recovered jobs). */
void tessd_pass_init(tessd_pass_t *p, int64_t gap_ms, int64_t period_ms, int64_t now_ms);
/* An event: a pass is due (after the gap).  During a pass: one more pass after it. */
void tessd_pass_event(tessd_pass_t *p);
/* Milliseconds until the next pass is due: 0 = now; never more than period_ms; -1 while a pass
 * runs (the caller is the pass). */
int64_t tessd_pass_timeout(const tessd_pass_t *p, int64_t now_ms);
/* A pass starts at now: it takes every event seen so far. */
void tessd_pass_begin(tessd_pass_t *p, int64_t now_ms);
/* The pass is over; events seen during it keep one more pass due. */
void tessd_pass_end(tessd_pass_t *p);

#endif
