#!/bin/sh
# t0513-interposer-race.t - 8 processes racing in one slice never pass its
# limit (the reserve is one compare-and-swap on the shared counter), the
# slice file shows each process's share, and the usage of processes killed
# with SIGKILL comes back to the slice.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/interposer/tcu.sh"
SLICE_TOOL=$HELPERS/tcu-slice
export TESSEL_CUDA_MEM_LIMIT=3G TESSEL_SLICE="$TMP/slice"
N=8
C=$((10 * MiB))
LIMIT=$((3072 * MiB))

# Each process: context, wait for the start line, fill with 10 MiB chunks
# until refused, then hold its memory until stdin closes.
mkfifo "$TMP/hold"
pids=""
i=0
while [ $i -lt $N ]; do
    # Not through the probe() function: $! must be tcu-probe itself.
    LD_PRELOAD="$PRE" "$PROBE" ctx waitfile:"$TMP/go" fill:mem:10M hold <"$TMP/hold" \
        >"$TMP/out.$i" 2>&1 &
    pids="$pids $!"
    i=$((i + 1))
done
exec 3>"$TMP/hold"
ready() { [ "$(cat "$TMP"/out.* 2>/dev/null | grep -c "$1")" -eq $N ]; }
wait_until ready "ctx rc="
is "$(cat "$TMP"/out.* | grep -c 'ctx rc=0')" $N "$N contexts created in the slice"
touch "$TMP/go"
wait_until ready holding

total=0
for f in "$TMP"/out.*; do
    total=$((total + $(val n "$(grep '^fill' "$f")")))
done
show=$("$SLICE_TOOL" "$TESSEL_SLICE")
used=$(val used "$(printf '%s\n' "$show" | grep '^device 0')")
ctxc=$(val ctx_cost "$(printf '%s\n' "$show" | grep '^device 0')")
[ "$ctxc" = 0 ] && ctxc=$((300 * MiB))
diag "slice: used=$used limit=$LIMIT, $total chunks, context cost $ctxc"
ok $([ "$used" -le $LIMIT ] && echo 0 || echo 1) "used $used <= limit $LIMIT: never passed"
is "$used" $((N * ctxc + total * C)) "used = $N contexts + $total chunks of 10 MiB"
is "$total" $(((LIMIT - N * ctxc) / C)) "every chunk that fits was handed out, no more"
is "$(grep -c '^fill.*rc=2' "$TMP"/out.* | awk -F: '{s += $2} END {print s}')" $N \
    "each of the $N processes got CUDA_ERROR_OUT_OF_MEMORY at the end"
is "$(val used_sum "$(printf '%s\n' "$show" | grep '^procs')")" "$used" \
    "the per-process shares in the slice file add up to the device's used"
is "$(printf '%s\n' "$show" | grep '^procs' | cut -d' ' -f2)" $N "the slice file lists $N processes"

# SIGKILL all of them (their stdin stays open: they die in read(), no
# clean exit): the next process to attach gets everything back.
for p in $pids; do kill -KILL "$p"; done
for p in $pids; do wait "$p" 2>/dev/null; done
is "$(val used "$("$SLICE_TOOL" "$TESSEL_SLICE" | grep '^device 0')")" "$used" \
    "killed processes leave their bytes charged until someone reclaims them"
exec 3>&-
out=$(probe ctx info)
is "$(val free "$(printf '%s\n' "$out" | grep '^info')")" $((LIMIT - ctxc)) \
    "after SIGKILL: a new process sees the whole slice but its own context"
show=$("$SLICE_TOOL" "$TESSEL_SLICE")
is "$(val used "$(printf '%s\n' "$show" | grep '^device 0')")" 0 \
    "after the last process exits, the slice's used is 0 again"
done_testing
