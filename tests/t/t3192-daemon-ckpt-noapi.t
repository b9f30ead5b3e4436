#!/bin/sh
# t3192-daemon-ckpt-noapi.t - a driver without the checkpoint API (TESSEL_FAKE_CHECKPOINT=0,
# a driver older than r570): a suspend falls back to today's (the job keeps its memory and its
# slice), with the reason in its suspend event, and a resume is immediate; nothing is lost.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/ckpt.sh"
export TESSEL_FAKE_CHECKPOINT=0 # this driver has no checkpoint API
ckpt_start

api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:1G\",\"pattern:1G\",\"waitfile:$G/a\",\"check:1G\"],\"gpu\":1,$ENV}"
A=$(jget .id)
wait_for "logs $A | grep -q '^pattern rc=0'"; ok $? "job A holds 1 GiB with its pattern written"
api POST /v1/jobs "{\"argv\":[\"true\"],\"gpu\":1}"
B=$(jget .id)
api POST "/v1/jobs/$A/suspend"
is "$CODE $(jget .state) $(jget .gpu_released)" "200 suspended 0" \
    "A is suspended the old way: no memory given back"
api GET "/v1/jobs/$A/events"
WHY=$(jq -r '[.events[] | select(.event == "suspend")] | last | .why' "$TD/out")
is "$WHY" "GPU memory kept: the driver has no checkpoint API" "its suspend event says why"
[ "$(used)" -ge $GiB ]; ok $? "A keeps its memory on the GPU"
# A scheduling pass after the suspend has looked at B: it gives B a reason to wait.
wait_for "api GET /v1/jobs/$B && [ \"\$(jget .reason_code)\" != null ]"
is "$(jget .state)" pending "its slice stays held: B (a whole GPU) waits ($(jget .reason))"
api POST "/v1/jobs/$A/resume"
is "$CODE $(jget .state)" "200 running" "A is resumed at once"
touch "$G/a"
wait_for '[ "$(job_state $A)" = succeeded ]'; ok $? "A ends"
logs "$A" | grep -q '^check ok'; ok $? "its data is intact"
wait_for '[ "$(job_state $B)" = succeeded ]'; ok $? "B runs after it"

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
