/* localid.c - who a caller on the local socket is, from the uid the kernel gives (the rule of
 * daemon.h's tessd_auth, without the store: auth.c looks the name up and creates it). */
#include <stdio.h>
#include <string.h>

#include "daemon/localid.h"
#include "libstore/store.h"

int tessd_local_name(uid_t uid, uid_t self, const char *account, char *out, size_t outlen,
                     char *why, size_t whylen)
{
    if (uid == 0 || uid == self) {
        /* Root, and tesseld's own account (a personal tesseld's user), are the admin. */
        snprintf(out, outlen, "admin");
        return 1;
    }
    if (!account) {
        snprintf(why, whylen, "uid %u has no account on this machine: no Tessel user to act as",
                 (unsigned)uid);
        return -1;
    }
    if (!tstore_name_valid(account)) {
        snprintf(why, whylen,
                 "account name '%.64s' (uid %u) is not a Tessel user name (1 to 32 of a-z, 0-9, "
                 "'_' and '-', starting with a letter); use a token",
                 account, (unsigned)uid);
        return -1;
    }
    /* "admin" is uid 0's name here: an account that happens to be called so is not the admin. */
    if (strcmp(account, "admin") == 0) {
        snprintf(why, whylen,
                 "account 'admin' (uid %u) is not root: on the local socket the Tessel user "
                 "'admin' is uid 0 alone; use a token",
                 (unsigned)uid);
        return -1;
    }
    snprintf(out, outlen, "%s", account);
    return 0;
}
