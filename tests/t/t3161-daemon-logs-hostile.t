#!/bin/sh
# t3161-daemon-logs-hostile.t - a job's logs are files in its directory, which is its user's:
# the user may make them sparse files of gigabytes (`truncate -s 8G stdout`; here the test does
# it as root, standing in for the user).  tesseld must not read them under its big lock, nor
# without a bound:
#   - `logs?tail=1` of an 8 GiB stdout whose last line follows 8 GiB of zeros: GET /v1/jobs
#     (the admin) answers meanwhile; the tail answer reads at most what --log-limit (1 MiB
#     here) keeps plus 64 KiB of marker room from the end: it starts there, says so in
#     X-Tessel-Log-Scan-Limit, and ends with the last line;
#   - `logs?since=` an hour ahead with an 8 GiB time index (stderr.idx): GET /v1/jobs answers
#     meanwhile, and the answer is empty, from the log's end (the index is searched by
#     bisection, not read); since=1h still finds the index's first entry.
# Before 2026-11-27 both scans ran to the file's start (or end) with the lock held: 8 GiB of
# holes take tens of seconds, GET /v1/jobs waited behind them.  The bounds below (5 s for
# GET /v1/jobs, 60 s for the logs answers) only prove "did not hang".
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
command -v truncate >/dev/null || missing "truncate (coreutils) is needed"
[ "$(id -u)" = 0 ] || missing "must run as root (the job runs as nobody)"
getent passwd nobody >/dev/null || missing "no 'nobody' account"

td_setup
chmod 755 "$TD"
td_start --fake-gpus 1xT4:16G --no-cgroups --log-limit 1M || missing "tesseld did not start"
api POST /v1/users '{"name":"nobody"}'
api POST /v1/tokens '{"user":"nobody"}'
NB=$(jget .token)

api POST /v1/jobs '{"argv":["sh","-c","echo first; echo second; echo err1 >&2"],"cwd":"/"}' "$NB"
is "$CODE" 201 "nobody submits a job"
ID=$(jget .id)
wait_for "[ \"\$(job_state $ID)\" = succeeded ]"
ok $? "... it succeeds"
J="$TD/data/jobs/$ID"
[ -f "$J/stdout" ] && [ -f "$J/stderr.idx" ]
ok $? "its stdout and stderr's time index are in its directory"

# The user's move: 8 GiB of holes, then a last line.
truncate -s 8G "$J/stdout" && printf 'last\n' >>"$J/stdout"
ok $? "stdout made 8 GiB of zeros and a last line"
SIZE=$(stat -c %s "$J/stdout")
LIMIT=$(((1 << 20) + (64 << 10)))

curl -s -m 60 -D "$TD/h1" -o "$TD/tail.out" -w '%{http_code}' -H "Authorization: Bearer $NB" \
    "$TD_URL/v1/jobs/$ID/logs?stream=stdout&tail=1" >"$TD/tail.code" &
TAIL_PID=$!
sleep 0.3 # let the tail request arrive first (ordering only: nothing is timed)
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TD_ADMIN" \
    "$TD_URL/v1/jobs")
is "$code" 200 "GET /v1/jobs (admin) answers within 5 s while the tail of the 8 GiB log is asked"
wait "$TAIL_PID"
is "$(cat "$TD/tail.code")" 200 "the tail answers (within 60 s)"
is "$(stat -c %s "$TD/tail.out")" "$LIMIT" "... with the last 1 MiB + 64 KiB of the log (--log-limit 1M and marker room)"
is "$(tail -c 5 "$TD/tail.out")" "last" "... ending with the last line"
hdr() { tr -d '\r' <"$1" | sed -n "s/^$2: //Ip"; }
is "$(hdr "$TD/h1" X-Tessel-Log-Scan-Limit)" "$LIMIT" "... X-Tessel-Log-Scan-Limit says the scan stopped at that bound"
is "$(hdr "$TD/h1" X-Tessel-Log-Offset)" "$((SIZE - LIMIT))" "... X-Tessel-Log-Offset is where it starts"

# An 8 GiB time index, asked for a time later than all its entries (a linear reader reads it
# all to find that out).
truncate -s 8G "$J/stderr.idx"
ok $? "stderr.idx made 8 GiB"
LATER=$(($(date +%s) + 3600))
curl -s -m 60 -D "$TD/h2" -o "$TD/since.out" -w '%{http_code}' -H "Authorization: Bearer $NB" \
    "$TD_URL/v1/jobs/$ID/logs?stream=stderr&since=$LATER" >"$TD/since.code" &
SINCE_PID=$!
sleep 0.3
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TD_ADMIN" \
    "$TD_URL/v1/jobs")
is "$code" 200 "GET /v1/jobs answers within 5 s while since= searches the 8 GiB index"
wait "$SINCE_PID"
is "$(cat "$TD/since.code"):$(cat "$TD/since.out")" "200:" \
    "since (an hour ahead) answers (within 60 s): nothing written since"
is "$(hdr "$TD/h2" X-Tessel-Log-Offset)" 5 "... from the end of stderr (its 5 bytes)"
is "$(hdr "$TD/h2" X-Tessel-Log-Scan-Limit)" "" "... with no scan-limit header (nothing was cut)"
api GET "/v1/jobs/$ID/logs?stream=stderr&since=1h" "$NB"
is "$CODE:$(cat "$TD/out")" "200:err1" "since=1h: the job's stderr (its index's first entry)"

api GET "/v1/jobs/$ID/logs?stream=stderr&tail=1" "$NB"
is "$CODE:$(cat "$TD/out")" "200:err1" "tail=1 of a log within the bound: its last line"
# A file of someone else's that the user moves into their job's directory under a log's name
# (a rename needs no right to read it): tesseld (root) must not read it for them.
printf 'TOPSECRET\n' >"$TD/secret"
chmod 600 "$TD/secret"
mv -f "$TD/secret" "$J/stderr"
api GET "/v1/jobs/$ID/logs?stream=stderr" "$NB"
ok "$(grep -q TOPSECRET "$TD/out"; [ $? -ne 0 ]; echo $?)" "a root-owned file put at the job's stderr is not read for its user"
api GET "/v1/jobs/$ID/logs?stream=stderr&tail=1" "$NB"
ok "$( ! grep -q TOPSECRET "$TD/out" && [ "$CODE" != 200 ]; echo $?)" "... nor with tail=1 (HTTP $CODE)"
kill -0 "$TD_PID"
ok $? "tesseld is up"
td_stop
ok $? "tesseld stops cleanly"
done_testing
