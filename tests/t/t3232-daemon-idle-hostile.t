#!/bin/sh
# t3232-daemon-idle-hostile.t - what a job's processes can and cannot do with idle
# reclamation's words (docs/suspend.md, "Idle reclamation"; docs/security.md): job V (root's
# account, --allow-root-jobs) is reclaimed while idle; job H of another account, suspended by a
# person (its memory given back too), tries to write V's wake word (refused: V's slice file is
# not its own), then sets its own slice's reclaim and wake words fifty times over.  tesseld
# resumes neither: a wake counts only for a job its own record says is reclaimed, and only for
# that job.  Several of tesseld's passes later (a third job reclaimed after H's writes) both are
# still suspended with no resume asked; then V's own next CUDA call (a copy) resumes V, intact.  Needs
# root (a local account).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/local.sh"
. "$TESSEL_SRCDIR/tests/lib/ckpt.sh"
[ "$(id -u)" = 0 ] || missing "root (tesseld runs the job as a local account)"
local_account tslidx || missing "useradd to create the account tslidx"
SLICE=$TESSEL_BUILD/tests/interposer/tcu-slice
[ -x "$SLICE" ] || missing "tcu-slice not built"
ckpt_start
chmod 755 "$TD"
chmod 777 "$G"
chmod 666 "$TESSEL_FAKE_STATE"
EVIL=$(token_of tslidx)

api POST /v1/queues '{"name":"lab","idle_reclaim":"2s"}'
api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:512M\",\"pattern:512M\",\"waitfile:$G/v\",\"check:512M\"],\"gpu\":0.5,\"queue\":\"lab\",$ENV}"
V=$(jget .id)
wait_for "logs $V | grep -q '^pattern rc=0'"; ok $? "job V holds 512 MiB with its pattern"
wait_for '[ "$(job_state $V)" = suspended ]'; ok $? "V, idle, is reclaimed"
VSLICE=$(find "$TD/data" -path "*/$V/slice" | head -n 1)
[ -f "$VSLICE" ]; ok $? "V's slice file: $VSLICE"
echo "$VSLICE" >"$G/vpath"

SCRIPT="$PROBE ctx alloc:mem:64M waitfile:$G/never & while [ ! -e $G/h1 ]; do sleep 0.1; done; $SLICE \$(cat $G/vpath) wake; $SLICE \$TESSEL_SLICE reclaim; i=0; while [ \$i -lt 50 ]; do $SLICE \$TESSEL_SLICE wake; i=\$((i + 1)); done; touch $G/h2; wait"
api POST /v1/jobs "{\"argv\":[\"/bin/sh\",\"-c\",\"$SCRIPT\"],\"gpu\":0.25,$ENV}" "$EVIL"
H=$(jget .id)
is "$CODE $(jget .user)" "201 tslidx" "job H of the account tslidx is submitted"
wait_for "logs $H | grep -q '^alloc mem rc=0'"; ok $? "H holds 64 MiB"
api POST "/v1/jobs/$H/suspend"
is "$CODE $(jget .state) $(jget .suspended_reason)" "200 suspended request" \
    "H is suspended by a person (reason request)"
[ "$(jget .gpu_released)" -gt 0 ]; ok $? "and gave its memory back ($(jget .gpu_released) bytes)"

touch "$G/h1"
wait_for "[ -e $G/h2 ]"; ok $? "H's shell made its writes"
logs "$H" | head -n 3 | sed 's/^/#   H: /'
logs "$H" | grep -q '^failed$'; ok $? "H cannot write V's wake word (V's slice file is not its own)"
[ "$(logs "$H" | grep -c '^ok$')" -eq 51 ]; ok $? "H wrote its own reclaim word and its wake word 50 times"

api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:64M\",\"waitfile:$G/s\"],\"gpu\":0.25,\"queue\":\"lab\",$ENV}"
S=$(jget .id)
wait_for '[ "$(job_state $S)" = suspended ]'
ok $? "a third job S, started after H's writes, is reclaimed in its turn (tesseld's passes went by)"
api GET "/v1/jobs/$H"
is "$(jget .state) $(jget .suspended_reason)" "suspended request" "H is still suspended: its own wake does not resume it"
jget .reason | grep -q 'resume asked'; is $? 1 "no resume was asked for H"
api GET "/v1/jobs/$V"
is "$(jget .state) $(jget .suspended_reason)" "suspended idle" "V is still suspended"
jget .reason | grep -q 'resume asked\|waiting for'; is $? 1 "no resume was asked for V"
grep -q "job $H: a CUDA call\|job $V: a CUDA call" "$TD/tesseld.log"
is $? 1 "tesseld's log has no wake of either"

touch "$G/v" # V's own next CUDA call: a copy (device to host)
wait_for '[ "$(job_state $V)" = succeeded ]'; ok $? "V's own call resumes it and it ends"
logs "$V" | grep -q '^check ok'; ok $? "every byte of V's pattern is back"
grep -q "job $V: a CUDA call of its processes waits for its GPU memory" "$TD/tesseld.log"
ok $? "tesseld's log says V's call asked for it"

for j in $H $S; do
    api POST "/v1/jobs/$j/cancel"
done
wait_for '[ "$(job_state $H)" = cancelled ] && [ "$(job_state $S)" = cancelled ]'
ok $? "H and S are cancelled"
td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
