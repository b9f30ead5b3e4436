#!/bin/sh
# t4040-cli-json-exit.t - CLI conventions: every command of `tessel --help` takes --json (its
# --help says so), every listing prints the API's JSON in the shape docs/cli.md ("JSON
# output") gives, matching the schema of docs/openapi.json; and the exit codes of docs/cli.md
# ("Exit status"): 0, 1 for not found, refused and unreachable, 2 for bad usage.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
/usr/bin/python3 -c 'import jsonschema' 2>/dev/null ||
    missing "Debian's python3-jsonschema is needed (scripts/install-deps.sh)"
V="$TESSEL_SRCDIR/tests/openapi/validate"
DOC="$TESSEL_SRCDIR/docs/openapi.json"
cli_admin_daemon

# --- --json on every command ---------------------------------------------------------------
tcli --help
CMDS=$(sed -n '/^Commands:/,/^$/p' "$TD/o" | awk 'NF > 1 { print $1 }')
is "$(echo "$CMDS" | wc -w)" "26" "tessel --help lists 26 commands"
for c in $CMDS; do
    tcli "$c" --help
    grep -q -- '--json' "$TD/o"; ok $? "tessel $c --help: takes --json"
done

admin users add alice >/dev/null
ALICE=$(tail -n 1 "$TD/o")
admin run -d -- sleep 300
JOB=$(out)
# listing COMMAND TOPKEY METHOD PATH: `tessel COMMAND --json` is GET PATH's answer, with TOPKEY.
listing() {
    admin "$1" --json
    is "$RC $(jq -r "keys_unsorted[0]" "$TD/o")" "0 $2" "tessel $1 --json: exit 0, {\"$2\": ...}"
    CODE=200
    "$V" "$DOC" GET "$4" 200 "$TD/o" 2>"$TD/verr"
    ok $? "... which matches the document's schema of GET $4"
    sed 's/^/# /' "$TD/verr"
}
listing ps jobs GET /v1/jobs
listing gpus gpus GET /v1/gpus
listing nodes nodes GET /v1/nodes
listing images images GET /v1/images
listing queues queues GET /v1/queues
listing gpu-models gpu_models GET /v1/gpu-models
listing users users GET /v1/users
listing tokens tokens GET /v1/tokens
listing whoami user GET /v1/whoami
listing services services GET /v1/services
# The same flag before the command.
admin --json ps
is "$RC $(jq -r ".jobs[0].id" "$TD/o")" "0 $JOB" "tessel --json ps: the same JSON"
admin nodes
is "$RC $(awk 'NR == 2 { print $5, $NF }' "$TD/o")" "0 1 simulated" "tessel nodes: a table, one GPU, simulated"
admin show "$JOB" --json
is "$RC $(jq -r '.job.id, (.events | length > 0)' "$TD/o" | tr '\n' ' ')" "0 $JOB true " \
    "tessel show --json: {job, events}"

# --- exit codes --------------------------------------------------------------------------------
admin show 999999
is "$RC" "1" "not found: exit 1"
one_line_error; ok $? "... with one line on stderr"
TESSEL_URL="$TD_URL" TESSEL_TOKEN="$ALICE" tcli show "$JOB"
is "$RC" "1" "another user's job is not found either: exit 1"
TESSEL_URL="$TD_URL" TESSEL_TOKEN="$ALICE" tcli users
is "$RC" "1" "refused (a user listing users, 403): exit 1"
grep -q 'admin' "$TD/e"; ok $? "... tesseld's message says it needs the admin role"
admin ps --bogus
is "$RC" "2" "an unknown option: exit 2"
grep -q "see 'tessel ps --help'" "$TD/e"; ok $? "... pointing at --help"
admin nosuch
is "$RC" "2" "an unknown command: exit 2"
admin show
is "$RC" "2" "a missing argument: exit 2"
admin nodes extra
is "$RC" "2" "an extra argument: exit 2"
# A port nothing listens on: bind one, close it, and use its number.
PORT=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
TESSEL_URL="http://127.0.0.1:$PORT" TESSEL_TOKEN="$TD_ADMIN" tcli ps
is "$RC" "1" "tesseld unreachable: exit 1"
one_line_error; ok $? "... with one line on stderr"
admin kill "$JOB"
is "$RC" "0" "success: exit 0"

td_stop; ok $? "tesseld stops cleanly (no sanitizer report)"
done_testing
