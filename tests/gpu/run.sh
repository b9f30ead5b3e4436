#!/bin/sh
# tests/gpu/run.sh - the real-GPU proof that slices hold (issue #12 item 5).
#
#   tests/gpu/run.sh [--limit 4G] [--seconds 6] [--build DIR] [--rows LIST]
#                    [--no-doc] [--doc FILE] [--keep DIR] [--simulate] [--no-interposer]
#
# One command on a GPU host: builds what it needs (libtessel-cuda.so and
# tcu-slice, plain C), runs every row time-boxed, prints one line per row
# (figures, threshold, verdict), writes the run into docs/gpu-conformance.md
# and exits 1 when any row FAILs (2: the host is not usable: no GPU, GPU busy
# with other processes, build failed).  Needs python3 with torch, cupy, jax
# and nvcc for every row; a row whose framework is missing FAILs with
# "missing: NAME".  The rows are described in docs/gpu-conformance.md.
#
#   --limit SIZE     memory limit of each slice (default 4G)
#   --seconds N      length of each compute run (default 6; the first second
#                    is ramp-up and not counted)
#   --rows LIST      comma list of groups to run (default all): memory,train,
#                    fork,graphs,exec,kill,view,compute,multigpu,ckpt
#   --no-doc         do not write docs/gpu-conformance.md (--doc FILE: where)
#   --keep DIR       copy every row's workload output and figures (out, fig,
#                    diag, t*, apps) to DIR/ROW/ at the end, for a diagnosis
#   --simulate       SIMULATED mode, for CI without a GPU: the fake driver of
#                    tests/fake (build/tests/fake), only the rows that need no
#                    framework (framework-free ctypes and tests/interposer
#                    programs); every line says SIMULATED, nothing is written
#                    to docs.  It checks this script's plumbing, not a GPU.
#   --no-interposer  self-test of the verdicts: run the slice rows without
#                    LD_PRELOAD; rows that depend on enforcement must FAIL.
#                    Never writes docs.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
BUILD=$SRC/build
LIMIT=4G
SECS=6
ALLROWS=memory,train,fork,graphs,exec,kill,view,compute,multigpu,ckpt
ROWS=$ALLROWS
SIM=0
NOPRE=0
WRITE_DOC=1
KEEP=""
DOC=$SRC/docs/gpu-conformance.md
ARGS="$*"
parse() {
    while [ $# -gt 0 ]; do
        case $1 in
        --limit) LIMIT=${2:?}; shift 2 ;;
        --seconds) SECS=${2:?}; shift 2 ;;
        --build) BUILD=$(cd "${2:?}" 2>/dev/null && pwd) || { echo "run.sh: no directory $2" >&2; exit 2; }; shift 2 ;;
        --rows) ROWS=${2:?}; shift 2 ;;
        --no-doc) WRITE_DOC=0; shift ;;
        --doc) DOC=${2:?}; shift 2 ;;
        --keep) KEEP=${2:?}; shift 2 ;;
        --simulate) SIM=1; shift ;;
        --no-interposer) NOPRE=1; shift ;;
        *) echo "usage: $0 [--limit SIZE] [--seconds N] [--build DIR] [--rows LIST] [--no-doc] [--doc FILE] [--keep DIR] [--simulate] [--no-interposer]" >&2
           exit 2 ;;
        esac
    done
}
parse "$@"
# A GPU run skips the first second of each compute run: 3 s at least.  The
# fake's timeline needs no ramp-up: SIMULATED runs may be 1 s (CI).
MINSECS=3
[ "$SIM" = 1 ] && MINSECS=1
case $SECS in '' | *[!0-9]*) echo "run.sh: --seconds '$SECS': a whole number of seconds >= $MINSECS" >&2; exit 2 ;; esac
[ "$SECS" -ge $MINSECS ] || { echo "run.sh: --seconds '$SECS': a whole number of seconds >= $MINSECS" >&2; exit 2; }
echo "$LIMIT" | grep -qx '[1-9][0-9]*[MGT]' || { echo "run.sh: --limit '$LIMIT': a size like 4G, 4096M" >&2; exit 2; }
for g in $(echo "$ROWS" | tr ',' ' '); do
    case ,$ALLROWS, in
    *,"$g",*) ;;
    *) echo "run.sh: --rows: unknown group '$g'" >&2; exit 2 ;;
    esac
done

# --- the outer run: prefix (SIMULATED) or keep (for the doc) every line ----
if [ -z "${TESSEL_GPU_INNER:-}" ]; then
    OUTER=$(mktemp -d /tmp/tessel-gpu-run.XXXXXX) || exit 2
    trap 'rm -rf "$OUTER"' EXIT
    trap 'exit 130' INT TERM
    if [ "$SIM" = 1 ]; then
        { TESSEL_GPU_INNER=1 "$0" "$@" 2>&1; echo $? >"$OUTER/rc"; } | sed -u 's/^/SIMULATED /'
        exit "$(cat "$OUTER/rc" 2>/dev/null || echo 2)"
    fi
    { TESSEL_GPU_INNER=1 "$0" "$@" 2>&1; echo $? >"$OUTER/rc"; } | tee "$OUTER/report"
    rc=$(cat "$OUTER/rc" 2>/dev/null || echo 2)
    if [ "$WRITE_DOC" = 1 ] && [ "$NOPRE" = 0 ] && [ "$rc" -le 1 ]; then
        "${PYTHON:-python3}" "$HERE/write_doc.py" "$DOC" "$OUTER/report" "tests/gpu/run.sh${ARGS:+ $ARGS}" &&
            echo "run.sh: results written to $DOC"
    fi
    exit "$rc"
fi

# --- the inner run ----------------------------------------------------------
# The interpreter itself, not a wrapper (a pyenv shim is a shell script that
# costs more than the interpreter to start, at every sample point).
PY=$("${PYTHON:-python3}" -c 'import sys; print(sys.executable)' 2>/dev/null)
if [ ! -x "$PY" ]; then
    echo "run.sh: no python3" >&2
    exit 2
fi
MiB=1048576
to_bytes() {
    case $1 in
    *T) echo $((${1%T} * 1099511627776)) ;;
    *G) echo $((${1%G} * 1073741824)) ;;
    *M) echo $((${1%M} * 1048576)) ;;
    *) echo "$1" ;;
    esac
}
LIMIT_B=$(to_bytes "$LIMIT")
LIMIT_MIB=$((LIMIT_B / MiB))
TOL_MIB=32            # the slice's count vs the driver's, at every sampled point
ROW_T=120             # seconds a memory/behaviour workload may take
SAMPLE_MIB=512        # a sample point every SAMPLE_MIB held (and at the OOM)
[ "$SIM" = 1 ] && SAMPLE_MIB=2048 # fewer on a shared CI machine
TMP=$(mktemp -d /tmp/tessel-gpu.XXXXXX) || exit 2
KIDS=""
cleanup() {
    for k in $KIDS; do kill -9 "$k" 2>/dev/null; done
    if [ -n "$KEEP" ]; then
        (cd "$TMP" && find . -maxdepth 2 -type f \( -name out -o -name fig -o -name diag \
            -o -name 't[0-9]*' -o -name apps -o -name rc \) | while read -r f; do
            mkdir -p "$KEEP/$(dirname "$f")" && cp "$f" "$KEEP/$f"
        done)
    fi
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Build what the suite needs (plain C, no daemon dependencies).
OREL=$BUILD
NEED="$BUILD/lib/libtessel-cuda.so $BUILD/tests/interposer/tcu-slice"
[ "$SIM" = 1 ] && NEED="$NEED $BUILD/tests/fake/libcuda.so.1 $BUILD/tests/fake/libnvidia-ml.so.1 $BUILD/tests/interposer/tcu-load"
missing_build=""
for f in $NEED; do [ -e "$f" ] || missing_build="$missing_build $f"; done
if [ -n "$missing_build" ]; then
    echo "# building:$missing_build"
    # shellcheck disable=SC2086 # a list of paths made here
    make -C "$SRC" -s O="$OREL" $missing_build >"$TMP/make.log" 2>&1 || {
        tail -n 20 "$TMP/make.log"
        echo "run.sh: build failed" >&2
        exit 2
    }
fi
PRE=$BUILD/lib/libtessel-cuda.so
SLICETOOL=$BUILD/tests/interposer/tcu-slice
[ "$NOPRE" = 1 ] && PRE=""
# A sanitizer build of the interposer (make SANITIZE=1, CI) goes into
# programs not built with the sanitizer (python3, nvidia-smi): its runtime
# must be loaded first, and LeakSanitizer would report the interpreter's
# own allocations at exit.
if [ -n "$PRE" ]; then
    asan=$(ldd "$PRE" 2>/dev/null | awk '/libasan/ { print $3 }')
    if [ -n "$asan" ]; then
        PRE="$asan:$PRE"
        export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0:verify_asan_link_order=0"
    fi
fi

unset TESSEL_SLICE TESSEL_CUDA_MEM_LIMIT TESSEL_CUDA_CORE_LIMIT TESSEL_CUDA_CORE_MODE \
    TESSEL_CUDA_CORE_PRIORITY LD_PRELOAD CUDA_VISIBLE_DEVICES PYTORCH_CUDA_ALLOC_CONF \
    XLA_PYTHON_CLIENT_PREALLOCATE XLA_PYTHON_CLIENT_MEM_FRACTION
mkdir -p "$TMP/registry"
export PYTHONDONTWRITEBYTECODE=1 # no __pycache__ in tests/gpu
export TESSEL_DEVICE_REGISTRY="$TMP/registry"
if [ "$SIM" = 1 ]; then
    # The fake driver: one simulated 80 GiB GPU (TESSEL_FAKE_GPUS if set)
    # whose contexts cost 300 MiB,
    # one shared state (timeline, memory, processes) for every process here.
    export LD_LIBRARY_PATH="$BUILD/tests/fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export TESSEL_FAKE_GPUS="${TESSEL_FAKE_GPUS:-1xSimGPU:80G:132}" TESSEL_FAKE_CTX_MEM=300M
    export TESSEL_FAKE_STATE="$TMP/fake-state" TESSEL_FAKE_EVENT_ORDER=device
fi

# --- header -----------------------------------------------------------------
pyver() { "$PY" -c "import $1 as m; print(m.__version__)" 2>/dev/null || echo "missing"; }
NVCC=$(command -v nvcc || { [ -x /usr/local/cuda/bin/nvcc ] && echo /usr/local/cuda/bin/nvcc; } || true)
echo "# date:     $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "# machine:  $(uname -n), $(uname -sr), $(nproc) CPUs, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1)"
echo "# tessel:   $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$SRC" diff --quiet HEAD 2>/dev/null || echo ' (+ local changes)')"
if [ "$SIM" = 1 ]; then
    echo "# gpu:      SIMULATED: fake driver $BUILD/tests/fake, TESSEL_FAKE_GPUS=$TESSEL_FAKE_GPUS (no GPU)"
    GPU_COUNT=0
else
    command -v nvidia-smi >/dev/null || { echo "run.sh: no nvidia-smi: not a GPU host (--simulate for the fake driver)" >&2; exit 2; }
    echo "# gpu:      $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | paste -sd';' -)"
    echo "# driver:   $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1), CUDA $(nvidia-smi | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' | head -n 1)"
    echo "# python:   $("$PY" -c 'import sys; print(sys.version.split()[0])'), torch $(pyver torch) (CUDA $("$PY" -c 'import torch; print(torch.version.cuda)' 2>/dev/null || echo -)), cupy $(pyver cupy), jax $(pyver jax)"
    echo "# nvcc:     ${NVCC:+$("$NVCC" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')}${NVCC:-missing}"
    GPU_COUNT=$("$PY" "$HERE/nvml_view.py" --count) || { echo "run.sh: NVML does not answer" >&2; exit 2; }
fi
busy=$("$PY" "$HERE/nvml_view.py" | awk '$4 != "procs=0"') || exit 2
if [ -n "$busy" ]; then
    echo "run.sh: the GPU runs other processes; the driver's figures would include them:" >&2
    echo "$busy" >&2
    exit 2
fi
echo "# limit:    $LIMIT ($LIMIT_B bytes) per slice; slice vs driver within $TOL_MIB MiB; compute runs ${SECS} s (first 1 s not counted); rows $ROWS"
[ "$NOPRE" = 1 ] && echo "# SELF-TEST: --no-interposer: slices are NOT enforced; the enforcement rows must FAIL"
printf '%-26s %-5s %s\n' row verdict "figures | threshold"

NFAIL=0
GRAPH="" # set while the graph rows run (tenants)
# row NAME VERDICT FIGURES THRESHOLD
row() {
    [ "$2" = FAIL ] && NFAIL=$((NFAIL + 1))
    printf '%-26s %-5s %s | need: %s\n' "$1" "$2" "$3" "$4"
}
na() { printf '%-26s %s\n' "$1" "not applicable: $2"; }
want() { case ,$ROWS, in *,"$1",*) return 0 ;; esac; return 1; }
mib() { awk -v b="$1" 'BEGIN { if (b == "" || b == "na") print "?"; else printf "%.0f", b / 1048576 }'; }
val() { printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p" | tail -n 1; }
# Run CMD in a slice: inslice SLICE-FILE [VAR=VALUE...] CMD ARG...
inslice() {
    _s=$1
    shift
    env TESSEL_SLICE="$_s" TESSEL_CUDA_MEM_LIMIT="$LIMIT" LD_PRELOAD="$PRE" "$@"
}
tbox() { timeout -k 5 "$@"; }
# The driver's memory of all processes on NVML device $1, and the slice's
# count of its device record $2 (bytes; "na" / "none" when unknown; "all":
# the sum over every device / record).
driver_sum() { env -u LD_PRELOAD -u TESSEL_SLICE "$PY" "$HERE/nvml_view.py" --sum "$1" 2>/dev/null || echo na; }
slice_used() {
    "$SLICETOOL" "$1" 2>/dev/null | awk -v dev="$2" '
        $1 == "device" && (dev == "all" || $2 == dev) {
            for (i = 3; i <= NF; i++) if ($i ~ /^used=/) { s += substr($i, 6); n++ } }
        END { if (n) printf "%.0f\n", s; else print "none" }'
}
# wait_for FILE PATTERN SECONDS: until FILE has a line matching PATTERN.
wait_for() {
    _w=0
    while ! grep -qs "$2" "$1"; do
        _w=$((_w + 1))
        [ $_w -gt $(($3 * 20)) ] && return 1
        sleep 0.05
    done
}

# sampled DIR NVMLDEV SLICEDEV SLICE-FILE [VAR=VALUE...] CMD...: run CMD (a
# workload of the gpuwork.py protocol) in the slice SLICE-FILE (limit
# $LIMIT) with --sample-dir, in the background; at each of its
# sample points record "held oom driver slice" into DIR/fig.  Output in
# DIR/out, exit status in DIR/rc.
sampled() {
    _d=$1 _nd=$2 _sd=$3 _sf=$4
    shift 4
    mkdir -p "$_d/s"
    : >"$_d/fig"
    tbox "$ROW_T" env TESSEL_SLICE="$_sf" TESSEL_CUDA_MEM_LIMIT="$LIMIT" LD_PRELOAD="$PRE" \
        "$@" --sample-dir "$_d/s" --every "$SAMPLE_MIB" >"$_d/out" 2>&1 &
    _p=$!
    _n=1
    while :; do
        if [ -e "$_d/s/sample.$_n" ]; then
            _h=$(sed -n 's/.*held=\([0-9]*\).*/\1/p' "$_d/s/sample.$_n")
            _o=$(sed -n 's/.*oom=\([01]\).*/\1/p' "$_d/s/sample.$_n")
            echo "$_h $_o $(driver_sum "$_nd") $(slice_used "$_sf" "$_sd")" >>"$_d/fig"
            : >"$_d/s/ack.$_n"
            _n=$((_n + 1))
            continue
        fi
        kill -0 "$_p" 2>/dev/null || break
        sleep 0.02
    done
    wait "$_p"
    echo $? >"$_d/rc"
}

# Figures of a sampled run: "points=N oom_driver=B maxdiff=B oom=0|1"
# (maxdiff: the largest |slice - driver| over the points, "na" if unknown).
figures() {
    awk -v tol="$TOL_MIB" '
        { n++; if ($3 == "na" || $4 == "none") bad = 1; else { d = $4 - $3; if (d < 0) d = -d; if (d > m) m = d }
          if ($2 == 1) { oomd = $3; oom = 1 } }
        END { printf "points=%d oom_driver=%s maxdiff=%s oom=%d\n", n, (oom ? oomd : "none"), (bad ? "na" : m + 0), oom + 0 }' "$1"
}

# mem_verdict NAME DIR [CHECK_VIEW]: the memory rows' verdict.
mem_verdict() {
    _name=$1 _d=$2
    if grep -q '^missing: ' "$_d/out"; then
        row "$_name" FAIL "$(grep -m1 '^missing: ' "$_d/out")" "the framework installed"
        return
    fi
    _f=$(figures "$_d/fig")
    _pts=$(val points "$_f") _od=$(val oom_driver "$_f") _md=$(val maxdiff "$_f")
    _view=$(grep -m1 '^view ' "$_d/out")
    _t=$(val total "$_view") _fr=$(val free "$_view")
    _held=$(grep '^held=' "$_d/out" | tail -n 1)
    _h=$(val held "$_held") _oom=$(val oom "$_held")
    _v=PASS
    [ "${_oom:-0}" = 1 ] || _v=FAIL
    [ "$_pts" -ge 2 ] || _v=FAIL
    case $_od in '' | none | na) _v=FAIL ;; *) [ "$_od" -le "$LIMIT_B" ] || _v=FAIL ;; esac
    case $_md in '' | na) _v=FAIL ;; *) [ "$_md" -le $((TOL_MIB * MiB)) ] || _v=FAIL ;; esac
    if [ "${3:-view}" = view ]; then [ "${_t:-0}" = "$LIMIT_B" ] || _v=FAIL; fi
    row "$_name" $_v "oom=${_oom:-?} held $(mib "$_h") MiB, driver at OOM $(mib "$_od") MiB, max |slice-driver| $(mib "$_md") MiB over $_pts points, view total/free $(mib "$_t")/$(mib "$_fr") MiB" \
        "clean OOM, driver <= $LIMIT_MIB MiB, |slice-driver| <= $TOL_MIB MiB at >= 2 points$([ "${3:-view}" = view ] && echo ", view total = $LIMIT_MIB MiB")"
    [ $_v = PASS ] || grep -v '^view \|^held=' "$_d/out" | tail -n 3 | sed 's/^/#   /'
}

# The framework-free fill (driver API by ctypes), everywhere.
DRVPY=$HERE/drv_fill.py
CTX_FREE=""   # the free memory a lone process sees in a fresh slice

# --- memory -----------------------------------------------------------------
if want memory; then
    d=$TMP/m-drv
    sampled "$d" 0 0 "$d/slice" "$PY" "$DRVPY"
    mem_verdict mem-driver-ctypes "$d"
    CTX_FREE=$(val free "$(grep -m1 '^view ' "$d/out")")
    if [ "$SIM" = 0 ]; then
        d=$TMP/m-torch
        sampled "$d" 0 0 "$d/slice" "$PY" "$HERE/torch_fill.py"
        mem_verdict mem-pytorch "$d"
        d=$TMP/m-torchx
        sampled "$d" 0 0 "$d/slice" PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True \
            "$PY" "$HERE/torch_fill.py"
        mem_verdict mem-pytorch-expandable "$d"
        d=$TMP/m-cupy
        sampled "$d" 0 0 "$d/slice" "$PY" "$HERE/cupy_fill.py"
        mem_verdict mem-cupy "$d"
        # The view JAX sizes itself from is checked in the rows' figures
        # (NVML inside the process); with preallocation the arrays come out
        # of XLA's reservation, so the view's free is what it reserved from.
        d=$TMP/m-jaxf
        sampled "$d" 0 0 "$d/slice" XLA_PYTHON_CLIENT_PREALLOCATE=false \
            XLA_PYTHON_CLIENT_MEM_FRACTION=1.0 "$PY" "$HERE/jax_fill.py"
        mem_verdict mem-jax-prealloc-false "$d"
        d=$TMP/m-jaxt
        sampled "$d" 0 0 "$d/slice" XLA_PYTHON_CLIENT_PREALLOCATE=true \
            XLA_PYTHON_CLIENT_MEM_FRACTION=0.9 "$PY" "$HERE/jax_fill.py"
        mem_verdict mem-jax-prealloc-true "$d"
        d=$TMP/m-nvcc
        mkdir -p "$d"
        if [ -z "$NVCC" ]; then
            row mem-nvcc FAIL "missing: nvcc" "nvcc on PATH or /usr/local/cuda/bin"
        elif ! "$NVCC" -o "$TMP/fill" "$HERE/fill.cu" >"$d/build.log" 2>&1; then
            row mem-nvcc FAIL "nvcc failed: $(head -n 1 "$d/build.log")" "fill.cu compiles"
        else
            sampled "$d" 0 0 "$d/slice" "$TMP/fill"
            mem_verdict mem-nvcc "$d"
        fi
    fi
    # Two processes fill one slice at once; both stop at the error and hold
    # while the driver's and the slice's figures are read.
    d=$TMP/m-two
    mkdir -p "$d/a" "$d/b"
    tbox "$ROW_T" env TESSEL_SLICE="$d/slice" TESSEL_CUDA_MEM_LIMIT="$LIMIT" LD_PRELOAD="$PRE" \
        "$PY" "$DRVPY" --go "$d/go" --sample-dir "$d/a" --every 1048576 >"$d/a/out" 2>&1 &
    pa=$!
    tbox "$ROW_T" env TESSEL_SLICE="$d/slice" TESSEL_CUDA_MEM_LIMIT="$LIMIT" LD_PRELOAD="$PRE" \
        "$PY" "$DRVPY" --go "$d/go" --sample-dir "$d/b" --every 1048576 >"$d/b/out" 2>&1 &
    pb=$!
    # Both have their context before either allocates.
    wait_for "$d/a/out" 'ready\|rror' "$ROW_T"
    wait_for "$d/b/out" 'ready\|rror' "$ROW_T"
    : >"$d/go"
    _i=0
    while [ ! -e "$d/a/sample.1" ] || [ ! -e "$d/b/sample.1" ]; do
        kill -0 $pa 2>/dev/null || [ -e "$d/a/sample.1" ] || break
        kill -0 $pb 2>/dev/null || [ -e "$d/b/sample.1" ] || break
        sleep 0.02
    done
    drv=$(driver_sum 0)
    slc=$(slice_used "$d/slice" 0)
    : >"$d/a/ack.1"
    : >"$d/b/ack.1"
    wait $pa $pb
    ha=$(val held "$(grep '^held=' "$d/a/out")") hb=$(val held "$(grep '^held=' "$d/b/out")")
    oa=$(val oom "$(grep '^held=' "$d/a/out")") ob=$(val oom "$(grep '^held=' "$d/b/out")")
    v=PASS
    [ "${oa:-0}" = 1 ] && [ "${ob:-0}" = 1 ] || v=FAIL
    case $drv in na | '') v=FAIL; diff=na ;; *)
        [ "$drv" -le "$LIMIT_B" ] || v=FAIL
        case $slc in none) v=FAIL; diff=na ;; *)
            diff=$((slc > drv ? slc - drv : drv - slc))
            [ "$diff" -le $((TOL_MIB * MiB)) ] || v=FAIL ;;
        esac ;;
    esac
    row mem-two-processes $v "both OOM=${oa:-?}/${ob:-?}, held $(mib "$ha")+$(mib "$hb") MiB, driver (both) $(mib "$drv") MiB, |slice-driver| $(mib "$diff") MiB" \
        "both a clean OOM, driver <= $LIMIT_MIB MiB, |slice-driver| <= $TOL_MIB MiB"
fi
if [ -z "$CTX_FREE" ]; then
    # Later rows compare with what a lone process gets: measure it.
    d=$TMP/m-ctx
    mkdir -p "$d"
    tbox "$ROW_T" env TESSEL_SLICE="$d/slice" TESSEL_CUDA_MEM_LIMIT="$LIMIT" LD_PRELOAD="$PRE" "$PY" "$DRVPY" --hold 0 </dev/null >"$d/out" 2>&1
    CTX_FREE=$(val free "$(grep -m1 '^view ' "$d/out")")
fi
CTX_FREE=${CTX_FREE:-0}
CTX=$((LIMIT_B - CTX_FREE)) # what one context costs the slice
SLACK=$((64 * MiB))         # one allocation step

# --- PyTorch training until OOM -------------------------------------------
if want train && [ "$SIM" = 0 ]; then
    d=$TMP/train
    sampled "$d" 0 0 "$d/slice" "$PY" "$HERE/torch_train_oom.py"
    if grep -q '^missing: ' "$d/out"; then
        row train-pytorch-oom FAIL "$(grep -m1 '^missing: ' "$d/out")" "the framework installed"
    else
        l=$(grep '^batch=' "$d/out" | tail -n 1)
        od=$(awk '$2 == 1 { print $3 }' "$d/fig" | tail -n 1)
        rc=$(cat "$d/rc")
        v=PASS
        [ "$rc" = 0 ] && [ "$(val oom "$l")" = 1 ] && [ "$(val recovered "$l")" = 1 ] || v=FAIL
        grep -q 'Traceback' "$d/out" && v=FAIL
        case $od in '' | na) v=FAIL ;; *) [ "$od" -le "$LIMIT_B" ] || v=FAIL ;; esac
        row train-pytorch-oom $v "exit $rc, OOM at batch $(val batch "$l") (last fitting $(val last_ok "$l")), recovered=$(val recovered "$l"), reserved $(mib "$(val held "$l")") MiB, driver at OOM $(mib "$od") MiB" \
            "torch.OutOfMemoryError only, exit 0, one more step at the last batch, driver <= $LIMIT_MIB MiB"
        [ $v = PASS ] || tail -n 3 "$d/out" | sed 's/^/#   /'
    fi
fi

# --- fork after NVML, multiprocessing, DataLoader -----------------------------
if want fork; then
    d=$TMP/fork
    mkdir -p "$d"
    tbox "$ROW_T" "$PY" "$HERE/fork_nvml.py" >"$d/out.bare" 2>&1
    rb=$?
    tbox "$ROW_T" env TESSEL_SLICE="$d/slice" TESSEL_CUDA_MEM_LIMIT="$LIMIT" LD_PRELOAD="$PRE" \
        "$PY" "$HERE/fork_nvml.py" >"$d/out.in" 2>&1
    ri=$?
    ib=$(val cuda_initialised_before_fork "$(grep '^parent' "$d/out.bare")")
    ii=$(val cuda_initialised_before_fork "$(grep '^parent' "$d/out.in")")
    cb=$(grep '^child' "$d/out.bare" | cut -d' ' -f2-)
    ci=$(grep '^child' "$d/out.in" | cut -d' ' -f2-)
    nt=$(val total "$(grep '^nvml' "$d/out.in")")
    v=PASS
    [ "$rb" = 0 ] && [ "$ri" = 0 ] && [ "${ib:-x}" = "${ii:-y}" ] || v=FAIL
    [ "${nt:-0}" = "$LIMIT_B" ] || v=FAIL
    row fork-after-nvml $v "outside: exit $rb, CUDA initialised by the NVML query ${ib:-?}, child ${cb:-?}; in slice: exit $ri, initialised ${ii:-?}, child ${ci:-?}, NVML total $(mib "$nt") MiB" \
        "as outside: the query leaves CUDA uninitialised, the child's cuInit/alloc succeed; NVML total = $LIMIT_MIB MiB"
    if [ "$SIM" = 0 ]; then
        for mode in spawn fork; do
            tbox "$ROW_T" env TESSEL_SLICE="$d/slice.$mode" TESSEL_CUDA_MEM_LIMIT="$LIMIT" LD_PRELOAD="$PRE" \
                "$PY" "$HERE/torch_mp.py" $mode >"$d/mp.$mode" 2>&1
            r=$?
            l=$(grep '^mode=\|^missing' "$d/mp.$mode" | tail -n 1)
            v=PASS
            [ "$r" = 0 ] && [ "$(val ok "$l")" = 1 ] || v=FAIL
            for t in $(val totals "$l" | tr ',' ' '); do [ "$t" = "$LIMIT_B" ] || v=FAIL; done
            [ -n "$(val totals "$l")" ] || v=FAIL
            row "multiprocessing-$mode" $v "exit $r, ${l:-no output}" \
                "2 workers compute correctly (sums 3145728) and see total = $LIMIT_B (in the slice)"
            [ $v = PASS ] || tail -n 3 "$d/mp.$mode" | sed 's/^/#   /'
        done
        tbox "$ROW_T" env TESSEL_SLICE="$d/slice.dl" TESSEL_CUDA_MEM_LIMIT="$LIMIT" LD_PRELOAD="$PRE" \
            "$PY" "$HERE/torch_dataloader.py" >"$d/dl" 2>&1
        r=$?
        l=$(grep '^batches=\|^missing' "$d/dl" | tail -n 1)
        v=PASS
        [ "$r" = 0 ] && [ "$(val ok "$l")" = 1 ] || v=FAIL
        row dataloader-workers $v "exit $r, ${l:-no output}" "2 forked workers, pinned memory, exact sum on the GPU"
        [ $v = PASS ] || tail -n 3 "$d/dl" | sed 's/^/#   /'
    fi
fi

# --- an exec'd child ----------------------------------------------------------
# H holds 1 GiB in the slice; P allocates 512 MiB, then execs a fill.  The
# fill must get what H and the contexts leave (the slice is shared, not
# reset), and P's 512 MiB back (the driver freed it at exec).
if want exec; then
    d=$TMP/exec
    mkdir -p "$d"
    tbox "$ROW_T" env TESSEL_SLICE="$d/slice" TESSEL_CUDA_MEM_LIMIT="$LIMIT" LD_PRELOAD="$PRE" \
        "$PY" "$DRVPY" --hold 1024 --until "$d/stop" >"$d/h" 2>&1 &
    ph=$!
    KIDS="$KIDS $ph"
    if wait_for "$d/h" 'holding\|rror' "$ROW_T" && grep -q holding "$d/h"; then
        sampled "$d" 0 0 "$d/slice" "$PY" "$DRVPY" --hold 512 --then "$PY" "$HERE/drv_fill.py"
    else
        echo "holder did not start: $(tail -n 1 "$d/h")" >"$d/out"
        : >"$d/fig"
    fi
    f=$(figures "$d/fig")
    od=$(val oom_driver "$f") md=$(val maxdiff "$f")
    h=$(val held "$(grep '^held=' "$d/out" | tail -n 1)")
    o=$(val oom "$(grep '^held=' "$d/out" | tail -n 1)")
    lo=$((LIMIT_B - 1024 * MiB - 2 * CTX - SLACK))
    hi=$((LIMIT_B - 1024 * MiB - CTX))
    v=PASS
    grep -q '^exec ' "$d/out" || v=FAIL
    [ "${o:-0}" = 1 ] && [ "${h:-0}" -ge "$lo" ] && [ "${h:-0}" -le "$hi" ] || v=FAIL
    case $od in none | na | '') v=FAIL ;; *) [ "$od" -le "$LIMIT_B" ] || v=FAIL ;; esac
    case $md in na | '') v=FAIL ;; *) [ "$md" -le $((TOL_MIB * MiB)) ] || v=FAIL ;; esac
    row exec-child $v "exec'd fill held $(mib "$h") MiB (oom=${o:-?}) beside 1024 MiB, driver at OOM $(mib "$od") MiB, max |slice-driver| $(mib "$md") MiB; context $(mib "$CTX") MiB" \
        "$(mib "$lo")..$(mib "$hi") MiB (limit - 1024 - contexts: the 512 MiB before exec returned, the holder kept), driver <= $LIMIT_MIB MiB, |diff| <= $TOL_MIB MiB"
    [ $v = PASS ] || tail -n 3 "$d/out" | sed 's/^/#   /'
    : >"$d/stop"
    wait $ph 2>/dev/null
fi

# --- a SIGKILLed process's memory comes back ---------------------------------
if want kill; then
    d=$TMP/kill
    mkdir -p "$d"
    big=$(((LIMIT_B - 2 * CTX) * 3 / 4 / MiB))
    tbox "$ROW_T" env TESSEL_SLICE="$d/slice" TESSEL_CUDA_MEM_LIMIT="$LIMIT" LD_PRELOAD="$PRE" \
        "$PY" "$DRVPY" --hold "$big" --until "$d/never" >"$d/k" 2>&1 &
    pk=$!
    KIDS="$KIDS $pk"
    if wait_for "$d/k" 'holding\|rror' "$ROW_T" && grep -q holding "$d/k"; then
        kill -9 "$(val pid "$(grep holding "$d/k")")"
        wait $pk 2>/dev/null
        before=$(slice_used "$d/slice" 0)
        sampled "$d" 0 0 "$d/slice" "$PY" "$DRVPY"
    else
        echo "victim did not start: $(tail -n 1 "$d/k")" >"$d/out"
        : >"$d/fig"
        before=none
    fi
    f=$(figures "$d/fig")
    od=$(val oom_driver "$f") md=$(val maxdiff "$f")
    h=$(val held "$(grep '^held=' "$d/out" | tail -n 1)")
    o=$(val oom "$(grep '^held=' "$d/out" | tail -n 1)")
    lo=$((CTX_FREE - SLACK))
    v=PASS
    [ "${o:-0}" = 1 ] && [ "${h:-0}" -ge "$lo" ] || v=FAIL
    case $od in none | na | '') v=FAIL ;; *) [ "$od" -le "$LIMIT_B" ] || v=FAIL ;; esac
    case $md in na | '') v=FAIL ;; *) [ "$md" -le $((TOL_MIB * MiB)) ] || v=FAIL ;; esac
    row sigkill-returns-memory $v "killed a holder of $big MiB (slice then said $(mib "$before") MiB), next process held $(mib "$h") MiB (oom=${o:-?}), driver at OOM $(mib "$od") MiB, max |diff| $(mib "$md") MiB" \
        ">= $(mib "$lo") MiB (a lone process's free - 64), driver <= $LIMIT_MIB MiB, |diff| <= $TOL_MIB MiB"
    [ $v = PASS ] || tail -n 3 "$d/out" | sed 's/^/#   /'
fi

# --- the view from inside a slice (nvidia-smi; NVML in SIMULATED mode) -------
# A holder in the slice has 1 GiB; a process outside any slice has limit +
# 1 GiB.  Inside, total must be the limit, used the slice's count, and the
# process list must not add up to more than the total it shows.
if want view; then
    d=$TMP/view
    mkdir -p "$d"
    outside=$((LIMIT_MIB + 1024))
    tbox "$ROW_T" "$PY" "$DRVPY" --hold "$outside" --until "$d/stop" >"$d/o" 2>&1 &
    po=$!
    tbox "$ROW_T" env TESSEL_SLICE="$d/slice" TESSEL_CUDA_MEM_LIMIT="$LIMIT" LD_PRELOAD="$PRE" \
        "$PY" "$DRVPY" --hold 1024 --until "$d/stop" >"$d/h" 2>&1 &
    ph=$!
    KIDS="$KIDS $po $ph"
    wait_for "$d/o" 'holding\|rror' "$ROW_T"
    wait_for "$d/h" 'holding\|rror' "$ROW_T"
    slc=$(slice_used "$d/slice" 0)
    # view_verdict NAME TOOL: the verdict of one tool's view (t u np ps l set).
    view_verdict() {
        v=PASS
        [ "${t:-0}" = "$LIMIT_B" ] || v=FAIL
        case $slc in none) v=FAIL; diff=na ;; *)
            diff=$((slc > ${u:-0} ? slc - ${u:-0} : ${u:-0} - slc))
            [ "$diff" -le $((TOL_MIB * MiB)) ] || v=FAIL ;;
        esac
        case $ps in '' | na) v=FAIL ;; *) [ "$ps" -le "${t:-0}" ] && [ "$ps" -ge $((1024 * MiB)) ] || v=FAIL ;; esac
        row "$1" $v "$2: total $(mib "$t") MiB, used $(mib "$u") MiB (slice $(mib "$slc")), $np processes listed with $(mib "$ps") MiB (outside the slice: $outside MiB)" \
            "total = $LIMIT_MIB MiB, |used-slice| <= $TOL_MIB MiB, listed processes' memory 1024..$LIMIT_MIB MiB"
        [ $v = PASS ] || echo "#   $l"
    }
    # nvidia-smi (r580) reads the process list through NVML's private export table
    # (nvmlInternalGetExportTable), not the public entry points the interposer filters
    # (docs/gpu-conformance.md): its row and the public API's (what nvitop, gpustat, pynvml
    # and DCGM call) are separate.
    if [ "$SIM" = 0 ]; then
        l=$(inslice "$d/slice" nvidia-smi -i 0 --query-gpu=memory.total,memory.used --format=csv,noheader,nounits 2>&1 | head -n 1)
        t=$(($(echo "$l" | cut -d, -f1 | tr -dc 0-9) * MiB)) u=$(($(echo "$l" | cut -d, -f2 | tr -dc 0-9) * MiB))
        inslice "$d/slice" nvidia-smi -i 0 --query-compute-apps=pid,used_memory --format=csv,noheader,nounits >"$d/apps" 2>&1
        np=$(grep -c '[0-9]' "$d/apps")
        ps=$(($(awk -F, '{ s += $2 } END { print s + 0 }' "$d/apps") * MiB))
        view_verdict view-in-slice nvidia-smi
    fi
    l=$(inslice "$d/slice" "$PY" "$HERE/nvml_view.py" 2>&1 | head -n 1)
    t=$(val total "$l") u=$(val used "$l") np=$(val procs "$l") ps=$(val procsum "$l")
    if [ "$SIM" = 1 ]; then view_verdict view-in-slice "NVML (nvml_view.py)"
    else view_verdict view-in-slice-nvml "NVML (nvml_view.py)"; fi
    : >"$d/stop"
    wait $po $ph 2>/dev/null
fi

# --- compute ------------------------------------------------------------------
# tenants DIR SPEC...: run one workload per SPEC at once (same go file),
# each in its own slice; SPEC: none (no interposer), mem (a slice with a
# memory limit only, no compute limit), L (strict L %),
# L:shared, idle:L:shared (holds a context, launches nothing).  Prints the
# iterations/s of each tenant in order ("-" for idle tenants, "?" if none).
tenants() {
    _d=$1
    shift
    mkdir -p "$_d"
    _i=0
    _pids=""
    # tenants runs in a $(...) subshell: its workloads go with it.
    trap 'kill $_pids 2>/dev/null' EXIT
    trap 'exit 130' INT TERM
    for _s in "$@"; do
        _i=$((_i + 1))
        _o=$_d/t$_i
        case $_s in
        none) set -- env ;;
        mem) set -- env TESSEL_SLICE="$_d/slice$_i" TESSEL_CUDA_MEM_LIMIT="$LIMIT" LD_PRELOAD="$PRE" ;;
        idle:*) _l=${_s#idle:}; set -- env TESSEL_SLICE="$_d/slice$_i" LD_PRELOAD="$PRE" \
            TESSEL_CUDA_CORE_LIMIT="${_l%%:*}" TESSEL_CUDA_CORE_MODE="${_l#*:}" ;;
        *:*) set -- env TESSEL_SLICE="$_d/slice$_i" LD_PRELOAD="$PRE" \
            TESSEL_CUDA_CORE_LIMIT="${_s%%:*}" TESSEL_CUDA_CORE_MODE="${_s#*:}" ;;
        *) set -- env TESSEL_SLICE="$_d/slice$_i" LD_PRELOAD="$PRE" \
            TESSEL_CUDA_CORE_LIMIT="$_s" TESSEL_CUDA_CORE_MODE=strict ;;
        esac
        case $_s in
        idle:*) tbox $((SECS + ROW_T)) "$@" "$PY" "$DRVPY" --hold 64 --until "$_d/stop" >"$_o" 2>&1 & ;;
        *) if [ "$SIM" = 1 ]; then
               tbox $((SECS + ROW_T)) "$@" "$BUILD/tests/interposer/tcu-load" --loop=sync --us=10000 \
                   --go="$_d/go" --ms=$((SECS * 1000)) >"$_o" 2>&1 &
           else
               tbox $((SECS + ROW_T)) "$@" "$PY" "$HERE/torch_load.py" --seconds "$SECS" --go "$_d/go" \
                   ${GRAPH:+--graph} >"$_o" 2>&1 &
           fi ;;
        esac
        _pids="$_pids $!"
        echo "$_s" >"$_o.spec"
    done
    for _j in $(seq 1 $_i); do
        wait_for "$_d/t$_j" 'ready\|holding\|missing\|rror' "$ROW_T" || true
    done
    # What the GPU and the slices did meanwhile (no verdict): diag_line.
    _sl=""
    _j=0
    for _j in $(seq 1 $_i); do
        case $(cat "$_d/t$_j.spec") in none) ;; *) _sl="$_sl $_d/slice$_j" ;; esac
    done
    # shellcheck disable=SC2086 # one word per slice file
    "$PY" "$HERE/gpu_sampler.py" --tcu-slice "$SLICETOOL" --stop "$_d/stop" --go "$_d/go" --skip 1 \
        --length $((SECS - 1)) $_sl >"$_d/diag" 2>&1 &
    _pids="$_pids $!"
    echo sampler >"$_d/t$((_i + 1)).spec"
    : >"$_d/go"
    # Idle tenants hold until the others are done.
    _n=0
    for _p in $_pids; do
        _n=$((_n + 1))
        case $(cat "$_d/t$_n.spec") in idle:* | sampler) continue ;; esac
        wait "$_p"
    done
    : >"$_d/stop"
    wait
    _out=""
    for _j in $(seq 1 $_i); do
        case $(cat "$_d/t$_j.spec") in idle:*) _out="$_out -"; continue ;; esac
        if [ "$SIM" = 1 ]; then
            _l=$(grep '^load ' "$_d/t$_j")
            _r=$(awk -v n="$(val launches "$_l")" -v s="$(val span "$_l")" 'BEGIN { if (n == "" || s + 0 <= 0) print "?"; else printf "%.2f", n * 1e9 / s }')
        else
            _r=$(val its "$(grep '^its=' "$_d/t$_j")")
        fi
        _out="$_out ${_r:-?}"
    done
    echo "${_out# }"
}
# diag_line DIR: the sampler's figures of a tenants run, as a comment line.
diag_line() { echo "#   $(basename "$1"): $(tail -n 1 "$1/diag" 2>/dev/null)"; }
# busy_of DIR: the device's mean NVML utilisation over a compute run's window (the sampler's
# util=, outside any slice) as a fraction, "?" if none.  pct F: a fraction as a percentage.
busy_of() { sed -n 's/.*diag util=\([0-9.]*\)%.*/\1/p' "$1/diag" 2>/dev/null | tail -n 1 | awk '{ if ($1 == "") print "?"; else printf "%.3f\n", $1 / 100 } END { if (NR == 0) print "?" }'; }
pct() { awk -v f="$1" 'BEGIN { if (f == "?") print "?"; else printf "%.1f", f * 100 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "?" || b == "?" || b + 0 <= 0) print "?"; else printf "%.3f", a / b }'; }
within() { awk -v r="$1" -v w="$2" -v t="$3" 'BEGIN { exit !(r != "?" && r >= w - t && r <= w + t) }'; }
miss() { grep -h -m1 '^missing: ' "$1"/t* 2>/dev/null | head -n 1; }

if want graphs && [ "$SIM" = 0 ]; then
    GRAPH=1
    base=$(tenants "$TMP/g0" none)
    m=$(miss "$TMP/g0")
    for lim in none 50; do
        if [ $lim = none ]; then
            r=$(tenants "$TMP/g-$lim" mem)
            w=1.00 tol=0.05 name=graphs-no-limit th="ratio >= 0.95"
        else
            r=$(tenants "$TMP/g-$lim" "$lim")
            w=0.50 tol=0.05 name=graphs-limit-50 th="device busy 50 +- 5 % (NVML, outside the slice; the ratio is shown, not judged: the clock rises at lower load)"
        fi
        ok=$(val graph_ok "$(grep -h '^graph_ok' "$TMP/g-$lim"/t1)")
        q=$(ratio "$r" "$base")
        v=PASS
        [ "${ok:-0}" = 1 ] || v=FAIL
        busy=""
        if [ $lim = none ]; then awk -v q="$q" 'BEGIN { exit !(q != "?" && q >= 0.95) }' || v=FAIL
        else
            u=$(busy_of "$TMP/g-$lim")
            within "$u" $w $tol || v=FAIL
            busy="; device busy $(pct "$u") % (NVML)"
        fi
        if [ -n "$m" ]; then row $name FAIL "$m" "the framework installed"; else
            row $name $v "replay == eager: ${ok:-?}, $r it/s vs $base alone unlimited, ratio $q$busy" "replay correct, $th"; fi
        diag_line "$TMP/g-$lim"
    done
    GRAPH=""
fi

if want compute; then
    solo=$(tenants "$TMP/c0" none)
    m=$(miss "$TMP/c0")
    echo "# compute baseline: one workload alone, no interposer: $solo it/s"
    diag_line "$TMP/c0"
    for lim in 25 50 75; do
        r=$(tenants "$TMP/c$lim" "$lim")
        q=$(ratio "$r" "$solo")
        w=$(awk -v l=$lim 'BEGIN { printf "%.2f", l / 100 }')
        u=$(busy_of "$TMP/c$lim")
        v=PASS
        within "$u" "$w" 0.05 || v=FAIL
        if [ -n "$m" ]; then row "compute-strict-$lim" FAIL "$m" "the framework installed"; else
            row "compute-strict-$lim" $v "$r it/s alone in a strict $lim % slice, solo $solo: ratio $q; device busy $(pct "$u") % (NVML)" \
                "device busy $lim +- 5 % (NVML, outside the slice; the ratio is shown, not judged: the clock rises at lower load)"; fi
        diag_line "$TMP/c$lim"
    done
    for mix in 30/70 50/50 25/25/50 25/25/25/25; do
        # shellcheck disable=SC2046 # split the mix into its shares
        set -- $(echo "$mix" | tr '/' ' ')
        n=$#
        specs="$*"
        nones=$(for _x in $specs; do printf 'none '; done)
        # shellcheck disable=SC2086 # one word per tenant
        b=$(tenants "$TMP/b-$n-$(echo "$mix" | tr / -)" $nones)
        # shellcheck disable=SC2086 # one word per tenant
        r=$(tenants "$TMP/t-$(echo "$mix" | tr / -)" $specs)
        bsum=$(echo "$b" | awk '{ for (i = 1; i <= NF; i++) if ($i == "?") { print "?"; exit } else s += $i; printf "%.2f\n", s }')
        rsum=$(echo "$r" | awk '{ for (i = 1; i <= NF; i++) if ($i == "?") { print "?"; exit } else s += $i; printf "%.2f\n", s }')
        v=PASS
        qs=""
        ps=""
        i=0
        shares=$(echo "$specs" | awk '{ for (i = 1; i <= NF; i++) s += $i; print s }')
        for l in $specs; do
            i=$((i + 1))
            x=$(echo "$r" | cut -d' ' -f$i)
            q=$(ratio "$x" "$solo")
            qs="$qs${qs:+/}$q"
            p=$(ratio "$x" "$rsum")
            ps="$ps${ps:+/}$p"
            within "$p" "$(awk -v l="$l" -v t="$shares" 'BEGIN { printf "%.3f", l / t }')" 0.05 || v=FAIL
        done
        s=$(ratio "$rsum" "$bsum")
        awk -v s="$s" 'BEGIN { exit !(s != "?" && s >= 0.95) }' || v=FAIL
        if [ -n "$m" ]; then row "compute-tenants-$mix" FAIL "$m" "the framework installed"; else
            row "compute-tenants-$mix" $v "each/solo $qs; parts $ps; sum $rsum it/s vs $bsum unlimited together: $s" \
                "each tenant's part of the sum = its share of the shares +- 0.05, sum >= 0.95 x unlimited together"; fi
        diag_line "$TMP/b-$n-$(echo "$mix" | tr / -)"
        diag_line "$TMP/t-$(echo "$mix" | tr / -)"
    done
    r=$(tenants "$TMP/shared" 30:shared idle:70:shared)
    x=$(echo "$r" | cut -d' ' -f1)
    q=$(ratio "$x" "$solo")
    v=PASS
    awk -v q="$q" 'BEGIN { exit !(q != "?" && q >= 0.40) }' || v=FAIL
    if [ -n "$m" ]; then row compute-shared-idle FAIL "$m" "the framework installed"; else
        row compute-shared-idle $v "30 % shared beside an idle 70 % shared tenant: $x it/s, ratio $q of solo" \
            "ratio >= 0.40 (more than its 30 % share)"; fi
fi

# --- the driver's checkpoint API: a round trip (issue 21, docs/suspend.md) -----
# A target holds 512 MiB filled with a pattern; another process locks and checkpoints it
# (NVML must then list it holding nothing), restores and unlocks it; the target then finds
# every byte at the same address.  This is the driver's own behaviour, which the fake driver
# models for CI and on which a suspend that frees the GPU rests; `tessel suspend` does not
# use it yet.  Needs driver 570 or later (older: "missing: cuCheckpointProcess...").
CKPY=$HERE/ckpt_round.py
ckpt_row() { # NAME DIR CMD...: start the target CMD, drive the round trip, give the verdict
    _n=$1 _d=$2
    shift 2
    mkdir -p "$_d"
    tbox "$ROW_T" "$@" >"$_d/t" 2>&1 &
    _p=$!
    KIDS="$KIDS $_p"
    : >"$_d/c"
    if wait_for "$_d/t" 'holding\|missing\|rror' "$ROW_T" && grep -q holding "$_d/t"; then
        tbox "$ROW_T" "$PY" "$CKPY" ctl "$(val pid "$(grep '^holding' "$_d/t")")" >"$_d/c" 2>&1
    fi
    : >"$_d/go"
    wait $_p 2>/dev/null
    _m=$(grep -h -m1 '^missing: ' "$_d/t" "$_d/c" 2>/dev/null | head -n 1)
    _hp=$(val ptr "$(grep '^holding' "$_d/t")")
    _vp=$(val ptr "$(grep '^verified' "$_d/t")")
    _ok=$(val ok "$(grep '^verified' "$_d/t")")
    _held=$(val held "$(grep '^checkpointed' "$_d/c")")
    _st=$(val states "$(grep '^restored' "$_d/c")")
    v=PASS
    [ "$_st" = RUNNING,LOCKED,CHECKPOINTED,LOCKED,RUNNING ] || v=FAIL
    [ "${_held:-x}" = 0 ] || v=FAIL
    { [ "${_ok:-0}" = 1 ] && [ -n "$_hp" ] && [ "$_hp" = "$_vp" ]; } || v=FAIL
    if [ -n "$_m" ]; then
        row "$_n" FAIL "$_m" "driver 570 or later and the program's framework"
    else
        row "$_n" $v "states ${_st:-?}; NVML while checkpointed: $(mib "${_held:-na}") MiB; contents ok=${_ok:-?} at ${_hp:-?} -> ${_vp:-?}" \
            "states RUNNING,LOCKED,CHECKPOINTED,LOCKED,RUNNING; 0 MiB while checkpointed; every byte back at the same address"
    fi
    [ $v = PASS ] || tail -n 3 "$_d/t" "$_d/c" | sed 's/^/#   /'
}
if want ckpt; then
    ckpt_row ckpt-round-trip-drv "$TMP/ck-drv" "$PY" "$CKPY" target drv 512 --until "$TMP/ck-drv/go"
    if [ "$SIM" = 1 ]; then
        na ckpt-round-trip-torch "SIMULATED (needs PyTorch on a GPU)"
        na ckpt-round-trip-nvcc "SIMULATED (needs nvcc and a GPU)"
    else
        ckpt_row ckpt-round-trip-torch "$TMP/ck-torch" "$PY" "$CKPY" target torch 512 --until "$TMP/ck-torch/go"
        mkdir -p "$TMP/ck-nvcc"
        if [ -z "$NVCC" ]; then
            row ckpt-round-trip-nvcc FAIL "missing: nvcc" "nvcc installed"
        elif ! "$NVCC" -o "$TMP/ckpt_target" "$HERE/ckpt_target.cu" >"$TMP/ck-nvcc/build.log" 2>&1; then
            row ckpt-round-trip-nvcc FAIL "nvcc failed: $(tail -n 1 "$TMP/ck-nvcc/build.log")" "ckpt_target.cu builds"
        else
            ckpt_row ckpt-round-trip-nvcc "$TMP/ck-nvcc" "$TMP/ckpt_target" 512 "$TMP/ck-nvcc/go"
        fi
    fi
fi

# --- several GPUs, CUDA_VISIBLE_DEVICES reordered -----------------------------
if want multigpu; then
    if [ "$SIM" = 1 ]; then
        na multi-gpu-reordered "SIMULATED (the fake driver ignores CUDA_VISIBLE_DEVICES)"
    elif [ "$GPU_COUNT" -lt 2 ]; then
        na multi-gpu-reordered "$GPU_COUNT GPU"
    else
        # CUDA device 0 is physical (NVML) device 1 and the other way round.
        # Figures: the sums over all GPUs (driver) and all slice records,
        # as the interposer may register both visible devices in the slice.
        for cdev in 0 1; do
            d=$TMP/mg$cdev
            sampled "$d" all all "$d/slice" CUDA_VISIBLE_DEVICES=1,0 CUDA_DEVICE_ORDER=PCI_BUS_ID \
                "$PY" "$DRVPY" --dev $cdev
            mem_verdict "multi-gpu-1,0-cuda$cdev" "$d"
        done
    fi
fi

echo "# $NFAIL row(s) FAIL"
[ "$NFAIL" = 0 ]
