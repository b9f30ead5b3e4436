# bench/ckpt: bench-ckpt, suspend (lock + checkpoint) and resume (restore + unlock) of a process
# holding SIZE of device memory through the driver's cuCheckpointProcess* API, against copying
# SIZE device-to-host and back with cuMemcpy on the same machine.  Links the fake driver (its
# copies run at host memcpy speed); on a GPU host run it against the real libcuda.so.1 with
# LD_LIBRARY_PATH.  Results: docs/suspend.md.  The fake is named by its path: this file is
# read before tests/fake/module.mk (FAKE_CUDA is not set yet).
BENCHES += $(O)/bench/bench-ckpt
$(O)/bench/bench-ckpt: $(O)/obj/bench/ckpt/bench_ckpt.o $(O)/tests/fake/libcuda.so.1 \
                       $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -Wl,-rpath,$(abspath $(O)/tests/fake) -o $@ $(filter %.o %.a,$^) \
	    $(O)/tests/fake/libcuda.so.1 -lpthread
