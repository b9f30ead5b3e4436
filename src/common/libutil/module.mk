# libutil: error text, size parsing, batch options (time, dependencies, arrays).  Static; linked by everything.
LIBUTIL_SRCS := src/common/libutil/error.c src/common/libutil/size.c \
	src/common/libutil/batchspec.c
LIBUTIL := $(O)/lib/libtsl-util.a
LIBS += $(LIBUTIL)
$(LIBUTIL): $(LIBUTIL_SRCS:%.c=$(O)/obj/%.o)
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

TESTS += $(O)/tests/libutil/test_size
$(O)/tests/libutil/test_size: $(O)/obj/src/common/libutil/test/test_size.o $(LIBUTIL)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka

TESTS += $(O)/tests/libutil/test_batchspec
$(O)/tests/libutil/test_batchspec: $(O)/obj/src/common/libutil/test/test_batchspec.o $(LIBUTIL)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka
