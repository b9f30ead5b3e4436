#!/bin/sh
# t3181-cli-folders.t - `tessel folders` (and its alias `tessel folder`) against a real tesseld
# as root: create (own, and a project's), ls and show as text and --json, share --ro/--rw with
# a user and --project, unshare, du, rm (refused off a terminal without --yes, nothing
# deleted); errors: one line on stderr and exit 1 for what tesseld refuses, exit 2 for a usage
# error, nothing sent.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
[ "$(id -u)" = 0 ] || missing "root (tesseld makes folders as root)"

td_setup
td_start --fake-gpus 1xT4:16G --no-cgroups
cli_setup
ANN=$(token_of ann)
BEN=$(token_of ben)
CAT=$(token_of cat)
as() { # as TOKEN ARG...: tessel as that token's user
    _t=$1
    shift
    TESSEL_URL="$TD_URL" TESSEL_TOKEN="$_t" tcli "$@"
}
ROOT="$TD/data/folders"

as "$ANN" folders create data
is "$RC $(out)" "0 folder data created" "tessel folders create"
[ -d "$ROOT/data" ]; ok $? "... its directory is there"
as "$ANN" folder create data2
is "$RC $(out)" "0 folder data2 created" "tessel folder (the alias) works the same"
as "$BEN" folders create data
is "$RC" 1 "a name taken: exit 1"
one_line_error; ok $? "... with one line on stderr"
grep -q "folder 'data' already exists" "$TD/e"; ok $? "... saying why"
as "$ANN" folders share data ben --ro
is "$RC $(out)" "0 folder data shared with user ben (read-only)" "share with a user --ro"
admin projects create team --owner ann
admin projects add-member team cat --role viewer
as "$ANN" folders share data --project team --rw
is "$RC $(out)" "0 folder data shared with project team (read-write)" "share with a project --rw"
as "$BEN" folders ls
is "$RC" 0 "tessel folders ls"
is "$(out | awk 'NR > 1 {print $1, $2, $3, $4}' | tr '\n' ';')" "data ann - ro;" \
    "ben lists data, ann's, no project, ro"
out | awk 'NR > 1 {print $5}' | grep -qx "$ROOT/data"; ok $? "... with its path"
as "$CAT" folders ls --json
is "$RC $(jq -c '[.folders[] | [.name, .access]]' "$TD/o")" '0 [["data","ro"]]' \
    "cat (a viewer of team) sees data ro, as --json"
as "$ANN" folders show data
is "$RC" 0 "tessel folders show"
grep -q "^your access  manage" "$TD/o" && grep -q "^ben  *- *ro" "$TD/o" &&
    grep -q "^-  *team  *rw" "$TD/o"
ok $? "... its fields and its shares"
as "$ANN" folders show data --json
is "$(jq -c '[.shares[] | [.user // .project, .mode]]' "$TD/o")" '[["ben","ro"],["team","rw"]]' \
    "show --json: the API's object"
printf 'hello' >"$ROOT/data/f"
as "$ANN" folders du data
is "$RC" 0 "tessel folders du"
grep -q "^data: [0-9]* bytes (.* MiB) in 2 objects$" "$TD/o"; ok $? "... says bytes and objects: $(out)"
as "$ANN" folders du data --json
is "$(jq -c '[.objects, .complete]' "$TD/o")" '[2,true]' "du --json"
as "$BEN" folders du data
is "$RC" 1 "ben (ro) may not du: exit 1"
as "$BEN" folders share data cat --rw
is "$RC" 1 "ben (ro) may not share: exit 1"
grep -q "may not manage it" "$TD/e"; ok $? "... told why"
as "$ANN" folders unshare data ben
is "$RC $(out)" "0 folder data no longer shared with user ben" "unshare a user"
as "$ANN" folders unshare data --project team
is "$RC $(out)" "0 folder data no longer shared with project team" "unshare a project"
as "$BEN" folders show data
is "$RC" 1 "unshared, ben cannot see it: exit 1"
grep -q "no folder 'data'" "$TD/e"; ok $? "... as if it did not exist"

# --- usage errors: exit 2, nothing sent ---------------------------------------------------------
for args in "share data ben" "share data ben --ro --rw" "share data ben --project team --ro" \
    "share data --ro" "unshare data" "create" "create a b" "create data --ro" "rm data --project x" \
    "du" "frob" "show a/b" "create x --project a?b"; do
    as "$ANN" folders $args
    is "$RC" 2 "tessel folders $args: usage error, exit 2"
done
grep -q "see 'tessel folders --help'" "$TD/e"; ok $? "... pointing at the help"

# --- quota ---------------------------------------------------------------------------------------
admin folders quota data2 1G
is "$RC $(out)" "0 folder data2: quota 1G" "tessel folders quota (admin)"
as "$ANN" folders show data2
grep -q "^quota        1073741824 bytes" "$TD/o"; ok $? "show prints it"
as "$ANN" folders quota data2 2G
is "$RC" 1 "the owner may not set a quota: exit 1"
admin folders quota data2 lots
is "$RC" 2 "a bad size: usage error"
admin folders quota data2 none
is "$RC $(out)" "0 folder data2: quota none" "quota none removes it"

# --- rm -------------------------------------------------------------------------------------------
as "$ANN" folders rm data
is "$RC" 1 "rm off a terminal without --yes: exit 1"
grep -q "folder data not deleted: confirm on a terminal, or give --yes" "$TD/e"; ok $? "... saying so"
[ -f "$ROOT/data/f" ]; ok $? "... and nothing is deleted"
as "$ANN" folders rm data --yes
is "$RC $(out)" "0 folder data deleted" "rm --yes deletes it"
[ ! -e "$ROOT/data" ]; ok $? "... directory and files"
as "$ANN" folders rm data --yes
is "$RC" 1 "rm again: exit 1 (no such folder)"
tcli folders --help
is "$RC" 0 "tessel folders --help"
for o in --project --ro --rw --yes --json; do
    grep -q -- "$o" "$TD/o" || break
done
ok $? "... documents --project, --ro, --rw, --yes and --json"
done_testing
