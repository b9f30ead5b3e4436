#!/bin/sh
# t4003-cli-slice.t - through the CLI, jobs that allocate GPU memory (examples/fill-gpu over the
# fake driver, with the interposer that tesseld preloads) are refused at their slice's limit and
# not before, and see their slice as the GPU's memory; jobs queue when the GPU is full and start
# when room frees; `tessel gpus` shows a running job's slice and the memory it uses.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
command -v jq >/dev/null || missing "jq is needed"
[ -x "$TESSEL_BUILD/bin/tesseld" ] || missing "tesseld not built"
FILL=$TESSEL_BUILD/examples/fill-gpu
[ -x "$FILL" ] || missing "examples/fill-gpu not built"
[ -e "$TESSEL_BUILD/tests/fake/libcuda.so.1" ] || missing "fake driver not built"
[ -e "$TESSEL_BUILD/lib/libtessel-cuda.so" ] || missing "interposer not built"

td_setup
td_start --fake-gpus 1xT4:8G --no-cgroups || missing "tesseld did not start"
cli_setup
export TESSEL_URL="$TD_URL" TESSEL_TOKEN="$TD_ADMIN"
G="$TD/go"
mkdir -p "$G"
MiB=1048576
# A context costs 300 MiB on the fake driver (its default), and the interposer charges the
# same 300 MiB to the slice (its estimate when it cannot measure through NVML).
CTX=300
val() { sed -n "s/^result: .*$1=\([^ ]*\).*/\1/p" "$TD/o"; }

tcli run --quiet --gpu 0.5 --gpu-mem 1G -- "$FILL" --chunk 100M
is "$RC" 0 "fill-gpu in a 1G slice ends at CUDA_ERROR_OUT_OF_MEMORY (exit 0)"
diag "$(grep '^fill-gpu' "$TD/o" | head -2 | tr '\n' ' ')"
# (1024 - 300) / 100 = 7.24: 7 chunks fit (1000 MiB with the context), an 8th would pass 1 GiB.
is "$(val chunks) $(val error)" "$(((1024 - CTX) / 100)) CUDA_ERROR_OUT_OF_MEMORY" \
    "1G slice: 7 chunks of 100 MiB fit, the 8th (over 1 GiB) is refused"
grep -q 'cuMemGetInfo says 1.00 GiB total' "$TD/o"; ok $? "the job sees its 1 GiB slice as the GPU's memory"
tcli run --quiet --gpu 0.5 --gpu-mem 3G -- "$FILL" --chunk 256M
# (3072 - 300) / 256 = 10.8: 10 chunks.
is "$RC $(val chunks)" "0 $(((3072 - CTX) / 256))" "3G slice: 10 chunks of 256 MiB fit, the 11th is refused"
tcli run --quiet --gpu 0.5 -- "$FILL" --chunk 256M
# Default limit: half of the 8 GiB GPU = 4 GiB; (4096 - 300) / 256 = 14.8.
is "$RC $(val chunks)" "0 $(((4096 - CTX) / 256))" "a 0.5 share without --gpu-mem gets half the GPU's memory (14 x 256 MiB)"

# A whole-GPU job holds the GPU; a half-GPU job queues behind it and starts when it ends.
tcli run -d --name big --gpu 1 --gpu-mem 2G -- "$FILL" --chunk 500M --hold-file "$G/big"
BIG=$(out)
wait_for '[ "$(state_of $BIG)" = running ]'; ok $? "a whole-GPU job runs"
tcli run -d --name small --gpu 0.5 -- true
SMALL=$(out)
wait_for 'admin ps --json; [ "$(jq -r ".jobs[] | select(.id == $SMALL) | .reason" "$TD/o")" != null ]'
is "$(state_of "$SMALL")" "pending" "a half-GPU job queues while the GPU is full"
admin ps
grep -qE "^ *$SMALL  admin  small  pending " "$TD/o"; ok $? "ps shows it pending"
wait_for '[ "$(TESSEL_URL=$TD_URL TESSEL_TOKEN=$TD_ADMIN "$TCLI" logs --stdout $BIG | grep -c holding)" = 1 ]'
ok $? "the big job filled its slice and holds it"
tcli gpus --json
# 3 x 500 MiB + the 300 MiB context = 1800 MiB of its 2 GiB.
is "$(jq -r '.gpus[0].used_mem, .gpus[0].slices[0].job_id, .gpus[0].slices[0].mem_limit' "$TD/o" | tr '\n' ' ')" \
    "$(((1500 + CTX) * MiB)) $BIG $((2048 * MiB)) " "gpus --json: the slice uses 1800 MiB of its 2 GiB"
tcli gpus
grep -qE "^ *0  +$BIG  admin  +1  +1\.76 GiB  +2\.00 GiB  +[0-9]+\.[0-9]s  +87% of its limit$" "$TD/o"
ok $? "gpus shows the slice: 1.76 GiB used of 2.00 GiB"
touch "$G/big"
wait_for '[ "$(state_of $BIG)" = succeeded ]'; ok $? "the big job ends"
wait_for '[ "$(state_of $SMALL)" = succeeded ]'; ok $? "the queued job then starts and succeeds"

td_stop; ok $? "tesseld stops cleanly"
done_testing
