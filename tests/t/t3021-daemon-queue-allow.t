#!/bin/sh
# t3021-daemon-queue-allow.t - who may submit to a queue: users, Unix groups of the account,
# roles, set by admins (API and `tessel queues`), kept in the store across a restart.  Local
# accounts submit through the socket: one not admitted gets 403 naming the queue and nothing
# is stored; a member of an admitted group, an admitted user or role gets in; a child queue
# admits no one its parent refuses; a user cannot open a queue for themself; bad lists are
# refused (400, the field named) and change nothing; a queue with no list is open to all.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
. "$TESSEL_SRCDIR/tests/lib/local.sh"
command -v curl >/dev/null && command -v jq >/dev/null
need $? "curl and jq"
[ "$(id -u)" = 0 ]
need $? "root (tesseld runs jobs as local accounts; the test switches to them)"
local_account tslsa tslgrp && local_account tslsb && local_account tslsc
need $? "useradd/groupadd to create the accounts tslsa (in group tslgrp), tslsb, tslsc"

td_setup
chmod 755 "$TD"
td_start --fake-gpus 1xT4:16G --no-cgroups
need $? "a tesseld that starts"
cli_setup

njobs() {
    api GET "/v1/jobs?all=1&limit=1000"
    jget '.jobs | length'
}
submit() { # submit USER QUEUE: status and owner in $CODE, $(jget .user)
    sock_api "$1" POST /v1/jobs "{\"argv\":[\"true\"],\"queue\":\"$2\"}"
}

api POST /v1/queues '{"name":"gpu-a","allow":{"users":["tslsb"]}}'
is "$CODE $(jq -c .allow "$TD/out")" '201 {"users":["tslsb"],"groups":[],"roles":[]}' \
    "an admin creates queue gpu-a open to tslsb alone"
api GET /v1/queues/default
is "$(jq -c .allow "$TD/out")" '{"users":[],"groups":[],"roles":[]}' "the default queue has no list: open"

N0=$(njobs)
submit tslsa gpu-a
is "$CODE $(jget .error.code) $(jget .error.field)" "403 forbidden queue" \
    "tslsa (not admitted) submits to gpu-a through the socket: 403"
is "$(jget .error.message)" "you ('tslsa') may not submit to queue 'gpu-a' (it admits users tslsb)" \
    "the message names the queue and who it admits"
is "$(njobs)" "$N0" "nothing was stored"
submit tslsa default
is "$CODE $(jget .user)" "201 tslsa" "tslsa may still use the default queue"
submit tslsb gpu-a
is "$CODE $(jget .user) $(jget .queue)" "201 tslsb gpu-a" "tslsb (admitted by name) gets in"

# --- groups -------------------------------------------------------------------------------------
api PATCH /v1/queues/gpu-a '{"allow":{"groups":["tslgrp"]}}'
is "$CODE $(jq -c .allow "$TD/out")" '200 {"users":["tslsb"],"groups":["tslgrp"],"roles":[]}' \
    "PATCH allow.groups adds a group list, keeps the user list"
submit tslsa gpu-a
is "$CODE $(jget .user)" "201 tslsa" "tslsa, a member of Unix group tslgrp, now gets in"
N1=$(njobs)
submit tslsc gpu-a
is "$CODE $(jget .error.code)" "403 forbidden" "tslsc (no user, group or role of the lists): 403"
is "$(njobs)" "$N1" "nothing stored"

# --- roles ----------------------------------------------------------------------------------------
api PATCH /v1/queues/gpu-a '{"allow":{"users":[],"groups":null,"roles":["admin"]}}'
is "$CODE $(jq -c .allow "$TD/out")" '200 {"users":[],"groups":[],"roles":["admin"]}' "admins only"
submit tslsb gpu-a
is "$CODE" "403" "tslsb (role user) is refused now"
api POST /v1/jobs '{"argv":["true"],"queue":"gpu-a"}'
is "$CODE $(jget .user)" "201 admin" "the admin (token) gets in"
sock_api root POST /v1/jobs '{"argv":["true"],"queue":"gpu-a"}'
is "$CODE $(jget .user)" "201 admin" "root on the socket (the admin) gets in"

# --- a user cannot open a queue, bad lists change nothing ---------------------------------------
sock_api tslsb PATCH /v1/queues/gpu-a '{"allow":null}'
is "$CODE $(jget .error.code)" "403 forbidden" "tslsb cannot open gpu-a for themself"
api PATCH /v1/queues/gpu-a '{"allow":{"users":["tslsb"],"roles":["root"]}}'
is "$CODE $(jget .error.field)" "400 allow.roles" "a role other than admin and user: 400 allow.roles"
api PATCH /v1/queues/gpu-a '{"allow":{"groups":["a,b"]}}'
is "$CODE $(jget .error.field)" "400 allow.groups" "a group name with a comma: 400 allow.groups"
api PATCH /v1/queues/gpu-a '{"allow":["tslsb"]}'
is "$CODE $(jget .error.field)" "400 allow" "allow not an object: 400"
api GET /v1/queues/gpu-a
is "$(jq -c .allow "$TD/out")" '{"users":[],"groups":[],"roles":["admin"]}' "the lists are unchanged"

# --- a child queue under a restricted parent ---------------------------------------------------
api POST /v1/queues '{"name":"lab","allow":{"users":["tslsb"]}}'
api POST /v1/queues '{"name":"lab-x","parent":"lab"}'
is "$CODE $(jq -c .allow "$TD/out")" '201 {"users":[],"groups":[],"roles":[]}' "lab-x (no list of its own) under lab"
submit tslsa lab-x
is "$CODE" "403" "tslsa is refused in lab-x: its parent lab does not admit tslsa"
is "$(jget .error.message)" "you ('tslsa') may not submit to queue 'lab-x': it is under queue 'lab', which admits users tslsb" \
    "and told which queue refuses"
submit tslsb lab-x
is "$CODE $(jget .queue)" "201 lab-x" "tslsb, admitted by lab, gets into lab-x"

# --- kept across a restart ------------------------------------------------------------------------
td_stop
ok $? "tesseld stops cleanly"
td_start --fake-gpus 1xT4:16G --no-cgroups
api GET /v1/queues/gpu-a
is "$(jq -c .allow "$TD/out")" '{"users":[],"groups":[],"roles":["admin"]}' "after a restart gpu-a still admits admins only"
submit tslsb gpu-a
is "$CODE" "403" "and still refuses tslsb"

# --- the CLI ------------------------------------------------------------------------------------
export TESSEL_URL="$TD_URL" TESSEL_TOKEN="$TD_ADMIN"
tcli queues set gpu-a --allow-users tslsa,tslsb --allow-roles none
is "$RC $(out)" "0 queue gpu-a changed" "tessel queues set --allow-users tslsa,tslsb --allow-roles none"
api GET /v1/queues/gpu-a
is "$(jq -c .allow "$TD/out")" '{"users":["tslsa","tslsb"],"groups":[],"roles":[]}' "the API shows the new lists"
tcli queues
is "$(grep '^gpu-a ' "$TD/o" | awk '{print $NF}')" "u:tslsa,tslsb" "tessel queues: ALLOWED u:tslsa,tslsb"
is "$(grep '^default ' "$TD/o" | awk '{print $NF}')" "all" "and 'all' for the default queue"
tcli queues add gpu-b --allow-groups tslgrp
is "$RC" "0" "tessel queues add gpu-b --allow-groups tslgrp"
api GET /v1/queues/gpu-b
is "$(jq -c .allow "$TD/out")" '{"users":[],"groups":["tslgrp"],"roles":[]}' "created with the group list"
tcli queues set gpu-b --allow-roles root
is "$RC" "1" "--allow-roles root: refused"
one_line_error
ok $? "in one line"
tcli queues set gpu-b --allow-users 'a,,b'
is "$RC" "2" "--allow-users a,,b: a usage error"
CLI="XDG_RUNTIME_DIR=/nonexistent HOME=/nonexistent TESSEL_CONFIG=/nonexistent/c TESSEL_URL=unix:$TD_SOCK $TESSEL_BUILD/bin/tessel"
as tslsc "$CLI run -d --queue gpu-a -- true" >"$TD/o" 2>"$TD/e"
is "$?" "1" "tslsc: tessel run --queue gpu-a through the socket fails"
grep -q "may not submit to queue 'gpu-a'" "$TD/e"
ok $? "saying that tslsc may not submit to gpu-a"
as tslsa "$CLI run --queue gpu-a -- id -un" >"$TD/o" 2>"$TD/e"
is "$? $(cat "$TD/o")" "0 tslsa" "tslsa (admitted) runs a job in gpu-a through the socket"
tcli queues set gpu-a --open
api GET /v1/queues/gpu-a
is "$RC $(jq -c .allow "$TD/out")" '0 {"users":[],"groups":[],"roles":[]}' "tessel queues set gpu-a --open removes every list"
as tslsc "$CLI run --queue gpu-a -- id -un" >"$TD/o" 2>"$TD/e"
is "$? $(cat "$TD/o")" "0 tslsc" "then tslsc gets in too"
td_stop
ok $? "tesseld stops cleanly"
done_testing
