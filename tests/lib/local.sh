# tests/lib/local.sh - local accounts for the tests of tesseld's local socket (source after
# tap.sh and daemon.sh).
#
#   need COND-EXIT-STATUS WHAT   fail the whole test (never skip) when something it needs is
#                                missing on this machine: root, curl, jq, useradd
#   local_account NAME [GROUP]   a system account NAME (created with useradd when absent; kept
#                                for the next runs), member of GROUP when given (created too)
#   as USER CMD...               run CMD (a command, optionally after VAR=VALUE words) as
#                                USER with an empty environment (but PATH and the sanitizers'
#                                options); its stdout and stderr go to ours
#   sock_api USER METHOD PATH [BODY] [HEADER...]
#                                request on $TD_SOCK as USER: answer in $TD/out, status in $CODE
need() {
    if [ "$1" -ne 0 ]; then
        echo "1..1"
        echo "not ok 1 - this test needs $2"
        exit 1
    fi
}

local_account() {
    if [ -n "${2:-}" ] && ! getent group "$2" >/dev/null; then
        groupadd -r "$2" || return 1
    fi
    if ! getent passwd "$1" >/dev/null; then
        useradd -r -M -d /nonexistent -s /usr/sbin/nologin "$1" || return 1
    fi
    if [ -n "${2:-}" ]; then
        usermod -a -G "$2" "$1" || return 1
    fi
    return 0
}

as() {
    _u=$1
    shift
    su -s /bin/sh "$_u" -c "cd /; exec env -i PATH=/usr/local/bin:/usr/bin:/bin \
        ASAN_OPTIONS='${ASAN_OPTIONS:-}' UBSAN_OPTIONS='${UBSAN_OPTIONS:-}' $*" </dev/null
}

sock_api() {
    _u=$1 _m=$2 _p=$3 _b=${4:-}
    shift 3
    [ $# -gt 0 ] && shift
    _args="-s -w '\\n%{http_code}' -X $_m --unix-socket $TD_SOCK"
    for _h in "$@"; do _args="$_args -H '$_h'"; done
    [ -n "$_b" ] && _args="$_args -H 'Content-Type: application/json' --data-binary '$_b'"
    _r=$(as "$_u" "curl $_args http://localhost$_p")
    CODE=$(printf '%s\n' "$_r" | tail -n 1)
    printf '%s\n' "$_r" | sed '$d' >"$TD/out"
}
