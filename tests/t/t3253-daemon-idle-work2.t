#!/bin/sh
# t3253-daemon-idle-work2.t - what counts as GPU work among the calls gated in the second pass
# (docs/suspend.md, "What counts as GPU work").  The slice's work word, taken (read and cleared)
# as tesseld's idle tick takes it, between the calls of one process under the interposer: a
# context, an allocation and a stream's creation leave it 0, so do a host function
# (cuLaunchHostFunc), a stream callback (cuStreamAddCallback) and a capture with its graph's
# upload (cuStreamBeginCapture_v2, cuStreamIsCapturing, cuStreamEndCapture, cuGraphUpload: gated
# calls, not work); each stream memory operation sets it: cuStreamWriteValue32_v2,
# cuStreamWaitValue32_v2, cuStreamWriteValue64_v2, cuStreamWaitValue64_v2 and
# cuStreamBatchMemOp_v2, and so does each v1 (pre-3.2) copy: cuMemcpy2D (CUDA_MEMCPY2D_v1),
# cuMemcpy3DAsync (CUDA_MEMCPY3D_v1) and cuMemcpyHtoDAsync, into a 32-bit device pointer, and a
# 3D peer copy (cuMemcpy3DPeer) and a batch of copies (cuMemcpyBatchAsync_v2).  Then through tesseld, in a queue whose idle time is 3 s: a job that
# writes a 32-bit word every 0.1 s, one a 64-bit word, one a batch and one a v1 3D copy (nothing read back
# meanwhile: a read-back is a copy) are never reclaimed, while a job started after them, holding
# memory and idle, is (so they ran idle-time-long and more before it); every call succeeded and
# the last one's values were read back.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/ckpt.sh"
[ -x "$TESSEL_BUILD/tests/interposer/tcu-slice" ] || missing "tcu-slice not built"
W=$(mktemp -d /tmp/tessel-t3253.XXXXXX)
(
    export LD_LIBRARY_PATH="$TESSEL_BUILD/tests/fake" TESSEL_FAKE_GPUS=1xT4:4G
    export TESSEL_FAKE_STATE="$W/fake-state" TESSEL_SLICE="$W/slice"
    LD_PRELOAD="$TESSEL_BUILD/lib/libtessel-cuda.so" exec "$PROBE" ctx alloc:mem1:1M strcreate \
        waitfile:"$W/1" call:hostfunc call:callback call:capture waitfile:"$W/2" call:writev32 \
        waitfile:"$W/3" call:waitv32 waitfile:"$W/4" call:writev64 waitfile:"$W/5" \
        call:waitv64 waitfile:"$W/6" call:batch waitfile:"$W/7" call:copy2d1 waitfile:"$W/8" \
        call:copy3d1 waitfile:"$W/9" call:htodasync1 waitfile:"$W/10" call:copy3dpeer \
        waitfile:"$W/11" call:memcpybatch waitfile:"$W/12"
) >"$W/out" 2>&1 &
wpid=$!
take() { "$TESSEL_BUILD/tests/interposer/tcu-slice" "$W/slice" takework; }
wait_for '[ -e "$W/slice" ] && grep -q "^strcreate rc=0" "$W/out"'
ok $? "a process under the interposer has a context, 1 MiB and a stream: $(tr '\n' ' ' <"$W/out")"
is "$(take)" work=0 "context, allocation and stream creation are not GPU work"
i=1
for want in "hostfunc callback capture:0" "writev32:1" "waitv32:1" "writev64:1" "waitv64:1" \
    "batch:1" "copy2d1:1" "copy3d1:1" "htodasync1:1" "copy3dpeer:1" \
    "memcpybatch:1"; do
    touch "$W/$i"
    i=$((i + 1))
    calls=${want%:*}
    wait_for "grep -q '^call ${calls##* } ' '$W/out'" # the stage's last call returned
    for c in $calls; do
        grep -q "^call $c rc=0 ok=1\$" "$W/out"; ok $? "$c: the call succeeded"
    done
    what="GPU work"
    [ "${want#*:}" = 0 ] && what="gated, not work"
    is "$(take)" "work=${want#*:}" "$calls: the work word says ${want#*:} ($what)"
done
touch "$W/12"
wait "$wpid"; is $? 0 "the process ends cleanly"
rm -rf "$W"

ckpt_start
suspends() { api GET "/v1/jobs/$1/events" && jq '[.events[] | select(.event == "suspend")] | length' "$TD/out"; }

api POST /v1/queues '{"name":"lab","idle_reclaim":"3s"}'
is "$CODE $(jget .idle_reclaim)" "201 3" "queue lab: a job idle for 3 s gives its GPU memory back"

BUSY="writev32 writev64 batch copy3d1"
for op in $BUSY; do
    api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem1:1M\",\"alloc:mem:128M\",\"strcreate\",\"opuntil:$op:$G/$op\"],\"gpu\":0.2,\"queue\":\"lab\",$ENV}"
    [ "$CODE" = 201 ] || echo "# submit $op: $CODE $(cat "$TD/out")"
    eval "J_$op=$(jget .id)"
done
for op in $BUSY; do
    eval "j=\$J_$op"
    wait_for "logs $j | grep -q '^strcreate rc=0'"
    ok $? "job $j ($op every 0.1 s) holds 129 MiB and is at work"
done

api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:128M\",\"waitfile:$G/c\"],\"gpu\":0.2,\"queue\":\"lab\",$ENV}"
C=$(jget .id)
wait_for "logs $C | grep -q '^alloc mem rc=0'"; ok $? "an idle job C, started after them, holds 128 MiB"
wait_for '[ "$(job_state $C)" = suspended ]'; ok $? "C is reclaimed"
api GET "/v1/jobs/$C"
is "$(jget .suspended_reason)" idle "for idleness"
for op in $BUSY; do
    eval "j=\$J_$op"
    is "$(job_state "$j") $(suspends "$j")" "running 0" \
        "job $j ($op: GPU work) is running and was never reclaimed"
done
for op in $BUSY; do
    touch "$G/$op"
done
for op in $BUSY; do
    eval "j=\$J_$op"
    wait_for '[ "$(job_state $j)" = succeeded ]'; ok $? "job $j ($op) ends ($(job_state "$j"))"
    logs "$j" | grep -Eq "^opuntil $op n=[1-9][0-9]* bad=0 ok=1\$"
    ok $? "every call of job $j succeeded, the last one's values read back: $(logs "$j" | grep '^opuntil')"
done
api POST "/v1/jobs/$C/cancel"
wait_for '[ "$(job_state $C)" = cancelled ]'; ok $? "the reclaimed job C is cancelled"

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
