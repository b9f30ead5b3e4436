#!/bin/bash
# bench/shortjobs/shim.sh - what tessel-shim costs to start and supervise a short job, this
# build against the baseline (bench/lib/baseline.sh: main before issue 15), interleaved in one
# run (rounds A B A B), with ratios: CPU time (user + system, the shell's waited-for children:
# the shim and the job) and minor page faults per job, which the load of a shared machine
# disturbs less than wall time; wall time beside them.  Each job is `/bin/true` with the
# interposer of its own build preloaded, started the way tesseld starts it as root (the job's mount
# namespace with /etc/ld.so.preload, the user-namespace filter, the GPU-memory watchdog with
# the fake NVML, a log limit), the shim run directly (no tesseld, no API, no CLI).
#
#   bench/shortjobs/shim.sh [BUILD_DIR [OTHER_BUILD_DIR]]   (as root, after `make build-all`)
#
# OTHER_BUILD_DIR adds a third column (e.g. main's build, to show one change alone).
# BENCH_ROUNDS (5) rounds of BENCH_JOBS (100) jobs per build; BENCH_NICE=N runs at nice N.
set -eu
NEW=$(cd "${1:-build}" && pwd)
OTHER=""
[ -n "${2:-}" ] && OTHER=$(cd "$2" && pwd)
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BASE=$("$SRC/bench/lib/baseline.sh")
[ "$(id -u)" = 0 ] || { echo "shim.sh: run as root (the job's namespace needs it)" >&2; exit 1; }
for b in "$NEW" "$BASE" $OTHER; do
    [ -x "$b/bin/tessel-shim" ] || { echo "shim.sh: $b/bin/tessel-shim is missing" >&2; exit 1; }
done
for f in lib/libtessel-cuda.so tests/fake/libnvidia-ml.so.1; do
    [ -r "$NEW/$f" ] || { echo "shim.sh: $NEW/$f is missing" >&2; exit 1; }
done
for b in "$BASE" $OTHER; do
    [ -r "$b/lib/libtessel-cuda.so" ] || { echo "shim.sh: $b/lib/libtessel-cuda.so is missing" >&2; exit 1; }
done
ROUNDS=${BENCH_ROUNDS:-5}
NJOBS=${BENCH_JOBS:-100}
NICE=""
[ -n "${BENCH_NICE:-}" ] && NICE="nice -n $BENCH_NICE"
T=$(mktemp -d "${TMPDIR:-/tmp}/tessel-shimbench-XXXXXX")
trap 'rm -rf "$T"' EXIT INT TERM
chmod 755 "$T"
# One job state directory per build: each build's job loads that build's interposer (through
# the namespace's /etc/ld.so.preload and LD_PRELOAD), so its load cost is part of the figures.
state() { echo "$T/state-$(echo "$1" | cksum | cut -d' ' -f1)"; }
for b in "$NEW" "$BASE" $OTHER; do
    s=$(state "$b")
    [ -d "$s" ] && continue
    mkdir -m 755 "$s"
    echo "$b/lib/libtessel-cuda.so" >"$s/ld.so.preload"
    : >"$s/limits"
done

CLK=$(getconf CLK_TCK)
# usage: "CPU_MS MINFLT" of this shell's waited-for children so far.
usage() { awk -v c="$CLK" '{sub(/^.*\) /, ""); print int(($14 + $15) * 1000 / c), $9}' /proc/$$/stat; }
now_us() { echo "${EPOCHREALTIME/./}"; }
load() { cut -d' ' -f1 /proc/loadavg; }

# round NAME BUILD: NJOBS shims of BUILD, one after the other; appends "cpu_ms faults wall_ms".
round() {
    local u0 u1 t0 t1 d="$T/job-$1" st
    mkdir -p "$d"
    st=$(state "$2") # before the first usage(): its subshell is not the jobs'
    read -r -a u0 <<<"$(usage)"
    t0=$(now_us)
    for ((i = 0; i < NJOBS; i++)); do
        $NICE "$2/bin/tessel-shim" --dir "$d" --cwd / --log-limit 67108864 \
            --preload "$2/lib/libtessel-cuda.so" --state "$st" --block-userns \
            --nvml "$NEW/tests/fake/libnvidia-ml.so.1" --gpu-mem-limit "" \
            --gpu-mem-violation kill --nvml-env TESSEL_FAKE_GPUS=2xRTX4090:24G -- /bin/true
    done
    t1=$(now_us)
    read -r -a u1 <<<"$(usage)"
    [ "$(cat "$d/exit")" = "exit 0" ] || { echo "shim.sh: $1: $(cat "$d/exit")" >&2; exit 1; }
    echo "$((u1[0] - u0[0])) $((u1[1] - u0[1])) $(((t1 - t0) / 1000))" >>"$T/$1"
}
# med NAME COLUMN: the median over the rounds of COLUMN, per job.
med() {
    awk -v c="$2" -v n="$NJOBS" '{print $c / n}' "$T/$1" | sort -n |
        awk '{v[NR]=$1} END {printf "%.2f", (NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2)}'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}'; }

echo "# bench/shortjobs/shim $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs, $(uname -sr)," \
    "new $NEW, baseline $BASE${OTHER:+, other $OTHER}, $ROUNDS x $NJOBS jobs${NICE:+, $NICE}," \
    "load $(load)"
sides="new base"
[ -n "$OTHER" ] && sides="new other base"
for ((r = 0; r < ROUNDS; r++)); do
    for s in $sides; do
        b=$NEW
        [ "$s" = base ] && b=$BASE
        [ "$s" = other ] && b=$OTHER
        round "$s" "$b"
    done
done
printf '%-28s %8s %8s %8s %8s  %s\n' "per job (median of $ROUNDS)" new "${OTHER:+other}" base \
    base/new load
for c in "1 CPU ms (user+sys)" "2 minor page faults" "3 wall ms"; do
    col=${c%% *}
    n=$(med new "$col")
    o=$(med base "$col")
    x=""
    [ -n "$OTHER" ] && x=$(med other "$col")
    printf '%-28s %8s %8s %8s %8s  %s\n' "${c#* }" "$n" "$x" "$o" "$(ratio "$o" "$n")" "$(load)"
done
