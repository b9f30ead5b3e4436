#!/bin/sh
# t7002-console-chart.t - the console's chart module's pure parts (web/app/chart.js): time and
# value ticks, decimation to the canvas's pixel columns (peaks and gaps kept), the idle band,
# the pointer's nearest point, series on one time axis.  Node's built-in test runner
# (web/test/chart.test.mjs), no browser; each of its tests is one TAP line here.  The drawing
# itself is checked in Chromium by t7001 and t7010.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
command -v node >/dev/null || missing "no node (scripts/install-deps.sh --browser)"
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 18 ] || missing "node $major is too old for node:test (18 or later)"
OUT=$(mktemp "${TMPDIR:-/tmp}/t7002-XXXXXX")
trap 'rm -f "$OUT"' EXIT
TZ=UTC node --test --test-reporter=tap "$TESSEL_SRCDIR/web/test/chart.test.mjs" >"$OUT" 2>&1
st=$?
n=0
# The runner's top-level results (not indented): "ok N - name" / "not ok N - name".
while IFS= read -r line; do
    case $line in
    "ok "*) ok 0 "chart: ${line#ok * - }"; n=$((n + 1)) ;;
    "not ok "*) ok 1 "chart: ${line#not ok * - }"; n=$((n + 1)) ;;
    "# fail "* | "# pass "*) diag "${line#\# }" ;;
    esac
done <"$OUT"
[ "$st" -eq 0 ] || sed 's/^/# /' "$OUT"
is "$st" "0" "node --test web/test/chart.test.mjs exits 0"
[ "$n" -ge 14 ]; ok $? "every unit test of chart.js ran ($n)"
# The installed console serves the same chart module as the source tree.
cmp -s "$TESSEL_SRCDIR/web/app/chart.js" "$TESSEL_BUILD/share/tessel/web/app/chart.js"
ok $? "make installs web/app/chart.js unchanged"
done_testing
