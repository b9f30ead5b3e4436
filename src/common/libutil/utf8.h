/* utf8.h - UTF-8 as jansson checks it: no overlong forms, no surrogates, nothing above
 * U+10FFFF.  For text that comes from elsewhere (a job's output, a name a user gave Slurm) and
 * must become a JSON string. */
#ifndef TESSEL_LIBUTIL_UTF8_H
#define TESSEL_LIBUTIL_UTF8_H

#include <stddef.h>

/* Length of the valid UTF-8 character at s[0..n) (1 to 4), or 0 when it is not one (or is cut
 * short). */
size_t tsl_utf8_char(const unsigned char *s, size_t n);

/* in (NUL-terminated) into out (len bytes, len > 0), each byte that starts no valid character
 * written as '?', cut at a character's end to fit: out is always valid UTF-8.  Returns the
 * number of bytes replaced. */
size_t tsl_utf8_clean(const char *in, char *out, size_t len);

/* buf[0..len) made valid UTF-8 in place: each byte that starts no valid character becomes
 * '?' (one byte for one: text whose structure is ASCII, such as JSON, keeps it).  Returns the
 * number of bytes replaced. */
size_t tsl_utf8_fix(char *buf, size_t len);

#endif
