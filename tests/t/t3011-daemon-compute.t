#!/bin/sh
# t3011-daemon-compute.t - tesseld gives each GPU job a compute share (docs/compute-shares.md):
# a half-GPU job gets TESSEL_CUDA_CORE_LIMIT=50 in shared mode, a submitter's mode wins, an
# inference job on a whole GPU gets 100 (measured, not limited) and priority high; the busy
# time a job's kernels use (simulated kernels on the fake driver, tcu-load) shows in GET
# /v1/gpus (busy_ms, compute_limit), in /metrics (tessel_gpu_slice_busy_seconds_total) and in
# `tessel gpus` (BUSY).  No wall-clock speed is asserted.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
LOAD=$TESSEL_BUILD/tests/interposer/tcu-load
[ -e "$TESSEL_BUILD/tests/fake/libcuda.so.1" ] || missing "fake driver not built"
[ -e "$TESSEL_BUILD/tests/fake/libnvidia-ml.so.1" ] || missing "fake NVML not built"
[ -e "$TESSEL_BUILD/lib/libtessel-cuda.so" ] || missing "interposer not built"
[ -x "$LOAD" ] || missing "tcu-load not built"

td_setup
td_start --fake-gpus 1xRTX4090:24G --no-cgroups || missing "tesseld did not start"
cli_setup
G="$TD/go"
mkdir -p "$G"
# All jobs share one fake device timeline (tesseld does not set TESSEL_FAKE_STATE itself).
STATE="\"TESSEL_FAKE_STATE\":\"$TD/fake-state\""
logs() { api GET "/v1/jobs/$1/logs"; cat "$TD/out"; }
# submit JSON-FIELDS SHELL-COMMAND -> job id; the job prints its compute settings first
submit() {
    api POST /v1/jobs "{\"argv\":[\"/bin/sh\",\"-c\",\"env | grep '^TESSEL_CUDA_CORE_' | sort; $2\"],$1}"
    jget .id
}

# A half GPU running 1 ms simulated kernels for 300 ms of the fake's clock, then lingering.
A=$(submit "\"gpu\":0.5,\"env\":{$STATE}" "exec $LOAD --us=1000 --ms=300 --linger=$G/a")
wait_for 'logs $A | grep -q "^load share="'
ok $? "a half-GPU job launches simulated kernels"
diag "$(logs "$A" | grep '^load' | cut -c1-60)"
logs "$A" | grep -q '^TESSEL_CUDA_CORE_LIMIT=50$'; ok $? "the half-GPU job gets TESSEL_CUDA_CORE_LIMIT=50"
logs "$A" | grep -q '^TESSEL_CUDA_CORE_MODE=shared$'; ok $? "... in shared (work-conserving) mode"
logs "$A" | grep -q '^TESSEL_CUDA_CORE_PRIORITY='; is $? 1 "... and no priority (not an inference job)"

api GET /v1/gpus
is "$(jget '.gpus[0].slices[0].job_id') $(jget '.gpus[0].slices[0].compute_limit')" "$A 50" \
    "GET /v1/gpus: the slice's compute_limit is 50"
BUSY=$(jget '.gpus[0].slices[0].busy_ms')
diag "busy_ms=$BUSY"
[ "$BUSY" -gt 0 ] 2>/dev/null; ok $? "GET /v1/gpus: the slice's busy_ms is above 0"
curl -s -o "$TD/out" "$TD_URL/metrics"
grep -q '^# TYPE tessel_gpu_slice_busy_seconds_total counter$' "$TD/out"; ok $? "/metrics declares the busy counter"
M=$(sed -n "s/^tessel_gpu_slice_busy_seconds_total{gpu=\"0\",uuid=\"[^\"]*\",job=\"$A\",simulated=\"1\"} //p" "$TD/out")
diag "tessel_gpu_slice_busy_seconds_total{job=$A} $M"
awk -v v="$M" 'BEGIN { exit !(v + 0 > 0) }'; ok $? "/metrics: the slice's busy seconds are above 0"
grep -q '^tessel_gpu_used_memory_bytes{gpu="0"' "$TD/out"; ok $? "/metrics keeps its existing GPU metrics"
TESSEL_URL="$TD_URL" TESSEL_TOKEN="$TD_ADMIN" tcli gpus
is "$RC" 0 "tessel gpus succeeds"
out | sed 's/^/# /'
grep -q 'BUSY' "$TD/o"; ok $? "tessel gpus has a BUSY column"
SEC=$(awk -v j="$A" '$2 == j { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]s$/) print $i }' "$TD/o")
is "$SEC" "$((BUSY / 1000)).$((BUSY % 1000 / 100))s" "the slice's BUSY is its busy time in seconds"
touch "$G/a"
wait_for '[ "$(job_state $A)" = succeeded ]'; ok $? "the half-GPU job ends"

# The submitter's mode wins; the limit is the share (a higher one asked is not granted).
B=$(submit "\"gpu\":0.25,\"env\":{$STATE,\"TESSEL_CUDA_CORE_MODE\":\"strict\",\"TESSEL_CUDA_CORE_LIMIT\":\"90\"}" "true")
wait_for '[ "$(job_state $B)" = succeeded ]'; ok $? "a quarter-GPU job asking for strict mode runs"
is "$(logs "$B" | grep '^TESSEL_CUDA_CORE_' | tr '\n' ' ')" \
    "TESSEL_CUDA_CORE_LIMIT=25 TESSEL_CUDA_CORE_MODE=strict " \
    "its env keeps strict mode; its limit stays at its 25 % share, not the 90 it asked"
C=$(submit "\"gpu\":0.25,\"env\":{\"TESSEL_CUDA_CORE_LIMIT\":\"10\"}" "true")
wait_for '[ "$(job_state $C)" = succeeded ]'
is "$(logs "$C" | grep '^TESSEL_CUDA_CORE_LIMIT=')" "TESSEL_CUDA_CORE_LIMIT=10" \
    "a lower limit in the job's env is kept"

# Priority can be lowered, never raised: a training job asking for high runs at normal.
E=$(submit "\"gpu\":0.25,\"env\":{\"TESSEL_CUDA_CORE_PRIORITY\":\"high\"}" "true")
wait_for '[ "$(job_state $E)" = succeeded ]'
is "$(logs "$E" | grep '^TESSEL_CUDA_CORE_PRIORITY=')" "TESSEL_CUDA_CORE_PRIORITY=normal" \
    "a training job asking for priority high is given normal"
F=$(submit "\"gpu\":0.25,\"class\":\"inference\",\"env\":{\"TESSEL_CUDA_CORE_PRIORITY\":\"low\"}" "true")
wait_for '[ "$(job_state $F)" = succeeded ]'
is "$(logs "$F" | grep '^TESSEL_CUDA_CORE_PRIORITY=')" "TESSEL_CUDA_CORE_PRIORITY=low" \
    "an inference job may lower its own priority"

# An inference job on a whole GPU: measured (100), not limited, priority high, no mode.
D=$(submit "\"gpus\":1,\"class\":\"inference\",\"env\":{$STATE}" "exec $LOAD --us=1000 --ms=50")
wait_for '[ "$(job_state $D)" = succeeded ]'; ok $? "a whole-GPU inference job runs"
is "$(logs "$D" | grep '^TESSEL_CUDA_CORE_' | tr '\n' ' ')" \
    "TESSEL_CUDA_CORE_LIMIT=100 TESSEL_CUDA_CORE_PRIORITY=high " \
    "it gets TESSEL_CUDA_CORE_LIMIT=100 and TESSEL_CUDA_CORE_PRIORITY=high"

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
