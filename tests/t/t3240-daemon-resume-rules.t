#!/bin/sh
# t3240-daemon-resume-rules.t - a resume respects its queue's limit (docs/suspend.md,
# "Resumes, queue limits and pending jobs"; finding F4): queue lab may hold half a GPU; job A
# (half of the 4 GiB fake GPU, 512 MiB with a pattern) is suspended by a person and gives its
# memory back; job B of lab takes lab's half meanwhile.  A's resume finds room on the GPU but
# waits, its reason (the job object, tessel ps) naming lab's limit; once B ends A is restored
# with every byte of its pattern.  Then the same for a reclaimed job's own CUDA call: A
# reclaimed while idle, job C of lab takes lab's half, A's call waits for lab's limit, C ends,
# A's call goes on.  Last, a resume does not take the room a pending job of a higher priority
# of its queue is due: job R (a whole GPU of queue default) suspended, X placed in its room, R's
# resume waits for X; P (priority 5) waits behind X too; when X ends P is placed first (R's
# reason names P), and R is restored once P has ended.  The same for a resume on borrowed
# capacity (queue a, no guarantee) and a pending job of queue b owed its guarantee.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/ckpt.sh"
ckpt_start
cli() { TESSEL_URL="$TD_URL" TESSEL_TOKEN="$TD_ADMIN" HOME="$TD" "$TESSEL_BUILD/bin/tessel" "$@"; }
LIMIT="queue 'lab' is at its limit of 0.5 GPU: it uses 0.5 GPU, the job takes 0.5 GPU"

api POST /v1/queues '{"name":"lab","max_gpu_milli":500}'
is "$CODE $(jget .max_gpu_milli)" "201 500" "queue lab may hold half a GPU"

api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:512M\",\"pattern:512M\",\"waitfile:$G/a\",\"check:512M\",\"modload\",\"waitfile:$G/a2\",\"launch:k\",\"check:512M\"],\"gpu\":0.5,\"queue\":\"lab\",$ENV}"
A=$(jget .id)
wait_for "logs $A | grep -q '^pattern rc=0'"; ok $? "job A (lab, half a GPU) holds 512 MiB with its pattern"

api POST "/v1/jobs/$A/suspend"
is "$CODE $(jget .state)" "200 suspended" "a person suspends A"
REL=$(jget .gpu_released)
[ "$REL" -ge $((512 * MiB)) ]; ok $? "A gave back its 512 MiB ($REL bytes)"

api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:256M\",\"waitfile:$G/b\"],\"gpu\":0.5,\"queue\":\"lab\",$ENV}"
B=$(jget .id)
wait_for "logs $B | grep -q '^alloc.*rc=0'"; ok $? "job B of lab is placed on lab's half meanwhile"

api POST "/v1/jobs/$A/resume"
is "$CODE $(jget .state)" "200 suspended" "A's resume is asked"
wait_for "api GET /v1/jobs/$A && jget .reason | grep -qF \"$LIMIT\""
ok $? "A waits for lab's limit, though its GPU has room: $(jget .reason)"
api GET /v1/gpus
is "$(jget '.gpus[0].allocated_milli')" 500 "the GPU has B's half allocated, A's half free"
cli ps >"$TD/ps" 2>&1
grep "^ *$A " "$TD/ps" | grep -qF "$LIMIT"; ok $? "tessel ps shows A's reason"
grep -q "job $A: waiting for .*($LIMIT)" "$TD/tesseld.log"; ok $? "tesseld's log says it too"
is "$(job_state "$A")" suspended "A stays suspended while B runs"

touch "$G/b"
wait_for '[ "$(job_state $B)" = succeeded ]'; ok $? "B ends"
wait_for '[ "$(job_state $A)" = running ]'; ok $? "A is restored once lab's limit allows it"
touch "$G/a"
wait_for "logs $A | grep -q '^modload rc=0'"
logs "$A" | grep -q '^check ok'; ok $? "every byte of A's pattern is back"

# A reclaimed job's own call: lab's idle time 3 s (an admin's, below the jobs' floor)
api PATCH /v1/queues/lab '{"idle_reclaim":"3s"}'
is "$CODE $(jget .idle_reclaim)" "200 3" "lab's jobs idle for 3 s give their GPU memory back"
wait_for "api GET /v1/jobs/$A && [ \"\$(jget .suspended_reason)\" = idle ]"
ok $? "A, idle, is reclaimed"
api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:256M\",\"modload\",\"launch:k\",\"waitfile:$G/c\"],\"gpu\":0.5,\"queue\":\"lab\",\"idle_reclaim\":\"off\",$ENV}"
C=$(jget .id)
wait_for "logs $C | grep -q '^launch k rc=0'"; ok $? "job C of lab (never reclaimed) takes lab's half meanwhile"
touch "$G/a2" # A's next CUDA call: a kernel launch
wait_for "api GET /v1/jobs/$A && jget .reason | grep -qF \"$LIMIT\""
ok $? "A's call asked for its GPU and waits for lab's limit: $(jget .reason)"
is "$(job_state "$A")" suspended "A stays suspended while C runs"
logs "$A" | grep -q '^launch'; is $? 1 "A's launch has not gone on"
touch "$G/c"
wait_for '[ "$(job_state $C)" = succeeded ]'; ok $? "C ends"
wait_for '[ "$(job_state $A)" = succeeded ]'; ok $? "A is restored, its call goes on and it ends"
logs "$A" | grep -q '^launch k rc=0$'; ok $? "A's launch succeeded after the restore"
is "$(logs "$A" | grep -c '^check ok')" 2 "its pattern was intact after each restore"

# The order between a resume and a pending job of a higher priority.
api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:512M\",\"pattern:512M\",\"waitfile:$G/r\",\"check:512M\"],\"gpu\":1,$ENV}"
R=$(jget .id)
wait_for "logs $R | grep -q '^pattern rc=0'"; ok $? "job R (a whole GPU) holds 512 MiB with its pattern"
api POST "/v1/jobs/$R/suspend"
is "$CODE $(jget .state)" "200 suspended" "R is suspended by a person"
api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:256M\",\"waitfile:$G/x\"],\"gpu\":1,$ENV}"
X=$(jget .id)
wait_for '[ "$(job_state $X)" = running ]'; ok $? "job X is placed in R's room"
api POST "/v1/jobs/$R/resume"
wait_for "api GET /v1/jobs/$R && jget .reason | grep -q 'another job holds its slice'"
ok $? "R's resume waits for X: $(jget .reason)"
api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:256M\",\"waitfile:$G/p\"],\"gpu\":1,\"priority\":5,$ENV}"
P=$(jget .id)
is "$CODE $(job_state "$P")" "201 pending" "job P (priority 5) waits for X too"
touch "$G/x"
wait_for '[ "$(job_state $X)" = succeeded ]'; ok $? "X ends"
wait_for '[ "$(job_state $P)" = running ]'; ok $? "P is placed in the room X left"
is "$(job_state "$R")" suspended "R is not restored ahead of P"
grep -q "job $R: waiting for .*(pending job $P of queue 'default' outranks it and comes first)" \
    "$TD/tesseld.log"
ok $? "tesseld's log says R waited for P: $(grep "job $R: waiting for .*pending job" "$TD/tesseld.log" | head -1)"
touch "$G/p"
wait_for '[ "$(job_state $P)" = succeeded ]'; ok $? "P ends"
wait_for '[ "$(job_state $R)" = running ]'; ok $? "R is restored then"
touch "$G/r"
wait_for '[ "$(job_state $R)" = succeeded ]'; ok $? "R ends"
logs "$R" | grep -q '^check ok'; ok $? "every byte of R's pattern is back"

# A resume on borrowed capacity does not take the room a pending job owed its queue's
# guarantee is due: R2 of queue a (no guarantee) suspended, X2 of queue b (guaranteed 2 GPUs)
# placed in its room, R2's resume waits for X2; P2 of b (owed: b uses 1 of its 2) waits for X2
# too; when X2 ends P2 is placed first, R2 after P2.
api POST /v1/queues '{"name":"a"}'
is "$CODE" 201 "queue a: no guarantee"
api POST /v1/queues '{"name":"b","guarantee":{"gpu":2}}'
is "$CODE" 201 "queue b: a guarantee of 2 GPUs"
api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:512M\",\"pattern:512M\",\"waitfile:$G/r2\",\"check:512M\"],\"gpu\":1,\"queue\":\"a\",$ENV}"
R2=$(jget .id)
wait_for "logs $R2 | grep -q '^pattern rc=0'"; ok $? "job R2 of queue a (a whole GPU) holds 512 MiB"
api POST "/v1/jobs/$R2/suspend"
is "$CODE $(jget .state)" "200 suspended" "R2 is suspended by a person"
api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:256M\",\"waitfile:$G/x2\"],\"gpu\":1,\"queue\":\"b\",$ENV}"
X2=$(jget .id)
wait_for '[ "$(job_state $X2)" = running ]'; ok $? "job X2 of b is placed in R2's room"
api POST "/v1/jobs/$R2/resume"
wait_for "api GET /v1/jobs/$R2 && jget .reason | grep -q 'another job holds its slice'"
ok $? "R2's resume waits for X2: $(jget .reason)"
api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:256M\",\"waitfile:$G/p2\"],\"gpu\":1,\"queue\":\"b\",$ENV}"
P2=$(jget .id)
is "$CODE $(job_state "$P2")" "201 pending" "job P2 of b waits for X2 too"
touch "$G/x2"
wait_for '[ "$(job_state $X2)" = succeeded ]'; ok $? "X2 ends"
wait_for '[ "$(job_state $P2)" = running ]'; ok $? "P2, owed b's guarantee, is placed in the room"
is "$(job_state "$R2")" suspended "R2 (borrowed capacity) is not restored ahead of P2"
grep -q "job $R2: waiting for .*(pending job $P2 of queue 'b' is owed its guarantee and comes first)" \
    "$TD/tesseld.log"
ok $? "tesseld's log says R2 waited for P2: $(grep "job $R2: waiting for .*pending job" "$TD/tesseld.log" | head -1)"
touch "$G/p2"
wait_for '[ "$(job_state $P2)" = succeeded ]'; ok $? "P2 ends"
wait_for '[ "$(job_state $R2)" = running ]'; ok $? "R2 is restored then"
touch "$G/r2"
wait_for '[ "$(job_state $R2)" = succeeded ]'; ok $? "R2 ends"
logs "$R2" | grep -q '^check ok'; ok $? "every byte of R2's pattern is back"

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
