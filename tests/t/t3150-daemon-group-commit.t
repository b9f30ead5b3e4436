#!/bin/sh
# t3150: group commit (libstore's tstore_group_*, docs/tesseld.md "Store").  Many parallel
# submissions share store transactions: each is acknowledged (201) only after the commit that
# holds its row, all get distinct ids, and every acknowledged one is in the store after a
# kill -9 of tesseld and a restart, with its submission event.  Meanwhile jobs of another queue
# start and end, so the main loop's own transactions (starts, ends, their events) interleave
# with the groups, and submissions refused inside their turn (a queue that does not exist: read
# in the group's transaction) come in between and leave nothing.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
for t in curl jq sqlite3 sort; do
    command -v $t >/dev/null || missing "$t is needed"
done
[ -x "$TESSEL_BUILD/bin/tesseld" ] || missing "tesseld not built"

td_setup
FAKE="--fake-gpus 1xT4:16G --no-cgroups"
td_start $FAKE
DB="$TD/data/tessel.db"
metric() { curl -s "$TD_URL/metrics" | awk -v m="$1" '$1 == m {print $2}'; }

api POST /v1/queues '{"name":"hold","max_gpu_milli":0}'
is "$CODE" 201 "a queue that starts nothing"

# N submissions on P connections at once (curl --parallel), to the holding queue, and M jobs
# that run (`true`, no GPU) in the default queue at the same time.  Each answer: the status and
# the Location header (/v1/jobs/ID).
N=240 M=60 B=40 P=16
urls() { # COUNT
    _i=0
    while [ $_i -lt "$1" ]; do
        printf 'url = "%s/v1/jobs"\noutput = /dev/null\n' "$TD_URL"
        _i=$((_i + 1))
    done
}
urls $N >"$TD/hold.urls"
urls $M >"$TD/run.urls"
urls $B >"$TD/bad.urls"
submit() { # BODY URLS OUT
    curl -s --no-progress-meter --parallel --parallel-immediate --parallel-max $P -H "Authorization: Bearer $TD_ADMIN" \
        -H 'Content-Type: application/json' --data-binary "$1" \
        -w '%{http_code} %header{location}\n' -K "$2" >"$3"
}
submit '{"argv":["true"],"queue":"hold","gpu":0.5}' "$TD/hold.urls" "$TD/hold.out" &
S1=$!
submit '{"argv":["true"]}' "$TD/run.urls" "$TD/run.out" &
S2=$!
submit '{"argv":["true"],"queue":"nope"}' "$TD/bad.urls" "$TD/bad.out" &
S3=$!
wait $S1
wait $S2
wait $S3
is "$(grep -c '^400 $' "$TD/bad.out")" $B "the $B submissions to a queue that does not exist: 400"
cat "$TD/hold.out" "$TD/run.out" >"$TD/all.out"
is "$(grep -c '^201 /v1/jobs/[0-9][0-9]*$' "$TD/all.out")" $((N + M)) \
    "all $((N + M)) parallel submissions acknowledged, each with its Location"
sed -n 's|^201 /v1/jobs/\([0-9]*\)$|\1|p' "$TD/all.out" | sort -n >"$TD/acked"
is "$(sort -u -n "$TD/acked" | wc -l)" $((N + M)) "their ids are distinct"

commits=$(metric tessel_store_group_commits_total)
members=$(metric tessel_store_group_members_total)
diag "group commits $commits holding $members submissions"
is "$members" $((N + M)) "every submission went through a group commit"
ok "$([ "${commits:-0}" -ge 1 ] && [ "$commits" -lt "$members" ] && echo 0 || echo 1)" \
    "parallel submissions shared commits ($commits commits for $members submissions)"

# Some of the running jobs end while others are still submitted; wait until they all have, so
# that the store also holds the main loop's writes of their ends.
RUN1=$(sed -n 's|^201 /v1/jobs/\([0-9]*\)$|\1|p' "$TD/run.out" | head -1)
wait_for '[ "$(curl -s -H "Authorization: Bearer $TD_ADMIN" "$TD_URL/v1/jobs?state=active&queue=default&limit=1000" | jq ".jobs | length")" = 0 ]'
ok $? "the jobs of the default queue ran and ended"
is "$(job_state "$RUN1")" succeeded "one of them succeeded"

# kill -9: every acknowledged job is in the store, with its submission event, after restart.
td_kill9
ids=$(paste -sd, "$TD/acked")
is "$(sqlite3 "$DB" "SELECT count(*) FROM jobs WHERE id IN ($ids)")" $((N + M)) \
    "after kill -9, the store holds every acknowledged job"
is "$(sqlite3 "$DB" "SELECT count(DISTINCT job) FROM job_events WHERE event = 'submit' AND job IN ($ids)")" \
    $((N + M)) "... each with its submission event"
is "$(sqlite3 "$DB" "SELECT count(*) FROM jobs WHERE queue = 'default' AND state = 2")" $M \
    "... and the ends of the jobs that ran"
is "$(sqlite3 "$DB" 'SELECT count(*) FROM jobs')" $((N + M)) "... and nothing of the refused ones"
is "$(sqlite3 "$DB" 'PRAGMA integrity_check')" ok "the store passes integrity_check"
td_start $FAKE
api GET "/v1/jobs?queue=hold&limit=1000"
is "$(jget '.jobs | length')" $N "tesseld reads them all again after the restart"
is "$(jget '[.jobs[].state] | unique | join(",")')" pending "all pending in the holding queue"
api POST /v1/jobs '{"argv":["true"],"queue":"hold"}'
is "$CODE" 201 "and takes submissions again"
td_stop
ok $? "tesseld stopped cleanly"
done_testing
