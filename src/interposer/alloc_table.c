/* alloc_table.c - the allocations this process holds, keyed by (kind, key),
 * so that a free finds its bytes and device in O(1).
 *
 * Open hashing: TABLE_BUCKETS chains, guarded by TABLE_LOCKS spinlocks (a
 * bucket uses lock bucket % TABLE_LOCKS).  A lock is held only for a list
 * insert or unlink, never across a driver call, and is an atomic flag: no
 * syscall, and a fork child can simply clear them all.  Records come from a
 * free list refilled from malloc in blocks, so the steady state of an
 * alloc/free loop does not call malloc.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "interposer/interposer.h"

/* 2^16 chains keep chains short up to ~100k live allocations (PyTorch's
 * caching allocator holds hundreds to a few thousand segments). */
#define TABLE_BUCKETS (1u << 16)
#define TABLE_LOCKS   256u
#define BLOCK_RECORDS 256

struct rec {
    uint64_t key;
    uint64_t bytes;
    uint64_t aux;
    int dev;
    int kind;
    struct rec *next;
};

static struct rec *buckets[TABLE_BUCKETS];
static atomic_flag locks[TABLE_LOCKS];
static atomic_flag free_lock;
static struct rec *free_list;
static atomic_ullong live;

static inline void spin_lock(atomic_flag *f)
{
    while (atomic_flag_test_and_set_explicit(f, memory_order_acquire))
        __builtin_ia32_pause();
}

static inline void spin_unlock(atomic_flag *f)
{
    atomic_flag_clear_explicit(f, memory_order_release);
}

static inline uint32_t hash(int kind, uint64_t key)
{
    /* Device pointers are aligned (low bits zero) and handles small:
     * multiply-shift spreads both over the buckets. */
    uint64_t h = (key ^ ((uint64_t)kind << 59)) * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(h >> 48) & (TABLE_BUCKETS - 1);
}

static struct rec *rec_get(void)
{
    spin_lock(&free_lock);
    struct rec *r = free_list;
    if (r) {
        free_list = r->next;
        spin_unlock(&free_lock);
        return r;
    }
    spin_unlock(&free_lock);
    struct rec *block = malloc(sizeof(struct rec) * BLOCK_RECORDS);
    if (!block)
        return NULL;
    /* Keep block[0], give the rest to the free list.  Blocks are never
     * returned to malloc: the table only holds what the peak needed. */
    spin_lock(&free_lock);
    for (int i = BLOCK_RECORDS - 1; i >= 1; i--) {
        block[i].next = free_list;
        free_list = &block[i];
    }
    spin_unlock(&free_lock);
    return &block[0];
}

static void rec_put(struct rec *r)
{
    spin_lock(&free_lock);
    r->next = free_list;
    free_list = r;
    spin_unlock(&free_lock);
}

int tcu_track(enum tcu_kind kind, uint64_t key, int dev, uint64_t bytes, uint64_t aux)
{
    struct rec *r = rec_get();
    if (!r)
        return -1;
    r->key = key;
    r->kind = (int)kind;
    r->dev = dev;
    r->bytes = bytes;
    r->aux = aux;
    uint32_t b = hash(kind, key);
    atomic_flag *l = &locks[b % TABLE_LOCKS];
    spin_lock(l);
    r->next = buckets[b];
    buckets[b] = r;
    spin_unlock(l);
    atomic_fetch_add_explicit(&live, 1, memory_order_relaxed);
    return 0;
}

int tcu_untrack(enum tcu_kind kind, uint64_t key, int *dev, uint64_t *bytes, uint64_t *aux)
{
    uint32_t b = hash(kind, key);
    atomic_flag *l = &locks[b % TABLE_LOCKS];
    spin_lock(l);
    struct rec **pp = &buckets[b];
    while (*pp && ((*pp)->key != key || (*pp)->kind != (int)kind))
        pp = &(*pp)->next;
    struct rec *r = *pp;
    if (r)
        *pp = r->next;
    spin_unlock(l);
    if (!r)
        return -1;
    *dev = r->dev;
    *bytes = r->bytes;
    if (aux)
        *aux = r->aux;
    rec_put(r);
    atomic_fetch_sub_explicit(&live, 1, memory_order_relaxed);
    return 0;
}

uint64_t tcu_tracked(void)
{
    return atomic_load_explicit(&live, memory_order_relaxed);
}

void tcu_table_atfork_child(void)
{
    /* The parent's allocations are the parent's (charged to its slot, and
     * a CUDA context does not survive fork): the child starts empty.  The
     * records stay allocated, unreachable; blocks are never freed anyway. */
    if (atomic_load(&live)) { /* (an empty table: no 512 KiB to copy-on-write) */
        for (unsigned i = 0; i < TABLE_BUCKETS; i++)
            buckets[i] = NULL;
        atomic_store(&live, 0);
    }
    for (unsigned i = 0; i < TABLE_LOCKS; i++)
        atomic_flag_clear(&locks[i]);
    atomic_flag_clear(&free_lock);
}
