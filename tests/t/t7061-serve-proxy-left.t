#!/bin/sh
# t7061-serve-proxy-left.t - a proxy that haproxy.pid does not name is still tesseld's to stop
# (docs/serving.md, "Restarts and the proxy"): tesseld killed between starting a proxy and
# writing its pid (simulated: haproxy.pid names another program), then started again, finds
# the proxy by its executable and its configuration's path and takes it over (-sf), so that
# one proxy is left, not two serving different configurations (the old one with the callers'
# tokens of its time); a program that merely names the configuration on its command line is
# not taken for a proxy; with the last service gone every proxy of the data directory stops.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null && command -v pgrep >/dev/null ||
    missing "curl, jq and pgrep are needed"
[ -x /usr/sbin/haproxy ] || missing "haproxy is needed (/usr/sbin/haproxy)"
id haproxy >/dev/null 2>&1 || missing "the haproxy account is needed (Debian's haproxy package)"

td_setup
# HAProxy (as haproxy) reaches the replicas' sockets below the data directory (docs/serving.md).
chmod 711 "$TD"
td_start --fake-gpus 1xT4:16G --no-cgroups --allow-root-jobs
CFG="$TD/data/serve/haproxy.cfg"
# The proxies of this data directory: HAProxy processes started with -f $CFG.
proxies() {
    for p in $(pgrep -f -- "-f $CFG"); do
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = haproxy ] && echo "$p"
    done | sort -n | tr '\n' ' ' | sed 's/ $//'
}

api POST /v1/services '{"name":"web","argv":["sleep","300"],"replicas":0}'
is "$CODE" 201 "a service (no replica: its endpoint alone)"
wait_for '[ -s "$TD/data/serve/haproxy.pid" ] && [ -n "$(proxies)" ]'
ok $? "its proxy runs"
P1=$(proxies)
is "$P1" "$(cat "$TD/data/serve/haproxy.pid")" "one proxy, the one haproxy.pid names"

# A program that is not HAProxy but names the configuration: never signalled as a proxy.
sh -c 'while :; do sleep 1; done' decoy -f "$CFG" </dev/null >/dev/null 2>&1 &
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

# With the last service gone, every proxy of the data directory stops.
api DELETE /v1/services/web
is "$CODE" 200 "the service is removed"
wait_for '[ -z "$(proxies)" ]'
ok $? "no proxy of the data directory is left"
td_stop
ok $? "tesseld stops cleanly (no sanitizer report)"
done_testing
