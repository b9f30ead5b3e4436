# tests/lib/daemon.sh - run a tesseld on loopback for integration tests (source after tap.sh).
#
#   td_setup                  temp dir $TD (removed at exit, with the daemons still running)
#   td_start [ARG...]         start tesseld on 127.0.0.1:<free port> and the local socket
#                             $TD/tesseld.sock, with data dir $TD/data; sets TD_PID, TD_URL,
#                             TD_SOCK, TD_ADMIN (admin token); when it does not start, the
#                             test fails at once (missing, tests/lib/tap.sh)
#   td_kill9 / td_stop        kill -9 / SIGTERM the daemon and wait for it (td_stop returns
#                             its exit status, non-zero after a sanitizer report)
#   api METHOD PATH [BODY] [TOKEN]   request; body of the answer in $TD/out, status in $CODE
#   jget FILTER               jq -r FILTER on the last answer
#   wait_for CMD...           retry CMD (a shell command) every 0.1 s for up to 60 s
#   td_proxies                the pids of the data directory's HAProxy processes, a line each
: "${TESSEL_BUILD:=build}"

td_setup() {
    TD=$(mktemp -d /tmp/tessel-t3-XXXXXX)
    TD_PIDS=""
    trap td_cleanup EXIT
    # Stopped from outside (tests/run's time box sends SIGTERM): clean up too, or the jobs the
    # test started (their shims are in their own sessions) would outlive it.
    trap 'exit 143' TERM INT HUP
}

td_cleanup() {
    # Under `make coverage`, a daemon the test left running gets SIGTERM first (it exits
    # through main and writes its coverage counts); it is killed if still there 5 s later.
    if [ "${TESSEL_COVERAGE:-0}" = 1 ]; then
        for p in $TD_PIDS; do kill -TERM "$p" 2>/dev/null; done
        for p in $TD_PIDS; do
            _i=0
            while kill -0 "$p" 2>/dev/null && [ $_i -lt 50 ]; do
                _i=$((_i + 1))
                sleep 0.1
            done
        done
    fi
    for p in $TD_PIDS; do kill -9 "$p" 2>/dev/null; done
    # The inference services' proxy (docs/serving.md) outlives tesseld by design: every one
    # of this data directory's, haproxy.pid's and any it does not name (one a reload was
    # replacing, one started as tesseld was killed).
    if [ -s "$TD/data/serve/haproxy.pid" ]; then
        kill -9 "$(cat "$TD/data/serve/haproxy.pid")" 2>/dev/null
    fi
    if [ -d "$TD/data/serve" ]; then
        for _p in $(td_proxies); do kill -9 "$_p" 2>/dev/null; done
    fi
    # Jobs left running by the test: their shims are in their own sessions.
    if [ -d "$TD/data/jobs" ]; then
        for f in "$TD"/data/jobs/*/pid; do
            [ -f "$f" ] || continue
            read -r shim _ job <"$f"
            # No "--": dash's kill takes none (it would refuse the whole line).
            kill -9 "-$job" "$shim" 2>/dev/null
        done
    fi
    if [ -n "${TD_CG:-}" ]; then
        for c in $TD_CG; do find "$c" -depth -type d -exec rmdir {} \; 2>/dev/null; done
    fi
    rm -rf "$TD"
}

# td_proxies: the pids of HAProxy itself (its executable) whose arguments are "-f" then
# exactly this data directory's configuration path, sorted, a line each.
td_proxies() {
    for _q in $(pgrep -x haproxy 2>/dev/null); do
        [ "$(readlink "/proc/$_q/exe" 2>/dev/null)" = /usr/sbin/haproxy ] &&
            tr '\0' '\n' <"/proc/$_q/cmdline" 2>/dev/null | grep -Fx -A1 -- -f |
            grep -Fxq -- "$TD/data/serve/haproxy.cfg" && echo "$_q"
    done | sort -n
}

td_start() {
    mkdir -p "$TD/data"
    rm -f "$TD/data/tesseld.addr"
    TD_SOCK="$TD/tesseld.sock"
    "$TESSEL_BUILD/bin/tesseld" --data-dir "$TD/data" --listen 127.0.0.1:0 \
        --socket "$TD_SOCK" "$@" >>"$TD/tesseld.log" 2>&1 &
    TD_PID=$!
    TD_PIDS="$TD_PIDS $TD_PID"
    i=0
    while [ ! -s "$TD/data/tesseld.addr" ]; do
        i=$((i + 1))
        if [ $i -gt 600 ] || ! kill -0 "$TD_PID" 2>/dev/null; then
            # A test that needs the daemon fails here, whatever its caller does next.
            diag "tesseld did not start:"; sed 's/^/#   /' "$TD/tesseld.log"
            missing "tesseld did not start (tesseld $*)"
        fi
        sleep 0.1
    done
    TD_URL="http://$(cat "$TD/data/tesseld.addr")"
    TD_ADMIN=$(cat "$TD/data/admin.token")
}

td_kill9() {
    kill -9 "$TD_PID" 2>/dev/null
    wait "$TD_PID" 2>/dev/null
    return 0
}

# SIGTERM, wait; returns tesseld's exit status (non-zero also when a sanitizer reported).
td_stop() {
    kill -TERM "$TD_PID" 2>/dev/null
    wait "$TD_PID" 2>/dev/null
    _st=$?
    if grep -q -E 'Sanitizer|runtime error' "$TD/tesseld.log"; then
        diag "sanitizer report in tesseld's log:"; sed 's/^/#   /' "$TD/tesseld.log" | head -60
        return 1
    fi
    return $_st
}

api() {
    _m=$1 _p=$2 _b=${3:-} _t=${4-$TD_ADMIN}
    set -- -s -o "$TD/out" -w '%{http_code}' -X "$_m"
    [ -n "$_t" ] && set -- "$@" -H "Authorization: Bearer $_t"
    [ -n "$_b" ] && set -- "$@" -H 'Content-Type: application/json' --data-binary "$_b"
    CODE=$(curl "$@" "$TD_URL$_p")
}

jget() {
    jq -r "$1" "$TD/out"
}

wait_for() {
    _i=0
    while ! eval "$1"; do
        _i=$((_i + 1))
        [ $_i -gt 600 ] && return 1
        sleep 0.1
    done
    return 0
}

# token_of NAME -> makes user NAME (as the admin) and prints a new API token of theirs
token_of() {
    api POST /v1/users "{\"name\":\"$1\"}"
    api POST /v1/tokens "{\"user\":\"$1\"}"
    jget .token
}

# start_record ID pid|exit -> prints the record job ID's shim wrote into its start lock
# (starts/ID.lock; src/agent/runner.h, TAGENT_LOCK_*: the pid record in bytes 128-255, the exit
# record in 256-511), nothing when there is none (yet).
start_record() {
    case $2 in pid) _sr_off=128 ;; exit) _sr_off=256 ;; *) return 1 ;; esac
    tail -c +$((_sr_off + 1)) "$TD/data/starts/$1.lock" 2>/dev/null | head -c 128 |
        { IFS= read -r _sr_line && printf '%s' "$_sr_line"; } 2>/dev/null | tr -d '\000'
}

# job_state ID [TOKEN] -> prints the state
job_state() {
    api GET "/v1/jobs/$1" "" "${2-$TD_ADMIN}"
    jget .state
}
