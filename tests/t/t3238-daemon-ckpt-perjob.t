#!/bin/sh
# t3238-daemon-ckpt-perjob.t - one stopped job does not hold the node's checkpoints (RV3's F2,
# docs/suspend.md, "How tesseld drives it"): job A's process is stopped (SIGSTOP) and a suspend
# of A is asked, so its checkpoint step waits for it (the driver's lock waits for a stopped
# process) for the whole test.  Meanwhile, on the two simulated GPUs:
#
#   - a person's suspend of job B1 (the other GPU) completes, its memory given back, while
#     job B0 (A's GPU) holds its own suspend open the same way;
#   - B0's suspend completes once its process goes on, while another process on the same GPU
#     freed 1 GiB during B0's checkpoint: B0's gpu_released is what B0's own process held
#     (NVML's per-process figure, read before), not the GPU's fall (RV3's F7, last point);
#   - both are resumed and restored while A's step still waits, every byte intact;
#   - a preemption by suspension picks job C and ends within its bound (--test-psusp-ckpt-ms
#     40000 here): C is suspended for its preemptor, not killed and requeued;
#
# then A's process goes on and A's own suspend and resume complete, intact.
#
# The steps are held open on purpose, not raced (as t3194 does); no figure of time is asserted.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/ckpt.sh"
[ -e "$TESSEL_BUILD/tests/fake/libnvidia-ml.so.1" ] || missing "fake NVML not built"
ARGS="--fake-gpus 2xT4:4G --no-cgroups --allow-root-jobs --min-runtime 0"
ARGS="$ARGS --test-psusp-ckpt-ms 40000"
ckpt_start
step() { api GET "/v1/jobs/$1" && jget .checkpoint; }
probe_pid() { read -r _ _ _jp <"$TD/data/jobs/$1/pid" && echo "$_jp"; }
gpu_of() { api GET "/v1/jobs/$1" && jget '.placement[0].gpu'; }
# A suspend in the background: its status and answer in $TD/bg.$1 (.code once it answered).
bg_suspend() {
    curl -s -o "$TD/bg.$1" -w '%{http_code}' -X POST -H "Authorization: Bearer $TD_ADMIN" \
        "$TD_URL/v1/jobs/$1/suspend" >"$TD/bg.$1.part" && mv "$TD/bg.$1.part" "$TD/bg.$1.code" &
}
answered() { [ -s "$TD/bg.$1.code" ]; }
# The probe run by the test itself (not a job: no interposer) on the jobs' fake driver and NVML.
probe() {
    TESSEL_FAKE_STATE="$TESSEL_FAKE_STATE" TESSEL_FAKE_GPUS=2xT4:4G \
        LD_LIBRARY_PATH="$TESSEL_BUILD/tests/fake" "$PROBE" "$@"
}
# submit NAME QUEUE GPU: a job holding 512 MiB with its pattern, then waiting for $G/NAME and
# checking the pattern.
submit() {
    api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:512M\",\"pattern:512M\",\"waitfile:$G/$1\",\"check:512M\"],\"gpu\":$3,\"queue\":\"$2\",$ENV}"
    jget .id
}

api POST /v1/queues '{"name":"prod","guarantee_gpu_milli":2000}'
api POST /v1/queues '{"name":"scratch","guarantee_gpu_milli":0}'
is "$CODE" 201 "queues prod (guaranteed both GPUs) and scratch (nothing)"

A=$(submit a prod 0.5)
wait_for "logs $A | grep -q '^pattern rc=0'"; ok $? "job A holds 512 MiB with its pattern"
B0=$(submit b0 prod 0.5)
B1=$(submit b1 prod 1)
wait_for "logs $B0 | grep -q '^pattern rc=0' && logs $B1 | grep -q '^pattern rc=0'"
ok $? "jobs B0 (half a GPU) and B1 (a whole one) hold 512 MiB each"
GA=$(gpu_of "$A")
is "$(gpu_of "$B0")" "$GA" "B0 shares A's GPU ($GA)"
GB1=$(gpu_of "$B1")
[ "$GB1" != "$GA" ]; ok $? "B1 is on the other GPU ($GB1)"

# --- A holds its own checkpoint open ------------------------------------------------------
PA=$(probe_pid "$A")
[ -n "$PA" ] && kill -STOP "$PA"; ok $? "A's process ($PA) is stopped: its checkpoint will wait"
bg_suspend "$A"
wait_for '[ "$(step $A)" = suspend ]'; ok $? "A's suspend is under way (its checkpoint waits for A)"

# --- B0 (A's GPU) holds its own open too; B1's suspend (the other GPU) completes ----------
PB0=$(probe_pid "$B0")
OWN=$(probe "nvmlproc:$PB0:$GA" | sed -n 's/^nvmlproc pid=[0-9]* used=\([0-9]*\) rc=0$/\1/p')
[ "${OWN:-0}" -ge $((512 * MiB)) ]; ok $? "B0's process holds $OWN bytes on GPU $GA (NVML's per-process figure)"
# Another process (not a job) holds 1 GiB on the same GPU, and frees it during B0's checkpoint.
probe "ctx:$GA" alloc:mem:1G "waitfile:$G/e" free >"$TD/e.out" 2>&1 &
EP=$!
wait_for "grep -q '^alloc mem rc=0' '$TD/e.out'"; ok $? "another process holds 1 GiB on GPU $GA"
kill -STOP "$PB0"
bg_suspend "$B0"
wait_for '[ "$(step $B0)" = suspend ]'; ok $? "B0's suspend is under way (held by its stopped process)"

bg_suspend "$B1"
wait_for "answered $B1"; ok $? "a person's suspend of B1 answers while A's and B0's steps wait"
is "$(cat "$TD/bg.$B1.code") $(jq -r .state "$TD/bg.$B1")" "200 suspended" "B1 is suspended"
[ "$(jq -r .gpu_released "$TD/bg.$B1")" -ge $((512 * MiB)) ]; ok $? "B1 gave back its memory"
is "$(step "$A")" suspend "A's step still waits"

sleep 1 # B0's step has read its processes' memory before its lock (not asserted)
touch "$G/e"
wait "$EP"; ok $? "the other process freed its 1 GiB during B0's checkpoint and ended"
kill -CONT "$PB0"
wait_for "answered $B0"; ok $? "once B0's process goes on, its suspend answers (A's step still waits)"
is "$(cat "$TD/bg.$B0.code") $(jq -r .state "$TD/bg.$B0")" "200 suspended" "B0 is suspended"
is "$(jq -r .gpu_released "$TD/bg.$B0")" "$OWN" \
    "B0's gpu_released is its own process's memory, not the GPU's fall (1 GiB more)"

# --- their restores do not wait for A either ----------------------------------------------
api POST "/v1/jobs/$B0/resume"
is "$CODE" 200 "B0's resume is asked"
api POST "/v1/jobs/$B1/resume"
is "$CODE" 200 "B1's resume is asked"
wait_for '[ "$(job_state $B0)" = running ] && [ "$(job_state $B1)" = running ]'
ok $? "B0 and B1 are restored and running while A's step still waits"
is "$(step "$A")" suspend "A's step still waits"
touch "$G/b0" "$G/b1"
wait_for '[ "$(job_state $B0)" = succeeded ] && [ "$(job_state $B1)" = succeeded ]'
ok $? "B0 and B1 end"
logs "$B0" | grep -q '^check ok'; ok $? "every byte of B0's pattern is intact"
logs "$B1" | grep -q '^check ok'; ok $? "every byte of B1's pattern is intact"

# --- a preemption by suspension meanwhile -------------------------------------------------
C=$(submit c scratch 1)
wait_for "logs $C | grep -q '^pattern rc=0'"; ok $? "job C (scratch, a whole GPU) holds 512 MiB"
api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"waitfile:$G/p\"],\"gpu\":1,\"queue\":\"prod\",$ENV}"
P=$(jget .id)
wait_for '[ "$(job_state $C)" = suspended ]'; ok $? "prod's job P preempts C: C is suspended"
api GET "/v1/jobs/$C"
is "$(jget .suspended_for) $(jget .preemptions)" "$P 0" "C is suspended for P, not killed and requeued"
[ "$(jget .gpu_released)" -ge $((512 * MiB)) ]; ok $? "C gave back its memory"
grep -q "job $C preempted for job $P (" "$TD/tesseld.log"
is $? 1 "no kill and requeue of C in the log (only its suspension)"
wait_for '[ "$(job_state $P)" = running ]'; ok $? "P runs on C's GPU"
is "$(step "$A")" suspend "A's step still waits"
touch "$G/p"
wait_for '[ "$(job_state $P)" = succeeded ]'; ok $? "P ends"
wait_for '[ "$(job_state $C)" = running ]'; ok $? "C is resumed by tesseld"
touch "$G/c"
wait_for '[ "$(job_state $C)" = succeeded ]'; ok $? "C ends"
logs "$C" | grep -q '^check ok'; ok $? "every byte of C's pattern is intact"

# --- A's own step, once its process goes on -----------------------------------------------
kill -CONT "$PA"
wait_for "answered $A"; ok $? "once A's process goes on, its suspend answers"
is "$(cat "$TD/bg.$A.code") $(jq -r .state "$TD/bg.$A")" "200 suspended" "A is suspended"
[ "$(jq -r .gpu_released "$TD/bg.$A")" -ge $((512 * MiB)) ]; ok $? "A gave back its memory"
api POST "/v1/jobs/$A/resume"
wait_for '[ "$(job_state $A)" = running ]'; ok $? "A is restored"
touch "$G/a"
wait_for '[ "$(job_state $A)" = succeeded ]'; ok $? "A ends"
logs "$A" | grep -q '^check ok'; ok $? "every byte of A's pattern is intact"

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
