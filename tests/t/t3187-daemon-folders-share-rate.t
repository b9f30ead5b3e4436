#!/bin/sh
# t3187-daemon-folders-share-rate.t - the security review's M5 (its rate-limit part) for
# virtual folders (docs/folders.md, "Keeping the ACLs true"): every share change (share,
# unshare) may rewrite a folder's ACLs under tesseld's lock, so a user makes 10 at once and
# then one every 5 s: the 11th in a row is 429 too_many_requests with Retry-After and changes
# nothing; another user and an admin are not held by it.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/local.sh"
command -v curl >/dev/null && command -v jq >/dev/null
need $? "curl and jq (scripts/install-deps.sh)"
[ "$(id -u)" = 0 ]
need $? "root (tesseld makes folders as root, for local accounts)"
for u in tslfa tslfb; do local_account $u || break; done
need $? "useradd to create the accounts tslfa, tslfb"

td_setup
chmod 711 "$TD"
td_start --fake-gpus 1xT4:16G --no-cgroups
A=$(token_of tslfa)
B=$(token_of tslfb)
api POST /v1/folders '{"name":"data"}' "$A"
api POST /v1/folders '{"name":"bdata"}' "$B"
codes=""
for i in 1 2 3 4 5; do
    api POST /v1/folders/data/shares '{"user":"tslfb","mode":"ro"}' "$A"
    codes="$codes$CODE "
    api DELETE /v1/folders/data/shares/users/tslfb "" "$A"
    codes="$codes$CODE "
done
is "$codes" "200 200 200 200 200 200 200 200 200 200 " "tslfa makes 10 share changes at once"
CODE=$(curl -s -o "$TD/out" -D "$TD/h" -w '%{http_code}' -X POST -H "Authorization: Bearer $A" \
    -H 'Content-Type: application/json' --data-binary '{"user":"tslfb","mode":"rw"}' \
    "$TD_URL/v1/folders/data/shares")
is "$CODE $(jget .error.code)" "429 too_many_requests" "the 11th in a row: 429"
jget .error.message | grep -q "share rate limit: user tslfa"; ok $? "... saying why: $(jget .error.message)"
grep -qi '^Retry-After: [1-9]' "$TD/h"; ok $? "... with Retry-After"
api GET /v1/folders/data "" "$A"
is "$(jq -c '.shares' "$TD/out")" "[]" "... and nothing changed"
api POST /v1/folders/bdata/shares '{"user":"tslfa","mode":"ro"}' "$B"
is "$CODE" 200 "another user is not held by it"
api POST /v1/folders/data/shares '{"user":"tslfb","mode":"ro"}'
is "$CODE" 200 "an admin is not limited"
td_stop; ok $? "tesseld stops cleanly"
done_testing
