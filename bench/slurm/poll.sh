#!/bin/sh
# bench/slurm/poll.sh - what tesseld --slurm's poll costs (docs/slurm-backend.md, "How tesseld
# learns a job's changes"), with N jobs held in slurmctld, on the test cluster of
# tests/slurm/cluster.sh (no plugin needed), three ways side by side:
#
#   squeue     `squeue --json --states=all`, what tesseld ran every poll until 2026-11-28 (and
#              still runs with slurm-submit = sbatch): every job slurmctld holds, as JSON
#   read-all   tessel-slurm-submit --read asked for every job ({"all": true}: a poll while
#              someone looks at the direct jobs' view)
#   read-ids   the same reader asked for ACTIVE ids ({"ids": [...]}: a poll of tesseld's
#              active jobs; up to 16 are loaded one by one, more by one load filtered)
#
# The reader is started once and kept (as tesseld keeps it); squeue is a process per poll.
# Jobs are submitted held (sbatch --hold), so the count stays as set while the polls run.
# Per way: the wall time of a poll (median, largest), the answer's bytes, the CPU a poll of the
# client (squeue, or the reader) and of slurmctld (/proc, over the K polls).
#
# Usage (root): bench/slurm/poll.sh [N...]   (default: 1 100 500)
#   BENCH_POLLS=K   polls timed per N and way (default 20)
#   BENCH_ACTIVE=A  ids of a read-ids poll (default 10; the newest held jobs)
#   BENCH_BUILD=DIR the build whose tessel-slurm-submit reads (default build)
set -u
POLLS=${BENCH_POLLS:-20}
ACTIVE=${BENCH_ACTIVE:-10}
for v in "$POLLS" "$ACTIVE"; do
    case $v in
    *[!0-9]* | '' | 0) echo "poll.sh: BENCH_POLLS, BENCH_ACTIVE: counts ($v)" >&2; exit 2 ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "poll.sh: run as root (network namespaces, slurmd)" >&2; exit 1; }
SRC=$(cd "$(dirname "$0")/../.." && pwd)
B=$(cd "${BENCH_BUILD:-$SRC/build}" && pwd)
READER=$B/bin/tessel-slurm-submit
[ -x "$READER" ] || { echo "poll.sh: $READER is not built (make)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "poll.sh: python3 is needed" >&2; exit 1; }
. "$SRC/tests/slurm/cluster.sh"
trap 'tsc_stop' EXIT
tsc_start "" || { echo "poll.sh: the cluster: $TSC_WHY" >&2; exit 1; }
[ $# -gt 0 ] || set -- 1 100 500
echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $POLLS polls per way, read-ids asks for $ACTIVE ids, reader $READER"
CTLD=$(cat "$TSC/slurmctld.pid")
# CPU (user + system) of pid $1 in microseconds.
cpu_of() { awk -v t="$(getconf CLK_TCK)" '{sub(/.*\) /, ""); split($0, v, " ");
    printf "%d\n", (v[12] + v[13]) * 1000000 / t}' "/proc/$1/stat"; }
# CPU (user + system) of this shell's waited-for children (the squeues), in microseconds.
kids_cpu() { awk -v t="$(getconf CLK_TCK)" '{sub(/.*\) /, ""); split($0, v, " ");
    printf "%d\n", (v[14] + v[15]) * 1000000 / t}' "/proc/$$/stat"; }
# The median and the largest of the microsecond figures in file $1.
stats() { sort -n "$1" | awk '{v[NR] = $1} END {m = (NR % 2) ? v[(NR + 1) / 2] :
    (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%10.1f %10.1f", m / 1000, v[NR] / 1000}'; }
have=0
ids=""
printf '%6s %-9s %10s %10s %10s %12s %14s %10s\n' jobs way "median ms" "max ms" bytes \
    "client ms" "slurmctld ms" "vs squeue"
for n in "$@"; do
    while [ "$have" -lt "$n" ]; do
        id=$(tsc sbatch --hold --parsable -o /dev/null --wrap true) || exit 1
        ids="$ids $id"
        have=$((have + 1))
    done
    active=$(echo $ids | tr ' ' '\n' | tail -n "$ACTIVE" | paste -sd, -)
    # squeue: a process a poll.
    : >"$TSC/times"
    c0=$(cpu_of "$CTLD")
    k0=$(kids_cpu)
    i=0
    while [ $i -lt "$POLLS" ]; do
        t0=$(date +%s%N)
        tsc squeue --json --states=all >"$TSC/poll.json" || exit 1
        t1=$(date +%s%N)
        echo $(((t1 - t0) / 1000)) >>"$TSC/times"
        i=$((i + 1))
    done
    k1=$(kids_cpu)
    c1=$(cpu_of "$CTLD")
    sq_med=$(stats "$TSC/times" | awk '{print $1}')
    printf '%6d %-9s %s %10d %12.2f %14.2f %10s\n' "$have" squeue "$(stats "$TSC/times")" \
        "$(wc -c <"$TSC/poll.json")" "$(((k1 - k0) / POLLS))e-3" "$(((c1 - c0) / POLLS))e-3" "1.00"
    for way in read-all read-ids; do
        case $way in
        read-all) req='{"all": true}' ;;
        *) req="{\"ids\": [$active]}" ;;
        esac
        c0=$(cpu_of "$CTLD")
        tsc python3 "$SRC/tests/slurm/reader.py" "$READER" "$req" "$POLLS" >"$TSC/read.out" ||
            exit 1
        c1=$(cpu_of "$CTLD")
        sed '$d' "$TSC/read.out" >"$TSC/times"
        set -- $(tail -n 1 "$TSC/read.out")
        med=$(stats "$TSC/times" | awk '{print $1}')
        printf '%6d %-9s %s %10d %12.2f %14.2f %10s\n' "$have" "$way" "$(stats "$TSC/times")" \
            "$2" "$(($4 / POLLS))e-3" "$(((c1 - c0) / POLLS))e-3" \
            "$(awk -v a="$med" -v b="$sq_med" 'BEGIN {printf "%.3f", (b > 0) ? a / b : 0}')"
    done
done
