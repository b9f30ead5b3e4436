#!/bin/sh
# t0534-interposer-nvml-processes.t - NVML's process lists inside a slice
# show the slice's own processes and nothing of its neighbours, as its
# memory figures show the slice's memory (nvidia-smi's "Processes" and
# --query-compute-apps, nvitop): processes outside any slice and those of
# another slice are left out, the driver's list is unchanged outside a
# slice, and NVML's size protocol (a first call with no room gives the
# count) counts only what will be listed.  v1, v3 and the r550+ detail
# list (nvmlDeviceGetRunningProcessDetailList) alike.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/interposer/tcu.sh"
tcu_need_nvml
export TESSEL_CUDA_MEM_LIMIT=4G

# A process outside any slice holding 512 MiB.
mkfifo "$TMP/out-hold"
("$PROBE" ctx alloc:mem:512M hold <"$TMP/out-hold" >"$TMP/outside" 2>&1) &
outside=$!
exec 4>"$TMP/out-hold"
wait_until holding "$TMP/outside"

# A process of slice A holding 256 MiB.
export TESSEL_SLICE="$TMP/sliceA"
hold_probe a ctx alloc:mem:256M
member=$pid

# Another process of slice A lists.
l=$(probe ctx nvmlprocs)
v3=$(val v3 "$(printf '%s\n' "$l" | grep '^nvmlprocs')")
v1=$(val v1 "$(printf '%s\n' "$l" | grep '^nvmlprocs')")
rc=$(val rc "$(printf '%s\n' "$l" | grep '^nvmlprocs')")
sizeq=$(val sizeq "$(printf '%s\n' "$l" | grep '^nvmlprocs')")
is "$rc" "0,0" "in slice A: both lists answer"
sorted() { printf '%s\n' "$1" | tr ',' '\n' | sort -n | tr '\n' ' '; }
n3=$(printf '%s\n' "$v3" | tr ',' '\n' | grep -c .)
is "$n3" 2 "in slice A: two processes listed (v3: $v3)"
ok $(printf '%s\n' "$v3" | tr ',' '\n' | grep -qx "$member" && echo 0 || echo 1) "the other member ($member) is listed"
ok $(printf '%s\n' "$v3" | tr ',' '\n' | grep -qx "$outside" && echo 1 || echo 0) "the process outside the slice ($outside) is not listed"
is "$(sorted "$v1")" "$(sorted "$v3")" "the v1 list is the same"
is "$sizeq" "7:2" "a call with no room: NVML_ERROR_INSUFFICIENT_SIZE and a count of 2"
d=$(printf '%s\n' "$l" | grep '^nvmlprocs')
is "$(sorted "$(val detail "$d")")" "$(sorted "$v3")" "nvmlDeviceGetRunningProcessDetailList lists the same two"
is "$(val drc "$d")/$(val dsizeq "$d")" "0/7:2" "its size protocol counts the slice's processes (2)"
is "$(val dbadver "$d")" 25 "a struct version it does not know: NVML_ERROR_ARGUMENT_VERSION_MISMATCH, nothing passed through"

# A process of slice B sees itself alone.
export TESSEL_SLICE="$TMP/sliceB"
l=$(probe ctx nvmlprocs | grep '^nvmlprocs')
is "$(printf '%s\n' "$(val v3 "$l")" | tr ',' '\n' | grep -c .)" 1 "in slice B: only itself ($(val v3 "$l"))"
ok $(printf '%s\n' "$(val v3 "$l")" | tr ',' '\n' | grep -qx "$member" && echo 1 || echo 0) "slice A's process is not listed in slice B"

# Without the interposer the driver's whole list: outside + member.
l=$(probe_bare nvmlprocs | grep '^nvmlprocs')
all=$(val v3 "$l")
ok $(printf '%s\n' "$all" | tr ',' '\n' | grep -qx "$outside" && printf '%s\n' "$all" | tr ',' '\n' | grep -qx "$member" && echo 0 || echo 1) \
    "outside any slice the driver's list is whole ($all)"
is "$(val sizeq "$l")" "7:2" "and its count is the driver's (2)"
is "$(sorted "$(val detail "$l")")" "$(sorted "$all")" "the detail list too"

# Failed closed (a malformed limit): an empty list.
l=$(TESSEL_CUDA_MEM_LIMIT=bogus probe nvmlprocs 2>/dev/null | grep '^nvmlprocs')
is "$(val v3 "$l")" "" "a process that failed closed lists nothing"

release
exec 4>&-
wait $outside
done_testing
