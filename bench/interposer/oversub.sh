#!/bin/bash
# bench/interposer/oversub.sh - what an allocation that spills past its slice's device share
# (oversubscription, docs/interposer.md) costs on the fake driver, against the same allocation
# within the share and against no interposer, interleaved in one run (rounds: bare, share,
# spill).  Each side is tcu-probe's "loop:N": N x (cuMemAlloc_v2 1 MiB, cuMemFree_v2,
# cuMemGetInfo_v2) after a context; "spill" runs it in a slice whose device share the context
# fills (300 MiB), so that every allocation goes to cuMemAllocManaged, two cuMemAdvise and the
# host count.
# Figures: wall time per round of the loop (us), medians of the rounds, and the ratios
# spill/share and share/bare.  The fake driver's managed memory is host pages: this measures
# the interposer's path and the driver calls it adds, not what the memory costs a kernel on a
# real GPU (docs/interposer.md says that, from NVIDIA's figures).
#
#   bench/interposer/oversub.sh [BUILD_DIR]        (after `make` and the interposer's helpers)
#
# BENCH_ROUNDS (5) rounds of BENCH_LOOPS (20000) loop rounds per side.
set -eu
B=$(cd "${1:-build}" && pwd)
PROBE=$B/tests/interposer/tcu-probe
PRE=$B/lib/libtessel-cuda.so
for f in "$PROBE" "$PRE" "$B/tests/fake/libcuda.so.1"; do
    [ -e "$f" ] || { echo "oversub.sh: $f is missing (make; make $PROBE)" >&2; exit 1; }
done
ROUNDS=${BENCH_ROUNDS:-5}
LOOPS=${BENCH_LOOPS:-20000}
T=$(mktemp -d "${TMPDIR:-/tmp}/tessel-oversub-XXXXXX")
trap 'rm -rf "$T"' EXIT INT TERM
export LD_LIBRARY_PATH="$B/tests/fake" TESSEL_FAKE_GPUS=1xT4:8G TESSEL_FAKE_CTX_MEM=300M
unset TESSEL_SLICE TESSEL_CUDA_MEM_LIMIT TESSEL_CUDA_MEM_OVERSUBSCRIBE CUDA_VISIBLE_DEVICES

now_us() { echo $(($(date +%s%N) / 1000)); }
# side NAME ENV...: one round; appends the wall time in us; fails on a probe error.
side() {
    local name=$1 t0 t1 out
    shift
    t0=$(now_us)
    out=$(env "$@" "$PROBE" ctx "loop:$LOOPS" info)
    t1=$(now_us)
    case "$out" in *"failures=0"*) ;; *) echo "oversub.sh: $name: $out" >&2; exit 1 ;; esac
    echo $((t1 - t0)) >>"$T/$name"
}
median() { sort -n "$T/$1" | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

# The spill side must spill: the context (300 MiB) fills a 300 MiB share.
check=$(env LD_PRELOAD="$PRE" TESSEL_CUDA_MEM_LIMIT=300M TESSEL_CUDA_MEM_OVERSUBSCRIBE=1G \
    TESSEL_SLICE="$T/chk" "$PROBE" ctx alloc:mem:1M where)
case "$check" in *"where managed=1"*) ;; *) echo "oversub.sh: no spill: $check" >&2; exit 1 ;; esac

load0=$(cut -d' ' -f1-3 /proc/loadavg)
for ((r = 0; r < ROUNDS; r++)); do
    side bare
    side share LD_PRELOAD="$PRE" TESSEL_CUDA_MEM_LIMIT=1G TESSEL_SLICE="$T/s$r"
    side spill LD_PRELOAD="$PRE" TESSEL_CUDA_MEM_LIMIT=300M TESSEL_CUDA_MEM_OVERSUBSCRIBE=1G \
        TESSEL_SLICE="$T/o$r"
done
bare=$(median bare)
share=$(median share)
spill=$(median spill)
echo "oversub.sh: $ROUNDS rounds x $LOOPS x (alloc 1 MiB, free, meminfo), fake driver"
echo "load average before: $load0, after: $(cut -d' ' -f1-3 /proc/loadavg)"
awk -v b="$bare" -v s="$share" -v o="$spill" -v n="$LOOPS" 'BEGIN {
    printf "bare  (no interposer)       %8.2f us per round\n", b / n
    printf "share (within the share)    %8.2f us per round\n", s / n
    printf "spill (past it, managed)    %8.2f us per round\n", o / n
    printf "ratio spill/share %.2f, share/bare %.2f\n", o / s, s / b
}'
