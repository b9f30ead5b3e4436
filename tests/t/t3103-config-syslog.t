#!/bin/sh
# t3103-config-syslog.t - tesseld's own log to syslog(3): with --log syslog (and with --log
# auto when stderr is /dev/null) its messages reach /dev/log, tagged tesseld[PID], facility
# daemon, with the level as syslog's priority, and not stderr; --log-level warning keeps the
# warnings and drops the info messages.  /dev/log is a socket the test binds (socat) in a
# mount namespace of its own, so no syslog daemon is needed and the machine's is untouched.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
[ -x "$TESSEL_BUILD/bin/tesseld" ] || missing "tesseld not built"
[ "$(id -u)" -eq 0 ] || missing "root (a mount namespace)"
command -v socat >/dev/null || missing "socat is needed"
command -v unshare >/dev/null || missing "unshare (util-linux) is needed"

T=$(mktemp -d /tmp/tessel-t3103-XXXXXX) || missing "mktemp"
SOCAT=""
TPID=""
cleanup() {
    [ -n "$TPID" ] && kill -9 "$TPID" 2>/dev/null
    [ -n "$SOCAT" ] && kill "$SOCAT" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
mkdir "$T/dev" "$T/dev/shm"
for n in null zero random urandom full; do : >"$T/dev/$n"; done

# run NAME ARG...: tesseld ARG... with /dev/log = a socket whose datagrams land in
# $T/NAME.syslog; stderr in $T/NAME.err (or $ERR); stopped (SIGTERM) once it listens.  (Only
# tesseld's /dev/log and the devices it needs are in the namespace's /dev: /tmp may be nodev,
# so files such as stderr are opened outside.)
run() {
    _n=$1
    shift
    rm -f "$T/dev/log" "$T/data/tesseld.addr"
    socat -u UNIX-RECV:"$T/dev/log" OPEN:"$T/$_n.syslog",creat,append &
    SOCAT=$!
    while [ ! -S "$T/dev/log" ]; do sleep 0.05; done
    unshare -m --propagation private sh -c '
        D=$1; shift
        for n in null zero random urandom full; do mount --bind /dev/$n "$D/dev/$n"; done
        mount --bind /dev/shm "$D/dev/shm"
        mount --rbind "$D/dev" /dev
        exec "$@"' sh "$T" "$TESSEL_BUILD/bin/tesseld" --data-dir "$T/data" --no-socket \
        --listen 127.0.0.1:0 --no-cgroups "$@" 2>"${ERR:-$T/$_n.err}" &
    TPID=$!
    _i=0
    while [ ! -s "$T/data/tesseld.addr" ] && kill -0 "$TPID" 2>/dev/null && [ $_i -lt 600 ]; do
        _i=$((_i + 1))
        sleep 0.1
    done
    kill -TERM "$TPID"
    wait "$TPID"
    RC=$?
    TPID=""
    sleep 0.2 # socat writes what it received
    kill "$SOCAT"
    wait "$SOCAT" 2>/dev/null
    SOCAT=""
}

run sys --log syslog --fake-gpus 1xT4:16G
is "$RC" 0 "tesseld --log syslog ran and stopped cleanly"
# LOG_DAEMON (3 << 3) + LOG_INFO (6) = <30>
grep -q '<30>.*tesseld\[[0-9]*\]: listening on http://127.0.0.1:' "$T/sys.syslog"
ok $? "'listening on' reached /dev/log at daemon.info, tagged tesseld[PID]"
grep -q '<30>.*tesseld\[[0-9]*\]: stopping; 0 running job' "$T/sys.syslog"
ok $? "so did 'stopping'"
grep -q 'listening on' "$T/sys.err"
ok $((!$?)) "and not stderr"

run warn --log syslog --log-level warning --nvml /nonexistent/libnvidia-ml.so.1
is "$RC" 0 "tesseld --log-level warning ran and stopped cleanly"
# LOG_DAEMON + LOG_WARNING (4) = <28>; the "warning: " of the text is the priority now.
grep -q '<28>.*tesseld\[[0-9]*\]: no GPU found' "$T/warn.syslog"
ok $? "a warning reached /dev/log at daemon.warning"
grep -q 'listening on' "$T/warn.syslog"
ok $((!$?)) "an info message did not (--log-level warning)"

# auto: stderr is /dev/null (a daemon started by an init script): syslog.
ERR=/dev/null run auto --fake-gpus 1xT4:16G
grep -q '<30>.*tesseld\[[0-9]*\]: listening on' "$T/auto.syslog"
ok $? "--log auto with stderr on /dev/null: syslog" || sed "s/^/#  /" "$T/auto.syslog" | head -5
done_testing
