#!/bin/sh
# t3213-daemon-psusp-options.t - a job's preemptible (docs/suspend.md, "Preemption by
# suspension"): bad values refused with a clear 400 naming the field (and by tessel run,
# exit 2), nothing stored; the defaults by class; --preemptible=requeue still killed and
# requeued when preempted; --preemptible=never never a victim (a higher-priority job of its own
# queue waits instead), and refused when it could only run beyond its queue's guarantee.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
td_setup
td_start --fake-gpus 1xT4:4G --no-cgroups --min-runtime 0 || missing "tesseld did not start"
G="$TD/go"
mkdir -p "$G"
tessel() { TESSEL_URL="$TD_URL" TESSEL_TOKEN="$TD_ADMIN" HOME="$TD" "$TESSEL_BUILD/bin/tessel" "$@"; }
# held QUEUE NAME [MORE JSON]: a one-GPU job that runs until the go-file NAME exists.
held() {
    api POST /v1/jobs "{\"argv\":[\"sh\",\"-c\",\"echo attempt; while [ ! -e $G/$2 ]; do sleep 0.05; done\"],\"gpu\":1,\"queue\":\"$1\"$3}"
    jget .id
}
njobs() { api GET /v1/jobs && jq '.jobs | length' "$TD/out"; }

api POST /v1/queues '{"name":"prod","guarantee_gpu_milli":1000}'
api POST /v1/queues '{"name":"scratch","guarantee_gpu_milli":0}'
api POST /v1/queues '{"name":"team","guarantee_gpu_milli":1000}'
is "$CODE" 201 "queues prod and team (guaranteed the GPU each) and scratch (nothing)"

# Bad values.
N0=$(njobs)
api POST /v1/jobs '{"argv":["true"],"preemptible":"sometimes"}'
is "$CODE $(jget .error.field)" "400 preemptible" "preemptible \"sometimes\": 400 naming the field"
jget .error.message | grep -q "suspend, requeue or never"; ok $? "the message lists the values: $(jget .error.message)"
api POST /v1/jobs '{"argv":["true"],"preemptible":3}'
is "$CODE $(jget .error.field)" "400 preemptible" "a number: 400"
api POST /v1/jobs '{"argv":["true"],"class":"interactive","preemptible":"suspend"}'
is "$CODE $(jget .error.field)" "400 preemptible" "an interactive job that asks to be preemptible: 400"
jget .error.message | grep -q "never preempted"; ok $? "saying why: $(jget .error.message)"
tessel run -d --preemptible=maybe true >"$TD/run" 2>&1
is "$?" 2 "tessel run --preemptible=maybe: a usage error (exit 2)"
grep -q "suspend, requeue or never" "$TD/run"; ok $? "naming the values"
is "$(njobs)" "$N0" "no job was stored by the refused submissions"

# Defaults by class, and what was asked.
api POST /v1/jobs '{"argv":["true"],"class":"interactive"}'
is "$(jget .preemptible)" never "an interactive job is never preempted"
api POST /v1/jobs '{"argv":["true"],"class":"inference","preemptible":"never"}'
is "$CODE $(jget .preemptible)" "201 never" "an inference job may say never"
ID=$(tessel run -d --preemptible=requeue true)
api GET "/v1/jobs/$ID"
is "$(jget .preemptible) $(jget .class)" "requeue training" "tessel run --preemptible=requeue is stored"
wait_for '[ "$(job_state $ID)" = succeeded ]'

# A never job that could only borrow (scratch guarantees nothing): refused at submission.
api POST /v1/jobs '{"argv":["true"],"gpu":1,"queue":"scratch","preemptible":"never"}'
is "$CODE $(jget .error.code)" "422 unsatisfiable" \
    "a never-preempted training job beyond its queue's guarantee can never run: 422"
jget .error.message | grep -q "a training job that is never preempted is held to its queue's guarantee"
ok $? "saying why: $(jget .error.message)"

# requeue: killed and requeued as before.
R=$(held scratch r ',"preemptible":"requeue"')
wait_for '[ "$(job_state $R)" = running ]'; ok $? "a scratch job with preemptible requeue runs"
P=$(held prod p)
wait_for '[ "$(job_state $P)" = running ]'; ok $? "prod's job takes the GPU"
api GET "/v1/jobs/$R"
is "$(jget .state) $(jget .preemptions) $(jget .suspended_for)" "pending 1 null" \
    "the requeue job was killed and requeued, not suspended"
api GET "/v1/jobs/$R/events"
jq -e '[.events[].event] | index("suspend") == null and index("requeue") != null' "$TD/out" >/dev/null
ok $? "its history has a requeue and no suspend"
touch "$G/p"
wait_for '[ "$(job_state $R)" = running ]'; ok $? "once prod's job ends, it runs again"
touch "$G/r"
wait_for '[ "$(job_state $R)" = succeeded ]'; ok $? "and ends"

# never: not a victim, even of a higher-priority job of its own queue, which takes an ordinary
# training job's GPU (priority preemption; first, for contrast).
O=$(held team o ',"preemptible":"requeue"')
wait_for '[ "$(job_state $O)" = running ]'; ok $? "an ordinary team job runs"
H=$(held team h ',"priority":10')
wait_for '[ "$(job_state $H)" = running ]'; ok $? "a priority-10 job of team takes its GPU"
api GET "/v1/jobs/$O"
is "$(jget .state) $(jget .preemptions)" "pending 1" "the ordinary job was preempted (requeued) for it"
api POST "/v1/jobs/$O/cancel"
touch "$G/h"
wait_for '[ "$(job_state $H)" = succeeded ]'
rm -f "$G/h"
N=$(held team n ',"preemptible":"never"')
wait_for '[ "$(job_state $N)" = running ]'; ok $? "a team job with preemptible never runs"
H=$(held team h ',"priority":10')
wait_for "api GET /v1/jobs/$H && [ \"\$(jget .reason_code)\" != null ]"
ok $? "a priority-10 job of team waits: $(jget .reason)"
api GET /metrics
C0=$(grep -E '^tessel_sched_cycles_total ' "$TD/out" | awk '{print $2}')
[ -n "$C0" ] || C0=0
wait_for "api GET /metrics && [ \"\$(grep -E '^tessel_sched_cycles_total ' \"\$TD/out\" | awk '{print \$2}')\" -ge $((C0 + 3)) ]"
ok $? "three more scheduling cycles pass"
is "$(job_state "$N") $(job_state "$H")" "running pending" "the never job is not preempted: it runs, the other waits"
api GET "/v1/jobs/$N"
is "$(jget .preemptions) $(jget .suspended_for)" "0 null" "nothing was done to it"
touch "$G/n"
wait_for '[ "$(job_state $H)" = running ]'; ok $? "the waiting job runs once the never job ends"
touch "$G/h"
wait_for '[ "$(job_state $H)" = succeeded ]'

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
