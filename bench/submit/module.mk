# bench-submit: job submissions per second and latency with concurrent clients (docs/bench-submit.md).
# (Libraries named by path: bench/ is read before src/common/*.)
BENCHES += $(O)/bench/bench-submit
$(O)/bench/bench-submit: $(O)/obj/bench/submit/submit.o $(O)/lib/libtsl-client.a \
                         $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcurl -lhttp_parser -ljansson -lpthread

# bench-null-server: the machine's floor under bench-submit (BENCH_NULL=1 bench/submit/run.sh):
# tesseld's HTTP layer answering submissions with no work behind them.
BENCHES += $(O)/bench/bench-null-server
$(O)/bench/bench-null-server: $(O)/obj/bench/submit/null.o $(O)/lib/libtsl-http.a \
                              $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lmicrohttpd -ljansson -lpthread
