#!/bin/sh
# t4001-cli-users.t - two users through the CLI cannot see or touch each other's jobs (ps, logs,
# kill answer as if the job did not exist), users may not run admin commands, and an admin sees
# everyone's; a removed user's token stops working.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
command -v jq >/dev/null || missing "jq is needed"
[ -x "$TESSEL_BUILD/bin/tesseld" ] || missing "tesseld not built"

td_setup
# Its API-only users (no system account) submit jobs: as root they would be refused by default
# (t3006 checks that); this test is about the API, so it allows them to run as root.
td_start --fake-gpus 1xRTX4090:24G --no-cgroups --allow-root-jobs || missing "tesseld did not start"
cli_setup
export TESSEL_URL="$TD_URL"
admin users add alice
ALICE=$(out)
admin users add bob
BOB=$(out)
as() { # as TOKEN ARG...
    _t=$1
    shift
    TESSEL_TOKEN=$_t tcli "$@"
}

as "$ALICE" run --quiet -- sh -c 'echo alice-secret'
is "$RC $(out)" "0 alice-secret" "alice runs a job in the foreground"
as "$ALICE" run -d --name a-running -- sleep 300
A=$(out)
as "$BOB" run -d --name b-job -- true
B=$(out)
wait_for '[ "$(state_of $A)" = running ]'; ok $? "alice's detached job runs"

as "$BOB" ps -a --json
is "$(jq -r '[.jobs[].user] | unique | join(",")' "$TD/o")" "bob" "bob's ps -a lists only his jobs"
as "$BOB" ps -a
grep -q alice "$TD/o"; is "$?" 1 "... also in the table"
as "$ALICE" ps -a --json
is "$(jq -r '([.jobs[].user] | unique | join(",")), (.jobs | length)' "$TD/o" | tr '\n' ' ')" "alice 2 " \
    "alice's ps -a lists her two jobs"
as "$BOB" logs "$A"
is "$RC" 1 "bob cannot read alice's logs: exit 1"
one_line_error && grep -q "job $A" "$TD/e"; ok $? "... one line: $(errtext)"
SEEN=$(sed "s/$A/N/g" "$TD/e")
as "$BOB" kill "$A"
is "$RC" 1 "bob cannot kill alice's job: exit 1"
one_line_error; ok $? "... one line: $(errtext)"
as "$BOB" logs 999999
is "$SEEN" "$(sed 's/999999/N/g' "$TD/e")" \
    "alice's job looks exactly like a job that does not exist"
is "$(state_of "$A")" "running" "alice's job still runs"
as "$BOB" ps --user alice
is "$RC" 1 "bob may not list alice's jobs with --user"
as "$BOB" users
is "$RC" 1 "a user may not list users"
one_line_error && grep -q admin "$TD/e"; ok $? "... one line: $(errtext)"
as "$BOB" users add mallory
is "$RC" 1 "a user may not add users"
as "$BOB" queues add q
is "$RC" 1 "a user may not add queues"
as "$BOB" queues
is "$RC" 0 "a user may list queues"
as "$BOB" tokens --json
is "$(jq -r '[.tokens[].user] | unique | join(",")' "$TD/o")" "bob" "bob lists only his tokens"
as "$BOB" tokens add --user alice
is "$RC" 1 "bob may not create a token for alice"
as "$BOB" gpus
is "$RC" 0 "a user may look at the GPUs"

admin ps -a --json
is "$(jq -r '[.jobs[].user] | unique | join(",")' "$TD/o")" "alice,bob" "the admin sees everyone's jobs"
admin ps -a --user bob --json
is "$(jq -r '[.jobs[].id] | join(",")' "$TD/o")" "$B" "the admin filters by user"
as "$ALICE" kill "$A"
is "$RC" 0 "alice kills her own job"
wait_for '[ "$(state_of $A)" = cancelled ]'; ok $? "it ends cancelled"

admin users rm bob
is "$RC" 0 "the admin removes bob"
as "$BOB" ps
is "$RC" 1 "bob's token no longer works"
one_line_error; ok $? "... one line: $(errtext)"

td_stop; ok $? "tesseld stops cleanly"
done_testing
