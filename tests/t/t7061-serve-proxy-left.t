#!/bin/sh
# t7061-serve-proxy-left.t - a proxy that haproxy.pid does not name is still tesseld's to stop
# (docs/serving.md, "Restarts and the proxy"): tesseld killed between starting a proxy and
# writing its pid (simulated: haproxy.pid names another program), then started again, finds
# the proxy by its executable and its configuration's path and takes it over (-sf), so that
# one proxy is left, not two serving different configurations (the old one with the callers'
# tokens of its time); a program that merely names the configuration on its command line is
# not taken for a proxy; a reload whose new proxy fails (a port held by another program) leaves
# the old one answering until a start works, which then stops it; with the last service gone
# every proxy of the data directory stops.  The decoy and the port's holder run as nobody.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null && command -v pgrep >/dev/null ||
    missing "curl, jq and pgrep are needed"
command -v setpriv >/dev/null && id nobody >/dev/null 2>&1 ||
    missing "setpriv and the account nobody are needed"
[ -x /usr/sbin/haproxy ] || missing "haproxy is needed (/usr/sbin/haproxy)"
id haproxy >/dev/null 2>&1 || missing "the haproxy account is needed (Debian's haproxy package)"

td_setup
# HAProxy (as haproxy) reaches the replicas' sockets below the data directory (docs/serving.md).
chmod 711 "$TD"
td_start --fake-gpus 1xT4:16G --no-cgroups --allow-root-jobs
CFG="$TD/data/serve/haproxy.cfg"
# The proxies of this data directory, on one line (tests/lib/daemon.sh).
proxies() { td_proxies | tr '\n' ' ' | sed 's/ $//'; }

api POST /v1/services '{"name":"web","argv":["sleep","300"],"replicas":0}'
is "$CODE" 201 "a service (no replica: its endpoint alone)"
PORT1=$(jget .port)
wait_for '[ -s "$TD/data/serve/haproxy.pid" ] && [ -n "$(proxies)" ]'
ok $? "its proxy runs"
P1=$(proxies)
is "$P1" "$(cat "$TD/data/serve/haproxy.pid")" "one proxy, the one haproxy.pid names"

# Another account's program that names the configuration: never signalled as a proxy.
AS_USER="setpriv --reuid=nobody --regid=nogroup --clear-groups"
$AS_USER sh -c 'while :; do sleep 1; done' decoy -f "$CFG" </dev/null >/dev/null 2>&1 &
DECOY=$!
TD_PIDS="$TD_PIDS $DECOY"

# tesseld dies between starting a proxy and writing its pid: the file names another program.
td_kill9
echo "$DECOY" >"$TD/data/serve/haproxy.pid"
td_start --fake-gpus 1xT4:16G --no-cgroups --allow-root-jobs
wait_for 'grep -q "taking over from $P1" "$TD/tesseld.log"'
ok $? "tesseld started again finds the proxy haproxy.pid no longer names, and takes it over"
wait_for '! kill -0 "$P1" 2>/dev/null'
ok $? "... that proxy ends (a soft stop, within hard-stop-after)"
P2=$(cat "$TD/data/serve/haproxy.pid")
is "$(proxies)" "$P2" "one proxy is left: the new one"
kill -0 "$DECOY" 2>/dev/null
ok $? "the program that only names the configuration was not signalled"
kill "$DECOY" 2>/dev/null

# A reload whose new proxy fails (a port another program holds): the old one goes on, and the
# next start that works tells it to stop.
sleep 5.5 # past the 5 s between two reloads: the next change reloads at once
api POST /v1/services '{"name":"second","argv":["sleep","300"],"replicas":0}'
is "$CODE" 201 "a second service"
api POST /v1/services '{"name":"third","argv":["sleep","300"],"replicas":0}'
is "$CODE" 201 "a third, while the proxy reloads for the second"
PORT3=$(jget .port)
# Its port taken, by another account, before the reload that adds it (at most 5 s after the
# last one).
$AS_USER /usr/bin/python3 -c 'import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen()
time.sleep(120)' "$PORT3" </dev/null >/dev/null 2>&1 &
HOLD=$!
TD_PIDS="$TD_PIDS $HOLD"
wait_for '[ "$(grep -c "haproxy (pid [0-9]*) exited" "$TD/tesseld.log")" -ge 1 ]'
ok $? "the reload's new proxy exits (it cannot bind the third service's port)"
P3=$(proxies)
curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT1/" | grep -q 401
ok $? "the proxy that was running goes on answering (pid $P3)"
kill "$HOLD"
wait "$HOLD" 2>/dev/null
wait_for '[ "$(curl -s -o /dev/null -w "%{http_code}" "http://127.0.0.1:$PORT3/")" = 401 ]'
ok $? "the port freed, a new proxy serves the third service"
for p in $P3; do
    wait_for '! kill -0 "$p" 2>/dev/null'
    ok $? "... and the proxy that went on ($p) ends"
done
is "$(proxies)" "$(cat "$TD/data/serve/haproxy.pid")" "one proxy is left"

# With the last service gone, every proxy of the data directory stops.
for n in web second third; do
    api DELETE "/v1/services/$n"
    is "$CODE" 200 "service $n is removed"
done
wait_for '[ -z "$(proxies)" ]'
ok $? "no proxy of the data directory is left"
td_stop
ok $? "tesseld stops cleanly (no sanitizer report)"
done_testing
