#!/bin/sh
# t7010-console-history.t - the console's usage history after a fresh page load, in a real
# browser (Debian's Chromium, playwright-core: web/test/history.mjs).  tesseld's store is
# seeded (test-only tessel-hist-seed, the real write path) with 8 days of 10 s samples: GPU 0
# busy 40 % with a job, GPU 1 idle throughout, queue default and user alice with 0.5 GPU.  The
# overview shows the last hour at once, then the day and the week by its buttons and by a
# fresh load of #/?range=week, the idle GPU idle in every point and in its caption; the
# header of a GPU with no job says "idle", not "0 % busy".  Asserted from the charts' data
# attributes, not pixels.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
CHROMIUM=${TESSEL_CHROMIUM:-/usr/bin/chromium}
WEBSRC=$TESSEL_SRCDIR/web
SEED=$TESSEL_BUILD/tests/daemon/tessel-hist-seed
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
[ -x "$CHROMIUM" ] || missing "no Chromium at $CHROMIUM (scripts/install-deps.sh --browser)"
command -v node >/dev/null || missing "no node (scripts/install-deps.sh --browser)"
[ -f "$WEBSRC/node_modules/playwright-core/package.json" ] ||
    missing "web/node_modules is missing: (cd web && npm ci) (make does it when npm is present)"
[ -f "$TESSEL_BUILD/share/tessel/web/index.html" ] || missing "console not installed (run make)"
[ -x "$SEED" ] || missing "tessel-hist-seed not built"

td_setup
td_start --fake-gpus 2xRTX4090:24G --no-cgroups --allow-root-jobs
curl -s -H "Authorization: Bearer $TD_ADMIN" "$TD_URL/v1/gpus" >"$TD/gpus"
UUID0=$(jq -r '.gpus[0].uuid' "$TD/gpus")
UUID1=$(jq -r '.gpus[1].uuid' "$TD/gpus")
td_stop
printf '%s\n' "gpu $UUID0 40 0 8000000000 12000000000 500 1 0" "gpu $UUID1 - 1 0 0 0 0 0" \
    "queue default - 0 8000000000 12000000000 500 1 0" \
    "user alice - 0 8000000000 12000000000 500 1 0" >"$TD/series"
"$SEED" "$TD/data/tessel.db" 10s 8d 8d <"$TD/series"
ok $? "8 days of 10 s samples seeded"
td_start --fake-gpus 2xRTX4090:24G --no-cgroups --allow-root-jobs
# A job now: its GPU's header shows a busy figure, the other GPU's "idle".
api POST /v1/jobs '{"argv":["sleep","300"],"gpu":0.5}'
JOB=$(jget .id)
wait_for '[ "$(job_state "$JOB")" = running ]'; ok $? "job $JOB runs"
NOW=$(jq -r '.placement[0].gpu' "$TD/out")
SHOTS=$TESSEL_BUILD/screenshots/history
TESSEL_URL=$TD_URL TESSEL_ADMIN=$TD_ADMIN BUSY_GPU=0 IDLE_GPU=1 BUSY_NOW=$NOW SHOTS=$SHOTS \
    CHROMIUM=$CHROMIUM HOME=$TD timeout 300 node "$WEBSRC/test/history.mjs" >"$TD/browser.out" 2>&1
st=$?
while IFS= read -r line; do
    case $line in
    "PASS "*) ok 0 "${line#PASS }" ;;
    "FAIL "*) ok 1 "${line#FAIL }" ;;
    *) diag "$line" ;;
    esac
done <"$TD/browser.out"
is "$st" "0" "the browser session ran to its end"
td_stop; ok $? "tesseld stops cleanly (no sanitizer report)"
done_testing
