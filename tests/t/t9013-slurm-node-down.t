#!/bin/sh
# t9013: a node going down under a running tesseld --slurm job (issue 18, "Restart and
# failure"; docs/slurm-backend.md, "A node down") on the test cluster of tests/slurm/cluster.sh.
# A job of tslra's submitted with "requeue": false (sbatch --no-requeue) runs on a node; an
# admin's `scontrol update State=DOWN` of that node ends it in Slurm (NODE_FAIL) and Tessel
# records it failed, cause lost; the other node's job runs on.  Then the node's slurmd stops and
# the node is set DOWN: GET /v1/gpus shows it down, with Slurm's reason (no exporter runs here:
# Slurm's state is what it shows).
# test-timeout: 300
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/local.sh"
. "$TESSEL_SRCDIR/tests/slurm/cluster.sh"

tsc_test_pieces
tsc_test_setup tslra
tsc_start "" || missing "the Slurm cluster: $TSC_WHY"
tsc_tesseld --slurm-node-poll 1
adm() {
    CODE=$(curl -s -o "$TD/out" -w '%{http_code}' --unix-socket "$TD_SOCK" "http://localhost$1")
}
state_of() {
    adm "/v1/jobs/$1"
    jget .state
}

# Two jobs, one per node (each asks for all 8 CPUs of a node).
sock_api tslra POST /v1/jobs '{"argv":["sleep","1000"],"requeue":false,"cpu":8}'
J1=$(jget .id)
S1=$(jget .slurm_id)
sock_api tslra POST /v1/jobs '{"argv":["sleep","1000"],"requeue":false,"cpu":8}'
J2=$(jget .id)
S2=$(jget .slurm_id)
tsc_wait_state "$S1" RUNNING && tsc_wait_state "$S2" RUNNING
ok $? "two jobs of tslra run in Slurm ($S1, $S2)"
wait_for '[ "$(state_of $J1) $(state_of $J2)" = "running running" ]'
ok $? "and in Tessel ($J1, $J2)"
N1=$(tsc squeue -h -j "$S1" -o %N)
N2=$(tsc squeue -h -j "$S2" -o %N)
[ -n "$N1" ] && [ -n "$N2" ] && [ "$N1" != "$N2" ]
ok $? "on two nodes ($N1, $N2)"

tsc scontrol update NodeName="$N1" State=DOWN Reason=t9013-down
ok $? "an admin sets $N1 down"
tsc_wait_state "$S1" NODE_FAIL
ok $? "Slurm ends the job on it: NODE_FAIL"
wait_for '[ "$(state_of $J1)" = failed ]'
adm "/v1/jobs/$J1"
is "$(jget '[.state, .end_cause] | join(" ")')" "failed lost" \
    "Tessel records it failed, cause lost (its node failed)"
is "$(state_of "$J2") $(tsc_state "$S2")" "running RUNNING" "the job on $N2 runs on"
tsc_gone "slurmstepd: \\[$S1\\."
ok $? "its processes on $N1 are gone (slurmd ended the job's step)"

# The node itself down: its slurmd stops (as a node that crashed), and the admin (or Slurm,
# after SlurmdTimeout) sets it DOWN; with slurmd answering, ReturnToService=2 would bring the
# node back at once, as it did above.
node_state() {
    adm /v1/gpus
    jq -r --arg n "$1" '.nodes[] | select(.name == $n) | [.state, .slurm_state, .reason] | join(" ")' "$TD/out"
}
P1=$(cat "$TSC/slurmd-$N1.pid")
kill "$P1"
wait_for '! kill -0 $P1 2>/dev/null'
ok $? "$N1's slurmd stops"
tsc scontrol update NodeName="$N1" State=DOWN Reason=t9013-down
wait_for '[ "$(node_state $N1 | cut -d" " -f1)" = down ]'
is "$(node_state "$N1")" "down down t9013-down" "GET /v1/gpus shows $N1 down, with Slurm's state and reason"
is "$(state_of "$J2") $(tsc_state "$S2")" "running RUNNING" "the job on $N2 still runs"

tsc_cli tslra kill "$J2" >/dev/null 2>&1
tsc_wait_state "$S2" CANCELLED
ok $? "the other job is killed through tessel"
td_stop
ok $? "tesseld stops cleanly (no sanitizer report)"
done_testing
