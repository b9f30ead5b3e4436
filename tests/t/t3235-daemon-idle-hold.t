#!/bin/sh
# t3235-daemon-idle-hold.t - a job reclaimed while idle is held off the GPU while its slice is
# lent (docs/suspend.md, "Idle reclamation"; the fourth review's finding 1): job A of another
# account (tslidx: what a hostile user can do, not root), reclaimed, clears its own slice file's
# reclaim word and a new process of its takes 2 GiB back while job B holds the lent GPU: A's
# watchdog kills it (end cause gpu_mem_limit), and B then has its GPU whole (3 GiB of 4 GiB
# allocated).  And a reclaimed job's time limit runs on (it runs on the CPU meanwhile): a job
# with a 4 s limit, reclaimed after 2 s, ends by its time limit.  Needs root (a local account).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/local.sh"
. "$TESSEL_SRCDIR/tests/lib/ckpt.sh"
[ "$(id -u)" = 0 ] || missing "root (tesseld runs the job as a local account)"
local_account tslidx || missing "useradd to create the account tslidx"
ckpt_start
chmod 755 "$TD"
chmod 777 "$G"
chmod 666 "$TESSEL_FAKE_STATE"
EVIL=$(token_of tslidx)
api POST /v1/queues '{"name":"lab","idle_reclaim":"2s"}'
is "$CODE" 201 "queue lab: idle_reclaim 2s"

SCRIPT="$PROBE ctx alloc:mem:1G pattern:1G waitfile:$G/a & while [ ! -e $G/c ]; do sleep 0.1; done; S=\$(cat $G/apath); printf '\\\\000\\\\000\\\\000\\\\000' | dd of=\$S bs=1 seek=84 conv=notrunc 2>/dev/null; echo cleared=\$(od -An -tu4 -j84 -N4 \$S); $PROBE ctx alloc:mem:2G pattern:2G info waitfile:$G/end; wait"
api POST /v1/jobs "{\"argv\":[\"/bin/sh\",\"-c\",\"$SCRIPT\"],\"gpu\":1,\"class\":\"interactive\",\"queue\":\"lab\",$ENV}" "$EVIL"
A=$(jget .id)
is "$CODE $(jget .user)" "201 tslidx" "job A of the account tslidx is submitted"
wait_for "logs $A | grep -q '^pattern rc=0'"; ok $? "job A holds 1 GiB"
wait_for '[ "$(job_state $A)" = suspended ]'; ok $? "A is reclaimed while idle"
api GET "/v1/jobs/$A"
is "$(jget .suspended_reason)" idle "... reason idle"
find "$TD/data" -path "*/$A/slice" | head -n 1 >"$G/apath"
[ -s "$G/apath" ]; ok $? "A's slice file found"
api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:1G\",\"waitfile:$G/b\",\"alloc:mem:2G\",\"info\",\"waitfile:$G/bend\"],\"gpu\":1,$ENV}"
B=$(jget .id)
wait_for "logs $B | grep -q '^alloc mem rc=0'"; ok $? "job B placed on the GPU A gave back, holds 1 GiB"
touch "$G/c"
wait_for "logs $A | grep -q '^cleared= *0'"; ok $? "A clears its reclaim word"
wait_for '[ "$(job_state $A)" = failed ]'
api GET "/v1/jobs/$A"
is "$(jget .state) $(jget .end_cause)" "failed gpu_mem_limit" "A, taking memory back while held: killed by its watchdog (gpu_mem_limit)"
touch "$G/b"
wait_for "logs $B | grep -q '^info'"
is "$(logs "$B" | grep -c '^alloc mem rc=0$')" 2 "B then allocates 2 GiB more: 3 of the GPU's 4 GiB, its whole"
touch "$G/bend" "$G/end" "$G/a"

# The time limit of a reclaimed job runs on.
api POST /v1/jobs "{\"argv\":[\"/bin/sh\",\"-c\",\"$PROBE ctx alloc:mem:64M waitfile:$G/tend\"],\"gpu\":1,\"class\":\"interactive\",\"queue\":\"lab\",\"time_limit\":\"4s\",$ENV}"
T=$(jget .id)
wait_for '[ "$(job_state $T)" = failed ]'
grep -q "job $T suspended by .*idle for" "$TD/tesseld.log"; ok $? "a job with a 4 s limit: reclaimed while idle (tesseld's log)"
api GET "/v1/jobs/$T"
is "$(jget .state) $(jget .end_cause)" "failed time_limit" "... and ended by its time limit meanwhile (it runs on the CPU)"
td_stop
is "$?" 0 "tesseld stops"
done_testing
