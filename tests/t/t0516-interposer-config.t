#!/bin/sh
# t0516-interposer-config.t - a malformed configuration gets one line on
# stderr and the slice fails closed: the context and every allocation are
# refused with CUDA_ERROR_OUT_OF_MEMORY, the views report 0 bytes; never
# silently unlimited.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/interposer/tcu.sh"
printf 'not a slice file, just text that is long enough to be read as one\n%.0s' \
    $(seq 1 300) >"$TMP/garbage"

check() { # check DESCRIPTION VAR=VALUE...
    desc=$1
    shift
    out=$(env "$@" LD_PRELOAD="$PRE" "$PROBE" ctx alloc:mem:1M 2>"$TMP/err")
    is "$(grep -c '^tessel-cuda: ' "$TMP/err")" 1 "$desc: one line on stderr"
    is "$(wc -l <"$TMP/err" | tr -d ' ')" 1 "$desc: nothing else on stderr"
    is "$(printf '%s\n' "$out" | grep '^ctx')" "ctx rc=2" "$desc: the context is refused (fails closed)"
}

check "TESSEL_CUDA_MEM_LIMIT=6Q" TESSEL_CUDA_MEM_LIMIT=6Q
check "TESSEL_CUDA_MEM_LIMIT=-1" TESSEL_CUDA_MEM_LIMIT=-1
check "TESSEL_CUDA_MEM_LIMIT=''" TESSEL_CUDA_MEM_LIMIT=
check "TESSEL_CUDA_MEM_LIMIT_0=lots" TESSEL_CUDA_MEM_LIMIT=1G TESSEL_CUDA_MEM_LIMIT_0=lots
check "TESSEL_CUDA_MEM_LIMIT_x=1G" TESSEL_CUDA_MEM_LIMIT_x=1G
check "TESSEL_CUDA_MEM_LIMIT_99=1G" TESSEL_CUDA_MEM_LIMIT_99=1G
check "TESSEL_SLICE=relative" TESSEL_CUDA_MEM_LIMIT=1G TESSEL_SLICE=relative/slice
check "TESSEL_SLICE in a missing directory" TESSEL_CUDA_MEM_LIMIT=1G TESSEL_SLICE=/nonexistent/dir/slice
check "TESSEL_SLICE naming a non-slice file" TESSEL_CUDA_MEM_LIMIT=1G TESSEL_SLICE="$TMP/garbage"
check "CUDA_VISIBLE_DEVICES=0,gpu1" TESSEL_CUDA_MEM_LIMIT=1G CUDA_VISIBLE_DEVICES=0,gpu1

# The text names the culprit.
env TESSEL_CUDA_MEM_LIMIT=6Q LD_PRELOAD="$PRE" "$PROBE" ctx 2>"$TMP/err" >/dev/null
ok $(grep -q 'TESSEL_CUDA_MEM_LIMIT=6Q' "$TMP/err" && echo 0 || echo 1) "the message names the variable and value"

# Failing closed also covers the views: the device has 0 bytes.
out=$(env TESSEL_CUDA_MEM_LIMIT=6Q LD_PRELOAD="$PRE" "$PROBE" ctx totalmem 2>/dev/null)
is "$(printf '%s\n' "$out" | grep '^totalmem')" "totalmem 0 rc=0" "failed closed: cuDeviceTotalMem reports 0"

# A malformed process in a shared slice fails closed alone: it does not
# lower the slice's limit for the others.
env TESSEL_SLICE="$TMP/shared" TESSEL_CUDA_MEM_LIMIT=1G LD_PRELOAD="$PRE" "$PROBE" ctx info >/dev/null
env TESSEL_SLICE="$TMP/shared" TESSEL_CUDA_MEM_LIMIT=6Q LD_PRELOAD="$PRE" "$PROBE" ctx >/dev/null 2>&1
out=$(env TESSEL_SLICE="$TMP/shared" TESSEL_CUDA_MEM_LIMIT=1G LD_PRELOAD="$PRE" "$PROBE" ctx info)
is "$(val total "$(printf '%s\n' "$out" | grep '^info')")" 1073741824 \
    "a malformed neighbour leaves the shared slice at 1 GiB"

# Valid forms are accepted: bytes, suffixes, UUIDs in CUDA_VISIBLE_DEVICES.
for v in 1073741824 1G 1024M 1GiB; do
    out=$(env TESSEL_CUDA_MEM_LIMIT=$v LD_PRELOAD="$PRE" "$PROBE" ctx info 2>"$TMP/err")
    is "$(val total "$(printf '%s\n' "$out" | grep '^info')")" 1073741824 "TESSEL_CUDA_MEM_LIMIT=$v: 1 GiB"
done
is "$(wc -c <"$TMP/err" | tr -d ' ')" 0 "valid configuration: nothing on stderr"
done_testing
