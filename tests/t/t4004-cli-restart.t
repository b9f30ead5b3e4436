#!/bin/sh
# t4004-cli-restart.t - kill -9 of tesseld as seen through the CLI: a foreground `tessel run`
# rides out a restart (its job keeps running, its output resumes where it stopped, and it exits
# with the job's status); 200 concurrent `tessel run -d` killed in the middle: every one that
# printed a job id (acknowledged) finds its job in the store after restart, every other one
# printed one line and exited 1, and a running job survives.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
command -v jq >/dev/null || missing "jq is needed"
[ -x "$TESSEL_BUILD/bin/tesseld" ] || missing "tesseld not built"

td_setup
FAKE="--fake-gpus 1xA100:40G --no-cgroups"
td_start $FAKE || missing "tesseld did not start"
ADDR=${TD_URL#http://}
cli_setup
export TESSEL_URL="$TD_URL" TESSEL_TOKEN="$TD_ADMIN"
G="$TD/go"
mkdir -p "$G"

# --- a foreground run across a restart ------------------------------------------------------
"$TCLI" run --name fg --gpu 0.5 -- sh -c "echo before; while [ ! -e $G/a ]; do sleep 0.05; done; echo after; exit 7" \
    >"$TD/a.o" 2>"$TD/a.e" &
APID=$!
wait_for 'grep -qs before "$TD/a.o"'; ok $? "a foreground run streams its job's output"
FG=$(TESSEL_URL=$TD_URL TESSEL_TOKEN=$TD_ADMIN "$TCLI" ps --json | jq -r '.jobs[] | select(.name == "fg") | .id')
"$TCLI" logs -f "$FG" >"$TD/f.o" 2>"$TD/f.e" &
FPID=$!
wait_for 'grep -qs before "$TD/f.o"'
td_kill9
sleep 0.3
kill -0 "$APID" && kill -0 "$FPID"; ok $? "tessel run and tessel logs -f wait while tesseld is down"
td_start $FAKE --listen "$ADDR" || exit 1
touch "$G/a"
wait "$APID"
is "$?" 7 "after the restart it exits with the job's status (7)"
is "$(tr '\n' ' ' <"$TD/a.o")" "before after " "the output resumed where it stopped, nothing twice"
wait "$FPID"; FRC=$?; [ "$FRC" = 0 ] || diag "logs -f: $(cat "$TD/f.e")"
is "$FRC" 0 "tessel logs -f ends with the job"
is "$(tr '\n' ' ' <"$TD/f.o")" "before after " "and printed its output once, across the restart"

# --- 200 concurrent submissions, kill -9 in the middle ---------------------------------------
tcli run -d --gpu 0.5 -- sh -c "while [ ! -e $G/r ]; do sleep 0.05; done"
R=$(out)
wait_for '[ "$(state_of $R)" = running ] && [ -s "$TD/data/jobs/$R/pid" ]'; ok $? "a job runs"
read -r _ _ RPID <"$TD/data/jobs/$R/pid"
tcli queues add hold --max-gpu 0
mkdir -p "$TD/sub"
i=0
while [ $i -lt 200 ]; do
    i=$((i + 1))
    ("$TCLI" run -d --queue hold --gpu 0.5 -- true >"$TD/sub/$i.o" 2>"$TD/sub/$i.e" </dev/null
     echo $? >"$TD/sub/$i.rc") &
done
wait_for '[ "$(cat "$TD"/sub/*.o 2>/dev/null | wc -l)" -ge 20 ]'
td_kill9
wait
ACKED=$(grep -l '^0$' "$TD"/sub/*.rc | wc -l)
diag "$ACKED of 200 submissions were acknowledged before kill -9"
[ "$ACKED" -ge 20 ] && [ "$ACKED" -le 200 ]; ok $? "some submissions were acknowledged before the kill"
kill -0 "$RPID"; ok $? "the running job survives the kill"
bad=0
for f in "$TD"/sub/*.rc; do
    n=${f%.rc}
    case "$(cat "$f")" in
    0) grep -qE '^[1-9][0-9]*$' "$n.o" && [ ! -s "$n.e" ] || bad=$((bad + 1)) ;;
    1) [ ! -s "$n.o" ] && [ "$(wc -l <"$n.e")" -eq 1 ] && grep -q '^tessel: ' "$n.e" ||
        bad=$((bad + 1)) ;;
    *) bad=$((bad + 1)) ;;
    esac
done
is "$bad" 0 "each tessel run -d either printed a job id (exit 0) or one error line (exit 1)"

td_start $FAKE --listen "$ADDR" || exit 1
tcli ps --queue hold --json
jq -r '.jobs[].id' "$TD/o" | sort >"$TD/stored"
cat "$TD"/sub/*.o | sort >"$TD/acked"
is "$(comm -23 "$TD/acked" "$TD/stored" | wc -l)" 0 "every acknowledged job is in the store after restart"
N=$(wc -l <"$TD/stored")
[ "$N" -ge "$ACKED" ] && [ "$N" -le 200 ]; ok $? "stored: $N, between acknowledged ($ACKED) and sent (200)"
is "$(jq -r '[.jobs[].state] | unique | join(",")' "$TD/o")" "pending" "they are pending in their queue"
is "$(state_of "$R")" "running" "the running job is still running after restart"
touch "$G/r"
wait_for '[ "$(state_of $R)" = succeeded ]'; ok $? "and its end is recorded"

td_stop; ok $? "tesseld stops cleanly"
done_testing
