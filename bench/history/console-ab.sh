#!/bin/sh
# bench/history/console-ab.sh - the console's week view, two versions of its files side by side:
# those of git commit BASE (default 87c552e, before the load-order changes; bundled as its make
# would, when it has scripts/console-bundle.sh) and this tree's (BUILD/share/tessel/web, as make
# installs them: the first page bundled), served in turn by the same tesseld (--web-root) from
# the same store (a week of 8 GPUs, bench-history-fill), ROUNDS rounds (default 2) of RUNS fresh
# loads each (web/test/history-load.mjs).  Only the console's files differ between the two.
#
#   bench/history/console-ab.sh [BUILD_DIR] [BASE]     (after `make bench`, web/node_modules)
#
# INTERLEAVE=1: two tesselds at once (copies of the same store), one serving each version, and
# the loads interleaved one by one (web/test/history-ab.mjs, RUNS per version, default 10): both
# versions see the same moments of a shared machine; it also prints the CPU time of the
# renderers' main threads, the figure that other work on the cores inflates least.
set -eu
B=$(cd "${1:-build}" && pwd)
BASE=${2:-87c552e}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/tessel-bench-console-ab-XXXXXX")
. "$SRC/bench/lib/tesseld.sh"
trap bench_cleanup EXIT INT TERM
mkdir -p "$T/old"
# web/vendor held uPlot until the console drew its own charts (web/app/chart.js).
paths="web/index.html web/app"
! git -C "$SRC" cat-file -e "$BASE:web/vendor" 2>/dev/null || paths="$paths web/vendor"
# shellcheck disable=SC2086 # the paths are words
git -C "$SRC" archive "$BASE" $paths | tar -x -C "$T/old"
# A BASE whose make serves the first page as a bundle (scripts/console-bundle.sh, since
# 2026-11-28): its console as its make would serve it, bundled by its own script.
if git -C "$SRC" cat-file -e "$BASE:scripts/console-bundle.sh" 2>/dev/null; then
    git -C "$SRC" show "$BASE:scripts/console-bundle.sh" >"$T/old-bundle.sh"
    sh "$T/old-bundle.sh" "$T/old/web" "$T/old/web"
fi
start() { bench_start --fake-gpus 8xRTX4090:24G --no-cgroups --web-root "$1"; }
stop() { bench_stop; }
echo "== machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
start "$B/share/tessel/web"
curl -s -H "Authorization: Bearer $TOKEN" "$URL/v1/gpus" | jq -r '.gpus[].uuid' >"$T/uuids"
stop
"$B/bench/bench-history-fill" "$T/data/tessel.db" "$T/naive.db" "$T/uuids" >/dev/null
if [ "${INTERLEAVE:-0}" = 1 ]; then
    cp -a "$T/data" "$T/data-old"
    rm -f "$T/data/tesseld.addr" "$T/data-old/tesseld.addr"
    "$B/bin/tesseld" --data-dir "$T/data-old" --listen 127.0.0.1:0 --socket "$T/old.sock" \
        --fake-gpus 8xRTX4090:24G --no-cgroups --web-root "$T/old/web" >>"$T/old.log" 2>&1 &
    OLDPID=$!
    trap 'kill $OLDPID 2>/dev/null; wait $OLDPID 2>/dev/null; bench_cleanup' EXIT INT TERM
    start "$B/share/tessel/web"
    while [ ! -s "$T/data-old/tesseld.addr" ]; do
        kill -0 $OLDPID 2>/dev/null || { cat "$T/old.log" >&2; exit 1; }
        sleep 0.1
    done
    echo "A = $BASE, B = this tree; loads interleaved"
    URL_A="http://$(cat "$T/data-old/tesseld.addr")" TOK_A=$(cat "$T/data-old/admin.token") \
        URL_B=$URL TOK_B=$TOKEN HOME=$T RUNS=${RUNS:-10} node "$SRC/web/test/history-ab.mjs"
    echo "   load average $(cut -d' ' -f1-3 /proc/loadavg)"
    exit 0
fi
for round in $(seq "${ROUNDS:-2}"); do
    for v in old new; do
        [ $v = old ] && dir=$T/old/web || dir=$B/share/tessel/web
        start "$dir"
        printf '%s (%s): ' "$v" "$([ $v = old ] && echo "$BASE" || echo this tree)"
        TESSEL_URL=$URL TESSEL_ADMIN=$TOKEN HOME=$T RUNS=${RUNS:-5} node "$SRC/web/test/history-load.mjs" | sed -n 's/^median of/median of/p'
        stop
    done
    echo "   load average $(cut -d' ' -f1-3 /proc/loadavg)"
done
