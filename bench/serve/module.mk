# bench-serve-load: the open-loop load generator of the inference services' benchmark
# (bench/serve/run.sh, docs/serving.md "Benchmark").
BENCHES += $(O)/bench/bench-serve-load
$(O)/bench/bench-serve-load: $(O)/obj/bench/serve/load.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcurl -lm

# bench-serve-wake: what a hop of a proxied request costs on this machine before any work
# (docs/serving.md, "What a hop costs").
BENCHES += $(O)/bench/bench-serve-wake
$(O)/bench/bench-serve-wake: $(O)/obj/bench/serve/wake.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^
