/* pass.c - the coalescing of scheduling events into passes (see pass.h). */
#include "daemon/pass.h"

void tessd_pass_init(tessd_pass_t *p, int64_t gap_ms, int64_t period_ms, int64_t now_ms)
{
    if (gap_ms < 0)
        gap_ms = 0;
    if (period_ms < gap_ms)
        period_ms = gap_ms;
    *p = (tessd_pass_t){
        .gap_ms = gap_ms, .period_ms = period_ms, .last_ms = now_ms - period_ms, .pending = true};
}

void tessd_pass_event(tessd_pass_t *p)
{
    p->pending = true;
    p->events++;
}

int64_t tessd_pass_timeout(const tessd_pass_t *p, int64_t now_ms)
{
    if (p->running)
        return -1;
    int64_t due = p->last_ms + (p->pending ? p->gap_ms : p->period_ms);
    return due <= now_ms ? 0 : due - now_ms;
}

void tessd_pass_begin(tessd_pass_t *p, int64_t now_ms)
{
    p->pending = false;
    p->running = true;
    p->last_ms = now_ms;
    p->passes++;
}

void tessd_pass_end(tessd_pass_t *p)
{
    p->running = false;
}
