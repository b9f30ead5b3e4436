/* projects.h - who may do what with a project and its jobs (docs/projects.md): the rules as
 * pure functions of the caller's role, tested alone (src/daemon/test/test_projects.c).  The
 * API (api/projects.c, api/jobs.c) asks these and nothing else.
 *
 * Roles, from least to most: viewer < member < owner; an admin (tesseld's role) may do
 * everything, member of the project or not.  A user with no role in a project does not see
 * it: every route answers as if it did not exist (404).
 */
#ifndef TESSEL_DAEMON_PROJECTS_H
#define TESSEL_DAEMON_PROJECTS_H

#include <stdbool.h>
#include <stdint.h>

#include "libstore/store.h"

typedef enum {
    TPRJ_SEE,          /* the project, its members, its queue's name: every role */
    TPRJ_SUBMIT,       /* submit jobs in it: member, owner */
    TPRJ_MANAGE,       /* add and remove members, change roles, description, share_jobs: owner */
    TPRJ_AUDIT,        /* read its audit record: owner */
    TPRJ_DELETE,       /* delete it while it has no active job: owner */
    TPRJ_BIND_QUEUE,   /* choose its queue (its quota): admin only */
    TPRJ_FORCE_DELETE, /* delete it with active jobs: admin only */
} tprj_action_t;

/* Whether a caller (admin: tesseld's admin role; role: theirs in the project, NONE when not a
 * member) may do a. */
bool tprj_may(bool admin, tstore_role_t role, tprj_action_t a);

/* What a caller may do with one job. */
typedef enum {
    TPRJ_JOB_NONE, /* not even see it: 404, as for a job that does not exist */
    TPRJ_JOB_SEE,  /* its object, its events, its wait (not its logs) */
    TPRJ_JOB_ACT,  /* also cancel, suspend, resume it */
} tprj_job_right_t;

/* admin: the caller is an admin; own: the caller submitted the job; role: the caller's in the
 * job's project (NONE when not a member, or when the project was deleted since); share: the
 * project's share_jobs.  One's own jobs are always one's own (a member who became a viewer
 * still cancels the jobs they submitted); a project's owners act on its jobs, members and
 * viewers see them, when the project shares its jobs; without sharing (the project 'default')
 * each sees only their own, as before projects. */
tprj_job_right_t tprj_job_right(bool admin, bool own, tstore_role_t role, bool share);

/* Whether a change of one member's role, from old to new (NONE: removed), by a caller who is
 * not an admin, leaves the project without an owner when it has owners now (owners of them):
 * refused, so that a project cannot lock out its own management.  An admin may. */
bool tprj_orphans(int64_t owners, tstore_role_t old_role, tstore_role_t new_role);

/* A description as the API accepts it: at most TSTORE_PROJECT_DESC_MAX bytes, no control
 * character (C0, DEL). */
bool tprj_description_valid(const char *s);

#endif
