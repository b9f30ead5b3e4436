#!/bin/sh
# t3186-daemon-folders-roles.t - the security review's M6, M5 (membership) and M7 (reserve)
# for virtual folders (docs/folders.md, docs/security.md): a project folder's creator has only
# what their current role gives (a member: rw, not manage) and, removed from the project, loses
# it at once, in the API (404) and in the ACLs on disk (no entry, cannot read); a personal
# folder's owner keeps manage; a folder is shared with a project only by one of its members or
# owners (or an admin), with the same 403 for a project one is not in and one that does not
# exist (names cannot be probed); an upload that would leave less than --disk-reserve free on
# the folders' file system is refused (507) and writes nothing.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/local.sh"
command -v curl >/dev/null && command -v jq >/dev/null && command -v getfacl >/dev/null
need $? "curl, jq and getfacl (scripts/install-deps.sh)"
[ "$(id -u)" = 0 ]
need $? "root (tesseld makes folders as root, for local accounts)"
for u in tslfa tslfb tslfc; do local_account $u || break; done
need $? "useradd to create the accounts tslfa, tslfb, tslfc"

td_setup
chmod 711 "$TD"
td_start --fake-gpus 1xT4:16G --no-cgroups
ROOT="$TD/data/folders"
A=$(token_of tslfa)
B=$(token_of tslfb)
C=$(token_of tslfc)
can() {
    case $2 in
    read) as "$1" "cat '$3' >/dev/null 2>&1" ;;
    write) as "$1" "sh -c 'echo x >$3' 2>/dev/null" ;;
    esac
}
acl_names() { # acl_names DIR USER: how many ACL entries of USER the directory has
    getfacl -cp "$1" 2>/dev/null | grep -c "^user:$2:"
}

# --- M6: a project folder's creator is a member like any other ----------------------------------
api POST /v1/projects '{"name":"vision","owner":"tslfa"}'
api POST /v1/projects/vision/members '{"user":"tslfb","role":"member"}'
is "$CODE" 201 "project vision: tslfa owner, tslfb member"
api POST /v1/folders '{"name":"pf","project":"vision"}' "$B"
is "$CODE $(jget .owner) $(jget .access)" "201 tslfb rw" \
    "member tslfb creates pf of vision: rw (their role), not manage"
can tslfb write "$ROOT/pf/b.txt"; ok $? "tslfb writes in pf"
api POST /v1/folders/pf/shares '{"user":"tslfc","mode":"rw"}' "$B"
is "$CODE" 403 "a member creator may not share pf (manage is the project owner's)"
api PATCH /v1/projects/vision/members/tslfb '{"role":"owner"}'
api GET /v1/folders/pf "" "$B"
is "$CODE $(jget .access)" "200 manage" "made an owner of vision, tslfb manages pf"
api PATCH /v1/projects/vision/members/tslfb '{"role":"member"}'
api DELETE /v1/projects/vision/members/tslfb
is "$CODE" 204 "tslfb removed from vision"
api GET /v1/folders/pf "" "$B"
is "$CODE" 404 "... the API no longer shows them pf, which they created"
api DELETE /v1/folders/pf "" "$B"
is "$CODE" 404 "... nor lets them delete it"
api POST /v1/folders/pf/shares '{"user":"tslfc","mode":"rw"}' "$B"
is "$CODE" 404 "... nor share it"
is "$(acl_names "$ROOT/pf" tslfb)" 0 "... and pf's ACL has no entry of tslfb any more"
can tslfb read "$ROOT/pf/b.txt"; ok $((!$?)) "... who cannot read their old file on disk"
api POST /v1/folders/pf/shares '{"user":"tslfb","mode":"ro"}' "$A"
is "$CODE" 200 "the project's owner may share pf with its creator, now an outsider"
can tslfb read "$ROOT/pf/b.txt"; ok $? "... who reads again through the share"
# A personal folder stays its owner's.
api POST /v1/folders '{"name":"mine"}' "$B"
api GET /v1/folders/mine "" "$B"
is "$CODE $(jget .access)" "200 manage" "a personal folder's owner manages it"
is "$(acl_names "$ROOT/mine" tslfb)" 1 "... and its ACL names them"

# --- M5: sharing with a project needs a role in it -----------------------------------------------
api POST /v1/folders '{"name":"cf"}' "$C"
api POST /v1/folders/cf/shares '{"project":"vision","mode":"rw"}' "$C"
is "$CODE $(jget .error.field)" "403 project" "tslfc, not in vision, may not share cf with it"
msg_in=$(jget .error.message | sed 's/vision/P/')
api POST /v1/folders/cf/shares '{"project":"nosuch","mode":"rw"}' "$C"
is "$CODE $(jget .error.field)" "403 project" "a project that does not exist: the same 403"
is "$(jget .error.message | sed 's/nosuch/P/')" "$msg_in" "... with the same words (no probing)"
api GET /v1/folders/cf "" "$C"
is "$(jq -c '.shares' "$TD/out")" "[]" "... and nothing was shared"
api POST /v1/projects/vision/members '{"user":"tslfc","role":"viewer"}'
api POST /v1/folders/cf/shares '{"project":"vision","mode":"ro"}' "$C"
is "$CODE" 403 "a viewer of vision may not share with it either"
api POST /v1/folders/cf/shares '{"project":"vision","mode":"ro"}'
is "$CODE" 200 "an admin may"
api POST /v1/folders/mine/shares '{"project":"vision","mode":"ro"}' "$A"
is "$CODE" 404 "tslfa, not shared mine, gets 404 (unchanged)"
api POST /v1/folders '{"name":"adata"}' "$A"
api POST /v1/folders/adata/shares '{"project":"vision","mode":"rw"}' "$A"
is "$CODE" 200 "vision's owner shares their folder with vision"

# --- M7: --disk-reserve holds on uploads ----------------------------------------------------------
echo hello >"$TD/small"
put() {
    CODE=$(curl -s -o "$TD/out" -w '%{http_code}' -X PUT -H "Authorization: Bearer $1" \
        --data-binary "@$3" "$TD_URL/v1/folders/adata/files?path=$2")
}
put "$A" ok.txt "$TD/small"
is "$CODE" 201 "an upload with the default reserve: 201"
td_stop; ok $? "tesseld stops cleanly"
td_start --fake-gpus 1xT4:16G --no-cgroups --disk-reserve 99%
put "$A" big.txt "$TD/small"
is "$CODE $(jget .error.code)" "507 insufficient_storage" \
    "with --disk-reserve 99%, an upload is refused: 507"
jget .error.message | grep -q -- "--disk-reserve"; ok $? "... the message names --disk-reserve"
[ ! -e "$ROOT/adata/big.txt" ]; ok $? "... and nothing was written"
grep -q "folder pf: shared with user tslfb ro by tslfa" "$TD/tesseld.log"
ok $? "tesseld's log: the share"
td_stop; ok $? "tesseld stops cleanly"
done_testing
