#!/bin/sh
# t3255-daemon-idle-libraries.t - the library and kernel calls of CUDA 12's lazy loading and
# cuMemGetAddressRange, gated in the fourth pass (docs/suspend.md, "The next CUDA call"; issue 21
# item 3): a reclaimed job whose next CUDA call is one of them is resumed by it.
#   First, one process under the interposer, without tesseld: the slice's work word, taken (read
#   and cleared) as tesseld's idle tick takes it, stays 0 across a library's load, module look-up
#   and unload (cuLibraryLoadData, cuLibraryGetModule, cuLibraryUnload) and cuMemGetAddressRange_v2
#   (each succeeding with the right answer); a launch of a library's kernel after them
#   (cuLibraryGetKernel, cuKernelGetAttribute, cuKernelGetFunction, cuLaunchKernel) sets it.
#   Then through tesseld, in a queue whose idle time is 2 s: four jobs hold 128 MiB with a
#   pattern, 1 MiB and a stream of their own (two of them a library loaded too), do no GPU work
#   and are reclaimed; the first CUDA call each makes after that is: a library's load
#   (cuLibraryLoadData), a kernel of the library it loaded before (cuLibraryGetKernel, then
#   cuKernelGetAttribute, cuKernelGetFunction and a launch), the same with the calls looked up
#   through cuGetProcAddress, and an allocation's range (cuMemGetAddressRange_v2).  Each first
#   call asks tesseld for the job's GPU, waits, and once restored goes on: it succeeds with the
#   right answer, every byte of the pattern is back, the job ends.  A call the interposer did not
#   stop would block in the (fake) driver, which holds a checkpointed process's calls: its job
#   would never end.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/ckpt.sh"
[ -x "$TESSEL_BUILD/tests/interposer/tcu-slice" ] || missing "tcu-slice not built"

QUERIES="libload addrrange"
W=$(mktemp -d /tmp/tessel-t3255.XXXXXX)
calls=""
for q in $QUERIES; do calls="$calls call:$q"; done
(
    export LD_LIBRARY_PATH="$TESSEL_BUILD/tests/fake" TESSEL_FAKE_GPUS=1xT4:4G
    export TESSEL_FAKE_STATE="$W/fake-state" TESSEL_SLICE="$W/slice"
    # shellcheck disable=SC2086
    LD_PRELOAD="$TESSEL_BUILD/lib/libtessel-cuda.so" exec "$PROBE" ctx alloc:mem:1M strcreate lib \
        waitfile:"$W/1" $calls waitfile:"$W/2" call:kernel waitfile:"$W/3"
) >"$W/out" 2>&1 &
wpid=$!
take() { "$TESSEL_BUILD/tests/interposer/tcu-slice" "$W/slice" takework; }
wait_for '[ -e "$W/slice" ] && grep -q "^lib rc=0" "$W/out"'
ok $? "a process under the interposer has a context, 1 MiB, a stream and a library: $(tr '\n' ' ' <"$W/out")"
is "$(take)" work=0 "context, allocation, stream creation and a library's load are not GPU work"
touch "$W/1"
wait_for "grep -q '^call addrrange ' '$W/out'"
for q in $QUERIES; do
    grep -q "^call $q rc=0 ok=1\$" "$W/out"; ok $? "$q: the calls succeeded and answered right"
done
is "$(take)" work=0 "the calls ($QUERIES): the work word says 0 (gated, not work)"
touch "$W/2"
wait_for "grep -q '^call kernel ' '$W/out'"
grep -q "^call kernel rc=0 ok=1\$" "$W/out"; ok $? "kernel: looked up, its function launched"
is "$(take)" work=1 "the launch of the library's kernel: the work word says 1 (it is live)"
touch "$W/3"
wait "$wpid"; is $? 0 "the process ends cleanly"
rm -rf "$W"

ckpt_start
api POST /v1/queues '{"name":"lab","idle_reclaim":"2s"}'
is "$CODE $(jget .idle_reclaim)" "201 2" "queue lab: a job idle for 2 s gives its GPU memory back"

OPS="libload kernel kernel_proc addrrange"
for name in $OPS; do
    op=${name%_proc}
    via='"ctx",'
    [ "$name" = kernel_proc ] && via='"--via=proc","ctx",'
    lib=''
    [ "$op" = kernel ] && lib='"lib",'
    api POST /v1/jobs "{\"argv\":[\"$PROBE\",$via\"alloc:mem:1M\",\"alloc:mem:128M\",\"pattern:128M\",\"strcreate\",$lib\"waitfile:$G/$name\",\"op:$op\",\"check:128M\"],\"gpu\":0.2,\"queue\":\"lab\",$ENV}"
    [ "$CODE" = 201 ] || echo "# submit $name: $CODE $(cat "$TD/out")"
    eval "J_$name=$(jget .id)"
done
for name in $OPS; do
    eval "j=\$J_$name"
    last=strcreate
    case $name in kernel*) last=lib ;; esac
    wait_for "logs $j | grep -q '^$last rc=0'"
    ok $? "job $j ($name) holds 129 MiB with its pattern and a stream (kernel: and a library), then waits"
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

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
