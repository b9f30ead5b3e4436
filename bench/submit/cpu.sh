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
# 4 clients paced at 2,000 submissions/s for 14 s into the holding queue; the CPU time of
# tesseld (utime + stime from /proc/PID/stat) and of its main thread (/proc/PID/task/PID/stat)
# for 8 s from 2.5 s on (the run lasts longer: a loaded machine is slow to start
# the measurements), i.e. over 16,000 submissions, and the scheduling cycles it ran
# meanwhile (tessel_sched_cycles_total of /metrics).  A main thread starved of CPU by other work
# coalesces more events into fewer cycles, so on a loaded machine its CPU time falls with the
# load: the CPU time per cycle is the figure to compare there.  Prints every run (with the load
# average and the client's line), then the medians and new / baseline; then, per submission in
# the same window, the bytes tesseld wrote (wchar: the WAL and the checkpoints' copies), its
# system calls (all, pwrite64, fcntl, futex; counted with `perf stat` tracepoints, "-" without
# perf) and, for a build with group commit, the submissions per commit.
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
cycles() { metric "$1" tessel_sched_cycles_total; }
metric() { # DATA_DIR NAME -> its value (0 when the tesseld has no such series)
    curl -sf -H "Authorization: Bearer $(cat "$1/admin.token")" "http://$(cat "$1/tesseld.addr")/metrics" |
        awk -v m="$2" '$1 == m { v = $2 } END { print v == "" ? 0 : v }'
}
# System calls of tesseld's threads in the window, counted by perf's tracepoints (cheap, unlike
# strace); "-" for each where perf cannot count them here.
EVENTS=raw_syscalls:sys_enter,syscalls:sys_enter_pwrite64,syscalls:sys_enter_fcntl,syscalls:sys_enter_futex
window() { # PID SECONDS -> "all pwrite64 fcntl futex" counts
    rm -f "$T/perf"
    if command -v perf >/dev/null; then
        perf stat -x, -e "$EVENTS" -p "$1" -o "$T/perf" -- sleep "$2" >/dev/null 2>&1 || true
    else
        sleep "$2"
    fi
    if [ "$(grep -c sys_enter "$T/perf" 2>/dev/null)" = 4 ]; then
        awk -F, '$3 ~ /sys_enter/ { printf "%s ", ($1 ~ /^[0-9]+$/ ? $1 : "-") } END { print "" }' "$T/perf"
    else
        echo "- - - -"
    fi
}
wchar() { awk '$1 == "wchar:" { print $2 }' "/proc/$1/io"; }
echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs, baseline $BASE, new $NEW, $ROUNDS rounds"
for r in $(seq "$ROUNDS"); do
    for b in base new; do
        dir=$NEW
        [ $b = base ] && dir=$BASE
        load=$(cut -d' ' -f1 /proc/loadavg)
        BENCH_CLIENT=$NEW/bench/bench-submit "$HERE/run.sh" "$dir" --threads 4 --seconds 14 \
            --rate 2000 >"$T/out" 2>&1 &
        run=$!
        sleep 2.5
        pid=$(pgrep -n -f "^$dir/bin/tesseld --data-dir") || {
            echo "cpu.sh: no tesseld of $dir" >&2
            cat "$T/out" >&2
            exit 1
        }
        data=$(tr '\0' '\n' </proc/$pid/cmdline | sed -n '/^--data-dir$/{n;p;}')
        # A loaded machine may take longer to start it: the window begins once it answers.
        i=0
        while [ ! -s "$data/admin.token" ] && [ $i -lt 100 ]; do
            sleep 0.1
            i=$((i + 1))
        done
        c0=$(cycles "$data") s0=$(metric "$data" tessel_jobs_submitted_total)
        g0=$(metric "$data" tessel_store_group_commits_total)
        a=$(ticks /proc/$pid/stat) am=$(ticks /proc/$pid/task/$pid/stat) w0=$(wchar $pid)
        sc=$(window $pid 8)
        z=$(ticks /proc/$pid/stat) zm=$(ticks /proc/$pid/task/$pid/stat) w1=$(wchar $pid)
        c1=$(cycles "$data") s1=$(metric "$data" tessel_jobs_submitted_total)
        g1=$(metric "$data" tessel_store_group_commits_total)
        wait $run
        echo "$r $b $(((z - a) * 1000 / TCK)) $(((zm - am) * 1000 / TCK)) $((c1 - c0)) $load" \
            "$((s1 - s0)) $((w1 - w0)) $((g1 - g0)) $sc" >>"$T/extra"
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
# Per submission in the window (the submissions tesseld counted): what its threads wrote with
# write/pwrite (wchar of /proc/PID/io: the WAL, and the checkpoints' copies into the database),
# its system calls, and for the new build the submissions per group commit.
mx() { awk -v b="$1" -v f="$2" '$2 == b { print ($f == "-" || $7 <= 0) ? "-" : $f / $7 }' "$T/extra" |
    sort -n | awk '{ a[NR] = $1 } END { print NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
row() { # LABEL FIELD FORMAT
    echo "$(mx base "$2") $(mx new "$2")" | awk -v l="$1" -v f="$3" '{
        if ($1 == "-" || $2 == "-") { printf "| %s | - | - | - |\n", l; exit }
        printf "| %s | " f " | " f " | %.2f |\n", l, $1, $2, ($1 > 0 ? $2 / $1 : 0) }'
}
row "tesseld CPU per submission, all threads (ms)" 3 "%.3f"
row "bytes written (WAL, checkpoints) per submission" 8 "%.0f"
row "system calls per submission" 10 "%.1f"
row "pwrite64 per submission" 11 "%.2f"
row "fcntl per submission (SQLite's locks)" 12 "%.2f"
row "futex per submission" 13 "%.2f"
awk '$2 == "new" && $9 > 0 { printf "new: %.2f submissions per group commit (round %s)\n", $7 / $9, $1 }' "$T/extra"
