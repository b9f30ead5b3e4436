/* test_utf8.c - UTF-8 as jansson checks it (utf8.c): what is a character, and text made valid
 * (copied, or in place). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <jansson.h>

#include "libutil/utf8.h"

static size_t ch(const char *s)
{
    return tsl_utf8_char((const unsigned char *)s, strlen(s));
}

static void test_char(void **state)
{
    (void)state;
    assert_int_equal(ch("a"), 1);
    assert_int_equal(ch("\xc3\xa9"), 2);         /* é */
    assert_int_equal(ch("\xe2\x82\xac"), 3);     /* € */
    assert_int_equal(ch("\xf0\x9f\x98\x80"), 4); /* U+1F600 */
    assert_int_equal(ch("\xff"), 0);
    assert_int_equal(ch("\x80"), 0);             /* a continuation byte alone */
    assert_int_equal(ch("\xc0\xaf"), 0);         /* overlong '/' */
    assert_int_equal(ch("\xe0\x80\xaf"), 0);     /* overlong, 3 bytes */
    assert_int_equal(ch("\xed\xa0\x80"), 0);     /* a surrogate, U+D800 */
    assert_int_equal(ch("\xf4\x90\x80\x80"), 0); /* above U+10FFFF */
    assert_int_equal(ch("\xe2\x82"), 0);         /* cut short */
    assert_int_equal(ch("\xc3("), 0);            /* not a continuation */
}

static void test_clean(void **state)
{
    (void)state;
    char out[64];
    assert_int_equal(tsl_utf8_clean("job-\xc3\xa9t\xc3\xa9", out, sizeof out), 0);
    assert_string_equal(out, "job-\xc3\xa9t\xc3\xa9");
    assert_int_equal(tsl_utf8_clean("bad\xff\xfename\xc3", out, sizeof out), 3);
    assert_string_equal(out, "bad??name?");
    /* Whatever comes in, jansson takes what comes out. */
    json_t *s = json_string(out);
    assert_non_null(s);
    json_decref(s);
    /* Cut to fit, at a character's end: "ab" and not half of é. */
    char small[4];
    assert_int_equal(tsl_utf8_clean("ab\xc3\xa9", small, sizeof small), 0);
    assert_string_equal(small, "ab");
    assert_int_equal(tsl_utf8_clean("", small, sizeof small), 0);
    assert_string_equal(small, "");
}

static void test_fix(void **state)
{
    (void)state;
    /* squeue --json writes a job's name as its bytes: in place, one byte for one, the JSON
     * around it kept. */
    char j[] = "{\"name\": \"bad\xffname\", \"n\": \"\xc3\xa9\xc3\"}";
    assert_int_equal(tsl_utf8_fix(j, strlen(j)), 2);
    assert_string_equal(j, "{\"name\": \"bad?name\", \"n\": \"\xc3\xa9?\"}");
    json_t *o = json_loads(j, 0, NULL);
    assert_non_null(o);
    assert_string_equal(json_string_value(json_object_get(o, "name")), "bad?name");
    json_decref(o);
    char ok[] = "plain \xe2\x82\xac";
    assert_int_equal(tsl_utf8_fix(ok, strlen(ok)), 0);
    assert_string_equal(ok, "plain \xe2\x82\xac");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_char),
        cmocka_unit_test(test_clean),
        cmocka_unit_test(test_fix),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
