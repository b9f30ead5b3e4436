#!/bin/sh
# t3183-daemon-folders-jobs.t - virtual folders mounted in process jobs (`"folders"` of POST
# /v1/jobs, `tessel run --folder NAME[:ro]`; docs/folders.md): a job of the folder's owner finds
# it at /tessel/folders/NAME and writes in it, as its own account; a job sees only the folders
# it asked for, the host none of them; a user with ro access mounts it ":ro" only (rw asked:
# 403), reads, and cannot write even where the ACL would let them; a user it is not shared
# with is refused at submission (400, as for a folder that does not exist), as are bad specs
# (syntax, a name twice, too many), and nothing is stored; the job object lists its folders; a
# folder mounted by an active job is not deleted (409) unless force=1.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/local.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
command -v curl >/dev/null && command -v jq >/dev/null && command -v sqlite3 >/dev/null
need $? "curl, jq and sqlite3"
[ "$(id -u)" = 0 ]
need $? "root (folders and job namespaces are root's work)"
for u in tslfa tslfb tslfc; do local_account $u || break; done
need $? "useradd to create the accounts tslfa, tslfb, tslfc"

td_setup
chmod 711 "$TD"
td_start --fake-gpus 1xT4:16G --no-cgroups
cli_setup
ROOT="$TD/data/folders"
DB="$TD/data/tessel.db"
A=$(token_of tslfa)
B=$(token_of tslfb)
C=$(token_of tslfc)
stored() { sqlite3 "$DB" "SELECT count(*) FROM jobs"; }
# run_as TOKEN FOLDERS-JSON SCRIPT: submit sh -c SCRIPT with those folders; the job's id in $J.
run_as() {
    _b=$(jq -cn --arg s "$3" --argjson f "$2" '{argv:["sh","-c",$s],folders:$f}')
    api POST /v1/jobs "$_b" "$1"
    J=$(jget .id)
}
ended() { wait_for "[ \"\$(job_state $1)\" = succeeded ] || [ \"\$(job_state $1)\" = failed ]"; }
api POST /v1/folders '{"name":"data"}' "$A"
api POST /v1/folders '{"name":"models"}' "$A"
api POST /v1/folders/data/shares '{"user":"tslfb","mode":"ro"}' "$A"
is "$CODE" 200 "tslfa makes data and models, shares data with tslfb ro"

# --- the owner's job ---------------------------------------------------------------------------
run_as "$A" '["data"]' 'id -un; ls /tessel/folders; echo written >/tessel/folders/data/out.txt && echo wrote'
is "$CODE $(jq -c .folders "$TD/out")" '201 ["data"]' "tslfa submits a job with folder data; the job lists it"
ended "$J"
is "$(job_state "$J")" succeeded "... it succeeds"
is "$(tr '\n' ' ' <"$TD/data/jobs/$J/stdout")" "tslfa data wrote " \
    "it runs as tslfa, sees only data under /tessel/folders, and writes in it"
is "$(cat "$ROOT/data/out.txt") $(stat -c %U "$ROOT/data/out.txt")" "written tslfa" \
    "the file is in the folder on the host, tslfa's"
is "$(ls -A /tessel/folders 2>/dev/null | wc -l)" 0 "the host's /tessel/folders is empty (the mounts were the job's)"
run_as "$A" '["data:ro","models"]' 'cat /tessel/folders/data/out.txt; echo x >/tessel/folders/data/ro.txt 2>/dev/null || echo refused; touch /tessel/folders/models/m && echo models-ok; touch /tessel/folders/new 2>/dev/null || echo no-new'
ended "$J"
is "$(tr '\n' ' ' <"$TD/data/jobs/$J/stdout")" "written refused models-ok no-new " \
    "data:ro is read-only even for its owner; models rw; nothing else can be made there"

# --- a ro share, an outsider --------------------------------------------------------------------
N=$(stored)
run_as "$B" '["data"]' 'true'
is "$CODE $(jget .error.field)" "403 folders" "tslfb (ro) asking data rw: 403"
grep -q "mount it as 'data:ro'" "$TD/out"; ok $? "... told to mount it :ro"
run_as "$C" '["data:ro"]' 'true'
is "$CODE $(jget .error.message)" "400 folders[0]: no folder 'data'" "tslfc (not shared): 400 as for no folder"
run_as "$C" '["nosuch"]' 'true'
is "$CODE $(jget .error.message)" "400 folders[0]: no folder 'nosuch'" "... the same answer as a folder that does not exist"
for f in '["data:rw"]' '["../data"]' '["Data"]' '["data","data:ro"]' '[5]' '"data"' \
    '["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q"]'; do
    run_as "$A" "$f" 'true'
    is "$CODE $(jget .error.field)" "400 folders" "folders $f: 400"
done
is "$(stored)" "$N" "nothing stored for the refused submissions"
run_as "$B" '["data:ro"]' 'cat /tessel/folders/data/out.txt; echo x >/tessel/folders/data/b.txt 2>/dev/null || echo refused'
ended "$J"
is "$(tr '\n' ' ' <"$TD/data/jobs/$J/stdout")" "written refused " "tslfb's job reads data and cannot write in it"

# --- the CLI -------------------------------------------------------------------------------------
TESSEL_URL="$TD_URL" TESSEL_TOKEN="$B" tcli run --folder data:ro -- cat /tessel/folders/data/out.txt
is "$RC $(out)" "0 written" "tessel run --folder data:ro (foreground)"
TESSEL_URL="$TD_URL" TESSEL_TOKEN="$B" tcli run --folder data -- true
is "$RC" 1 "tessel run --folder data (rw on a ro share): exit 1"
TESSEL_URL="$TD_URL" TESSEL_TOKEN="$B" tcli run --folder a/b -- true
is "$RC" 2 "tessel run --folder a/b: usage error"

# --- deletion while mounted ---------------------------------------------------------------------
run_as "$A" '["models"]' 'sleep 300'
wait_for '[ "$(job_state "$J")" = running ]'; ok $? "a job of tslfa runs with models mounted"
api DELETE /v1/folders/models "" "$A"
is "$CODE $(jget .error.code)" "409 conflict" "models is not deleted while the job mounts it"
grep -q "mounted by 1 active job" "$TD/out"; ok $? "... saying so"
[ -d "$ROOT/models" ]; ok $? "... it is all there"
api DELETE "/v1/folders/models?force=2" "" "$A"
is "$CODE" 400 "force=2: 400"
TESSEL_URL="$TD_URL" TESSEL_TOKEN="$A" tcli folders rm models --yes
is "$RC" 1 "tessel folders rm models --yes: refused (exit 1)"
TESSEL_URL="$TD_URL" TESSEL_TOKEN="$A" tcli folders rm models --yes --force
is "$RC $(out)" "0 folder models deleted" "tessel folders rm --yes --force deletes it under the job"
[ ! -e "$ROOT/models" ]; ok $? "... gone"
grep -q "folder models: deleted by tslfa (force, under its active jobs)" "$TD/tesseld.log"
ok $? "... and the log says it was forced"
api POST "/v1/jobs/$J/cancel" "" "$A"
done_testing
