# tests/lib/jobsvc.sh - the set-up of the job web services tests (t7070-t7074,
# docs/job-services.md); source after tap.sh, daemon.sh, cli.sh and term.sh.
#
#   jobsvc_daemon [ARG...]   term_daemon (root, nobody's token $NB, bob's $BOB, $W) with
#                            --services-listen 127.0.0.1:$SVC_PORT (a free port below 1024, kept across a
#                            restart: jobsvc_restart) and ARG; $SVC is the listener's bare
#                            address (http://127.0.0.1:PORT, which serves no service)
#   jobsvc_restart           tesseld killed with -9 and started again on the same data and
#                            services port (the jobs run on); $TD_URL, $TESSEL_URL follow it
#   svc_url ID NAME          the origin of job ID's service NAME: http://jID-NAME.localhost:PORT
#                            (curl resolves names under localhost to 127.0.0.1 itself)
#   svc_ticket ID NAME [TOKEN]   POST the ticket (nobody's by default): $CODE, URL in $URL
#   svc_cookie URL           redeem a ticket URL: the cookie's value in $COOKIE ("" if none),
#                            the answer's status in $CODE, its headers in $TD/h, its body
#                            in $TD/body
#   svc_get ID NAME PATH [COOKIE] [CURL-ARG...]  GET $(svc_url ID NAME)/PATH with the cookie:
#                            status in $CODE, body in $TD/out, headers in $TD/h
#   svc_ws ID NAME PATH [COOKIE] [CURL-ARG...]  a WebSocket handshake there (curl): $CODE
jobsvc_daemon() {
    # A free port below 1024 on both loopbacks: tesseld takes only a port no other account may
    # bind (docs/job-services.md).  Not one of the ports browsers refuse to fetch from
    # (Chromium's restricted ports: net::ERR_UNSAFE_PORT; t7073 met 601 once).
    SVC_PORT=$(/usr/bin/python3 -c '
import random, socket
unsafe = {601, 636, 989, 990, 993, 995}
for p in random.sample([q for q in range(600, 1000) if q not in unsafe], 394):
    try:
        a = socket.socket(); a.bind(("127.0.0.1", p))
        b = socket.socket(socket.AF_INET6); b.bind(("::1", p))
        print(p); break
    except OSError:
        pass')
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
    CODE=$(curl -s -o "$TD/body" -D "$TD/h" -w '%{http_code}' --max-time 30 "$1")
    COOKIE=$(sed -n 's/^Set-Cookie: tessel-svc=\([^;]*\);.*/\1/p' "$TD/h" | tr -d '\r')
}
svc_url() {
    echo "http://j$1-$2.localhost:$SVC_PORT"
}
svc_get() {
    _u="$(svc_url "$1" "$2")/$3"
    _c=$4
    shift 4 2>/dev/null || shift $#
    CODE=$(curl -s -o "$TD/out" -D "$TD/h" -w '%{http_code}' --max-time 60 \
        ${_c:+-H "Cookie: tessel-svc=$_c"} "$@" "$_u")
}
svc_ws() {
    _u="$(svc_url "$1" "$2")/$3"
    _c=$4
    shift 4 2>/dev/null || shift $#
    CODE=$(curl -s -o "$TD/out" -w '%{http_code}' --max-time 5 ${_c:+-H "Cookie: tessel-svc=$_c"} \
        -H 'Upgrade: websocket' -H 'Connection: Upgrade' -H 'Sec-WebSocket-Version: 13' \
        -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' "$@" "$_u")
}
