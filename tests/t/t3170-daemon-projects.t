#!/bin/sh
# t3170-daemon-projects.t - projects through the API with a real tesseld (docs/projects.md): an
# admin creates a project bound to a queue of its own and members of each role are added; a
# member's job goes to the project's queue and runs; a viewer and an outsider are refused (403,
# nothing stored); the listings of projects and of a project's jobs are filtered per user, and
# another user's job is seen (not acted on) through a shared project only; owners manage
# members (the last owner stays), members and viewers do not; the default project is set by
# the user among theirs and by an admin; a member removed loses the project and it as their
# default; a project with active jobs is not deleted (409) unless an admin forces it, after
# which its jobs are theirs and the admins' only; bad input is 400 with the field named; every
# change is in the project's audit record and tesseld's log; with --user-projects a user creates
# a project of queue 'default' that they own, and nothing more.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null && command -v sqlite3 >/dev/null ||
    missing "curl, jq and sqlite3 are needed"

td_setup
# As root, user-role users without a system account need --allow-root-jobs to run jobs.
td_start --fake-gpus 1xT4:16G --no-cgroups --allow-root-jobs
DB="$TD/data/tessel.db"

OWN=$(token_of olga)
MEM=$(token_of mike)
VIEW=$(token_of vera)
OUT=$(token_of oscar)
stored() { sqlite3 "$DB" "SELECT count(*) FROM jobs"; }

# --- create -----------------------------------------------------------------------------------
api POST /v1/queues '{"name":"vq","limit":{"gpu":1}}'
is "$CODE" 201 "an admin creates queue vq (limit 1 GPU): the project's quota"
api POST /v1/projects '{"name":"vision","queue":"vq","owner":"olga","description":"the vision team"}'
is "$CODE $(jget .name) $(jget .queue) $(jget .share_jobs)" "201 vision vq true" \
    "an admin creates project vision bound to queue vq"
is "$(jq -c '[.members[] | [.user, .role]]' "$TD/out")" '[["olga","owner"]]' "olga is its owner"
api POST /v1/projects '{"name":"rogue"}' "$OUT"
is "$CODE $(jget .error.code)" "403 forbidden" "a user may not create a project (no --user-projects)"
api POST /v1/projects/vision/members '{"user":"mike","role":"member"}' "$OWN"
is "$CODE" 201 "the owner adds mike as a member"
api POST /v1/projects/vision/members '{"user":"vera","role":"viewer"}' "$OWN"
is "$CODE $(jq -c '[.members[] | [.user, .role]]' "$TD/out")" \
    '201 [["olga","owner"],["mike","member"],["vera","viewer"]]' "... and vera as a viewer"
api POST /v1/projects/vision/members '{"user":"oscar"}' "$MEM"
is "$CODE $(jget .error.code)" "403 forbidden" "a member may not add members"
api POST /v1/projects/vision/members '{"user":"oscar"}' "$VIEW"
is "$CODE" 403 "nor may a viewer"
api POST /v1/projects/vision/members '{"user":"mike"}' "$OWN"
is "$CODE $(jget .error.field)" "409 user" "adding a member twice: 409"

# --- submit -----------------------------------------------------------------------------------
api POST /v1/jobs '{"argv":["true"],"project":"vision"}' "$MEM"
is "$CODE $(jget .project) $(jget .queue) $(jget .user)" "201 vision vq mike" \
    "mike submits in vision: the job goes to the project's queue vq"
J1=$(jget .id)
wait_for '[ "$(job_state "$J1")" = succeeded ]'; ok $? "... and runs to its end"
api POST /v1/jobs '{"argv":["true"],"project":"vision","queue":"default"}' "$MEM"
is "$CODE $(jget .error.field)" "400 queue" "naming another queue than the project's: 400 queue"
is "$(jget .error.message)" "jobs of project 'vision' go to its queue 'vq', not 'default': leave the queue out" \
    "... which says so"
N=$(stored)
api POST /v1/jobs '{"argv":["true"],"project":"vision"}' "$VIEW"
is "$CODE $(jget .error.code) $(jget .error.field)" "403 forbidden project" "a viewer may not submit: 403"
is "$(jget .error.message)" "you ('vera') are a viewer of project 'vision': viewers may not submit jobs" \
    "... told why"
api POST /v1/jobs '{"argv":["true"],"project":"vision"}' "$OUT"
is "$CODE $(jget .error.message)" \
    "403 you ('oscar') are not a member of project 'vision'" "an outsider: 403"
api POST /v1/jobs '{"argv":["true"],"project":"nosuch"}' "$OUT"
is "$CODE $(jget .error.message)" \
    "403 you ('oscar') are not a member of project 'nosuch'" \
    "a project that does not exist: the same answer (nothing learnt of other projects)"
is "$(stored)" "$N" "nothing was stored for the refused submissions"
api POST /v1/jobs '{"argv":["true"]}' "$OUT"
is "$CODE $(jget .project) $(jget .queue)" "201 default default" \
    "without a project, oscar's job is in the project 'default', queue 'default', as before"

# --- what each sees -----------------------------------------------------------------------------
api GET /v1/projects "" "$OUT"
is "$(jq -c '[.projects[].name]' "$TD/out")" '["default"]' "oscar lists only the project 'default'"
api GET /v1/projects "" "$VIEW"
is "$(jq -c '[.projects[] | [.name, .role]]' "$TD/out")" '[["default","member"],["vision","viewer"]]' \
    "vera lists default and vision, with her role in each"
api GET /v1/projects
is "$(jq -c '[.projects[].name]' "$TD/out")" '["default","vision"]' "an admin lists every project"
api GET /v1/projects/vision "" "$OUT"
is "$CODE $(jget .error.message)" "404 no project 'vision'" "an outsider cannot see the project (404)"
api GET /v1/projects/vision "" "$VIEW"
is "$CODE $(jq -c '.members | length' "$TD/out")" "200 3" "a viewer sees it and its members"
api GET "/v1/jobs?project=vision" "" "$OUT"
is "$CODE" 404 "an outsider cannot list the project's jobs"
api GET "/v1/jobs?project=vision" "" "$VIEW"
is "$CODE $(jq -c '[.jobs[] | [.id, .user]]' "$TD/out")" "200 [[$J1,\"mike\"]]" \
    "a viewer lists the project's jobs, mike's included"
api GET "/v1/jobs/$J1" "" "$VIEW"
is "$CODE $(jget .user)" "200 mike" "... and sees mike's job"
api GET "/v1/jobs/$J1" "" "$OUT"
is "$CODE" 404 "an outsider does not (404, as for no job)"
api GET "/v1/jobs/$J1/logs" "" "$VIEW"
is "$CODE" 404 "logs stay the job's user's and the admins'"
api GET /v1/projects/default "" "$VIEW"
is "$CODE $(jq -c '[.members, .members_count]' "$TD/out")" '200 [[],5]' \
    "the members of 'default' (every user) are not listed to a user, only counted"
api GET /v1/projects/default
is "$(jq -c '.members | length' "$TD/out")" "5" "an admin gets the list"
api GET "/v1/jobs?project=default" "" "$VIEW"
is "$(jq -c '[.jobs[].user] | unique' "$TD/out")" '[]' \
    "the project 'default' shares no jobs: vera sees none of oscar's there"

# A job of mike that stays pending: the queue closed (limit 0).
api PATCH /v1/queues/vq '{"limit":{"gpu":0}}'
api POST /v1/jobs '{"argv":["true"],"project":"vision","gpu":0.5}' "$MEM"
J2=$(jget .id)
is "$CODE $(job_state "$J2")" "201 pending" "mike's next job waits (queue vq closed)"
api POST "/v1/jobs/$J2/cancel" "" "$VIEW"
is "$CODE $(jget .error.code)" "403 forbidden" "a viewer may not cancel it (403: seen, not acted on)"
is "$(job_state "$J2")" "pending" "... it still waits"

# --- roles ------------------------------------------------------------------------------------
api PATCH /v1/projects/vision/members/olga '{"role":"member"}' "$OWN"
is "$CODE $(jget .error.code)" "409 conflict" "the last owner cannot step down"
api DELETE /v1/projects/vision/members/olga "" "$OWN"
is "$CODE" 409 "... nor leave"
api PATCH /v1/projects/vision/members/vera '{"role":"boss"}' "$OWN"
is "$CODE $(jget .error.field)" "400 role" "an unknown role: 400 role"
api PATCH /v1/projects/vision/members/vera '{"role":"member"}' "$MEM"
is "$CODE" 403 "a member may not change roles"
api PATCH /v1/projects/vision/members/vera '{"role":"member"}' "$OWN"
is "$CODE $(jq -c '[.members[] | select(.user == "vera") | .role]' "$TD/out")" '200 ["member"]' \
    "the owner makes vera a member"
api POST /v1/jobs '{"argv":["true"],"project":"vision"}' "$VIEW"
is "$CODE $(jget .queue)" "201 vq" "... who may submit now"
api PATCH /v1/projects/vision '{"queue":"default"}' "$OWN"
is "$CODE $(jget .error.code)" "403 forbidden" "an owner may not choose the project's queue (its quota)"
api PATCH /v1/projects/vision '{"description":"Vision"}' "$OWN"
is "$CODE $(jget .description)" "200 Vision" "an owner changes its description"

# --- default project ----------------------------------------------------------------------------
api GET /v1/users/mike/default-project "" "$MEM"
is "$(jget .project)" "default" "mike's default project is 'default'"
api PUT /v1/users/mike/default-project '{"project":"vision"}' "$MEM"
is "$CODE $(jget .project)" "200 vision" "mike makes vision his default"
api POST /v1/jobs '{"argv":["true"]}' "$MEM"
is "$CODE $(jget .project) $(jget .queue)" "201 vision vq" "his jobs without a project go to vision"
J3=$(jget .id)
api PUT /v1/users/oscar/default-project '{"project":"vision"}' "$OUT"
is "$CODE" 404 "oscar cannot take a project he is not in as default (404)"
api PUT /v1/users/mike/default-project '{"project":"default"}' "$OUT"
is "$CODE" 403 "nor set mike's"
api POST /v1/projects/vision/members '{"user":"oscar","role":"viewer"}' "$OWN"
api PUT /v1/users/oscar/default-project '{"project":"vision"}'
is "$CODE $(jget .error.field)" "400 project" "a viewer's default cannot be the project (400, even by an admin)"
api PUT /v1/users/oscar/default-project '{"project":"default"}'
is "$CODE $(jget .project)" "200 default" "an admin sets oscar's default project"

# --- removal of a member ------------------------------------------------------------------------
api DELETE /v1/projects/vision/members/mike "" "$OWN"
is "$CODE" 204 "the owner removes mike"
api GET /v1/users/mike/default-project "" "$MEM"
is "$(jget .project)" "default" "mike's default is 'default' again"
api POST /v1/jobs '{"argv":["true"],"project":"vision"}' "$MEM"
is "$CODE" 403 "mike may not submit in vision any more"
api GET "/v1/jobs/$J2" "" "$MEM"
is "$CODE $(jget .project)" "200 vision" "his own jobs of vision are still his"
api DELETE /v1/projects/vision/members/oscar "" "$OUT"
is "$CODE" 204 "a viewer may leave a project by himself"

# --- delete ---------------------------------------------------------------------------------------
api DELETE /v1/projects/vision "" "$OWN"
is "$CODE $(jget .error.code)" "409 conflict" "a project with active jobs is not deleted"
is "$(jget .error.message)" \
    "project 'vision' has 1 active job(s): wait for them or cancel them (an admin may delete it with force=1: its jobs run on in queue 'vq')" \
    "... which says how many and what to do"
api DELETE "/v1/projects/vision?force=1" "" "$OWN"
is "$CODE" 403 "an owner may not force it"
api DELETE "/v1/queues/vq"
is "$CODE $(jget .error.code)" "409 conflict" "the queue of a project is not deleted"
api DELETE "/v1/projects/vision?force=yes"
is "$CODE $(jget .error.field)" "400 force" "force=yes: 400 force"
api DELETE "/v1/projects/vision?force=1"
is "$CODE" 204 "an admin deletes it with force=1"
api GET "/v1/jobs/$J2" "" "$MEM"
is "$CODE $(jget .state) $(jget .project)" "200 pending vision" "mike's job is still his, still waiting"
api GET "/v1/jobs/$J2" "" "$VIEW"
is "$CODE" 404 "it is no longer seen through the deleted project"
api POST /v1/projects '{"name":"vision","queue":"vq"}'
api POST /v1/projects/vision/members '{"user":"vera","role":"viewer"}'
api GET "/v1/jobs?project=vision" "" "$VIEW"
is "$CODE $(jq -c '.jobs | length' "$TD/out")" "200 0" \
    "a new project of the same name is another project: none of the old jobs"
api DELETE /v1/projects/default
is "$CODE" 409 "the project 'default' cannot be deleted"

# --- bad input ------------------------------------------------------------------------------------
api POST /v1/projects '{"name":"Bad Name"}'
is "$CODE $(jget .error.code) $(jget .error.field)" "400 invalid_value name" "a bad name: 400 name"
is "$(jget .error.message)" "a project name is 1 to 32 of a-z, 0-9, '_' and '-', starting with a letter" \
    "... with the rule"
api POST /v1/projects '{"name":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}'
is "$CODE $(jget .error.field)" "400 name" "a name of 33 characters: 400"
api POST /v1/projects '{"name":"x","queue":"nope"}'
is "$CODE $(jget .error.message)" "400 no queue named 'nope'" "an unknown queue: 400"
api POST /v1/projects '{"name":"x","colour":"red"}'
is "$CODE $(jget .error.code)" "400 unknown_field" "an unknown field: 400"
api POST /v1/projects '{"name":"x","description":"two\nlines"}'
is "$CODE $(jget .error.field)" "400 description" "a description with a control character: 400"
api POST /v1/projects '{"name":"x","owner":"nobody-here"}'
is "$CODE $(jget .error.message)" "400 no user named 'nobody-here'" "an unknown owner: 400"
api POST /v1/projects '{"name":"x","share_jobs":"yes"}'
is "$CODE $(jget .error.field)" "400 share_jobs" "share_jobs not a boolean: 400"
api POST /v1/projects/vision/members '{"user":"ghost"}'
is "$CODE $(jget .error.message)" "400 no user named 'ghost'" "adding an unknown user: 400"
api POST /v1/projects/vision/members '{"role":"member"}'
is "$CODE $(jget .error.code)" "400 missing_field" "a member without a user: 400 missing_field"
api POST /v1/jobs '{"argv":["true"],"project":"../vision"}' "$MEM"
is "$CODE $(jget .error.field)" "400 project" "a job's project that is not a name: 400"
api GET "/v1/jobs?project=a/b" "" "$MEM"
is "$CODE $(jget .error.code)" "400 invalid_parameter" "?project= that is not a name: 400"
api GET /v1/projects/x
is "$CODE" 404 "nothing was created by the bad requests"

# --- audit ----------------------------------------------------------------------------------------
api GET /v1/projects/vision/events "" "$VIEW"
is "$CODE" 403 "a viewer may not read the audit record"
api GET /v1/projects/vision/events
is "$(jq -c '[.events[] | [.who, .event]]' "$TD/out")" \
    '[["admin","create"],["admin","member_add"]]' "the new project's record: its creation, its member"
is "$(sqlite3 "$DB" "SELECT group_concat(who || ':' || event, ' ') FROM project_events WHERE name = 'vision' AND project = (SELECT min(project) FROM project_events WHERE name = 'vision')")" \
    "admin:create olga:member_add olga:member_add olga:member_role olga:update mike:default_project olga:member_add olga:member_remove oscar:member_remove admin:delete" \
    "the first vision's record: every change, by whom, in order (kept after its deletion)"
grep -q "project vision: member_remove by olga: {\"role\":\"member\",\"user\":\"mike\"}" "$TD/tesseld.log"
ok $? "each change is a line of tesseld's log"

# --- --user-projects: any user may create a project, of queue 'default', owned by them ---------
td_stop; ok $? "tesseld stops cleanly"
td_start --fake-gpus 1xT4:16G --no-cgroups --allow-root-jobs --user-projects
api POST /v1/projects '{"name":"oscars","description":"my own"}' "$OUT"
is "$CODE $(jget .queue) $(jq -c '[.members[] | .user + ":" + .role]' "$TD/out")" '201 default ["oscar:owner"]' \
    "with --user-projects, oscar creates a project: queue 'default', he is its owner"
api POST /v1/projects '{"name":"grab","queue":"vq"}' "$OUT"
is "$CODE $(jget .error.field)" "403 queue" "... but cannot give one a queue of its own (its quota)"
api POST /v1/projects '{"name":"gift","owner":"mike"}' "$OUT"
is "$CODE $(jget .error.field)" "403 owner" "... nor make someone else its owner"
api POST /v1/jobs '{"argv":["true"],"project":"oscars"}' "$OUT"
is "$CODE $(jget .project) $(jget .queue)" "201 oscars default" "his jobs in it go to the queue 'default'"

td_stop; ok $? "tesseld stops cleanly"
done_testing
