#!/bin/sh
# bench/ckpt/tesseld.sh - suspend and resume of a job holding SIZE of device memory through the
# whole tesseld path (`tessel suspend`, `tessel resume`: the API, the checkpoint thread, the
# store, the scheduler), side by side in one run with bench-ckpt's floor (the job's own copy of
# SIZE device-to-host and back) on the fake driver, and how the API answers meanwhile: the
# latency of GET /v1/jobs/{id} while nothing happens, during the suspend and during the resume
# (p50, p99, max).  docs/suspend.md records the results.  It needs about 2 x SIZE of free host
# memory (the fake's "device" memory and the checkpoint's copy): run it on a quiet machine.
#
#   bench/ckpt/tesseld.sh [BUILD_DIR [SIZE [ROUNDS]]]     (defaults: build, 8G, 3)
#
# Each round: bench-ckpt SIZE 1 (the floor, and its own suspend and resume), then a job of
# SIZE under tesseld suspended with `tessel suspend` and resumed with `tessel resume` (timed
# until the job is running again), with a client reading GET /v1/jobs/{id} one request after
# the other the whole time.  Medians over the rounds; ratio = (suspend + resume) / floor.
set -eu
B=$(cd "${1:-build}" && pwd)
SIZE=${2:-8G}
ROUNDS=${3:-3}
PROBE=$B/tests/interposer/tcu-probe
for f in "$B/bin/tesseld" "$B/bin/tessel" "$B/bench/bench-ckpt" "$PROBE"; do
    [ -x "$f" ] || { echo "tesseld.sh: $f is missing (make all bench, and tcu-probe)" >&2; exit 1; }
done
command -v curl >/dev/null && command -v jq >/dev/null || { echo "tesseld.sh: curl and jq" >&2; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/tessel-bench-ckpt-XXXXXX")
TDPID=""
cleanup() {
    [ -z "$TDPID" ] || kill -9 "$TDPID" 2>/dev/null || true
    for f in "$T"/data/jobs/*/pid; do
        [ -f "$f" ] || continue
        read -r shim _ job <"$f" || continue
        kill -9 "-$job" "$shim" 2>/dev/null || true
    done
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP

now() { date +%s.%N; }
# Latencies (seconds, one a line) of GET /v1/jobs/$1 in a loop until $T/stop exists, into $2.
reader() {
    : >"$2"
    while [ ! -e "$T/stop" ]; do
        curl -s -o /dev/null -w '%{time_total}\n' -H "Authorization: Bearer $TOKEN" \
            "$URL/v1/jobs/$1" >>"$2"
    done
}
# p50 p99 max count of the latencies in $1, in ms.
pct() {
    sort -n "$1" | awk '{v[NR] = $1} END {
        if (NR == 0) { print "- - - 0"; exit }
        i50 = int(NR * 0.50 + 0.999); i99 = int(NR * 0.99 + 0.999)
        printf "%.1f %.1f %.1f %d\n", v[i50] * 1000, v[i99] * 1000, v[NR] * 1000, NR }'
}
state() { curl -s -H "Authorization: Bearer $TOKEN" "$URL/v1/jobs/$1" | jq -r .state; }
calc() { awk "BEGIN { printf \"%.3f\", $1 }"; }

export TESSEL_FAKE_STATE="$T/fake-state"
mkdir -p "$T/data" "$T/go"
"$B/bin/tesseld" --data-dir "$T/data" --listen 127.0.0.1:0 --socket "$T/sock" \
    --fake-gpus 1xA100:80G --no-cgroups --allow-root-jobs >"$T/tesseld.log" 2>&1 &
TDPID=$!
i=0
while [ ! -s "$T/data/tesseld.addr" ]; do
    i=$((i + 1))
    [ $i -gt 600 ] && { echo "tesseld did not start" >&2; cat "$T/tesseld.log" >&2; exit 1; }
    sleep 0.1
done
URL="http://$(cat "$T/data/tesseld.addr")"
TOKEN=$(cat "$T/data/admin.token")
export TESSEL_URL="$URL" TESSEL_TOKEN="$TOKEN" HOME="$T"

: >"$T/rows"
for r in $(seq 1 "$ROUNDS"); do
    # The floor (and bench-ckpt's own suspend and resume), alone on the machine.
    TESSEL_FAKE_STATE="$T/bench-state" "$B/bench/bench-ckpt" "$SIZE" 1 >"$T/floor" 2>&1 ||
        { cat "$T/floor" >&2; exit 1; }
    floor=$(awk '/^baseline copy/ {print $4}' "$T/floor")
    bsus=$(awk '/^suspend \(lock/ {print $3}' "$T/floor")
    bres=$(awk '/^resume \(restore/ {print $3}' "$T/floor")

    # A job of SIZE with its pattern written, under tesseld.
    rm -f "$T/go/$r"
    id=$(curl -s -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
        --data-binary "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:$SIZE\",\"pattern:$SIZE\",\"waitfile:$T/go/$r\",\"check:$SIZE\"],\"gpu\":1,\"env\":{\"TESSEL_FAKE_STATE\":\"$TESSEL_FAKE_STATE\"}}" \
        "$URL/v1/jobs" | jq -r .id)
    until curl -s -H "Authorization: Bearer $TOKEN" "$URL/v1/jobs/$id/logs" | grep -q '^pattern rc=0'; do
        sleep 0.5
    done
    rm -f "$T/stop"
    reader "$id" "$T/idle.$r" &
    rp=$!
    sleep 5
    touch "$T/stop"
    wait "$rp"

    rm -f "$T/stop"
    reader "$id" "$T/susp.$r" &
    rp=$!
    t0=$(now)
    "$B/bin/tessel" suspend "$id" >"$T/suspend.out"
    t1=$(now)
    touch "$T/stop"
    wait "$rp"
    grep -q 'gpu released' "$T/suspend.out" || { echo "no memory given back:" >&2; cat "$T/suspend.out" >&2; exit 1; }

    rm -f "$T/stop"
    reader "$id" "$T/res.$r" &
    rp=$!
    t2=$(now)
    "$B/bin/tessel" resume "$id" >/dev/null
    until [ "$(state "$id")" = running ]; do sleep 0.1; done
    t3=$(now)
    touch "$T/stop"
    wait "$rp"
    touch "$T/go/$r"
    until [ "$(state "$id")" = succeeded ]; do
        [ "$(state "$id")" = failed ] && { echo "the job failed" >&2; exit 1; }
        sleep 0.5
    done
    curl -s -H "Authorization: Bearer $TOKEN" "$URL/v1/jobs/$id/logs" | grep -q '^check ok' ||
        { echo "the job's pattern did not survive" >&2; exit 1; }
    sus=$(calc "$t1 - $t0")
    res=$(calc "$t3 - $t2")
    echo "$floor $bsus $bres $sus $res" >>"$T/rows"
    printf 'round %d: floor %s s; bench-ckpt suspend %s s resume %s s; tesseld suspend %.3f s resume %.3f s\n' \
        "$r" "$floor" "$bsus" "$bres" "$sus" "$res"
    printf '  GET /v1/jobs/{id} ms (p50 p99 max n): idle %s | during suspend %s | during resume %s\n' \
        "$(pct "$T/idle.$r")" "$(pct "$T/susp.$r")" "$(pct "$T/res.$r")"
done
med() { cut -d' ' -f"$1" "$T/rows" | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
F=$(med 1) BS=$(med 2) BR=$(med 3) S=$(med 4) R=$(med 5)
cat "$T"/idle.* >"$T/idle.all"
cat "$T"/susp.* >"$T/susp.all"
cat "$T"/res.* >"$T/res.all"
echo "size $SIZE, $ROUNDS round(s), medians"
printf 'floor: copy D2H+H2D              %8.3f s\n' "$F"
printf 'bench-ckpt suspend + resume      %8.3f s  ratio %.2f\n' "$(calc "$BS + $BR")" "$(calc "($BS + $BR) / $F")"
printf 'tessel suspend                   %8.3f s\n' "$S"
printf 'tessel resume (until running)    %8.3f s\n' "$R"
printf 'tessel suspend + resume          %8.3f s  ratio %.2f (target <= 2)\n' "$(calc "$S + $R")" "$(calc "($S + $R) / $F")"
printf 'GET /v1/jobs/{id} ms (p50 p99 max n), all rounds: idle %s | during suspend %s | during resume %s\n' \
    "$(pct "$T/idle.all")" "$(pct "$T/susp.all")" "$(pct "$T/res.all")"
