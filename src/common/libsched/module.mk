# libsched: the pure scheduling core (cluster model, placement policies).
# Every .c beside this file is part of the library (placement, queues, ...).
LIBSCHED_SRCS := $(sort $(wildcard src/common/libsched/*.c))
LIBSCHED := $(O)/lib/libtsl-sched.a
LIBS += $(LIBSCHED)
$(LIBSCHED): $(LIBSCHED_SRCS:%.c=$(O)/obj/%.o)
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

# Every test/*.c is one cmocka program.  libutil by path: its module.mk is
# read after this one (src/common/libsched < src/common/libutil).
TESTS += $(patsubst src/common/libsched/test/%.c,$(O)/tests/libsched/%,\
                   $(sort $(wildcard src/common/libsched/test/*.c)))
$(O)/tests/libsched/%: $(O)/obj/src/common/libsched/test/%.o $(LIBSCHED) $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka -lm
