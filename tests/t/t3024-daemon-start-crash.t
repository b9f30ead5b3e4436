#!/bin/sh
# t3024-daemon-start-crash.t - tesseld killed (SIGKILL) at each step of a job's start
# (--test-kill-at: after the store says running, after the job's directory, after its cgroup,
# after the shim's spawn, after the shim's pid is in the store).  The job, acknowledged (201)
# before, is never failed by the next tesseld: it is requeued when no supervisor was started
# (no preemption counted) or picked up running when one was, and in every case it runs
# exactly once and succeeds.  The job is nobody's, run by root tesseld.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
bail() { echo "1..1"; echo "not ok 1 - $1"; exit 1; }
command -v curl >/dev/null && command -v jq >/dev/null || bail "curl and jq are needed"
[ "$(id -u)" = 0 ] || bail "must run as root (tesseld switches users)"
getent passwd nobody >/dev/null || bail "no 'nobody' account"

td_setup
chmod 755 "$TD"
# A bad step is refused at start with a clear line.
"$TESSEL_BUILD/bin/tesseld" --data-dir "$TD/bad" --listen 127.0.0.1:0 --test-kill-at nowhere \
    >"$TD/bad.log" 2>&1
RC=$?
is "$RC $(cat "$TD/bad.log")" \
    "2 tesseld: --test-kill-at nowhere: expected running, dir, cgroup, spawned or recorded" \
    "an unknown --test-kill-at step is refused"

td_start --fake-gpus 1xT4:16G --no-cgroups || bail "tesseld did not start"
api POST /v1/users '{"name":"nobody"}'
api POST /v1/tokens '{"user":"nobody"}'
NB=$(jget .token)
# Jobs are submitted to a queue capped at 0 GPU (they wait, and the 201 surely reaches the
# test), then the cap is lifted: the next tick starts the job and tesseld kills itself.
api POST /v1/queues '{"name":"held","limit":{"gpu":0}}'
is "$CODE" 201 "a queue capped at 0 GPU"
td_stop

for STEP in running dir cgroup spawned recorded; do
    td_start --fake-gpus 1xT4:16G --no-cgroups --test-kill-at $STEP || bail "tesseld did not start"
    api POST /v1/jobs '{"argv":["sh","-c","echo ran >>runs; sleep 1"],"gpu":0.5,"queue":"held"}' "$NB"
    J=$(jget .id)
    is "$CODE" 201 "[$STEP] job $J acknowledged"
    api PATCH /v1/queues/held '{"limit":{"gpu":1}}' # the answer may never come: not checked
    # Bounded: a tesseld that never reaches the step fails the test rather than hanging it.
    wait_for '[ "$(cut -d" " -f3 /proc/'"$TD_PID"'/stat 2>/dev/null)" = Z ] || [ ! -e /proc/'"$TD_PID"' ]'
    DIED=$?
    [ $DIED = 0 ] || kill -9 "$TD_PID"
    wait "$TD_PID" 2>/dev/null
    is "$DIED $?" "0 137" "[$STEP] tesseld killed itself at '$STEP'"
    grep -q -- "--test-kill-at $STEP: killing myself" "$TD/tesseld.log"
    ok $? "[$STEP] and said so in its log"

    td_start --fake-gpus 1xT4:16G --no-cgroups || bail "tesseld did not restart"
    # Every state the job is seen in until it ends: pending, running, succeeded only.
    SEEN=""
    i=0
    while [ $i -lt 600 ]; do
        S=$(job_state "$J")
        case " $SEEN " in *" $S "*) ;; *) SEEN="$SEEN $S" ;; esac
        case "$S" in succeeded | failed | cancelled | preempted) break ;; esac
        i=$((i + 1))
        sleep 0.1
    done
    is "$S" succeeded "[$STEP] after the restart the job succeeds (states seen:$SEEN)"
    case "$SEEN" in *failed*) ok 1 "[$STEP] never failed" ;; *) ok 0 "[$STEP] never failed" ;; esac
    is "$(wc -l <"$TD/data/jobs/$J/runs" 2>/dev/null)" 1 "[$STEP] it ran exactly once"
    api GET "/v1/jobs/$J" "" "$NB"
    is "$(jget .preemptions)" 0 "[$STEP] no preemption counted"
    case $STEP in
    running | dir | cgroup)
        grep -q "job $J requeued: requeued: tesseld stopped before the job's start" "$TD/tesseld.log"
        ok $? "[$STEP] no supervisor was started: the job was requeued" ;;
    *)
        grep -q "job $J requeued" "$TD/tesseld.log"
        ok "$([ $? -ne 0 ]; echo $?)" "[$STEP] its supervisor was started: picked up, not requeued" ;;
    esac
    ls "$TD/data/starts/$J.lock" >/dev/null 2>&1
    ok "$([ $? -ne 0 ]; echo $?)" "[$STEP] its start lock is gone after its end"
    api PATCH /v1/queues/held '{"limit":{"gpu":0}}'
    is "$CODE" 200 "[$STEP] the queue is capped at 0 GPU again"
    td_stop; ok $? "[$STEP] tesseld stops cleanly"
done
done_testing
