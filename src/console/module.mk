# The web console (docs/console.md).  Its sources are the static files in web/ (plain ES modules
# and CSS, loadable as they are); tesseld serves them at / (src/daemon/api/console.c), the first
# page's modules bundled by `make` (esbuild, a build tool only: the index.html rule below).
#
# `make` installs the served files (index.html, app/) into $(O)/share/tessel/web, where
# tesseld looks by default (BINDIR/../share/tessel/web; --web-root DIR overrides).  The console's
# own code has no third-party code (its charts are web/app/chart.js); its one library is
# xterm.js for the terminal page (docs/terminal.md), from npm, pinned in web/package-lock.json:
# `npm ci` in web/ (the rule of $(CONSOLE_NODE) below, run by `make` when web/node_modules is
# missing or older than the lock file) installs it, and `make` copies its three files to
# $(O)/share/tessel/web/vendor/xterm-$(XTERM_VERSION)/, served at /vendor/... by tesseld: nothing
# is fetched by a browser from elsewhere.  Without npm (or offline with an empty npm cache) the
# console is built without them and its terminal page says so; the browser tests need npm too
# (playwright-core).
CONSOLE_SRC := web/index.html $(wildcard web/app/*.*)
CONSOLE_FILES := $(CONSOLE_SRC:web/%=$(O)/share/tessel/web/%)
all: $(CONSOLE_FILES)
$(O)/share/tessel/web/%: web/%
	@mkdir -p $(dir $@)
	cp $< $@
# The served index.html loads the first page as a bundle of the same modules (app/b-main.js and
# its chunk, built by esbuild from web/app: scripts/console-bundle.sh), not as six modules; the
# modules are installed beside it as they are (above).  An explicit rule: it wins over the copy.
# It is built again when esbuild comes or goes (or changes version): $(CONSOLE_BUNDLER) holds
# which esbuild there is and changes only then.
CONSOLE_BUNDLER := $(O)/gen/console-bundler
$(CONSOLE_BUNDLER): FORCE
	@mkdir -p $(dir $@)
	@v="$$(command -v esbuild || echo none) $$(esbuild --version 2>/dev/null)"; \
	    [ "$$(cat $@ 2>/dev/null)" = "$$v" ] || echo "$$v" >$@
$(O)/share/tessel/web/index.html: web/index.html $(filter web/app/%.js,$(CONSOLE_SRC)) \
                                  scripts/console-bundle.sh $(CONSOLE_BUNDLER)
	scripts/console-bundle.sh web $(O)/share/tessel/web

CONSOLE_NODE := web/node_modules/.package-lock.json
$(CONSOLE_NODE): web/package-lock.json web/package.json
	@if command -v npm >/dev/null 2>&1; then \
	    echo "console: npm ci in web/ (xterm.js; playwright-core for the browser tests)"; \
	    (cd web && npm ci --no-audit --no-fund --loglevel=error) || \
	        echo "console: npm ci failed; the browser test will fail"; \
	else \
	    echo "console: no npm; no terminal page, and the browser test will fail (scripts/install-deps.sh)"; \
	fi

# xterm.js (the terminal page, web/app/terminal.js): its ES module, its fit add-on and its CSS,
# copied from web/node_modules after `npm ci`.  The version is the lock file's (a test, t7035,
# checks that the page imports this directory).
XTERM_VERSION := 6.0.0
XTERM_DIR := $(O)/share/tessel/web/vendor/xterm-$(XTERM_VERSION)
XTERM_FILES := $(XTERM_DIR)/xterm.mjs $(XTERM_DIR)/addon-fit.mjs $(XTERM_DIR)/xterm.css
all: $(XTERM_DIR)/.staged
$(XTERM_DIR)/.staged: $(CONSOLE_NODE)
	@mkdir -p $(XTERM_DIR)
	@if [ -f web/node_modules/@xterm/xterm/lib/xterm.mjs ] && \
	    grep -q '"version": "$(XTERM_VERSION)"' web/node_modules/@xterm/xterm/package.json; then \
	    cp web/node_modules/@xterm/xterm/lib/xterm.mjs web/node_modules/@xterm/xterm/css/xterm.css \
	       web/node_modules/@xterm/addon-fit/lib/addon-fit.mjs $(XTERM_DIR)/ && touch $@; \
	else \
	    echo "console: xterm.js $(XTERM_VERSION) is not in web/node_modules (npm ci in web/): the terminal page will say it is missing"; \
	fi

# Tests: the static files through curl; the console in Chromium (docs/console.md, Tests).
CONSOLE_TESTS := tests/t/t7000-console-static.t tests/t/t7001-console-browser.t
TESTS += $(CONSOLE_TESTS)
$(CONSOLE_TESTS): $(CONSOLE_FILES) $(O)/bin/tesseld $(O)/bin/tessel-shim
tests/t/t7000-console-static.t: $(XTERM_DIR)/.staged
tests/t/t7001-console-browser.t: $(CONSOLE_NODE) $(O)/tests/interposer/tcu-probe \
                                 $(O)/lib/libtessel-cuda.so
# The first page's bundle (scripts/console-bundle.sh): every module in it, current, loaded by the
# served page; the sources still load as modules (--web-root web).
TESTS += tests/t/t4051-console-bundle.t
tests/t/t4051-console-bundle.t: $(CONSOLE_FILES) $(CONSOLE_NODE) $(O)/bin/tesseld $(O)/bin/tessel-shim
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
# The terminal page (docs/terminal.md): a job's terminal and a shell in a job through xterm.js.
# A job's Jupyter opened from the console (docs/job-services.md).
TESTS += tests/t/t7073-console-notebook.t
tests/t/t7073-console-notebook.t: $(CONSOLE_FILES) $(CONSOLE_NODE) $(O)/bin/tesseld \
                                  $(O)/bin/tessel-shim $(O)/bin/tessel tests/lib/jobsvc.sh
TESTS += tests/t/t7035-console-terminal.t
tests/t/t7035-console-terminal.t: $(CONSOLE_FILES) $(CONSOLE_NODE) $(XTERM_DIR)/.staged \
                                  $(O)/bin/tesseld $(O)/bin/tessel-shim
# The services page (docs/serving.md).
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
