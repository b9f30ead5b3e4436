#!/bin/sh
# t7057-ngpu-calibrate.t - a measured calibration of GPU speeds (issue 22, item 4;
# docs/scheduler-queues.md, "Normalised GPUs"): service web has a replica on a simulated T4 and
# one on an A100 (spread placement: one per GPU) of the stand-in server, which takes 10 ms a
# request on a T4 and 2 ms on an A100; under a load loop tesseld measures both, and POST
# /v1/gpu-models/calibrate against the T4 gives the A100 the higher speed (the order, not a
# figure: the machine is shared, and its load adds to both replicas' times: with 6 and 2 ms a
# loaded CI run measured 1.5), without changing anything; with apply it becomes the A100's
# speed (an admin's); bad requests (no reference, a reference nothing was compared with, apply
# as text, a user who is not an admin) are refused and change nothing; `tessel gpu-models
# calibrate` prints the table.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
command -v haproxy >/dev/null || [ -x /usr/sbin/haproxy ] || missing "haproxy is needed"
command -v python3 >/dev/null || missing "python3 is needed (the stand-in server)"

td_setup
# HAProxy (as haproxy) reaches the replicas' sockets below the data directory (docs/serving.md).
chmod 711 "$TD"
td_start --fake-gpus 1xT4:16G,1xA100:40G --no-cgroups --allow-root-jobs
cli_setup
SRV="$TESSEL_SRCDIR/tests/lib/standin.py"
api POST /v1/services "{\"name\":\"web\",\"argv\":[\"python3\",\"$SRV\",\"A100=2,T4=10\"],\"replicas\":2,\"gpu\":0.25,\"gpu_mem\":\"2G\"}"
is "$CODE" 201 "service web: 2 replicas"
EP=$(jget .endpoint)
models() {
    api GET /v1/services/web
    jq -r '[.replica_jobs[] | select(.health == "UP") | .gpus[0].model] | sort | join(",")' "$TD/out"
}
wait_for '[ "$(models)" = "Fake A100,Fake T4" ]'; ok $? "one replica on the T4, one on the A100, both UP"
( while :; do curl -s -o /dev/null -H "Authorization: Bearer $TD_ADMIN" "$EP/x"; done ) &
LOAD=$!
TD_PIDS="$TD_PIDS $LOAD"
measured() {
    api GET /v1/services/web
    [ "$(jq '[.replica_jobs[] | select(.service_rate != null)] | length' "$TD/out")" = 2 ]
}
wait_for measured; ok $? "tesseld has measured both replicas' rates"

speed_of() {
    api GET /v1/gpu-models
    jq -r --arg m "$1" '.gpu_models[] | select(.model == $m) | "\(.speed) \(.source)"' "$TD/out"
}
api POST /v1/gpu-models/calibrate '{"reference":"Fake T4"}'
is "$CODE $(jget '.speeds[0].model') $(jget '.speeds[0].speed') $(jget .applied)" \
    "200 Fake T4 1 false" "calibrate against the T4: the reference first, at its speed 1"
A=$(jget '.speeds[] | select(.model == "Fake A100") | .speed')
is "$(jget '.speeds[1].model') $(jget '.speeds[1].cells')" "Fake A100 1" \
    "the A100 is measured, in one (service, share) pair"
# The order only (above 1), as the header says: the machine's load adds to both replicas' times.
awk -v a="$A" 'BEGIN { exit !(a > 1) }'; ok $? "the A100 is measured faster than the T4 (speed $A)"
is "$(speed_of "Fake A100")" "1 default" "without apply nothing changes"

api POST /v1/gpu-models/calibrate '{"reference":"Fake T4","apply":true}'
is "$CODE $(jget .applied)" "200 true" "calibrate with apply"
A2=$(jget '.speeds[] | select(.model == "Fake A100") | .speed')
is "$(speed_of "Fake A100")" "$A2 admin" "the A100's speed is now the measured one ($A2), an admin's"

# refused WHAT STATUS CODE FIELD BODY [TOKEN]: answered so, and the A100's speed stays.
refused() {
    api POST /v1/gpu-models/calibrate "$5" "${6-$TD_ADMIN}"
    is "$CODE $(jget .error.code) $(jget '.error.field // "-"') $(speed_of "Fake A100")" \
        "$2 $3 $4 $A2 admin" "$1"
}
refused "no reference" 400 missing_field reference '{}'
refused "a reference nothing was compared with" 409 conflict reference '{"reference":"H100"}'
refused "apply as text" 400 invalid_value apply '{"reference":"Fake T4","apply":"yes"}'
refused "an unknown field" 400 unknown_field bogus '{"reference":"Fake T4","bogus":1}'
api POST /v1/users '{"name":"amy"}'
api POST /v1/tokens '{"user":"amy"}'
refused "a user who is not an admin" 403 forbidden - '{"reference":"Fake T4","apply":true}' \
    "$(jget .token)"

admin gpu-models calibrate "Fake T4"
is "$RC $(sed -n 1p "$TD/o" | tr -s ' ')" "0 MODEL SPEED SERVICES" "tessel gpu-models calibrate: a table"
grep -q "^Fake A100 " "$TD/o" && grep -q "^not applied" "$TD/o"
ok $? "... with the A100's row, not applied"
admin gpu-models calibrate
is "$RC" 2 "calibrate without a reference: a usage error"
kill "$LOAD" 2>/dev/null
td_stop; ok $? "tesseld stops cleanly (no sanitizer report)"
done_testing
