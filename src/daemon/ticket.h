/* ticket.h - terminal tickets: how a browser opens a job's terminal (docs/terminal.md, "From a
 * browser").  A browser's WebSocket cannot send an Authorization header, so the console asks
 * for a ticket with its token (POST /v1/jobs/{id}/terminal-ticket) and passes the ticket in the
 * WebSocket's URL (?ticket=).  A ticket is 32 random bytes (64 hex digits), bound to one job,
 * one route (attach or exec) and the user who asked; it is good for TSD_TICKET_TTL_MS and for
 * one use: the first presentation removes it, whatever its outcome.
 *
 * The table is pure (no clock, no lock of its own): the caller passes the time and serialises
 * the calls (term.c holds a mutex). */
#ifndef TESSEL_DAEMON_TICKET_H
#define TESSEL_DAEMON_TICKET_H

#include <stdbool.h>
#include <stdint.h>

#include "libstore/store.h"

#define TSD_TICKET_TTL_MS   30000
#define TSD_TICKET_LEN      64  /* hex digits */
#define TSD_TICKET_MAX      256 /* live tickets at once, all users */
#define TSD_TICKET_PER_USER 16  /* live tickets at once, one user */

/* SERVICE: a job's web service (docs/job-services.md), bound to the service's name too. */
typedef enum { TSD_TICKET_ATTACH, TSD_TICKET_EXEC, TSD_TICKET_SERVICE } tsd_ticket_kind_t;

typedef struct {
    char hex[TSD_TICKET_LEN + 1]; /* "" when the slot is free */
    int64_t job;
    tsd_ticket_kind_t kind;
    char user[TSTORE_NAME_MAX + 1];
    bool admin;
    long long expires_ms;
    char svc[17]; /* TSD_TICKET_SERVICE: the service's name (jobsvc.h), else "" */
} tsd_ticket_t;

typedef struct {
    tsd_ticket_t slot[TSD_TICKET_MAX];
} tsd_tickets_t;

/* What redeeming gave. */
typedef enum {
    TSD_TICKET_OK,
    TSD_TICKET_UNKNOWN,   /* malformed, never issued, or already used */
    TSD_TICKET_EXPIRED,   /* issued, but older than TSD_TICKET_TTL_MS (now removed) */
    TSD_TICKET_OTHER_JOB, /* issued for another job (now removed) */
    TSD_TICKET_OTHER_KIND /* issued for the other route (now removed) */
} tsd_ticket_res_t;

/* A new ticket for user's job, written to out (NUL-terminated) from the 32 bytes in rnd.
 * Expired tickets are dropped first.  0, or -1 with errno EAGAIN when the table or the user's
 * share of it (TSD_TICKET_PER_USER) is full of live tickets. */
int tsd_ticket_issue(tsd_tickets_t *t, long long now_ms, const uint8_t rnd[32], int64_t job,
                     tsd_ticket_kind_t kind, const char *user, bool admin,
                     char out[TSD_TICKET_LEN + 1]);

/* Present a ticket for job and kind: on TSD_TICKET_OK, *who (user, admin) is whom it was
 * issued to.  A ticket found is removed, whatever the result.  The comparison takes the same
 * time wherever the ticket differs. */
tsd_ticket_res_t tsd_ticket_redeem(tsd_tickets_t *t, long long now_ms, const char *hex, int64_t job,
                                   tsd_ticket_kind_t kind, tsd_ticket_t *who);

/* The same for job's web service svc (kind TSD_TICKET_SERVICE, the name kept with it; -1 with
 * errno EINVAL for a name over 16 bytes), and its redemption: TSD_TICKET_OTHER_KIND for a
 * ticket of another kind or another service of the job. */
int tsd_ticket_issue_svc(tsd_tickets_t *t, long long now_ms, const uint8_t rnd[32], int64_t job,
                         const char *svc, const char *user, bool admin,
                         char out[TSD_TICKET_LEN + 1]);
tsd_ticket_res_t tsd_ticket_redeem_svc(tsd_tickets_t *t, long long now_ms, const char *hex,
                                       int64_t job, const char *svc, tsd_ticket_t *who);

/* Why, in words, for an answer (never NULL). */
const char *tsd_ticket_res_str(tsd_ticket_res_t r);

#endif
