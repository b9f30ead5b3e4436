#!/bin/sh
# t3218-daemon-psusp-hold-selfrestore.t - a victim of a preemption by suspension that restores
# itself is killed, not let back on its preemptor's GPU (docs/suspend.md, "What holds a victim
# off the GPU"; review RV3, F1, repro R1): job A holds 1 GiB with a pattern and is suspended for
# a job of a guaranteed queue; a second process of A's own then calls the driver's checkpoint
# API on A's checkpointed process (restore, unlock: the interposer does not stand between them)
# and sets A's slice word back to running.  The memory is back on the GPU for a moment: the
# shim's watchdog, which holds a job so suspended to nothing, kills A, which is requeued as the
# preemptor's victim; the preemptor then allocates, writes and checks 3 GiB of the 4 GiB GPU.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/ckpt.sh"
SLICE=$TESSEL_BUILD/tests/interposer/tcu-slice
[ -x "$SLICE" ] || missing "tcu-slice not built"
ARGS="$ARGS --min-runtime 0"
ckpt_start
api POST /v1/queues '{"name":"prod","guarantee_gpu_milli":1000}'
api POST /v1/queues '{"name":"scratch","guarantee_gpu_milli":0}'

# A: the probe holds 1 GiB with its pattern; once $G/s exists, a second probe restores and
# unlocks it through the driver and the shell resumes the slice word.  The second attempt (the
# requeue) waits for $G/a2 first.
SCRIPT="if [ -e $G/a1 ]; then $PROBE waitfile:$G/a2; exit 0; fi; touch $G/a1; $PROBE ctx alloc:mem:1G pattern:1G waitfile:$G/a check:1G & P=\$!; while [ ! -e $G/s ]; do sleep 0.1; done; $PROBE ckptrestore:\$P; $SLICE \$TESSEL_SLICE resume; wait \$P"
api POST /v1/jobs "{\"argv\":[\"/bin/sh\",\"-c\",\"$SCRIPT\"],\"gpu\":1,\"queue\":\"scratch\",$ENV}"
A=$(jget .id)
wait_for "logs $A | grep -q '^pattern rc=0'"; ok $? "A holds 1 GiB with its pattern"
api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"waitfile:$G/p0\",\"ctx\",\"alloc:mem:3G\",\"pattern:3G\",\"check:3G\",\"waitfile:$G/p\"],\"gpu\":1,\"queue\":\"prod\",$ENV}"
P=$(jget .id)
wait_for '[ "$(job_state $A)" = suspended ]'; ok $? "A is suspended for P"
wait_for '[ "$(job_state $P)" = running ]'; ok $? "P is placed on the GPU A gave back"

touch "$G/s"
# The restore returns once the memory is back, by when the watchdog may have killed the
# probe before it says so: what it did is read from the watchdog's line.
wait_for '[ "$(job_state $A)" = pending ]'
ok $? "its memory back on the GPU: the watchdog killed A, requeued as P's victim"
logs $A | sed 's/^/#   A: /'
grep -q "job $A preempted for job $P (GPU 0: the job's processes hold 1\.[0-9] GiB while" "$TD/tesseld.log"
ok $? "what A's own second process restored through the driver (its 1 GiB) was seen"
api GET "/v1/jobs/$A"
is "$(jget .preemptions) $(jget .suspended_for)" "1 null" "A counts one preemption, suspended no more"
grep -q "job $A preempted for job $P (GPU 0: the job's processes hold .* while it is suspended by a preemption" "$TD/tesseld.log"
ok $? "tesseld's log says why"
wait_for "[ \$(used) -lt $GiB ]"; ok $? "A's 1 GiB left the GPU"

touch "$G/p0"
wait_for "logs $P | grep -q '^check'"
is "$(logs $P | grep -E '^(alloc|pattern|check)' | tr '\n' ' ')" "alloc mem rc=0 pattern rc=0 check ok " \
    "P, owed the GPU, allocates, writes and checks its 3 GiB"
touch "$G/p"
wait_for '[ "$(job_state $P)" = succeeded ]'; ok $? "P ends"
wait_for '[ "$(job_state $A)" = running ]'; ok $? "A runs again once the GPU is free"
touch "$G/a2"
wait_for '[ "$(job_state $A)" = succeeded ]'; ok $? "A ends"
td_stop
done_testing
