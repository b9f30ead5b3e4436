# The web console (docs/console.md).  Its sources are the static files in web/ (no build step:
# plain ES modules and CSS); tesseld serves them at / (src/daemon/api/console.c).
#
# `make` installs the served files (index.html, app/) into $(O)/share/tessel/web, where
# tesseld looks by default (BINDIR/../share/tessel/web; --web-root DIR overrides).  The console
# has no third-party code: its charts are web/app/chart.js.  Building and serving it needs
# neither npm nor the network.  npm is needed only for the browser tests (playwright-core): the
# tests' prerequisite below runs `npm ci` in web/ when web/node_modules is missing or older than
# the lock file.
CONSOLE_SRC := web/index.html $(wildcard web/app/*.*)
CONSOLE_FILES := $(CONSOLE_SRC:web/%=$(O)/share/tessel/web/%)
all: $(CONSOLE_FILES)
$(O)/share/tessel/web/%: web/%
	@mkdir -p $(dir $@)
	cp $< $@

CONSOLE_NODE := web/node_modules/.package-lock.json
$(CONSOLE_NODE): web/package-lock.json web/package.json
	@if command -v npm >/dev/null 2>&1; then \
	    echo "console: npm ci in web/ (playwright-core for the browser tests)"; \
	    (cd web && npm ci --no-audit --no-fund --loglevel=error) || \
	        echo "console: npm ci failed; the browser test will fail"; \
	else \
	    echo "console: no npm; the browser test will fail (scripts/install-deps.sh --browser)"; \
	fi

# Tests: the static files through curl; the console in Chromium (docs/console.md, Tests).
CONSOLE_TESTS := tests/t/t7000-console-static.t tests/t/t7001-console-browser.t
TESTS += $(CONSOLE_TESTS)
$(CONSOLE_TESTS): $(CONSOLE_FILES) $(O)/bin/tesseld $(O)/bin/tessel-shim
tests/t/t7001-console-browser.t: $(CONSOLE_NODE) $(O)/tests/interposer/tcu-probe \
                                 $(O)/lib/libtessel-cuda.so
# The chart module's pure parts (ticks, decimation), node's own test runner.
TESTS += tests/t/t7002-console-chart.t
tests/t/t7002-console-chart.t: $(CONSOLE_FILES)
# GET /v1/history?fields= (the columns the console asks for), over a seeded store.
TESTS += tests/t/t7003-console-history-fields.t
tests/t/t7003-console-history-fields.t: $(O)/bin/tesseld $(O)/bin/tessel-shim \
                                        $(O)/tests/daemon/tessel-hist-seed
# The project pages (docs/projects.md): a viewer's, an outsider's and an owner's view.
TESTS += tests/t/t3173-console-projects.t
tests/t/t3173-console-projects.t: $(CONSOLE_FILES) $(CONSOLE_NODE) $(O)/bin/tesseld $(O)/bin/tessel-shim
# The folder pages (docs/folders.md): the owner's uploads (drop, picker) and download, a reader's
# refused upload, an outsider.
TESTS += tests/t/t4050-console-folders.t
tests/t/t4050-console-folders.t: $(CONSOLE_FILES) $(CONSOLE_NODE) $(O)/bin/tesseld $(O)/bin/tessel-shim
TESTS += tests/t/t7056-console-services.t
tests/t/t7056-console-services.t: $(CONSOLE_FILES) $(CONSOLE_NODE) $(O)/bin/tesseld $(O)/bin/tessel-shim
# The usage history's views after a fresh load, over a store seeded by the test-only seeder.
TESTS += tests/t/t7010-console-history.t
tests/t/t7010-console-history.t: $(CONSOLE_FILES) $(CONSOLE_NODE) $(O)/bin/tesseld \
                                 $(O)/bin/tessel-shim $(O)/tests/daemon/tessel-hist-seed

# `make test` (deps) also installs Chromium, and Node.js/npm when absent.
.PHONY: console-deps
deps: console-deps
console-deps:
	@scripts/install-deps.sh --browser

# Copy the browser test's representative screenshots into docs/screenshots/ (docs/console.md
# shows them) after a run of tests/t/t7001-console-browser.t.
CONSOLE_SHOTS := signin overview newjob-error job-running jobs queues users overview-dark \
                 phone-overview phone-jobs
.PHONY: console-screenshots
console-screenshots:
	@mkdir -p docs/screenshots
	@for s in $(CONSOLE_SHOTS); do \
	    cp $(O)/screenshots/console/[0-9][0-9]-$$s.png docs/screenshots/console-$$s.png || exit 1; \
	done
	@echo "console: $(words $(CONSOLE_SHOTS)) screenshots copied to docs/screenshots/"
