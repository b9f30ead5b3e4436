# tesseld: the daemon (main loop, scheduling tick, launcher, auth, API handlers).
TESSELD_SRCS := src/daemon/main.c src/daemon/tick.c src/daemon/launch.c src/daemon/auth.c \
                src/daemon/api/routes.c src/daemon/api/jobs.c src/daemon/api/logs.c \
                src/daemon/api/nodes.c src/daemon/api/queues.c src/daemon/api/users.c \
                src/daemon/api/health.c src/daemon/api/console.c src/daemon/sched.c \
                src/daemon/suspend.c
BINS += $(O)/bin/tesseld
# Libraries by path: module.mk files are included in alphabetical order, so the variables
# of libraries defined later are still empty here.
$(O)/bin/tesseld: $(TESSELD_SRCS:%.c=$(O)/obj/%.o) $(O)/lib/libtsl-agent.a \
                  $(O)/lib/libtsl-http.a $(O)/lib/libtsl-store.a $(O)/lib/libtsl-sched.a \
                  $(O)/lib/libtsl-shm.a $(O)/lib/libtsl-util.a | $(O)/bin/tessel-shim
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o %.a,$^) -lmicrohttpd -ljansson -lsqlite3 -lnettle \
	    -ldl -lpthread -lm

# Integration tests: tesseld on loopback with fake GPUs (tests/lib/daemon.sh).
TESSELD_TESTS := tests/t/t3000-daemon-api.t tests/t/t3001-daemon-queue.t \
                 tests/t/t3002-daemon-restart.t tests/t/t3003-daemon-cgroup.t \
                 tests/t/t3004-daemon-slice.t tests/t/t3005-daemon-preempt.t \
                 tests/t/t3006-daemon-user.t tests/t/t3007-daemon-preempt-requeue.t \
                 tests/t/t3008-daemon-reap.t tests/t/t3009-daemon-hardening.t \
                 tests/t/t3010-daemon-diskfull.t tests/t/t3011-daemon-compute.t \
                 tests/t/t3012-daemon-suspend.t tests/t/t3013-daemon-enforce.t
TESTS += $(TESSELD_TESTS)
$(TESSELD_TESTS): $(O)/bin/tesseld $(O)/bin/tessel-shim
# The slice test runs the interposer's probe as a job, over the fake driver.
tests/t/t3004-daemon-slice.t: $(O)/tests/interposer/tcu-probe $(O)/lib/libtessel-cuda.so
# The compute test runs tcu-load (simulated kernels) as jobs, and the CLI.
tests/t/t3011-daemon-compute.t: $(O)/tests/interposer/tcu-load $(O)/lib/libtessel-cuda.so \
                                $(O)/bin/tessel
# The suspend test runs tcu-load as a job, suspends and resumes it through the CLI.
tests/t/t3012-daemon-suspend.t: $(O)/tests/interposer/tcu-load $(O)/tests/interposer/tcu-slice \
                                $(O)/lib/libtessel-cuda.so $(O)/bin/tessel
tests/t/t3013-daemon-enforce.t: $(O)/tests/interposer/tcu-probe $(O)/tests/interposer/tcu-raw \
                                $(O)/tests/interposer/tcu-slice $(O)/tests/interposer/tcu-load \
                                $(O)/lib/libtessel-cuda.so
