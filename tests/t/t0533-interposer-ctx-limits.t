#!/bin/sh
# t0533-interposer-ctx-limits.t - the slice counts what the driver counts for
# the heaps cuCtxSetLimit sizes: the malloc heap, the printf FIFO and the
# stack (reserved by the driver for every thread the device holds at once:
# on the fake, 80 SMs x 2048 threads).  A growth is charged, a shrink and
# the context's end give it back; the slice's count for a process equals
# the driver's own per-process figure (the fake NVML's; margin 0 bytes), and
# a growth past the limit is refused (error 2) with the old size restored,
# so that at out-of-memory the driver's figure is <= the limit.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/interposer/tcu.sh"
tcu_need_nvml
# A context costs 64 MiB (tcu.sh) with the driver's default sizes (heap 8
# MiB, printf FIFO 1 MiB, stack 1 KiB per thread).
export TESSEL_CUDA_MEM_LIMIT=8G


# Heap +100 MiB, printf FIFO +10 MiB, stack +512 B per thread (80 MiB).
export TESSEL_SLICE="$TMP/slice1"
hold_probe a ctx setlimit:heap:108M setlimit:printf:11M setlimit:stack:1536
is "$(lines setlimit a)" "setlimit heap rc=0 setlimit printf rc=0 setlimit stack rc=0 " "three sizes set"
t=$(truth $pid)
is "$t" $(((64 + 100 + 10 + 80) * MiB)) "the driver holds 254 MiB for the process (context, heap, FIFO, stack)"
is "$(used)" "$t" "the slice counts exactly what the driver holds"
release
is "$(used)" 0 "the process gone: nothing stays charged"

# A shrink gives back; through cuGetProcAddress as well.
for via in global proc; do
    export TESSEL_SLICE="$TMP/slice-$via"
    hold_probe b --via=$via ctx setlimit:heap:108M setlimit:stack:1536 setlimit:heap:8M
    t=$(truth $pid)
    is "$t" $(((64 + 80) * MiB)) "--via=$via: the heap back at 8 MiB, the driver holds 144 MiB"
    is "$(used)" "$t" "--via=$via: the slice counts exactly what the driver holds"
    release
done

# A created context's sizes go with it.
export TESSEL_SLICE="$TMP/slice2"
hold_probe c ctx ctxcreate:2 setlimit:heap:58M ctxdestroy
is "$(lines ctxdestroy c)" "ctxdestroy rc=0 " "the created context is destroyed"
t=$(truth $pid)
is "$t" $((64 * MiB)) "its 50 MiB heap went with it (the driver holds the primary context's 64 MiB)"
is "$(used)" "$t" "the slice counts exactly what the driver holds"
release

# Out of memory: a 400 MiB slice takes the context and a 308 MiB heap (364
# MiB), not 80 MiB more of stack; the stack size is restored.
export TESSEL_SLICE="$TMP/slice3" TESSEL_CUDA_MEM_LIMIT=400M
hold_probe d ctx setlimit:heap:308M setlimit:stack:1536
is "$(lines setlimit d)" "setlimit heap rc=0 setlimit stack rc=2 " \
    "400 MiB: the heap fits, the stack growth gets error 2"
t=$(truth $pid)
is "$t" $(((64 + 300) * MiB)) "400 MiB: the stack size restored (the driver holds 364 MiB)"
ok $([ "$t" -le $((400 * MiB)) ] && echo 0 || echo 1) "400 MiB: the driver holds $t bytes <= the limit"
is "$(used)" "$t" "400 MiB: the slice counts what the driver holds"
release
done_testing
