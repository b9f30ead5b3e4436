#!/bin/sh
# bench/metrics/run.sh - what a scrape of /metrics costs with many slices: 64 running jobs on 8
# fake GPUs (each a CUDA process of the fake driver with its context and 10 MiB, so that every
# slice file is there to read), scraped by this build's tesseld and by the baseline's
# (bench/lib/baseline.sh: main before issue 15, whose /metrics had no per-slice series but the
# busy counter) side by side in one run, rounds interleaved (A B A B) so that load hits both
# alike; /healthz of this build is the floor (an HTTP round trip and nothing else).
# docs/metrics.md, "Cost of a scrape", records the results.  It runs 2 x BENCH_JOBS CUDA processes
# of the fake driver for its duration: run it on a machine nobody else is using.
#
#   bench/metrics/run.sh [BUILD_DIR]        (after `make build-all`; default build)
#
# BENCH_JOBS=N     running jobs per tesseld (default 64, on 8 GPUs: N/8 per GPU)
# BENCH_SCRAPES=N  scrapes per round, one keep-alive connection (default 20)
# BENCH_ROUNDS=N   rounds (default 3); the median and p99 are over all scrapes
set -eu
B=$(cd "${1:-build}" && pwd)
JOBS=${BENCH_JOBS:-64}
SCRAPES=${BENCH_SCRAPES:-20}
ROUNDS=${BENCH_ROUNDS:-3}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
PROBE=$B/tests/interposer/tcu-probe
for f in "$B/bin/tesseld" "$PROBE"; do
    [ -x "$f" ] || { echo "run.sh: $f is missing (make build-all)" >&2; exit 1; }
done
BASE=$("$SRC/bench/lib/baseline.sh")
T=$(mktemp -d "${TMPDIR:-/tmp}/tessel-bench-metrics-XXXXXX")
PIDS=""
cleanup() {
    for d in "$T"/new "$T"/base; do
        for f in "$d"/data/jobs/*/pid; do
            [ -f "$f" ] || continue
            read -r shim _ job <"$f"
            kill -9 "-$job" "$shim" 2>/dev/null || true
        done
    done
    for p in $PIDS; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP

# start NAME BUILD -> URL in $URL, admin token in $TOKEN; JOBS jobs running
start() {
    mkdir -p "$T/$1/data" "$T/$1/go"
    "$2/bin/tesseld" --data-dir "$T/$1/data" --listen 127.0.0.1:0 --socket "$T/$1/sock" \
        --fake-gpus 8xT4:16G --no-cgroups >"$T/$1/log" 2>&1 &
    PIDS="$PIDS $!"
    i=0
    while [ ! -s "$T/$1/data/tesseld.addr" ]; do
        i=$((i + 1))
        [ $i -lt 600 ] || { echo "run.sh: $1 tesseld did not start" >&2; cat "$T/$1/log" >&2; exit 1; }
        sleep 0.1
    done
    URL="http://$(cat "$T/$1/data/tesseld.addr")"
    TOKEN=$(cat "$T/$1/data/admin.token")
    share=$(awk -v n="$JOBS" 'BEGIN { n = n / 8; if (n < 1) n = 1; printf "%.3f", 1 / n }')
    j=0
    while [ $j -lt "$JOBS" ]; do
        curl -sf -o /dev/null -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
            --data-binary "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:10M\",\"waitfile:$T/$1/go/x\"],\"gpu\":$share,\"gpu_mem\":\"1G\",\"env\":{\"TESSEL_FAKE_CTX_MEM\":\"16M\"}}" \
            "$URL/v1/jobs"
        j=$((j + 1))
    done
    i=0
    while [ "$(curl -s "$URL/metrics" | awk '$1 == "tessel_jobs{state=\"running\"}" { print $2 }')" != "$JOBS" ]; do
        i=$((i + 1))
        [ $i -lt 1200 ] || { echo "run.sh: $1: $JOBS jobs did not all start" >&2; exit 1; }
        sleep 0.1
    done
}
start new "$B"
NEW=$URL
start base "$BASE"
OLD=$URL
# Every slice holds its memory (the probes have made their contexts) before timing.
sleep 2

# round URL PATH OUT: SCRAPES requests on one connection, seconds each appended to OUT
round() {
    args=""
    i=0
    while [ $i -lt "$SCRAPES" ]; do args="$args -o /dev/null $1$2"; i=$((i + 1)); done
    # shellcheck disable=SC2086
    curl -s -w '%{time_total}\n' $args >>"$3"
}
r=0
while [ $r -lt "$ROUNDS" ]; do
    round "$NEW" /metrics "$T/new.t"
    round "$OLD" /metrics "$T/base.t"
    round "$NEW" /healthz "$T/health.t"
    r=$((r + 1))
done
stats() { sort -n "$1" | awk '{ v[NR] = $1 } END { printf "%.3f %.3f", v[int((NR + 1) / 2)] * 1000, v[int(NR * 0.99 + 0.5)] * 1000 }'; }
set -- $(stats "$T/new.t")
nm=$1 np=$2
set -- $(stats "$T/base.t")
bm=$1 bp=$2
set -- $(stats "$T/health.t")
hm=$1 hp=$2
nb=$(curl -s "$NEW/metrics" | wc -c)
bb=$(curl -s "$OLD/metrics" | wc -c)
ns=$(curl -s "$NEW/metrics" | grep -c '^tessel_slice_memory_used_bytes{')
echo "metrics bench: $JOBS running jobs on 8 fake GPUs, $ROUNDS x $SCRAPES scrapes each; nproc $(nproc), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-34s %10s %10s %10s %12s\n' "" "median ms" "p99 ms" "bytes" "vs baseline"
printf '%-34s %10s %10s %10s %12s\n' "baseline /metrics (8167993)" "$bm" "$bp" "$bb" "1.00"
printf '%-34s %10s %10s %10s %12s\n' "this build /metrics ($ns slices)" "$nm" "$np" "$nb" \
    "$(awk -v a="$nm" -v b="$bm" 'BEGIN { printf "%.2f", a / b }')"
printf '%-34s %10s %10s %10s %12s\n' "this build /healthz (floor)" "$hm" "$hp" "-" \
    "$(awk -v a="$hm" -v b="$bm" 'BEGIN { printf "%.2f", a / b }')"
