#!/bin/sh
# t3230-daemon-idle-reclaim.t - idle reclamation (docs/suspend.md, "Idle reclamation"): an
# interactive job of a queue whose idle time is 3 s holds 1 GiB of the fake GPU with a
# pattern and then does no GPU work; tesseld gives its memory back by the driver's checkpoint
# (SUSPENDED, reason "idle", the memory it gave back shown by the API, tessel ps and show,
# and counted in /metrics),
# another whole-GPU job is placed meanwhile and allocates, writes and checks 2 GiB of the 4 GiB
# GPU; the first job's next CUDA call (a kernel launch) asks for its GPU, waits while the other
# job holds it (one line on its stderr, the notice at 1 s here) and goes on once tesseld has
# restored it: the launch succeeds and every byte of its pattern is back.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/ckpt.sh"
ckpt_start
errlogs() { api GET "/v1/jobs/$1/logs?stream=stderr"; cat "$TD/out"; }
cli() { TESSEL_URL="$TD_URL" TESSEL_TOKEN="$TD_ADMIN" HOME="$TD" "$TESSEL_BUILD/bin/tessel" "$@"; }

api POST /v1/queues '{"name":"lab","idle_reclaim":"3s"}'
is "$CODE $(jget .idle_reclaim)" "201 3" "queue lab: a job idle for 3 s gives its GPU memory back"
ENV_A="\"env\":{\"TESSEL_FAKE_STATE\":\"$TESSEL_FAKE_STATE\",\"TESSEL_CUDA_IDLE_NOTICE\":\"1\"}"
api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:1G\",\"pattern:1G\",\"modload\",\"waitfile:$G/a\",\"launch:k\",\"check:1G\"],\"gpu\":1,\"class\":\"interactive\",\"queue\":\"lab\",$ENV_A}"
A=$(jget .id)
is "$CODE $(jget .class) $(jget .idle_reclaim)" "201 interactive null" \
    "job A (interactive, never preempted) takes its queue's idle time"
wait_for "logs $A | grep -q '^modload rc=0'"; ok $? "A holds 1 GiB with its pattern written, then waits"

wait_for '[ "$(job_state $A)" = suspended ]'; ok $? "A, idle, is suspended"
api GET "/v1/jobs/$A"
is "$(jget .suspended_reason)" idle "its reason is idle"
REL=$(jget .gpu_released)
[ "$REL" -ge $GiB ]; ok $? "A gave back at least its 1 GiB ($REL bytes)"
wait_for '[ "$(used)" -lt $GiB ]'; ok $? "the GPU's used memory no longer counts it ($(used) bytes)"
api GET "/v1/jobs/$A/events"
jq -e '[.events[] | select(.event == "suspend")] | last | (.who == "tesseld") and (.why | startswith("idle for 3s (no GPU work): GPU memory given back"))' \
    "$TD/out" >/dev/null
ok $? "its suspend event is tesseld's and says why: $(jq -r '[.events[] | select(.event == "suspend")] | last | .why' "$TD/out")"
cli ps >"$TD/ps" 2>&1
grep "^ *$A " "$TD/ps" | grep -q "gpu released .*idle"; ok $? "tessel ps shows it reclaimed while idle"
cli ps --state suspended >"$TD/ps" 2>&1
grep "^ *$A " "$TD/ps" | grep -q "gpu released .*idle"; ok $? "tessel ps --state suspended lists it"
cli ps --state pending,succeeded >"$TD/ps" 2>&1
grep -q "^ *$A " "$TD/ps"; is $? 1 "tessel ps --state pending,succeeded does not"
cli ps --state suspended,bogus >"$TD/ps" 2>&1
is "$?" 2 "tessel ps --state with an unknown state: exit 2"
grep -q "unknown state 'bogus'" "$TD/ps"; ok $? "... saying which: $(head -n 1 "$TD/ps")"
cli show "$A" >"$TD/show" 2>&1
grep -q "^suspended_reason *idle\$" "$TD/show" && grep -q "^gpu_released *$REL\$" "$TD/show"
ok $? "tessel show shows the reason and the memory given back"
curl -s "$TD_URL/metrics" >"$TD/metrics"
grep -q '^tessel_jobs_suspended_total{reason="idle"} 1$' "$TD/metrics" &&
    grep -q '^tessel_jobs_suspended_total{reason="request"} 0$' "$TD/metrics" &&
    grep -q '^tessel_jobs_suspended{reason="idle"} 1$' "$TD/metrics" &&
    grep -q "^tessel_jobs_suspended_released_bytes{reason=\"idle\"} $REL\$" "$TD/metrics"
ok $? "/metrics: one idle reclamation, one job reclaimed now, its $REL bytes given back"

api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:2G\",\"pattern:2G\",\"check:2G\",\"waitfile:$G/b\"],\"gpu\":1,$ENV}"
B=$(jget .id)
wait_for "logs $B | grep -q '^check ok'"; ok $? "job B is placed on the GPU A gave back and uses 2 GiB of it"

touch "$G/a" # A's next CUDA call: a kernel launch
wait_for "api GET /v1/jobs/$A && jget .reason | grep -q 'waiting for'"
ok $? "A's call asked for its GPU; the resume waits while B holds it: $(jget .reason)"
is "$(job_state "$A")" suspended "A stays suspended while B runs"
grep -q "job $A: a CUDA call of its processes waits for its GPU memory" "$TD/tesseld.log"
ok $? "tesseld's log says the job's call asked for it"
wait_for "errlogs $A | grep -q 'waits for its GPU slice: the job.s GPU memory was given back while it was idle'"
ok $? "one line on A's stderr says why its call waits"
logs "$A" | grep -q '^launch'; is $? 1 "A's launch has not gone on yet"

touch "$G/b"
wait_for '[ "$(job_state $B)" = succeeded ]'; ok $? "B ends"
wait_for '[ "$(job_state $A)" = succeeded ]'; ok $? "A is restored, its call goes on and it ends"
logs "$A" | grep -q '^launch k rc=0$'; ok $? "A's launch succeeded after the restore"
logs "$A" | grep -q '^check ok'; ok $? "every byte of A's pattern is back at the same addresses"
is "$(errlogs "$A" | grep -c 'waits for its GPU slice')" 1 "the line on stderr is said once"
api GET "/v1/jobs/$A/events"
jq -e '[.events[] | select(.event == "resume")] | last | (.who == "tesseld") and (.why == "GPU memory restored")' \
    "$TD/out" >/dev/null
ok $? "its resume event is tesseld's: GPU memory restored"

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
