#!/bin/sh
# bench/cli/run.sh - how light is `tessel`: its startup, and a loop of `tessel run -d -- true`,
# against the baseline's tessel (bench/lib/baseline.sh: main before issue 15) and Slurm's sbatch
# on the same machine, side by side in one run, interleaved (A B C, then B C A, ...) so that load hits all
# alike.  docs/cli.md, "Performance", records the results.
#
#   bench/cli/run.sh [BUILD_DIR]           (after `make`; default build)
#
# BENCH_STARTS=N   runs per startup round (default 500)
# BENCH_SUBMITS=N  submissions per loop round (default 200)
# BENCH_ROUNDS=N   rounds of each (default 3); the median round is reported
#
# (a) startup: `tessel --version` (new, baseline) and `sbatch --version`, N runs each round.
# (b) submissions: `tessel run -d -- true` through tesseld's local socket and through TCP (new
#     and baseline CLI against the same tesseld of this build: only the CLI differs), and
#     `sbatch --wrap true` against Slurm 22.05 from Debian (slurmctld + slurmd + munged of the
#     benchmark's own, on loopback, in a temporary directory; installed with apt when missing).
#     Jobs run (tesseld: fake GPUs, no cgroups; Slurm: linuxproc, no cgroups, the node declared
#     with 64 CPUs so that, as on tesseld, the jobs of a loop run side by side instead of one at
#     a time).  Each loop starts once the jobs of the loops before it have ended (settle).

# (c) the same loops with jobs that wait on a dependency (`--after J` / `--dependency=afterok:J`,
#     J a long sleep): submission only, no job starts or ends on the machine meanwhile.
# Every daemon it started is stopped when it ends, whatever happens.  Run as root.
# BENCH_FS=journal keeps all of it (tesseld's data, Slurm's state and spool) on an ext4 with a
# journal made for the run (bench/lib/journalfs.sh says why); BENCH_FS=host (the default) in
# $TMPDIR.
set -eu
B=$(cd "${1:-build}" && pwd)
STARTS=${BENCH_STARTS:-500}
SUBMITS=${BENCH_SUBMITS:-200}
ROUNDS=${BENCH_ROUNDS:-3}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "run.sh: run as root (Slurm's daemons)" >&2; exit 1; }
for f in "$B/bin/tesseld" "$B/bin/tessel"; do
    [ -x "$f" ] || { echo "run.sh: $f is missing (make)" >&2; exit 1; }
done
BASE=$("$SRC/bench/lib/baseline.sh")
if ! command -v sbatch >/dev/null || ! command -v slurmctld >/dev/null ||
    ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
    echo "run.sh: installing Slurm (slurmctld slurmd slurm-client munge)" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        slurmctld slurmd slurm-client munge >/dev/null
fi

TOP=$(mktemp -d "${TMPDIR:-/tmp}/tessel-bench-cli-XXXXXX")
chmod 755 "$TOP"
. "$SRC/bench/lib/journalfs.sh"
benchfs_select "$TOP" || { rm -rf "$TOP"; exit 1; }
T=$BENCH_DATA
FS=$BENCH_FS_NAME
chmod 755 "$T"
TPID=
SLURM_BLOCKER=
TESSEL_BLOCKER=
SOCK_URL=
cleanup() {
    # Jobs first: a job step outlives slurmd, a job's supervisor outlives tesseld.  Every
    # Slurm job of this benchmark is cancelled and gone (its slurmstepd ended) before slurmd.
    if [ -s "$T/slurm/slurmctld.pid" ]; then
        squeue -h -o %i 2>/dev/null | xargs -r scancel 2>/dev/null
        i=0
        while [ -n "$(squeue -h -o %i 2>/dev/null)" ] && [ $i -lt 100 ]; do
            i=$((i + 1))
            sleep 0.1
        done
    fi
    [ -n "$TESSEL_BLOCKER" ] && TESSEL_URL=$SOCK_URL "$B/bin/tessel" kill "$TESSEL_BLOCKER" >/dev/null 2>&1
    [ -n "$TPID" ] && kill "$TPID" 2>/dev/null && wait "$TPID" 2>/dev/null
    for p in "$T/slurm/slurmd.pid" "$T/slurm/slurmctld.pid" "$T/munge/munged.pid"; do
        [ -s "$p" ] && kill "$(cat "$p")" 2>/dev/null
    done
    sleep 0.5
    for p in "$T/slurm/slurmd.pid" "$T/slurm/slurmctld.pid" "$T/munge/munged.pid"; do
        [ -s "$p" ] && kill -9 "$(cat "$p")" 2>/dev/null
    done
    if [ "$T" != "$TOP" ]; then
        journalfs_umount "$TOP"
    fi
    rm -rf "$TOP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# ---- Slurm on loopback, all of it in $T (RECIPES.md sections 1 and 6) ----
M=$T/munge
D=$T/slurm
mkdir -p "$M" "$D/state" "$D/spool" "$D/log" "$D/work"
chown munge:munge "$M" 2>/dev/null || true
mungekey -c -k "$M/munge.key" >/dev/null 2>&1
chown munge:munge "$M/munge.key" 2>/dev/null || true
su -s /bin/sh munge -c "/usr/sbin/munged --socket=$M/munge.sock --key-file=$M/munge.key \
    --pid-file=$M/munged.pid --seed-file=$M/munge.seed --log-file=$M/munged.log" ||
    { echo "run.sh: munged did not start" >&2; exit 1; }
HOST=$(hostname -s)
# Ports below the ephemeral range, away from Slurm's defaults (another Slurm may run here).
cat >"$D/slurm.conf" <<EOF
ClusterName=tbench
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=26817
SlurmdPort=26818
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$M/munge.sock
CredType=cred/munge
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool/%n
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
MpiDefault=none
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
MailProg=/bin/true
SlurmdParameters=config_overrides
DefMemPerCPU=10
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=64 RealMemory=64000 State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
SLURM_CONF=$D/slurm.conf
export SLURM_CONF
/usr/sbin/slurmctld -i || { echo "run.sh: slurmctld did not start" >&2; exit 1; }
/usr/sbin/slurmd || { echo "run.sh: slurmd did not start" >&2; exit 1; }
i=0
until sinfo -h -o %T 2>/dev/null | grep -q idle; do
    i=$((i + 1))
    [ $i -gt 200 ] && { echo "run.sh: Slurm's node is not idle:" >&2; tail "$D/log/"*.log >&2; exit 1; }
    sleep 0.1
done

# ---- tesseld of this build ----
"$B/bin/tesseld" --data-dir "$T/data" --listen 127.0.0.1:0 --socket "$T/tesseld.sock" \
    --fake-gpus 2xRTX4090:24G --no-cgroups >"$T/tesseld.log" 2>&1 &
TPID=$!
i=0
while [ ! -s "$T/data/tesseld.addr" ] || [ ! -s "$T/data/admin.token" ]; do
    i=$((i + 1))
    if [ $i -gt 300 ] || ! kill -0 "$TPID" 2>/dev/null; then
        echo "run.sh: tesseld did not start:" >&2
        cat "$T/tesseld.log" >&2
        exit 1
    fi
    sleep 0.1
done
TCP_URL="http://$(cat "$T/data/tesseld.addr")"
SOCK_URL="unix:$T/tesseld.sock"
ADMIN=$(cat "$T/data/admin.token")
TESSEL_CONFIG=$T/no-config
export TESSEL_CONFIG
unset TESSEL_URL TESSEL_TOKEN http_proxy all_proxy ALL_PROXY

now_ns() { date +%s%N; }
load() { cut -d' ' -f1 /proc/loadavg; }
# median of the numbers on stdin
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# startup CMD...: N runs; prints microseconds per run
startup() {
    t0=$(now_ns)
    n=0
    while [ $n -lt "$STARTS" ]; do
        "$@" >/dev/null 2>&1 </dev/null
        n=$((n + 1))
    done
    echo $((($(now_ns) - t0) / 1000 / STARTS))
}

# settle: wait until no job of either system runs or waits to run, except the blockers and the
# jobs held on them, so that each loop starts on a machine at rest: the jobs of one loop (a
# Slurm job's slurmstepd costs tens of ms of CPU) never run during the next loop of the other
# system.  At most 120 s.
settle() {
    i=0
    while [ $i -lt 1200 ]; do
        s=$(squeue -h -o '%i %r' 2>/dev/null | awk -v b="$SLURM_BLOCKER" '$1 != b && $2 != "Dependency"' | wc -l)
        t=$(curl -sf --unix-socket "$T/tesseld.sock" 'http://localhost/v1/jobs?state=active&limit=10000' |
            jq --argjson b "$TESSEL_BLOCKER" '[.jobs[] | select(.id != $b and (.held | not))] | length')
        [ "$s" = 0 ] && [ "$t" = 0 ] && return 0
        i=$((i + 1))
        sleep 0.1
    done
    echo "run.sh: jobs still running after 120 s (Slurm: $s, tessel: $t)" >&2
    squeue -h -o "%T %r" 2>/dev/null | sort | uniq -c >&2
    exit 1
}

# rotate N WORD...: the words, the first N (modulo their count) moved to the end.
rotate() {
    n=$1
    shift
    n=$((n % $#))
    while [ "$n" -gt 0 ]; do
        w=$1
        shift
        set -- "$@" "$w"
        n=$((n - 1))
    done
    echo "$@"
}

# submit WHAT [CLI URL TOKEN] [DEP]: SUBMITS submissions (waiting on job DEP if given); prints
# submissions per second (x100, integer)
submit() {
    settle
    t0=$(now_ns)
    n=0
    case $1 in
    sbatch)
        cd "$D/work"
        while [ $n -lt "$SUBMITS" ]; do
            sbatch ${2:+--dependency=afterok:$2} --wrap true >/dev/null ||
                { echo "run.sh: sbatch failed" >&2; exit 1; }
            n=$((n + 1))
        done
        cd "$SRC"
        ;;
    *)
        cli=$2
        url=$3
        tok=$4
        while [ $n -lt "$SUBMITS" ]; do
            TESSEL_URL=$url TESSEL_TOKEN=$tok "$cli" run -d ${5:+--after $5} -- true >/dev/null ||
                { echo "run.sh: $cli run -d failed" >&2; exit 1; }
            n=$((n + 1))
        done
        ;;
    esac
    echo $((SUBMITS * 100000000000 / ($(now_ns) - t0)))
}

echo "# bench/cli/run.sh: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs, $(uname -sr), build $B, baseline $BASE"
echo "# $(sbatch --version), $STARTS starts and $SUBMITS submissions a round, $ROUNDS rounds (median), data on $FS"
echo "# shared objects loaded (ldd): tessel $(ldd "$B/bin/tessel" | wc -l), baseline tessel $(ldd "$BASE/bin/tessel" | wc -l), sbatch $(ldd "$(command -v sbatch)" | wc -l)"

# The jobs that part (c)'s submissions wait on.
cd "$D/work"
SLURM_BLOCKER=$(sbatch --parsable --mem=10M --wrap "sleep 100000") || { echo "run.sh: sbatch failed" >&2; exit 1; }
cd "$SRC"
TESSEL_BLOCKER=$(TESSEL_URL=$SOCK_URL "$B/bin/tessel" run -d -- sleep 100000) ||
    { echo "run.sh: tessel run failed" >&2; exit 1; }

R=$T/results
mkdir -p "$R"
r=1
while [ $r -le "$ROUNDS" ]; do
    echo "$(load)" >>"$R/load"
    startup "$B/bin/tessel" --version >>"$R/start-new"
    startup "$BASE/bin/tessel" --version >>"$R/start-base"
    startup sbatch --version >>"$R/start-sbatch"
    echo "$(load)" >>"$R/load"
    # The five loops in an order rotated by one each round, so that no loop always follows the
    # same one (Slurm's daemons keep working for a moment after their jobs have left squeue).
    for k in $(rotate $((r - 1)) sbatch new-sock base-sock new-tcp base-tcp); do
        case $k in
        sbatch) submit sbatch ;;
        new-sock) submit tessel "$B/bin/tessel" "$SOCK_URL" "" ;;
        base-sock) submit tessel "$BASE/bin/tessel" "$SOCK_URL" "" ;;
        new-tcp) submit tessel "$B/bin/tessel" "$TCP_URL" "$ADMIN" ;;
        base-tcp) submit tessel "$BASE/bin/tessel" "$TCP_URL" "$ADMIN" ;;
        esac >>"$R/sub-$k"
    done
    echo "$(load)" >>"$R/load"
    submit sbatch "$SLURM_BLOCKER" >>"$R/dep-sbatch"
    submit tessel "$B/bin/tessel" "$SOCK_URL" "" "$TESSEL_BLOCKER" >>"$R/dep-new-sock"
    submit tessel "$BASE/bin/tessel" "$SOCK_URL" "" "$TESSEL_BLOCKER" >>"$R/dep-base-sock"
    echo "$(load)" >>"$R/load"
    r=$((r + 1))
done

med() { median <"$R/$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
rate() { awk -v a="$1" 'BEGIN { printf "%.1f", a / 100 }'; }
sn=$(med start-new)
sb=$(med start-base)
ss=$(med start-sbatch)
echo "# load average (1 min) during the rounds: $(tr '\n' ' ' <"$R/load")"
echo "startup, us per run (median of $ROUNDS rounds of $STARTS):"
echo "  tessel --version (new)        $sn"
echo "  tessel --version (baseline)   $sb   new is $(ratio "$sb" "$sn")x faster"
echo "  sbatch --version              $ss   new is $(ratio "$ss" "$sn")x faster than sbatch"
qs=$(med sub-sbatch)
echo "submissions per second (median of $ROUNDS loops of $SUBMITS):"
echo "  sbatch --wrap true                      $(rate "$qs")"
for v in sock tcp; do
    n=$(med "sub-new-$v")
    b=$(med "sub-base-$v")
    echo "  tessel run -d -- true, $v, new       $(rate "$n")   $(ratio "$n" "$qs")x sbatch, $(ratio "$n" "$b")x baseline"
    echo "  tessel run -d -- true, $v, baseline  $(rate "$b")   $(ratio "$b" "$qs")x sbatch"
done
qd=$(med dep-sbatch)
n=$(med dep-new-sock)
b=$(med dep-base-sock)
echo "submissions per second, jobs waiting on a dependency (no job runs meanwhile):"
echo "  sbatch --dependency=afterok:J --wrap true   $(rate "$qd")"
echo "  tessel run -d --after J -- true, sock, new       $(rate "$n")   $(ratio "$n" "$qd")x sbatch, $(ratio "$n" "$b")x baseline"
echo "  tessel run -d --after J -- true, sock, baseline  $(rate "$b")   $(ratio "$b" "$qd")x sbatch"
