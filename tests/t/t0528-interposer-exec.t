#!/bin/sh
# t0528-interposer-exec.t - a process that execs (a launcher that execs
# python, a shell's exec) keeps its pid and its slice: the old image's
# charges end with that image (the driver freed its memory at exec), the new
# image registers as a fresh process of the same slice, and the limit stays
# the slice's, not a fresh full one.  The fake driver frees an image's
# memory at exec too; the slice's count is compared with its per-process
# figure (nvidia-smi's).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/interposer/tcu.sh"
tcu_need_nvml
export TESSEL_CUDA_MEM_LIMIT=1G TESSEL_SLICE="$TMP/slice"
ctx=$((64 * MiB))

mkfifo "$TMP/hold"
# The old image: a context and 300 MiB; the new image: a context, then it
# fills the slice with 100 MiB allocations and holds.
(LD_PRELOAD="$PRE" exec "$PROBE" ctx alloc:mem:300M info \
    exec:ctx,info,fill:mem:100M,info,hold <"$TMP/hold" >"$TMP/out" 2>&1) &
pid=$!
exec 3>"$TMP/hold"
wait_until holding "$TMP/out"
infos=$(grep '^info' "$TMP/out")
is "$(val free "$(printf '%s\n' "$infos" | sed -n 1p)")" $((1024 * MiB - ctx - 300 * MiB)) \
    "before exec: the context and 300 MiB are charged"
is "$(val free "$(printf '%s\n' "$infos" | sed -n 2p)")" $((1024 * MiB - ctx)) \
    "after exec: the old image's charges are gone, the new context is charged"
is "$(val n "$(grep '^fill' "$TMP/out")")" 9 \
    "the new image gets the slice's limit: 9 x 100 MiB beside its context, not more"
show=$("$HELPERS/tcu-slice" "$TESSEL_SLICE")
is "$(printf '%s\n' "$show" | grep '^procs' | cut -d' ' -f2)" 1 "one slot: the new image's"
truth=$(val used "$(probe_bare nvmlproc:$pid | grep '^nvmlproc')")
is "$(val used "$(printf '%s\n' "$show" | grep '^device 0')")" "$truth" \
    "the slice counts what the driver holds for the process ($truth bytes)"
ok $([ "$truth" -le $((1024 * MiB)) ] && echo 0 || echo 1) "the driver holds <= the 1 GiB limit"
exec 3>&-
wait $pid
is "$(val used "$("$HELPERS/tcu-slice" "$TESSEL_SLICE" | grep '^device 0')")" 0 \
    "after the process exits, nothing stays charged"
done_testing
