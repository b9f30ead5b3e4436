#!/bin/sh
# t7034-term-ticket.t - a browser's way into a job's terminal (docs/terminal.md, "From a
# browser"): POST /v1/jobs/ID/terminal-ticket, then the WebSocket with ?ticket= and no token.
#   - issuing: 401 without a token; the same refusals as the handshake (another user 404, an
#     admin 403, no terminal 409, a finished job 409); a bad route 400; 16 unused tickets a
#     user at most (429);
#   - using: the ticket alone opens the terminal (101); used twice, expired (31 s later),
#     malformed, for another job, for the other route (attach/exec), sent by another user's
#     token: 401/403, and a refused ticket is spent;
#   - Origin: a foreign one (another site, "null") is refused with 403 bad_origin, with a
#     token or a ticket; tesseld's own origin and no Origin (the CLI) are let through.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
. "$TESSEL_SRCDIR/tests/lib/term.sh"
term_daemon

T=$(nbjob "{\"argv\":[\"sleep\",\"300\"],\"tty\":true,\"cwd\":\"$W\"}")
P=$(nbjob "{\"argv\":[\"sleep\",\"300\"],\"cwd\":\"$W\"}")
wait_for '[ "$(api GET /v1/jobs/$T "" "$NB"; jget .state)" = running ]'
wait_for '[ "$(api GET /v1/jobs/$P "" "$NB"; jget .state)" = running ]'
HOSTPORT=${TD_URL#http://}
KEY='dGhlIHNhbXBsZSBub25jZQ=='
# ws ROUTE ID QUERY [TOKEN] [ORIGIN]: the handshake with curl; status in $CODE, body in $TD/out.
ws() {
    CODE=$(curl -s -o "$TD/out" -w '%{http_code}' --max-time 2 \
        ${4:+-H "Authorization: Bearer $4"} ${5:+-H "Origin: $5"} -H 'Upgrade: websocket' \
        -H 'Connection: Upgrade' -H 'Sec-WebSocket-Version: 13' -H "Sec-WebSocket-Key: $KEY" \
        "$TD_URL/v1/jobs/$1/$2${3:+?$3}")
}
ticket() { # ticket ID [ROUTE] [TOKEN]: a ticket in $TK, the answer in $CODE/$TD/out
    api POST "/v1/jobs/$1/terminal-ticket" "{\"route\":\"${2:-attach}\"}" "${3:-$NB}"
    TK=$(jget .ticket)
}
EXEC_ARGV='argv=%5B%22true%22%5D'

# Issuing.
api POST "/v1/jobs/$T/terminal-ticket" '{}' ""
is "$CODE" 401 "a ticket without a token: 401"
ticket "$T" attach "$BOB"
is "$CODE $(jget .error.code)" "404 not_found" "another user who cannot see the job: 404"
ticket "$T" attach "$TD_ADMIN"
is "$CODE $(jget .error.code)" "403 forbidden" "an admin: 403 (the owner only)"
ticket "$P" attach
is "$CODE $(jget .error.code)" "409 no_terminal" "attach to a job without a terminal: 409 no_terminal"
ticket "$T" shell
is "$CODE $(jget .error.field)" "400 route" "a route other than attach or exec: 400"
ticket "$T"
is "$CODE $(jget .route) $(jget .job) $(jget .expires_in_s)" "201 attach $T 30" \
    "the owner gets a ticket: 201, for attach, this job, 30 s"
echo "$TK" | grep -Eqx '[0-9a-f]{64}'
ok $? "... of 64 hex digits"
is "$(jget .url)" "/v1/jobs/$T/attach?ticket=$TK" "... and the WebSocket's path with it"

# Using it: the ticket alone, then a second time.
ws "$T" attach "ticket=$TK"
is "$CODE" 101 "the ticket alone (no token) opens the terminal: 101"
ws "$T" attach "ticket=$TK"
is "$CODE $(jget .error.code)" "401 bad_ticket" "the same ticket a second time: 401 bad_ticket"
grep -q "one use" "$TD/out"
ok $? "... saying a ticket is good for one use"
ws "$T" attach "ticket=0123" 
is "$CODE $(jget .error.code)" "401 bad_ticket" "a malformed ticket: 401"
ws "$T" attach "ticket="
is "$CODE" 401 "an empty ticket: 401"

# Another job, the other route: refused, and spent.
ticket "$T"
ws "$P" exec "ticket=$TK&$EXEC_ARGV"
is "$CODE $(jget .error.code)" "401 bad_ticket" "a ticket for job $T used on job $P: 401"
grep -q "another job" "$TD/out"
ok $? "... saying it was issued for another job"
ws "$T" attach "ticket=$TK"
is "$CODE" 401 "... and it is spent: its own job refuses it too"
ticket "$T"
ws "$T" exec "ticket=$TK&$EXEC_ARGV"
is "$CODE $(jget .error.code)" "401 bad_ticket" "an attach ticket used for exec: 401"
ticket "$P" exec
is "$CODE $(jget .route)" "201 exec" "an exec ticket for a job without a terminal: 201"
ws "$P" exec "ticket=$TK&$EXEC_ARGV"
is "$CODE" 101 "... it opens exec (101)"

# Another user's token with the owner's ticket.
ticket "$T"
ws "$T" attach "ticket=$TK" "$BOB"
is "$CODE $(jget .error.code)" "403 forbidden" "the owner's ticket sent with bob's token: 403"
ws "$T" attach "ticket=$TK"
is "$CODE" 401 "... and spent"
ticket "$T"
ws "$T" attach "ticket=$TK" "$NB"
is "$CODE" 101 "the ticket with its own user's token: 101"

# Origin: cross-site WebSocket hijacking.
ws "$T" attach "" "$NB" "http://evil.example"
is "$CODE $(jget .error.code)" "403 bad_origin" "a token from another site's page (Origin): 403 bad_origin"
ticket "$T"
ws "$T" attach "ticket=$TK" "" "http://evil.example"
is "$CODE $(jget .error.code)" "403 bad_origin" "a ticket from another site's page: 403 bad_origin"
ws "$T" attach "ticket=$TK" "" "null"
is "$CODE $(jget .error.code)" "403 bad_origin" "Origin null (a sandboxed page, a file): 403"
ws "$T" attach "ticket=$TK" "" "http://$HOSTPORT.evil.example"
is "$CODE" 403 "an origin that only begins with tesseld's: 403"
ws "$P" exec "$EXEC_ARGV" "$NB" "http://evil.example"
is "$CODE $(jget .error.code)" "403 bad_origin" "exec from another site's page: 403 bad_origin"
ws "$T" attach "ticket=$TK" "" "http://$HOSTPORT"
is "$CODE" 101 "tesseld's own origin (the console's page): 101"

# At most 16 unused tickets a user (the first kept to see it expire).
ticket "$T"
OLD=$TK
n=1
while [ $n -lt 16 ]; do ticket "$T"; n=$((n + 1)); done
is "$CODE" 201 "16 unused tickets: each 201"
ticket "$T"
is "$CODE $(jget .error.code)" "429 too_many_tickets" "a 17th while they are unused: 429"
ticket "$P" exec "$BOB"
is "$CODE" 404 "(bob's own limit is his: he gets 404 for nobody's job, not 429)"

# Expired: a ticket 31 s old (tickets live 30 s; the limit's 16 have expired too).
sleep 31
ws "$T" attach "ticket=$OLD"
is "$CODE $(jget .error.code)" "401 bad_ticket" "a ticket 31 s old: 401 bad_ticket"
grep -q "expired" "$TD/out"
ok $? "... saying it has expired"
ticket "$T"
is "$CODE" 201 "expired tickets made room for new ones"

# A finished job.
api POST "/v1/jobs/$T/cancel" "" "$NB"
wait_for '[ "$(api GET /v1/jobs/$T "" "$NB"; jget .state)" = cancelled ]'
ws "$T" attach "ticket=$TK"
is "$CODE $(jget .error.code)" "409 finished" "a valid ticket for a job that has ended: 409 finished"
ticket "$T"
is "$CODE $(jget .error.code)" "409 finished" "no ticket for a finished job: 409"
api POST "/v1/jobs/$P/cancel" "" "$NB"
td_stop
ok $? "tesseld stops cleanly"
done_testing
