#!/bin/sh
# t3211-daemon-psusp-restart.t - tesseld restarted while a job is suspended by a preemption
# (docs/suspend.md, "Preemption by suspension"): after the restart the victim is still
# suspended for its preemptor (jobs.suspended_for and the bytes it gave back are in the store),
# its GPU stays with the preemptor, and when the preemptor ends the victim is resumed by the
# new tesseld alone and finds its pattern intact.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/ckpt.sh"
ARGS="$ARGS --min-runtime 0"
ckpt_start

api POST /v1/queues '{"name":"prod","guarantee_gpu_milli":1000}'
api POST /v1/queues '{"name":"scratch","guarantee_gpu_milli":0}'
is "$CODE" 201 "queues prod (guaranteed the GPU) and scratch (nothing)"

api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:1G\",\"pattern:1G\",\"waitfile:$G/a\",\"check:1G\"],\"gpu\":1,\"queue\":\"scratch\",$ENV}"
A=$(jget .id)
wait_for "logs $A | grep -q '^pattern rc=0'"; ok $? "job A (scratch) holds 1 GiB with its pattern written"
api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:3G\",\"pattern:3G\",\"check:3G\",\"waitfile:$G/p\"],\"gpu\":1,\"queue\":\"prod\",$ENV}"
P=$(jget .id)
wait_for '[ "$(job_state $A)" = suspended ]'; ok $? "prod's job P preempts A by suspension"
wait_for "logs $P | grep -q '^check ok'"; ok $? "P runs with 3 GiB of the GPU"
api GET "/v1/jobs/$A"
REL=$(jget .gpu_released)
is "$(jget .suspended_for)" "$P" "A is suspended for P"

td_stop; ok $? "tesseld stops (SIGTERM) while A is suspended for P"
# shellcheck disable=SC2086
td_start $ARGS || missing "tesseld did not start again"
api GET "/v1/jobs/$A"
is "$(jget .state) $(jget .suspended_for) $(jget .gpu_released)" "suspended $P $REL" \
    "after the restart A is still suspended for P, with the bytes it gave back"
is "$(job_state "$P")" running "P still runs"
api GET /v1/gpus
is "$(jget '.gpus[0].allocated_milli')" 1000 "the GPU counts P's slice alone: A's stays given up"
wait_for "api GET /v1/jobs/$A && jget .reason | grep -q 'waiting for'"
ok $? "A waits for its GPU: $(jget .reason)"

touch "$G/p"
wait_for '[ "$(job_state $P)" = succeeded ]'; ok $? "P ends"
wait_for '[ "$(job_state $A)" = running ]'; ok $? "the restarted tesseld resumes A once its GPU has room"
api GET "/v1/jobs/$A"
is "$(jget .suspended_for) $(jget .preemptions)" "null 0" "A runs on, not requeued"
touch "$G/a"
wait_for '[ "$(job_state $A)" = succeeded ]'; ok $? "A ends"
logs "$A" | grep -q '^check ok'; ok $? "every byte of A's pattern is back"

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
