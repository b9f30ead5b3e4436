# tests/lib/gpusim.sh - what t0600-t0604 share: tests/gpu/run.sh (the real-GPU proof) in its
# SIMULATED mode on the fake driver.  Source after tap.sh.
#
#   gs_setup NAME [python]   fail (missing) unless the interposer, the fakes and the helpers are
#                            built (and python3 is there, for the rows with Python workloads);
#                            $TMP (removed at exit), $RUN, $DOC (docs/gpu-conformance.md) and
#                            $DOC_SUM (its checksum now)
#   gs_run ARG...            run.sh --simulate --build $TESSEL_BUILD ARG... --doc $TMP/doc.md into
#                            $TMP/out (shown as diagnostics); its exit status in $RC
#   gs_verdicts              check that the exit status follows the verdicts and that every
#                            line of $TMP/out says SIMULATED
#   gs_rows ROW...           check that each row is printed once with figures, threshold, verdict
#   gs_no_doc                check that no doc was written and docs/gpu-conformance.md is untouched
gs_setup() {
    for _f in lib/libtessel-cuda.so tests/fake/libcuda.so.1 tests/fake/libnvidia-ml.so.1 \
        tests/interposer/tcu-slice tests/interposer/tcu-load; do
        [ -e "$TESSEL_BUILD/$_f" ] || missing "$TESSEL_BUILD/$_f is not built (make)"
    done
    if [ "${2:-}" = python ]; then
        command -v python3 >/dev/null || missing "python3 (tests/gpu's workloads are Python)"
    fi
    TMP=$(mktemp -d "/tmp/tessel-$1.XXXXXX") || missing "mktemp"
    trap 'rm -rf "$TMP"' EXIT
    RUN=$TESSEL_SRCDIR/tests/gpu/run.sh
    DOC=$TESSEL_SRCDIR/docs/gpu-conformance.md
    DOC_SUM=$(cksum <"$DOC")
}

gs_run() {
    "$RUN" --simulate --build "$TESSEL_BUILD" "$@" --doc "$TMP/doc.md" >"$TMP/out" 2>&1
    RC=$?
    sed 's/^/# /' "$TMP/out"
}

gs_verdicts() {
    _nfail=$(grep -c '^SIMULATED [^ ]* *FAIL ' "$TMP/out")
    ok $([ "$RC" -eq "$([ "$_nfail" -gt 0 ] && echo 1 || echo 0)" ] && echo 0 || echo 1) \
        "exit status $RC follows the verdicts ($_nfail rows FAIL)"
    is "$(grep -vc '^SIMULATED ' "$TMP/out")" 0 "every line of $(wc -l <"$TMP/out") says SIMULATED"
}

gs_rows() {
    for _r in "$@"; do
        is "$(grep -c "^SIMULATED $_r  *\(PASS\|FAIL\)  .* | need: " "$TMP/out")" 1 \
            "row $_r: once, with figures, threshold and verdict"
    done
}

gs_no_doc() {
    ok $([ ! -e "$TMP/doc.md" ] && echo 0 || echo 1) "SIMULATED mode writes no doc (--doc $TMP/doc.md)"
    is "$(cksum <"$DOC")" "$DOC_SUM" "docs/gpu-conformance.md is untouched"
}
