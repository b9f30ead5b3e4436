#!/bin/sh
# t3182-daemon-folders-hostile.t - users hostile to virtual folders (docs/folders.md,
# docs/security.md): names through URLs and bodies (encoded dots and slashes, '..', case, 300
# bytes, quotes) find and make nothing; a user a folder is not shared with gets 404 for every
# route (get, usage, share, unshare, delete) and nothing changes; nobody lists the folder root;
# a user who may write a folder plants links (to a file outside, to another folder, a
# directory swapped for a link) and hard links: du does not count their targets, rewriting the
# ACLs (a share) changes none of them, deletion removes the links and not their targets; a
# directory left on disk under a folder's name is not taken over; tesseld refuses a folder
# root that is a link or that others may write or list.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/local.sh"
command -v curl >/dev/null && command -v jq >/dev/null && command -v getfacl >/dev/null &&
    command -v sqlite3 >/dev/null
need $? "curl, jq, sqlite3 and getfacl (scripts/install-deps.sh)"
[ "$(id -u)" = 0 ]
need $? "root (tesseld makes folders as root, for local accounts)"
for u in tslfa tslfb tslfc; do local_account $u || break; done
need $? "useradd to create the accounts tslfa, tslfb, tslfc"

td_setup
chmod 711 "$TD"
td_start --fake-gpus 1xT4:16G --no-cgroups
ROOT="$TD/data/folders"
DB="$TD/data/tessel.db"
A=$(token_of tslfa)
B=$(token_of tslfb)
C=$(token_of tslfc)
state() { sqlite3 "$DB" "SELECT name, owner FROM folders ORDER BY 1; SELECT * FROM folder_shares ORDER BY 1, 2, 3"; }
api POST /v1/folders '{"name":"data"}' "$A"
api POST /v1/folders '{"name":"other"}' "$C"
is "$CODE" 201 "tslfa makes data, tslfc makes other"
BEFORE=$(state)

# --- names --------------------------------------------------------------------------------------
LONG=$(printf 'a%.0s' $(seq 1 300))
for p in "..%2f..%2fetc" "%2e%2e" "data%2f.." "DATA" "$LONG" "da%27ta" "."; do
    api GET "/v1/folders/$p" "" "$A"
    is "$CODE" 404 "GET /v1/folders/$(printf %.40s "$p"): 404"
    api GET "/v1/folders/$p/usage" "" "$A"
    is "$CODE" 404 "... and its usage: 404"
done
for n in "../x" "..%2fx" "a/../../x" ".hidden" "$LONG" "x'y" "x\\\\y" "-x"; do
    api POST /v1/folders "{\"name\":\"$n\"}" "$A"
    is "$CODE $(jget .error.field)" "400 name" "POST name $(printf %.40s "$n"): 400"
done
is "$(state)" "$BEFORE" "nothing stored"
is "$(ls -A "$ROOT" | tr '\n' ' ')" "data other " "nothing made on disk"
[ ! -e "$TD/data/x" ] && [ ! -e "$TD/x" ]; ok $? "nothing made outside the root"

# --- an outsider ---------------------------------------------------------------------------------
for r in "GET /v1/folders/data" "GET /v1/folders/data/usage" "DELETE /v1/folders/data" \
    "DELETE /v1/folders/data/shares/users/tslfb" "DELETE /v1/folders/data/shares/projects/p"; do
    api $r "" "$B"
    is "$CODE $(jget .error.message)" "404 no folder 'data'" "tslfb: $r: 404 as if absent"
done
api POST /v1/folders/data/shares '{"user":"tslfb","mode":"rw"}' "$B"
is "$CODE $(jget .error.message)" "404 no folder 'data'" "tslfb cannot share data with themself: 404"
api POST /v1/folders/nosuch/shares '{"user":"tslfb","mode":"rw"}' "$B"
is "$CODE $(jget .error.message)" "404 no folder 'nosuch'" "... the same answer as for no folder"
is "$(state)" "$BEFORE" "nothing changed in the store"
as tslfb "ls '$ROOT'" >/dev/null 2>&1; ok $((!$?)) "tslfb cannot list the folder root"
as tslfb "ls '$ROOT/data'" >/dev/null 2>&1; ok $((!$?)) "... nor data"
as tslfb "ls '$ROOT/../folders/./data'" >/dev/null 2>&1; ok $((!$?)) "... nor data by another path"

# --- links and hard links planted by a writer ---------------------------------------------------
printf 'outside' >"$TD/outside"
chmod 600 "$TD/outside"
printf 'theirs' >"$ROOT/other/secret"
chown tslfc "$ROOT/other/secret"
OUT_ACL=$(getfacl -cp "$TD/outside" 2>/dev/null)
OTHER_ACL=$(getfacl -cp "$ROOT/other" 2>/dev/null)
SECRET_ACL=$(getfacl -cp "$ROOT/other/secret" 2>/dev/null)
as tslfa "ln -s '$TD/outside' '$ROOT/data/l-file'"
as tslfa "ln -s '$ROOT/other' '$ROOT/data/l-folder'"
as tslfa "ln -s / '$ROOT/data/l-root'"
as tslfa "mkdir '$ROOT/data/d'"
as tslfa "sh -c 'echo mine >$ROOT/data/d/mine'"
[ -L "$ROOT/data/l-file" ] && [ -f "$ROOT/data/d/mine" ]; ok $? "tslfa plants links and a directory in data"
# A hard link from tslfa's own file (the only kind fs.protected_hardlinks lets them make) and
# one root made to another account's file, as a hard link's worst case.
mkdir -p "$TD/own" && chmod 755 "$TD/own" && printf 'own' >"$TD/own/f" && chown tslfa "$TD/own/f"
chmod 600 "$TD/own/f"
as tslfa "ln '$TD/own/f' '$ROOT/data/h-own'"
ln "$ROOT/other/secret" "$ROOT/data/h-secret"
OWN_ACL=$(getfacl -cp "$TD/own/f" 2>/dev/null)
api GET /v1/folders/data/usage "" "$A"
is "$CODE $(jget .objects)" "200 8" "du counts the 7 names and the folder, not what the links point at"
api POST /v1/folders/data/shares '{"user":"tslfb","mode":"rw"}' "$A"
is "$CODE" 200 "a share rewrites data's ACLs"
getfacl -cp "$ROOT/data/d/mine" 2>/dev/null | grep -q '^user:tslfb:rw'; ok $? "... on what is inside"
is "$(getfacl -cp "$TD/outside" 2>/dev/null)" "$OUT_ACL" "... not on the file a link points at"
is "$(getfacl -cp "$ROOT/other" 2>/dev/null)" "$OTHER_ACL" "... not on the folder a link points at"
is "$(getfacl -cp "$ROOT/other/secret" 2>/dev/null)" "$SECRET_ACL" "... not on another's file hard-linked in"
is "$(getfacl -cp "$TD/own/f" 2>/dev/null)" "$OWN_ACL" "... nor on tslfa's own hard-linked file"
as tslfb "cat '$ROOT/data/l-file'" >/dev/null 2>&1; ok $((!$?)) "tslfb reads nothing through the link out"
as tslfb "ls '$ROOT/data/l-folder/'" >/dev/null 2>&1; ok $((!$?)) "... nor another folder through a link"
as tslfb "cat '$ROOT/data/h-secret'" >/dev/null 2>&1; ok $((!$?)) "... nor the hard-linked file of another"
# A directory swapped for a link to another folder just before a rewrite.
as tslfa "mv '$ROOT/data/d' '$ROOT/data/d.old'"
as tslfa "ln -s '$ROOT/other' '$ROOT/data/d'"
api POST /v1/folders/data/shares '{"user":"tslfb","mode":"ro"}' "$A"
is "$(getfacl -cp "$ROOT/other" 2>/dev/null)" "$OTHER_ACL" "a directory swapped for a link: the other folder's ACL is untouched"
api DELETE /v1/folders/data "" "$A"
is "$CODE" 204 "tslfa deletes data"
[ -f "$TD/outside" ] && [ -f "$ROOT/other/secret" ] && [ -f "$TD/own/f" ] && [ -d /etc ]
ok $? "the links' targets and the hard-linked files are all still there"
is "$(cat "$ROOT/other/secret") $(ls -A "$ROOT" | tr '\n' ' ')" "theirs other " "other is whole, data is gone"

# --- a directory left under a name ----------------------------------------------------------------
mkdir "$ROOT/left"
printf 'old' >"$ROOT/left/f"
api POST /v1/folders '{"name":"left"}' "$B"
is "$CODE $(jget .error.field)" "409 name" "a directory left under the name is not taken over: 409"
grep -q "exists already on disk" "$TD/out"; ok $? "... saying so"
is "$(cat "$ROOT/left/f")" old "... and it is left as it was"
sqlite3 "$DB" "SELECT count(*) FROM folders WHERE name = 'left'" >"$TD/n"
is "$(cat "$TD/n")" 0 "... and nothing is stored"
td_stop

# --- the folder root -------------------------------------------------------------------------------
refused() { # refused DESCRIPTION ARG...: tesseld exits 1 at start, one line naming the root
    _d=$1
    shift
    "$TESSEL_BUILD/bin/tesseld" --data-dir "$TD/d2" --listen 127.0.0.1:0 --no-socket \
        --fake-gpus 1xT4:16G --no-cgroups "$@" >"$TD/err" 2>&1
    _rc=$?
    is "$_rc" 1 "$_d: tesseld refuses to start"
    grep -q "folder root" "$TD/err"; ok $? "... naming the folder root"
}
mkdir -p "$TD/real" && chmod 711 "$TD/real"
ln -s "$TD/real" "$TD/linkroot"
refused "a folder root that is a link" --folder-root "$TD/linkroot"
mkdir -p "$TD/open" && chmod 777 "$TD/open"
refused "a folder root others may write" --folder-root "$TD/open"
chmod 755 "$TD/open"
refused "a folder root others may list" --folder-root "$TD/open"
chown tslfa "$TD/real"
refused "a folder root not root's" --folder-root "$TD/real"
done_testing
