#!/bin/sh
# t9008: tesseld --slurm's queues onto Slurm partitions and QOS (slurm-queues;
# docs/slurm-backend.md, "Queues onto partitions") on the test cluster of tests/slurm/cluster.sh
# with two more partitions (big: node n2; spare: n1, which no queue maps).  Checked: a bad
# slurm-queues is refused by --check-config with the word at fault; `tessel queues` shows the
# mapping side by side with the partitions (their nodes, CPUs, GRES, states), the partitions no
# queue maps, and a mapping onto a partition Slurm does not have; --json carries it; a job of a
# queue goes to its partition (Slurm says so, and runs it on that partition's node), queue
# default to the one mapped; a queue with a QOS is taken into its partition (without slurmdbd
# Slurm keeps no QOS; with it: t9012); a queue onto a partition Slurm does not have is refused
# (422 with sbatch's words, nothing stored); a queue with no mapping is refused (400,
# field queue, naming the queues there are).
# test-timeout: 300
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/local.sh"
. "$TESSEL_SRCDIR/tests/slurm/cluster.sh"

tsc_test_pieces
tsc_test_setup tslra

TSC_EXTRA_CONF="PartitionName=big Nodes=n2 MaxTime=INFINITE State=UP
PartitionName=spare Nodes=n1 MaxTime=INFINITE State=UP"
tsc_start "" || missing "the Slurm cluster: $TSC_WHY"

MAP="default=debug big=big gpu=debug,high ghost=nosuch"
"$TESSEL_BUILD/bin/tesseld" --check-config --data-dir "$TD/data" --slurm \
    --slurm-conf "$TSC/etc/slurm.conf" --slurm-queues "default=debug Big=big" >"$TD/cc" 2>&1
is "$? $(grep -c "'Big=big': expected QUEUE=PARTITION" "$TD/cc")" "1 1" \
    "--check-config refuses a slurm-queues with a bad queue name, naming the word"
"$TESSEL_BUILD/bin/tesseld" --check-config --data-dir "$TD/data" --slurm \
    --slurm-conf "$TSC/etc/slurm.conf" --slurm-queues "$MAP" >"$TD/cc" 2>&1
is "$? $(grep -c "^slurm-queues = $MAP" "$TD/cc")" "0 1" "and prints a good one"

tsc_tesseld --slurm-queues "$MAP"
adm() {
    CODE=$(curl -s -o "$TD/out" -w '%{http_code}' --unix-socket "$TD_SOCK" "http://localhost$1")
}

# ---- tessel queues --------------------------------------------------------------------------
tsc_cli tslra queues >"$TD/q" 2>&1
st=$?
sed 's/^/# /' "$TD/q"
row() { awk -v q="$1" '$1 == q && $2 != "" {print $2, $3, $4}' "$TD/q" | tail -n 1; }
is "$st $(row default) | $(row big) | $(row gpu)" "0 debug - n1,n2 | big - n2 | debug high n1,n2" \
    "tessel queues shows each queue's partition, QOS and the partition's nodes"
grep -q '^ghost .*nosuch .*no such partition' "$TD/q"
ok $? "a queue mapped onto a partition Slurm does not have is flagged"
grep -q '^- .*spare .*n1 .*no Tessel queue goes here' "$TD/q"
ok $? "the partition no queue maps is listed too"
grep -q 'gpu:2,shard:8' "$TD/q"
ok $? "with the nodes' GRES"
tsc_cli tslra queues --json >"$TD/qj" 2>&1
is "$(jq -r '[.slurm.queues[] | .queue + ":" + (.partition // "-") + ":" + (.qos // "-")] | join(" ")' "$TD/qj")" \
    "default:debug:- big:big:- gpu:debug:high ghost:nosuch:-" "tessel queues --json carries the mapping under slurm"
is "$(jq -r '.slurm.queues[1].slurm.cpus, .slurm.unmapped_partitions[0].name' "$TD/qj" | tr '\n' ' ')" \
    "8 spare " "big's CPUs (one node of 8) and the unmapped partition"
adm /v1/slurm/queues
is "$CODE" 200 "GET /v1/slurm/queues: 200"

# ---- jobs go to their queue's partition -----------------------------------------------------
sock_api tslra POST /v1/jobs '{"argv":["sleep","1000"],"queue":"big"}'
SB=$(jget .slurm_id)
is "$CODE $(jget .queue)" "201 big" "a job of queue big is submitted"
tsc_wait_state "$SB" RUNNING
tsc scontrol show job "$SB" >"$TD/sc" 2>&1
is "$(grep -o 'Partition=[a-z]*' "$TD/sc") $(grep -o ' NodeList=[a-z0-9]*' "$TD/sc")" \
    "Partition=big  NodeList=n2" "Slurm has it in partition big, on big's node n2"
sock_api tslra POST /v1/jobs '{"argv":["true"]}'
SD=$(jget .slurm_id)
tsc scontrol show job "$SD" >"$TD/sc" 2>&1
is "$CODE $(grep -o 'Partition=[a-z]*' "$TD/sc")" "201 Partition=debug" \
    "a job of queue default goes to the partition default is mapped onto"
sock_api tslra POST /v1/jobs '{"argv":["sleep","1000"],"queue":"gpu"}'
SG=$(jget .slurm_id)
tsc scontrol show job "$SG" >"$TD/sc" 2>&1
# Without slurmdbd Slurm keeps no QOS (QOS=(null)): that sbatch gets --qos=high is
# test_slurmjob's (test_sbatch_argv), the QOS on a cluster with slurmdbd t9012's; here, that
# the job is taken into its partition.
is "$CODE $(grep -o 'Partition=[a-z]*' "$TD/sc")" "201 Partition=debug" \
    "queue gpu (partition debug, QOS high): taken, in partition debug"
sock_api tslra POST /v1/jobs '{"argv":["true"],"queue":"ghost"}'
is "$CODE $(jget .error.code)" "422 unsatisfiable" \
    "queue ghost, onto a partition Slurm does not have: Slurm refuses, 422"
jget .error.message | grep -qi 'partition'
ok $? "with sbatch's words: $(jget .error.message)"
adm "/v1/jobs?limit=10000"
N0=$(jget '.jobs | length')
sock_api tslra POST /v1/jobs '{"argv":["true"],"queue":"nope"}'
is "$CODE $(jget .error.field)" "400 queue" "a queue with no partition is refused: 400, field queue"
jget .error.message | grep -q "queue 'nope' has no Slurm partition.*the queues are: default, big, gpu, ghost"
ok $? "saying so and naming the queues: $(jget .error.message)"
adm "/v1/jobs?limit=10000"
is "$(jget '.jobs | length')" "$N0" "nothing of either refused job is stored"

td_stop
ok $? "tesseld stops cleanly (no sanitizer report)"
done_testing
