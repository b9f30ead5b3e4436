#!/bin/sh
# t7051-serve-proxy.t - a service of two replicas of the stand-in server on simulated GPUs of
# two models (5 ms per request on the A100, 15 ms on the T4; tests/lib/standin.py) behind
# HAProxy (docs/serving.md): each replica is an inference-class job of the owner with its own
# PORT; a service token calls it; under load (wrk, closed loop, through the proxy) tesseld
# measures each replica's service rate and sets the weights in the proxy in proportion (the
# A100's above the T4's, the proxy's weight the one the API shows), the fast replica takes
# more of the traffic; a replica killed (SIGKILL) is replaced by a new job while the requests
# keep being answered (the proxy sends them to the live one); tesseld stopped, the proxy goes
# on serving, and a tesseld started again takes it over.
# test-timeout: 240
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null && command -v sqlite3 >/dev/null ||
    missing "curl, jq and sqlite3 are needed"
[ -x /usr/sbin/haproxy ] || missing "haproxy is needed (/usr/sbin/haproxy)"
command -v wrk >/dev/null || missing "wrk is needed (the load generator)"
command -v socat >/dev/null || missing "socat is needed (HAProxy's runtime socket)"
command -v python3 >/dev/null || missing "python3 is needed (the stand-in server)"

td_setup
# HAProxy (as haproxy) reaches the replicas' sockets below the data directory (docs/serving.md).
chmod 711 "$TD"
td_start --fake-gpus 1xT4:16G,1xA100:40G --no-cgroups --allow-root-jobs
DB="$TD/data/tessel.db"
SRV="$TESSEL_SRCDIR/tests/lib/standin.py"
api POST /v1/users '{"name":"ann"}'
api POST /v1/tokens '{"user":"ann"}'
ANN=$(jget .token)

api POST /v1/services "{\"name\":\"llm\",\"argv\":[\"python3\",\"$SRV\",\"A100=5,T4=15\"],
    \"replicas\":2,\"gpu\":0.25,\"gpu_mem\":\"2G\"}" "$ANN"
is "$CODE $(jget .replicas) $(jq -r '.replica_jobs | length' "$TD/out")" "201 2 2" \
    "ann creates service llm: two replicas submitted at once"
PORT=$(jget .port)
R1=$(jget '.replica_jobs[0].job')
R2=$(jget '.replica_jobs[1].job')
api GET "/v1/jobs/$R1" "" "$ANN"
is "$(jget .user) $(jget .class) $(jget .name)" "ann inference svc-llm" \
    "a replica is an ordinary job of ann's, of the inference class"
is "$(sqlite3 "$DB" "SELECT count(DISTINCT port) FROM service_replicas")" 2 \
    "each replica has a port of its own (PORT)"
api POST /v1/services/llm/tokens '{"name":"frontend"}' "$ANN"
is "$CODE $(jget .service)" "201 llm" "a service token is made (shown once)"
TOK=$(jget .token)
is "$(sqlite3 "$DB" "SELECT count(*) FROM service_tokens WHERE hash = X'$(printf %s "$TOK" |
    sha256sum | cut -c1-64)'")" 1 "the store keeps its SHA-256 only"
call() { curl -s -o "$TD/call" -w '%{http_code}' -H "Authorization: Bearer $TOK" \
    "http://127.0.0.1:$PORT/infer"; }
up2() {
    api GET /v1/services/llm "" "$ANN"
    [ "$(jq -r '[.replica_jobs[] | select(.health == "UP")] | length' "$TD/out")" = 2 ]
}
wait_for up2
ok $? "both replicas run and pass the proxy's health check"
# A new token reaches the proxy at its next reload, at most 5 s after the last (serving.md).
wait_for '[ "$(call)" = 200 ]'
ok $? "the service token calls the service (once the proxy has reloaded)"
A100=$(jq -r '.replica_jobs[] | select(.gpus[0].model == "Fake A100") | .job' "$TD/out")
T4=$(jq -r '.replica_jobs[] | select(.gpus[0].model == "Fake T4") | .job' "$TD/out")
is "$(printf '%s %s' "$A100" "$T4" | wc -w)" 2 "one replica is on the A100, one on the T4 (spread)"

# Load through the proxy: the rates are measured and the weights set.
wrk -t1 -c4 -d8s -H "Authorization: Bearer $TOK" "http://127.0.0.1:$PORT/infer" >"$TD/wrk" 2>&1
diag "$(grep -E 'Requests/sec|Non-2xx' "$TD/wrk")"
measured() {
    api GET /v1/services/llm "" "$ANN"
    [ "$(jq -r '[.replica_jobs[] | select(.service_rate != null)] | length' "$TD/out")" = 2 ]
}
wait_for measured
ok $? "each replica's service rate is measured from the proxy's figures"
rate() { jq -r ".replica_jobs[] | select(.job == $1) | .$2" "$TD/out"; }
WA=$(rate "$A100" weight) WT=$(rate "$T4" weight)
diag "A100 replica: $(rate "$A100" service_rate)/s weight $WA; T4 replica: $(rate "$T4" service_rate)/s weight $WT"
RA=$(rate "$A100" service_rate) RT=$(rate "$T4" service_rate)
awk -v a="$RA" -v t="$RT" 'BEGIN { exit !(a > t) }'
ok $? "the A100 replica (5 ms a request) is measured faster than the T4 one (15 ms)"
is "$WA" 256 "the faster replica (A100) has the largest weight"
# The weights follow the measured rates (the split's rule), whatever the machine's load made of
# the stand-ins' speeds: T4's weight / A100's = T4's rate / A100's, within 0.05.
awk -v wa="$WA" -v wt="$WT" -v a="$RA" -v t="$RT" \
    'BEGIN { d = wt / wa - t / a; exit !(wt >= 1 && d < 0.05 && d > -0.05) }'
ok $? "the T4 replica's weight is to the A100's as their rates ($WT/$WA, $RT/$RA)"
pw() { echo "get weight be_llm/r$1" | socat - "UNIX-CONNECT:$TD/data/serve/haproxy.sock" |
    cut -d' ' -f1; }
# The last of wrk's requests can move the rates once more after they were read: the proxy's
# weight is compared with the API's of the same moment.
same_weight() {
    api GET /v1/services/llm "" "$ANN"
    WT=$(rate "$T4" weight)
    [ "$(pw "$T4")" = "$WT" ]
}
wait_for same_weight
ok $? "the proxy runs with the weight the API shows ($(pw "$T4") for r$T4, API $WT)"
grep -q "^Non-2xx" "$TD/wrk"
ok $((!$?)) "every request under load was answered 200"

# A replica dies: replaced, and the service keeps answering.
PID=$(sqlite3 "$DB" "SELECT job_pid FROM jobs WHERE id = $T4")
kill -9 "$PID"
wait_for '[ "$(job_state "$T4")" = failed ]'
ok $? "the T4 replica killed (SIGKILL): its job failed"
fails=0
for i in 1 2 3 4 5 6 7 8 9 10; do [ "$(call)" = 200 ] || fails=$((fails + 1)); done
is "$fails" 0 "meanwhile every request is answered (by the live replica)"
back() {
    api GET /v1/services/llm "" "$ANN"
    [ "$(jq -r "[.replica_jobs[] | select(.health == \"UP\" and .job != $T4)] | length" \
        "$TD/out")" = 2 ]
}
wait_for back
ok $? "a new replica took its place and passes the health check"
NEW=$(jq -r ".replica_jobs[] | select(.job != $A100) | .job" "$TD/out")
ok "$([ "$NEW" -gt "$T4" ]; echo $?)" "... as a new job ($NEW)"
grep -q "service llm: replica job $NEW submitted" "$TD/tesseld.log"
ok $? "tesseld's log says so"
seen=""
# 40 calls: with its first weight (the others' mean rate) the new replica gets about 2 in 5;
# 8 calls would all miss it with a chance of 0.6^8, about 1 in 60.
for i in $(seq 40); do call >/dev/null; seen="$seen $(cut -d' ' -f2 "$TD/call")"; done
echo "$seen" | grep -qw "$NEW"
ok $? "the new replica serves requests"

# The service token revoked: the proxy refuses it; the owner's API token still passes.
api GET /v1/services/llm/tokens "" "$ANN"
is "$CODE $(jq -c '[.tokens[] | .name]' "$TD/out") $(grep -c tsl_ "$TD/out")" '200 ["frontend"] 0' \
    "the service's tokens are listed, without their secrets"
TID=$(jget '.tokens[0].id')
api DELETE "/v1/services/llm/tokens/$TID" "" "$ANN"
is "$CODE" 204 "ann revokes the service token"
wait_for '[ "$(call)" = 401 ]'
ok $? "the proxy refuses it now (401)"
is "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $ANN" \
    "http://127.0.0.1:$PORT/infer")" 200 "ann's own API token still passes"
api DELETE "/v1/services/llm/tokens/$TID" "" "$ANN"
is "$CODE" 404 "revoked twice: 404"
api POST /v1/services/llm/tokens '{}' "$ANN"
TOK=$(jget .token)
wait_for '[ "$(call)" = 200 ]'
ok $? "a new service token passes"
# The proxy's cost (docs/serving.md, 2026-11-28): HAProxy runs one thread, and its token check
# is the same: no token, or a token never issued, is refused.
is "$(echo 'show info' | socat - "UNIX-CONNECT:$TD/data/serve/haproxy.sock" |
    sed -n 's/^Nbthread: //p')" 1 "the proxy runs one thread (nbthread 1)"
is "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/infer")" 401 \
    "no token: 401"
is "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer ${TOK}x" \
    "http://127.0.0.1:$PORT/infer")" 401 "a token never issued (a valid one with one more letter): 401"

# tesseld stops: the proxy goes on; started again, it takes the proxy over.
OLD=$(cat "$TD/data/serve/haproxy.pid")
td_stop
ok $? "tesseld stops cleanly (no sanitizer report)"
is "$(call)" 200 "tesseld stopped: the service still answers"
td_start --fake-gpus 1xT4:16G,1xA100:40G --no-cgroups --allow-root-jobs
wait_for 'grep -q "taking over from $OLD" "$TD/tesseld.log"'
ok $? "tesseld started again starts a new proxy that takes over from the old one"
wait_for '! kill -0 "$OLD" 2>/dev/null'
ok $? "the old proxy is gone"
wait_for '[ "$(call)" = 200 ]'
ok $? "the service answers through the new proxy"
td_stop
ok $? "tesseld stops cleanly again"
done_testing
