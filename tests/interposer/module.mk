# Helper programs of the interposer tests (tests/t/t05*-interposer-*.t):
# tcu-probe drives the driver API step by step; tcu-plugin.so dlopens
# libcuda privately; tcu-replay replays cudart13_requests.tsv.
TCU_TEST_DIR := $(O)/tests/interposer
TCU_HELPERS := $(TCU_TEST_DIR)/tcu-probe $(TCU_TEST_DIR)/tcu-plugin.so $(TCU_TEST_DIR)/tcu-replay \
               $(TCU_TEST_DIR)/tcu-slice $(TCU_TEST_DIR)/tcu-load $(TCU_TEST_DIR)/tcu-raw

$(TCU_TEST_DIR)/tcu-raw: $(O)/obj/tests/interposer/raw.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -ldl

$(TCU_TEST_DIR)/tcu-load: $(O)/obj/tests/interposer/load.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -ldl -lpthread

$(TCU_TEST_DIR)/tcu-probe: $(O)/obj/tests/interposer/probe.o $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -ldl -lpthread

$(TCU_TEST_DIR)/tcu-plugin.so: $(O)/obj/tests/interposer/plugin.o
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -o $@ $^ -ldl

$(TCU_TEST_DIR)/tcu-replay: $(O)/obj/tests/interposer/replay.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -ldl

$(TCU_TEST_DIR)/tcu-slice: $(O)/obj/tests/interposer/slice.o $(O)/lib/libtsl-shm.a \
                          $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lpthread

TCU_SHELL_TESTS := $(sort $(wildcard tests/t/t05*-interposer-*.t)) tests/t/t3141-interposer-load.t
TESTS += $(TCU_SHELL_TESTS)
$(TCU_SHELL_TESTS): $(TCU_HELPERS) $(INTERPOSER)
