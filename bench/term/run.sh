#!/bin/sh
# bench/term/run.sh - a keystroke's echo through a job's terminal (issue 19: within 5 ms p99 on
# loopback), against the floor, the kernel's own echo on a local pseudo-terminal, side by side
# in one run, interleaved rounds.  docs/terminal.md, "Measured", records the results.
#
#   bench/term/run.sh [BUILD_DIR]     (after `make build-all` or `make bench`; default build)
#
# BENCH_KEYS=N     keystrokes a round (default 2000)
# BENCH_ROUNDS=N   rounds (default 3); every round is printed, and the median of the p99s
#
# tesseld as root on loopback (a temporary data directory, fake GPUs, no cgroups), one job
# `cat >/dev/null` submitted with a terminal; the benchmark attaches over TCP (the
# WebSocket, tesseld's relay, the shim's socket, the job's terminal and back) and over the
# local socket, and types one key at a time.  Run as root.
set -eu
B=$(cd "${1:-build}" && pwd)
KEYS=${BENCH_KEYS:-2000}
ROUNDS=${BENCH_ROUNDS:-3}
E="$B/bench/bench-term-echo"
[ -x "$E" ] || { echo "build $E first (make bench)" >&2; exit 1; }
T=$(mktemp -d /tmp/tessel-bench-term-XXXXXX)
trap 'kill $TD 2>/dev/null; for f in "$T"/data/jobs/*/pid; do [ -f "$f" ] && read -r s _ j <"$f" && kill -9 "-$j" "$s" 2>/dev/null; done; rm -rf "$T"' EXIT
mkdir -p "$T/data"
"$B/bin/tesseld" --data-dir "$T/data" --listen 127.0.0.1:0 --socket "$T/sock" \
    --fake-gpus 1xT4:8G --no-cgroups >"$T/log" 2>&1 &
TD=$!
i=0
while [ ! -s "$T/data/tesseld.addr" ]; do
    i=$((i + 1)); [ $i -lt 300 ] || { cat "$T/log"; exit 1; }; sleep 0.1
done
URL="http://$(cat "$T/data/tesseld.addr")"
TOK=$(cat "$T/data/admin.token")
J=$(curl -s -H "Authorization: Bearer $TOK" -H 'Content-Type: application/json' \
    --data '{"argv":["sh","-c","cat >/dev/null"],"tty":true,"cwd":"/tmp"}' "$URL/v1/jobs" | jq -r .id)
until [ "$(curl -s -H "Authorization: Bearer $TOK" "$URL/v1/jobs/$J" | jq -r .state)" = running ]; do
    sleep 0.1
done
echo "# bench/term/run.sh: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs, $(uname -sr), build $B"
echo "# $KEYS keystrokes a round, one at a time; load average (1 min) at the start: $(cut -d' ' -f1 /proc/loadavg)"
echo "round path                         p50_us  p90_us  p99_us  max_us"
p99s=""
for r in $(seq "$ROUNDS"); do
    set -- $("$E" local "$KEYS")
    printf '%-5s %-28s %7s %7s %7s %7s\n' "$r" "local pty (floor)" "$1" "$2" "$3" "$4"
    set -- $("$E" tessel "$URL" "$TOK" "$J" "$KEYS")
    printf '%-5s %-28s %7s %7s %7s %7s\n' "$r" "tessel attach, TCP" "$1" "$2" "$3" "$4"
    p99s="$p99s $3"
    set -- $("$E" tessel "unix:$T/sock" "$TOK" "$J" "$KEYS")
    printf '%-5s %-28s %7s %7s %7s %7s\n' "$r" "tessel attach, local socket" "$1" "$2" "$3" "$4"
done
echo "# TCP p99 per round (us):$p99s; median: $(echo $p99s | tr ' ' '\n' | sort -n | sed -n "$(( (ROUNDS + 1) / 2 ))p"); load average (1 min) at the end: $(cut -d' ' -f1 /proc/loadavg)"
