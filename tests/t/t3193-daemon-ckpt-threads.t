#!/bin/sh
# t3193-daemon-ckpt-threads.t - a suspend that gives the GPU back (docs/suspend.md) of a job
# whose four threads make CUDA calls all the time (allocate, copy in and out, compare, free):
# the lock waits for the calls in progress and holds the new ones, the checkpoint gives the
# memory back, and after the resume every thread goes on; no call failed or returned wrong data,
# and the 512 MiB written before are intact.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/ckpt.sh"
ckpt_start

api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:512M\",\"pattern:512M\",\"spin:4:$G/s\",\"check:512M\"],\"gpu\":1,$ENV}"
A=$(jget .id)
wait_for "logs $A | grep -q '^pattern rc=0'"; ok $? "job A holds 512 MiB and starts four threads making CUDA calls"
api POST "/v1/jobs/$A/suspend"
REL=$(jget .gpu_released)
[ "$CODE" = 200 ] && [ "$REL" -ge $((512 * MiB)) ]
ok $? "A is suspended while its threads call the driver, and gave back $REL bytes"
api POST "/v1/jobs/$A/resume"
wait_for '[ "$(job_state $A)" = running ]'; ok $? "A is restored and running"
touch "$G/s"
wait_for '[ "$(job_state $A)" = succeeded ]'; ok $? "A ends"
SPIN=$(logs "$A" | grep '^spin')
diag "$SPIN"
printf '%s\n' "$SPIN" | grep -q '^spin threads=4 rounds=[1-9][0-9]* bad=0$'
ok $? "every call of the four threads succeeded with the right data, across the suspend"
logs "$A" | grep -q '^check ok'; ok $? "the 512 MiB written before the suspend are intact"

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
