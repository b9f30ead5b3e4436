#!/bin/sh
# t9000: spank_tessel.so on a multi-node Slurm 22.05 (Debian 12's): a controller and two nodes,
# each in its own network namespace, two SIMULATED GPUs per node (the fake NVML and driver of
# tests/fake, 8 GiB each, 4 shards each).  Jobs' GPU views and refusals are measured from inside
# the jobs by a CUDA program (tcu-probe).
# test-timeout: 600
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/slurm/cluster.sh"

# The plugin is loaded by slurmd and the jobs' programs by the dynamic loader of programs that
# carry no sanitizer runtime: under ASan, the cluster's pieces come from the plain sub-build
# (tsc_test_pieces); the plugin's logic runs sanitized in test_slurm_logic.
tsc_test_pieces tests/interposer/tcu-probe
PROBE=$PB/tests/interposer/tcu-probe

trap 'rm -f "$HANG" "$LOST"; tsc_stop' EXIT
trap 'exit 1' INT TERM
GiB=1073741824
export TESSEL_FAKE_GPUS=2xFakeGPU:8G TESSEL_FAKE_CTX_MEM=0
export LD_LIBRARY_PATH=$FAKE
# While this file exists the fake NVML does not answer (a hung driver): see "a hung NVML".
HANG=$(mktemp -u /tmp/tessel-t9000-hang.XXXXXX)
export TESSEL_FAKE_NVML_HANG_FILE=$HANG
# While this file exists, the GPU whose index it holds answers NVML's process queries with
# NVML_ERROR_GPU_IS_LOST: see "a lost GPU".
LOST=$(mktemp -u /tmp/tessel-t9000-lost.XXXXXX)
export TESSEL_FAKE_NVML_LOST_FILE=$LOST
TSC_PLUGIN_ARGS="interposer=$PRE nvml=$FAKE/libnvidia-ml.so.1 nvml_timeout=5"
tsc_start "$PLUGIN" || missing "the Slurm cluster: $TSC_WHY"
diag "SIMULATED GPUs: 2 per node (fake NVML and driver, $TESSEL_FAKE_GPUS), 4 shards each"
O=$TSC/out

# The value of KEY=... in the first line of FILE that starts with PREFIX.
field() { sed -n "s/^$2 .*$3=\([^ ]*\).*/\1/p" "$1" | head -n 1; }
# Wait (bounded) until node N has no directory of job J.
wait_gone() {
    _i=0
    while tsc_on "$1" test -e "/run/tessel/slurm/$2"; do
        _i=$((_i + 1))
        [ $_i -ge 600 ] && return 1
        sleep 0.1
    done
}
sub() { tsc sbatch --parsable "$@"; }

# ---- both nodes, srun and sbatch ---------------------------------------------------------
is "$(tsc srun -N2 --gres=shard:1 hostname | sort | tr '\n' ' ')" "n1 n2 " \
    "srun -N2 --gres=shard:1 runs on both nodes"
j1=$(sub -w n1 --gres=shard:2 -o "$O/j1" --wrap "$PROBE ctx info")
j2=$(sub -w n2 --gres=shard:2 -o "$O/j2" --wrap "$PROBE ctx info")
tsc_wait_state "$j1" COMPLETED && tsc_wait_state "$j2" COMPLETED
ok $? "sbatch jobs on n1 and n2 complete"
is "$(field "$O/j1" info total) $(field "$O/j2" info total)" "$((4 * GiB)) $((4 * GiB))" \
    "a shard:2 job (2 of 4 shards) sees half of its 8 GiB GPU on each node"

# A submitter's own SLURM_STEP_GPUS (empty, or naming GPUs it was not given) decides nothing:
# the batch step's slice comes from the variable slurmd writes for it (SLURM_JOB_GPUS).
j3=$(tsc env SLURM_STEP_GPUS= sbatch --parsable -w n1 --gres=shard:2 -o "$O/j3" --wrap "$PROBE ctx info")
j4=$(tsc env SLURM_STEP_GPUS=0,1 sbatch --parsable -w n2 --gres=shard:2 -o "$O/j4" --wrap "$PROBE ctx info")
tsc_wait_state "$j3" COMPLETED && tsc_wait_state "$j4" COMPLETED
ok $? "sbatch jobs submitted with SLURM_STEP_GPUS empty or forged complete"
is "$(field "$O/j3" info total) $(field "$O/j4" info total)" "$((4 * GiB)) $((4 * GiB))" \
    "they are held to their shard:2 slice all the same (4 GiB of 8)"

# ---- two half-GPU jobs on one GPU, a third waits, a whole GPU's shards on the other -------
# The fake driver honours CUDA_VISIBLE_DEVICES as the real one does: a job given GPU 1 sees it
# as its CUDA device 0, and NVML (which ignores the variable) shows its memory on GPU 1.
GO=$O/go
hold="$PROBE ctx info fill:mem:256M waitfile:$GO"
ja=$(sub -w n1 --gres=shard:2 -o "$O/ja" --wrap "echo CVD=\$CUDA_VISIBLE_DEVICES; $hold")
jb=$(sub -w n1 --gres=shard:2 -o "$O/jb" --wrap "echo CVD=\$CUDA_VISIBLE_DEVICES; $hold")
tsc_wait_state "$ja" RUNNING && tsc_wait_state "$jb" RUNNING &&
    tsc_wait_lines "$O/ja" fill 1 && tsc_wait_lines "$O/jb" fill 1
ok $? "two half-GPU jobs (shard:2 of 4) run at once on n1"
jf=$(sub -w n1 --gres=shard:4 --gpu-mem=3G -o "$O/jf" --wrap "echo CVD=\$CUDA_VISIBLE_DEVICES; $PROBE ctx info totalmem:1 uuid:0 fill:mem:256M waitfile:$GO")
tsc_wait_state "$jf" RUNNING && tsc_wait_lines "$O/jf" fill 1
ok $? "a job of a whole GPU's shards (shard:4, --gpu-mem=3G) runs on n1's other GPU"
cva=$(sed -n 's/^CVD=//p' "$O/ja")
cvb=$(sed -n 's/^CVD=//p' "$O/jb")
cvf=$(sed -n 's/^CVD=//p' "$O/jf")
is "$cva $cvb $cvf" "0 0 1" "both half-GPU jobs are on GPU 0 (CUDA_VISIBLE_DEVICES), the shard:4 job on GPU 1"
# The job on GPU 1: one CUDA device, GPU 1 (its UUID), held to its 3 GiB there.
u1=$(env -u TESSEL_FAKE_STATE -u CUDA_VISIBLE_DEVICES "$PROBE" ctx uuid:1 | sed -n 's/^uuid \([^ ]*\).*/\1/p')
is "$(sed -n 's/^uuid \([^ ]*\).*/\1/p' "$O/jf") $(sed -n 's/^totalmem .* rc=\([0-9]*\)/\1/p' "$O/jf")" "$u1 101" \
    "the job given GPU 1 sees only GPU 1: its CUDA device 0 has GPU 1's UUID, a device 1 is invalid (101)"
free=$(field "$O/jf" info free)
fb=$(sed -n 's/^fill mem n=[0-9]* bytes=\([0-9]*\).*/\1/p' "$O/jf")
is "$(field "$O/jf" info total) $(field "$O/jf" fill n)" "$((3 * GiB)) $((free / 268435456))" \
    "it sees 3 GiB and is refused at its limit on GPU 1 (all of its free $free bytes in 256 MiB pieces)"
# NVML on n1 (the node's shared SIMULATED GPUs): the job's memory is on GPU 1.
used1=$(tsc_on n1 "$PROBE" nvml:1 | sed -n 's/^nvml .* used=\([0-9]*\) .*/\1/p')
ok $([ -n "$used1" ] && [ "$used1" -ge "$fb" ] && [ "$used1" -le $((3 * GiB)) ]; echo $?) \
    "NVML shows its $fb bytes on GPU 1 ($used1 bytes used there), within its 3 GiB"
# What a job sees (the interposer's view) and where it is refused, from inside the job.
ctx=$(( 4 * GiB - $(field "$O/ja" info free) ))
for j in ja jb; do
    free=$(field "$O/$j" info free)
    is "$(field "$O/$j" info total) $(field "$O/$j" fill n)" "$((4 * GiB)) $((free / 268435456))" \
        "job $j sees 4 GiB and is refused at its own limit (all of its free $free bytes in 256 MiB pieces), while the other holds as much"
done
is "$(tsc_on n1 sh -c "ls /run/tessel/slurm/$ja /run/tessel/slurm/$jb" | grep -c slice)" 2 \
    "each job has its own slice on n1"
jc=$(sub -w n1 --gres=shard:2 -o "$O/jc" --wrap 'echo CVD=$CUDA_VISIBLE_DEVICES')
# The scheduler has looked at it (every second: SchedulerParameters) once it has a reason.
tsc_wait_reason "$jc" Resources
is "$(tsc_state "$jc") $(tsc squeue -h -j "$jc" -o %r)" "PENDING Resources" "a third half-GPU job waits in Slurm's queue"
touch "$GO"
for j in "$jf" "$ja" "$jb" "$jc"; do
    tsc_wait_state "$j" COMPLETED || break
done
ok $? "the holders end; the waiting job then runs and completes"
is "$(sed -n 's/^CVD=//p' "$O/jc" | wc -l)" 1 "the waiting job ran"

# ---- the watchdog: GPU memory held outside the slice's GPUs --------------------------------
jx=$(sub -w n1 --gres=shard:4 -o "$O/jx0" --wrap "$PROBE waitfile:$O/go-x")
tsc_wait_state "$jx" RUNNING
# A job may set CUDA_VISIBLE_DEVICES itself (nothing but cgroup ConstrainDevices keeps it off a
# GPU it was not given): this one, given GPU 1, reaches GPU 0.
jv=$(sub -w n1 --gres=shard:4 -o "$O/jv" --wrap "echo CVD=\$CUDA_VISIBLE_DEVICES; CUDA_VISIBLE_DEVICES=0 $PROBE ctx alloc:mem:1G waitfile:$O/never")
tsc_wait_state "$jv" FAILED CANCELLED COMPLETED
is "$(tsc_state "$jv")" FAILED \
    "a job given GPU 1 that sets CUDA_VISIBLE_DEVICES=0 and holds memory on GPU 0 is stopped"
grep -q "GPU 0: the job's processes hold 1.0 GiB on a GPU it was not given: killed by the GPU-memory watchdog" "$O/jv"
ok $? "by the GPU-memory watchdog, with the reason in the job's output"
tsc_gone "tcu-probe ctx alloc mem 1G waitfile $O/never"
ok $? "none of the stopped job's processes is left (the CUDA program below its killed shell too)"
pkill -KILL -f "tcu-probe ctx alloc mem 1G waitfile $O/never"
# A process 100 levels below the job's shell (beyond the watchdog's quick walk of 64 parents:
# the node's process table places it) is the job's all the same: given GPU 1, it holds memory
# on GPU 0.  (Depths beyond 4096, where the watchdog gave up before, are in test_watchdog: on a
# loaded 2-core machine a chain costs up to 0.3 s a level.)
jd=$(sub -w n1 --gres=shard:4 -o "$O/jd" --wrap "CUDA_VISIBLE_DEVICES=0 $PROBE chain:100 ctx alloc:mem:1G waitfile:$O/never-d")
tsc_wait_lines "$O/jd" chain 1
tsc_wait_state "$jd" FAILED CANCELLED COMPLETED
is "$(tsc_state "$jd")" FAILED \
    "a job whose process 100 levels below its shell holds memory on a GPU it was not given is stopped"
grep -q "^chain depth=100 " "$O/jd" &&
    grep -q "GPU 0: the job's processes hold 1.0 GiB on a GPU it was not given: killed by the GPU-memory watchdog" "$O/jd"
ok $? "by the GPU-memory watchdog, with the reason in the job's output"
tsc_gone "tcu-probe chain 100 ctx alloc mem 1G waitfile $O/never-d"
ok $? "none of its 100 processes is left"
pkill -KILL -f "tcu-probe chain 100 ctx alloc mem 1G waitfile $O/never-d"
touch "$O/go-x"
tsc_wait_state "$jx" COMPLETED

# ---- a lost GPU stops only the jobs given it ---------------------------------------------
# Every step's watchdog asks NVML about every GPU of the node; one that stops answering fails
# closed only the steps given that GPU.  jb0 takes GPU 0, then jl and jl2 GPU 1 (lost).
jb0=$(sub -w n1 --gres=shard:4 -o "$O/jb0" --wrap "echo CVD=\$CUDA_VISIBLE_DEVICES; $PROBE waitfile:$O/go-lost")
tsc_wait_state "$jb0" RUNNING && tsc_wait_lines "$O/jb0" CVD=0 1
ok $? "a job runs on n1's GPU 0"
jl=$(sub -w n1 --gres=shard:4 -o "$O/jl" --wrap "echo CVD=\$CUDA_VISIBLE_DEVICES; $PROBE waitfile:$O/go-lost")
tsc_wait_state "$jl" RUNNING && tsc_wait_lines "$O/jl" CVD=1 1
ok $? "a job runs on n1's GPU 1"
echo 1 >"$LOST"
tsc_wait_state "$jl" FAILED CANCELLED COMPLETED
is "$(tsc_state "$jl"):$(grep -c "cannot ask the driver (the processes on GPU 1)" "$O/jl")" FAILED:1 \
    "GPU 1 lost: the job given it is stopped, failing closed with the reason"
jl2=$(sub -w n1 --gres=shard:4 -o "$O/jl2" --wrap "echo CVD=\$CUDA_VISIBLE_DEVICES; $PROBE waitfile:$O/go-lost")
tsc_wait_state "$jl2" FAILED CANCELLED COMPLETED
is "$(tsc_state "$jl2")" FAILED "so is the next job given GPU 1 while it is lost"
# jb0's watchdog, started before both, asked about GPU 1 all that time.
is "$(tsc_state "$jb0")" RUNNING "the job on GPU 0 runs on while GPU 1 is lost"
rm -f "$LOST"
touch "$O/go-lost"
tsc_wait_state "$jb0" COMPLETED
ok $? "and completes"

# ---- several tasks of one step share one slice --------------------------------------------
# used: the slice's bytes as the tasks' allocations and contexts (ctx each) add up.
# Held to one 4 GiB: the fills and at least one context within it, and refused less than a
# piece and the contexts below it (a slice of 4 GiB per process would let them fill ~7 GiB).
used_ok() { # BYTES-OF-FILLS CONTEXTS
    [ $(($1 + ctx)) -le $((4 * GiB)) ] && [ $(($1 + $2 * ctx + 268435456)) -gt $((4 * GiB)) ]
}
fills() { cat "$@" 2>/dev/null | sed -n 's/^fill mem n=[0-9]* bytes=\([0-9]*\).*/\1/p' | awk '{s += $1} END {printf "%.0f\n", s}'; }
GO2=$O/go2
tsc srun -w n2 -n2 --gres=shard:2 -o "$O/tasks-%t" $PROBE ctx fill:mem:256M waitfile:$GO2 &
srun_pid=$!
tsc_wait_lines "$O/tasks-0" fill 1 && tsc_wait_lines "$O/tasks-1" fill 1
ok $? "two tasks of one step fill their slice at once"
b=$(fills "$O/tasks-0" "$O/tasks-1")
used_ok "$b" 2
ok $? "the two tasks together are held to the job's 4 GiB (fills $b bytes + 2 contexts), not 4 GiB each"
touch "$GO2"
wait $srun_pid
ok $? "the step ends"

# ---- two srun steps of one job share one limit --------------------------------------------
GO3=$O/go3
cat >"$O/steps.sh" <<SCRIPT
#!/bin/sh
srun --overlap -n1 $PROBE ctx fill:mem:256M waitfile:$GO3 >$O/s1 2>&1 &
srun --overlap -n1 $PROBE ctx fill:mem:256M waitfile:$GO3 >$O/s2 2>&1 &
wait
# srun returns once its tasks have ended; the step's slurmstepd tidies its directory just
# after (slurm_spank_exit): give it up to 10 s on a loaded machine.
i=0
while [ \$i -lt 100 ] && ls /run/tessel/slurm/\$SLURM_JOB_ID | grep -qv -e '^batch\$' -e '^slice\$'; do
    sleep 0.1
    i=\$((i + 1))
done
ls /run/tessel/slurm/\$SLURM_JOB_ID | tr '\n' ' ' >$O/js-ls
SCRIPT
js=$(sub -w n2 --gres=shard:2 -o "$O/js" "$O/steps.sh")
tsc_wait_lines "$O/s1" fill 1 && tsc_wait_lines "$O/s2" fill 1
ok $? "two srun steps of one batch job hold GPU memory at once"
b=$(fills "$O/s1" "$O/s2")
used_ok "$b" 2
ok $? "the two steps share the job's one 4 GiB limit (fills $b bytes + 2 contexts)"
touch "$GO3"
tsc_wait_state "$js" COMPLETED
ok $? "the two-step job completes"
is "$(cat "$O/js-ls")" "batch slice " \
    "the ended steps' directories are gone while the job still runs (its batch step and slice stay)"

# ---- cleanup after the end and after scancel ----------------------------------------------
wait_gone n1 "$ja" && wait_gone n2 "$js"
ok $? "the slices of ended jobs are removed from their nodes"
GO4=$O/go4
jk=$(sub -w n1 --gres=shard:1 -o "$O/jk" --wrap "$PROBE ctx fill:mem:256M waitfile:$GO4")
tsc_wait_lines "$O/jk" fill 1
tsc_on n1 test -f "/run/tessel/slurm/$jk/slice"
ok $? "a running job has its slice on its node"
tsc scancel "$jk"
tsc_wait_state "$jk" CANCELLED && wait_gone n1 "$jk"
ok $? "scancel: the job's slice is removed"

# A job whose slurmstepd were killed (nothing tidied: its step's directory is held by no
# process) and a step directory held by none beside a running job's: the next step's end on the
# node removes the first job's directory, and keeps the running one's.
GO6=$O/go6
jh=$(sub -w n1 --gres=shard:1 -o "$O/jh" --wrap "$PROBE ctx waitfile:$GO6")
tsc_wait_lines "$O/jh" ctx 1
tsc_on n1 sh -c "mkdir -p /run/tessel/slurm/888888/0 /run/tessel/slurm/$jh/7 &&
    : >/run/tessel/slurm/888888/slice"
tsc srun -w n1 --gres=shard:1 true
wait_gone n1 888888
ok $? "a killed job's slice is removed at the next step's end on its node"
tsc_on n1 test -f "/run/tessel/slurm/$jh/slice"
ok $? "a running job's slice is kept, beside a step directory no process holds"
touch "$GO6"
tsc_wait_state "$jh" COMPLETED && wait_gone n1 "$jh"
ok $? "the running job's last step removes its slice, the unheld step directory with it"

# A step directory that another process holds (a step of the same id running here) is not
# taken over: the step fails with the reason; one no process holds (an ended step's leftover,
# with a file in it) is cleared and used.
GO7=$O/go7
cat >"$O/held.sh" <<SCRIPT
#!/bin/sh
while [ ! -e $GO7 ]; do sleep 0.1; done
srun --overlap -n1 $PROBE ctx info >$O/held-0 2>&1
echo "step0 rc=\$?" >>$O/held-0
srun --overlap -n1 $PROBE ctx info >$O/held-1 2>&1
SCRIPT
jd=$(sub -w n1 --gres=shard:1 -o "$O/jd" "$O/held.sh")
tsc_wait_state "$jd" RUNNING
tsc_on n1 sh -c "mkdir -p -m 0711 /run/tessel/slurm/$jd/0 /run/tessel/slurm/$jd/1 &&
    : >/run/tessel/slurm/$jd/1/leftover"
tsc_on n1 flock -s "/run/tessel/slurm/$jd/0" sh -c "while [ ! -e $O/unlock3 ]; do sleep 0.1; done" &
holder=$!
_i=0
while tsc_on n1 flock -n "/run/tessel/slurm/$jd/0" true; do
    _i=$((_i + 1))
    [ $_i -ge 300 ] && break
    sleep 0.1
done
touch "$GO7"
tsc_wait_state "$jd" COMPLETED FAILED
touch "$O/unlock3"
wait "$holder"
ok $(grep -q "/run/tessel/slurm/$jd/0: in use by another slurmstepd of this job on the node" \
    "$O/held-0" && grep -q 'step0 rc=[1-9]' "$O/held-0" && ! grep -q '^info' "$O/held-0"
    echo $?) "a step directory held by another process: the step fails with the reason"
is "$(sed -n 's/^info .*total=\([0-9]*\).*/\1/p' "$O/held-1")" "$((2 * GiB))" \
    "a leftover step directory no process holds is cleared and the step gets its slice"

# ---- slurmd restarts: stale slices swept, a running job's kept ------------------------------
GO5=$O/go5
jr=$(sub -w n2 --gres=shard:1 -o "$O/jr" --wrap "$PROBE ctx waitfile:$GO5")
tsc_wait_state "$jr" RUNNING && tsc_wait_lines "$O/jr" ctx 1
# The job's slurmstepd on n2: the one in n2's network namespace (another test's cluster may run
# a job of the same id at the same time).
nsn2=$(stat -L -c %i "/run/netns/$tsc_ns-n2")
stepd=
for p in $(pgrep -f "^slurmstepd: \[$jr\.batch\]"); do
    [ "$(stat -L -c %i "/proc/$p/ns/net" 2>/dev/null)" = "$nsn2" ] && stepd=$p
done
tsc_on n2 mkdir /run/tessel/slurm/999999
old=$(cat "$TSC/slurmd-n2.pid")
kill "$old"
_i=0
while kill -0 "$old" 2>/dev/null && [ $_i -lt 300 ]; do
    _i=$((_i + 1))
    sleep 0.1
done
# The new slurmd joins the node's namespaces through the job's slurmstepd, which outlives it.
nsenter --target "$stepd" --net --uts --mount slurmd -N n2
_i=0
while { [ "$(cat "$TSC/slurmd-n2.pid" 2>/dev/null)" = "$old" ] ||
        ! kill -0 "$(cat "$TSC/slurmd-n2.pid" 2>/dev/null)" 2>/dev/null; } && [ $_i -lt 300 ]; do
    _i=$((_i + 1))
    sleep 0.1
done
ok $([ $_i -lt 300 ]; echo $?) "slurmd n2 restarts while job $jr runs"
is "$(tsc_on n2 ls /run/tessel/slurm | tr '\n' ' ')" "$jr " \
    "at slurmd's start, the slice of a job that no slurmstepd runs is swept, the running job's kept"
tsc_on n2 test -f "/run/tessel/slurm/$jr/slice"
ok $? "the running job's slice file is there"
touch "$GO5"
tsc_wait_state "$jr" COMPLETED && wait_gone n2 "$jr"
ok $? "the job completes after the restart and its slice is removed"

# ---- NVML that cannot be loaded: the watchdog fails the step closed -------------------------
# The node's GPU figures are cached from the jobs above; the watchdog loads NVML in each step.
# plugstack.conf is read by every step: name a library that is not NVML.
cp "$TSC/etc/plugstack.conf" "$O/plugstack.good"
sed -i "s|nvml=[^ ]*|nvml=$FAKE/libcuda.so.1|" "$TSC/etc/plugstack.conf"
jn=$(sub -w n1 --gres=shard:1 -o "$O/jn" --wrap "$PROBE ctx info waitfile:$O/never")
tsc_wait_state "$jn" FAILED COMPLETED CANCELLED TIMEOUT
is "$(tsc_state "$jn")" FAILED "NVML cannot be loaded: the job fails, it does not run unwatched"
grep -q "tessel: the GPU-memory watchdog cannot ask the driver ($FAKE/libcuda.so.1: not an NVML library (entry points missing)): the job's processes are killed" "$O/jn"
ok $? "the reason is in the job's output: $(grep -m1 'cannot ask the driver' "$O/jn")"
# The step's stderr goes to a file that slurmstepd writes itself (-e): relayed to srun, the
# watchdog's line could be lost to the kill that follows it on a loaded machine.
tsc srun -w n1 --gres=shard:1 -e "$O/jsrun.err" $PROBE ctx info waitfile:$O/never >/dev/null 2>&1
rc=$?
_i=0
while ! grep -q "cannot ask the driver" "$O/jsrun.err" 2>/dev/null && [ $_i -lt 100 ]; do
    _i=$((_i + 1))
    sleep 0.1
done
ok $([ $rc -ne 0 ] && grep -q "cannot ask the driver" "$O/jsrun.err"; echo $?) \
    "an srun step fails the same way, with the reason"
tsc_gone "tcu-probe ctx info waitfile $O/never"
ok $? "none of their processes is left"
cp "$O/plugstack.good" "$TSC/etc/plugstack.conf"

# ---- a long gres.conf is read whole, one above 1 MiB refused -------------------------------
# (slurmd read its gres.conf at start; the plugin reads it for every step)
cp "$TSC/etc/gres.conf" "$O/gres.good"
{
    yes '# a long gres.conf: comments and other nodes before this node lines' | head -n 400
    cat "$O/gres.good"
} >"$TSC/etc/gres.conf.new" && mv "$TSC/etc/gres.conf.new" "$TSC/etc/gres.conf"
out=$(tsc srun -w n1 --gres=shard:2 $PROBE ctx info 2>&1)
is "$(printf '%s\n' "$out" | sed -n 's/^info .*total=\([0-9]*\).*/\1/p') $(wc -c <"$TSC/etc/gres.conf")" \
    "$((4 * GiB)) $(($(wc -c <"$O/gres.good") + 400 * 68))" \
    "a gres.conf whose node lines come after 16 KiB is read whole: shard:2 is still 4 GiB"
{
    yes '# padding' | head -c 1100000
    cat "$O/gres.good"
} >"$TSC/etc/gres.conf.new" && mv "$TSC/etc/gres.conf.new" "$TSC/etc/gres.conf"
out=$(tsc srun -w n1 --gres=shard:2 $PROBE ctx info 2>&1)
ok $([ $? -ne 0 ] && printf '%s' "$out" | grep -q "gres.conf: larger than 1024 KiB, not read" &&
    ! printf '%s' "$out" | grep -q '^info'; echo $?) \
    "a gres.conf above 1 MiB is refused with the reason, the step does not run"
cp "$O/gres.good" "$TSC/etc/gres.conf"

# ---- a hung NVML: the step fails after nvml_timeout, the node is free again ----------------
touch "$HANG"
tsc_on n1 rm -f /run/tessel/slurm/.gpus
out=$(tsc srun -w n1 --gres=shard:1 $PROBE ctx info </dev/null 2>&1)
rc=$?
rm -f "$HANG"
ok $([ $rc -ne 0 ] && printf '%s' "$out" | grep -q "the node's GPUs (NVML .*): no answer within 5 s" &&
    ! printf '%s' "$out" | grep -q '^info'; echo $?) \
    "NVML that does not answer: the step fails after nvml_timeout=5 with the reason, nothing runs"
out=$(tsc srun -w n1 --gres=shard:2 $PROBE ctx info </dev/null 2>&1)
is "$(printf '%s\n' "$out" | sed -n 's/^info .*total=\([0-9]*\).*/\1/p')" "$((4 * GiB))" \
    "once NVML answers, the next step on n1 gets its slice (the node's lock was given back)"
# A holder that never gives the node's lock back (a step stuck in the driver): the steps
# behind it fail with the reason after nvml_timeout + 5 s rather than wait for ever.
tsc_on n1 flock /run/tessel/slurm/.lock sh -c "while [ ! -e $O/unlock ]; do sleep 0.1; done" &
holder=$!
_i=0
while tsc_on n1 flock -n /run/tessel/slurm/.lock true; do
    _i=$((_i + 1))
    [ $_i -ge 300 ] && break
    sleep 0.1
done
out=$(tsc srun -w n1 --gres=shard:1 $PROBE ctx info </dev/null 2>&1)
rc=$?
touch "$O/unlock"
wait "$holder"
ok $([ $rc -ne 0 ] && printf '%s' "$out" | grep -q "tessel: .*/run/tessel/slurm/.lock: the node's lock was not given back within 10 s" &&
    ! printf '%s' "$out" | grep -q '^info'; echo $?) \
    "the node's lock held elsewhere: the step fails after 10 s with the reason, nothing runs"
out=$(tsc srun -w n1 --gres=shard:2 $PROBE ctx info </dev/null 2>&1)
is "$(printf '%s\n' "$out" | sed -n 's/^info .*total=\([0-9]*\).*/\1/p')" "$((4 * GiB))" \
    "once it is given back, the next step gets its slice"
# The state directory itself (0755: any user's process can open it) locked meanwhile, by a
# process of nobody's: not the node's lock (a root-only file in it), so the steps start as usual.
LONG=3$$
tsc_on n1 runuser -u nobody -- flock /run/tessel/slurm sleep "$LONG" &
holder=$!
_i=0
while tsc_on n1 flock -n /run/tessel/slurm true; do
    _i=$((_i + 1))
    [ $_i -ge 300 ] && break
    sleep 0.1
done
out=$(tsc srun -w n1 --gres=shard:2 $PROBE ctx info </dev/null 2>&1)
pkill -f "sleep $LONG"
wait "$holder"
ok $([ $_i -lt 300 ]; echo $?) "nobody holds a lock on the node's state directory"
is "$(printf '%s\n' "$out" | sed -n 's/^info .*total=\([0-9]*\).*/\1/p')" "$((4 * GiB))" \
    "... and the node's steps start all the same, with their slices"

# ---- an NVML call that hangs inside a step's watchdog: the step is stopped after nvml_timeout --
# The node's GPU figures are cached (the steps above): only the watchdog's first sample calls
# NVML (its init), and that call does not return while $HANG exists.  The sampling thread
# cannot act then; the watchdog's second thread stops the step after nvml_timeout=5 s.
touch "$HANG"
jhang=$(sub -w n1 --gres=shard:1 -o "$O/jhang" --wrap "echo started; $PROBE waitfile:$O/never")
tsc_wait_state "$jhang" FAILED COMPLETED CANCELLED TIMEOUT
st=$(tsc_state "$jhang")
rm -f "$HANG"
is "$st:$(grep -c '^started' "$O/jhang")" FAILED:1 \
    "an NVML call that hangs in the watchdog: the running job is stopped, not left unwatched"
grep -q "tessel: the GPU-memory watchdog cannot ask the driver (no answer within 5 s): the job's processes are killed" "$O/jhang"
ok $? "the reason is in the job's output: $(grep -m1 'cannot ask the driver' "$O/jhang")"

# ---- what root loads or binds must be root's alone -----------------------------------------
mkdir -m 755 "$O/libs" && mkdir -m 777 "$O/libs/open"
cp "$PRE" "$O/libs/pre-0666.so" && chmod 666 "$O/libs/pre-0666.so"
cp "$PRE" "$O/libs/open/pre.so" && chmod 644 "$O/libs/open/pre.so"
cp "$FAKE/libnvidia-ml.so.1" "$O/libs/nvml-nobody.so" && chown nobody "$O/libs/nvml-nobody.so"
cp "$O/gres.good" "$O/libs/gres-0664.conf" && chmod 664 "$O/libs/gres-0664.conf"
cp "$O/gres.good" "$O/libs/open/gres.conf" && chmod 644 "$O/libs/open/gres.conf"
ln -s "$PRE" "$O/libs/open/link.so"
# plug ARG=VALUE: the plugin's plugstack.conf line with ARG set to VALUE (added if absent).
plug() {
    if grep -q " ${1%%=*}=" "$O/plugstack.good"; then
        sed "s| ${1%%=*}=[^ ]*| $1|" "$O/plugstack.good" >"$TSC/etc/plugstack.conf"
    else
        sed "s|\$| $1|" "$O/plugstack.good" >"$TSC/etc/plugstack.conf"
    fi
}
while IFS='|' read -r arg says; do
    plug "$arg"
    out=$(tsc srun -w n1 --gres=shard:1 $PROBE ctx info </dev/null 2>&1)
    ok $([ $? -ne 0 ] && printf '%s' "$out" | grep -qF -- "$says" &&
        ! printf '%s' "$out" | grep -q '^info'; echo $?) \
        "$arg: the step fails, nothing runs: $(printf '%s\n' "$out" | grep -m1 -o 'tessel: .*')"
done <<BAD
interposer=$O/libs/pre-0666.so|the interposer $O/libs/pre-0666.so: not a file owned and written only by root
interposer=$O/libs/open/pre.so|the interposer $O/libs/open/pre.so: its directory $O/libs/open is not root's alone
nvml=$O/libs/nvml-nobody.so|NVML $O/libs/nvml-nobody.so: not a file owned and written only by root
gres_conf=$O/libs/gres-0664.conf|gres.conf $O/libs/gres-0664.conf: not a file owned and written only by root
gres_conf=$O/libs/open/gres.conf|gres.conf $O/libs/open/gres.conf: its directory $O/libs/open is not root's alone
BAD
plug violation=suspend
out=$(tsc srun -w n1 --gres=shard:1 $PROBE ctx info </dev/null 2>&1)
ok $([ $? -ne 0 ] && ! printf '%s' "$out" | grep -q '^info' &&
    printf '%s' "$out" | grep -q "tessel: plugstack.conf argument 'violation=suspend': expected"; echo $?) \
    "violation=suspend (nothing would resume a Slurm step) is refused with the reason, nothing runs"
plug "interposer=$O/libs/open/link.so"
out=$(tsc srun -w n1 --gres=shard:1 sh -c 'cat /etc/ld.so.preload; cmp /run/tessel/job/libtessel-cuda.so "$1" && echo same' sh "$(realpath "$PRE")" 2>&1)
is "$(printf '%s\n' "$out" | tr '\n' ' ')" "/run/tessel/job/libtessel-cuda.so same " \
    "a link in an open directory is followed once, by root: the task preloads, from a fixed path, the file it named"
# An upgrade re-points the configured path and deletes the old file while a step runs: programs
# the step starts later still load the interposer (the checked file is bound into its namespace).
cp "$PRE" "$O/libs/cur.so"
plug "interposer=$O/libs/cur.so"
ju=$(sub -w n1 --gres=shard:2 -o "$O/ju" --wrap "echo started; $PROBE waitfile:$O/go-u; $PROBE ctx info")
tsc_wait_state "$ju" RUNNING && tsc_wait_lines "$O/ju" started 1
ok $? "a step runs with interposer=$O/libs/cur.so"
rm "$O/libs/cur.so"
touch "$O/go-u"
tsc_wait_state "$ju" COMPLETED
is "$(field "$O/ju" info total)" "$((4 * GiB))" \
    "the file deleted on the host: a program started afterwards in the step is still held to its 4 GiB slice"
cp "$O/plugstack.good" "$TSC/etc/plugstack.conf"

# ---- jobs without GPUs, bad input ----------------------------------------------------------
is "$(CUDA_VISIBLE_DEVICES=1 tsc srun -N1 sh -c 'echo "[$CUDA_VISIBLE_DEVICES]"')" "[]" \
    "a job with no GPU and no shard gets an empty CUDA_VISIBLE_DEVICES"
before=$(sub -w n2 -o /dev/null --wrap true)
for bad in "--gpu-mem=abc" "--gpu-mem=0" "--gpu-mem=8" "--gpu-share=1.5" "--gpu-share=0" \
           "--gpu-share=x"; do
    out=$(tsc sbatch --gres=shard:1 "$bad" --wrap true 2>&1)
    rc=$?
    ok $([ $rc -ne 0 ] && printf '%s' "$out" | grep -q "tessel: --gpu-"; echo $?) \
        "sbatch $bad is refused at submission: $(printf '%s' "$out" | grep -m1 tessel)"
done
out=$(tsc srun --gres=shard:1 --gpu-share=2 true 2>&1)
ok $([ $? -ne 0 ] && printf '%s' "$out" | grep -q "at most 1"; echo $?) "srun --gpu-share=2 is refused"
is "$(sub -w n2 -o /dev/null --wrap true)" "$((before + 1))" "nothing was queued for them (no job id was taken)"
# What depends on the node is refused where the step starts, with the reason in the output.
out=$(tsc srun -w n1 --gres=shard:2 --gpu-mem=5G $PROBE ctx info 2>&1)
ok $([ $? -ne 0 ] && printf '%s' "$out" | grep -q "tessel: .*above its shards' part on GPU 0" &&
    ! printf '%s' "$out" | grep -q '^info'; echo $?) \
    "--gpu-mem above the shards' part: the step fails with the reason, nothing runs"
out=$(tsc srun -w n1 --gres=shard:4 --gpu-mem=9G $PROBE ctx info 2>&1)
ok $([ $? -ne 0 ] && printf '%s' "$out" | grep -q "above its shards' part on GPU"; echo $?) \
    "--gpu-mem above a whole GPU's shards (its memory): refused"
# A whole GPU (--gres=gpu:1, not turned into shards by job_submit.lua) on a GPU that gres.conf
# gives shards: shard jobs may hold parts of it, so the node refuses the step.
out=$(tsc srun -w n1 --gres=gpu:1 $PROBE ctx info 2>&1)
ok $([ $? -ne 0 ] && printf '%s' "$out" | grep -q "tessel: .*GPU [01] has 4 shards in gres.conf .*a whole-GPU job cannot run on it" &&
    ! printf '%s' "$out" | grep -q '^info'; echo $?) \
    "--gres=gpu:1 on a GPU with shards: the step fails with the reason, nothing runs"
out=$(tsc srun -w n1 --gpu-mem=1G true 2>&1)
ok $([ $? -ne 0 ] && printf '%s' "$out" | grep -q "needs GPUs or shards"; echo $?) \
    "--gpu-mem without a GPU or shard: refused"
jm=$(sub -w n1 --gres=shard:1 --gpu-mem=5G -o "$O/jm" --wrap "$PROBE ctx info")
tsc_wait_state "$jm" FAILED COMPLETED
is "$(tsc_state "$jm"):$(grep -c '^info' "$O/jm") $(grep -c "tessel: the GPU slice could not be set up" "$O/jm")" "FAILED:0 1" \
    "a batch job with --gpu-mem above its shards fails, says why in its output and runs nothing"
# --gpu-mem below the shards' part lowers the limit.
out=$(tsc srun -w n2 --gres=shard:2 --gpu-mem=1G $PROBE ctx info fill:mem:256M 2>&1)
b=$(printf '%s\n' "$out" | sed -n 's/^fill mem n=[0-9]* bytes=\([0-9]*\).*/\1/p')
t=$(printf '%s\n' "$out" | sed -n 's/^info .*total=\([0-9]*\).*/\1/p')
ok $([ "$t" = $GiB ] && [ $((b + ctx)) -le $GiB ] && [ $((b + ctx)) -gt $((GiB - 268435456)) ]; echo $?) \
    "--gpu-mem=1G with shard:2: the job sees 1 GiB and is held to it (fills $b bytes + a context)"
done_testing
