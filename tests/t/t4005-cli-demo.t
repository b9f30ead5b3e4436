#!/bin/sh
# t4005-cli-demo.t - the README's main job (scripts/demo.sh, run by `make demo`) works on
# simulated GPUs: the demo job sees its 4 GiB slice and is refused at its limit next to an 8 GiB
# neighbour, `tessel gpus` shows both slices labelled simulated, a whole-GPU job waits and then
# runs, and the script leaves no process or temporary directory behind.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
command -v jq >/dev/null || missing "jq is needed"
for f in bin/tesseld bin/tessel examples/fill-gpu lib/libtessel-cuda.so tests/fake/libcuda.so.1; do
    [ -e "$TESSEL_BUILD/$f" ] || missing "$f not built"
done
OUT=$(mktemp /tmp/tessel-t4005-XXXXXX)
trap 'rm -f "$OUT"' EXIT

TESSEL_DEMO_FAKE=1 "$TESSEL_SRCDIR/scripts/demo.sh" "$TESSEL_BUILD" >"$OUT" 2>&1
is "$?" 0 "scripts/demo.sh exits 0"
sed -n '/^== The demo job/,/^== Both/p' "$OUT" | grep -q 'cuMemGetInfo says 4.00 GiB total'
ok $? "the demo job sees its 4 GiB slice as the GPU's memory"
sed -n '/^== The demo job/,/^== Both/p' "$OUT" | grep -q '^result: chunks=14 .*error=CUDA_ERROR_OUT_OF_MEMORY'
ok $? "and is refused at its limit: 14 x 256 MiB (+ its 300 MiB context) fit in 4 GiB"
grep -q 'cuMemGetInfo says 8.00 GiB total' "$OUT"; ok $? "the neighbour sees its 8 GiB slice"
sed -n '/^== Both slices/,/^== A whole/p' "$OUT" | grep -cE '^ +0 +[12] +admin +0\.5 ' | grep -qx 2
ok $? "tessel gpus shows the two half-GPU slices"
grep -q 'SIMULATED' "$OUT"; ok $? "the GPUs are labelled simulated"
grep -qE '^ *3  admin  whole +pending ' "$OUT"; ok $? "the whole-GPU job waits while the GPU is shared"
grep -qE '^ *3  admin  whole +succeeded ' "$OUT"; ok $? "and runs once the halves are released"
grep -q "tessel run exited with the job's status: 0" "$OUT"; ok $? "the foreground run exits 0"
grep -q '^== Done' "$OUT" || sed 's/^/# /' "$OUT"
DIR=$(sed -n 's/.*(data dir \(.*\)\/data).*/\1/p' "$OUT" | head -n 1)
case "$DIR" in /tmp/tessel-demo-*) r=0 ;; *) r=1 ;; esac
ok $r "the demo ran in a temporary directory ($DIR)"
[ ! -e "$DIR" ]; ok $? "which it removed"
pgrep -f "$DIR/data" >/dev/null; is "$?" 1 "no tesseld or job of the demo is left running"
done_testing
