# slurm: spank_tessel.so, Tessel's GPU slices for Slurm jobs (docs/slurm.md), and its tests.
#
# The plugin is loaded by slurmd, slurmstepd, srun, sbatch and salloc, none of which carries
# the sanitizer runtime: it is always built without sanitizers, from its own objects
# ($(O)/slurm/obj), with every symbol but the SPANK entry points hidden.  It links the pieces
# tessel-shim uses (the watchdog, the job's mount namespace, NVML discovery, the slice file).
SLURM_PLUGIN := $(O)/slurm/spank_tessel.so
SLURM_PLUGIN_SRCS := src/slurm/spank_tessel.c src/slurm/slurm_logic.c src/agent/watchdog.c \
                     src/agent/jobns.c src/agent/gpu.c src/common/libshm/shm.c \
                     src/common/libutil/error.c src/common/libutil/size.c \
                     src/common/libutil/procstat.c src/common/libutil/nomount.c
SLURM_PLUGIN_OBJS := $(SLURM_PLUGIN_SRCS:%.c=$(O)/slurm/obj/%.o)
LIBS += $(SLURM_PLUGIN)

$(O)/slurm/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -std=c11 $(WARN) $(CFLAGS) -fPIC -MMD -MP -fvisibility=hidden -c -o $@ $<
# The SPANK entry points and plugin_name/type/version stay visible.
$(O)/slurm/obj/src/slurm/spank_tessel.o: src/slurm/spank_tessel.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -std=c11 $(WARN) $(CFLAGS) -fPIC -MMD -MP -c -o $@ $<

# -z nodelete: slurmstepd unloads its SPANK plugins at the end of a step while the watchdog
# thread still runs the plugin's code; the code must stay mapped until the process exits.
$(SLURM_PLUGIN): $(SLURM_PLUGIN_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -shared -Wl,-z,now -Wl,-z,nodelete -o $@ $^ -ldl -lpthread

TESTS += $(O)/tests/slurm/test_slurm_logic
$(O)/tests/slurm/test_slurm_logic: $(O)/obj/src/slurm/test/test_slurm_logic.o \
                                   $(O)/obj/src/slurm/slurm_logic.o $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka

# The multi-node test (a Slurm cluster in network namespaces, tests/slurm/cluster.sh).  Under
# SANITIZE=1 what the cluster's processes load (the interposer, the fake driver and NVML, the
# CUDA test program) comes from a plain sub-build in $(O)/plain: slurmd, slurmstepd and the
# jobs' shells carry no sanitizer runtime.
SLURM_SHELL_TESTS := $(sort $(wildcard tests/t/t90*-slurm-*.t))
TESTS += $(SLURM_SHELL_TESTS)
$(SLURM_SHELL_TESTS): $(SLURM_PLUGIN) $(O)/bin/tessel $(O)/lib/libtessel-cuda.so $(O)/tests/interposer/tcu-probe \
                      $(O)/tests/interposer/tcu-raw $(O)/tests/fake/libcuda.so.1 $(O)/tests/fake/libnvidia-ml.so.1
ifeq ($(SANITIZE),1)
SLURM_PLAIN := $(O)/plain
$(SLURM_SHELL_TESTS): slurm-plain
.PHONY: slurm-plain
slurm-plain:
	$(MAKE) --no-print-directory SANITIZE=0 O=$(SLURM_PLAIN) $(SLURM_PLAIN)/lib/libtessel-cuda.so \
	    $(SLURM_PLAIN)/tests/fake/libcuda.so.1 $(SLURM_PLAIN)/tests/fake/libnvidia-ml.so.1 \
	    $(SLURM_PLAIN)/tests/interposer/tcu-probe $(SLURM_PLAIN)/tests/interposer/tcu-raw
endif
# tesseld --slurm on the cluster (docs/slurm-backend.md).
tests/t/t9006-slurm-backend.t: $(O)/bin/tesseld $(O)/bin/tessel-shim $(O)/bin/tessel-slurm-submit
# jobs submitted to Slurm directly, and suspend/resume with --slurm.
tests/t/t9007-slurm-direct-suspend.t: $(O)/bin/tesseld
# Tessel's queues onto Slurm partitions and QOS (slurm-queues).
tests/t/t9008-slurm-queues.t: $(O)/bin/tesseld
# The cluster's GPUs: tessel-node-exporter on the nodes, tesseld --slurm asking them.
tests/t/t9010-slurm-cluster-gpus.t: $(O)/bin/tesseld $(O)/bin/tessel-shim $(O)/bin/tessel-node-exporter
# The console's overview of the cluster, in Chromium (web/test/cluster.mjs).
tests/t/t9011-slurm-console.t: $(O)/bin/tesseld $(O)/bin/tessel-shim $(O)/bin/tessel-node-exporter
# tesseld's libslurm submitter against sbatch (docs/slurm-backend.md, "The submitter").
tests/t/t9014-slurm-submitter.t: $(O)/bin/tesseld $(O)/bin/tessel-shim $(O)/bin/tessel-slurm-submit
# tesseld's reader of the jobs' states (tessel-slurm-submit --read) against squeue --json.
tests/t/t9015-slurm-reader.t: $(O)/bin/tesseld $(O)/bin/tessel-shim $(O)/bin/tessel-slurm-submit
