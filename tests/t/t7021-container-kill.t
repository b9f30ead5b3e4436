#!/bin/sh
# t7021-container-kill.t - a container job is a job like any other (docs/containers.md): the
# same states, events and ends, through the shim that supervises it:
#   - `tessel kill` reaches the container's process (it is the job's process, in the job's
#     process group and cgroup): cancelled by its signal, nothing of it left (no process in the
#     job's cgroup, no mount on the host, no state directory);
#   - exit codes and signals are the container process's own: exit 3 (failed, 3), a process
#     that kills itself with SIGKILL (failed, signal 9), exit 0 (succeeded);
#   - an orphan the container leaves behind is reaped (the shim is the subreaper);
#   - a program the image lacks: failed at its start, crun's message in its stderr log;
#   - a time limit ends it (SIGTERM to the container's process); its GPU slice is suspended
#     (drained) and resumed through the slice file bound into the container;
#   - tesseld killed with SIGKILL and restarted: the running container job is picked up
#     again, then killed through the restarted tesseld;
#   - plain process jobs run as before beside them.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
. "$TESSEL_SRCDIR/tests/lib/container.sh"
ctr_daemon --kill-wait 5s
ctrjob() { nbjob "{\"argv\":[\"sh\",\"-c\",\"$1\"],\"image\":\"testimg:1\",\"cwd\":\"$W\"}"; }
rec() { api GET "/v1/jobs/$1" "" "$NB"; jq -r '"\(.state) \(.exit_code) \(.signal) \(.end_cause)"' "$TD/out"; }
ended() { s=$(job_state "$1"); [ "$s" != running ] && [ "$s" != pending ]; }

A=$(ctrjob "exit 3")
B=$(ctrjob "kill -9 \$\$")
C=$(ctrjob "echo fine")
P=$(api POST /v1/jobs "{\"argv\":[\"sh\",\"-c\",\"exit 4\"],\"cwd\":\"$W\"}" "$NB"; jget .id)
wait_for "ended $A && ended $B && ended $C && ended $P"
is "$(rec "$A")" "failed 3 null exit" "a container that exits 3: failed, exit code 3"
is "$(rec "$B")" "failed null 9 signal" "one whose process is killed by SIGKILL: failed, signal 9"
is "$(rec "$C")" "succeeded 0 null exit" "one that exits 0: succeeded"
is "$(rec "$P")" "failed 4 null exit" "a plain process job beside them: failed, exit code 4, as before"
is "$(nblogs "$C")" "fine" "its output is in its log"

# A program the image does not have: crun refuses to start it; the job fails with the reason,
# crun's own message in its stderr log.
E=$(nbjob "{\"argv\":[\"no-such-program\"],\"image\":\"testimg:1\",\"cwd\":\"$W\"}")
wait_for "ended $E"
api GET "/v1/jobs/$E" "" "$NB"
is "$(jget .state) $(jget .end_cause)" "failed launch_failure" "a program not in the image: the job fails at its start"
is "$(jget .reason)" "container: the OCI runtime did not start it (its message is in the job's stderr)" \
    "the reason says where the runtime's message is"
nblogs "$E" stderr | grep -q "no-such-program.*not found"; ok $? "and its stderr log has it"

# A long one, killed with tessel kill.
K=$(ctrjob "sleep 1000 & sleep 1000; echo not-here")
wait_for '[ -s "$TD/data/jobs/$K/pid" ]'; ok $? "a sleeping container job runs (its pid recorded)"
JP=$(awk '{print $3}' "$TD/data/jobs/$K/pid")
CG=$(job_cgroup "$JP" freezer)
wait_for '[ "$(wc -l <"$CG/cgroup.procs")" -ge 2 ]'
ok $? "its two processes are in the job's cgroup"
[ "$(awk '{print $5}' "/proc/$JP/stat")" = "$JP" ]; ok $? "its process leads its own process group"
TESSEL_TOKEN=$NB tcli kill "$K"
is "$RC" 0 "tessel kill JOB answers 0"
wait_for "ended $K"
is "$(rec "$K")" "cancelled null 15 cancelled" "the job is cancelled: the container's process got SIGTERM"
kill -0 "$JP" 2>/dev/null; ok $((!$?)) "the container's process is gone"
is "$(cat "$CG/cgroup.procs" 2>/dev/null | wc -l)" 0 \
    "no process is left in the job's cgroup"
unlike_() { printf '%s\n' "$1" | grep -q -E -- "$2"; ok $((!$?)) "$3"; }
unlike_ "$(nblogs "$K")" "not-here" "the container did not go on"

# An orphan: a background process whose parent ended is reaped by the shim.
O=$(ctrjob "(sleep 0.5; exit 0) & exit 0")
wait_for "ended $O"
is "$(rec "$O")" "succeeded 0 null exit" "a container leaving a background process ends with its own status"

# A time limit: SIGTERM to the container's process at the limit, the job ends for it.
TL=$(nbjob "{\"argv\":[\"sleep\",\"1000\"],\"image\":\"testimg:1\",\"cwd\":\"$W\",\"time_limit\":\"1s\"}")
wait_for "ended $TL"
is "$(rec "$TL")" "failed null 15 time_limit" "a container job past its 1 s time limit: failed, SIGTERM, time_limit"

# Its GPU slice suspended and resumed (the slice file is the job's, bound into the container):
# tcu-load launches simulated kernels until told to stop.
LOAD=$TESSEL_BUILD/tests/interposer/tcu-load
TESSEL_BUILD="$TESSEL_BUILD" sh "$TESSEL_SRCDIR/tests/lib/mkimage.sh" "$IMG" "$LOAD" >/dev/null ||
    missing "tcu-load in the test image"
: >"$W/fake-state"
chown nobody "$W/fake-state"
S=$(nbjob "{\"argv\":[\"tcu-load\",\"--us=20000\",\"--until=$W/stop\"],\"image\":\"testimg:1\",\"cwd\":\"$W\",\"gpus\":1,\"env\":{\"TESSEL_FAKE_STATE\":\"$W/fake-state\",\"TESSEL_FAKE_EVENT_ORDER\":\"device\"}}")
launches() { api GET /v1/gpus; jq -r "[.gpus[0].slices[] | select(.job_id == $S) | .launches] | add // 0" "$TD/out"; }
wait_for '[ "$(launches)" -gt 4 ]'; ok $? "a container job launches kernels through its slice"
TESSEL_TOKEN=$NB tcli suspend --wait --timeout 60 "$S"
is "$RC" 0 "tessel suspend --wait of the container job answers 0"
api GET "/v1/jobs/$S" "" "$NB"
is "$(jget .state) $(jget .drained)" "suspended true" "it is suspended and drained"
N1=$(launches)
sleep 0.5
is "$(launches)" "$N1" "no kernel is launched while it is suspended"
TESSEL_TOKEN=$NB tcli resume "$S"
wait_for '[ "$(launches)" -gt "$N1" ]'; ok $? "resumed, it launches again"
touch "$W/stop"
wait_for "ended $S"
is "$(rec "$S")" "succeeded 0 null exit" "and ends when told to"

# kill -9 of tesseld while a container job runs: the job lives on; the next tesseld watches it
# again and kills it.
R=$(ctrjob "sleep 1000")
wait_for '[ -s "$TD/data/jobs/$R/pid" ]'
RP=$(awk '{print $3}' "$TD/data/jobs/$R/pid")
kill -9 "$TD_PID"
wait "$TD_PID" 2>/dev/null
kill -0 "$RP" 2>/dev/null; ok $? "the container job lives through a kill -9 of tesseld"
td_start --fake-gpus 1xT4:8G --kill-wait 5s
is "$(job_state "$R")" running "the restarted tesseld has it running"
api POST "/v1/jobs/$R/cancel" "" "$NB"
wait_for "ended $R"
is "$(rec "$R")" "cancelled null 15 cancelled" "and cancels it: SIGTERM reaches the container"
kill -0 "$RP" 2>/dev/null; ok $((!$?)) "its process is gone"
is "$(grep -c "$TD/data/run" /proc/self/mountinfo)" 0 "the host keeps no mount of the containers"
is "$(ls -A "$TD/data/run" | tr '\n' ' ')" "ld.so.preload " "nor their state directories: run/ holds the shared preload list alone"
done_testing
