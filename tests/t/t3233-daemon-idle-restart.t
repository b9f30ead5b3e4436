#!/bin/sh
# t3233-daemon-idle-restart.t - tesseld restarted while a job is reclaimed for idleness
# (docs/suspend.md, "Idle reclamation"): the new tesseld finds it suspended for idleness with
# its memory given back (the store's jobs.suspended_idle and gpu_released), its slice still
# free (a whole-GPU job runs on it meanwhile), and the job's next CUDA call (an allocation, a
# hooked entry point) still asks for its GPU: restored once the other job ends, its pattern
# intact, its allocation made.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/ckpt.sh"
ckpt_start

api POST /v1/queues '{"name":"lab","idle_reclaim":"2s"}'
api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:1G\",\"pattern:1G\",\"waitfile:$G/a\",\"alloc:mem:64M\",\"free\",\"check:1G\"],\"gpu\":1,\"queue\":\"lab\",$ENV}"
A=$(jget .id)
wait_for "logs $A | grep -q '^pattern rc=0'"; ok $? "job A holds 1 GiB with its pattern"
wait_for '[ "$(job_state $A)" = suspended ]'; ok $? "A, idle, is reclaimed"
api GET "/v1/jobs/$A"
REL=$(jget .gpu_released)

td_stop; ok $? "tesseld stops (SIGTERM) while A is reclaimed"
# shellcheck disable=SC2086
td_start $ARGS || missing "tesseld did not start again"
api GET "/v1/jobs/$A"
is "$(jget .state) $(jget .suspended_reason) $(jget .gpu_released)" "suspended idle $REL" \
    "after the restart A is still suspended for idleness with its $REL bytes given back"
curl -s "$TD_URL/metrics" >"$TD/metrics"
grep -q '^tessel_jobs_suspended_total{reason="idle"} 1$' "$TD/metrics" &&
    grep -q '^tessel_jobs_suspended_total{reason="preemption"} 0$' "$TD/metrics" &&
    grep -q "^tessel_jobs_suspended_released_bytes{reason=\"idle\"} $REL\$" "$TD/metrics"
ok $? "/metrics after the restart: the reclamation counted again from the store, A's bytes"

api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:2G\",\"pattern:2G\",\"check:2G\",\"waitfile:$G/b\"],\"gpu\":1,$ENV}"
B=$(jget .id)
wait_for "logs $B | grep -q '^check ok'"; ok $? "a whole-GPU job B is placed on A's GPU and uses 2 GiB"

touch "$G/a" # A's next CUDA call: an allocation
wait_for "api GET /v1/jobs/$A && jget .reason | grep -q 'waiting for'"
ok $? "A's call asks for its GPU through the new tesseld; it waits for B: $(jget .reason)"
touch "$G/b"
wait_for '[ "$(job_state $B)" = succeeded ]'; ok $? "B ends"
wait_for '[ "$(job_state $A)" = succeeded ]'; ok $? "A is restored and ends"
is "$(logs "$A" | grep -c '^alloc mem rc=0$')" 2 "its allocation after the restore succeeded"
logs "$A" | grep -q '^check ok'; ok $? "every byte of its pattern is back"

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
