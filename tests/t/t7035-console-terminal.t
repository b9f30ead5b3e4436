#!/bin/sh
# t7035-console-terminal.t - the console's terminal page in a real browser (Debian's Chromium,
# playwright-core: web/test/terminal.mjs; docs/terminal.md, "From a browser"): nobody opens
# the terminal of a job started with one from its page, types a command and sees its output,
# resizes the window (the job's `stty size` follows), sees the job's end said; opens a new shell
# in a job without a terminal (exec), sees its end, opens another; then tesseld stops and the
# page says the connection dropped.  xterm.js comes from tesseld (/vendor/xterm-6.0.0/), and
# nothing from elsewhere.  Screenshot: $TESSEL_BUILD/screenshots/terminal/console-terminal.png
# (docs/screenshots/, docs/console.md).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
. "$TESSEL_SRCDIR/tests/lib/term.sh"
CHROMIUM=${TESSEL_CHROMIUM:-/usr/bin/chromium}
WEBSRC=$TESSEL_SRCDIR/web
[ -x "$CHROMIUM" ] || missing "no Chromium at $CHROMIUM (scripts/install-deps.sh --browser)"
command -v node >/dev/null || missing "no node (scripts/install-deps.sh)"
[ -f "$WEBSRC/node_modules/playwright-core/package.json" ] ||
    missing "web/node_modules is missing: (cd web && npm ci) (make does it when npm is present)"
[ -f "$TESSEL_BUILD/share/tessel/web/app/terminal.js" ] || missing "console not installed (run make)"
[ -f "$TESSEL_BUILD/share/tessel/web/vendor/xterm-6.0.0/xterm.mjs" ] ||
    missing "xterm.js not staged in $TESSEL_BUILD/share/tessel/web/vendor (npm ci in web/, then make)"
term_daemon

A=$(nbjob "{\"argv\":[\"/bin/sh\"],\"tty\":true,\"cwd\":\"$W\"}")
B=$(nbjob "{\"argv\":[\"sleep\",\"300\"],\"cwd\":\"$W\"}")
wait_for '[ "$(api GET /v1/jobs/$A "" "$NB"; jget .state)" = running ]'
wait_for '[ "$(api GET /v1/jobs/$B "" "$NB"; jget .state)" = running ]'
is "$(jget .state)" running "nobody's jobs $A (a terminal) and $B (none) run"

SHOTS=$TESSEL_BUILD/screenshots/terminal
rm -rf "$SHOTS"
TESSEL_URL=$TD_URL TD_PID=$TD_PID TOKEN=$NB TTYJOB=$A SHJOB=$B SHOTS=$SHOTS \
    CHROMIUM=$CHROMIUM HOME=$TD timeout 300 node "$WEBSRC/test/terminal.mjs" >"$TD/browser.out" 2>&1
st=$?
while IFS= read -r line; do
    case $line in
    "PASS "*) ok 0 "${line#PASS }" ;;
    "FAIL "*) ok 1 "${line#FAIL }" ;;
    *) diag "$line" ;;
    esac
done <"$TD/browser.out"
is "$st" "0" "the browser session ran to its end"
[ -s "$SHOTS/console-terminal.png" ]
ok $? "screenshot saved: $SHOTS/console-terminal.png"
td_stop
ok $? "tesseld stopped cleanly (the browser test sent SIGTERM; no sanitizer report)"
done_testing
