#!/bin/sh
# t3194-daemon-ckpt-concurrent.t - requests that meet a suspend's checkpoint (docs/suspend.md,
# "Concurrent requests"): the checkpoint runs outside tesseld's lock, so the API answers while
# it runs; a second suspend and a resume are refused while it runs (a suspend during a
# restore too, and a second resume then is the one asked); a cancel during it ends the job
# cancelled, never suspended; tesseld stopped (SIGTERM) during it records its outcome
# before it exits, and the job is suspended after the restart and restored intact.
#
# The checkpoint is held open on purpose, not raced: the driver cannot lock a process that is
# stopped (SIGSTOP) and waits for it to continue (the fake models this, fake_ckpt.c), so the
# test stops the job's process before its suspend and continues it when it has checked what
# it checks meanwhile.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/ckpt.sh"
ckpt_start
step() { api GET "/v1/jobs/$1" && jget .checkpoint; }
# The job's process (the probe, which the shim started: the third pid of the job's pid file),
# stopped or continued by the test alone.
probe_pid() { read -r _ _ _jp <"$TD/data/jobs/$1/pid" && echo "$_jp"; }
# A suspend in the background: its status and answer in $TD/bg.$1.
bg_suspend() {
    curl -s -o "$TD/bg.$1" -w '%{http_code}' -X POST -H "Authorization: Bearer $TD_ADMIN" \
        "$TD_URL/v1/jobs/$1/suspend" >"$TD/bg.$1.code" &
    BG=$!
}
submit() {
    api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:1G\",\"pattern:1G\",\"waitfile:$G/$1\",\"check:1G\"],\"gpu\":1,$ENV}"
    jget .id
}

# --- the API answers during a checkpoint; a second suspend and a resume are refused --------
A=$(submit a)
wait_for "logs $A | grep -q '^pattern rc=0'"; ok $? "job A holds 1 GiB with its pattern written"
PA=$(probe_pid $A)
[ -n "$PA" ] && kill -STOP "$PA"; ok $? "A's process ($PA) is stopped: its checkpoint will wait"
bg_suspend "$A"
wait_for '[ "$(step $A)" = suspend ]'; ok $? "A's job object says its suspend's checkpoint runs"
api GET "/v1/jobs/$A"
is "$CODE $(jget .state) $(jget .suspended_at)" "200 running null" \
    "GET /v1/jobs/{id} answers meanwhile: A is still running (its state changes at the end)"
api GET /v1/gpus
is "$CODE" 200 "GET /v1/gpus answers meanwhile"
api POST /v1/jobs "{\"argv\":[\"true\"]}"
OTHER=$(jget .id)
is "$CODE" 201 "a submit is accepted meanwhile"
wait_for '[ "$(job_state $OTHER)" = succeeded ]'; ok $? "and runs to its end (the tick goes on)"
api POST "/v1/jobs/$A/suspend"
is "$CODE $(jget .error.code)" "409 conflict" "a second suspend is refused: $(jget .error.message)"
api POST "/v1/jobs/$A/resume"
is "$CODE $(jget .error.code)" "409 conflict" "a resume is refused: $(jget .error.message)"
kill -CONT "$PA"
wait "$BG"
is "$(cat "$TD/bg.$A.code") $(jq -r .state "$TD/bg.$A")" "200 suspended" \
    "once A's process goes on, its suspend answers: suspended"
[ "$(jq -r .gpu_released "$TD/bg.$A")" -ge $GiB ]; ok $? "A gave back its 1 GiB"
is "$(step $A)" null "no checkpoint step is under way any more"

# --- requests during the restore ---------------------------------------------------------
kill -STOP "$PA"
api POST "/v1/jobs/$A/resume"
is "$CODE $(jget .state)" "200 suspended" "A's resume is asked (its restore waits for the stopped process)"
wait_for '[ "$(step $A)" = restore ]'; ok $? "A's job object says its restore runs"
api POST "/v1/jobs/$A/resume"
is "$CODE $(jget .state) $(jget .checkpoint)" "200 suspended restore" \
    "a second resume during the restore is the resume already asked"
api POST "/v1/jobs/$A/suspend"
is "$CODE $(jget .error.code)" "409 conflict" "a suspend during the restore is refused: $(jget .error.message)"
api GET /v1/gpus
is "$CODE" 200 "GET /v1/gpus answers during the restore"
kill -CONT "$PA"
wait_for '[ "$(job_state $A)" = running ]'; ok $? "once A's process goes on, A is restored and running"
touch "$G/a"
wait_for '[ "$(job_state $A)" = succeeded ]'; ok $? "A ends"
logs "$A" | grep -q '^check ok'; ok $? "every byte of A's pattern is intact"

# --- a cancel during the checkpoint -------------------------------------------------------
C=$(submit c)
wait_for "logs $C | grep -q '^pattern rc=0'"; ok $? "job C holds 1 GiB"
PC=$(probe_pid $C)
kill -STOP "$PC"
bg_suspend "$C"
wait_for '[ "$(step $C)" = suspend ]'; ok $? "C's suspend's checkpoint runs"
api POST "/v1/jobs/$C/cancel"
is "$CODE" 200 "C's cancel is accepted during its checkpoint"
kill -CONT "$PC"
wait "$BG"
is "$(cat "$TD/bg.$C.code") $(jq -r .error.code "$TD/bg.$C")" "409 conflict" \
    "C's suspend answers that C was not suspended: $(jq -r .error.message "$TD/bg.$C")"
wait_for '[ "$(job_state $C)" = cancelled ]'; ok $? "C ends cancelled"
api GET "/v1/jobs/$C/events"
is "$(jq '[.events[] | select(.event == "suspend")] | length' "$TD/out")" 0 \
    "C's history has no suspend"

# --- tesseld stopped (SIGTERM) during the checkpoint --------------------------------------
D=$(submit d)
wait_for "logs $D | grep -q '^pattern rc=0'"; ok $? "job D holds 1 GiB"
PD=$(probe_pid $D)
kill -STOP "$PD"
bg_suspend "$D"
wait_for '[ "$(step $D)" = suspend ]'; ok $? "D's suspend's checkpoint runs"
kill -TERM "$TD_PID"
wait "$BG"
is "$(cat "$TD/bg.$D.code") $(jq -r .error.code "$TD/bg.$D")" "503 unavailable" \
    "D's suspend answers 503 when tesseld stops"
kill -0 "$TD_PID" 2>/dev/null; ok $? "tesseld waits for the checkpoint before it exits"
kill -CONT "$PD"
td_stop; ok $? "then it exits cleanly (exit 0, no sanitizer report)"
grep -q "job $D suspended by admin (GPU memory given back" "$TD/tesseld.log"
ok $? "the checkpoint's outcome was recorded before the exit"
# shellcheck disable=SC2086
td_start $ARGS || missing "tesseld did not start again"
api GET "/v1/jobs/$D"
is "$(jget .state)" suspended "after the restart D is suspended"
[ "$(jget .gpu_released)" -ge $GiB ]; ok $? "with its 1 GiB given back"
api POST "/v1/jobs/$D/resume"
wait_for '[ "$(job_state $D)" = running ]'; ok $? "D is restored and running"
touch "$G/d"
wait_for '[ "$(job_state $D)" = succeeded ]'; ok $? "D ends"
logs "$D" | grep -q '^check ok'; ok $? "every byte of D's pattern is intact"

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
