# ckpt.sh - what the checkpoint tests (t3190-t3195, docs/suspend.md) share: their needs, and a
# tesseld on one simulated T4 of 4 GiB whose fake driver's state is shared with the jobs (the
# checkpoint's caller and NVML are tesseld's, the CUDA calls the jobs').  After daemon.sh.
#
#   ckpt_start   td_setup, TESSEL_FAKE_STATE exported, tesseld started with $ARGS (a test may
#                start it again with them); then GiB, MiB, G (a directory for the probe's
#                wait files), ENV (the JSON member that gives a job the driver's state),
#                logs ID (a job's logs), used (the GPU's used memory, GET /v1/gpus)
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
PROBE=$TESSEL_BUILD/tests/interposer/tcu-probe
[ -e "$TESSEL_BUILD/tests/fake/libcuda.so.1" ] || missing "fake driver not built"
[ -e "$TESSEL_BUILD/lib/libtessel-cuda.so" ] || missing "interposer not built"
[ -x "$PROBE" ] || missing "tcu-probe not built"
ARGS="--fake-gpus 1xT4:4G --no-cgroups --allow-root-jobs"

ckpt_start() {
    td_setup
    export TESSEL_FAKE_STATE="$TD/fake-state"
    # shellcheck disable=SC2086
    td_start $ARGS || missing "tesseld did not start"
    GiB=1073741824
    MiB=1048576
    G="$TD/go"
    mkdir -p "$G"
    ENV="\"env\":{\"TESSEL_FAKE_STATE\":\"$TESSEL_FAKE_STATE\"}"
}
logs() { api GET "/v1/jobs/$1/logs"; cat "$TD/out"; }
used() { api GET /v1/gpus && jget '.gpus[0].used_mem'; }
