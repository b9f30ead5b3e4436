#!/bin/sh
# t3217-daemon-psusp-hold-newproc.t - a victim of a preemption by suspension is held off the GPU
# while its preemptor runs (docs/suspend.md, "What holds a victim off the GPU"; review RV3, F1,
# repro R4): a job of a second account, suspended for a job of a guaranteed queue with its
# memory given back, starts new CUDA processes after its checkpoint and sets its slice word back
# to running.  Its limits file says GPU memory 0 meanwhile (a new process that loads the
# interposer gets no context and no allocation), and one that goes round the interposer (tcu-raw
# reads the driver's own symbol table) and takes memory is killed by the shim's watchdog: the
# job ends as the preemption's victim (requeued), the preemptor allocates, writes and checks its
# 3 GiB of the 4 GiB GPU; the requeued job runs again, with its normal limit, once the GPU is
# free.  Needs root (a local account).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/local.sh"
. "$TESSEL_SRCDIR/tests/lib/ckpt.sh"
[ "$(id -u)" = 0 ] || missing "root (tesseld runs the job as a local account)"
local_account tslpsx || missing "useradd to create the account tslpsx"
RAW=$TESSEL_BUILD/tests/interposer/tcu-raw
SLICE=$TESSEL_BUILD/tests/interposer/tcu-slice
[ -x "$RAW" ] && [ -x "$SLICE" ] || missing "tcu-raw and tcu-slice not built"
ARGS="$ARGS --min-runtime 0"
ckpt_start
# The account's job reads the shared fake driver's state and the wait files.
chmod 755 "$TD"
chmod 777 "$G"
chmod 666 "$TESSEL_FAKE_STATE"
EVIL=$(token_of tslpsx)
api POST /v1/queues '{"name":"prod","guarantee_gpu_milli":1000}'
api POST /v1/queues '{"name":"scratch","guarantee_gpu_milli":0}'

# A: a probe holds 64 MiB; once $G/s exists (A suspended), the job resumes its own slice word,
# starts a new interposed process (a context and 2500 MiB asked), then one round the
# interposer (2500 MiB).  A second attempt (the requeue) finds $G/s there at once.
SCRIPT="$PROBE ctx alloc:mem:64M waitfile:$G/a & while [ ! -e $G/s ]; do sleep 0.1; done; $SLICE \$TESSEL_SLICE resume; $PROBE ctx alloc:mem:2500M; $RAW $TESSEL_BUILD/tests/fake/libcuda.so.1 2500 $G/a; wait"
api POST /v1/jobs "{\"argv\":[\"/bin/sh\",\"-c\",\"$SCRIPT\"],\"gpu\":1,\"queue\":\"scratch\",$ENV}" "$EVIL"
A=$(jget .id)
is "$CODE $(jget .user)" "201 tslpsx" "job A of the account tslpsx is submitted"
wait_for "logs $A | grep -q '^alloc mem rc=0'"; ok $? "A holds 64 MiB"
api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"waitfile:$G/p0\",\"ctx\",\"alloc:mem:3G\",\"pattern:3G\",\"check:3G\",\"waitfile:$G/p\"],\"gpu\":1,\"queue\":\"prod\",$ENV}"
P=$(jget .id)
wait_for '[ "$(job_state $A)" = suspended ]'; ok $? "A is suspended for P"
wait_for '[ "$(job_state $P)" = running ]'; ok $? "P is placed on the GPU A gave back"
LIM=$TD/data/run/$A/limits
[ -d "$TD/data/run/$A" ] || LIM=$(find "$TD" -path "*/run/$A/limits" | head -n 1)
grep -q '^TESSEL_CUDA_MEM_LIMIT=0$' "$LIM"; ok $? "A's root-owned limits file says GPU memory 0 while it is suspended"

touch "$G/s"
wait_for "logs $A | grep -q '^raw rc='"
logs $A | sed 's/^/#   A: /'
logs $A | grep '^ctx rc=' | sed -n 2p | grep -qv 'rc=0$'
ok $? "A's new interposed process gets no context"
logs $A | grep '^alloc mem rc=' | sed -n 2p | grep -qv 'rc=0$'
ok $? "nor its 2500 MiB"
wait_for '[ "$(job_state $A)" = pending ]'
ok $? "A's process round the interposer took memory: the watchdog killed A, requeued as P's victim"
api GET "/v1/jobs/$A"
is "$(jget .preemptions)" 1 "A counts one preemption"
grep -q "job $A preempted for job $P (GPU 0: the job's processes hold .* while it is suspended by a preemption" "$TD/tesseld.log"
ok $? "tesseld's log says why"

touch "$G/p0"
wait_for "logs $P | grep -q '^check'"
is "$(logs $P | grep -E '^(alloc|check)' | tr '\n' ' ')" "alloc mem rc=0 check ok " \
    "P, owed the GPU, allocates, writes and checks its 3 GiB"
touch "$G/p"
wait_for '[ "$(job_state $P)" = succeeded ]'; ok $? "P ends"
wait_for '[ "$(job_state $A)" = running ]'; ok $? "A runs again once the GPU is free"
wait_for "logs $A | grep -c '^raw rc=0' | grep -qx 2"
ok $? "with its slice's limit again (its second attempt's 2500 MiB round the interposer are within it)"
logs $A | sed 's/^/#   A: /'

touch "$G/a"
wait_for '[ "$(job_state $A)" = succeeded ]'; ok $? "A ends"
td_stop
done_testing
