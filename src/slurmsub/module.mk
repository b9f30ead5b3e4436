# slurmsub: tessel-slurm-submit, an account's long-lived Slurm submitter for tesseld --slurm
# (docs/slurm-backend.md, "The submitter"), linked with the installed libslurm (Slurm 22.05's
# libslurm38: the ABI it was built against).  subproto.c (the frames) is tesseld's too.
SLURMSUB_SRCS := src/slurmsub/main.c src/slurmsub/fill.c src/slurmsub/read.c src/slurmsub/subproto.c \
                 src/slurm/slurm_logic.c
# 0711 (as installed, and in debian/rules): the account that runs it cannot read it, so the
# kernel makes it not dumpable from its execve on, before its own prctl (docs/security.md,
# review of the submitter 2026-11-28, L1).
BINS += $(O)/bin/tessel-slurm-submit
$(O)/bin/tessel-slurm-submit: $(SLURMSUB_SRCS:%.c=$(O)/obj/%.o) $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -ljansson -lslurm
	chmod 0711 $@

TESTS += $(O)/tests/slurmsub/test_fill
$(O)/tests/slurmsub/test_fill: $(O)/obj/src/slurmsub/test/test_fill.o $(O)/obj/src/slurmsub/fill.o \
                               $(O)/obj/src/slurmsub/subproto.o $(O)/obj/src/slurm/slurm_logic.o \
                               $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -ljansson -lslurm -lcmocka

# read.c: the reader's request and answer (tessel-slurm-submit --read), without a cluster.
TESTS += $(O)/tests/slurmsub/test_read
$(O)/tests/slurmsub/test_read: $(O)/obj/src/slurmsub/test/test_read.o $(O)/obj/src/slurmsub/read.o \
                               $(O)/obj/src/slurmsub/subproto.o $(O)/lib/libtsl-util.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -ljansson -lslurm -lcmocka
