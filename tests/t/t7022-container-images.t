#!/bin/sh
# t7022-container-images.t - the image store (docs/containers.md): `tessel images` and
# GET /v1/images list the images an admin put into <data-dir>/images (NAME/TAG/rootfs, root's
# all the way down), for any user; what is not root's, or is reached through a symbolic link,
# is neither listed nor run; an image removed after a job was accepted fails that job at its
# start with the reason (nothing else is lost).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
. "$TESSEL_SRCDIR/tests/lib/container.sh"
ctr_daemon
S="$TD/data/images"
# A second image with a name in two parts and a tag of its own, as an admin makes it: a copy
# of a root file system (docs/containers.md lists the ways).
mkdir -p "$S/lab/tools/2.4-cuda"
cp -a "$IMG" "$S/lab/tools/2.4-cuda/rootfs"

tcli images
is "$RC" 0 "tessel images answers"
out | sed "s/^/# /"
is "$(out | awk 'NR > 1 {print $1}' | tr '\n' ' ')" "lab/tools:2.4-cuda testimg:1 " \
    "it lists both images, sorted, as NAME:TAG"
out | head -1 | grep -q '^IMAGE  *NAME  *TAG  *CREATED'; ok $? "with a header"
api GET /v1/images "" "$NB"
is "$CODE $(jq -r '[.images[].image] | join(" ")' "$TD/out")" "200 lab/tools:2.4-cuda testimg:1" \
    "GET /v1/images lists them to any user (nobody)"
is "$(jq -r '.images[0] | "\(.name) \(.tag)"' "$TD/out")" "lab/tools 2.4-cuda" "with name and tag"
TESSEL_TOKEN=$NB tcli images --json
is "$(out | jq -r '.images | length')" 2 "tessel images --json prints the API's JSON"
api GET /v1/images "" ""
is "$CODE" 401 "not without a token"

# A store other users can reach: no image is listed or run (a file of an image that is not
# root's could be changed from the host for every user's jobs), with the reason.
chmod 755 "$S"
api GET /v1/images "" "$NB"
is "$CODE $(jq -r '.images | length' "$TD/out")" "200 0" "a store reachable by others: no image is listed"
grep -q "reachable by root alone" "$TD/tesseld.log"; ok $? "tesseld's log says why"
nbjob "{\"argv\":[\"true\"],\"image\":\"testimg:1\",\"cwd\":\"$W\"}" >/dev/null
is "$CODE" 422 "a job naming an image of it is refused (422)"
jq -r .error.message "$TD/out" | grep -q "reachable by root alone"; ok $? "saying why"
chmod 700 "$S"

# Not root's: a user's directory in the store is not an image, nor is a link to one.
mkdir -p "$S/mine/1"
cp -a "$IMG" "$S/mine/1/rootfs"
chown nobody "$S/mine/1/rootfs"
ln -s "$S/testimg" "$S/linked"
tcli images
is "$(out | awk 'NR > 1 {print $1}' | tr '\n' ' ')" "lab/tools:2.4-cuda testimg:1 " \
    "a root file system owned by nobody, or reached through a link, is not listed"
N0=$(api GET "/v1/jobs?all=1" "" "$NB"; jq '.jobs | length' "$TD/out")
nbjob "{\"argv\":[\"true\"],\"image\":\"mine:1\",\"cwd\":\"$W\"}" >/dev/null
is "$CODE" 422 "a job naming it is refused (422)"
jq -r .error.message "$TD/out" | grep -q "not a directory owned by root"; ok $? "saying why"
nbjob "{\"argv\":[\"true\"],\"image\":\"linked:1\",\"cwd\":\"$W\"}" >/dev/null
is "$CODE" 422 "a job naming the link is refused (422)"
N1=$(api GET "/v1/jobs?all=1" "" "$NB"; jq '.jobs | length' "$TD/out")
is "$N1" "$N0" "nothing was stored"

# A job accepted, its image removed before it starts: it fails at its start, with the reason.
api POST /v1/jobs '{"argv":["sleep","3"],"gpus":1}'
H=$(jget .id)
wait_for '[ "$(job_state $H)" = running ]'
X=$(nbjob "{\"argv\":[\"true\"],\"image\":\"lab/tools:2.4-cuda\",\"cwd\":\"$W\",\"gpus\":1}")
is "$(job_state "$X")" pending "a job of lab/tools:2.4-cuda waits for the GPU"
rm -rf "$S/lab"
wait_for '[ "$(job_state $X)" = failed ]'; ok $? "its image removed meanwhile, it fails at its start"
api GET "/v1/jobs/$X" "" "$NB"
jq -r .reason "$TD/out" | grep -q "is not in this machine's image store"; ok $? "with the reason ($(jq -r .reason "$TD/out"))"
Y=$(nbjob "{\"argv\":[\"sh\",\"-c\",\"cat /etc/tessel-test-image\"],\"image\":\"testimg:1\",\"cwd\":\"$W\"}")
wait_for '[ "$(job_state $Y)" = succeeded ]'; ok $? "the other image still runs"
done_testing
