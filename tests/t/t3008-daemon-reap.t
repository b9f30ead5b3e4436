#!/bin/sh
# t3008-daemon-reap.t - nothing of a job lingers as a zombie, whatever PID 1 does: the shim is a
# child subreaper (a process the job leaves behind is re-parented to it and reaped), and so is
# tesseld (a job whose shim died is re-parented to tesseld and reaped by the tick).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"

td_setup
td_start --no-cgroups || missing "tesseld did not start"
G="$TD/go"
mkdir -p "$G"
ppid_of() { sed -n 's/^PPid:[[:space:]]*//p' "/proc/$1/status" 2>/dev/null; }

# The job starts a background loop from a subshell that exits at once: the loop's parent is
# gone while the job runs.  The loop ends when the test says so (not after a fixed time, which
# a loaded machine could overrun before the check of its parent).
api POST /v1/jobs "{\"argv\":[\"sh\",\"-c\",\"(while [ ! -e $G/free ]; do sleep 0.05; done & echo \$! > $G/orphan); while [ ! -e $G/go ]; do sleep 0.05; done\"]}"
J=$(jget .id)
wait_for '[ -s "$G/orphan" ] && [ -s "$TD/data/jobs/$J/pid" ]'
ok $? "the job runs and has left an orphan"
read -r SHIM _ JOBPID <"$TD/data/jobs/$J/pid"
O=$(cat "$G/orphan")
# Its parent, the subshell, exits on its own schedule: wait for the re-parenting.
wait_for '[ "$(ppid_of "$O")" = "$SHIM" ]'
ok $? "the orphan is re-parented to the job's shim (a subreaper): parent $(ppid_of "$O"), shim $SHIM"
touch "$G/free"
wait_for '[ ! -e "/proc/$O" ]'
ok $? "when it exits, the shim reaps it (no zombie left)"
touch "$G/go"
wait_for '[ "$(job_state $J)" = succeeded ]'
ok $? "the job then succeeds"

# A shim killed: its job is re-parented to tesseld, which records the loss, kills the job and
# reaps it.
api POST /v1/jobs '{"argv":["sleep","300"]}'
K=$(jget .id)
wait_for '[ -s "$TD/data/jobs/$K/pid" ]'
read -r SHIM _ JOBPID <"$TD/data/jobs/$K/pid"
kill -9 "$SHIM"
wait_for '[ "$(job_state $K)" = failed ]'
ok $? "a job whose shim died is failed"
is "$(jget .reason)" "supervisor lost: tessel-shim died before the job's end" "and says why"
wait_for '[ ! -e "/proc/$JOBPID" ] && [ ! -e "/proc/$SHIM" ]'
ok $? "neither the shim nor its job is left, not even as a zombie"

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
