#!/bin/sh
# t3185-daemon-folders-files.t - files of virtual folders through the API (GET and PUT
# /v1/folders/NAME/files?path=P; docs/folders.md), read and written as the caller's own local
# account, never as root: the owner uploads (201, then 200 replacing) and the file on disk is
# theirs with the folder's ACL; a directory lists its entries (name, type, size, mtime) by
# name; a download answers the bytes; a ro user reads and cannot upload (403); a file its owner
# made private is refused to another sharer (403, the kernel's answer as that account); an
# outsider gets 404; paths with '..', '.', empty names, a leading '/', links (to a file outside,
# to /) and a link planted where an upload goes are refused and nothing outside changes; a
# file over 8 MiB is 413; a Tessel user with no local account is 403; a body over --max-body
# is 413; the answers match docs/openapi.json.
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
chmod 711 "$TD"
td_start --fake-gpus 1xT4:16G --no-cgroups --max-body 1M
ROOT="$TD/data/folders"
A=$(token_of tslfa)
B=$(token_of tslfb)
C=$(token_of tslfc)
schema() {
    "$TESSEL_SRCDIR/tests/openapi/validate" "$TESSEL_SRCDIR/docs/openapi.json" "$1" "$2" "$CODE" \
        "$TD/out" 2>"$TD/verr"
    ok $? "$1 $2 $CODE matches its schema in docs/openapi.json"
    sed 's/^/# /' "$TD/verr"
}
# put TOKEN PATH FILE: PUT the bytes of FILE; get TOKEN PATH: GET (the answer in $TD/out).
put() {
    CODE=$(curl -s -o "$TD/out" -w '%{http_code}' -X PUT -H "Authorization: Bearer $1" \
        --data-binary "@$3" "$TD_URL/v1/folders/data/files?path=$2")
}
get() {
    CODE=$(curl -s -o "$TD/out" -w '%{http_code}' -H "Authorization: Bearer $1" \
        "$TD_URL/v1/folders/data/files?path=$2")
}
api POST /v1/folders '{"name":"data"}' "$A"
is "$CODE" 201 "tslfa makes folder data"

printf 'hello\n' >"$TD/hello"
put "$A" a.txt "$TD/hello"
is "$CODE $(jget .path) $(jget .size)" "201 a.txt 6" "tslfa uploads a.txt: 201"
schema PUT /v1/folders/{name}/files
is "$(cat "$ROOT/data/a.txt") $(stat -c %U "$ROOT/data/a.txt")" "hello tslfa" "on disk: the bytes, tslfa's file"
getfacl -cp "$ROOT/data/a.txt" 2>/dev/null | grep -q '^user:tslfa:rw'; ok $? "... with the folder's ACL"
printf 'hello again\n' >"$TD/hello2"
put "$A" a.txt "$TD/hello2"
is "$CODE $(jget .size) $(cat "$ROOT/data/a.txt")" "200 12 hello again" "uploading again replaces it: 200"
mkdir "$ROOT/data/sub" && chown tslfa "$ROOT/data/sub"
put "$A" sub/b.bin "$TD/hello"
is "$CODE" 201 "an upload into a subdirectory"
put "$A" nosub/b.bin "$TD/hello"
is "$CODE $(jget .error.field)" "404 path" "into a directory that does not exist: 404"
get "$A" ""
is "$CODE $(jq -c '[.entries[] | [.name, .type, .size]]' "$TD/out")" \
    '200 [["a.txt","file",12],["sub","dir",4096]]' "the folder lists its entries by name"
schema GET /v1/folders/{name}/files
[ "$(jq '.entries[0].mtime' "$TD/out")" -gt 0 ]; ok $? "... with their mtime"
get "$A" a.txt
is "$CODE $(cat "$TD/out")" "200 hello again" "a download answers the file's bytes"

# --- other accounts ------------------------------------------------------------------------------
get "$B" a.txt
is "$CODE $(jget .error.message)" "404 no folder 'data'" "tslfb (not shared): 404"
api POST /v1/folders/data/shares '{"user":"tslfb","mode":"ro"}' "$A"
get "$B" a.txt
is "$CODE $(cat "$TD/out")" "200 hello again" "shared ro, tslfb downloads it"
put "$B" b.txt "$TD/hello"
is "$CODE $(jget .error.code)" "403 forbidden" "... and cannot upload"
[ ! -e "$ROOT/data/b.txt" ]; ok $? "... nothing written"
printf 'secret\n' >"$ROOT/data/private" && chown tslfa "$ROOT/data/private" &&
    chmod 600 "$ROOT/data/private" && setfacl -b "$ROOT/data/private"
get "$B" private
is "$CODE $(jget .error.field)" "403 path" "a file tslfa made private is refused to tslfb (read as tslfb's account)"
api POST /v1/folders/data/shares '{"user":"tslfb","mode":"rw"}' "$A"
# A change of shares rewrites every file's ACL (docs/folders.md): made private again after it.
chmod 600 "$ROOT/data/private" && setfacl -b "$ROOT/data/private"
put "$B" private "$TD/hello"
is "$CODE $(cat "$ROOT/data/private")" "403 secret" "... nor may tslfb overwrite it, even with rw"
put "$B" b.txt "$TD/hello"
is "$CODE $(stat -c %U "$ROOT/data/b.txt")" "201 tslfb" "tslfb (rw) uploads b.txt: their own file"
api POST /v1/users '{"name":"ghost"}'
api POST /v1/tokens '{"user":"ghost"}'
G=$(jget .token)
api POST /v1/folders '{"name":"gf"}' "$G"
CODE=$(curl -s -o "$TD/out" -w '%{http_code}' -H "Authorization: Bearer $G" "$TD_URL/v1/folders/gf/files")
is "$CODE $(jget .error.code)" "403 forbidden" "a Tessel user with no local account: 403"
grep -q "has none on this host" "$TD/out"; ok $? "... told why"

# --- hostile paths -------------------------------------------------------------------------------
printf 'outside\n' >"$TD/outside"
chmod 644 "$TD/outside"
ln -s "$TD/outside" "$ROOT/data/l-out"
ln -s / "$ROOT/data/l-root"
for p in ../x %2e%2e/x sub/../a.txt ./a.txt /a.txt a.txt/ sub//b.bin . ..; do
    get "$A" "$p"
    is "$CODE $(jget .error.field)" "400 path" "GET path=$p: 400"
done
for p in l-out l-root/etc/passwd; do
    get "$A" "$p"
    is "$CODE $(jget .error.field)" "400 path" "GET path=$p (a link): 400, not followed"
done
put "$A" l-out "$TD/hello"
is "$CODE $(cat "$TD/outside")" "400 outside" "PUT onto a link out: 400, the file outside unchanged"
put "$A" l-root/tmp/x "$TD/hello"
is "$CODE" 400 "PUT through a link to /: 400"
put "$A" ../x "$TD/hello"
is "$CODE" 400 "PUT path=../x: 400"
[ ! -e "$ROOT/x" ] && [ ! -e "$TD/data/x" ]; ok $? "nothing made outside the folder"
get "$A" sub
is "$CODE $(jq -c '[.entries[].name]' "$TD/out")" '200 ["b.bin"]' "a subdirectory lists"

# --- sizes ---------------------------------------------------------------------------------------
head -c 9000000 /dev/zero >"$ROOT/data/big" && chown tslfa "$ROOT/data/big"
get "$A" big
is "$CODE $(jget .error.code)" "413 payload_too_large" "a file over 8 MiB: 413"
grep -q "use rsync or scp" "$TD/out"; ok $? "... pointing at rsync and scp"
head -c 2000000 /dev/zero >"$TD/twomeg"
put "$A" two "$TD/twomeg"
is "$CODE" 413 "an upload over --max-body (1M here): 413"
[ ! -e "$ROOT/data/two" ]; ok $? "... nothing written"

# --- a quota (measured, refused at the API) -----------------------------------------------------
api POST /v1/folders '{"name":"q"}' "$A"
api PATCH /v1/folders/q '{"quota":"64K"}' "$A"
is "$CODE $(jget .error.field)" "403 quota" "the owner may not set a quota: 403"
api POST /v1/folders '{"name":"q2","quota":"1G"}' "$A"
is "$CODE $(jget .error.field)" "403 quota" "... nor give one at creation"
api PATCH /v1/folders/q '{"quota":"64K"}'
is "$CODE $(jget .quota) $(jget .used)" "200 65536 null" "an admin sets q's quota to 64 KiB (not measured yet)"
schema PATCH /v1/folders/{name}
head -c 30000 /dev/zero >"$TD/30k"
qput() {
    CODE=$(curl -s -o "$TD/out" -w '%{http_code}' -X PUT -H "Authorization: Bearer $A" \
        --data-binary "@$2" "$TD_URL/v1/folders/q/files?path=$1")
}
qput one "$TD/30k"
is "$CODE" 201 "a 30 KB upload under the quota: 201"
qput two "$TD/30k"
is "$CODE" 201 "a second one: 201 (about 64 KB used now, counted at once)"
qput three "$TD/30k"
is "$CODE $(jget .error.code)" "507 insufficient_storage" "a third would pass the quota: 507"
grep -q "folder 'q' is at its quota" "$TD/out"; ok $? "... saying so"
[ ! -e "$ROOT/q/three" ]; ok $? "... nothing written"
api GET /v1/folders/q "" "$A"
[ "$(jget .used)" -ge 60000 ] && [ "$(jget .used_at)" != null ]; ok $? "the folder shows its measured use ($(jget .used) bytes)"
rm "$ROOT/q/one" "$ROOT/q/two"
qput three "$TD/30k"
is "$CODE" 507 "files deleted on the host: not seen until the next measurement"
api GET /v1/folders/q/usage "" "$A"
qput three "$TD/30k"
is "$CODE" 201 "du measures it again: the upload passes"
api PATCH /v1/folders/q '{"quota":null}'
is "$CODE $(jget .quota)" "200 null" "an admin removes the quota"
head -c 900000 /dev/zero >"$TD/900k"
qput four "$TD/900k"
is "$CODE" 201 "without a quota, 900 KB pass"
td_stop; ok $? "tesseld stops cleanly"
done_testing
