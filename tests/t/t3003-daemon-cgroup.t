#!/bin/sh
# t3003-daemon-cgroup.t - a job runs in its own cgroup with the CPU and memory limits it asked
# for (v2, or v1 memory+cpu+freezer), a job above its memory limit is killed, and the group is
# removed when the job ends (in every controller; tesseld's own group at its stop).  At start,
# tesseld removes the empty groups an earlier run left (kill -9): its own instance's that belong
# to no running job, another instance's once older than a minute; a running job's group stays.
# Needs root and cgroup controllers.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
command -v sqlite3 >/dev/null || missing "sqlite3 is needed"
[ "$(id -u)" = 0 ] || missing "not root: tesseld cannot create cgroups"

td_setup
td_start --fake-gpus 1xT4:16G || missing "tesseld did not start"
api GET /v1/nodes
MODE=$(jget '.nodes[0].cgroups')
[ "$MODE" = none ] && missing "no usable cgroup controllers (neither v2 nor v1 memory+cpu+freezer)"
INST=$(sqlite3 "$TD/data/tessel.db" "select value from meta where key='instance'")
if [ "$MODE" = v2 ]; then
    MEMDIR=/sys/fs/cgroup/tessel/$INST CPUDIR=$MEMDIR
    TD_CG="$MEMDIR"
else
    MEMDIR=/sys/fs/cgroup/memory/tessel/$INST CPUDIR=/sys/fs/cgroup/cpu/tessel/$INST
    TD_CG="$MEMDIR $CPUDIR /sys/fs/cgroup/freezer/tessel/$INST"
fi
diag "cgroups $MODE, instance $INST"
CG0=$TD_CG
G="$TD/go"
mkdir -p "$G"

api POST /v1/jobs "{\"argv\":[\"sh\",\"-c\",\"cat /proc/self/cgroup; while [ ! -e $G/a ]; do sleep 0.05; done\"],\"cpu\":0.5,\"mem\":\"64M\"}"
A=$(jget .id)
wait_for '[ "$(job_state $A)" = running ] && [ -s "$TD/data/jobs/$A/stdout" ]'
ok $? "a job with cpu 0.5 and mem 64M runs"
if [ "$MODE" = v2 ]; then
    is "$(cat "$MEMDIR/job-$A/memory.max")" "67108864" "memory.max is 64 MiB"
    is "$(cat "$CPUDIR/job-$A/cpu.max")" "50000 100000" "cpu.max is 50 ms per 100 ms"
else
    is "$(cat "$MEMDIR/job-$A/memory.limit_in_bytes")" "67108864" "memory.limit_in_bytes is 64 MiB"
    is "$(cat "$CPUDIR/job-$A/cpu.cfs_quota_us")" "50000" "cpu.cfs_quota_us is 50 ms"
    is "$(cat "$CPUDIR/job-$A/cpu.cfs_period_us")" "100000" "per 100 ms period"
fi
grep -q "tessel/$INST/job-$A" "$TD/data/jobs/$A/stdout"; ok $? "the job's /proc/self/cgroup names its group"
touch "$G/a"
wait_for '[ "$(job_state $A)" = succeeded ]'; ok $? "the job ends"
wait_for '[ ! -d "$MEMDIR/job-$A" ]'; ok $? "its cgroup is removed"

# Hold 256 MiB in a 64 MiB group: the kernel's OOM killer ends it.
api POST /v1/jobs '{"argv":["sh","-c","head -c 268435456 /dev/zero | tail -n 1 >/dev/null && echo survived"],"mem":"64M"}'
B=$(jget .id)
wait_for '[ "$(job_state $B)" = failed ] || [ "$(job_state $B)" = succeeded ]'
api GET "/v1/jobs/$B/logs"
is "$(cat "$TD/out")" "" "a job above its memory limit does not get to finish"
api GET "/v1/jobs/$B"
is "$(jget .state)" "failed" "it is recorded as failed"
diag "reason: $(jget .reason)"

# Cancel kills every process of the group, including children that ignore SIGTERM.
api POST /v1/jobs '{"argv":["sh","-c","trap \"\" TERM; sleep 300 & sleep 300 & wait"]}'
C=$(jget .id)
wait_for '[ "$(job_state $C)" = running ] && [ "$(cat "$MEMDIR/job-$C/cgroup.procs" 2>/dev/null | wc -l)" -ge 3 ]'
ok $? "a job with two children runs"
api POST "/v1/jobs/$C/cancel"
wait_for '[ "$(job_state $C)" = cancelled ]'; ok $? "cancel ends the whole group"
wait_for '[ ! -d "$MEMDIR/job-$C" ]'; ok $? "and removes it"

# Stale groups after a kill -9: a job keeps running (D), and, made by hand while tesseld is
# down, an empty group of this instance that is no running job's, and in another instance
# an old empty group (mtime two minutes ago) and a young one (could be a job starting).
api POST /v1/jobs "{\"argv\":[\"sh\",\"-c\",\"while [ ! -e $G/d ]; do sleep 0.05; done\"]}"
D=$(jget .id)
wait_for '[ "$(job_state $D)" = running ] && [ -n "$(cat "$MEMDIR/job-$D/cgroup.procs" 2>/dev/null)" ]'
ok $? "job $D runs in its group"
td_kill9
NC=$(echo "$TD_CG" | wc -w)
for c in $TD_CG; do
    P=$(dirname "$c")
    mkdir -p "$c/job-424242" "$P/stale-$$/job-1" "$P/young-$$/job-1"
    touch -d '2 minutes ago' "$P/stale-$$/job-1" "$P/stale-$$"
    TD_CG="$TD_CG $P/stale-$$ $P/young-$$"
done
td_start --fake-gpus 1xT4:16G || exit 1
LEFT=""
for c in $TD_CG; do
    case $c in */stale-$$ | */young-$$) continue ;; esac
    P=$(dirname "$c")
    [ -d "$c/job-424242" ] && LEFT="$LEFT $c/job-424242"
    [ -d "$P/stale-$$" ] && LEFT="$LEFT $P/stale-$$"
done
is "$LEFT" "" "at start, tesseld removed its own stale group and the other instance's old one, in every controller"
KEPT=0 YOUNG=0
for c in $TD_CG; do
    case $c in */stale-$$ | */young-$$) continue ;; esac
    [ -d "$c/job-$D" ] && KEPT=$((KEPT + 1))
    [ -d "$(dirname "$c")/young-$$/job-1" ] && YOUNG=$((YOUNG + 1))
done
is "$KEPT" "$NC" "the running job's group is kept in every controller ($NC)"
is "$YOUNG" "$NC" "another instance's young group is left alone"
is "$(job_state $D)" running "job $D is still running"
grep -q "tessel/$INST/job-$D" /proc/"$(cut -d' ' -f3 "$TD/data/jobs/$D/pid")"/cgroup
ok $? "in its group"
for c in $TD_CG; do case $c in */young-$$) rmdir "$c/job-1" "$c" ;; esac; done
touch "$G/d"
wait_for '[ "$(job_state $D)" = succeeded ]'; ok $? "job $D ends after the restart"
wait_for '[ ! -d "$MEMDIR/job-$D" ]'; ok $? "and its group is removed"

LEFT=$(for c in $CG0; do ls -d "$c"/job-* 2>/dev/null; done | wc -l)
is "$LEFT" 0 "no job's cgroup is left in any controller ($CG0)"
td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
LEFT=$(for c in $CG0; do [ -d "$c" ] && echo "$c"; done)
is "$LEFT" "" "with no job running, tesseld's own cgroup directory goes too, in every controller"
done_testing
