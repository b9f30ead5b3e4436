#!/bin/sh
# t0510-interposer-limit.t - the memory limit holds on every counted path,
# the refusal is CUDA_ERROR_OUT_OF_MEMORY (2) from the interposer (the driver
# never sees the allocation), and every free gives its bytes back.
#
# Slice: 1 GiB on a fake 8 GiB GPU.  The primary context is charged first
# (64 MiB when measured through NVML, t0517 checks that figure); of the
# BUDGET left, exactly floor(BUDGET / 100 MiB) allocations of 100 MiB fit.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/interposer/tcu.sh"
export TESSEL_CUDA_MEM_LIMIT=1G
C=$((100 * MiB))

budget=$(val free "$(probe ctx info | grep '^info')")
ok $([ "$budget" -gt $((500 * MiB)) ] && [ "$budget" -lt $((1024 * MiB)) ] && echo 0 || echo 1) \
    "after the context, $budget bytes of the 1 GiB slice are left"
n=$((budget / C))
left=$((budget - n * C))

for path in mem mem1 managed async async_ptsz pool pool_ptsz mypool vmm array array1 array3d mipmap; do
    case $path in async* | pool* | mypool) trim=trim ;; *) trim=info ;; esac
    out=$(probe ctx fill:$path:100M info freeall $trim info 2>&1)
    fill=$(printf '%s\n' "$out" | grep "^fill")
    is "$(val n "$fill")" $n "$path: $n allocations of 100 MiB fit in $budget bytes"
    is "$(val rc "$fill")" 2 "$path: the next one gets CUDA_ERROR_OUT_OF_MEMORY"
    is "$(val free "$(printf '%s\n' "$out" | grep '^info' | head -n 1)")" $left \
        "$path: $left bytes left while they live"
    is "$(val free "$(printf '%s\n' "$out" | grep '^info' | tail -n 1)")" $budget \
        "$path: the frees give every byte back"
    is "$(printf '%s\n' "$out" | grep '^freeall')" "freeall rc=0" "$path: every free succeeds"
done

# A pool keeps freed memory cached: it stays charged until trimmed, and the
# pool's own cache is reused without a new charge.
out=$(probe ctx fill:async:100M freeall info fill:async:100M freeall trim info)
is "$(val free "$(printf '%s\n' "$out" | grep '^info' | head -n 1)")" $left \
    "async: freed bytes cached by the pool stay charged"
is "$(printf '%s\n' "$out" | grep '^fill' | tail -n 1 | tr ' ' '\n' | grep '^n=')" "n=$n" \
    "async: the pool's cache serves $n allocations again"
is "$(val free "$(printf '%s\n' "$out" | grep '^info' | tail -n 1)")" $budget \
    "async: cuMemPoolTrimTo gives the cache back"

# A pool of the program's own (cuMemPoolCreate): its cache is charged until
# cuMemPoolDestroy, which gives it back.
out=$(probe ctx fill:mypool:100M freeall info pooldestroy info)
is "$(val free "$(printf '%s\n' "$out" | grep '^info' | head -n 1)")" $left \
    "mypool: freed bytes cached by a created pool stay charged"
is "$(val free "$(printf '%s\n' "$out" | grep '^info' | tail -n 1)")" $budget \
    "mypool: cuMemPoolDestroy gives the cache back"

# The refused allocation never reached the driver.
out=$(probe ctx fill:mem:100M calls:cuMemAlloc_v2)
is "$(printf '%s\n' "$out" | sed -n 's/^calls cuMemAlloc_v2 //p')" $n \
    "the refused cuMemAlloc_v2 is answered by the interposer (driver saw $n calls)"

# Pitched allocations are charged at the real pitch: 4 rows of 1000 bytes
# cost 4 x the pitch the driver chose.
out=$(probe ctx info alloc:pitch:1000 info)
pitch=$(printf '%s\n' "$out" | sed -n 's/^pitch //p')
f1=$(val free "$(printf '%s\n' "$out" | grep '^info' | sed -n 1p)")
f2=$(val free "$(printf '%s\n' "$out" | grep '^info' | sed -n 2p)")
ok $([ "$pitch" -gt 1000 ] && echo 0 || echo 1) "pitch: the driver chose pitch $pitch > 1000"
is "$((f1 - f2))" "$((pitch * 4))" "pitch: 4 rows of 1000 bytes are charged pitch x 4"
out=$(probe ctx fill:pitch:26214400)
is "$(printf '%s\n' "$out" | grep '^fill' | tr ' ' '\n' | grep '^n=')" "n=$n" \
    "pitch: $n allocations of 4 x 25 MiB rows fit"

# A limit per device overrides the global one.
out=$(TESSEL_CUDA_MEM_LIMIT_0=512M probe ctx info fill:mem:100M)
b512=$(val free "$(printf '%s\n' "$out" | grep '^info')")
is "$b512" $((budget - 512 * MiB)) "TESSEL_CUDA_MEM_LIMIT_0=512M: 512 MiB less than with 1G"
is "$(val n "$(printf '%s\n' "$out" | grep '^fill')")" $((b512 / C)) \
    "TESSEL_CUDA_MEM_LIMIT_0=512M: $((b512 / C)) allocations of 100 MiB fit"
done_testing
