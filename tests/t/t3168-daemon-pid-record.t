#!/bin/sh
# t3168-daemon-pid-record.t - the pids tesseld signals are the ones its supervisor (tessel-shim,
# root) recorded, never what the job says.  The shim writes "SHIM START JOB" to the job's
# directory's "pid" file, which the job's user can rewrite, and into its start lock
# starts/ID.lock (starts/ID.pid before 2026-11-28), in tesseld's own directory (0700).  Job A (user tsl3168v) is the victim: sleep 300.  Job B (user tsl3168a)
# rewrites its own jobs/ID/pid to name A's shim as its job's pid, without pause, then is
# cancelled; job C does the same and its shim is killed (a supervisor lost).  tesseld takes
# each job's pid from its start lock: B's and C's processes are stopped, A and its shim run on.
# Before 2026-11-27 tesseld took the job's pid from jobs/ID/pid whenever that process was a
# child of the shim or of tesseld: A's shim is tesseld's child, so the cancel (and the lost
# supervisor) sent kill(-A's shim), ending A ("supervisor lost"), while B's processes ran on.
# With --no-cgroups nothing else stops a job's processes: the process group tesseld signals is
# the only one.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/local.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
command -v perl >/dev/null || missing "perl is needed (the forger's loop)"
[ "$(id -u)" = 0 ] || missing "must run as root (two jobs' accounts)"
local_account tsl3168a || missing "cannot make the account tsl3168a"
local_account tsl3168v || missing "cannot make the account tsl3168v"

td_setup
chmod 711 "$TD"
FORGERS=""
trap 'for f in $FORGERS; do kill -9 "$f" 2>/dev/null; done; td_cleanup' EXIT
td_start --fake-gpus 1xT4:16G --no-cgroups
VT=$(token_of tsl3168v)
AT=$(token_of tsl3168a)

# job_pid ID -> the job's pid tesseld took (its last "spawned" event's), or nothing yet.
job_pid() {
    api GET "/v1/jobs/$1/events" "" "$TD_ADMIN"
    jq -r '[.events[] | select(.event == "spawned") | .detail.job_pid // empty] | last // empty' \
        "$TD/out"
}

api POST /v1/jobs '{"argv":["sleep","300"]}' "$VT"
is "$CODE" 201 "the victim's job A is accepted"
VJ=$(jget .id)
wait_for "[ -s '$TD/data/jobs/$VJ/pid' ]"
ok $? "A has started"
read -r VSHIM _ VPID <"$TD/data/jobs/$VJ/pid"
wait_for "[ \"\$(job_pid $VJ)\" = $VPID ]"
ok $? "tesseld took A's pid ($VPID; its shim $VSHIM)"

# The forger is the job's first process (perl, run in its job's directory, its cwd): it writes
# its pid, then replaces "pid" with "OWN_SHIM OWN_START VICTIM_SHIM" whenever it says other
# (a rename every few microseconds for 10 s), then sleeps.
FORGE='$v = shift; open P, ">forger.pid"; print P "$$\n"; close P; $end = time + 10;
    while (time < $end) {
        next unless open F, "<pid"; $l = <F>; close F;
        next unless defined $l && $l =~ /^(\d+) (\d+) (\d+)/ && $3 != $v;
        open T, ">p.tmp"; print T "$1 $2 $v\n"; close T; rename "p.tmp", "pid" }
    sleep 300'
# forger -> starts a forging job of tsl3168a's; sets FJ (its id), FPID (the forger's pid).
forger() {
    api POST /v1/jobs "$(jq -cn --arg f "$FORGE" --arg v "$VSHIM" '{argv: ["perl", "-e", $f, $v]}')" "$AT"
    is "$CODE" 201 "the attacker's job $1 is accepted"
    FJ=$(jget .id)
    wait_for "[ -s '$TD/data/jobs/$FJ/forger.pid' ]"
    FPID=$(cat "$TD/data/jobs/$FJ/forger.pid")
    FORGERS="$FORGERS $FPID"
    wait_for "[ \"\$(cut -d' ' -f3 '$TD/data/jobs/$FJ/pid')\" = $VSHIM ]"
    ok $? "$1's jobs/$FJ/pid names A's shim as its job"
    wait_for "[ -n \"\$(job_pid $FJ)\" ]"
    is "$(job_pid $FJ)" "$FPID" "tesseld took $1's own pid (the forger's), as its shim recorded it"
}
# victim_runs WHEN -> A is still running, with its shim and its process.
victim_runs() {
    is "$(job_state $VJ)" running "A still runs $1"
    ok "$(kill -0 "$VSHIM" 2>/dev/null; echo $?)" "A's shim is alive $1"
    ok "$(kill -0 "$VPID" 2>/dev/null; echo $?)" "A's process is alive $1"
}

forger B
BJ=$FJ BPID=$FPID
api POST "/v1/jobs/$BJ/cancel" "" "$AT"
is "$CODE" 200 "B is cancelled by its user"
wait_for "! kill -0 $BPID 2>/dev/null"
ok $? "B's forger got the cancel's signal and is gone"
wait_for "[ \"\$(job_state $BJ)\" = cancelled ]"
ok $? "B ends cancelled"
victim_runs "after B's cancel"

forger C
CJ=$FJ CPID=$FPID
CSHIM=$(start_record "$CJ" pid | cut -d' ' -f1)
ok "$([ -n "$CSHIM" ]; echo $?)" "C's pid record is in its start lock (shim $CSHIM)"
kill -9 "$CSHIM"
wait_for "! kill -0 $CPID 2>/dev/null"
ok $? "C's forger is killed once its shim is lost"
wait_for "[ \"\$(job_state $CJ)\" = failed ]"
ok $? "C ends failed"
api GET "/v1/jobs/$CJ" "" "$AT"
case "$(jget .reason)" in *"supervisor lost"*) r=0 ;; *) r=1 ;; esac
ok $r "C's reason says its supervisor was lost ($(jget .reason))"
victim_runs "after C's lost supervisor"

api POST "/v1/jobs/$VJ/cancel" "" "$VT"
wait_for "[ \"\$(job_state $VJ)\" = cancelled ]"
ok $? "A ends by its own cancel"
left=""
for j in $BJ $CJ $VJ; do
    [ -e "$TD/data/starts/$j.lock" ] || [ -e "$TD/data/starts/$j.pid" ] && left="$left $j"
done
is "$left" "" "the pid records are gone with the jobs' ends"
td_stop
ok $? "tesseld stops cleanly"
done_testing
