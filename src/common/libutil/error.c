/* error.c - tsl_errprintf. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "libutil/error.h"

int tsl_errprintf(tsl_error_t *e, const char *fmt, ...)
{
    int saved = errno;
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->text, sizeof e->text, fmt, ap);
        va_end(ap);
    }
    errno = saved;
    return -1;
}
