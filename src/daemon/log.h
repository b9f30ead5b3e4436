/* log.h - tesseld's own messages: to syslog(3) (which journald collects) or to stderr, with
 * syslog's levels.  tessd_log (daemon.h) gives each existing call its level by its format
 * (tessd_log_level_of: a table in log.c); tessd_logl names the level.  Thread-safe: the level can
 * change while threads log. */
#ifndef TESSEL_DAEMON_LOG_H
#define TESSEL_DAEMON_LOG_H

#include "daemon/config.h"

/* Where to log (tessd_log_to_t: auto = syslog when stderr is the journal (JOURNAL_STREAM)
 * or /dev/null or closed, else stderr) and the least level kept.  Call once, before threads. */
void tessd_log_open(int to, int level);
void tessd_log_set_level(int level);
/* As daemon.h declares it: at the level of its format. */
void tessd_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Whether messages go to syslog (after tessd_log_open). */
bool tessd_log_syslog(void);
/* The level tessd_log gives a message of this format. */
int tessd_log_level_of(const char *fmt);
void tessd_logl(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
