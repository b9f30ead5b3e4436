#!/bin/bash
# bench/held/run.sh - what jobs held on a dependency cost everyone else's jobs: this build's
# tesseld against the baseline's (bench/lib/baseline.sh; BENCH_BASE=REF for another one),
# interleaved in one run (A B A B), with ratios.
#
# Each round, for each build, on a fresh tesseld: one job that runs until the end (the
# blocker), HELD jobs `--after` it (pending, held: they never run; submitted through the API
# by one curl process), then a loop of SUBMITS `tessel run -d -- true` (this build's CLI for
# both daemons: only the daemon differs), timed from the first submission to the last job's
# end.  Figures: that time, the loop's own time, and the CPU time a job costs on the daemon's
# side (tesseld and what it waited for: the shims and the jobs; /proc/PID/stat), with 0 held
# jobs and with HELD.  Before issue 15's change to held jobs (docs/tesseld.md, "Held jobs"),
# every submission, start and end made tesseld read every held job and its dependencies: the
# cost grew with the number of held jobs.  (One submission a process, as a shell loop makes
# them, is the case that showed it: a burst through one connection shares a check among the
# submissions of one tick.)
#
#   bench/held/run.sh [BUILD_DIR]       (after `make all`; BUILD_DIR default build)
#
# BENCH_ROUNDS (3), BENCH_HELD (2000), BENCH_SUBMITS (200); BENCH_NICE=N renices the script
# (everything it starts inherits it); BENCH_FS=journal keeps the data directories on an ext4
# with a journal made for the run (bench/lib/journalfs.sh), host (the default) in $TMPDIR.
set -eu
NEW=$(cd "${1:-build}" && pwd)
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BASE=$("$SRC/bench/lib/baseline.sh")
for b in "$NEW" "$BASE"; do
    [ -x "$b/bin/tesseld" ] || { echo "run.sh: $b/bin/tesseld is missing" >&2; exit 1; }
done
command -v jq >/dev/null && command -v curl >/dev/null || { echo "run.sh: needs curl and jq" >&2; exit 1; }
ROUNDS=${BENCH_ROUNDS:-3}
NHELD=${BENCH_HELD:-2000}
NSUB=${BENCH_SUBMITS:-200}
[ -n "${BENCH_NICE:-}" ] && renice -n "$BENCH_NICE" -p $$ >/dev/null
T=$(mktemp -d "${TMPDIR:-/tmp}/tessel-held-XXXXXX")
PID=""
cleanup() {
    [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    journalfs_umount "$T"
    rm -rf "$T"
}
trap cleanup EXIT INT TERM
. "$SRC/bench/lib/journalfs.sh"
benchfs_select "$T" || exit 1
DATA=$BENCH_DATA
FS=$BENCH_FS_NAME

now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }
CLK=$(getconf CLK_TCK)
cpu_ms() { awk -v c="$CLK" '{sub(/^.*\) /, ""); print int(($12 + $13 + $14 + $15) * 1000 / c)}' "/proc/$1/stat"; }
api() { curl -sf --unix-socket "$T/d.sock" "http://localhost$1" "${@:2}"; }
# post N BODY: N submissions of BODY by one curl process (one connection).
post() {
    local i
    for ((i = 0; i < $1; i++)); do printf 'url = "http://localhost/v1/jobs"\noutput = "/dev/null"\n'; done >"$T/urls"
    curl -sf --unix-socket "$T/d.sock" -H 'Content-Type: application/json' -d "$2" -K "$T/urls"
}
# The number of active jobs (the held ones count: pending).
active() {
    api /metrics | awk '$1 == "tessel_jobs{state=\"pending\"}" || $1 == "tessel_jobs{state=\"running\"}" {n += $2}
        END {print n + 0}'
}

# round BUILD HELD: one measurement; appends "total_ms submit_ms cpu_us_per_job" to $T/r.NAME.
round() {
    local b=$1 h=$2 name=$3
    rm -rf "${DATA:?}/d" "$T/d.sock"
    mkdir -p "$DATA/d"
    "$b/bin/tesseld" --data-dir "$DATA/d" --no-listen --socket "$T/d.sock" \
        --fake-gpus 2xRTX4090:24G --submit-rate 0 --no-cgroups >>"$T/$name.log" 2>&1 &
    PID=$!
    local i=0
    until api /healthz >/dev/null 2>&1; do
        i=$((i + 1))
        [ $i -gt 300 ] && { echo "run.sh: tesseld ($b) did not start:" >&2; cat "$T/$name.log" >&2; exit 1; }
        sleep 0.05
    done
    local blocker
    blocker=$(api /v1/jobs -H 'Content-Type: application/json' -d '{"argv":["sleep","100000"]}' | jq .id)
    [ "$h" -gt 0 ] && post "$h" '{"argv":["true"],"after":"'"$blocker"'"}'
    [ "$(active)" = $((h + 1)) ] || { echo "run.sh: $name: expected $((h + 1)) active jobs" >&2; exit 1; }
    sleep 1 # the held jobs' first check done
    local d0 t0 t1 t2
    d0=$(cpu_ms "$PID")
    t0=$(now_ms)
    for ((i = 0; i < NSUB; i++)); do
        TESSEL_URL="unix:$T/d.sock" TESSEL_CONFIG="$T/none" "$NEW/bin/tessel" run -d -- true >/dev/null
    done
    t1=$(now_ms)
    until [ "$(active)" = $((h + 1)) ]; do sleep 0.05; done
    # The last end as tesseld recorded it (finished_at, ms), not when this loop saw it.
    t2=$(api '/v1/jobs?state=finished&limit=10000' | jq '[.jobs[].finished_at |
        ((.[0:19] + "Z" | fromdateiso8601) * 1000 + (.[20:23] | tonumber))] | max')
    echo "$((t2 - t0)) $((t1 - t0)) $(( ($(cpu_ms "$PID") - d0) * 1000 / NSUB ))" >>"$T/r.$name"
    # The blocker ends before tesseld (a job outlives its tesseld); the held jobs are
    # cancelled with it (their dependency can no longer succeed).
    TESSEL_URL="unix:$T/d.sock" TESSEL_CONFIG="$T/none" "$NEW/bin/tessel" kill "$blocker" >/dev/null
    until [ "$(api "/v1/jobs/$blocker" | jq -r .state)" = cancelled ]; do sleep 0.05; done
    kill "$PID" && wait "$PID" 2>/dev/null || true
    PID=""
}
med() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
col() { awk -v c="$2" '{print $c}' "$T/r.$1" | med; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}'; }

echo "# bench/held/run.sh: $(date -u +%FT%TZ), $(nproc) CPUs, $(uname -sr), build $NEW, baseline $BASE"
echo "# $NSUB tessel run -d -- true beside 0 and $NHELD held jobs, $ROUNDS rounds (median), data on $FS"
LOADS=""
for ((r = 1; r <= ROUNDS; r++)); do
    for h in 0 "$NHELD"; do
        LOADS="$LOADS $(cut -d' ' -f1 /proc/loadavg)"
        round "$NEW" "$h" "new-$h"
        round "$BASE" "$h" "base-$h"
    done
done
echo "# load average (1 min) at each pair's start:$LOADS"
printf '%-26s %12s %12s %14s\n' "" "all ended ms" "loop ms" "daemon us/job"
for h in 0 "$NHELD"; do
    for v in new base; do
        printf '%-26s %12s %12s %14s\n' "$v, $h held" "$(col "$v-$h" 1)" "$(col "$v-$h" 2)" "$(col "$v-$h" 3)"
    done
done
for h in 0 "$NHELD"; do
    echo "with $h held: new is $(ratio "$(col "base-$h" 1)" "$(col "new-$h" 1)")x faster to all ended," \
        "$(ratio "$(col "base-$h" 3)" "$(col "new-$h" 3)")x less daemon CPU a job"
done
echo "new with $NHELD held against new with 0: $(ratio "$(col "new-$NHELD" 1)" "$(col "new-0" 1)")x the time;" \
    "baseline: $(ratio "$(col "base-$NHELD" 1)" "$(col "base-0" 1)")x"
