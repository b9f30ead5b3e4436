/* histcache.c - GET /v1/history's kept answers (histcache.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libstore/store.h"
#include "daemon/histcache.h"

typedef struct {
    bool used, named;
    int scope, tier;
    int64_t start;
    unsigned fields;
    uint64_t gen;
    char name[TSTORE_HIST_NAME_MAX];
    char *text;
    uint64_t used_at;
} slot_t;

struct thist_cache {
    slot_t slot[THIST_CACHE_SLOTS];
    uint64_t clock;
};

thist_cache_t *thist_cache_new(void)
{
    thist_cache_t *c = calloc(1, sizeof *c);
    if (!c)
        errno = ENOMEM;
    return c;
}

void thist_cache_free(thist_cache_t *c)
{
    if (!c)
        return;
    for (int i = 0; i < THIST_CACHE_SLOTS; i++)
        free(c->slot[i].text);
    free(c);
}

static bool same_key(const slot_t *s, const thist_key_t *k)
{
    return s->used && s->scope == k->scope && s->tier == k->tier && s->start == k->start &&
           s->fields == k->fields && s->named == (k->name != NULL) &&
           (!k->name || strcmp(s->name, k->name) == 0);
}

const char *thist_cache_get(thist_cache_t *c, const thist_key_t *key, uint64_t gen)
{
    for (int i = 0; i < THIST_CACHE_SLOTS; i++) {
        slot_t *s = &c->slot[i];
        if (same_key(s, key) && s->gen == gen) {
            s->used_at = ++c->clock;
            return s->text;
        }
    }
    return NULL;
}

void thist_cache_put(thist_cache_t *c, const thist_key_t *key, uint64_t gen, char *text)
{
    /* A name too long to keep whole is not kept (it could match another name's prefix). */
    if (key->name && strlen(key->name) >= TSTORE_HIST_NAME_MAX) {
        free(text);
        return;
    }
    slot_t *s = &c->slot[0];
    for (int i = 0; i < THIST_CACHE_SLOTS; i++) {
        slot_t *x = &c->slot[i];
        if (same_key(x, key)) {
            s = x;
            break;
        }
        if (!x->used ? s->used : (s->used && x->used_at < s->used_at))
            s = x;
    }
    free(s->text);
    *s = (slot_t){.used = true,
                  .named = key->name != NULL,
                  .scope = key->scope,
                  .tier = key->tier,
                  .start = key->start,
                  .fields = key->fields,
                  .gen = gen,
                  .text = text,
                  .used_at = ++c->clock};
    if (key->name)
        snprintf(s->name, sizeof s->name, "%s", key->name);
}
