# libclient: libcurl + jansson client of tesseld's JSON API (include/tessel/client.h).  Static.
# Users link $(LIBCLIENT) $(LIBCLIENT_LDLIBS) and libtsl-util.a.
LIBCLIENT_SRCS := src/common/libclient/client.c src/common/libclient/config.c \
                  src/common/libclient/paths.c
LIBCLIENT := $(O)/lib/libtsl-client.a
LIBCLIENT_LDLIBS := -lcurl -ljansson -lpthread
LIBS += $(LIBCLIENT)
$(LIBCLIENT): $(LIBCLIENT_SRCS:%.c=$(O)/obj/%.o)
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

TESTS += $(O)/tests/libclient/test_client
$(O)/tests/libclient/test_client: $(O)/obj/src/common/libclient/test/test_client.o $(LIBCLIENT) \
                                  $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBCLIENT_LDLIBS) -lcmocka
