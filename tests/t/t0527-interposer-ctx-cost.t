#!/bin/sh
# t0527-interposer-ctx-cost.t - the slice counts what the driver counts for
# contexts: a cost measured per device and per kind (primary, cuCtxCreate),
# none of them the assumed 300 MiB; the slice's count for a process equals
# the driver's own per-process figure (the fake NVML's, what nvidia-smi
# shows; margin 0 bytes: every size here is a multiple of the fake's
# 512-byte granule); threads creating contexts at once are measured right;
# and a context larger than the room left is refused, so that at
# out-of-memory the driver's figure for the process is <= the limit.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/interposer/tcu.sh"
tcu_need_nvml
# Two devices; a primary context costs 612 MiB on GPU 0 (the first context
# seen on an H200) and 500 MiB on GPU 1, a cuCtxCreate context 90 / 70 MiB.
export TESSEL_FAKE_GPUS=2xH200:16G TESSEL_FAKE_STATE="$TMP/fake2"
export TESSEL_FAKE_CTX_MEM=612M,500M TESSEL_FAKE_CTX_MEM_CREATED=90M,70M
export TESSEL_CUDA_MEM_LIMIT=8G

dev_line() { "$HELPERS/tcu-slice" "$TESSEL_SLICE" | grep "^device $1 "; }

export TESSEL_SLICE="$TMP/slice1"
hold_probe a ctx:0 ctxcreate:2:0 ctxcreate:4:0 ctx:1 ctxcreate:2:1 alloc:mem:100M
d0=$(dev_line 0)
d1=$(dev_line 1)
is "$(val ctx_cost "$d0") $(val ctx_cost_created "$d0")" "$((612 * MiB)) $((90 * MiB))" \
    "GPU 0: primary context measured 612 MiB, cuCtxCreate context 90 MiB"
is "$(val ctx_cost "$d1") $(val ctx_cost_created "$d1")" "$((500 * MiB)) $((70 * MiB))" \
    "GPU 1: its own costs, 500 and 70 MiB"
t0=$(truth $pid 0)
t1=$(truth $pid 1)
is "$t0" $(((612 + 90 + 90) * MiB)) "the driver holds 792 MiB for the process on GPU 0"
is "$(val used "$d0")" "$t0" "GPU 0: the slice counts exactly what the driver holds"
is "$(val used "$d1")" "$t1" "GPU 1: the slice counts exactly what the driver holds ($t1: 500 + 70 + 100 MiB)"
release

# A second process of the same slice is charged the recorded costs at once.
out=$(probe ctx:0 ctxcreate:2:0 info)
is "$(val free "$(printf '%s\n' "$out" | grep '^info')")" $((8192 * MiB - 702 * MiB)) \
    "a later process: its primary (612 MiB) and created (90 MiB) contexts charged as measured"

# Eight threads create contexts at the same moment in a fresh slice: one
# measures, the others wait for its figure.
export TESSEL_SLICE="$TMP/slice2"
hold_probe b ctxrace:8
is "$(grep '^ctxrace' "$TMP/b")" "ctxrace ok=8" "8 contexts created by 8 threads at once"
d0=$(dev_line 0)
is "$(val ctx_cost_created "$d0")" $((90 * MiB)) "racing threads: the created context measured 90 MiB"
is "$(val used "$d0")" "$(truth $pid 0)" "racing threads: the slice counts what the driver holds (8 x 90 MiB)"
release

# Out of memory: a 700 MiB slice takes the 612 MiB primary context, not a
# created one beside it; a 500 MiB slice not even the primary context.
export TESSEL_SLICE="$TMP/slice3" TESSEL_CUDA_MEM_LIMIT=700M
hold_probe c ctx:0 ctxcreate:2:0
is "$(grep '^ctx' "$TMP/c" | tr '\n' ' ')" "ctx rc=0 ctxcreate 2 rc=2 " \
    "700 MiB: the primary context fits, a created one gets error 2"
t=$(truth $pid 0)
ok $([ "$t" -le $((700 * MiB)) ] && echo 0 || echo 1) "700 MiB: the driver holds $t bytes <= the limit"
is "$(val used "$(dev_line 0)")" "$t" "700 MiB: the slice counts what the driver holds"
release
export TESSEL_SLICE="$TMP/slice4" TESSEL_CUDA_MEM_LIMIT=500M
hold_probe d ctx:0 alloc:mem:1M
is "$(grep '^ctx' "$TMP/d")" "ctx rc=2" \
    "500 MiB: the 612 MiB primary context is refused with error 2 once measured"
is "$(truth $pid 0)" 0 "500 MiB: the driver holds nothing for the process afterwards"
is "$(val used "$(dev_line 0)")" 0 "500 MiB: nothing stays charged"
release
done_testing
