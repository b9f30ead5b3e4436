/* ckptslot.c - the copy slots of the GPUs (see ckptslot.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/ckptslot.h"

typedef struct {
    uint64_t t; /* ticket; the order of asking */
    unsigned gpus[TESSD_CSLOT_MAX_GPUS];
    size_t n;
    int rank;      /* 2 * its class at first; tessd_cslots_age lowers it (ranks earlier) */
    uint64_t turn; /* its owner's turn: after its owner's steps queued before it (RV16 M1) */
    char owner[TESSD_CSLOT_OWNER_MAX + 1];
    bool restore;
    bool holds;  /* false: waiting */
    bool passed; /* a holder passed (tessd_cslots_pass): its slots never count again */
    void *arg;
} entry_t;

/* An owner's next turn on each GPU (RV16 M1; per GPU: RV16b M1): kept after its steps end, so
 * that an owner who queues one step at a time still takes turns with the others. */
typedef struct {
    char name[TESSD_CSLOT_OWNER_MAX + 1];
    uint64_t next[TESSD_CSLOT_MAX_GPUS];
} owner_t;

struct tessd_cslots {
    unsigned per_gpu;
    uint64_t next;
    /* Per GPU, the turn served: the highest of the waiters that took that GPU's slots.  Turns
     * only order the steps that want one GPU, so a GPU's steps never move another's on. */
    uint64_t turn[TESSD_CSLOT_MAX_GPUS];
    owner_t *o; /* the owners whose next turn on some GPU is later than that GPU's turn */
    size_t no, capo;
    entry_t *e; /* waiters and holders, in the order of asking */
    size_t n, cap;
};

tessd_cslots_t *tessd_cslots_new(unsigned per_gpu)
{
    if (per_gpu < 1 || per_gpu > TESSD_CSLOT_MAX_PER_GPU) {
        errno = EINVAL;
        return NULL;
    }
    tessd_cslots_t *s = calloc(1, sizeof *s);
    if (!s) {
        errno = ENOMEM;
        return NULL;
    }
    s->per_gpu = per_gpu;
    s->next = 1;
    return s;
}

void tessd_cslots_free(tessd_cslots_t *s)
{
    if (!s)
        return;
    free(s->e);
    free(s->o);
    free(s);
}

static bool wants(const entry_t *e, unsigned gpu)
{
    for (size_t k = 0; k < e->n; k++)
        if (e->gpus[k] == gpu)
            return true;
    return false;
}

static entry_t *find(const tessd_cslots_t *s, uint64_t t)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->e[i].t == t)
            return &s->e[i];
    return NULL;
}

uint64_t tessd_cslots_queue(tessd_cslots_t *s, const unsigned *gpus, size_t n,
                            tessd_cslot_class_t cls, bool restore, const char *owner, void *arg)
{
    if (!s || !gpus || n < 1 || n > TESSD_CSLOT_MAX_GPUS || cls < TESSD_CSLOT_PREEMPT ||
        cls > TESSD_CSLOT_RECLAIM) {
        errno = EINVAL;
        return 0;
    }
    for (size_t k = 0; k < n; k++)
        if (gpus[k] >= TESSD_CSLOT_MAX_GPUS) {
            errno = EINVAL;
            return 0;
        }
    /* Forget the owners whose next turn has come on every GPU (their next step gets the turn
     * served there). */
    size_t keep = 0;
    for (size_t i = 0; i < s->no; i++) {
        bool later = false;
        for (unsigned g = 0; g < TESSD_CSLOT_MAX_GPUS && !later; g++)
            later = s->o[i].next[g] > s->turn[g];
        if (later)
            s->o[keep++] = s->o[i];
    }
    s->no = keep;
    if (s->no == s->capo) {
        size_t cap = s->capo ? 2 * s->capo : 8;
        owner_t *o = realloc(s->o, cap * sizeof *o);
        if (!o) {
            errno = ENOMEM;
            return 0;
        }
        s->o = o;
        s->capo = cap;
    }
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 8;
        entry_t *e = realloc(s->e, cap * sizeof *e);
        if (!e) {
            errno = ENOMEM;
            return 0;
        }
        s->e = e;
        s->cap = cap;
    }
    entry_t *e = &s->e[s->n];
    *e = (entry_t){.t = s->next, .rank = 2 * (int)cls, .restore = restore, .arg = arg};
    snprintf(e->owner, sizeof e->owner, "%s", owner ? owner : "");
    for (size_t k = 0; k < n; k++)
        if (!wants(e, gpus[k]))
            e->gpus[e->n++] = gpus[k];
    /* Its turn, on each of its GPUs the one served there now or its owner's next there if
     * later, the highest over its GPUs (so the owners' steps on a GPU interleave: each
     * owner's k-th step there goes after the others' (k-1)-th; a gang step waits its turn on
     * each of its GPUs). */
    owner_t *ow = NULL;
    for (size_t i = 0; i < s->no; i++)
        if (strcmp(s->o[i].name, e->owner) == 0)
            ow = &s->o[i];
    if (!ow) {
        ow = &s->o[s->no++]; /* room made above */
        *ow = (owner_t){0};
        snprintf(ow->name, sizeof ow->name, "%s", e->owner);
    }
    e->turn = 0;
    for (size_t k = 0; k < e->n; k++) {
        unsigned g = e->gpus[k];
        uint64_t turn = ow->next[g] > s->turn[g] ? ow->next[g] : s->turn[g];
        if (turn > e->turn)
            e->turn = turn;
    }
    for (size_t k = 0; k < e->n; k++)
        ow->next[e->gpus[k]] = e->turn + 1;
    s->n++;
    return s->next++;
}

/* Whether waiter a ranks before waiter b: rank, then turn, then the order of asking. */
static bool before(const entry_t *a, const entry_t *b)
{
    if (a->rank != b->rank)
        return a->rank < b->rank;
    return a->turn != b->turn ? a->turn < b->turn : a->t < b->t;
}

int tessd_cslots_try(tessd_cslots_t *s, uint64_t t)
{
    entry_t *w = s ? find(s, t) : NULL;
    if (!w) {
        errno = EINVAL;
        return -1;
    }
    if (w->holds)
        return 1;
    for (size_t k = 0; k < w->n; k++) {
        unsigned g = w->gpus[k], copying = 0;
        for (size_t i = 0; i < s->n; i++) {
            const entry_t *o = &s->e[i];
            if (o == w || !wants(o, g))
                continue;
            if (o->holds && !o->passed) {
                if (++copying >= s->per_gpu || (w->restore && o->restore))
                    return 0;
            } else if (!o->holds && before(o, w)) {
                return 0;
            }
        }
    }
    w->holds = true;
    for (size_t k = 0; k < w->n; k++)
        if (w->turn > s->turn[w->gpus[k]])
            s->turn[w->gpus[k]] = w->turn;
    return 1;
}

int tessd_cslots_age(tessd_cslots_t *s, uint64_t t)
{
    entry_t *e = s ? find(s, t) : NULL;
    if (!e || e->holds) {
        errno = EINVAL;
        return -1;
    }
    int was = e->rank;
    e->rank = e->rank > 2 ? e->rank - 2 : e->rank == 2 ? 1 : e->rank;
    return e->rank != was;
}

int tessd_cslots_pass(tessd_cslots_t *s, uint64_t t)
{
    entry_t *e = s ? find(s, t) : NULL;
    if (!e || !e->holds) {
        errno = EINVAL;
        return -1;
    }
    if (e->passed)
        return 1;
    /* At most one passed holder per GPU, whatever it was passed for (RV16b M2): a further
     * stopped or overdue holder keeps counting, so stopped copies cannot be stockpiled. */
    for (size_t i = 0; i < s->n; i++) {
        const entry_t *o = &s->e[i];
        if (o == e || !o->holds || !o->passed)
            continue;
        for (size_t k = 0; k < e->n; k++)
            if (wants(o, e->gpus[k]))
                return 0; /* that GPU has its one passed holder already */
    }
    e->passed = true;
    return 1;
}

bool tessd_cslots_passed(const tessd_cslots_t *s, uint64_t t)
{
    const entry_t *e = s ? find(s, t) : NULL;
    return e && e->passed;
}

size_t tessd_cslots_blockers(const tessd_cslots_t *s, uint64_t t, uint64_t *ts, void **args,
                             size_t max)
{
    const entry_t *w = s ? find(s, t) : NULL;
    size_t count = 0;
    for (size_t i = 0; w && i < s->n; i++) {
        const entry_t *o = &s->e[i];
        if (o == w || !o->holds)
            continue;
        bool shares = false;
        for (size_t k = 0; k < w->n && !shares; k++)
            shares = wants(o, w->gpus[k]);
        if (!shares)
            continue;
        if (count < max) {
            ts[count] = o->t;
            args[count] = o->arg;
        }
        count++;
    }
    return count;
}

void tessd_cslots_done(tessd_cslots_t *s, uint64_t t)
{
    entry_t *e = s ? find(s, t) : NULL;
    if (!e)
        return;
    size_t i = (size_t)(e - s->e);
    memmove(&s->e[i], &s->e[i + 1], (s->n - i - 1) * sizeof *e);
    s->n--;
}

unsigned tessd_cslots_copying(const tessd_cslots_t *s, unsigned gpu)
{
    unsigned c = 0;
    for (size_t i = 0; s && i < s->n; i++)
        if (s->e[i].holds && !s->e[i].passed && wants(&s->e[i], gpu))
            c++;
    return c;
}
