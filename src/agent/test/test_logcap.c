/* test_logcap.c - the head + tail log writer (logcap.h): what the file holds for streams
 * shorter than, equal to and longer than the limit, written in chunks of every size; bytes the
 * file already held; no limit; the 64 MiB default's marker; write failures marked where the
 * output resumes. */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chunks),
        cmocka_unit_test(test_default_limit),
        cmocka_unit_test(test_already),
        cmocka_unit_test(test_write_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
