#!/bin/sh
# t0526-interposer-pool-growth.t - a stream-ordered pool grows in whole
# chunks (2 MiB on the fake, as on current GPUs), more than the bytes asked
# for; that growth is charged through the limit check, so an allocation
# that would grow a pool past the slice's limit fails with
# CUDA_ERROR_OUT_OF_MEMORY (2) like the driver's own, and at that point the
# driver's figure for the process (the fake NVML's per-process memory, what
# nvidia-smi shows) is within the limit and equal to the slice's count.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/interposer/tcu.sh"
tcu_need_nvml

# The context costs 64 MiB (a first context reserves the assumed 300 MiB
# until it is measured, so the slice is 301 MiB); 237 MiB are left for the
# pool.  1 MiB allocations: the pool reserves 2 MiB for every second one;
# the 237th fits the limit by its own bytes but would grow the pool to
# 238 MiB.
limit=$((301 * MiB))
export TESSEL_CUDA_MEM_LIMIT=$limit TESSEL_SLICE="$TMP/slice"
for path in async pool_ptsz; do
    rm -f "$TMP/slice" "$TMP/hold" "$TMP/out"
    mkfifo "$TMP/hold"
    (LD_PRELOAD="$PRE" exec "$PROBE" ctx fill:$path:1M info hold <"$TMP/hold" >"$TMP/out" 2>&1) &
    pid=$!
    exec 3>"$TMP/hold"
    wait_until holding "$TMP/out"
    fill=$(grep '^fill' "$TMP/out")
    is "$(val n "$fill") $(val rc "$fill")" "236 2" \
        "$path: 236 x 1 MiB fit (pool of 236 MiB), the 237th would grow it to 238 MiB: error 2"
    truth=$(val used "$(probe_bare nvmlproc:$pid | grep '^nvmlproc')")
    ok $([ "$truth" -le $limit ] && echo 0 || echo 1) \
        "$path: at out-of-memory the driver holds $truth bytes for the process <= the $limit limit"
    used=$(val used "$("$HELPERS/tcu-slice" "$TESSEL_SLICE" | grep '^device 0')")
    is "$used" "$truth" "$path: the slice counts what the driver holds (context + pool)"
    is "$(val free "$(grep '^info' "$TMP/out")")" $((limit - truth)) \
        "$path: cuMemGetInfo's free = limit - the driver's figure"
    exec 3>&-
    wait $pid
done
done_testing
