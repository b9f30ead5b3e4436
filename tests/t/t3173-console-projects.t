#!/bin/sh
# t3173-console-projects.t - the console's project pages in a real browser (Debian's Chromium,
# playwright-core: web/test/projects.mjs): a viewer sees her projects, the project's members,
# the quota and use of its queue and a member's running job, with no member controls; an
# outsider is told the project does not exist for him; the owner adds a member (an unknown user
# refused beside the field), changes a role, and is refused stepping down as the last owner.
# The owner's view is saved as $TESSEL_BUILD/screenshots/projects/console-project.png
# (docs/screenshots/console-project.png, docs/console.md).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
CHROMIUM=${TESSEL_CHROMIUM:-/usr/bin/chromium}
WEBSRC=$TESSEL_SRCDIR/web
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
[ -x "$CHROMIUM" ] || missing "no Chromium at $CHROMIUM (scripts/install-deps.sh --browser)"
command -v node >/dev/null || missing "no node (scripts/install-deps.sh --browser)"
[ -f "$WEBSRC/node_modules/playwright-core/package.json" ] ||
    missing "web/node_modules is missing: (cd web && npm ci) (make does it when npm is present)"
[ -f "$TESSEL_BUILD/share/tessel/web/app/projects.js" ] || missing "console not installed (run make)"

td_setup
td_start --fake-gpus 2xRTX4090:24G --no-cgroups --allow-root-jobs
OLGA=$(token_of olga)
MIKE=$(token_of mike)
VERA=$(token_of vera)
OSCAR=$(token_of oscar)
api POST /v1/queues '{"name":"vq","guarantee":{"gpu":0.5},"limit":{"gpu":1}}'
api POST /v1/projects '{"name":"vision","queue":"vq","owner":"olga","description":"the vision team: detection models"}'
is "$CODE" 201 "project vision (queue vq) with olga its owner"
api POST /v1/projects/vision/members '{"user":"mike"}' "$OLGA"
api POST /v1/projects/vision/members '{"user":"vera","role":"viewer"}' "$OLGA"
is "$CODE" 201 "mike a member, vera a viewer"
api POST /v1/jobs '{"argv":["sleep","300"],"project":"vision","gpu":0.5,"name":"train-detector"}' "$MIKE"
JOB=$(jget .id)
wait_for '[ "$(job_state "$JOB")" = running ]'; ok $? "mike's job $JOB runs in vision with half a GPU"

SHOTS=$TESSEL_BUILD/screenshots/projects
rm -rf "$SHOTS"
TESSEL_URL=$TD_URL OWNER=$OLGA VIEWER=$VERA OUTSIDER=$OSCAR JOB=$JOB SHOTS=$SHOTS \
    CHROMIUM=$CHROMIUM HOME=$TD timeout 300 node "$WEBSRC/test/projects.mjs" >"$TD/browser.out" 2>&1
st=$?
while IFS= read -r line; do
    case $line in
    "PASS "*) ok 0 "${line#PASS }" ;;
    "FAIL "*) ok 1 "${line#FAIL }" ;;
    *) diag "$line" ;;
    esac
done <"$TD/browser.out"
is "$st" "0" "the browser session ran to its end"
[ -s "$SHOTS/console-project.png" ]; ok $? "screenshot saved: $SHOTS/console-project.png"
td_stop; ok $? "tesseld stops cleanly (no sanitizer report)"
done_testing
