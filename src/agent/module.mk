# agent: job runner (tessel-shim supervisor), cgroups v2/v1, GPU discovery through NVML.
# libtsl-agent.a is linked by tesseld; tessel-shim is the per-job supervisor it starts.
LIBAGENT_SRCS := src/agent/gpu.c src/agent/cgroup.c src/agent/runner.c src/agent/logcap.c
# jobns.c: the job's namespace (the shim's), and the folder specs tesseld checks too.
LIBAGENT_SRCS += src/agent/jobns.c
# ckpt.c and watchdog.c: tesseld checkpoints a job's CUDA processes, found as the watchdog
# finds them, at a person's suspend (docs/suspend.md).
LIBAGENT_SRCS += src/agent/ckpt.c src/agent/watchdog.c
# fwd.c: a service replica's network namespace and the forwarder to its port (the shim's).
LIBAGENT_SRCS += src/agent/fwd.c
LIBAGENT := $(O)/lib/libtsl-agent.a
LIBS += $(LIBAGENT)
$(LIBAGENT): $(LIBAGENT_SRCS:%.c=$(O)/obj/%.o)
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

BINS += $(O)/bin/tessel-shim
$(O)/bin/tessel-shim: $(O)/obj/src/agent/shim.o $(O)/obj/src/agent/watchdog.o \
                      $(O)/obj/src/agent/ctrrun.o $(O)/obj/src/agent/tty.o $(LIBAGENT) \
                      $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -ljansson -ldl -lpthread

TESTS += $(O)/tests/agent/test_watchdog
$(O)/tests/agent/test_watchdog: $(O)/obj/src/agent/test/test_watchdog.o \
                                $(O)/obj/src/agent/watchdog.o $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -ldl -lpthread -lcmocka

TESTS += $(O)/tests/agent/test_agent
$(O)/tests/agent/test_agent: $(O)/obj/src/agent/test/test_agent.o $(LIBAGENT) \
                             $(O)/lib/libtsl-util.a | $(O)/bin/tessel-shim
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o %.a,$^) -ldl -lcmocka

# ctrrun.c's crun command line and overlay paths (container jobs, docs/containers.md).
TESTS += $(O)/tests/agent/test_ctrrun
$(O)/tests/agent/test_ctrrun: $(O)/obj/src/agent/test/test_ctrrun.o $(O)/obj/src/agent/ctrrun.o \
                              $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -ljansson -lcmocka

# The job's signal dispositions, the shim run directly (t3142).
TESTS += tests/t/t3142-shim-signals.t
tests/t/t3142-shim-signals.t: $(O)/bin/tessel-shim

TESTS += $(O)/tests/agent/test_logcap
$(O)/tests/agent/test_logcap: $(O)/obj/src/agent/test/test_logcap.o $(LIBAGENT) \
                              $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o %.a,$^) -lcmocka

# Test helper for the environment tests (t3023): a library a job names in LD_AUDIT; built
# without sanitizers (it is loaded into programs that are not).
TESTS_AGENT_PROBE := $(O)/tests/agent/libtessel-envprobe.so
all: $(TESTS_AGENT_PROBE)
$(TESTS_AGENT_PROBE): src/agent/test/envprobe.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -std=c11 $(WARN) $(CFLAGS) -fPIC -shared -o $@ $<

# ckpt.c: a job's GPU state suspended through the driver's checkpoint API (docs/suspend.md),
# tested against the fake driver's model of it; gpu.c's measurement of a job's memory against
# the fake NVML (dlopen'd by path at run time: a prerequisite, not linked).  $(O)/tests/fake/... named literally: this file
# is read before tests/fake/module.mk.
TESTS += $(O)/tests/agent/test_ckpt
$(O)/obj/src/agent/test/test_ckpt.o: CPPFLAGS += -Itests/fake
$(O)/tests/agent/test_ckpt: $(O)/obj/src/agent/test/test_ckpt.o $(O)/obj/src/agent/ckpt.o \
                            $(O)/obj/src/agent/gpu.o $(O)/lib/libtsl-util.a \
                            $(O)/tests/fake/libcuda.so.1 $(O)/tests/fake/libnvidia-ml.so.1
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -Wl,-rpath,$(abspath $(O)/tests/fake) -o $@ $(filter %.o %.a,$^) \
	    $(O)/tests/fake/libcuda.so.1 -ldl -lcmocka -lpthread

# The job's terminal (tty.h): the ring of output kept for a client.
TESTS += $(O)/tests/agent/test_tty
$(O)/tests/agent/test_tty: $(O)/obj/src/agent/test/test_tty.o $(O)/obj/src/agent/tty.o \
                           $(LIBAGENT) $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o %.a,$^) -lcmocka

# fwd.c: a service replica's socket and the forwarder's copying loop (docs/serving.md).
TESTS += $(O)/tests/agent/test_fwd
$(O)/tests/agent/test_fwd: $(O)/obj/src/agent/test/test_fwd.o $(LIBAGENT) $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o %.a,$^) -lcmocka

# Test helper for t7040: a process of a container job that tries to stop the shim's children.
TESTS_AGENT_CTRSTOP := $(O)/tests/agent/ctrstop
all: $(TESTS_AGENT_CTRSTOP)
$(TESTS_AGENT_CTRSTOP): src/agent/test/ctrstop.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -std=c11 $(WARN) $(CFLAGS) -o $@ $<
