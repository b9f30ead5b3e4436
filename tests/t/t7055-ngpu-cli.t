#!/bin/sh
# t7055-ngpu-cli.t - normal GPU units through the CLI (issue 22, item 4; docs/cli.md):
# `tessel gpu-models` lists the node's models with speed and source, `set` and `reset` (admin)
# change one and print the result, bad speeds and other users are refused with one line and
# exit 1; `tessel queues set Q --limit ngpu=V` sets the limit and the NGPU column shows
# USED/-/LIMIT at the models' speeds; `--guarantee ngpu=V` is refused with one line; --json
# prints the API's answer.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
command -v jq >/dev/null || missing "jq is needed"
[ -x "$TESSEL_BUILD/bin/tesseld" ] || missing "tesseld not built"

td_setup
td_start --fake-gpus 1xA100:80G,1xT4:16G --no-cgroups --allow-root-jobs
cli_setup
# The table row of $1 in the last output, runs of spaces squeezed to one.
row() { grep -E "^ *$1 " "$TD/o" | tr -s ' '; }

admin gpu-models
is "$RC $(sed -n 1p "$TD/o" | tr -s ' ')" "0 MODEL GPUS SPEED SOURCE SET BY" "gpu-models: the header"
is "$(row 'Fake A100')" "Fake A100 1 1 default -" "Fake A100: 1 GPU, speed 1, by default"
admin gpu-models set "Fake A100" 3
is "$RC $(out)" "0 GPU model 'Fake A100': speed 3 (admin)" "gpu-models set 'Fake A100' 3"
admin gpu-models
is "$(row 'Fake A100')" "Fake A100 1 3 admin admin" "... listed with its source and who set it"
admin --json gpu-models
is "$RC $(jq -r '.gpu_models[] | select(.model == "Fake A100") | .speed' "$TD/o")" "0 3" \
    "gpu-models --json: the API's answer"
admin gpu-models set "Fake T4" 0.0001
is "$RC" 1 "a speed with 4 decimals: exit 1"
one_line_error; ok $? "... with one line on stderr"
grep -q "speed" "$TD/e"; ok $? "... naming the speed"
admin gpu-models set "Fake T4"
is "$RC" 2 "set without a speed: a usage error (exit 2)"
admin gpu-models frob
is "$RC" 2 "an unknown action: a usage error (exit 2)"
admin users add bo >/dev/null
admin tokens add --user bo
BO=$(tail -n 1 "$TD/o")
TESSEL_URL="$TD_URL" TESSEL_TOKEN="$BO" tcli gpu-models set "Fake A100" 1
is "$RC" 1 "a user who is not an admin cannot set a speed (exit 1)"
one_line_error; ok $? "... one line on stderr"
TESSEL_URL="$TD_URL" TESSEL_TOKEN="$BO" tcli gpu-models
is "$RC $(row 'Fake A100')" "0 Fake A100 1 3 admin admin" "... but reads the list, unchanged"

admin queues add mixed --limit ngpu=4
is "$RC" 0 "queues add mixed --limit ngpu=4"
admin run -d --gpu 1 --queue mixed --gpu-mem 40G -- sleep 300
J=$(out)
wait_for '[ "$(state_of "$J")" = running ]'; ok $? "a job asking 40G (the A100 only) runs"
admin queues
is "$(sed -n 1,2p "$TD/o" | grep -c NGPU)" 1 "the table has an NGPU column"
is "$(row mixed | cut -d' ' -f3-4)" "1/-/- 3/-/4" "mixed: 1 GPU used, 3 ngpu of 4 (the A100 counts 3)"
admin queues set mixed --limit ngpu=none
admin queues
is "$(row mixed | cut -d' ' -f4)" "3/-/-" "--limit ngpu=none drops the limit"
admin queues set mixed --guarantee ngpu=1
is "$RC" 1 "--guarantee ngpu=1 is refused (exit 1)"
one_line_error; ok $? "... with one line on stderr"
grep -q "guarantee.ngpu" "$TD/e"; ok $? "... naming guarantee.ngpu"
admin queues set mixed --limit ngpu=x
is "$RC" 2 "--limit ngpu=x: a usage error (exit 2)"
admin gpu-models reset "Fake A100"
is "$RC $(out)" "0 GPU model 'Fake A100': speed 1 (default)" "gpu-models reset: back to 1"
td_stop; ok $? "tesseld stops cleanly"
done_testing
