#!/bin/sh
# test-timeout: 400
# t7070-jobsvc-jupyter.t - Jupyter in a job, through tesseld (docs/job-services.md): Debian's
# jupyter-notebook started by `tessel notebook`, reached on the services listener.
#   - the job: class interactive, its service jupyter on port 8888 with its URL;
#   - `tessel open JOB`: a ticketed URL; through it the notebook's HTTP API (its tree page, a
#     kernel started) and a cell executed over the kernel's WebSocket (tests/lib/jupyter-cell,
#     python3-websocket): print(6*7) gives 42;
#   - another user: no ticket (403), the owner's used URL (403), HTTP and WebSocket without a
#     cookie of his (403);
#   - tesseld killed (-9) and started again on the same services port: the sockets of jobs that
#     do not run are swept (the running job's kept); the job runs on, and
#     the same cookie opens the notebook again, a new WebSocket to a new kernel runs a cell.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
. "$TESSEL_SRCDIR/tests/lib/term.sh"
. "$TESSEL_SRCDIR/tests/lib/jobsvc.sh"
command -v jupyter-notebook >/dev/null || missing "jupyter-notebook is needed (scripts/install-deps.sh)"
/usr/bin/python3 -c 'import websocket' 2>/dev/null ||
    missing "Debian's python3-websocket is needed (scripts/install-deps.sh)"
CELL="$TESSEL_SRCDIR/tests/lib/jupyter-cell"
jobsvc_daemon

# nobody's home (/nonexistent, which tesseld sets) is not writable: Jupyter's and IPython's
# files go to the job's directory.
nbtessel notebook -d -e PATH=/usr/bin:/bin -e "JUPYTER_RUNTIME_DIR=$W/.rt" \
    -e "JUPYTER_DATA_DIR=$W/.jd" -e "JUPYTER_CONFIG_DIR=$W/.jc" -e "IPYTHONDIR=$W/.ip" \
    >"$TD/o" 2>"$TD/e"
is "$?" 0 "tessel notebook -d: submitted"
J=$(cat "$TD/o")
api GET "/v1/jobs/$J" "" "$NB"
is "$(jq -c '[.class, .shell, .services]' "$TD/out")" \
    "[\"interactive\",true,[{\"name\":\"jupyter\",\"port\":8888,\"url\":\"$(svc_url "$J" jupyter)/\"}]]" \
    "the job: class interactive, Jupyter's command, its service jupyter on port 8888 at its own host"
jget '.argv[0]' | grep -q -- "base_url"
is "$?" 1 "... Jupyter at the root of its host (no base URL)"
wait_for '[ "$(api GET /v1/jobs/$J "" "$NB"; jget .state)" = running ]'
# Jupyter listening in the job: the socket answers (root reaches it).
S="$TD/data/jobsvc/j$J-jupyter.sock"
wait_for "curl -s -o /dev/null --max-time 5 --unix-socket '$S' http://x/api"
api GET "/v1/jobs/$J" "" "$NB"
[ "$(jget .state)" = running ] || sed 's/^/# /' "$TD/data/jobs/$J/stderr"

nbtessel open "$J" >"$TD/o" 2>"$TD/e"
is "$?" 0 "tessel open $J: a URL"
URL=$(cat "$TD/o")
case "$URL" in "$(svc_url "$J" jupyter)/?tessel-ticket="*) r=0 ;; *) r=1 ;; esac
ok $r "... the notebook's, with a ticket ($URL)"
timeout 200 "$CELL" "$URL" 'print(6*7)' >"$TD/cell" 2>&1
is "$?" 0 "a cell through tesseld: ticket, tree, kernel, WebSocket, execute"
sed 's/^/# /' "$TD/cell"
grep -qx "output: 42" "$TD/cell"; ok $? "... print(6*7) printed 42"
grep -qx "tree: 200 xsrf yes" "$TD/cell"; ok $? "... the notebook's page and its _xsrf cookie came through"

# Another user, on every path.
OWNER_URL=$URL
svc_ticket "$J" jupyter "$BOB"
is "$CODE" 403 "another user's ticket request: 403"
svc_cookie "$OWNER_URL"
is "$CODE" 403 "the owner's URL, used already (stolen): 403"
svc_get "$J" jupyter "api/kernels" ""
is "$CODE" 403 "the notebook's API without a cookie: 403"
svc_ws "$J" jupyter "api/kernels/x/channels" ""
is "$CODE" 403 "a kernel's WebSocket without a cookie: 403"

# tesseld restarted: the job runs on, the notebook opens again with the same cookie.
svc_ticket "$J" jupyter
svc_cookie "$URL"
C=$COOKIE
# A socket left by a shim killed with -9 (nothing listens), and a file that is no socket.
/usr/bin/python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' \
    "$TD/data/jobsvc/j999-web.sock"
: >"$TD/data/jobsvc/j998-web.sock"
jobsvc_restart
api GET "/v1/jobs/$J" "" "$NB"
is "$(jget .state)" running "tesseld restarted (kill -9): the notebook's job runs on"
[ ! -e "$TD/data/jobsvc/j999-web.sock" ] && [ -S "$S" ] && [ -f "$TD/data/jobsvc/j998-web.sock" ]
ok $? "... the socket of a job that does not run is swept, the running job's kept, a file not a socket left alone"
timeout 200 "$CELL" "$(svc_url "$J" jupyter)/" 'print(sum(range(10)))' --cookie "$C" >"$TD/cell" 2>&1
is "$?" 0 "the cookie of before opens it through the new tesseld: kernel, WebSocket, execute"
sed 's/^/# /' "$TD/cell"
grep -qx "output: 45" "$TD/cell"; ok $? "... the cell ran (45)"
api POST "/v1/jobs/$J/cancel" "" "$NB"
wait_for '[ "$(api GET /v1/jobs/$J "" "$NB"; jget .state)" = cancelled ]'
done_testing
