#!/bin/sh
# t3060-daemon-metrics-counts.t - /metrics' job counts are kept as the job model changes jobs
# (src/daemon/jobmodel.h, TJM_TALLY_*), not counted from the jobs table at each scrape: after a
# mixed workload (jobs that succeed, fail, are cancelled pending and running, suspended, an
# array cancelled as a whole, a dependency that can never be met) and after a restart of
# tesseld, every count served (tessel_jobs by state, tessel_jobs_submitted_total,
# tessel_jobs_started_total, tessel_jobs_ended_total by cause) equals a count made afresh from
# the store with sqlite3.  The store's maintenance thread checkpoints the WAL (its counter
# rises after a few thousand rows) and the store stays sound (integrity_check).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
for t in curl jq sqlite3; do
    command -v $t >/dev/null || missing "$t is needed"
done
[ -x "$TESSEL_BUILD/bin/tesseld" ] || missing "tesseld not built"

td_setup
td_start --fake-gpus 1xT4:16G --no-cgroups
DB="$TD/data/tessel.db"

# The counts as served, one "name{labels} value" a line, sorted.
served() {
    curl -s "$TD_URL/metrics" |
        grep -E '^tessel_jobs(\{|_submitted_total |_started_total |_ended_total\{)' | sort
}
# The same counts made now from the store's rows and event log.
fresh() {
    sqlite3 "$DB" "
      WITH s(n, name) AS (VALUES (0,'pending'),(1,'running'),(2,'succeeded'),(3,'failed'),
                                 (4,'cancelled'),(5,'preempted')),
           c(n, name) AS (VALUES (1,'exit'),(2,'signal'),(3,'cancelled'),(4,'preempted'),
                                 (5,'time_limit'),(6,'host_oom'),(7,'gpu_mem_limit'),
                                 (8,'launch_failure'),(9,'dependency'),(10,'lost'),
                                 (11,'rejected'))
      SELECT 'tessel_jobs{state=\"' || s.name || '\"} ' ||
             (SELECT count(*) FROM jobs WHERE state = s.n) FROM s
      UNION ALL SELECT 'tessel_jobs_submitted_total ' || count(*) FROM jobs
      UNION ALL SELECT 'tessel_jobs_started_total ' || count(*) FROM job_events
                WHERE event = 'start'
      UNION ALL SELECT 'tessel_jobs_ended_total{cause=\"' || c.name || '\"} ' ||
             (SELECT count(*) FROM jobs WHERE state >= 2 AND end_cause = c.n) FROM c;" | sort
}
# Equal once the jobs under way have settled (the two reads are not one snapshot).
same() {
    served >"$TD/served"
    fresh >"$TD/fresh"
    [ -s "$TD/served" ] && cmp -s "$TD/served" "$TD/fresh"
}
value() { grep -F "$1 " "$TD/served" | awk '{print $2}'; }
submit() { # BODY -> id in $ID
    api POST /v1/jobs "$1"
    ID=$(jget .id)
}

api POST /v1/queues '{"name":"hold","max_gpu_milli":0}'
is "$CODE" 201 "a queue that starts nothing"

# --- a mixed workload ------------------------------------------------------------------------
for i in 1 2 3; do submit '{"argv":["true"]}'; done
submit '{"argv":["false"]}'
submit '{"argv":["sh","-c","kill -9 $$"]}'
submit '{"argv":["sleep","60"],"gpu":0.25}'
RUN1=$ID
submit '{"argv":["sleep","60"],"gpu":0.25}'
RUN2=$ID
submit '{"argv":["sleep","60"],"gpu":0.25}'
SUSP=$ID
submit '{"argv":["true"],"gpu":0.5,"queue":"hold"}'
HOLD1=$ID
submit '{"argv":["true"],"gpu":0.5,"queue":"hold"}'
submit '{"argv":["true"],"gpu":0.5,"queue":"hold","array":"0-9"}'
ARR=$ID
submit '{"argv":["true"],"after":"afterok:'"$HOLD1"'"}'
DEP=$ID
wait_for '[ "$(job_state '"$RUN1"')" = running ] && [ "$(job_state '"$RUN2"')" = running ] &&
          [ "$(job_state '"$SUSP"')" = running ]'
ok $? "three sleeping jobs run"
api POST "/v1/jobs/$SUSP/suspend"
is "$CODE" 200 "one is suspended"
api POST "/v1/jobs/$RUN1/cancel"
is "$CODE" 200 "one running job is cancelled"
api POST "/v1/jobs/$HOLD1/cancel"
is "$CODE" 200 "a pending job is cancelled (its dependent can never start)"
api POST "/v1/jobs/$ARR/cancel"
is "$CODE" 200 "an array of 10 pending elements is cancelled"
wait_for '[ "$(job_state '"$RUN1"')" = cancelled ] && [ "$(job_state '"$DEP"')" = cancelled ]'
ok $? "the running job's cancel and the dependency's end are recorded"
wait_for same
ok $? "after the workload, every count served equals a fresh count of the store"
diff "$TD/served" "$TD/fresh" | sed 's/^/# /'
is "$(value tessel_jobs_submitted_total)" 21 "21 jobs submitted"
is "$(value 'tessel_jobs{state="running"}')" 2 "2 running (one of them suspended)"
is "$(value 'tessel_jobs{state="cancelled"}')" 13 "13 cancelled (1 running, 1 pending, 10 elements, 1 dependent)"
is "$(value 'tessel_jobs_ended_total{cause="exit"}')" 4 "4 ended by their exit (3 succeeded, 1 failed)"
is "$(value 'tessel_jobs_ended_total{cause="signal"}')" 1 "1 ended by a signal"
is "$(value 'tessel_jobs_ended_total{cause="dependency"}')" 1 "1 ended by its dependency"
is "$(value tessel_jobs_started_total)" 8 "8 starts (3 + 2 that ended, 3 that slept)"

# --- a restart: counted once from the store, then kept again ---------------------------------
td_stop
RC=$?
[ "$RC" = 0 ] || sed "s/^/#   /" "$TD/tesseld.log" | tail -20
is "$RC" 0 "tesseld stops cleanly"
td_start --fake-gpus 1xT4:16G --no-cgroups
wait_for same
ok $? "after a restart, the counts served equal a fresh count of the store"
diff "$TD/served" "$TD/fresh" | sed 's/^/# /'
is "$(value tessel_jobs_submitted_total)" 21 "21 jobs submitted, as before the restart"
api POST "/v1/jobs/$SUSP/cancel"
is "$CODE" 200 "the suspended job is cancelled after the restart"
api POST "/v1/jobs/$RUN2/cancel"
submit '{"argv":["true"]}'
wait_for '[ "$(job_state '"$ID"')" = succeeded ] && [ "$(job_state '"$SUSP"')" = cancelled ] &&
          [ "$(job_state '"$RUN2"')" = cancelled ]'
ok $? "new work after the restart ends"
wait_for same
ok $? "and the counts served still equal a fresh count of the store"
diff "$TD/served" "$TD/fresh" | sed 's/^/# /'
is "$(value 'tessel_jobs{state="running"}')" 0 "none running"

# --- the maintenance thread checkpoints the WAL ----------------------------------------------
i=0
while [ $i -lt 3 ]; do
    submit '{"argv":["true"],"gpu":0.5,"queue":"hold","array":"0-999"}'
    [ "$CODE" = 201 ] || break
    api POST "/v1/jobs/$ID/cancel"
    i=$((i + 1))
done
is "$i" 3 "3,000 more jobs submitted and cancelled"
ck() { curl -s "$TD_URL/metrics" | awk '$1 == "tessel_store_checkpoints_total" {print $2}'; }
wait_for '[ "$(ck)" -gt 0 ]'
ok $? "the store's maintenance thread ran checkpoints ($(ck))"
is "$(curl -s "$TD_URL/metrics" | awk '$1 == "tessel_store_checkpoint_errors_total" {print $2}')" 0 \
    "none failed"
wait_for same
ok $? "the counts still equal a fresh count of the store"
td_stop
RC=$?
[ "$RC" = 0 ] || sed "s/^/#   /" "$TD/tesseld.log" | tail -20
is "$RC" 0 "tesseld stops cleanly"
is "$(sqlite3 "$DB" 'PRAGMA integrity_check')" ok "the store is sound"
is "$(sqlite3 "$DB" 'SELECT count(*) FROM jobs')" 3022 "with every job"
done_testing
