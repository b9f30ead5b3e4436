/* utf8.c - UTF-8 as jansson checks it (utf8.h). */
#include <string.h>

#include "libutil/utf8.h"

size_t tsl_utf8_char(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned min, cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2, min = 0x80, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3, min = 0x800, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4, min = 0x10000, cp = c & 0x07;
    else
        return 0;
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

size_t tsl_utf8_clean(const char *in, char *out, size_t len)
{
    const unsigned char *s = (const unsigned char *)in;
    size_t n = strlen(in), o = 0, bad = 0;
    for (size_t i = 0; i < n;) {
        size_t cl = tsl_utf8_char(s + i, n - i);
        size_t w = cl ? cl : 1;
        if (o + w >= len)
            break;
        if (cl) {
            memcpy(out + o, s + i, cl);
        } else {
            out[o] = '?';
            bad++;
        }
        o += w;
        i += w;
    }
    out[o] = '\0';
    return bad;
}

size_t tsl_utf8_fix(char *buf, size_t len)
{
    unsigned char *s = (unsigned char *)buf;
    size_t bad = 0;
    for (size_t i = 0; i < len;) {
        size_t cl = tsl_utf8_char(s + i, len - i);
        if (!cl) {
            s[i] = '?';
            bad++;
            cl = 1;
        }
        i += cl;
    }
    return bad;
}
