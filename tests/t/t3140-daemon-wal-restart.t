#!/bin/sh
# t3140: under a steady stream of submissions the store's WAL starts over (a commit at 64 MiB of
# WAL runs the checkpoint that catches up, libstore's maint_wal_hook) instead of growing without
# bound, and no acknowledged submission is lost on the way.  Submissions go to a queue that
# starts nothing.
# test-timeout: 600
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
for t in curl jq sqlite3 stat; do
    command -v $t >/dev/null || missing "$t is needed"
done
[ -x "$TESSEL_BUILD/bin/tesseld" ] || missing "tesseld not built"

td_setup
td_start --fake-gpus 1xT4:16G --no-cgroups
DB="$TD/data/tessel.db"
AUTH="Authorization: Bearer $TD_ADMIN"
metric() { curl -s "$TD_URL/metrics" | awk -v m="$1" '$1 == m {print $2}'; }

curl -sf -H "$AUTH" -H 'Content-Type: application/json' \
    -d '{"name":"hold","max_gpu_milli":0}' "$TD_URL/v1/queues" >/dev/null
ok $? "a queue that starts nothing"
is "$(metric tessel_store_wal_restarts_total)" 0 "no restart before the stream"

# One stream: N submissions on one connection (one curl, its URLs in a config file), with no
# pause for the maintenance thread's checkpoints to catch up on their own.  About 5 WAL pages
# (20 KiB) a submission: 14,000 write some 280 MiB, more than four times the 64 MiB at which a
# commit catches up.
N=14000
i=0
while [ $i -lt $N ]; do
    printf 'url = "%s/v1/jobs"\noutput = /dev/null\n' "$TD_URL"
    i=$((i + 1))
done >"$TD/urls"
acked=$(curl -s -H "$AUTH" -H 'Content-Type: application/json' -w '%{http_code}\n' \
    -d '{"argv":["true"],"queue":"hold","gpu":0.5}' -K "$TD/urls" | grep -c '^201$')
wal=$(stat -c %s "$DB-wal")
restarts=$(metric tessel_store_wal_restarts_total)
diag "WAL $wal bytes; restarts $restarts, catch-ups $(metric tessel_store_checkpoint_catchups_total)," \
    "checkpoints $(metric tessel_store_checkpoints_total)"
is "$acked" $N "every submission was acknowledged"
ok "$([ "${restarts:-0}" -ge 1 ] && echo 0 || echo 1)" "the WAL started over during the stream"
is "$(metric tessel_store_checkpoint_errors_total)" 0 "no checkpoint failed"
# The file never shrinks (it is reused from its beginning after a restart): its size is the most
# the WAL held.  64 MiB and what came while a catch-up waited for the thread's checkpoint to end
# (twice that is far more than that); without the catch-ups it held all 280 MiB here.
ok "$([ "$wal" -le $((128 << 20)) ] && echo 0 || echo 1)" \
    "the WAL file stayed under 128 MiB ($wal bytes)"

# Nothing lost: every acknowledged submission is in the API's answer and in the store, also
# after a restart of tesseld (SIGTERM: the last connection checkpoints).
n=$(curl -s -H "$AUTH" "$TD_URL/metrics" | awk '$1 == "tessel_jobs_submitted_total" {print $2}')
is "$n" "$acked" "tessel_jobs_submitted_total counts them all"
td_stop
ok $? "tesseld stopped cleanly"
is "$(sqlite3 "$DB" 'SELECT count(*) FROM jobs')" "$acked" "the store holds every acknowledged job"
td_start --fake-gpus 1xT4:16G --no-cgroups
is "$(curl -s -H "$AUTH" "$TD_URL/v1/jobs?state=pending&limit=1" | jq -r '.jobs | length')" 1 \
    "tesseld reads the store again after the restarts"
td_stop
ok $? "tesseld stopped cleanly again"
done_testing
