#!/bin/sh
# t3171-cli-projects.t - `tessel projects` against a real tesseld: create (admin), add members
# of each role, ls and show (members, the quota and use of the project's queue) as text and
# --json, set-role, default (the user's own and an admin's for another user), rm-member, rm
# (refused with active jobs, --force by an admin); `tessel run --project` and `tessel ps
# --project`; errors: one line on stderr and exit 1 for what tesseld refuses, exit 2 for a
# usage error, nothing sent.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"

td_setup
td_start --fake-gpus 1xT4:16G --no-cgroups --allow-root-jobs
cli_setup
ANN=$(token_of ann)
BEN=$(token_of ben)
CAT=$(token_of cat)
as() { # as TOKEN ARG...: tessel as that token's user
    _t=$1
    shift
    TESSEL_URL="$TD_URL" TESSEL_TOKEN="$_t" tcli "$@"
}

admin queues add nlp --limit gpu=1
is "$RC" 0 "an admin adds queue nlp"
admin projects create nlp --queue nlp --owner ann --description "language models"
is "$RC $(out)" "0 project nlp created (queue nlp)" "tessel projects create"
as "$BEN" projects create mine
is "$RC" 1 "a user may not create a project: exit 1"
one_line_error; ok $? "... with one line on stderr"
grep -q "only an admin may create a project here" "$TD/e"; ok $? "... saying why"
as "$ANN" projects add-member nlp ben
is "$RC $(out)" "0 ben added to project nlp as member" "the owner adds ben (member by default)"
as "$ANN" projects add-member nlp cat --role viewer
is "$RC $(out)" "0 cat added to project nlp as viewer" "... and cat as a viewer"
as "$ANN" projects add-member nlp cat --role boss
is "$RC" 1 "a bad role: exit 1 (tesseld's 400)"
grep -q "role must be owner, member or viewer" "$TD/e"; ok $? "... told the roles"

as "$CAT" projects ls
is "$RC" 0 "tessel projects ls"
is "$(out | awk 'NR > 1 {print $1, $2, $3, $4}' | tr '\n' ';')" "default default member 4;nlp nlp viewer 3;" \
    "cat lists default and nlp with her role and the number of members"
as "$CAT" projects ls --json
is "$(out | jq -c '[.projects[].name]')" '["default","nlp"]' "ls --json prints the API's list"
as "$BEN" projects show nlp
is "$RC" 0 "tessel projects show"
out | grep -q '^description  language models$'; ok $? "show: the description"
out | grep -q '^queue        nlp$'; ok $? "show: the queue"
is "$(out | sed -n '/^Quota/,/^$/p' | awk 'NR == 3 {print $1}')" "0/-/1" \
    "show: the queue's GPU use, guarantee and limit"
is "$(out | sed -n '/^Members/,$p' | awk 'NR > 2 {print $1 ":" $2}' | tr '\n' ' ')" \
    "ann:owner ben:member cat:viewer " "show: the members, owners first"
as "$BEN" projects show nlp --json
is "$(out | jq -r '.project.name + " " + .queue.name')" "nlp nlp" "show --json: the project and its queue"
as "$BEN" projects show nosuch
is "$RC" 1 "show of an unknown project: exit 1"
grep -q "no project 'nosuch'" "$TD/e"; ok $? "... naming it"

# --- jobs ---------------------------------------------------------------------------------------
as "$BEN" run -d --project nlp -- true
is "$RC" 0 "ben: tessel run -d --project nlp"
JB=$(out | grep -o '[0-9][0-9]*' | head -1)
as "$CAT" run -d --project nlp -- true
is "$RC" 1 "cat (viewer): tessel run --project nlp exits 1"
grep -q "viewers may not submit jobs" "$TD/e"; ok $? "... told why"
as "$CAT" ps -a --project nlp --json
is "$RC $(out | jq -c '[.jobs[] | [.id, .user, .queue, .project]]')" "0 [[$JB,\"ben\",\"nlp\",\"nlp\"]]" \
    "cat: ps -a --project nlp lists ben's job, in queue nlp"
as "$CAT" ps -a --json
is "$(out | jq -c '.jobs | length')" "0" "without --project, cat sees only her own jobs (none)"

# --- roles and default --------------------------------------------------------------------------
as "$ANN" projects set-role nlp cat member
is "$RC $(out)" "0 cat is now member of project nlp" "the owner makes cat a member"
as "$CAT" projects default nlp
is "$RC $(out)" "0 the default project of cat is now nlp" "cat makes nlp her default project"
as "$CAT" projects default
is "$RC $(out)" "0 nlp" "tessel projects default says it"
as "$CAT" run -d -- true
is "$RC" 0 "cat runs a job without --project"
as "$CAT" ps -a --json
is "$(out | jq -r '.jobs[0].project + " " + .jobs[0].queue')" "nlp nlp" "... it is in nlp, queue nlp"
admin projects default default --user cat
is "$RC $(out)" "0 the default project of cat is now default" "an admin sets cat's default"
as "$BEN" projects default nlp --user cat
is "$RC" 1 "ben may not set cat's default: exit 1"
as "$ANN" projects rm-member nlp ben
is "$RC $(out)" "0 ben removed from project nlp" "the owner removes ben"
as "$BEN" projects show nlp
is "$RC" 1 "ben no longer sees nlp"

# --- rm -------------------------------------------------------------------------------------------
admin queues set nlp --limit gpu=0
as "$ANN" run -d --project nlp --gpu 0.5 -- true
as "$ANN" projects rm nlp
is "$RC" 1 "rm of a project with an active job: exit 1"
grep -q "has 1 active job(s)" "$TD/e"; ok $? "... told how many"
as "$ANN" projects rm nlp --force
is "$RC" 1 "--force by an owner: exit 1 (admins only)"
admin projects rm nlp --force
is "$RC $(out)" "0 project nlp deleted" "an admin deletes it with --force"

# --- usage errors: exit 2, nothing sent ---------------------------------------------------------
admin projects frobnicate
is "$RC" 2 "an unknown action: exit 2"
admin projects show
is "$RC" 2 "show without a name: exit 2"
admin projects set-role nlp ann
is "$RC" 2 "set-role without a role: exit 2"
admin projects ls --force
is "$RC" 2 "an option the action does not take: exit 2"
grep -q "ls does not take --force" "$TD/e"; ok $? "... named"
admin projects show a/b
is "$RC" 2 "a name with a slash: exit 2"
admin projects create "Bad Name"
is "$RC" 1 "a bad name: exit 1 (tesseld's 400)"
grep -q "a project name is 1 to 32 of a-z" "$TD/e"; ok $? "... with the rule"

td_stop; ok $? "tesseld stops cleanly"
done_testing
