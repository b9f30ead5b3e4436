# tessel: the CLI (dispatcher main.c + one file per subcommand), its unit tests, the demo's
# CUDA program (examples/fill-gpu.c), and the CLI-level integration tests (tests/t/t4*-cli-*).
# (Libraries named by path: this fragment is read before src/common/*.)
TESSEL_CLI_SRCS := src/cmd/tessel/cli.c src/cmd/tessel/args.c src/cmd/tessel/fmt.c src/cmd/tessel/run.c \
                   src/cmd/tessel/ps.c src/cmd/tessel/logs.c src/cmd/tessel/kill.c \
                   src/cmd/tessel/suspend.c src/cmd/tessel/show.c \
                   src/cmd/tessel/gpus.c src/cmd/tessel/queues.c src/cmd/tessel/users.c \
                   src/cmd/tessel/tokens.c src/cmd/tessel/login.c
TESSEL_CLI_SRCS += src/cmd/tessel/nodes.c src/cmd/tessel/images.c
# Normal GPU units (docs/scheduler-queues.md): the models' speeds.
TESSEL_CLI_SRCS += src/cmd/tessel/gpumodels.c
TESSEL_CLI_SRCS += src/cmd/tessel/slurmconf.c
TESSEL_CLI_SRCS += src/cmd/tessel/projects.c
# A job's terminal (docs/terminal.md): tessel attach, tessel run -it.
TESSEL_CLI_SRCS += src/cmd/tessel/attach.c
# A job's web services (docs/job-services.md): tessel open, tessel notebook.
TESSEL_CLI_SRCS += src/cmd/tessel/open.c
TESSEL_CLI_SRCS += src/cmd/tessel/folders.c
TESSEL_CLI_SRCS += src/cmd/tessel/serve.c
TESSEL_CLI_OBJS := $(TESSEL_CLI_SRCS:%.c=$(O)/obj/%.o)
TESSEL_CLI_LIBS := $(O)/lib/libtsl-client.a $(O)/lib/libtsl-agent.a $(O)/lib/libtsl-util.a
TESSEL_CLI_LDLIBS := -lhttp_parser -ljansson -lpthread -ldl
BINS += $(O)/bin/tessel
$(O)/bin/tessel: $(O)/obj/src/cmd/tessel/main.o $(TESSEL_CLI_OBJS) $(TESSEL_CLI_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(TESSEL_CLI_LDLIBS)

# Unit tests of argument parsing, request building, exit statuses and formatting: everything
# but main.c.
TESTS += $(O)/tests/tessel/test_args
$(O)/tests/tessel/test_args: $(O)/obj/src/cmd/tessel/test/test_args.o $(TESSEL_CLI_OBJS) \
                             $(TESSEL_CLI_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(TESSEL_CLI_LDLIBS) -lcmocka

# The demo's CUDA program: dlopen()s libcuda.so.1 (real, or the fake one under tesseld
# --fake-gpus) and fills its slice.
BINS += $(O)/examples/fill-gpu
$(O)/examples/fill-gpu: $(O)/obj/examples/fill-gpu.o $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -ldl

# CLI-level integration tests: tesseld on loopback with fake GPUs, driven through `tessel`
# (tests/lib/cli.sh).  Daemon-side API tests are tests/t/t3*-daemon-*.
TESSEL_CLI_TESTS := tests/t/t4000-cli-basic.t tests/t/t4001-cli-users.t \
                    tests/t/t4002-cli-badinput.t tests/t/t4003-cli-slice.t \
                    tests/t/t4004-cli-restart.t tests/t/t4005-cli-demo.t \
                    tests/t/t4006-cli-queues.t tests/t/t4007-cli-escape.t
TESSEL_CLI_TESTS += tests/t/t4011-cli-gpu-split.t tests/t/t4012-cli-why.t
TESSEL_CLI_TESTS += tests/t/t4013-cli-env.t tests/t/t4014-cli-units.t tests/t/t4015-cli-logs-tail.t
TESSEL_CLI_TESTS += tests/t/t4020-cli-first-ten-minutes.t
TESSEL_CLI_TESTS += tests/t/t4030-cli-transports.t
TESSEL_CLI_TESTS += tests/t/t4040-cli-json-exit.t
TESSEL_CLI_TESTS += tests/t/t4041-cli-man.t tests/t/t4042-cli-completion.t
TESTS += $(TESSEL_CLI_TESTS)
$(TESSEL_CLI_TESTS): $(O)/bin/tessel $(O)/bin/tesseld
tests/t/t4003-cli-slice.t tests/t/t4005-cli-demo.t: $(O)/examples/fill-gpu $(O)/lib/libtessel-cuda.so
