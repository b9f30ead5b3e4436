#!/bin/sh
# t3202-daemon-folders-job-quota.t - folder quotas held against jobs (docs/folders.md,
# "Quotas"): a job that writes through its read-write mount is not stopped (the quota is
# measured, not enforced by the file system), but once a measurement finds the folder at or
# over its quota, a new job that would mount it read-write is refused at submission (507
# insufficient_storage, field folders, naming the folder and its use and limit; `tessel run
# --folder NAME` exits 1 with that message) with nothing stored, while a read-only mount
# (NAME:ro) still runs; raising the quota lets the read-write job in again.  The measurement
# the check uses: a folder never measured (or measured longer ago than the period, 60 s) is
# walked at submission; a fresher figure is trusted, so a job's writes are caught at the next
# measurement (here `tessel folders du`).  The same for a project's folder quota (the message
# names the project).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/local.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
command -v curl >/dev/null && command -v jq >/dev/null && command -v sqlite3 >/dev/null &&
    /usr/bin/python3 -c 'import jsonschema' 2>/dev/null
need $? "curl, jq, sqlite3 and python3-jsonschema (scripts/install-deps.sh)"
[ "$(id -u)" = 0 ]
need $? "root (folders and job namespaces are root's work)"
local_account tsljq
need $? "useradd to create the account tsljq"

td_setup
chmod 711 "$TD"
td_start --fake-gpus 1xT4:16G --no-cgroups
cli_setup
ROOT="$TD/data/folders"
DB="$TD/data/tessel.db"
A=$(token_of tsljq)
M=1048576
stored() { sqlite3 "$DB" "SELECT count(*) FROM jobs"; }
# run_as TOKEN FOLDERS-JSON SCRIPT: submit sh -c SCRIPT with those folders; the job's id in $J.
run_as() {
    _b=$(jq -cn --arg s "$3" --argjson f "$2" '{argv:["sh","-c",$s],folders:$f}')
    api POST /v1/jobs "$_b" "$1"
    J=$(jget .id)
}
ended() { wait_for "[ \"\$(job_state $1)\" = succeeded ] || [ \"\$(job_state $1)\" = failed ]"; }
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

# --- a folder filled by a job, then given a quota: walked at the next submission -------------
api POST /v1/folders '{"name":"data"}' "$A"
is "$CODE" 201 "tsljq makes folder data (no quota)"
run_as "$A" '["data"]' 'dd if=/dev/zero of=/tessel/folders/data/fill bs=1M count=3 status=none && echo filled'
ended "$J"
is "$(job_state "$J") $(cat "$TD/data/jobs/$J/stdout")" "succeeded filled" "a job writes 3 MiB into data through its mount"
api PATCH /v1/folders/data '{"quota":"1M"}'
is "$CODE $(jget .quota) $(jget .used)" "200 $M null" "an admin gives data a quota of 1M (not measured yet)"
N=$(stored)
run_as "$A" '["data"]' 'echo more >/tessel/folders/data/more'
is "$CODE $(jget .error.code) $(jget .error.field)" "507 insufficient_storage folders" \
    "a job mounting data read-write: 507 (the submission walked it)"
grep -q "folder 'data' is at or over its quota: [0-9]* of $M bytes used (measured [0-9]* s ago); a job may mount it read-only ('data:ro')" "$TD/out"
ok $? "... naming the folder, its use and limit, and the read-only mount"
schema POST /v1/jobs
is "$(stored)" "$N" "... nothing stored"
[ ! -e "$ROOT/data/more" ]; ok $? "... nothing written"
api GET /v1/folders/data "" "$A"
[ "$(jget .used)" -ge $((3 * M)) ]; ok $? "the folder's use is the walk's ($(jget .used) bytes)"
as "$A" run --folder data -- true
is "$RC" 1 "tessel run --folder data: exit 1"
grep -q "folder 'data' is at or over its quota" "$TD/e"; ok $? "... with the message"
as "$A" run --folder data:ro -- sh -c 'wc -c </tessel/folders/data/fill'
is "$RC $(out)" "0 $((3 * M))" "tessel run --folder data:ro: runs and reads the folder"

# --- the quota raised: read-write again; a job writes past it; caught at the next measurement -
api PATCH /v1/folders/data '{"quota":"8M"}'
is "$CODE" 200 "an admin raises data's quota to 8M"
run_as "$A" '["data"]' 'dd if=/dev/zero of=/tessel/folders/data/big bs=1M count=10 status=none && echo wrote'
is "$CODE" 201 "a job mounting data read-write is accepted again"
ended "$J"
is "$(job_state "$J") $(cat "$TD/data/jobs/$J/stdout") $(stat -c %s "$ROOT/data/big")" \
    "succeeded wrote $((10 * M))" "... it writes 10 MiB through its mount, past the quota: not stopped"
as "$A" folders du data
is "$RC" 0 "tessel folders du data measures it now"
run_as "$A" '["data"]' 'true'
is "$CODE $(jget .error.field)" "507 folders" "the next read-write job: 507"
grep -q "folder 'data' is at or over its quota: [0-9]* of $((8 * M)) bytes used" "$TD/out"
ok $? "... with the measured use and the new limit"
run_as "$A" '["data:ro"]' 'ls /tessel/folders/data'
is "$CODE" 201 "a read-only mount is accepted"
ended "$J"
is "$(job_state "$J")" succeeded "... and runs"
rm "$ROOT/data/big"
as "$A" folders du data
run_as "$A" '["data"]' 'true'
is "$CODE" 201 "files deleted and measured again: read-write jobs are accepted"
ended "$J"

# --- a project's folder quota -------------------------------------------------------------------
api POST /v1/projects '{"name":"vis"}'
api POST /v1/projects/vis/members '{"user":"tsljq","role":"member"}'
api POST /v1/folders '{"name":"pa","project":"vis"}' "$A"
api POST /v1/folders '{"name":"pb","project":"vis"}' "$A"
is "$CODE" 201 "tsljq makes folders pa and pb in project vis"
api PATCH /v1/projects/vis '{"folder_quota":"2M"}'
is "$CODE" 200 "an admin gives vis a folder quota of 2M"
run_as "$A" '["pa"]' 'dd if=/dev/zero of=/tessel/folders/pa/fill bs=1M count=3 status=none'
is "$CODE" 201 "a job mounting pa read-write is accepted (its project under its quota)"
ended "$J"
is "$(job_state "$J")" succeeded "... it writes 3 MiB into pa"
as "$A" folders du pa
N=$(stored)
run_as "$A" '["pb"]' 'true'
is "$CODE $(jget .error.code)" "507 insufficient_storage" "a job mounting pb read-write: 507 (the project's folders over its quota)"
grep -q "project 'vis' is at or over its folder quota: its folders use [0-9]* of $((2 * M)) bytes" "$TD/out"
ok $? "... naming the project, its folders' use and its quota"
grep -q "a job may mount folder 'pb' read-only ('pb:ro')" "$TD/out"; ok $? "... and the read-only mount"
is "$(stored)" "$N" "... nothing stored"
run_as "$A" '["pa:ro","pb:ro"]' 'true'
is "$CODE" 201 "both mounted read-only: accepted"
ended "$J"
api PATCH /v1/projects/vis '{"folder_quota":"64M"}'
run_as "$A" '["pb"]' 'true'
is "$CODE" 201 "the project's quota raised: the read-write job is accepted"
ended "$J"
is "$(job_state "$J")" succeeded "... and runs"
grep -q -E "Sanitizer|runtime error" "$TD/tesseld.log"
is $? 1 "no sanitizer report in tesseld's log"
td_stop; ok $? "tesseld stops cleanly"
done_testing
