# bench-slowloris: other clients' answers while one client holds many slow connections
# (docs/bench-slowloris.md).  Also used by tests/t/t3014-daemon-slowloris.t, so it is built
# with the tests.
BENCHES += $(O)/bench/bench-slowloris
$(O)/bench/bench-slowloris: $(O)/obj/bench/slowloris/slowloris.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcurl -lpthread
