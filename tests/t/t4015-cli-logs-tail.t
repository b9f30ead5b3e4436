#!/bin/sh
# t4015-cli-logs-tail.t - `tessel logs --tail N --since T` (and with -f, and --json offsets), on
# the time index tessel-shim keeps beside each log; the API's tail= and since= parameters and
# the X-Tessel-Log-Offset header; bad values.  No timing assertion: the test only waits for
# the clock's next second between two parts of a job's output, so that --since can tell them
# apart.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
cli_admin_daemon
chmod 755 "$TD"

# A job that writes a, b; waits for $TD/go; writes c, d (and e on stderr).
tcli run -d --cwd / --shell "echo a; echo b; while [ ! -e $TD/go ]; do sleep 0.05; done; echo c; echo d; echo e >&2"
is "$RC" 0 "a job is submitted"
id=$(out)
wait_for "\"$TCLI\" logs $id 2>/dev/null | grep -q '^b\$'"
ok $? "... its first part (a, b) is in its log"
# The next second: everything after it was written later than all of a and b.
t0=$(date +%s)
while [ "$(date +%s)" -le "$t0" ]; do sleep 0.05; done
T=$(date -u -d "@$((t0 + 1))" +%Y-%m-%dT%H:%M:%SZ)
touch "$TD/go"
wait_for "[ \"\$(TESSEL_URL=$TD_URL TESSEL_TOKEN=$TD_ADMIN \"$TCLI\" ps -a --json | jq -r '.jobs[] | select(.id == $id) | .state')\" = succeeded ]"
ok $? "... and ends"

tcli logs $id
is "$(out)" "a
b
c
d" "logs: all of stdout"
tcli logs --tail 1 $id
is "$RC:$(out)" "0:d" "--tail 1: the last line"
is "$(errtext)" "e" "... of each stream (stderr too)"
tcli logs -n 3 --stdout $id
is "$(out)" "b
c
d" "-n 3: the last three lines"
tcli logs --tail 10 --stdout $id
is "$(out)" "a
b
c
d" "--tail 10 of 4 lines: all of them"
tcli logs --tail 0 $id
is "$RC:$(out)" "0:" "--tail 0: nothing"
tcli logs --since "$T" --stdout $id
is "$(out)" "c
d" "--since T (RFC 3339): only what was written since"
tcli logs --since "$(date -d "@$((t0 + 1))" '+%Y-%m-%d %H:%M:%S')" --stdout $id
is "$(out)" "c
d" "--since 'YYYY-MM-DD HH:MM:SS' (local time): the same"
tcli logs --since 1h --stdout $id
is "$(out)" "a
b
c
d" "--since 1h: everything"
tcli logs --since "$T" --tail 1 --stdout $id
is "$(out)" "d" "--since and --tail together: the later start"
tcli logs --since "$T" --tail 3 --stdout $id
is "$(out)" "c
d" "... either way"
tcli logs --json --tail 1 --stdout $id
is "$(jq -c '[.offset, .data]' "$TD/o")" '[6,"d\n"]' "--json: the offset is the line's in the whole log"

# -f with --tail: the last lines, then what follows.
tcli run -d --cwd / --shell "for i in 1 2 3 4 5; do echo \$i; done; while [ ! -e $TD/go2 ]; do sleep 0.05; done; echo 6"
id2=$(out)
wait_for "\"$TCLI\" logs $id2 2>/dev/null | grep -q '^5\$'"
"$TCLI" logs -f --tail 2 --stdout "$id2" >"$TD/follow" 2>&1 &
fpid=$!
wait_for "grep -q '^5\$' '$TD/follow'"
touch "$TD/go2"
wait "$fpid"
is "$?" 0 "logs -f --tail 2 ends with the job"
is "$(cat "$TD/follow")" "4
5
6" "... after printing the last two lines and the new one"

# The API.
api GET "/v1/jobs/$id/logs?stream=stdout&tail=2"
is "$CODE:$(cat "$TD/out")" "200:c
d" "API: tail=2"
curl -s -D "$TD/h" -o /dev/null -H "Authorization: Bearer $TD_ADMIN" "$TD_URL/v1/jobs/$id/logs?stream=stdout&tail=2"
grep -qi '^X-Tessel-Log-Offset: 4' "$TD/h"; ok $? "... answered with X-Tessel-Log-Offset: 4"
api GET "/v1/jobs/$id/logs?stream=stdout&since=$((t0 + 1))"
is "$CODE:$(cat "$TD/out")" "200:c
d" "API: since= Unix seconds"
api GET "/v1/jobs/$id/logs?stream=stdout&since=$T&offset=6"
is "$(cat "$TD/out")" "d" "API: offset past since's start wins (a resume)"
api GET "/v1/jobs/$id/logs?tail=x"
is "$CODE" 400 "API: tail=x is 400"
api GET "/v1/jobs/$id/logs?since=yesterday"
is "$CODE" 400 "API: since=yesterday is 400"

tcli logs --tail -1 $id
is "$RC" 2 "--tail -1: usage error"
tcli logs --since 10 $id
is "$RC" 2 "--since 10: usage error"
grep -q "10m" "$TD/e"; ok $? "... that suggests 10m: $(head -c 200 "$TD/e")"

td_stop; ok $? "tesseld stops cleanly"
done_testing
