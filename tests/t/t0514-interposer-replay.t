#!/bin/sh
# t0514-interposer-replay.t - replays the 440 entry-point lookups of the
# CUDA 13 runtime (cudart13_requests.tsv): every memory, context and launch
# entry point (and the copies, memsets, synchronisations, streams, events, stream memory
# operations, host functions, callbacks, capture and graph upload, and the context, capture-info,
# pointer, function, device and address-range queries, the host-memory calls and the library and
# kernel calls that idle reclamation hooks, and a graph's instantiation, upload, changes and
# destruction, after which the slice reconciles with the driver's figure:
# docs/suspend.md) comes back as the interposer's hook for exactly the variant
# the driver chose (version and per-thread-stream flag honoured), including
# the cuGetProcAddress the runtime fetches through itself; every hooked
# pointer forwards to that same variant of the driver; all other lookups
# return the driver's own pointer untouched.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/interposer/tcu.sh"
TSV=$TESSEL_SHARED/cuda/cudart13_requests.tsv
[ -r "$TSV" ] || missing "no $TSV"
REPLAY=$HELPERS/tcu-replay
HOOKED='cuInit cuGetProcAddress cuMemGetInfo cuDeviceTotalMem cuMemAlloc cuMemAllocPitch
cuMemAllocManaged cuMemFree cuMemAllocAsync cuMemAllocFromPoolAsync cuMemFreeAsync
cuMemPoolCreate cuMemPoolDestroy cuMemPoolTrimTo cuMemCreate cuMemRelease cuArrayCreate
cuArray3DCreate cuArrayDestroy cuMipmappedArrayCreate cuMipmappedArrayDestroy cuCtxCreate
cuCtxDestroy cuDevicePrimaryCtxRetain cuDevicePrimaryCtxRelease cuDevicePrimaryCtxReset
cuLaunchKernel cuLaunchKernelEx cuLaunchCooperativeKernel cuLaunchCooperativeKernelMultiDevice
cuCtxSetLimit cuModuleLoad cuModuleLoadData cuModuleLoadFatBinary cuModuleGetFunction cuModuleUnload
cuGraphLaunch cuMemAdvise cuMemPrefetchAsync cuMemPrefetchBatchAsync
cuMemDiscardAndPrefetchBatchAsync cuMemcpy cuMemcpyAsync cuMemcpyHtoD cuMemcpyDtoH cuMemcpyDtoD
cuMemcpyHtoDAsync cuMemcpyDtoHAsync cuMemcpyDtoDAsync cuMemsetD8 cuMemsetD8Async
cuStreamSynchronize cuCtxSynchronize cuEventSynchronize cuMemcpyPeer cuMemcpyPeerAsync cuMemcpy2D
cuMemcpy2DUnaligned cuMemcpy2DAsync cuMemcpy3D cuMemcpy3DAsync cuMemsetD16 cuMemsetD16Async cuMemsetD32 cuMemsetD32Async
cuMemsetD2D8 cuMemsetD2D8Async cuMemsetD2D16 cuMemsetD2D16Async cuMemsetD2D32 cuMemsetD2D32Async
cuEventCreate cuEventRecord cuEventRecordWithFlags cuEventQuery cuEventElapsedTime cuEventDestroy cuStreamCreate
cuStreamCreateWithPriority cuStreamDestroy cuStreamQuery cuStreamWaitEvent cuStreamWriteValue32
cuStreamWaitValue32 cuStreamWriteValue64 cuStreamWaitValue64 cuStreamBatchMemOp cuLaunchHostFunc
cuStreamAddCallback cuStreamBeginCapture cuStreamEndCapture cuStreamIsCapturing cuGraphUpload
cuMemcpy3DPeer cuMemcpy3DPeerAsync cuMemcpyBatchAsync cuCtxSetCurrent cuCtxGetCurrent cuCtxGetDevice
cuCtxPushCurrent cuCtxPopCurrent cuStreamGetCaptureInfo cuPointerGetAttribute cuPointerGetAttributes
cuFuncGetAttribute cuDeviceGetAttribute cuMemAllocHost cuMemHostAlloc cuMemFreeHost cuMemHostRegister
cuMemHostUnregister cuMemGetAddressRange cuLibraryLoadData cuLibraryLoadFromFile cuLibraryUnload
cuLibraryGetKernel cuLibraryGetModule cuKernelGetFunction cuKernelGetAttribute cuKernelSetAttribute
cuLibraryGetGlobal cuLibraryGetManaged cuGraphInstantiate cuGraphInstantiateWithFlags
cuGraphInstantiateWithParams cuGraphExecDestroy cuGraphExecKernelNodeSetParams cuGraphExecUpdate
cuGraphExecChildGraphNodeSetParams cuGraphExecNodeSetParams'
printf '%s\n' $HOOKED >"$TMP/hooked"

"$REPLAY" "$TSV" >"$TMP/bare" 2>"$TMP/bare.err"
LD_PRELOAD="$PRE" "$REPLAY" "$TSV" >"$TMP/pre" 2>"$TMP/pre.err"
rows=$(wc -l <"$TSV" | tr -d ' ')
is "$(wc -l <"$TMP/bare" | tr -d ' ')" "$rows" "replay without the interposer: $rows lookups"
is "$(wc -l <"$TMP/pre" | tr -d ' ')" "$rows" "replay with the interposer: $rows lookups"
is "$(awk '$4 == "-"' "$TMP/bare" | wc -l | tr -d ' ')" \
    "$(awk '$4 == "-"' "$TMP/pre" | wc -l | tr -d ' ')" "the same lookups fail with and without"

# Row by row: same variant; hooked names in libtessel-cuda.so, others not.
paste -d' ' "$TMP/bare" "$TMP/pre" | awk -v hooked="$TMP/hooked" '
    BEGIN { while ((getline h < hooked) > 0) H[h] = 1 }
    {
        name = $1; bsym = $5; blib = $4; plib = $10; psym = $11; calls = $12
        if (blib == "-") next
        if (name in H || $1 == "cuGetProcAddress_v2") {
            n++
            if (plib != "libtessel-cuda.so") { bad++; print "# not hooked: " $0 }
            else if (psym != bsym) { bad++; print "# wrong variant: " $0 }
            else if ($1 != "cuGetProcAddress_v2" && calls != 1) { bad++; print "# not forwarded: " $0 }
        } else {
            m++
            if (plib != blib || psym != bsym) { bad++; print "# changed: " $0 }
        }
    }
    END { printf "hooked=%d untouched=%d bad=%d\n", n, m, bad + 0 }' >"$TMP/cmp"
grep '^#' "$TMP/cmp"
summary=$(grep '^hooked' "$TMP/cmp")
diag "$summary"
is "$(val bad "$summary")" 0 "every row: right variant, hooked or untouched as it should be"
want=$(awk -v hooked="$TMP/hooked" 'BEGIN { while ((getline h < hooked) > 0) H[h] = 1 }
    $1 in H { n++ } END { print n + 1 }' "$TSV")
is "$(val hooked "$summary")" "$want" "all $want lookups of hooked entry points (+ the dlsym) got a hook"

# Lookups the runtime does not make: older versions and the other variants.
printf '\t0\t0\n' >"$TMP/extra.tsv"
for row in "cuMemAlloc 2000 0" "cuMemFree 2000 0" "cuMemGetInfo 2000 0" "cuMemAllocPitch 2000 0" \
    "cuCtxCreate 2000 0" "cuCtxCreate 11040 0" "cuCtxCreate 12050 0" "cuCtxDestroy 2000 0" \
    "cuCtxDestroy 4000 0" "cuDevicePrimaryCtxRelease 11000 0" "cuDevicePrimaryCtxReset 11000 0" \
    "cuArrayCreate 2000 0" "cuArray3DCreate 2000 0" "cuDeviceTotalMem 2000 0" "cuMemCreate 10020 0" \
    "cuMemRelease 10020 0" "cuLaunchKernel 4000 2" "cuGraphLaunch 10000 2" "cuMemAllocAsync 11020 1" \
    "cuMemcpyHtoD 2000 0" "cuMemcpyDtoH 2000 0" "cuMemcpyDtoD 2000 0" "cuMemsetD8 2000 0" \
    "cuMemsetD16 2000 0" "cuMemsetD32 2000 0" "cuMemsetD2D8 2000 0" "cuMemsetD2D16 2000 0" \
    "cuMemsetD2D32 2000 0" "cuEventDestroy 2000 0" "cuStreamDestroy 2000 0" \
    "cuEventElapsedTime 2000 0" "cuMemsetD32 7000 2" "cuMemcpy2D 7000 2" \
    "cuStreamWriteValue32 11070 0" "cuStreamWriteValue32 11070 2" "cuStreamWaitValue64 13000 2" \
    "cuStreamBatchMemOp 12000 0" "cuStreamAddCallback 5000 2" "cuStreamBeginCapture 10000 2" \
    "cuMemcpyHtoDAsync 2000 0" "cuMemcpyDtoHAsync 2000 0" "cuMemcpyDtoDAsync 3000 0" \
    "cuMemcpy2D 2000 0" "cuMemcpy2DUnaligned 2000 0" "cuMemcpy2DAsync 2000 0" "cuMemcpy3D 2000 0" \
    "cuMemcpy3DAsync 2000 0" "cuCtxPushCurrent 2000 0" "cuCtxPopCurrent 2000 0" \
    "cuStreamGetCaptureInfo 10010 0" "cuStreamGetCaptureInfo 11030 2" "cuMemAllocHost 2000 0" \
    "cuMemAllocHost 3020 0" "cuMemGetAddressRange 2000 0"; do
    printf '%s\n' "$row" | tr ' ' '\t' >>"$TMP/extra.tsv"
done
"$REPLAY" "$TMP/extra.tsv" >"$TMP/xbare" 2>/dev/null
LD_PRELOAD="$PRE" "$REPLAY" "$TMP/extra.tsv" >"$TMP/xpre" 2>/dev/null
bad=$(paste -d' ' "$TMP/xbare" "$TMP/xpre" | awk 'NR > 1 && ($4 == "-" || $10 != "libtessel-cuda.so" || $11 != $5 || $12 != 1) {print}')
is "$bad" "" "54 more lookups (v1 variants, _v3/_v4, ptds before _ptsz existed, v1 copies and sets (Async, 2D and 3D ones too), the first event and stream exports, ptds sets and 2D copies, the _v2 stream memory operations, a callback's and a capture's ptds before their _ptsz, the v1 context push and pop, the first two cuStreamGetCaptureInfo, cuMemAllocHost v1 and _v2, cuMemGetAddressRange v1): hooked, same variant"
xline() { awk -v n="$1" -v v="$2" '$1 == n && $2 == v {print $5; exit}' "$TMP/xpre"; }
is "$(xline cuMemAlloc 2000)" cuMemAlloc "cuMemAlloc @2000 -> the v1 cuMemAlloc"
is "$(xline cuCtxCreate 12050)" cuCtxCreate_v4 "cuCtxCreate @12050 -> cuCtxCreate_v4"
is "$(xline cuCtxCreate 11040)" cuCtxCreate_v3 "cuCtxCreate @11040 -> cuCtxCreate_v3"
is "$(xline cuLaunchKernel 4000)" cuLaunchKernel "cuLaunchKernel @4000 ptds -> cuLaunchKernel (no _ptsz before 7000)"
is "$(xline cuMemsetD32 2000)" cuMemsetD32 "cuMemsetD32 @2000 -> the v1 cuMemsetD32 (32-bit sizes)"
is "$(xline cuMemsetD32 7000)" cuMemsetD32_v2_ptds "cuMemsetD32 @7000 ptds -> cuMemsetD32_v2_ptds"
is "$(xline cuEventDestroy 2000)" cuEventDestroy "cuEventDestroy @2000 -> cuEventDestroy (not _v2)"
is "$(xline cuMemcpy2DAsync 2000)" cuMemcpy2DAsync "cuMemcpy2DAsync @2000 -> the v1 cuMemcpy2DAsync (CUDA_MEMCPY2D_v1)"
is "$(xline cuMemcpyDtoDAsync 3000)" cuMemcpyDtoDAsync "cuMemcpyDtoDAsync @3000 -> the v1 cuMemcpyDtoDAsync"
is "$(xline cuStreamWriteValue32 11070)" cuStreamWriteValue32_v2 "cuStreamWriteValue32 @11070 -> _v2"
is "$(xline cuStreamBatchMemOp 12000)" cuStreamBatchMemOp_v2 "cuStreamBatchMemOp @12000 -> _v2"
is "$(xline cuCtxPushCurrent 2000)" cuCtxPushCurrent "cuCtxPushCurrent @2000 -> the v1 cuCtxPushCurrent"
is "$(xline cuStreamGetCaptureInfo 10010)" cuStreamGetCaptureInfo "cuStreamGetCaptureInfo @10010 -> the first export"
is "$(xline cuStreamGetCaptureInfo 11030)" cuStreamGetCaptureInfo_v2_ptsz "cuStreamGetCaptureInfo @11030 ptds -> _v2_ptsz"
is "$(xline cuMemAllocHost 3020)" cuMemAllocHost_v2 "cuMemAllocHost @3020 -> cuMemAllocHost_v2"
is "$(xline cuMemGetAddressRange 2000)" cuMemGetAddressRange "cuMemGetAddressRange @2000 -> the v1 cuMemGetAddressRange"
is "$(xline cuStreamAddCallback 5000)" cuStreamAddCallback "cuStreamAddCallback @5000 ptds -> cuStreamAddCallback (no _ptsz before 7000)"

# Spot checks with figures: the variants the runtime's requests select.
line() { awk -v n="$1" -v v="$2" -v f="$3" '$1 == n && $2 == v && $3 == f {print $5; exit}' "$TMP/pre"; }
is "$(line cuMemAlloc 3020 0)" cuMemAlloc_v2 "cuMemAlloc @3020 -> cuMemAlloc_v2"
is "$(line cuMemAllocAsync 11020 2)" cuMemAllocAsync_ptsz "cuMemAllocAsync @11020 ptds -> _ptsz"
is "$(line cuMemAllocAsync 11020 0)" cuMemAllocAsync "cuMemAllocAsync @11020 -> legacy stream"
is "$(line cuLaunchKernel 7000 2)" cuLaunchKernel_ptsz "cuLaunchKernel @7000 ptds -> _ptsz"
is "$(line cuCtxCreate 3020 0)" cuCtxCreate_v2 "cuCtxCreate @3020 -> cuCtxCreate_v2"
is "$(line cuMemcpy2DAsync 7000 2)" cuMemcpy2DAsync_v2_ptsz "cuMemcpy2DAsync @7000 ptds -> _v2_ptsz"
is "$(line cuMemcpy3D 3020 0)" cuMemcpy3D_v2 "cuMemcpy3D @3020 -> cuMemcpy3D_v2"
is "$(line cuEventRecord 7000 2)" cuEventRecord_ptsz "cuEventRecord @7000 ptds -> _ptsz"
is "$(line cuEventRecordWithFlags 11010 2)" cuEventRecordWithFlags_ptsz "cuEventRecordWithFlags @11010 ptds -> _ptsz"
is "$(line cuEventElapsedTime 12080 0)" cuEventElapsedTime_v2 "cuEventElapsedTime @12080 -> _v2"
is "$(line cuStreamDestroy 4000 0)" cuStreamDestroy_v2 "cuStreamDestroy @4000 -> _v2"
is "$(line cuStreamWriteValue32 8000 0)" cuStreamWriteValue32 "cuStreamWriteValue32 @8000 -> the CUDA 8 export"
is "$(line cuStreamWaitValue64 9000 2)" cuStreamWaitValue64_ptsz "cuStreamWaitValue64 @9000 ptds -> _ptsz"
is "$(line cuStreamGetCaptureInfo 12030 2)" cuStreamGetCaptureInfo_v3_ptsz "cuStreamGetCaptureInfo @12030 ptds -> _v3_ptsz"
is "$(line cuCtxGetDevice 13000 0)" cuCtxGetDevice_v2 "cuCtxGetDevice @13000 -> cuCtxGetDevice_v2"
is "$(line cuCtxPopCurrent 4000 0)" cuCtxPopCurrent_v2 "cuCtxPopCurrent @4000 -> cuCtxPopCurrent_v2"
is "$(line cuLaunchHostFunc 10000 2)" cuLaunchHostFunc_ptsz "cuLaunchHostFunc @10000 ptds -> _ptsz"
is "$(line cuStreamBeginCapture 10010 0)" cuStreamBeginCapture_v2 "cuStreamBeginCapture @10010 -> _v2"
is "$(line cuGraphUpload 11010 2)" cuGraphUpload_ptsz "cuGraphUpload @11010 ptds -> _ptsz"
is "$(line cuMemcpy3DPeer 7000 2)" cuMemcpy3DPeer_ptds "cuMemcpy3DPeer @7000 ptds -> _ptds"
is "$(line cuMemcpyBatchAsync 12080 2)" cuMemcpyBatchAsync_ptsz "cuMemcpyBatchAsync @12080 ptds -> _ptsz (with failIdx)"
is "$(line cuMemcpyBatchAsync 13000 0)" cuMemcpyBatchAsync_v2 "cuMemcpyBatchAsync @13000 -> _v2"
is "$(line cuMemcpy3DPeerAsync 4000 0)" cuMemcpy3DPeerAsync "cuMemcpy3DPeerAsync @4000 -> cuMemcpy3DPeerAsync"
is "$(line cuGetProcAddress 12000 0)" cuGetProcAddress_v2 "cuGetProcAddress @12000 -> our _v2"
is "$(line cuGetProcAddress 11030 0)" cuGetProcAddress "cuGetProcAddress @11030 -> our v1"
is "$(awk '$1 == "cuGetProcAddress" && $2 == 12000 {print $4}' "$TMP/pre")" libtessel-cuda.so \
    "the runtime's own cuGetProcAddress is the interposer's"
done_testing
