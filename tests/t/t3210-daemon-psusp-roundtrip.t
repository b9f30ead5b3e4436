#!/bin/sh
# t3210-daemon-psusp-roundtrip.t - preemption by suspension (docs/suspend.md, "Preemption by
# suspension"): a training job of a queue with no guarantee holds the fake GPU with 1 GiB of a
# pattern; a job of a queue owed the GPU arrives; the scheduler picks the first as its victim
# and tesseld checkpoints it instead of killing it: it is suspended for that job (the job
# object, its event and `tessel ps` say so), its GPU memory is given back and the preemptor
# uses 3 GiB of the 4 GiB GPU meanwhile (more than would fit beside the victim's memory);
# when the preemptor ends, the victim is resumed by tesseld alone, on the same GPU, the same
# attempt (no requeue counted), and finds every byte of its pattern.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/ckpt.sh"
# --min-runtime 0: a job may be a victim as soon as it runs (libsched's default is 60 s).
ARGS="$ARGS --min-runtime 0"
ckpt_start
tessel() { TESSEL_URL="$TD_URL" TESSEL_TOKEN="$TD_ADMIN" HOME="$TD" "$TESSEL_BUILD/bin/tessel" "$@"; }

api POST /v1/queues '{"name":"prod","guarantee_gpu_milli":1000}'
is "$CODE" 201 "queue prod is guaranteed the GPU"
api POST /v1/queues '{"name":"scratch","guarantee_gpu_milli":0}'
is "$CODE" 201 "queue scratch has no guarantee"

api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:1G\",\"pattern:1G\",\"waitfile:$G/a\",\"check:1G\"],\"gpu\":1,\"queue\":\"scratch\",$ENV}"
A=$(jget .id)
is "$CODE $(jget .preemptible) $(jget .suspended_for)" "201 suspend null" \
    "a training job is preemptible by suspension by default"
wait_for "logs $A | grep -q '^pattern rc=0'"; ok $? "job A (scratch) holds 1 GiB with its pattern written"
api GET "/v1/jobs/$A"
START=$(jget .started_at)

api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"waitfile:$G/p0\",\"ctx\",\"alloc:mem:3G\",\"pattern:3G\",\"check:3G\",\"waitfile:$G/p\"],\"gpu\":1,\"queue\":\"prod\",$ENV}"
P=$(jget .id)
wait_for '[ "$(job_state $A)" = suspended ]'; ok $? "prod's job P makes the scheduler take A's GPU: A is suspended"
api GET "/v1/jobs/$A"
is "$(jget .suspended_for) $(jget .preemptions)" "$P 0" "A is suspended for job P, not requeued"
REL=$(jget .gpu_released)
[ "$REL" -ge $GiB ]; ok $? "A gave back at least its 1 GiB ($REL bytes)"
api GET "/v1/jobs/$A/events"
jq -e --argjson p "$P" '[.events[] | select(.event == "suspend")] | last |
    .who == "tesseld" and .detail.suspended_for == $p and .detail.preempt_queue == "prod" and
    (.why | startswith("preempted by suspension for job \($p) of queue '"'prod'"': GPU memory given back"))' \
    "$TD/out" >/dev/null
ok $? "its suspend event says by whom, for which job of which queue, and what it gave back"
tessel ps >"$TD/ps" 2>&1
grep -q "gpu released .*preempted for job $P" "$TD/ps"; ok $? "tessel ps shows it suspended for job P, with the memory given back"

wait_for '[ "$(job_state $P)" = running ]'; ok $? "P is placed on the GPU A gave back"
touch "$G/p0"
wait_for "logs $P | grep -q '^check ok'"; ok $? "P allocates, writes and checks 3 GiB of the 4 GiB GPU while A is suspended"
is "$(job_state "$A")" suspended "A stays suspended while P runs"
wait_for "api GET /v1/jobs/$A && jget .reason | grep -q 'waiting for'"
ok $? "A's reason says that it waits for its GPU: $(jget .reason)"

touch "$G/p"
wait_for '[ "$(job_state $P)" = succeeded ]'; ok $? "P ends"
wait_for '[ "$(job_state $A)" = running ]'; ok $? "A is resumed by tesseld once its GPU has room, no one asking"
api GET "/v1/jobs/$A"
is "$(jget .suspended_for) $(jget .gpu_released) $(jget .preemptions) $(jget .started_at)" \
    "null null 0 $START" "A is the same attempt (its start kept), no memory given back any more"
api GET "/v1/jobs/$A/events"
jq -e '[.events[] | select(.event == "resume")] | last | .who == "tesseld"' "$TD/out" >/dev/null
ok $? "its resume is tesseld's"
touch "$G/a"
wait_for '[ "$(job_state $A)" = succeeded ]'; ok $? "A ends"
logs "$A" | grep -q '^check ok'; ok $? "every byte of A's pattern is back at the same addresses"
api GET /v1/gpus
is "$(jget '.gpus[0].allocated_milli')" 0 "nothing is held afterwards"

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
