/* folders.c - the rules of virtual folders and their ACL text (folders.h): pure. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include "daemon/folders.h"

const char *tfld_access_name(tfld_access_t a)
{
    static const char *const names[] = {"none", "ro", "rw", "manage"};
    return (unsigned)a < sizeof names / sizeof names[0] ? names[a] : "none";
}

tfld_access_t tfld_max(tfld_access_t a, tfld_access_t b)
{
    return a > b ? a : b;
}

tfld_access_t tfld_of_project_role(tstore_role_t role)
{
    switch (role) {
    case TSTORE_ROLE_OWNER:
        return TFLD_MANAGE;
    case TSTORE_ROLE_MEMBER:
        return TFLD_RW;
    case TSTORE_ROLE_VIEWER:
        return TFLD_RO;
    case TSTORE_ROLE_NONE:
        break;
    }
    return TFLD_NONE;
}

tfld_access_t tfld_of_share(bool rw, tstore_role_t role)
{
    if (role == TSTORE_ROLE_NONE)
        return TFLD_NONE;
    if (role == TSTORE_ROLE_VIEWER)
        return TFLD_RO;
    return rw ? TFLD_RW : TFLD_RO;
}

int tfld_acl_add(tfld_acl_entry_t *e, size_t *n, size_t cap, uid_t uid, bool rw)
{
    for (size_t i = 0; i < *n; i++)
        if (e[i].uid == uid) {
            e[i].rw = e[i].rw || rw;
            return 0;
        }
    if (*n >= cap) {
        errno = E2BIG;
        return -1;
    }
    e[*n].uid = uid;
    e[*n].rw = rw;
    (*n)++;
    return 0;
}

/* "rwx" letters of the three bits of perm (4 r, 2 w, 1 x). */
static void letters(unsigned perm, char out[4])
{
    out[0] = (perm & 4) ? 'r' : '-';
    out[1] = (perm & 2) ? 'w' : '-';
    out[2] = (perm & 1) ? 'x' : '-';
    out[3] = '\0';
}

int tfld_acl_text(const tfld_acl_entry_t *e, size_t n, tfld_acl_kind_t kind, mode_t mode, char *buf,
                  size_t len)
{
    bool dir = kind != TFLD_ACL_FILE;
    unsigned owner = (kind == TFLD_ACL_TOP || kind == TFLD_ACL_DEFAULT) ? 7u : (mode >> 6) & 7u;
    unsigned exec = dir || (mode & S_IXUSR) ? 1u : 0u;
    char p[4];
    letters(owner, p);
    size_t off = (size_t)snprintf(buf, len, "u::%s,g::---,o::---", p);
    unsigned mask = 0;
    for (size_t i = 0; i < n && off < len; i++) {
        unsigned perm = 4u | (e[i].rw ? 2u : 0u) | exec;
        mask |= perm;
        letters(perm, p);
        off += (size_t)snprintf(buf + off, len - off, ",u:%u:%s", (unsigned)e[i].uid, p);
    }
    if (off < len) {
        letters(mask, p);
        off += (size_t)snprintf(buf + off, len - off, ",m::%s", p);
    }
    if (off >= len) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

/* Would used + add pass limit (0: none)?  Without overflow. */
static bool passes(int64_t used, int64_t limit, uint64_t add)
{
    if (limit <= 0)
        return false;
    if (used < 0)
        used = 0;
    if (used >= limit)
        return add > 0;
    return add > (uint64_t)(limit - used);
}

tfld_quota_t tfld_quota_check(int64_t used, int64_t quota, int64_t pused, int64_t pquota,
                              uint64_t add)
{
    if (passes(used, quota, add))
        return TFLD_QUOTA_FOLDER;
    if (passes(pused, pquota, add))
        return TFLD_QUOTA_PROJECT;
    return TFLD_QUOTA_OK;
}
