#!/bin/sh
# t3254-daemon-idle-queries.t - the driver's query calls, gated in the third pass (docs/suspend.md,
# "The next CUDA call"; issue 21 item 3): a reclaimed job whose next CUDA call is one of them is
# resumed by it, and they are not GPU work.
#   First, one process under the interposer, without tesseld: the slice's work word, taken (read
#   and cleared) as tesseld's idle tick takes it, stays 0 across cuCtxGetCurrent,
#   cuCtxPushCurrent_v2 and cuCtxPopCurrent_v2, cuStreamGetCaptureInfo_v3, cuDeviceGetAttribute
#   and cuPointerGetAttribute (each succeeding with the right answer), and a stream memory
#   operation after them still sets it (the word is live).
#   Then through tesseld, in a queue whose idle time is 2 s: seven jobs hold 128 MiB with a
#   pattern, 1 MiB and a stream of their own, do no GPU work and are reclaimed (memory given
#   back by the driver's checkpoint); the first CUDA call each makes after that is, by family:
#   the current context (cuCtxGetCurrent; a push and a pop), a stream's capture
#   (cuStreamGetCaptureInfo_v3, and the _v3_ptsz variant looked up through cuGetProcAddress with
#   the per-thread default stream), a device's attribute (cuDeviceGetAttribute), a pointer's
#   (cuPointerGetAttribute), and page-locked host memory (cuMemHostAlloc, then a registration
#   and its end and the free).  Each first call asks tesseld for the job's GPU, waits, and once
#   restored goes on: it succeeds with the right answer, every byte of the pattern is back, the
#   job ends.  A call the interposer did not stop would block in the (fake) driver, which holds a
#   checkpointed process's calls: its job would never end.
#   Last, a job that only asks (cuCtxGetCurrent every 0.1 s) is reclaimed all the same, and each
#   of its calls succeeds.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/ckpt.sh"
[ -x "$TESSEL_BUILD/tests/interposer/tcu-slice" ] || missing "tcu-slice not built"

QUERIES="ctxget pushpop capinfo devattr ptrattr hostmem"
W=$(mktemp -d /tmp/tessel-t3254.XXXXXX)
calls=""
for q in $QUERIES; do calls="$calls call:$q"; done
(
    export LD_LIBRARY_PATH="$TESSEL_BUILD/tests/fake" TESSEL_FAKE_GPUS=1xT4:4G
    export TESSEL_FAKE_STATE="$W/fake-state" TESSEL_SLICE="$W/slice"
    # shellcheck disable=SC2086
    LD_PRELOAD="$TESSEL_BUILD/lib/libtessel-cuda.so" exec "$PROBE" ctx alloc:mem:1M strcreate \
        waitfile:"$W/1" $calls waitfile:"$W/2" call:writev32 waitfile:"$W/3"
) >"$W/out" 2>&1 &
wpid=$!
take() { "$TESSEL_BUILD/tests/interposer/tcu-slice" "$W/slice" takework; }
wait_for '[ -e "$W/slice" ] && grep -q "^strcreate rc=0" "$W/out"'
ok $? "a process under the interposer has a context, 1 MiB and a stream: $(tr '\n' ' ' <"$W/out")"
is "$(take)" work=0 "context, allocation and stream creation are not GPU work"
touch "$W/1"
wait_for "grep -q '^call hostmem ' '$W/out'"
for q in $QUERIES; do
    grep -q "^call $q rc=0 ok=1\$" "$W/out"; ok $? "$q: the call succeeded and answered right"
done
is "$(take)" work=0 "the queries ($QUERIES): the work word says 0 (gated, not work)"
touch "$W/2"
wait_for "grep -q '^call writev32 ' '$W/out'"
is "$(take)" work=1 "a stream memory operation after them: the work word says 1 (it is live)"
touch "$W/3"
wait "$wpid"; is $? 0 "the process ends cleanly"
rm -rf "$W"

ckpt_start
api POST /v1/queues '{"name":"lab","idle_reclaim":"2s"}'
is "$CODE $(jget .idle_reclaim)" "201 2" "queue lab: a job idle for 2 s gives its GPU memory back"

OPS="ctxget pushpop capinfo capinfo_proc devattr ptrattr hostmem"
for name in $OPS; do
    op=${name%_proc}
    via='"ctx",'
    [ "$name" = capinfo_proc ] && via='"--via=proc","--ptds","ctx",'
    api POST /v1/jobs "{\"argv\":[\"$PROBE\",$via\"alloc:mem:1M\",\"alloc:mem:128M\",\"pattern:128M\",\"strcreate\",\"waitfile:$G/$name\",\"op:$op\",\"check:128M\"],\"gpu\":0.11,\"queue\":\"lab\",$ENV}"
    [ "$CODE" = 201 ] || echo "# submit $name: $CODE $(cat "$TD/out")"
    eval "J_$name=$(jget .id)"
done
for name in $OPS; do
    eval "j=\$J_$name"
    wait_for "logs $j | grep -q '^strcreate rc=0'"
    ok $? "job $j ($name) holds 129 MiB with its pattern and a stream, then waits"
done
for name in $OPS; do
    eval "j=\$J_$name"
    wait_for '[ "$(job_state $j)" = suspended ]'
    api GET "/v1/jobs/$j"
    is "$(jget .state) $(jget .suspended_reason)" "suspended idle" "job $j ($name), idle, is reclaimed"
    [ "$(jget .gpu_released)" -ge $((128 * MiB)) ]
    ok $? "and gave back its memory ($(jget .gpu_released) bytes)"
done
for name in $OPS; do
    op=${name%_proc}
    eval "j=\$J_$name"
    touch "$G/$name" # its next CUDA call: op
    wait_for '[ "$(job_state $j)" = succeeded ]'
    ok $? "job $j's next call ($name) resumes it and it ends ($(job_state "$j"))"
    logs "$j" | grep -q "^op $op rc=0 ok=1\$"
    ok $? "the call succeeded and answered right: $(logs "$j" | grep '^op ')"
    logs "$j" | grep -q '^check ok$'; ok $? "every byte of job $j's pattern is back"
    grep -q "job $j: a CUDA call of its processes waits for its GPU memory" "$TD/tesseld.log"
    ok $? "tesseld's log says job $j's call asked for it"
    api GET "/v1/jobs/$j/events"
    jq -e '[.events[] | select(.event == "resume")] | last | (.who == "tesseld") and (.why == "GPU memory restored")' \
        "$TD/out" >/dev/null
    ok $? "job $j's resume event is tesseld's: GPU memory restored"
done

# A job that only asks: still idle, reclaimed; its next query resumes it each time.
suspends() { api GET "/v1/jobs/$1/events" && jq '[.events[] | select(.event == "suspend")] | length' "$TD/out"; }
api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:128M\",\"opuntil:ctxget:$G/q\"],\"gpu\":0.2,\"queue\":\"lab\",$ENV}"
Q=$(jget .id)
wait_for "logs $Q | grep -q '^alloc mem rc=0'"; ok $? "job $Q holds 128 MiB and calls cuCtxGetCurrent every 0.1 s"
wait_for '[ "$(suspends $Q)" -ge 1 ]'
ok $? "job $Q, whose only calls are queries, is reclaimed for idleness ($(suspends "$Q") suspension(s))"
api GET "/v1/jobs/$Q/events"
jq -e '[.events[] | select(.event == "suspend")] | first | (.who == "tesseld") and (.why | startswith("idle for 2s (no GPU work): GPU memory given back"))' \
    "$TD/out" >/dev/null
ok $? "its suspend event is tesseld's: $(jq -r '[.events[] | select(.event == "suspend")] | first | .why' "$TD/out")"
touch "$G/q"
wait_for '[ "$(job_state $Q)" = succeeded ]'; ok $? "job $Q ends ($(job_state "$Q"))"
logs "$Q" | grep -Eq "^opuntil ctxget n=[1-9][0-9]* bad=0 ok=1\$"
ok $? "every call of job $Q succeeded: $(logs "$Q" | grep '^opuntil')"

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
