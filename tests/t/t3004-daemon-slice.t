#!/bin/sh
# t3004-daemon-slice.t - jobs started by tesseld run in a GPU slice: the interposer is
# preloaded with the job's limit, so a job allocating GPU memory (fake driver) is refused at
# its gpu_mem and not before; two jobs on one GPU each get their own slice; GET /v1/gpus shows
# the memory a running job uses.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
PROBE=$TESSEL_BUILD/tests/interposer/tcu-probe
[ -e "$TESSEL_BUILD/tests/fake/libcuda.so.1" ] || missing "fake driver not built"
[ -e "$TESSEL_BUILD/tests/fake/libnvidia-ml.so.1" ] || missing "fake NVML not built"
[ -e "$TESSEL_BUILD/lib/libtessel-cuda.so" ] || missing "interposer not built"
[ -x "$PROBE" ] || missing "tcu-probe not built"
# Prerequisite: the probe runs under the interposer in this build, outside tesseld.
env LD_LIBRARY_PATH="$TESSEL_BUILD/tests/fake" TESSEL_FAKE_GPUS=1xT4:8G \
    LD_PRELOAD="$TESSEL_BUILD/lib/libtessel-cuda.so" "$PROBE" ctx info >/dev/null 2>&1 ||
    missing "tcu-probe does not run under the interposer in this build (see t05*-interposer)"

td_setup
td_start --fake-gpus 1xT4:8G --no-cgroups || missing "tesseld did not start"
MiB=1048576
G="$TD/go"
mkdir -p "$G"
# Contexts cost 64 MiB on the fake driver (TESSEL_FAKE_CTX_MEM), charged to the slice.
ENV='"env":{"TESSEL_FAKE_CTX_MEM":"64M"}'
fill() { # fill GPU_MEM -> job id; the job fills its slice with 100 MiB allocations
    api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"fill:mem:100M\",\"info\"],\"gpu\":0.5,\"gpu_mem\":\"$1\",$ENV}"
    jget .id
}
out() { api GET "/v1/jobs/$1/logs"; cat "$TD/out"; }
val() { printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -n 1; }

A=$(fill 1G)
B=$(fill 2G)
wait_for '[ "$(job_state $A)" = succeeded ] && [ "$(job_state $B)" = succeeded ]'
ok $? "two half-GPU jobs with 1G and 2G slices run on one GPU and succeed"
FA=$(out "$A" | grep '^fill')
FB=$(out "$B" | grep '^fill')
diag "1G slice: $FA"
diag "2G slice: $FB"
# (1024 - 64) / 100 = 9 allocations; (2048 - 64) / 100 = 19.
is "$(val n "$FA") $(val rc "$FA")" "9 2" \
    "1G slice: 9 allocations of 100 MiB fit, the 10th gets CUDA_ERROR_OUT_OF_MEMORY"
is "$(val n "$FB") $(val rc "$FB")" "19 2" \
    "2G slice: 19 allocations of 100 MiB fit, the 20th gets CUDA_ERROR_OUT_OF_MEMORY"
IA=$(out "$A" | grep '^info')
is "$(val total "$IA")" "1073741824" "the job sees its slice (1 GiB) as the GPU's total memory"

# A job holding 500 MiB: the GPU listing shows its slice in use.
api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:500M\",\"waitfile:$G/h\"],\"gpu\":0.5,\"gpu_mem\":\"1G\",$ENV}"
H=$(jget .id)
wait_for '[ "$(job_state $H)" = running ] && api GET /v1/gpus && [ "$(jget ".gpus[0].used_mem")" -gt 0 ]'
ok $? "a running job's GPU memory shows in GET /v1/gpus"
api GET /v1/gpus
is "$(jget '.gpus[0].used_mem')" "$((564 * MiB))" "used: 500 MiB allocated + the 64 MiB context"
is "$(jget '.gpus[0].slices[0].job_id') $(jget '.gpus[0].slices[0].mem_limit')" "$H 1073741824" \
    "the slice names the job and its 1 GiB limit"
CODE=$(curl -s -o "$TD/out" -w '%{http_code}' "$TD_URL/metrics")
grep -q "^tessel_gpu_used_memory_bytes{gpu=\"0\".*} $((564 * MiB))\$" "$TD/out"
ok $? "metrics report the same used bytes"
touch "$G/h"
wait_for '[ "$(job_state $H)" = succeeded ]'; ok $? "the holding job ends"

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
