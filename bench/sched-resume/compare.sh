#!/bin/sh
# compare.sh - the check of a waiting restore at each tick (bench-sched-resume), this build
# against the baseline side by side in one run, with 100, 1,000 and 10,000 pending jobs, in
# both modes (steady: nothing changed since the last tick; changing: one submission before
# each tick).  The baseline is main before the kept answers (d117b4f; bench/lib/baseline.sh
# builds it), whose libsched the same bench source is compiled against here.  Baseline and
# new runs alternate (A B A B ...) so that the load of a shared machine hits both alike; each
# run prints the 1-minute load average; the table gives the medians of the timing thread's
# CPU time per tick (the figure to read on a shared machine) and new / baseline.  Both builds
# must give the same answer (checked).
#
# Usage: bench/sched-resume/compare.sh [BUILD_DIR] [REPS] [EXTRA bench-sched-resume ARGS]
#   BENCH_BASE=REF another baseline; BENCH_BASE_DIR=DIR a baseline's build directory.
set -eu
B=${1:-build}
REPS=${2:-3}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] && shift
HERE=$(dirname "$0")
BASE=$(BENCH_BASE=${BENCH_BASE:-d117b4f} "$HERE/../lib/baseline.sh")
[ -x "$B/bench/bench-sched-resume" ] || {
    echo "compare.sh: $B/bench/bench-sched-resume is missing (make bench)" >&2
    exit 1
}
for l in libtsl-sched.a libtsl-util.a; do
    [ -f "$BASE/lib/$l" ] || {
        echo "compare.sh: the baseline has no $BASE/lib/$l" >&2
        exit 1
    }
done
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
# the bench's source against the baseline's library (its public headers: the baseline's own)
${CC:-cc} -std=c11 -O2 -D_GNU_SOURCE -I"$BASE/../include" -o "$D/bench-base" \
    "$HERE/resume.c" "$BASE/lib/libtsl-sched.a" "$BASE/lib/libtsl-util.a" -lm
PIN=""
command -v taskset >/dev/null 2>&1 && PIN="taskset -c 0"
echo "# baseline: $BASE; new: $B; $(nproc) CPUs; $REPS runs each; extra args: $*"
for n in 100 1000 10000; do
    for rep in $(seq "$REPS"); do
        for build in base new; do
            exe=$B/bench/bench-sched-resume
            [ $build = base ] && exe=$D/bench-base
            load=$(cut -d' ' -f1 /proc/loadavg)
            $PIN "$exe" --pending $n "$@" | awk -v b=$build -v r=$rep -v l="$load" -v n=$n '
                { mode = $1; sub(":", "", mode)
                  for (i = 1; i <= NF; i++) { if ($i == "CPU,") c = $(i - 2); if ($i == "wall") w = $(i - 2)
                                              if ($i == "answer") a = $(i + 1) }
                  printf "%s %s %s %s %s %s %s %s\n", n, mode, b, r, c, w, a, l }'
        done
    done
done >"$D/runs"
awk '{ printf "run %s %-4s %5d pending, %-8s: %9.2f us CPU, %9.2f us wall per tick, answer %s (load %s)\n",
       $4, $3, $1, $2, $5, $6, $7, $8 }' "$D/runs"
if [ "$(awk '{ print $1, $2, $7 }' "$D/runs" | sort -u | awk '{ print $1, $2 }' | uniq -d)" ]; then
    echo "compare.sh: the builds answered differently" >&2
    exit 1
fi
echo
echo "| pending | mode | baseline us CPU / tick | new us CPU / tick | new / baseline | load (1 min) |"
echo "|---|---|---|---|---|---|"
for n in 100 1000 10000; do
    for mode in steady changing; do
        med() { awk -v n=$n -v m=$mode -v b=$1 '$1 == n && $2 == m && $3 == b { print $5 }' "$D/runs" |
            sort -n | awk '{ a[NR] = $1 } END { print NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
        bc=$(med base) nc=$(med new)
        loads=$(awk -v n=$n -v m=$mode '$1 == n && $2 == m { print $8 }' "$D/runs" | sort -n | sed -n '1p;$p' | paste -sd-)
        echo "$n $mode $bc $nc $loads" | awk '{ printf "| %s | %s | %.2f | %.2f | %.3f (1/%.0f) | %s |\n",
            $1, $2, $3, $4, $4 / $3, $3 / $4, $5 }'
    done
done
