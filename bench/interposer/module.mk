# bench/interposer: bench-interposer, the cost libtessel-cuda adds per call
# (alloc/free pair, launch, cuMemGetInfo) and to start-up with 300 processes
# in one slice.  Results: docs/bench-interposer.md.
BENCHES += $(O)/bench/bench-interposer
$(O)/bench/bench-interposer: $(O)/obj/bench/interposer/bench_interposer.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -ldl
