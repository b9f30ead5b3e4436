# libshm: the versioned slice accounting file (interposer <-> tesseld).
# Static and position-independent: libtessel-cuda.so links it in with hidden
# symbols.
LIBSHM_SRCS := src/common/libshm/shm.c
LIBSHM := $(O)/lib/libtsl-shm.a
LIBS += $(LIBSHM)
$(LIBSHM): $(LIBSHM_SRCS:%.c=$(O)/obj/%.o)
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

TESTS += $(O)/tests/libshm/test_shm
$(O)/tests/libshm/test_shm: $(O)/obj/src/common/libshm/test/test_shm.o $(LIBSHM) $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka -lpthread
