#!/bin/sh
# t3204-daemon-folders-quota-fresh.t - the figures a quota decision uses stay honest
# (docs/folders.md, "Quotas"; security review RV1 M2, M3, L6): an accepted upload adds its
# bytes to the folder's figure but keeps the time of the last walk, so that a folder written
# through the file system is walked again once that walk is older than 60 s however many
# uploads came since (M3); an upload under a project quota that walks the folder stores the
# walk's figure plus the upload, not the old figure plus the upload (L6); a project's decision
# walks every stale folder of the project, however many decoys there are, rather than count
# the ones it did not reach as 0 (M2), and a project folder that cannot be measured makes
# the project's decision fail closed (507).  "Older than 60 s" is made by moving the stored
# time of the last walk back (sqlite3), not by waiting.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/local.sh"
command -v curl >/dev/null && command -v jq >/dev/null && command -v sqlite3 >/dev/null &&
    command -v python3 >/dev/null
need $? "curl, jq, sqlite3 and python3 (scripts/install-deps.sh)"
[ "$(id -u)" = 0 ]
need $? "root (folders and job namespaces are root's work)"
local_account tslqf
need $? "useradd to create the account tslqf"

td_setup
chmod 711 "$TD"
td_start --fake-gpus 1xT4:16G --no-cgroups
ROOT="$TD/data/folders"
DB="$TD/data/tessel.db"
A=$(token_of tslqf)
M=1048576
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
db() { sqlite3 -cmd '.timeout 5000' "$DB" "$1"; }
used_of() { db "SELECT coalesce(used, 'null') FROM folders WHERE name = '$1'"; }
at_of() { db "SELECT coalesce(used_ms, 0) FROM folders WHERE name = '$1'"; }
# age NAME...: the last walk of those folders 61 s older (as if 61 s had passed).
age() {
    for _n in "$@"; do
        db "UPDATE folders SET used_ms = used_ms - 61000 WHERE name = '$_n'"
    done
}

# --- M3: uploads do not make a stale figure fresh ------------------------------------------------
api POST /v1/folders '{"name":"k7"}' "$A"
api PATCH /v1/folders/k7 '{"quota":"8M"}'
is "$CODE" 200 "tslqf makes k7, an admin gives it a quota of 8M"
api GET /v1/folders/k7/usage "" "$A"
T0=$(at_of k7)
U0=$(used_of k7)
[ "$T0" -gt 0 ] && [ "$U0" -lt $M ]; ok $? "du k7: measured ($U0 bytes)"
put "$A" k7 tick 1
is "$CODE" 201 "an upload of 1 byte: 201"
is "$(used_of k7) $(at_of k7)" "$((U0 + 1)) $T0" "... added to the figure, the time of the last walk kept"
head -c $((20 * M)) /dev/zero >"$ROOT/k7/fill"
age k7
put "$A" k7 tick 1
is "$CODE $(jget .error.code)" "507 insufficient_storage" \
    "20 MiB written through the file system, the walk 61 s old: the next upload walks it: 507"
[ "$(used_of k7)" -ge $((20 * M)) ] && [ "$(at_of k7)" -gt "$T0" ]
ok $? "... k7's figure is the new walk's ($(used_of k7) bytes)"
run_as "$A" '["k7"]' 'true'
is "$CODE" 507 "... and a read-write job: 507"
rm "$ROOT/k7/fill"

# --- L6: a walk made by an upload under a project quota is not overwritten ---------------------
api POST /v1/projects '{"name":"p5"}'
api POST /v1/projects/p5/members '{"user":"tslqf","role":"member"}'
api POST /v1/folders '{"name":"w5","project":"p5"}' "$A"
api PATCH /v1/projects/p5 '{"folder_quota":"10M"}'
is "$CODE" 200 "project p5 (folder quota 10M) with folder w5 (no quota of its own)"
api GET /v1/folders/w5/usage "" "$A"
age w5
head -c $((8 * M)) /dev/zero >"$ROOT/w5/fill"
put "$A" w5 small 5
is "$CODE" 201 "8 MiB written through the file system, the walk 61 s old: an upload of 5 bytes: 201"
[ "$(used_of w5)" -ge $((8 * M)) ]
ok $? "... w5's figure is the walk's plus 5 ($(used_of w5) bytes), not the old one plus 5"
head -c $((8 * M)) /dev/zero >"$ROOT/w5/more"
age w5
run_as "$A" '["w5"]' 'true'
is "$CODE" 507 "8 MiB more: a read-write job of w5 is refused (the project over its quota)"
rm "$ROOT/w5/fill" "$ROOT/w5/more"

# --- M2: more decoys than any cap ----------------------------------------------------------------
api POST /v1/projects '{"name":"p4"}'
api POST /v1/projects/p4/members '{"user":"tslqf","role":"member"}'
api PATCH /v1/projects/p4 '{"folder_quota":"10M"}'
i=0
while [ $i -lt 70 ]; do
    api POST /v1/folders "{\"name\":\"b$(printf %02d $i)\",\"project\":\"p4\"}" "$A"
    [ "$CODE" = 201 ] || break
    i=$((i + 1))
done
is "$i" 70 "tslqf makes 70 empty folders b00..b69 in p4 (folder quota 10M)"
api POST /v1/folders '{"name":"zz","project":"p4"}' "$A"
api GET /v1/folders/zz/usage "" "$A"
is "$CODE" 200 "... and zz, measured while empty"
head -c $((50 * M)) /dev/zero >"$ROOT/zz/fill"
db "UPDATE folders SET used_ms = used_ms - 61000 WHERE used_ms IS NOT NULL"
run_as "$A" '["zz"]' 'true'
is "$CODE" 507 "50 MiB written into zz, every figure 61 s old: a read-write job of zz: 507"
grep -q "project 'p4' is at or over its folder quota" "$TD/out"; ok $? "... the project over its quota"
[ "$(used_of zz)" -ge $((50 * M)) ]; ok $? "... zz walked ($(used_of zz) bytes)"
is "$(db "SELECT count(*) FROM folders WHERE name LIKE 'b%' AND used IS NOT NULL")" 70 \
    "... and every decoy measured"
rm "$ROOT/zz/fill"

# --- a project folder that cannot be measured: the project's decision fails closed -------------
python3 - "$ROOT/b00" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
for _ in range(70):
    os.mkdir("d", dir_fd=fd)
    sub = os.open("d", os.O_RDONLY, dir_fd=fd)
    os.close(fd)
    fd = sub
PY
age b00
run_as "$A" '["zz"]' 'true'
is "$CODE $(jget .error.code)" "507 insufficient_storage" \
    "b00 too deep (its figure stale): a read-write job of zz: 507"
grep -q "project 'p4' has a folder quota and the use of its folders cannot be measured now (too deep)" "$TD/out"
ok $? "... the project's use cannot be measured"
put "$A" zz f 1
is "$CODE" 507 "... an upload to zz: 507 too"
run_as "$A" '["zz:ro"]' 'true'
is "$CODE" 201 "... a read-only mount is accepted"
ended "$J"
rm -rf "$ROOT/b00/d"
age zz
run_as "$A" '["zz"]' 'true'
is "$CODE" 201 "b00 flattened (and zz's 50 MiB deleted): the read-write job is accepted"
ended "$J"

grep -q -E "Sanitizer|runtime error" "$TD/tesseld.log"
is $? 1 "no sanitizer report in tesseld's log"
td_stop; ok $? "tesseld stops cleanly"
done_testing
