/* acl.h - who may submit to a queue (acl.c): the "allow" lists of a queue. */
#ifndef TESSEL_DAEMON_ACL_H
#define TESSEL_DAEMON_ACL_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "libstore/store.h"

enum { TESSD_ACL_USERS, TESSD_ACL_GROUPS, TESSD_ACL_ROLES, TESSD_ACL_NKINDS };

/* name is one of the comma-separated names of list. */
bool tessd_acl_has(const char *list, const char *name);
/* The queue has no list: open to everyone. */
bool tessd_acl_open(const tstore_queue_t *q);
/* Whether user (role admin when admin; member of the ngroups Unix groups) may submit to q
 * itself (its ancestors are the caller's to check).  See acl.c for the rule. */
bool tessd_acl_allows(const tstore_queue_t *q, const char *user, bool admin,
                      const char *const *groups, size_t ngroups);
/* A Unix group name as Debian's groupadd accepts it (a letter or '_' first, then a-z, 0-9,
 * '_', '-'; at most 32). */
bool tessd_group_name_valid(const char *s);
/* Apply the API's "allow" member to q: null clears the three lists (open to everyone); an
 * object replaces the lists it names ("users", "groups", "roles": arrays of names, null or []
 * for none) and keeps the others.  Duplicates are dropped.  0, or -1 with q untouched, the
 * field at fault in field and one line in why. */
int tessd_acl_parse(json_t *allow, tstore_queue_t *q, char *field, size_t fieldlen, char *why,
                    size_t whylen);
/* {"users": [...], "groups": [...], "roles": [...]} of q (new reference). */
json_t *tessd_acl_json(const tstore_queue_t *q);
/* "users a,b; groups g; roles admin" (the non-empty lists) into buf. */
void tessd_acl_describe(const tstore_queue_t *q, char *buf, size_t len);
/* The names of the Unix groups of the system account named user (primary and
 * supplementary): 0 with a malloc'd array (free with tessd_user_groups_free), none when there
 * is no such account; -1 with errno on failure. */
int tessd_user_groups(const char *user, char ***out, size_t *n);
void tessd_user_groups_free(char **groups, size_t n);

#endif
