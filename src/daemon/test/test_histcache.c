/* test_histcache.c - GET /v1/history's kept answers (histcache.h): an answer is given again
 * only for the same scope, tier, range start and name (or the same absence of a name: an
 * admin's "every user" is not a user's own) and the same columns (?fields=) and only while its
 * tier's generation has not moved; a newer answer for a key replaces the older one; when every slot
 * is taken the least recently used goes; a name too long to keep whole is not kept. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "daemon/histagg.h"
#include "daemon/histcache.h"
#include "libstore/store.h"

static char *text(const char *s)
{
    char *t = strdup(s);
    assert_non_null(t);
    return t;
}

static void test_key_and_generation(void **state)
{
    thist_cache_t *c = thist_cache_new();
    assert_non_null(c);
    thist_key_t k = {TSTORE_HIST_USER, 2, 600000, "alice", THIST_FIELDS_ALL};
    assert_null(thist_cache_get(c, &k, 7));
    thist_cache_put(c, &k, 7, text("[alice]"));
    assert_string_equal(thist_cache_get(c, &k, 7), "[alice]");
    /* The tier's rows changed since: not given. */
    assert_null(thist_cache_get(c, &k, 8));
    /* Any other part of the key differs: not given. */
    thist_key_t other[] = {
        {TSTORE_HIST_USER, 2, 600000, "bob", THIST_FIELDS_ALL},
        {TSTORE_HIST_USER, 2, 600000, NULL, THIST_FIELDS_ALL},
        {TSTORE_HIST_USER, 1, 600000, "alice", THIST_FIELDS_ALL},
        {TSTORE_HIST_USER, 2, 600600, "alice", THIST_FIELDS_ALL},
        {TSTORE_HIST_GPU, 2, 600000, "alice", THIST_FIELDS_ALL},
        {TSTORE_HIST_USER, 2, 600000, "alic", THIST_FIELDS_ALL},
    };
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++)
        assert_null(thist_cache_get(c, &other[i], 7));
    /* No name is a key of its own (an admin's every user), not a wildcard. */
    thist_key_t all = {TSTORE_HIST_USER, 2, 600000, NULL, THIST_FIELDS_ALL};
    thist_cache_put(c, &all, 7, text("[everyone]"));
    assert_string_equal(thist_cache_get(c, &all, 7), "[everyone]");
    assert_string_equal(thist_cache_get(c, &k, 7), "[alice]");
    /* A newer answer for the key replaces the older: the new generation is given, not the
     * old one. */
    thist_cache_put(c, &k, 8, text("[alice, newer]"));
    assert_string_equal(thist_cache_get(c, &k, 8), "[alice, newer]");
    assert_null(thist_cache_get(c, &k, 7));
    thist_cache_free(c);
}

static void test_fields_are_part_of_the_key(void **state)
{
    thist_cache_t *c = thist_cache_new();
    assert_non_null(c);
    unsigned narrow = 1u << THIST_F_T | 1u << THIST_F_MILLI;
    thist_key_t all = {TSTORE_HIST_GPU, 2, 600000, NULL, THIST_FIELDS_ALL};
    thist_key_t some = {TSTORE_HIST_GPU, 2, 600000, NULL, narrow};
    thist_cache_put(c, &all, 3, text("[every column]"));
    /* The console's narrow answer is not the full one, nor the other way round. */
    assert_null(thist_cache_get(c, &some, 3));
    thist_cache_put(c, &some, 3, text("[t, milli]"));
    assert_string_equal(thist_cache_get(c, &some, 3), "[t, milli]");
    assert_string_equal(thist_cache_get(c, &all, 3), "[every column]");
    thist_key_t other = {TSTORE_HIST_GPU, 2, 600000, NULL, narrow | 1u << THIST_F_BUSY};
    assert_null(thist_cache_get(c, &other, 3));
    /* Both go stale with their tier. */
    assert_null(thist_cache_get(c, &some, 4));
    assert_null(thist_cache_get(c, &all, 4));
    thist_cache_free(c);
}

static void test_least_recently_used_goes(void **state)
{
    thist_cache_t *c = thist_cache_new();
    assert_non_null(c);
    thist_key_t k[THIST_CACHE_SLOTS + 1];
    for (int i = 0; i <= THIST_CACHE_SLOTS; i++)
        k[i] = (thist_key_t){TSTORE_HIST_GPU, 0, 1000 + i, NULL, THIST_FIELDS_ALL};
    for (int i = 0; i < THIST_CACHE_SLOTS; i++) {
        char t[16];
        snprintf(t, sizeof t, "[%d]", i);
        thist_cache_put(c, &k[i], 1, text(t));
    }
    /* Every key is kept; 0 is read again, so 1 is now the least recently used. */
    for (int i = 0; i < THIST_CACHE_SLOTS; i++)
        assert_non_null(thist_cache_get(c, &k[i], 1));
    assert_non_null(thist_cache_get(c, &k[0], 1));
    thist_cache_put(c, &k[THIST_CACHE_SLOTS], 1, text("[new]"));
    assert_string_equal(thist_cache_get(c, &k[THIST_CACHE_SLOTS], 1), "[new]");
    assert_null(thist_cache_get(c, &k[1], 1));
    assert_string_equal(thist_cache_get(c, &k[0], 1), "[0]");
    for (int i = 2; i < THIST_CACHE_SLOTS; i++)
        assert_non_null(thist_cache_get(c, &k[i], 1));
    thist_cache_free(c);
}

static void test_long_name_not_kept(void **state)
{
    thist_cache_t *c = thist_cache_new();
    assert_non_null(c);
    char name[TSTORE_HIST_NAME_MAX + 8];
    memset(name, 'x', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    thist_key_t k = {TSTORE_HIST_USER, 0, 0, name, THIST_FIELDS_ALL};
    thist_cache_put(c, &k, 1, text("[x]"));
    assert_null(thist_cache_get(c, &k, 1));
    thist_cache_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_and_generation),
        cmocka_unit_test(test_fields_are_part_of_the_key),
        cmocka_unit_test(test_least_recently_used_goes),
        cmocka_unit_test(test_long_name_not_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
