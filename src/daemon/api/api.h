/* api.h - helpers shared by the API handlers (one file per resource) and their prototypes.
 *
 * A handler's shape:
 *     tessd_caller_t who;
 *     if (!api_enter(d, req, rep, &who))   takes the big lock and checks the token
 *         return;                          (401 answered, lock released)
 *     ... store / cluster work ...
 *     api_leave(d);
 */
#ifndef TESSEL_DAEMON_API_H
#define TESSEL_DAEMON_API_H

#include <stdbool.h>

#include <jansson.h>

#include "daemon/daemon.h"
#include "daemon/projects.h"
#include "libutil/batchspec.h"

bool api_enter(tessd_t *d, thttp_req_t *req, thttp_reply_t *rep, tessd_caller_t *who);
/* api_enter for a submission: also a member of the store's group commit (store.h), whose turn
 * ends in api_batch_add, or in tstore_group_leave for a submission refused before it. */
bool api_enter_submit(tessd_t *d, thttp_req_t *req, thttp_reply_t *rep, tessd_caller_t *who);
void api_leave(tessd_t *d);
/* rep: 101, the WebSocket handshake's answer to the client's Sec-WebSocket-Key key (Upgrade,
 * Sec-WebSocket-Accept), then fn takes the connection over with arg, freed by free_fn (term.c;
 * a terminal's relay and a job service's). */
void api_ws_upgrade(thttp_reply_t *rep, const char *key, thttp_upgrade_f fn, void *arg,
                    void (*free_fn)(void *));
/* A submission's pause between api_enter_submit and its write: its turn of the group commit
 * ends and the lock is released (api_submit_pause), for work that may wait on files of the
 * user; api_submit_resume takes them again for the same caller (no new token check: the
 * request was authenticated when it came).  resume: false after 503 when tesseld is stopping
 * (nothing held then). */
void api_submit_pause(tessd_t *d);
bool api_submit_resume(tessd_t *d, thttp_reply_t *rep);
/* false after answering 403 when the caller is not an admin. */
bool api_require_admin(const tessd_caller_t *who, thttp_reply_t *rep);

/* RFC 3339 UTC with milliseconds, or JSON null for 0. */
json_t *api_time(int64_t ms);
/* Positive decimal id; 0 or -1. */
int api_parse_id(const char *s, int64_t *id);
/* A size field: JSON integer (bytes) or string ("8G").  Must be > 0.  0, or -1 with 400. */
int api_get_size(json_t *v, const char *field, uint64_t *out, thttp_reply_t *rep);
/* Answer from a store failure (errno + text). */
void api_store_error(thttp_reply_t *rep, const tsl_error_t *err);
/* A store error where the request needed an answer it could not get (not a "no such thing"):
 * one line in the daemon's log and 500 with the error's text.  what names the step. */
void api_store_failure(thttp_reply_t *rep, const char *what, const tsl_error_t *err);

/* queues.c: whether who may submit to queue leaf: leaf and every queue above it let them in
 * (acl.c).  false after filling rep (403 naming the queue, or 500).  Lock held. */
bool api_queue_may_submit(tessd_t *d, const tessd_caller_t *who, const tstore_queue_t *leaf,
                          thttp_reply_t *rep);

json_t *api_job_json(tessd_t *d, const tstore_job_t *j);
/* A job's web services for its JSON (docs/job-services.md): [{"name", "port", "url"}], url
 * null without tesseld's services listener.  A new reference (an empty array for none). */
json_t *api_job_services_json(tessd_t *d, const tstore_job_t *j);
/* svcproxy.c: POST /v1/jobs/{id}/services/{name}/ticket. */
void api_jobs_service_ticket(thttp_req_t *req, thttp_reply_t *rep, void *ctx);

/* projects.c, for jobs.c (lock held).  The project of a submission: name (NULL: the
 * submitter's default project) into *p, j->project_id and j->project (pointing into *p),
 * and, for a project other than 'default', j->queue = its queue (queue_given: the request
 * named j->queue, which must then be that queue).  0; -1 after answering 403 (not a member,
 * a viewer, or for a non-admin an unknown project: the same answer), 400 (an admin's unknown
 * project, another queue) or 500. */
int api_project_for_job(tessd_t *d, const tessd_caller_t *who, const char *name, bool queue_given,
                        tstore_job_t *j, tstore_project_t *p, thttp_reply_t *rep);
/* What who may do with job j (projects.h's tprj_job_right).  0, or -1 with err (store). */
int api_job_right(tessd_t *d, const tessd_caller_t *who, const tstore_job_t *j,
                  tprj_job_right_t *right, tsl_error_t *err);
/* GET /v1/jobs?project=NAME: f->project_id = the project's id, *others = who may see the
 * jobs of other users in it.  0; -1 after answering 404 (unknown, or not the caller's). */
int api_project_job_filter(tessd_t *d, const tessd_caller_t *who, const char *name,
                           tstore_job_filter_t *f, bool *others, thttp_reply_t *rep);

/* jobs_batch.c: the batch fields of a submission (time_limit, after, array). */
typedef struct {
    tsl_array_t *array; /* NULL: not an array */
    tsl_dep_t *deps;    /* after the check: arrays' ids expanded to their elements */
    size_t ndeps, capdeps;
} api_batch_t;
/* Parse the fields into j (time_limit_s) and *b (before the lock).  0, or -1 with 400. */
int api_batch_parse(json_t *body, tstore_job_t *j, api_batch_t *b, thttp_reply_t *rep);
/* Check the dependencies against the store (lock held): each names a job the caller may see.
 * 0, or -1 with rep (400 "no job N", or a store error). */
int api_batch_check(tessd_t *d, const tessd_caller_t *who, api_batch_t *b, thttp_reply_t *rep);
/* Add the job (each element of an array; through the job model's tjm_submit, who the
 * submitter) with its dependencies in one transaction, then hand
 * those not held to the scheduler (tessd_inbox_submit); *j becomes
 * the (first) job added.  0, or -1 with err and nothing added.  In a
 * group commit's turn (tstore_group_enter) the transaction is the
 * caller's part of the group: this ends the turn (tstore_group_leave,
 * which may release the lock while it waits for the group's commit). */
int api_batch_add(tessd_t *d, tstore_job_t *j, const api_batch_t *b, const char *who,
                  tsl_error_t *err);
void api_batch_free(api_batch_t *b);
/* A job's batch fields into o: time_limit, array_id, array_index, array_max_running,
 * display_id ("40_3" for an array's element, as squeue), held. */
void api_batch_json(tessd_t *d, json_t *o, const tstore_job_t *j);
/* o["after"] = the job's dependencies [{"job": 12, "type": "ok"}].  0, or -1 with err. */
int api_batch_deps_json(tessd_t *d, json_t *o, int64_t id, tsl_error_t *err);
/* Cancel every active element of the array whose first element is head (lock held): pending
 * ones at once, running ones SIGTERM (as a single cancel).  Answers 200 with head's JSON and
 * "array_cancelled" (the number), or 409 when none was active. */
void api_batch_cancel_array(tessd_t *d, const tessd_caller_t *who, const tstore_job_t *head,
                            thttp_reply_t *rep);
/* A job id as written in a URL: "42", or an array's element "40_3".  0, or -1 (no such). */
int api_batch_resolve_id(tessd_t *d, const char *s, int64_t *id);
/* jobs.c, --slurm: when ids names a job submitted to Slurm directly ("slurm:N"), answer (409
 * "not a Tessel job ...; <verb>" when the caller may see it, 404 else) and return true; false
 * for any other id.  Lock held. */
bool api_slurm_direct_refuse(tessd_t *d, const tessd_caller_t *who, const char *ids,
                             const char *verb, thttp_reply_t *rep);
/* Bytes a running job's slice file reports in use on GPU g (0 when unknown).  Lock held. */
uint64_t api_slice_used(tessd_t *d, const tessd_run_t *r, int g);
/* What a running job's slice file says of GPU g: memory in use, measured busy device time
 * (ns, the slice's processes together, never decreasing), launches counted and compute share
 * (percent, 0 = none). */
typedef struct {
    uint64_t used;
    uint64_t busy_ns;
    uint64_t launches; /* launches the interposer counted (measured ones) */
    unsigned core_limit;
    uint64_t host_used;  /* bytes spilled into host memory (oversubscription) */
    uint64_t host_limit; /* bytes it may spill, 0 = none */
} api_slice_t;
/* Fill *out (all zero when unknown); 0, or -1 when the slice file or its device is unknown.
 * Lock held. */
int api_slice_read(tessd_t *d, const tessd_run_t *r, int g, api_slice_t *out);

void api_healthz(thttp_req_t *, thttp_reply_t *, void *);
void api_metrics(thttp_req_t *, thttp_reply_t *, void *);
void api_whoami(thttp_req_t *, thttp_reply_t *, void *);
void api_openapi(thttp_req_t *, thttp_reply_t *, void *);
void api_jobs_submit(thttp_req_t *, thttp_reply_t *, void *);
void api_jobs_list(thttp_req_t *, thttp_reply_t *, void *);
void api_jobs_get(thttp_req_t *, thttp_reply_t *, void *);
void api_jobs_cancel(thttp_req_t *, thttp_reply_t *, void *);
void api_jobs_suspend(thttp_req_t *, thttp_reply_t *, void *);
void api_jobs_resume(thttp_req_t *, thttp_reply_t *, void *);
void api_jobs_logs(thttp_req_t *, thttp_reply_t *, void *);
void api_jobs_wait(thttp_req_t *, thttp_reply_t *, void *);
void api_jobs_events(thttp_req_t *, thttp_reply_t *, void *);
/* term.c: a job's terminal, a WebSocket (docs/terminal.md). */
void api_jobs_attach(thttp_req_t *, thttp_reply_t *, void *);
void api_jobs_exec(thttp_req_t *, thttp_reply_t *, void *);
void api_jobs_terminal_ticket(thttp_req_t *, thttp_reply_t *, void *);
void api_nodes_list(thttp_req_t *, thttp_reply_t *, void *);
void api_gpus_list(thttp_req_t *, thttp_reply_t *, void *);
/* cluster.c (--slurm): the cluster's GPUs and nodes from the poll of the nodes (lock held:
 * the store maps Slurm ids onto Tessel's), and their series for /metrics (no lock needed). */
void api_cluster_gpus(tessd_t *d, thttp_reply_t *rep);
void api_cluster_nodes(tessd_t *d, thttp_reply_t *rep);
void api_cluster_metrics(tessd_t *d, tsl_prom_t *p);
/* images.c: GET /v1/images (docs/containers.md). */
void api_images_list(thttp_req_t *, thttp_reply_t *, void *);
void api_history(thttp_req_t *, thttp_reply_t *, void *);
void api_queues_list(thttp_req_t *, thttp_reply_t *, void *);
void api_slurm_queues(thttp_req_t *, thttp_reply_t *, void *);
void api_queues_get(thttp_req_t *, thttp_reply_t *, void *);
void api_queues_create(thttp_req_t *, thttp_reply_t *, void *);
void api_queues_update(thttp_req_t *, thttp_reply_t *, void *);
void api_queues_delete(thttp_req_t *, thttp_reply_t *, void *);
/* gpumodels.c: GPU models' relative speeds (normal GPU units) */
void api_gpu_models_list(thttp_req_t *, thttp_reply_t *, void *);
void api_gpu_models_set(thttp_req_t *, thttp_reply_t *, void *);
void api_gpu_models_reset(thttp_req_t *, thttp_reply_t *, void *);
void api_gpu_models_calibrate(thttp_req_t *, thttp_reply_t *, void *);
void api_users_list(thttp_req_t *, thttp_reply_t *, void *);
void api_users_get(thttp_req_t *, thttp_reply_t *, void *);
void api_users_create(thttp_req_t *, thttp_reply_t *, void *);
void api_users_delete(thttp_req_t *, thttp_reply_t *, void *);
void api_tokens_list(thttp_req_t *, thttp_reply_t *, void *);
void api_tokens_create(thttp_req_t *, thttp_reply_t *, void *);
void api_tokens_delete(thttp_req_t *, thttp_reply_t *, void *);
void api_projects_list(thttp_req_t *, thttp_reply_t *, void *);
void api_projects_get(thttp_req_t *, thttp_reply_t *, void *);
void api_projects_create(thttp_req_t *, thttp_reply_t *, void *);
void api_projects_update(thttp_req_t *, thttp_reply_t *, void *);
void api_projects_delete(thttp_req_t *, thttp_reply_t *, void *);
void api_projects_events(thttp_req_t *, thttp_reply_t *, void *);
void api_projects_member_add(thttp_req_t *, thttp_reply_t *, void *);
void api_projects_member_set(thttp_req_t *, thttp_reply_t *, void *);
void api_projects_member_del(thttp_req_t *, thttp_reply_t *, void *);
void api_users_default_get(thttp_req_t *, thttp_reply_t *, void *);
void api_users_default_set(thttp_req_t *, thttp_reply_t *, void *);
void api_folders_list(thttp_req_t *, thttp_reply_t *, void *);
void api_folders_get(thttp_req_t *, thttp_reply_t *, void *);
void api_folders_create(thttp_req_t *, thttp_reply_t *, void *);
void api_folders_delete(thttp_req_t *, thttp_reply_t *, void *);
void api_folders_share(thttp_req_t *, thttp_reply_t *, void *);
void api_folders_unshare_user(thttp_req_t *, thttp_reply_t *, void *);
void api_folders_unshare_project(thttp_req_t *, thttp_reply_t *, void *);
void api_folders_usage(thttp_req_t *, thttp_reply_t *, void *);
void api_folders_files_get(thttp_req_t *, thttp_reply_t *, void *);
void api_folders_files_put(thttp_req_t *, thttp_reply_t *, void *);
void api_folders_update(thttp_req_t *, thttp_reply_t *, void *);

/* folders.c, for projects.c and users.c (lock held, after the change's commit): write again
 * the ACLs of the folders a change of membership touches; failures are logged.
 * project_changed: the folders of project and those shared with it (a member added, removed,
 * or given another role).  of_project: their names, taken before the project is deleted (the
 * deletion drops its shares), for sync_names after it (which takes the array).  sync_all:
 * every folder (a user deleted). */
void api_folders_project_changed(tessd_t *d, int64_t project);
json_t *api_folders_of_project(tessd_t *d, int64_t project);
void api_folders_sync_names(tessd_t *d, json_t *names);
void api_folders_sync_all(tessd_t *d);
/* Folder quotas for projects.c (docs/folders.md, "Quotas"; lock held): the measured use of
 * project p's folders together into *used (-1: not measured yet, or folders are off). */
void api_folders_project_use(tessd_t *d, const tstore_project_t *p, int64_t *used);
/* jobs.c, after api_folders_for_job (lock and a turn of the group commit held): a job that
 * mounts read-write a folder at or over its quota, or over its project's folder quota, is
 * refused with 507 (read-only mounts are not looked at), and so is one whose figures cannot be
 * measured (fail closed).  A measurement older than TESSD_FOLDER_MEASURE_MS is taken again
 * first, the lock released meanwhile (api_submit_pause; *paused true: whatever the caller
 * checked before must be checked again).  0; -1 after an answer (lock held); -2 after an
 * answer when the lock is not held (api_submit_resume failed: tesseld is stopping). */
int api_folders_job_quota(tessd_t *d, const tstore_job_t *j, bool *paused, thttp_reply_t *rep);
/* jobs.c: the "folders" of a submission (v, may be NULL): each "NAME" or "NAME:ro" a folder
 * the caller may reach (rw for a mount without :ro), named once; into
 * j->folders_json and *json_out (the same malloc'd string, the caller frees it; NULL when
 * none).  0; -1 after 400 (syntax, an unknown folder or one not shared: the same answer,
 * folders off) or 403 (rw asked on a ro right). */
int api_folders_for_job(tessd_t *d, const tessd_caller_t *who, json_t *v, tstore_job_t *j,
                        char **json_out, thttp_reply_t *rep);
/* services.c: inference services (docs/serving.md). */
void api_services_list(thttp_req_t *, thttp_reply_t *, void *);
void api_services_create(thttp_req_t *, thttp_reply_t *, void *);
void api_services_get(thttp_req_t *, thttp_reply_t *, void *);
void api_services_update(thttp_req_t *, thttp_reply_t *, void *);
void api_services_delete(thttp_req_t *, thttp_reply_t *, void *);
void api_services_token_create(thttp_req_t *, thttp_reply_t *, void *);
void api_services_token_list(thttp_req_t *, thttp_reply_t *, void *);
void api_services_token_delete(thttp_req_t *, thttp_reply_t *, void *);

#endif
