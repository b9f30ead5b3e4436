#!/bin/sh
# tests/gpu/conformance.sh - does a real GPU obey its slice?  Run on any GPU
# host (not in CI): prints one table row per workload.
#
#   tests/gpu/conformance.sh [--limit 4G] [--build build]
#
# For each workload it runs in a fresh slice of LIMIT (default 4 GiB) with
# LD_PRELOAD=$BUILD/lib/libtessel-cuda.so, allocates in 64 MiB steps until the
# out-of-memory error, and reports:
#   oom_at   bytes the workload held when it got its out-of-memory error
#            (the figure to be within 64 MiB of the limit; the context
#            is charged too, so oom_at + context ~ limit)
#   view     total/free the workload was told before allocating
#            (torch.cuda.mem_get_info, cudaMemGetInfo, NVML...)
#   verdict  PASS when the error came within 64 MiB of the limit and the
#            view's total equals the limit; SKIP when the framework is
#            not installed.
# Workloads: PyTorch (default allocator, and expandable segments = VMM),
# CuPy, JAX, an nvcc-built cudaMalloc program, two processes sharing one
# slice, and nvidia-smi inside a slice.
set -u
LIMIT=4G
BUILD=build
while [ $# -gt 0 ]; do
    case $1 in
    --limit) LIMIT=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    *) echo "usage: $0 [--limit SIZE] [--build DIR]" >&2; exit 2 ;;
    esac
done
PRE=$(cd "$BUILD" 2>/dev/null && pwd)/lib/libtessel-cuda.so
[ -e "$PRE" ] || { echo "conformance: $PRE not built (make)" >&2; exit 2; }
command -v nvidia-smi >/dev/null || { echo "conformance: no nvidia-smi: not a GPU host" >&2; exit 2; }
TMP=$(mktemp -d /tmp/tessel-gpu.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
PY=${PYTHON:-python3}
to_bytes() {
    case $1 in
    *T) echo $(( ${1%T} * 1099511627776 )) ;;
    *G) echo $(( ${1%G} * 1073741824 )) ;;
    *M) echo $(( ${1%M} * 1048576 )) ;;
    *) echo "$1" ;;
    esac
}
LIMIT_B=$(to_bytes "$LIMIT")
SLACK=$((64 * 1048576))

echo "# date:   $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "# gpu:    $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | head -n 1)"
echo "# driver: $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1)"
echo "# limit:  $LIMIT ($LIMIT_B bytes), slack allowed 64 MiB"
printf '%-28s %14s %14s %14s  %s\n' workload oom_at view_total view_free verdict

# row NAME OUTPUT: OUTPUT has lines "total=T free=F" and "held=H oom=1".
row() {
    name=$1
    out=$2
    t=$(printf '%s\n' "$out" | sed -n 's/.*total=\([0-9]*\).*/\1/p' | head -n 1)
    f=$(printf '%s\n' "$out" | sed -n 's/.*free=\([0-9]*\).*/\1/p' | head -n 1)
    h=$(printf '%s\n' "$out" | sed -n 's/.*held=\([0-9]*\).*/\1/p' | tail -n 1)
    oom=$(printf '%s\n' "$out" | sed -n 's/.*oom=\([01]\).*/\1/p' | tail -n 1)
    if printf '%s\n' "$out" | grep -q '^SKIP'; then
        printf '%-28s %14s %14s %14s  %s\n' "$name" - - - "$(printf '%s\n' "$out" | grep '^SKIP' | head -n 1)"
        return
    fi
    verdict=FAIL
    # The context is charged too: the error must come once held + context
    # reaches the limit, i.e. held >= limit - context - 64 MiB, and never
    # beyond the limit.  free (before allocating) = limit - context.
    if [ -n "$h" ] && [ "${oom:-0}" = 1 ] && [ -n "$t" ] && [ "$t" = "$LIMIT_B" ] &&
        [ "$h" -le "$LIMIT_B" ] && [ -n "$f" ] && [ "$h" -ge $((f - SLACK)) ]; then
        verdict=PASS
    fi
    printf '%-28s %14s %14s %14s  %s\n' "$name" "${h:--}" "${t:--}" "${f:--}" "$verdict"
    [ "$verdict" = PASS ] || printf '%s\n' "$out" | sed 's/^/#   /' | tail -n 5
}

inslice() { # inslice SLICE-FILE CMD...: run in a fresh slice
    s=$1
    shift
    env TESSEL_CUDA_MEM_LIMIT="$LIMIT" TESSEL_SLICE="$s" LD_PRELOAD="$PRE" "$@" 2>&1
}

# --- PyTorch ---------------------------------------------------------------
cat >"$TMP/torch_fill.py" <<'PYEOF'
import sys
try:
    import torch
except Exception as e:
    print("SKIP torch not installed"); sys.exit(0)
if not torch.cuda.is_available():
    print("SKIP torch sees no GPU"); sys.exit(0)
torch.cuda.init()
free, total = torch.cuda.mem_get_info()
print(f"total={total} free={free}")
held, bufs, step = 0, [], 64 << 20
try:
    while True:
        bufs.append(torch.empty(step, dtype=torch.uint8, device="cuda"))
        held += step
except torch.cuda.OutOfMemoryError:
    print(f"held={held} oom=1")
    sys.exit(0)
print(f"held={held} oom=0")
PYEOF
row "pytorch" "$(inslice "$TMP/s1" "$PY" "$TMP/torch_fill.py")"
row "pytorch expandable_segments" "$(PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True inslice "$TMP/s2" "$PY" "$TMP/torch_fill.py")"

# --- CuPy -----------------------------------------------------------------
cat >"$TMP/cupy_fill.py" <<'PYEOF'
import sys
try:
    import cupy
except Exception:
    print("SKIP cupy not installed"); sys.exit(0)
cupy.cuda.set_allocator(None)  # no pool: every array is one cudaMalloc
free, total = cupy.cuda.runtime.memGetInfo()
print(f"total={total} free={free}")
held, bufs, step = 0, [], 64 << 20
try:
    while True:
        bufs.append(cupy.empty(step, dtype=cupy.uint8)); held += step
except cupy.cuda.memory.OutOfMemoryError:
    print(f"held={held} oom=1"); sys.exit(0)
except cupy.cuda.runtime.CUDARuntimeError as e:
    print(f"held={held} oom={1 if 'out of memory' in str(e).lower() else 0}"); sys.exit(0)
PYEOF
row "cupy" "$(inslice "$TMP/s3" "$PY" "$TMP/cupy_fill.py")"

# --- JAX ------------------------------------------------------------------
# XLA sizes its allocator from the free memory it is told about (75 % of it
# by default); with the fraction at 100 % and no preallocation, filling must
# stop at the slice.  Its total/free come from NVML inside the process.
cat >"$TMP/jax_fill.py" <<'PYEOF'
import ctypes, os, sys
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
os.environ.setdefault("XLA_PYTHON_CLIENT_MEM_FRACTION", "1.0")
try:
    import jax, jax.numpy as jnp
except Exception:
    print("SKIP jax not installed"); sys.exit(0)
if not any(d.platform == "gpu" for d in jax.devices()):
    print("SKIP jax sees no GPU"); sys.exit(0)
jnp.zeros((1,)).block_until_ready()
class Mem(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]
nv = ctypes.CDLL("libnvidia-ml.so.1")
nv.nvmlInit_v2()
h = ctypes.c_void_p()
nv.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h))
m = Mem()
nv.nvmlDeviceGetMemoryInfo(h, ctypes.byref(m))
print(f"total={m.total} free={m.free}")
held, bufs, step = 0, [], 64 << 20
try:
    while True:
        bufs.append(jnp.zeros((step,), dtype=jnp.uint8).block_until_ready()); held += step
except Exception as e:
    t = str(e)
    print(f"held={held} oom={1 if 'RESOURCE_EXHAUSTED' in t or 'out of memory' in t.lower() else 0}")
PYEOF
row "jax" "$(inslice "$TMP/s4" "$PY" "$TMP/jax_fill.py")"

# --- nvcc-built cudaMalloc program ----------------------------------------
cat >"$TMP/fill.cu" <<'CUEOF'
#include <cstdio>
#include <cuda_runtime.h>
int main() {
    size_t f = 0, t = 0;
    if (cudaMemGetInfo(&f, &t) != cudaSuccess) { printf("SKIP no CUDA device\n"); return 0; }
    printf("total=%zu free=%zu\n", t, f);
    size_t held = 0, step = 64ull << 20;
    void *p;
    cudaError_t e;
    while ((e = cudaMalloc(&p, step)) == cudaSuccess) held += step;
    printf("held=%zu oom=%d\n", held, e == cudaErrorMemoryAllocation);
    return 0;
}
CUEOF
if command -v nvcc >/dev/null && nvcc -o "$TMP/fill" "$TMP/fill.cu" >/dev/null 2>&1; then
    out=$(inslice "$TMP/s5" "$TMP/fill")
    row "nvcc cudaMalloc" "$out"
    # The free one process saw: the limit minus one context (used below).
    NVCC_FREE=$(printf '%s\n' "$out" | sed -n 's/.*free=\([0-9]*\).*/\1/p' | head -n 1)
else
    row "nvcc cudaMalloc" "SKIP nvcc not installed"
fi

# --- two processes in one slice -------------------------------------------
# Both fill the same slice at once: together (with their two contexts) they
# must stop within 64 MiB of the limit, never beyond it.
if [ -x "$TMP/fill" ]; then
    inslice "$TMP/s6" "$TMP/fill" >"$TMP/p1" &
    inslice "$TMP/s6" "$TMP/fill" >"$TMP/p2" &
    wait
    if grep -q '^SKIP' "$TMP/p1" "$TMP/p2"; then
        printf '%-28s %14s %14s %14s  %s\n' "two processes, one slice" - - - "$(grep -h '^SKIP' "$TMP/p1" | head -n 1)"
    else
        h1=$(sed -n 's/.*held=\([0-9]*\).*/\1/p' "$TMP/p1")
        h2=$(sed -n 's/.*held=\([0-9]*\).*/\1/p' "$TMP/p2")
        t=$(sed -n 's/.*total=\([0-9]*\).*/\1/p' "$TMP/p1")
        # Each process's context: limit - the free it saw when it was alone
        # is not knowable here; bound it by the single-process run above.
        ctx=$((LIMIT_B - ${NVCC_FREE:-$LIMIT_B}))
        v=FAIL
        if [ -n "$h1" ] && [ -n "$h2" ] && grep -q 'oom=1' "$TMP/p1" && grep -q 'oom=1' "$TMP/p2"; then
            sum=$((h1 + h2))
            [ "$sum" -le "$LIMIT_B" ] && [ $((sum + 2 * ctx)) -ge $((LIMIT_B - 2 * SLACK)) ] && v=PASS
        fi
        printf '%-28s %14s %14s %14s  %s\n' "two processes, one slice" "${sum:--}" "${t:--}" - \
            "$v (sum of both + 2 contexts of $ctx)"
    fi
else
    printf '%-28s %14s %14s %14s  %s\n' "two processes, one slice" - - - "SKIP needs nvcc"
fi

# --- nvidia-smi inside a slice --------------------------------------------
t=$(inslice "$TMP/s7" nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -n 1)
want=$((LIMIT_B / 1048576))
v=FAIL
[ "$(printf '%s' "$t" | tr -d ' ')" = "$want" ] && v=PASS
printf '%-28s %14s %14s %14s  %s\n' "nvidia-smi in a slice" - "${t} MiB" - "$v (want $want MiB)"
