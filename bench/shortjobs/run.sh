#!/bin/bash
# bench/shortjobs/run.sh - short jobs end to end, this build against the baseline (main before
# issue 15, bench/lib/baseline.sh: its tesseld, tessel-shim and tessel), interleaved in one run
# (A B A B: the load of a shared machine hits both alike), with ratios:
# (b) runs first, so that the load the bursts of (a) leave (hundreds of processes at once on 2
# cores: the load average climbs for a minute) does not weigh on it.
#   (a) DETACH (200) `tessel run -d -- true`, first submission to the last job's end (its
#       finished_at), each round on a fresh tesseld of each build;
#   (a') the same 200 jobs submitted through the API alone (one curl process, one connection,
#       POST /v1/jobs 200 times): the daemon's share, without the CLI's startup;
#   (a), (a') also give the CPU time a job costs on the daemon's side (user + system time of
#       tesseld and of what it waited for: the shims, and through them the jobs; from
#       /proc/PID/stat, before the burst and after the last end, divided by DETACH), which the
#       load of a shared machine disturbs less than wall time, and (a) the CPU time of one
#       `tessel run -d` (the shell's own and its children's, the CLI processes, around the loop
#       alone), beside its floor: the same loop starting /bin/true once the burst has ended;
#   (b) FG (50) foreground `tessel run -- true`, each timed from the shell (bash's
#       EPOCHREALTIME, no fork): median and p90; and the daemon's share, submitted_at to
#       finished_at of the same jobs.
#
#   bench/shortjobs/run.sh [BUILD_DIR]       (after `make build-all`; BUILD_DIR default build)
#
# BENCH_ROUNDS (3) rounds of (a) and (a'), BENCH_DETACH (200), BENCH_FG (50);
# BENCH_CGROUPS=1 runs the daemons with cgroups (root; default --no-cgroups: the same for both,
# and no cgroup left behind); BENCH_NICE=N runs everything at nice N (the script renices
# itself, so every command inherits it: no `nice` process a command, whose exec would be
# measured as the CLI's); BENCH_FS=journal keeps both builds' data directories on an ext4 with
# a journal made for the run (bench/lib/journalfs.sh: root, a loop device), BENCH_FS=host (the
# default) in $TMPDIR.  Prints the date, nproc, the file system and the load average beside
# each figure.
set -eu
NEW=$(cd "${1:-build}" && pwd)
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BASE=$("$SRC/bench/lib/baseline.sh")
for b in "$NEW" "$BASE"; do
    for f in bin/tesseld bin/tessel-shim bin/tessel; do
        [ -x "$b/$f" ] || { echo "run.sh: $b/$f is missing" >&2; exit 1; }
    done
done
ROUNDS=${BENCH_ROUNDS:-3}
NDET=${BENCH_DETACH:-200}
NFG=${BENCH_FG:-50}
CG=--no-cgroups
[ "${BENCH_CGROUPS:-0}" = 1 ] && CG=
NICE=""
if [ -n "${BENCH_NICE:-}" ]; then
    renice -n "$BENCH_NICE" -p $$ >/dev/null
    NICE="nice $BENCH_NICE"
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/tessel-shortjobs-XXXXXX")
PIDS=""
cleanup() {
    for p in $PIDS; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
    journalfs_umount "$T"
    rm -rf "$T"
}
trap cleanup EXIT INT TERM
. "$SRC/bench/lib/journalfs.sh"
benchfs_select "$T" || exit 1
DATA=$BENCH_DATA
FS=$BENCH_FS_NAME

now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }
load() { cut -d' ' -f1 /proc/loadavg; }

# start NAME BUILD: a tesseld of BUILD with data in $T/NAME, socket $T/NAME.sock.
start() {
    rm -rf "${DATA:?}/$1" "$T/$1.sock"
    mkdir -p "$DATA/$1"
    "$2/bin/tesseld" --data-dir "$DATA/$1" --listen 127.0.0.1:0 --socket "$T/$1.sock" \
        --fake-gpus 2xRTX4090:24G --submit-rate 0 $CG >>"$T/$1.log" 2>&1 &
    eval "PID_$1=$!"
    PIDS="$PIDS $!"
    local i=0
    until curl -sf --unix-socket "$T/$1.sock" http://localhost/healthz >/dev/null 2>&1; do
        i=$((i + 1))
        if [ $i -gt 300 ]; then
            echo "run.sh: tesseld ($2) did not start:" >&2
            cat "$T/$1.log" >&2
            exit 1
        fi
        sleep 0.05
    done
}
stop() {
    local p
    eval "p=\$PID_$1"
    kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true
}
api() { curl -sf --unix-socket "$T/$1.sock" "http://localhost$2"; }
# Wait until no job of NAME is active.
drain() {
    while [ "$(api "$1" '/v1/jobs?state=active' | jq '.jobs | length')" != 0 ]; do
        sleep 0.05
    done
}
# The latest finished_at of NAME's jobs, in ms since the epoch (RFC 3339 with ms, UTC).
last_end_ms() {
    api "$1" '/v1/jobs?state=finished' | jq '[.jobs[].finished_at |
        ((.[0:19] + "Z" | fromdateiso8601) * 1000 + (.[20:23] | tonumber))] | max'
}
# The daemon's share of each job: finished_at - submitted_at in ms, one a line.
job_ms() {
    api "$1" '/v1/jobs?state=finished' | jq '.jobs[] | [.submitted_at, .finished_at] |
        map((.[0:19] + "Z" | fromdateiso8601) * 1000 + (.[20:23] | tonumber)) | .[1] - .[0]'
}
# pct P FILE: the P-th percentile (nearest rank) of the numbers in FILE.
pct() { sort -n "$2" | awk -v p="$1" '{v[NR]=$1} END {i=int((NR*p+99)/100); if(i<1)i=1; print v[i]}'; }
# cpu_ms PID: user + system time of PID and of the children it has waited for, in ms.
CLK=$(getconf CLK_TCK)
cpu_ms() { awk -v c="$CLK" '{sub(/^.*\) /, ""); print int(($12 + $13 + $14 + $15) * 1000 / c)}' "/proc/$1/stat"; }
# perjob FILE: the median of the per-job CPU figures of FILE (ms per job, one decimal).
perjob() { awk -v n="$NDET" '{print $1 / n}' "$1" >"$1.pj" && pct 50 "$1.pj"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}'; }

# (a) detach NAME BUILD: ms from the first submission to the last end; CPU ms of the CLI loop
# to $T/detach.cli.NAME, of the daemon's side to $T/detach.cpu.NAME.
detach() {
    local t0 c0 d0 p
    eval "p=\$PID_$1"
    d0=$(cpu_ms "$p")
    c0=$(cpu_ms "$$")
    t0=$(now_ms)
    for ((i = 0; i < NDET; i++)); do
        TESSEL_URL="unix:$T/$1.sock" TESSEL_CONFIG="$T/none" "$2/bin/tessel" run -d -- true \
            >/dev/null
    done
    echo $(($(cpu_ms "$$") - c0)) >>"$T/detach.cli.$1"
    drain "$1"
    echo $(($(cpu_ms "$p") - d0)) >>"$T/detach.cpu.$1"
    # The floor of the CLI's figure: the same loop starting /bin/true (the shell's fork, an
    # exec and an exit), once every job has ended.
    c0=$(cpu_ms "$$")
    for ((i = 0; i < NDET; i++)); do /bin/true; done
    echo $(($(cpu_ms "$$") - c0)) >>"$T/detach.floor.$1"
    echo $(($(last_end_ms "$1") - t0))
}
# (a') the same through the API: one curl, NDET POSTs on one connection.
detach_api() {
    local t0 d0 p urls=()
    for ((i = 0; i < NDET; i++)); do urls+=("http://localhost/v1/jobs"); done
    eval "p=\$PID_$1"
    d0=$(cpu_ms "$p")
    t0=$(now_ms)
    curl -sf --unix-socket "$T/$1.sock" -H 'Content-Type: application/json' \
        -d '{"argv":["true"]}' "${urls[@]}" >/dev/null
    drain "$1"
    echo $(($(cpu_ms "$p") - d0)) >>"$T/detach_api.cpu.$1"
    echo $(($(last_end_ms "$1") - t0))
}

echo "# bench/shortjobs $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs, $(uname -sr)," \
    "new $NEW, baseline $BASE, ${CG:-with cgroups}${NICE:+, $NICE}, data on $FS," \
    "load $(load)"
printf '%-34s %10s %10s %7s  %s\n' figure new base base/new load
# (b) foreground runs, interleaved one by one on a daemon of each build.
start new "$NEW"
start base "$BASE"
: >"$T/fg.new" && : >"$T/fg.base"
fails=0
for ((i = 0; i < NFG; i++)); do
    for side in new base; do
        b=$NEW
        [ $side = base ] && b=$BASE
        t0=${EPOCHREALTIME/./}
        TESSEL_URL="unix:$T/$side.sock" TESSEL_CONFIG="$T/none" "$b/bin/tessel" run -- true \
            || fails=$((fails + 1))
        t1=${EPOCHREALTIME/./}
        awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f\n", (b - a) / 1000}' >>"$T/fg.$side"
    done
done
[ $fails = 0 ] || echo "run.sh: $fails foreground run(s) failed" >&2
for side in new base; do job_ms "$side" >"$T/fgd.$side"; done
# row LABEL NAME: the median and p90 of $T/NAME.new and $T/NAME.base, side by side.
row() {
    local p n o
    for p in 50 90; do
        n=$(pct $p "$T/$2.new")
        o=$(pct $p "$T/$2.base")
        printf '%-34s %10s %10s %7s  %s\n' "$1, p$p" "$n" "$o" "$(ratio "$o" "$n")" "$(load)"
    done
}
row "(b) $NFG run -- true, ms" fg
row "(b') daemon: submitted->ended, ms" fgd
stop new
stop base

for mode in detach detach_api; do
    : >"$T/$mode.new" && : >"$T/$mode.base"
    : >"$T/$mode.cpu.new" && : >"$T/$mode.cpu.base" && : >"$T/$mode.cli.new" && : >"$T/$mode.cli.base"
    : >"$T/$mode.floor.new" && : >"$T/$mode.floor.base"
    for ((r = 0; r < ROUNDS; r++)); do
        for side in new base; do
            b=$NEW
            [ $side = base ] && b=$BASE
            start "$side" "$b"
            $mode "$side" "$b" >>"$T/$mode.$side"
            stop "$side"
        done
    done
    n=$(pct 50 "$T/$mode.new")
    o=$(pct 50 "$T/$mode.base")
    label="(a) $NDET run -d, to all ended, ms"
    [ $mode = detach_api ] && label="(a') $NDET via API, to all ended, ms"
    printf '%-34s %10s %10s %7s  %s  (median of %d; new: %s; base: %s)\n' "$label" "$n" "$o" \
        "$(ratio "$o" "$n")" "$(load)" "$ROUNDS" "$(tr '\n' ' ' <"$T/$mode.new")" \
        "$(tr '\n' ' ' <"$T/$mode.base")"
    n=$(perjob "$T/$mode.cpu.new")
    o=$(perjob "$T/$mode.cpu.base")
    printf '%-34s %10s %10s %7s  %s  (median of %d)\n' "${label%%,*}, CPU ms/job, daemon side" \
        "$n" "$o" "$(ratio "$o" "$n")" "$(load)" "$ROUNDS"
    if [ $mode = detach ]; then
        n=$(perjob "$T/$mode.cli.new")
        o=$(perjob "$T/$mode.cli.base")
        printf '%-34s %10s %10s %7s  %s  (median of %d)\n' "(a) CPU ms per tessel run -d" \
            "$n" "$o" "$(ratio "$o" "$n")" "$(load)" "$ROUNDS"
        n=$(perjob "$T/$mode.floor.new")
        o=$(perjob "$T/$mode.floor.base")
        printf '%-34s %10s %10s %7s  %s  (median of %d; the shell starting /bin/true)\n' \
            "(a) floor: CPU ms per /bin/true" "$n" "$o" "$(ratio "$o" "$n")" "$(load)" "$ROUNDS"
    fi
done
