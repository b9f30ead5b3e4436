#!/bin/sh
# bench/history/run.sh - the usage history's figure (issue 16): "a week of 10 s samples for 8
# GPUs costs < 50 MB of store and the console's week view loads in < 300 ms".
#   1. bench-history-fill writes a week (and an hour) of 10 s samples of 8 GPUs, 4 queues and
#      6 users through tesseld's real write path (thist_write: tiers and pruning at the
#      default plan) and, as the baseline, the same samples with no downsampling: both sizes,
#      side by side, with their ratio and the budget;
#   2. a tesseld with 8 simulated GPUs serves that store: GET /v1/history for the week per
#      scope (curl's total time: built, then kept, median of 10), with every column and with
#      the columns the console asks for (fields=), their sizes side by side, against the budget;
#   3. Debian's Chromium loads the console fresh at #/?range=week (web/test/history-load.mjs):
#      the time from navigation start to every chart drawn, median of 5, against the budget
#      (Chromium without its address bar's popup app in each new window, as a running
#      browser has it already: web/test/chromium.mjs; the same with it, beside);
#      then the same for a returning visitor, with tesseld's answers cold, and the in-app switch
#      (the overview drawn at the hour, a click on Week, to every chart holding the week), and
#      the floor under any page (the same fresh load of a document with no script).
#
#   bench/history/run.sh [BUILD_DIR]       (after `make bench` and `make`, web/node_modules)
set -eu
B=${1:-build}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
for f in "$B/bin/tesseld" "$B/bench/bench-history-fill"; do
    [ -x "$f" ] || { echo "run.sh: $f is missing (make bench)" >&2; exit 1; }
done
T=$(mktemp -d "${TMPDIR:-/tmp}/tessel-bench-history-XXXXXX")
. "$SRC/bench/lib/tesseld.sh"
trap bench_cleanup EXIT INT TERM
start() { bench_start --fake-gpus 8xRTX4090:24G --no-cgroups; }
stop() { bench_stop; }

echo "== machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
start
curl -s -H "Authorization: Bearer $TOKEN" "$URL/v1/gpus" | jq -r '.gpus[].uuid' >"$T/uuids"
stop
echo "== 1. store size"
"$B/bench/bench-history-fill" "$T/data/tessel.db" "$T/naive.db" "$T/uuids"
echo "== 2. GET /v1/history?range=1w (curl time_total): the first answer is built from the store, the next"
echo "      ten are tesseld's kept answer (histcache.h; median of 10); tesseld just started.  Every"
echo "      column (the API's default), then the columns the console asks for (fields=, web/app/history.js)"
start
# The console's columns per scope (web/app/history.js FIELDS).
console_fields() { sed -n "s/^const FIELDS = .* $1: '\([a-z_,]*\)'.*/\1/p" "$SRC/web/app/history.js"; }
for scope in gpu queue user gpu+ queue+ user+; do
    q="scope=${scope%+}&range=1w"
    what="every column"
    [ "$scope" = "${scope%+}" ] || { q="$q&fields=$(console_fields "${scope%+}")"; what="the console's"; }
    curl -s -o "$T/answer" -w '%{time_total}\n' -H "Authorization: Bearer $TOKEN" "$URL/v1/history?$q" >"$T/built"
    pts=$(jq '[.series[].t | length] | add' "$T/answer")
    b=$(wc -c <"$T/answer")
    [ "$scope" = "${scope%+}" ] && echo "$b" >"$T/full-${scope}"
    full=$(cat "$T/full-${scope%+}")
    for i in 1 2 3 4 5 6 7 8 9 10; do
        curl -s -o /dev/null -w '%{time_total}\n' -H "Authorization: Bearer $TOKEN" "$URL/v1/history?$q"
    done | sort -n | sed -n 5p | awk -v s="${scope%+}" -v w="$what" -v p="$pts" -v b="$b" -v fb="$full" -v f="$(cat "$T/built")" \
        '{ printf "scope=%-5s range=1w, %-12s: built %6.1f ms, kept %5.1f ms (%d points, %d bytes, %.2f of every column) against 300 ms: ratio %.2f / %.2f\n", s, w, f * 1000, $1 * 1000, p, b, b / fb, f * 1000 / 300, $1 * 1000 / 300 }'
done
echo "== 3. the console's week view, fresh load (Chromium; tesseld restarted: the warm-up load builds the answers)"
stop
start
TESSEL_URL=$URL TESSEL_ADMIN=$TOKEN HOME=$T node "$SRC/web/test/history-load.mjs"
echo "== 3'. the same fresh load with Chromium's own interface built for each new window (its"
echo "      headless default, BROWSER_UI=1: the address bar's popup app beside the page; web/test/chromium.mjs)"
TESSEL_URL=$URL TESSEL_ADMIN=$TOKEN HOME=$T BROWSER_UI=1 node "$SRC/web/test/history-load.mjs" | tail -n 1
echo "== 3a. a returning visitor (one browser profile: files revalidated, 304; compiled code kept)"
TESSEL_URL=$URL TESSEL_ADMIN=$TOKEN HOME=$T REVISIT=1 node "$SRC/web/test/history-load.mjs"
echo "== 3b. the in-app switch: the overview loaded and drawn (hour), then a click on Week"
TESSEL_URL=$URL TESSEL_ADMIN=$TOKEN HOME=$T SWITCH=1 node "$SRC/web/test/history-load.mjs"
echo "== 3c. the floor: the same fresh load of a document with no script (tesseld's icon)"
TESSEL_URL=$URL TESSEL_ADMIN=$TOKEN HOME=$T FLOOR=1 node "$SRC/web/test/history-load.mjs" | tail -n 1
echo "== 3d. a fresh load, tesseld's answers cold (restarted before each load, warm-up on #/jobs)"
for i in 1 2 3; do
    stop
    start
    TESSEL_URL=$URL TESSEL_ADMIN=$TOKEN HOME=$T RUNS=1 WARMUP='#/jobs' \
        node "$SRC/web/test/history-load.mjs" | sed -n 's/^median of 1: //p'
done
stop
