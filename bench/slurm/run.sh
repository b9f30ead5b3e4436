#!/bin/sh
# bench/slurm/run.sh - spank_tessel.so's figures (docs/slurm.md, "Figures"), on the test cluster
# of tests/slurm/cluster.sh (slurmctld and two slurmd nodes in network namespaces, two
# SIMULATED GPUs per node, here 10 shards per GPU: a shard is 0.1 GPU):
#
#   1. a step's start: the median of 100 `srun true` and of 100 `srun --gres=shard:1 true`, with
#      and without the plugin, interleaved one by one (plugstack.conf is read at every step,
#      so the same cluster serves both), side by side with the ratio.  Target: the plugin adds
#      at most 5 ms.
#   2. 200 sbatch jobs of 0.1 GPU each (shard:1) on 2 nodes x 2 GPUs: how many finish, each
#      job's limit as the plugin wrote it, and what each job could allocate on the GPU Slurm
#      gave it (tcu-probe fills its slice in 64 MiB pieces; the fake driver honours
#      CUDA_VISIBLE_DEVICES, so a job on GPU 1 fills GPU 1): none over its limit.
#
# Usage (root): bench/slurm/run.sh [BUILD]   (BUILD: the build directory, default build)
#   BENCH_STEPS=N   steps of each kind in part 1 (default 100)
set -u
STEPS=${BENCH_STEPS:-100}
case $STEPS in
*[!0-9]* | '' | 0) echo "run.sh: BENCH_STEPS=$STEPS: a count of steps" >&2; exit 2 ;;
esac
SRC=$(cd "$(dirname "$0")/../.." && pwd)
B=$(cd "${1:-${TESSEL_BUILD:-$SRC/build}}" && pwd)
PLUGIN=$B/slurm/spank_tessel.so
PROBE=$B/tests/interposer/tcu-probe
for f in "$PLUGIN" "$B/lib/libtessel-cuda.so" "$B/tests/fake/libnvidia-ml.so.1" "$PROBE"; do
    [ -e "$f" ] || { echo "run.sh: $f is not built (make build-all)" >&2; exit 1; }
done
. "$SRC/tests/slurm/cluster.sh"
trap 'tsc_stop' EXIT
trap 'exit 1' INT TERM
export TESSEL_FAKE_GPUS=2xFakeGPU:8G TESSEL_FAKE_CTX_MEM=0 LD_LIBRARY_PATH=$B/tests/fake
TSC_SHARDS=10
TSC_CPUS=64
TSC_PLUGIN_ARGS="interposer=$B/lib/libtessel-cuda.so nvml=$B/tests/fake/libnvidia-ml.so.1"
tsc_start "$PLUGIN" || { echo "run.sh: the cluster: $TSC_WHY" >&2; exit 1; }
WITH=$(cat "$TSC/etc/plugstack.conf")
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), nproc $(nproc), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# SIMULATED GPUs: 2 per node, $TSC_SHARDS shards each (a shard = 0.1 GPU)"

# ---- 1. a step's start ---------------------------------------------------------------------
us() { echo $(($(date +%s%N) / 1000)); }
median() { sort -n "$1" | awk '{v[NR] = $1} END {m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.1f", m / 1000}'; }
: >"$TSC/off-plain"; : >"$TSC/on-plain"; : >"$TSC/off-shard"; : >"$TSC/on-shard"
for i in $(seq "$STEPS"); do
    for mode in off on; do
        if [ $mode = on ]; then echo "$WITH" >"$TSC/etc/plugstack.conf"; else : >"$TSC/etc/plugstack.conf"; fi
        t0=$(us); tsc srun -w n1 true || echo "run.sh: srun failed" >&2; t1=$(us)
        echo $((t1 - t0)) >>"$TSC/$mode-plain"
        t0=$(us); tsc srun -w n1 --gres=shard:1 true || echo "run.sh: srun failed" >&2; t1=$(us)
        echo $((t1 - t0)) >>"$TSC/$mode-shard"
    done
done
echo "$WITH" >"$TSC/etc/plugstack.conf"
printf '%-32s %14s %14s %10s %8s\n' "$STEPS x srun, median" "without (ms)" "with (ms)" "added" "ratio"
for k in plain shard; do
    off=$(median "$TSC/off-$k")
    on=$(median "$TSC/on-$k")
    label="srun true"
    [ $k = shard ] && label="srun --gres=shard:1 true"
    awk -v l="$label" -v a="$off" -v b="$on" 'BEGIN {printf "%-32s %14.1f %14.1f %+9.1f %8.2f  (target: added <= 5 ms: %s)\n", l, a, b, b - a, b / a, (b - a <= 5) ? "met" : "NOT met"}'
done

# ---- 2. 200 jobs of 0.1 GPU ------------------------------------------------------------------
O=$TSC/out
cat >"$O/job.sh" <<SCRIPT
#!/bin/sh
echo "gpu=\$CUDA_VISIBLE_DEVICES limit=\$(sed -n 's/^TESSEL_CUDA_MEM_LIMIT_0=//p' /run/tessel/job/limits)"
$PROBE ctx info fill:mem:64M
echo done
SCRIPT
chmod 755 "$O/job.sh"
t0=$(us)
first=
for i in $(seq 200); do
    j=$(tsc sbatch --parsable --gres=shard:1 -o "$O/j-%j" "$O/job.sh") || { echo "run.sh: sbatch failed" >&2; exit 1; }
    [ -n "$first" ] || first=$j
done
last=$j
_i=0
while [ -n "$(tsc squeue -h -o %i)" ] && [ $_i -lt 6000 ]; do
    _i=$((_i + 1))
    sleep 0.1
done
t1=$(us)
done_n=0; limit_ok=0; probed=0; within=0; n1=0; n2=0; g0=0; g1=0
want=$((8 * 1073741824 / 10))
for j in $(seq "$first" "$last"); do
    f=$O/j-$j
    st=$(tsc_state "$j")
    grep -qx done "$f" 2>/dev/null && [ "$st" = COMPLETED ] && done_n=$((done_n + 1))
    lim=$(sed -n 's/.*limit=\([0-9]*\).*/\1/p' "$f" 2>/dev/null)
    [ "$lim" = "$want" ] && limit_ok=$((limit_ok + 1))
    case "$(sed -n 's/^gpu=\([0-9]*\).*/\1/p' "$f" 2>/dev/null)" in 0) g0=$((g0 + 1)) ;; 1) g1=$((g1 + 1)) ;; esac
    case "$(tsc scontrol show job "$j" 2>/dev/null | sed -n 's/^ *NodeList=\(n[12]\).*/\1/p')" in n1) n1=$((n1 + 1)) ;; n2) n2=$((n2 + 1)) ;; esac
    b=$(sed -n 's/^fill mem n=[0-9]* bytes=\([0-9]*\).*/\1/p' "$f" 2>/dev/null)
    if [ -n "$b" ]; then
        probed=$((probed + 1))
        free=$(sed -n 's/^info free=\([0-9]*\).*/\1/p' "$f")
        ctx=$((want - free))
        [ $((b + ctx)) -le "$want" ] && within=$((within + 1))
    fi
done
echo
echo "200 sbatch jobs of 0.1 GPU (shard:1 of 10), 2 nodes x 2 GPUs: $(((t1 - t0) / 1000)) ms from the first sbatch to an empty queue"
echo "  completed:                        $done_n / 200 (n1 $n1, n2 $n2; GPU 0 $g0, GPU 1 $g1)"
echo "  limit file says 0.1 GPU ($want B): $limit_ok / 200"
echo "  CUDA jobs within limit:           $within / $probed (allocations + context <= limit, refused past it)"
if [ "$done_n" = 200 ] && [ "$limit_ok" = 200 ] && [ "$within" = "$probed" ]; then
    echo "  target (all finish, none over): met"
else
    echo "  target (all finish, none over): NOT met"
    # What went wrong, for the record: the first three jobs that did not end well, and what
    # each node's slurmd said about the plugin or its jobs.
    shown=0
    for j in $(seq "$first" "$last"); do
        f=$O/j-$j
        grep -q '^fill mem' "$f" 2>/dev/null && grep -qx done "$f" && continue
        echo "  job $j: $(tsc_state "$j") on $(tsc scontrol show job "$j" 2>/dev/null | sed -n 's/^ *NodeList=\(n[12]\).*/\1/p'), its output:"
        sed 's/^/    | /' "$f" 2>/dev/null | head -20
        shown=$((shown + 1))
        [ $shown -ge 3 ] && break
    done
    for n in n1 n2; do
        echo "  slurmd $n: $(tsc scontrol show node "$n" 2>/dev/null | sed -n 's/^ *State=\([^ ]*\).*/\1/p; s/^ *Reason=\(.*\)/reason: \1/p' | tr '\n' ' ')"
        grep -h -i -e tessel -e 'error' "$TSC"/log/slurmd-"$n"* 2>/dev/null | grep -v -e pmix -e 'MPI:' | tail -8 | sed 's/^/    | /'
    done
fi
