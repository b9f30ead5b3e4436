#!/bin/sh
# t3203-daemon-folders-quota-unmeasurable.t - a folder whose walk is incomplete is never
# measured for a quota (docs/folders.md, "Quotas"; security review RV1 M1, L7, L8, L10): a
# directory deeper than the walk's 64 levels, or a mount point inside the folder (a directory
# the walk cannot open), makes the walk incomplete; with a quota the folder then takes no
# upload and no read-write job (507 saying it cannot be measured, why and what to do) while a
# read-only mount still runs, `du` says complete: false and the folder's stored figure is not
# the partial one; a file beside a too-deep directory is still counted; hard links count once;
# flattened, the folder is measured and accepted again.  Deleting a folder removes a tree of
# any depth (no .deleted-N left).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/local.sh"
command -v curl >/dev/null && command -v jq >/dev/null && command -v sqlite3 >/dev/null &&
    command -v python3 >/dev/null
need $? "curl, jq, sqlite3 and python3 (scripts/install-deps.sh)"
[ "$(id -u)" = 0 ]
need $? "root (folders and job namespaces are root's work)"
local_account tslqu
need $? "useradd to create the account tslqu"

td_setup
chmod 711 "$TD"
td_start --fake-gpus 1xT4:16G --no-cgroups
ROOT="$TD/data/folders"
A=$(token_of tslqu)
M=1048576
# run_as TOKEN FOLDERS-JSON SCRIPT: submit sh -c SCRIPT with those folders; the job's id in $J.
run_as() {
    _b=$(jq -cn --arg s "$3" --argjson f "$2" '{argv:["sh","-c",$s],folders:$f}')
    api POST /v1/jobs "$_b" "$1"
    J=$(jget .id)
}
ended() { wait_for "[ \"\$(job_state $1)\" = succeeded ] || [ \"\$(job_state $1)\" = failed ]"; }
put() { # put TOKEN FOLDER PATH BYTES
    head -c "$4" /dev/zero >"$TD/body"
    CODE=$(curl -s -o "$TD/out" -w '%{http_code}' -X PUT -H "Authorization: Bearer $1" \
        --data-binary @"$TD/body" "$TD_URL/v1/folders/$2/files?path=$3")
}
# deep DIR N: a chain of N directories "d" below DIR with a 3 MiB file at the bottom.
deep() {
    python3 - "$1" "$2" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
for _ in range(int(sys.argv[2])):
    os.mkdir("d", dir_fd=fd)
    sub = os.open("d", os.O_RDONLY, dir_fd=fd)
    os.close(fd)
    fd = sub
f = os.open("big", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
os.write(f, b"x" * (3 << 20))
os.close(f)
PY
}
used_of() { sqlite3 "$TD/data/tessel.db" "SELECT coalesce(used, 'null') FROM folders WHERE name = '$1'"; }

# --- too deep: refused, fail closed -------------------------------------------------------------
api POST /v1/folders '{"name":"qa"}' "$A"
is "$CODE" 201 "tslqu makes folder qa"
api PATCH /v1/folders/qa '{"quota":"8M"}'
is "$CODE" 200 "an admin gives qa a quota of 8M"
head -c $((2 * M)) /dev/zero >"$ROOT/qa/beside"
deep "$ROOT/qa" 70
ok $? "qa holds a 70-deep chain with 3 MiB at its bottom and a 2 MiB file beside it"
api GET /v1/folders/qa/usage "" "$A"
is "$CODE $(jget .complete)" "200 false" "du qa: complete false"
[ "$(jget .bytes)" -ge $((2 * M)) ]
ok $? "... the file beside the too-deep chain counted all the same ($(jget .bytes) bytes)"
is "$(used_of qa)" null "... the incomplete figure is not stored as qa's use"
run_as "$A" '["qa"]' 'true'
is "$CODE $(jget .error.code) $(jget .error.field)" "507 insufficient_storage folders" \
    "a job mounting qa read-write: 507"
grep -q "folder 'qa' has a quota and its use cannot be measured (too deep" "$TD/out"
ok $? "... saying the folder cannot be measured and why"
grep -q "flatten or delete part of the folder" "$TD/out"; ok $? "... and what to do"
put "$A" qa f 10
is "$CODE $(jget .error.code)" "507 insufficient_storage" "an upload of 10 bytes to qa: 507"
grep -q "folder 'qa' has a quota and its use cannot be measured (too deep" "$TD/out"
ok $? "... with the same reason"
[ ! -e "$ROOT/qa/f" ]; ok $? "... nothing written"
run_as "$A" '["qa:ro"]' 'true'
is "$CODE" 201 "a read-only mount of qa is accepted"
ended "$J"
rm -rf "$ROOT/qa/d"
run_as "$A" '["qa"]' 'true'
is "$CODE" 201 "the deep chain removed: a read-write job is accepted (measured complete)"
ended "$J"
[ "$(used_of qa)" -ge $((2 * M)) ]; ok $? "... and qa's figure stored ($(used_of qa))"

# --- a directory the walk cannot open (a mount point inside the folder) -------------------------
api POST /v1/folders '{"name":"qm"}' "$A"
api PATCH /v1/folders/qm '{"quota":"100M"}'
is "$CODE" 200 "tslqu makes qm, an admin gives it a quota of 100M"
mkdir "$ROOT/qm/mnt" && mount -t tmpfs -o size=1M tsl3203 "$ROOT/qm/mnt"
ok $? "a tmpfs mounted inside qm"
put "$A" qm f 10
is "$CODE" 507 "an upload to qm: 507 (the walk could not open a directory)"
grep -q "a directory could not be read" "$TD/out"; ok $? "... saying so"
umount "$ROOT/qm/mnt"
put "$A" qm f 10
is "$CODE" 201 "unmounted: the upload is accepted"

# --- hard links: one file's space, however many names ------------------------------------------
api POST /v1/folders '{"name":"ql"}' "$A"
api PATCH /v1/folders/ql '{"quota":"4M"}'
head -c $((2 * M)) /dev/zero >"$ROOT/ql/one"
for i in 1 2 3 4 5 6 7 8 9; do ln "$ROOT/ql/one" "$ROOT/ql/name$i"; done
api GET /v1/folders/ql/usage "" "$A"
[ "$CODE" = 200 ] && [ "$(jget .complete)" = true ] && [ "$(jget .bytes)" -lt $((3 * M)) ]
ok $? "ql: one 2 MiB file with ten names measures under 3 MiB ($(jget .bytes) bytes)"
run_as "$A" '["ql"]' 'true'
is "$CODE" 201 "a job mounting ql (quota 4M) read-write is accepted"
ended "$J"

# --- deletion at any depth --------------------------------------------------------------------
api POST /v1/folders '{"name":"qd"}' "$A"
deep "$ROOT/qd" 200
api DELETE /v1/folders/qd "" "$A"
is "$CODE" 204 "tslqu deletes qd (a 200-deep chain inside)"
wait_for '[ -z "$(ls -A "$ROOT" | grep "^\.deleted-")" ]'
ok $? "... nothing is left in the folder root (no .deleted-N)"
grep -q "not everything could be removed" "$TD/tesseld.log"
is $? 1 "... and the log reports no leftover"

grep -q -E "Sanitizer|runtime error" "$TD/tesseld.log"
is $? 1 "no sanitizer report in tesseld's log"
td_stop; ok $? "tesseld stops cleanly"
done_testing
