#!/bin/sh
# t3174-daemon-projects-hostile.t - projects against hostile users (docs/projects.md,
# docs/security.md): names through URLs (encoded slashes, dots, case, NUL, 300 bytes, quotes)
# find nothing and create nothing; a member cannot raise their own role, a non-member cannot add
# themself, a viewer cannot change the project, a member cannot delete it or cancel another's
# job of it; a user cannot set an admin's default; a description over 256 bytes or with an
# escape sequence is refused; the project 'default' cannot be rebound or deleted; every refusal
# leaves the store as it was.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null && command -v sqlite3 >/dev/null ||
    missing "curl, jq and sqlite3 are needed"

td_setup
td_start --fake-gpus 1xT4:16G --no-cgroups --allow-root-jobs
DB="$TD/data/tessel.db"
OWN=$(token_of olga)
MEM=$(token_of mike)
VIEW=$(token_of vera)
EVE=$(token_of eve)
api POST /v1/queues '{"name":"vq","limit":{"gpu":0}}'
api POST /v1/projects '{"name":"vision","queue":"vq","owner":"olga"}'
api POST /v1/projects/vision/members '{"user":"mike"}' "$OWN"
api POST /v1/projects/vision/members '{"user":"vera","role":"viewer"}' "$OWN"
is "$CODE" 201 "project vision: olga owner, mike member, vera viewer"
snapshot() {
    sqlite3 "$DB" "SELECT (SELECT group_concat(name) FROM projects) || '|' ||
        (SELECT group_concat(project || ':' || user || ':' || role) FROM project_members) || '|' ||
        (SELECT count(*) FROM jobs) || '|' ||
        (SELECT group_concat(name || ':' || coalesce(default_project, '-')) FROM users)"
}
S0=$(snapshot)

# --- names through URLs ------------------------------------------------------------------------
for p in '..%2Fdefault' '%2E%2E' 'VISION' 'vision%20' "$(printf 'a%.0s' $(seq 300))" \
    "vision'%20OR%20'1'%3D'1"; do
    api GET "/v1/projects/$p" "" "$EVE"
    r1=$CODE
    api GET "/v1/projects/$p"
    [ "$r1" = 404 ] && [ "$CODE" = 404 ]
    ok $? "GET /v1/projects/$(printf %.40s "$p"): 404 for a user and an admin"
done
# libmicrohttpd decodes the path before routing: a %00 would end the name there (vision%00 read
# as vision), so libhttp refuses such a URL whole; %2F is a slash (another route).  Neither
# reaches a project the caller is not in.
api GET "/v1/projects/vision%00" "" "$EVE"
is "$CODE" 400 "vision%00: 400 (an encoded NUL byte is refused in any URL)"
api GET "/v1/projects/vision%00"
is "$(jget .error.code)" invalid_url "... for an admin too: invalid_url, not the project"
api GET "/v1/projects/vision%2Fmembers" "" "$EVE"
is "$CODE" 405 "vision%2Fmembers is the members route (GET: 405), not a project"
api GET "/v1/jobs?project=vision%27%20OR%201%3D1" "" "$EVE"
is "$CODE" 400 "?project= with a quote: 400"
api POST /v1/projects "{\"name\":\"$(printf 'b%.0s' $(seq 300))\"}"
is "$CODE $(jget .error.field)" "400 name" "a name of 300 bytes: 400"
api POST /v1/projects '{"name":"caf\u00e9"}'
is "$CODE $(jget .error.field)" "400 name" "a name with a non-ASCII letter: 400"
api POST /v1/projects '{"name":"x;DROP TABLE projects"}'
is "$CODE $(jget .error.field)" "400 name" "a name with SQL in it: 400"
api POST /v1/projects '{"name":["vision"]}'
is "$CODE $(jget .error.field)" "400 name" "a name that is not a string: 400"
api POST /v1/projects/vision/members '{"user":"../olga"}' "$OWN"
is "$CODE $(jget .error.field)" "400 user" "a member name with ../: 400"
api PATCH "/v1/projects/vision/members/..%2Folga" '{"role":"viewer"}' "$OWN"
is "$CODE" 404 "a member in the URL with an encoded slash: 404"
D=$(printf 'd%.0s' $(seq 257))
api POST /v1/projects "{\"name\":\"long\",\"description\":\"$D\"}"
is "$CODE $(jget .error.field)" "400 description" "a description of 257 bytes: 400"
api POST /v1/projects '{"name":"esc","description":"\u001b]0;owned\u0007"}'
is "$CODE $(jget .error.field)" "400 description" "a description with a terminal escape: 400"
is "$(snapshot)" "$S0" "the store is as it was"

# --- rights ---------------------------------------------------------------------------------------
api PATCH /v1/projects/vision/members/mike '{"role":"owner"}' "$MEM"
is "$CODE" 403 "a member cannot make themself an owner"
api POST /v1/projects/vision/members '{"user":"eve","role":"owner"}' "$EVE"
is "$CODE" 404 "an outsider cannot add themself (the project does not exist for them)"
api DELETE /v1/projects/vision/members/olga "" "$MEM"
is "$CODE" 403 "a member cannot remove the owner"
api PATCH /v1/projects/vision '{"share_jobs":false}' "$VIEW"
is "$CODE" 403 "a viewer cannot change the project"
api PATCH /v1/projects/vision '{"queue":"default"}' "$MEM"
is "$CODE" 403 "a member cannot rebind it"
api DELETE /v1/projects/vision "" "$MEM"
is "$CODE" 403 "a member cannot delete it"
api DELETE /v1/projects/vision "" "$EVE"
is "$CODE" 404 "an outsider cannot delete it (404)"
api GET /v1/projects/vision/events "" "$MEM"
is "$CODE" 403 "a member cannot read the audit record"
api PUT /v1/users/admin/default-project '{"project":"default"}' "$EVE"
is "$CODE" 403 "a user cannot set an admin's default project"
api PATCH /v1/projects/default '{"queue":"vq"}'
is "$CODE $(jget .error.field)" "409 queue" "the project 'default' cannot be rebound"
is "$(snapshot)" "$S0" "nothing changed"

# --- jobs ---------------------------------------------------------------------------------------
api POST /v1/jobs '{"argv":["true"],"project":"vision","gpu":0.5}' "$OWN"
J=$(jget .id)
is "$CODE $(job_state "$J")" "201 pending" "olga's job waits in vision (queue closed)"
api POST "/v1/jobs/$J/cancel" "" "$MEM"
is "$CODE" 403 "a member cannot cancel another's job of the project"
api POST "/v1/jobs/$J/suspend" "" "$VIEW"
is "$CODE" 403 "a viewer cannot suspend it"
api GET "/v1/jobs/$J/events" "" "$VIEW"
is "$CODE" 200 "a viewer reads its events"
api GET "/v1/jobs/$J/events" "" "$EVE"
is "$CODE" 404 "an outsider does not"
api POST /v1/jobs '{"argv":["true"],"project":"vision"}' "$EVE"
is "$CODE $(jget .error.field)" "403 project" "an outsider cannot submit in it"
is "$(job_state "$J")" "pending" "olga's job is untouched"
api POST /v1/jobs/1/cancel "" "$OWN"
is "$CODE $(job_state "$J")" "200 cancelled" "its owner cancels it"

td_stop; ok $? "tesseld stops cleanly"
done_testing
