#!/bin/sh
# t3023-daemon-env.t - with tesseld running as root, the environment of a job (here nobody's)
# never reaches a root process: a job that sets LD_AUDIT to its own library (plus
# LD_LIBRARY_PATH, GCONV_PATH, MALLOC_*) gets them in its own process, as nobody, while the
# root tessel-shim that supervises it runs with the fixed environment (PATH and tesseld's
# sanitizer options) and never loads the library.  The dynamic loader ignores such variables
# only for set-uid programs, not for a root process started by root: the first check below
# shows that the probe library is loaded by a root process that is given them.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
# What this test needs is expected on this machine: its absence is a failure, not a skip.
bail() { echo "1..1"; echo "not ok 1 - $1"; exit 1; }
command -v curl >/dev/null && command -v jq >/dev/null || bail "curl and jq are needed"
[ "$(id -u)" = 0 ] || bail "must run as root (tesseld switches users)"
NOBODY_UID=$(getent passwd nobody | cut -d: -f3)
[ -n "$NOBODY_UID" ] || bail "no 'nobody' account"
PROBE="$TESSEL_BUILD/tests/agent/libtessel-envprobe.so"
[ -r "$PROBE" ] || bail "$PROBE not built"

td_setup
chmod 755 "$TD"
mkdir "$TD/probe"
chmod 1777 "$TD/probe"

# The loader honours LD_AUDIT for root when root starts the process itself.
TESSEL_PROBE_OUT="$TD/probe/self" LD_AUDIT="$PROBE" /bin/true
is "$(grep -c '^euid=0 .*via=audit' "$TD/probe/self" 2>/dev/null)" 1 \
    "LD_AUDIT set by root for root: the loader loads the library into root's process"

td_start --fake-gpus 1xT4:16G --no-cgroups || bail "tesseld did not start"
api POST /v1/users '{"name":"nobody"}'
api POST /v1/tokens '{"user":"nobody"}'
NB=$(jget .token)

OUT="$TD/probe/out"
ENV="{\"LD_AUDIT\":\"$PROBE\",\"TESSEL_PROBE_OUT\":\"$OUT\",\"LD_LIBRARY_PATH\":\"/nonexistent/lib\",\"GCONV_PATH\":\"/nonexistent/gconv\",\"MALLOC_PERTURB_\":\"85\",\"TESSEL_CANARY\":\"c4n4ry\"}"
api POST /v1/jobs "{\"argv\":[\"sh\",\"-c\",\"env >env.txt; touch ready; sleep 60\"],\"env\":$ENV}" "$NB"
is "$CODE" 201 "nobody submits a job whose env names its own LD_AUDIT library"
J=$(jget .id)
JD="$TD/data/jobs/$J"
wait_for '[ -e "'"$JD"'/ready" ] && [ -s "'"$JD"'/pid" ]'
ok $? "the job runs"
read -r SHIM _ JOB <"$JD/pid"

# The shim (root) runs with the fixed environment, nothing of the job's.
want=PATH
for v in ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS; do
    eval "[ -n \"\${$v+x}\" ]" && want="$want $v"
done
want=$(echo $want | tr ' ' '\n' | sort | tr '\n' ' ')
is "$(stat -c %u /proc/$SHIM)" 0 "tessel-shim (pid $SHIM) runs as root"
is "$(tr '\0' '\n' </proc/$SHIM/environ | cut -d= -f1 | sort | tr '\n' ' ')" "$want" \
    "tessel-shim's environment holds only: $want"
tr '\0' '\n' </proc/$SHIM/environ | grep -q -e c4n4ry -e nonexistent -e "$PROBE"
ok "$([ $? -ne 0 ]; echo $?)" "no value of the job's environment in tessel-shim's"

# The job has what it asked for, as nobody.
is "$(grep -E '^(LD_AUDIT|LD_LIBRARY_PATH|GCONV_PATH|MALLOC_PERTURB_|TESSEL_CANARY)=' "$JD/env.txt" | sort | tr '\n' ' ')" \
    "GCONV_PATH=/nonexistent/gconv LD_AUDIT=$PROBE LD_LIBRARY_PATH=$TESSEL_BUILD/tests/fake:/nonexistent/lib MALLOC_PERTURB_=85 TESSEL_CANARY=c4n4ry " \
    "the job's own process has its environment"
is "$(tr '\0' '\n' </proc/$JOB/environ | grep -c '^TESSEL_CANARY=c4n4ry$')" 1 \
    "and so has the job's pid $JOB"

# Who loaded the library: the job's processes (as nobody), never root.
NBLOADS=$(grep -c "^euid=$NOBODY_UID " "$OUT" 2>/dev/null)
ok "$([ "${NBLOADS:-0}" -ge 2 ]; echo $?)" "the library was loaded by the job's processes as nobody ($NBLOADS loads)"
is "$(grep -c '^euid=0 ' "$OUT" 2>/dev/null)" 0 "and by no root process"
grep '^euid=0 ' "$OUT" 2>/dev/null | sed 's/^/# root load: /'

api POST "/v1/jobs/$J/cancel" "" "$NB"
wait_for '[ "$(job_state '"$J"')" = cancelled ]'
ok $? "the job is cancelled"
is "$(grep -c '^euid=0 ' "$OUT" 2>/dev/null)" 0 "still no root process loaded it after the job's end"
td_stop; ok $? "tesseld stops cleanly"
done_testing
