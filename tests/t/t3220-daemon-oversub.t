#!/bin/sh
# t3220-daemon-oversub.t - oversubscription through tesseld (issue 21 item 4): a job submitted
# with gpu_mem_oversubscribe (tessel run --gpu-mem-oversubscribe) allocates past its GPU memory
# through the probe, the excess spilled into host memory up to that size; the job object,
# GET /v1/gpus, /metrics, `tessel gpus` and `tessel show` show device and spilled bytes apart;
# a job without it spills nothing, even with TESSEL_CUDA_MEM_OVERSUBSCRIBE in its own
# environment; bad values are refused with a clear error and nothing stored (the size is per
# GPU: times the GPUs within mem).  A listing leaves the figures now out (one job's answer has
# them); a job's corrupted slice file moves no view past tesseld's own record.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
PROBE=$TESSEL_BUILD/tests/interposer/tcu-probe
[ -e "$TESSEL_BUILD/tests/fake/libcuda.so.1" ] || missing "fake driver not built"
[ -e "$TESSEL_BUILD/tests/fake/libnvidia-ml.so.1" ] || missing "fake NVML not built"
[ -e "$TESSEL_BUILD/lib/libtessel-cuda.so" ] || missing "interposer not built"
[ -x "$PROBE" ] || missing "tcu-probe not built"
[ -x "$TESSEL_BUILD/bin/tessel" ] || missing "tessel not built"

td_setup
td_start --fake-gpus 1xT4:8G --no-cgroups || missing "tesseld did not start"
cli_setup
export TESSEL_URL="$TD_URL" TESSEL_TOKEN="$TD_ADMIN"
MiB=1048576
G="$TD/go"
mkdir -p "$G"
# Contexts cost 64 MiB on the fake driver: a 1 GiB slice takes 9 x 100 MiB beside it.
ENV='"env":{"TESSEL_FAKE_CTX_MEM":"64M"}'
out() { api GET "/v1/jobs/$1/logs"; cat "$TD/out"; }
val() { printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -n 1; }

# Filling: 9 on the device, 5 spilled into the 512 MiB, the 15th refused.
api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"fill:mem:100M\",\"info\"],\"gpu\":0.5,\"gpu_mem\":\"1G\",\"gpu_mem_oversubscribe\":\"512M\",$ENV}"
is "$CODE" 201 "a job with gpu_mem_oversubscribe 512M is accepted"
A=$(jget .id)
is "$(jget .gpu_mem_oversubscribe)" $((512 * MiB)) "the job object says 512 MiB"
wait_for '[ "$(job_state $A)" = succeeded ]'
ok $? "the filling job succeeds"
F=$(out "$A" | grep '^fill')
is "$(val n "$F") $(val rc "$F")" "14 2" \
    "9 x 100 MiB on the device, 5 spilled, the next past 512 MiB refused (OOM)"
is "$(val free "$(out "$A" | grep '^info')")" $((1024 * MiB - 64 * MiB - 900 * MiB)) \
    "cuMemGetInfo shows the device share only"

# Without the option nothing spills, whatever the job's own environment says: the variable is
# Tessel's to set (a submission naming it is refused), and set inside the job it cannot add a
# spill the limits file does not give.
api POST /v1/jobs "{\"argv\":[\"true\"],\"gpu\":0.5,\"env\":{\"TESSEL_CUDA_MEM_OVERSUBSCRIBE\":\"8G\"}}"
is "$CODE $(jget .error.field)" "400 env" "a submission setting TESSEL_CUDA_MEM_OVERSUBSCRIBE: 400"
api POST /v1/jobs "{\"argv\":[\"/bin/sh\",\"-c\",\"TESSEL_CUDA_MEM_OVERSUBSCRIBE=8G exec $PROBE ctx fill:mem:100M\"],\"gpu\":0.5,\"gpu_mem\":\"1G\",$ENV}"
B=$(jget .id)
is "$(jget .gpu_mem_oversubscribe)" null "a job without it: null"
wait_for '[ "$(job_state $B)" = succeeded ]'
F=$(out "$B" | grep '^fill')
is "$(val n "$F") $(val rc "$F")" "9 2" \
    "without it, TESSEL_CUDA_MEM_OVERSUBSCRIBE=8G set inside the job spills nothing"

# A running job holding 900 MiB on the device and 300 MiB spilled, through the CLI.
tcli run -d --gpu 0.5 --gpu-mem 1G --gpu-mem-oversubscribe 512M -e TESSEL_FAKE_CTX_MEM=64M \
    -- "$PROBE" ctx alloc:mem:900M alloc:mem:300M "waitfile:$G/h"
is "$RC" 0 "tessel run --gpu-mem-oversubscribe 512M submits"
H=$(grep -o '[0-9][0-9]*' "$TD/o" | head -n 1)
wait_for 'api GET /v1/gpus && [ "$(jget ".gpus[0].oversubscribed_mem")" = $((300 * MiB)) ]'
ok $? "GET /v1/gpus shows the 300 MiB spilled"
is "$(jget '.gpus[0].slices[0].job_id') $(jget '.gpus[0].slices[0].mem_used')" \
    "$H $((964 * MiB))" "its slice: 900 MiB + the 64 MiB context on the device"
is "$(jget '.gpus[0].slices[0].mem_oversubscribed') $(jget '.gpus[0].slices[0].mem_oversubscribe_limit')" \
    "$((300 * MiB)) $((512 * MiB))" "its slice: 300 MiB spilled, of 512 MiB"
is "$(jget '.gpus[0].used_mem')" $((964 * MiB)) "the GPU's used memory excludes the spill"
api GET "/v1/jobs/$H"
is "$(jget .gpu_mem_used) $(jget .gpu_mem_oversubscribed) $(jget .gpu_mem_oversubscribe)" \
    "$((964 * MiB)) $((300 * MiB)) $((512 * MiB))" "the job object: device, spilled, limit"
curl -s -o "$TD/out" "$TD_URL/metrics"
grep -q "^tessel_slice_memory_oversubscribed_bytes{.*job=\"$H\".*} $((300 * MiB))\$" "$TD/out"
ok $? "/metrics: tessel_slice_memory_oversubscribed_bytes of the job is 300 MiB"
grep -q "^tessel_slice_memory_oversubscribe_limit_bytes{.*job=\"$H\".*} $((512 * MiB))\$" "$TD/out"
ok $? "/metrics: tessel_slice_memory_oversubscribe_limit_bytes of the job is 512 MiB"
grep -q "^tessel_slice_memory_used_bytes{.*job=\"$H\".*} $((964 * MiB))\$" "$TD/out"
ok $? "/metrics: tessel_slice_memory_used_bytes stays the device's"
tcli gpus
is "$(grep '^job ' "$TD/o")" "job $H on GPU 0: 300 MiB spilled into host memory (limit 512 MiB)" \
    "tessel gpus: a line for the spilling slice"
tcli show "$H"
is "$(sed -n 's/^gpu_mem_oversubscribed *//p' "$TD/o")" $((300 * MiB)) \
    "tessel show: gpu_mem_oversubscribed"
# A listing does not open the running jobs' slice files (security review F5): the figures
# now are in the answer about one job only.
api GET /v1/jobs
is "$(jget "[.jobs[] | select(.id == $H) | has(\"gpu_mem_used\"), has(\"gpu_mem_oversubscribed\")] | map(tostring) | join(\" \")")" \
    "false false" "GET /v1/jobs leaves the figures now out"
touch "$G/h"
wait_for '[ "$(job_state $H)" = succeeded ]'
ok $? "the holding job ends"

# The slice file is the job's (security review F4): a job without oversubscription writes a
# huge host limit and a spilled count of 2^64-1 into its own file; the views hold each to
# tesseld's own record (its gpu_mem_oversubscribe: none), and nothing goes negative.
SLICE=$TESSEL_BUILD/tests/interposer/tcu-slice
cat >"$TD/corrupt.sh" <<EOS
#!/bin/sh
'$PROBE' ctx || exit 1
'$SLICE' "\$TESSEL_SLICE" sethost:9223372036854775807 || exit 1
'$SLICE' "\$TESSEL_SLICE" sethostused:18446744073709551615 || exit 1
echo corrupted
exec '$PROBE' waitfile:$G/c
EOS
chmod 755 "$TD/corrupt.sh"
api POST /v1/jobs "{\"argv\":[\"$TD/corrupt.sh\"],\"gpu\":0.5,\"gpu_mem\":\"1G\",$ENV}"
is "$CODE" 201 "a job that corrupts its slice file is accepted"
C=$(jget .id)
wait_for "api GET /v1/jobs/$C/logs && grep -q corrupted \"\$TD/out\""
ok $? "the job has written its slice file"
api GET /v1/gpus
is "$(jget '.gpus[0].oversubscribed_mem') $(jget '.gpus[0].slices[0].mem_oversubscribed') $(jget '.gpus[0].slices[0].mem_oversubscribe_limit')" \
    "0 0 0" "GET /v1/gpus: nothing spilled, no limit (tesseld's record, not the file's)"
api GET "/v1/jobs/$C"
is "$(jget .gpu_mem_oversubscribed) $(jget .gpu_mem_oversubscribe)" "0 null" \
    "the job object: nothing spilled"
curl -s -o "$TD/out" "$TD_URL/metrics"
is "$(sed -n "s/^tessel_slice_memory_oversubscribed_bytes{.*job=\"$C\".*} //p" "$TD/out") $(sed -n "s/^tessel_slice_memory_oversubscribe_limit_bytes{.*job=\"$C\".*} //p" "$TD/out")" \
    "0 0" "/metrics: 0 spilled, limit 0"
tcli gpus
ok $(grep -q "job $C on GPU 0: .*spilled" "$TD/o" && echo 1 || echo 0) "tessel gpus shows no spill for it"
touch "$G/c"
wait_for '[ "$(job_state $C)" = succeeded ]'
ok $? "the corrupting job ends"

# Bad input: a clear error, nothing stored.
api GET /v1/jobs
before=$(jget '.jobs | length')
bad() { # bad CODE DESCRIPTION BODY-FIELDS
    api POST /v1/jobs "{\"argv\":[\"true\"],$3}"
    is "$CODE $(jget .error.field)" "$1 gpu_mem_oversubscribe" "$2"
}
bad 400 "not a size: 400" '"gpu":0.5,"gpu_mem_oversubscribe":"lots"'
bad 400 "negative: 400" '"gpu":0.5,"gpu_mem_oversubscribe":-5'
bad 400 "without a GPU: 400" '"gpu_mem_oversubscribe":"1G"'
bad 400 "above the job's mem: 400" '"gpu":0.5,"mem":"1G","gpu_mem_oversubscribe":"2G"'
bad 400 "per GPU: 2 GPUs x 1G above the job's 1G of mem: 400" \
    '"gpus":2,"mem":"1G","gpu_mem_oversubscribe":"1G"'
bad 422 "above the node's memory: 422" '"gpu":0.5,"gpu_mem_oversubscribe":"1P"'
api GET /v1/jobs
is "$(jget '.jobs | length')" "$before" "no refused job was stored"
api POST /v1/jobs '{"argv":["true"],"gpu":0.5,"gpu_mem_oversubscribe":0}'
is "$CODE $(jget .gpu_mem_oversubscribe)" "201 null" "0 is none"
tcli run -d --gpu-mem-oversubscribe 1G -- true
ok $([ "$RC" -ne 0 ] && one_line_error && echo 0 || echo 1) \
    "tessel run --gpu-mem-oversubscribe without --gpu: one line of error"
tcli run -d --gpu 0.5 --gpu-mem-oversubscribe lots -- true
ok $([ "$RC" -ne 0 ] && grep -q 'gpu-mem-oversubscribe' "$TD/e" && echo 0 || echo 1) \
    "tessel run --gpu-mem-oversubscribe lots: the error names the option"

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
