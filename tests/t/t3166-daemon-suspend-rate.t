#!/bin/sh
# t3166-daemon-suspend-rate.t - a user's suspends and resumes of their own job: each writes the
# job's slice file and adds a record to its event log, so neither may be asked without
# bound.
#   - they are rate-limited per user like submissions (--submit-rate, --submit-burst), in a
#     bucket of their own: nobody's 4th in a row (burst 3) gets 429 too_many_requests with
#     Retry-After and a message naming the limit; nobody may still submit, and an admin (exempt
#     without --admin-submit-rate) may still suspend and resume the job;
#   - a job's event log keeps its newest 1,000 suspend and resume records (TSTORE_EVENTS_KEEP,
#     at most 100 more): after 1,120 of them (the admin's), GET .../events holds its first
#     records, one "dropped" record counting the rest, and says "dropped": N at its top, with
#     N + the records kept = 1,120.
# Before 2026-11-27 neither was bounded (861 suspend/resume a second from one user, the event
# list growing for as long as the job ran).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
[ "$(id -u)" = 0 ] || missing "must run as root (the job's account is nobody)"
getent passwd nobody >/dev/null || missing "no 'nobody' account"
[ -e "$TESSEL_BUILD/lib/libtessel-cuda.so" ] || missing "interposer not built"

td_setup
chmod 755 "$TD"
td_start --fake-gpus 1xT4:16G --no-cgroups --submit-rate 0.1 --submit-burst 3 ||
    missing "tesseld did not start"
api POST /v1/users '{"name":"nobody"}'
api POST /v1/tokens '{"user":"nobody"}'
NB=$(jget .token)
api POST /v1/jobs '{"argv":["sleep","300"],"gpu":0.5}' "$NB"
is "$CODE" 201 "nobody's job with half a GPU is accepted"
J=$(jget .id)
wait_for "[ \"\$(job_state $J $NB)\" = running ]"
ok $? "it runs"

# --- the rate -------------------------------------------------------------------------------
codes=""
for verb in suspend resume suspend resume; do
    curl -s -o "$TD/out" -D "$TD/hdr" -w '%{http_code}' -X POST -H "Authorization: Bearer $NB" \
        "$TD_URL/v1/jobs/$J/$verb" >"$TD/code"
    codes="$codes $(cat "$TD/code")"
done
is "$codes" " 200 200 200 429" "nobody's suspend, resume, suspend take effect; the 4th in a row gets 429"
is "$(jq -r .error.code "$TD/out")" too_many_requests "the code is too_many_requests"
jq -r .error.message "$TD/out" |
    grep -q "^suspend and resume rate limit: user nobody may suspend or resume 0.1 times a second, 3 at once; try again in [0-9]* s$"
ok $? "the message names the limit ($(jq -r .error.message "$TD/out"))"
RA=$(sed -n 's/^Retry-After: *\([0-9]*\).*/\1/Ip' "$TD/hdr")
ok "$([ -n "$RA" ] && [ "$RA" -ge 1 ]; echo $?)" "with Retry-After ($RA s)"
is "$(job_state $J $NB)" suspended "the job stays as the last one that took effect left it"
api POST /v1/jobs '{"argv":["true"]}' "$NB"
is "$CODE" 201 "nobody may still submit (a bucket of its own)"
api POST "/v1/jobs/$J/resume" ""
is "$CODE" 200 "an admin may still resume the job"

# --- the event log's bound ------------------------------------------------------------------
api GET "/v1/jobs/$J/events" "" "$NB"
BEFORE=$(jq '[.events[] | select(.event == "suspend" or .event == "resume")] | length' "$TD/out")
is "$(jget .dropped)" 0 "GET .../events says dropped: 0 while nothing was dropped"
N=$((1120 - BEFORE))
i=0
: >"$TD/urls"
while [ $i -lt "$N" ]; do
    if [ $((i % 2)) = 0 ]; then v=suspend; else v=resume; fi
    echo "url = \"$TD_URL/v1/jobs/$J/$v\"" >>"$TD/urls"
    echo "output = \"/dev/null\"" >>"$TD/urls"
    i=$((i + 1))
done
curl -s -X POST -H "Authorization: Bearer $TD_ADMIN" -K "$TD/urls" -w '%{http_code}\n' >"$TD/codes"
is "$(sort -u "$TD/codes" | tr '\n' ' ')" "200 " "the admin suspends and resumes it $N more times (1,120 records in all)"
api GET "/v1/jobs/$J/events" "" "$NB"
is "$CODE" 200 "GET .../events answers"
KEPT=$(jq '[.events[] | select(.event == "suspend" or .event == "resume")] | length' "$TD/out")
DROPPED=$(jget .dropped)
ok "$([ "$KEPT" -ge 1000 ] && [ "$KEPT" -le 1100 ]; echo $?)" "it keeps the newest $KEPT of them (1,000 to 1,100)"
is "$((KEPT + DROPPED))" 1120 "and says dropped: $DROPPED, the rest"
is "$(jq -r '[.events[] | select(.event == "dropped")] | length' "$TD/out")" 1 "one record 'dropped' stands in their place"
is "$(jq -r '.events[] | select(.event == "dropped") | .detail.count' "$TD/out")" "$DROPPED" "... with their count"
is "$(jq -r '.events[0].event' "$TD/out")" submit "the first record (the submission) is kept"
api POST "/v1/jobs/$J/cancel" ""
wait_for "[ \"\$(job_state $J)\" = cancelled ]"
ok $? "the job is cancelled"
td_stop
ok $? "tesseld stops cleanly"
done_testing
