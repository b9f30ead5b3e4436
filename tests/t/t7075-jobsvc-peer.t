#!/bin/sh
# t7075-jobsvc-peer.t - a job service's session is good only from its own user's processes
# (docs/job-services.md, "Whose connection"; the second review's N1, N2, N4 and N6):
#   - a ticket URL redeemed by a process of another account: 403, and the ticket is spent;
#     redeemed by the owner's account: the cookie;
#   - the owner's cookie sent from a process of another account (a cookie reaches any port of its
#     host name: another user's listener receives it): 403, before a body is read; from the
#     owner's account and from root: the service;
#   - the listener holds [::1] as well as 127.0.0.1 (names under localhost lead to both), on a
#     port only root may bind (never free for another account, not even while tesseld restarts:
#     the third review's R1): the service answers there; a port another account may bind is
#     refused at the start, and says why;
#   - a services listener outside loopback is refused (exit 2, a usage error);
#   - one user's request bodies held at once are bounded (429 past the share), on both
#     listeners together, two bodies of the most a request may send fitting; libhttp's own
#     test (test_http) holds the share against another user's;
#   - a browser's cookies by the hundred KB (set by a page on another port of the service's
#     name), up to the 740 KB Chromium keeps for a host: tesseld's 431 too_many_cookies with
#     Clear-Site-Data, a ticket not spent by it;
#   - one account's connections at once bounded (32), counted by the socket's owner (every
#     account has the same loopback addresses), others still served.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
. "$TESSEL_SRCDIR/tests/lib/term.sh"
. "$TESSEL_SRCDIR/tests/lib/jobsvc.sh"
command -v setpriv >/dev/null || missing "setpriv (util-linux) is needed"
command -v ss >/dev/null || missing "ss (iproute2) is needed"
getent passwd daemon >/dev/null || missing "no 'daemon' account (the other account)"
jobsvc_daemon
PORT=18475
as_nobody() { setpriv --reuid nobody --regid nogroup --clear-groups "$@"; }
as_daemon() { setpriv --reuid daemon --regid daemon --clear-groups "$@"; }
as_root() { "$@"; }
# pcurl AS CURL-ARG...: curl run as AS (as_nobody, as_daemon, as_root); its answer, headers and
# body, in $TD/raw (written by this shell: the other accounts cannot write in $TD), the status
# in $CODE, the body alone in $TD/body, a tessel-svc cookie set in $SETC.
pcurl() {
    _as=$1
    shift
    $_as curl -s -i --max-time 60 -H 'Expect:' -w '\n%{http_code}' "$@" >"$TD/raw" 2>/dev/null
    CODE=$(tail -n 1 "$TD/raw")
    sed '1,/^\r\?$/d' "$TD/raw" | sed '$d' >"$TD/body"
    SETC=$(sed -n 's/^Set-Cookie: tessel-svc=\([^;]*\);.*/\1/p' "$TD/raw" | tr -d '\r')
}
NBD="$TD/nb" # where nobody's processes write
mkdir -p "$NBD"
chown nobody "$NBD"

nbtessel run -d --service web=$PORT --shell "echo alice-secret >secret.txt; exec /usr/bin/python3 -m http.server --bind 127.0.0.1 $PORT" >"$TD/o" 2>/dev/null
J=$(cat "$TD/o")
wait_for '[ "$(api GET /v1/jobs/$J "" "$NB"; jget .state)" = running ]'
wait_for "[ -S '$TD/data/jobsvc/j$J-web.sock' ]"
wait_for '[ "$(curl -s -o /dev/null -w "%{http_code}" --unix-socket "$TD/data/jobsvc/j$J-web.sock" http://x/secret.txt)" = 200 ]'

# --- tickets -----------------------------------------------------------------------------------
svc_ticket "$J" web
is "$CODE" 201 "nobody's ticket for job $J's service"
pcurl as_daemon "$URL"
is "$CODE" 403 "the ticket URL redeemed by a process of another account (daemon): 403"
grep -q "this session is nobody's, and this connection comes from a process of uid $(id -u daemon) (daemon)" "$TD/body"
ok $? "... saying whose session it is and whose connection"
is "$SETC" "" "... and no cookie"
svc_cookie "$URL"
is "$CODE $COOKIE" "403 " "the same URL then, from nobody's own browser (root here): spent (403, no cookie)"
svc_ticket "$J" web
pcurl as_nobody "$URL"
C=$SETC
is "$CODE" 200 "a new ticket redeemed by a process of nobody's account: 200"
[ -n "$C" ]; ok $? "... with the session's cookie"

# --- the cookie ---------------------------------------------------------------------------------
U="$(svc_url "$J" web)/secret.txt"
pcurl as_nobody -H "Cookie: tessel-svc=$C" "$U"
is "$CODE $(cat "$TD/body")" "200 alice-secret" "the cookie from nobody's account: the service"
pcurl as_root -H "Cookie: tessel-svc=$C" "$U"
is "$CODE $(cat "$TD/body")" "200 alice-secret" "... from root's: the service (root may anything)"
pcurl as_daemon -H "Cookie: tessel-svc=$C" "$U"
is "$CODE" 403 "the same cookie replayed by a process of another account (as a listener of theirs that a browser sent it to would): 403"
grep -q '"code":"forbidden"' "$TD/body" && ! grep -q alice-secret "$TD/raw"
ok $? "... forbidden, nothing of the service's"
# A body from there is refused from its headers: 16 MiB declared, the answer before it is sent.
head -c 16000000 /dev/zero >"$TD/zero16"
chmod 644 "$TD/zero16"
# (Expect: 100-continue: curl sends the body only after a 100, so it reads the answer that
# comes instead rather than a reset of a connection closed with its body unread.)
CODE=$(as_daemon curl -s -o /dev/null -w '%{http_code}' --max-time 60 --expect100-timeout 30 \
    -H 'Expect: 100-continue' -H "Cookie: tessel-svc=$C" -H "Origin: $(svc_url "$J" web)" -X PUT \
    --data-binary @"$TD/zero16" "$(svc_url "$J" web)/up")
is "$CODE" 403 "a PUT with that cookie from another account: 403 (refused before its body)"
svc_ws "$J" web "" "$C"
[ "$CODE" != 403 ]; ok $? "a WebSocket handshake from root with the cookie passes the door (the service answers: $CODE)"
pcurl as_daemon -H "Cookie: tessel-svc=$C" \
    -H 'Upgrade: websocket' -H 'Connection: Upgrade' -H 'Sec-WebSocket-Version: 13' \
    -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' "$(svc_url "$J" web)/"
is "$CODE" 403 "... from another account: 403"

# --- [::1] --------------------------------------------------------------------------------------
ss -ltnH "sport = :$SVC_PORT" >"$TD/ss"
grep -q "127.0.0.1:$SVC_PORT" "$TD/ss" && grep -q "\[::1\]:$SVC_PORT" "$TD/ss"
ok $? "tesseld listens on 127.0.0.1:$SVC_PORT and [::1]:$SVC_PORT"
# bind_as WHO ADDR PORT: the errno of WHO's bind there (0: it could)
bind_as() {
    $1 /usr/bin/python3 -c "
import socket, sys
s = socket.socket(socket.AF_INET6 if ':' in '$2' else socket.AF_INET)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    s.bind(('$2', $3)); s.listen(1)
except OSError as e:
    print(e.errno); sys.exit(0)
print(0)" 2>&1
}
is "$(bind_as as_nobody ::1 "$SVC_PORT") $(bind_as as_nobody 127.0.0.1 "$SVC_PORT")" "13 13" \
    "a user cannot listen on [::1]:$SVC_PORT nor 127.0.0.1:$SVC_PORT (EACCES: a port only root may bind)"
is "$(bind_as as_root ::1 "$SVC_PORT")" 98 "... and tesseld holds [::1]:$SVC_PORT (root's bind: EADDRINUSE)"
pcurl as_nobody -6 -H "Cookie: tessel-svc=$C" "$U"
is "$CODE $(cat "$TD/body")" "200 alice-secret" "the service over [::1] (curl -6), the cookie from nobody's account"
pcurl as_daemon -6 -H "Cookie: tessel-svc=$C" "$U"
is "$CODE" 403 "... and from another account: 403"

# A port any account may bind: refused at the start, saying why.
P2=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$TD/d2"
timeout 60 "$TESSEL_BUILD/bin/tesseld" --data-dir "$TD/d2" --listen 127.0.0.1:0 --socket "$TD/d2.sock" \
    --fake-gpus 1xT4:8G --no-cgroups --services-listen "127.0.0.1:$P2" >/dev/null 2>"$TD/e"
RC=$?
[ "$RC" -ne 0 ] && [ "$RC" -ne 124 ]; ok $? "tesseld with --services-listen 127.0.0.1:$P2 (a port any account may bind): does not start (exit $RC)"
grep -q "port $P2: the services need a port only root may bind" "$TD/e"; ok $? "... and says why"
# A port browsers refuse (Chromium's restricted ports): refused at the start, saying why.
timeout 60 "$TESSEL_BUILD/bin/tesseld" --data-dir "$TD/d2" --listen 127.0.0.1:0 --socket "$TD/d2.sock" \
    --fake-gpus 1xT4:8G --no-cgroups --services-listen "127.0.0.1:601" >/dev/null 2>"$TD/e"
RC=$?
[ "$RC" -ne 0 ] && [ "$RC" -ne 124 ]; ok $? "tesseld with --services-listen 127.0.0.1:601 (a port browsers refuse): does not start (exit $RC)"
grep -q "port 601: browsers refuse to fetch from it" "$TD/e"; ok $? "... and says why: $(grep -o 'port 601: [^;]*' "$TD/e" | head -n 1)"

# --- outside loopback ---------------------------------------------------------------------------
for a in 0.0.0.0:7471 10.1.2.3:7471; do
    "$TESSEL_BUILD/bin/tesseld" --services-listen "$a" --personal --data-dir "$TD/nodata" >/dev/null 2>"$TD/e"
    is "$?" 2 "tesseld --services-listen $a: refused (exit 2, a usage error)"
    grep -q "loopback" "$TD/e"; ok $? "... saying it must be a loopback address"
done

# --- one user's bodies at once ------------------------------------------------------------------
# Two bodies of 16 MiB (the most a request may send) held at once by nobody, each sent but its
# last byte, one over 127.0.0.1 and one over [::1]: both fit the user's share (two such bodies),
# counted together; a third is answered 429 bodies_busy; once they are done, a body passes.
SVC_UP="$(svc_url "$J" web)/up"
HELD=
for k in 1 2; do
    as_nobody /usr/bin/python3 - "$SVC_PORT" "$J" "$C" "$NBD/held$k" "$k" <<'PY' &
import os, socket, sys, time
port, job, cookie, flag = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
s = socket.create_connection(("127.0.0.1" if sys.argv[5] == "1" else "::1", port))
n = 16 << 20
s.sendall(("PUT /up HTTP/1.1\r\nHost: j%s-web.localhost:%d\r\nCookie: tessel-svc=%s\r\n"
           "Origin: http://j%s-web.localhost:%d\r\nContent-Length: %d\r\n\r\n"
           % (job, port, cookie, job, port, n)).encode())
s.sendall(b"x" * (n - 1))
s.settimeout(0.5)
try:
    s.recv(1)  # an answer now would be a refusal: say so
    open(flag, "w").write("refused")
except socket.timeout:
    open(flag, "w").write("held")
for _ in range(600):  # until the test says stop (at most a minute)
    if os.path.exists(flag + ".stop"):
        break
    time.sleep(0.1)
PY
    HELD="$HELD $!"
done
wait_for "[ -s '$NBD/held1' ] && [ -s '$NBD/held2' ]"
is "$(cat "$NBD/held1") $(cat "$NBD/held2")" "held held" "two bodies of 16 MiB of nobody's held at once, over IPv4 and IPv6"
head -c 15000000 /dev/zero >"$TD/zero15"
chmod 644 "$TD/zero15"
pcurl as_nobody -H "Cookie: tessel-svc=$C" -H "Origin: $(svc_url "$J" web)" -X PUT --data-binary @"$TD/zero15" "$SVC_UP"
is "$CODE $(jq -r .error.code "$TD/body" 2>/dev/null)" "429 bodies_busy" "a third body of nobody's while two are held: 429 bodies_busy (the user's share, both listeners together)"
touch "$NBD/held1.stop" "$NBD/held2.stop"
# shellcheck disable=SC2086
wait $HELD
# (tesseld lets a held body go once it sees its connection closed, and the service's threads
# end theirs: a few tries.)
for _ in 1 2 3 4 5 6 7 8 9 10; do
    pcurl as_nobody -H "Cookie: tessel-svc=$C" -H "Origin: $(svc_url "$J" web)" -X PUT --data-binary "$(head -c 1024 /dev/zero | tr '\0' x)" "$SVC_UP"
    [ "$CODE" = 501 ] && break
    diag "try: $CODE $(head -c 300 "$TD/body")"
    sleep 1
done
[ "$CODE" = 501 ] || diag "$(cat "$TD/raw")"
is "$CODE" 501 "once they are done, nobody's body goes through again (python's http.server answers PUT with 501)"

# --- a cookie bomb ------------------------------------------------------------------------------
BOMB=$(/usr/bin/python3 -c 'print("; ".join("b%d=%s" % (i, "x" * 4000) for i in range(25)))')
pcurl as_nobody -H "Cookie: $BOMB; tessel-svc=$C" "$U"
is "$CODE $(jq -r .error.code "$TD/body" 2>/dev/null)" "431 too_many_cookies" "100 KB of cookies: 431 too_many_cookies (tesseld's, not libmicrohttpd's)"
grep -qi '^Clear-Site-Data: "cookies"' "$TD/raw"; ok $? "... with Clear-Site-Data: \"cookies\" (that host's cookies cleared)"
svc_ticket "$J" web
pcurl as_nobody -H "Cookie: $BOMB" "$URL"
is "$CODE" 431 "a ticket URL with them: 431 as well"
pcurl as_nobody "$URL"
is "$CODE" 200 "... and the same ticket URL once they are gone: 200 (it was not spent)"
# As many as Chromium keeps for one host: 180 cookies of 4 KB (about 740 KB).
BIG=$(/usr/bin/python3 -c 'print("; ".join("c%d=%s" % (i, "y" * 4090) for i in range(180)))')
printf 'Cookie: %s\r\n' "$BIG" >"$TD/bigcookie"
chmod 644 "$TD/bigcookie"
pcurl as_nobody -H @"$TD/bigcookie" "$U"
is "$CODE $(jq -r .error.code "$TD/body" 2>/dev/null)" "431 too_many_cookies" "$(wc -c <"$TD/bigcookie") bytes of cookies (180 of 4 KB): tesseld's own 431 too_many_cookies, with Clear-Site-Data"

# --- one account's connections ----------------------------------------------------------------
# nobody opens 40 connections and sends nothing: 32 are kept, the 8 past them closed at once; root
# (another account) is served meanwhile.
as_nobody /usr/bin/python3 - "$SVC_PORT" "$NBD/conns" <<'PY' &
import os, select, socket, sys, time
port, out = int(sys.argv[1]), sys.argv[2]
socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(40)]
# Those the server closes are readable (at their end) within a few seconds; the others are not,
# all watched at once (well within the listener's --request-timeout).
closed, end = set(), time.time() + 3
while time.time() < end:
    r, _, _ = select.select([s for s in socks if s not in closed], [], [], max(0, end - time.time()))
    for s in r:
        if s.recv(1) == b"":
            closed.add(s)
closed = len(closed)
open(out, "w").write("%d" % closed)
for _ in range(300):  # held until the test says stop
    if os.path.exists(out + ".stop"):
        break
    time.sleep(0.1)
PY
CONNS=$!
wait_for "[ -s '$NBD/conns' ]"
is "$(cat "$NBD/conns")" 8 "nobody's 40 connections at once: the 8 past 32 closed at once"
pcurl as_root -H "Cookie: tessel-svc=$C" "$U"
is "$CODE" 200 "... while root (another account) is served"
touch "$NBD/conns.stop"
wait "$CONNS"
done_testing
