#!/bin/sh
# t3252-daemon-idle-calls2.t - a reclaimed job's next CUDA call resumes it when that call is one
# gated in the second pass (docs/suspend.md, "The next CUDA call"; issue 21 item 3): nine jobs
# of a queue whose idle time is 2 s each hold 128 MiB with a pattern, a 1 MiB buffer and a stream of
# their own, then do no GPU work and are reclaimed (memory given back by the driver's
# checkpoint); the first CUDA call each makes after that is, by family:
#   stream memory operations: cuStreamWriteValue32_v2, cuStreamBatchMemOp_v2 (two writes and a
#     wait), and a look-up of cuStreamWriteValue64 through cuGetProcAddress with the per-thread
#     default stream, then that call (the _v2_ptsz variant);
#   host functions and callbacks: cuLaunchHostFunc, cuStreamAddCallback (the function runs);
#   stream capture and graph upload: cuStreamBeginCapture_v2 on the job's stream, then
#     cuStreamIsCapturing (active), cuStreamEndCapture, an instantiation and cuGraphUpload;
#   the v1 (pre-3.2) copies: cuMemcpy2D with CUDA_MEMCPY2D_v1 into a 32-bit device pointer;
#   the 3D peer copies: cuMemcpy3DPeer (2 slices of 2 rows, host to device, both contexts named);
#   the batch copies: cuMemcpyBatchAsync_v2 (two copies on the job's stream).
# Each first call asks tesseld for the job's GPU, waits, and once restored goes on: it succeeds,
# its values are on the device (read back) or its function ran, every byte of the pattern is
# back, the job ends.  A call the interposer did not stop would block in the (fake) driver, which
# holds a checkpointed process's calls: its job would never end.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/ckpt.sh"
ckpt_start

api POST /v1/queues '{"name":"lab","idle_reclaim":"2s"}'
is "$CODE $(jget .idle_reclaim)" "201 2" "queue lab: a job idle for 2 s gives its GPU memory back"

OPS="writev32 batch writev64 hostfunc callback capture copy2d1 copy3dpeer memcpybatch"
for op in $OPS; do
    via='"ctx",'
    [ "$op" = writev64 ] && via='"--via=proc","--ptds","ctx",'
    buf=mem
    [ "$op" = copy2d1 ] && buf=mem1 # a 32-bit device pointer for the v1 copy
    api POST /v1/jobs "{\"argv\":[\"$PROBE\",$via\"alloc:$buf:1M\",\"alloc:mem:128M\",\"pattern:128M\",\"strcreate\",\"waitfile:$G/$op\",\"op:$op\",\"check:128M\"],\"gpu\":0.11,\"queue\":\"lab\",$ENV}"
    [ "$CODE" = 201 ] || echo "# submit $op: $CODE $(cat "$TD/out")"
    eval "J_$op=$(jget .id)"
done
for op in $OPS; do
    eval "j=\$J_$op"
    wait_for "logs $j | grep -q '^strcreate rc=0'"
    ok $? "job $j ($op) holds 129 MiB with its pattern and a stream, then waits"
done
for op in $OPS; do
    eval "j=\$J_$op"
    wait_for '[ "$(job_state $j)" = suspended ]'
    api GET "/v1/jobs/$j"
    is "$(jget .state) $(jget .suspended_reason)" "suspended idle" "job $j ($op), idle, is reclaimed"
    [ "$(jget .gpu_released)" -ge $((128 * MiB)) ]
    ok $? "and gave back its memory ($(jget .gpu_released) bytes)"
done

for op in $OPS; do
    eval "j=\$J_$op"
    touch "$G/$op" # its next CUDA call: op
    wait_for '[ "$(job_state $j)" = succeeded ]'
    ok $? "job $j's next call ($op) resumes it and it ends ($(job_state "$j"))"
    logs "$j" | grep -q "^op $op rc=0 ok=1\$"
    ok $? "the call succeeded and did what it says: $(logs "$j" | grep '^op ')"
    logs "$j" | grep -q '^check ok$'; ok $? "every byte of job $j's pattern is back"
    grep -q "job $j: a CUDA call of its processes waits for its GPU memory" "$TD/tesseld.log"
    ok $? "tesseld's log says job $j's call asked for it"
    api GET "/v1/jobs/$j/events"
    jq -e '[.events[] | select(.event == "resume")] | last | (.who == "tesseld") and (.why == "GPU memory restored")' \
        "$TD/out" >/dev/null
    ok $? "job $j's resume event is tesseld's: GPU memory restored"
done

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
