#!/bin/sh
# t9007: tesseld --slurm (docs/slurm-backend.md) on the multi-node test cluster of
# tests/slurm/cluster.sh: jobs submitted to Slurm directly (sbatch) shown, read-only, to their
# owner (and to the admin), and `tessel suspend` / `resume` of tesseld's Slurm jobs.  Checked:
# tslra's own sbatch jobs (pending, running, ended with exit 3) show in `tessel ps -a`, --json
# and GET /v1/jobs?origin=slurm as slurm:N with Slurm's states mapped onto the job model's;
# tslrb sees none of them, the admin all; `show` works, `kill`, `suspend`, `logs`, the API's
# cancel and events answer 409 "not a Tessel job ... use scancel" and change nothing; they are never in the store
# (GET /v1/jobs); tesseld's own Slurm jobs are not listed as direct.  Suspend: the owner (not
# another user) suspends and resumes a running Slurm job, Slurm says SUSPENDED / RUNNING, the
# job model says suspended / running with the events; a suspended job is killed; an operator's
# own scontrol suspend shows as suspended too; resume of a running job, suspend of an ended one:
# 409.
# test-timeout: 600
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/local.sh"
. "$TESSEL_SRCDIR/tests/slurm/cluster.sh"

tsc_test_pieces
tsc_test_setup tslra tslrb
tsc_start_sim
tsc_tesseld --fake-gpus 2xFakeGPU:8G --slurm-shards 4

adm() {
    _m=$1 _p=$2
    CODE=$(curl -s -o "$TD/out" -w '%{http_code}' -X "$_m" --unix-socket "$TD_SOCK" \
        "http://localhost$_p")
}
state_of() {
    adm GET "/v1/jobs/$1"
    jget .state
}
# sbatch as an account, straight to Slurm (no tesseld): the job's Slurm id.
direct() {
    _u=$1
    shift
    tsc su -s /bin/sh "$_u" -c "cd /; sbatch --parsable -o /dev/null $*"
}
njobs() {
    adm GET "/v1/jobs?limit=10000"
    jget '.jobs | length'
}

# ---- jobs submitted to Slurm directly -----------------------------------------------------
DH=$(direct tslra --hold --job-name=held --wrap "'true'")
DR=$(direct tslra --job-name=runs --wrap "'exec sleep 1000'")
DX=$(direct tslra --job-name=three --wrap "'exit 3'")
DB=$(direct tslrb --job-name=bobs --wrap "'exec sleep 1000'")
[ "$DH" -gt 0 ] && [ "$DR" -gt 0 ] && [ "$DX" -gt 0 ] && [ "$DB" -gt 0 ] 2>/dev/null
ok $? "tslra and tslrb sbatch jobs straight to Slurm ($DH $DR $DX, $DB)"
tsc_wait_state "$DR" RUNNING && tsc_wait_state "$DB" RUNNING && tsc_wait_state "$DX" FAILED
ok $? "Slurm runs them (one has ended: exit 3)"
N0=$(njobs)
is "$N0" 0 "none of them is a Tessel job (GET /v1/jobs lists nothing)"

tsc_cli tslra ps -a --json >"$TD/psa" 2>"$TD/psae"
is "$? $(jq -r '[.jobs[] | .id] | join(" ")' "$TD/psa")" "0 slurm:$DH slurm:$DR slurm:$DX" \
    "tslra's tessel ps -a --json lists its three Slurm jobs, as slurm:N, oldest first"
is "$(jq -r '[.jobs[] | .origin + "/" + .state + "/" + .name] | join(" ")' "$TD/psa")" \
    "slurm/pending/held slurm/running/runs slurm/failed/three" \
    "origin slurm, Slurm's states as the job model's (pending, running, failed), their names"
jq -e ".jobs[2] | .exit_code == 3 and .end_cause == \"exit\" and .user == \"tslra\" and
    .slurm_id == $DX and .read_only == true and .queue == \"debug\"" "$TD/psa" >/dev/null
ok $? "the ended one: exit code 3 (cause exit), tslra's, read-only, in partition debug"
jq -e '.jobs[0].reason_code != null and .jobs[1].placement[0].node != null' "$TD/psa" >/dev/null
ok $? "the held one says why it waits ($(jq -r '.jobs[0].reason_code' "$TD/psa")), the running one where it runs ($(jq -r '.jobs[1].placement[0].node' "$TD/psa"))"
tsc_cli tslra ps -a >"$TD/pst" 2>&1
is "$(awk '$1 ~ /^slurm:/ {print $1 "/" $4}' "$TD/pst" | tr '\n' ' ')" \
    "slurm:$DH/pending slurm:$DR/running slurm:$DX/failed " "the table shows them too"
tsc_cli tslra ps --json >"$TD/ps" 2>&1
is "$(jq '.jobs | length' "$TD/ps")" 0 "without -a, tessel ps lists only Tessel's jobs"
tsc_cli tslrb ps -a --json >"$TD/psb" 2>&1
is "$(jq -r '[.jobs[] | .id] | join(" ")' "$TD/psb")" "slurm:$DB" \
    "tslrb's ps -a lists its own Slurm job only, none of tslra's"
adm GET "/v1/jobs?origin=slurm"
is "$CODE $(jget '[.jobs[] | .slurm_id] | join(" ")')" "200 $DH $DR $DX $DB" \
    "the admin sees every user's (GET /v1/jobs?origin=slurm)"
adm GET "/v1/jobs?origin=slurm&user=tslrb&state=running"
is "$(jget '[.jobs[] | .id] | join(" ")')" "slurm:$DB" "filtered by user and state"

tsc_cli tslra show "slurm:$DR" >"$TD/show" 2>&1
is "$? $(awk '$1 == "state" || $1 == "origin" || $1 == "slurm_id" {print $2}' "$TD/show" | tr '\n' ' ')" \
    "0 slurm $DR running " "tessel show slurm:$DR gives its fields"
sock_api tslrb GET "/v1/jobs/slurm:$DR"
is "$CODE" 404 "tslrb cannot see tslra's Slurm job (404)"

tsc_cli tslra kill "slurm:$DR" >"$TD/k" 2>&1
st=$?
is "$([ $st != 0 ] && echo fails) $(grep -c "not a Tessel job: submitted to Slurm directly (slurm id $DR); use scancel" "$TD/k")" \
    "fails 1" "tessel kill slurm:$DR fails: $(head -c 200 "$TD/k")"
sock_api tslra POST "/v1/jobs/slurm:$DR/cancel"
is "$CODE $(jget .error.code)" "409 conflict" "the API's cancel answers 409"
sock_api tslra POST "/v1/jobs/slurm:$DR/suspend"
is "$CODE $(jget .error.code)" "409 conflict" "so does suspend"
sock_api tslra GET "/v1/jobs/slurm:$DR/logs"
is "$CODE $(jget .error.code)" "409 conflict" "its logs: 409 (its output is where its sbatch put it)"
tsc_cli tslra logs "slurm:$DR" >"$TD/l" 2>&1
is "$([ $? != 0 ] && echo fails) $(grep -c 'not a Tessel job' "$TD/l")" "fails 1" \
    "tessel logs slurm:$DR says so"
sock_api tslra GET "/v1/jobs/slurm:$DR/events"
is "$CODE" 409 "its events: 409"
sock_api tslrb POST "/v1/jobs/slurm:$DR/cancel"
is "$CODE" 404 "tslrb's cancel of it: 404"
sock_api tslrb GET "/v1/jobs/slurm:$DR/logs"
is "$CODE" 404 "nor its logs (404)"
is "$(tsc_state "$DR") $(njobs)" "RUNNING 0" "it still runs in Slurm, and nothing is in the store"

# ---- tesseld's own Slurm jobs are not direct ones; suspend and resume ------------------------
sock_api tslra POST /v1/jobs '{"argv":["sleep","1000"],"gpu":0.25}'
J=$(jget .id)
is "$CODE $(jget .origin)" "201 tessel" "tslra submits through tesseld (origin tessel)"
SJ=$(jget .slurm_id)
wait_for '[ "$(state_of $J)" = running ]'
ok $? "it runs"
tsc_cli tslra ps -a --json >"$TD/psa" 2>&1
is "$(jq -r "[.jobs[] | select(.slurm_id == $SJ) | .id] | join(\" \")" "$TD/psa")" "$J" \
    "ps -a lists it once, as Tessel's job $J (not as slurm:$SJ)"

tsc_cli tslrb suspend "$J" >/dev/null 2>&1
ok $([ $? != 0 ]; echo $?) "tslrb cannot suspend tslra's job"
tsc_cli tslra suspend "$J" >"$TD/s1" 2>&1
is "$? $(cat "$TD/s1")" "0 job $J: suspended" "tslra suspends it: tessel suspend $J"
is "$(state_of "$J") $(tsc_state "$SJ")" "suspended SUSPENDED" \
    "suspended in Tessel and in Slurm (scontrol suspend, run by tesseld)"
adm GET "/v1/jobs/$J/events"
is "$(jget '[.events[] | select(.event == "suspend") | .who] | join(" ")')" "tslra" \
    "its history: one suspend, by tslra"
sleep 2 # a few polls: the suspended job stays suspended (nothing resumes it)
is "$(state_of "$J") $(tsc_state "$SJ")" "suspended SUSPENDED" "and stays so across polls"
tsc_cli tslra suspend "$J" >/dev/null 2>&1
ok $([ $? != 0 ]; echo $?) "suspending it again fails (409)"
tsc_cli tslra resume "$J" >"$TD/r1" 2>&1
is "$? $(cat "$TD/r1")" "0 job $J: resumed" "tslra resumes it"
is "$(state_of "$J") $(tsc_state "$SJ")" "running RUNNING" "running in Tessel and in Slurm"
sock_api tslra POST "/v1/jobs/$J/resume"
is "$CODE" 409 "resuming a running job: 409"

# An operator's own scontrol suspend and resume: the poll records them.
tsc scontrol suspend "$SJ"
wait_for '[ "$(state_of $J)" = suspended ]'
ok $? "an operator's scontrol suspend shows as suspended"
adm GET "/v1/jobs/$J/events"
is "$(jget '[.events[] | select(.event == "suspend") | .who] | join(" ")')" "tslra slurm" \
    "recorded as Slurm's"
tsc scontrol resume "$SJ"
wait_for '[ "$(state_of $J)" = running ]'
ok $? "and its scontrol resume as running"

tsc_cli tslra suspend "$J" >/dev/null 2>&1
tsc_cli tslra kill "$J" >/dev/null 2>&1
ok $? "a suspended job is killed"
wait_for '[ "$(state_of $J)" = cancelled ]'
is "$(state_of "$J") $(tsc_state "$SJ")" "cancelled CANCELLED" "cancelled in Tessel and in Slurm"
sock_api tslra POST "/v1/jobs/$J/suspend"
is "$CODE" 409 "suspending an ended job: 409"

adm GET "/v1/jobs?origin=slurm"
is "$(jget "[.jobs[] | select(.slurm_id == $SJ)] | length")" 0 \
    "tesseld's own Slurm job never shows among the direct ones, ended either"

td_stop
ok $? "tesseld stops cleanly (no sanitizer report)"
done_testing
