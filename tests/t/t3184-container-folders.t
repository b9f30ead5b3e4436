#!/bin/sh
# t3184-container-folders.t - virtual folders in container jobs (tessel run --image with
# --folder; docs/folders.md, docs/containers.md): as the account nobody, in the test image, a
# folder of nobody's is at /tessel/folders/NAME and written from inside (the file is on the
# host, nobody's); ":ro" is read-only inside; a folder not shared with nobody is refused at
# submission; the host keeps no mount of it.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
. "$TESSEL_SRCDIR/tests/lib/container.sh"
ctr_daemon
ROOT="$TD/data/folders"
api POST /v1/folders '{"name":"cdata"}' "$NB"
is "$CODE $(jget .owner)" "201 nobody" "nobody makes folder cdata"
api POST /v1/folders '{"name":"adm"}'
is "$CODE" 201 "the admin makes folder adm, not shared"
J=$(nbjob "{\"argv\":[\"sh\",\"-c\",\"cat /etc/tessel-test-image >/dev/null && echo inside; echo hi >/tessel/folders/cdata/f && echo wrote; ls /tessel/folders\"],\"image\":\"testimg:1\",\"cwd\":\"$W\",\"folders\":[\"cdata\"]}")
is "$CODE $(jq -c .folders "$TD/out")" '201 ["cdata"]' "a container job of nobody with folder cdata"
wait_for '[ "$(job_state $J)" = succeeded ] || [ "$(job_state $J)" = failed ]'
is "$(job_state $J)" succeeded "it succeeds"
is "$(nblogs "$J" | tr '\n' ' ')" "inside wrote cdata " "in the image, it writes in /tessel/folders/cdata and sees only it"
is "$(cat "$ROOT/cdata/f") $(stat -c %U "$ROOT/cdata/f")" "hi nobody" "the file is in the folder on the host, nobody's"
J=$(nbjob "{\"argv\":[\"sh\",\"-c\",\"cat /tessel/folders/cdata/f; echo x >/tessel/folders/cdata/g 2>/dev/null || echo refused\"],\"image\":\"testimg:1\",\"cwd\":\"$W\",\"folders\":[\"cdata:ro\"]}")
wait_for '[ "$(job_state $J)" = succeeded ] || [ "$(job_state $J)" = failed ]'
is "$(nblogs "$J" | tr '\n' ' ')" "hi refused " "cdata:ro is read-only inside the container"
[ ! -e "$ROOT/cdata/g" ]; ok $? "... nothing written"
nbjob "{\"argv\":[\"true\"],\"image\":\"testimg:1\",\"cwd\":\"$W\",\"folders\":[\"adm:ro\"]}" >/dev/null
is "$CODE $(jget .error.message)" "400 folders[0]: no folder 'adm'" "a folder not shared with nobody: 400"
grep -q " /tessel/folders" /proc/self/mountinfo; ok $((!$?)) "the host keeps no mount of it"
done_testing
