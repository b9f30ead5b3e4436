#!/bin/sh
# t7053-ngpu-api.t - normal GPU units through the API (issue 22, item 4;
# docs/scheduler-queues.md, "Normalised GPUs"): GET /v1/gpu-models lists the node's models with
# their speed and its source (default, tesseld.conf's gpu-speeds, admin); an admin sets and
# resets a speed, which the store keeps across a restart; bad speeds, bad model names, a user
# who is not an admin and a reset of a speed never set are refused with the field at fault and
# change nothing; a queue's limit takes ngpu (shown in limit and usage), its guarantee does not,
# and ngpu 0 is refused; a bad gpu-speeds keeps tesseld from starting.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null && command -v sqlite3 >/dev/null ||
    missing "curl, jq and sqlite3 are needed"

td_setup
DB="$TD/data/tessel.db"
printf 'gpu-speeds = Fake T4=0.5\n' >"$TD/conf"
td_start --config "$TD/conf" --fake-gpus 1xA100:80G,2xT4:16G --no-cgroups
# speed_of MODEL: "speed source gpus" as GET /v1/gpu-models lists it.
speed_of() {
    api GET /v1/gpu-models
    jq -r --arg m "$1" '.gpu_models[] | select(.model == $m) | "\(.speed) \(.source) \(.gpus)"' \
        "$TD/out"
}
is "$(speed_of "Fake A100")" "1 default 1" "Fake A100: speed 1, by default, 1 GPU"
is "$(speed_of "Fake T4")" "0.5 config 2" "Fake T4: 0.5 from tesseld.conf's gpu-speeds, 2 GPUs"

api PUT /v1/gpu-models/Fake%20A100 '{"speed":3}'
is "$CODE $(jget '"\(.model) \(.speed) \(.source) \(.set_by)"')" "200 Fake A100 3 admin admin" \
    "an admin sets Fake A100's speed to 3 (a name with a space, %20 in the path)"
is "$(speed_of "Fake A100")" "3 admin 1" "... and the list shows it"
is "$(sqlite3 "$DB" "SELECT speed_milli FROM gpu_speeds WHERE model = 'Fake A100'")" 3000 \
    "the store keeps 3000 milli"
api PUT /v1/gpu-models/Fake%20T4 '{"speed":"0.25"}'
is "$CODE $(jget .speed) $(jget .source)" "200 0.25 admin" "a speed as text (0.25) is taken too"
api PUT /v1/gpu-models/H100 '{"speed":10}'
is "$CODE $(jget .gpus) $(speed_of H100)" "200 0 10 admin 0" \
    "a model this node lacks may get a speed (listed with 0 GPUs)"

# refused WHAT STATUS CODE FIELD PATH BODY [TOKEN]: PUT answers STATUS, error CODE on FIELD
# ("-": none), and Fake A100 stays at 3.
refused() {
    api PUT "$5" "$6" "${7-$TD_ADMIN}"
    is "$CODE $(jget .error.code) $(jget '.error.field // "-"') $(speed_of "Fake A100")" \
        "$2 $3 $4 3 admin 1" "$1"
}
refused "speed 0" 400 invalid_value speed /v1/gpu-models/Fake%20A100 '{"speed":0}'
refused "a negative speed" 400 invalid_value speed /v1/gpu-models/Fake%20A100 '{"speed":-2}'
refused "speed above 1000" 400 invalid_value speed /v1/gpu-models/Fake%20A100 '{"speed":1001}'
refused "4 decimals" 400 invalid_value speed /v1/gpu-models/Fake%20A100 '{"speed":1.0001}'
refused "a word" 400 invalid_value speed /v1/gpu-models/Fake%20A100 '{"speed":"fast"}'
refused "speed null" 400 invalid_value speed /v1/gpu-models/Fake%20A100 '{"speed":null}'
refused "no speed" 400 missing_field speed /v1/gpu-models/Fake%20A100 '{}'
refused "an unknown field" 400 unknown_field bogus /v1/gpu-models/Fake%20A100 '{"speed":2,"bogus":1}'
refused "a model name with '='" 400 invalid_value model /v1/gpu-models/A=B '{"speed":2}'
refused "a model name with ','" 400 invalid_value model /v1/gpu-models/A,B '{"speed":2}'
refused "a model name of 64 bytes" 400 invalid_value model \
    "/v1/gpu-models/$(printf 'x%.0s' $(seq 64))" '{"speed":2}'
api POST /v1/users '{"name":"amy"}'
api POST /v1/tokens '{"user":"amy"}'
AMY=$(jget .token)
refused "a user who is not an admin" 403 forbidden - /v1/gpu-models/Fake%20A100 '{"speed":1}' "$AMY"
api GET /v1/gpu-models "" "$AMY"
is "$CODE $(jq '.gpu_models | length' "$TD/out")" "200 3" "... who may read the list"
api DELETE /v1/gpu-models/Fake%20A100 "" "$AMY"
is "$CODE $(speed_of "Fake A100")" "403 3 admin 1" "... but not reset a speed"

api DELETE /v1/gpu-models/Fake%20T4
is "$CODE $(jget .speed) $(jget .source)" "200 0.5 config" \
    "an admin resets Fake T4's speed: back to tesseld.conf's 0.5"
api DELETE /v1/gpu-models/Fake%20T4
is "$CODE $(jget .error.code)" "404 not_found" "resetting it again: 404, nothing to reset"

# Queues: limit.ngpu.
api POST /v1/queues '{"name":"mixed","limit":{"ngpu":4.5}}'
is "$CODE $(jget .limit.ngpu) $(jget .usage.ngpu) $(jget .limit.gpu)" "201 4.5 0 null" \
    "a queue limited to 4.5 normal GPUs: limit.ngpu 4.5, usage.ngpu 0, no gpu limit"
is "$(sqlite3 "$DB" "SELECT max_ngpu_milli FROM queues WHERE name = 'mixed'")" 4500 \
    "the store keeps 4500 milli"
api PATCH /v1/queues/mixed '{"limit":{"gpu":2}}'
is "$CODE $(jget .limit.ngpu) $(jget .limit.gpu)" "200 4.5 2" \
    "a PATCH of another resource of the limit keeps ngpu"
api PATCH /v1/queues/mixed '{"guarantee":{"ngpu":1}}'
is "$CODE $(jget .error.field) $(jget .error.code)" "400 guarantee.ngpu invalid_value" \
    "a guarantee in normal units is refused (limits only)"
api PATCH /v1/queues/mixed '{"limit":{"ngpu":0}}'
is "$CODE $(jget .error.field)" "400 limit.ngpu" "ngpu 0 is refused (close a queue with gpu 0)"
api PATCH /v1/queues/mixed '{"limit":{"ngpu":"3"}}'
is "$CODE $(jget .error.field)" "400 limit.ngpu" "ngpu as text is refused"
api PATCH /v1/queues/mixed '{"limit":{"ngpu":0.0001}}'
is "$CODE $(jget .error.field)" "400 limit.ngpu" "ngpu with 4 decimals is refused"
api GET /v1/queues/mixed
is "$(jget .limit.ngpu)" 4.5 "after the refusals the limit is still 4.5"
api PATCH /v1/queues/mixed '{"limit":{"ngpu":null}}'
is "$CODE $(jget .limit.ngpu) $(jget .limit.gpu)" "200 null 2" "ngpu null drops the limit"
api PATCH /v1/queues/mixed '{"limit":{"ngpu":6}}'
api PATCH /v1/queues/mixed '{"limit":null}'
is "$CODE $(jget .limit.ngpu) $(jget .limit.gpu)" "200 null null" "limit null drops ngpu too"

# The store and a restart.
is "$(sqlite3 "$DB" 'PRAGMA user_version')" 26 "the store is at schema 26 (gpu_speeds at 17, released GPU memory at 18, projects' folder quotas at 19, oversubscription at 20, preemptible at 21, jobs' web services at 22, idle reclamation at 23, its inheritance at 24, queues' oversubscription at 25, dependencies by job at 26)"
td_stop; ok $? "tesseld stops cleanly"
td_start --config "$TD/conf" --fake-gpus 1xA100:80G,2xT4:16G --no-cgroups
is "$(speed_of "Fake A100") / $(speed_of "Fake T4")" "3 admin 1 / 0.5 config 2" \
    "after a restart: the admin's Fake A100 speed and the configuration's Fake T4 speed"
td_stop

printf 'gpu-speeds = Fake T4=0\n' >"$TD/bad.conf"
"$TESSEL_BUILD/bin/tesseld" --config "$TD/bad.conf" --check-config --data-dir "$TD/data" \
    >"$TD/check" 2>"$TD/check.err"
st=$?
is "$st $(wc -l <"$TD/check.err") $(grep -c 'gpu-speeds' "$TD/check.err")" "1 1 1" \
    "tesseld --check-config refuses gpu-speeds = Fake T4=0 (exit 1, one line naming gpu-speeds)"
done_testing
