#!/bin/sh
# tests/gpu/lazylib.sh - the real-GPU check of a library's first use in a context
# (docs/interposer.md, "A library's first use in a context"; review RV16b M4): a program built
# by nvcc whose kernel's module holds a __device__ array of BIG MiB (tests/gpu/lazy_lib.cu) runs
# in a slice of LIMIT; under lazy loading the driver places the module, the array included, in
# the context at the kernel's first use.  After the context is made and again after the first
# launch the script reads the driver's figure for the process (nvidia-smi) and the slice's
# count (tcu-slice), then the program asks for 64 MiB more.  Verdicts:
#   placed    the driver's figure grew by at least BIG MiB at the first launch (the module
#             really was placed then);
#   counted   after the launch the slice's count is within 32 MiB of the driver's figure;
#   refused   the 64 MiB after it is refused when the driver's figure is over LIMIT (else
#             allowed).
#
#   tests/gpu/lazylib.sh [--build DIR] [--limit 4G] [--big 1024] [--pre LIB] [--graph]
#
# --graph: the kernel is captured into a CUDA graph and the graph instantiated instead of the
# first launch (docs/interposer.md, "A graph's kernels"): the samples are taken after the
# instantiation, so "placed" says whether the driver places the library there (if it fails,
# the driver places it later, at the graph's launch) and "counted" whether the slice counts it.
#
# --pre: the interposer to preload (default DIR/lib/libtessel-cuda.so); for a side-by-side run
# against another build.  --big: below 2048 (a larger static array does not link: nvcc's
# small code model).  Needs nvcc, nvidia-smi.  Exit 0 when every verdict is PASS, 1
# otherwise, 2 when the host cannot run it.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=$HERE/../../build
LIMIT=4G
BIG=1024
PRE=
MODE=
while [ $# -gt 0 ]; do
    case $1 in
    --build) BUILD=${2:?}; shift 2 ;;
    --limit) LIMIT=${2:?}; shift 2 ;;
    --big) BIG=${2:?}; shift 2 ;;
    --pre) PRE=${2:?}; shift 2 ;;
    --graph) MODE=graph; shift ;;
    *) echo "usage: $0 [--build DIR] [--limit SIZE] [--big MIB] [--pre LIB] [--graph]" >&2; exit 2 ;;
    esac
done
[ -n "$PRE" ] || PRE=$BUILD/lib/libtessel-cuda.so
SLICE_TOOL=$BUILD/tests/interposer/tcu-slice
for f in "$PRE" "$SLICE_TOOL"; do
    [ -e "$f" ] || { echo "lazylib.sh: $f is missing (make)"; exit 2; }
done
command -v nvidia-smi >/dev/null || { echo "lazylib.sh: nvidia-smi is missing"; exit 2; }
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[ -x "$NVCC" ] || { echo "lazylib.sh: nvcc is missing"; exit 2; }
case $LIMIT in *G) LMIB=$((${LIMIT%G} * 1024)) ;; *M) LMIB=${LIMIT%M} ;; *) echo "lazylib.sh: --limit like 4G"; exit 2 ;; esac
T=$(mktemp -d "${TMPDIR:-/tmp}/tessel-lazylib-XXXXXX")
trap 'rm -rf "$T"' EXIT INT TERM
{ "$NVCC" -O2 -arch=native -DBIG_MIB="$BIG" -o "$T/lazy" "$HERE/lazy_lib.cu" ||
    "$NVCC" -O2 -DBIG_MIB="$BIG" -o "$T/lazy" "$HERE/lazy_lib.cu"; } 2>"$T/nvcc.err" ||
    { echo "lazylib.sh: nvcc failed:"; tail -n 5 "$T/nvcc.err"; exit 2; }
mkdir "$T/run"
nvidia-smi --query-compute-apps=pid --format=csv,noheader | grep -q . &&
    { echo "lazylib.sh: the GPU already runs other processes"; exit 2; }
env LD_PRELOAD="$PRE" TESSEL_SLICE="$T/slice" TESSEL_CUDA_MEM_LIMIT="$LIMIT" \
    "$T/lazy" "$T/run" $MODE >"$T/out" 2>"$T/err" &
P=$!
wait_file() { i=0; while [ ! -e "$T/run/$1" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done; [ -e "$T/run/$1" ]; }
# The driver's figure: the sum over the processes NVML lists (the GPU is otherwise idle; in a
# container NVML's PIDs are the host's, so the program's own PID would not match).
driver() { nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits |
    awk -F', *' '{ s += $2; n++ } END { if (n) print s }'; }
slice() { "$SLICE_TOOL" "$T/slice" | awk '/^device 0 /{ for (i = 1; i <= NF; i++) if ($i ~ /^used=/) { sub("used=", "", $i); printf "%d\n", $i / 1048576 } }'; }
wait_file inited || { echo "lazylib.sh: the program did not start:"; cat "$T/out" "$T/err"; exit 1; }
d0=$(driver); s0=$(slice)
touch "$T/run/launch"
wait_file ready || { echo "lazylib.sh: the launch did not finish:"; cat "$T/out" "$T/err"; exit 1; }
d1=$(driver); s1=$(slice)
touch "$T/run/go"
wait $P
cat "$T/out"
STEP="the first launch"
[ -n "$MODE" ] && STEP="the graph's instantiation"
echo "context made: driver ${d0:-?} MiB, slice ${s0:-?} MiB; after $STEP: driver ${d1:-?} MiB, slice ${s1:-?} MiB"
fail=0
verdict() { if [ "$2" -eq 0 ]; then echo "PASS $1: $3"; else echo "FAIL $1: $3"; fail=1; fi; }
verdict placed "$([ -n "$d0" ] && [ -n "$d1" ] && [ $((d1 - d0)) -ge "$BIG" ]; echo $?)" \
    "the driver's figure grew by $(( ${d1:-0} - ${d0:-0} )) MiB at $STEP (>= $BIG)"
diff=$(( ${s1:-0} - ${d1:-0} )); [ $diff -lt 0 ] && diff=$((-diff))
verdict counted "$([ -n "$s1" ] && [ $diff -le 32 ]; echo $?)" "|slice - driver| = $diff MiB after $STEP (<= 32)"
alloc=$(sed -n 's/^alloc=//p' "$T/out")
if [ "${d1:-0}" -gt "$LMIB" ]; then
    verdict refused "$([ "$alloc" = 2 ]; echo $?)" "64 MiB more with the driver at ${d1:-?} MiB over $LMIB: rc $alloc (2 = out of memory)"
else
    verdict refused "$([ "$alloc" = 0 ]; echo $?)" "64 MiB more with the driver at ${d1:-?} MiB within $LMIB: rc $alloc (0 = allowed)"
fi
exit $fail
