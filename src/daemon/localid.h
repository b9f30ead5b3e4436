/* localid.h - the Tessel user of a caller on tesseld's local socket (localid.c). */
#ifndef TESSEL_DAEMON_LOCALID_H
#define TESSEL_DAEMON_LOCALID_H

#include <stddef.h>
#include <sys/types.h>

/* The Tessel user name of local uid, whose account is named account (NULL: the uid has no
 * passwd entry), tesseld running as self.  1: uid 0 or self, the user "admin" (role admin);
 * 0: the user named like the account, in out; -1: refused, the one-line reason in why (no
 * account, a name that is not a Tessel name, a non-root account named "admin"). */
int tessd_local_name(uid_t uid, uid_t self, const char *account, char *out, size_t outlen,
                     char *why, size_t whylen);

#endif
