#!/bin/sh
# t4030-cli-transports.t - every CLI command works on each way `tessel` reaches tesseld: the
# local Unix socket and TCP through its light transport (no libcurl loaded), and TCP through
# libcurl when a proxy is set (no_proxy lets it reach tesseld directly; a dead proxy is
# reported, as before).  Output of a job is read and followed on each.  tesseld absent: one
# clear line on each.  https:// is refused as before (the CLI never spoke TLS).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
cli_admin_daemon
chmod 755 "$TD"
unset http_proxy all_proxy ALL_PROXY no_proxy NO_PROXY

# tessel is linked without libcurl: it loads it only for a proxy.
command -v ldd >/dev/null || missing "ldd is needed"
is "$(ldd "$TCLI" | grep -c curl)" 0 "tessel does not link libcurl"
ldd "$TCLI" | grep -q libhttp_parser
ok $? "... it links http-parser"

# every_command LABEL: the commands of the CLI with TESSEL_URL/TESSEL_TOKEN as they are now.
every_command() {
    l=$1
    tcli whoami
    is "$RC" 0 "$l: whoami"
    tcli run -d --cwd / -- sh -c 'echo out-one; echo err-one >&2'
    is "$RC" 0 "$l: run -d"
    id=$(out)
    tcli show "$id"
    is "$RC" 0 "$l: show"
    wait_for "\"$TCLI\" ps -a --json 2>/dev/null | jq -e '.jobs[] | select(.id == $id and .state == \"succeeded\")' >/dev/null"
    ok $? "$l: ps -a --json sees the job succeed"
    tcli logs "$id"
    is "$RC:$(out):$(errtext)" "0:out-one:err-one" "$l: logs (both streams)"
    tcli logs -f "$id"
    is "$RC:$(out)" "0:out-one" "$l: logs -f of an ended job"
    # A job that writes while it is followed (chunked answer, kept open until it ends).
    tcli run -d --cwd / --shell "echo a; while [ ! -e $TD/go-$l ]; do sleep 0.05; done; echo b"
    id2=$(out)
    "$TCLI" logs -f "$id2" >"$TD/follow-$l" 2>&1 &
    fpid=$!
    wait_for "grep -q '^a\$' '$TD/follow-$l'"
    ok $? "$l: logs -f streams the first line while the job runs"
    touch "$TD/go-$l"
    wait "$fpid"
    is "$?:$(cat "$TD/follow-$l" | tr '\n' ' ')" "0:a b " "$l: ... and the rest, ending with the job"
    tcli run --cwd / -- sh -c 'echo fg; exit 3'
    is "$RC:$(out)" "3:fg" "$l: run in the foreground: its output and exit status"
    tcli run -d --cwd / -- sleep 100
    id3=$(out)
    tcli kill "$id3"
    is "$RC" 0 "$l: kill"
    tcli ps
    is "$RC" 0 "$l: ps"
    tcli gpus
    is "$RC" 0 "$l: gpus"
    tcli queues
    is "$RC" 0 "$l: queues"
    tcli show 999999
    ok $([ "$RC" = 1 ] && one_line_error && echo 0 || echo 1) "$l: an API error is one line"
}

every_command tcp

# The local socket: no token, the caller's account is its identity.
TESSEL_URL="unix:$TD_SOCK"
unset TESSEL_TOKEN
# A proxy never applies to a local socket.
http_proxy=http://127.0.0.1:1
export http_proxy
every_command socket
unset http_proxy

# TCP through libcurl: a proxy is set, no_proxy names tesseld's host.
TESSEL_URL=$TD_URL
TESSEL_TOKEN=$TD_ADMIN
http_proxy=http://127.0.0.1:1
no_proxy=127.0.0.1
export TESSEL_TOKEN http_proxy no_proxy
every_command curl
unset no_proxy
# The proxy is used: a dead one is reported in one line.
tcli whoami
ok $([ "$RC" = 1 ] && one_line_error && grep -q "cannot reach tesseld at $TD_URL" "$TD/e" && echo 0 || echo 1) \
    "with a dead proxy: one line, naming tesseld's URL"
unset http_proxy

# https is not spoken (as before this transport): refused in one line.
TESSEL_URL=https://127.0.0.1:1 tcli whoami
ok $([ "$RC" = 1 ] && one_line_error && grep -q "must look like http://HOST:PORT" "$TD/e" && echo 0 || echo 1) \
    "https:// is refused in one line"

# tesseld absent, on each transport: one line, exit status 1.
td_stop
for url in "$TD_URL" "unix:$TD_SOCK"; do
    TESSEL_URL=$url tcli run -d -- true
    ok $([ "$RC" = 1 ] && one_line_error && grep -q "cannot reach tesseld at $url: .*(is it running?)" "$TD/e" && echo 0 || echo 1) \
        "tesseld absent ($url): one line"
done
done_testing
