#!/bin/sh
# t3201-daemon-folders-project-quota.t - a project's folder quota on the measured path (an
# ordinary directory as the folder root; docs/folders.md, "Quotas"): only an admin sets it
# (PATCH /v1/projects/NAME {"folder_quota"}, `tessel projects quota`), bad values 400 with
# nothing changed; an upload to any folder of the project that would take the sum of its
# folders' measured use past it is 507 naming the project, with nothing written; a folder's own
# quota is looked at first; files deleted on the host count until the next measurement; the
# project's and the folders' objects show quota and use (`tessel projects show`, `tessel
# folders ls`); removed with null; the answers match docs/openapi.json.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/local.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
command -v curl >/dev/null && command -v jq >/dev/null && command -v sqlite3 >/dev/null &&
    /usr/bin/python3 -c 'import jsonschema' 2>/dev/null
need $? "curl, jq, sqlite3 and python3-jsonschema (scripts/install-deps.sh)"
[ "$(id -u)" = 0 ]
need $? "root (tesseld makes folders as root, for local accounts)"
local_account tslfa
need $? "useradd to create the account tslfa"

td_setup
chmod 711 "$TD"
td_start --fake-gpus 1xT4:16G --no-cgroups --max-body 1M
cli_setup
ROOT="$TD/data/folders"
DB="$TD/data/tessel.db"
api POST /v1/users '{"name":"tslfa"}'
api POST /v1/tokens '{"user":"tslfa"}'
A=$(jget .token)
schema() {
    "$TESSEL_SRCDIR/tests/openapi/validate" "$TESSEL_SRCDIR/docs/openapi.json" "$1" "$2" "$CODE" \
        "$TD/out" 2>"$TD/verr"
    ok $? "$1 $2 $CODE matches its schema in docs/openapi.json"
    sed 's/^/# /' "$TD/verr"
}
as() { # as TOKEN ARG...: tessel as that token's user
    _t=$1
    shift
    TESSEL_URL="$TD_URL" TESSEL_TOKEN="$_t" tcli "$@"
}
head -c 40000 /dev/zero >"$TD/40k"
# put FOLDER PATH: upload 40 KB as tslfa.
put() {
    CODE=$(curl -s -o "$TD/out" -w '%{http_code}' -X PUT -H "Authorization: Bearer $A" \
        --data-binary "@$TD/40k" "$TD_URL/v1/folders/$1/files?path=$2")
}

api POST /v1/projects '{"name":"vis"}'
api POST /v1/projects/vis/members '{"user":"tslfa","role":"member"}'
api POST /v1/folders '{"name":"pa","project":"vis"}' "$A"
api POST /v1/folders '{"name":"pb","project":"vis"}' "$A"
is "$CODE" 201 "tslfa, a member of vis, makes folders pa and pb in it"
api GET /v1/projects/vis
is "$CODE $(jget .folder_quota) $(jget .folder_used)" "200 null null" "vis has no folder quota (its folders not measured yet)"
schema GET /v1/projects/{name}

# --- who sets it, and bad values --------------------------------------------------------------
api PATCH /v1/projects/vis/members/tslfa '{"role":"owner"}'
api PATCH /v1/projects/vis '{"folder_quota":"100K"}' "$A"
is "$CODE $(jget .error.field)" "403 folder_quota" "an owner of the project may not set it: 403 (admins do)"
api PATCH /v1/projects/vis/members/tslfa '{"role":"member"}'
for v in '"lots"' '-5' 'true' '"10Q"'; do
    api PATCH /v1/projects/vis "{\"folder_quota\":$v}"
    is "$CODE $(jget .error.field)" "400 folder_quota" "folder_quota $v: 400"
done
api PATCH /v1/projects/default '{"folder_quota":"1G"}'
is "$CODE" 400 "the project 'default' takes none (it has no folders)"
is "$(sqlite3 "$DB" "SELECT count(folder_quota) FROM projects")" 0 "nothing stored for the refused ones"
api PATCH /v1/projects/vis '{"folder_quota":"100K"}'
is "$CODE $(jget .folder_quota)" "200 102400" "an admin sets it to 100K"
schema PATCH /v1/projects/{name}
is "$(sqlite3 "$DB" "SELECT folder_quota FROM projects WHERE name = 'vis'")" 102400 "... stored"

# --- uploads to any of its folders ------------------------------------------------------------
put pa one
is "$CODE" 201 "40 KB into pa: 201"
put pb two
is "$CODE" 201 "40 KB into pb: 201 (about 80 KB of 100 KB used together)"
put pb three
is "$CODE $(jget .error.code)" "507 insufficient_storage" "40 KB more into pb would pass the project's quota: 507"
grep -q "project 'vis' is at its folder quota" "$TD/out"; ok $? "... naming the project"
[ ! -e "$ROOT/pb/three" ]; ok $? "... nothing written"
api GET /v1/projects/vis
U=$(jget .folder_used)
[ "$U" -ge 80000 ] && [ "$U" -le 102400 ]; ok $? "the project shows its folders' use together ($U bytes)"
api GET /v1/folders/pb "" "$A"
is "$(jget .project_quota) $(jget .project_used)" "102400 $U" \
    "a folder of it shows the project's quota and use"
schema GET /v1/folders/{name}

# A folder's own quota first.
api PATCH /v1/folders/pa '{"quota":"50K"}'
put pa four
is "$CODE" 507 "pa's own quota of 50 KB is passed first: 507"
grep -q "folder 'pa' is at its quota" "$TD/out"; ok $? "... naming the folder"
api PATCH /v1/folders/pa '{"quota":null}'

# Files deleted on the host: seen at the next measurement (du).
rm "$ROOT/pa/one"
put pb three
is "$CODE" 507 "a file deleted on the host is not seen until pa is measured again"
api GET /v1/folders/pa/usage "" "$A"
is "$CODE $(jget .complete)" "200 true" "du walks pa"
schema GET /v1/folders/{name}/usage
put pb three
is "$CODE" 201 "then the upload to pb passes"

# --- the CLI ----------------------------------------------------------------------------------
as "$A" projects quota vis 1M
is "$RC" 1 "tessel projects quota as a member: exit 1"
grep -q "may not manage it" "$TD/e"; ok $? "... saying why"
as "$TD_ADMIN" projects quota vis 1M
is "$RC $(out)" "0 project vis: folder quota 1M" "tessel projects quota vis 1M (admin)"
as "$TD_ADMIN" projects quota vis 1X
is "$RC" 2 "a bad size: exit 2"
as "$A" projects show vis
grep -q "^folders  *[0-9.]* KiB used of 1.00 MiB (measured, refused at the API)$" "$TD/o"
ok $? "tessel projects show: the folders' use and quota"
as "$A" folders ls
is "$(awk 'NR == 1 { print $6, $7, $8 }' "$TD/o")" "USED QUOTA PROJECT-QUOTA" "tessel folders ls: USED, QUOTA, PROJECT-QUOTA columns"
awk '$1 == "pb" { print $8 }' "$TD/o" | grep -q "KiB/1.00MiB$"; ok $? "... pb's project quota shown"
as "$TD_ADMIN" projects quota vis none
is "$RC" 0 "tessel projects quota vis none"
api GET /v1/projects/vis
is "$(jget .folder_quota)" null "the quota is removed"
put pb five
is "$CODE" 201 "uploads pass again"
td_stop; ok $? "tesseld stops cleanly"
done_testing
