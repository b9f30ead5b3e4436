#!/bin/sh
# t7060-serve-replica-private.t - a service's replica is reachable only through the proxy, by
# its owner and by root (docs/serving.md, "How a replica is reached"; docs/security.md, H1),
# with tesseld as root and two local accounts made here (removed at the end): tslrpo owns a
# service whose replica answers a secret of this run; tslrpx, another account of the node:
#   - the replica listens on 127.0.0.1:PORT in a network namespace of its own (loopback only):
#     the host's table of sockets has nothing on PORT;
#   - tslrpx tries every TCP port that listens on the host's loopback (or on every address),
#     from /proc/net/tcp and tcp6, with curl: none answers the replica's secret; nor does
#     tslrpx open the replica's Unix socket, or list the directory it is in;
#   - the owner's API token through the proxy gets the secret, and tslrpx's token 401;
#   - the owner reaches the replica on its socket (curl --unix-socket), as does root, and the
#     owner cannot remove or replace it; the socket is tslrpo's and haproxy's group's, 0660;
#     `tessel exec` into the replica runs in its namespace (127.0.0.1:$PORT answers there);
#   - the forwarder runs as the owner, without a capability, with no new privileges, in the
#     replica's namespace; its shim killed, a new replica replaces it and tesseld removes the
#     old socket; removing the service ends it and removes the socket.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/local.sh"
command -v curl >/dev/null && command -v jq >/dev/null
need $? "curl and jq"
[ "$(id -u)" = 0 ]
need $? "root (tesseld runs the replicas as their owners' accounts)"
command -v useradd >/dev/null && command -v userdel >/dev/null
need $? "useradd and userdel"
[ -x /usr/sbin/haproxy ] && getent group haproxy >/dev/null
need $? "haproxy and its account (Debian's haproxy package)"
[ -x /usr/bin/python3 ]
need $? "/usr/bin/python3 (the replica's server, run as the owner's account)"

OWNER=tslrpo
OTHER=tslrpx
rmacc() {
    for u in $OWNER $OTHER; do
        getent passwd $u >/dev/null && userdel $u 2>/dev/null
        getent group $u >/dev/null && groupdel $u 2>/dev/null
    done
    true
}
rmacc
for u in $OWNER $OTHER; do useradd -r -M -d /nonexistent -s /usr/sbin/nologin $u || break; done
need $? "useradd to create the accounts $OWNER and $OTHER"

td_setup
trap 'td_cleanup; rmacc' EXIT
# HAProxy (as haproxy) reaches the replicas' sockets below the data directory, as it does in
# /var/lib/tessel (0711).
chmod 711 "$TD"
td_start --fake-gpus 1xT4:16G --no-cgroups
token_of() { # token_of USER: creates the Tessel user, prints a token of theirs
    api POST /v1/users "{\"name\":\"$1\"}"
    api POST /v1/tokens "{\"user\":\"$1\"}"
    jget .token
}
A=$(token_of $OWNER)
X=$(token_of $OTHER)

# The replica: answers every path with this run's secret (and 200 at /health), one connection
# at a time, on 127.0.0.1:$PORT.
SECRET="replica-secret-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
cat >"$TD/srv.py" <<'PY'
import http.server, os, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    def do_GET(self):
        body = (sys.argv[1] + "\n").encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", int(os.environ["PORT"])), H).serve_forever()
PY
chmod 644 "$TD/srv.py"

api POST /v1/services "{\"name\":\"priv\",\"argv\":[\"/usr/bin/python3\",\"$TD/srv.py\",\"$SECRET\"],
    \"replicas\":1}" "$A"
is "$CODE" 201 "$OWNER creates service priv (one replica)"
EP=$(jget .port)
RPORT=$(jget '.replica_jobs[0].port')
JOB=$(jget '.replica_jobs[0].job')
SOCK="$TD/data/replicas/r$JOB.sock"
call() { # call TOKEN: the proxy's answer "CODE BODY"
    curl -s -m 5 -o "$TD/call" -w '%{http_code}' -H "Authorization: Bearer $1" \
        "http://127.0.0.1:$EP/x"
    printf ' %s' "$(cat "$TD/call" 2>/dev/null)"
}
wait_for '[ "$(call "$A")" = "200 $SECRET" ]'
ok $? "the owner's token through the proxy reaches the replica (200, its secret)"
is "$(call "$X" | head -c 3)" 401 "$OTHER's token is refused by the proxy (401)"
grep -q "^    server r$JOB unix@$SOCK weight " "$TD/data/serve/haproxy.cfg"
ok $? "the proxy's server for the replica is its Unix socket"

# The replica's process and its namespace.
read -r SHIM _ JPID <"$TD/data/jobs/$JOB/pid"
is "$(stat -c %U /proc/"$JPID")" $OWNER "the replica runs as its owner's account"
hexport=$(printf '%04X' "$RPORT")
# listening PROCFILE PORTHEX: the lines of sockets listening on that port (state 0A).
listening() { awk -v p="$2" '$4 == "0A" && toupper(substr($2, index($2, ":") + 1)) == p' "$1"; }
[ -n "$(listening /proc/"$JPID"/net/tcp "$hexport")" ]
ok $? "the replica listens on 127.0.0.1:$RPORT in its own network namespace"
[ -z "$(listening /proc/net/tcp "$hexport")$(listening /proc/net/tcp6 "$hexport")" ]
ok $? "nothing listens on port $RPORT in the host's namespace"
[ "$(readlink /proc/"$JPID"/ns/net)" != "$(readlink /proc/self/ns/net)" ]
ok $? "the replica's network namespace is not the host's"
is "$(awk -F: 'NR > 2 { gsub(/ /, "", $1); print $1 }' /proc/"$JPID"/net/dev | tr '\n' ' ')" \
    "lo " "its only interface is the loopback"

# Every TCP port listening on the host's loopback or on every address, tried as OTHER.  A
# control: the same server, run by the owner outside Tessel on a port of the kernel's choice,
# is found by the same scan (so the scan would find the replica if it listened there).
CONTROL="control-$SECRET"
as $OWNER "PORT=0 /usr/bin/python3 $TD/srv.py $CONTROL" >"$TD/control.log" 2>&1 &
wait_for '[ -n "$(awk -v u="$(id -u $OWNER)" '"'"'$4 == "0A" && $8 == u'"'"' /proc/net/tcp)" ]'
{
    awk '$4 == "0A" { split($2, a, ":"); if (a[1] == "0100007F" || a[1] == "00000000")
        print "127.0.0.1 " a[2] }' /proc/net/tcp
    awk '$4 == "0A" { split($2, a, ":");
        if (a[1] == "00000000000000000000000001000000" || a[1] == "00000000000000000000000000000000")
        print "[::1] " a[2] }' /proc/net/tcp6
} | sort -u >"$TD/ports"
n=0 hits=0 control=0 seen_ep=no
while read -r host hex; do
    port=$((0x$hex))
    n=$((n + 1))
    [ "$port" = "$EP" ] && seen_ep=yes
    as $OTHER "curl -s -m 1 --max-filesize 65536 http://$host:$port/x" >"$TD/scan" 2>/dev/null
    if grep -q "^$CONTROL\$" "$TD/scan"; then
        control=$((control + 1))
    elif grep -q "$SECRET" "$TD/scan"; then
        hits=$((hits + 1))
        diag "port $port answered the secret"
    fi
done <"$TD/ports"
pkill -KILL -u $OWNER -f "srv.py $CONTROL"
[ "$n" -gt 1 ] && [ "$seen_ep" = yes ]
ok $? "the scan tried $n listening TCP ports, the service's endpoint $EP among them"
is "$control" 1 "the scan finds the owner's control server on the host's loopback"
is "$hits" 0 "none of them gives $OTHER the replica's answer"
as $OTHER "curl -s -m 5 --unix-socket $SOCK http://replica/x" >"$TD/uo" 2>&1
rc=$?
[ $rc -ne 0 ] && ! grep -q "$SECRET" "$TD/uo"
ok $? "$OTHER cannot use the replica's Unix socket (curl exit $rc)"
as $OTHER "ls $TD/data/replicas" >/dev/null 2>&1
ok $((!$?)) "$OTHER cannot list the sockets' directory"

# The owner's own access (docs/serving.md), and root's.
is "$(stat -c '%U %G %a %F' "$SOCK")" "$OWNER haproxy 660 socket" \
    "the socket is the owner's and the haproxy group's, 0660"
is "$(stat -c '%U %a' "$TD/data/replicas")" "root 711" \
    "its directory is root's, 0711 (traversed, not listed)"
is "$(as $OWNER "curl -s -m 5 --unix-socket $SOCK http://replica/x")" "$SECRET" \
    "the owner reaches the replica on its socket"
is "$(curl -s -m 5 --unix-socket "$SOCK" http://replica/x)" "$SECRET" "root does too"
# tessel exec into the replica (the owner's token) runs in its namespace: 127.0.0.1:$PORT there.
TESSEL_URL="$TD_URL" TESSEL_TOKEN="$A" timeout 30 "$TESSEL_BUILD/bin/tessel" exec --no-stdin "$JOB" \
    -- /usr/bin/python3 -c 'import os, urllib.request as u
print(u.urlopen("http://127.0.0.1:%s/x" % os.environ["PORT"]).read().decode().strip())' \
    >"$TD/exec.out" 2>"$TD/exec.err" </dev/null
is "$? $(tr -d '\r' <"$TD/exec.out")" "0 $SECRET" "tessel exec into the replica reaches it on 127.0.0.1:\$PORT"
sed 's/^/# /' "$TD/exec.err"
as $OWNER "rm -f $SOCK" 2>/dev/null
[ -S "$SOCK" ]
ok $? "the owner cannot remove (nor so replace) the socket"

# The forwarder: the shim's child beside the job, as the owner, without privileges.
FWD=""
for p in $(pgrep -P "$SHIM"); do [ "$p" != "$JPID" ] && FWD=$p; done
[ -n "$FWD" ]
ok $? "the shim runs a forwarder beside the replica (pid ${FWD:-none})"
st() { awk -v k="$1:" '$1 == k { print $2 }' /proc/"$FWD"/status; }
is "$(st Uid) $(st CapEff) $(st CapPrm) $(st NoNewPrivs)" \
    "$(id -u $OWNER) 0000000000000000 0000000000000000 1" \
    "it runs as the owner, no capability, no new privileges"
is "$(readlink /proc/"$FWD"/ns/net)" "$(readlink /proc/"$JPID"/ns/net)" \
    "it is in the replica's network namespace"

# The replica's shim killed (SIGKILL: it cannot remove its socket): a new replica takes its
# place, and tesseld removes the old socket (review of 2026-11-27, low L1).
kill -9 "$SHIM"
replaced() {
    api GET /v1/services/priv "" "$A"
    NEWJOB=$(jq -r ".replica_jobs[] | select(.job != $JOB and .health == \"UP\") | .job" "$TD/out")
    [ -n "$NEWJOB" ]
}
wait_for replaced
ok $? "the replica's shim killed: a new replica (job ${NEWJOB:-none}) runs in its place"
wait_for '[ ! -e "$SOCK" ] && [ -S "$TD/data/replicas/r$NEWJOB.sock" ]'
ok $? "the old replica's socket is removed by tesseld; the new one's is there"
wait_for '! kill -0 "$FWD" 2>/dev/null'
ok $? "the old replica's forwarder ended with its shim"
JOB=$NEWJOB
SOCK="$TD/data/replicas/r$JOB.sock"
read -r SHIM _ JPID <"$TD/data/jobs/$JOB/pid"
FWD=""
for p in $(pgrep -P "$SHIM"); do [ "$p" != "$JPID" ] && FWD=$p; done

# The service removed: the replica and its forwarder end, the socket goes.
api DELETE /v1/services/priv "" "$A"
is "$CODE" 200 "$OWNER removes the service"
wait_for '! kill -0 "$FWD" 2>/dev/null && [ ! -e "$SOCK" ]'
ok $? "the forwarder ended and the socket was removed with the replica"
td_stop
ok $? "tesseld stops cleanly (no sanitizer report)"
done_testing
