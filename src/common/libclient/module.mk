# libclient: jansson client of tesseld's JSON API (include/tessel/client.h).  Static.
# Users link $(LIBCLIENT) $(LIBCLIENT_LDLIBS) and libtsl-util.a.  http-parser parses answers on
# its own sockets (wire.c); libcurl is loaded with dlopen only when a proxy is set, so it is not
# linked (docs/cli.md, "Performance").
LIBCLIENT_SRCS := src/common/libclient/client.c src/common/libclient/config.c \
                  src/common/libclient/paths.c src/common/libclient/wire.c
# A job's terminal (tclient_term_*): libwslay and libnettle by dlopen (term.c); its users
# link -ldl.
LIBCLIENT_SRCS += src/common/libclient/term.c
LIBCLIENT := $(O)/lib/libtsl-client.a
LIBCLIENT_LDLIBS := -lhttp_parser -ljansson -lpthread
LIBS += $(LIBCLIENT)
$(LIBCLIENT): $(LIBCLIENT_SRCS:%.c=$(O)/obj/%.o)
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

TESTS += $(O)/tests/libclient/test_client
$(O)/tests/libclient/test_client: $(O)/obj/src/common/libclient/test/test_client.o $(LIBCLIENT) \
                                  $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBCLIENT_LDLIBS) -lcmocka

# The light transport (wire.c) against scripted servers in the test itself.
TESTS += $(O)/tests/libclient/test_wire
$(O)/tests/libclient/test_wire: $(O)/obj/src/common/libclient/test/test_wire.o $(LIBCLIENT) \
                                $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBCLIENT_LDLIBS) -lcmocka
