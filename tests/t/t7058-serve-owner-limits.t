#!/bin/sh
# t7058-serve-owner-limits.t - what a service's owner may take (docs/serving.md, "Limits";
# docs/security.md): a user owns at most --max-services-per-user services (409 past it, nothing
# stored); a user who owns services cannot be deleted (409 naming them); a service whose queue
# no longer admits its owner gets no new replica and says why ("held"); replicas are charged to
# the owner's submission bucket (--submit-rate, --submit-burst), so a scale-up past it submits
# what the bucket holds and says so; the proxy's configuration ends old processes
# (hard-stop-after) and the callers' token files are not rewritten when they did not change.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null && command -v sqlite3 >/dev/null ||
    missing "curl, jq and sqlite3 are needed"
[ -x /usr/sbin/haproxy ] || missing "haproxy is needed (/usr/sbin/haproxy)"
id haproxy >/dev/null 2>&1 || missing "the haproxy account is needed (Debian's haproxy package)"

td_setup
# HAProxy (as haproxy) reaches the replicas' sockets below the data directory (docs/serving.md).
chmod 711 "$TD"
td_start --fake-gpus 1xT4:16G --no-cgroups --allow-root-jobs --max-services-per-user 2 \
    --submit-rate 0.01 --submit-burst 3
DB="$TD/data/tessel.db"
services() { sqlite3 "$DB" "SELECT count(*) FROM services WHERE owner = '$1'"; }
replicas() { sqlite3 "$DB" "SELECT count(*) FROM service_replicas r JOIN services s
    ON s.id = r.service WHERE s.name = '$1'"; }

api POST /v1/users '{"name":"ann"}'
api POST /v1/tokens '{"user":"ann"}'
ANN=$(jget .token)
api POST /v1/users '{"name":"bob"}'
api POST /v1/tokens '{"user":"bob"}'
BOB=$(jget .token)
api POST /v1/queues '{"name":"lab","allow":{"users":["ann"]}}'
is "$CODE" 201 "a queue that admits ann only"

# M1: two services each, no third.
api POST /v1/services '{"name":"a1","argv":["sleep","300"],"replicas":0}' "$ANN"
is "$CODE" 201 "ann's first service"
api POST /v1/services '{"name":"a2","argv":["sleep","300"],"replicas":0,"queue":"lab"}' "$ANN"
is "$CODE" 201 "ann's second service, in queue lab"
api POST /v1/services '{"name":"a3","argv":["sleep","300"],"replicas":0}' "$ANN"
is "$CODE $(jget .error.code) $(services ann)" "409 conflict 2" \
    "a third past --max-services-per-user 2: 409, nothing stored"
jget .error.message | grep -q -- "--max-services-per-user 2"
ok $? "... the error names the limit"

# M2: ann owns services, so she stays.
api DELETE /v1/users/ann
is "$CODE $(jget .error.code)" "409 conflict" "deleting a user who owns services: 409"
jget .error.message | grep -q "a1, a2"
ok $? "... naming the services"
is "$(sqlite3 "$DB" "SELECT count(*) FROM users WHERE name = 'ann'") $(services ann)" "1 2" \
    "... ann and her services are still there"

# M2: the queue's allow list changes; the service's next replica is held, and says why.
api PATCH /v1/queues/lab '{"allow":{"users":["bob"]}}'
is "$CODE" 200 "queue lab now admits bob only"
api PATCH /v1/services/a2 '{"replicas":1}' "$ANN"
is "$CODE $(jget .replicas) $(replicas a2)" "200 1 0" \
    "ann scales a2 to 1: accepted, but no replica is submitted"
is "$(jget .held)" "queue 'lab' no longer admits its owner 'ann'" "... and the service says why"
sleep 1.5 # three supervisions
is "$(replicas a2)" 0 "the supervision submits none either"
api PATCH /v1/queues/lab '{"allow":null}'
wait_for '[ "$(replicas a2)" = 1 ]'
ok $? "the queue opened again: the replica is submitted"
api GET /v1/services/a2 "" "$ANN"
is "$(jget .held)" null "... and nothing is held"

# M3: bob's bucket holds 3 submissions (refilled at 0.01 a second): a scale to 8 submits 3.
api POST /v1/services '{"name":"b1","argv":["sleep","300"],"replicas":0}' "$BOB"
is "$CODE" 201 "bob's service"
api PATCH /v1/services/b1 '{"replicas":8}' "$BOB"
is "$CODE $(jget .replicas) $(replicas b1)" "200 8 3" \
    "scale to 8 with a bucket of 3: 3 replicas submitted"
jget .held | grep -q -- "--submit-rate"
ok $? "... and the service says the rest wait for the submission rate"
sleep 1.5
is "$(replicas b1)" 3 "the supervision submits no more while the bucket is empty"
api PATCH /v1/services/b1 '{"replicas":0}' "$BOB"
api PATCH /v1/services/b1 '{"replicas":8}' "$BOB"
is "$(replicas b1)" 3 "scaling down and up again creates no new job rows"
api PATCH /v1/services/b1 '{"replicas":0}' "$BOB"
is "$CODE $(jget .held)" "200 null" "scaled to 0: nothing is held any more"

# M4: old proxies end; token files are written only when they change.
wait_for '[ -f "$TD/data/serve/haproxy.cfg" ]'
grep -q "^    hard-stop-after 10s$" "$TD/data/serve/haproxy.cfg"
ok $? "the proxy's configuration ends a replaced process within 10 s"
ID=$(sqlite3 "$DB" "SELECT id FROM services WHERE name = 'a1'")
TOK="$TD/data/serve/svc-$ID.tokens"
wait_for '[ -f "$TOK" ]'
INODE=$(stat -c %i "$TOK")
sleep 1.5 # three supervisions
is "$(stat -c %i "$TOK")" "$INODE" "a token file whose content did not change is not rewritten"
api POST /v1/tokens '{"user":"ann"}'
wait_for '[ "$(wc -l <"$TOK")" = 2 ]'
ok $? "... one whose content changed (a new token of the owner) is"
done_testing
