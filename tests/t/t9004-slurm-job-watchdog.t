#!/bin/sh
# t9004: the GPU-memory watchdog of spank_tessel.so holds one limit per job and GPU over all the
# job's steps on a node: each step's watchdog sums the GPU memory of every process of the job
# (below each of its root-owned slurmstepd), and when the sum breaks the job's limit it stops
# its own step, and records it in the job's directory, where the watchdogs of the job's other
# steps find it and stop theirs: every step of the job is stopped.  Two SIMULATED GPUs per node (the fake NVML
# and driver of tests/fake, 16 GiB each, 4 shards each: a shard is 4 GiB); the steps' allocations
# bypass the interposer (tcu-raw: the driver's entry points read from its ELF symbol table, as a static
# binary does), so that only the watchdog can hold them.
# test-timeout: 600
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/slurm/cluster.sh"

# Under ASan the cluster's pieces come from the plain sub-build (tsc_test_pieces).
tsc_test_pieces tests/interposer/tcu-raw
RAW=$PB/tests/interposer/tcu-raw
LIBCUDA=$(realpath "$FAKE/libcuda.so.1")

trap 'tsc_stop' EXIT
trap 'exit 1' INT TERM
# 16 GiB: the two jobs below may be given shards of the same GPU (Slurm chooses), and hold
# 8 GiB together there, which must not exhaust it.
export TESSEL_FAKE_GPUS=2xFakeGPU:16G TESSEL_FAKE_CTX_MEM=0
export LD_LIBRARY_PATH=$FAKE
TSC_PLUGIN_ARGS="interposer=$PRE nvml=$FAKE/libnvidia-ml.so.1 nvml_timeout=5"
tsc_start "$PLUGIN" || missing "the Slurm cluster: $TSC_WHY"
diag "SIMULATED GPUs: 2 per node (fake NVML and driver, $TESSEL_FAKE_GPUS), 4 shards each"
O=$TSC/out
sub() { tsc sbatch --parsable "$@"; }
# A batch job of two srun steps on n1, each holding MIB MiB of the GPU of the job's shard:1
# (4 GiB of its 16 GiB GPU) past the interposer until the file NAME-go exists: outputs NAME (the
# batch step's), NAME-1 and NAME-2 (the steps').
two_steps() {
    cat >"$O/$1.sh" <<SCRIPT
#!/bin/sh
srun --overlap -n1 $RAW $LIBCUDA $2 $O/$1-go >$O/$1-1 2>&1 &
p1=\$!
srun --overlap -n1 $RAW $LIBCUDA $2 $O/$1-go >$O/$1-2 2>&1 &
p2=\$!
wait \$p1 && wait \$p2 && echo both steps ended normally
SCRIPT
    sub -w n1 --gres=shard:1 -o "$O/$1" "$O/$1.sh"
}

# ---- two steps at 40 % of the job's limit each: 80 % together, under it ------------------
# 40 % and 60 % of 4 GiB: 1638 and 2458 MiB.
jl=$(two_steps low 1638)
tsc_wait_lines "$O/low-1" "raw rc=0 mib=1638" && tsc_wait_lines "$O/low-2" "raw rc=0 mib=1638"
ok $? "two steps of one job each hold 40 % of its 4 GiB past the interposer"

# ---- two steps at 60 % each: 120 % together ----------------------------------------------
# Each step alone keeps under the limit; a watchdog that counted its own step alone lets the
# job run until its go file exists, which only the end of this test writes.
jh=$(two_steps high 2458)
tsc_wait_lines "$O/high-1" "raw rc=0 mib=2458" && tsc_wait_lines "$O/high-2" "raw rc=0 mib=2458"
ok $? "two steps of another job each hold 60 % of its 4 GiB past the interposer (the driver gave both)"
# (Should it not be stopped, what the node shows is told.)
tsc_wait_state "$jh" FAILED CANCELLED COMPLETED || {
    diag "the limits files: $(tsc_on n1 sh -c "cat /run/tessel/slurm/$jh/*/limits" 2>&1 | tr '\n' ' ')"
    diag "its processes: $(tsc_on n1 sh -c "ps -eo pid,ppid,uid,comm,args | grep -e slurmstepd -e tcu-raw" 2>&1 | tr '\n' '|')"
    diag "its output: $(cat "$O/high" "$O/high-1" "$O/high-2" | tr '\n' '|')"
    diag "slurmd on n1: $(tail -20 "$TSC"/log/slurmd-n1* 2>&1 | tr '\n' '|')"
}
is "$(tsc_state "$jh")" FAILED "the job whose two steps together hold 120 % of its limit is stopped"
grep -q "GPU [0-9]: the job's processes hold 4.8 GiB, its slice allows 4.0 GiB: killed by the GPU-memory watchdog" "$O/high"
ok $? "by the GPU-memory watchdog, with the job-wide sum and the reason in the job's output"
tsc_gone "tcu-raw $LIBCUDA 2458 $O/high-go"
ok $? "both of its steps are stopped (each step's watchdog stops its own step)"
grep -q "both steps ended normally" "$O/high"
ok $((!$?)) "its steps did not end normally"
# The 40 % job ran all the time the other job was watched and stopped, on the same node (and
# its memory on the same GPU, where both were given shards, is another job's: not counted).
is "$(tsc_state "$jl")" RUNNING "the job of two steps at 40 % each runs on"
touch "$O/low-go"
tsc_wait_state "$jl" COMPLETED
ok $? "and runs to the end"
grep -q "both steps ended normally" "$O/low"
ok $? "both of its steps ended normally"
touch "$O/high-go"

done_testing
