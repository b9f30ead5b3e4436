# bench/interposer: bench-interposer, the cost libtessel-cuda adds per call
# (alloc/free pair, launch, cuMemGetInfo) and to start-up with 300 processes
# in one slice.  Results: docs/bench-interposer.md.
BENCHES += $(O)/bench/bench-interposer
$(O)/bench/bench-interposer: $(O)/obj/bench/interposer/bench_interposer.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -ldl

# The do-nothing driver that isolates the interposer's own cost per call.
BENCHES += $(O)/bench/nulldrv/libcuda.so.1
$(O)/bench/nulldrv/libcuda.so.1: $(O)/obj/bench/interposer/nulldrv.o
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -Wl,-soname,libcuda.so.1 -o $@ $^
$(O)/bench/bench-interposer: | $(O)/bench/nulldrv/libcuda.so.1
