#!/bin/sh
# t3191-daemon-ckpt-restart-kill.t - a job whose suspend gave its GPU memory back
# (docs/suspend.md) across a restart of tesseld: the memory given back is kept in the store,
# its slice stays free for another job after the restart, and a resume after it restores the
# job with its data intact.  A job cancelled while so suspended ends, and its memory stays free.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/ckpt.sh"
ckpt_start

api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:1G\",\"pattern:1G\",\"waitfile:$G/a\",\"check:1G\"],\"gpu\":1,$ENV}"
A=$(jget .id)
wait_for "logs $A | grep -q '^pattern rc=0'"; ok $? "job A holds 1 GiB with its pattern written"
api POST "/v1/jobs/$A/suspend"
REL=$(jget .gpu_released)
[ "$CODE" = 200 ] && [ "$REL" -ge $GiB ]; ok $? "A is suspended and gave back $REL bytes"

td_stop; ok $? "tesseld stops with A suspended"
is "$(sqlite3 "$TD/data/tessel.db" "SELECT gpu_released FROM jobs WHERE id = $A")" "$REL" \
    "the store keeps what A gave back"
# shellcheck disable=SC2086
td_start $ARGS || missing "tesseld did not start again"
api GET "/v1/jobs/$A"
is "$(jget .state) $(jget .gpu_released)" "suspended $REL" "after the restart A is suspended, $REL bytes given back"
[ "$(used)" -lt $GiB ]; ok $? "its memory is still free"

api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:2G\",\"pattern:2G\",\"check:2G\"],\"gpu\":1,$ENV}"
B=$(jget .id)
wait_for '[ "$(job_state $B)" = succeeded ]'
ok $? "a whole-GPU job B is placed on its GPU after the restart and runs to its end"
logs "$B" | grep -q '^check ok'; ok $? "B used 2 GiB of it"

api POST "/v1/jobs/$A/resume"
is "$CODE" 200 "A's resume is accepted"
wait_for '[ "$(job_state $A)" = running ]'; ok $? "A is restored and running"
touch "$G/a"
wait_for '[ "$(job_state $A)" = succeeded ]'; ok $? "A ends"
logs "$A" | grep -q '^check ok'; ok $? "A's pattern survived the suspend, the restart and the resume"

# Cancelled while its memory is given back.
api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:1G\",\"pattern:1G\",\"waitfile:$G/c\"],\"gpu\":1,$ENV}"
C=$(jget .id)
wait_for "logs $C | grep -q '^pattern rc=0'"; ok $? "job C holds 1 GiB"
api POST "/v1/jobs/$C/suspend"
[ "$(jget .gpu_released)" -ge $GiB ]; ok $? "C is suspended, its memory given back"
api POST "/v1/jobs/$C/cancel"
wait_for '[ "$(job_state $C)" = cancelled ]'; ok $? "C, cancelled while suspended, ends cancelled"
wait_for '[ "$(used)" -lt $GiB ]'; ok $? "no memory of it is left on the GPU"

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
