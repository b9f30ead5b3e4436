#!/bin/sh
# tests/gpu/oversub.sh - the real-GPU check of oversubscription (docs/interposer.md,
# "Oversubscription"), for a GPU host with PyTorch; not one of run.sh's rows yet (run it on
# its own).  A PyTorch process in a slice of LIMIT with SPILL of oversubscription fills it with
# 256 MiB tensors (tests/gpu/oversub_torch.py); the verdicts:
#   spills     it got past LIMIT (the spill served allocations);
#   bounded    it got no more than LIMIT + SPILL;
#   device     the driver's own figure for the process (nvidia-smi) stayed within LIMIT + 1 GiB
#              (its context and the driver's own memory beside the slice's count): the spilled
#              tensors stayed on the host;
#   counted    the slice file's host_used is what it spilled;
#   slower     the in-place add over a spilled tensor ran slower than over a device one (the
#              figures and their ratio are printed: what oversubscription costs on this host).
#
#   tests/gpu/oversub.sh [--build DIR] [--limit 4G] [--spill 4G]
#
# Needs build/lib/libtessel-cuda.so and build/tests/interposer/tcu-slice (make), python3
# with torch, nvidia-smi.  Exit 0 when every verdict is PASS, 1 otherwise, 2 when the host
# cannot run it.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=$HERE/../../build
LIMIT=4G
SPILL=4G
while [ $# -gt 0 ]; do
    case $1 in
    --build) BUILD=${2:?}; shift 2 ;;
    --limit) LIMIT=${2:?}; shift 2 ;;
    --spill) SPILL=${2:?}; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--limit SIZE] [--spill SIZE]" >&2; exit 2 ;;
    esac
done
PRE=$BUILD/lib/libtessel-cuda.so
SLICE_TOOL=$BUILD/tests/interposer/tcu-slice
for f in "$PRE" "$SLICE_TOOL"; do
    [ -e "$f" ] || { echo "oversub.sh: $f is missing (make)"; exit 2; }
done
command -v nvidia-smi >/dev/null || { echo "oversub.sh: nvidia-smi is missing"; exit 2; }
bytes() { # SIZE -> bytes (K/M/G/T, binary)
    echo "$1" | awk '{n = $0 + 0; u = substr($0, length($0)); m = 1
        if (u == "K") m = 2^10; if (u == "M") m = 2^20; if (u == "G") m = 2^30; if (u == "T") m = 2^40
        printf "%.0f\n", n * m}'
}
L=$(bytes "$LIMIT")
S=$(bytes "$SPILL")
T=$(mktemp -d "${TMPDIR:-/tmp}/tessel-oversub-gpu-XXXXXX")
trap 'rm -rf "$T"' EXIT INT TERM
env LD_PRELOAD="$PRE" TESSEL_SLICE="$T/slice" TESSEL_CUDA_MEM_LIMIT="$LIMIT" \
    TESSEL_CUDA_MEM_OVERSUBSCRIBE="$SPILL" TCU_SLICE_TOOL="$SLICE_TOOL" \
    timeout 300 python3 "$HERE/oversub_torch.py" >"$T/out" 2>"$T/err"
rc=$?
cat "$T/out"
grep -q 'missing=torch' "$T/out" && { echo "oversub.sh: torch is missing"; exit 2; }
[ $rc -eq 0 ] || { echo "oversub.sh: the program failed ($rc):"; tail -n 5 "$T/err"; exit 1; }
v() { tr ' ' '\n' <"$T/out" | sed -n "s/^$1=//p" | head -n 1; }
got=$(v bytes)
drv=$(v driver_used_mib)
host=$(v host_used)
fail=0
verdict() { # verdict NAME COND-STATUS TEXT
    if [ "$2" -eq 0 ]; then echo "PASS $1: $3"; else echo "FAIL $1: $3"; fail=1; fi
}
verdict spills "$([ "${got:-0}" -gt "$L" ]; echo $?)" "allocated $got bytes past the $L of the share"
verdict bounded "$([ "${got:-0}" -le $((L + S)) ]; echo $?)" "$got <= $L + $S"
verdict device "$([ -n "$drv" ] && [ $((drv * 1048576)) -le $((L + 1073741824)) ]; echo $?)" \
    "nvidia-smi: ${drv:-?} MiB for the process"
verdict counted "$([ -n "$host" ] && [ "$host" -gt 0 ] && [ "$host" -le "$S" ]; echo $?)" \
    "the slice file's host_used is ${host:-?}"
ratio=$(v ratio)
verdict slower "$(awk -v r="${ratio:-1}" 'BEGIN {exit !(r < 1)}'; echo $?)" \
    "device $(v dev_gbs) GB/s, spilled $(v spill_gbs) GB/s, ratio ${ratio:-?}"
exit $fail
