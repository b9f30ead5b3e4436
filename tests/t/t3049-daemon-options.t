#!/bin/sh
# t3049-daemon-options.t - tesseld's command line: every option that takes a value refuses a
# bad one with exit status 2 and one line naming the option (nothing is created, no daemon
# runs); contradictory options are refused the same way; --help and --version answer on stdout
# with status 0 and list the options an admin looks for.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
[ -x "$TESSEL_BUILD/bin/tesseld" ] || missing "tesseld not built"
command -v timeout >/dev/null || missing "timeout (coreutils) is needed"

T=$(mktemp -d /tmp/tessel-t3049-XXXXXX) || missing "mktemp"
trap 'rm -rf "$T"' EXIT

# refused NAME WANT ARG...: tesseld ARG... exits 2, says WANT on stderr, prints nothing on
# stdout and leaves no data directory behind.
refused() {
    _name=$1 _want=$2
    shift 2
    rm -rf "$T/data"
    timeout 20 "$TESSEL_BUILD/bin/tesseld" --data-dir "$T/data" "$@" >"$T/out" 2>"$T/err"
    _rc=$?
    _ok=0
    [ "$_rc" -eq 2 ] || _ok=1
    grep -qF -- "$_want" "$T/err" || _ok=1
    [ -s "$T/out" ] && _ok=1
    [ -e "$T/data" ] && _ok=1
    ok $_ok "$_name: exit 2 ($_rc), says '$_want'"
    [ $_ok -eq 0 ] || sed 's/^/#   /' "$T/err"
}

refused "an unknown option" "unrecognized option '--bogus'" --bogus
refused "a stray argument" "usage: tesseld" stray
refused "--listen without a port" "--listen nope: expected HOST:PORT" --listen nope
refused "--min-runtime below 0" "--min-runtime -1: expected seconds >= 0" --min-runtime -1
refused "--reserve-after not a duration" "--reserve-after soon:" --reserve-after soon
refused "--durability neither normal nor full" "--durability maybe: expected normal or full" \
    --durability maybe
refused "--gpu-mem-violation neither kill nor suspend" \
    "--gpu-mem-violation warn: expected kill or suspend" --gpu-mem-violation warn
refused "--local-users neither create nor existing" \
    "--local-users maybe: expected create or existing" --local-users maybe
refused "--system with --personal" "give one of --system and --personal" --system --personal
refused "--no-socket with --no-listen" "leave no way to reach tesseld" --no-socket --no-listen
refused "--socket with --no-socket" "give one of --socket and --no-socket" \
    --socket "$T/s.sock" --no-socket
refused "--max-connections 0" "--max-connections 0: expected a whole number" --max-connections 0
refused "--max-connections-per-client x" "--max-connections-per-client x: expected a whole number" \
    --max-connections-per-client x
refused "--request-timeout x" "--request-timeout x: expected a whole number" --request-timeout x
refused "--ckpt-copies-per-gpu 0" "--ckpt-copies-per-gpu 0: expected a whole number from 1 to 16" \
    --ckpt-copies-per-gpu 0
refused "--ckpt-copies-per-gpu 17" "--ckpt-copies-per-gpu 17: expected a whole number from 1 to 16" \
    --ckpt-copies-per-gpu 17
refused "--max-body below 1K" "--max-body 1: expected a size from 1K to 16M" --max-body 1
refused "--submit-rate x" "--submit-rate x: expected submissions a second" --submit-rate x
refused "--submit-burst x" "--submit-burst x: expected a whole number" --submit-burst x
refused "--admin-submit-rate x" "--admin-submit-rate x: expected submissions a second" \
    --admin-submit-rate x
refused "--disk-reserve x" "--disk-reserve x:" --disk-reserve x
refused "--log-limit x" "--log-limit x:" --log-limit x
refused "--kill-wait x" "--kill-wait x:" --kill-wait x
refused "--test-kill-at bogus" "--test-kill-at bogus: expected running" --test-kill-at bogus

timeout 20 "$TESSEL_BUILD/bin/tesseld" --help >"$T/out" 2>"$T/err"
is "$?" 0 "--help exits 0"
_missing=""
for o in --data-dir --listen --socket --reserve-after --kill-wait --log-limit --disk-reserve \
    --gpu-mem-violation --fake-gpus --system --personal; do
    grep -qF -- "$o" "$T/out" || _missing="$_missing $o"
done
is "$_missing" "" "--help lists the options an admin looks for, on stdout"
timeout 20 "$TESSEL_BUILD/bin/tesseld" --version >"$T/out" 2>"$T/err"
is "$? $(cut -d' ' -f1 "$T/out")" "0 tesseld" "--version: 'tesseld VERSION', exit 0"
done_testing
