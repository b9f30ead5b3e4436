#!/bin/sh
# t7056-console-services.t - the console's services page in a real browser (Debian's Chromium,
# playwright-core: web/test/services.mjs): service web with 2 replicas of the stand-in server
# under some traffic is listed with its endpoint and each replica's GPU, health, weight,
# measured rate and latency; scaling to 65 shows the API's error beside the field, to 3 gets
# three replicas; a token is created (shown once), calls the endpoint, is revoked and then
# refused; delete asks, then the service is gone (and so is its row in the store).
# Screenshots: $TESSEL_BUILD/screenshots/services/console-services*.png (docs/screenshots/,
# docs/console.md).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
CHROMIUM=${TESSEL_CHROMIUM:-/usr/bin/chromium}
WEBSRC=$TESSEL_SRCDIR/web
command -v curl >/dev/null && command -v jq >/dev/null && command -v sqlite3 >/dev/null ||
    missing "curl, jq and sqlite3 are needed"
command -v haproxy >/dev/null || [ -x /usr/sbin/haproxy ] || missing "haproxy is needed"
command -v python3 >/dev/null || missing "python3 is needed (the stand-in server)"
[ -x "$CHROMIUM" ] || missing "no Chromium at $CHROMIUM (scripts/install-deps.sh --browser)"
command -v node >/dev/null || missing "no node (scripts/install-deps.sh --browser)"
[ -f "$WEBSRC/node_modules/playwright-core/package.json" ] ||
    missing "web/node_modules is missing: (cd web && npm ci) (make does it when npm is present)"
[ -f "$TESSEL_BUILD/share/tessel/web/app/services.js" ] || missing "console not installed (run make)"

td_setup
# HAProxy (as haproxy) reaches the replicas' sockets below the data directory (docs/serving.md).
chmod 711 "$TD"
td_start --fake-gpus 1xT4:16G,1xA100:40G --no-cgroups --allow-root-jobs
SRV="$TESSEL_SRCDIR/tests/lib/standin.py"
api POST /v1/services "{\"name\":\"web\",\"argv\":[\"python3\",\"$SRV\",\"A100=2,T4=6\"],\"replicas\":2,\"gpu\":0.25,\"gpu_mem\":\"2G\"}"
is "$CODE" 201 "service web: 2 replicas of the stand-in server"
EP=$(jget .endpoint)
up() {
    api GET /v1/services/web
    [ "$(jq '[.replica_jobs[] | select(.health == "UP")] | length' "$TD/out")" = 2 ]
}
wait_for up; ok $? "both replicas run and pass the health check"
# Traffic, so that the page has rates, shares and latencies to show (and keeps getting some).
( while :; do curl -s -o /dev/null -H "Authorization: Bearer $TD_ADMIN" "$EP/x"; done ) &
LOAD=$!
TD_PIDS="$TD_PIDS $LOAD"
measured() {
    api GET /v1/services/web
    [ "$(jq '[.replica_jobs[] | select(.service_rate != null)] | length' "$TD/out")" = 2 ]
}
wait_for measured; ok $? "tesseld has measured both replicas' rates"

SHOTS=$TESSEL_BUILD/screenshots/services
rm -rf "$SHOTS"
TESSEL_URL=$TD_URL ADMIN=$TD_ADMIN ENDPOINT=$EP SHOTS=$SHOTS \
    CHROMIUM=$CHROMIUM HOME=$TD timeout 300 node "$WEBSRC/test/services.mjs" >"$TD/browser.out" 2>&1
st=$?
kill "$LOAD" 2>/dev/null
while IFS= read -r line; do
    case $line in
    "PASS "*) ok 0 "${line#PASS }" ;;
    "FAIL "*) ok 1 "${line#FAIL }" ;;
    *) diag "$line" ;;
    esac
done <"$TD/browser.out"
is "$st" "0" "the browser session ran to its end"
is "$(sqlite3 "$TD/data/tessel.db" "SELECT count(*) FROM services")" 0 "the store has no service left"
[ -s "$SHOTS/console-services.png" ] && [ -s "$SHOTS/console-services-delete.png" ]
ok $? "screenshots saved: $SHOTS/console-services.png, console-services-delete.png"
td_stop; ok $? "tesseld stops cleanly (no sanitizer report)"
done_testing
