# tests/interposer/tcu.sh - shared setup of the interposer's shell tests.
# Source after tests/lib/tap.sh.  Fails the whole test (never skips) when the
# fake driver, the interposer or the helpers are not built.  Gives:
#   probe ARGS...      tcu-probe with the interposer preloaded
#   probe_bare ARGS... tcu-probe without it
#   val KEY TEXT       the value of KEY=... in TEXT (first match)
#   tcu_need_nvml      fail the test unless the fake NVML is built
#   hold_probe NAME STEPS...  run the probe in a slice until released: its output in $TMP/NAME,
#                      $pid (the probe itself), fd 3 (its stdin); release ends it
#   used / truth PID [DEV] / lines PREFIX NAME   the slice's count on device 0, the driver's
#                      own figure for PID (fake NVML), NAME's output lines starting with PREFIX
# Device: one fake 8 GiB GPU whose contexts cost 64 MiB, state shared by
# every process of the test through $TMP/fake-state.  TCU_FAKE_DIR points
# at another build of the fake driver when set.
FAKE=${TCU_FAKE_DIR:-$TESSEL_BUILD/tests/fake}
PRE=$TESSEL_BUILD/lib/libtessel-cuda.so
HELPERS=$TESSEL_BUILD/tests/interposer
PROBE=$HELPERS/tcu-probe
tcu_missing() { echo "1..1"; echo "not ok 1 - $1"; exit 1; }
[ -e "$FAKE/libcuda.so.1" ] || tcu_missing "fake driver not built ($FAKE/libcuda.so.1)"
[ -e "$PRE" ] || tcu_missing "interposer not built ($PRE)"
[ -x "$PROBE" ] || tcu_missing "tcu-probe not built ($PROBE)"
TMP=$(mktemp -d /tmp/tessel-tcu.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
export LD_LIBRARY_PATH="$FAKE${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TESSEL_FAKE_GPUS=1xT4:8G TESSEL_FAKE_CTX_MEM=64M TESSEL_FAKE_STATE="$TMP/fake-state"
export TCU_PLUGIN="$HELPERS/tcu-plugin.so"
unset TESSEL_SLICE TESSEL_CUDA_MEM_LIMIT CUDA_VISIBLE_DEVICES
MiB=1048576
probe() { LD_PRELOAD="$PRE" "$PROBE" "$@"; }
probe_bare() { "$PROBE" "$@"; }
val() { printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -n 1; }
# wait_until CMD...: retry CMD every 50 ms; after 60 s, fail the test (a
# helper that died must not hang the suite).
wait_until() {
    _w=0
    while ! "$@"; do
        _w=$((_w + 1))
        if [ $_w -ge 1200 ]; then
            echo "not ok - gave up waiting for: $*"
            exit 1
        fi
        sleep 0.05
    done
}
holding() { grep -q holding "$1" 2>/dev/null; }
tcu_need_nvml() {
    [ -e "$FAKE/libnvidia-ml.so.1" ] || tcu_missing "fake NVML not built ($FAKE/libnvidia-ml.so.1)"
}
hold_probe() {
    _n=$1
    shift
    rm -f "$TMP/hold"
    # The output file goes first: the shell below truncates it only once it runs, and a name
    # used again (t0529's loop) would meanwhile show the last probe's "holding" to wait_until.
    rm -f "$TMP/$_n"
    mkfifo "$TMP/hold"
    (LD_PRELOAD="$PRE" exec "$PROBE" "$@" hold <"$TMP/hold" >"$TMP/$_n" 2>&1) &
    pid=$!
    exec 3>"$TMP/hold"
    wait_until holding "$TMP/$_n"
}
release() {
    exec 3>&-
    wait $pid
}
used() { val used "$("$HELPERS/tcu-slice" "$TESSEL_SLICE" | grep '^device 0 ')"; }
truth() { val used "$(probe_bare "nvmlproc:$1${2:+:$2}" | grep '^nvmlproc')"; }
lines() { grep "^$1" "$TMP/$2" | tr '\n' ' '; }
