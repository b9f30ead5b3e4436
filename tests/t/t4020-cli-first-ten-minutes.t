#!/bin/sh
# t4020-cli-first-ten-minutes.t - a new user's first ten minutes, with the CLI only: log in, see
# the GPUs, run a job in the foreground, run one that holds the GPU and one that must wait, see
# that it waits and why (tessel ps), cancel it, follow the first job's output (tessel logs -f)
# until it ends, then resubmit with a time limit (--time) and a dependency (--after), see the
# time limit end the first and the dependent job run, and read the whole story (tessel show).

. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
command -v jq >/dev/null || missing "jq is needed"
[ -x "$TESSEL_BUILD/bin/tesseld" ] || missing "tesseld not built"
[ -x "$TESSEL_BUILD/bin/tessel" ] || missing "tessel not built"

td_setup
td_start --fake-gpus 1xRTX4090:24G --no-cgroups --kill-wait 1s || missing "tesseld did not start"
cli_setup
G="$TD/go"
mkdir -p "$G"
# ps_json FILTER: jq FILTER over `tessel ps -a --json` (the CLI's own JSON)
ps_json() { "$TCLI" ps -a --json 2>/dev/null | jq -r "$1"; }
state() { ps_json ".jobs[] | select(.id == $1) | .state"; }
reason() { ps_json ".jobs[] | select(.id == $1) | .reason // empty"; }

# --- minute 1: log in, look around ------------------------------------------------------------------
tcli login --data-dir "$TD/data"
is "$RC" 0 "tessel login"
tcli gpus
is "$RC" 0 "tessel gpus"
grep -q "RTX4090" "$TD/o"; ok $? "shows the GPU"

# --- minute 2: a first job, in the foreground ------------------------------------------------------------
tcli run -- echo hello from my first job
is "$RC $(out)" "0 hello from my first job" "tessel run prints the job's output and its status"

# --- minutes 3-4: a job that holds the GPU, one that must wait, and why --------------------------------------
tcli run -d --gpu 1 --name train -- sh -c "echo epoch 1; while [ ! -e $G/free ]; do sleep 0.1; done; echo epoch 2"
J1=$(out)
is "$RC" 0 "tessel run -d --gpu 1 prints the job's id ($J1)"
wait_for '[ "$(state '"$J1"')" = running ]'
ok $? "it runs"
# in the foreground, as a new user would: tessel run says why the job waits while it waits
"$TCLI" run --gpu 1 --name eval -- echo evaluated >"$TD/fg.out" 2>"$TD/fg.err" &
FG=$!
wait_for 'grep -q "^tessel: job [0-9]* is pending: " "$TD/fg.err"'
ok $? "tessel run in the foreground says why its job waits: $(head -1 "$TD/fg.err")"
J2=$(sed -n 's/^tessel: job \([0-9]*\) is pending: .*/\1/p' "$TD/fg.err" | head -1)
wait_for '[ -n "$(reason '"$J2"')" ]'
ok $? "a second whole-GPU job waits, with a reason: $(reason "$J2")"
tcli ps
grep -qE "^ *$J2 .* pending " "$TD/o"; ok $? "tessel ps lists it as pending"
is "$(head -1 "$TD/o" | grep -c REASON)" 1 "tessel ps has a REASON column"
grep -E "^ *$J2 " "$TD/o" | grep -q "Resources"; ok $? "its REASON cell says which resource is short"

# --- minute 5: cancel the waiting job -------------------------------------------------------------------------
tcli kill "$J2"
is "$RC $(out)" "0 job $J2: cancelled" "tessel kill cancels the waiting job"
is "$(state "$J2")" cancelled "tessel ps -a shows it cancelled"
wait "$FG"
is "$?" 124 "the foreground tessel run of the cancelled job returns 124 (cancelled)"

# --- minute 6: follow the first job's output until it ends ---------------------------------------------------------
"$TCLI" logs -f "$J1" >"$TD/follow" 2>"$TD/follow.err" &
FOLLOW=$!
wait_for 'grep -q "epoch 1" "$TD/follow"'
ok $? "tessel logs -f shows what the job printed so far"
touch "$G/free"
wait "$FOLLOW"
is "$? $(tr '\n' ' ' <"$TD/follow")" "0 epoch 1 epoch 2 " "and follows it to its end, then returns 0"
is "$(state "$J1")" succeeded "the job succeeded"
tcli logs --tail 1 "$J1"
is "$RC $(out)" "0 epoch 2" "tessel logs --tail 1 prints the last line"

# --- minutes 7-9: a time limit and a dependency --------------------------------------------------------------------
tcli run -d --time 2s --name long -- sh -c 'echo working; sleep 60'
T=$(out)
is "$RC" 0 "tessel run --time 2s ($T)"
tcli run -d --name data -- sh -c "while [ ! -e $G/data ]; do sleep 0.1; done"
W=$(out)
tcli run -d --after "$T:any,$W" --name report -- echo report written
D=$(out)
tcli run -d --after "$T" --name publish -- echo published
P=$(out)
wait_for 'case "$(reason '"$D"')" in "dependency: waiting for job "*) true ;; *) false ;; esac'
ok $? "a job --after $T:any,$W waits, and says so: $(reason "$D")"
wait_for '[ "$(state '"$T"')" = failed ]'
ok $? "the time limit ends job $T"
is "$(reason "$T")" "time limit (2s)" "tessel ps says why: time limit (2s)"
is "$(state "$D")" pending "the dependent job still waits for job $W"
touch "$G/data"
wait_for '[ "$(state '"$D"')" = succeeded ]'
ok $? "once job $W succeeded too, the dependent job runs and succeeds"
tcli logs "$D"
is "$(out)" "report written" "tessel logs shows its output"
wait_for '[ "$(state '"$P"')" = cancelled ]'
ok $? "a job --after $T (it had to succeed) is cancelled"
is "$(reason "$P")" "dependency never satisfied: job $T failed (it had to succeed)" "and says why"

# --- minute 10: the whole story of a job ---------------------------------------------------------------------------
tcli show "$T"
is "$RC" 0 "tessel show $T"
grep -q "time limit (2s)" "$TD/o"; ok $? "shows its reason"
grep -q "time_limit" "$TD/o"; ok $? "and its end cause"
td_stop
ok $? "tesseld stops cleanly (no sanitizer report)"
done_testing
