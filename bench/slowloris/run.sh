#!/bin/sh
# bench/slowloris/run.sh - bench-slowloris against a tesseld of its own (temporary data dir,
# a free loopback port, one simulated GPU).  The attacker binds 127.0.0.2, the probes
# 127.0.0.1 (any 127.0.0.0/8 address is local on Linux).
#
#   bench/slowloris/run.sh [BUILD_DIR] [bench-slowloris options]    (after `make bench`)
#   e.g. bench/slowloris/run.sh build --connections 2000 --probes 240
#
# TESSELD_ARGS="..." adds options to tesseld's command line, e.g.
# "--max-connections-per-client 1024" for tesseld without a per-client bound (as before).
set -eu
B=${1:-build}
[ $# -gt 0 ] && shift
for f in "$B/bin/tesseld" "$B/bench/bench-slowloris"; do
    [ -x "$f" ] || { echo "run.sh: $f is missing (make bench)" >&2; exit 1; }
done
T=$(mktemp -d "${TMPDIR:-/tmp}/tessel-bench-XXXXXX")
PID=
cleanup() {
    [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT INT TERM
# Thread per connection: room for a few thousand threads and descriptors.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
"$B/bin/tesseld" --data-dir "$T/data" --listen 127.0.0.1:0 --fake-gpus 1xT4:16G --no-cgroups \
    ${TESSELD_ARGS:-} >"$T/tesseld.log" 2>&1 &
PID=$!
i=0
while [ ! -s "$T/data/tesseld.addr" ]; do
    i=$((i + 1))
    if [ $i -gt 300 ] || ! kill -0 "$PID" 2>/dev/null; then
        echo "run.sh: tesseld did not start:" >&2
        cat "$T/tesseld.log" >&2
        exit 1
    fi
    sleep 0.1
done
echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs, $(uname -sr), build $B, load $(cut -d' ' -f1 /proc/loadavg)${TESSELD_ARGS:+, tesseld $TESSELD_ARGS}"
"$B/bench/bench-slowloris" --url "$(cat "$T/data/tesseld.addr")" "$@"
echo "# tesseld: $(grep -c . "$T/tesseld.log") log lines, threads at the end: $(ls /proc/$PID/task | wc -l)"
