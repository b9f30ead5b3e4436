#!/bin/sh
# t0519-interposer-fork.t - a child forked after the interposer initialised
# gets its own process slot in the slice: its allocations are charged to it,
# counted against the shared limit, and given back when it exits.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/interposer/tcu.sh"
export TESSEL_CUDA_MEM_LIMIT=1G TESSEL_SLICE="$TMP/slice"
mkfifo "$TMP/hold"
# Parent: touches a hook (initialises the interposer) before any CUDA
# context, forks; the child creates its context and allocates 100 MiB.
probe totalmem forkhold:100M hold reap ctx info <"$TMP/hold" >"$TMP/out" 2>&1 &
pid=$!
exec 3>"$TMP/hold"
wait_until holding "$TMP/out"
is "$(sed -n 's/^forkhold \(rc=[0-9]*\).*/\1/p' "$TMP/out")" "rc=0" "the child's 100 MiB allocation succeeds"
child=$(sed -n 's/^forkhold .*child=\([0-9]*\)/\1/p' "$TMP/out")
show=$("$HELPERS/tcu-slice" "$TESSEL_SLICE")
ctxc=$(val ctx_cost "$(printf '%s\n' "$show" | grep '^device 0')")
is "$(printf '%s\n' "$show" | grep '^procs' | cut -d' ' -f2)" 2 "parent and child have a slot each"
is "$(val used "$(printf '%s\n' "$show" | grep "^proc $child ")")" $((ctxc + 100 * MiB)) \
    "the child's slot holds its context and its 100 MiB"
is "$(val used "$(printf '%s\n' "$show" | grep '^proc ' | grep -v "^proc $child ")")" 0 \
    "the parent's slot holds nothing"
exec 3>&-
wait $pid
is "$(val free "$(grep '^info' "$TMP/out")")" $((1024 * MiB - ctxc)) \
    "after the child exits, the parent has the whole slice but its own context"
done_testing
