#!/bin/sh
# t3200-daemon-folders-btrfs.t - folder quotas held by the file system (docs/folders.md,
# "Quotas"): with --folder-root on a btrfs image (a loop device, quotas enabled; unmounted and
# removed at the end, even on failure), a folder is a subvolume in a qgroup of its own and a
# project's folders share the project's qgroup.  A plain job that writes with dd into its
# folder (--folder) is stopped at the folder's quota (EDQUOT), and at the project's when two
# folders together pass it; the API's usage and the folder's object show the qgroup's figures;
# raising the limit lets it write again; a subvolume the user makes inside the folder is put
# into the folder's qgroup and held too (at the limit, no new subvolume can be made); an upload past a quota is 507 naming the folder or
# the project, with nothing left; deleting a folder deletes its subvolumes and its qgroup.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/local.sh"
command -v curl >/dev/null && command -v jq >/dev/null
need $? "curl and jq"
[ "$(id -u)" = 0 ]
need $? "root (loop devices, mounts, folders)"
command -v mkfs.btrfs >/dev/null && command -v btrfs >/dev/null && command -v losetup >/dev/null
need $? "btrfs-progs (mkfs.btrfs, btrfs) and losetup (scripts/install-deps.sh)"
local_account tslqa
need $? "useradd to create the account tslqa"

td_setup
chmod 711 "$TD"
IMG="$TD/btrfs.img"
FS="$TD/fs"
# The file system goes before td_cleanup removes $TD: tesseld and the jobs first (they hold
# it), then the mount (its loop device is freed with it).
fs_cleanup() {
    for p in $TD_PIDS; do kill -9 "$p" 2>/dev/null; done
    for p in $TD_PIDS; do wait "$p" 2>/dev/null; done
    if mountpoint -q "$FS" 2>/dev/null; then
        umount "$FS" 2>/dev/null || umount -l "$FS"
    fi
    td_cleanup
}
trap fs_cleanup EXIT
mkdir "$FS" && truncate -s 512M "$IMG" && mkfs.btrfs -q -f "$IMG" >/dev/null
need $? "mkfs.btrfs to make a btrfs image"
mount -o loop "$IMG" "$FS"
need $? "a loop device to mount the btrfs image (mount -o loop)"
btrfs quota enable "$FS"
need $? "btrfs quotas (btrfs quota enable)"
chmod 711 "$FS"
ROOT="$FS/folders"

td_start --fake-gpus 1xT4:16G --no-cgroups --folder-root "$ROOT"
grep -q "quotas held by btrfs qgroups" "$TD/tesseld.log"
ok $? "tesseld sees the folder root on btrfs with quotas"
M=1048576
token_of() {
    api POST /v1/users "{\"name\":\"$1\"}"
    api POST /v1/tokens "{\"user\":\"$1\"}"
    jget .token
}
A=$(token_of tslqa)
# qgroup Q: "REFERENCED LIMIT" of qgroup Q as btrfs-progs reads it (after a commit).
qgroup() {
    btrfs qgroup show -re --raw "$FS" | awk -v q="$1" '$1 == q { print $2, $4 }'
}
# run JOB-SCRIPT FOLDERS: a job of tslqa's; waits for its end; its stdout in $TD/job.out.
run() {
    _b=$(jq -cn --arg s "$1" --argjson f "$2" '{argv:["sh","-c",$s],folders:$f}')
    api POST /v1/jobs "$_b" "$A"
    J=$(jget .id)
    wait_for "[ \"\$(job_state $J)\" = succeeded ] || [ \"\$(job_state $J)\" = failed ]"
    cp "$TD/data/jobs/$J/stdout" "$TD/job.out" 2>/dev/null || : >"$TD/job.out"
}
# dd_into PATH MIB: the job's dd of MIB MiB into PATH, then "rc=N".
dd_into() {
    echo "dd if=/dev/zero of=$1 bs=1M count=$2 2>&1 | grep -o 'Disk quota exceeded' | head -1; sync"
}

# --- a folder with a quota: a subvolume in qgroup 1/ID ------------------------------------
api POST /v1/folders '{"name":"qa","quota":"8M"}'
is "$CODE $(jget .quota) $(jget .quota_by)" "201 $((8 * M)) btrfs" "an admin makes folder qa with quota 8M: held by btrfs"
api POST /v1/folders/qa/shares '{"user":"tslqa","mode":"rw"}'
is "$CODE" 200 "... shared with tslqa rw"
ID=$(sqlite3 "$TD/data/tessel.db" "SELECT id FROM folders WHERE name = 'qa'")
btrfs subvolume list "$FS" | grep -q " path folders/qa$"
ok $? "folders/qa is a btrfs subvolume"
is "$(qgroup "1/$ID" | awk '{print $2}')" "$((8 * M))" "its qgroup 1/$ID has the limit 8 MiB"
is "$(stat -c '%U %a' "$ROOT/qa")" "root 770" "the subvolume's root is root's, with the folder's ACL (mask rwx)"

run "$(dd_into /tessel/folders/qa/big 20)" '["qa"]'
is "$(cat "$TD/job.out")" "Disk quota exceeded" "a job's dd of 20 MiB into qa stops with EDQUOT"
SZ=$(stat -c %s "$ROOT/qa/big")
[ "$SZ" -gt $((6 * M)) ] && [ "$SZ" -le $((8 * M)) ]
ok $? "... at the limit: the file has $SZ bytes (6-8 MiB)"
sync
REF=$(qgroup "1/$ID" | awk '{print $1}')
api GET /v1/folders/qa/usage "" "$A"
is "$CODE $(jget .source) $(jget .bytes)" "200 qgroup $REF" "du (GET .../usage) answers the qgroup's figure, no walk"
api GET /v1/folders/qa "" "$A"
is "$(jget .used) $(jget .quota_by)" "$REF btrfs" "the folder's object shows the qgroup's use"
TESSEL_URL="$TD_URL" TESSEL_TOKEN="$A" "$TESSEL_BUILD/bin/tessel" folders du qa >"$TD/du" 2>&1
is "$(cat "$TD/du")" "qa: $REF bytes ($(awk -v b="$REF" 'BEGIN { printf "%.1f", b / 1048576 }') MiB), its btrfs qgroup's figure (as of the last commit)" \
    "tessel folders du says so"

api PATCH /v1/folders/qa '{"quota":"40M"}'
is "$CODE $(qgroup "1/$ID" | awk '{print $2}')" "200 $((40 * M))" "an admin raises the quota to 40M: the qgroup's limit follows"
run "$(dd_into /tessel/folders/qa/more 10)" '["qa"]'
is "$(cat "$TD/job.out") $(stat -c %s "$ROOT/qa/more")" " $((10 * M))" "the job writes 10 MiB more"
api PATCH /v1/folders/qa '{"quota":"12M"}'
is "$CODE" 200 "the quota lowered to 12M, below the use"
api PUT "/v1/folders/qa/files?path=up.txt" "hello" "$A"
is "$CODE" 507 "an upload past the folder's quota: 507"
grep -q "folder 'qa' is at its quota" "$TD/out"; ok $? "... naming the folder"
[ ! -e "$ROOT/qa/up.txt" ]; ok $? "... nothing written"

# --- a subvolume made inside by the user: held by the folder's qgroup -----------------------
api PATCH /v1/folders/qa '{"quota":"40M"}'
su -s /bin/sh tslqa -c "btrfs subvolume create '$ROOT/qa/nest'" >/dev/null
ok $? "tslqa makes a subvolume inside the folder (btrfs lets a writer do it)"
NEST=$(btrfs subvolume list "$FS" | awk '$NF == "folders/qa/nest" { print $2 }')
wait_for "btrfs qgroup show -p '$FS' | awk '\$1 == \"0/$NEST\"' | grep -q '1/$ID'"
ok $? "tesseld puts its qgroup 0/$NEST into the folder's 1/$ID (within its 5 s sweep)"
run "$(dd_into /tessel/folders/qa/nest/x 30)" '["qa"]'
is "$(cat "$TD/job.out")" "Disk quota exceeded" "a job's write into the nested subvolume stops at the folder's quota"
sync
[ "$(qgroup "1/$ID" | awk '{print $1}')" -le $((40 * M)) ]
ok $? "the folder's qgroup holds 40 MiB at most, the nested subvolume's files included"
su -s /bin/sh tslqa -c "btrfs subvolume create '$ROOT/qa/nest2' 2>&1" | grep -q "Disk quota exceeded"
ok $? "at its limit, the folder takes no new subvolume from the user (EDQUOT): no fresh qgroup to escape into"
su -s /bin/sh tslqa -c "btrfs subvolume create '$ROOT/qa/nest/deeper' 2>&1" | grep -q "Disk quota exceeded"
ok $? "... nor inside the adopted one"

# --- a project's quota: its folders together ----------------------------------------------
api POST /v1/projects '{"name":"vis"}'
api POST /v1/projects/vis/members '{"user":"tslqa","role":"member"}'
is "$CODE" 201 "project vis with tslqa a member"
api PATCH /v1/projects/vis '{"folder_quota":"12M"}' "$A"
is "$CODE" 403 "a member may not set the project's folder quota (admins do)"
api PATCH /v1/projects/vis '{"folder_quota":"12M"}'
is "$CODE $(jget .folder_quota) $(jget .folder_quota_by)" "200 $((12 * M)) btrfs" "an admin sets it to 12M"
api POST /v1/folders '{"name":"pa","project":"vis"}' "$A"
api POST /v1/folders '{"name":"pb","project":"vis"}' "$A"
is "$CODE" 201 "tslqa makes folders pa and pb in vis (no quota of their own)"
PID=$(sqlite3 "$TD/data/tessel.db" "SELECT id FROM projects WHERE name = 'vis'")
is "$(qgroup "2/$PID" | awk '{print $2}')" "$((12 * M))" "the project's qgroup 2/$PID has the limit 12 MiB"
run "$(dd_into /tessel/folders/pa/a 8)" '["pa"]'
is "$(cat "$TD/job.out")" "" "8 MiB into pa: written"
run "$(dd_into /tessel/folders/pb/b 8)" '["pb"]'
is "$(cat "$TD/job.out")" "Disk quota exceeded" "8 MiB more into pb: EDQUOT (the project's 12 MiB passed)"
sync
PREF=$(qgroup "2/$PID" | awk '{print $1}')
[ "$PREF" -le $((12 * M)) ] && [ "$PREF" -gt $((10 * M)) ]
ok $? "the project's folders hold $PREF bytes together (10-12 MiB)"
api GET /v1/projects/vis
is "$(jget .folder_used)" "$PREF" "the project's object shows the qgroup's use"
api GET /v1/folders/pb "" "$A"
is "$(jget .project_quota) $(jget .project_used)" "$((12 * M)) $PREF" "a folder of it shows the project's quota and use"
api PUT "/v1/folders/pb/files?path=up.txt" "hello" "$A"
is "$CODE" 507 "an upload to pb past the project's quota: 507"
grep -q "project 'vis' is at its folder quota" "$TD/out"; ok $? "... naming the project"
[ ! -e "$ROOT/pb/up.txt" ]; ok $? "... nothing written"
api PATCH /v1/projects/vis '{"folder_quota":"64M"}'
run "$(dd_into /tessel/folders/pb/b2 8)" '["pb"]'
is "$(cat "$TD/job.out")" "" "the project's quota raised to 64M: pb takes 8 MiB more"

# --- deletion: the subvolumes and the qgroup go -------------------------------------------
api DELETE /v1/folders/qa
is "$CODE" 204 "an admin deletes qa (a nested subvolume inside)"
btrfs subvolume list "$FS" >"$TD/subvols"
grep -q "folders/qa\|folders/.deleted" "$TD/subvols"
is $? 1 "its subvolume and the nested one are deleted"
# The kernel drops a deleted subvolume's extents in the background (btrfs subvolume sync waits
# for it); tesseld's sweep then destroys the folder's qgroup.
btrfs subvolume sync "$FS" >/dev/null 2>&1
wait_for "[ -z \"\$(qgroup 1/$ID)\" ]"
ok $? "its qgroup 1/$ID is destroyed once the kernel has dropped the subvolume"
api DELETE /v1/folders/pa
is "$CODE" 204 "pa deleted (a folder of the project)"
btrfs subvolume list "$FS" | grep -q "folders/pa$"
is $? 1 "... its subvolume too"
api DELETE /v1/projects/vis
is "$CODE" 204 "project vis deleted (pb becomes tslqa's own folder)"
btrfs subvolume sync "$FS" >/dev/null 2>&1
wait_for "[ -z \"\$(qgroup 2/$PID)\" ]"
ok $? "the project's qgroup 2/$PID is destroyed (pb's qgroup taken out of it first)"
run "$(dd_into /tessel/folders/pb/c 30)" '["pb"]'
is "$(cat "$TD/job.out")" "" "pb, no longer held by the project's limit, takes 30 MiB"
grep -q -E "Sanitizer|runtime error" "$TD/tesseld.log"
is $? 1 "no sanitizer report in tesseld's log"
done_testing
