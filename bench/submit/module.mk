# bench-submit: job submissions per second and latency with concurrent clients (docs/bench-submit.md).
# (Libraries named by path: bench/ is read before src/common/*.)
BENCHES += $(O)/bench/bench-submit
$(O)/bench/bench-submit: $(O)/obj/bench/submit/submit.o $(O)/lib/libtsl-client.a \
                         $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcurl -lhttp_parser -ljansson -lpthread
