#!/bin/sh
# t7052-serve-scale.t - a service through the CLI (docs/serving.md, docs/cli.md): `tessel serve`
# starts it, `tessel services` lists it and `show` its replicas (GPU, health, weight, rate,
# share, latency); `scale` up adds replicas that the proxy sends requests to, `scale` down
# stops the newest (their jobs cancelled) and the proxy forgets them, 0 leaves the endpoint
# answering 503, tokens are made, listed and revoked, and `rm` stops every replica, removes the service and closes its port; bad
# usage exits 2; a replica that runs on but fails its health check is stopped and replaced.
# test-timeout: 240
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
command -v curl >/dev/null && command -v jq >/dev/null && command -v sqlite3 >/dev/null ||
    missing "curl, jq and sqlite3 are needed"
[ -x /usr/sbin/haproxy ] || missing "haproxy is needed (/usr/sbin/haproxy)"
command -v python3 >/dev/null || missing "python3 is needed (the stand-in server)"

td_setup
# HAProxy (as haproxy) reaches the replicas' sockets below the data directory (docs/serving.md).
chmod 711 "$TD"
td_start --fake-gpus 2xT4:16G,2xA100:40G --no-cgroups --allow-root-jobs
cli_setup
DB="$TD/data/tessel.db"
SRV="$TESSEL_SRCDIR/tests/lib/standin.py"

admin serve web --replicas 1 --gpu 0.25 --gpu-mem 2G --env MODEL=small -- python3 "$SRV" 2
is "$RC" 0 "tessel serve web --replicas 1 -- CMD: exit 0"
grep -q "^service web: 1 replica(s), endpoint http://127.0.0.1:[0-9]*$" "$TD/o"
ok $? "... it prints the endpoint"
PORT=$(sed 's/.*127.0.0.1://' "$TD/o")
is "$(sqlite3 "$DB" "SELECT json_extract(spec, '$.env.MODEL') FROM services")" small \
    "--env is the replicas' environment"
call() { curl -s -o "$TD/call" -w '%{http_code}' -H "Authorization: Bearer $TD_ADMIN" \
    "http://127.0.0.1:$PORT/x"; }
wait_for '[ "$(call)" = 200 ]'
ok $? "the endpoint answers"
admin services
is "$RC $(awk 'NR == 2 { print $1, $2, $3, $4 }' "$TD/o")" "0 web admin 1 1" \
    "tessel services: web, its owner, 1 running of 1"
running() { # running N: the service has N replicas running and passing the health check
    admin services show web --json
    [ "$(jq -r '[.replica_jobs[] | select(.health == "UP" and (.stopping | not))] | length' \
        "$TD/o")" = "$1" ]
}

# Scale up: 3 replicas, each served.
admin services scale web 3
is "$RC $(out)" "0 service web: 3 replica(s)" "tessel services scale web 3"
wait_for 'running 3'
ok $? "three replicas run and pass the health check"
is "$(grep -c '^    server r' "$TD/data/serve/haproxy.cfg")" 3 "the proxy has three servers"
seen=""
for i in $(seq 1 12); do call >/dev/null; seen="$seen $(cut -d' ' -f2 "$TD/call")"; done
is "$(echo "$seen" | tr ' ' '\n' | sort -u | grep -c .)" 3 "requests reach all three replicas"
admin services show web
is "$RC $(grep -c -E '^ *[0-9]+ +running +[0-3]:Fake (T4|A100) 0.25 +UP' "$TD/o")" "0 3" \
    "tessel services show: each replica with its GPU (model and share) and health"
head -n 6 "$TD/o" | grep -q "^replicas *3 running of 3$"
ok $? "... and the count"

# Scale down: the newest two stop.
NEWEST=$(sqlite3 "$DB" "SELECT group_concat(job, ' ') FROM (SELECT job FROM service_replicas
    ORDER BY job DESC LIMIT 2)")
admin services scale web 1
is "$RC" 0 "tessel services scale web 1"
for j in $NEWEST; do
    wait_for '[ "$(job_state "$j")" = cancelled ]'
    ok $? "the newest replica, job $j, is cancelled"
done
wait_for '[ "$(grep -c "^    server r" "$TD/data/serve/haproxy.cfg")" = 1 ]'
ok $? "the proxy has one server left"
seen=""
for i in 1 2 3 4 5 6; do call >/dev/null; seen="$seen $(cut -d' ' -f2 "$TD/call")"; done
is "$(echo "$seen" | tr ' ' '\n' | sort -u | grep -c .)" 1 "requests reach the one replica left"

# Scale to 0: the endpoint stays, with nobody behind it.
admin services scale web 0
wait_for '[ "$(grep -c "^    server r" "$TD/data/serve/haproxy.cfg")" = 0 ]'
ok $? "scaled to 0: the proxy has no server"
wait_for '[ "$(call)" = 503 ]'
ok $? "... and the endpoint answers 503"

# Service tokens through the CLI.
admin services token web --name ci
is "$RC $(grep -c '^tsl_[0-9a-f]*$' "$TD/o")" "0 1" "tessel services token web --name ci prints one token"
admin services tokens web
is "$RC $(awk 'NR == 2 { print $2 }' "$TD/o") $(grep -c tsl_ "$TD/o")" "0 ci 0" \
    "tessel services tokens web lists it, without its secret"
TID=$(awk 'NR == 2 { print $1 }' "$TD/o")
admin services token-rm web "$TID"
is "$RC $(out)" "0 token $TID of service web revoked" "tessel services token-rm web $TID"
admin services token-rm web "$TID"
is "$RC" 1 "revoking it again: exit 1"

# Bad usage.
admin services scale web many
is "$RC" 2 "scale to a non-number: exit 2"
admin services scale web 65
is "$RC" 2 "scale above 64: exit 2"
admin serve only-a-name
is "$RC" 2 "serve without a command: exit 2"
admin serve x --gpu 0.0001 -- true
is "$RC" 2 "serve with a bad --gpu: exit 2"
admin services show nope
is "$RC" 1 "show of no such service: exit 1"
one_line_error; ok $? "... with one line on stderr"
admin services frobnicate web
is "$RC" 2 "an unknown action: exit 2"

# Remove: replicas stop, the service and its port go.
admin services scale web 2
wait_for 'running 2'
ok $? "scaled to 2 again"

# A replica that keeps running but fails its health check is stopped and replaced.
SICK=$(jq -r '.replica_jobs[0].job' "$TD/o")
# Told on its Unix socket (its port is in its own network namespace; root reaches it).
curl -s -o /dev/null --unix-socket "$TD/data/replicas/r$SICK.sock" http://replica/sick
ok $? "replica $SICK is told to fail its health check from now on (it runs on)"
wait_for '[ "$(job_state "$SICK")" = cancelled ]'
ok $? "after 10 s DOWN, tesseld stops it (its job cancelled)"
grep -q "replica job $SICK: failed its health check for 10 s" "$TD/tesseld.log"
ok $? "tesseld's log says why"
wait_for 'running 2'
ok $? "a new replica replaces it: two pass the health check again"
admin services rm web
is "$RC $(out)" "0 service web removed (its replicas stop)" "tessel services rm web"
is "$(sqlite3 "$DB" "SELECT count(*) FROM services") $(sqlite3 "$DB" "SELECT count(*) FROM service_replicas")" \
    "0 0" "the service and its rows are gone"
wait_for '[ "$(sqlite3 "$DB" "SELECT count(*) FROM jobs WHERE state < 2")" = 0 ]'
ok $? "every replica's job has ended"
wait_for '[ "$(call)" = 000 ]'
ok $? "the endpoint's port is closed (no service left: the proxy stopped)"
admin services
is "$RC $(wc -l <"$TD/o")" "0 1" "tessel services: none (the header alone)"
td_stop
ok $? "tesseld stops cleanly (no sanitizer report)"
done_testing
