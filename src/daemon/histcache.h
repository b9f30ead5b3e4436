/* histcache.h - GET /v1/history's kept answers (api/history.c, docs/tesseld.md "Usage
 * history").  Building a week's answer is most of its cost, and the rows it holds change only
 * when the history writer puts or prunes rows of the answer's tier (thist_writer_t.gen).  So
 * the "series" text of the last THIST_CACHE_SLOTS answers is kept, keyed by scope, tier,
 * range start, name (none: every series the reader may see; a user who is not an admin
 * always asks with their own name) and the columns asked (?fields=: a set of THIST_F_ bits,
 * histagg.h), with the tier's generation when it was built: an entry
 * whose generation moved is never given out.  Pure: no lock (the caller's), no store. */
#ifndef TESSEL_DAEMON_HISTCACHE_H
#define TESSEL_DAEMON_HISTCACHE_H

#include <stdint.h>

#define THIST_CACHE_SLOTS 16

typedef struct {
    int scope, tier;
    int64_t start;    /* the range's first interval */
    const char *name; /* NULL: no name asked */
    unsigned fields;  /* the columns in the text (THIST_FIELDS_ALL without ?fields=) */
} thist_key_t;

typedef struct thist_cache thist_cache_t;

/* NULL with errno ENOMEM. */
thist_cache_t *thist_cache_new(void);
void thist_cache_free(thist_cache_t *c);
/* The text kept for key when it was built at generation gen, else NULL.  Valid until the
 * next thist_cache_put or thist_cache_free. */
const char *thist_cache_get(thist_cache_t *c, const thist_key_t *key, uint64_t gen);
/* Keep text (malloc'd; taken, freed when dropped) for key, built at gen: it replaces the
 * key's older entry, else takes a free slot, else the least recently used one. */
void thist_cache_put(thist_cache_t *c, const thist_key_t *key, uint64_t gen, char *text);

#endif
