#!/bin/sh
# scripts/demo.sh - the README's main job (`make demo`): start tesseld on loopback with a
# temporary data dir (on simulated GPUs, clearly labelled, when no NVIDIA GPU is found), then
# through the `tessel` CLI run a CUDA program (examples/fill-gpu) in a 0.5-GPU, 4 GiB slice
# next to a second job in an 8 GiB slice, and show the slices at work: each job sees only its
# slice's memory and is refused at its limit, `tessel gpus` shows both, and a whole-GPU job
# queues until they are done.  Leaves nothing behind (~/.config is not touched).
#
#   scripts/demo.sh [BUILD_DIR]      (make demo builds first)
#   TESSEL_DEMO_FAKE=1 scripts/demo.sh ...   simulated GPUs even where a real one is found
set -eu
B=${1:-build}
B=$(cd "$B" && pwd)
for f in "$B/bin/tesseld" "$B/bin/tessel" "$B/examples/fill-gpu" "$B/lib/libtessel-cuda.so"; do
    [ -e "$f" ] || { echo "demo: $f is missing: run make first" >&2; exit 1; }
done
command -v jq >/dev/null || { echo "demo: jq is missing (scripts/install-deps.sh)" >&2; exit 1; }

T=$(mktemp -d /tmp/tessel-demo-XXXXXX)
DPID=
RUNPID=
cleanup() {
    touch "$T/release" 2>/dev/null || true
    [ -n "$RUNPID" ] && kill "$RUNPID" 2>/dev/null
    if [ -n "$DPID" ]; then
        # Cancel what is left, then stop tesseld (jobs outlive it by design).
        for id in $("$B/bin/tessel" ps --json 2>/dev/null | jq -r '.jobs[].id' 2>/dev/null); do
            "$B/bin/tessel" kill "$id" >/dev/null 2>&1 || true
        done
        sleep 0.5
        kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
    fi
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -t 1 ]; then
    say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
else
    say() { printf '\n== %s\n' "$*"; }
fi
show() { # show CMD... : print the command as a person would type it, then run it
    printf '$ %s\n' "$(echo "$*" | sed "s|$B/bin/||; s|$B/examples/|./build/examples/|g; s|$T|\$DEMO|g")"
    "$@"
}
wait_for() { # wait_for SECONDS CMD
    _n=$(($1 * 10))
    while ! eval "$2"; do
        _n=$((_n - 1))
        [ $_n -gt 0 ] || { echo "demo: timed out waiting for: $2" >&2; exit 1; }
        sleep 0.1
    done
}

# Real GPU, or simulated ones?
FAKE=""
if [ "${TESSEL_DEMO_FAKE:-0}" != 1 ] && command -v nvidia-smi >/dev/null 2>&1 &&
    nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    KIND="real NVIDIA GPU(s): $(nvidia-smi -L | head -n 1)"
else
    FAKE="--fake-gpus 1xRTX4090:24G"
    KIND="SIMULATED GPU (no NVIDIA GPU found): 1 x RTX4090 24G, test double in $B/tests/fake"
fi

say "Starting tesseld on loopback (data dir $T/data)"
# shellcheck disable=SC2086
"$B/bin/tesseld" --data-dir "$T/data" --listen 127.0.0.1:0 --socket "$T/tesseld.sock" $FAKE \
    >"$T/tesseld.log" 2>&1 &
DPID=$!
wait_for 30 '[ -s "$T/data/tesseld.addr" ] && [ -s "$T/data/admin.token" ] || ! kill -0 $DPID'
kill -0 "$DPID" 2>/dev/null || { cat "$T/tesseld.log" >&2; exit 1; }
TESSEL_URL="http://$(cat "$T/data/tesseld.addr")"
TESSEL_TOKEN=$(cat "$T/data/admin.token")
export TESSEL_URL TESSEL_TOKEN
PATH="$B/bin:$PATH"
echo "tesseld at $TESSEL_URL on $KIND"
echo "(the CLI reads TESSEL_URL and TESSEL_TOKEN; \`tessel login\` would save them instead)"

say "The GPUs, before any job"
show tessel gpus

# Sizes: 8 GiB for the neighbour and 4 GiB for the demo job, less on a small real GPU.
MEMT=$(tessel gpus --json | jq '.gpus[0].memory_total')
GIB=1073741824
if [ "$MEMT" -ge $((16 * GIB)) ]; then N_MEM=8G D_MEM=4G; else
    N_MEM=$((MEMT / 4)) D_MEM=$((MEMT / 8)); fi

say "A neighbour: half a GPU with a slice of $N_MEM, filling it with 1 GiB chunks and holding it"
show tessel run -d --name neighbour --gpu 0.5 --gpu-mem "$N_MEM" -- \
    "$B/examples/fill-gpu" --chunk 1G --hold-file "$T/release"
NB=$(tessel ps --json | jq -r '.jobs[] | select(.name == "neighbour") | .id')
wait_for 60 'tessel logs --stdout $NB 2>/dev/null | grep -q holding'
show tessel logs "$NB"

say "The demo job, in the foreground: the other half of the GPU with a slice of $D_MEM"
# Its output is copied to $T/demo.out so that the script knows when it holds its memory.
(
    set +e
    show tessel run --name demo --gpu 0.5 --gpu-mem "$D_MEM" -- \
        "$B/examples/fill-gpu" --hold-file "$T/release"
    echo $? >"$T/demo.rc"
) 2>&1 | tee "$T/demo.out" &
RUNPID=$!
wait_for 60 'grep -qs holding "$T/demo.out"'
echo "(fill-gpu saw its slice, not the whole GPU, and was refused at the slice's limit)"

say "Both slices at work on one GPU"
show tessel gpus

say "A whole-GPU job queues while the GPU is shared"
show tessel run -d --name whole --gpu 1 -- "$B/examples/fill-gpu" --chunk 1G
W=$(tessel ps --json | jq -r '.jobs[] | select(.name == "whole") | .id')
wait_for 30 '[ "$(tessel ps --json | jq -r ".jobs[] | select(.id == $W) | .reason")" != null ]'
show tessel ps

say "Releasing the two halves: the demo job ends, the whole-GPU job starts"
touch "$T/release"
wait "$RUNPID" || true
RUNPID=
echo "(tessel run exited with the job's status: $(cat "$T/demo.rc"))"
wait_for 60 '[ "$(tessel ps -a --json | jq -r ".jobs[] | select(.id == $W) | .state")" = succeeded ]'
show tessel logs "$W"
show tessel ps -a

say "Done"
echo "The demo job was given 0.5 of the GPU and $D_MEM: CUDA reported $D_MEM as the device's memory"
echo "and refused the allocation that would have gone past it, while its neighbour kept its $N_MEM."
[ -n "$FAKE" ] && echo "These GPUs were SIMULATED (tesseld --fake-gpus): run on a machine with an NVIDIA GPU for the real thing."
exit 0
