#!/bin/sh
# bench/slurm/submit.sh - submission to Slurm through tesseld --slurm against plain sbatch
# (issue 18's figure: within 1.5x of sbatch's rate and p99 latency; docs/bench-submit.md,
# "Submission to Slurm through tesseld"), side by side in one run, on the test cluster of
# tests/slurm/cluster.sh (slurmctld and two slurmd nodes in network namespaces, no plugin).
#
# One account (tslbench, made with useradd when absent) submits `true` jobs from the
# controller's network namespace, C clients at once, N submissions each, in rounds that
# alternate (sbatch, tesseld, sbatch, tesseld, ...) so that load hits both alike:
#
#   sbatch   `sbatch --parsable -o /dev/null --wrap true`, straight to slurmctld
#   tesseld  `tessel run -d -- true` on tesseld's local socket: tesseld submits as the account
#            (its submitter, or sbatch: docs/slurm-backend.md) and records the job before it answers
#
# Each client is a shell loop that times every command with `date +%s%N` before and after
# (the second date's start, about 1 ms, is in every figure, of both sides alike).  A round's
# rate is its submissions over its wall time; latencies are pooled over the rounds of a side,
# p50/p99 nearest-rank.  Before each round: no job left running or pending (each side's jobs
# end before the other's start), so both meet a cluster at rest; ended jobs stay in slurmctld
# (MinJobAge, 300 s), which both sides' later rounds meet alike.
#
# Usage (root): bench/slurm/submit.sh [BUILD]   (BUILD: the build directory, default build)
#   BENCH_CLIENTS=C   clients at once (default 4)
#   BENCH_SUBMITS=N   submissions per client per round (default 50)
#   BENCH_ROUNDS=R    rounds of each side (default 3)
#   BENCH_KEEP=DIR    keep each client's latencies (us, in submission order) in DIR
#   BENCH_SUBMIT=HOW  tesseld's slurm-submit: libslurm (its long-lived submitters, the default
#                     when tessel-slurm-submit is built) or sbatch (an sbatch per job)
#   TESSELD_ARGS=...  more options for tesseld (e.g. --slurm-poll 5)
#   BENCH_LOG=FILE    keep tesseld's log there
#   BENCH_HELD=1      both sides submit to a partition that is DOWN (slurm.conf's "held"; tesseld's
#                     queue default mapped onto it): the jobs stay pending, so that the 2 CPUs run
#                     the submissions and not the jobs (on a cluster the jobs run on the nodes,
#                     not on the host that submits; here they share it); before each round the
#                     held jobs are cancelled (scancel as root) instead of waited for
set -u
C=${BENCH_CLIENTS:-4}
N=${BENCH_SUBMITS:-50}
R=${BENCH_ROUNDS:-3}
for v in "$C" "$N" "$R"; do
    case $v in
    *[!0-9]* | '' | 0) echo "submit.sh: BENCH_CLIENTS, BENCH_SUBMITS, BENCH_ROUNDS: counts" >&2; exit 2 ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "submit.sh: run as root (network namespaces, slurmd)" >&2; exit 1; }
SRC=$(cd "$(dirname "$0")/../.." && pwd)
B=$(cd "${1:-${TESSEL_BUILD:-$SRC/build}}" && pwd)
for f in "$B/bin/tesseld" "$B/bin/tessel"; do
    [ -x "$f" ] || { echo "submit.sh: $f is not built (make)" >&2; exit 1; }
done
for c in jq su; do
    command -v $c >/dev/null || { echo "submit.sh: $c is missing" >&2; exit 1; }
done
U=tslbench
getent passwd $U >/dev/null || useradd -r -M -d /nonexistent -s /usr/sbin/nologin $U ||
    { echo "submit.sh: useradd $U failed" >&2; exit 1; }
. "$SRC/tests/slurm/cluster.sh"
TPID=
W=
cleanup() {
    [ -n "$TPID" ] && kill "$TPID" 2>/dev/null && wait "$TPID" 2>/dev/null
    [ -n "${BENCH_LOG:-}" ] && [ -n "$W" ] && cp "$W/tesseld.log" "$BENCH_LOG"
    [ -n "${BENCH_KEEP:-}" ] && [ -n "$W" ] && mkdir -p "$BENCH_KEEP" && cp "$W"/lat-* "$BENCH_KEEP"
    tsc_stop
    [ -n "$W" ] && rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
TSC_CPUS=64
HELD=${BENCH_HELD:-0}
PART=
QMAP=
if [ "$HELD" = 1 ]; then
    TSC_EXTRA_CONF="PartitionName=held Nodes=n1,n2 MaxTime=INFINITE State=DOWN"
    PART="-p held"
    QMAP="--slurm-queues default=held"
fi
tsc_start "" || { echo "submit.sh: the cluster: $TSC_WHY" >&2; exit 1; }
W=$(mktemp -d /tmp/tessel-bench-submit.XXXXXX)
chmod 755 "$W"
SOCK=$W/tesseld.sock
# --submit-rate 0: the per-user limit (5 a second by default) is a policy, not a cost.
nsenter --net=/run/netns/$tsc_ns-ctl "$B/bin/tesseld" --data-dir "$W/data" --no-listen \
    --socket "$SOCK" --no-cgroups --submit-rate 0 --slurm --slurm-conf "$TSC/etc/slurm.conf" \
    --slurm-submit "${BENCH_SUBMIT:-auto}" $QMAP ${TESSELD_ARGS:-} >"$W/tesseld.log" 2>&1 &
TPID=$!
i=0
until [ -S "$SOCK" ]; do
    i=$((i + 1))
    if [ $i -gt 300 ] || ! kill -0 "$TPID" 2>/dev/null; then
        echo "submit.sh: tesseld did not start:" >&2
        cat "$W/tesseld.log" >&2
        exit 1
    fi
    sleep 0.1
done

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $C clients x $N submissions, $R rounds per side, account $U, Slurm $(sbatch --version | cut -d' ' -f2), $(grep -o 'submitted [a-z]* [a-z]*' "$W/tesseld.log" | head -n 1)$([ "$HELD" = 1 ] && echo ', jobs held (a partition DOWN)')"

# settle: no job pending or running in Slurm (at most 120 s; with BENCH_HELD, the held ones
# cancelled first).
settle() {
    [ "$HELD" = 1 ] && tsc scancel -p held
    i=0
    while [ -n "$(tsc squeue -h -t pending,running,completing -o %i 2>/dev/null)" ]; do
        i=$((i + 1))
        [ $i -gt 1200 ] && { echo "submit.sh: jobs still in Slurm after 120 s" >&2; exit 1; }
        sleep 0.1
    done
}

# round SIDE K: C clients at once; their latencies (us) into $W/lat-SIDE-K-c, the round's wall
# time (us) into $W/wall-SIDE.
round() {
    case $1 in
    sbatch) cmd="SLURM_CONF=$TSC/etc/slurm.conf sbatch $PART --parsable -o /dev/null --wrap true" ;;
    tesseld) cmd="TESSEL_URL=unix:$SOCK TESSEL_CONFIG=/nonexistent/c HOME=/nonexistent $B/bin/tessel run -d -- true" ;;
    esac
    settle
    [ "$1" = tesseld ] && cpu0=$(tcpu)
    t0=$(date +%s%N)
    c=0
    pids=
    while [ $c -lt "$C" ]; do
        : >"$W/cpu-$1-$2-$c"
        chmod 666 "$W/cpu-$1-$2-$c"
        nsenter --net=/run/netns/$tsc_ns-ctl su -s /bin/sh $U -c "cd /; i=0
            while [ \$i -lt $N ]; do
                t0=\$(date +%s%N)
                $cmd >/dev/null 2>>$W/errors || echo failed >>$W/errors
                t1=\$(date +%s%N)
                echo \$(((t1 - t0) / 1000))
                i=\$((i + 1))
            done
            times >$W/cpu-$1-$2-$c" >"$W/lat-$1-$2-$c" &
        pids="$pids $!"
        c=$((c + 1))
    done
    wait $pids
    echo $((($(date +%s%N) - t0) / 1000)) >>"$W/wall-$1"
    # tesseld's CPU in the round (its own; the sbatch it ran), from the end of its last round
    # on: the poll's squeue between rounds is counted too.
    [ "$1" = tesseld ] && echo "$cpu0 $(tcpu)" >>"$W/daemon-cpu"
}

# tesseld's CPU time so far, ms: "own children" (utime+stime, cutime+cstime of /proc/PID/stat,
# fields 14-17 after the command's name; clock ticks).  Children: the ended ones (cutime,
# cstime: sbatch, squeue, submitters that ended) and the live tessel-slurm-submit processes
# (utime+stime: a submitter lives across rounds, counted as it goes).
tcpu() {
    hz=$(getconf CLK_TCK)
    live=0
    for p in $(pgrep -P "$TPID" -x tessel-slurm-su); do
        live=$((live + $(sed 's/^.*) //' "/proc/$p/stat" 2>/dev/null | awk '{print $12 + $13}')))
    done
    sed 's/^.*) //' "/proc/$TPID/stat" | awk -v hz="$hz" -v live="$live" '{printf "%d %d", ($12 + $13) * 1000 / hz, ($14 + $15 + live) * 1000 / hz}'
}

: >"$W/errors"
chmod 666 "$W/errors"
k=0
while [ $k -lt "$R" ]; do
    round sbatch $k
    round tesseld $k
    k=$((k + 1))
done
if [ -s "$W/errors" ]; then
    echo "submit.sh: failed submissions:" >&2
    sort "$W/errors" | uniq -c | head >&2
    exit 1
fi

# stats SIDE: "rate p50 p99 max" (rate: the median round's submissions a second; ms)
stats() {
    rate=$(sort -n "$W/wall-$1" | awk -v n=$((C * N)) '{v[NR] = $1} END {printf "%.1f", n / (v[int((NR + 1) / 2)] / 1e6)}')
    cat "$W"/lat-"$1"-* | sort -n | awk -v rate="$rate" '{v[NR] = $1}
        END {p50 = v[int(NR * 0.50 + 0.999999)]; p99 = v[int(NR * 0.99 + 0.999999)];
             printf "%s %.1f %.1f %.1f\n", rate, p50 / 1000, p99 / 1000, v[NR] / 1000}'
}
set -- $(stats sbatch)
s_rate=$1 s_p50=$2 s_p99=$3 s_max=$4
set -- $(stats tesseld)
t_rate=$1 t_p50=$2 t_p99=$3 t_max=$4
printf '%-30s %10s %10s %10s %10s\n' "side ($((C * N * R)) submissions)" "per s" "p50 ms" "p99 ms" "max ms"
printf '%-30s %10s %10s %10s %10s\n' "sbatch" "$s_rate" "$s_p50" "$s_p99" "$s_max"
printf '%-30s %10s %10s %10s %10s\n' "tessel run -d (tesseld)" "$t_rate" "$t_p50" "$t_p99" "$t_max"
awk -v sr="$s_rate" -v tr="$t_rate" -v sp="$s_p99" -v tp="$t_p99" 'BEGIN {
    printf "ratios: rate %.2fx slower, p99 %.2fx (target: both at most 1.5x)\n", sr / tr, tp / sp }'
# Where the time goes, CPU per submission: each side's clients (shell loop, date, and sbatch or
# the tessel CLI: `times` of each loop), and tesseld's own and that of the sbatch it runs.
total=$((C * N * R))
cpu_of() { for f in "$W"/cpu-"$1"-*; do tail -n 1 "$f"; done | awk -v n="$total" '
    {for (i = 1; i <= 2; i++) {split($i, a, /[ms]/); s += a[1] * 60 + a[2]}}
    END {printf "%.2f", s * 1000 / n}'; }
echo "CPU per submission, ms: sbatch clients $(cpu_of sbatch); tessel clients $(cpu_of tesseld);" \
    "$(awk -v n="$total" '{o += $3 - $1; c += $4 - $2} END {printf "tesseld itself %.2f, its sbatch children %.2f", o / n, c / n}' "$W/daemon-cpu")"
n=$(curl -s --unix-socket "$SOCK" "http://localhost/v1/jobs?limit=10000" | jq '.jobs | length')
echo "# tesseld recorded $n jobs (expected $((C * N * R)))"
