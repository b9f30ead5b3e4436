#!/bin/sh
# t9010: the cluster's GPUs under tesseld --slurm (docs/slurm-backend.md, "The cluster's GPUs")
# on the multi-node test cluster of tests/slurm/cluster.sh (a controller and two nodes in network
# namespaces, two SIMULATED GPUs per node, 4 shards each, spank_tessel.so on the nodes).  A
# tessel-node-exporter runs in each node's namespaces, as an admin runs it next to slurmd;
# tesseld runs in the controller's and learns the nodes from sinfo.  Half-GPU jobs on both nodes
# allocate memory through the fake driver (one through tessel run, one sbatch'd directly); then
# checked: tessel gpus --json and GET /v1/gpus list each node's GPUs with each slice's live used
# memory (what the job allocated), its limit and user; the text of tessel gpus, node by node;
# /metrics with the node label, and the exporter's own /metrics (what Prometheus would scrape);
# a job that truncates its own slice file changes nothing but its own used figure; the slices go
# when the jobs end; a node whose exporter is stopped shows as unreachable with the time of its
# last figures, then drained and down as Slurm says; with slurmctld stopped the nodes of the
# last list are still asked.
# test-timeout: 600
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/local.sh"
. "$TESSEL_SRCDIR/tests/slurm/cluster.sh"

tsc_test_pieces tests/interposer/tcu-probe
PROBE=$PB/tests/interposer/tcu-probe
EXPORTER=$TESSEL_BUILD/bin/tessel-node-exporter
[ -x "$EXPORTER" ] || missing "$EXPORTER is not built"
/usr/bin/python3 -c 'import jsonschema' 2>/dev/null || missing "python3-jsonschema"
command -v promtool >/dev/null || missing "promtool"
tsc_test_setup tslra tslrb
MiB=1048576
GiB=1073741824
tsc_start_sim

# The exporters: one per node, in the node's namespaces (its /run/tessel/slurm, its fake GPUs).
tsc_exporter n1
tsc_exporter n2
ADDR_n1=10.250.0.12
ADDR_n2=10.250.0.13
# From the controller's namespace, as tesseld and a Prometheus beside it see the nodes.
ctl_curl() { nsenter --net=/run/netns/$tsc_ns-ctl curl -s -m 5 "$@"; }
wait_for "ctl_curl http://$ADDR_n1:9407/v1/node >/dev/null && ctl_curl http://$ADDR_n2:9407/v1/node >/dev/null"
ok $? "tessel-node-exporter answers on both nodes (port 9407)"
ctl_curl "http://$ADDR_n1:9407/v1/node" >"$TD/n1.json"
is "$(jq -r '[.node, (.gpus | length), .gpus[0].model, .gpus[0].memory_total, .simulated] | join(" ")' "$TD/n1.json")" \
    "n1 2 FakeGPU $((8 * GiB)) true" "n1's exporter: its name, its two simulated 8 GiB GPUs (NVML)"

tsc_tesseld --fake-gpus 2xFakeGPU:8G --slurm-shards 4 --slurm-node-poll 1
adm() {
    CODE=$(curl -s -o "$TD/out" -w '%{http_code}' --unix-socket "$TD_SOCK" "http://localhost$1")
}
# slice SLURM_ID FIELD: a field of the job's slice in GET /v1/gpus ("null" when absent).
slice() {
    adm /v1/gpus
    jq -r "[.gpus[] | . as \$g | .slices[] | select(.slurm_id == $1) | . + {node: \$g.node, gpu: \$g.index}][0].$2" "$TD/out"
}
# used_seen OUTPUT: the GPU memory the job's own view says it holds (tcu-probe's "info": total
# minus free, the slice's limit less its used bytes: its allocations and its context).
used_seen() {
    sed -n 's/^info free=\([0-9]*\) total=\([0-9]*\).*/\2 \1/p' "$1" | awk '{print $1 - $2}' | head -n 1
}
# schema METHOD PATH: the answer in $TD/out matches docs/openapi.json (tests/openapi/validate).
schema() {
    "$TESSEL_SRCDIR/tests/openapi/validate" "$TESSEL_SRCDIR/docs/openapi.json" "$1" "$2" "$CODE" \
        "$TD/out" 2>"$TD/verr"
    ok $? "$1 $2 $CODE matches its schema in docs/openapi.json${3:+ ($3)}"
    sed 's/^/# /' "$TD/verr"
}
node_state() {
    adm /v1/gpus
    jq -r ".nodes[] | select(.name == \"$1\") | .state" "$TD/out"
}

wait_for '[ "$(node_state n1) $(node_state n2)" = "up up" ]'
ok $? "tesseld lists both nodes (sinfo) and both exporters answer: up up"
adm /v1/gpus
is "$CODE $(jq -r '[.gpus[] | "\(.node)/\(.index)"] | join(" ")' "$TD/out")" "200 n1/0 n1/1 n2/0 n2/1" \
    "GET /v1/gpus: every node's GPUs, node by node"
is "$(jq -r '[.gpus[] | .memory_total == 8589934592 and .simulated and .name == "FakeGPU"] | all' "$TD/out")" \
    true "each with its NVML figures (8 GiB, FakeGPU, simulated)"

# ---- jobs on both nodes ---------------------------------------------------------------------
GO=$TSC/out/go
tsc_cli tslra run -d --gpu 0.5 -- "$PROBE" ctx alloc:mem:768M info waitfile:"$GO" >"$TD/ja" 2>&1
JA=$(grep -o '[0-9][0-9]*' "$TD/ja" | head -n 1)
adm "/v1/jobs/$JA"
SA=$(jget .slurm_id)
wait_for "[ \"\$(tsc_state $SA)\" = RUNNING ]"
NA=$(tsc squeue -h -j "$SA" -o %N)
OTHER=n1
[ "$NA" = n1 ] && OTHER=n2
ok "$([ -n "$NA" ]; echo $?)" "tslra's half-GPU job (tessel run, Slurm job $SA) runs on $NA"
sbatch_as() {
    _u=$1
    shift
    tsc su -s /bin/sh "$_u" -c "cd /tmp && env LD_LIBRARY_PATH=$FAKE TESSEL_FAKE_GPUS=$TESSEL_FAKE_GPUS \
        TESSEL_FAKE_CTX_MEM=0 TESSEL_FAKE_STATE=$TSC/node/fake-state SLURM_CONF=$SLURM_CONF \
        sbatch --parsable -o $TSC/out/%j.out $*"
}
SB=$(sbatch_as tslrb -w "$OTHER" --gres=shard:2 --wrap="'$PROBE ctx alloc:mem:512M info waitfile:$GO'")
tsc_wait_state "$SB" RUNNING
ok $? "tslrb's job sbatch'd directly (Slurm job $SB, 2 of 4 shards) runs on $OTHER"
# A job that truncates its own slice file (its user owns it) and holds no GPU memory.
SC=$(sbatch_as tslrb -w "$OTHER" --gres=shard:2 \
    --wrap="'truncate -s 100 /run/tessel/slurm/\$SLURM_JOB_ID/slice && echo cut && while [ ! -e $GO ]; do sleep 0.2; done'")
tsc_wait_state "$SC" RUNNING
tsc_wait_lines "$TSC/out/$SC.out" cut
ok $? "another of tslrb's jobs (Slurm job $SC) on $OTHER truncates its own slice file"

# What each job sees it holds, from inside (its output: tessel logs, Slurm's output file).
wait_for "tsc_cli tslra logs $JA 2>/dev/null | grep -q '^info ' && grep -q '^info ' $TSC/out/$SB.out"
tsc_cli tslra logs "$JA" >"$TD/ja.out" 2>&1
UA=$(used_seen "$TD/ja.out")
UB=$(used_seen "$TSC/out/$SB.out")
ok "$([ "$UA" -ge $((768 * MiB)) ] && [ "$UB" -ge $((512 * MiB)) ]; echo $?)" \
    "the jobs hold their allocations and contexts: $UA and $UB bytes, as they see it"
wait_for "[ \"\$(slice $SA mem_used)\" = $UA ] && [ \"\$(slice $SB mem_used)\" = $UB ]"
ok $? "GET /v1/gpus: each slice's live used memory is what its job holds ($UA, $UB bytes)"
is "$(slice "$SA" node) $(slice "$SA" user) $(slice "$SA" job_id) $(slice "$SA" mem_limit) $(slice "$SA" compute_limit)" \
    "$NA tslra $JA $((4 * GiB)) 50" \
    "tslra's slice: on $NA, tslra's, Tessel's job $JA, limit 4 GiB (half of 8), half of the compute"
is "$(slice "$SB" node) $(slice "$SB" user) $(slice "$SB" job_id) $(slice "$SB" mem_limit)" \
    "$OTHER tslrb null $((4 * GiB))" \
    "tslrb's sbatch'd job: on $OTHER, tslrb's, no Tessel id (not submitted through tesseld), 4 GiB"
# Its node's figures reach tesseld every few seconds: its slice is waited for, as the others'.
wait_for "[ \"\$(slice $SC mem_limit)\" != null ]"
is "$(slice "$SC" mem_used) $(slice "$SC" mem_limit) $(node_state "$OTHER")" "0 $((4 * GiB)) up" \
    "the job with a truncated slice file: used 0, its limit from root's files; its node still up"
adm /v1/gpus
G=$(jq -r "[.gpus[] | select(.node == \"$NA\" and (.slices | length) > 0)][0]" "$TD/out")
is "$(printf '%s' "$G" | jq -r '[.used_mem, .allocated_mem, .node_state] | join(" ")')" \
    "$UA $((4 * GiB)) up" "its GPU: the slices' used memory and limits added up"

adm /v1/gpus
schema GET /v1/gpus "slices on both nodes"
adm /v1/nodes
schema GET /v1/nodes
tsc_cli tslra gpus --json >"$TD/g.json" 2>&1
is "$?:$(jq -r "[.gpus[] | .slices[] | select(.slurm_id == $SA or .slurm_id == $SB) | \"\(.slurm_id)=\(.mem_used)\"] | sort | join(\" \")" "$TD/g.json")" \
    "0:$(printf '%s\n' "$SA=$UA" "$SB=$UB" | sort | tr '\n' ' ' | sed 's/ $//')" \
    "tessel gpus --json (as tslra): the same live figures for both nodes' slices"
tsc_cli tslra gpus >"$TD/g.txt" 2>&1
sed 's/^/#   /' "$TD/g.txt"
is "$(head -n 1 "$TD/g.txt" | awk '{print $1, $2}') $(awk '$3 == "FakeGPU" {print $1 "/" $2}' "$TD/g.txt" | tr '\n' ' ')" \
    "NODE GPU n1/0 n1/1 n2/0 n2/1 " "tessel gpus: a NODE column, the GPUs node by node"
is "$(awk -v s="$SA" '$4 == s {print $1, $3, $5}' "$TD/g.txt")" "$NA $JA tslra" \
    "its slice's line: node, Tessel id, Slurm id, user"
is "$(awk -v s="$SB" '$4 == s {print $1, $3, $5}' "$TD/g.txt")" "$OTHER - tslrb" \
    "tslrb's sbatch'd job: no Tessel id (-)"

# ---- /metrics: tesseld's (node label) and the exporter's own -------------------------------
metrics() { curl -s --unix-socket "$TD_SOCK" http://localhost/metrics; }
metrics >"$TD/m.txt"
grep -q "^tessel_slice_memory_used_bytes{node=\"$NA\",gpu=\"[0-9]*\",uuid=\"GPU-[^\"]*\",job=\"$SA\",user=\"tslra\"} $UA\$" "$TD/m.txt"
ok $? "tesseld's /metrics: tessel_slice_memory_used_bytes with node=\"$NA\" for job $SA"
grep -q "^tessel_slice_memory_limit_bytes{node=\"$OTHER\",.*job=\"$SB\",user=\"tslrb\"} $((4 * GiB))\$" "$TD/m.txt"
ok $? "and tessel_slice_memory_limit_bytes with node=\"$OTHER\" for job $SB"
is "$(grep -c '^tessel_gpu_memory_total_bytes{node="n[12]"' "$TD/m.txt") $(grep -c '^tessel_node_up{node="n[12]"} 1$' "$TD/m.txt")" \
    "4 2" "tessel_gpu_memory_total_bytes for the 4 GPUs, tessel_node_up 1 for both nodes"
ctl_curl "http://$(eval echo \$ADDR_$NA):9407/metrics" >"$TD/em.txt"
grep -q "^tessel_slice_memory_used_bytes{node=\"$NA\",.*job=\"$SA\",user=\"tslra\"} $UA\$" "$TD/em.txt"
ok $? "the exporter's own /metrics (what Prometheus scrapes) has the same series"
promtool check metrics <"$TD/em.txt" >"$TD/pt" 2>&1
ok $? "promtool check metrics finds no problem in the exporter's scrape"
promtool check metrics <"$TD/m.txt" >"$TD/pt2" 2>&1
ok $? "nor in tesseld's"

# ---- the jobs end: their slices go -----------------------------------------------------------
touch "$GO"
for j in "$SA" "$SB" "$SC"; do
    tsc_wait_state "$j" COMPLETED FAILED CANCELLED
done
wait_for "[ \"\$(slice $SA mem_used)\$(slice $SB mem_used)\$(slice $SC mem_used)\" = nullnullnull ]"
ok $? "the jobs ended: their slices are gone from GET /v1/gpus"

# ---- a node that stops answering, drained, down --------------------------------------------
eval "kill \$EXP_$OTHER"
wait_for "[ \"\$(node_state $OTHER)\" = unreachable ]"
ok $? "$OTHER's exporter stopped: tesseld shows $OTHER unreachable"
adm /v1/gpus
is "$(jq -r "[.gpus[] | select(.node == \"$OTHER\") | .node_state] | join(\" \")" "$TD/out") $(jq -r ".nodes[] | select(.name == \"$OTHER\") | (.last_answer_at != null)" "$TD/out")" \
    "unreachable unreachable true" "its GPUs stay listed (last figures), marked so, with the time of its last answer"
jq -r ".nodes[] | select(.name == \"$OTHER\") | .error" "$TD/out" | grep -q 'did not answer'
ok $? "and why: $(jq -r ".nodes[] | select(.name == \"$OTHER\") | .error" "$TD/out")"
schema GET /v1/gpus "a node unreachable"
wait_for "metrics | grep -q '^tessel_node_up{node=\"$OTHER\"} 0\$'"
ok $? "/metrics: tessel_node_up{node=\"$OTHER\"} 0"
tsc_cli tslra gpus >"$TD/g2.txt" 2>&1
grep -q "^node $OTHER: unreachable: .*; its last figures are of 20" "$TD/g2.txt"
ok $? "tessel gpus says so: $(grep "^node $OTHER" "$TD/g2.txt")"
tsc scontrol update nodename="$OTHER" state=drain reason=maintenance
wait_for "[ \"\$(node_state $OTHER)\" = drain ]"
ok $? "drained in Slurm (scontrol): tesseld shows $OTHER drain"
kill "$(cat "$TSC/slurmd-$OTHER.pid")"
tsc scontrol update nodename="$OTHER" state=down reason=stopped
wait_for "[ \"\$(node_state $OTHER)\" = down ]"
adm /v1/gpus
is "$(jq -r ".nodes[] | select(.name == \"$OTHER\") | [.state, .reason] | join(\" \")" "$TD/out")" \
    "down stopped" "its slurmd stopped and the node set DOWN: tesseld shows $OTHER down, with Slurm's reason"
is "$(node_state "$NA")" up "the other node is still up"
tsc_cli tslra gpus >"$TD/g3.txt" 2>&1
grep -q "^node $OTHER: down (stopped)" "$TD/g3.txt"
ok $? "tessel gpus: $(grep "^node $OTHER" "$TD/g3.txt")"
tsc_cli tslra nodes >"$TD/n.txt" 2>&1
sed 's/^/#   /' "$TD/n.txt"
is "$(awk -v n="$NA" '$1 == n {print $2, $4}' "$TD/n.txt") $(awk -v n="$OTHER" '$1 == n {print $2, $3, $4, $NF}' "$TD/n.txt")" \
    "up 2 down down+drain 2 stopped" "tessel nodes: $NA up with 2 GPUs, $OTHER down (and drained) in Slurm (stopped), its 2 GPUs' last figures"

# ---- slurmctld down: the nodes of the last list are still asked -----------------------------
adm /v1/gpus
F0=$(jq -r "[.gpus[] | select(.node == \"$NA\")][0].figures_at" "$TD/out")
CTLD=$(cat "$TSC/slurmctld.pid")
kill "$CTLD"
wait_for "! kill -0 $CTLD 2>/dev/null"
wait_for "adm /v1/gpus; [ \"\$(jq -r .poll.error $TD/out)\" != null ]"
ok $? "slurmctld stopped: GET /v1/gpus says the nodes cannot be listed: $(jq -r .poll.error "$TD/out")"
wait_for "adm /v1/gpus; [ \"\$(jq -r '[.gpus[] | select(.node == \"$NA\")][0] | [.node_state, .figures_at != \"$F0\"] | join(\" \")' $TD/out)\" = 'up true' ]"
ok $? "and $NA is still asked: up, with newer figures than before"
nsenter --net=/run/netns/$tsc_ns-ctl unshare --uts sh -c 'hostname ctl; exec slurmctld -i' ||
    missing "slurmctld did not start again"
wait_for "adm /v1/gpus; [ \"\$(jq -r .poll.error $TD/out)\" = null ]"
ok $? "slurmctld is back: the nodes are listed again"

kill -TERM "$TD_PID"
wait "$TD_PID"
ok $? "tesseld stops cleanly (its nodes' poll too)"
done_testing
