# bench/lib/tesseld.sh - start and stop a tesseld for a benchmark (sourced).
#   Needs $B (the build directory) and $T (the benchmark's scratch directory).
#   bench_start [TESSELD ARG]...   a tesseld with its data in $T/data on a free loopback port and
#                                  $T/tesseld.sock, simulated GPUs as the arguments say; sets
#                                  PID, URL and TOKEN (the admin token); exits when it does not
#                                  start, with its log.
#   bench_stop                     stops it (nothing when none runs).
#   bench_cleanup                  stops it and removes $T (the scripts' EXIT trap).
PID=
bench_start() {
    rm -f "$T/data/tesseld.addr"
    "$B/bin/tesseld" --data-dir "$T/data" --listen 127.0.0.1:0 --socket "$T/tesseld.sock" \
        "$@" >>"$T/tesseld.log" 2>&1 &
    PID=$!
    _i=0
    while [ ! -s "$T/data/tesseld.addr" ]; do
        _i=$((_i + 1))
        if [ $_i -gt 300 ] || ! kill -0 "$PID" 2>/dev/null; then
            echo "$0: tesseld did not start:" >&2
            cat "$T/tesseld.log" >&2
            exit 1
        fi
        sleep 0.1
    done
    URL="http://$(cat "$T/data/tesseld.addr")"
    TOKEN=$(cat "$T/data/admin.token")
}
bench_stop() { [ -z "$PID" ] || { kill "$PID"; wait "$PID" 2>/dev/null || true; PID=; }; }
bench_cleanup() {
    [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    rm -rf "$T"
}
