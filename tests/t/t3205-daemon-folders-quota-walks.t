#!/bin/sh
# t3205-daemon-folders-quota-walks.t - the walks of a quota decision (docs/folders.md,
# "Quotas"; security review RV1 M4, M5): while a submission's walks run without tesseld's
# lock, a submitter removed from the project, or a project deleted, gets the same refusal as
# before the walks (the project, the membership and the folders' rights are checked again
# after them), and so is the caller's token (revoked: 401), and no job is stored; a folder is walked by one request at a time: concurrent
# requests for it wait for that walk and share its figure (one descriptor open on the folder,
# never three).  A folder of 300,000 names (hard links of 6 empty files) makes each walk last
# long enough to be seen in tesseld's descriptors (/proc/PID/fd).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/local.sh"
command -v curl >/dev/null && command -v jq >/dev/null && command -v sqlite3 >/dev/null &&
    command -v python3 >/dev/null
need $? "curl, jq, sqlite3 and python3 (scripts/install-deps.sh)"
[ "$(id -u)" = 0 ]
need $? "root (folders and job namespaces are root's work)"
local_account tslwa && local_account tslwb
need $? "useradd to create the accounts tslwa and tslwb"

td_setup
chmod 711 "$TD"
td_start --fake-gpus 1xT4:16G --no-cgroups
ROOT="$TD/data/folders"
DB="$TD/data/tessel.db"
A=$(token_of tslwa)
B=$(token_of tslwb)
db() { sqlite3 -cmd '.timeout 5000' "$DB" "$1"; }
stored() { db "SELECT count(*) FROM jobs"; }
# fds: how many of tesseld's descriptors are open on folder big's own directory.
fds() { ls -l "/proc/$TD_PID/fd" 2>/dev/null | grep -c " $ROOT/big\$"; }
# walking: wait until tesseld walks big (a descriptor open on it).
walking() { wait_for '[ "$(fds)" -ge 1 ]'; }
# submit_bg: tslwb submits a read-write job of pb in project p2, in the background; the
# answer's code in $TD/bg.code, its body in $TD/bg.out.
submit_bg() {
    curl -s -o "$TD/bg.out" -w '%{http_code}' -X POST -H "Authorization: Bearer $B" \
        -H 'Content-Type: application/json' \
        --data-binary '{"argv":["true"],"project":"p2","folders":["pb"]}' \
        "$TD_URL/v1/jobs" >"$TD/bg.code" &
    BG=$!
}

api POST /v1/projects '{"name":"p2"}'
api POST /v1/projects/p2/members '{"user":"tslwa","role":"member"}'
api POST /v1/projects/p2/members '{"user":"tslwb","role":"member"}'
api PATCH /v1/projects/p2 '{"folder_quota":"100G"}'
api POST /v1/folders '{"name":"big","project":"p2"}' "$A"
api POST /v1/folders '{"name":"pb","project":"p2"}' "$B"
is "$CODE" 201 "project p2 (folder quota 100G): tslwa's folder big, tslwb's pb"
python3 - "$ROOT/big" <<'PY'
import os, sys
d = sys.argv[1]
for k in range(6):  # ext4 gives a file at most 65,000 links
    f = os.path.join(d, "f%d" % k)
    open(f, "w").close()
    for i in range(49999):
        os.link(f, os.path.join(d, "n%d_%d" % (k, i)))
PY
ok $? "big holds 300,000 names of 6 empty files"

# --- M4: removed from the project during the walks ---------------------------------------------
N=$(stored)
submit_bg
walking; ok $? "tslwb's submission walks big (its project's folder, never measured)"
api DELETE /v1/projects/p2/members/tslwb
is "$CODE" 204 "meanwhile an admin removes tslwb from p2"
wait "$BG"
is "$(cat "$TD/bg.code")" 403 "the submission: 403"
grep -q "you ('tslwb') are not a member of project 'p2'" "$TD/bg.out"
ok $? "... not a member of p2, as before the walks"
is "$(stored)" "$N" "... no job stored"

# --- M4: the token revoked during the walks ---------------------------------------------------
api POST /v1/projects/p2/members '{"user":"tslwb","role":"member"}'
api POST /v1/tokens '{"user":"tslwb"}'
B2=$(jget .token)
B2ID=$(jget .id)
db "UPDATE folders SET used_ms = used_ms - 61000 WHERE used_ms IS NOT NULL"
curl -s -o "$TD/bg.out" -w '%{http_code}' -X POST -H "Authorization: Bearer $B2" \
    -H 'Content-Type: application/json' \
    --data-binary '{"argv":["true"],"project":"p2","folders":["pb"]}' \
    "$TD_URL/v1/jobs" >"$TD/bg.code" &
BG=$!
walking; ok $? "tslwb (a member again) submits with a second token; big (61 s old) is walked"
api DELETE "/v1/tokens/$B2ID"
is "$CODE" 204 "meanwhile an admin revokes that token"
wait "$BG"
is "$(cat "$TD/bg.code")" 401 "the submission: 401 (the token checked again)"
is "$(stored)" "$N" "... no job stored"

# --- M4: the project deleted during the walks ------------------------------------------------
db "UPDATE folders SET used_ms = used_ms - 61000 WHERE used_ms IS NOT NULL"
submit_bg
walking; ok $? "tslwb submits; big (61 s old) is walked again"
api DELETE /v1/projects/p2
is "$CODE" 204 "meanwhile an admin deletes p2 (no active jobs)"
wait "$BG"
is "$(cat "$TD/bg.code")" 403 "the submission: 403"
grep -q "not a member of project 'p2'" "$TD/bg.out"; ok $? "... as for a project that does not exist"
is "$(stored)" "$N" "... no job stored"

# --- M5: one walk of a folder at a time ---------------------------------------------------------
for i in 1 2 3; do
    curl -s -o "$TD/du$i" -H "Authorization: Bearer $A" "$TD_URL/v1/folders/big/usage" &
    eval "DU$i=\$!"
done
walking; ok $? "three du of big at once"
MAX=0
while kill -0 "$DU1" 2>/dev/null || kill -0 "$DU2" 2>/dev/null || kill -0 "$DU3" 2>/dev/null; do
    n=$(fds)
    [ "$n" -gt "$MAX" ] && MAX=$n
    sleep 0.05
done
wait "$DU1" "$DU2" "$DU3"
is "$MAX" 1 "... one walk: never more than one descriptor open on big"
is "$(jq -r .bytes "$TD/du1") $(jq -r .objects "$TD/du1")" \
    "$(jq -r .bytes "$TD/du2") $(jq -r .objects "$TD/du2")" "... the same figures for each"
is "$(jq -r .complete "$TD/du3") $(jq -r .objects "$TD/du3")" "true 300001" \
    "... complete: 300,001 objects (the folder and its 300,000 names)"

grep -q -E "Sanitizer|runtime error" "$TD/tesseld.log"
is $? 1 "no sanitizer report in tesseld's log"
td_stop; ok $? "tesseld stops cleanly"
done_testing
