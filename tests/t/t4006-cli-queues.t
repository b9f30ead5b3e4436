#!/bin/sh
# t4006-cli-queues.t - `tessel queues` on the scheduling core's queue model: a nested tree made
# with the CLI (--parent, --guarantee, --limit, --weight), the table (children indented under
# their parent; USED/GUARANTEE/LIMIT per resource with GPU fractions and human sizes; weight,
# pending/running, whether the guarantee is held), PATCH semantics of `queues set`, validation
# errors as one line with a non-zero exit, --json; `tessel ps` showing a job requeued by a
# preemption; `tessel run` in the foreground through a preemption (requeued: both attempts
# streamed, exit 0, a line saying so; --no-requeue: exit 123); `ps -a --limit N` showing the
# newest jobs.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
command -v jq >/dev/null || missing "jq is needed"
[ -x "$TESSEL_BUILD/bin/tesseld" ] || missing "tesseld not built"

td_setup
# --min-runtime 0: a job may be preempted as soon as it runs (libsched's default is 60 s).
td_start --fake-gpus 2xRTX4090:24G --no-cgroups --min-runtime 0 || missing "tesseld did not start"
cli_setup
export TESSEL_URL="$TD_URL" TESSEL_TOKEN="$TD_ADMIN"
# The table row of queue $1 (indentation kept), runs of spaces squeezed to one.
row() { grep -E "^ *$1 " "$TD/o" | tr -s ' '; }

# --- a nested tree --------------------------------------------------------------------------
tcli queues add research --guarantee gpu=1.5,gpu-mem=40G,cpu=8,mem=64G --limit gpu=2 --weight 3
is "$RC $(out)" "0 queue research created" "queues add research (guarantee, limit, weight)"
tcli queues add vision --parent research --guarantee gpu=1,gpu-mem=20G --weight 2
is "$RC $(out)" "0 queue vision created" "queues add vision --parent research"
tcli --json queues add nlp --parent research --guarantee gpu=0.5 --limit gpu=1,mem=none
is "$RC $(jq -r '"\(.parent) \(.guarantee.gpu) \(.guarantee.gpu_mem) \(.guarantee.cpu) \(.limit.gpu) \(.limit.mem)"' "$TD/o")" \
    "0 research 0.5 0 0 1 null" \
    "queues add --json prints the queue: resources left out default to 0 under a parent that guarantees them"

# A half-GPU job in vision: 0.5 GPU, 12 GiB of GPU memory (half of 24G), 1 CPU, 1 GiB.
tcli run -d --gpu 0.5 --queue vision --cpu 1 --mem 1G -- sleep 300
J=$(out)
wait_for '[ "$(state_of $J)" = running ]'; ok $? "a job of vision runs"
wait_for 'tcli queues --json; [ "$(jq -r ".queues[] | select(.name == \"vision\") | .guarantee_satisfied" "$TD/o")" = true ]'
ok $? "the scheduler has run with the new queues"

tcli queues
is "$RC" 0 "queues lists"
is "$(head -1 "$TD/o")" "resources: USED/GUARANTEE/LIMIT ('-' = not governed / no cap)" "a legend first"
is "$(sed -n 2p "$TD/o" | tr -s ' ')" "QUEUE WEIGHT GPU NGPU GPU-MEM CPU MEM PEND RUNNING GUARANTEE RESERVE PLACEMENT IDLE OVERSUB ALLOWED" "the header"
is "$(sed -n '3,$p' "$TD/o" | grep -oE '^ *[a-z]+' | tr '\n' ,)" "default,research,  nlp,  vision," \
    "the tree: children indented under their parent, by name"
is "$(row research)" "research 3 0.5/1.5/2 0.5/-/- 12.0 GiB/40.0 GiB/- 1/8/- 1.00 GiB/64.0 GiB/- 0 1 held 15m pack - - all" \
    "research: weight 3, uses 0.5 of 1.5 GPU (cap 2), 12 GiB of 40 GiB, 1 of 8 CPUs, 1 of 64 GiB; 1 running, guarantee held"
is "$(row vision)" " vision 2 0.5/1/- 0.5/-/- 12.0 GiB/20.0 GiB/- 1/0/- 1.00 GiB/0/- 0 1 held 15m pack - - all" \
    "vision: weight 2, the job's usage, its guarantees, no caps"
is "$(row nlp)" " nlp 1 0/0.5/1 0/-/- 0/0/- 0/0/- 0/0/- 0 0 held 15m pack - - all" "nlp: nothing used, 0.5 GPU guaranteed, capped at 1"
is "$(row default)" "default 1 0/-/- 0/-/- 0/-/- 0/-/- 0/-/- 0 0 held 15m spread - - all" "default: nothing governed, no cap"

# --- set: PATCH semantics -------------------------------------------------------------------
tcli queues set nlp --limit gpu=none --weight 5
is "$RC $(out)" "0 queue nlp changed" "queues set nlp --limit gpu=none --weight 5"
tcli queues --json
is "$(jq -r '.queues[] | select(.name == "nlp") | "\(.weight) \(.guarantee.gpu) \(.limit.gpu) \(.limit.mem)"' "$TD/o")" \
    "5 0.5 null null" "only the named members changed (guarantee kept)"
tcli queues set vision --limit gpu-mem=30G
tcli queues --json
is "$(jq -r '.queues[] | select(.name == "vision") | "\(.limit.gpu) \(.limit.gpu_mem) \(.guarantee.gpu_mem)"' "$TD/o")" \
    "null 32212254720 21474836480" "set --limit gpu-mem=30G: 30 GiB in bytes, the rest unchanged"
tcli queues
is "$(row vision | cut -d' ' -f6-9)" "12.0 GiB/20.0 GiB/30.0 GiB" "... and the table shows the cap"

# --- --json ---------------------------------------------------------------------------------
tcli queues --json
is "$(jq -r '.queues | length' "$TD/o")" 4 "queues --json: the API's object, 4 queues"
is "$(jq -r '.queues[] | select(.name == "research") | .children | join(",")' "$TD/o")" "nlp,vision" \
    "research's children"
is "$(jq -r '.queues[] | select(.name == "research") | "\(.usage.gpu) \(.usage.gpu_mem) \(.running)"' "$TD/o")" \
    "0.5 12884901888 1" "research's usage counts its subtree; 0.5 of 24 GiB is exactly 12884901888 bytes"

# --- validation errors ----------------------------------------------------------------------
tcli queues add extra --parent research --guarantee gpu=1
is "$RC" 1 "a child guarantee beyond the parent's: exit 1"
one_line_error; ok $? "... one line: $(errtext)"
grep -q "guarantee.gpu: .*2.5 GPU.* 1.5 GPU" "$TD/e"; ok $? "... naming the field and the amounts"
tcli queues add extra --guarantee gpu=1.2345
is "$RC" 2 "--guarantee gpu=1.2345: usage error, exit 2"
one_line_error; ok $? "... one line: $(errtext)"
tcli queues add extra --limit gpus=1
is "$RC" 2 "--limit with an unknown resource: exit 2"
one_line_error; ok $? "... one line: $(errtext)"
tcli queues add extra --limit mem=12Q
is "$RC" 2 "--limit mem=12Q: exit 2"
tcli queues add extra --weight 0
is "$RC" 2 "--weight 0: exit 2"
tcli queues set nlp --parent vision
is "$RC" 2 "set --parent: exit 2 (parent is set at creation)"
one_line_error; ok $? "... one line: $(errtext)"
tcli queues add extra --max-gpu 1 --limit gpu=2
is "$RC" 2 "--max-gpu with --limit gpu=: exit 2"
tcli queues rm research
is "$RC" 1 "removing a queue with children: exit 1"
one_line_error; ok $? "... one line: $(errtext)"
tcli queues --json
is "$(jq -r '.queues | length' "$TD/o")" 4 "none of the refused requests changed the queues"

# --- preemption in ps, --no-requeue ---------------------------------------------------------
tcli kill "$J"
wait_for '[ "$(state_of $J)" = cancelled ]'; ok $? "the vision job is cancelled"
tcli queues rm nlp
tcli queues rm vision
tcli queues rm research
is "$RC" 0 "queues rm of the tree, leaves first"
tcli queues add scav --guarantee gpu=0
tcli queues add prod --guarantee gpu=2
tcli run -d --gpus 2 --queue scav -- sleep 300
S=$(out)
wait_for '[ "$(state_of $S)" = running ]'; ok $? "scav borrows both GPUs"
tcli run -d --gpu 1 --queue prod -- sleep 300
P=$(out)
wait_for '[ "$(state_of $P)" = running ]'; ok $? "prod's job runs: scav's was preempted"
is "$(state_of $S)" "pending" "scav's job is pending again (requeued)"
tcli ps
is "$(grep -E "^ *$S " "$TD/o" | tr -s ' ' | cut -d' ' -f5-7)" "pending (requeued ×1)" \
    "ps shows it: pending (requeued ×1)"
tcli run -d --no-requeue --queue scav -- true
NR=$(out)
tcli ps -a --json
is "$(jq -r ".jobs[] | select(.id == $NR) | .requeue" "$TD/o") $(jq -r ".jobs[] | select(.id == $S) | \"\(.requeue) \(.preemptions)\"" "$TD/o")" \
    "false true 1" "run --no-requeue submits requeue: false; the default is true"

# --- tessel run in the foreground through a preemption -------------------------------------
tcli kill "$P" "$S"
wait_for '[ "$(state_of $P)" = cancelled ] && [ "$(state_of $S)" = cancelled ]'
ok $? "both GPUs free again"
G="$TD/go"
mkdir -p "$G"
# held NAME: a shell command that prints a line per attempt and runs until the go-file exists.
held() { echo "echo attempt; while [ ! -e $G/$1 ]; do sleep 0.05; done"; }
"$TCLI" run --gpus 2 --queue scav --name fg --shell "$(held fg)" >"$TD/fg.o" 2>"$TD/fg.e" </dev/null &
FG=$!
wait_for 'tcli ps --json; [ "$(jq -r ".jobs[] | select(.name == \"fg\") | .state" "$TD/o")" = running ]'
ok $? "tessel run (foreground): the scav job runs on both GPUs"
FGID=$(jq -r '.jobs[] | select(.name == "fg") | .id' "$TD/o")
wait_for 'grep -q "^attempt$" "$TD/fg.o"'; ok $? "its first attempt's output is streamed"
tcli run -d --gpu 1 --queue prod --shell "$(held p2)"
P2=$(out)
wait_for '[ "$(state_of $P2)" = running ]'; ok $? "prod's job preempts it"
wait_for '[ "$(state_of $FGID)" = pending ]'; ok $? "the foreground job is requeued"
touch "$G/p2"
wait_for '[ "$(state_of $FGID)" = running ]'; ok $? "and runs again once prod's job has ended"
touch "$G/fg"
wait $FG
is "$?" 0 "tessel run exits 0: the job succeeded on its second attempt"
is "$(grep -c '^attempt$' "$TD/fg.o")" 2 "its stdout shows both attempts"
grep -q "^\[tessel\] job $FGID preempted to make room for job $P2 of queue 'prod'; requeued (preemption 1)$" "$TD/fg.o"
ok $? "and tesseld's marker line between them"
is "$(cat "$TD/fg.e")" "tessel: job $FGID was preempted and requeued 1 time(s) on its way" \
    "stderr says it was requeued once"
tcli ps -a --limit 1 --json
tcli ps -a
is "$(grep -E "^ *$FGID " "$TD/o" | tr -s ' ' | cut -d' ' -f5-8)" "succeeded (preempted ×1) 0" \
    "ps -a: succeeded (preempted ×1), exit 0"

# --no-requeue in the foreground: the first preemption ends it, exit 123.
"$TCLI" run --gpus 2 --queue scav --name nr --no-requeue --shell "$(held nr)" >"$TD/nr.o" 2>"$TD/nr.e" </dev/null &
NRP=$!
wait_for 'tcli ps --json; [ "$(jq -r ".jobs[] | select(.name == \"nr\") | .state" "$TD/o")" = running ]'
ok $? "a --no-requeue job runs on both GPUs"
NRID=$(jq -r '.jobs[] | select(.name == "nr") | .id' "$TD/o")
tcli run -d --gpu 1 --queue prod --shell "$(held p3)"
P3=$(out)
wait $NRP
is "$?" 123 "tessel run --no-requeue exits 123 when preempted"
grep -q "^tessel: job $NRID preempted: preempted to make room for job $P3 of queue 'prod'$" "$TD/nr.e"
ok $? "... saying why: $(cat "$TD/nr.e")"
tcli ps -a
is "$(grep -E "^ *$NRID " "$TD/o" | tr -s ' ' | cut -d' ' -f5)" "preempted" "ps -a: preempted"
touch "$G/p3" "$G/nr"

# --- ps -a --limit: the newest jobs ---------------------------------------------------------
for i in 1 2 3; do tcli run -d --queue scav -- true; done
LAST=$(out)
tcli ps -a --limit 2 --json
is "$(jq -r '[.jobs[].id] | join(",")' "$TD/o")" "$((LAST - 1)),$LAST" "ps -a --limit 2: the 2 newest, oldest first"
tcli ps -a --limit 2
is "$(sed -n '2,$p' "$TD/o" | awk '{print $1}' | tr '\n' ,)" "$((LAST - 1)),$LAST," "... in the table too"
tcli ps -a --json
is "$(jq -r '.jobs | length' "$TD/o")" "$LAST" "ps -a without --limit: every job (fewer than the default 100)"
tcli ps --limit 0
is "$RC" 2 "ps --limit 0: exit 2"

td_stop; ok $? "tesseld stops cleanly"
done_testing
