#!/bin/sh
# bench/watchdog/run.sh - what tessel-shim's GPU-memory watchdog costs, and how fast it stops a
# job over its slice.  As root (the shim runs as root under tesseld), with the fake GPUs
# (tests/fake: the watchdog reads the fake NVML's per-process table, so the figures are the
# watchdog's own cost plus the fake's, not a real driver's).
#
#   bench/watchdog/run.sh [BUILD_DIR] [SECONDS] [ROUNDS]      (after `make all` and
#                                                              `make BUILD_DIR/tests/interposer/tcu-raw`)
#
# 1. Cost: a job holding 500 MiB of a 1 GiB slice (tcu-raw) runs SECONDS (default 60) under a
#    shim without the watchdog (baseline), then under one with it; the shim's CPU time (every
#    thread: /proc/PID/task/*/schedstat) is printed for both, and the watchdog's share of a core.
# 2. Reaction: ROUNDS (default 10) jobs each allocate 3000 MiB with a 1 GiB slice; the time from
#    the allocation's return (tcu-raw's t_ns, CLOCK_REALTIME) to the shim's exit record (its
#    mtime) is printed: min, median, max.
set -eu
B=${1:-build}
SECS=${2:-60}
ROUNDS=${3:-10}
[ "$(id -u)" = 0 ] || { echo "run.sh: run as root (the shim is root's)" >&2; exit 1; }
for f in "$B/bin/tessel-shim" "$B/tests/interposer/tcu-raw" "$B/tests/fake/libcuda.so.1" \
    "$B/tests/fake/libnvidia-ml.so.1"; do
    [ -e "$f" ] || { echo "run.sh: $f is missing" >&2; exit 1; }
done
SHIM=$(realpath "$B/bin/tessel-shim")
RAW=$(realpath "$B/tests/interposer/tcu-raw")
FAKE=$(realpath "$B/tests/fake")
T=$(mktemp -d "${TMPDIR:-/tmp}/tessel-bench-wd-XXXXXX")
trap 'touch "$T/go"; sleep 0.3; rm -rf "$T"' EXIT INT TERM
export LD_LIBRARY_PATH="$FAKE" TESSEL_FAKE_GPUS=1xT4:8G TESSEL_FAKE_CTX_MEM=64M \
    TESSEL_FAKE_STATE="$T/fake-state"
WD="--nvml $FAKE/libnvidia-ml.so.1 --gpu-mem-limit 0=1G"
# The job's environment reaches it only through --env-fd ("K=V" strings, NUL-separated), as
# from tesseld: the fake driver's settings, so that the job and the shim's NVML see one state.
printf 'PATH=%s\0LD_LIBRARY_PATH=%s\0TESSEL_FAKE_GPUS=%s\0TESSEL_FAKE_CTX_MEM=%s\0TESSEL_FAKE_STATE=%s\0' \
    "$PATH" "$LD_LIBRARY_PATH" "$TESSEL_FAKE_GPUS" "$TESSEL_FAKE_CTX_MEM" "$TESSEL_FAKE_STATE" \
    >"$T/env"

cpu_ns() { # cpu_ns PID -> ns on CPU of all its threads
    cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%d\n", s }'
}

run_cost() { # run_cost NAME [SHIM OPTIONS] -> prints ns of shim CPU over SECS
    name=$1
    shift
    d="$T/$name"
    mkdir -p "$d"
    rm -f "$T/go"
    # shellcheck disable=SC2086
    "$SHIM" --env-fd 3 --dir "$d" --cwd "$d" "$@" -- "$RAW" "$FAKE/libcuda.so.1" 500 "$T/go" \
        3<"$T/env" 2>"$d/shim.log" &
    spid=$!
    while ! grep -q "raw rc=0" "$d/stdout" 2>/dev/null; do sleep 0.05; done
    a=$(cpu_ns "$spid")
    sleep "$SECS"
    b=$(cpu_ns "$spid")
    touch "$T/go"
    wait "$spid" || true
    echo $((b - a))
}

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs, $(uname -sr), build $B, load $(cut -d' ' -f1 /proc/loadavg)"
base=$(run_cost base)
# shellcheck disable=SC2086
wd=$(run_cost wd $WD)
awk -v b="$base" -v w="$wd" -v s="$SECS" 'BEGIN {
    printf "shim CPU over %d s, job within its slice: baseline %.2f ms, watchdog %.2f ms\n", s, b / 1e6, w / 1e6
    printf "watchdog cost: %.3f %% of a core (target < 0.5 %%)\n", (w - b) / (s * 1e9) * 100
}'

lat=""
i=0
while [ $i -lt "$ROUNDS" ]; do
    i=$((i + 1))
    d="$T/over$i"
    mkdir -p "$d"
    # shellcheck disable=SC2086
    "$SHIM" --env-fd 3 --dir "$d" --cwd "$d" $WD -- "$RAW" "$FAKE/libcuda.so.1" 3000 "$T/never" \
        3<"$T/env" 2>"$d/shim.log" || true
    t0=$(sed -n 's/.* t_ns=//p' "$d/stdout")
    t1=$(stat -c %.9Y "$d/exit" | tr -d .)
    lat="$lat $(((t1 - t0) / 1000))"
    grep -q "^signal 9" "$d/exit" || echo "round $i: not killed: $(cat "$d/exit")"
done
echo "$lat" | tr ' ' '\n' | grep . | sort -n | awk -v r="$ROUNDS" '{ v[NR] = $1 } END {
    printf "over-limit job stopped after (allocation returned -> shim exit record), %d rounds: min %.0f ms, median %.0f ms, max %.0f ms (target < 1000 ms)\n",
        r, v[1] / 1e3, v[int((NR + 1) / 2)] / 1e3, v[NR] / 1e3
}'
