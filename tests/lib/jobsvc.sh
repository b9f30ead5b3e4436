# tests/lib/jobsvc.sh - the set-up of the job web services tests (t7070-t7072,
# docs/job-services.md); source after tap.sh, daemon.sh, cli.sh and term.sh.
#
#   jobsvc_daemon [ARG...]   term_daemon (root, nobody's token $NB, bob's $BOB, $W) with
#                            --services-listen 127.0.0.1:$SVC_PORT (a free port, kept across a
#                            restart: jobsvc_restart) and ARG
#   jobsvc_restart           tesseld killed with -9 and started again on the same data and
#                            services port (the jobs run on); $TD_URL, $TESSEL_URL follow it
#   svc_ticket ID NAME [TOKEN]   POST the ticket (nobody's by default): $CODE, URL in $URL
#   svc_cookie URL           redeem a ticket URL: the cookie's value in $COOKIE ("" if none),
#                            the answer's status in $CODE and its headers in $TD/h
#   svc_get PATH [COOKIE] [CURL-ARG...]  GET http://127.0.0.1:$SVC_PORT/PATH with the cookie:
#                            status in $CODE, body in $TD/out, headers in $TD/h
#   svc_ws PATH [COOKIE]     a WebSocket handshake there (curl): status in $CODE
jobsvc_daemon() {
    SVC_PORT=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    JOBSVC_ARGS="--services-listen 127.0.0.1:$SVC_PORT $*"
    # shellcheck disable=SC2086
    term_daemon $JOBSVC_ARGS
    SVC="http://127.0.0.1:$SVC_PORT"
}
jobsvc_restart() {
    td_kill9
    # shellcheck disable=SC2086
    td_start --fake-gpus 1xT4:8G --no-cgroups $JOBSVC_ARGS
    TESSEL_URL="$TD_URL"
    export TESSEL_URL
}
svc_ticket() {
    api POST "/v1/jobs/$1/services/$2/ticket" "" "${3:-$NB}"
    URL=$(jget .url)
}
svc_cookie() {
    CODE=$(curl -s -o /dev/null -D "$TD/h" -w '%{http_code}' --max-time 30 "$1")
    COOKIE=$(sed -n 's/^Set-Cookie: tessel-svc=\([^;]*\);.*/\1/p' "$TD/h" | tr -d '\r')
}
svc_get() {
    _p=$1
    _c=$2
    shift 2 2>/dev/null || shift $#
    CODE=$(curl -s -o "$TD/out" -D "$TD/h" -w '%{http_code}' --max-time 60 \
        ${_c:+-H "Cookie: tessel-svc=$_c"} "$@" "$SVC/$_p")
}
svc_ws() {
    CODE=$(curl -s -o "$TD/out" -w '%{http_code}' --max-time 5 ${2:+-H "Cookie: tessel-svc=$2"} \
        -H 'Upgrade: websocket' -H 'Connection: Upgrade' -H 'Sec-WebSocket-Version: 13' \
        -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' "$SVC/$1")
}
