#!/bin/sh
# t9014: tesseld --slurm submitting through tessel-slurm-submit (docs/slurm-backend.md, "The
# submitter"), each account's long-lived libslurm submitter, against sbatch per job (slurm-submit
# = sbatch) on the multi-node test cluster of tests/slurm/cluster.sh (SIMULATED GPUs, 4 shards
# each, spank_tessel.so on the nodes and the submit host, contrib/slurm/job_submit.lua in
# slurmctld).  Checked: a half-GPU job gets the same slice and the same environment through both;
# Slurm's refusals (a partition it does not have, more GPU memory than a GPU has) give the same
# 422 and words; the submitter runs as its account, non-dumpable (its /proc files root's, the
# account cannot read them or ptrace it); killed by its account, the next submission starts
# another and works (once the killed one is gone); two accounts' submitters and jobs stay under
# their own uids; a submitter that lies (the id of another account's job) harms no one but its
# own account's job: Slurm's uid of the job is compared with the owner's, also for a job whose
# account was removed (squeue names no user for it), its state is not taken, and `tessel
# suspend` of it (root's scontrol) is refused (review of the submitter, 2026-11-28, M2).
# test-timeout: 600
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/local.sh"
. "$TESSEL_SRCDIR/tests/slurm/cluster.sh"

[ -x "$TESSEL_BUILD/bin/tessel-slurm-submit" ] || missing "tessel-slurm-submit is not built"
[ -e /usr/lib/x86_64-linux-gnu/slurm-wlm/job_submit_lua.so ] ||
    missing "slurmctld's job_submit/lua (Debian's slurmctld)"
command -v python3 >/dev/null || missing "python3 (the ptrace check)"
tsc_test_pieces tests/interposer/tcu-probe
PROBE=$PB/tests/interposer/tcu-probe
tsc_test_setup tslra tslrb
A_UID=$(id -u tslra)
B_UID=$(id -u tslrb)
GiB=1073741824
TSC_JOB_SUBMIT=$TESSEL_SRCDIR/contrib/slurm/job_submit.lua
TSC_GPUS_LUA='gpu("n1", 0, 8589934592, 4)
gpu("n1", 1, 8589934592, 4)
gpu("n2", 0, 8589934592, 4)
gpu("n2", 1, 8589934592, 4)'
tsc_start_sim

# tesseld with how it submits ($1: libslurm or sbatch); queue "bad" onto a partition Slurm does
# not have.
start_td() {
    tsc_tesseld --fake-gpus 2xFakeGPU:8G --slurm-shards 4 --slurm-submit "$1" \
        --slurm-queues "default=debug bad=nosuch"
}
# SIGTERM, its exit status, no sanitizer report in its log (td_stop); then its submitters gone
# (each ends at the end of its socket; a loaded machine may take a moment), so that the next
# tesseld's are not mistaken for them.
stop_td() {
    td_stop
    _rc=$?
    wait_for '[ -z "$(pgrep -x tessel-slurm-su)" ]' || diag "submitters outlive tesseld: $(pgrep -a -x tessel-slurm-su)"
    return $_rc
}
adm() {
    CODE=$(curl -s -o "$TD/out" -w '%{http_code}' -X "$1" --unix-socket "$TD_SOCK" \
        ${3:+-H 'Content-Type: application/json' --data-binary "$3"} "http://localhost$2")
}
# submit USER BODY: POST /v1/jobs as USER on the local socket (the kernel says who calls).
submit() {
    as "$1" "curl -s -w '\n%{http_code}' -X POST --unix-socket '$TD_SOCK' \
        -H 'Content-Type: application/json' --data-binary '$2' http://localhost/v1/jobs" \
        >"$TD/raw"
    CODE=$(tail -n 1 "$TD/raw")
    sed '$d' "$TD/raw" >"$TD/out"
}
# The current tesseld's submitters of account $1 (its children).
submitters() { pgrep -u "$1" -x tessel-slurm-su -P "$TD_PID"; }
# A job's environment less what differs from one job to the next: its ids, and the node and
# GPUs Slurm chose for it.
envof() {
    grep -v -E '^(SLURM_JOB_ID|SLURM_JOBID|SLURM_TASK_PID|SLURM_JOB_START_TIME|SLURM_JOB_END_TIME|SLURMD_NODENAME|SLURM_NODELIST|SLURM_JOB_NODELIST|SLURM_TOPOLOGY_ADDR|SLURM_JOB_GPUS|SLURM_STEP_GPUS|GPU_DEVICE_ORDINAL|CUDA_VISIBLE_DEVICES)=' "$1" | sort
}

# ---- the same job through both -------------------------------------------------------------
for how in libslurm sbatch; do
    start_td $how
    grep -q "jobs are Slurm jobs.*$how" "$TD/tesseld.log"
    ok $? "$how: tesseld --slurm --slurm-submit $how says how it submits"
    tsc_cli tslra run --gpu 0.5 --gpu-mem 3G --cpu 2 -- "$PROBE" ctx info >"$TD/probe.$how" 2>&1
    is "$? $(sed -n 's/^info .*total=\([^ ]*\).*/\1/p' "$TD/probe.$how" | head -n 1)" \
        "0 $((3 * GiB))" "$how: --gpu 0.5 --gpu-mem 3G: from inside, CUDA sees the 3 GiB slice"
    tsc_cli tslra run --gpu 0.5 --gpu-mem 3G --cpu 2 -- env >"$TD/env.$how" 2>&1
    ok $? "$how: a job prints its environment"
    adm GET "/v1/jobs?user=tslra&limit=1&order=desc"
    sid=$(jget '.jobs[0].slurm_id')
    tsc scontrol show job "$sid" >"$TD/show.$how"
    grep -o -E 'TresPerNode=[^ ]*|MinCPUsNode=[^ ]*|NumCPUs=[^ ]*|UserId=[^ ]*' "$TD/show.$how" |
        sort >"$TD/res.$how"
    # Refusals: by slurmctld (no such partition), by job_submit.lua (8 GiB of a 4 GiB slice).
    submit tslra '{"argv":["true"],"queue":"bad"}'
    echo "$CODE $(jget .error.message)" >"$TD/refuse1.$how"
    submit tslra '{"argv":["true"],"gpu":0.5,"gpu_mem":"9G"}'
    echo "$CODE $(jget .error.message)" >"$TD/refuse2.$how"
    stop_td
    ok $? "$how: tesseld stops"
done
is "$(cat "$TD/res.libslurm")" "$(cat "$TD/res.sbatch")" \
    "Slurm holds the same resources and owner for both: $(tr '\n' ' ' <"$TD/res.sbatch")"
grep -q 'TresPerNode=gres:shard:2' "$TD/res.libslurm"
ok $? "the half GPU as 2 of its 4 shards"
envof "$TD/env.libslurm" >"$TD/e1"
envof "$TD/env.sbatch" >"$TD/e2"
diff "$TD/e2" "$TD/e1" >"$TD/ediff"
ok $? "the job's environment is the one sbatch gives it ($(wc -l <"$TD/e2") variables)"
[ -s "$TD/ediff" ] && sed 's/^/#   /' "$TD/ediff"
grep -q '^SLURM_SPANK_TESSEL_GPU_MEM_BYTES=3221225472$' "$TD/e1"
ok $? "with the plugin's SPANK variables as sbatch passes them (SLURM_SPANK_TESSEL_GPU_MEM_BYTES)"
diag "SPANK: $(grep SPANK "$TD/e1" | tr '\n' ' ')"
is "$(cat "$TD/refuse1.libslurm")" "$(cat "$TD/refuse1.sbatch")" \
    "no such partition: the same answer through both ($(cat "$TD/refuse1.sbatch"))"
is "$(cut -c1-3 "$TD/refuse1.libslurm")" 422 "and it is 422"
is "$(cat "$TD/refuse2.libslurm")" "$(cat "$TD/refuse2.sbatch")" \
    "more GPU memory than the slice: job_submit.lua's words through both ($(cat "$TD/refuse2.sbatch"))"
is "$(cut -c1-3 "$TD/refuse2.libslurm")" 422 "and it is 422"

# ---- the submitter: its account, not dumpable, killed and replaced ---------------------------
start_td libslurm
submit tslra '{"argv":["true"]}'
is "$CODE" 201 "tslra submits"
PA=$(submitters tslra)
is "$(echo "$PA" | wc -w)" 1 "one submitter of tslra's runs (pid $PA)"
is "$(ps -o uid= -p "$PA" | tr -d ' ')" "$A_UID" "as tslra's uid"
diag "the submitter's memory: $(grep -E '^(VmRSS|RssAnon)' "/proc/$PA/status" | tr -s ' \t\n' ' ')"
is "$(stat -c %u "/proc/$PA/status") $(stat -c %u "/proc/$PA/environ")" "0 0" \
    "not dumpable: its /proc files (status, environ) are root's"
as tslra "cat /proc/$PA/environ" >/dev/null 2>&1
ok $([ $? != 0 ]; echo $?) "tslra cannot read its environment"
# PTRACE_ATTACH (16) as tslra: it works on a process of tslra's (sleep, the control), and is
# refused on the submitter; PTRACE_DETACH (17) after the control.
cat >"$TD/pt.py" <<'PY'
import ctypes, os, subprocess, sys
l = ctypes.CDLL(None, use_errno=True)
l.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
s = subprocess.Popen(["sleep", "30"])
ok = l.ptrace(16, s.pid, None, None) == 0
if ok:
    os.waitpid(s.pid, 0)
    l.ptrace(17, s.pid, None, None)
s.kill()
r = l.ptrace(16, int(sys.argv[1]), None, None)
print("control=%s submitter=%s errno=%d" % (ok, r == 0, ctypes.get_errno()))
PY
chmod 644 "$TD/pt.py"
is "$(as tslra "python3 $TD/pt.py $PA")" "control=True submitter=False errno=1" \
    "nor ptrace it: PTRACE_ATTACH fails with EPERM (it works on tslra's own sleep)"
submit tslrb '{"argv":["true"]}'
is "$CODE" 201 "tslrb submits"
PB_=$(submitters tslrb)
is "$(ps -o uid= -p "$PB_" | tr -d ' ')" "$B_UID" "through a submitter of its own uid"
SB=$(jget .slurm_id)
tsc_wait_state "$SB" COMPLETED
is "$(tsc squeue -h --states=all -j "$SB" -o %U)" "$B_UID" "and Slurm has tslrb's job as tslrb's"
as tslra "kill -9 $PA"
ok $? "tslra kills its submitter"
# Gone (reaped by tesseld's next use of the slot, or a zombie until then) before the next
# submission: a kill is not synchronous.
wait_for "! [ -d /proc/$PA ] || grep -q '^State:.*Z' /proc/$PA/status"
ok $? "its submitter is gone"
submit tslra '{"argv":["true"]}'
is "$CODE" 201 "tslra's next submission works"
PA2=$(submitters tslra)
ok $([ -n "$PA2" ] && [ "$PA2" != "$PA" ]; echo $?) "through a new submitter ($PA2)"
is "$(submitters tslrb)" "$PB_" "tslrb's submitter is untouched"
SA=$(jget .slurm_id)
tsc_wait_state "$SA" COMPLETED
is "$(tsc squeue -h --states=all -j "$SA" -o %U)" "$A_UID" "Slurm has it as tslra's"
stop_td
ok $? "tesseld stops"
ok $([ -z "$(submitters tslra)$(submitters tslrb)" ]; echo $?) "and every submitter with it"

# ---- a submitter that lies: the id of another account's job ----------------------------------
# A tesseld whose tessel-slurm-submit (found beside it) answers every request with the id of
# tslrb's own sbatch job: what a submitter taken over by tslra could say.  The answer is not
# trusted: tslra's job never takes tslrb's job's state, tslra cannot cancel it through Tessel,
# and tslrb's job stays in the view of the jobs submitted to Slurm directly.
DB=$(tsc su -s /bin/sh tslrb -c "cd /; sbatch --parsable -o /dev/null --job-name=bobs \
    --wrap 'exec sleep 1000'")
tsc_wait_state "$DB" RUNNING
FB=$TD/fb
mkdir -p "$FB/bin"
cp "$TESSEL_BUILD/bin/tesseld" "$TESSEL_BUILD/bin/tessel-shim" "$TESSEL_BUILD/bin/tessel" "$FB/bin/"
ln -s "$TESSEL_BUILD/lib" "$FB/lib"
ln -s "$TESSEL_BUILD/tests" "$FB/tests"
cat >"$FB/bin/tessel-slurm-submit" <<PY
#!/usr/bin/python3
import json, struct, sys
while True:
    h = sys.stdin.buffer.read(4)
    if len(h) < 4:
        sys.exit(0)
    sys.stdin.buffer.read(struct.unpack(">I", h)[0])
    a = json.dumps({"job_id": int(open("$FB/id").read())}).encode()
    sys.stdout.buffer.write(struct.pack(">I", len(a)) + a)
    sys.stdout.buffer.flush()
PY
chmod 755 "$FB/bin/tessel-slurm-submit"
echo "$DB" >"$FB/id"
chmod 644 "$FB/id"
REAL_BUILD=$TESSEL_BUILD
TESSEL_BUILD=$FB
start_td libslurm
TESSEL_BUILD=$REAL_BUILD
submit tslra '{"argv":["sleep","1000"]}'
JL=$(jget .id)
is "$CODE $(jget .slurm_id)" "201 $DB" "the lying submitter's id is stored for tslra's job $JL"
wait_for "grep -q 'Slurm job $DB belongs to uid $B_UID (.tslrb.), not .tslra. (uid $A_UID)' '$TD/tesseld.log'"
ok $? "the poll sees that Slurm has it as tslrb's uid, and says so"
adm GET "/v1/jobs/$JL"
is "$(jget .state)" pending "tslra's job does not take tslrb's job's state (running)"
# tessel suspend runs root's scontrol on the stored id: refused, tslra's job is not running.
as tslra "curl -s -w '\n%{http_code}' -X POST --unix-socket '$TD_SOCK' \
    http://localhost/v1/jobs/$JL/suspend" >"$TD/raw"
CODE=$(tail -n 1 "$TD/raw")
sed '$d' "$TD/raw" >"$TD/out"
is "$CODE $(jget .error.code)" "409 conflict" "tslra's suspend of that job is refused (409)"
is "$(tsc_state "$DB")" RUNNING "and tslrb's job is not suspended"
tsc_cli tslra kill "$JL" >/dev/null 2>&1
is "$(tsc_state "$DB")" RUNNING "tessel kill by tslra does not cancel tslrb's job (scancel as tslra)"
adm GET "/v1/jobs?origin=slurm"
jget '[.jobs[] | .slurm_id] | join(" ")' | grep -qw "$DB"
ok $? "tslrb's job stays in the view of the jobs submitted to Slurm directly"
tsc scancel "$DB"
# The same lie with the id of a job whose uid squeue cannot name (user_name null): an account
# removed once its job runs (slurmctld needs it to start the job).  Compared by uid, not
# applied either, and `tessel suspend` (root's scontrol) of it refused (review of the
# submitter, 2026-11-28, M2: an empty name used to be applied).
GHOST=tslr9014g
local_account "$GHOST" || missing "useradd for the account $GHOST"
G_UID=$(id -u "$GHOST")
DG=$(tsc su -s /bin/sh "$GHOST" -c "cd /; sbatch --parsable -o /dev/null --job-name=ghost \
    --wrap 'exec sleep 1000'")
tsc_wait_state "$DG" RUNNING
userdel -f "$GHOST"
ok $? "the account of Slurm job $DG (uid $G_UID) is removed while it runs"
# (22.05's squeue --json lists every job, whatever -j says.)
is "$(tsc squeue --json | jq -c ".jobs[] | select(.job_id == $DG) | [.user_id, .user_name, .job_state]")" \
    "[$G_UID,null,\"RUNNING\"]" "squeue gives its uid and no user name"
echo "$DG" >"$FB/id"
submit tslra '{"argv":["sleep","1000"]}'
JG=$(jget .id)
is "$CODE $(jget .slurm_id)" "201 $DG" "the lying submitter's id is stored for tslra's job $JG"
wait_for "grep -q 'Slurm job $DG belongs to uid $G_UID (..), not .tslra.' '$TD/tesseld.log'"
ok $? "the poll sees that Slurm has it as another uid's, and says so"
adm GET "/v1/jobs/$JG"
is "$(jget .state)" pending "tslra's job does not take that job's state (running)"
as tslra "curl -s -w '\n%{http_code}' -X POST --unix-socket '$TD_SOCK' \
    http://localhost/v1/jobs/$JG/suspend" >"$TD/raw"
CODE=$(tail -n 1 "$TD/raw")
sed '$d' "$TD/raw" >"$TD/out"
is "$CODE $(jget .error.code)" "409 conflict" "tslra's suspend of that job is refused (409)"
is "$(tsc_state "$DG")" RUNNING "and the job of the removed account is not suspended"
tsc scancel "$DG"
stop_td
ok $? "tesseld stops"

# ---- a submitter others may write: not started as anyone ----------------------------------
# tesseld as root starts tessel-slurm-submit only when it is root's and writable by no one else
# (review of the submitter, 2026-11-28, L2); slurm-submit = auto then submits with sbatch.
chmod 775 "$FB/bin/tessel-slurm-submit"
TESSEL_BUILD=$FB
start_td auto
TESSEL_BUILD=$REAL_BUILD
grep -q "slurm-submit = auto: $FB/bin/tessel-slurm-submit: tessel-slurm-submit must be owned by root and writable by no one else.*jobs are submitted by sbatch" "$TD/tesseld.log"
ok $? "a group-writable submitter is refused, and tesseld says so"
submit tslra '{"argv":["true"]}'
SS=$(jget .slurm_id)
ok $([ "$CODE" = 201 ] && [ -n "$SS" ] && [ "$SS" != "$DG" ]; echo $?) \
    "tslra's submission goes through sbatch (Slurm job $SS, not the lie)"
is "$(submitters tslra)" "" "no submitter of tslra's runs"
stop_td
ok $? "tesseld stops"
done_testing
