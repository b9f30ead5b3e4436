#!/bin/sh
# bench/slurm/poll.sh - what tesseld --slurm's poll costs (docs/slurm-backend.md, "How tesseld
# learns a job's changes"): the wall time and the bytes of one `squeue --json --states=all`
# (what tesseld runs every --slurm-poll seconds while it has active Slurm jobs) with N jobs
# held in slurmctld, on the test cluster of tests/slurm/cluster.sh (no plugin needed).  Jobs
# are submitted held (sbatch --hold), so the count stays as set while the polls run.
#
# Usage (root): bench/slurm/poll.sh [N...]   (default: 1 100 500)
#   BENCH_POLLS=K   polls timed per N (default 20); the median and the largest are printed
set -u
POLLS=${BENCH_POLLS:-20}
case $POLLS in
*[!0-9]* | '' | 0) echo "poll.sh: BENCH_POLLS=$POLLS: a count" >&2; exit 2 ;;
esac
[ "$(id -u)" = 0 ] || { echo "poll.sh: run as root (network namespaces, slurmd)" >&2; exit 1; }
SRC=$(cd "$(dirname "$0")/../.." && pwd)
. "$SRC/tests/slurm/cluster.sh"
trap 'tsc_stop' EXIT
tsc_start "" || { echo "poll.sh: the cluster: $TSC_WHY" >&2; exit 1; }
[ $# -gt 0 ] || set -- 1 100 500
have=0
printf '%8s %12s %12s %14s\n' jobs "median ms" "max ms" "bytes"
for n in "$@"; do
    while [ "$have" -lt "$n" ]; do
        tsc sbatch --hold --parsable -o /dev/null --wrap true >/dev/null || exit 1
        have=$((have + 1))
    done
    : >"$TSC/times"
    i=0
    while [ $i -lt "$POLLS" ]; do
        t0=$(date +%s%N)
        tsc squeue --json --states=all >"$TSC/poll.json" || exit 1
        t1=$(date +%s%N)
        echo $(((t1 - t0) / 1000)) >>"$TSC/times"
        i=$((i + 1))
    done
    bytes=$(wc -c <"$TSC/poll.json")
    sort -n "$TSC/times" | awk -v n="$have" -v b="$bytes" '{v[NR] = $1}
        END {m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
             printf "%8d %12.1f %12.1f %14d\n", n, m / 1000, v[NR] / 1000, b}'
done
