#!/bin/sh
# t9015: tesseld's reader of the jobs' states (tessel-slurm-submit --read, src/slurmsub/read.h;
# docs/slurm-backend.md, "Reading the jobs' states") on the multi-node test cluster of
# tests/slurm/cluster.sh (SIMULATED GPUs).  Checked: for jobs in every state a poll meets
# (completed, failed with a status and by a signal, cancelled, running, suspended, held), the
# reader says what squeue --json of Slurm 22.05 says, key by key (job_id, job_state,
# state_reason, start_time, submit_time, end_time, exit_code, nodes, user_id, user_name, name,
# partition, cpus); a request for some ids answers those only (one by one up to 8, more by one
# load filtered), an id Slurm does not hold is left out, a request out of shape is refused; a
# job whose name is not UTF-8 is read with '?' for those bytes, and harms no poll (neither
# the reader's nor, with slurm-submit = sbatch, squeue's: its answer is made UTF-8 first);
# control bytes in a name are '?', a name past 127 bytes is cut at a character's end (the
# reader's answer and `tessel ps -a`: review of the reader, M1 and L3; all as tslra);
# tesseld --slurm reads through it (one reader, a child of tesseld's, as tesseld's uid), its
# jobs end with Slurm's exit code, `tessel ps -a` shows the direct jobs from it, and a reader
# killed is started again at the next poll, with no job's state lost.
# test-timeout: 600
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/local.sh"
. "$TESSEL_SRCDIR/tests/slurm/cluster.sh"

[ -x "$TESSEL_BUILD/bin/tessel-slurm-submit" ] || missing "tessel-slurm-submit is not built"
command -v python3 >/dev/null || missing "python3 (the reader's frames)"
command -v jq >/dev/null || missing "jq"
tsc_test_pieces
tsc_test_setup tslra
A_UID=$(id -u tslra)
tsc_start_sim
READER=$TESSEL_BUILD/bin/tessel-slurm-submit

# ask REQUEST: the reader's answer to one request, run as root in the controller's network
# namespace as tesseld runs it (tests/slurm/reader.py speaks its frames).
ask() { tsc python3 "$TESSEL_SRCDIR/tests/slurm/reader.py" "$READER" "$1"; }
sb() { tsc su -s /bin/sh tslra -c "cd /; sbatch --parsable -o /dev/null $*"; }

# ---- jobs in each state, submitted to Slurm directly ------------------------------------------
J_OK=$(sb --job-name=ok --wrap true)
J_FAIL=$(sb --job-name=fail --wrap "'exit 3'")
J_SIG=$(sb --job-name=sig --wrap "'kill -9 \$\$'")
J_CAN=$(sb --job-name=can --wrap "'sleep 300'")
J_RUN=$(sb --job-name=run --wrap "'sleep 300'")
J_SUS=$(sb --job-name=sus --wrap "'sleep 300'")
J_HELD=$(sb --job-name=held --hold --wrap true)
tsc_wait_state "$J_OK" COMPLETED && tsc_wait_state "$J_FAIL" FAILED &&
    tsc_wait_state "$J_SIG" FAILED && tsc_wait_state "$J_CAN" RUNNING &&
    tsc_wait_state "$J_RUN" RUNNING && tsc_wait_state "$J_SUS" RUNNING
ok $? "jobs submitted to Slurm directly: completed, failed (exit 3, SIGKILL), running"
tsc scancel "$J_CAN" && tsc scontrol suspend "$J_SUS" &&
    tsc_wait_state "$J_CAN" CANCELLED && tsc_wait_state "$J_SUS" SUSPENDED
ok $? "one cancelled, one suspended"
tsc_wait_reason "$J_HELD" JobHeldUser
ok $? "one held"
IDS="$J_OK $J_FAIL $J_SIG $J_CAN $J_RUN $J_SUS $J_HELD"

# ---- the reader says what squeue --json says ---------------------------------------------------
KEYS='job_id job_state state_reason start_time submit_time end_time exit_code nodes user_id user_name name partition cpus'
pick='[.jobs[] | {job_id, job_state, state_reason, start_time, submit_time, end_time, exit_code, nodes, user_id, user_name, name, partition, cpus}] | sort_by(.job_id)'
ask '{"all": true}' >"$TD/read.all"
ok $? "the reader answers a request for every job"
tsc squeue --json --states=all >"$TD/squeue.json"
ok $? "squeue --json answers"
jq -S "$pick" "$TD/read.all" >"$TD/read.picked"
jq -S "$pick" "$TD/squeue.json" >"$TD/squeue.picked"
is "$(jq length "$TD/read.picked")" 7 "the reader lists the 7 jobs slurmctld holds"
if cmp -s "$TD/read.picked" "$TD/squeue.picked"; then
    ok 0 "every key of every job as squeue --json has it ($KEYS)"
else
    ok 1 "every key of every job as squeue --json has it ($KEYS)"
    diff "$TD/squeue.picked" "$TD/read.picked" | head -n 40 | sed 's/^/# /'
fi
# Not a check that holds by construction: the states differ from job to job.
is "$(jq -r '[.[] | .job_state] | unique | join(" ")' "$TD/read.picked")" \
    "CANCELLED COMPLETED FAILED PENDING RUNNING SUSPENDED" "the jobs are in six states"
is "$(jq -r ".[] | select(.job_id == $J_FAIL) | .exit_code" "$TD/read.picked") \
$(jq -r ".[] | select(.job_id == $J_SIG) | .exit_code" "$TD/read.picked")" "768 9" \
    "exit codes as wait statuses: exit 3 is 768, SIGKILL 9"
is "$(jq -r ".[] | select(.job_id == $J_RUN) | \"\(.user_id) \(.user_name)\"" "$TD/read.picked")" \
    "$A_UID tslra" "the owner's uid and name"

# ---- requests for some ids ------------------------------------------------------------------
ask "{\"ids\": [$J_FAIL, $J_HELD, 99999]}" >"$TD/read.some"
is "$(jq -c '[.jobs[].job_id] | sort' "$TD/read.some")" "[$J_FAIL,$J_HELD]" \
    "three ids asked, one by one: the two Slurm holds, not the one it does not"
is "$(jq -c "[.jobs[] | select(.job_id == $J_FAIL)] | .[0] | {job_state, exit_code}" "$TD/read.some")" \
    '{"job_state":"FAILED","exit_code":768}' "the same record as in the whole list"
MANY=$(printf '%s,' $IDS; seq 100000 100012 | tr '\n' ',')
ask "{\"ids\": [${MANY%,}]}" >"$TD/read.many"
is "$(jq '.jobs | length' "$TD/read.many")" 7 "20 ids asked (above 8: one load, filtered): the 7 held"
is "$(ask '{"ids": [1], "user": "tslra"}' | jq -r .refused)" \
    'a request: "user" is not a key of this shape' "a request with another key: refused"
is "$(ask '{"ids": [0]}' | jq -r .refused)" "a request: id 0 is not a Slurm job id" \
    "an id that is no Slurm id: refused (the reader's refusal, not Slurm's error)"

# ---- a name of any bytes -------------------------------------------------------------------
J_BAD=$(sb --hold --job-name="$(printf 'bad\377name')" --wrap true)
ask "{\"ids\": [$J_BAD]}" >"$TD/read.bad"
is "$(jq -r '.jobs[0].name' "$TD/read.bad")" "bad?name" \
    "a job named with a byte that is not UTF-8: read, the byte as '?'"
is "$(ask '{"all": true}' | jq '.jobs | length')" 8 "and the whole list is still JSON, with it"
# Control bytes (six bytes of JSON each: review M1's way to swell the answer) and a name past
# what tesseld keeps (127 bytes), a two-byte character across the cut, both tslra's.
J_CTL=$(sb --hold --job-name="$(printf 'ctl\001\002\033x')" --wrap true)
LONG=$(printf '%0126d' 0 | tr 0 a)
J_LONG=$(sb --hold --job-name="${LONG}$(printf '\303\251')" --wrap true)
ask "{\"ids\": [$J_CTL, $J_LONG]}" >"$TD/read.ctl"
is "$(jq -r ".jobs[] | select(.job_id == $J_CTL) | .name" "$TD/read.ctl")" "ctl???x" \
    "a name of control bytes: each one '?' in the reader's answer"
is "$(jq -r ".jobs[] | select(.job_id == $J_LONG) | .name" "$TD/read.ctl")" "$LONG" \
    "a name longer than tesseld keeps: cut before the character that would be split"

# ---- tesseld reads through it ----------------------------------------------------------------
tsc_tesseld --fake-gpus 2xFakeGPU:8G --slurm-shards 4 --slurm-poll 1
tsc_cli tslra run -- sh -c "'exit 3'"
is "$?" 3 "tessel run through tesseld --slurm: Slurm's exit code 3 read back"
RD=$(pgrep -f -P "$TD_PID" -- "tessel-slurm-submit --read")
is "$(echo "$RD" | wc -w)" 1 "one reader, a child of tesseld's"
is "$(ps -o uid= -p "$RD" | tr -d ' ')" "$(ps -o uid= -p "$TD_PID" | tr -d ' ')" \
    "running as tesseld's uid"
tsc_cli tslra ps -a --json >"$TD/ps.out"
ok $? "tessel ps -a --json"
view() { jq -r ".jobs[] | select(.id == \"slurm:$1\") | .state + \"/\" + .name + \"/\" + (.exit_code | tostring)" "$TD/ps.out"; }
is "$(view "$J_HELD") $(view "$J_RUN") $(view "$J_FAIL") $(view "$J_OK") $(view "$J_BAD")" \
    "pending/held/null running/run/null failed/fail/3 succeeded/ok/0 pending/bad?name/null" \
    "tessel ps -a shows the direct jobs (a view of every job, read through the reader)"
is "$(view "$J_CTL") $(jq -r ".jobs[] | select(.id == \"slurm:$J_LONG\") | .name | length" "$TD/ps.out")" \
    "pending/ctl???x/null 126" "and the names of control bytes and of past 127 bytes, as read"
kill -9 "$RD"
tsc_cli tslra run -- sh -c "'exit 5'"
is "$?" 5 "the reader killed: the next job's end still read (exit 5)"
RD2=$(pgrep -f -P "$TD_PID" -- "tessel-slurm-submit --read")
ok $([ -n "$RD2" ] && [ "$RD2" != "$RD" ]; echo $?) "another reader was started"
grep -q "read by squeue" "$TD/tesseld.log"
is "$?" 1 "and tesseld never fell back to squeue"
td_stop
ok $? "tesseld stops cleanly"
wait_for '! kill -0 '"$RD2"' 2>/dev/null'
ok $? "its reader ended with it"

# ---- squeue (slurm-submit = sbatch) with that name held ------------------------------------
# squeue --json writes the name's bytes as they are: its answer is not UTF-8, which jansson
# refused, and every poll failed (every Tessel job's state frozen by one user's job name).
tsc squeue --json --states=all >"$TD/squeue.bad"
python3 -c 'import sys; open(sys.argv[1], "rb").read().decode("utf-8")' "$TD/squeue.bad" 2>/dev/null
is "$?" 1 "squeue --json's answer with that job held is not UTF-8 (the cause)"
tsc_tesseld --fake-gpus 2xFakeGPU:8G --slurm-shards 4 --slurm-poll 1 --slurm-submit sbatch
as tslra "$CLIENV timeout 120 $TESSEL_BUILD/bin/tessel run -- sh -c 'exit 7'"
is "$?" 7 "tesseld reading by squeue: the job's end read all the same (exit 7)"
is "$(pgrep -f -P "$TD_PID" -- "tessel-slurm-submit --read" | wc -l)" 0 "and no reader runs then"
td_stop
ok $? "that tesseld stops cleanly"
tsc scancel "$J_RUN" "$J_SUS" "$J_HELD" "$J_BAD" "$J_CTL" "$J_LONG"
done_testing
