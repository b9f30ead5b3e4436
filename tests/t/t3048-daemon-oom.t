#!/bin/sh
# t3048-daemon-oom.t - a job that the kernel's out-of-memory killer ends (here: over its --mem
# limit, in its own cgroup) is named as such: failed with the reason "host out of memory: ...",
# not "killed by signal 9"; also when the process killed was a child and the job's main process
# exited with a status of its own.  A job that fails for another reason keeps its own reason.
# Needs root and cgroup controllers (v2, or v1 memory+cpu+freezer).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
[ -x "$TESSEL_BUILD/bin/tesseld" ] || missing "tesseld not built"
command -v sqlite3 >/dev/null || missing "sqlite3 is needed"
[ "$(id -u)" = 0 ] || missing "not root: tesseld cannot create cgroups"

td_setup
td_start --fake-gpus 1xT4:16G || missing "tesseld did not start"
cli_setup
api GET /v1/nodes
MODE=$(jget '.nodes[0].cgroups')
[ "$MODE" = none ] && missing "no usable cgroup controllers (neither v2 nor v1 memory+cpu+freezer)"
diag "cgroups $MODE"
INST=$(sqlite3 "$TD/data/tessel.db" "select value from meta where key='instance'")
if [ "$MODE" = v2 ]; then TD_CG=/sys/fs/cgroup/tessel/$INST; else
    TD_CG="/sys/fs/cgroup/memory/tessel/$INST /sys/fs/cgroup/cpu/tessel/$INST /sys/fs/cgroup/freezer/tessel/$INST"
fi

# tail /dev/zero holds an ever longer line: over 64 MiB the kernel kills it.
api POST /v1/jobs '{"argv":["tail","/dev/zero"],"mem":"64M"}'
A=$(jget .id)
wait_for '[ "$(job_state '"$A"')" = failed ]'
ok $? "a job over its 64 MiB limit fails"
api GET "/v1/jobs/$A"
is "$(jget .reason)" "host out of memory: the job went over its memory limit (--mem 64.0 MiB) and the kernel killed it" \
    "its reason names the host's out-of-memory killer and the limit, not signal 9"
is "$(jget .signal) $(jget .end_cause)" "9 host_oom" "its signal is still recorded (9); end_cause host_oom"

# The killed process is a child; the job's shell goes on and exits 3.
admin run --quiet --mem 64M -- sh -c 'tail /dev/zero; exit 3'
is "$RC" 3 "tessel run: the job's own status (3)"
admin ps -a --json
is "$(jq -r '[.jobs[] | select(.id != '"$A"' and .exit_code == 3) | .reason] | join(",")' "$TD/o")" \
    "host out of memory: the job went over its memory limit (--mem 64.0 MiB) and the kernel killed it" \
    "tessel ps: host out of memory, though the job's main process exited on its own"

# Control: a job that fails without running out of memory keeps its own reason.
api POST /v1/jobs '{"argv":["sh","-c","exit 4"],"mem":"64M"}'
C=$(jget .id)
wait_for '[ "$(job_state '"$C"')" = failed ]'
api GET "/v1/jobs/$C"
is "$(jget .reason)" "exited with status 4" "a job that just fails: exited with status 4"
td_stop
ok $? "tesseld stops cleanly (no sanitizer report)"
done_testing
