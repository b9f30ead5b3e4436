#!/bin/sh
# t3234-daemon-idle-newproc.t - a process a reclaimed job starts (docs/suspend.md, "Idle
# reclamation"): a job's shell starts a probe that holds 1 GiB with a pattern, and is reclaimed
# while idle; a whole-GPU job then holds the GPU; the job's shell starts a second CUDA process,
# whose first call (cuInit) waits in the interposer before it has a context and asks for the
# job's GPU: no context is made while the other job runs; once it ends the job is restored, the
# new process gets its context and 64 MiB, and the first process finds its pattern intact.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/ckpt.sh"
ckpt_start

api POST /v1/queues '{"name":"lab","idle_reclaim":"2s"}'
SCRIPT="$PROBE ctx alloc:mem:1G pattern:1G waitfile:$G/a check:1G & while [ ! -e $G/n ]; do sleep 0.1; done; $PROBE ctx alloc:mem:64M; wait"
api POST /v1/jobs "{\"argv\":[\"/bin/sh\",\"-c\",\"$SCRIPT\"],\"gpu\":1,\"queue\":\"lab\",$ENV}"
A=$(jget .id)
wait_for "logs $A | grep -q '^pattern rc=0'"; ok $? "job A's first process holds 1 GiB with its pattern"
wait_for '[ "$(job_state $A)" = suspended ]'; ok $? "A, idle, is reclaimed"

api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:2G\",\"check:2G\",\"waitfile:$G/b\"],\"gpu\":1,$ENV}"
B=$(jget .id)
wait_for "logs $B | grep -q '^alloc mem rc=0'"; ok $? "a whole-GPU job B holds 2 GiB of A's GPU"

touch "$G/n" # A's shell starts a second CUDA process
wait_for "api GET /v1/jobs/$A && jget .reason | grep -q 'waiting for'"
ok $? "the new process's first call asks for A's GPU; the resume waits for B: $(jget .reason)"
is "$(logs "$A" | grep -c '^ctx rc=')" 1 "the new process has no context while B holds the GPU"

touch "$G/b"
wait_for '[ "$(job_state $B)" = succeeded ]'; ok $? "B ends"
wait_for '[ "$(job_state $A)" = running ]'; ok $? "A is restored"
wait_for "[ \"\$(logs $A | grep -c '^alloc mem rc=0$')\" = 2 ]"
ok $? "the new process got its context and its 64 MiB after the restore"
touch "$G/a"
wait_for '[ "$(job_state $A)" = succeeded ]'; ok $? "A ends"
logs "$A" | grep -q '^check ok'; ok $? "the first process's pattern is intact"

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
