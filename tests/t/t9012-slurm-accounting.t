#!/bin/sh
# t9012: tesseld --slurm over a test cluster that keeps Slurm's accounting (tests/slurm/cluster.sh
# with TSC_DBD=1: MariaDB and slurmdbd beside slurmctld; docs/slurm-backend.md, "Accounting").
# Checked: QOS are real (tslra may use QOS high, tslrb may not): `tessel queues` shows queue gpu
# onto partition debug and QOS high, tslra's job of queue gpu runs under QOS high (squeue and
# sacct say so), tslrb's is refused by Slurm (422 with sbatch's words, nothing stored); fair
# share is real (sshare: tslra's usage after its job, a fair-share factor below tslrb's); and
# jobs that end while tesseld is down and leave squeue (MinJobAge 2) before it is back get their
# end from sacct when it restarts: exit code 3, a SIGKILL, in tessel ps and the API, not "lost";
# with slurmdbd down too, such a job stays as it is (running) until slurmdbd is back, then gets
# its end (exit 5).
# Everything is stopped at the end (tsc_stop: slurmd, slurmctld, slurmdbd, mariadbd, munged).
# test-timeout: 600
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/local.sh"
. "$TESSEL_SRCDIR/tests/slurm/cluster.sh"

tsc_test_pieces
tsc_test_setup tslra tslrb

TSC_DBD=1
# Ended jobs leave squeue 2 s after their end (at slurmctld's next purge, at most a minute on).
TSC_EXTRA_CONF="MinJobAge=2"
tsc_start "" || missing "the Slurm cluster with slurmdbd: $TSC_WHY"
tsc sacctmgr -i add qos high >/dev/null && tsc_dbd_user tslra normal,high && tsc_dbd_user tslrb
ok $? "slurmdbd keeps the cluster's accounts: QOS high, tslra may use it, tslrb may not"

tsc_tesseld --slurm-queues "default=debug gpu=debug,high"
adm() {
    CODE=$(curl -s -o "$TD/out" -w '%{http_code}' --unix-socket "$TD_SOCK" "http://localhost$1")
}
state_of() {
    adm "/v1/jobs/$1"
    jget .state
}
njobs() {
    adm "/v1/jobs?limit=10000"
    jget '.jobs | length'
}

# ---- queues onto partitions and QOS ---------------------------------------------------------
tsc_cli tslra queues >"$TD/q" 2>&1
sed 's/^/# /' "$TD/q"
is "$(awk '$1 == "gpu" {print $2, $3}' "$TD/q" | head -n 1)" "debug high" \
    "tessel queues: queue gpu onto partition debug, QOS high"
sock_api tslra POST /v1/jobs '{"argv":["sleep","1000"],"queue":"gpu"}'
SG=$(jget .slurm_id)
JG=$(jget .id)
is "$CODE $(tsc squeue -h -j "$SG" -o %q)" "201 high" "tslra's job of queue gpu is in Slurm under QOS high"
tsc_wait_state "$SG" RUNNING
ok $? "and runs"
N0=$(njobs)
sock_api tslrb POST /v1/jobs '{"argv":["true"],"queue":"gpu"}'
is "$CODE $(jget .error.code)" "422 unsatisfiable" "tslrb may not use QOS high: Slurm refuses, 422"
jget .error.message | grep -qi 'qos'
ok $? "with sbatch's words: $(jget .error.message)"
is "$(njobs)" "$N0" "nothing of the refused job is stored"
tsc_cli tslra kill "$JG" >/dev/null 2>&1
tsc_wait_state "$SG" CANCELLED
ok $? "the QOS job is killed through tessel"

# ---- fair share ----------------------------------------------------------------------------
# tslra uses the cluster (a job of 3 s), tslrb does not: Slurm's multifactor priority counts it.
sock_api tslra POST /v1/jobs '{"argv":["sleep","3"]}'
SU=$(jget .slurm_id)
tsc_wait_state "$SU" COMPLETED
ok $? "a job of tslra's runs 3 s"
share() { tsc sshare -n -P -A lab -u "$1" -o User,RawUsage,FairShare | awk -F'|' -v u="$1" '$1 == u'; }
wait_for '[ "$(share tslra | cut -d"|" -f2)" -gt 0 ] 2>/dev/null'
ok $? "sshare: tslra's usage counts ($(share tslra))"
# The factors follow the usage at slurmctld's next priority calculation (PriorityCalcPeriod,
# one minute here): at most 90 s.
fs_below() {
    A_FS=$(share tslra | cut -d'|' -f3)
    B_FS=$(share tslrb | cut -d'|' -f3)
    awk -v a="$A_FS" -v b="$B_FS" 'BEGIN {exit !(a != "" && b != "" && a + 0 < b + 0)}'
}
_i=0
until fs_below || [ $_i -ge 90 ]; do
    _i=$((_i + 1))
    sleep 1
done
fs_below
ok $? "tslra's fair-share factor ($A_FS) is below tslrb's ($B_FS), who used nothing"

# ---- ends read from sacct after the jobs left squeue ----------------------------------------
GO=$TSC/out/go-acct
J3=$(tsc_cli tslra run -d -- sh -c "'while [ ! -e $GO ]; do sleep 0.2; done; exit 3'")
J9=$(tsc_cli tslra run -d -- sh -c "'while [ ! -e $GO ]; do sleep 0.2; done; kill -9 \$\$'")
adm "/v1/jobs/$J3"
S3=$(jget .slurm_id)
adm "/v1/jobs/$J9"
S9=$(jget .slurm_id)
tsc_wait_state "$S3" RUNNING && tsc_wait_state "$S9" RUNNING
ok $? "two jobs of tslra run ($J3, $J9: Slurm $S3, $S9)"
wait_for '[ "$(state_of $J3) $(state_of $J9)" = "running running" ]'
td_stop
ok $? "tesseld stops cleanly"
touch "$GO"
tsc_wait_state "$S3" FAILED && tsc_wait_state "$S9" FAILED
ok $? "the jobs end while tesseld is down (exit 3, SIGKILL)"
_i=0
while [ -n "$(tsc squeue -h --states=all -j "$S3,$S9" -o %i 2>/dev/null)" ] && [ $_i -lt 1200 ]; do
    _i=$((_i + 1))
    sleep 0.1
done
is "$(tsc squeue -h --states=all -j "$S3,$S9" -o %i 2>/dev/null)" "" \
    "slurmctld has forgotten them (MinJobAge): squeue lists neither"
is "$(tsc sacct -n -P -X -j "$S3,$S9" -o JobIDRaw,State,ExitCode | tr '\n' ' ')" \
    "$S3|FAILED|3:0 $S9|FAILED|0:9 " "sacct has both ends"
tsc_tesseld --slurm-queues "default=debug gpu=debug,high"
wait_for '[ "$(state_of $J3)" = failed ]'
adm "/v1/jobs/$J3"
is "$(jget '[.state, .exit_code, .end_cause] | join(" ")')" "failed 3 exit" \
    "restarted, tesseld records the first job's end from sacct: exit code 3, not lost"
wait_for '[ "$(state_of $J9)" = failed ]'
adm "/v1/jobs/$J9"
is "$(jget '[.state, .signal, .end_cause] | join(" ")')" "failed 9 signal" \
    "and the second's: killed by signal 9"
tsc_cli tslra ps -a --json >"$TD/ps" 2>&1
is "$(jq -r --argjson a "$J3" --argjson b "$J9" '[.jobs[] | select(.id == $a or .id == $b) |
    "\(.state):\(.exit_code):\(.signal):\(.end_cause)"] | sort | join(" ")' "$TD/ps")" \
    "failed:3:null:exit failed:null:9:signal" "tessel ps -a shows both ends"

# ---- slurmdbd down: the job stays as it is until sacct can say ------------------------------
GO2=$TSC/out/go-acct2
J5=$(tsc_cli tslra run -d -- sh -c "'while [ ! -e $GO2 ]; do sleep 0.2; done; exit 5'")
adm "/v1/jobs/$J5"
S5=$(jget .slurm_id)
tsc_wait_state "$S5" RUNNING
wait_for '[ "$(state_of $J5)" = running ]'
ok $? "a third job runs ($J5, Slurm $S5)"
td_stop
DBD=$(cat "$TSC/slurmdbd.pid")
kill "$DBD"
wait_for '! kill -0 $DBD 2>/dev/null'
ok $? "tesseld and slurmdbd stopped"
touch "$GO2"
tsc_wait_state "$S5" FAILED
_i=0
while [ -n "$(tsc squeue -h --states=all -j "$S5" -o %i 2>/dev/null)" ] && [ $_i -lt 1200 ]; do
    _i=$((_i + 1))
    sleep 0.1
done
is "$(tsc squeue -h --states=all -j "$S5" -o %i 2>/dev/null)" "" \
    "the job ended (exit 5) and left squeue while slurmdbd was down"
tsc_tesseld --slurm-queues "default=debug gpu=debug,high"
wait_for 'grep -q "sacct cannot say how they ended" "$TD/tesseld.log"'
ok $? "tesseld back: sacct cannot answer, and it says so in its log"
is "$(state_of "$J5")" "running" "the job is left as it is (running), not taken for lost"
nsenter --net=/run/netns/$tsc_ns-ctl unshare --uts sh -c 'hostname ctl; exec slurmdbd'
ok $? "slurmdbd starts again"
wait_for '[ "$(state_of $J5)" = failed ]'
adm "/v1/jobs/$J5"
is "$(jget '[.state, .exit_code, .end_cause] | join(" ")')" "failed 5 exit" \
    "once slurmdbd answers, the job's end is recorded from sacct: exit code 5"

td_stop
ok $? "tesseld stops cleanly (no sanitizer report)"
DBD=$(cat "$TSC/slurmdbd.pid")
DB=$(cat "$TSC/db/mariadbd.pid")
tsc_stop
! kill -0 "$DBD" 2>/dev/null && ! kill -0 "$DB" 2>/dev/null
ok $? "slurmdbd ($DBD) and mariadbd ($DB) are stopped with the cluster"
done_testing
