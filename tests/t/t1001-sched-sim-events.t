#!/bin/sh
# t1001-sched-sim-events.t - `tessel-sim events` on a case worked out by hand,
# on bad queue files, and on jobs drawn from the Alibaba trace.
#
# Hand case: one node of 4 GPUs; queue A guaranteed all 4 and sent every
# pod, queue B idle.  p0 asks for 4 GPUs at t = 0 and lives 100 s; p1 asks
# for 1 GPU at t = 10 and lives 50 s.  p1 waits until p0 ends (t = 100),
# and it is not owed anything (4 + 1 > 4), so A is satisfied all along:
#   admission p50 = 0 s, p95 = 90 s (1.5m); completion p50 = 100 s (1.7m),
#   p95 = 90 + 50 = 140 s (2.3m); GPUs held while jobs arrive (0..10 s):
#   4.0; satisfaction 100 %; no preemption.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
SIM="$TESSEL_BUILD/bin/tessel-sim"
[ -x "$SIM" ] || missing "no $SIM"
"$SIM" events --help 2>&1 | grep -q 'tessel-sim events' ||
    missing "tessel-sim has no events mode in this build"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

cat >"$T/nodes.csv" <<'CSV'
sn,cpu_milli,memory_mib,gpu,model
n0,64000,262144,4,A100
CSV
cat >"$T/pods.csv" <<'CSV'
name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
p0,1000,1024,4,1000,,BE,Succeeded,0,100,0
p1,1000,1024,1,1000,,BE,Succeeded,10,60,10
CSV
cat >"$T/q.conf" <<'CONF'
queue A gpu=4 share=1   # every pod
queue B gpu=0           # idle: no share
CONF

"$SIM" events --nodes "$T/nodes.csv" --pods "$T/pods.csv" --queues "$T/q.conf" >"$T/out" 2>"$T/err"
ok $? "the hand case runs"
row=$(awk '$1 == "A"' "$T/out")
is "$(echo "$row" | awk '{print $2, $3}')" "2 0" "A: 2 jobs, none refused"
is "$(echo "$row" | awk '{print $4, $5}')" "0s 1.5m" "A: admission p50 0 s, p95 90 s"
is "$(echo "$row" | awk '{print $6, $7}')" "4.0 4.0" "A: 4 GPUs held of 4 guaranteed"
is "$(echo "$row" | awk '{print $8, $9}')" "100.0% 0" "A: satisfied, no preemption"
is "$(echo "$row" | awk '{print $10, $11}')" "1.7m 2.3m" "A: completion p50 100 s, p95 140 s"
is "$(awk '$1 == "B" {print $2}' "$T/out")" "0" "B: no jobs"

# bad queue files are refused with the file and line
printf 'queue A gpu=4 share=1\nqueue X parent=nope\n' >"$T/bad.conf"
"$SIM" events --nodes "$T/nodes.csv" --pods "$T/pods.csv" --queues "$T/bad.conf" \
    >/dev/null 2>"$T/err"
is "$?" 1 "unknown parent: exit 1"
grep -q 'no parent queue nope' "$T/err"
ok $? "unknown parent: named in the message"
printf 'queue A gpu=four\n' >"$T/bad2.conf"
"$SIM" events --nodes "$T/nodes.csv" --pods "$T/pods.csv" --queues "$T/bad2.conf" \
    >/dev/null 2>"$T/err"
grep -q 'bad2.conf:1: bad' "$T/err"
ok $? "bad amount: file and line named"

# 2000 jobs drawn from the trace, one every 2 s on average, on 50 nodes: a
# loaded cluster, so preemption happens; the run ends and reports
TR="$TESSEL_SHARED/traces/alibaba-gpu-2023"
if [ -r "$TR/openb_pod_list_default.csv" ]; then
    "$SIM" events --nodes "$TR/openb_node_list_gpu_node.csv" \
        --pods "$TR/openb_pod_list_default.csv" --queues "$TESSEL_SRCDIR/examples/queues.conf" \
        --synthetic 2000 --interarrival 2 --max-nodes 50 >"$T/trace" 2>"$T/err"
    ok $? "2000 synthetic jobs on 50 nodes run"
    is "$(awk '$1 == "research" {print $2}' "$T/trace")" 1025 "research gets its share (seed 42)"
    pre=$(sed -n 's/^cluster: .*%.*, \([0-9]*\) preemptions.*/\1/p' "$T/trace")
    [ "${pre:-0}" -gt 0 ]
    ok $? "some preemptions ($pre)"
    "$SIM" events --nodes "$TR/openb_node_list_gpu_node.csv" \
        --pods "$TR/openb_pod_list_default.csv" --queues "$TESSEL_SRCDIR/examples/queues.conf" \
        --synthetic 2000 --interarrival 2 --max-nodes 50 >"$T/again" 2>&1
    is "$(grep -v '^cluster' "$T/trace" | md5sum)" "$(grep -v '^cluster' "$T/again" | md5sum)" \
        "same seed, same report"
fi
done_testing
