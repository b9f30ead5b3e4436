#!/bin/sh
# t0511-interposer-views.t - what a program in a slice is told about memory:
# cuMemGetInfo(_v2), cuDeviceTotalMem(_v2) and NVML report total = the limit
# and free = min(limit - used, the device's real free memory); NULL
# arguments keep the driver's answer; nothing underflows.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/interposer/tcu.sh"
G=1073741824

export TESSEL_CUDA_MEM_LIMIT=1G
out=$(probe ctx info info1 totalmem alloc:mem:100M info)
i1=$(printf '%s\n' "$out" | grep '^info ' | sed -n 1p)
i2=$(printf '%s\n' "$out" | grep '^info ' | sed -n 2p)
budget=$(val free "$i1")
is "$(val total "$i1")" $G "cuMemGetInfo_v2: total = the 1 GiB limit"
is "$(val total "$(printf '%s\n' "$out" | grep '^info1')")" $G "cuMemGetInfo (v1): total = the limit"
is "$(val free "$(printf '%s\n' "$out" | grep '^info1')")" $budget "cuMemGetInfo (v1): same free"
is "$(printf '%s\n' "$out" | grep '^totalmem')" "totalmem $G rc=0" "cuDeviceTotalMem_v2 = the limit"
is "$(val free "$i2")" $((budget - 100 * MiB)) "a 100 MiB allocation lowers free by 100 MiB"

# NULL arguments: the same return codes as the driver alone, no crash, and
# the slice's figure wherever a value is returned.
bare=$(TESSEL_CUDA_MEM_LIMIT= probe_bare ctx infonull | grep '^infonull')
sl=$(probe ctx infonull | grep '^infonull')
is "$(val rc "$sl")" "$(val rc "$bare")" "NULL arguments: return codes unchanged ($(val rc "$bare"))"
t=$(val total "$sl")
ok $([ "$t" = 0 ] || [ "$t" = $G ] && echo 0 || echo 1) "NULL free: total is the limit (or untouched)"

# Free is capped by the device's real free memory: a neighbour outside the
# slice holds 6 GiB of the 8 GiB card.
mkfifo "$TMP/hold"
probe_bare ctx alloc:mem:6G hold <"$TMP/hold" >"$TMP/neighbour" &
npid=$!
exec 3>"$TMP/hold"
wait_until holding "$TMP/neighbour"
real=$(val free "$(TESSEL_CUDA_MEM_LIMIT= probe_bare ctx info | grep '^info')")
export TESSEL_CUDA_MEM_LIMIT=7G
sl=$(probe ctx info | grep '^info')
ok $([ "$real" -lt $((7 * G)) ] && echo 0 || echo 1) "the card has $real bytes really free"
is "$(val free "$sl")" "$real" "7 GiB slice: free = the device's real free, not limit - used"
is "$(val total "$sl")" $((7 * G)) "7 GiB slice: total = the limit"
exec 3>&-
wait $npid

# A limit above the card reports the card; an unlimited process sees it too.
TESSEL_CUDA_MEM_LIMIT=64G
export TESSEL_CUDA_MEM_LIMIT
is "$(val total "$(probe ctx info | grep '^info')")" $((8 * G)) "64 GiB limit on 8 GiB: total = 8 GiB"
unset TESSEL_CUDA_MEM_LIMIT
is "$(val total "$(probe ctx info | grep '^info')")" $((8 * G)) "no limit: total = 8 GiB"

# Used above the limit (limit lowered under a running slice) gives free = 0.
export TESSEL_CUDA_MEM_LIMIT=1G TESSEL_SLICE="$TMP/slice"
mkfifo "$TMP/hold2"
probe ctx alloc:mem:500M hold <"$TMP/hold2" >"$TMP/first" &
fpid=$!
exec 4>"$TMP/hold2"
wait_until holding "$TMP/first"
out=$(TESSEL_CUDA_MEM_LIMIT=256M probe info ctx info alloc:mem:1M)
is "$(printf '%s\n' "$out" | grep '^ctx')" "ctx rc=2" "limit lowered below use: a new context is refused"
exec 4>&-
wait $fpid
unset TESSEL_SLICE

# NVML: nvidia-smi's view of the slice, matched by UUID.
if [ -e "$FAKE/libnvidia-ml.so.1" ]; then
    export TESSEL_CUDA_MEM_LIMIT=1G
    out=$(probe ctx alloc:mem:100M info nvml)
    n=$(printf '%s\n' "$out" | grep '^nvml')
    f=$(val free "$(printf '%s\n' "$out" | grep '^info')")
    is "$(val total "$n")" $G "nvmlDeviceGetMemoryInfo: total = the limit"
    is "$(val free "$n")" "$f" "nvmlDeviceGetMemoryInfo: free agrees with cuMemGetInfo"
    is "$(val used "$n")" $((G - f)) "nvmlDeviceGetMemoryInfo: used = limit - free"
    is "$(val v2total "$n")" $G "nvmlDeviceGetMemoryInfo_v2: total = the limit"
    is "$(val v2free "$n")" "$f" "nvmlDeviceGetMemoryInfo_v2: free agrees"
    # A process that never touches CUDA (nvidia-smi) sees the same slice.
    out=$(TESSEL_SLICE="$TMP/slice3" probe nvml)
    is "$(val total "$(printf '%s\n' "$out" | grep '^nvml')")" $G "NVML without CUDA calls: total = the limit"
    # Two GPUs, a limit per device: each view (CUDA ordinal, NVML device by
    # UUID) shows its own device's limit.
    out=$(TESSEL_FAKE_GPUS=2xT4:8G TESSEL_FAKE_STATE="$TMP/two" TESSEL_CUDA_MEM_LIMIT_1=512M \
        probe ctx totalmem:0 totalmem:1 nvml:0 nvml:1)
    is "$(printf '%s\n' "$out" | grep '^totalmem' | cut -d' ' -f2 | tr '\n' ' ')" \
        "$G $((512 * MiB)) " "two devices: cuDeviceTotalMem_v2 = 1 GiB and 512 MiB"
    is "$(printf '%s\n' "$out" | grep '^nvml' | tr ' ' '\n' | grep '^total=' | tr '\n' ' ')" \
        "total=$G total=$((512 * MiB)) " "two devices: NVML totals = 1 GiB and 512 MiB"
    is "$(val free "$(printf '%s\n' "$out" | grep '^nvml' | sed -n 2p)")" $((512 * MiB)) \
        "two devices: nothing used on device 1, all 512 MiB free"
else
    diag "no fake libnvidia-ml.so.1: NVML checks not run"
fi
done_testing
