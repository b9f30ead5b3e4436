#!/bin/sh
# t7023-container-badinput.t - what a submission naming an image may not be (docs/containers.md,
# docs/security.md "Containers"): a name outside the strict set (options of an engine, paths,
# a shell's characters, upper case, an empty or long name, two tags) is refused with 400, an
# image the store does not have with 422, each with one line naming the field, through the API
# and `tessel run --image`; nothing is stored; a cwd that would cover the container's own
# files, or that is not canonical ("/tmp/.." would stand for "/"), is refused.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
. "$TESSEL_SRCDIR/tests/lib/container.sh"
ctr_daemon
count() { api GET "/v1/jobs?all=1&limit=1000" "" "$NB"; jq '.jobs | length' "$TD/out"; }
N0=$(count)
LONG=$(printf 'a%.0s' $(seq 1 300))
for bad in "--privileged" "-v" "--volume=/:/host" "testimg:1 --privileged" "../testimg" \
    "testimg/../testimg" "/etc" "./testimg" "TestImg" "testimg:1:2" "testimg:" "testimg:-1" \
    "testimg;id" 'testimg$(id)' "testimg 1" "" "a//b" "a/b/c/d/e" "$LONG" "testimg:.x" \
    ".hidden" "a..b" "a__-b"; do
    body=$(jq -nc --arg i "$bad" --arg w "$W" '{argv:["true"],image:$i,cwd:$w}')
    api POST /v1/jobs "$body" "$NB"
    is "$CODE $(jget .error.field)" "400 image" "image '$(printf %.40s "$bad")' is refused with 400, field image"
done
jget .error.message | grep -q "NAME\[:TAG\]"; ok $? "the message says what a name is ($(jget .error.message))"
api POST /v1/jobs "{\"argv\":[\"true\"],\"image\":7,\"cwd\":\"$W\"}" "$NB"
is "$CODE $(jget .error.field)" "400 image" "an image that is not a string: 400"

for unknown in nosuch nosuch:1 testimg:2 testimg:latest lab/tools:1; do
    api POST /v1/jobs "{\"argv\":[\"true\"],\"image\":\"$unknown\",\"cwd\":\"$W\"}" "$NB"
    is "$CODE $(jget .error.field)" "422 image" "unknown image '$unknown': 422, field image"
done
is "$(jget .error.message)" "image 'lab/tools:1' is not in this machine's image store (tessel images lists them)" \
    "with one line saying so"

for cwd in / /proc /sys/fs /dev /etc /run/tessel/job "$W/.." //proc "$W/./x"; do
    api POST /v1/jobs "{\"argv\":[\"true\"],\"image\":\"testimg:1\",\"cwd\":\"$cwd\"}" "$NB"
    is "$CODE $(jget .error.field)" "400 cwd" "a container's cwd cannot be $cwd: 400, field cwd"
done
is "$(count)" "$N0" "none of these was stored"

# The CLI: one line on stderr, the API's status as its exit status (docs/cli.md).
cd "$W"
TESSEL_TOKEN=$NB tcli run --image 'x;id' --cwd "$W" -- true
is "$RC" 1 "tessel run --image 'x;id' exits 1 (refused by tesseld)"
one_line_error; ok $? "with one line: $(errtext)"
TESSEL_TOKEN=$NB tcli run --image nosuch:9 --cwd "$W" -- true
ok $([ "$RC" -ne 0 ]; echo $?) "tessel run --image nosuch:9 fails (exit $RC)"
errtext | grep -q "nosuch:9' is not in this machine's image store"; ok $? "saying the image is not there"
TESSEL_TOKEN=$NB tcli run --image "" --cwd "$W" -- true
is "$RC" 2 "an empty --image is a usage error"
is "$(count)" "$N0" "nothing was stored"

done_testing
