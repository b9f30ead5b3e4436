#!/bin/sh
# t3110-daemon-openapi.t - GET /v1/openapi.json: served without a token (TCP and the local
# socket), byte for byte docs/openapi.json; the document is OpenAPI 3.1 (validated against the
# OpenAPI Initiative's schema with Debian's python3-jsonschema, tests/openapi/validate), and the
# validator catches a broken copy; real answers of a running tesseld for the main endpoints,
# successes and errors, match the schemas the document gives them.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
/usr/bin/python3 -c 'import jsonschema' 2>/dev/null ||
    missing "Debian's python3-jsonschema is needed (scripts/install-deps.sh)"
DOC="$TESSEL_SRCDIR/docs/openapi.json"
V="$TESSEL_SRCDIR/tests/openapi/validate"

td_setup
td_start --fake-gpus 1xRTX4090:24G --no-cgroups --allow-root-jobs

# --- the document ----------------------------------------------------------------------------
CT=$(curl -s -o "$TD/doc.json" -w '%{http_code} %{content_type}' "$TD_URL/v1/openapi.json")
is "$CT" "200 application/json" "GET /v1/openapi.json without a token: 200, application/json"
cmp -s "$TD/doc.json" "$DOC"; ok $? "the document served is docs/openapi.json, byte for byte"
curl -s -o "$TD/doc-sock.json" --unix-socket "$TD_SOCK" http://localhost/v1/openapi.json
cmp -s "$TD/doc-sock.json" "$DOC"; ok $? "the local socket serves the same document"
"$V" "$TD/doc.json" 2>"$TD/verr"; ok $? "the document is valid OpenAPI 3.1 (schemas, \$refs, path parameters)"
sed 's/^/# /' "$TD/verr"
# The validator can fail: a response without its description, a dangling $ref, an undeclared
# path parameter.
jq '.paths["/v1/jobs"].get.responses["200"] |= del(.description)
    | .paths["/v1/gpus"].get.responses["200"].content["application/json"].schema["$ref"] = "#/components/schemas/Nope"
    | .paths["/v1/jobs/{id}"].get.parameters = []' "$DOC" >"$TD/broken.json"
"$V" "$TD/broken.json" 2>"$TD/verr"
is "$?" "1" "a broken copy is refused"
grep -q 'not OpenAPI 3.1 at /paths//v1/jobs/get/responses/200' "$TD/verr"; ok $? "... naming the response without a description"
grep -q 'Nope resolves to nothing' "$TD/verr"; ok $? "... the dangling \$ref"
grep -q 'GET /v1/jobs/{id}: path parameters' "$TD/verr"; ok $? "... and the undeclared {id}"

# --- real answers against their schemas ------------------------------------------------------
# check METHOD PATTERN [DESCRIPTION]: the last answer ($TD/out, $CODE) matches the document.
check() {
    "$V" "$DOC" "$1" "$2" "$CODE" "$TD/out" 2>"$TD/verr"
    ok $? "$1 $2 $CODE matches its schema${3:+ ($3)}"
    sed 's/^/# /' "$TD/verr"
}
api GET /healthz "" ""; check GET /healthz
api GET /v1/whoami; check GET /v1/whoami "token"
CODE=$(curl -s -o "$TD/out" -w '%{http_code}' --unix-socket "$TD_SOCK" http://localhost/v1/whoami)
check GET /v1/whoami "local socket, with uid"
api GET /v1/whoami "" ""; check GET /v1/whoami "no token: 401"
is "$CODE" "401" "... which is the 401"
api POST /v1/users '{"name":"alice"}'; check POST /v1/users
api POST /v1/users '{"name":"alice"}'; check POST /v1/users "taken: 409"
api GET /v1/users; check GET /v1/users
api GET /v1/users/alice; check GET /v1/users/{name}
api POST /v1/tokens '{"user":"alice","name":"laptop"}'; check POST /v1/tokens
ALICE=$(jget .token)
api GET /v1/tokens; check GET /v1/tokens
api GET /v1/users "" "$ALICE"; check GET /v1/users "a user: 403"
api POST /v1/queues '{"name":"vision","guarantee":{"gpu":0.5,"gpu_mem":"4G"},"limit":{"gpu":1},"allow":{"users":["alice"]}}'
check POST /v1/queues
api GET /v1/queues; check GET /v1/queues
api PATCH /v1/queues/vision '{"weight":3,"reserve_after":"15m","placement":"pack"}'; check PATCH /v1/queues/{name}
api GET /v1/queues/vision; check GET /v1/queues/{name} "after a cycle"
api GET /v1/queues/nosuch; check GET /v1/queues/{name} "unknown: 404"

api POST /v1/jobs '{"argv":["sleep","300"],"gpu":0.5,"gpu_mem":"4G","name":"long","time_limit":"30m"}' "$ALICE"
check POST /v1/jobs "a fraction of a GPU"
LONG=$(jget .id)
api POST /v1/jobs '{"argv":["sh","-c","exit 3"],"cpu":0.5,"mem":"64M","after":"'"$LONG"':any"}' "$ALICE"
check POST /v1/jobs "with a dependency"
DEP=$(jget .id)
api POST /v1/jobs '{"argv":["true"],"array":"0-2%1"}'; check POST /v1/jobs "an array"
ARR=$(jget .id)
api POST /v1/jobs '{"argv":["x"],"gpuz":1}'; check POST /v1/jobs "unknown field: 400"
api POST /v1/jobs '{"argv":["x"],"gpus":2}'; check POST /v1/jobs "2 GPUs on one: 422"
api GET "/v1/jobs/$LONG/wait?until=started&timeout=30" "" "$ALICE"; check GET /v1/jobs/{id}/wait "started"
is "$(jget .state)" "running" "... the job runs"
api GET "/v1/jobs/${ARR}_2/wait?until=finished&timeout=60"; check GET /v1/jobs/{id}/wait "an array's element, finished"
api GET "/v1/jobs?state=active&order=desc&limit=10"; check GET /v1/jobs
api GET "/v1/jobs?state=bogus"; check GET /v1/jobs "bad parameter: 400"
api GET "/v1/jobs/$DEP" "" "$ALICE"; check GET /v1/jobs/{id} "held, with its dependency"
is "$(jget '.held') $(jget '.after[0].type')" "true any" "... which is held on job $LONG"
api GET /v1/gpus; check GET /v1/gpus "with a slice"
is "$(jget '.gpus[0].slices | length')" "1" "... which lists the running job's slice"
api GET /v1/nodes; check GET /v1/nodes
api POST "/v1/jobs/$LONG/suspend" "" "$ALICE"; check POST /v1/jobs/{id}/suspend
api POST "/v1/jobs/$LONG/resume" "" "$ALICE"; check POST /v1/jobs/{id}/resume
api POST "/v1/jobs/$LONG/cancel" "" "$ALICE"; check POST /v1/jobs/{id}/cancel "a running job"
api GET "/v1/jobs/$DEP/wait?until=finished&timeout=60" "" "$ALICE"
api GET "/v1/jobs/$DEP/events" "" "$ALICE"; check GET /v1/jobs/{id}/events
api POST "/v1/jobs/$DEP/cancel" "" "$ALICE"; check POST /v1/jobs/{id}/cancel "finished: 409"
is "$CODE" "409" "... which is the 409"
api GET "/v1/jobs/$LONG" "" "$ALICE"; check GET /v1/jobs/{id} "cancelled"
api GET "/v1/jobs/999999"; check GET /v1/jobs/{id} "unknown: 404"
api GET "/v1/jobs/$ARR/logs" ""; is "$CODE" "200" "GET /v1/jobs/{id}/logs: 200 (text, not JSON)"
api DELETE /v1/queues/vision ""; check DELETE /v1/queues/{name} "no jobs queued there: 204"
is "$CODE" "204" "... which is the 204"

# --- projects (docs/projects.md) ----------------------------------------------------------------
api POST /v1/queues '{"name":"pq"}'
api POST /v1/projects '{"name":"vis","queue":"pq","owner":"alice","description":"a team"}'
check POST /v1/projects
api POST /v1/projects '{"name":"vis"}'; check POST /v1/projects "taken: 409"
api GET /v1/projects; check GET /v1/projects "an admin: every project"
api GET /v1/projects "" "$ALICE"; check GET /v1/projects "a user: theirs"
api GET /v1/projects/vis "" "$ALICE"; check GET /v1/projects/{name} "with its members"
api GET /v1/projects/nosuch "" "$ALICE"; check GET /v1/projects/{name} "unknown: 404"
api PATCH /v1/projects/vis '{"share_jobs":false}' "$ALICE"; check PATCH /v1/projects/{name}
api PATCH /v1/projects/vis '{"queue":"default"}' "$ALICE"; check PATCH /v1/projects/{name} "queue by an owner: 403"
api POST /v1/projects/vis/members '{"user":"admin","role":"viewer"}' "$ALICE"
check POST /v1/projects/{name}/members
api PATCH /v1/projects/vis/members/admin '{"role":"member"}' "$ALICE"
check PATCH /v1/projects/{name}/members/{user}
api PATCH /v1/projects/vis/members/alice '{"role":"viewer"}' "$ALICE"
check PATCH /v1/projects/{name}/members/{user} "the last owner: 409"
api DELETE /v1/projects/vis/members/admin "" "$ALICE"; check DELETE /v1/projects/{name}/members/{user}
api PUT /v1/users/alice/default-project '{"project":"vis"}' "$ALICE"
check PUT /v1/users/{name}/default-project
api GET /v1/users/alice/default-project "" "$ALICE"; check GET /v1/users/{name}/default-project
api POST /v1/jobs '{"argv":["true"]}' "$ALICE"; check POST /v1/jobs "in the default project vis"
is "$(jget .project) $(jget .queue)" "vis pq" "... of project vis, in its queue"
api GET "/v1/jobs?project=vis" "" "$ALICE"; check GET /v1/jobs "?project="
api GET /v1/projects/vis/events "" "$ALICE"; check GET /v1/projects/{name}/events
api DELETE /v1/projects/vis "" "$ALICE"; check DELETE /v1/projects/{name} "by its owner"

td_stop; ok $? "tesseld stops cleanly (no sanitizer report)"
done_testing
