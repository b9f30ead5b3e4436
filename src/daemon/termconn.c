/* termconn.c - the count of terminal WebSockets open at once (termconn.h): pure. */
#include <stdio.h>
#include <string.h>

#include "daemon/termconn.h"

unsigned tsd_termconn_total_max(unsigned long max_connections)
{
    unsigned long half = max_connections / 2;
    return half > 0 ? (unsigned)half : 1;
}

static tsd_termconn_user_t *find(tsd_termconns_t *c, const char *user)
{
    for (size_t i = 0; i < TSD_TERMCONN_USERS; i++)
        if (c->u[i].user[0] && strcmp(c->u[i].user, user) == 0)
            return &c->u[i];
    return NULL;
}

tsd_termconn_res_t tsd_termconn_take(tsd_termconns_t *c, const char *user, unsigned per_user,
                                     unsigned total)
{
    tsd_termconn_user_t *u = find(c, user);
    if (u && u->n >= per_user)
        return TSD_TERMCONN_USER_FULL;
    if (c->total >= total)
        return TSD_TERMCONN_FULL;
    if (!u) {
        for (size_t i = 0; i < TSD_TERMCONN_USERS && !u; i++)
            if (!c->u[i].user[0])
                u = &c->u[i];
        if (!u)
            return TSD_TERMCONN_FULL;
        snprintf(u->user, sizeof u->user, "%s", user);
        u->n = 0;
    }
    u->n++;
    c->total++;
    return TSD_TERMCONN_OK;
}

void tsd_termconn_give(tsd_termconns_t *c, const char *user)
{
    tsd_termconn_user_t *u = find(c, user);
    if (!u || u->n == 0)
        return;
    if (--u->n == 0)
        u->user[0] = '\0';
    if (c->total > 0)
        c->total--;
}

unsigned tsd_termconn_of(const tsd_termconns_t *c, const char *user)
{
    tsd_termconn_user_t *u = find((tsd_termconns_t *)c, user);
    return u ? u->n : 0;
}

bool tsd_termconn_idle(long long last_ms, long long now_ms, long long idle_ms)
{
    return idle_ms > 0 && now_ms - last_ms >= idle_ms;
}
