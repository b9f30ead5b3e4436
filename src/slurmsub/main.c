/* main.c - tessel-slurm-submit: one account's long-lived Slurm submitter for tesseld --slurm
 * (docs/slurm-backend.md, "The submitter"; docs/security.md).
 *
 * tesseld forks it as the account (setgroups, setgid, setuid, a clean environment: as it runs
 * sbatch) with a socket on fd 0, and keeps it while the account submits.  Its life:
 *
 *   start     PR_SET_DUMPABLE 0 (the account may signal it, never read its memory: it is not
 *             dumpable from its execve on too, installed 0711, unreadable by it); refuse to
 *             run as root; stderr into a memfd (libslurm prints a job_submit plugin's refusal
 *             there: it goes back in the answer); the environment sbatch would export (its own,
 *             with the SLURM_RLIMIT_*, SLURM_PRIO_PROCESS, SLURM_SUBMIT_*, SLURM_UMASK sbatch
 *             adds); slurm_init (slurm.conf, plugins, once)
 *   loop      read a request frame (subproto.h); fill a job_desc_msg_t (fill.c);
 *             slurm_submit_batch_job; answer the job id or Slurm's error and its lines
 *   end       end of file on fd 0 (tesseld closed it, or is gone): exit 0
 *
 * With --read it is tesseld's reader of the jobs' states instead (read.h): started by tesseld
 * as itself, never as an account.
 *
 * Nothing of the account's is read: its input is tesseld's requests only. */
#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "slurmsub/fill.h"
#include "slurmsub/read.h"
#include "slurmsub/subproto.h"

extern char **environ;

static int env_add(char ***v, size_t *n, const char *kv)
{
    char **nv = realloc(*v, (*n + 2) * sizeof *nv);
    if (!nv)
        return -1;
    nv[*n] = strdup(kv);
    if (!nv[*n])
        return -1;
    nv[++*n] = NULL;
    *v = nv;
    return 0;
}

/* What sbatch exports with no --export: its environment, then what it sets before reading the
 * job's (sbatch.c: _set_rlimit_env, every limit, PropagateResourceLimits decides on the node;
 * _set_prio_process_env; _set_submit_dir_env, its cwd, "/" as tesseld runs it;
 * _set_umask_env). */
static char **base_env(void)
{
    static const struct {
        int res;
        const char *name;
    } lim[] = {{RLIMIT_CPU, "CPU"},     {RLIMIT_FSIZE, "FSIZE"},   {RLIMIT_DATA, "DATA"},
               {RLIMIT_STACK, "STACK"}, {RLIMIT_CORE, "CORE"},     {RLIMIT_RSS, "RSS"},
               {RLIMIT_NPROC, "NPROC"}, {RLIMIT_NOFILE, "NOFILE"}, {RLIMIT_MEMLOCK, "MEMLOCK"},
               {RLIMIT_AS, "AS"}};
    char **v = NULL, kv[512], host[256] = "", cwd[256] = "/";
    size_t n = 0;
    for (char **e = environ; e && *e; e++)
        if (env_add(&v, &n, *e) < 0)
            return NULL;
    for (size_t i = 0; i < sizeof lim / sizeof lim[0]; i++) {
        struct rlimit r;
        if (getrlimit(lim[i].res, &r) < 0)
            continue;
        snprintf(kv, sizeof kv, "SLURM_RLIMIT_%s=%lu", lim[i].name, (unsigned long)r.rlim_cur);
        if (env_add(&v, &n, kv) < 0)
            return NULL;
    }
    errno = 0;
    int prio = getpriority(PRIO_PROCESS, 0);
    snprintf(kv, sizeof kv, "SLURM_PRIO_PROCESS=%d", prio);
    if (!errno && env_add(&v, &n, kv) < 0)
        return NULL;
    if (getcwd(cwd, sizeof cwd)) {
        snprintf(kv, sizeof kv, "SLURM_SUBMIT_DIR=%s", cwd);
        if (env_add(&v, &n, kv) < 0)
            return NULL;
    }
    if (gethostname(host, sizeof host - 1) == 0) {
        snprintf(kv, sizeof kv, "SLURM_SUBMIT_HOST=%s", host);
        if (env_add(&v, &n, kv) < 0)
            return NULL;
    }
    mode_t m = umask(0);
    umask(m);
    snprintf(kv, sizeof kv, "SLURM_UMASK=0%o%o%o", (m >> 6) & 7, (m >> 3) & 7, m & 7);
    if (env_add(&v, &n, kv) < 0)
        return NULL;
    return v;
}

static int answer(json_t *a)
{
    char *text = a ? json_dumps(a, JSON_COMPACT) : NULL;
    json_decref(a);
    if (!text)
        return -1;
    int rc = tss_frame_write(1, text, strlen(text), -1);
    free(text);
    return rc;
}

/* What libslurm printed since the last call (the memfd on fd 2), at most TSS_LOG_MAX bytes,
 * and the memfd emptied.  libslurm names the program at the start of each line
 * ("tessel-slurm-submit: error: ..."): written "sbatch: " there, the words sbatch prints for
 * the same refusal, so that a client (or a script matching the message) sees one answer
 * whichever way tesseld submits (docs/slurm-backend.md). */
static void take_log(int mfd, char *buf, size_t len)
{
    static char raw[TSS_LOG_MAX];
    buf[0] = '\0';
    if (mfd < 0)
        return;
    ssize_t n = pread(mfd, raw, sizeof raw - 1, 0);
    raw[n > 0 ? n : 0] = '\0';
    if (ftruncate(mfd, 0) < 0 || lseek(mfd, 0, SEEK_SET) < 0)
        return;
    char self[64];
    snprintf(self, sizeof self, "%s: ", program_invocation_short_name);
    size_t sl = strlen(self), o = 0;
    for (const char *l = raw; *l && o + 1 < len;) {
        const char *e = strchr(l, '\n');
        size_t ll = e ? (size_t)(e - l) + 1 : strlen(l);
        bool mine = ll >= sl && strncmp(l, self, sl) == 0;
        int w = snprintf(buf + o, len - o, "%s%.*s", mine ? "sbatch: " : "",
                         (int)(mine ? ll - sl : ll), mine ? l + sl : l);
        if (w < 0)
            break;
        o += (size_t)w < len - o ? (size_t)w : len - o - 1;
        l += ll;
    }
}

int main(int argc, char **argv)
{
    /* --read: tesseld's reader of the jobs' states (read.h), run as tesseld itself. */
    if (argc == 2 && strcmp(argv[1], "--read") == 0)
        return tss_read_main();
    if (argc != 1) {
        fprintf(stderr, "usage: tessel-slurm-submit [--read] (run by tesseld --slurm only)\n");
        return 2;
    }
    /* First: the account may ptrace a dumpable process of its own; this one holds nothing of
     * another account's, but it is tesseld's way to Slurm and must answer only tesseld. */
    if (prctl(PR_SET_DUMPABLE, 0) < 0)
        return 2;
    if (getuid() == 0 || geteuid() == 0) {
        fprintf(stderr, "tessel-slurm-submit: not as root\n");
        return 2;
    }
    /* Output: fd 1 is the same socket as fd 0 (tesseld's).  Errors: a memfd, read back. */
    int mfd = memfd_create("tessel-slurm-submit", MFD_CLOEXEC);
    if (mfd >= 0 && dup2(mfd, 2) < 0)
        return 2;
    char **env = base_env();
    if (!env)
        return 2;
    slurm_init(NULL);
    uid_t uid = getuid();
    gid_t gid = getgid();
    static char log[TSS_LOG_MAX];
    for (;;) {
        char *text;
        size_t len;
        if (tss_frame_read(0, TSS_REQUEST_MAX, -1, &text, &len) < 0)
            return errno == ENODATA ? 0 : 1;
        json_error_t je;
        json_t *req = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
        free(text);
        job_desc_msg_t d;
        tss_owned_t own;
        tsl_error_t err;
        take_log(mfd, log, sizeof log);
        if (tss_fill(req, env, uid, gid, &d, &own, &err) < 0) {
            json_decref(req);
            if (answer(json_pack("{s:i, s:s, s:s}", "errno", EINVAL, "error", err.text, "log",
                                 "")) < 0)
                return 1;
            continue;
        }
        submit_response_msg_t *resp = NULL;
        int rc = slurm_submit_batch_job(&d, &resp);
        int e = errno;
        take_log(mfd, log, sizeof log);
        json_t *a;
        if (rc == SLURM_SUCCESS && resp)
            a = json_pack("{s:I}", "job_id", (json_int_t)resp->job_id);
        else
            a = json_pack("{s:i, s:s, s:s}", "errno", e ? e : SLURM_ERROR, "error",
                          slurm_strerror(e), "log", log);
        if (resp)
            slurm_free_submit_response_response_msg(resp);
        tss_owned_free(&own);
        json_decref(req);
        if (answer(a) < 0)
            return 1;
    }
}
