#!/bin/sh
# t3013-daemon-listen.t - one tesseld per port and per data directory.  A second tesseld (its
# own data dir) on a port a tesseld listens on refuses to start and names the holder (as
# root; as the unprivileged user nobody it is refused all the same): no SO_REUSEPORT, so the
# kernel never splits the clients between two daemons.  A second tesseld on the same data dir
# names the PID that holds tesseld.lock.  The first keeps answering every request.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
fail_all() { echo "1..1"; echo "not ok 1 - $1"; exit 1; }
command -v curl >/dev/null && command -v jq >/dev/null || fail_all "curl and jq are needed"
[ "$(id -u)" = 0 ] || fail_all "not root: the second daemon is also tried as nobody"
command -v setpriv >/dev/null || fail_all "setpriv (util-linux) is needed"
TESSELD="$TESSEL_BUILD/bin/tesseld"

td_setup
td_start --fake-gpus 1xT4:16G --no-cgroups || fail_all "tesseld did not start"
ADDR=$(cat "$TD/data/tesseld.addr")
FIRST=$TD_PID

# A second tesseld, its own data dir, the same address.
timeout 30 "$TESSELD" --data-dir "$TD/data2" --listen "$ADDR" --fake-gpus 1xT4:16G \
    --no-cgroups >"$TD/second.log" 2>&1
RC=$?
diag "$(cat "$TD/second.log" | tail -1)"
is "$RC" 1 "a second tesseld on $ADDR (another data dir) exits 1"
grep -q "cannot listen on $ADDR: Address already in use (held by pid $FIRST, tesseld)" \
    "$TD/second.log"
ok $? "and says the address is in use, held by pid $FIRST (tesseld)"

# The same as nobody: refused, and the holder cannot be named.
# ($TD is root's, 0700: nobody's data dir is a directory of its own, removed at the end.)
NB=$(mktemp -d /tmp/tessel-t3013-nobody-XXXXXX) && chown 65534:65534 "$NB"
trap 'rm -rf "$NB"; td_cleanup' EXIT
timeout 30 setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$NB" \
    "$TESSELD" --data-dir "$NB/data" --listen "$ADDR" --fake-gpus 1xT4:16G \
    --no-cgroups >"$TD/third.log" 2>&1
RC=$?
diag "$(tail -1 "$TD/third.log")"
is "$RC" 1 "nobody's tesseld on the same address exits 1"
grep -q "cannot listen on $ADDR: Address already in use" "$TD/third.log"
ok $? "and says the address is in use"

# Every request still reaches the first daemon (its admin token works on all of them).
N=0
for i in $(seq 1 40); do
    api GET /v1/whoami
    [ "$CODE" = 200 ] && N=$((N + 1))
done
is "$N" 40 "40 of 40 requests to $ADDR are answered by the first tesseld"

# A second tesseld on the same data dir (another port).
timeout 30 "$TESSELD" --data-dir "$TD/data" --listen 127.0.0.1:0 --fake-gpus 1xT4:16G \
    --no-cgroups >"$TD/fourth.log" 2>&1
RC=$?
diag "$(tail -1 "$TD/fourth.log")"
is "$RC" 1 "a second tesseld on the same data dir exits 1"
grep -q "tesseld.lock: another tesseld (pid $FIRST) uses this data directory" "$TD/fourth.log"
ok $? "and names the PID that holds tesseld.lock ($FIRST)"
is "$(cat "$TD/data/tesseld.addr")" "$ADDR" "the first one's address file is untouched"
api GET /healthz "" ""
is "$CODE" 200 "the first tesseld still answers"
td_stop; ok $? "it stops cleanly (exit 0, no sanitizer report)"

# Its port is free again at once: a new tesseld binds it (SO_REUSEADDR, TIME_WAIT allowed).
PORT=${ADDR##*:}
"$TESSELD" --data-dir "$TD/data" --listen "$ADDR" --fake-gpus 1xT4:16G --no-cgroups \
    >>"$TD/tesseld.log" 2>&1 &
TD_PID=$!
TD_PIDS="$TD_PIDS $TD_PID"
wait_for "curl -s -o /dev/null http://$ADDR/healthz"
ok $? "a new tesseld binds port $PORT once the first has stopped"
td_stop; ok $? "and stops cleanly"
done_testing
