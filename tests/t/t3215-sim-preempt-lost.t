#!/bin/sh
# t3215-sim-preempt-lost.t - `tessel-sim events` counts the GPU-hours lost to preemption
# (docs/suspend.md, "The figure"), on a case worked out by hand and on jobs drawn from the
# Alibaba trace, with --preempt suspend and --preempt requeue; bad values are refused.
#
# Hand case: one node of 1 GPU, one queue.  p0 (BE: training, priority 0) takes the GPU at
# t = 0 for 1000 s; p1 (LS: training, priority 1) arrives at t = 400 and outranks it, so p0 is
# the victim (--min-runtime 0).  Requeued: its 400 s of work on 1 GPU are thrown away,
# 400/3600 = 0.11 GPU-h.  Suspended: its checkpoint and restore of 90 GiB at 1 GiB/s each way
# cost 90 + 90 = 180 s on 1 GPU, 180/3600 = 0.05 GPU-h.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
SIM="$TESSEL_BUILD/bin/tessel-sim"
[ -x "$SIM" ] || missing "no $SIM"
TR="$TESSEL_SHARED/traces/alibaba-gpu-2023"
[ -r "$TR/openb_pod_list_default.csv" ] || missing "the Alibaba trace in $TR"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cat >"$T/nodes.csv" <<'CSV'
sn,cpu_milli,memory_mib,gpu,model
n0,64000,262144,1,A100
CSV
cat >"$T/pods.csv" <<'CSV'
name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
p0,1000,1024,1,1000,,BE,Succeeded,0,1000,0
p1,1000,1024,1,1000,,LS,Succeeded,400,500,400
CSV
cat >"$T/q.conf" <<'CONF'
queue A gpu=1 share=1
class LS training priority=1
class BE training priority=0
CONF
hand() {
    "$SIM" events --nodes "$T/nodes.csv" --pods "$T/pods.csv" --queues "$T/q.conf" \
        --min-runtime 0 --ckpt-mem 90G --ckpt-save-bw 1 --ckpt-restore-bw 1 "$@"
}
hand --preempt requeue >"$T/r" 2>&1
grep -q '^preemption (requeue): GPU-hours lost 0.11: requeued work 0.11, suspend+resume 0.00 (1 requeues, 0 suspensions;' "$T/r"
ok $? "requeue: the victim's 400 s on 1 GPU are lost (0.11 GPU-h)" || sed 's/^/# /' "$T/r"
hand --preempt suspend >"$T/s" 2>&1
grep -q '^preemption (suspend): GPU-hours lost 0.05: requeued work 0.00, suspend+resume 0.05 (0 requeues, 1 suspensions; checkpoint of 90.0 GiB per GPU at 1.00 GiB/s, restore at 1.00 GiB/s)' "$T/s"
ok $? "suspend: its checkpoint and restore, 180 s on 1 GPU (0.05 GPU-h)" || sed 's/^/# /' "$T/s"
hand >"$T/c" 2>&1
grep -q '^preemption (by class): .*(1 requeues, 0 suspensions;' "$T/c"
ok $? "by class (BE not suspendable in this file): requeued"

# Drawn from the trace: fewer GPU-hours lost with suspension, the same report twice.
run() {
    "$SIM" events --nodes "$TR/openb_node_list_gpu_node.csv" --pods "$TR/openb_pod_list_default.csv" \
        --queues "$TESSEL_SRCDIR/examples/queues.conf" --synthetic 300 --interarrival 2 \
        --max-nodes 10 "$@" | grep '^preemption'
}
S=$(run --preempt suspend)
R=$(run --preempt requeue)
ls=$(echo "$S" | sed -n 's/.*GPU-hours lost \([0-9.]*\):.*/\1/p')
lr=$(echo "$R" | sed -n 's/.*GPU-hours lost \([0-9.]*\):.*/\1/p')
awk -v s="$ls" -v r="$lr" 'BEGIN { exit !(r > 0 && s < r) }'
ok $? "300 jobs of the trace: fewer GPU-hours lost suspending ($ls) than requeueing ($lr)"
is "$(run --preempt suspend)" "$S" "the same report for the same seed"

for bad in "--preempt sometimes" "--ckpt-mem 0" "--ckpt-mem lots" "--ckpt-save-bw 0" "--ckpt-restore-bw -1"; do
    # shellcheck disable=SC2086
    hand $bad >"$T/b" 2>&1
    is "$?" 2 "$bad: refused as a usage error (exit 2)"
done
done_testing
