# libnodefig: one node's GPU figures as JSON and Prometheus text (tessel-node-exporter writes
# them, tesseld --slurm reads them back).  Static.
LIBNODEFIG_SRCS := src/common/libnodefig/nodefig.c
LIBNODEFIG := $(O)/lib/libtsl-nodefig.a
LIBS += $(LIBNODEFIG)
$(LIBNODEFIG): $(LIBNODEFIG_SRCS:%.c=$(O)/obj/%.o)
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

TESTS += $(O)/tests/libnodefig/test_nodefig
$(O)/tests/libnodefig/test_nodefig: $(O)/obj/src/common/libnodefig/test/test_nodefig.o \
                                    $(LIBNODEFIG) $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -ljansson -lcmocka
