#!/bin/bash
# bench/interposer/load.sh - what libtessel-cuda costs a process that never calls CUDA or NVML
# (every process of a job loads it: `true`, a shell, the job's tools), this build against the
# baseline (bench/lib/baseline.sh), interleaved in one run (rounds: none, base, new), with the
# difference each library adds to a plain `/bin/true` and the ratio of those differences.
# Figures: CPU time (user + system) and minor page faults of the shell's waited-for children,
# per process, medians of the rounds; the library's relocations and RELRO size beside them.
#
#   bench/interposer/load.sh [BUILD_DIR [BASE_BUILD_DIR]]   (after `make build-all`)
#
# BENCH_ROUNDS (5) rounds of BENCH_RUNS (200) processes per side; BENCH_NICE=N runs at nice N;
# BENCH_PROG (/bin/true) is the program started.  Results: docs/bench-interposer.md.
set -eu
NEW=$(cd "${1:-build}" && pwd)
SRC=$(cd "$(dirname "$0")/../.." && pwd)
if [ -n "${2:-}" ]; then
    BASE=$(cd "$2" && pwd)
else
    BASE=$("$SRC/bench/lib/baseline.sh")
fi
for b in "$NEW" "$BASE"; do
    [ -r "$b/lib/libtessel-cuda.so" ] || { echo "load.sh: $b/lib/libtessel-cuda.so is missing" >&2; exit 1; }
done
ROUNDS=${BENCH_ROUNDS:-5}
RUNS=${BENCH_RUNS:-200}
PROG=${BENCH_PROG:-/bin/true}
# The shell itself is reniced (a `nice` command before each run would load the library too).
NICE=""
if [ -n "${BENCH_NICE:-}" ]; then
    renice -n "$BENCH_NICE" -p $$ >/dev/null
    NICE="nice $BENCH_NICE"
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/tessel-loadbench-XXXXXX")
trap 'rm -rf "$T"' EXIT INT TERM

CLK=$(getconf CLK_TCK)
# usage: "CPU_US MINFLT" of this shell's waited-for children so far.
usage() { awk -v c="$CLK" '{sub(/^.*\) /, ""); print int(($14 + $15) * 1000000 / c), $9}' /proc/$$/stat; }
load() { cut -d' ' -f1 /proc/loadavg; }

# round NAME PRELOAD: RUNS processes of PROG, one after the other; appends "cpu_us faults".
round() {
    local u0 u1
    read -r -a u0 <<<"$(usage)"
    for ((i = 0; i < RUNS; i++)); do
        LD_PRELOAD=$2 "$PROG"
    done
    read -r -a u1 <<<"$(usage)"
    echo "$((u1[0] - u0[0])) $((u1[1] - u0[1]))" >>"$T/$1"
}
# med NAME COLUMN SCALE: the median over the rounds of COLUMN, per process, divided by SCALE.
med() {
    awk -v c="$2" -v n="$RUNS" -v s="$3" '{print $c / n / s}' "$T/$1" | sort -n |
        awk '{v[NR]=$1} END {printf "%.3f", (NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2)}'
}
calc() { awk "BEGIN {printf \"%.3f\", $1}"; }
relocs() { readelf -rW "$1" | grep -c '^[0-9a-f]\{16\} '; }
relro() { echo $(($(readelf -lW "$1" | awk '$1 == "GNU_RELRO" {print $6}'))); }

echo "# bench/interposer/load $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs, $(uname -sr)," \
    "new $NEW, baseline $BASE, $ROUNDS x $RUNS runs of $PROG${NICE:+, $NICE}," \
    "load $(load)"
for ((r = 0; r < ROUNDS; r++)); do
    round none ""
    round base "$BASE/lib/libtessel-cuda.so"
    round new "$NEW/lib/libtessel-cuda.so"
done
printf '%-34s %9s %9s %9s %9s %9s %9s  %s\n' "per process (median of $ROUNDS)" none base new \
    "base-none" "new-none" "ratio" load
for c in "1 1000 CPU ms (user+sys)" "2 1 minor page faults"; do
    set -- $c
    col=$1 scale=$2
    shift 2
    z=$(med none "$col" "$scale")
    b=$(med base "$col" "$scale")
    n=$(med new "$col" "$scale")
    db=$(calc "$b - $z")
    dn=$(calc "$n - $z")
    printf '%-34s %9s %9s %9s %9s %9s %9s  %s\n' "$*" "$z" "$b" "$n" "$db" "$dn" \
        "$(calc "($dn > 0 ? $db / $dn : 0)")" "$(load)"
done
printf '%-34s %9s %9s %9s\n' "library: relocations" "" "$(relocs "$BASE/lib/libtessel-cuda.so")" \
    "$(relocs "$NEW/lib/libtessel-cuda.so")"
printf '%-34s %9s %9s %9s\n' "library: RELRO bytes" "" "$(relro "$BASE/lib/libtessel-cuda.so")" \
    "$(relro "$NEW/lib/libtessel-cuda.so")"
