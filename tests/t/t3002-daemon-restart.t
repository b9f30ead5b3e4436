#!/bin/sh
# t3002-daemon-restart.t - restart safety: kill -9 of tesseld while jobs run leaves them alive;
# the restarted tesseld re-attaches, records the ends of jobs that finished while it was down,
# and still has every job it acknowledged, also when killed during 200 concurrent submissions;
# --durability full syncs every commit (strace counts the fsyncs) and keeps that promise.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"

td_setup
FAKE="--fake-gpus 1xA100:40G --no-cgroups"
td_start $FAKE || missing "tesseld did not start"
G="$TD/go"
mkdir -p "$G"
held() { # held NAME GPU -> id
    api POST /v1/jobs "{\"argv\":[\"sh\",\"-c\",\"echo start; while [ ! -e $G/$1 ]; do sleep 0.05; done; echo end\"],\"gpu\":$2}"
    jget .id
}
jobpid() { read -r _ _ p <"$TD/data/jobs/$1/pid" && echo "$p"; }

R1=$(held r1 0.5)
R2=$(held r2 0.5)
P=$(held p 1)
wait_for '[ "$(job_state $R1)" = running ] && [ "$(job_state $R2)" = running ] && [ -s "$TD/data/jobs/$R2/pid" ] && [ -s "$TD/data/jobs/$R1/pid" ]'
ok $? "two half-GPU jobs run"
is "$(job_state $P)" "pending" "a whole-GPU job waits"
PID1=$(jobpid "$R1")
PID2=$(jobpid "$R2")

td_kill9
kill -0 "$PID1" && kill -0 "$PID2"; ok $? "both jobs survive kill -9 of tesseld"
touch "$G/r1"
wait_for '[ -n "$(start_record $R1 exit)" ]'; ok $? "one job ends while tesseld is down (its shim wrote its exit record into its start lock)"

td_start $FAKE || exit 1
is "$(job_state $R1)" "succeeded" "after restart, the job that ended meanwhile is recorded"
api GET "/v1/jobs/$R1"
is "$(jget .exit_code)" "0" "with its exit status"
is "$(job_state $R2)" "running" "the other job is still running"
kill -0 "$PID2"; ok $? "same process (pid $PID2)"
api GET /v1/gpus
is "$(jget '.gpus[0].allocated_milli')" "500" "its half GPU is held again after restart"
is "$(job_state $P)" "pending" "the pending job is still pending"
touch "$G/r2"
wait_for '[ "$(job_state $R2)" = succeeded ]'; ok $? "the re-attached job's end is recorded"
api GET "/v1/jobs/$R2/logs"
is "$(cat "$TD/out" | tr '\n' ' ')" "start end " "its output spans the restart"
wait_for '[ "$(job_state $P)" = running ]'; ok $? "the pending job starts when room frees"
touch "$G/p"
wait_for '[ "$(job_state $P)" = succeeded ]'; ok $? "and succeeds"

# kill -9 in the middle of 200 concurrent submissions, with a job running.
R3=$(held r3 0.5)
wait_for '[ "$(job_state $R3)" = running ] && [ -s "$TD/data/jobs/$R3/pid" ]'
PID3=$(jobpid "$R3")
api POST /v1/queues '{"name":"hold","max_gpu_milli":0}'
mkdir -p "$TD/sub"
i=0
while [ $i -lt 200 ]; do
    i=$((i + 1))
    curl -s -o "$TD/sub/$i.json" -w '%{http_code}' -H "Authorization: Bearer $TD_ADMIN" \
        --data-binary '{"argv":["true"],"gpu":0.5,"queue":"hold"}' "$TD_URL/v1/jobs" \
        >"$TD/sub/$i.code" 2>/dev/null &
done
wait_for '[ "$(grep -l 201 "$TD"/sub/*.code 2>/dev/null | wc -l)" -ge 20 ]'
td_kill9
wait
ACKED=$(grep -l '^201$' "$TD"/sub/*.code | wc -l)
diag "$ACKED of 200 submissions were acknowledged before kill -9"
[ "$ACKED" -ge 20 ]; ok $? "some submissions were acknowledged before the kill"
kill -0 "$PID3"; ok $? "the running job survives the kill"

td_start $FAKE || exit 1
lost=0
for f in $(grep -l '^201$' "$TD"/sub/*.code); do
    id=$(jq -r .id "${f%.code}.json")
    api GET "/v1/jobs/$id"
    [ "$CODE" = 200 ] || { lost=$((lost + 1)); diag "acknowledged job $id is missing"; }
done
is "$lost" "0" "every acknowledged job is in the store after restart"
api GET "/v1/jobs?queue=hold&limit=10000"
N=$(jget '.jobs | length')
[ "$N" -ge "$ACKED" ] && [ "$N" -le 200 ]; ok $? "the store holds $N jobs: acknowledged <= stored <= sent"
is "$(jget '[.jobs[].state] | unique | join(",")')" "pending" "all of them are pending in their queue"
if command -v sqlite3 >/dev/null; then
    is "$(sqlite3 "$TD/data/tessel.db" 'PRAGMA integrity_check')" "ok" "the store passes integrity_check"
fi
is "$(job_state $R3)" "running" "the running job is re-attached"
touch "$G/r3"
wait_for '[ "$(job_state $R3)" = succeeded ]'; ok $? "and its end is recorded"

# The supervisor itself killed: the job is failed and its processes do not linger.
R4=$(held r4 0.5)
wait_for '[ "$(job_state $R4)" = running ] && [ -s "$TD/data/jobs/$R4/pid" ]'
read -r SHIM4 _ PID4 <"$TD/data/jobs/$R4/pid"
kill -9 "$SHIM4"
wait_for '[ "$(job_state $R4)" = failed ]'; ok $? "a job whose tessel-shim was killed is failed"
api GET "/v1/jobs/$R4"
case "$(jget .reason)" in "supervisor lost"*) r=0 ;; *) r=1 ;; esac
ok $r "reason: $(jget .reason)"
wait_for '! kill -0 "$PID4" 2>/dev/null'; ok $? "and its process is killed"

# --- --durability: full = an fsync per commit; acknowledged jobs survive kill -9 either way ---
"$TESSEL_BUILD/bin/tesseld" --data-dir "$TD/baddur" --durability sometimes >"$TD/dur.err" 2>&1
is "$?" 2 "--durability sometimes: exit 2"
grep -q 'expected normal or full' "$TD/dur.err"; ok $? "... saying what it expects"
# syncs N -> fsync and fdatasync calls of tesseld's threads during N submissions to 'hold'
# (empty when strace cannot attach here).
syncs() {
    strace -f -e trace=fsync,fdatasync -o "$TD/strace" -p "$TD_PID" 2>"$TD/strace.err" &
    _sp=$!
    if ! wait_for 'grep -q attached "$TD/strace.err" || ! kill -0 $_sp 2>/dev/null' ||
        ! kill -0 $_sp 2>/dev/null; then
        return 0
    fi
    sleep 0.5 # every thread attached
    _i=0
    while [ $_i -lt "$1" ]; do
        api POST /v1/jobs '{"argv":["true"],"queue":"hold"}'
        _i=$((_i + 1))
    done
    # SIGTERM, not SIGINT: a background job of a non-interactive shell starts
    # with SIGINT ignored, and strace would never stop.  Bounded: after 10 s
    # strace is killed (the kernel then detaches tesseld and its children).
    kill -TERM $_sp 2>/dev/null
    _w=100
    while kill -0 $_sp 2>/dev/null && [ $_w -gt 0 ]; do
        sleep 0.1
        _w=$((_w - 1))
    done
    kill -KILL $_sp 2>/dev/null
    wait $_sp 2>/dev/null
    grep -c -E 'fsync|fdatasync' "$TD/strace"
}
NSYNC=""
command -v strace >/dev/null && NSYNC=$(syncs 30)
td_stop; ok $? "tesseld (--durability normal, the default) stops cleanly"
td_start $FAKE --durability full || { diag "tesseld --durability full did not start"; exit 1; }
FSYNC=""
[ -n "$NSYNC" ] && FSYNC=$(syncs 30)
if [ -n "$NSYNC" ] && [ -n "$FSYNC" ]; then
    # normal: the WAL is synced only when it is checkpointed (a few calls each time, and a
    # loaded machine's longer window can hold two or three checkpoints: 0-13 seen), never per
    # commit; full: every commit (about 4 calls each).
    diag "fsync/fdatasync calls for 30 submissions: $NSYNC normal, $FSYNC full"
    [ "$NSYNC" -lt 30 ]; ok $? "normal: no fsync per commit ($NSYNC for 30 submissions)"
    [ "$FSYNC" -ge 30 ]; ok $? "full: at least one fsync per submission ($FSYNC for 30)"
else
    diag "strace cannot attach here: the fsync counts are not checked"
fi
DUR=""
for i in 1 2 3 4 5; do
    api POST /v1/jobs '{"argv":["true"],"queue":"hold","name":"durable"}'
    [ "$CODE" = 201 ] && DUR="$DUR $(jget .id)"
done
td_kill9
td_start $FAKE --durability full || { diag "tesseld did not restart"; exit 1; }
lost=0
for id in $DUR; do
    api GET "/v1/jobs/$id"
    [ "$CODE $(jget .name)" = "200 durable" ] || lost=$((lost + 1))
done
is "$(echo $DUR | wc -w) $lost" "5 0" "--durability full: 5 acknowledged jobs all there after kill -9"

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
