#!/bin/sh
# t3195-daemon-ckpt-killed.t - tesseld killed (SIGKILL) during a suspend's checkpoint
# (docs/suspend.md, "Concurrent requests"): nothing was recorded, so the job is running in the
# store while the driver may hold its process locked (the lock asked for before the kill is
# carried out after it).  The restart undoes it: the job is running, its CUDA calls go on and
# its data is intact, and it can be suspended and resumed again.
#
# The lock is held open as in t3194: the job's process is stopped (SIGSTOP) before its suspend,
# so the driver's lock waits; tesseld is killed meanwhile, then the process continues (and the
# driver locks it for the dead caller), then tesseld starts again.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/ckpt.sh"
ckpt_start
step() { api GET "/v1/jobs/$1" && jget .checkpoint; }

# After the waitfile the job allocates, writes and checks 64 MiB more: CUDA calls that a
# process left locked would never return from.
api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:1G\",\"pattern:1G\",\"waitfile:$G/a\",\"check:1G\",\"alloc:mem:64M\",\"pattern:64M\",\"check:64M\"],\"gpu\":1,$ENV}"
A=$(jget .id)
wait_for "logs $A | grep -q '^pattern rc=0'"; ok $? "job A holds 1 GiB with its pattern written"
read -r _ _ PA <"$TD/data/jobs/$A/pid"
kill -STOP "$PA"; ok $? "A's process ($PA) is stopped: its checkpoint's lock will wait"
curl -s -o /dev/null -X POST -H "Authorization: Bearer $TD_ADMIN" "$TD_URL/v1/jobs/$A/suspend" &
BG=$!
wait_for '[ "$(step $A)" = suspend ]'; ok $? "A's suspend's checkpoint runs"
td_kill9
wait "$BG"
kill -CONT "$PA"; ok $? "tesseld is killed, then A's process goes on (the driver locks it)"
is "$(sqlite3 "$TD/data/tessel.db" "SELECT state, coalesce(suspended_ms, 0), coalesce(gpu_released, 0) FROM jobs WHERE id = $A")" \
    "1|0|0" "the store has A running, not suspended, nothing given back"

# shellcheck disable=SC2086
td_start $ARGS || missing "tesseld did not start again"
wait_for 'grep -q "job $A: the checkpoint of a suspend tesseld did not finish is undone" "$TD/tesseld.log"'
ok $? "the restart undoes the checkpoint it did not finish"
wait_for '[ "$(step $A)" = null ]'; ok $? "and then no step is under way for A"
api GET "/v1/jobs/$A"
is "$(jget .state) $(jget .suspended_at) $(jget .gpu_released)" "running null null" \
    "A is running, not suspended"
touch "$G/a"
wait_for '[ "$(job_state $A)" = succeeded ]'; ok $? "A's CUDA calls go on: it ends"
logs "$A" >"$TD/alog"
[ "$(grep -c '^check ok' "$TD/alog")" = 2 ]
ok $? "its 1 GiB pattern is intact and its new 64 MiB work"

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
