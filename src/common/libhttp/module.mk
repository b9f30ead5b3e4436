# libhttp: libmicrohttpd + jansson glue for tesseld's JSON API.  Static.
LIBHTTP_SRCS := src/common/libhttp/http.c
LIBHTTP := $(O)/lib/libtsl-http.a
LIBHTTP_LDLIBS := -lmicrohttpd -ljansson -lpthread
LIBS += $(LIBHTTP)
$(LIBHTTP): $(LIBHTTP_SRCS:%.c=$(O)/obj/%.o)
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

TESTS += $(O)/tests/libhttp/test_http
$(O)/tests/libhttp/test_http: $(O)/obj/src/common/libhttp/test/test_http.o $(LIBHTTP) \
                              $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBHTTP_LDLIBS) -lcurl -lcmocka
