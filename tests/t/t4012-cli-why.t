#!/bin/sh
# t4012-cli-why.t - why a job waits, through the CLI: `tessel ps` has a REASON column (why a
# pending job waits; how a finished one ended, with -a); `tessel run` in the foreground prints
# the reason while its job waits (a line per change, on stderr, none with --quiet) and one line
# when it starts (which GPU, which slice); a job that can never run is refused at submission
# with one line and a non-zero exit.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
command -v jq >/dev/null || missing "jq is needed"
[ -x "$TESSEL_BUILD/bin/tesseld" ] || missing "tesseld not built"

td_setup
td_start --fake-gpus 1xT4:16G --no-cgroups || missing "tesseld did not start"
cli_setup
export TESSEL_URL="$TD_URL" TESSEL_TOKEN="$TD_ADMIN"
G="$TD/go"
mkdir -p "$G"

admin queues add vision --limit gpu=0.5
is "$RC" 0 "queue vision is limited to half a GPU"
admin run -d --queue vision --gpu 0.5 --name fill -- sh -c "while [ ! -e $G/fill ]; do sleep 0.05; done"
FILL=$(out)
wait_for '[ "$(job_state $FILL)" = running ]'
ok $? "a job fills vision"

WANT="QueueLimit: queue 'vision' would exceed its limit gpu=0.5 (uses 0.5, job asks 0.5)"
# --- tessel run in the foreground, while its job waits ---------------------------------------
"$TCLI" run --queue vision --gpu 0.5 -- echo ran >"$TD/r.o" 2>"$TD/r.e" &
RPID=$!
"$TCLI" run --quiet --queue vision --gpu 0.5 -- echo quiet >"$TD/q.o" 2>"$TD/q.e" &
QPID=$!
wait_for 'grep -qs "is pending: " "$TD/r.e"'
ok $? "tessel run says that its job is pending"
RID=$(sed -n 's/^tessel: job \([0-9]*\) is pending: .*/\1/p' "$TD/r.e" | head -1)
is "$(cat "$TD/r.e")" "tessel: job $RID is pending: $WANT" "... and why, in one line on stderr"

# --- tessel ps --------------------------------------------------------------------------------
admin ps
is "$RC" 0 "tessel ps exits 0"
head -1 "$TD/o" | grep -q ' REASON *$'; ok $? "its table ends with a REASON column"
grep "^ *$RID " "$TD/o" | grep -q -F "$WANT"; ok $? "the pending job's row gives its reason"
grep "^ *$FILL " "$TD/o" | grep -q ' - *$'; ok $? "the running job's reason is '-'"

# The first job ends: the foreground runs' jobs start one after the other.
touch "$G/fill"
wait $RPID
is "$?" 0 "tessel run exits with its job's status once it has run"
is "$(cat "$TD/r.o")" "ran" "the job's output came on stdout"
is "$(tail -1 "$TD/r.e")" "tessel: job $RID started on gpu0 (a 0.5 slice, 8.00 GiB)" \
    "a last line on stderr says where it started"
wait $QPID
is "$?" 0 "the --quiet run ends too"
is "$(cat "$TD/q.o") $(wc -c <"$TD/q.e")" "quiet 0" "... and printed nothing on stderr"

admin ps -a
grep "^ *$FILL " "$TD/o" | grep -q 'exited with status 0 *$'; ok $? "ps -a gives a finished job's end"

# --- refused at submission ----------------------------------------------------------------------
admin run --queue vision --gpu 1 -- true
is "$RC" 1 "a job its queue's limit can never hold: exit 1"
one_line_error; ok $? "... with one line on stderr"
grep -q -F "this job can never run: QueueLimit: the job asks gpu=1, above queue 'vision''s limit gpu=0.5" "$TD/e"
ok $? "... that names the queue and its limit"
admin run -d --gpu 0.5 --gpu-mem 20G -- true
is "$RC" 1 "more GPU memory than the GPU has: exit 1"
one_line_error; ok $? "... with one line: $(errtext)"

td_stop
ok $? "tesseld stops cleanly"
done_testing
