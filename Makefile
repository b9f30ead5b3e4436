# Tessel - top-level build.
#
#   make                 build everything into build/
#   make test            install missing Debian packages, then run the whole
#                        suite twice: optimised, and under ASan + UBSan
#   make test-one        run the suite once, in this configuration only
#   make SANITIZE=1 ...  build into build/san with -fsanitize=address,undefined
#   make bench           build the benchmarks (bench/*)
#   make demo            the README's main job
#   make format          clang-format every C source in place
#
# Each component has a module.mk beside its sources that appends to
#   BINS     programs that land in $(O)/bin
#   LIBS     libraries that land in $(O)/lib
#   TESTS    test programs / TAP scripts, run by tests/run (prove)
#   BENCHES  benchmark programs that land in $(O)/bench
# and declares its own link rules.  Objects come from the one pattern rule
# below: $(O)/obj/<path>.o from <path>.c.

SANITIZE ?= 0
ifeq ($(SANITIZE),1)
O ?= build/san
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all \
            -fno-omit-frame-pointer
else
O ?= build
SANFLAGS :=
endif

CC      ?= cc
AR      ?= ar
WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
           -Wmissing-prototypes -Wno-unused-parameter
CFLAGS  ?= -O2 -g
CPPFLAGS += -D_GNU_SOURCE -Iinclude -Isrc/common -Isrc
ALL_CFLAGS = -std=c11 $(WARN) $(CFLAGS) $(SANFLAGS) -fPIC -MMD -MP
LDFLAGS += $(SANFLAGS)

BINS    :=
LIBS    :=
TESTS   :=
BENCHES :=

.PHONY: all test test-one bench demo format clean deps list-tests
all:

MODULES := $(sort $(wildcard src/common/*/module.mk src/*/module.mk \
                             src/*/*/module.mk tests/*/module.mk \
                             bench/module.mk contrib/module.mk))
include $(MODULES)

all: $(LIBS) $(BINS)

$(O)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -c -o $@ $<

-include $(shell find $(O)/obj -name '*.d' 2>/dev/null)

deps:
	@scripts/install-deps.sh

test: deps
	$(MAKE) --no-print-directory test-one
	$(MAKE) --no-print-directory SANITIZE=1 test-one

test-one: all $(TESTS)
	@TESSEL_BUILD=$(O) TESSEL_SANITIZE=$(SANITIZE) tests/run $(TESTS)

# Every test the suite runs, one a line (t0013: no tests/t/*.t is left out of it).
list-tests:
	@printf '%s\n' $(TESTS)

bench: all $(BENCHES)

demo: deps all
	@scripts/demo.sh $(O)

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf build

# ---- -O0 build and line coverage -------------------------------------------------------------
#   make noopt           build everything (programs, tests, benchmarks) at -O0 with -Werror into
#                        build/noopt: warnings that only show without optimisation, or only with it
#   make coverage        build with --coverage into build/cov, run the suite against it, print line
#                        coverage per directory and in total (tests/lib/coverage-summary), HTML in
#                        build/cov/html; fails when a test fails, after the report
# Both are separate build directories: a plain `make` and `make SANITIZE=1` are not touched.
.PHONY: build-all noopt coverage
build-all: all $(TESTS) $(BENCHES)

NOOPT_O := build/noopt
noopt:
	$(MAKE) --no-print-directory O=$(NOOPT_O) CFLAGS='-O0 -g' build-all

COV_O := build/cov
COV_MAKE = $(MAKE) --no-print-directory O=$(COV_O) CFLAGS='-O0 -g --coverage' \
           LDFLAGS='--coverage'
coverage:
	@command -v lcov >/dev/null && command -v genhtml >/dev/null || \
	    { echo "make coverage: lcov is needed (scripts/install-deps.sh)" >&2; exit 1; }
	$(COV_MAKE) build-all
	@find $(COV_O) -name '*.gcda' -delete
	@# Processes the tests run as other users (nobody) write their counts too.
	@chmod -R a+rwX $(COV_O)/obj
	@# -O0 with counters is slower: each test gets 900 s unless TEST_TIMEOUT says otherwise.
	@umask 000; TESSEL_COVERAGE=1 TEST_TIMEOUT=$${TEST_TIMEOUT:-900} $(COV_MAKE) test-one; echo $$? >$(COV_O)/tests.status
	@lcov --quiet --capture --directory $(COV_O)/obj --base-directory . \
	    --output-file $(COV_O)/all.info
	@# The product's code only: src/, less the unit tests under src/**/test/.
	@lcov --quiet --extract $(COV_O)/all.info '$(CURDIR)/src/*' \
	    --output-file $(COV_O)/src-all.info
	@lcov --quiet --remove $(COV_O)/src-all.info '*/test/*' --output-file $(COV_O)/src.info
	@genhtml --quiet --output-directory $(COV_O)/html $(COV_O)/src.info
	@tests/lib/coverage-summary $(CURDIR)/ <$(COV_O)/src.info
	@echo "HTML: $(COV_O)/html/index.html"
	@st=$$(cat $(COV_O)/tests.status); [ "$$st" = 0 ] || \
	    { echo "make coverage: the suite failed (status $$st)" >&2; exit 1; }

# ---- man pages -------------------------------------------------------------------------------
#   make man             tessel(1), tesseld(8), libtessel-cuda(7), tessel-node-exporter(8) from
#                        docs/man/*.md into
#                        $(O)/man with go-md2man (Debian: go-md2man); `man -l build/man/tessel.1`
.PHONY: man
MANPAGES := $(O)/man/tessel.1 $(O)/man/tesseld.8 $(O)/man/libtessel-cuda.7 \
            $(O)/man/tessel-node-exporter.8
man: $(MANPAGES)
$(O)/man/%: docs/man/%.md
	@mkdir -p $(dir $@)
	go-md2man -in $< -out $@
# The man pages' test reads them (the test itself is registered in src/cmd/tessel/module.mk).
tests/t/t4041-cli-man.t: $(MANPAGES)
# ---- make install / make uninstall (docs/install.md) ------------------------------------------
#   make install [PREFIX=/usr/local] [DESTDIR=] [BINDIR= SBINDIR= LIBDIR= LIBEXECDIR= DATADIR=
#                SYSCONFDIR= MANDIR= UNITDIR= TMPFILESDIR= BASHCOMPDIR= ZSHCOMPDIR=]
#   make uninstall       the same variables: removes what install installed (not the data)
# The paths are compiled into tesseld ($(O)/gen/tessel-paths.h, rewritten only when a path
# changes), so give the same variables to `make` and `make install`: an installed tesseld finds
# tessel-shim, libtessel-cuda.so, the fake GPU libraries and the console there, never through
# anything a user controls.  A tesseld run from the build tree finds them beside itself.
PREFIX      ?= /usr/local
EXEC_PREFIX ?= $(PREFIX)
BINDIR      ?= $(EXEC_PREFIX)/bin
SBINDIR     ?= $(EXEC_PREFIX)/sbin
LIBDIR      ?= $(EXEC_PREFIX)/lib
LIBEXECDIR  ?= $(EXEC_PREFIX)/libexec
DATAROOTDIR ?= $(PREFIX)/share
DATADIR     ?= $(DATAROOTDIR)
MANDIR      ?= $(DATAROOTDIR)/man
SYSCONFDIR  ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
UNITDIR     ?= $(PREFIX)/lib/systemd/system
TMPFILESDIR ?= $(PREFIX)/lib/tmpfiles.d
BASHCOMPDIR ?= $(DATAROOTDIR)/bash-completion/completions
ZSHCOMPDIR  ?= $(DATAROOTDIR)/zsh/vendor-completions
PKGLIBDIR   := $(LIBDIR)/tessel
PKGLIBEXECDIR := $(LIBEXECDIR)/tessel
WEBDIR      := $(DATADIR)/tessel/web
INSTALL     ?= install

.PHONY: install uninstall FORCE
$(O)/gen/tessel-paths.h: FORCE
	@mkdir -p $(dir $@)
	@{ echo '/* Generated by the Makefile (make install): the install layout tesseld was built for. */'; \
	  echo '#define TESSEL_INST_SBINDIR "$(SBINDIR)"'; \
	  echo '#define TESSEL_INST_SHIM "$(PKGLIBEXECDIR)/tessel-shim"'; \
	  echo '#define TESSEL_INST_SLURM_SUBMIT "$(PKGLIBEXECDIR)/tessel-slurm-submit"'; \
	  echo '#define TESSEL_INST_INTERPOSER "$(PKGLIBDIR)/libtessel-cuda.so"'; \
	  echo '#define TESSEL_INST_FAKE_LIB_DIR "$(PKGLIBDIR)/fake"'; \
	  echo '#define TESSEL_INST_WEB_ROOT "$(WEBDIR)"'; } >$@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi
$(O)/obj/src/daemon/main.o: $(O)/gen/tessel-paths.h
$(O)/obj/src/daemon/main.o: CPPFLAGS += -I$(O)/gen

# The unit's ExecStart names the installed tesseld.
$(O)/gen/tesseld.service: contrib/systemd/tesseld.service.in FORCE
	@mkdir -p $(dir $@)
	@sed -e 's|@SBINDIR@|$(SBINDIR)|g' contrib/systemd/tesseld.service.in >$@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi

# Man pages (`make man`, into $(O)/man) and shell completions (contrib/completion).
INST_MAN = $(MANPAGES)
INST_FAKE = $(FAKE_CUDA) $(FAKE_NVML)
install: all man $(O)/gen/tesseld.service
	$(INSTALL) -d -m 0755 $(DESTDIR)$(BINDIR) $(DESTDIR)$(SBINDIR) $(DESTDIR)$(PKGLIBEXECDIR) \
	    $(DESTDIR)$(PKGLIBDIR)/fake $(DESTDIR)$(WEBDIR) $(DESTDIR)$(SYSCONFDIR)/tessel \
	    $(DESTDIR)$(UNITDIR) $(DESTDIR)$(TMPFILESDIR)
	$(INSTALL) -m 0755 $(O)/bin/tessel $(DESTDIR)$(BINDIR)/tessel
	$(INSTALL) -m 0755 $(O)/bin/tesseld $(DESTDIR)$(SBINDIR)/tesseld
	$(INSTALL) -m 0755 $(O)/bin/tessel-node-exporter $(DESTDIR)$(SBINDIR)/tessel-node-exporter
	$(INSTALL) -m 0755 $(O)/bin/tessel-shim $(DESTDIR)$(PKGLIBEXECDIR)/tessel-shim
	$(INSTALL) -m 0711 $(O)/bin/tessel-slurm-submit $(DESTDIR)$(PKGLIBEXECDIR)/tessel-slurm-submit
	$(INSTALL) -m 0644 $(O)/lib/libtessel-cuda.so $(DESTDIR)$(PKGLIBDIR)/libtessel-cuda.so
	$(INSTALL) -m 0644 $(INST_FAKE) $(DESTDIR)$(PKGLIBDIR)/fake/
	cd $(O)/share/tessel/web && find . -type f | while read -r f; do \
	    $(INSTALL) -D -m 0644 "$$f" "$(DESTDIR)$(WEBDIR)/$$f" || exit 1; done
	$(INSTALL) -m 0644 $(O)/gen/tesseld.service $(DESTDIR)$(UNITDIR)/tesseld.service
	$(INSTALL) -m 0644 contrib/systemd/tessel.tmpfiles $(DESTDIR)$(TMPFILESDIR)/tessel.conf
	@# The configuration is the admin's once installed: never overwritten.
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/tessel/tesseld.conf ]; then \
	    echo "install: $(DESTDIR)$(SYSCONFDIR)/tessel/tesseld.conf exists, kept"; \
	else $(INSTALL) -m 0644 etc/tesseld.conf $(DESTDIR)$(SYSCONFDIR)/tessel/tesseld.conf; fi
	@for m in $(INST_MAN); do s=$${m##*.}; \
	    $(INSTALL) -D -m 0644 $$m $(DESTDIR)$(MANDIR)/man$$s/$${m##*/} || exit 1; done
	@if [ -f contrib/completion/tessel.bash ]; then \
	    $(INSTALL) -D -m 0644 contrib/completion/tessel.bash $(DESTDIR)$(BASHCOMPDIR)/tessel; fi
	@if [ -f contrib/completion/_tessel ]; then \
	    $(INSTALL) -D -m 0644 contrib/completion/_tessel $(DESTDIR)$(ZSHCOMPDIR)/_tessel; fi

# The configuration is removed only when it is still the one installed (dpkg keeps conffiles).
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/tessel $(DESTDIR)$(SBINDIR)/tesseld \
	    $(DESTDIR)$(SBINDIR)/tessel-node-exporter \
	    $(DESTDIR)$(PKGLIBEXECDIR)/tessel-shim $(DESTDIR)$(PKGLIBEXECDIR)/tessel-slurm-submit \
	    $(DESTDIR)$(PKGLIBDIR)/libtessel-cuda.so \
	    $(DESTDIR)$(PKGLIBDIR)/fake/libcuda.so.1 $(DESTDIR)$(PKGLIBDIR)/fake/libnvidia-ml.so.1 \
	    $(DESTDIR)$(UNITDIR)/tesseld.service $(DESTDIR)$(TMPFILESDIR)/tessel.conf \
	    $(DESTDIR)$(BASHCOMPDIR)/tessel $(DESTDIR)$(ZSHCOMPDIR)/_tessel \
	    $(DESTDIR)$(MANDIR)/man1/tessel.1 $(DESTDIR)$(MANDIR)/man8/tesseld.8 \
	    $(DESTDIR)$(MANDIR)/man7/libtessel-cuda.7 $(DESTDIR)$(MANDIR)/man8/tessel-node-exporter.8 \
	    $(foreach m,$(INST_MAN),$(DESTDIR)$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(notdir $(m)))
	rm -rf $(DESTDIR)$(WEBDIR)
	rmdir $(DESTDIR)$(PKGLIBDIR)/fake $(DESTDIR)$(PKGLIBDIR) $(DESTDIR)$(PKGLIBEXECDIR) \
	    $(DESTDIR)$(DATADIR)/tessel 2>/dev/null || true
	@if cmp -s etc/tesseld.conf $(DESTDIR)$(SYSCONFDIR)/tessel/tesseld.conf; then \
	    rm -f $(DESTDIR)$(SYSCONFDIR)/tessel/tesseld.conf; \
	    rmdir $(DESTDIR)$(SYSCONFDIR)/tessel 2>/dev/null || true; \
	elif [ -e $(DESTDIR)$(SYSCONFDIR)/tessel/tesseld.conf ]; then \
	    echo "uninstall: $(DESTDIR)$(SYSCONFDIR)/tessel/tesseld.conf was changed, kept"; fi
