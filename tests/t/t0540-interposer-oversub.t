#!/bin/sh
# t0540-interposer-oversub.t - oversubscription (issue 21): with
# TESSEL_CUDA_MEM_OVERSUBSCRIBE, an allocation past the slice's device share is served as
# managed memory advised to stay on the host, counted apart (host_used in the slice file,
# per device and per process) against the host limit, and given back by cuMemFree_v2; without
# it, or past the host limit, CUDA_ERROR_OUT_OF_MEMORY (2) as before.  cuMemGetInfo keeps
# showing the device share.  Forked children and several processes share the host limit; a
# killed process's spill is reclaimed.
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

# The environment may lower the host limit, a malformed value fails closed.
rm -f "$TESSEL_SLICE"
fill=$(TESSEL_CUDA_MEM_OVERSUBSCRIBE=200M probe ctx fill:mem:100M | grep '^fill')
is "$(val n "$fill")" 11 "TESSEL_CUDA_MEM_OVERSUBSCRIBE=200M: 2 spilled"
out=$(TESSEL_CUDA_MEM_OVERSUBSCRIBE=lots probe ctx 2>"$TMP/err")
is "$out" "ctx rc=2" "TESSEL_CUDA_MEM_OVERSUBSCRIBE=lots: fails closed"
ok $(grep -q 'TESSEL_CUDA_MEM_OVERSUBSCRIBE=lots' "$TMP/err" && echo 0 || echo 1) \
    "the message names the variable"
done_testing
