#!/bin/sh
# t3015-daemon-limits.t - what one client may take: a request body above --max-body gets 413
# payload_too_large (before the body is read) and one under it is accepted; an unprivileged
# user submitting faster than --submit-rate gets 429 too_many_requests with Retry-After and a
# message naming the limit, while another user and the admins (exempt by default) are not
# slowed; --admin-submit-rate limits admins too; a bucket refills with time.  Nothing is lost:
# every 201 is a job in the store, every refusal is none.  Bad option values are refused with
# one line.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
fail_all() { echo "1..1"; echo "not ok 1 - $1"; exit 1; }
command -v curl >/dev/null && command -v jq >/dev/null || fail_all "curl and jq are needed"

td_setup
# 0.1 a second (a token every 10 s), burst 3.  The counts below allow for the tokens that a
# slow (loaded, sanitized) run may earn meanwhile: the test asserts the bucket, not a timing.
td_start --fake-gpus 1xT4:16G --no-cgroups --allow-root-jobs --max-body 4K \
    --submit-rate 0.1 --submit-burst 3 || fail_all "tesseld did not start"
api POST /v1/queues '{"name":"held","limit":{"gpu":0}}'
is "$CODE" 201 "a queue that starts nothing"
for u in mallory alice; do
    api POST /v1/users "{\"name\":\"$u\"}"
    api POST /v1/tokens "{\"user\":\"$u\"}"
    eval "TOK_$u=\$(jget .token)"
done
JOB='{"argv":["true"],"gpu":0.5,"queue":"held"}'

# --- body size ------------------------------------------------------------------------------
PAD=$(head -c 5000 /dev/zero | tr '\0' x)
api POST /v1/jobs "{\"argv\":[\"true\"],\"gpu\":0.5,\"queue\":\"held\",\"name\":\"$PAD\"}" "$TOK_mallory"
is "$CODE $(jget .error.code)" "413 payload_too_large" "a 5 KB body with --max-body 4K: 413"
jget .error.message | grep -q "above the limit of 4096 bytes"
ok $? "and the message names the limit ($(jget .error.message))"
PAD=$(head -c 3000 /dev/zero | tr '\0' x)
api POST /v1/jobs "{\"argv\":[\"echo\",\"$PAD\"],\"gpu\":0.5,\"queue\":\"held\"}" "$TOK_alice"
is "$CODE" 201 "a 3 KB body is accepted"
ACK_alice=1

# --- submission rate ------------------------------------------------------------------------
ACK=0 R429=0 OTHER=0
T0=$(date +%s)
for i in $(seq 1 8); do
    curl -s -D "$TD/hdr" -o "$TD/out" -w '%{http_code}' -H "Authorization: Bearer $TOK_mallory" \
        -H 'Content-Type: application/json' --data-binary "$JOB" "$TD_URL/v1/jobs" >"$TD/code"
    case "$(cat "$TD/code")" in
    201) ACK=$((ACK + 1)) ;;
    429) R429=$((R429 + 1)); cp "$TD/out" "$TD/last429"; cp "$TD/hdr" "$TD/hdr429" ;;
    *) OTHER=$((OTHER + 1)) ;;
    esac
done
EARNED=$((($(date +%s) - T0) / 10 + 1)) # tokens earned meanwhile, at most
diag "mallory: 8 submissions in a row: $ACK accepted, $R429 refused with 429 ($EARNED token(s) at most earned meanwhile)"
ok "$([ $ACK -ge 3 ] && [ $ACK -le $((3 + EARNED)) ]; echo $?)" "mallory's burst of 3 is accepted (plus at most $EARNED earned), no more"
ok "$([ $R429 -ge 1 ]; echo $?)" "the rest is refused"
is "$((ACK + R429)) $OTHER" "8 0" "the others get 429, and no other answer"
is "$(jq -r .error.code "$TD/last429")" too_many_requests "the code is too_many_requests"
jq -r .error.message "$TD/last429" | grep -q "user mallory may submit 0.1 jobs a second, 3 at once; try again in [0-9]* s"
ok $? "the message names the limit ($(jq -r .error.message "$TD/last429"))"
RA=$(sed -n 's/^Retry-After: *\([0-9]*\).*/\1/Ip' "$TD/hdr429")
ok "$([ -n "$RA" ] && [ "$RA" -ge 1 ] && [ "$RA" -le 10 ]; echo $?)" "Retry-After: $RA (1 to 10 s at 0.1/s)"

api POST /v1/jobs "$JOB" "$TOK_alice"
is "$CODE" 201 "alice, another user, is not slowed by mallory"
ACK_alice=$((ACK_alice + 1))
A=0
for i in $(seq 1 10); do
    api POST /v1/jobs "$JOB"
    [ "$CODE" = 201 ] && A=$((A + 1))
done
is "$A" 10 "the admin (exempt by default) submits 10 in a row"

# The bucket refills: after Retry-After seconds mallory may submit again.
sleep $((RA + 1))
api POST /v1/jobs "$JOB" "$TOK_mallory"
is "$CODE" 201 "after Retry-After, mallory may submit again"
ACK=$((ACK + 1))

# Nothing lost, nothing extra.
api GET "/v1/jobs?limit=1000"
is "$(jq '[.jobs[] | select(.user == "mallory")] | length' "$TD/out")" "$ACK" \
    "mallory's jobs in the store: exactly the $ACK acknowledged"
is "$(jq '[.jobs[] | select(.user == "alice")] | length' "$TD/out")" "$ACK_alice" \
    "alice's: exactly the $ACK_alice acknowledged"
td_stop; ok $? "tesseld stops cleanly"

# --- admins with their own rate -------------------------------------------------------------
# A token every 100 s: three requests in a row never earn one.
td_start --fake-gpus 1xT4:16G --no-cgroups --admin-submit-rate 0.01 --submit-burst 2 ||
    fail_all "tesseld did not restart"
C=""
for i in 1 2 3; do
    api POST /v1/jobs "$JOB"
    C="$C$CODE "
done
is "$(echo $C | cut -d' ' -f1-2) $(echo $C | tr ' ' '\n' | grep -c 429)" "201 201 1" \
    "--admin-submit-rate 0.01, burst 2: an admin's third submission in a row gets 429"
jget .error.message | grep -q "^submission rate limit: admin admin may submit 0.01 jobs a second"
ok $? "and the message says it is the admins' limit"
td_stop; ok $? "tesseld stops cleanly"

# --- bad values -----------------------------------------------------------------------------
for bad in "--max-body 10" "--max-body 1G" "--submit-rate -1" "--submit-rate x" \
    "--submit-burst 0" "--admin-submit-rate 0" "--disk-reserve 100%" "--disk-reserve 5Q" \
    "--max-connections-per-client 0" "--request-timeout 0"; do
    "$TESSEL_BUILD/bin/tesseld" --data-dir "$TD/bad" $bad >"$TD/bad.log" 2>&1
    RC=$?
    ok "$([ $RC = 2 ] && [ "$(wc -l <"$TD/bad.log")" = 1 ] && grep -q "^tesseld: ${bad%% *} " "$TD/bad.log"; echo $?)" \
        "tesseld $bad: exit 2 with one line ($(cat "$TD/bad.log"))"
done
done_testing
