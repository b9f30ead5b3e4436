#!/bin/sh
# t7050-serve-badinput.t - bad or forbidden requests to /v1/services (docs/serving.md): each is
# refused with its status, an error code and the field at fault, and no service is created; a
# second user neither sees, scales, deletes nor calls another's service (404 from the API, 401
# from the proxy with their own token), and their own service is theirs alone; a program of
# another account listening on a replica's port gets none of the service's requests.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null && command -v sqlite3 >/dev/null ||
    missing "curl, jq and sqlite3 are needed"
command -v haproxy >/dev/null || [ -x /usr/sbin/haproxy ] || missing "haproxy is needed"
command -v python3 >/dev/null || missing "python3 is needed (the stand-in server)"
command -v setpriv >/dev/null && [ -x /usr/bin/python3 ] || missing "setpriv (util-linux) and /usr/bin/python3 are needed"

td_setup
# HAProxy (as haproxy) reaches the replicas' sockets below the data directory (docs/serving.md).
chmod 711 "$TD"
td_start --fake-gpus 1xT4:16G --no-cgroups --allow-root-jobs
DB="$TD/data/tessel.db"
SRV="$TESSEL_SRCDIR/tests/lib/standin.py"
services() { sqlite3 "$DB" "SELECT count(*) FROM services"; }

# refused NAME STATUS ERROR FIELD BODY: POST /v1/services answers STATUS, error ERROR, field
# FIELD ("-": none), and stores nothing.
refused() {
    api POST /v1/services "$5"
    is "$CODE $(jget .error.code) $(jget '.error.field // "-"') $(services)" "$2 $3 $4 0" "$1"
}
refused "no name" 400 invalid_value name '{"argv":["x"]}'
refused "a bad name" 400 invalid_value name '{"name":"Bad Name","argv":["x"]}'
refused "no argv" 400 invalid_value argv '{"name":"a"}'
refused "an empty argv" 400 invalid_value argv '{"name":"a","argv":[]}'
refused "an unknown field" 400 unknown_field bogus '{"name":"a","argv":["x"],"bogus":1}'
refused "replicas -1" 400 invalid_value replicas '{"name":"a","argv":["x"],"replicas":-1}'
refused "replicas 65" 400 invalid_value replicas '{"name":"a","argv":["x"],"replicas":65}'
refused "replicas as text" 400 invalid_value replicas '{"name":"a","argv":["x"],"replicas":"2"}'
refused "a fraction of GPU with 4 decimals" 400 invalid_value gpu \
    '{"name":"a","argv":["x"],"gpu":0.0001}'
refused "gpu_mem without gpu" 400 invalid_value gpu_mem '{"name":"a","argv":["x"],"gpu_mem":"6G"}'
refused "more GPU memory than a GPU has" 422 unsatisfiable - \
    '{"name":"a","argv":["x"],"gpu":0.5,"gpu_mem":"64G"}'
refused "an unknown queue" 400 invalid_value queue '{"name":"a","argv":["x"],"queue":"nope"}'
refused "a health path with a space (it goes into HAProxy's configuration)" 400 invalid_value \
    health '{"name":"a","argv":["x"],"health":"/ok now"}'
refused "a health path with a newline" 400 invalid_value health \
    '{"name":"a","argv":["x"],"health":"/ok\nbind 0.0.0.0:1"}'
refused "a relative health path" 400 invalid_value health '{"name":"a","argv":["x"],"health":"ok"}'
refused "PORT in env (Tessel sets it)" 400 invalid_value env \
    '{"name":"a","argv":["x"],"env":{"PORT":"1"}}'
refused "a privileged port" 400 invalid_value port '{"name":"a","argv":["x"],"port":80}'
refused "concurrency -1" 400 invalid_value concurrency '{"name":"a","argv":["x"],"concurrency":-1}'
refused "a split other than capacity or even" 400 invalid_value split \
    '{"name":"a","argv":["x"],"split":"random"}'
# A port something listens on already (tesseld's own).
TPORT=${TD_URL##*:}
refused "a port in use" 409 conflict port "{\"name\":\"a\",\"argv\":[\"x\"],\"port\":$TPORT}"
api POST /v1/services '{"name":"a","argv":["x"]' # truncated JSON
is "$CODE $(services)" "400 0" "a body that is not JSON: 400"

# Two users, a service each.
api POST /v1/users '{"name":"ann"}'
api POST /v1/tokens '{"user":"ann"}'
ANN=$(jget .token)
api POST /v1/users '{"name":"bob"}'
api POST /v1/tokens '{"user":"bob"}'
BOB=$(jget .token)
api POST /v1/services "{\"name\":\"ann-svc\",\"argv\":[\"python3\",\"$SRV\",\"1\"],\"gpu\":0.25}" "$ANN"
is "$CODE $(jget .owner) $(jget .replicas)" "201 ann 1" "ann creates her service (1 replica)"
APORT=$(jget .port)
api POST /v1/services "{\"name\":\"ann-svc\",\"argv\":[\"x\"]}" "$BOB"
is "$CODE $(jget .error.field)" "409 name" "a second service of the same name: 409"
api POST /v1/services "{\"name\":\"b2\",\"argv\":[\"x\"],\"port\":$APORT}" "$BOB"
is "$CODE $(jget .error.field)" "409 port" "... or on the port of another: 409"
api GET /v1/services "" "$BOB"
is "$CODE $(jq -c '.services | length' "$TD/out")" "200 0" "bob's list does not show ann's service"
api GET /v1/services/ann-svc "" "$BOB"
is "$CODE $(jget .error.code)" "404 not_found" "bob cannot read it (404)"
api PATCH /v1/services/ann-svc '{"replicas":5}' "$BOB"
is "$CODE" 404 "... nor scale it"
api DELETE /v1/services/ann-svc "" "$BOB"
is "$CODE" 404 "... nor delete it"
api POST /v1/services/ann-svc/tokens '{}' "$BOB"
is "$CODE" 404 "... nor make a token of it"
api GET /v1/services "" "$TD_ADMIN"
is "$(jq -r '[.services[].name] | join(",")' "$TD/out")" "ann-svc" "an admin sees every service"

# The proxy: ann's token passes, bob's and none are 401.
call() { # call TOKEN: the proxy's status for GET /x
    if [ -n "$1" ]; then
        curl -s -o "$TD/call" -w '%{http_code}' -H "Authorization: Bearer $1" \
            "http://127.0.0.1:$APORT/x"
    else
        curl -s -o "$TD/call" -w '%{http_code}' "http://127.0.0.1:$APORT/x"
    fi
}
wait_for '[ "$(call "$ANN")" = 200 ]'
ok $? "ann calls her service through the proxy with her API token (200)"
is "$(cat "$TD/call")" "replica $(sqlite3 "$DB" 'SELECT job FROM service_replicas') noauth" \
    "... the replica answered, and never saw her token (Authorization dropped)"
is "$(call "$BOB")" 401 "bob's token is refused by the proxy (401)"
is "$(call "")" 401 "no token: 401"
is "$(call "tsl_0000")" 401 "a made-up token: 401"

# Bad requests on an existing service.
api PATCH /v1/services/ann-svc '{"replicas":"many"}' "$ANN"
is "$CODE $(jget .error.field)" "400 replicas" "scale to a non-number: 400"
api PATCH /v1/services/ann-svc '{}' "$ANN"
is "$CODE $(jget .error.code)" "400 missing_field" "scale without replicas: 400"
api PATCH /v1/services/ann-svc '{"replicas":1,"port":2}' "$ANN"
is "$CODE $(jget .error.field)" "400 port" "a field scale does not take: 400"
api GET /v1/services/NOPE "" "$ANN"
is "$CODE" 404 "a name that cannot be a service: 404"
api POST /v1/services/ann-svc/tokens '{"name":7}' "$ANN"
is "$CODE $(jget .error.field)" "400 name" "a token label that is not text: 400"
api GET /v1/services/ann-svc "" "$ANN"
is "$(jget .replicas) $(jget .running)" "1 1" "after all that, ann's service is as it was"

# A squatter: bob's program (as the account nobody) listens on the port of ann's replica, which
# never listens itself.  The proxy never sends it ann's callers' requests.
api POST /v1/services '{"name":"quiet","argv":["sleep","300"]}' "$ANN"
is "$CODE" 201 "ann creates a service whose replica never listens"
QPORT=$(jget .port)
RPORT=$(jget '.replica_jobs[0].port')
QJOB=$(jget '.replica_jobs[0].job')
wait_for '[ "$(job_state "$QJOB")" = running ]'
PORT="$RPORT" setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/python3 "$SRV" 0 \
    >"$TD/squatter.log" 2>&1 &
SQ=$!
wait_for 'curl -s -o /dev/null "http://127.0.0.1:$RPORT/health"'
ok $? "the squatter (uid nobody) answers on the replica's port $RPORT"
qcall() { curl -s -o "$TD/call" -w '%{http_code}' -H "Authorization: Bearer $ANN" \
    "http://127.0.0.1:$QPORT/x"; }
# The new frontend comes with the next reload (at most one every 5 s, docs/serving.md).
wait_for '[ "$(qcall)" != 000 ]'
sleep 2 # four supervisions
is "$(qcall)" 503 "the service's endpoint answers 503: no replica of its own listens"
grep -A8 "^backend be_quiet" "$TD/data/serve/haproxy.cfg" | grep -q "^    server "
ok $((!$?)) "the proxy's backend has no server on the squatter's port"
kill "$SQ"
done_testing
