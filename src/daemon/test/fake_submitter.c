/* fake_submitter.c - a stand-in for tessel-slurm-submit in test_slurmsub: it speaks the frames
 * (subproto.h) and behaves as its name says (the pool execs it by path, with no argument and
 * a clean environment, so the name is the only input): fake-ok answers every request with its
 * own pid as the job id, fake-hang reads a request and never answers, fake-garbage answers
 * out of shape, fake-refuse as Slurm refusing a partition, fake-die exits (status 3) once it
 * has read, fake-killed is killed (SIGKILL) once it has read.  With --read (the reader,
 * src/slurmsub/read.h): fake-ok answers a running job of each id asked, with its own pid as
 * the number of CPUs, fake-refuse as libslurm when slurmctld is down, fake-busy refuses (out of
 * memory), fake-big answers more than TSS_JOBS_MAX bytes, fake-bigall so when every job is
 * asked for (as fake-ok otherwise), the others as above. */
#include <errno.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "slurmsub/subproto.h"

static int answer(const char *text)
{
    return tss_frame_write(1, text, strlen(text), -1);
}

/* fake-ok --read: a running job of each id of the request. */
static char *jobs_of(const char *req, size_t len)
{
    json_t *r = json_loadb(req, len, 0, NULL), *jobs = json_array(), *id;
    size_t i;
    json_array_foreach(json_object_get(r, "ids"), i, id)
        json_array_append_new(jobs, json_pack("{s:O, s:s, s:s, s:i}", "job_id", id, "job_state",
                                              "RUNNING", "nodes", "n1", "cpus", (int)getpid()));
    json_decref(r);
    json_t *a = json_pack("{s:o}", "jobs", jobs);
    char *text = json_dumps(a, JSON_COMPACT);
    json_decref(a);
    return text;
}

int main(int argc, char **argv)
{
    const char *name = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    bool reader = argc == 2 && strcmp(argv[1], "--read") == 0;
    for (;;) {
        char *req;
        size_t len;
        if (tss_frame_read(0, TSS_REQUEST_MAX, -1, &req, &len) < 0)
            return errno == ENODATA ? 0 : 1;
        char text[128];
        bool all = strstr(req, "\"all\":true") != NULL, bigall = strcmp(name, "fake-bigall") == 0;
        if (reader && (strcmp(name, "fake-ok") == 0 || (bigall && !all))) {
            char *a = jobs_of(req, len);
            free(req);
            if (!a || answer(a) < 0)
                return 1;
            free(a);
            continue;
        }
        free(req);
        if (reader && strcmp(name, "fake-busy") == 0) {
            snprintf(text, sizeof text, "{\"refused\": \"out of memory\"}");
        } else if (reader && (strcmp(name, "fake-big") == 0 || bigall)) {
            /* An answer above the reader's bound (TSS_JOBS_MAX). */
            size_t big = TSS_JOBS_MAX + 1;
            char *b = malloc(big);
            if (!b)
                return 1;
            memset(b, ' ', big);
            int rc = tss_frame_write(1, b, big, -1);
            free(b);
            if (rc < 0)
                return 1;
            continue;
        } else if (reader && strcmp(name, "fake-refuse") == 0) {
            snprintf(text, sizeof text,
                     "{\"errno\": 1007, \"error\": \"Unable to contact slurm controller "
                     "(connect failure)\"}");
        } else if (strcmp(name, "fake-ok") == 0) {
            snprintf(text, sizeof text, "{\"job_id\": %d}", (int)getpid());
        } else if (strcmp(name, "fake-hang") == 0) {
            for (;;)
                pause();
        } else if (strcmp(name, "fake-garbage") == 0) {
            snprintf(text, sizeof text, "{\"job_id\": \"7\"}");
        } else if (strcmp(name, "fake-refuse") == 0) {
            snprintf(text, sizeof text,
                     "{\"errno\": 2015, \"error\": \"Invalid partition name specified\", "
                     "\"log\": \"sbatch: error: invalid partition specified: nosuch\\n\"}");
        } else if (strcmp(name, "fake-killed") == 0) {
            raise(SIGKILL);
        } else {
            return 3; /* fake-die */
        }
        if (answer(text) < 0)
            return 1;
    }
}
