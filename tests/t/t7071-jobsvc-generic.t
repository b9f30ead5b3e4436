#!/bin/sh
# t7071-jobsvc-generic.t - a job's generic web service (`tessel run --service NAME=PORT`,
# docs/job-services.md): python3 -m http.server in the job, served through tesseld.
#   - the submission: the job's services with their URL (and in tessel ps), class interactive by default (a class
#     given stays), bad services refused (400, the CLI's usage error 2);
#   - the job's network: the port is not on the host's, the socket is root's and the owner's
#     only (another account cannot connect);
#   - the way in: the service at its own host name, jID-web.localhost (the Host header
#     routes: a bare address or a malformed name, 404); a ticket (the owner's, an admin's)
#     redeemed for a cookie (host-only: no Domain, HttpOnly, SameSite=Strict) by a page of the
#     host that goes to its root, then GET, HEAD,
#     a POST's body and the service's own status passed through; before the service listens,
#     503 with Retry-After;
#   - refusals, all 403: no cookie, a forged or another job's cookie, a ticket used twice,
#     another user's ticket request, another user's own cookie of his own job's service (HTTP
#     and WebSocket);
#   - the end: the job ended, its socket is gone and its URL answers 409.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
. "$TESSEL_SRCDIR/tests/lib/term.sh"
. "$TESSEL_SRCDIR/tests/lib/jobsvc.sh"
command -v setpriv >/dev/null || missing "setpriv (util-linux) is needed"
command -v ss >/dev/null || missing "ss (iproute2) is needed"
jobsvc_daemon
PORT=18473 # an unusual port: nothing of the host's listens there

# --- submission -------------------------------------------------------------------------------
# The job waits for $W/go before it serves, to show the 503 first.
SCRIPT='while [ ! -e go ]; do sleep 0.2; done; echo hello >index.txt; exec /usr/bin/python3 -m http.server --bind 127.0.0.1 '$PORT
nbtessel run -d --service web=$PORT --shell "$SCRIPT" >"$TD/o" 2>"$TD/e"
is "$?" 0 "tessel run -d --service web=$PORT: submitted"
J=$(cat "$TD/o")
grep -q "tessel open $J" "$TD/e"; ok $? "... and it says tessel open gives the URL"
api GET "/v1/jobs/$J" "" "$NB"
is "$(jq -c '[.class, .services]' "$TD/out")" \
    "[\"interactive\",[{\"name\":\"web\",\"port\":$PORT,\"url\":\"$(svc_url "$J" web)/\"}]]" \
    "the job: class interactive, its service with its URL, its own host name on the services listener"
nbtessel run -d --class training --service web=$PORT -- true >"$TD/o" 2>/dev/null
api GET "/v1/jobs/$(cat "$TD/o")" "" "$NB"
is "$(jget .class)" training "a class given stays (training)"
for bad in 'Web=80' 'web=0' 'web=65536' 'web' '-web=80' 'a_b=80' 'averyveryverylongname=80'; do
    nbtessel run -d --service "$bad" -- true >/dev/null 2>"$TD/e"
    is "$?" 2 "tessel run --service $bad: a usage error (2)"
done
for body in '[{"name":"a","port":1},{"name":"a","port":2}]' '[{"name":"a","port":1},{"name":"b","port":1}]' \
    '[]' '[{"name":"a","port":1,"host":"0.0.0.0"}]' '"jupyter"' \
    '[{"name":"a","port":1},{"name":"b","port":2},{"name":"c","port":3},{"name":"d","port":4},{"name":"e","port":5}]'; do
    api POST /v1/jobs "{\"argv\":[\"true\"],\"services\":$body}" "$NB"
    is "$CODE $(jget .error.field)" "400 services" "services $body: 400 on the field services"
done

# --- the job's network ------------------------------------------------------------------------
wait_for '[ "$(api GET /v1/jobs/$J "" "$NB"; jget .state)" = running ]'
nbtessel ps >"$TD/ps" 2>&1
head -1 "$TD/ps" | grep -q "SERVICES$"; ok $? "tessel ps: a SERVICES column (a job listed has services)"
grep -q "^ *$J .* web $(svc_url "$J" web)/\$" "$TD/ps"; ok $? "... the job's row: web and its URL"
S="$TD/data/jobsvc/j$J-web.sock"
wait_for "[ -S '$S' ]"
is "$(stat -c '%U %G %a' "$S")" "nobody root 600" "its socket: the owner's (and root's), mode 600"
is "$(stat -c '%U %a' "$TD/data/jobsvc")" "root 711" "in <data>/jobsvc, root's, 0711"
setpriv --reuid daemon --regid daemon --clear-groups curl -s --max-time 5 --unix-socket "$S" \
    http://x/ >/dev/null 2>&1
is "$?" 7 "another account cannot connect to the socket (curl: couldn't connect)"

# --- the way in ---------------------------------------------------------------------------------
svc_ticket "$J" web
is "$CODE $(jget .service) $(jget .expires_in_s)" "201 web 30" "the owner's ticket: 201, 30 s"
case "$URL" in "$(svc_url "$J" web)/?tessel-ticket="*) r=0 ;; *) r=1 ;; esac
ok $r "... its URL: the service's, with the ticket ($URL)"
svc_cookie "$URL"
is "$CODE" 200 "the ticket redeemed: 200"
grep -q 'http-equiv="refresh" content="0; url=/"' "$TD/body"
ok $? "... a page of the service's host that goes to its root (a Strict cookie goes with that)"
grep -i '^Set-Cookie' "$TD/h" | grep -q "Path=/; Max-Age=43200; HttpOnly; SameSite=Strict"
ok $? "... a cookie for the service's host, HttpOnly, SameSite=Strict, 12 h"
grep -i '^Set-Cookie' "$TD/h" | grep -qi "domain"
is "$?" 1 "... host-only: no Domain attribute (no other service's host gets it)"
OWNER_COOKIE=$COOKIE
svc_cookie "$URL"
is "$CODE" 403 "the same ticket again (a stolen URL): 403"
svc_get "$J" web "index.txt" "$OWNER_COOKIE"
is "$CODE" 503 "before the service listens: 503"
grep -qi '^Retry-After: 2' "$TD/h"; ok $? "... with Retry-After"
grep -q "does not answer" "$TD/out"; ok $? "... and why ($(jget .error.message | cut -c1-60)...)"
touch "$W/go"
COOKIE=$OWNER_COOKIE
wait_for "svc_get $J web index.txt $COOKIE; [ \"\$CODE\" = 200 ]"
is "$CODE $(cat "$TD/out")" "200 hello" "then GET through tesseld: the service's file"
grep -qi '^Server: SimpleHTTP' "$TD/h"; ok $? "... with the service's own headers"
head -c 3000000 /dev/urandom >"$W/big.bin"
svc_get "$J" web "big.bin" "$COOKIE" --limit-rate 4M
cmp -s "$TD/out" "$W/big.bin"
ok $? "3 MB streamed through tesseld to a client slower than the service, every byte ($CODE, $(wc -c <"$TD/out") bytes)"
svc_get "$J" web "index.txt" "$COOKIE" -I
is "$CODE" 200 "HEAD: 200"
# Answers without a body on a kept-alive connection, each followed by a GET on it (curl --next):
# a 304 (If-Modified-Since in the future) and a HEAD.  A 304 sent chunked (before 2026-11-28)
# sometimes left its last chunk for the next answer to be read from (curl: "HTTP/0.9";
# Chromium: ERR_INVALID_HTTP_RESPONSE, which failed t7073 in CI once).
U=$(svc_url "$J" web)
# two_gets WHAT STATUS CURL-ARG...: the first request with CURL-ARG, then a plain GET.
two_gets() {
    _what=$1 _want=$2
    shift 2
    curl -s -o /dev/null -D "$TD/h1" --max-time 30 -H "Cookie: tessel-svc=$COOKIE" "$@" \
        "$U/index.txt" --next -s -o "$TD/out" -w '%{http_code} %{num_connects}' --max-time 30 \
        -H "Cookie: tessel-svc=$COOKIE" "$U/index.txt" >"$TD/c" 2>&1
    is "$? $(head -n 1 "$TD/h1" | cut -d' ' -f2) $(cat "$TD/c") $(cat "$TD/out")" \
        "0 $_want 200 0 hello" "$_what then a GET on the same connection: both answered"
}
two_gets "a 304" 304 -H "If-Modified-Since: Wed, 21 Oct 2099 07:28:00 GMT"
grep -qi '^Transfer-Encoding:' "$TD/h1"
is "$?" 1 "the 304 declares no body (no Transfer-Encoding: chunked, whose last chunk a client would read as the next answer)"
two_gets HEAD 200 -I
svc_get "$J" web "nothing" "$COOKIE"
is "$CODE" 404 "the service's own 404 passed through"
svc_get "$J" web "index.txt" "$COOKIE" -X POST --data-binary @"$TESSEL_SRCDIR/README.md"
is "$CODE" 501 "a POST with a body: the service's answer (http.server: 501)"
# The Host header names the service; anything but exactly jID-NAME.localhost[:PORT]: 404.
for h in "127.0.0.1:$SVC_PORT" "j0$J-web.localhost" "J$J-web.localhost" \
    "j$J-Web.localhost" "j$J-web.localhost.evil" "j$J-web.other.localhost" \
    "j$J-web.localhost:x" "x.j$J-web.localhost" "j$J-web-.localhost" "j$J.localhost"; do
    CODE=$(curl -s -o "$TD/out" -w '%{http_code}' --max-time 30 -H "Host: $h" \
        -H "Cookie: tessel-svc=$COOKIE" "$SVC/index.txt")
    is "$CODE $(jget .error.code)" "404 not_found" "Host: $h: 404"
done
CODE=$(curl -s -o "$TD/out" -w '%{http_code}' --max-time 30 -H "Host: j$J-web.localhost" \
    -H "Cookie: tessel-svc=$COOKIE" "$SVC/index.txt")
is "$CODE $(cat "$TD/out")" "200 hello" "Host: j$J-web.localhost (no port) to the bare address: the service"
svc_ticket "$J" web "$TD_ADMIN"
svc_cookie "$URL"
svc_get "$J" web "index.txt" "$COOKIE"
is "$CODE" 200 "an admin opens it too"

# --- refusals ---------------------------------------------------------------------------------
svc_get "$J" web "index.txt" ""
is "$CODE $(jget .error.code)" "403 forbidden" "no cookie: 403"
svc_get "$J" web "index.txt" "bob${OWNER_COOKIE#nobody}"
is "$CODE" 403 "the cookie with another user written in: 403"
svc_get "$J" web "index.txt" "nobody:9999999999:${OWNER_COOKIE##*:}"
is "$CODE" 403 "the cookie with another expiry written in: 403"
svc_ws "$J" web "" ""
is "$CODE" 403 "a WebSocket without a cookie: 403"
svc_ticket "$J" web "$BOB"
is "$CODE $(jget .error.code)" "403 forbidden" "another user asks for a ticket: 403"
# Another user's own job and service (the account daemon, a Tessel user here): the cookie
# of his opens his, not nobody's.
api POST /v1/users '{"name":"daemon"}'
api POST /v1/tokens '{"user":"daemon"}'
DM=$(jget .token)
api POST /v1/jobs "{\"argv\":[\"sleep\",\"300\"],\"services\":[{\"name\":\"web\",\"port\":$PORT}]}" "$DM"
B=$(jget .id)
wait_for '[ "$(api GET /v1/jobs/$B "" "$DM"; jget .state)" = running ]'
svc_ticket "$B" web "$DM"
svc_cookie "$URL"
is "$CODE" 200 "another user's ticket for his own job: redeemed"
OTHER_COOKIE=$COOKIE
svc_get "$J" web "index.txt" "$OTHER_COOKIE"
is "$CODE" 403 "his own cookie on nobody's service: 403"
svc_ws "$J" web "" "$OTHER_COOKIE"
is "$CODE" 403 "... and on its WebSocket: 403"
svc_ticket "$J" web "$DM"
is "$CODE" 403 "... and no ticket for nobody's job: 403"

# --- outside the job ------------------------------------------------------------------------------
ss -Hltn "sport = :$PORT" | grep -q . && r=1 || r=0
ok $r "port $PORT is not on the host's network (the job's own namespace)"

# --- the end ------------------------------------------------------------------------------------
api POST "/v1/jobs/$J/cancel" "" "$NB"
wait_for '[ "$(api GET /v1/jobs/$J "" "$NB"; jget .state)" = cancelled ]'
wait_for "[ ! -e '$S' ]"
ok $? "the job ended: its socket is gone"
svc_get "$J" web "index.txt" "$OWNER_COOKIE"
is "$CODE $(jget .error.code)" "409 finished" "its cookie opens nothing any more: 409 finished"
svc_ticket "$J" web
is "$CODE" 409 "no ticket for an ended job: 409"
api POST "/v1/jobs/$B/cancel" "" "$DM"
done_testing
