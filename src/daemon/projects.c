/* projects.c - the rules of projects (projects.h): pure, no store, no lock. */
#include <string.h>

#include "daemon/projects.h"

bool tprj_may(bool admin, tstore_role_t role, tprj_action_t a)
{
    if (admin)
        return true;
    switch (a) {
    case TPRJ_SEE:
        return role >= TSTORE_ROLE_VIEWER;
    case TPRJ_SUBMIT:
        return role >= TSTORE_ROLE_MEMBER;
    case TPRJ_MANAGE:
    case TPRJ_AUDIT:
    case TPRJ_DELETE:
        return role == TSTORE_ROLE_OWNER;
    case TPRJ_BIND_QUEUE:
    case TPRJ_FORCE_DELETE:
        return false;
    }
    return false;
}

tprj_job_right_t tprj_job_right(bool admin, bool own, tstore_role_t role, bool share)
{
    if (admin || own)
        return TPRJ_JOB_ACT;
    if (!share || role == TSTORE_ROLE_NONE)
        return TPRJ_JOB_NONE;
    return role == TSTORE_ROLE_OWNER ? TPRJ_JOB_ACT : TPRJ_JOB_SEE;
}

bool tprj_orphans(int64_t owners, tstore_role_t old_role, tstore_role_t new_role)
{
    return owners == 1 && old_role == TSTORE_ROLE_OWNER && new_role != TSTORE_ROLE_OWNER;
}

bool tprj_description_valid(const char *s)
{
    if (strlen(s) > TSTORE_PROJECT_DESC_MAX)
        return false;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return false;
    return true;
}
