#!/bin/sh
# test-timeout: 300
# t7074-jobsvc-origin.t - each job service on an origin of its own, and what tesseld holds at
# its door (docs/job-services.md, docs/security.md "A job's web services"; the review's F1-F5):
#   - F1: the service only at http://jID-NAME.localhost:PORT/ (the Host header routes); the
#     old path-based URL on the bare address is no service (404); the owner's cookie is
#     host-only and opens no other service, another user's cookie not this one;
#   - F2: a request that changes something (POST, PUT, DELETE) or a WebSocket is refused (403
#     cross_origin) when its Sec-Fetch-Site is cross-site or same-site (another service's
#     page, another port's) or its Origin is another origin; from its own origin, or from a
#     client that sends neither (curl), it goes through; a GET goes through whatever its
#     origin; the refused ones never reach the service;
#   - F3: uploads without a cookie (or with another service's) are answered 403 from their
#     headers: 40 of 16 MiB each held open leave tesseld's memory (VmRSS) within 64 MiB of
#     before (read whole first, they took about 16 MiB each); a ticket in the URL lets no body
#     in (a POST needs the cookie, a GET with a body is 400);
#   - F4: a service's Set-Cookie of tesseld's own name is dropped, a Domain attribute removed;
#   - F5: a header holding a bare CR is refused (400), plain or WebSocket, before anything is
#     written to the service;
#   - --services-domain: a bad domain refused; another one moves every service's host name.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
. "$TESSEL_SRCDIR/tests/lib/term.sh"
. "$TESSEL_SRCDIR/tests/lib/jobsvc.sh"
jobsvc_daemon
PORT=18474
cp "$TESSEL_SRCDIR/tests/lib/svc-echo" "$W/svc-echo"
chmod 755 "$W/svc-echo"
J=$(nbjob "{\"argv\":[\"/usr/bin/python3\",\"svc-echo\",\"$PORT\",\"svc.log\"],\"cwd\":\"$W\",\"services\":[{\"name\":\"web\",\"port\":$PORT}]}")
[ -n "$J" ] || { diag "$(cat "$TD/out")"; missing "the job was not submitted"; }
wait_for '[ "$(api GET /v1/jobs/$J "" "$NB"; jget .state)" = running ]'
H="j$J-web.localhost:$SVC_PORT"
ORIGIN="http://$H"
svc_ticket "$J" web
svc_cookie "$URL"
is "$CODE" 200 "the owner's ticket redeemed on the service's own host"
C=$COOKIE
wait_for "svc_get $J web ready $C; [ \"\$CODE\" = 200 ]"
is "$(cat "$TD/out")" "GET /ready" "the service at http://$H/ gets the path as sent"

# --- F1: the origin is the service's ----------------------------------------------------------
CODE=$(curl -s -o "$TD/out" -w '%{http_code}' --max-time 30 -H "Cookie: tessel-svc=$C" \
    "$SVC/jobs/$J/web/ready")
is "$CODE $(jget .error.code)" "404 not_found" "the path-based URL on the bare address: no service (404)"
# Another job of nobody's: its own host; this job's cookie does not open it.
J2=$(nbjob "{\"argv\":[\"sleep\",\"300\"],\"services\":[{\"name\":\"web\",\"port\":$PORT}]}")
wait_for '[ "$(api GET /v1/jobs/$J2 "" "$NB"; jget .state)" = running ]'
svc_get "$J2" web "" "$C"
is "$CODE $(jget .error.code)" "403 forbidden" "job $J's cookie on job $J2's host: 403"
# Another user (the account daemon, a Tessel user here) with a job and service of his own: his
# ticket URL is on his job's host, and his cookie opens nothing of nobody's.
api POST /v1/users '{"name":"daemon"}'
api POST /v1/tokens '{"user":"daemon"}'
DM=$(jget .token)
api POST /v1/jobs "{\"argv\":[\"sleep\",\"300\"],\"services\":[{\"name\":\"web\",\"port\":$PORT}]}" "$DM"
B=$(jget .id)
wait_for '[ "$(api GET /v1/jobs/$B "" "$DM"; jget .state)" = running ]'
svc_ticket "$B" web "$DM"
case "$URL" in "$(svc_url "$B" web)/?tessel-ticket="*) r=0 ;; *) r=1 ;; esac
ok $r "his ticket URL is on his own job's host ($URL)"
svc_cookie "$URL"
is "$CODE" 200 "... redeemed there"
BC=$COOKIE
svc_get "$J" web "x" "$BC"
is "$CODE" 403 "his cookie sent to nobody's host: 403"

# --- F2: other origins --------------------------------------------------------------------------
post() { # post PATH [CURL-ARG...]: a POST with nobody's cookie, $CODE, body in $TD/out
    _p=$1
    shift
    svc_get "$J" web "$_p" "$C" -X POST --data-binary x "$@"
}
post f2-plain
is "$CODE $(cat "$TD/out")" "200 POST /f2-plain" "a POST with neither Origin nor Sec-Fetch-Site (curl): served"
post f2-own -H "Origin: $ORIGIN" -H "Sec-Fetch-Site: same-origin"
is "$CODE" 200 "a POST from the service's own origin: served"
for hdr in "Sec-Fetch-Site: cross-site" "Sec-Fetch-Site: same-site" \
    "Origin: http://j$J2-web.localhost:$SVC_PORT" "Origin: http://127.0.0.1:18600" \
    "Origin: http://j$J-web.localhost:18600" "Origin: null"; do
    post f2-refused -H "$hdr"
    is "$CODE $(jget .error.code)" "403 cross_origin" "a POST with $hdr: 403"
done
svc_get "$J" web "f2-refused" "$C" -X PUT -H "Sec-Fetch-Site: same-site"
is "$CODE" 403 "a PUT from another service's page (same-site): 403"
svc_get "$J" web "f2-refused" "$C" -X DELETE -H "Origin: http://evil.localhost:18600"
is "$CODE" 403 "a DELETE from another origin: 403"
svc_get "$J" web "f2-get" "$C" -H "Sec-Fetch-Site: cross-site" -H "Origin: http://x"
is "$CODE" 200 "a GET whatever its origin: served (nothing changes; the cookie is SameSite=Strict)"
svc_ws "$J" web "f2-ws-own" "$C" -H "Origin: $ORIGIN"
is "$CODE" 101 "a WebSocket from its own origin: 101"
svc_ws "$J" web "f2-refused" "$C" -H "Origin: http://j$J2-web.localhost:$SVC_PORT"
is "$CODE" 403 "a WebSocket from another service's origin: 403"
svc_ws "$J" web "f2-refused" "$C" -H "Sec-Fetch-Site: same-site"
is "$CODE" 403 "a WebSocket from the same site: 403"
grep -q f2-refused "$W/svc.log"
is "$?" 1 "the refused requests never reached the service"
grep -q "POST /f2-own" "$W/svc.log"; ok $? "... the served ones did"

# --- F4: the service's cookies ------------------------------------------------------------------
svc_get "$J" web cookies "$C"
tr -d '\r' <"$TD/h" | grep -i '^Set-Cookie:' >"$TD/sc"
sed 's/^/# /' "$TD/sc"
grep -q "tessel-svc" "$TD/sc"
is "$?" 1 "the service's Set-Cookie of tesseld's cookie name: dropped"
grep -qix "Set-Cookie: a=1; Path=/" "$TD/sc"; ok $? "its Domain attribute removed (host-only)"
grep -qix "Set-Cookie: b=2; Path=/" "$TD/sc"; ok $? "its other cookie as it came"

# --- F5: CR in a header -------------------------------------------------------------------------
raw() { # raw HEAD-LINES: a request written as is (\r and \n escapes), its status line
    /usr/bin/python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(sys.argv[2].encode().decode("unicode_escape").encode("latin-1"))
s.settimeout(30)
print(s.recv(200).split(b"\r\n", 1)[0].decode())' "$SVC_PORT" "$1"
}
is "$(raw "GET /f5-plain HTTP/1.1\\r\\nHost: $H\\r\\nCookie: tessel-svc=$C\\r\\nX-A: a\\rInjected: 1\\r\\n\\r\\n" | cut -c1-12)" \
    "HTTP/1.1 400" "a header holding a bare CR: 400"
is "$(raw "GET /f5-ws HTTP/1.1\\r\\nHost: $H\\r\\nCookie: tessel-svc=$C\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Version: 13\\r\\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\\r\\nX-A: a\\rInjected: 1\\r\\n\\r\\n" | cut -c1-12)" \
    "HTTP/1.1 400" "... in a WebSocket's handshake too: 400"
grep -q f5 "$W/svc.log"
is "$?" 1 "... neither was written to the service"

# --- F3: unauthenticated uploads are not read ---------------------------------------------------
rss() { sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$TD_PID/status"; }
R0=$(rss)
: >"$TD/hold"
"$TESSEL_SRCDIR/tests/lib/svc-upload" "$SVC_PORT" "$H" 40 "$TD/hold" >"$TD/up.out" 2>&1 &
UP=$!
wait_for "grep -q '^sent ' '$TD/up.out'"
R1=$(rss)
grep -q "^sent 40" "$TD/up.out"; ok $? "40 uploads of 16 MiB without a cookie sent, their connections held"
grep '^answer' "$TD/up.out" | sort | uniq -c | sed 's/^/# /'
ok "$([ $((R1 - R0)) -lt 65536 ] && echo 0 || echo 1)" \
    "tesseld's memory grew by $(((R1 - R0) / 1024)) MiB while they are held (bound 64 MiB; read whole, 640 MiB)"
rm -f "$TD/hold"
wait "$UP"
# A ticket lets no body in: a POST with one in its URL needs the cookie; a GET with a body, 400.
CODE=$(curl -s -o "$TD/out" -w '%{http_code}' --max-time 30 -X POST --data-binary @"$TESSEL_SRCDIR/README.md" \
    "$(svc_url "$J" web)/?tessel-ticket=0000")
is "$CODE $(jget .error.code)" "403 forbidden" "a POST with a ticket in its URL and no cookie: 403 (the ticket is for a GET)"
CODE=$(curl -s -o "$TD/out" -w '%{http_code}' --max-time 30 -X GET --data-binary @"$TESSEL_SRCDIR/README.md" \
    "$(svc_url "$J" web)/?tessel-ticket=0000")
is "$CODE $(jget .error.code)" "400 invalid_request" "a GET of a ticket URL with a body: 400"
svc_get "$J" web "after" "$C" -X POST --data-binary @"$TESSEL_SRCDIR/README.md"
is "$CODE" 200 "the owner's upload is served after them"

# --- another domain (--services-domain) -----------------------------------------------------------
"$TESSEL_BUILD/bin/tesseld" --services-domain 'Lab_1' --personal --data-dir "$TD/nodata" >/dev/null 2>"$TD/e"
is "$?" 2 "tesseld --services-domain Lab_1: refused (exit 2, a usage error)"
grep -q "not a domain" "$TD/e"; ok $? "... saying why ($(cat "$TD/e"))"
JOBSVC_ARGS="$JOBSVC_ARGS --services-domain lab.localhost"
jobsvc_restart
api GET "/v1/jobs/$J" "" "$NB"
is "$(jget '.services[0].url')" "http://j$J-web.lab.localhost:$SVC_PORT/" \
    "tesseld restarted with --services-domain lab.localhost: the service's URL under it"
CODE=$(curl -s -o "$TD/out" -w '%{http_code}' --max-time 30 -H "Cookie: tessel-svc=$C" \
    "http://j$J-web.lab.localhost:$SVC_PORT/lab")
is "$CODE $(cat "$TD/out")" "200 GET /lab" "... served there (the cookie's value holds no host)"
svc_get "$J" web "x" "$C"
is "$CODE" 404 "... and no more under localhost (404)"

api POST "/v1/jobs/$J/cancel" "" "$NB"
api POST "/v1/jobs/$J2/cancel" "" "$NB"
api POST "/v1/jobs/$B/cancel" "" "$DM"
done_testing
