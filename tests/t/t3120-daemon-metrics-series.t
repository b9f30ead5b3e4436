#!/bin/sh
# t3120-daemon-metrics-series.t - a real scrape of /metrics from a tesseld with a fake GPU and two
# jobs running in slices on it passes `promtool check metrics` (the text format and Prometheus' naming
# rules), and the series of docs/metrics.md say what the test set up: each slice's limit is its
# job's gpu_mem, its used memory what the job allocated on the fake driver (plus its context),
# its compute limit the job's share; the GPU's memory used (NVML, shared fake state) is the sum
# of its slices' and free is total - used; utilisation is a ratio; queue depth is the pending
# jobs made in a queue that starts nothing; the pending-time histogram counts every start and
# the run-time histogram every end; the pass histogram counts the passes; build_info names this
# version and commit.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
for t in curl jq promtool awk; do
    command -v $t >/dev/null || missing "$t is needed (promtool: scripts/install-deps.sh)"
done
PROBE=$TESSEL_BUILD/tests/interposer/tcu-probe
LOAD=$TESSEL_BUILD/tests/interposer/tcu-load
[ -x "$TESSEL_BUILD/bin/tesseld" ] || missing "tesseld not built"
[ -e "$TESSEL_BUILD/tests/fake/libnvidia-ml.so.1" ] || missing "fake NVML not built"
[ -e "$TESSEL_BUILD/lib/libtessel-cuda.so" ] || missing "interposer not built"
[ -x "$PROBE" ] && [ -x "$LOAD" ] || missing "tcu-probe and tcu-load not built"

td_setup
MiB=1048576
G="$TD/go"
mkdir -p "$G"
# tesseld's NVML and the jobs' fake driver share one fake state: NVML sees the jobs' memory.
TESSEL_FAKE_STATE="$TD/fake-state"
export TESSEL_FAKE_STATE
# One GPU: the fake driver in a job does not map device 0 to the GPU it was given, so a job
# placed on a second GPU would touch the first (and be killed by the watchdog).
td_start --fake-gpus 1xT4:8G --no-cgroups
ENV="\"env\":{\"TESSEL_FAKE_STATE\":\"$TESSEL_FAKE_STATE\",\"TESSEL_FAKE_CTX_MEM\":\"64M\"}"
scrape() { curl -s -o "$TD/m" "$TD_URL/metrics"; }
# value NAME{LABELS-REGEX} -> the value of the first sample whose name and labels match
# The pattern through the environment, not -v: awk -v processes escapes ("\+", "\{"), and
# gawk (installed with MariaDB for the Slurm tests) and mawk differ in what they make of them.
value() { RE="^$1 " awk '$0 ~ ENVIRON["RE"] { print $NF; exit }' "$TD/m"; }
num_eq() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 == b + 0 && a != "") }'; }

# --- short jobs that start and end ------------------------------------------------------------
api POST /v1/jobs '{"argv":["true"]}'; T1=$(jget .id)
api POST /v1/jobs '{"argv":["false"]}'; T2=$(jget .id)
wait_for '[ "$(job_state $T1)" = succeeded ] && [ "$(job_state $T2)" = failed ]'
ok $? "two short jobs ran and ended"

# --- a queue that starts nothing, three jobs pending in it -------------------------------------
api POST /v1/queues '{"name":"hold","max_gpu_milli":0}'
is "$CODE" 201 "a queue that starts nothing"
for i in 1 2 3; do api POST /v1/jobs '{"argv":["true"],"gpu":0.5,"queue":"hold"}'; done

# --- two slices: one holds 500 MiB, one runs kernels ----------------------------------------
api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:500M\",\"waitfile:$G/a\"],\"gpu\":0.5,\"gpu_mem\":\"1G\",$ENV}"
A=$(jget .id)
api POST /v1/jobs "{\"argv\":[\"$LOAD\",\"--us=1000\",\"--ms=300\",\"--linger=$G/b\"],\"gpu\":0.5,\"gpu_mem\":\"2G\",$ENV}"
B=$(jget .id)
slice() { # JOB FIELD -> the field of the job's slice in GET /v1/gpus
    api GET /v1/gpus
    jget "[.gpus[] | .index as \$g | .slices[] | select(.job_id == $1) | . + {gpu: \$g}][0].$2"
}
wait_for '[ "$(slice $A mem_used)" = $((564 * MiB)) ] && [ "$(slice $B busy_ms)" -gt 0 ] 2>/dev/null ||
          [ "$(job_state $B)" != running ]'
is "$(job_state $B)" running "job $B runs"
ok $? "job $A holds 500 MiB + its 64 MiB context, job $B has run kernels"
GA=$(slice "$A" gpu)
GB=$(slice "$B" gpu)
diag "job $A on GPU $GA, job $B on GPU $GB"
# The queue snapshot follows the scheduler's cycles (at least once a second).
wait_for 'scrape && [ "$(value "tessel_queue_jobs\\{queue=\"hold\",state=\"pending\"\\}")" = 3 ] &&
          [ "$(value "tessel_queue_jobs\\{queue=\"default\",state=\"running\"\\}")" = 2 ]'
ok $? "queue depth: 3 pending in hold, 2 running in default"
is "$(value 'tessel_queue_jobs\{queue="hold",state="running"\}')" 0 "none running in hold"

# --- promtool --------------------------------------------------------------------------------
promtool check metrics <"$TD/m" >"$TD/lint" 2>&1
is "$?" 0 "promtool check metrics accepts the scrape"
is "$(cat "$TD/lint")" "" "with no lint problem"
sed 's/^/#   /' "$TD/lint"

# --- per slice ---------------------------------------------------------------------------------
sl() { echo "$1\\{gpu=\"$2\",uuid=\"[^\"]*\",job=\"$3\",user=\"admin\",queue=\"default\"\\}"; }
is "$(value "$(sl tessel_slice_memory_limit_bytes "$GA" "$A")")" 1073741824 \
    "slice of $A: limit = its gpu_mem (1 GiB)"
is "$(value "$(sl tessel_slice_memory_limit_bytes "$GB" "$B")")" 2147483648 \
    "slice of $B: limit = its gpu_mem (2 GiB)"
is "$(value "$(sl tessel_slice_memory_used_bytes "$GA" "$A")")" $((564 * MiB)) \
    "slice of $A: used = 500 MiB allocated + the 64 MiB context"
is "$(value "$(sl tessel_slice_compute_limit_ratio "$GA" "$A")")" 0.5 \
    "slice of $A: compute limit 0.5 (a half GPU)"
is "$(value "$(sl tessel_slice_gpu_share_ratio "$GB" "$B")")" 0.5 "slice of $B: share 0.5"
BUSY=$(value "$(sl tessel_slice_busy_seconds_total "$GB" "$B")")
diag "busy seconds of $B: $BUSY"
awk -v v="$BUSY" 'BEGIN { exit !(v + 0 > 0) }'; ok $? "slice of $B: busy seconds above 0"
is "$(value "$(sl tessel_slice_suspended "$GA" "$A")")" 0 "slice of $A: not suspended"

# --- per GPU -----------------------------------------------------------------------------------
for g in 0; do
    lab="\\{gpu=\"$g\",uuid=\"[^\"]*\",model=\"Fake T4\"\\}"
    sum=$(awk -v g="$g" '/^tessel_slice_memory_used_bytes\{/ && index($0, "gpu=\"" g "\"") { s += $NF }
                          END { printf "%d", s }' "$TD/m")
    used=$(value "tessel_gpu_memory_used_bytes$lab")
    is "$used" "$sum" "GPU $g: memory used (NVML) = the sum of its slices' ($sum)"
    is "$(value "tessel_gpu_memory_total_bytes$lab")" 8589934592 "GPU $g: total 8 GiB"
    is "$(value "tessel_gpu_memory_free_bytes$lab")" $((8589934592 - used)) "GPU $g: free = total - used"
    u=$(value "tessel_gpu_utilization_ratio$lab")
    awk -v v="$u" 'BEGIN { exit !(v != "" && v >= 0 && v <= 1) }'
    ok $? "GPU $g: utilisation is a ratio ($u)"
done
n=$(grep -c "^tessel_slice_memory_limit_bytes{gpu=\"$GA\"" "$TD/m")
is "$(value "tessel_gpu_slices\\{gpu=\"$GA\",uuid=\"[^\"]*\",model=\"Fake T4\"\\}")" "$n" "GPU $GA: slices = its running jobs ($n)"

# --- histograms, build_info --------------------------------------------------------------------
is "$(value tessel_job_pending_seconds_count)" "$(value tessel_jobs_started_total)" \
    "pending-time histogram: one observation per start (4)"
is "$(value 'tessel_job_pending_seconds_bucket\{le="\+Inf"\}')" 4 "its +Inf bucket counts them"
is "$(value tessel_job_run_seconds_count)" 2 "run-time histogram: the 2 ended jobs"
P=$(value tessel_sched_passes_total)
C=$(value tessel_sched_pass_duration_seconds_count)
awk -v p="$P" -v c="$C" 'BEGIN { exit !(p > 0 && c >= p && c <= p + 1) }'
ok $? "pass-duration histogram: one observation per pass ($C, $P passes)"
api GET /healthz
V=$(jget .version)
COMMIT=$(git -C "$TESSEL_SRCDIR" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
is "$(value "tessel_build_info\\{version=\"$V\",commit=\"$COMMIT\"\\}")" 1 \
    "build_info: version $V, commit $COMMIT"

touch "$G/a" "$G/b"
wait_for '[ "$(job_state $A)" = succeeded ] && [ "$(job_state $B)" = succeeded ]'
ok $? "the slice jobs end"
scrape
is "$(value tessel_job_run_seconds_count)" 4 "run-time histogram: 4 ended jobs"
grep -q '^tessel_slice_' "$TD/m"; is $? 1 "no slice series once no job runs"
promtool check metrics <"$TD/m" >"$TD/lint" 2>&1
is "$?:$(cat "$TD/lint")" "0:" "promtool accepts the idle scrape too"

td_stop; ok $? "tesseld stops cleanly"
done_testing
