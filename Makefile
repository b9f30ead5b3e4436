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

.PHONY: all test test-one bench demo format clean deps
all:

MODULES := $(sort $(wildcard src/common/*/module.mk src/*/module.mk \
                             src/*/*/module.mk tests/*/module.mk \
                             bench/module.mk))
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
#   make man             tessel(1), tesseld(8), libtessel-cuda(7) from docs/man/*.md into
#                        $(O)/man with go-md2man (Debian: go-md2man); `man -l build/man/tessel.1`
.PHONY: man
MANPAGES := $(O)/man/tessel.1 $(O)/man/tesseld.8 $(O)/man/libtessel-cuda.7
man: $(MANPAGES)
$(O)/man/%: docs/man/%.md
	@mkdir -p $(dir $@)
	go-md2man -in $< -out $@
# The man pages' test reads them (the test itself is registered in src/cmd/tessel/module.mk).
tests/t/t4041-cli-man.t: $(MANPAGES)
