# tests/fake: TEST DOUBLES of the CUDA driver (libcuda.so.1) and NVML
# (libnvidia-ml.so.1) over host memory, for CI machines without a GPU.
# See tests/fake/README.md.  Built by `make` (part of LIBS) so that tests and
# the interposer's integration tests find them in $(O)/tests/fake:
#   FAKE_CUDA   $(O)/tests/fake/libcuda.so.1       (+ libcuda.so symlink)
#   FAKE_NVML   $(O)/tests/fake/libnvidia-ml.so.1  (+ libnvidia-ml.so symlink)
FAKE_DIR := $(O)/tests/fake
FAKE_CUDA := $(FAKE_DIR)/libcuda.so.1
FAKE_NVML := $(FAKE_DIR)/libnvidia-ml.so.1
FAKE_LIBS := $(FAKE_CUDA) $(FAKE_DIR)/libcuda.so $(FAKE_NVML) $(FAKE_DIR)/libnvidia-ml.so
LIBS += $(FAKE_LIBS)

FAKE_COMMON_OBJS := $(O)/obj/tests/fake/fake_config.o $(O)/obj/tests/fake/fake_state.o
FAKE_CUDA_OBJS := $(O)/obj/tests/fake/fake_cuda.o $(O)/obj/tests/fake/fake_mem.o \
                  $(O)/obj/tests/fake/fake_exec.o $(O)/obj/tests/fake/fake_ckpt.o \
                  $(FAKE_COMMON_OBJS)
FAKE_NVML_OBJS := $(O)/obj/tests/fake/fake_nvml.o $(FAKE_COMMON_OBJS)

$(O)/obj/tests/fake/%.o: CPPFLAGS += -Itests/fake

$(FAKE_CUDA): $(FAKE_CUDA_OBJS) $(O)/lib/libtsl-util.a tests/fake/libcuda.map
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -Wl,-soname,libcuda.so.1 \
	    -Wl,--version-script=tests/fake/libcuda.map -Wl,-z,defs -o $@ \
	    $(FAKE_CUDA_OBJS) $(O)/lib/libtsl-util.a -lpthread

$(FAKE_NVML): $(FAKE_NVML_OBJS) $(O)/lib/libtsl-util.a tests/fake/libnvidia-ml.map
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -Wl,-soname,libnvidia-ml.so.1 \
	    -Wl,--version-script=tests/fake/libnvidia-ml.map -Wl,-z,defs -o $@ \
	    $(FAKE_NVML_OBJS) $(O)/lib/libtsl-util.a -ldl -lpthread

$(FAKE_DIR)/libcuda.so: $(FAKE_CUDA)
	ln -sf libcuda.so.1 $@

$(FAKE_DIR)/libnvidia-ml.so: $(FAKE_NVML)
	ln -sf libnvidia-ml.so.1 $@

# Unit tests of the doubles.  They link the fakes by path and find them at run
# time through the rpath (absolute, so prove may run them from anywhere).
FAKE_RPATH := -Wl,-rpath,$(abspath $(FAKE_DIR))
FAKE_TESTS := $(FAKE_DIR)/test_config $(FAKE_DIR)/test_driver $(FAKE_DIR)/test_procaddr \
              $(FAKE_DIR)/test_time $(FAKE_DIR)/test_nvml $(FAKE_DIR)/test_ckpt
TESTS += $(FAKE_TESTS)

$(FAKE_DIR)/test_config: $(O)/obj/tests/fake/test/test_config.o $(FAKE_COMMON_OBJS) \
                         $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka -lpthread

$(FAKE_DIR)/test_%: $(O)/obj/tests/fake/test/test_%.o $(FAKE_CUDA) $(FAKE_NVML)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $(FAKE_RPATH) -o $@ $< $(FAKE_CUDA) $(FAKE_NVML) -lcmocka -lpthread
