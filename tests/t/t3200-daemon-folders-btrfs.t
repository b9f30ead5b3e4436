#!/bin/sh
# t3200-daemon-folders-btrfs.t - a folder root on btrfs with quotas enabled (docs/folders.md,
# "Quotas"): folder quotas are measured there as on any file system (tesseld uses no btrfs
# qgroup: docs/security.md says why).  With --folder-root on a btrfs image (a loop device,
# quotas enabled; unmounted and removed at the end, even on failure): a folder is an ordinary
# directory, no qgroup is made and an admin's own qgroup of level 1 is left alone; the files of
# a subvolume a user makes inside the folder count in its measured use and an upload past the
# quota is 507 with nothing written; a read-only snapshot the user makes inside the folder goes
# with the folder when it is deleted (nothing left on disk, repeatable).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/local.sh"
command -v curl >/dev/null && command -v jq >/dev/null && command -v sqlite3 >/dev/null
need $? "curl, jq and sqlite3"
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
# The file system goes before td_cleanup removes $TD: tesseld first (it holds it), then the
# mount (its loop device is freed with it).
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
# An admin's own qgroup of level 1 on the same file system, made before tesseld starts.
btrfs qgroup create 1/4242 "$FS" && btrfs qgroup limit 1G 1/4242 "$FS"
need $? "btrfs qgroup create and limit"

td_start --fake-gpus 1xT4:16G --no-cgroups --folder-root "$ROOT"
M=1048576
api POST /v1/users '{"name":"tslqa"}'
api POST /v1/tokens '{"user":"tslqa"}'
A=$(jget .token)
# qgroups: the qgroups of level 1 and 2 of the file system, one a line.
qgroups() {
    btrfs qgroup show --raw "$FS" | awk '$1 ~ /^[12]\// { print $1 }'
}

# --- a folder with a quota: an ordinary directory, measured ---------------------------------
api POST /v1/folders '{"name":"qa","quota":"8M"}'
is "$CODE $(jget .quota)" "201 $((8 * M))" "an admin makes folder qa with quota 8M"
api POST /v1/folders/qa/shares '{"user":"tslqa","mode":"rw"}'
is "$CODE" 200 "... shared with tslqa rw"
btrfs subvolume list "$FS" | grep -q " path folders/qa$"
is $? 1 "folders/qa is no subvolume"
[ "$(stat -c %i "$ROOT/qa")" != 256 ]
ok $? "... but an ordinary directory"

# --- a subvolume made inside by the user: its files counted, uploads past it refused -------
su -s /bin/sh tslqa -c "btrfs subvolume create '$ROOT/qa/nest'" >/dev/null
ok $? "tslqa makes a subvolume inside the folder (btrfs lets a writer do it)"
su -s /bin/sh tslqa -c "dd if=/dev/zero of='$ROOT/qa/nest/x' bs=1M count=10 status=none; sync"
ok $? "... and writes 10 MiB into it (past the quota: nothing but the API holds it)"
api GET /v1/folders/qa/usage "" "$A"
is "$CODE $(jget .complete)" "200 true" "du (GET .../usage) walks the folder"
[ "$(jget .bytes)" -ge $((10 * M)) ]
ok $? "... and counts the nested subvolume's files ($(jget .bytes) bytes)"
api PUT "/v1/folders/qa/files?path=up.txt" "hello" "$A"
is "$CODE" 507 "an upload past the folder's quota: 507"
grep -q "folder 'qa' is at its quota" "$TD/out"; ok $? "... naming the folder"
[ ! -e "$ROOT/qa/up.txt" ]; ok $? "... nothing written"
is "$(qgroups)" "1/4242" "tesseld made no qgroup, and left the admin's 1/4242 alone"

# --- a project's quota: measured ------------------------------------------------------------
api POST /v1/projects '{"name":"vis"}'
api POST /v1/projects/vis/members '{"user":"tslqa","role":"member"}'
api PATCH /v1/projects/vis '{"folder_quota":"12M"}'
is "$CODE $(jget .folder_quota)" "200 $((12 * M))" "a project's folder quota"
api POST /v1/folders '{"name":"pa","project":"vis"}' "$A"
is "$CODE" 201 "tslqa makes folder pa in vis"
is "$(qgroups)" "1/4242" "... no qgroup made for the project or its folder"

# --- a read-only snapshot inside: deleted with the folder, every time ------------------------
# snap N: tslqa fills a subvolume of pa and snapshots it read-only (btrfs lets the subvolume's
# owner do it); then the folder is deleted and made again.
for n in 1 2; do
    su -s /bin/sh tslqa -c "btrfs subvolume create '$ROOT/pa/s' >/dev/null &&
        dd if=/dev/zero of='$ROOT/pa/s/x' bs=1M count=4 status=none && sync &&
        btrfs subvolume snapshot -r '$ROOT/pa/s' '$ROOT/pa/ro' >/dev/null"
    ok $? "round $n: tslqa fills a subvolume of pa with 4 MiB and snapshots it read-only"
    touch "$ROOT/pa/ro/y" 2>/dev/null
    is $? 1 "... the snapshot is read-only"
    api DELETE /v1/folders/pa
    is "$CODE" 204 "... pa deleted"
    btrfs subvolume list "$FS" | grep -q "folders/pa\|folders/.deleted"
    is $? 1 "... its subvolumes, the read-only snapshot too, are deleted"
    is "$(ls -A "$ROOT")" "qa" "... nothing of it left in the folder root"
    ! grep -q "error: folder pa" "$TD/tesseld.log"
    ok $? "... and no error logged"
    api POST /v1/folders '{"name":"pa","project":"vis"}' "$A"
    is "$CODE" 201 "... pa made again"
done

api DELETE /v1/folders/qa
is "$CODE" 204 "an admin deletes qa (a nested subvolume inside)"
btrfs subvolume list "$FS" | grep -q "folders/qa\|folders/.deleted"
is $? 1 "... its nested subvolume is deleted with it"
is "$(qgroups)" "1/4242" "the admin's qgroup 1/4242 is still there"
grep -q -E "Sanitizer|runtime error" "$TD/tesseld.log"
is $? 1 "no sanitizer report in tesseld's log"
done_testing
