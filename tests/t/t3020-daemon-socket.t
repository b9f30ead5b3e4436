#!/bin/sh
# t3020-daemon-socket.t - tesseld's local socket: the kernel's peer credentials say who calls.
# A local account calls without a token and is identified as itself (created as a Tessel user
# with role user at its first call); its jobs are its own and run as its account.  It cannot
# act as another: headers naming another user are ignored, another user's token (or the
# admin's) on the socket is refused with 403, another's job cannot be cancelled; nothing of
# theirs is stored.  Root on the socket is the admin.  With --local-users existing an account
# without a Tessel user is refused and nothing is created.  With --no-listen the socket alone
# serves, and `tessel` finds it by itself ($XDG_RUNTIME_DIR/tessel/tesseld.sock).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/local.sh"
command -v curl >/dev/null && command -v jq >/dev/null && command -v ss >/dev/null
need $? "curl, jq and ss"
[ "$(id -u)" = 0 ]
need $? "root (tesseld runs jobs as local accounts; the test switches to them)"
local_account tslsa && local_account tslsb && local_account tslsc
need $? "useradd to create the accounts tslsa, tslsb, tslsc"
A_UID=$(id -u tslsa)

td_setup
chmod 755 "$TD"
td_start --fake-gpus 1xT4:16G --no-cgroups
need $? "a tesseld that starts"
is "$(stat -c '%F %a' "$TD_SOCK")" "socket 666" "the socket is 0666: every local user may connect"

# --- a user is identified as themself, without a token ---------------------------------------
sock_api tslsa GET /v1/whoami
is "$CODE $(jget '[.user, .role, .auth, .uid] | join(" ")')" "200 tslsa user socket $A_UID" \
    "tslsa on the socket, no token: user tslsa, role user, identified by uid $A_UID"
api GET /v1/users/tslsa
is "$CODE $(jget .role)" "200 user" "tslsa was created as a Tessel user with role user"

sock_api tslsa POST /v1/jobs '{"argv":["sh","-c","id -u; id -un"]}'
is "$CODE $(jget .user)" "201 tslsa" "tslsa submits through the socket: the job is tslsa's"
JA=$(jget .id)
wait_for '[ "$(job_state $JA)" = succeeded ]'
ok $? "tslsa's job succeeds"
sock_api tslsa GET "/v1/jobs/$JA/logs"
is "$(sed -n 1p "$TD/out") $(sed -n 2p "$TD/out")" "$A_UID tslsa" \
    "and runs as tslsa's account (uid $A_UID)"

# --- impersonation attempts -------------------------------------------------------------------
api POST /v1/users '{"name":"tslsb"}'
api POST /v1/tokens '{"user":"tslsb"}'
TB=$(jget .token)
sock_api tslsb POST /v1/jobs '{"argv":["sleep","60"]}'
JB=$(jget .id)
is "$CODE $(jget .user)" "201 tslsb" "tslsb has a job of its own"

api GET /v1/jobs?all=1
N0=$(jget '.jobs | length')
sock_api tslsa POST /v1/jobs '{"argv":["true"]}' "X-Tessel-User: tslsb" "X-Remote-User: tslsb" \
    "Remote-User: tslsb" "X-Forwarded-User: tslsb"
is "$CODE $(jget .user)" "201 tslsa" "headers naming tslsb change nothing: the job is tslsa's"
JH=$(jget .id)
api GET "/v1/jobs/$JH"
is "$(jget .user)" "tslsa" "and the store says tslsa"

sock_api tslsa POST /v1/jobs '{"argv":["true"]}' "Authorization: Bearer $TB"
is "$CODE $(jget .error.code)" "403 forbidden" "tslsa with tslsb's token on the socket: 403"
jget .error.message | grep -q "belongs to user 'tslsb', but on the local socket you are 'tslsa'"
ok $? "the message names both users"
sock_api tslsa GET /v1/users "" "Authorization: Bearer $TD_ADMIN"
is "$CODE $(jget .error.code)" "403 forbidden" "tslsa with the admin's token on the socket: 403"
sock_api tslsa GET /v1/users
is "$CODE" "403" "tslsa on the socket is no admin: the user list is refused"
sock_api tslsa POST "/v1/jobs/$JB/cancel"
is "$CODE $(jget .error.code)" "404 not_found" "tslsa cannot cancel tslsb's job (not even see it)"
api GET /v1/jobs?all=1
is "$(jget '.jobs | length')" "$((N0 + 1))" \
    "nothing was stored for the refused requests (one job more: the one with the headers)"
is "$(jget "[.jobs[] | select(.user == \"tslsb\")] | length")" "1" "tslsb still has one job"
is "$(job_state "$JB")" "running" "tslsb's job was not cancelled"
sock_api tslsb POST /v1/jobs '{"argv":["true"]}' "Authorization: Bearer $TB"
is "$CODE $(jget .user)" "201 tslsb" "a token of the caller's own user is accepted on the socket"

# --- root is the admin --------------------------------------------------------------------------
sock_api root GET /v1/whoami
is "$CODE $(jget '[.user, .role, .uid] | join(" ")')" "200 admin admin 0" "root on the socket is admin"
sock_api root POST "/v1/jobs/$JB/cancel"
is "$CODE" "200" "and may cancel tslsb's job"

# --- --local-users existing -------------------------------------------------------------------
td_stop
ok $? "tesseld stops cleanly"
[ ! -e "$TD_SOCK" ]
ok $? "and removes its socket"
td_start --fake-gpus 1xT4:16G --no-cgroups --local-users existing
api GET /v1/users
NU=$(jget '.users | length')
sock_api tslsc GET /v1/whoami
is "$CODE $(jget .error.code)" "403 forbidden" "--local-users existing: an account with no Tessel user is refused"
is "$(jget .error.message)" "no Tessel user 'tslsc': ask an admin to add it (tessel users add tslsc)" \
    "and told what to do"
api GET /v1/users
is "$(jget '.users | length')" "$NU" "no user was created"
sock_api tslsa GET /v1/whoami
is "$CODE $(jget .user)" "200 tslsa" "an existing user still gets in"
td_stop
ok $? "tesseld stops cleanly"

# --- the socket alone (--no-listen), found by the CLI -------------------------------------------
mkdir -p "$TD/run"
chmod 755 "$TD/run"
rm -f "$TD/data/tesseld.addr"
"$TESSEL_BUILD/bin/tesseld" --data-dir "$TD/data" --no-listen --socket "$TD/run/tessel/tesseld.sock" \
    --fake-gpus 1xT4:16G --no-cgroups >>"$TD/tesseld.log" 2>&1 &
TD_PID=$!
TD_PIDS="$TD_PIDS $TD_PID"
TD_SOCK="$TD/run/tessel/tesseld.sock"
wait_for '[ -S "$TD_SOCK" ] || ! kill -0 $TD_PID'
is "$(stat -c '%a' "$TD/run/tessel")" "755" "the socket's directory is created 0755"
grep "listening on" "$TD/tesseld.log" | tail -n 1 | grep -q "listening on unix:$TD_SOCK"
ok $? "--no-listen: tesseld says it listens on the socket alone"
[ ! -e "$TD/data/tesseld.addr" ]
ok $? "and writes no TCP address"
is "$(ss -Hltnp | grep -c "pid=$TD_PID,") $(ss -Hlxp | grep -c "pid=$TD_PID,")" "0 1" \
    "ss: tesseld has no TCP listening socket and one Unix one"
CLI="XDG_RUNTIME_DIR=$TD/run HOME=/nonexistent TESSEL_CONFIG=/nonexistent/config $TESSEL_BUILD/bin/tessel"
is "$(as tslsa "$CLI whoami" 2>&1)" "tslsa (user) at unix:$TD_SOCK" \
    "tessel finds the socket by itself, no token: tslsa"
is "$(as tslsa "$CLI run -- id -un" 2>&1)" "tslsa" "tessel run through the socket runs as tslsa"
is "$(as tslsb "$CLI ps -a --json" | jq -r '[.jobs[].user] | unique | join(",")')" "tslsb" \
    "tslsb's job list through the socket has only tslsb's jobs"
td_stop
ok $? "tesseld stops cleanly"
done_testing
