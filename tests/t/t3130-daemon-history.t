#!/bin/sh
# t3130-daemon-history.t - GET /v1/history: tesseld samples its GPUs, queues and users every
# --history-interval and serves the series.  With a job holding half of GPU 0 and nothing on
# GPU 1, GPU 0's samples say a job ran (idle 0, busy a measured figure, running 1, its share
# and memory allocated) and GPU 1's say idle (idle 1, busy null: never "0 % busy"); the queue
# and the user have the job running and one pending.  Past history written through the real
# write path (tessel-hist-seed, test only) comes back for the last hour (10 s points), day
# (1-minute means) and week (10-minute means) with the seeded figures.  Who may read what:
# everyone GPUs and queues, a user only their own series (403 for another's); bad input is
# one line and 400; the flags refuse bad values.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
for t in curl jq sqlite3; do
    command -v $t >/dev/null || missing "$t is needed"
done
SEED=$TESSEL_BUILD/tests/daemon/tessel-hist-seed
[ -x "$TESSEL_BUILD/bin/tesseld" ] && [ -x "$SEED" ] || missing "tesseld or tessel-hist-seed not built"

td_setup
# The flags: bad values are refused with one line, exit 2.
for bad in "--history-interval 7s" "--history-interval 0" "--history-interval 2m" \
    "--history-retention 30m" "--history-retention 500d" "--history-retention x"; do
    # shellcheck disable=SC2086
    "$TESSEL_BUILD/bin/tesseld" --data-dir "$TD/bad" --no-listen --no-socket $bad 2>"$TD/err"
    st=$?
    [ "$st" = 2 ] && [ "$(wc -l <"$TD/err")" = 1 ]; ok $? "tesseld $bad: refused, exit 2, one line ($(cat "$TD/err"))"
done

# Live: tesseld sampling every second.
td_start --fake-gpus 2xT4:16G --no-cgroups --allow-root-jobs --history-interval 1s
UUID0=$(curl -s -H "Authorization: Bearer $TD_ADMIN" "$TD_URL/v1/gpus" | jq -r '.gpus[0].uuid')
UUID1=$(curl -s -H "Authorization: Bearer $TD_ADMIN" "$TD_URL/v1/gpus" | jq -r '.gpus[1].uuid')

api POST /v1/users '{"name":"alice","role":"user"}'
api POST /v1/tokens '{"user":"alice","name":"t"}'
ALICE=$(jget .token)
api POST /v1/users '{"name":"bob","role":"user"}'
api POST /v1/tokens '{"user":"bob","name":"t"}'
BOB=$(jget .token)
[ -n "$ALICE" ] && [ -n "$BOB" ]; ok $? "users alice and bob with tokens"

api POST /v1/jobs '{"argv":["sleep","300"],"gpu":0.5,"gpu_mem":"4G"}' "$ALICE"
J1=$(jget .id)
api POST /v1/jobs '{"argv":["sleep","300"],"gpus":2}' "$ALICE"
J2=$(jget .id)
wait_for '[ "$(job_state "$J1")" = running ]'; ok $? "alice's job $J1 runs on half a GPU"
is "$(job_state "$J2")" pending "her job $J2 of two whole GPUs waits"

# A few samples with the job running (1 s interval).
GPU0=$(curl -s -H "Authorization: Bearer $TD_ADMIN" "$TD_URL/v1/gpus" |
    jq -r ".gpus[] | select(.slices | length > 0) | .index")
is "$GPU0" 0 "the job is on GPU 0"
hist() { api GET "/v1/history?$1" "" "${2-$TD_ADMIN}"; }
busy_samples() {
    hist "scope=gpu&range=10m"
    [ "$(jget "[.series[] | select(.name == \"$UUID0\") | .running[] | select(. == 1)] | length")" -ge 3 ]
}
wait_for busy_samples; ok $? "GPU 0 has samples with the job running"
is "$(jget .step)/$(jget .interval)" 1/1 "the last 10 minutes come at the 1 s samples (--history-interval)"
S0=".series[] | select(.name == \"$UUID0\")"
S1=".series[] | select(.name == \"$UUID1\")"
is "$(jget "$S0 | .gpu")" 0 "GPU 0's series names its index"
is "$(jget "$S0 | [.idle[-1], .running[-1], .milli[-1], .mem_alloc[-1]] | @csv")" \
    "0,1,500,4294967296" "GPU 0's last sample: not idle, 1 job, 500 milli-GPU, 4G allocated"
# Busy is NVML's figure, as /v1/gpus shows it (the fake NVML's 0 %; null where NVML gives none,
# as under the sanitizers): a number, not null, whenever /v1/gpus has one.
want=$(curl -s -H "Authorization: Bearer $TD_ADMIN" "$TD_URL/v1/gpus" | jq -r '.gpus[0].utilization | type')
is "$(jget "$S0 | .busy[-1] | type")" "$want" "GPU 0's busy is NVML's figure while a job runs ($want, as /v1/gpus)"
is "$(jget "$S1 | [.idle[-1], .running[-1], .milli[-1]] | @csv")" "1,0,0" \
    "GPU 1's last sample: idle, no job, no share"
is "$(jget "$S1 | .busy[-1]")" null "GPU 1's busy is null (idle), not 0"
hist "scope=queue&range=10m"
is "$(jget '.series[] | select(.name == "default") | [.running[-1], .pending[-1], .milli[-1]] | @csv')" \
    "1,1,500" "queue default: 1 running, 1 pending, 500 milli-GPU"
hist "scope=user&range=10m&name=alice"
is "$(jget '[.series[].name] | @csv')" '"alice"' "an admin reads alice's series"
is "$(jget '.series[0] | [.running[-1], .pending[-1]] | @csv')" "1,1" "alice: 1 running, 1 pending"

# The past, written through the real write path while tesseld is stopped: GPU 0 busy 40 %
# with a job, a GPU idle throughout, queue default and user alice with a job of 0.5 GPU, for
# the last 8 days at tesseld's default plan (10 s samples).
td_stop; ok $? "tesseld stops (the jobs keep running)"
printf '%s\n' "gpu $UUID0 40 0 1000 2000 500 1 0" "gpu GPU-seeded-idle - 1 0 0 0 0 0" \
    "queue default - 0 1000 2000 500 1 2" "user alice - 0 1000 2000 500 1 2" >"$TD/series"
SEEDED=$(date +%s)
"$SEED" "$TD/data/tessel.db" 10s 8d 8d <"$TD/series"
ok $? "a week and a day of 10 s samples seeded through the write path"
td_start --fake-gpus 2xT4:16G --no-cgroups --allow-root-jobs
for r in "1h 10" "1d 60" "1w 600"; do
    set -- $r
    hist "scope=gpu&range=$1"
    n=$(jget ".series[] | select(.name == \"GPU-seeded-idle\") | .t | length")
    busy=$(jget ".series[] | select(.name == \"GPU-seeded-idle\") | [.busy[] | select(. != null)] | length")
    idle=$(jget ".series[] | select(.name == \"GPU-seeded-idle\") | [.idle[] | select(. != 1)] | length")
    st=$(jget .step)
    want=$(($(jget .range) / $2))
    # The seeded series ends when the seeder started; the range ends now.
    lag=$((($(date +%s) - SEEDED) / $2))
    is "$st" "$2" "range $1: step $2 s"
    # The last interval may still be open (not written), the first may begin before the range.
    [ "$n" -ge $((want - 2 - lag)) ] && [ "$n" -le $((want + 1)) ]; ok $? "range $1: $n points of the seeded idle GPU (about $want)"
    is "$busy/$idle" "0/0" "range $1: the idle GPU is idle in every point, never a busy figure"
    seeded=$(jget "[.series[] | select(.name == \"$UUID0\") | .busy[]] | map(select(. == 40)) | length")
    [ "$seeded" -ge $((want - 20 - lag)) ]; ok $? "range $1: GPU 0's seeded busy 40 % comes back ($seeded points)"
done
hist "scope=user&range=1w&name=alice"
is "$(jget '.series[0] | [.milli[0], .pending[0]] | @csv')" "500,2" "a week of alice at 10-minute means"

# Answers are kept until their tier's rows change (api/history.c, "Cache").  A kept answer is
# the one that was built: the week asked twice gives the same rows (asked again when a
# 10-minute boundary fell between the two).
same=1
for try in 1 2 3; do
    hist "scope=gpu&range=1w"
    first=$(jq -c '[.start, .series]' "$TD/out")
    hist "scope=gpu&range=1w"
    [ "$first" = "$(jq -c '[.start, .series]' "$TD/out")" ] && { same=0; break; }
done
ok $same "the week asked twice: the same rows (the second from the kept answer)"
# A new sample is in the next answer: the hour's last point moves on (10 s samples).
hist "scope=gpu&range=1h"
last=$(jget "[$S0 | .t[-1]] | .[0]")
newer() { hist "scope=gpu&range=1h"; [ "$(jget "[$S0 | .t[-1]] | .[0]")" -gt "$last" ]; }
wait_for newer; ok $? "a sample taken after an answer is in the next one (nothing stale kept)"
# Kept answers are per reader where readers differ: after the admin's answer for every user,
# bob's is still his own alone and alice's her own.
hist "scope=user&range=1w"
[ "$(jget '[.series[].name] | index("alice")')" != null ]; ok $? "the admin's week of every user holds alice"
hist "scope=user&range=1w" "$BOB"
is "$CODE/$(jget '[.series[].name] | map(select(. != "bob")) | length')" "200/0" \
    "bob's week right after it: his own series only"
hist "scope=user&range=1w" "$ALICE"
is "$CODE/$(jget '[.series[].name] | @csv')" '200/"alice"' "alice's week: hers only"

# Who may read what.
hist "scope=gpu&range=1h" "$BOB"
is "$CODE" 200 "a user reads the GPUs' history"
hist "scope=queue&range=1h" "$BOB"
is "$CODE" 200 "a user reads the queues' history"
hist "scope=user&range=1h" "$BOB"
is "$CODE/$(jget '[.series[].name] | map(select(. != "bob")) | length')" "200/0" \
    "a user's scope=user answer holds their own series only"
hist "scope=user&range=1h&name=alice" "$BOB"
is "$CODE" 403 "bob may not read alice's history"
hist "scope=user&range=1h&name=alice" "$ALICE"
is "$CODE/$(jget '.series[0].name')" "200/alice" "alice reads her own"
hist "scope=gpu&range=1h" ""
is "$CODE" 401 "no token: 401"

# Bad input: 400 with one line.
for q in "scope=node" "range=0" "range=1x" "range=9d" "range=100w" "name="; do
    hist "$q"
    is "$CODE/$(jget .error.code)" "400/invalid_value" "?$q: 400 ($(jget .error.message))"
done

# The store: one self-contained table.
n=$(sqlite3 "$TD/data/tessel.db" "SELECT group_concat(step) FROM (SELECT DISTINCT step FROM usage_history ORDER BY step)")
is "$n" "1,10,60,600" "the store holds the 1 s run's samples and the three tiers of the 10 s plan"
td_stop; ok $? "tesseld stops cleanly (no sanitizer report)"
done_testing
