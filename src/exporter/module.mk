# tessel-node-exporter: a Slurm node's GPUs and its jobs' GPU slices over HTTP, for tesseld
# --slurm and Prometheus (docs/slurm-backend.md, "The cluster's GPUs").  Run on each node.
TESSEL_EXPORTER_SRCS := src/exporter/exporter.c src/exporter/sample.c src/slurm/slurm_logic.c
BINS += $(O)/bin/tessel-node-exporter
$(O)/bin/tessel-node-exporter: $(TESSEL_EXPORTER_SRCS:%.c=$(O)/obj/%.o) $(O)/lib/libtsl-nodefig.a \
                               $(O)/lib/libtsl-http.a $(O)/lib/libtsl-agent.a \
                               $(O)/lib/libtsl-shm.a $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lmicrohttpd -ljansson -ldl -lpthread

# The exporter's reading of the slices (root: the plugin's directories, a mount).
TESTS += $(O)/tests/exporter/test_sample
$(O)/tests/exporter/test_sample: $(O)/obj/src/exporter/test/test_sample.o \
                                 $(O)/obj/src/exporter/sample.o $(O)/obj/src/slurm/slurm_logic.o \
                                 $(O)/lib/libtsl-nodefig.a $(O)/lib/libtsl-agent.a \
                                 $(O)/lib/libtsl-shm.a $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -ljansson -ldl -lpthread -lcmocka
