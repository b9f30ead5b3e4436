#!/bin/sh
# tests/gpu/compute.sh - does a real GPU hold a slice to its compute share?
# Run on any GPU host (not in CI); prints one table row per workload and
# limit.  Results go to docs/gpu-conformance.md.
#
#   tests/gpu/compute.sh [--build build] [--seconds 10]
#
# Two workloads, each alone on the GPU, unlimited (no interposer) and then
# in a fresh slice (LD_PRELOAD=$BUILD/lib/libtessel-cuda.so, strict mode)
# at TESSEL_CUDA_CORE_LIMIT = 25, 50 and 75 %:
#   matmul  PyTorch: 4096x4096 fp16 matmuls in a loop, synchronising every
#           50 (launch-heavy)
#   sync    PyTorch: one matmul then torch.cuda.synchronize(), in a loop
#           (launch-then-synchronize)
# Reported per run:
#   it/s      iterations per second over the last SECONDS-2 s
#   util      the GPU's busy share over the same time, from nvidia-smi's
#             utilization.gpu sampled every 200 ms (the achieved share)
#   ratio     it/s / unlimited it/s (should be close to limit/100)
#   verdict   PASS when util is within 5 points of the limit (and the
#             ratio within 0.05 of limit/100); SKIP without PyTorch.
set -u
BUILD=build
SECS=10
while [ $# -gt 0 ]; do
    case $1 in
    --build) BUILD=$2; shift 2 ;;
    --seconds) SECS=$2; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--seconds N]" >&2; exit 2 ;;
    esac
done
PRE=$(cd "$BUILD" 2>/dev/null && pwd)/lib/libtessel-cuda.so
[ -e "$PRE" ] || { echo "compute: $PRE not built (make)" >&2; exit 2; }
command -v nvidia-smi >/dev/null || { echo "compute: no nvidia-smi: not a GPU host" >&2; exit 2; }
PY=${PYTHON:-python3}
TMP=$(mktemp -d /tmp/tessel-gpu-compute.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

cat >"$TMP/load.py" <<'PYEOF'
import sys, time
import torch
kind, secs = sys.argv[1], float(sys.argv[2])
a = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
b = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
for _ in range(20):
    a @ b
torch.cuda.synchronize()
start = time.time()
n = 0
t_from = None
while time.time() - start < secs:
    if t_from is None and time.time() - start >= 2:
        t_from, n = time.time(), 0
    if kind == "matmul":
        for _ in range(50):
            a @ b
        torch.cuda.synchronize()
        n += 50
    else:
        a @ b
        torch.cuda.synchronize()
        n += 1
print("its=%.2f" % (n / (time.time() - t_from)))
PYEOF

if ! "$PY" -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    echo "workload limit it/s util ratio verdict"
    echo "matmul - - - - SKIP (no PyTorch with CUDA)"
    echo "sync - - - - SKIP (no PyTorch with CUDA)"
    exit 0
fi

echo "# date:   $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "# gpu:    $(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)"
echo "# driver: $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1)"
printf '%-8s %6s %10s %6s %6s %s\n' workload limit it/s util ratio verdict

# run KIND LIMIT: prints "its util"
run() {
    kind=$1 limit=$2
    nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits -lms 200 \
        >"$TMP/util" 2>/dev/null &
    smi=$!
    if [ "$limit" = none ]; then
        out=$("$PY" "$TMP/load.py" "$kind" "$SECS")
    else
        out=$(TESSEL_SLICE="$TMP/slice.$kind.$limit" TESSEL_CUDA_CORE_LIMIT=$limit \
            LD_PRELOAD="$PRE" "$PY" "$TMP/load.py" "$kind" "$SECS")
    fi
    kill $smi 2>/dev/null
    wait $smi 2>/dev/null
    # The samples of the measured part: skip the first 2 s (10 samples).
    util=$(tail -n +11 "$TMP/util" | awk '{s += $1; n++} END {printf "%.1f", n ? s / n : -1}')
    echo "${out#its=} $util"
}
for kind in matmul sync; do
    set -- $(run "$kind" none)
    base=$1
    printf '%-8s %6s %10s %6s %6s %s\n' "$kind" none "$1" "$2" 1.00 -
    for limit in 25 50 75; do
        set -- $(run "$kind" $limit)
        ratio=$(awk -v a="$1" -v b="$base" 'BEGIN { printf "%.2f", a / b }')
        verdict=$(awk -v u="$2" -v r="$ratio" -v l="$limit" \
            'BEGIN { print (u >= l - 5 && u <= l + 5 && r >= l / 100 - 0.05 && r <= l / 100 + 0.05) ? "PASS" : "FAIL" }')
        printf '%-8s %6s %10s %6s %6s %s\n' "$kind" "$limit" "$1" "$2" "$ratio" "$verdict"
    done
done
