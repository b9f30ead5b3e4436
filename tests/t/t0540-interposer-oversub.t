#!/bin/sh
# t0540-interposer-oversub.t - oversubscription (issue 21): with
# TESSEL_CUDA_MEM_OVERSUBSCRIBE, an allocation past the slice's device share is served as
# managed memory advised to stay on the host, counted apart (host_used in the slice file,
# per device and per process) against the host limit, and given back by cuMemFree_v2; without
# it, or past the host limit, CUDA_ERROR_OUT_OF_MEMORY (2) as before.  cuMemGetInfo keeps
# showing the device share.  Forked children and several processes share the host limit; a
# killed process's spill is reclaimed.  A spill cannot be prefetched or advised onto the
# device; a process keeps to its own host limit whatever its slice file says.
#
# Slice: 1 GiB on a fake 8 GiB GPU, the context 64 MiB: 9 allocations of 100 MiB fit the
# device share, 60 MiB are left; a 512 MiB host limit takes 5 more of 100 MiB.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/interposer/tcu.sh"
tcu_need_nvml
export TESSEL_CUDA_MEM_LIMIT=1G TESSEL_SLICE="$TMP/slice"
ctx=$((64 * MiB))
left=$((1024 * MiB - ctx - 9 * 100 * MiB))
dev0() { "$HELPERS/tcu-slice" "$TESSEL_SLICE" | grep '^device 0 '; }

# Off (the default): the share is the end, as t0510 checks.
out=$(probe ctx fill:mem:100M calls:cuMemAllocManaged)
fill=$(printf '%s\n' "$out" | grep '^fill')
is "$(val n "$fill") $(val rc "$fill")" "9 2" "off: 9 x 100 MiB, then CUDA_ERROR_OUT_OF_MEMORY"
is "$(printf '%s\n' "$out" | sed -n 's/^calls cuMemAllocManaged //p')" 0 \
    "off: no managed memory is asked for"
rm -f "$TESSEL_SLICE"

export TESSEL_CUDA_MEM_OVERSUBSCRIBE=512M
# On: 9 on the device, 5 spilled (500 of 512 MiB), the 15th refused.
hold_probe on ctx fill:mem:100M info calls:cuMemAllocManaged
fill=$(lines fill on)
is "$(val n "$fill") $(val rc "$fill")" "14 2" \
    "on: 9 x 100 MiB on the device, 5 spilled, the next past 512 MiB refused with OOM"
is "$(val free "$(lines info on)")" $left "cuMemGetInfo still shows the device share ($left left)"
is "$(sed -n 's/^calls cuMemAllocManaged //p' "$TMP/on")" 5 \
    "the 5 spilled allocations are cuMemAllocManaged calls"
d=$(dev0)
is "$(val used "$d")" $((ctx + 900 * MiB)) "slice file: device bytes are the context and 9 x 100 MiB"
is "$(val host_used "$d")" $((500 * MiB)) "slice file: 500 MiB spilled, counted apart"
is "$(val host_limit "$d")" $((512 * MiB)) "slice file: the host limit is 512 MiB"
is "$(val host "$("$HELPERS/tcu-slice" "$TESSEL_SLICE" | grep "^proc $pid ")")" $((500 * MiB)) \
    "slice file: the process's own record holds its 500 MiB"
is "$(truth $pid)" $((ctx + 900 * MiB)) \
    "the driver's device memory for the process excludes the spill (it stays on the host)"
release
d=$(dev0)
is "$(val used "$d") $(val host_used "$d")" "0 0" "a clean exit gives both kinds back"

# The spilled allocation as the driver sees it: managed, on the host, preferred there (type
# 2, CU_MEM_LOCATION_TYPE_HOST), accessed by device 0; one within the share is not managed.
out=$(probe ctx alloc:mem:900M where alloc:mem:400M where info)
is "$(printf '%s\n' "$out" | grep '^where' | sed -n 1p)" \
    "where managed=0 resident=0 pref=0 accessed=0" "within the share: device memory"
is "$(printf '%s\n' "$out" | grep '^where' | sed -n 2p)" \
    "where managed=1 resident=-1 pref=2 accessed=1" \
    "past the share: managed, resident and preferred on the host, accessed by device 0"
is "$(val free "$(printf '%s\n' "$out" | grep '^info')")" $((1024 * MiB - ctx - 900 * MiB)) \
    "the spilled 400 MiB do not shrink the device share cuMemGetInfo shows"

# Frees of both kinds, in any order, give each count its bytes back.
out=$(probe ctx fill:mem:100M freeall info fill:mem:100M)
is "$(printf '%s\n' "$out" | grep '^freeall')" "freeall rc=0" "every free of both kinds succeeds"
is "$(val free "$(printf '%s\n' "$out" | grep '^info')")" $((1024 * MiB - ctx)) \
    "after the frees the device share is whole"
is "$(val n "$(printf '%s\n' "$out" | grep '^fill' | tail -n 1)")" 14 \
    "after the frees the host limit is whole: 14 fit again"
hold_probe fr ctx alloc:mem:900M alloc:mem:300M alloc:mem:100M free
d=$(dev0)
is "$(val used "$d") $(val host_used "$d")" "$((ctx + 900 * MiB)) $((300 * MiB))" \
    "freeing the newest (spilled 100 MiB) takes it from the host count only"
release

# Pitched allocations spill too, at a pitch aligned to 512 bytes; stream-ordered ones do not.
out=$(probe ctx alloc:mem:900M alloc:pitch:26214401 where)
is "$(printf '%s\n' "$out" | grep '^alloc' | tail -n 1)" "alloc pitch rc=0" \
    "cuMemAllocPitch_v2 past the share spills"
is "$(printf '%s\n' "$out" | sed -n 's/^pitch //p')" 26214912 "its pitch is the width rounded up to 512"
is "$(printf '%s\n' "$out" | grep '^where')" "where managed=1 resident=-1 pref=2 accessed=1" \
    "the pitched spill is managed memory on the host"
fill=$(probe ctx fill:async:100M | grep '^fill')
is "$(val n "$fill") $(val rc "$fill")" "9 2" "cuMemAllocAsync never spills (pool memory is the device's)"

# The host limit is the slice's, shared by its processes, and a forked child's (a child of a
# process that has not initialised CUDA: the driver's fork rule) spills into it too.  A
# first process holds its context, 800 MiB on the device and 300 MiB spilled.
mkfifo "$TMP/holdA"
(LD_PRELOAD="$PRE" exec "$PROBE" ctx alloc:mem:800M alloc:mem:300M hold <"$TMP/holdA" \
    >"$TMP/A" 2>&1) &
apid=$!
exec 4>"$TMP/holdA"
wait_until holding "$TMP/A"
is "$(val host_used "$(dev0)")" $((300 * MiB)) "a first process spilled 300 MiB"
out=$(probe ctx alloc:mem:300M alloc:mem:200M)
is "$(printf '%s\n' "$out" | grep '^alloc' | tr '\n' ' ')" "alloc mem rc=2 alloc mem rc=0 " \
    "a second process: 300 MiB more would pass the 512 MiB the slice spills, 200 MiB fits"
hold_probe fk forkhold:200M
is "$(lines forkhold fk | cut -d' ' -f2)" "rc=0" "a forked child's allocation past the share spills"
is "$(val host_used "$(dev0)")" $((500 * MiB)) "the child's 200 MiB are in the host count"
release
# (The child leaves at the same end of input as its parent, maybe after it.)
host_is() { [ "$(val host_used "$(dev0)")" = "$1" ]; }
wait_until host_is $((300 * MiB))
is "$(val host_used "$(dev0)")" $((300 * MiB)) "the child's exit gives them back"
exec 4>&-
wait $apid
is "$(val host_used "$(dev0)")" 0 "the first process's exit gives its 300 MiB back"

# A killed process's spill goes back when the next one needs it.
hold_probe k ctx alloc:mem:900M alloc:mem:500M
kill -9 $pid
wait $pid 2>/dev/null
exec 3>&-
is "$(val host_used "$(dev0)")" $((500 * MiB)) "a killed process leaves its 500 MiB counted"
out=$(probe ctx alloc:mem:900M alloc:mem:500M)
is "$(printf '%s\n' "$out" | grep '^alloc' | tail -n 1)" "alloc mem rc=0" \
    "the next process's spill reclaims them and fits"

# The slice file is the job's: a host limit raised there (8 GiB) while a process runs raises
# nothing for it, it keeps to its own configured 512 MiB.
(LD_PRELOAD="$PRE" exec "$PROBE" ctx alloc:mem:800M alloc:mem:200M "waitfile:$TMP/go" \
    alloc:mem:400M alloc:mem:312M >"$TMP/raise" 2>&1) &
rpid=$!
two_allocs() { [ "$(grep -c '^alloc' "$TMP/raise")" -ge 2 ]; }
wait_until two_allocs
is "$("$HELPERS/tcu-slice" "$TESSEL_SLICE" sethost:$((8192 * MiB)))" ok \
    "the job rewrites its slice file's host limit to 8 GiB"
is "$(val host_limit "$(dev0)") $(val host_used "$(dev0)")" "$((8192 * MiB)) $((200 * MiB))" \
    "the slice file says 8 GiB, 200 MiB spilled"
touch "$TMP/go"
wait $rpid
is "$(grep '^alloc' "$TMP/raise" | tail -n 2 | tr '\n' ' ')" "alloc mem rc=2 alloc mem rc=0 " \
    "still 512 MiB in all: 400 MiB more refused beside the 200 MiB, 312 MiB fits"

# A spilled allocation stays on the host (security review F1): a prefetch of it to the device,
# or advice that would place it or let it go there, is refused with CUDA_ERROR_NOT_PERMITTED
# (800) before the driver sees it, through the exported entry points, cuGetProcAddress and the
# per-thread-stream variants; host-targeted ones reach the driver.
rm -f "$TESSEL_SLICE"
hold_probe pf ctx alloc:mem:900M alloc:mem:400M prefetch:0:400M prefetch2:0:1M where
is "$(lines prefetch pf)" "prefetch rc=800 prefetch rc=800 " \
    "cuMemPrefetchAsync and _v2 of a spill to device 0: CUDA_ERROR_NOT_PERMITTED"
is "$(lines where pf)" "where managed=1 resident=-1 pref=2 accessed=1 " \
    "the spill's pages stay on the host, its hints as they were"
is "$(truth $pid)" $((ctx + 900 * MiB)) \
    "the driver holds no more device memory for the process than its share"
release
out=$(probe --via=proc ctx alloc:mem:900M alloc:mem:400M prefetch2:0:400M where)
is "$(printf '%s\n' "$out" | grep -E '^(prefetch|where)' | tr '\n' ' ')" \
    "prefetch rc=800 where managed=1 resident=-1 pref=2 accessed=1 " \
    "through cuGetProcAddress (CUDA 13): the prefetch to the device is refused too"
out=$(probe --via=proc --ptds ctx alloc:mem:900M alloc:mem:400M prefetch2:0:400M)
is "$(printf '%s\n' "$out" | grep '^prefetch')" "prefetch rc=800" \
    "the per-thread-stream variant (cuMemPrefetchAsync_v2_ptsz) is refused too"
out=$(probe --ptds ctx alloc:mem:900M alloc:mem:400M prefetch:0:400M)
is "$(printf '%s\n' "$out" | grep '^prefetch')" "prefetch rc=800" \
    "cuMemPrefetchAsync_ptsz is refused too"
out=$(probe ctx alloc:mem:900M alloc:mem:400M batch:0:400M dbatch:0:1M where)
is "$(printf '%s\n' "$out" | grep -E '^(batch|where)' | tr '\n' ' ')" \
    "batch rc=800 batch rc=800 where managed=1 resident=-1 pref=2 accessed=1 " \
    "the CUDA 13 batches (cuMemPrefetchBatchAsync, cuMemDiscardAndPrefetchBatchAsync) to the device are refused"
out=$(probe --via=proc --ptds ctx alloc:mem:900M alloc:mem:400M batch:0:400M dbatch:0:400M \
    batch:cpu:400M)
is "$(printf '%s\n' "$out" | grep '^batch' | tr '\n' ' ')" "batch rc=800 batch rc=800 batch rc=0 " \
    "through cuGetProcAddress, per-thread stream: to the device refused, to the host let through"
out=$(probe ctx alloc:mem:900M alloc:mem:400M prefetch:cpu:400M prefetch2:cpu:400M where)
is "$(printf '%s\n' "$out" | grep -E '^(prefetch|where)' | tr '\n' ' ')" \
    "prefetch rc=0 prefetch rc=0 where managed=1 resident=-1 pref=2 accessed=1 " \
    "a prefetch of a spill to the host reaches the driver"
out=$(probe ctx alloc:mem:900M alloc:mem:400M advise:prefer:0 advise2:prefer:0 advise:unprefer:0 \
    advise:readmostly:0 advise:unaccessed:0 advise2:unaccessed:0 where)
is "$(printf '%s\n' "$out" | grep -E '^(advise|where)' | tr '\n' ' ')" \
    "advise rc=800 advise rc=800 advise rc=800 advise rc=800 advise rc=800 advise rc=800 where managed=1 resident=-1 pref=2 accessed=1 " \
    "advice that would move a spill to the device (prefer it, unset the host preference, read-mostly, unset accessed-by) is refused"
out=$(probe ctx alloc:mem:900M alloc:mem:400M advise:prefer:cpu advise2:prefer:cpu \
    advise:accessed:0 advise:unreadmostly:0)
is "$(printf '%s\n' "$out" | grep '^advise' | tr '\n' ' ')" \
    "advise rc=0 advise rc=0 advise rc=0 advise rc=0 " \
    "advice that keeps a spill on the host reaches the driver"
out=$(probe ctx alloc:mem:900M alloc:mem:400M free prefetch:0:1M)
is "$(printf '%s\n' "$out" | grep '^prefetch')" "prefetch rc=1" \
    "device memory is not a spill: its prefetch reaches the driver (which refuses it, not managed)"

# The job's own managed memory (cuMemAllocManaged) is charged to the device share in full when
# allocated, wherever its pages are: prefetching it to the device passes nothing.  The fake's
# NVML, as the real driver's, leaves managed memory resident on the device out of the
# process's figure.
hold_probe mg ctx alloc:managed:300M prefetch:0:300M where
is "$(lines prefetch mg)" "prefetch rc=0 " "the job's own managed memory may be prefetched"
is "$(lines where mg)" "where managed=1 resident=0 pref=0 accessed=0 " "its pages are on device 0"
is "$(used)" $((ctx + 300 * MiB)) "the slice counts it on the device since its allocation"
is "$(truth $pid)" $ctx "NVML's per-process figure leaves the resident managed memory out"
release

# The slice file's spilled count is the job's to rewrite (security review F2): zeroed under a
# running process, it lets that process spill nothing past its own 512 MiB (its count in its
# own memory).
(LD_PRELOAD="$PRE" exec "$PROBE" ctx alloc:mem:800M alloc:mem:500M "waitfile:$TMP/go0" \
    alloc:mem:500M alloc:mem:12M >"$TMP/zero" 2>&1) &
zpid=$!
two_zero() { [ "$(grep -c '^alloc' "$TMP/zero")" -ge 2 ]; }
wait_until two_zero
is "$("$HELPERS/tcu-slice" "$TESSEL_SLICE" sethostused:0)" ok \
    "the job zeroes its slice file's spilled count"
is "$(val host_used "$(dev0)")" 0 "the slice file says nothing is spilled"
touch "$TMP/go0"
wait $zpid
is "$(grep '^alloc' "$TMP/zero" | tr '\n' ' ')" \
    "alloc mem rc=0 alloc mem rc=0 alloc mem rc=2 alloc mem rc=0 " \
    "the process keeps to 512 MiB: 500 MiB more refused, 12 MiB fits"
rm -f "$TESSEL_SLICE"

# The environment may lower the host limit, a malformed value fails closed.
rm -f "$TESSEL_SLICE"
fill=$(TESSEL_CUDA_MEM_OVERSUBSCRIBE=200M probe ctx fill:mem:100M | grep '^fill')
is "$(val n "$fill")" 11 "TESSEL_CUDA_MEM_OVERSUBSCRIBE=200M: 2 spilled"
out=$(TESSEL_CUDA_MEM_OVERSUBSCRIBE=lots probe ctx 2>"$TMP/err")
is "$out" "ctx rc=2" "TESSEL_CUDA_MEM_OVERSUBSCRIBE=lots: fails closed"
ok $(grep -q 'TESSEL_CUDA_MEM_OVERSUBSCRIBE=lots' "$TMP/err" && echo 0 || echo 1) \
    "the message names the variable"
done_testing
