/* termconn.h - the count of terminal WebSockets open at once (docs/terminal.md, "Limits"): a
 * connection upgraded to a terminal holds its HTTP connection (and a thread) until it closes,
 * so each user may hold at most per_user of them and all users together at most total (below
 * --max-connections, so that ordinary requests always find a connection).
 *
 * Pure (no lock of its own): the caller serialises the calls (term.c holds d->lock). */
#ifndef TESSEL_DAEMON_TERMCONN_H
#define TESSEL_DAEMON_TERMCONN_H

#include <stdbool.h>

#include "libstore/store.h"

/* Users holding terminals at once: one slot each. */
#define TSD_TERMCONN_USERS 256

typedef struct {
    char user[TSTORE_NAME_MAX + 1]; /* "" when the slot is free */
    unsigned n;
} tsd_termconn_user_t;

typedef struct {
    tsd_termconn_user_t u[TSD_TERMCONN_USERS];
    unsigned total;
} tsd_termconns_t;

/* What taking a connection gave. */
typedef enum {
    TSD_TERMCONN_OK,
    TSD_TERMCONN_USER_FULL, /* the user holds per_user already */
    TSD_TERMCONN_FULL,      /* total reached, or no slot for another user */
} tsd_termconn_res_t;

/* The total cap for a tesseld of max_connections connections: half of them (at least 1). */
unsigned tsd_termconn_total_max(unsigned long max_connections);
/* Count one more connection of user, within per_user and total. */
tsd_termconn_res_t tsd_termconn_take(tsd_termconns_t *c, const char *user, unsigned per_user,
                                     unsigned total);
/* One connection of user has closed (taken before). */
void tsd_termconn_give(tsd_termconns_t *c, const char *user);
/* How many user holds now. */
unsigned tsd_termconn_of(const tsd_termconns_t *c, const char *user);
/* Whether a relay idle since last_ms (no frame from the client, no output of the job) has
 * passed idle_ms at now_ms (idle_ms 0: never). */
bool tsd_termconn_idle(long long last_ms, long long now_ms, long long idle_ms);

#endif
