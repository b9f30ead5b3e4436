#!/bin/sh
# t4002-cli-badinput.t - bad input to the CLI: one line on stderr and a non-zero exit (2 for a
# usage error found before anything is sent, 1 when tesseld refuses), and nothing submitted.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
command -v jq >/dev/null || missing "jq is needed"
[ -x "$TESSEL_BUILD/bin/tesseld" ] || missing "tesseld not built"

td_setup
td_start --fake-gpus 1xRTX4090:24G --no-cgroups || missing "tesseld did not start"
cli_setup
export TESSEL_URL="$TD_URL" TESSEL_TOKEN="$TD_ADMIN"

bad() { # bad EXIT DESCRIPTION ARG...
    _want=$1 _what=$2
    shift 2
    tcli "$@"
    is "$RC" "$_want" "$_what: exit $_want"
    one_line_error; ok $? "... one line: $(head -c 200 "$TD/e")"
}
bad 2 "--gpu 1.5 (a share above one GPU)" run --gpu 1.5 true
bad 2 "--gpu 0" run --gpu 0 true
bad 2 "--gpu abc" run --gpu abc true
bad 2 "--gpu -0.5" run --gpu -0.5 true
bad 2 "--gpu 0.0001 (below a thousandth)" run --gpu 0.0001 true
bad 2 "--gpu and --gpus together" run --gpu 0.5 --gpus 1 true
bad 2 "--gpu-mem 12Q (unknown unit)" run --gpu 1 --gpu-mem 12Q true
bad 2 "--gpu-mem -1G" run --gpu 1 --gpu-mem -1G true
bad 2 "--mem 0" run --mem 0 true
bad 2 "--cpu -2" run --cpu -2 true
bad 2 "--class batch" run --class batch true
bad 2 "--priority 5000" run --priority 5000 true
bad 2 "--cwd relative" run --cwd relative true
bad 2 "an unknown option" run --gpuz 1 true
bad 2 "an option without its value" run --gpu
bad 2 "run without a command" run --gpu 0.5
bad 1 "--gpu-mem 100G on a 24G GPU (tesseld: unsatisfiable)" run --gpu 0.5 --gpu-mem 100G true
grep -q '100 GiB of GPU memory asked, the largest GPU has 24.0 GiB' "$TD/e"; ok $? "... the message says what was asked and what there is, in GiB"
bad 1 "--gpus 2 on a one-GPU machine" run --gpus 2 true
bad 1 "--cpu 4000 (more than the node)" run --cpu 4000 true
bad 2 "--mem 9000P (above 2^63 bytes)" run --mem 9000P true
bad 1 "--mem 9000T (more than the node)" run --mem 9000T true
bad 1 "--queue nope (no such queue)" run --queue nope true
bad 2 "kill abc" kill abc
bad 2 "kill without an id" kill
bad 1 "kill of an unknown job" kill 999999
bad 1 "logs of an unknown job" logs 999999
bad 2 "logs without an id" logs
bad 2 "ps with an argument" ps extra
bad 2 "queues add without a name" queues add
bad 2 "queues set without a change" queues set default
bad 2 "queues add --max-gpu x" queues add q --max-gpu x
bad 2 "tokens rm x" tokens rm x
bad 2 "an unknown users action" users frob
bad 1 "login with a malformed URL" login --url ftp://x --token t
tcli ps -a --json
is "$(jq '.jobs | length' "$TD/o")" "0" "none of the bad requests left a job behind"

td_stop; ok $? "tesseld stops cleanly"
done_testing
