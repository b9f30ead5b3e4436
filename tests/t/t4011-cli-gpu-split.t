#!/bin/sh
# t4011-cli-gpu-split.t - `--gpu 2.5` (two whole GPUs and half of a third) is not something
# the placement core can honour yet: a job gets either a fraction of one GPU or whole GPUs.
# The CLI and the API refuse it with one line that says what can be asked, and nothing is
# stored; the forms that are accepted still are (issue 14).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
[ -x "$TESSEL_BUILD/bin/tessel" ] || missing "tessel not built"

td_setup
td_start --fake-gpus 4xT4:16G --no-cgroups || missing "tesseld did not start"
cli_setup
export TESSEL_URL="$TD_URL" TESSEL_TOKEN="$TD_ADMIN"
count() { "$TCLI" ps -a --limit 1000000 --json | jq '.jobs | length'; }
before=$(count)

tcli run -d --gpu 2.5 -- true
ok $([ "$RC" -ne 0 ] && one_line_error && grep -q "whole GPUs" "$TD/e" &&
    grep -q "one GPU" "$TD/e"; echo $?) \
    "tessel run --gpu 2.5: one line saying a share is of one GPU, above 1 only whole GPUs"
diag "$(errtext)"
api POST /v1/jobs '{"argv":["true"],"gpu":2.5}'
is "$CODE $(jget .error.field)" "400 gpu" "POST /v1/jobs gpu 2.5: 400 on the field gpu"
case "$(jget .error.message)" in
*"whole GPUs"*) ok 0 "the API's message asks for whole GPUs above 1" ;;
*) ok 1 "the API's message asks for whole GPUs above 1 (got: $(jget .error.message))" ;;
esac
is "$(count)" "$before" "nothing was stored"

tcli run -d --gpu 2 -- true
is "$RC" "0" "--gpu 2 (whole GPUs) is accepted"
tcli run -d --gpu 0.5 -- true
is "$RC" "0" "--gpu 0.5 (a share of one GPU) is accepted"
is "$(count)" "$((before + 2))" "those two are stored"

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
