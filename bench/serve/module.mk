# bench-serve-load: the open-loop load generator of the inference services' benchmark
# (bench/serve/run.sh, docs/serving.md "Benchmark").
BENCHES += $(O)/bench/bench-serve-load
$(O)/bench/bench-serve-load: $(O)/obj/bench/serve/load.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcurl -lm
