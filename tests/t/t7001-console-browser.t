#!/bin/sh
# t7001-console-browser.t - the web console in a real browser: Debian's Chromium (headless)
# driven by playwright-core (web/test/browser.mjs) against tesseld with two fake GPUs.
# Sign in, the overview's GPU bars and slices, a job submitted through the form (the API's
# validation errors beside the fields), watched running with its log streaming, cancelled; the
# job list's filters; an admin edits a queue's quota; users and tokens; dark scheme; 375 px;
# sign-out and a user's restricted view.  Screenshots of each page go to
# $TESSEL_BUILD/screenshots/console/ (docs/console.md).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
CHROMIUM=${TESSEL_CHROMIUM:-/usr/bin/chromium}
WEBSRC=$TESSEL_SRCDIR/web
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
[ -x "$CHROMIUM" ] || missing "no Chromium at $CHROMIUM (scripts/install-deps.sh --browser)"
command -v node >/dev/null || missing "no node (scripts/install-deps.sh --browser)"
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 18 ] || missing "node $major is too old for playwright-core (18 or later)"
[ -f "$WEBSRC/node_modules/playwright-core/package.json" ] ||
    missing "web/node_modules is missing: (cd web && npm ci) (make does it when npm is present)"
[ -f "$TESSEL_BUILD/share/tessel/web/index.html" ] || missing "console not installed (run make)"

td_setup
# Its API-only users (no system account) submit jobs: as root they would be refused by default
# (t3006 checks that); this test is about the API, so it allows them to run as root.
td_start --fake-gpus 2xRTX4090:24G --no-cgroups --allow-root-jobs || { ok 1 "tesseld starts"; done_testing; exit 1; }
SHOTS=$TESSEL_BUILD/screenshots/console
rm -rf "$SHOTS"
mkdir -p "$SHOTS" "$TD/work"
PROBE=$(cd "$TESSEL_BUILD" && pwd)/tests/interposer/tcu-probe
[ -x "$PROBE" ] && [ -e "$TESSEL_BUILD/lib/libtessel-cuda.so" ] || PROBE=""

# Each "PASS text" / "FAIL text" line of the script is one TAP test; "# ..." lines are notes.
TESSEL_URL=$TD_URL TESSEL_ADMIN=$TD_ADMIN SHOTS=$SHOTS WORK=$TD/work PROBE=$PROBE \
    CHROMIUM=$CHROMIUM HOME=$TD timeout 600 node "$WEBSRC/test/browser.mjs" >"$TD/browser.out" 2>&1
st=$?
while IFS= read -r line; do
    case $line in
    "PASS "*) ok 0 "${line#PASS }" ;;
    "FAIL "*) ok 1 "${line#FAIL }" ;;
    *) diag "$line" ;;
    esac
done <"$TD/browser.out"
is "$st" "0" "the browser session ran to its end"
n=$(ls "$SHOTS"/*.png 2>/dev/null | wc -l)
[ "$n" -ge 10 ]; ok $? "screenshots saved: $n in $SHOTS"
td_stop; ok $? "tesseld stops cleanly (no sanitizer report)"
done_testing
