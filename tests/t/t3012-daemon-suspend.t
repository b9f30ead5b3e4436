#!/bin/sh
# t3012-daemon-suspend.t - tesseld suspends and resumes a running job's GPU slice (POST
# /v1/jobs/ID/suspend and .../resume, `tessel suspend [--wait]` and `tessel resume`): a job
# launching 20 ms simulated kernels in a loop (tcu-load under the interposer, fake driver) is
# suspended with --wait until drained; its slice's busy time and launch count in GET /v1/gpus
# stay still for 0.5 s; the job shows "suspended" (API, `tessel ps`, ?state=suspended) and
# keeps its allocation; a restart of tesseld keeps it suspended, and a slice file resumed
# behind tesseld's back is suspended again at start (the store wins); resume lets the loop go
# on.  A suspended job is cancelled by SIGTERM (resumed first, no wait for SIGKILL).  Refused:
# another user's job (404), resuming a running job, suspending a suspended, finished or
# GPU-less job (409; the CLI exits 1 with one line).  No wall-clock speed is asserted.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
LOAD=$TESSEL_BUILD/tests/interposer/tcu-load
SLICE_TOOL=$TESSEL_BUILD/tests/interposer/tcu-slice
[ -e "$TESSEL_BUILD/tests/fake/libcuda.so.1" ] || missing "fake driver not built"
[ -e "$TESSEL_BUILD/tests/fake/libnvidia-ml.so.1" ] || missing "fake NVML not built"
[ -e "$TESSEL_BUILD/lib/libtessel-cuda.so" ] || missing "interposer not built"
[ -x "$LOAD" ] || missing "tcu-load not built"
[ -x "$SLICE_TOOL" ] || missing "tcu-slice not built"

td_setup
# --allow-root-jobs: alice (an API-only user) may submit as root too.
td_start --fake-gpus 1xRTX4090:24G --no-cgroups --allow-root-jobs || missing "tesseld did not start"
cli_setup
G="$TD/go"
mkdir -p "$G"
api POST /v1/users '{"name":"alice"}'
api POST /v1/tokens '{"user":"alice"}'
ALICE=$(jget .token)
as_admin() { TESSEL_URL="$TD_URL" TESSEL_TOKEN="$TD_ADMIN" tcli "$@"; }
as_alice() { TESSEL_URL="$TD_URL" TESSEL_TOKEN="$ALICE" tcli "$@"; }
# slice FIELD: the job's slice on GPU 0 in GET /v1/gpus
slice() { api GET /v1/gpus; jq -r ".gpus[0].slices[] | select(.job_id == $A) | .$1" "$TD/out"; }
launches_above() { [ "$(slice launches)" -gt "$1" ] 2>/dev/null; }

# A whole GPU (compute limit 100: measured, so a drain waits for its in-flight work), 20 ms
# simulated kernels launched back to back until $G/stop exists.
ENV="\"TESSEL_FAKE_STATE\":\"$TD/fake-state\",\"TESSEL_FAKE_EVENT_ORDER\":\"device\""
api POST /v1/jobs "{\"argv\":[\"$LOAD\",\"--us=20000\",\"--until=$G/stop\"],\"gpus\":1,\"env\":{$ENV}}"
A=$(jget .id)
if ! wait_for 'launches_above 4'; then
    # Nothing below can pass without a launching job: say why and stop (no minute-long waits).
    ok 1 "the job launches kernels"
    api GET "/v1/jobs/$A"; diag "job $A: $(jget .state) ($(jget .reason))"
    api GET "/v1/jobs/$A/logs?stream=stderr"; sed 's/^/#   /' "$TD/out" | head -20
    done_testing
    exit 1
fi
ok 0 "the job launches kernels (GPU 0's slice counts $(slice launches))"
api GET "/v1/jobs/$A"
is "$(jget .state) $(jget .drained) $(jget .suspended_at)" "running null null" \
    "a running job: state running, drained and suspended_at null"

# Refusals while it runs.
api POST "/v1/jobs/$A/suspend" "" "$ALICE"
is "$CODE $(jget .error.code)" "404 not_found" "alice suspending the admin's job: 404"
as_alice suspend "$A"
is "$RC" 1 "tessel suspend of another user's job exits 1"
one_line_error; ok $? "... with one line: $(errtext)"
api POST "/v1/jobs/$A/resume"
is "$CODE $(jget .error.code)" "409 conflict" "resuming a running job: 409"
is "$(jget .error.message)" "job $A is not suspended (it is running)" "... saying why"
as_admin resume "$A"
is "$RC" 1 "tessel resume of a running job exits 1"
one_line_error; ok $? "... with one line: $(errtext)"
api POST "/v1/jobs/$A/suspend" '{"now":true}'
is "$CODE $(jget .error.code)" "400 unknown_field" "suspend takes no body field"
as_admin suspend --timeout 5 "$A"
is "$RC" 2 "tessel suspend --timeout without --wait is a usage error (exit 2)"

# Suspend, wait until drained.
as_admin suspend --wait --timeout 60 "$A"
is "$RC" 0 "tessel suspend --wait exits 0"
is "$(out)" "job $A: suspended (drained)" "... once the job's GPU work has drained"
api GET "/v1/jobs/$A"
is "$(jget .state) $(jget .drained)" "suspended true" "the job object: state suspended, drained true"
[ "$(jget .suspended_at)" != null ]; ok $? "... suspended_at set ($(jget .suspended_at))"
is "$("$SLICE_TOOL" "$TD/data/jobs/$A/slice" state | cut -d' ' -f2-3)" "suspended=1 drained=1" \
    "the slice file says suspended and drained"
N1=$(slice launches)
B1=$(slice busy_ms)
diag "suspended: launches=$N1 busy_ms=$B1"
is "$(slice suspended)" true "GET /v1/gpus: the slice is marked suspended"
# Every launch made before the suspend ran to its end and was measured: 20 ms each (each
# start event a little early: at most 1 % more).
awk -v b="$B1" -v n="$N1" 'BEGIN { exit !(b >= n * 20 - 1 && b <= n * 20 * 1.01 + 1) }'
ok $? "drained: busy $B1 ms = $N1 launches x 20 ms"
api GET /v1/gpus
is "$(jget '.gpus[0].allocated_milli') $(jget '.gpus[0].slices[0].milli')" "1000 1000" \
    "the suspended job keeps its allocation (1000 milli-GPU)"
[ "$(jget '.gpus[0].slices[0].mem_used')" -gt 0 ]; ok $? "... and its GPU memory ($(jget '.gpus[0].slices[0].mem_used') bytes)"
sleep 0.5
is "$(slice launches) $(slice busy_ms)" "$N1 $B1" "0.5 s suspended: no launch, no device time"
as_admin ps
is "$RC" 0 "tessel ps succeeds"
out | sed 's/^/# /'
awk -v j="$A" '$1 == j' "$TD/o" | grep -q 'suspended (drained)'; ok $? "tessel ps: STATE 'suspended (drained)'"
as_admin ps --json
is "$(jq -r ".jobs[] | select(.id == $A) | .state" "$TD/o")" suspended "tessel ps --json: state suspended"
api GET "/v1/jobs?state=suspended"
is "$CODE $(jget '[.jobs[].id] | join(",")')" "200 $A" "GET /v1/jobs?state=suspended lists it"
api GET "/v1/jobs?state=active"
is "$(jget "[.jobs[] | select(.id == $A)] | length")" 1 "... and it is still active"
api POST "/v1/jobs/$A/suspend"
is "$CODE $(jget .error.message)" "409 job $A is already suspended" "suspending it again: 409"

# A restart keeps it suspended.  While tesseld is down the slice is resumed behind its back:
# at start the store's "suspended" wins and the slice is held again.
td_stop; ok $? "tesseld stops cleanly"
is "$("$SLICE_TOOL" "$TD/data/jobs/$A/slice" resume)" ok "the slice file resumed while tesseld is down"
td_start --fake-gpus 1xRTX4090:24G --no-cgroups --allow-root-jobs; ok $? "tesseld starts again"
is "$(job_state "$A")" suspended "after the restart the job is still suspended"
grep -q "job $A: slice file said running, the store suspended: suspended it again" "$TD/tesseld.log"
ok $? "tesseld logged that it suspended the slice again"
is "$("$SLICE_TOOL" "$TD/data/jobs/$A/slice" state | cut -d' ' -f2)" "suspended=1" \
    "the slice file is suspended again"
wait_for 'api GET /v1/jobs/$A; [ "$(jget .drained)" = true ]'
ok $? "and drains again"
N2=$(slice launches)
B2=$(slice busy_ms)
sleep 0.5
is "$(slice launches) $(slice busy_ms)" "$N2 $B2" "0.5 s later nothing moved ($N2 launches, $B2 ms)"

# Resume: the loop goes on.
as_admin resume "$A"
is "$RC $(out)" "0 job $A: resumed" "tessel resume exits 0"
api GET "/v1/jobs/$A"
is "$(jget .state) $(jget .drained) $(jget .suspended_at)" "running null null" "running again"
wait_for "launches_above $((N2 + 4))"; ok $? "launches go on ($(slice launches) > $N2)"
[ "$(slice busy_ms)" -gt "$B2" ]; ok $? "busy time grows again ($(slice busy_ms) ms > $B2)"
is "$(slice suspended)" false "GET /v1/gpus: no longer marked suspended"

# Cancel a suspended job: resumed first, ended by its SIGTERM (not the SIGKILL 10 s later).
as_admin suspend --json "$A"
is "$RC $(jq -r '.[0].state' "$TD/o")" "0 suspended" "tessel suspend --json: the job objects"
as_admin kill "$A"
is "$RC" 0 "tessel kill of the suspended job"
wait_for '[ "$(job_state $A)" = cancelled ]'; ok $? "it ends cancelled"
is "$(jget .reason)" "cancelled by admin (killed by signal 15)" "by SIGTERM: the held process did not hang"
is "$(jget .suspended_at) $(jget .drained)" "null null" "a finished job is not suspended"

# (The GPU is free again.)  A job suspended before its first CUDA call: tesseld makes the slice file, suspended; the
# job's interposer attaches to it and its first launch is held until the resume.
api POST /v1/jobs "{\"argv\":[\"/bin/sh\",\"-c\",\"touch $G/b; while [ ! -e $G/go2 ]; do sleep 0.05; done; exec $LOAD --us=20000 --until=$G/stop\"],\"gpu\":0.5,\"env\":{$ENV}}"
B=$(jget .id)
wait_for "[ -e $G/b ]"
[ -e "$TD/data/jobs/$B/slice" ]; is $? 1 "a job that has not used CUDA yet has no slice file"
api POST "/v1/jobs/$B/suspend"
is "$CODE $(jget .state) $(jget .drained)" "200 suspended true" \
    "suspending it: 200, drained at once (nothing launched)"
is "$("$SLICE_TOOL" "$TD/data/jobs/$B/slice" state | cut -d' ' -f2-)" \
    "suspended=1 drained=1 busy_ns=0 launches=0" "tesseld made its slice file, suspended"
touch "$G/go2"
held() { "$SLICE_TOOL" "$TD/data/jobs/$B/slice" 2>/dev/null | grep -q '^proc .* waiting=1$'; }
wait_for held; ok $? "the job's process attached to it and its first launch is held"
sleep 0.5
is "$("$SLICE_TOOL" "$TD/data/jobs/$B/slice" state | cut -d' ' -f4-)" "busy_ns=0 launches=0" \
    "0.5 s later it has launched nothing"
api POST "/v1/jobs/$B/resume"
is "$CODE $(jget .state)" "200 running" "resumed through the API"
b_launched() { "$SLICE_TOOL" "$TD/data/jobs/$B/slice" state 2>/dev/null | grep -qv ' launches=0$'; }
wait_for b_launched; ok $? "its launches go on"
as_admin kill "$B"
wait_for '[ "$(job_state $B)" = cancelled ]'

# A finished job, and a job without a GPU.
api POST "/v1/jobs/$A/suspend"
is "$CODE $(jget .error.code)" "409 conflict" "suspending a finished job: 409"
is "$(jget .error.message)" "job $A is not running (cancelled): nothing to suspend" "... saying why"
as_admin suspend --wait "$A"
is "$RC" 1 "tessel suspend of a finished job exits 1"
one_line_error; ok $? "... with one line: $(errtext)"
api POST /v1/jobs "{\"argv\":[\"sh\",\"-c\",\"touch $G/c; while [ ! -e $G/stop2 ]; do sleep 0.05; done\"]}" "$ALICE"
C=$(jget .id)
wait_for "[ -e $G/c ]"
as_alice suspend "$C"
is "$RC $(errtext)" "1 tessel: job $C has no GPU slice to suspend (it asked for no GPU)" \
    "a job without a GPU: exit 1, no GPU slice (409)"
touch "$G/stop2"
wait_for '[ "$(job_state $C)" = succeeded ]'

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
