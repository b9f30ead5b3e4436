#!/bin/sh
# t0517-interposer-context.t - contexts are charged: every cuCtxCreate
# version and the primary context, each what a context really costs on the
# device (measured through NVML when the slice has no figure yet), and
# destroying a context gives its charge back.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/interposer/tcu.sh"
G=1073741824
export TESSEL_CUDA_MEM_LIMIT=2G TESSEL_SLICE="$TMP/slice"
if [ -e "$FAKE/libnvidia-ml.so.1" ]; then
    cost=$((64 * MiB))
    out=$(probe ctx info)
    is "$(val free "$(printf '%s\n' "$out" | grep '^info')")" $((2 * G - cost)) \
        "primary context: the measured 64 MiB are charged"
    is "$(val ctx_cost "$("$HELPERS/tcu-slice" "$TESSEL_SLICE" | grep '^device 0')")" $cost \
        "the slice file keeps the measured context cost"
else
    diag "no fake libnvidia-ml.so.1: contexts charged the documented default"
    cost=$((300 * MiB))
fi

out=$(probe ctx info ctxcreate:1 info ctxcreate:2 info ctxcreate:3 info ctxcreate:4 info \
    ctxdestroy ctxdestroy ctxdestroy ctxdestroy ctx info)
base=$(val free "$(printf '%s\n' "$out" | grep '^info' | sed -n 1p)")
is "$base" $((2 * G - cost)) "primary context charged $cost"
i=2
for v in 1 2 3 4; do
    is "$(printf '%s\n' "$out" | grep "^ctxcreate $v")" "ctxcreate $v rc=0" "cuCtxCreate v$v succeeds"
    is "$(val free "$(printf '%s\n' "$out" | grep '^info' | sed -n ${i}p)")" $((base - (i - 1) * cost)) \
        "cuCtxCreate v$v: one more context charged"
    i=$((i + 1))
done
is "$(printf '%s\n' "$out" | grep -c '^ctxdestroy rc=0')" 4 "four contexts destroyed"
is "$(val free "$(printf '%s\n' "$out" | grep '^info' | tail -n 1)")" "$base" \
    "destroying them gives every charge back"

# A limit below one context: the context itself is refused.
out=$(TESSEL_CUDA_MEM_LIMIT=16M TESSEL_SLICE= probe ctx 2>/dev/null)
is "$out" "ctx rc=2" "16 MiB slice: the primary context gets CUDA_ERROR_OUT_OF_MEMORY"
out=$(TESSEL_CUDA_MEM_LIMIT=16M TESSEL_SLICE= probe ctxcreate:2 2>/dev/null)
is "$out" "ctxcreate 2 rc=2" "16 MiB slice: cuCtxCreate_v2 gets CUDA_ERROR_OUT_OF_MEMORY"
done_testing
