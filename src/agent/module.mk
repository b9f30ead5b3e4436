# agent: job runner (tessel-shim supervisor), cgroups v2/v1, GPU discovery through NVML.
# libtsl-agent.a is linked by tesseld; tessel-shim is the per-job supervisor it starts.
LIBAGENT_SRCS := src/agent/gpu.c src/agent/cgroup.c src/agent/runner.c src/agent/logcap.c
# jobns.c: the job's namespace (the shim's), and the folder specs tesseld checks too.
LIBAGENT_SRCS += src/agent/jobns.c
LIBAGENT := $(O)/lib/libtsl-agent.a
LIBS += $(LIBAGENT)
$(LIBAGENT): $(LIBAGENT_SRCS:%.c=$(O)/obj/%.o)
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

BINS += $(O)/bin/tessel-shim
$(O)/bin/tessel-shim: $(O)/obj/src/agent/shim.o $(O)/obj/src/agent/watchdog.o \
                      $(O)/obj/src/agent/ctrrun.o $(LIBAGENT) \
                      $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -ldl -lpthread

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
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka

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
