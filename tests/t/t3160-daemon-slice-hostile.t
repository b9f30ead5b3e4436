#!/bin/sh
# t3160-daemon-slice-hostile.t - a job's slice file is its own (TESSEL_SLICE, in its directory),
# and tesseld (root) reads it for GET /v1/gpus and /metrics (no token) and writes its suspend
# word.  A hostile job cannot use that against tesseld:
#   - a job truncating its slice file and writing it back as fast as it can (tcu-slice thrash)
#     while /v1/gpus and /metrics are asked for 300 times each and the job is suspended and
#     resumed: every answer comes, tesseld stays up (a reader that mapped the file would fault,
#     SIGBUS, past its end: libshm's test_ro_truncated shows that case by itself);
#   - a job whose slice file holds no slice and which holds an exclusive flock on it (tcu-slice
#     junklock): a suspend answers at once, 409 with a reason naming the slice file (no wait on
#     the lock), and /v1/gpus still answers.
# Both as a job of root (an admin's own job) and as a job of nobody (a user's: the slice file is
# then nobody's, and the suspends and resumes are nobody's own requests).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
SLICE_TOOL=$TESSEL_BUILD/tests/interposer/tcu-slice
[ -x "$SLICE_TOOL" ] || missing "tcu-slice not built"
[ -e "$TESSEL_BUILD/lib/libtessel-cuda.so" ] || missing "interposer not built"
[ "$(id -u)" = 0 ] || missing "must run as root (the second round's jobs run as nobody)"
getent passwd nobody >/dev/null || missing "no 'nobody' account"

td_setup
chmod 755 "$TD"
td_start --fake-gpus 1xRTX4090:24G --no-cgroups || missing "tesseld did not start"
api POST /v1/users '{"name":"nobody"}'
api POST /v1/tokens '{"user":"nobody"}'
NB=$(jget .token)
alive() { kill -0 "$TD_PID" 2>/dev/null && curl -sf -m 10 "$TD_URL/healthz" >/dev/null; }
# said ID WORD: the job's stdout has a line WORD
said() {
    api GET "/v1/jobs/$1/logs?stream=stdout"
    grep -q "^$2" "$TD/out"
}

hostile() {
    TOK=${1:-$TD_ADMIN} WHO=$2
    # ---- a job thrashing its slice file ------------------------------------------------------------
    # (for up to 600 s: cancelled below; the loop takes longer than 30 s on a loaded machine)
    api POST /v1/jobs "{\"argv\":[\"sh\",\"-c\",\"id -un; exec $SLICE_TOOL \\\"\$TESSEL_SLICE\\\" thrash:600\"],\"gpus\":1,\"cwd\":\"/\"}" "$TOK"
    A=$(jget .id)
    wait_for "said $A ok"
    ok $? "$WHO: job $A makes its slice and starts truncating it and writing it back"
    said "$A" "$WHO"
    ok $? "$WHO: ... as $WHO"
    n=0 good=0
    while [ $n -lt 300 ]; do
        c1=$(curl -s -m 10 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TD_ADMIN" \
            "$TD_URL/v1/gpus")
        c2=$(curl -s -m 10 -o /dev/null -w '%{http_code}' "$TD_URL/metrics")
        [ "$c1 $c2" = "200 200" ] && good=$((good + 1))
        if [ $((n % 50)) -eq 0 ]; then
            # Suspend and resume it meanwhile: each either takes effect or is refused with a
            # reason (409: the file may be empty at that moment); neither may take tesseld down.
            # A suspend that took effect is resumed, tried again until a moment the file is whole.
            api POST "/v1/jobs/$A/suspend" "" "$TOK"
            if [ "$CODE" = 200 ]; then
                k=0
                while api POST "/v1/jobs/$A/resume" "" "$TOK" && [ "$CODE" != 200 ] && [ $k -lt 200 ]; do
                    k=$((k + 1))
                done
            fi
        fi
        n=$((n + 1))
    done
    is "$good" 300 "$WHO: GET /v1/gpus and /metrics answer 200 all 300 times while the job thrashes its slice"
    alive
    ok $? "$WHO: tesseld is up after it"
    # A suspend whose 200 resumes were all refused (the file empty each time, on a loaded
    # machine) is resumed here, tried again until a moment the file is whole.
    resumed() {
        [ "$(job_state "$A")" = running ] && return 0
        api POST "/v1/jobs/$A/resume" "" "$TOK"
        return 1
    }
    wait_for resumed
    is "$(job_state "$A")" running "$WHO: the job is still running (resumed)"
    api POST "/v1/jobs/$A/cancel" ""
    wait_for "[ \"\$(job_state $A)\" = cancelled ]"
    ok $? "$WHO: the job is cancelled"

    # ---- a job holding a lock on a slice file that is no slice ---------------------------------
    api POST /v1/jobs "{\"argv\":[\"sh\",\"-c\",\"id -un; exec $SLICE_TOOL \\\"\$TESSEL_SLICE\\\" junklock:60\"],\"gpus\":1,\"cwd\":\"/\"}" "$TOK"
    B=$(jget .id)
    wait_for "said $B ok"
    ok $? "$WHO: job $B fills its slice file with junk and holds a flock on it"
    code=$(curl -s -m 20 -o "$TD/out" -w '%{http_code}' -X POST -H "Authorization: Bearer ${TOK:-$TD_ADMIN}" \
        "$TD_URL/v1/jobs/$B/suspend")
    is "$code $(jq -r .error.code "$TD/out")" "409 conflict" \
        "$WHO: suspending it answers at once: refused, 409 (the job's own file, not tesseld's fault)"
    like=$(jq -r .error.message "$TD/out")
    case $like in *"slice file"*) ok 0 "$WHO: with the reason: $like" ;; *) ok 1 "$WHO: with the reason (got: $like)" ;; esac
    api GET "/v1/jobs/$B"
    is "$(jget .state) $(jget .suspended_at)" "running null" "$WHO: the job is not marked suspended"
    api GET /v1/gpus
    is "$CODE $(jq -r '.gpus[0].slices | length' "$TD/out")" "200 1" "$WHO: GET /v1/gpus answers, its slice listed"
    alive
    ok $? "$WHO: tesseld is up"
    api POST "/v1/jobs/$B/cancel" ""
    wait_for "[ \"\$(job_state $B)\" = cancelled ]"
    ok $? "$WHO: the job is cancelled"
}
hostile "" root
hostile "$NB" nobody

td_stop
ok $? "tesseld stops cleanly"
done_testing
