#!/bin/sh
# t9006: tesseld --slurm (docs/slurm-backend.md) on the multi-node test cluster of
# tests/slurm/cluster.sh (a controller and two nodes in network namespaces, two SIMULATED GPUs
# per node, 4 shards each, spank_tessel.so on the nodes).  tesseld runs in the controller's
# network namespace; two local accounts submit through the CLI and the API on its local socket
# (the kernel says who calls).  Checked: the jobs are Slurm jobs of their owners' accounts, a
# half-GPU job's CUDA view from inside (tcu-probe), logs and logs -f, kill, exit codes, the two
# users cannot see or kill each other's jobs, a restart of tesseld keeps (and finds) the jobs,
# slurmctld stopped gives 503 and stores nothing, and the jobs are found again once it is
# back; hostile names and environments change nothing of what sbatch does.
# test-timeout: 600
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/local.sh"
. "$TESSEL_SRCDIR/tests/slurm/cluster.sh"

tsc_test_pieces tests/interposer/tcu-probe
PROBE=$PB/tests/interposer/tcu-probe
tsc_test_setup tslra tslrb
A_UID=$(id -u tslra)
B_UID=$(id -u tslrb)
GiB=1073741824
tsc_start_sim

SLURM_ARGS="--slurm --slurm-conf $TSC/etc/slurm.conf --slurm-shards 4 --slurm-timeout 15"
# tesseld in the controller's network namespace (where slurmctld's address is), its socket a
# file every account reaches; the CLI (tsc_cli) with the fake driver's variables for the job.
start_td() { tsc_tesseld --fake-gpus 2xFakeGPU:8G --slurm-shards 4; }
# Root on the socket is the admin.
adm() {
    _m=$1 _p=$2 _b=${3:-}
    if [ -n "$_b" ]; then
        CODE=$(curl -s -o "$TD/out" -w '%{http_code}' -X "$_m" --unix-socket "$TD_SOCK" \
            -H 'Content-Type: application/json' --data-binary "$_b" "http://localhost$_p")
    else
        CODE=$(curl -s -o "$TD/out" -w '%{http_code}' -X "$_m" --unix-socket "$TD_SOCK" \
            "http://localhost$_p")
    fi
}
state_of() {
    adm GET "/v1/jobs/$1"
    jget .state
}
sid_of() {
    adm GET "/v1/jobs/$1"
    jget .slurm_id
}
field() { sed -n "s/^$2 .*$3=\([^ ]*\).*/\1/p" "$1" | head -n 1; }
njobs() {
    adm GET "/v1/jobs?limit=10000"
    jget '.jobs | length'
}

# ---- configuration -------------------------------------------------------------------------
"$TESSEL_BUILD/bin/tesseld" --check-config --data-dir "$TD/data" $SLURM_ARGS >"$TD/cc" 2>&1
is "$? $(grep -c -E '^(slurm = yes|slurm-shards = 4|slurm-timeout = 15|slurm-conf = /)' "$TD/cc")" \
    "0 4" "--check-config knows --slurm and its options"
"$TESSEL_BUILD/bin/tesseld" --check-config --data-dir "$TD/data" --slurm --slurm-bin /nonexistent \
    >"$TD/cc" 2>&1
is "$? $(grep -c 'nonexistent/sbatch' "$TD/cc")" "1 1" \
    "--check-config refuses a --slurm-bin without sbatch, and says which file"

mkdir -m 777 "$TD/uw" && cp "$TSC/etc/slurm.conf" "$TD/uw/slurm.conf"
"$TESSEL_BUILD/bin/tesseld" --check-config --data-dir "$TD/data" --slurm \
    --slurm-conf "$TD/uw/slurm.conf" >"$TD/cc" 2>&1
is "$? $(grep -c "uw: --slurm-conf's directory must be owned by root" "$TD/cc")" "1 1" \
    "as root, a --slurm-conf in a directory others may write is refused"

start_td
grep -q 'jobs are Slurm jobs' "$TD/tesseld.log"
ok $? "tesseld --slurm starts and says so"

# ---- the CLI: a half-GPU job's CUDA view, foreground, exit codes ---------------------------
tsc_cli tslra run --gpu 0.5 -- "$PROBE" ctx info >"$TD/a1" 2>"$TD/a1e"
is "$? $(field "$TD/a1" info total)" "0 $((4 * GiB))" \
    "tslra: tessel run --gpu 0.5 runs in Slurm; from inside, CUDA sees half of the 8 GiB GPU"
tsc_cli tslra run --gpu 0.5 --gpu-mem 3G -- "$PROBE" ctx info fill:mem:256M >"$TD/a2" 2>"$TD/a2e"
free=$(field "$TD/a2" info free)
is "$? $(field "$TD/a2" info total) $(field "$TD/a2" fill n)" "0 $((3 * GiB)) $((free / 268435456))" \
    "--gpu 0.5 --gpu-mem 3G: it sees 3 GiB and is refused at its limit (all of its free bytes in 256 MiB pieces)"
adm GET "/v1/jobs?user=tslra&limit=1"
JA1=$(jget '.jobs[0].id')
adm GET "/v1/jobs/$JA1"
SA1=$(jget .slurm_id)
is "$(jget '[.user, .state, .exit_code] | join(" ")')" "tslra succeeded 0" \
    "the job is tslra's, succeeded with exit code 0"
[ "$SA1" -gt 0 ] 2>/dev/null
ok $? "it carries its Slurm id ($SA1)"
tsc scontrol show job "$SA1" >"$TD/sc" 2>&1
is "$(sed -n 's/.*UserId=\([a-z]*\)(\([0-9]*\)).*/\1 \2/p' "$TD/sc") $(grep -o 'JobState=[A-Z]*' "$TD/sc")" \
    "tslra $A_UID JobState=COMPLETED" "Slurm ran it as tslra's account (uid $A_UID), COMPLETED"
grep -q 'gres:shard:2' "$TD/sc"
ok $? "as 2 of the GPU's 4 shards (--gres=shard:2)"
tsc_cli tslra show "$JA1" >"$TD/show" 2>&1
is "$? $(awk '$1 == "slurm_id" || $1 == "state" {print $2}' "$TD/show" | tr '\n' ' ')" \
    "0 succeeded $SA1 " "tessel show gives its state and its Slurm id"
is "$(awk '$2 == "slurm" {print $3}' "$TD/show" | tr '\n' ' ')" "start exit " \
    "its history: start and exit, recorded from Slurm"

tsc_cli tslra run -- sh -c "'echo bye; exit 3'" >"$TD/a3" 2>"$TD/a3e"
is "$? $(cat "$TD/a3")" "3 bye" "a job that exits 3: tessel run prints its output and exits 3"
tsc_cli tslra run -- sh -c "'kill -9 \$\$'" >/dev/null 2>&1
st=$?
adm GET "/v1/jobs?user=tslra&limit=1&order=desc"
is "$st $(jget '.jobs[0] | [.state, .end_cause, .signal] | join(" ")')" "137 failed signal 9" \
    "a job killed by SIGKILL: failed, cause signal 9 (tessel run exits 137)"

# ---- the API as tslrb; logs, logs -f --------------------------------------------------------
sock_api tslrb POST /v1/jobs '{"argv":["sh","-c","id -un; echo err >&2; exec sleep 1000"],"gpu":0.25}'
JB=$(jget .id)
is "$CODE $(jget .user)" "201 tslrb" "tslrb submits through the API (local socket): 201, its job"
is "$(jget .cwd)" "$TD/data/slurm/tslrb" "without a cwd it runs in tslrb's own log directory"
SB=$(jget .slurm_id)
wait_for '[ "$(state_of $JB)" = running ]'
ok $? "tslrb's job runs (state followed from Slurm)"
is "$(tsc_state "$SB") $(tsc squeue -h -j "$SB" -o %u)" "RUNNING tslrb" \
    "Slurm says RUNNING, as tslrb"
NB=$(tsc squeue -h -j "$SB" -o %N)
tsc_cli tslrb ps >"$TD/psb" 2>&1
is "$(awk -v id="$JB" '$1 == id {print $4}' "$TD/psb") $(grep -c " $NB " "$TD/psb")" "running 1" \
    "tessel ps shows it running on its Slurm node ($NB)"
wait_for "[ -s '$TD/data/slurm/tslrb/$SB.err' ]"
sock_api tslrb GET "/v1/jobs/$JB/logs"
is "$CODE $(cat "$TD/out")" "200 tslrb" "tslrb reads its job's stdout through the API"
sock_api tslrb GET "/v1/jobs/$JB/logs?stream=stderr"
is "$CODE $(cat "$TD/out")" "200 err" "and its stderr"

tsc_cli tslrb run -d -- sh -c "'for i in 1 2 3; do echo line\$i; sleep 1; done'" >"$TD/b2" 2>&1
JF=$(grep -o '[0-9]*' "$TD/b2" | head -n 1)
tsc_cli tslrb logs -f "$JF" >"$TD/b3" 2>"$TD/b3e"
is "$? $(tr '\n' ' ' <"$TD/b3")" "0 line1 line2 line3 " \
    "tessel logs -f follows a Slurm job's output to its end"
is "$(state_of "$JF")" succeeded "and the job has succeeded when the stream ends"

# ---- two users: no seeing, no killing --------------------------------------------------------
sock_api tslra GET "/v1/jobs/$JB"
is "$CODE" 404 "tslra cannot see tslrb's job (404)"
sock_api tslra GET "/v1/jobs/$JB/logs"
is "$CODE" 404 "nor its logs"
sock_api tslra POST "/v1/jobs/$JB/cancel"
is "$CODE" 404 "nor cancel it through the API"
tsc_cli tslra kill "$JB" >/dev/null 2>&1
ok $([ $? != 0 ]; echo $?) "nor with tessel kill"
tsc_cli tslra ps -a --json >"$TD/ps" 2>&1
is "$(jq "[.jobs[] | select(.id == $JB)] | length" "$TD/ps") $(jq '.jobs | length' "$TD/ps")" \
    "0 4" "tslra's ps -a lists its own 4 jobs, not tslrb's"
is "$(state_of "$JB") $(tsc_state "$SB")" "running RUNNING" "it still runs, in Tessel and in Slurm"
tsc su -s /bin/sh tslra -c "scancel $SB" >"$TD/sc" 2>&1
st=$?
is "$([ $st != 0 ] && echo fails) $(grep -c 'Access/permission denied' "$TD/sc") $(tsc_state "$SB")" \
    "fails 1 RUNNING" \
    "nor can tslra scancel it in Slurm itself (munge vouches for tslra: permission denied)"

# ---- kill ---------------------------------------------------------------------------------
tsc_cli tslrb kill "$JB" >/dev/null 2>&1
ok $? "tslrb kills its job (tessel kill)"
wait_for '[ "$(state_of $JB)" = cancelled ]'
adm GET "/v1/jobs/$JB"
is "$(jget '[.state, .end_cause] | join(" ")') $(tsc_state "$SB")" "cancelled cancelled CANCELLED" \
    "it is cancelled in Tessel (cause cancelled) and in Slurm"

# ---- restart ------------------------------------------------------------------------------
GO=$TSC/out/go-restart
chmod 1777 "$TSC/out"
sock_api tslra POST /v1/jobs "{\"argv\":[\"sh\",\"-c\",\"while [ ! -e $GO ]; do sleep 0.2; done; exit 4\"]}"
JR=$(jget .id)
sock_api tslra POST /v1/jobs '{"argv":["sleep","1000"]}'
JS=$(jget .id)
wait_for '[ "$(state_of $JR)" = running ] && [ "$(state_of $JS)" = running ]'
ok $? "two more jobs of tslra run"
SR=$(sid_of "$JR")
SS=$(sid_of "$JS")
td_stop
ok $? "tesseld stops (SIGTERM) cleanly"
is "$(tsc_state "$SR") $(tsc_state "$SS")" "RUNNING RUNNING" "its jobs go on running in Slurm"
touch "$GO"
tsc_wait_state "$SR" FAILED
ok $? "one of them ends while tesseld is down (exit 4)"
start_td
wait_for '[ "$(state_of $JR)" = failed ]'
adm GET "/v1/jobs/$JR"
is "$(jget '[.state, .exit_code, .end_cause] | join(" ")')" "failed 4 exit" \
    "restarted, tesseld records the end that happened while it was down (exit code 4)"
is "$(state_of "$JS") $(tsc_state "$SS")" "running RUNNING" "and finds the other still running"
td_kill9
start_td
is "$(state_of "$JS") $(tsc_state "$SS")" "running RUNNING" "a kill -9 of tesseld cancels nothing either"

# ---- slurmctld down -------------------------------------------------------------------------
CTLD=$(cat "$TSC/slurmctld.pid")
kill "$CTLD"
wait_for "! kill -0 $CTLD 2>/dev/null"
N0=$(njobs)
sock_api tslra POST /v1/jobs '{"argv":["true"]}'
is "$CODE $(jget .error.code)" "503 unavailable" "slurmctld stopped: POST /v1/jobs answers 503"
jget .error.message | grep -q 'Slurm is unavailable'
ok $? "with a clear message: $(jget .error.message)"
tsc_cli tslra run -- true >"$TD/d1" 2>&1
st=$?
ok $([ "$st" != 0 ]; echo $?) "tessel run fails ($st)"
grep -q 'Slurm is unavailable' "$TD/d1"
ok $? "and says why: $(head -c 200 "$TD/d1")"
is "$(njobs)" "$N0" "nothing half-made is left in the store"
is "$(state_of "$JS")" running "the running job stays running in Tessel"
tsc_cli tslra ps >/dev/null 2>&1
ok $? "tessel ps answers from the store meanwhile"
grep -q 'slurm: cannot read the jobs' "$TD/tesseld.log"
ok $? "tesseld logs that it cannot read the jobs' states"
nsenter --net=/run/netns/$tsc_ns-ctl unshare --uts sh -c 'hostname ctl; exec slurmctld -i' ||
    missing "slurmctld did not start again"
wait_for '[ "$(tsc_state $SS)" = RUNNING ]'
ok $? "slurmctld is back, the job is there"
tsc_cli tslra kill "$JS" >/dev/null 2>&1
wait_for '[ "$(state_of $JS)" = cancelled ]'
ok $? "and tesseld acts on it again (killed, recorded cancelled)"
grep -q 'jobs. states can be read again' "$TD/tesseld.log"
ok $? "tesseld logs that it reads the states again"

# ---- what a hostile user could try --------------------------------------------------------
tsc_cli tslra run --name "'--uid=0 --wrap=id'" -- id -u >"$TD/h1" 2>/dev/null
is "$? $(cat "$TD/h1")" "0 $A_UID" "a job named '--uid=0 --wrap=id' runs as tslra (uid $A_UID), the name is only a name"
adm GET "/v1/jobs?user=tslra&limit=1&order=desc"
SH=$(jget '.jobs[0].slurm_id')
is "$(tsc squeue -h --states=all -j "$SH" -o %j)" "--uid=0 --wrap=id" "Slurm has it as the job's name"
as tslra "$CLIENV SLURM_CONF=/nonexistent SBATCH_JOB_NAME=hijack SBATCH_PARTITION=nosuch \
    $TESSEL_BUILD/bin/tessel run -- sh -c 'echo \$SLURM_JOB_NAME'" >"$TD/h2" 2>/dev/null
is "$? $(cat "$TD/h2")" "0 tessel" \
    "SLURM_CONF and SBATCH_* in the submitter's environment do not reach sbatch (the job is submitted, named tessel)"
sock_api tslra POST /v1/jobs '{"argv":["true"],"cwd":"/root"}'
is "$CODE $(jget .error.field)" "400 cwd" "a cwd tslra cannot enter (/root) is refused, checked as tslra"
is "$(stat -c '%U %a' "$TD/data/slurm") $(stat -c '%U %a' "$TD/data/slurm/tslra")" \
    "root 711 tslra 700" "the log directories: root's parent (0711), each user's own (0700)"
sock_api tslra POST /v1/jobs '{"argv":["true"],"name":"a\nb"}'
is "$CODE" 400 "a job name with a newline is refused (400)"
adm POST /v1/jobs '{"argv":["id","-u"]}'
is "$CODE $(jget .error.code)" "422 unsatisfiable" \
    "the admin (root on the socket, no Unix account 'admin') submits nothing to Slurm"
N0=$(njobs)
sock_api tslra POST /v1/jobs '{"argv":["true"],"gpus":3}'
c3="$CODE $(jget .error.code)"
m3=$(jget .error.message)
is "$c3 $(njobs)" "422 unsatisfiable $N0" \
    "3 whole GPUs (the nodes have 2): Slurm refuses, 422, nothing stored"
printf '%s\n' "$m3" | grep -q 'Requested node configuration is not available'
ok $? "with sbatch's own words: $m3"
sock_api tslra POST /v1/jobs '{"argv":["true"],"after":"1"}'
is "$CODE" 400 "a field not passed to Slurm yet (after) is refused, not dropped"
sock_api tslrb POST "/v1/jobs/$JA1/suspend"
is "$CODE" 404 "tslrb cannot suspend tslra's job either (404)"

td_stop
ok $? "tesseld stops cleanly (no sanitizer report)"

# ---- personal mode: a tesseld of tslra's own submits as tslra ------------------------------
P=$TD/personal
mkdir -p "$P/data" && chown tslra "$P" "$P/data"
nsenter --net=/run/netns/$tsc_ns-ctl setpriv --reuid="$A_UID" --regid="$(id -g tslra)" \
    --init-groups env -i PATH=/usr/bin:/bin \
    ASAN_OPTIONS="${ASAN_OPTIONS:-}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-}" \
    "$TESSEL_BUILD/bin/tesseld" --personal --data-dir "$P/data" --no-listen --socket "$P/sock" \
    --fake-gpus 2xFakeGPU:8G --no-cgroups $SLURM_ARGS >>"$P/log" 2>&1 &
PP=$!
TD_PIDS="$TD_PIDS $PP"
wait_for "[ -S '$P/sock' ] || ! kill -0 $PP 2>/dev/null"
as tslra "TESSEL_URL=unix:$P/sock XDG_RUNTIME_DIR=/nonexistent HOME=/nonexistent \
    TESSEL_CONFIG=/nonexistent/c $TESSEL_BUILD/bin/tessel run -- id -un" >"$TD/p1" 2>"$TD/p1e"
is "$? $(cat "$TD/p1")" "0 tslra" \
    "a personal tesseld --slurm (run by tslra) submits as its own account: the job runs as tslra"
kill -TERM "$PP"
wait "$PP"
ok $? "it stops cleanly"
done_testing
