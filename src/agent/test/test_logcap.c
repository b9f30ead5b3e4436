/* test_logcap.c - the head + tail log writer (logcap.h): what the file holds for streams
 * shorter than, equal to and longer than the limit, written in chunks of every size; bytes the
 * file already held; no limit; the 64 MiB default's marker; write failures marked where the
 * output resumes; the time index (one line per second with output, offsets of the file) and
 * the readers --since and --tail use (tagent_logidx_since, tagent_log_tail), bounded when the
 * files are sparse terabytes (a bisection of the index; the tail's scan stops at its bound). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/logcap.h"

static char path[64];

static int new_file(const char *content)
{
    snprintf(path, sizeof path, "/tmp/tessel-logcap-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    if (content)
        assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
    int afd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
    assert_true(afd >= 0);
    close(fd);
    return afd;
}

/* The whole file; *len its size.  Caller frees. */
static char *read_back(size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    struct stat st;
    assert_int_equal(fstat(fileno(f), &st), 0);
    char *buf = malloc((size_t)st.st_size + 1);
    assert_non_null(buf);
    *len = fread(buf, 1, (size_t)st.st_size, f);
    assert_int_equal(*len, (size_t)st.st_size);
    buf[*len] = '\0';
    fclose(f);
    unlink(path);
    return buf;
}

/* Input of n bytes: lines "line 00012\n" ... (the head ends mid-line for most limits). */
static char *input(size_t n)
{
    char *in = malloc(n + 16);
    assert_non_null(in);
    for (size_t i = 0; i < n; i += 11) {
        char line[32];
        snprintf(line, sizeof line, "line %05u\n", (unsigned)(i / 11 % 100000));
        memcpy(in + i, line, n - i < 11 ? n - i : 11);
    }
    return in;
}

/* What the file must hold: head, marker line, tail. */
static char *expected(const char *in, size_t n, size_t limit, size_t tail_max, size_t *len)
{
    char *out = malloc(n + 256);
    assert_non_null(out);
    if (limit == 0 || n <= limit) {
        memcpy(out, in, n);
        *len = n;
        return out;
    }
    size_t t = limit / 2 < tail_max ? limit / 2 : tail_max;
    size_t h = limit - t;
    memcpy(out, in, h);
    size_t k = h;
    if (h && in[h - 1] != '\n')
        out[k++] = '\n';
    /* Of the limits used here only 4096 is a whole number of KiB. */
    if (limit % 1024 == 0)
        k += (size_t)sprintf(out + k, "[tessel: %zu bytes dropped here: log limit %zu KiB]\n",
                             n - h - t, limit / 1024);
    else
        k += (size_t)sprintf(out + k, "[tessel: %zu bytes dropped here: log limit %zu bytes]\n",
                             n - h - t, limit);
    memcpy(out + k, in + n - t, t);
    *len = k + t;
    return out;
}

static void test_chunks(void **state)
{
    static const size_t sizes[] = {0, 1, 10, 999, 1000, 1001, 5000, 10000};
    static const size_t limits[] = {0, 1, 2, 101, 1000, 4096, 20000};
    static const size_t chunks[] = {1, 7, 64, 333, 4096, 100000};
    for (size_t a = 0; a < sizeof sizes / sizeof sizes[0]; a++) {
        size_t n = sizes[a];
        char *in = input(n);
        for (size_t b = 0; b < sizeof limits / sizeof limits[0]; b++) {
            for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
                for (size_t tm = 100; tm <= 1u << 20; tm <<= 14) {
                    int fd = new_file(NULL);
                    tagent_logcap_t *lc = tagent_logcap_open(fd, limits[b], 0, tm);
                    assert_non_null(lc);
                    for (size_t off = 0; off < n; off += chunks[c])
                        tagent_logcap_write(lc, in + off,
                                            n - off < chunks[c] ? n - off : chunks[c]);
                    assert_int_equal(tagent_logcap_close(lc), 0);
                    size_t got_len, want_len;
                    char *got = read_back(&got_len);
                    char *want = expected(in, n, limits[b], tm, &want_len);
                    if (got_len != want_len || memcmp(got, want, got_len) != 0)
                        fail_msg("n=%zu limit=%zu chunk=%zu tail_max=%zu: got %zu bytes, want "
                                 "%zu",
                                 n, limits[b], chunks[c], tm, got_len, want_len);
                    free(got);
                    free(want);
                }
            }
        }
        free(in);
    }
}

/* The default limit: 64 MiB kept of 70 MiB, the last 1 MiB as the tail. */
static void test_default_limit(void **state)
{
    int fd = new_file(NULL);
    tagent_logcap_t *lc = tagent_logcap_open(fd, 64ull << 20, 0, TAGENT_LOG_TAIL_MAX);
    char *block = malloc(1 << 20);
    assert_non_null(block);
    for (int i = 0; i < 70; i++) {
        memset(block, 'a' + i % 26, 1 << 20);
        block[(1 << 20) - 1] = '\n';
        tagent_logcap_write(lc, block, 1 << 20);
    }
    assert_int_equal(tagent_logcap_dropped(lc), 6ull << 20);
    assert_int_equal(tagent_logcap_close(lc), 0);
    size_t len;
    char *got = read_back(&len);
    static const char marker[] = "[tessel: 6291456 bytes dropped here: log limit 64 MiB]\n";
    assert_int_equal(len, (64u << 20) + strlen(marker));
    assert_memory_equal(got + (63u << 20), marker, strlen(marker));
    /* head: the first 63 blocks; tail: the 70th ('a' + 69 % 26 = 'r') */
    assert_int_equal(got[(63u << 20) - 2], 'a' + 62 % 26);
    assert_int_equal(got[(63u << 20) + strlen(marker)], 'a' + 69 % 26);
    assert_int_equal(got[len - 1], '\n');
    free(got);
    free(block);
}

/* Bytes the file held (an earlier attempt) count towards the head. */
static void test_already(void **state)
{
    int fd = new_file("0123456789012345678901234567890123456789\n"); /* 41 bytes */
    tagent_logcap_t *lc = tagent_logcap_open(fd, 100, 41, 1 << 20);
    const char *in = "abcdefghijklmnopqrstuvwxyz\n"
                     "ABCDEFGHIJKLMNOPQRSTUVWXYZ\n"
                     "abcdefghijklmnopqrstuvwxyz\n"
                     "ABCDEFGHIJKLMNOPQRSTUVWXYZ\n"; /* 108 bytes */
    tagent_logcap_write(lc, in, strlen(in));
    assert_int_equal(tagent_logcap_close(lc), 0);
    size_t len;
    char *got = read_back(&len);
    /* head 50: 41 + 9 bytes of in; tail 50: the last 50 bytes of in; 49 dropped */
    assert_string_equal(got, "0123456789012345678901234567890123456789\n"
                             "abcdefghi\n"
                             "[tessel: 49 bytes dropped here: log limit 100 bytes]\n"
                             "efghijklmnopqrstuvwxyz\nABCDEFGHIJKLMNOPQRSTUVWXYZ\n");
    free(got);
}

/* A write that fails (here EFBIG under RLIMIT_FSIZE, as ENOSPC on a full disk) loses bytes;
 * where output resumes, one line says how many and why. */
static void test_write_failure(void **state)
{
    int fd = new_file(NULL);
    tagent_logcap_t *lc = tagent_logcap_open(fd, 0, 0, 1 << 20);
    struct rlimit old, small = {.rlim_cur = 20};
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    small.rlim_max = old.rlim_max;
    void (*was)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
    tagent_logcap_write(lc, "0123456789\n0123456789\n", 22); /* 20 stored, 2 lost */
    tagent_logcap_write(lc, "more\n", 5);                    /* lost */
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    tagent_logcap_write(lc, "back\n", 5);
    errno = 0;
    assert_int_equal(tagent_logcap_close(lc), -1);
    assert_int_equal(errno, EFBIG);
    signal(SIGXFSZ, was);
    size_t len;
    char *got = read_back(&len);
    assert_string_equal(got, "0123456789\n012345678\n"
                             "[tessel: 7 bytes lost here: File too large]\n"
                             "back\n");
    free(got);
}

/* A file with content at its start, open read-write: for the readers. */
static int tmp_with(const char *content, char *name, size_t len)
{
    snprintf(name, len, "/tmp/tessel-logidx-XXXXXX");
    int fd = mkstemp(name);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
    return fd;
}

/* The index: a line per second in which output was written, at the offset of that second's
 * first byte in the file (bytes it held before included); a second without output has none. */
static void test_index(void **state)
{
    int fd = new_file("old\n");
    char idx_path[64];
    int idx = tmp_with("", idx_path, sizeof idx_path);
    tagent_logcap_t *lc = tagent_logcap_open(fd, 0, 4, 0);
    assert_non_null(lc);
    tagent_logcap_set_index(lc, idx);
    tagent_logcap_write_at(lc, "a\n", 2, 1000);
    tagent_logcap_write_at(lc, "bb\n", 3, 1000);
    tagent_logcap_write_at(lc, "c\n", 2, 1002);
    tagent_logcap_write_at(lc, "", 0, 1003);
    tagent_logcap_write_at(lc, "d\n", 2, 1005);
    assert_int_equal(tagent_logcap_close(lc), 0);
    size_t len;
    free(read_back(&len));
    assert_int_equal(len, 13);
    FILE *f = fopen(idx_path, "r");
    assert_non_null(f);
    char text[128] = "";
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    assert_string_equal(text, "1000 4\n1002 9\n1005 11\n");

    int r = open(idx_path, O_RDONLY);
    assert_true(r >= 0);
    static const struct {
        int64_t since;
        int rc;
        uint64_t off;
    } t[] = {{0, 0, 4},     {1000, 0, 4},  {1001, 0, 9}, {1002, 0, 9},
             {1004, 0, 11}, {1005, 0, 11}, {1006, 1, 0}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        uint64_t off = 0;
        assert_int_equal(tagent_logidx_since(r, t[i].since, &off), t[i].rc);
        if (t[i].rc == 0)
            assert_int_equal(off, t[i].off);
    }
    close(r);
    unlink(idx_path);
}

/* A malformed or cut line (an index written by a crashed shim) is skipped. */
static void test_index_malformed(void **state)
{
    char name[64];
    int fd = tmp_with("junk\n1000 x\n1001 5\n1002 7", name, 64);
    uint64_t off = 0;
    assert_int_equal(tagent_logidx_since(fd, 1000, &off), 0);
    assert_int_equal(off, 5);
    assert_int_equal(tagent_logidx_since(fd, 1002, &off), 1);
    close(fd);
    unlink(name);
}

/* Past the limit, the tail reaches the file at the end: indexed at that time. */
static void test_index_tail(void **state)
{
    int fd = new_file(NULL);
    char idx_path[64];
    int idx = tmp_with("", idx_path, sizeof idx_path);
    tagent_logcap_t *lc = tagent_logcap_open(fd, 8, 0, 4);
    tagent_logcap_set_index(lc, idx);
    tagent_logcap_write_at(lc, "0123456789ab", 12, 1000);
    assert_int_equal(tagent_logcap_close(lc), 0);
    size_t len;
    char *all = read_back(&len);
    free(all);
    int r = open(idx_path, O_RDONLY);
    uint64_t off = 0;
    assert_int_equal(tagent_logidx_since(r, 1000, &off), 0);
    assert_int_equal(off, 0);
    /* The second entry (the marker and the tail, at close) starts after the 4-byte head. */
    assert_int_equal(tagent_logidx_since(r, 1001, &off), 0);
    assert_int_equal(off, 4);
    close(r);
    unlink(idx_path);
}

static void test_tail(void **state)
{
    static const struct {
        const char *text;
        uint64_t n, off;
    } t[] = {
        {"", 1, 0},          {"a\n", 1, 0},        {"a\nb\nc\n", 1, 4}, {"a\nb\nc\n", 2, 2},
        {"a\nb\nc\n", 3, 0}, {"a\nb\nc\n", 10, 0}, {"a\nb\nc", 1, 4}, /* a last line without its
                                                                         newline is a line */
        {"a\nb\nc", 2, 2},   {"a\n\n\n", 1, 3},                       /* empty lines are lines */
        {"a\n\n\n", 2, 2},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char name[64];
        int fd = tmp_with(t[i].text, name, sizeof name);
        uint64_t off = 99;
        assert_int_equal(tagent_log_tail(fd, strlen(t[i].text), t[i].n, UINT64_MAX, &off), 0);
        if (off != t[i].off)
            fail_msg("'%s' tail %llu: %llu, not %llu", t[i].text, (unsigned long long)t[i].n,
                     (unsigned long long)off, (unsigned long long)t[i].off);
        close(fd);
        unlink(name);
    }
    /* Across read blocks: 200000 lines of 10 bytes, the last 7 start 70 bytes from the end. */
    char name[64];
    int fd = tmp_with("", name, sizeof name);
    char *big = malloc(2000000);
    assert_non_null(big);
    for (int i = 0; i < 200000; i++)
        memcpy(big + 10 * i, "123456789\n", 10);
    assert_int_equal(write(fd, big, 2000000), 2000000);
    uint64_t off;
    assert_int_equal(tagent_log_tail(fd, 2000000, 7, UINT64_MAX, &off), 0);
    assert_int_equal(off, 2000000 - 70);
    assert_int_equal(tagent_log_tail(fd, 2000000, 100000, UINT64_MAX, &off), 0);
    assert_int_equal(off, 1000000);
    free(big);
    /* A size beyond the file: the read fails. */
    assert_int_equal(tagent_log_tail(fd, 3000000, 1, UINT64_MAX, &off), -1);
    close(fd);
    unlink(name);
}

/* A job's user may make the log a sparse file of any size: the reader reads its last max
 * bytes at most.  The same 2,000,000 bytes of lines with a bound: found within it, and not
 * (then it starts at the bound, returning 1); then a 1 TiB hole before the last line, whose
 * scan without the bound would read a terabyte of zeros. */
static void test_tail_bounded(void **state)
{
    char name[64];
    int fd = tmp_with("", name, sizeof name);
    char *big = malloc(2000000);
    assert_non_null(big);
    for (int i = 0; i < 200000; i++)
        memcpy(big + 10 * i, "123456789\n", 10);
    assert_int_equal(write(fd, big, 2000000), 2000000);
    free(big);
    uint64_t off;
    assert_int_equal(tagent_log_tail(fd, 2000000, 7, 71, &off), 0);
    assert_int_equal(off, 2000000 - 70);
    /* 70 bytes hold 7 lines, not the newline before them: started at the bound. */
    assert_int_equal(tagent_log_tail(fd, 2000000, 7, 70, &off), 1);
    assert_int_equal(off, 2000000 - 70);
    assert_int_equal(tagent_log_tail(fd, 2000000, 100000, 65536, &off), 1);
    assert_int_equal(off, 2000000 - 65536);
    /* The whole log within the bound: 0, from its start. */
    assert_int_equal(tagent_log_tail(fd, 2000000, 300000, 2000000, &off), 0);
    assert_int_equal(off, 0);

    const uint64_t tib = 1ull << 40;
    assert_int_equal(ftruncate(fd, (off_t)tib), 0);
    assert_int_equal(pwrite(fd, "last\n", 5, (off_t)tib), 5);
    assert_int_equal(tagent_log_tail(fd, tib + 5, 1, 1 << 20, &off), 1);
    assert_int_equal(off, tib + 5 - (1 << 20));
    close(fd);
    unlink(name);
}

/* The index searched by bisection: 100,000 lines (seconds 1000000 + 2i, offsets 10i), then a
 * hole of 1 TiB (a job's user truncating the file up): every answer is the first entry at or
 * after the time asked for, and comes without reading the hole (a linear read would take
 * hours).  Junk lines amid the entries are skipped; an index that is only a hole has nothing. */
static void test_index_bisect(void **state)
{
    char name[64];
    int fd = tmp_with("", name, sizeof name);
    size_t cap = 100000 * 32, len = 0;
    char *text = malloc(cap);
    assert_non_null(text);
    for (int i = 0; i < 100000; i++) {
        len += (size_t)snprintf(text + len, cap - len, "%d %d\n", 1000000 + 2 * i, 10 * i);
        if (i == 50000)
            len += (size_t)snprintf(text + len, cap - len, "junk line\n");
    }
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    free(text);
    static const struct {
        int64_t since;
        int rc;
        uint64_t off;
    } t[] = {{0, 0, 0},
             {1000000, 0, 0},
             {1000001, 0, 10},
             {1000002, 0, 10},
             {1100000, 0, 500000},
             {1100001, 0, 500010},
             {1100003, 0, 500020},
             {1199998, 0, 999990},
             {1199999, 1, 0},
             {INT64_MAX, 1, 0}};
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
            uint64_t off = 0;
            assert_int_equal(tagent_logidx_since(fd, t[i].since, &off), t[i].rc);
            if (t[i].rc == 0 && off != t[i].off)
                fail_msg("pass %d since %lld: %llu, not %llu", pass, (long long)t[i].since,
                         (unsigned long long)off, (unsigned long long)t[i].off);
        }
        assert_int_equal(ftruncate(fd, (off_t)(1ull << 40)), 0); /* the second pass */
    }
    close(fd);
    unlink(name);
    fd = tmp_with("", name, sizeof name);
    assert_int_equal(ftruncate(fd, (off_t)(1ull << 40)), 0);
    uint64_t off = 7;
    assert_int_equal(tagent_logidx_since(fd, 0, &off), 1);
    close(fd);
    unlink(name);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chunks),       cmocka_unit_test(test_default_limit),
        cmocka_unit_test(test_already),      cmocka_unit_test(test_write_failure),
        cmocka_unit_test(test_index),        cmocka_unit_test(test_index_malformed),
        cmocka_unit_test(test_index_tail),   cmocka_unit_test(test_tail),
        cmocka_unit_test(test_tail_bounded), cmocka_unit_test(test_index_bisect),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
