#!/bin/sh
# bench/submit/cpu.sh - tesseld's CPU time while it takes submissions at a fixed rate, a baseline
# build against this one side by side in one run (rounds alternate: A B A B), with ratios.
# On a shared machine the latency tails measure the other people's load; the CPU time a
# submission costs tesseld (all threads, and its main thread, where the scheduling cycle runs)
# does not depend on it as much (docs/bench-submit.md, "Issue 15, submit p99").
#
#   bench/submit/cpu.sh BASE_BUILD_DIR [NEW_BUILD_DIR] [ROUNDS]
#
# Each run: bench/submit/run.sh with that build's tesseld and NEW_BUILD_DIR's bench-submit,
# 4 clients paced at 2,000 submissions/s for 12 s into the holding queue; the CPU time of
# tesseld (utime + stime from /proc/PID/stat) and of its main thread (/proc/PID/task/PID/stat)
# between 2.5 s and 10.5 s, i.e. over 16,000 submissions, and the scheduling cycles it ran
# meanwhile (tessel_sched_cycles_total of /metrics).  A main thread starved of CPU by other work
# coalesces more events into fewer cycles, so on a loaded machine its CPU time falls with the
# load: the CPU time per cycle is the figure to compare there.  Prints every run (with the load
# average and the client's line), then the medians and new / baseline.
set -eu
BASE=$(cd "$1" && pwd)
NEW=$(cd "${2:-build}" && pwd)
ROUNDS=${3:-2}
HERE=$(cd "$(dirname "$0")" && pwd)
for f in "$BASE/bin/tesseld" "$NEW/bin/tesseld" "$NEW/bench/bench-submit"; do
    [ -x "$f" ] || { echo "cpu.sh: $f is missing" >&2; exit 1; }
done
T=$(mktemp -d "${TMPDIR:-/tmp}/tessel-bench-cpu-XXXXXX")
trap 'rm -rf "$T"' EXIT
TCK=$(getconf CLK_TCK)
ticks() { awk '{ print $14 + $15 }' "$1"; }
# tessel_sched_cycles_total of the tesseld whose data dir is $1
cycles() {
    curl -sf -H "Authorization: Bearer $(cat "$1/admin.token")" "http://$(cat "$1/tesseld.addr")/metrics" |
        awk '$1 == "tessel_sched_cycles_total" { print $2 }'
}
echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs, baseline $BASE, new $NEW, $ROUNDS rounds"
for r in $(seq "$ROUNDS"); do
    for b in base new; do
        dir=$NEW
        [ $b = base ] && dir=$BASE
        load=$(cut -d' ' -f1 /proc/loadavg)
        BENCH_CLIENT=$NEW/bench/bench-submit "$HERE/run.sh" "$dir" --threads 4 --seconds 12 \
            --rate 2000 >"$T/out" 2>&1 &
        run=$!
        sleep 2.5
        pid=$(pgrep -n -f "^$dir/bin/tesseld --data-dir") || {
            echo "cpu.sh: no tesseld of $dir" >&2
            cat "$T/out" >&2
            exit 1
        }
        data=$(tr '\0' '\n' </proc/$pid/cmdline | sed -n '/^--data-dir$/{n;p;}')
        c0=$(cycles "$data")
        a=$(ticks /proc/$pid/stat) am=$(ticks /proc/$pid/task/$pid/stat)
        sleep 8
        z=$(ticks /proc/$pid/stat) zm=$(ticks /proc/$pid/task/$pid/stat)
        c1=$(cycles "$data")
        wait $run
        echo "$r $b $(((z - a) * 1000 / TCK)) $(((zm - am) * 1000 / TCK)) $((c1 - c0)) $load" \
            "$(grep '^submitted' "$T/out")"
    done
done >"$T/runs"
awk '{ printf "round %s %-4s tesseld %5d ms CPU in 8 s, main thread %5d ms, %4d cycles (load %s): ",
              $1, $2, $3, $4, $5, $6
       for (i = 7; i <= NF; i++) printf "%s ", $i; print "" }' "$T/runs"
med() { awk -v b="$1" -v f="$2" '$2 == b { print $f }' "$T/runs" | sort -n |
    awk '{ a[NR] = $1 } END { print NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
echo
echo "| figure (medians) | baseline | new | new / baseline |"
echo "|---|---|---|---|"
echo "$(med base 3) $(med new 3)" | awk '{ printf "| tesseld CPU per submission (ms) | %.3f | %.3f | %.2f |\n", $1 / 16000, $2 / 16000, $2 / $1 }'
echo "$(med base 4) $(med new 4)" | awk '{ printf "| main thread, share of one CPU | %.0f %% | %.0f %% | %.2f |\n", $1 / 80, $2 / 80, $2 / $1 }'
echo "$(med base 5) $(med new 5)" | awk '{ printf "| scheduling cycles in 8 s | %d | %d | %.2f |\n", $1, $2, $2 / $1 }'
awk '{ print $2, ($5 > 0 ? $4 / $5 : 0) }' "$T/runs" >"$T/per"
mp() { awk -v b="$1" '$1 == b { print $2 }' "$T/per" | sort -n |
    awk '{ a[NR] = $1 } END { print NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
echo "$(mp base) $(mp new)" | awk '{ printf "| main thread ms CPU per cycle | %.2f | %.2f | %.2f |\n", $1, $2, $2 / $1 }'
