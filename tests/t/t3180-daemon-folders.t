#!/bin/sh
# t3180-daemon-folders.t - virtual folders through the API with a real tesseld as root
# (docs/folders.md), checked on disk as the local accounts themselves: a user makes a folder
# that only they reach (others cannot list, read or write it); shared read-only, another user
# reads and cannot write; shared read-write, writes; unshared, reaches nothing again, old files
# included; a project's folder is its owners' and members' (rw) and viewers' (ro), and a member
# removed from the project loses it at once; a folder shared with a project gives its viewers
# ro only; the listing and the folder's object show each caller their own right; du counts
# what is inside; only a manager shares or deletes; deletion removes the directory and frees
# the name; a user who owns folders is not deleted; bad input is 400 with the field named and
# changes nothing; every change is in tesseld's log.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/local.sh"
command -v curl >/dev/null && command -v jq >/dev/null && command -v getfacl >/dev/null &&
    /usr/bin/python3 -c 'import jsonschema' 2>/dev/null
need $? "curl, jq, getfacl and python3-jsonschema (scripts/install-deps.sh)"
[ "$(id -u)" = 0 ]
need $? "root (tesseld makes folders as root, for local accounts)"
for u in tslfa tslfb tslfc; do local_account $u || break; done
need $? "useradd to create the accounts tslfa, tslfb, tslfc"

td_setup
chmod 711 "$TD" # the accounts reach the folder root below it, as in /var/lib/tessel
td_start --fake-gpus 1xT4:16G --no-cgroups
ROOT="$TD/data/folders"
A=$(token_of tslfa)
B=$(token_of tslfb)
C=$(token_of tslfc)
# can USER OP PATH: 0 when the account USER can OP (list, read, write) PATH.
can() {
    case $2 in
    list) as "$1" "ls '$3' >/dev/null 2>&1" ;;
    read) as "$1" "cat '$3' >/dev/null 2>&1" ;;
    write) as "$1" "sh -c 'echo x >$3' 2>/dev/null" ;;
    esac
}

# schema METHOD PATTERN: the last answer matches docs/openapi.json.
schema() {
    "$TESSEL_SRCDIR/tests/openapi/validate" "$TESSEL_SRCDIR/docs/openapi.json" "$1" "$2" "$CODE" \
        "$TD/out" 2>"$TD/verr"
    ok $? "$1 $2 $CODE matches its schema in docs/openapi.json"
    sed 's/^/# /' "$TD/verr"
}
is "$(stat -c %a "$ROOT")" 711 "the folder root is made 0711: traversable, not listable"

# --- a folder of one's own --------------------------------------------------------------------
api POST /v1/folders '{"name":"data"}' "$A"
is "$CODE $(jget .name) $(jget .owner) $(jget .access) $(jget .path)" \
    "201 data tslfa manage $ROOT/data" "tslfa creates folder data: theirs, at ROOT/data"
schema POST /v1/folders
is "$(stat -c '%U %a' "$ROOT/data")" "root 770" "its directory is root's (a user cannot chmod it)"
getfacl -cp "$ROOT/data" 2>/dev/null | grep -c '^user:tslfa:rwx$' >"$TD/n"
is "$(cat "$TD/n")" 1 "its ACL names tslfa rwx"
can tslfa write "$ROOT/data/a.txt"; ok $? "tslfa writes a file in it"
getfacl -cp "$ROOT/data/a.txt" 2>/dev/null | grep -q '^user:tslfa:rw'
ok $? "the file gets the folder's entries from the default ACL"
can tslfb list "$ROOT/data"; ok $((!$?)) "tslfb cannot list it"
can tslfb read "$ROOT/data/a.txt"; ok $((!$?)) "... nor read the file"
can tslfb write "$ROOT/data/b.txt"; ok $((!$?)) "... nor write in it"
api GET /v1/folders/data "" "$B"
is "$CODE $(jget .error.message)" "404 no folder 'data'" "to tslfb the folder does not exist"
schema GET /v1/folders/{name}
api GET /v1/folders "" "$B"
is "$(jq -c '[.folders[].name]' "$TD/out")" '[]' "tslfb lists no folder"

# --- shares ------------------------------------------------------------------------------------
api POST /v1/folders/data/shares '{"user":"tslfb","mode":"ro"}' "$A"
is "$CODE $(jq -c '.shares | map([.user, .mode])' "$TD/out")" '200 [["tslfb","ro"]]' \
    "tslfa shares data with tslfb read-only"
schema POST /v1/folders/{name}/shares
can tslfb read "$ROOT/data/a.txt"; ok $? "tslfb reads the file written before the share"
can tslfb list "$ROOT/data"; ok $? "... and lists the folder"
can tslfb write "$ROOT/data/b.txt"; ok $((!$?)) "... but cannot write in it"
can tslfb write "$ROOT/data/a.txt"; ok $((!$?)) "... nor change the file"
api GET /v1/folders/data "" "$B"
is "$CODE $(jget .access)" "200 ro" "the API says tslfb's access: ro"
api POST /v1/folders/data/shares '{"user":"tslfc","mode":"rw"}' "$B"
is "$CODE $(jget .error.code)" "403 forbidden" "tslfb (ro) may not share the folder"
api DELETE /v1/folders/data "" "$B"
is "$CODE" 403 "... nor delete it"
api POST /v1/folders/data/shares '{"user":"tslfb","mode":"rw"}' "$A"
is "$CODE $(jq -c '.shares | map([.user, .mode])' "$TD/out")" '200 [["tslfb","rw"]]' \
    "sharing again read-write changes the mode"
can tslfb write "$ROOT/data/b.txt"; ok $? "tslfb writes in it now"
can tslfb write "$ROOT/data/a.txt"; ok $? "... and changes tslfa's file"
can tslfc read "$ROOT/data/b.txt"; ok $((!$?)) "tslfc reads nothing of it"
api DELETE /v1/folders/data/shares/users/tslfb "" "$A"
is "$CODE $(jq -c '.shares' "$TD/out")" '200 []' "tslfa unshares it from tslfb"
schema DELETE /v1/folders/{name}/shares/users/{user}
can tslfb read "$ROOT/data/b.txt"; ok $((!$?)) "tslfb reads nothing of it any more, not even their own file"
can tslfb list "$ROOT/data"; ok $((!$?)) "... nor lists it"
api DELETE /v1/folders/data/shares/users/tslfb "" "$A"
is "$CODE $(jget .error.message)" "404 folder 'data' is not shared with user 'tslfb'" \
    "unsharing again: 404"

# --- projects ----------------------------------------------------------------------------------
api POST /v1/projects '{"name":"vision","owner":"tslfa"}'
api POST /v1/projects/vision/members '{"user":"tslfb","role":"member"}'
api POST /v1/projects/vision/members '{"user":"tslfc","role":"viewer"}'
is "$CODE" 201 "project vision: tslfa owner, tslfb member, tslfc viewer"
api POST /v1/folders '{"name":"pf","project":"vision"}' "$B"
is "$CODE $(jget .project) $(jget .owner)" "201 vision tslfb" "member tslfb creates folder pf of project vision"
api POST /v1/folders '{"name":"pv","project":"vision"}' "$C"
is "$CODE $(jget .error.field)" "403 project" "a viewer may not create a folder of the project"
api POST /v1/folders '{"name":"pd","project":"default"}' "$A"
is "$CODE $(jget .error.field)" "400 project" "no folder of the project 'default' (everyone's)"
api GET /v1/folders/pf "" "$A"
is "$CODE $(jget .access)" "200 manage" "the project's owner manages pf"
api GET /v1/folders/pf "" "$C"
is "$CODE $(jget .access)" "200 ro" "its viewer has ro"
can tslfa write "$ROOT/pf/o.txt"; ok $? "the owner writes in pf"
can tslfc read "$ROOT/pf/o.txt"; ok $? "the viewer reads"
can tslfc write "$ROOT/pf/v.txt"; ok $((!$?)) "the viewer cannot write"
api PATCH /v1/projects/vision/members/tslfc '{"role":"member"}'
can tslfc write "$ROOT/pf/v.txt"; ok $? "made a member, tslfc writes at once"
api DELETE /v1/projects/vision/members/tslfc
can tslfc read "$ROOT/pf/o.txt"; ok $((!$?)) "removed from the project, tslfc reads nothing of pf"
api GET /v1/folders/pf "" "$C"
is "$CODE" 404 "... and the API does not show it to them"
api POST /v1/projects/vision/members '{"user":"tslfc","role":"viewer"}'
api POST /v1/folders/data/shares '{"project":"vision","mode":"rw"}' "$A"
is "$CODE $(jq -c '.shares | map([.project, .mode])' "$TD/out")" '200 [["vision","rw"]]' \
    "tslfa shares data with project vision rw"
can tslfb write "$ROOT/data/m.txt"; ok $? "the project's member writes in data"
can tslfc read "$ROOT/data/m.txt"; ok $? "its viewer reads"
can tslfc write "$ROOT/data/v.txt"; ok $((!$?)) "its viewer cannot write, whatever the share says"
api GET /v1/folders "" "$C"
is "$(jq -c '[.folders[] | [.name, .access]]' "$TD/out")" '[["data","ro"],["pf","ro"]]' \
    "tslfc lists data and pf, ro each"
schema GET /v1/folders

# --- du, bad input, deletion --------------------------------------------------------------------
api GET /v1/folders/data/usage "" "$B"
is "$CODE $(jget .objects) $(jget .complete)" "200 4 true" \
    "du: 4 objects (the folder, a.txt, b.txt, m.txt), for a writer (a project member)"
[ "$(jget .bytes)" -gt 0 ]; ok $? "... of $(jget .bytes) bytes"
schema GET /v1/folders/{name}/usage
api GET /v1/folders/data/usage "" "$C"
is "$CODE $(jget .error.code)" "403 forbidden" "du for a ro viewer: 403 (it counts what they may not read)"
api POST /v1/folders '{"name":"data"}' "$C"
is "$CODE $(jget .error.field)" "409 name" "a name taken: 409 (even by a folder one cannot see)"
for body in '{"name":"Data"}' '{"name":"a/b"}' '{"name":".."}' '{"name":"x.y"}' '{"name":5}' \
    '{"name":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}'; do
    api POST /v1/folders "$body" "$A"
    is "$CODE $(jget .error.field)" "400 name" "bad name $body: 400"
done
api POST /v1/folders '{}' "$A"
is "$CODE $(jget .error.code)" "400 missing_field" "no name: 400"
api POST /v1/folders '{"name":"ok1","size":1}' "$A"
is "$CODE $(jget .error.code)" "400 unknown_field" "an unknown field: 400"
api POST /v1/folders/data/shares '{"user":"tslfb"}' "$A"
is "$CODE $(jget .error.field)" "400 mode" "a share without a mode: 400"
api POST /v1/folders/data/shares '{"user":"tslfb","mode":"all"}' "$A"
is "$CODE $(jget .error.field)" "400 mode" "a bad mode: 400"
api POST /v1/folders/data/shares '{"user":"nobody","mode":"ro"}' "$A"
is "$CODE $(jget .error.message)" "400 no user named 'nobody'" "an unknown user: 400"
api POST /v1/folders/data/shares '{"user":"tslfb","project":"vision","mode":"ro"}' "$A"
is "$CODE" 400 "a user and a project in one share: 400"
api POST /v1/folders/data/shares '{"user":"tslfa","mode":"ro"}' "$A"
is "$CODE $(jget .error.field)" "400 user" "sharing with the owner: 400"
api GET /v1/folders "" "$A"
is "$(jq -c '[.folders[].name]' "$TD/out")" '["data","pf"]' "nothing was made by the bad requests"
ls -A "$ROOT" >"$TD/ls"
is "$(tr '\n' ' ' <"$TD/ls")" "data pf " "... nor on disk"
api DELETE /v1/users/tslfa
is "$CODE $(jget .error.message)" "409 'tslfa' owns 1 folder(s): delete them first (tessel folder rm)" \
    "a user who owns folders is not deleted"
api DELETE /v1/folders/data "" "$A"
is "$CODE" 204 "tslfa deletes data"
[ ! -e "$ROOT/data" ] && [ -z "$(ls -A "$ROOT" | grep -v '^pf$')" ]
ok $? "its directory is gone, nothing left in the root"
api GET /v1/folders/data "" "$A"
is "$CODE" 404 "it is gone from the API"
api POST /v1/folders '{"name":"data"}' "$C"
is "$CODE $(jget .owner)" "201 tslfc" "the name is free again: tslfc makes their own data"
can tslfb list "$ROOT/data"; ok $((!$?)) "tslfb, shared with the old one, reaches nothing of the new"
api DELETE /v1/projects/vision
can tslfc read "$ROOT/pf/o.txt"; ok $((!$?)) "project vision deleted: its viewer loses its folder"
api GET /v1/folders/pf "" "$C"
is "$CODE" 404 "... in the API too"
api GET /v1/folders/pf "" "$B"
is "$CODE $(jget .project) $(jget .access)" "200 null manage" "... which stays its creator's own"
can tslfb write "$ROOT/pf/p.txt"; ok $? "... who still writes in it"
for ev in "folder data: created by tslfa" "folder data: shared with user tslfb ro by tslfa" \
    "folder data: unshared from user tslfb by tslfa" "folder data: deleted by tslfa"; do
    grep -q "$ev" "$TD/tesseld.log"; ok $? "tesseld's log: $ev"
done
td_stop; ok $? "tesseld stops cleanly"
done_testing
