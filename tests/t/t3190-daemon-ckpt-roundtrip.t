#!/bin/sh
# t3190-daemon-ckpt-roundtrip.t - a suspend that gives the GPU back (docs/suspend.md): a job
# holding 1 GiB of the fake GPU with a pattern written is suspended; the driver checkpoints it
# (its memory is free in NVML's view, the job says how much it gave back, its slice is released
# in the scheduler), another whole-GPU job is placed on the GPU and runs meanwhile, a resume
# waits while that job runs (the reason says for what), then the first job is restored and
# finds every byte of its pattern at the same addresses.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/ckpt.sh"
ckpt_start

api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:1G\",\"pattern:1G\",\"waitfile:$G/a\",\"check:1G\"],\"gpu\":1,$ENV}"
A=$(jget .id)
wait_for "logs $A | grep -q '^pattern rc=0'"; ok $? "job A holds 1 GiB with its pattern written"
BEFORE=$(used)
[ "$BEFORE" -ge $GiB ]; ok $? "the GPU's used memory counts it ($BEFORE bytes)"

api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"waitfile:$G/b0\",\"ctx\",\"alloc:mem:2G\",\"pattern:2G\",\"check:2G\",\"waitfile:$G/b\"],\"gpu\":1,$ENV}"
B=$(jget .id)
is "$(job_state "$B")" pending "job B (a whole GPU) waits while A holds the GPU"

api POST "/v1/jobs/$A/suspend"
is "$CODE $(jget .state)" "200 suspended" "A is suspended"
REL=$(jget .gpu_released)
[ "$REL" -ge $GiB ]; ok $? "A gave back at least its 1 GiB ($REL bytes)"
wait_for '[ "$(used)" -lt $GiB ]'; ok $? "GET /v1/gpus no longer counts its memory in use ($(used) bytes)"
api GET "/v1/jobs/$A/events"
jq -e '[.events[] | select(.event == "suspend")] | last | .why | startswith("GPU memory given back")' \
    "$TD/out" >/dev/null
ok $? "its suspend event says the GPU memory was given back"
TESSEL_URL="$TD_URL" TESSEL_TOKEN="$TD_ADMIN" HOME="$TD" "$TESSEL_BUILD/bin/tessel" ps >"$TD/ps" 2>&1
grep -q "gpu released" "$TD/ps"; ok $? "tessel ps shows the memory given back"
TESSEL_URL="$TD_URL" TESSEL_TOKEN="$TD_ADMIN" HOME="$TD" "$TESSEL_BUILD/bin/tessel" show "$A" >"$TD/show" 2>&1
grep -q "^gpu_released *$REL\$" "$TD/show" && grep -q "GPU memory given back" "$TD/show"
ok $? "tessel show shows it, and the suspend's reason in the job's history"

touch "$G/b0" # B's CUDA work starts now
wait_for "logs $B | grep -q '^check ok'"; ok $? "B is placed on the freed GPU and uses 2 GiB of it"
is "$(job_state "$B")" running "B runs"
api GET /v1/gpus
is "$(jget '.gpus[0].allocated_milli')" 1000 "the GPU counts B's whole-GPU slice alone as allocated, not A's"

api POST "/v1/jobs/$A/resume"
is "$CODE $(jget .state)" "200 suspended" "A's resume waits: B holds its GPU"
wait_for "api GET /v1/jobs/$A && jget .reason | grep -q 'waiting for'"
ok $? "A's reason says what it waits for: $(jget .reason)"
is "$(job_state "$A")" suspended "A stays suspended while B runs"

touch "$G/b"
wait_for '[ "$(job_state $B)" = succeeded ]'; ok $? "B ends"
wait_for '[ "$(job_state $A)" = running ]'; ok $? "A is restored and resumed once the GPU has room"
api GET "/v1/jobs/$A"
is "$(jget .gpu_released)" null "a running job has no memory given back"
touch "$G/a"
wait_for '[ "$(job_state $A)" = succeeded ]'; ok $? "A ends"
logs "$A" | grep -q '^check ok'; ok $? "every byte of A's pattern is back at the same addresses"

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
