#!/bin/sh
# t3036-daemon-queue-placement.t - per-queue scheduling options (issue 14): placement (the
# default queue spreads fractional jobs over idle GPUs; a queue set to pack shares one GPU;
# a child inherits its parent's) and the reservation delay (--reserve-after 0: a big job
# reserves at once, so a small job submitted after it no longer passes it; inherited, tesseld's
# 15 minutes: the small job passes).  Validation: bad values are one-line errors, nothing kept.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
[ -x "$TESSEL_BUILD/bin/tessel" ] || missing "tessel not built"

td_setup
td_start --fake-gpus 2xT4:16G --no-cgroups || missing "tesseld did not start"
cli_setup
export TESSEL_URL="$TD_URL" TESSEL_TOKEN="$TD_ADMIN"
spin='while :; do sleep 0.05; done'
# submit QUEUE GPU [gpus] -> id of a job that runs until cancelled
submit() {
    if [ "${3:-}" ]; then g="\"gpus\":$3"; else g="\"gpu\":$2"; fi
    api POST /v1/jobs "{\"argv\":[\"sh\",\"-c\",\"$spin\"],$g,\"queue\":\"$1\"}"
    jget .id
}
gpu_of() { api GET "/v1/jobs/$1"; jget '.placement[0].gpu'; }
cancel_all() { for j in "$@"; do api POST "/v1/jobs/$j/cancel"; done; }
idle() { api GET /v1/gpus; [ "$(jget '[.gpus[].allocated_milli] | add')" = 0 ]; }

# --- placement ----------------------------------------------------------------------------
tcli queues --json
is "$(jq -r '.queues[] | select(.name == "default") | .placement' "$TD/o")" "spread" \
    "the default queue spreads out of the box"
A=$(submit default 0.5)
wait_for '[ "$(job_state $A)" = running ]'
B=$(submit default 0.5)
wait_for '[ "$(job_state $B)" = running ]'
is "$(gpu_of $A),$(gpu_of $B)" "0,1" "two half-GPU jobs of the default queue: one on each idle GPU"
cancel_all "$A" "$B"
wait_for idle

tcli queues add lab --placement pack
is "$RC" "0" "queues add lab --placement pack"
tcli queues add team --parent lab
is "$RC" "0" "queues add team --parent lab (placement inherited)"
wait_for 'tcli queues --json; [ "$(jq -r ".queues[] | select(.name == \"team\") | .effective.placement" "$TD/o")" = pack ]'
ok $? "team's placement in effect is lab's: pack"
is "$(jq -r '.queues[] | select(.name == "team") | .placement' "$TD/o")" "null" \
    "team has no placement of its own"
C=$(submit team 0.25)
wait_for '[ "$(job_state $C)" = running ]'
D=$(submit team 0.25)
wait_for '[ "$(job_state $D)" = running ]'
is "$(gpu_of $C)" "$(gpu_of $D)" "two quarter-GPU jobs of a pack queue share one GPU"
cancel_all "$C" "$D"
wait_for idle

tcli queues set lab --placement spread
is "$RC" "0" "queues set lab --placement spread"
wait_for 'tcli queues; grep -Eq "^ +team .* spread +- +- +all *$" "$TD/o"'
ok $? "tessel queues shows team spreading, inherited from lab"
E=$(submit team 0.25)
wait_for '[ "$(job_state $E)" = running ]'
F=$(submit team 0.25)
wait_for '[ "$(job_state $F)" = running ]'
is "$(gpu_of $E),$(gpu_of $F)" "0,1" "after the change, team's quarter-GPU jobs spread"
cancel_all "$E" "$F"
wait_for idle

# --- reservation delay ---------------------------------------------------------------------
# one GPU busy; a 2-GPU job X waits; a 1-GPU job Y arrives after it.
tcli queues add wide
is "$RC" "0" "queues add wide (reservation delay inherited: 15 minutes)"
H=$(submit wide 1)
wait_for '[ "$(job_state $H)" = running ]'
X=$(submit wide 0 2)
Y=$(submit wide 1)
wait_for '[ "$(job_state $Y)" = running ]'
ok $? "with the 15-minute delay, the 1-GPU job passes the waiting 2-GPU job"
is "$(job_state $X)" "pending" "and the 2-GPU job still waits"
cancel_all "$H" "$X" "$Y"
wait_for idle

tcli queues set wide --reserve-after 0
is "$RC" "0" "queues set wide --reserve-after 0"
api GET /v1/queues/wide
is "$(jget .reserve_after)" "0" "the API shows the queue's own delay, in seconds"
H=$(submit wide 1)
wait_for '[ "$(job_state $H)" = running ]'
X=$(submit wide 0 2)
Y=$(submit wide 1)
cancel_all "$H"
wait_for '[ "$(job_state $X)" = running ]'
ok $? "with --reserve-after 0 the 2-GPU job reserves at once and starts when the GPU frees"
is "$(job_state $Y)" "pending" "the 1-GPU job submitted after it did not pass it"
cancel_all "$X" "$Y"
wait_for idle

tcli queues set wide --reserve-after 90s
tcli queues --json
is "$(jq -r '.queues[] | select(.name == "wide") | .reserve_after' "$TD/o")" "90" \
    "--reserve-after 90s is stored as 90 s"
wait_for 'tcli queues; grep -Eq "^wide .* 1m30s +pack +- +- +all *$" "$TD/o"'
ok $? "tessel queues shows it as 1m30s" || diag "$(cat "$TD/o")"
tcli queues set wide --reserve-after inherit
tcli queues --json
is "$(jq -r '.queues[] | select(.name == "wide") | .reserve_after' "$TD/o")" "null" \
    "--reserve-after inherit removes the queue's own delay"

# --- bad input ------------------------------------------------------------------------------
tcli queues set wide --reserve-after 30
ok $([ "$RC" -ne 0 ] && one_line_error && grep -q "units" "$TD/e"; echo $?) \
    "--reserve-after 30 (no unit): a one-line error asking for a unit"
tcli queues set wide --placement scatter
ok $([ "$RC" -ne 0 ] && one_line_error && grep -q "spread, pack or inherit" "$TD/e"; echo $?) \
    "--placement scatter: a one-line error naming the choices"
api PATCH /v1/queues/wide '{"reserve_after":-5}'
is "$CODE $(jget .error.field)" "400 reserve_after" "API: reserve_after -5 is refused (400)"
api PATCH /v1/queues/wide '{"reserve_after":"15q"}'
is "$CODE $(jget .error.field)" "400 reserve_after" "API: reserve_after \"15q\" is refused (400)"
api PATCH /v1/queues/wide '{"placement":"fast"}'
is "$CODE $(jget .error.field)" "400 placement" "API: an unknown placement is refused (400)"
api PATCH /v1/queues/wide '{"reserve_after":"15m","placement":"spread"}'
is "$CODE $(jget .reserve_after) $(jget .placement)" "200 900 spread" \
    "API: a duration string and a placement are accepted"

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
