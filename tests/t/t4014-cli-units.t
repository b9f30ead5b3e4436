#!/bin/sh
# t4014-cli-units.t - sizes people type need a unit: `--gpu-mem 8` is a usage error that
# suggests 8G (not 8 bytes), in the CLI (run, queues) and for size strings in the API; integer
# byte counts in JSON numbers keep working.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
cli_admin_daemon

tcli run -d --gpu 0.5 --gpu-mem 8 true
is "$RC" 2 "--gpu-mem 8: usage error (exit 2)"
one_line_error; ok $? "... one line: $(head -c 200 "$TD/e")"
grep -q "8G" "$TD/e"; ok $? "... that suggests 8G"
tcli run -d --mem 512 true
is "$RC" 2 "--mem 512: usage error"
grep -q "512G" "$TD/e"; ok $? "... that suggests a unit"
tcli queues add q1 --limit gpu-mem=40
is "$RC" 2 "queues add --limit gpu-mem=40: usage error"
grep -q "40G" "$TD/e"; ok $? "... that suggests 40G"
tcli queues add q1 --limit mem=0
is "$RC" 0 "queues add --limit mem=0: 0 needs no unit"

tcli run -d --gpu 0.5 --gpu-mem 8G true
is "$RC" 0 "--gpu-mem 8G is accepted"
id=$(out)
tcli ps -a --json
is "$(jq ".jobs[] | select(.id == $id) | .gpu_mem" "$TD/o")" 8589934592 "... as 8 GiB"

api POST /v1/jobs '{"argv":["true"],"gpu":0.5,"gpu_mem":"8"}'
is "$CODE" 400 "API: gpu_mem \"8\" (a string without a unit) is 400"
jget .error.message | grep -q 8G; ok $? "... its message suggests 8G: $(jget .error.message)"
api POST /v1/jobs '{"argv":["true"],"gpu":0.5,"gpu_mem":8589934592}'
is "$CODE" 201 "API: gpu_mem as a JSON number is a byte count"
is "$(jget .gpu_mem)" 8589934592 "... of 8 GiB"
api POST /v1/jobs '{"argv":["true"],"gpu":0.5,"gpu_mem":"8G"}'
is "$CODE" 201 "API: gpu_mem \"8G\" is accepted"
api POST /v1/queues '{"name":"q2","limit":{"mem":"16"}}'
is "$CODE" 400 "API: a queue limit \"16\" without a unit is 400"

td_stop; ok $? "tesseld stops cleanly"
done_testing
