/* ticket.c - terminal tickets (ticket.h). */
#include "daemon/ticket.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static bool well_formed(const char *hex)
{
    if (!hex)
        return false;
    size_t i;
    for (i = 0; i < TSD_TICKET_LEN; i++) {
        char c = hex[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return false;
    }
    return hex[i] == '\0';
}

/* Equal in time independent of where they differ (both TSD_TICKET_LEN long). */
static bool same(const char *a, const char *b)
{
    unsigned char d = 0;
    for (size_t i = 0; i < TSD_TICKET_LEN; i++)
        d |= (unsigned char)(a[i] ^ b[i]);
    return d == 0;
}

int tsd_ticket_issue(tsd_tickets_t *t, long long now_ms, const uint8_t rnd[32], int64_t job,
                     tsd_ticket_kind_t kind, const char *user, bool admin,
                     char out[TSD_TICKET_LEN + 1])
{
    tsd_ticket_t *free_slot = NULL;
    int mine = 0;
    for (size_t i = 0; i < TSD_TICKET_MAX; i++) {
        tsd_ticket_t *s = &t->slot[i];
        if (s->hex[0] && s->expires_ms <= now_ms)
            memset(s, 0, sizeof *s);
        if (!s->hex[0]) {
            if (!free_slot)
                free_slot = s;
        } else if (strcmp(s->user, user) == 0) {
            mine++;
        }
    }
    if (!free_slot || mine >= TSD_TICKET_PER_USER) {
        errno = EAGAIN;
        return -1;
    }
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < 32; i++) {
        out[2 * i] = digits[rnd[i] >> 4];
        out[2 * i + 1] = digits[rnd[i] & 15];
    }
    out[TSD_TICKET_LEN] = '\0';
    memcpy(free_slot->hex, out, TSD_TICKET_LEN + 1);
    free_slot->job = job;
    free_slot->kind = kind;
    snprintf(free_slot->user, sizeof free_slot->user, "%s", user);
    free_slot->admin = admin;
    free_slot->expires_ms = now_ms + TSD_TICKET_TTL_MS;
    free_slot->svc[0] = '\0';
    return 0;
}

int tsd_ticket_issue_svc(tsd_tickets_t *t, long long now_ms, const uint8_t rnd[32], int64_t job,
                         const char *svc, const char *user, bool admin,
                         char out[TSD_TICKET_LEN + 1])
{
    if (!svc || strlen(svc) >= sizeof t->slot[0].svc) {
        errno = EINVAL;
        return -1;
    }
    if (tsd_ticket_issue(t, now_ms, rnd, job, TSD_TICKET_SERVICE, user, admin, out) < 0)
        return -1;
    for (size_t i = 0; i < TSD_TICKET_MAX; i++)
        if (strcmp(t->slot[i].hex, out) == 0)
            snprintf(t->slot[i].svc, sizeof t->slot[i].svc, "%s", svc);
    return 0;
}

tsd_ticket_res_t tsd_ticket_redeem(tsd_tickets_t *t, long long now_ms, const char *hex, int64_t job,
                                   tsd_ticket_kind_t kind, tsd_ticket_t *who)
{
    if (!well_formed(hex))
        return TSD_TICKET_UNKNOWN;
    tsd_ticket_t *found = NULL;
    for (size_t i = 0; i < TSD_TICKET_MAX; i++) {
        tsd_ticket_t *s = &t->slot[i];
        if (s->hex[0] && same(s->hex, hex) && !found)
            found = s;
    }
    if (!found)
        return TSD_TICKET_UNKNOWN;
    tsd_ticket_t got = *found;
    memset(found, 0, sizeof *found); /* one use, whatever comes of it */
    if (got.expires_ms <= now_ms)
        return TSD_TICKET_EXPIRED;
    if (got.job != job)
        return TSD_TICKET_OTHER_JOB;
    if (got.kind != kind)
        return TSD_TICKET_OTHER_KIND;
    *who = got;
    return TSD_TICKET_OK;
}

tsd_ticket_res_t tsd_ticket_redeem_svc(tsd_tickets_t *t, long long now_ms, const char *hex,
                                       int64_t job, const char *svc, tsd_ticket_t *who)
{
    tsd_ticket_t got;
    tsd_ticket_res_t r = tsd_ticket_redeem(t, now_ms, hex, job, TSD_TICKET_SERVICE, &got);
    if (r != TSD_TICKET_OK)
        return r;
    if (strcmp(got.svc, svc) != 0)
        return TSD_TICKET_OTHER_KIND;
    *who = got;
    return TSD_TICKET_OK;
}

const char *tsd_ticket_res_str(tsd_ticket_res_t r)
{
    switch (r) {
    case TSD_TICKET_OK:
        return "valid";
    case TSD_TICKET_EXPIRED:
        return "the ticket has expired (it is good for 30 seconds)";
    case TSD_TICKET_OTHER_JOB:
        return "the ticket was issued for another job";
    case TSD_TICKET_OTHER_KIND:
        return "the ticket was issued for another route (a terminal's attach or exec, or "
               "another service of the job)";
    case TSD_TICKET_UNKNOWN:
        break;
    }
    return "no such ticket (a ticket is good for one use)";
}
