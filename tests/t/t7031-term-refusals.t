#!/bin/sh
# t7031-term-refusals.t - a job's terminal against wrong and hostile use (docs/terminal.md):
#   - submissions: tty must be a boolean; with an image it is the image that is checked (a
#     container job has a terminal too: t7038);
#   - GET /v1/jobs/ID/attach: 401 without a token; a job of another user is 404 to one who
#     cannot see it and 403 to an admin (the owner only); 409 no_terminal for a job without
#     one, not_started for a pending one, finished for an ended one; 426 for a request that is
#     not a WebSocket handshake (no Upgrade, a bad Sec-WebSocket-Key, version 8);
#   - the CLI says each refusal in one line and exits 1;
#   - stdin not a terminal: piped lines reach the job, their end is one Ctrl-D (sh ends, 0);
#   - a job flooding its terminal: 15,000,000 bytes all reach an attached client, in order
#     (the job waits for it); with nobody attached the job never waits (30 MB, it ends);
#   - a job that closes its terminal: what it wrote before comes, its status (4) too.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
. "$TESSEL_SRCDIR/tests/lib/term.sh"
term_daemon

api POST /v1/jobs "{\"argv\":[\"true\"],\"tty\":\"yes\",\"cwd\":\"$W\"}" "$NB"
is "$CODE $(jget .error.field)" "400 tty" "tty must be a boolean"
api POST /v1/jobs "{\"argv\":[\"true\"],\"tty\":true,\"image\":\"x:1\",\"cwd\":\"$W\"}" "$NB"
is "$CODE $(jget .error.field)" "422 image" \
    "tty with an image: not refused for tty; the image (not in the store) is: 422"

T=$(nbjob "{\"argv\":[\"sleep\",\"300\"],\"tty\":true,\"cwd\":\"$W\"}")
P=$(nbjob "{\"argv\":[\"sleep\",\"300\"],\"cwd\":\"$W\"}")
wait_for '[ "$(api GET /v1/jobs/$T "" "$NB"; jget .state)" = running ]'
wait_for '[ "$(api GET /v1/jobs/$P "" "$NB"; jget .state)" = running ]'
KEY='dGhlIHNhbXBsZSBub25jZQ=='
ws() { # ws ID TOKEN [KEY] [VERSION]: the handshake with curl; status in $CODE, headers in $TD/h
    set -- "$1" "$2" "${3:-$KEY}" "${4:-13}"
    CODE=$(curl -s -o "$TD/out" -D "$TD/h" -w '%{http_code}' --max-time 5 \
        ${2:+-H "Authorization: Bearer $2"} -H 'Upgrade: websocket' -H 'Connection: Upgrade' \
        -H "Sec-WebSocket-Version: $4" -H "Sec-WebSocket-Key: $3" "$TD_URL/v1/jobs/$1/attach")
}
ws "$T" ""
is "$CODE" 401 "no token: 401"
ws "$T" "$BOB"
is "$CODE $(jget .error.code)" "404 not_found" "another user who cannot see the job: 404"
ws "$T" "$TD_ADMIN"
is "$CODE $(jget .error.code)" "403 forbidden" "an admin: 403, the owner only types into a job"
ws "$P" "$NB"
is "$CODE $(jget .error.code)" "409 no_terminal" "a job without a terminal: 409 no_terminal"
ws "$T" "$NB" 'short'
is "$CODE $(jget .error.code)" "426 upgrade_required" "a bad Sec-WebSocket-Key: 426"
ws "$T" "$NB" "$KEY" 8
is "$CODE $(grep -i '^Sec-WebSocket-Version:' "$TD/h" | tr -d '\r')" \
    "426 Sec-WebSocket-Version: 13" "version 8: 426 naming version 13"
api GET "/v1/jobs/$T/attach" "" "$NB"
is "$CODE" 426 "a plain GET: 426"
ws "$T" "$NB"
is "$CODE $(grep -i '^Sec-WebSocket-Accept:' "$TD/h" | tr -d '\r')" \
    "101 Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" \
    "the owner's handshake: 101 with RFC 6455's accept value"

TESSEL_TOKEN="$TD_ADMIN" tcli attach "$T"
is "$RC" 1 "tessel attach of another user's job exits 1"
one_line_error && grep -q "only its owner" "$TD/e"
ok $? "... saying that only its owner may"
(cd "$W" && TESSEL_TOKEN="$NB" tcli attach "$P")
is "$RC" 1 "tessel attach of a job without a terminal exits 1"
one_line_error && grep -q "has no terminal" "$TD/e"
ok $? "... saying it has none"
H=$(nbjob "{\"argv\":[\"true\"],\"tty\":true,\"cwd\":\"$W\",\"after\":\"$P:ok\"}")
ws "$H" "$NB"
is "$CODE $(jget .error.code)" "409 not_started" "a pending job: 409 not_started"
api POST "/v1/jobs/$T/cancel" "" "$NB"
api POST "/v1/jobs/$P/cancel" "" "$NB"
wait_for '[ "$(api GET /v1/jobs/$T "" "$NB"; jget .state)" = cancelled ]'
TESSEL_TOKEN="$NB" tcli attach "$T"
is "$RC" 1 "tessel attach of a finished job exits 1"
one_line_error && grep -q "is not running" "$TD/e"
ok $? "... saying it is not running"
ws "$T" "$NB"
is "$CODE $(jget .error.code)" "409 finished" "the API: 409 finished"

# stdin not a terminal.
printf 'echo piped-$((6*7))\n' | nbtessel run --quiet -it -- sh >"$TD/piped" 2>"$TD/piped.err"
is "$?" 0 "piped into run -it: sh ends at the end of the input (one Ctrl-D), status 0"
grep -q 'piped-42' "$TD/piped"
ok $? "the piped line reached the job and its output came back"

# A flood, attached from the start: every byte comes, the job waits for the client.
nbtessel run --quiet -it -- sh -c 'sleep 1; head -c 15000000 /dev/zero | tr "\0" y; echo; echo END' \
    </dev/null >"$TD/flood" 2>"$TD/flood.err"
is "$?" 0 "a job writing 15,000,000 bytes to its terminal ends with 0"
is "$(tr -cd y <"$TD/flood" | wc -c)" 15000000 "all 15,000,000 bytes reached the client"
tail -c 20 "$TD/flood" | grep -q END
ok $? "... and what it wrote after them"

# A flood with nobody attached: the job never waits.
F=$(nbjob "{\"argv\":[\"sh\",\"-c\",\"head -c 30000000 /dev/zero | tr '\\\\\\\\0' z; echo; echo END\"],\"tty\":true,\"cwd\":\"$W\"}")
wait_for '[ "$(api GET /v1/jobs/$F "" "$NB"; jget .state)" = succeeded ]'
is "$(jget .state)" succeeded "with no client, a job writing 30 MB to its terminal ends (never waits)"

# A job that closes its terminal.
nbtessel run --quiet -it -- sh -c 'echo bye; exec >&- 2>&- <&-; sleep 1; exit 4' \
    </dev/null >"$TD/closed" 2>&1
is "$?" 4 "a job that closes its terminal: its status (4) still comes"
grep -q bye "$TD/closed"
ok $? "... after what it wrote before"
td_stop
ok $? "tesseld stops cleanly"
done_testing
