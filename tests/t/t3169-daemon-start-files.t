#!/bin/sh
# t3169-daemon-start-files.t - an upgrade with jobs running: a job started by tesseld up to
# 7fa4294 (its shim writes the exit and pid records to files beside the start lock,
# starts/ID.exit and starts/ID.pid, and the lock says so) is adopted by this tesseld, which
# writes both records into the start lock itself (starts/ID.lock; src/agent/runner.h,
# TAGENT_LOCK_*).  --test-start-files makes a tesseld start jobs exactly as 7fa4294 did (the
# shim is the same binary: its --exit-file and --pid-file are unchanged).  Job A ends after the
# restart (its exit status from starts/A.exit), job C ends while tesseld is down (its record
# waits in starts/C.exit), job B is cancelled after the restart (its pids from starts/B.pid:
# its process is gone).  A job the new tesseld starts has no record file beside its lock.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"

td_setup
FAKE="--fake-gpus 1xT4:16G --no-cgroups"
td_start $FAKE --test-start-files || missing "tesseld did not start"
G="$TD/go"
mkdir -p "$G"
held() { # held NAME STATUS -> id
    api POST /v1/jobs "{\"argv\":[\"sh\",\"-c\",\"while [ ! -e $G/$1 ]; do sleep 0.05; done; exit $2\"]}"
    jget .id
}
jobpid() { read -r _ _ p <"$TD/data/jobs/$1/pid" && echo "$p"; }
S="$TD/data/starts"

A=$(held a 3)
B=$(held b 0)
C=$(held c 0)
wait_for "[ -s '$S/$A.pid' ] && [ -s '$S/$B.pid' ] && [ -s '$S/$C.pid' ]"
ok $? "the three jobs run, their pid records in starts/ID.pid (the old layout)"
is "$(cat "$S/$A.lock")" "exit record: <id>.exit
pid record: <id>.pid" "A's start lock says so, as 7fa4294 wrote it"
is "$(start_record "$A" pid)" "" "and holds no record itself"
BPID=$(jobpid "$B")

td_kill9
touch "$G/c"
wait_for "[ -s '$S/$C.exit' ]"
ok $? "C ends while tesseld is down: its shim writes starts/$C.exit"

td_start $FAKE || missing "tesseld did not restart"
wait_for "[ \"\$(job_state $C)\" = succeeded ]"
ok $? "the new tesseld records C's end from starts/$C.exit"
is "$(job_state "$A") $(job_state "$B")" "running running" "A and B are adopted, running"
touch "$G/a"
wait_for "[ \"\$(job_state $A)\" = failed ]"
api GET "/v1/jobs/$A"
is "$(jget .state) $(jget .exit_code)" "failed 3" "A's end is recorded with its status (starts/$A.exit)"
api POST "/v1/jobs/$B/cancel" ""
wait_for "[ \"\$(job_state $B)\" = cancelled ]"
ok $? "B is cancelled"
wait_for "! kill -0 $BPID 2>/dev/null"
ok $? "B's process ($BPID, from starts/$B.pid) got the signal and is gone"
left=""
for j in $A $B $C; do
    for f in lock exit pid; do [ -e "$S/$j.$f" ] && left="$left $j.$f"; done
done
is "$left" "" "the old layout's files are gone with the jobs' ends"

# A job of the new tesseld: both records in its start lock, no file beside it.
D=$(held d 4)
wait_for "[ -n \"\$(start_record $D pid)\" ]"
ok $? "a new job's pid record is in its start lock"
is "$(head -n1 "$S/$D.lock")" "tessel start lock 3: pid record at 128, exit record at 256" \
    "which begins with the header"
is "$(start_record "$D" pid | cut -d' ' -f3)" "$(jobpid "$D")" "naming the job's process"
ok "$([ ! -e "$S/$D.pid" ] && [ ! -e "$S/$D.exit" ]; echo $?)" "no record file beside it"
td_kill9
touch "$G/d"
wait_for "[ -n \"\$(start_record $D exit)\" ]"
is "$(start_record "$D" exit)" "exit 4" "it ends while tesseld is down: its exit record in the lock"
td_start $FAKE || missing "tesseld did not restart"
wait_for "[ \"\$(job_state $D)\" = failed ]"
api GET "/v1/jobs/$D"
is "$(jget .state) $(jget .exit_code)" "failed 4" "the restarted tesseld records it from there"
ok "$([ ! -e "$S/$D.lock" ]; echo $?)" "and removes the lock"
td_stop
ok $? "tesseld stops cleanly"
done_testing
