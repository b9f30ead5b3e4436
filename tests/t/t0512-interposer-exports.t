#!/bin/sh
# t0512-interposer-exports.t - libtessel-cuda.so exports exactly the entry
# points it hooks (the version script) and nothing else, needs no libcuda at
# link time (it dlopens libcuda.so.1), and every hooked name has a row in the
# symbol table.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
PRE=$TESSEL_BUILD/lib/libtessel-cuda.so
[ -e "$PRE" ] || missing "interposer not built"
command -v nm >/dev/null || missing "nm not installed"
MAP=$TESSEL_SRCDIR/src/interposer/libtessel-cuda.map
exported=$(nm -D --defined-only "$PRE" | awk '$2 == "T" || $2 == "W" || $2 == "D" || $2 == "B" {print $3}' | sort)
listed=$(sed -n 's/^    \([A-Za-z0-9_]*\);$/\1/p' "$MAP" | sort)
is "$exported" "$listed" "exported symbols = the version script's list"
is "$(printf "%s\n" "$exported" | wc -l | tr -d " ")" 266 "266 exports: 253 driver entry points (134 of them copies, memsets, synchronisations, streams, events, stream memory operations, host functions, callbacks and capture, 26 context, capture-info, pointer, function, device and address-range queries and host-memory calls, for idle reclamation, and 10 library and kernel calls, each for idle reclamation, 8 of them counting a library's memory: its load, its first use in a context, its unload, and 14 graph instantiations, uploads, updates and destructions, reconciled with the driver's figure), 12 NVML (memory, process lists), dlsym"
is "$(printf '%s\n' "$exported" | grep -c -E '^(tshm_|tsl_|tcu_)')" 0 "no libshm/libutil/internal symbol leaks"
# The hooks: the X() rows of TCU_CUDA_SYMBOLS and TCU_NVML_SYMBOLS (the
# driver calls listed after them, TCU_CUDA_CALLS / TCU_NVML_CALLS, are not).
hooks=$(sed -n '/^#define TCU_CUDA_SYMBOLS/,/^#define TCU_CUDA_CALLS/p' \
    "$TESSEL_SRCDIR/src/interposer/symbols.h" | sed -n 's/^ *X(\([A-Za-z0-9_]*\)[,)].*/\1/p' | sort)
is "$(printf '%s\ndlsym\n' "$hooks" | sort)" "$listed" "every hook in symbols.h is exported, and only those"
needed=$(readelf -d "$PRE" 2>/dev/null | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')
ok $(printf '%s' "$needed" | grep -q -E 'libcuda|libnvidia' && echo 1 || echo 0) \
    "no link-time dependency on the driver (needs: $needed)"
done_testing
