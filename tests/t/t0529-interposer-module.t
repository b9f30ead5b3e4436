#!/bin/sh
# t0529-interposer-module.t - the slice counts what the driver counts for
# module code: the memory the driver spends loading a module
# (cuModuleLoadData, cuModuleLoadDataEx, cuModuleLoadFatBinary, cuModuleLoad) and, under lazy loading, each function's code at its
# first use (cuModuleGetFunction) is measured and charged, and given back at
# cuModuleUnload.  The slice's count for a process equals the driver's own
# per-process figure (the fake NVML's, what nvidia-smi shows; margin 0
# bytes: every size is a multiple of the fake's 512-byte granule); a module
# larger than the room left is refused (error 2) and unloaded, so that at
# out-of-memory the driver's figure for the process is <= the limit.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/interposer/tcu.sh"
tcu_need_nvml
# A context costs 64 MiB (tcu.sh), a module 40 MiB, a function 3 MiB.
export TESSEL_FAKE_MODULE_MEM=40M TESSEL_FAKE_FUNC_MEM=3M
export TESSEL_CUDA_MEM_LIMIT=8G


# Two modules, two functions of the first (one of them looked up twice).
export TESSEL_SLICE="$TMP/slice1"
hold_probe a ctx modload modfunc:k1 modfunc:k2 modfunc:k1 modload
is "$(lines mod a)" "modload rc=0 modfunc k1 rc=0 modfunc k2 rc=0 modfunc k1 rc=0 modload rc=0 " \
    "two modules load, their functions are found"
t=$(truth $pid)
is "$t" $(((64 + 40 + 3 + 3 + 40) * MiB)) "the driver holds 150 MiB for the process (context, 2 modules, 2 functions)"
is "$(used)" "$t" "the slice counts exactly what the driver holds"
release
is "$(used)" 0 "the process gone: nothing stays charged"

# Unload gives a module's whole charge back, its functions' included; the
# same through cuGetProcAddress.
for via in global proc; do
    export TESSEL_SLICE="$TMP/slice-$via"
    hold_probe b --via=$via ctx modload modfunc:k1 modfunc:k2 modload modfunc:k3 modunload
    t=$(truth $pid)
    is "$(lines modunload b)" "modunload rc=0 " "--via=$via: the second module unloads"
    is "$t" $(((64 + 40 + 3 + 3) * MiB)) "--via=$via: the driver holds 110 MiB after the unload"
    is "$(used)" "$t" "--via=$via: the slice counts exactly what the driver holds"
    release
done

# The other ways to load a module (JIT options: XLA/JAX, Triton; a fat
# binary; a file) are measured and refused alike.
for kind in ex fatbin file; do
    export TESSEL_SLICE="$TMP/slice-$kind" TESSEL_CUDA_MEM_LIMIT=8G
    hold_probe k ctx modload:$kind modfunc:k1 modload:$kind modunload
    t=$(truth $pid)
    is "$(lines 'modload\|modunload' k)" "modload rc=0 modload rc=0 modunload rc=0 " "$kind: two modules load, one unloads"
    is "$t" $(((64 + 40 + 3) * MiB)) "$kind: the driver holds 107 MiB (context, a module, a function)"
    is "$(used)" "$t" "$kind: the slice counts exactly what the driver holds"
    release
    export TESSEL_SLICE="$TMP/slice-oom-$kind" TESSEL_CUDA_MEM_LIMIT=350M TESSEL_FAKE_MODULE_MEM=120M
    hold_probe o ctx modload:$kind modload:$kind modload:$kind
    is "$(lines modload o)" "modload rc=0 modload rc=0 modload rc=2 " "$kind, 350 MiB: the third module gets error 2"
    t=$(truth $pid)
    is "$t" $(((64 + 120 + 120) * MiB)) "$kind, 350 MiB: the refused module was unloaded (the driver holds 304 MiB)"
    is "$(used)" "$t" "$kind, 350 MiB: the slice counts what the driver holds"
    release
    export TESSEL_FAKE_MODULE_MEM=40M
done

# Out of memory, with 120 MiB modules (a slice needs 300 MiB for its first
# context until measured, docs/interposer.md): a 350 MiB slice takes the
# context and two modules (304 MiB), not a third; the third is unloaded.
export TESSEL_FAKE_MODULE_MEM=120M
export TESSEL_SLICE="$TMP/slice3" TESSEL_CUDA_MEM_LIMIT=350M
hold_probe c ctx modload modload modload
is "$(lines modload c)" "modload rc=0 modload rc=0 modload rc=2 " \
    "350 MiB: two modules fit, the third gets error 2"
t=$(truth $pid)
is "$t" $(((64 + 120 + 120) * MiB)) "350 MiB: the refused module was unloaded (the driver holds 304 MiB)"
ok $([ "$t" -le $((350 * MiB)) ] && echo 0 || echo 1) "350 MiB: the driver holds $t bytes <= the limit"
is "$(used)" "$t" "350 MiB: the slice counts what the driver holds"
release

# A function's lazily loaded code cannot be refused without losing count of
# it: it is charged past the limit, and the slice's next allocation is
# refused.
export TESSEL_SLICE="$TMP/slice4" TESSEL_CUDA_MEM_LIMIT=306M
hold_probe d ctx modload modload modfunc:k1 alloc:mem:1M
is "$(lines 'modfunc\|alloc' d)" "modfunc k1 rc=0 alloc mem rc=2 " \
    "306 MiB: the function past the limit is charged, the next allocation gets error 2"
t=$(truth $pid)
is "$t" $(((64 + 120 + 120 + 3) * MiB)) "306 MiB: the driver holds 307 MiB"
is "$(used)" "$t" "306 MiB: the slice counts what the driver holds"
release

# Driver memory no call reports: the CUDA runtime's kernels are loaded lazily at their first
# launch (32 MiB for JAX on an H200, docs/gpu-conformance.md).  When a reservation comes near
# the limit after a launch, the slice compares the driver's own figure for the process with
# its charges and charges the difference, so that a fill stops at the limit in the driver's
# eyes too: 64 + 40 + 64 + 32 MiB, then 12 x 64 MiB (968 MiB); a 13th would be 1032 MiB.
export TESSEL_FAKE_MODULE_MEM=40M TESSEL_FAKE_FUNC_MEM=0 TESSEL_FAKE_LAUNCH_MEM=32M
export TESSEL_SLICE="$TMP/slice5" TESSEL_CUDA_MEM_LIMIT=1G
hold_probe e ctx modload alloc:mem:64M launch:k1 fill:mem:64M
is "$(lines launch e)" "launch k1 rc=0 " "a kernel's first launch (32 MiB the driver spends, no call reports it)"
is "$(val n "$(lines fill e)")" 12 "1 GiB: 12 more allocations of 64 MiB fit, not 13"
t=$(truth $pid)
is "$t" $(((64 + 40 + 64 + 32 + 12 * 64) * MiB)) "1 GiB: the driver holds 968 MiB"
ok $([ "$t" -le $((1024 * MiB)) ] && echo 0 || echo 1) "1 GiB: the driver holds $t bytes <= the limit"
is "$(used)" "$t" "1 GiB: the slice counts what the driver holds, the 32 MiB no call reported included"
release
# A measured load more than a second after the process's last look at the driver's figure: the
# look, due then, must not run in the load's own reservation (the driver counts the module
# already, the process's charges not yet): counted once, not twice.
export TESSEL_FAKE_MODULE_MEM=40M TESSEL_FAKE_FUNC_MEM=3M TESSEL_FAKE_LAUNCH_MEM=0
export TESSEL_SLICE="$TMP/slice6" TESSEL_CUDA_MEM_LIMIT=8G
# (sleep: past the once-a-second look, an order of events, not an assertion)
(sleep 1.2 && touch "$TMP/go6") &
S=$!
hold_probe g ctx alloc:mem:1M waitfile:$TMP/go6 modload modfunc:k1 alloc:mem:1M
wait $S
t=$(truth $pid)
is "$t" $(((64 + 1 + 40 + 3 + 1) * MiB)) "a second later: the driver holds 109 MiB (context, 2 x 1 MiB, a module, a function)"
is "$(used)" "$t" "a second later: the slice counts it once"
release
done_testing
