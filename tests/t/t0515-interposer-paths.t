#!/bin/sh
# t0515-interposer-paths.t - the limit holds whichever way a program finds
# the driver: symbols bound globally, dlsym on a private libcuda handle,
# cuGetProcAddress (default and per-thread-default-stream), and a plugin
# that dlopens libcuda privately itself.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/interposer/tcu.sh"
export TESSEL_CUDA_MEM_LIMIT=1G
C=$((100 * MiB))
budget=$(val free "$(probe ctx info | grep '^info')")
n=$((budget / C))

for via in global dlsym proc plugin; do
    out=$(probe --via=$via ctx fill:mem:100M info freeall info)
    fill=$(printf '%s\n' "$out" | grep '^fill')
    is "$(val n "$fill") $(val rc "$fill")" "$n 2" "--via=$via: $n allocations, then CUDA_ERROR_OUT_OF_MEMORY"
    is "$(val free "$(printf '%s\n' "$out" | grep '^info' | tail -n 1)")" "$budget" \
        "--via=$via: the frees give it all back"
done

# cuGetProcAddress with the per-thread-default-stream flag: the hook handed
# out forwards to the driver's _ptsz variant, and is limited.
out=$(probe --via=proc --ptds ctx fill:async:100M calls:cuMemAllocAsync_ptsz calls:cuMemAllocAsync)
is "$(val n "$(printf '%s\n' "$out" | grep '^fill')")" $n "--via=proc --ptds: async allocations limited"
is "$(printf '%s\n' "$out" | sed -n 's/^calls cuMemAllocAsync_ptsz //p')" $n \
    "--via=proc --ptds: the driver saw $n cuMemAllocAsync_ptsz calls"
is "$(printf '%s\n' "$out" | sed -n 's/^calls cuMemAllocAsync //p')" 0 \
    "--via=proc --ptds: and no legacy-stream cuMemAllocAsync call"
out=$(probe --via=proc ctx fill:async:100M calls:cuMemAllocAsync_ptsz calls:cuMemAllocAsync)
is "$(printf '%s\n' "$out" | sed -n 's/^calls cuMemAllocAsync //p')" $n \
    "--via=proc: without the flag, the legacy-stream variant ($n calls)"
done_testing
