# libutil: error text, size, duration, time and environment parsing, /proc/PID/stat.  Static;
# linked by everything.
LIBUTIL_SRCS := src/common/libutil/error.c src/common/libutil/size.c src/common/libutil/procstat.c
LIBUTIL_SRCS += src/common/libutil/duration.c src/common/libutil/jobenv.c src/common/libutil/when.c
LIBUTIL_SRCS += src/common/libutil/batchspec.c
LIBUTIL_SRCS += src/common/libutil/prom.c src/common/libutil/nomount.c
# UTF-8 as jansson checks it (utf8.h).
LIBUTIL_SRCS += src/common/libutil/utf8.c
# A job's terminal (term.h).
LIBUTIL_SRCS += src/common/libutil/term.c
# The account at the other end of a loopback TCP connection (sockowner.h).
LIBUTIL_SRCS += src/common/libutil/sockowner.c
LIBUTIL := $(O)/lib/libtsl-util.a
LIBS += $(LIBUTIL)
$(LIBUTIL): $(LIBUTIL_SRCS:%.c=$(O)/obj/%.o)
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^
# The WebSocket handshake's accept value (wsaccept.c, term.h) in an archive of its own: it needs
# nettle's headers to build and -lnettle to link, which only tesseld takes; libtsl-util (and
# with it libtessel-cuda and the tools of tests/gpu) builds without nettle-dev on a GPU host.
LIBWS := $(O)/lib/libtsl-ws.a
LIBS += $(LIBWS)
$(LIBWS): $(O)/obj/src/common/libutil/wsaccept.o
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

TESTS += $(O)/tests/libutil/test_size
$(O)/tests/libutil/test_size: $(O)/obj/src/common/libutil/test/test_size.o $(LIBUTIL)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka
TESTS += $(O)/tests/libutil/test_utf8
$(O)/tests/libutil/test_utf8: $(O)/obj/src/common/libutil/test/test_utf8.o $(LIBUTIL)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -ljansson -lcmocka
TESTS += $(O)/tests/libutil/test_procstat
$(O)/tests/libutil/test_procstat: $(O)/obj/src/common/libutil/test/test_procstat.o $(LIBUTIL)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka

TESTS += $(O)/tests/libutil/test_duration
$(O)/tests/libutil/test_duration: $(O)/obj/src/common/libutil/test/test_duration.o $(LIBUTIL)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka

TESTS += $(O)/tests/libutil/test_jobenv
$(O)/tests/libutil/test_jobenv: $(O)/obj/src/common/libutil/test/test_jobenv.o $(LIBUTIL)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka

TESTS += $(O)/tests/libutil/test_when
$(O)/tests/libutil/test_when: $(O)/obj/src/common/libutil/test/test_when.o $(LIBUTIL)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka

TESTS += $(O)/tests/libutil/test_batchspec
$(O)/tests/libutil/test_batchspec: $(O)/obj/src/common/libutil/test/test_batchspec.o $(LIBUTIL)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka

TESTS += $(O)/tests/libutil/test_prom
$(O)/tests/libutil/test_prom: $(O)/obj/src/common/libutil/test/test_prom.o $(LIBUTIL)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka

TESTS += $(O)/tests/libutil/test_nomount
$(O)/tests/libutil/test_nomount: $(O)/obj/src/common/libutil/test/test_nomount.o $(LIBUTIL)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka

TESTS += $(O)/tests/libutil/test_term
$(O)/tests/libutil/test_term: $(O)/obj/src/common/libutil/test/test_term.o $(LIBWS) $(LIBUTIL)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lnettle -lcmocka

TESTS += $(O)/tests/libutil/test_sockowner
$(O)/tests/libutil/test_sockowner: $(O)/obj/src/common/libutil/test/test_sockowner.o $(LIBUTIL)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka
