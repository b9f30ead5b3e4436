#!/bin/sh
# t7072-jobsvc-idle.t - --interactive-idle (docs/job-services.md, "Idle jobs"): a job with web
# services whose services had no request and no open WebSocket for that long is cancelled, its
# end cause "cancelled" and its reason "cancelled by idle-timeout"; a job with an open
# WebSocket to its service is not, however long; a job without services is never.  The same
# for a job with a terminal (issue 19 item 4): of class interactive by default (a class given
# stays), `tessel ps` shows how to attach to it, cancelled when no terminal is attached for
# that long, not while one is.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
. "$TESSEL_SRCDIR/tests/lib/term.sh"
. "$TESSEL_SRCDIR/tests/lib/jobsvc.sh"
/usr/bin/python3 -c 'import websocket' 2>/dev/null ||
    missing "Debian's python3-websocket is needed (scripts/install-deps.sh)"
# 10 s: long enough that the WebSockets below are open before their jobs could be idle,
# on a loaded machine too.
jobsvc_daemon --interactive-idle 10s

# K's service answers a WebSocket handshake with 101 and keeps the connection open (tesseld
# relays it as it does Jupyter's kernels'; what flows on it does not matter here).
cat >"$W/ws101.py" <<'EOF'
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.end_headers()
        self.wfile.flush()
        # The upgraded connection stays open until the other side closes it.
        while self.rfile.read(1):
            pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
EOF
chown nobody "$W/ws101.py"
I=$(nbjob "{\"argv\":[\"sleep\",\"300\"],\"cwd\":\"$W\",\"services\":[{\"name\":\"web\",\"port\":8000}]}")
K=$(nbjob "{\"argv\":[\"/usr/bin/python3\",\"ws101.py\",\"8000\"],\"cwd\":\"$W\",\"services\":[{\"name\":\"ws\",\"port\":8000}]}")
P=$(nbjob "{\"argv\":[\"sleep\",\"300\"],\"cwd\":\"$W\",\"class\":\"interactive\"}")
# T and U: jobs with a terminal (tessel run -it's); a terminal stays attached to T (below).
T=$(nbjob "{\"argv\":[\"sleep\",\"300\"],\"cwd\":\"$W\",\"tty\":true}")
U=$(nbjob "{\"argv\":[\"sleep\",\"300\"],\"cwd\":\"$W\",\"tty\":true}")
api GET "/v1/jobs/$T" "" "$NB"
is "$(jget .class)" interactive "a job with a terminal: class interactive by default"
api POST /v1/jobs "{\"argv\":[\"true\"],\"cwd\":\"$W\",\"tty\":true,\"class\":\"training\"}" "$NB"
TT=$(jget .id)
api GET "/v1/jobs/$TT" "" "$NB"
is "$(jget .class)" training "... a class given stays (training)"
for j in $I $K $P $T $U; do
    wait_for '[ "$(api GET /v1/jobs/'"$j"' "" "$NB"; jget .state)" = running ]'
done
nbtessel ps >"$TD/ps" 2>&1
grep -q "^ *$T .*terminal tessel attach $T\$" "$TD/ps"; ok $? "tessel ps: the job with a terminal shows terminal tessel attach $T"
# A terminal attached to T for 45 s (curl's --max-time holds the WebSocket open).
curl -s -o /dev/null -w '%{http_code}' --max-time 45 -H "Authorization: Bearer $NB" \
    -H 'Upgrade: websocket' -H 'Connection: Upgrade' -H 'Sec-WebSocket-Version: 13' \
    -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' "$TD_URL/v1/jobs/$T/attach" >"$TD/tws.code" &
TWSPID=$!
wait_for 'grep -q "job $T: terminal attached by nobody" "$TD/tesseld.log"'
ok $? "a terminal attached to job $T"
# A WebSocket held open to K's service for 45 s (curl's --max-time).
svc_ticket "$K" ws
svc_cookie "$URL"
KC=$COOKIE
wait_for "[ \"\$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 --unix-socket '$TD/data/jobsvc/j$K-ws.sock' http://x/)\" = 101 ]"
curl -s -o "$TD/ws.out" -w '%{http_code}' --max-time 45 -H "Cookie: tessel-svc=$KC" \
    -H 'Upgrade: websocket' -H 'Connection: Upgrade' -H 'Sec-WebSocket-Version: 13' \
    -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' "$(svc_url "$K" ws)/" >"$TD/ws.code" &
WSPID=$!

wait_for '[ "$(api GET /v1/jobs/'"$I"' "" "$NB"; jget .state)" = cancelled ]'
api GET "/v1/jobs/$I" "" "$NB"
is "$(jget .state) $(jget .end_cause)" "cancelled cancelled" \
    "a job whose service had no request for 10 s: cancelled (end cause cancelled)"
jget .reason | grep -q "idle-timeout"; ok $? "... its reason says idle-timeout ($(jget .reason))"
grep -q "job $I: no request to its services" "$TD/tesseld.log"; ok $? "... and tesseld's log why"
# 10 s and two checks (every 5 s) after the others started, they still run.
sleep 11
api GET "/v1/jobs/$K" "" "$NB"
is "$(jget .state)" running "a job with a WebSocket open to its service: still running"
kill -0 "$WSPID" 2>/dev/null; ok $? "... its WebSocket still open through tesseld"
api GET "/v1/jobs/$P" "" "$NB"
is "$(jget .state)" running "an interactive job without services: never cancelled for idleness"
api GET "/v1/jobs/$T" "" "$NB"
is "$(jget .state)" running "a job with a terminal attached: still running"
wait_for '[ "$(api GET /v1/jobs/'"$U"' "" "$NB"; jget .state)" = cancelled ]'
api GET "/v1/jobs/$U" "" "$NB"
is "$(jget .state) $(jget .end_cause)" "cancelled cancelled" "a job with a terminal none is attached to: cancelled"
jget .reason | grep -q "idle-timeout"; ok $? "... its reason says idle-timeout"
grep -q "job $U: no request to its services, no WebSocket open and no terminal attached" "$TD/tesseld.log"
ok $? "... and tesseld's log why"
wait "$WSPID" # curl gives up after 45 s: the WebSocket closes
is "$(cat "$TD/ws.code")" 101 "the WebSocket had been opened (101)"
wait_for '[ "$(api GET /v1/jobs/'"$K"' "" "$NB"; jget .state)" = cancelled ]'
api GET "/v1/jobs/$K" "" "$NB"
is "$(jget .state)" cancelled "once its WebSocket closed, that job is cancelled too"
wait "$TWSPID"
is "$(cat "$TD/tws.code")" 101 "the terminal had been attached (101)"
wait_for '[ "$(api GET /v1/jobs/'"$T"' "" "$NB"; jget .state)" = cancelled ]'
api GET "/v1/jobs/$T" "" "$NB"
is "$(jget .state)" cancelled "once its terminal detached, that job is cancelled too"
api POST "/v1/jobs/$P/cancel" "" "$NB"

# tesseld stopped (SIGTERM) while a WebSocket to a service is open: its services' listeners
# stop (the relay ends), then the store closes; exit status 0, no sanitizer report.
K2=$(nbjob "{\"argv\":[\"/usr/bin/python3\",\"ws101.py\",\"8000\"],\"cwd\":\"$W\",\"services\":[{\"name\":\"ws\",\"port\":8000}]}")
wait_for '[ "$(api GET /v1/jobs/'"$K2"' "" "$NB"; jget .state)" = running ]'
svc_ticket "$K2" ws
svc_cookie "$URL"
wait_for "[ \"\$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 --unix-socket '$TD/data/jobsvc/j$K2-ws.sock' http://x/)\" = 101 ]"
curl -s -o /dev/null -w '%{http_code}' --max-time 60 -H "Cookie: tessel-svc=$COOKIE" \
    -H 'Upgrade: websocket' -H 'Connection: Upgrade' -H 'Sec-WebSocket-Version: 13' \
    -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' "$(svc_url "$K2" ws)/" >"$TD/ws2.code" &
WS2=$!
wait_for 'grep -q "^101" "$TD/ws2.code" || [ -n "$(ss -tnH state established "( dport = :$SVC_PORT )")" ]'
td_stop
is "$?" 0 "tesseld stopped with a WebSocket to a service open: exit status 0, nothing reported"
wait "$WS2"
is "$(cat "$TD/ws2.code")" 101 "... the WebSocket had been open (101) and its client saw it end"
done_testing
