# tesseld: the daemon (main loop, scheduling tick, launcher, auth, API handlers).
TESSELD_SRCS := src/daemon/main.c src/daemon/tick.c src/daemon/launch.c src/daemon/auth.c \
                src/daemon/api/routes.c src/daemon/api/jobs.c src/daemon/api/logs.c \
                src/daemon/api/jobs_batch.c \
                src/daemon/api/nodes.c src/daemon/api/queues.c src/daemon/api/users.c \
                src/daemon/api/health.c src/daemon/api/console.c src/daemon/sched.c \
                src/daemon/suspend.c src/daemon/acl.c src/daemon/localid.c \
                src/daemon/jobmodel.c src/daemon/batch.c src/daemon/batch_store.c \
                src/daemon/pass.c src/daemon/wait.c src/daemon/pwcache.c
# Idle reclamation's decisions (docs/suspend.md, "Idle reclamation"); the tick is suspend.c's.
TESSELD_SRCS += src/daemon/idle.c
TESSELD_SRCS += src/daemon/oversub.c
# A queue's setting inherited down the tree (idle.c's and oversub.c's walk).
TESSELD_SRCS += src/daemon/queuetree.c
TESSELD_SRCS += src/daemon/ckptslot.c
TESSELD_SRCS += src/daemon/api/metrics.c
# Container jobs (docs/containers.md): images, the OCI configuration, GET /v1/images.
TESSELD_SRCS += src/daemon/container.c src/daemon/container_launch.c src/daemon/api/images.c
# --slurm: the Slurm commands and the poll (slurm.c), their pure logic (slurmjob.c).
TESSELD_SRCS += src/daemon/slurm.c src/daemon/slurmjob.c src/daemon/slurmsub.c \
                src/daemon/spawnas.c src/slurmsub/subproto.c
# --slurm: the cluster's nodes and GPUs (slurmnodes.h), in the API (api/cluster.c).
TESSELD_SRCS += src/daemon/slurmnodes.c src/daemon/slurmnodes_parse.c src/daemon/api/cluster.c
# Projects (docs/projects.md): the rules (projects.c) and the routes (api/projects.c).
TESSELD_SRCS += src/daemon/projects.c src/daemon/api/projects.c
# A job's terminal over a WebSocket (docs/terminal.md): GET /v1/jobs/{id}/attach, wslay frames.
TESSELD_SRCS += src/daemon/api/term.c src/daemon/ticket.c src/daemon/termconn.c
# Virtual folders (docs/folders.md): the rules and ACL text (folders.c), the directories on
# disk (folderfs.c, libacl) and the routes (api/folders.c).
TESSELD_SRCS += src/daemon/folders.c src/daemon/folderfs.c src/daemon/api/folders.c
# Inference services (docs/serving.md): the pure parts (serve.c), the replicas and HAProxy
# (serve_run.c), the routes (api/services.c).
TESSELD_SRCS += src/daemon/serve.c src/daemon/serve_run.c src/daemon/api/services.c
# Normal GPU units (docs/scheduler-queues.md, "Normalised GPUs"): the speeds' value formats
# (gpuspeed.c) and the routes (api/gpumodels.c).
TESSELD_SRCS += src/daemon/gpuspeed.c src/daemon/api/gpumodels.c
# A job's web services (docs/job-services.md): the pure rules (jobsvc.c).
TESSELD_SRCS += src/daemon/jobsvc.c src/daemon/api/svcproxy.c
# tessel_build_info's commit (metrics.c): rewritten at each make, touched only when it changes;
# "unknown" outside a git checkout (a source package).
$(O)/gen/tessel_commit.h: FORCE
	@mkdir -p $(dir $@)
	@c=$$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown); \
	 printf '#define TESSEL_COMMIT "%s"\n' "$$c" >$@.tmp; \
	 if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi
$(O)/obj/src/daemon/api/metrics.o: $(O)/gen/tessel_commit.h
$(O)/obj/src/daemon/api/metrics.o: CPPFLAGS += -I$(O)/gen
.PHONY: FORCE
FORCE:
TESSELD_SRCS += src/daemon/api/openapi.c
# docs/openapi.json, served at GET /v1/openapi.json, built in as a C array (xxd -i).
TESSELD_OPENAPI_O := $(O)/obj/gen/openapi_doc.o
$(O)/gen/openapi_doc.c: docs/openapi.json
	@mkdir -p $(dir $@)
	{ printf '/* generated from docs/openapi.json: do not edit */\n#include "daemon/api/openapi.h"\n'; \
	  printf 'const char tessd_openapi_json[] = {\n'; xxd -i <$<; printf ', 0x00};\n'; \
	  printf 'const size_t tessd_openapi_json_len = sizeof tessd_openapi_json - 1;\n'; } >$@.tmp
	mv $@.tmp $@
$(TESSELD_OPENAPI_O): $(O)/gen/openapi_doc.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -c -o $@ $<
# The options' table and the configuration file (libinih), tesseld's own log, job-log retention.
TESSELD_SRCS += src/daemon/config.c src/daemon/log.c src/daemon/retention.c
TESSELD_SRCS += src/daemon/history.c src/daemon/histagg.c src/daemon/histwrite.c \
                src/daemon/histcache.c src/daemon/api/history.c
BINS += $(O)/bin/tesseld
# Libraries by path: module.mk files are included in alphabetical order, so the variables
# of libraries defined later are still empty here.
$(O)/bin/tesseld: $(TESSELD_SRCS:%.c=$(O)/obj/%.o) $(TESSELD_OPENAPI_O) $(O)/lib/libtsl-agent.a \
                  $(O)/lib/libtsl-http.a $(O)/lib/libtsl-store.a $(O)/lib/libtsl-sched.a \
                  $(O)/lib/libtsl-shm.a $(O)/lib/libtsl-client.a $(O)/lib/libtsl-nodefig.a \
                  $(O)/lib/libtsl-ws.a $(O)/lib/libtsl-util.a | $(O)/bin/tessel-shim
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o %.a,$^) -lmicrohttpd -ljansson -lsqlite3 -lnettle -linih \
	    -lwslay -lcurl -lacl -ldl -lpthread -lm

# Integration tests: tesseld on loopback with fake GPUs (tests/lib/daemon.sh).
TESSELD_TESTS := tests/t/t3000-daemon-api.t tests/t/t3001-daemon-queue.t \
                 tests/t/t3002-daemon-restart.t tests/t/t3003-daemon-cgroup.t \
                 tests/t/t3004-daemon-slice.t tests/t/t3005-daemon-preempt.t \
                 tests/t/t3006-daemon-user.t tests/t/t3007-daemon-preempt-requeue.t \
                 tests/t/t3008-daemon-reap.t tests/t/t3009-daemon-hardening.t \
                 tests/t/t3010-daemon-diskfull.t tests/t/t3011-daemon-compute.t \
                 tests/t/t3012-daemon-suspend.t tests/t/t3013-daemon-listen.t \
                 tests/t/t3014-daemon-slowloris.t tests/t/t3015-daemon-limits.t \
                 tests/t/t3020-daemon-socket.t tests/t/t3021-daemon-queue-allow.t \
                 tests/t/t3022-daemon-modes.t tests/t/t3023-daemon-env.t \
                 tests/t/t3024-daemon-start-crash.t tests/t/t3025-daemon-logs.t \
                 tests/t/t3026-daemon-cwd.t \
                 tests/t/t3027-daemon-enforce.t tests/t/t3030-daemon-job-events.t
TESSELD_TESTS += tests/t/t3035-daemon-queue-default-reclaim.t tests/t/t3036-daemon-queue-placement.t
TESSELD_TESTS += tests/t/t3040-daemon-pending-reason.t
TESSELD_TESTS += tests/t/t3045-daemon-time-limit.t tests/t/t3046-daemon-dependency.t \
                 tests/t/t3047-daemon-array.t tests/t/t3048-daemon-oom.t
TESSELD_TESTS += tests/t/t3044-daemon-api-badinput.t tests/t/t3049-daemon-options.t
TESSELD_TESTS += tests/t/t3060-daemon-metrics-counts.t tests/t/t3140-daemon-wal-restart.t
TESSELD_TESTS += tests/t/t3120-daemon-metrics-series.t tests/t/t3121-daemon-metrics-grafana.t
TESSELD_TESTS += tests/t/t3110-daemon-openapi.t
TESSELD_TESTS += tests/t/t3150-daemon-group-commit.t
# A job hostile to tesseld through its slice file (libshm read by copy, no lock).
TESSELD_TESTS += tests/t/t3160-daemon-slice-hostile.t
TESSELD_TESTS += tests/t/t3161-daemon-logs-hostile.t
TESSELD_TESTS += tests/t/t3162-daemon-cwd-stalled.t
# Projects (docs/projects.md): the API, the CLI, a store from before projects.
TESSELD_TESTS += tests/t/t3170-daemon-projects.t tests/t/t3171-cli-projects.t \
                 tests/t/t3172-daemon-projects-upgrade.t tests/t/t3174-daemon-projects-hostile.t
# Virtual folders (docs/folders.md): the API with the accounts on disk, the CLI, hostile users.
TESSELD_TESTS += tests/t/t3180-daemon-folders.t tests/t/t3181-cli-folders.t \
                 tests/t/t3183-daemon-folders-jobs.t tests/t/t3185-daemon-folders-files.t \
                 tests/t/t3182-daemon-folders-hostile.t tests/t/t3186-daemon-folders-roles.t \
                 tests/t/t3187-daemon-folders-share-rate.t
# A suspend that gives the GPU back through the driver's checkpoint API (docs/suspend.md).
TESSELD_TESTS += tests/t/t3190-daemon-ckpt-roundtrip.t tests/t/t3191-daemon-ckpt-restart-kill.t \
                 tests/t/t3192-daemon-ckpt-noapi.t tests/t/t3193-daemon-ckpt-threads.t \
                 tests/t/t3194-daemon-ckpt-concurrent.t tests/t/t3195-daemon-ckpt-killed.t
# The steps of different jobs at once (RV3's F2): one stopped job holds no other job's.
TESSELD_TESTS += tests/t/t3238-daemon-ckpt-perjob.t
# A cap per GPU on the checkpoint steps' copies (RV15a's M1; ckptslot.h).
TESSELD_TESTS += tests/t/t3248-daemon-ckpt-copies.t
# A copy judged stalled by the process it copies, never another of its job (RV16's H1).
TESSELD_TESTS += tests/t/t3256-daemon-ckpt-copies-stop.t
# A launch of a job with a compute share during its reclamation's checkpoint (issue 21 item 3).
TESSELD_TESTS += tests/t/t3249-daemon-idle-share-launch.t
# t3240's queue limit for a job of a local account, its own call and its own resume.
TESSELD_TESTS += tests/t/t3250-daemon-resume-rules-user.t
# Folder quotas (docs/folders.md, "Quotas"): a folder root on btrfs (a loop-mounted image), a
# project's quota.
TESSELD_TESTS += tests/t/t3200-daemon-folders-btrfs.t tests/t/t3201-daemon-folders-project-quota.t \
                 tests/t/t3202-daemon-folders-job-quota.t \
                 tests/t/t3203-daemon-folders-quota-unmeasurable.t \
                 tests/t/t3204-daemon-folders-quota-fresh.t tests/t/t3205-daemon-folders-quota-walks.t
# Oversubscription (issue 21 item 4, docs/interposer.md): a job spills past its GPU memory.
TESSELD_TESTS += tests/t/t3220-daemon-oversub.t
# Preemption by suspension (docs/suspend.md, "Preemption by suspension").
TESSELD_TESTS += tests/t/t3210-daemon-psusp-roundtrip.t tests/t/t3211-daemon-psusp-restart.t \
                 tests/t/t3212-daemon-psusp-cancel.t tests/t/t3213-daemon-psusp-options.t \
                 tests/t/t3214-daemon-psusp-stopped.t tests/t/t3216-daemon-psusp-noapi.t \
                 tests/t/t3217-daemon-psusp-hold-newproc.t \
                 tests/t/t3218-daemon-psusp-hold-selfrestore.t
# Oversubscription's bounds (security review F2, F3): mem needed with cgroups, per GPU.
TESSELD_TESTS += tests/t/t3221-daemon-oversub-limits.t
# Idle reclamation (docs/suspend.md, "Idle reclamation").
TESSELD_TESTS += tests/t/t3230-daemon-idle-reclaim.t tests/t/t3231-daemon-idle-busy.t \
                 tests/t/t3232-daemon-idle-hostile.t tests/t/t3233-daemon-idle-restart.t \
                 tests/t/t3234-daemon-idle-newproc.t tests/t/t3235-daemon-idle-hold.t \
                 tests/t/t3236-daemon-idle-calls.t tests/t/t3237-daemon-idle-work.t \
                 tests/t/t3239-daemon-idle-window.t
# A running job beyond a lowered guarantee stays counted at a rebuild (RV3's F3).
TESSELD_TESTS += tests/t/t3243-daemon-rebuild-np-counted.t
# Resumes held by queue limits; the floor of a job's own idle time; no reclamation again before
# a restored job's idle time (docs/suspend.md, "Resumes, queue limits and pending jobs").
TESSELD_TESTS += tests/t/t3240-daemon-resume-rules.t tests/t/t3241-daemon-idle-floor.t \
                 tests/t/t3242-daemon-idle-again.t
# A queue's idle_reclaim inherited down the tree, and the most its jobs may ask (docs/suspend.md,
# "The setting").
TESSELD_TESTS += tests/t/t3244-daemon-idle-inherit.t
# A queue's gpu_mem_oversubscribe: inherited, the default of its jobs, the most they may ask
# (docs/interposer.md, "A queue's setting").
TESSELD_TESTS += tests/t/t3257-daemon-oversub-queue.t
# Idle reclamation's second pass of gated calls: stream memory operations, host functions and
# callbacks, capture and graph upload (docs/suspend.md, "Calls still unhooked").
TESSELD_TESTS += tests/t/t3252-daemon-idle-calls2.t tests/t/t3253-daemon-idle-work2.t
# The third pass: context, capture-info, attribute and host-memory queries gated, not work.
TESSELD_TESTS += tests/t/t3254-daemon-idle-queries.t
# The fourth pass: the library and kernel calls of lazy loading, and cuMemGetAddressRange.
TESSELD_TESTS += tests/t/t3255-daemon-idle-libraries.t
TESSELD_TESTS += tests/t/t3163-daemon-jobdir-mounted.t
TESSELD_TESTS += tests/t/t3164-daemon-exit-record.t
TESSELD_TESTS += tests/t/t3165-daemon-jobdir-reused-id.t
TESSELD_TESTS += tests/t/t3166-daemon-suspend-rate.t
TESSELD_TESTS += tests/t/t3167-daemon-retention-steps.t
TESSELD_TESTS += tests/t/t3168-daemon-pid-record.t
TESSELD_TESTS += tests/t/t3169-daemon-start-files.t
# The configuration file (config.c, etc/tesseld.conf), SIGHUP, tesseld's log, job-log retention.
TESSELD_TESTS += tests/t/t3100-config-check.t tests/t/t3101-config-reload.t \
                 tests/t/t3102-config-retention.t tests/t/t3103-config-syslog.t
TESSELD_TESTS += tests/t/t3070-daemon-job-start.t tests/t/t3071-daemon-account-change.t
# Event-driven scheduling (pass.h) and the long poll of a job (wait.c).
TESSELD_TESTS += tests/t/t3050-daemon-event-end.t tests/t/t3051-daemon-coalesce.t \
                 tests/t/t3052-daemon-wait.t
TESTS += $(TESSELD_TESTS)

# Unit tests of the daemon's pure parts.
TESTS += $(O)/tests/daemon/test_acl
$(O)/tests/daemon/test_acl: $(O)/obj/src/daemon/test/test_acl.o $(O)/obj/src/daemon/acl.o \
                            $(O)/lib/libtsl-store.a $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -ljansson -lsqlite3 -lcmocka
# The rules of projects (projects.h): who may do what, as tables.
TESTS += $(O)/tests/daemon/test_projects
$(O)/tests/daemon/test_projects: $(O)/obj/src/daemon/test/test_projects.o \
                                 $(O)/obj/src/daemon/projects.o $(O)/lib/libtsl-store.a \
                                 $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lsqlite3 -lcmocka
TESTS += $(O)/tests/daemon/test_folders
$(O)/tests/daemon/test_folders: $(O)/obj/src/daemon/test/test_folders.o \
                                $(O)/obj/src/daemon/folders.o $(O)/obj/src/daemon/folderfs.o \
                                $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lacl -lcmocka
# Every change of a job's state goes through the job model (a grep over src/, proved on a
# copy with a bad line added).
TESTS += tests/t/t0011-one-state-writer.t
TESTS += $(O)/tests/daemon/test_jobmodel
$(O)/tests/daemon/test_jobmodel: $(O)/obj/src/daemon/test/test_jobmodel.o \
                                 $(O)/obj/src/daemon/jobmodel.o $(O)/lib/libtsl-store.a \
                                 $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -ljansson -lsqlite3 -lcmocka
TESTS += $(O)/tests/daemon/test_idle
$(O)/tests/daemon/test_idle: $(O)/obj/src/daemon/test/test_idle.o $(O)/obj/src/daemon/idle.o \
                             $(O)/obj/src/daemon/queuetree.o $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka
# A queue's GPU memory oversubscription (oversub.c): pure, no store.
TESTS += $(O)/tests/daemon/test_oversub
$(O)/tests/daemon/test_oversub: $(O)/obj/src/daemon/test/test_oversub.o $(O)/obj/src/daemon/oversub.o \
                                $(O)/obj/src/daemon/queuetree.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka
# A queue's setting inherited down the tree (queuetree.c): pure, no store.
TESTS += $(O)/tests/daemon/test_queuetree
$(O)/tests/daemon/test_queuetree: $(O)/obj/src/daemon/test/test_queuetree.o \
                                  $(O)/obj/src/daemon/queuetree.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka
# The copy slots of the GPUs (ckptslot.c): pure, no store.
TESTS += $(O)/tests/daemon/test_ckptslot
$(O)/tests/daemon/test_ckptslot: $(O)/obj/src/daemon/test/test_ckptslot.o \
                                 $(O)/obj/src/daemon/ckptslot.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka
TESTS += $(O)/tests/daemon/test_localid
$(O)/tests/daemon/test_localid: $(O)/obj/src/daemon/test/test_localid.o \
                                $(O)/obj/src/daemon/localid.o $(O)/lib/libtsl-store.a \
                                $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lsqlite3 -lcmocka
# Who calls (auth.c) against a real store, libhttp's request side replaced by doubles.
TESTS += $(O)/tests/daemon/test_auth
$(O)/tests/daemon/test_auth: $(O)/obj/src/daemon/test/test_auth.o $(O)/obj/src/daemon/auth.o \
                             $(O)/obj/src/daemon/localid.o $(O)/lib/libtsl-store.a \
                             $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -ljansson -lsqlite3 -lnettle -lcmocka
# launch.c's helpers (names, refusals, cwd check, start locks, violation record), no daemon.
TESTS += $(O)/tests/daemon/test_launch
$(O)/tests/daemon/test_launch: $(O)/obj/src/daemon/test/test_launch.o $(O)/obj/src/daemon/launch.o \
                               $(O)/obj/src/daemon/pwcache.o $(O)/obj/src/daemon/container.o \
                               $(O)/obj/src/daemon/container_launch.o \
                               $(O)/obj/src/daemon/jobsvc.o \
                               $(O)/lib/libtsl-agent.a $(O)/lib/libtsl-store.a \
                               $(O)/lib/libtsl-shm.a $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -ljansson -lsqlite3 -lnettle -ldl -lpthread -lcmocka
# /healthz, /metrics, /v1/nodes and /v1/gpus as handlers on a hand-built daemon state, no HTTP.
TESTS += $(O)/tests/daemon/test_health
$(O)/tests/daemon/test_health: $(O)/obj/src/daemon/test/test_health.o \
                               $(O)/obj/src/daemon/api/health.o $(O)/obj/src/daemon/api/nodes.o \
                               $(O)/obj/src/daemon/api/metrics.o \
                               $(O)/obj/src/daemon/api/cluster.o \
                               $(O)/obj/src/daemon/slurmnodes_parse.o \
                               $(O)/obj/src/daemon/jobmodel.o \
                               $(O)/lib/libtsl-agent.a $(O)/lib/libtsl-http.a \
                               $(O)/lib/libtsl-nodefig.a \
                               $(O)/lib/libtsl-store.a $(O)/lib/libtsl-shm.a $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lmicrohttpd -ljansson -lsqlite3 -ldl -lpthread -lcmocka
# batch.c: the pure parts of the batch features.
TESTS += $(O)/tests/daemon/test_batch
$(O)/tests/daemon/test_batch: $(O)/obj/src/daemon/test/test_batch.o $(O)/obj/src/daemon/batch.o \
                              $(O)/lib/libtsl-store.a $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lsqlite3 -lcmocka
# docs/openapi.json against the route table: the whole daemon linked in, its main renamed so
# that the test's own main runs (objcopy, binutils).
TESTS += $(O)/tests/daemon/test_openapi
$(O)/obj/src/daemon/main-nomain.o: $(O)/obj/src/daemon/main.o
	objcopy --redefine-sym main=tessd_main_unused $< $@
$(O)/tests/daemon/test_openapi: $(O)/obj/src/daemon/test/test_openapi.o \
                                $(O)/obj/src/daemon/main-nomain.o \
                                $(filter-out $(O)/obj/src/daemon/main.o,$(TESSELD_SRCS:%.c=$(O)/obj/%.o)) \
                                $(TESSELD_OPENAPI_O) $(O)/lib/libtsl-agent.a \
                                $(O)/lib/libtsl-http.a $(O)/lib/libtsl-store.a $(O)/lib/libtsl-sched.a \
                                $(O)/lib/libtsl-shm.a $(O)/lib/libtsl-client.a \
                                $(O)/lib/libtsl-nodefig.a $(O)/lib/libtsl-ws.a $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o %.a,$^) -lmicrohttpd -ljansson -linih -lsqlite3 -lnettle \
	    -lwslay -lcurl -lacl -ldl -lpthread -lm -lcmocka
# slurmjob.c: sbatch's arguments and script, squeue's JSON, Slurm's states onto the job model.
TESTS += $(O)/tests/daemon/test_slurmjob
$(O)/tests/daemon/test_slurmjob: $(O)/obj/src/daemon/test/test_slurmjob.o \
                                 $(O)/obj/src/daemon/slurmjob.o $(O)/obj/src/daemon/jobmodel.o \
                                 $(O)/lib/libtsl-store.a $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -ljansson -lsqlite3 -lcmocka
# slurmsub.c: the pool of submitters, against a fake one (test/fake_submitter.c).
TESTS += $(O)/tests/daemon/test_slurmsub
$(O)/tests/daemon/fake_submitter: $(O)/obj/src/daemon/test/fake_submitter.o \
                                  $(O)/obj/src/slurmsub/subproto.o $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -ljansson
$(O)/tests/daemon/test_slurmsub: $(O)/obj/src/daemon/test/test_slurmsub.o \
                                 $(O)/obj/src/daemon/slurmsub.o $(O)/obj/src/slurmsub/subproto.o \
                                 $(O)/obj/src/daemon/spawnas.o $(O)/obj/src/daemon/log.o \
                                 $(O)/obj/src/daemon/slurmjob.o $(O)/obj/src/daemon/jobmodel.o \
                                 $(O)/lib/libtsl-store.a $(O)/lib/libtsl-util.a \
                                 | $(O)/tests/daemon/fake_submitter
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o %.a,$^) -ljansson -lsqlite3 -lcmocka -lpthread
# slurmnodes_parse.c: sinfo --json's nodes (Slurm 22.05), and the nodes' copies handlers take.
TESTS += $(O)/tests/daemon/test_slurmnodes
$(O)/tests/daemon/test_slurmnodes: $(O)/obj/src/daemon/test/test_slurmnodes.o \
                                   $(O)/obj/src/daemon/slurmnodes_parse.o \
                                   $(O)/lib/libtsl-nodefig.a $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -ljansson -lpthread -lcmocka
# serve.c: a service's spec, the meters, the weights, HAProxy's configuration and statistics.
TESTS += $(O)/tests/daemon/test_serve
$(O)/tests/daemon/test_serve: $(O)/obj/src/daemon/test/test_serve.o $(O)/obj/src/daemon/serve.o \
                              $(O)/lib/libtsl-store.a $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -ljansson -lsqlite3 -lm -lcmocka
# gpuspeed.c: GPU models' relative speeds, their value formats (normal GPU units, issue 22).
TESTS += $(O)/tests/daemon/test_gpuspeed
$(O)/tests/daemon/test_gpuspeed: $(O)/obj/src/daemon/test/test_gpuspeed.o \
                                 $(O)/obj/src/daemon/gpuspeed.o $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lm -lcmocka
# Services behind HAProxy (t7050-t7052): the stand-in server is tests/lib/standin.py.
SERVE_TESTS := tests/t/t7050-serve-badinput.t tests/t/t7051-serve-proxy.t \
               tests/t/t7052-serve-scale.t tests/t/t7058-serve-owner-limits.t \
               tests/t/t7060-serve-replica-private.t tests/t/t7061-serve-proxy-left.t
TESTS += $(SERVE_TESTS)
$(SERVE_TESTS): $(O)/bin/tesseld $(O)/bin/tessel-shim $(O)/bin/tessel
# Normal GPU units (t7053-t7055, t7057): GPU speeds, ngpu limits, the CLI, the calibration.
NGPU_TESTS := tests/t/t7053-ngpu-api.t tests/t/t7054-ngpu-limit.t tests/t/t7055-ngpu-cli.t \
              tests/t/t7057-ngpu-calibrate.t
TESTS += $(NGPU_TESTS)
$(NGPU_TESTS): $(O)/bin/tesseld $(O)/bin/tessel-shim $(O)/bin/tessel
# pass.c: the coalescing of scheduling events into passes, on a fake clock.
TESTS += $(O)/tests/daemon/test_pass
$(O)/tests/daemon/test_pass: $(O)/obj/src/daemon/test/test_pass.o $(O)/obj/src/daemon/pass.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka
# pwcache.c: the cache of account lookups, with a fake NSS and a fake clock.
TESTS += $(O)/tests/daemon/test_pwcache
$(O)/tests/daemon/test_pwcache: $(O)/obj/src/daemon/test/test_pwcache.o $(O)/obj/src/daemon/pwcache.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lpthread -lcmocka
$(TESSELD_TESTS): $(O)/bin/tesseld $(O)/bin/tessel-shim
# The local-socket and queue-permission tests drive the CLI as local accounts too.
tests/t/t3020-daemon-socket.t tests/t/t3021-daemon-queue-allow.t tests/t/t3022-daemon-modes.t \
    tests/t/t3030-daemon-job-events.t tests/t/t3045-daemon-time-limit.t \
    tests/t/t3046-daemon-dependency.t tests/t/t3047-daemon-array.t tests/t/t3048-daemon-oom.t: \
    $(O)/bin/tessel
tests/t/t3052-daemon-wait.t: $(O)/bin/tessel
tests/t/t3171-cli-projects.t tests/t/t3172-daemon-projects-upgrade.t: $(O)/bin/tessel
tests/t/t3181-cli-folders.t tests/t/t3183-daemon-folders-jobs.t: $(O)/bin/tessel
# The slowloris test mounts the attack with the benchmark's program.
tests/t/t3014-daemon-slowloris.t: $(O)/bench/bench-slowloris
# The checkpoint tests (docs/suspend.md) run the interposer's probe as jobs, with the CLI.
tests/t/t3190-daemon-ckpt-roundtrip.t tests/t/t3191-daemon-ckpt-restart-kill.t \
tests/t/t3192-daemon-ckpt-noapi.t tests/t/t3193-daemon-ckpt-threads.t \
tests/t/t3194-daemon-ckpt-concurrent.t tests/t/t3195-daemon-ckpt-killed.t \
tests/t/t3210-daemon-psusp-roundtrip.t tests/t/t3211-daemon-psusp-restart.t \
tests/t/t3212-daemon-psusp-cancel.t tests/t/t3214-daemon-psusp-stopped.t \
tests/t/t3216-daemon-psusp-noapi.t: \
    $(O)/tests/interposer/tcu-probe $(O)/lib/libtessel-cuda.so $(O)/tests/fake/libcuda.so.1 \
    $(O)/bin/tessel
tests/t/t3238-daemon-ckpt-perjob.t: $(O)/tests/interposer/tcu-probe $(O)/lib/libtessel-cuda.so \
    $(O)/tests/fake/libcuda.so.1 $(O)/tests/fake/libnvidia-ml.so.1
tests/t/t3248-daemon-ckpt-copies.t: $(O)/tests/interposer/tcu-probe $(O)/lib/libtessel-cuda.so \
    $(O)/tests/fake/libcuda.so.1 $(O)/tests/fake/libnvidia-ml.so.1
tests/t/t3256-daemon-ckpt-copies-stop.t: $(O)/tests/interposer/tcu-probe \
    $(O)/lib/libtessel-cuda.so $(O)/tests/fake/libcuda.so.1 $(O)/tests/fake/libnvidia-ml.so.1
# The oversubscription test runs the probe as jobs, with the CLI, over the fake driver and NVML.
tests/t/t3220-daemon-oversub.t: $(O)/tests/interposer/tcu-probe $(O)/lib/libtessel-cuda.so \
    $(O)/tests/fake/libcuda.so.1 $(O)/tests/fake/libnvidia-ml.so.1 $(O)/bin/tessel \
    $(O)/tests/interposer/tcu-slice
tests/t/t3213-daemon-psusp-options.t: $(O)/bin/tessel
# The holds of a victim suspended by a preemption: new processes, one round the interposer,
# the job's own slice word, a self-restore through the driver (tcu-probe ckptrestore).
tests/t/t3217-daemon-psusp-hold-newproc.t tests/t/t3218-daemon-psusp-hold-selfrestore.t: \
    $(O)/tests/interposer/tcu-probe $(O)/tests/interposer/tcu-raw \
    $(O)/tests/interposer/tcu-slice $(O)/lib/libtessel-cuda.so $(O)/tests/fake/libcuda.so.1
# Idle reclamation: the probe as jobs, with the CLI; a hostile job writes its words (tcu-slice).
tests/t/t3230-daemon-idle-reclaim.t tests/t/t3231-daemon-idle-busy.t \
tests/t/t3232-daemon-idle-hostile.t tests/t/t3233-daemon-idle-restart.t \
tests/t/t3234-daemon-idle-newproc.t tests/t/t3235-daemon-idle-hold.t \
tests/t/t3236-daemon-idle-calls.t tests/t/t3237-daemon-idle-work.t \
tests/t/t3239-daemon-idle-window.t tests/t/t3240-daemon-resume-rules.t tests/t/t3241-daemon-idle-floor.t \
tests/t/t3242-daemon-idle-again.t tests/t/t3249-daemon-idle-share-launch.t \
tests/t/t3250-daemon-resume-rules-user.t tests/t/t3252-daemon-idle-calls2.t \
tests/t/t3253-daemon-idle-work2.t tests/t/t3254-daemon-idle-queries.t \
tests/t/t3255-daemon-idle-libraries.t: \
    $(O)/tests/interposer/tcu-probe $(O)/tests/interposer/tcu-slice $(O)/lib/libtessel-cuda.so \
    $(O)/tests/fake/libcuda.so.1 $(O)/bin/tessel
# The slice test runs the interposer's probe as a job, over the fake driver.
tests/t/t3004-daemon-slice.t: $(O)/tests/interposer/tcu-probe $(O)/lib/libtessel-cuda.so
# The compute test runs tcu-load (simulated kernels) as jobs, and the CLI.
tests/t/t3011-daemon-compute.t: $(O)/tests/interposer/tcu-load $(O)/lib/libtessel-cuda.so \
                                $(O)/bin/tessel
# The suspend test runs tcu-load as a job, suspends and resumes it through the CLI.
tests/t/t3012-daemon-suspend.t: $(O)/tests/interposer/tcu-load $(O)/tests/interposer/tcu-slice \
                                $(O)/lib/libtessel-cuda.so $(O)/bin/tessel
# The environment test has a job load a probe library through LD_AUDIT.
tests/t/t3023-daemon-env.t: $(O)/tests/agent/libtessel-envprobe.so
tests/t/t3027-daemon-enforce.t: $(O)/tests/interposer/tcu-probe $(O)/tests/interposer/tcu-raw \
                                $(O)/tests/interposer/tcu-slice $(O)/tests/interposer/tcu-load \
                                $(O)/lib/libtessel-cuda.so
# Container jobs (container.h, docs/containers.md): crun, a test image made of this machine's
# files (tests/lib/mkimage.sh), the probe over the fake driver inside, the CLI.
CONTAINER_TESTS := tests/t/t7020-container-run.t tests/t/t7021-container-kill.t \
                   tests/t/t7022-container-images.t tests/t/t7023-container-badinput.t \
                   tests/t/t7024-container-escape.t
# Virtual folders in container jobs (docs/folders.md).
CONTAINER_TESTS += tests/t/t3184-container-folders.t
TESTS += $(CONTAINER_TESTS)
$(CONTAINER_TESTS): $(O)/bin/tesseld $(O)/bin/tessel-shim $(O)/bin/tessel \
                    $(O)/tests/interposer/tcu-probe $(O)/lib/libtessel-cuda.so \
                    tests/lib/container.sh tests/lib/mkimage.sh
tests/t/t7021-container-kill.t: $(O)/tests/interposer/tcu-load
tests/t/t7024-container-escape.t: $(O)/tests/agent/libtessel-envprobe.so $(O)/tests/interposer/tcu-raw
# A job's terminal (docs/terminal.md): expect drives a PTY through tessel run -it / attach.
TERM_TESTS := tests/t/t7030-term-run-it.t tests/t/t7031-term-refusals.t \
              tests/t/t7032-term-restart.t tests/t/t7033-term-exec.t \
              tests/t/t7034-term-ticket.t tests/t/t7036-term-limits.t \
              tests/t/t7037-term-exec-ns.t
TESTS += $(TERM_TESTS)
$(TERM_TESTS): $(O)/bin/tesseld $(O)/bin/tessel-shim $(O)/bin/tessel tests/lib/term.sh
# A container job's terminal and exec into it (crun's --console-socket, docs/terminal.md).
CTR_TERM_TESTS := tests/t/t7038-ctr-term-run-it.t tests/t/t7039-ctr-term-exec.t \
                  tests/t/t7040-ctr-exec-unstoppable.t
TESTS += $(CTR_TERM_TESTS)
$(CTR_TERM_TESTS): $(O)/bin/tesseld $(O)/bin/tessel-shim $(O)/bin/tessel \
                   $(O)/tests/interposer/tcu-probe $(O)/lib/libtessel-cuda.so \
                   tests/lib/container.sh tests/lib/mkimage.sh tests/lib/ctrterm.sh
tests/t/t7040-ctr-exec-unstoppable.t: $(O)/tests/agent/ctrstop
# A job's web services through tesseld (docs/job-services.md): Jupyter, a generic service,
# the idle rule, each service's own origin and the proxy's door (t7074).
JOBSVC_TESTS := tests/t/t7070-jobsvc-jupyter.t tests/t/t7071-jobsvc-generic.t \
                tests/t/t7072-jobsvc-idle.t tests/t/t7074-jobsvc-origin.t \
                tests/t/t7075-jobsvc-peer.t
TESTS += $(JOBSVC_TESTS)
$(JOBSVC_TESTS): $(O)/bin/tesseld $(O)/bin/tessel-shim $(O)/bin/tessel tests/lib/term.sh \
                 tests/lib/jobsvc.sh tests/lib/jupyter-cell tests/lib/svc-echo tests/lib/svc-upload
# A job's web services (jobsvc.c): names, the submission's check, the sockets' paths.
TESTS += $(O)/tests/daemon/test_jobsvc
$(O)/tests/daemon/test_jobsvc: $(O)/obj/src/daemon/test/test_jobsvc.o $(O)/obj/src/daemon/jobsvc.o \
                               $(O)/lib/libtsl-store.a $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -ljansson -lsqlite3 -lnettle -lcmocka
# Terminal tickets (ticket.c): one use, expiry, another job or route, bounds.
TESTS += $(O)/tests/daemon/test_ticket
$(O)/tests/daemon/test_ticket: $(O)/obj/src/daemon/test/test_ticket.o $(O)/obj/src/daemon/ticket.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka
# Terminal WebSockets at once (termconn.c): per user, in all, the idle rule.
TESTS += $(O)/tests/daemon/test_termconn
$(O)/tests/daemon/test_termconn: $(O)/obj/src/daemon/test/test_termconn.o \
                                 $(O)/obj/src/daemon/termconn.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka
# container.c alone: image names, the store, ldconfig's output, device nodes, config.json.
TESTS += $(O)/tests/daemon/test_container
$(O)/tests/daemon/test_container: $(O)/obj/src/daemon/test/test_container.o \
                                  $(O)/obj/src/daemon/container.o $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -ljansson -lpthread -lcmocka
# config.c: the options' table, the file (libinih), flags over it; log.c's levels.
TESTS += $(O)/tests/daemon/test_config
# (slurmjob.o: slurm-queues is checked by its parser, tsj_parse_qmap.)
$(O)/tests/daemon/test_config: $(O)/obj/src/daemon/test/test_config.o $(O)/obj/src/daemon/config.o \
                               $(O)/obj/src/daemon/jobsvc.o \
                               $(O)/obj/src/daemon/log.o $(O)/obj/src/daemon/retention.o \
                               $(O)/obj/src/daemon/slurmjob.o $(O)/obj/src/daemon/jobmodel.o \
                               $(O)/obj/src/daemon/gpuspeed.o \
                               $(O)/lib/libtsl-agent.a $(O)/lib/libtsl-sched.a \
                               $(O)/lib/libtsl-store.a $(O)/lib/libtsl-shm.a $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -linih -ljansson -lsqlite3 -lnettle -ldl -lpthread -lm -lcmocka
# Usage history (histagg.h): the downsampling and tiers alone, and the test-only seeder that
# fills a store through the real write path (t3130, t7010).
TESTS += $(O)/tests/daemon/test_histagg
$(O)/tests/daemon/test_histagg: $(O)/obj/src/daemon/test/test_histagg.o \
                                $(O)/obj/src/daemon/histagg.o $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka -lm
TESTS += $(O)/tests/daemon/test_histcache
$(O)/tests/daemon/test_histcache: $(O)/obj/src/daemon/test/test_histcache.o \
                                  $(O)/obj/src/daemon/histcache.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka
TESTS += $(O)/tests/daemon/test_histwrite
$(O)/tests/daemon/test_histwrite: $(O)/obj/src/daemon/test/test_histwrite.o \
                                  $(O)/obj/src/daemon/histagg.o $(O)/obj/src/daemon/histwrite.o \
                                  $(O)/lib/libtsl-store.a $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka -lsqlite3 -lm -lpthread
TESSEL_HIST_SEED := $(O)/tests/daemon/tessel-hist-seed
$(TESSEL_HIST_SEED): $(O)/obj/src/daemon/test/hist_seed.o $(O)/obj/src/daemon/histagg.o \
                     $(O)/obj/src/daemon/histwrite.o $(O)/lib/libtsl-store.a \
                     $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lsqlite3 -lm
HIST_TESTS := tests/t/t3130-daemon-history.t tests/t/t3131-daemon-history-retention.t
TESTS += $(HIST_TESTS)
$(HIST_TESTS): $(TESSEL_HIST_SEED) $(O)/bin/tesseld $(O)/bin/tessel-shim
