#!/bin/sh
# bench/submit/run.sh - measure job submissions against a tesseld of its own: a temporary data
# dir, a free loopback port, two simulated GPUs; the jobs go to a queue that starts nothing
# (bench-submit's default), so the machine only does API and store work.
#
#   bench/submit/run.sh [BUILD_DIR] [bench-submit options]    (after `make bench`)
#   e.g. bench/submit/run.sh build --threads 4 --seconds 10
#
# BENCH_NICE=N runs tesseld and the clients at nice N (e.g. -10, as root): on a machine shared
# with other work, this separates tesseld's own stalls from waiting for a CPU.
# TESSELD_ARGS="..." adds options to tesseld's command line (e.g. "--durability full").
# BENCH_CLIENT=PATH runs that bench-submit instead of BUILD_DIR's (bench/submit/compare.sh: the
# current client, with its --preload and --scrape-hz, against a baseline's tesseld).
# It ends with the most the WAL held and the group commits (tessel_store_group_*).
# BENCH_SOCKET=1 submits through tesseld's local socket (no token: the caller's uid is its
# identity) instead of TCP with the admin token.
# BENCH_NULL=1 runs the clients against bench-null-server instead of tesseld: the same HTTP
# layer answering every submission with no work behind it (no lock, store or scheduler), so
# the figures are the floor that this machine, the client and HTTP give by themselves.
set -eu
B=${1:-build}
[ $# -gt 0 ] && shift
CLIENT=${BENCH_CLIENT:-$B/bench/bench-submit}
for f in "$B/bin/tesseld" "$CLIENT"; do
    [ -x "$f" ] || { echo "run.sh: $f is missing (make bench)" >&2; exit 1; }
done
T=$(mktemp -d "${TMPDIR:-/tmp}/tessel-bench-XXXXXX")
PID=
cleanup() {
    [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT INT TERM
NICE=""
[ -n "${BENCH_NICE:-}" ] && NICE="nice -n $BENCH_NICE"
if [ "${BENCH_NULL:-0}" = 1 ]; then
    [ -x "$B/bench/bench-null-server" ] || { echo "run.sh: $B/bench/bench-null-server is missing (make bench)" >&2; exit 1; }
    $NICE "$B/bench/bench-null-server" "$T/addr" >"$T/null.log" 2>&1 &
    PID=$!
    i=0
    while [ ! -s "$T/addr" ]; do
        i=$((i + 1))
        if [ $i -gt 100 ] || ! kill -0 "$PID" 2>/dev/null; then
            echo "run.sh: bench-null-server did not start:" >&2
            cat "$T/null.log" >&2
            exit 1
        fi
        sleep 0.1
    done
    TESSEL_URL="http://$(cat "$T/addr")"
    TESSEL_TOKEN=none # the null server reads no token
    TESSEL_CONFIG="$T/no-config"
    export TESSEL_URL TESSEL_TOKEN TESSEL_CONFIG
    echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs, $(uname -sr), bench-null-server of $B (no tesseld), load $(cut -d' ' -f1 /proc/loadavg)${NICE:+, $NICE}, via $TESSEL_URL"
    $NICE "$CLIENT" "$@"
    exit
fi
$NICE "$B/bin/tesseld" --data-dir "$T/data" --listen 127.0.0.1:0 --socket "$T/tesseld.sock" \
    --fake-gpus 2xRTX4090:24G --no-cgroups ${TESSELD_ARGS:-} >"$T/tesseld.log" 2>&1 &
PID=$!
i=0
while [ ! -s "$T/data/tesseld.addr" ] || [ ! -s "$T/data/admin.token" ]; do
    i=$((i + 1))
    if [ $i -gt 300 ] || ! kill -0 "$PID" 2>/dev/null; then
        echo "run.sh: tesseld did not start:" >&2
        cat "$T/tesseld.log" >&2
        exit 1
    fi
    sleep 0.1
done
TESSEL_URL="http://$(cat "$T/data/tesseld.addr")"
TESSEL_TOKEN=$(cat "$T/data/admin.token")
export TESSEL_URL TESSEL_TOKEN
if [ "${BENCH_SOCKET:-0}" = 1 ]; then
    TESSEL_URL="unix:$T/tesseld.sock"
    TESSEL_CONFIG="$T/no-config" # no saved token either
    export TESSEL_CONFIG
    unset TESSEL_TOKEN
fi
echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs, $(uname -sr), build $B, load $(cut -d' ' -f1 /proc/loadavg)${NICE:+, $NICE}${TESSELD_ARGS:+, tesseld $TESSELD_ARGS}, via $TESSEL_URL"
$NICE "$CLIENT" "$@"
# The WAL file is reused from its beginning when the WAL starts over, never truncated while
# tesseld runs: its size now is the most the WAL held during the run.
echo "wal: $(stat -c %s "$T/data/tessel.db-wal" 2>/dev/null || echo 0) bytes, the most the WAL held"
# Group commit (docs/tesseld.md, "Store"): the store's commits that held submissions and the
# submissions they held ("-" for a tesseld without it, e.g. a baseline).
curl -s "http://$(cat "$T/data/tesseld.addr")/metrics" | awk '
    $1 == "tessel_store_group_commits_total" { c = $2 }
    $1 == "tessel_store_group_members_total" { m = $2 }
    END { if (c == "") print "group: -"
          else printf "group: %d commits held %d submissions (%.2f a commit)\n", c, m, c ? m / c : 0 }'
