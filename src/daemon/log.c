/* log.c - tesseld's own log (log.h). */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "daemon/log.h"

static atomic_int log_level = TESSD_LOG_INFO;
static bool to_syslog;

/* stderr is the journal's stream (systemd sets JOURNAL_STREAM=DEV:INODE), /dev/null (a
 * daemon started by an init script) or closed: nobody reads it, syslog it is. */
static bool stderr_unread(void)
{
    struct stat st, null;
    if (fstat(STDERR_FILENO, &st) < 0)
        return true;
    const char *js = getenv("JOURNAL_STREAM");
    unsigned long long dev, ino;
    if (js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 && dev == (unsigned long long)st.st_dev &&
        ino == (unsigned long long)st.st_ino)
        return true;
    return S_ISCHR(st.st_mode) && stat("/dev/null", &null) == 0 && null.st_rdev == st.st_rdev;
}

void tessd_log_open(int to, int level)
{
    to_syslog = to == TESSD_LOGTO_SYSLOG || (to == TESSD_LOGTO_AUTO && stderr_unread());
    if (to_syslog)
        openlog("tesseld", LOG_PID | LOG_NDELAY, LOG_DAEMON);
    atomic_store(&log_level, level);
}

void tessd_log_set_level(int level)
{
    atomic_store(&log_level, level);
}

bool tessd_log_syslog(void)
{
    return to_syslog;
}

static void vlog(int level, const char *fmt, va_list ap)
{
    if (level > atomic_load(&log_level))
        return;
    char buf[1024];
    vsnprintf(buf, sizeof buf, fmt, ap);
    if (to_syslog) {
        static const int prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};
        /* The level is syslog's priority: no "warning: " in the text. */
        const char *text = buf;
        if (strncmp(text, "warning: ", 9) == 0)
            text += 9;
        else if (strncmp(text, "error: ", 7) == 0)
            text += 7;
        syslog(prio[level], "%s", text);
        return;
    }
    static const char *const tag[] = {"error: ", "warning: ", "", "debug: "};
    bool tagged = strncmp(buf, tag[level], strlen(tag[level])) == 0;
    fprintf(stderr, "tesseld: %s%s\n", tagged ? "" : tag[level], buf);
}

void tessd_logl(int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(level, fmt, ap);
    va_end(ap);
}

/* The level of each existing tessd_log call, by its format (the calls are spread over files
 * that others edit; the first match wins, the rest are info).  An error: tesseld could not do
 * or record something it had to (it says what it retries); a warning: something is off that an
 * admin may want to fix, or a job was not treated as asked. */
static const struct {
    const char *part;
    int level;
} levels[] = {
    {"warning: ", TESSD_LOG_WARNING},
    {"error: ", TESSD_LOG_ERROR},
    {"store: ", TESSD_LOG_ERROR},
    {"cannot record", TESSD_LOG_ERROR},
    {"not recorded", TESSD_LOG_ERROR},
    {"scheduling cycle: ", TESSD_LOG_ERROR},
    {"scheduler rebuild: ", TESSD_LOG_ERROR},
    {"queue edit: ", TESSD_LOG_ERROR},
    {"cannot start: ", TESSD_LOG_ERROR},
    {"refused its start", TESSD_LOG_ERROR},
    {"back to pending: ", TESSD_LOG_ERROR},
    {"held jobs: ", TESSD_LOG_ERROR},
    {"cannot release it", TESSD_LOG_ERROR},
    {"cannot %s", TESSD_LOG_ERROR},
    {"cannot ", TESSD_LOG_WARNING},
    {"not removed", TESSD_LOG_WARNING},
    {"not preempted", TESSD_LOG_WARNING},
    {"marker line", TESSD_LOG_WARNING},
    {"start lock: ", TESSD_LOG_WARNING},
    {"inbox full", TESSD_LOG_WARNING},
    {"breaks the queue rules", TESSD_LOG_WARNING},
    {"no longer fits", TESSD_LOG_WARNING},
    {"nearly full", TESSD_LOG_WARNING},
    {"no GPU found", TESSD_LOG_WARNING},
    {"web console off", TESSD_LOG_WARNING},
    {"killing myself", TESSD_LOG_WARNING},
    {"slice file said", TESSD_LOG_WARNING},
    {"dependencies: ", TESSD_LOG_WARNING},
    {"reason: ", TESSD_LOG_WARNING},
    {"job %lld: %s", TESSD_LOG_WARNING}, /* a failure's text (launch, watchdog, inbox) */
    {"job %lld: %s: %s", TESSD_LOG_WARNING},
};

int tessd_log_level_of(const char *fmt)
{
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
        const char *p = strstr(fmt, levels[i].part);
        /* "job %lld: %s" matches the whole format only. */
        if (p && (strncmp(levels[i].part, "job %lld", 8) != 0 || strcmp(fmt, levels[i].part) == 0))
            return levels[i].level;
    }
    return TESSD_LOG_INFO;
}

void tessd_log(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(tessd_log_level_of(fmt), fmt, ap);
    va_end(ap);
}
