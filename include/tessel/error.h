/* tessel/error.h - error text for people, alongside -1/errno for programs.
 *
 * Convention (all Tessel libraries and public APIs): a call that fails returns -1 (or NULL)
 * with errno set, and, when the caller passed a tsl_error_t, one line of text that a person
 * can read ("--gpu-mem: '12Q': unknown suffix 'Q'").  Public because the public headers
 * (tessel/sched.h, tessel/client.h) take a tsl_error_t; implemented in libutil.
 */
#ifndef TESSEL_ERROR_H
#define TESSEL_ERROR_H

typedef struct {
    char text[256];
} tsl_error_t;

/* Format into e->text (if e is non-NULL).  Always returns -1 so that callers
 * can write `return tsl_errprintf(err, ...)`.  errno is preserved. */
int tsl_errprintf(tsl_error_t *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
