# libtessel-cuda.so: the LD_PRELOAD interposer of the CUDA driver API and NVML.
# Built optimised (-O2 from CFLAGS) with hidden symbols; the version script
# exports exactly the hooked entry points.  libshm and libutil are linked in
# statically so the library depends on nothing but libc (and libdl/pthread).
INTERPOSER_SRCS := src/interposer/interposer.c src/interposer/alloc_table.c src/interposer/compute.c \
                   src/interposer/symbols.c \
                   $(wildcard src/interposer/hooks/*.c) src/interposer/policy/policy.c
INTERPOSER_OBJS := $(INTERPOSER_SRCS:%.c=$(O)/obj/%.o)
INTERPOSER := $(O)/lib/libtessel-cuda.so
INTERPOSER_MAP := src/interposer/libtessel-cuda.map
LIBS += $(INTERPOSER)

$(O)/obj/src/interposer/%.o: CFLAGS += -fvisibility=hidden

$(INTERPOSER): $(INTERPOSER_OBJS) $(O)/lib/libtsl-shm.a $(O)/lib/libtsl-util.a $(INTERPOSER_MAP)
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -Wl,--version-script=$(INTERPOSER_MAP) -Wl,-Bsymbolic \
	    -Wl,-z,now -Wl,-z,defs -o $@ $(INTERPOSER_OBJS) \
	    $(O)/lib/libtsl-shm.a $(O)/lib/libtsl-util.a -ldl -lpthread

TESTS += $(O)/tests/interposer/test_policy
$(O)/tests/interposer/test_policy: $(O)/obj/src/interposer/policy/test/test_policy.o \
                                   $(O)/obj/src/interposer/policy/policy.o $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka

