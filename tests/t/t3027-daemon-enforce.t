#!/bin/sh
# t3027-daemon-enforce.t - a job cannot leave its GPU slice (issue #12 item 1, docs/security.md).
# With tesseld as root and fake GPUs:
#   - the job's limits come from tesseld's root-owned file at /run/tessel/job/limits in the
#     job's own mount namespace, read-only there, and /etc/ld.so.preload names the interposer
#     there (the host's stays as it was); the per-GPU registry files are root's, mode 0666;
#   - a job that unsets LD_PRELOAD and sets TESSEL_CUDA_MEM_LIMIT=39G, or that rewrites the
#     limit in its slice file to 39 GiB, is still held at its 1 GiB by the interposer (9
#     allocations of 100 MiB fit, as in t3004);
#   - a job that cannot create a user namespace (unshare -U refused), so cannot cover the mount;
#   - a job that escapes the interposer (tcu-raw: the driver's entry points read from its ELF
#     symbol table, no dlsym) and holds 3000 MiB, or that removes its slice file so that a
#     second process counts from zero, is killed by the watchdog, failed, with the reason in
#     its state and in its stderr log; one that holds 500 MiB with a 1 GiB slice is untouched;
#   - with --gpu-mem-violation suspend the over-limit job is stopped (SIGSTOP) and marked
#     suspended with the reason; a cancel ends it.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
# What this test needs is there on the machines it runs on: its absence is a failure.
bail() { echo "1..1"; echo "not ok 1 - $1"; exit 1; }
like() { # like GOT EXTENDED-REGEX DESCRIPTION
    printf '%s\n' "$1" | grep -q -E -- "$2"; _r=$?
    ok $_r "$3"; [ $_r -eq 0 ] || { echo "#   got: '$1'"; echo "#   expected to match: '$2'"; }
}
diagl() { printf "%s\n" "$1" | sed "s/^/# /"; }
unlike() { printf '%s\n' "$1" | grep -q -E -- "$2"; ok $((!$?)) "$3"; }
command -v curl >/dev/null && command -v jq >/dev/null || bail "curl and jq are needed"
[ "$(id -u)" = 0 ] || bail "not root: tesseld enforces slices only as root"
PROBE=$TESSEL_BUILD/tests/interposer/tcu-probe
RAW=$TESSEL_BUILD/tests/interposer/tcu-raw
LOAD=$TESSEL_BUILD/tests/interposer/tcu-load
NOBODY_UID=$(getent passwd nobody | cut -d: -f3)
[ -n "$NOBODY_UID" ] || bail "no 'nobody' account"
FAKE=$TESSEL_BUILD/tests/fake
for f in "$PROBE" "$RAW" "$LOAD" "$FAKE/libcuda.so.1" "$FAKE/libnvidia-ml.so.1" \
    "$TESSEL_BUILD/lib/libtessel-cuda.so"; do
    [ -e "$f" ] || bail "$f not built"
done
INTERPOSER=$(realpath "$TESSEL_BUILD/lib/libtessel-cuda.so")
LIBCUDA=$(realpath "$FAKE/libcuda.so.1")
HOST_PRELOAD=$(cat /etc/ld.so.preload 2>/dev/null)

td_setup
chmod 755 "$TD" # nobody's job reaches its fake state below
td_start --fake-gpus 1xT4:8G --no-cgroups || bail "tesseld did not start"
G="$TD/go"
mkdir -p "$G"
# One fake state for the jobs and the shims' watchdogs (the fake NVML reads it); contexts cost
# 64 MiB, charged to the process as the real driver's per-process figure includes them.
ENV="\"env\":{\"TESSEL_FAKE_CTX_MEM\":\"64M\",\"TESSEL_FAKE_STATE\":\"$TD/fake-state\"}"
job() { # job ARGV_JSON [MORE_JSON] -> job id; a half-GPU job with a 1 GiB slice
    api POST /v1/jobs "{\"argv\":$1,\"gpu\":0.5,\"gpu_mem\":\"1G\",$ENV${2:+,$2}}"
    jget .id
}
logs() { api GET "/v1/jobs/$1/logs"; cat "$TD/out"; }
errlog() { api GET "/v1/jobs/$1/logs?stream=stderr"; cat "$TD/out"; }
reason() { api GET "/v1/jobs/$1"; jget .reason; }
val() { printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -n 1; }

# ---- the files: root's, read-only to the job ----
REG=$(ls "$TD"/data/registry/tessel-gpu-* 2>/dev/null)
is "$(printf '%s\n' "$REG" | wc -l) $(stat -c '%U %a' $REG)" "1 root 666" \
    "tesseld made one registry file per GPU: root's, mode 0666"
J=$(job '["sh","-c","cat /etc/ld.so.preload; stat -c \"%U %a\" /run/tessel/job/limits; grep -c . /run/tessel/job/limits; grep ^TESSEL_CUDA_MEM_LIMIT= /run/tessel/job/limits; grep ^TESSEL_DEVICE_REGISTRY= /run/tessel/job/limits; echo 39G >/run/tessel/job/limits && echo written; echo x >/etc/ld.so.preload && echo written; true"]')
wait_for '[ "$(job_state $J)" = succeeded ]'; ok $? "a job reading its files succeeds"
L=$(logs "$J")
is "$(printf '%s\n' "$L" | sed -n 1p)" "$INTERPOSER" "in the job, /etc/ld.so.preload names the interposer"
is "$(printf '%s\n' "$L" | sed -n 2p)" "root 644" "its limits file is root's, mode 0644"
is "$(printf '%s\n' "$L" | sed -n 4p)" "TESSEL_CUDA_MEM_LIMIT=1073741824" "it holds the 1 GiB limit"
is "$(printf '%s\n' "$L" | sed -n 5p)" "TESSEL_DEVICE_REGISTRY=$TD/data/registry" \
    "and the root-owned registry directory"
is "$(printf '%s\n' "$L" | grep -c written)" "0" \
    "even as root the job cannot rewrite either (read-only mounts)"
is "$(cat /etc/ld.so.preload 2>/dev/null)" "$HOST_PRELOAD" "the host's /etc/ld.so.preload is unchanged"

# The list every job binds (run/ld.so.preload) is checked at each start: removed, or changed to
# name another library, it is written again before the next job binds it.
rm -f "$TD/data/run/ld.so.preload"
J=$(job '["cat","/etc/ld.so.preload"]')
wait_for '[ "$(job_state $J)" = succeeded ]'; ok $? "a job starts with run/ld.so.preload removed meanwhile"
is "$(logs "$J") $(cat "$TD/data/run/ld.so.preload")" "$INTERPOSER $INTERPOSER" "the list was written again and the job's names the interposer"
echo /tmp/not-the-interposer.so >"$TD/data/run/ld.so.preload"
J=$(job '["cat","/etc/ld.so.preload"]')
wait_for '[ "$(job_state $J)" = succeeded ]'; ok $? "a job starts with run/ld.so.preload changed meanwhile"
is "$(logs "$J")" "$INTERPOSER" "the changed list was written again before the job bound it"

# A job launching kernels joins the root-owned registry (it opens it; it never makes one).
J=$(job "[\"$LOAD\",\"--us=1000\",\"--ms=100\"]")
wait_for '[ "$(job_state $J)" = succeeded ]'; ok $? "a job launching kernels succeeds"
is "$(stat -c '%U %a %s' $REG)" "root 666 4160" \
    "it initialised the registry (64 entries of 64 bytes + the header), still root's, mode 0666"
unlike "$(errlog "$J")" "device registry" "without a complaint about it"

# ---- the interposer cannot be unloaded, nor its limit raised from the environment ----
J=$(job "[\"env\",\"-u\",\"LD_PRELOAD\",\"TESSEL_CUDA_MEM_LIMIT=39G\",\"TESSEL_CUDA_MEM_LIMIT_0=39G\",\"$PROBE\",\"ctx\",\"fill:mem:100M\"]")
wait_for '[ "$(job_state $J)" = succeeded ]'; ok $? "a job without LD_PRELOAD, asking 39G, succeeds"
F=$(logs "$J" | grep '^fill')
diag "$F"
# (1024 - 64) / 100 = 9 allocations, as in t3004.
is "$(val n "$F") $(val rc "$F")" "9 2" \
    "it is held at its 1 GiB: 9 allocations of 100 MiB, the 10th CUDA_ERROR_OUT_OF_MEMORY"

# Its slice file (the shared accounting, the job's own) rewritten to a 39 GiB limit while a
# process is attached: the interposer still holds the process to the limits file's 1 GiB.
SLICE=$TESSEL_BUILD/tests/interposer/tcu-slice
J=$(job "[\"sh\",\"-c\",\"$PROBE ctx waitfile:$G/raised fill:mem:100M & until [ -s \$TESSEL_SLICE ]; do sleep 0.1; done; sleep 0.5; $SLICE \$TESSEL_SLICE setlimit:41875931136; $SLICE \$TESSEL_SLICE | grep ^device; touch $G/raised; wait\"]")
wait_for '[ "$(job_state $J)" = succeeded ]'; ok $? "a job that raises the limit in its slice file succeeds"
L=$(logs "$J")
diagl "$L"
like "$L" "^device 0 limit=41875931136 " "(its slice file said 39 GiB)"
F=$(printf '%s\n' "$L" | grep '^fill')
is "$(val n "$F") $(val rc "$F")" "9 2" "it is still held at 1 GiB: 9 allocations of 100 MiB"

# ---- no user namespace, so no way to cover the mounts ----
J=$(job '["sh","-c","unshare -U -r true 2>&1; echo rc=$?"]')
wait_for '[ "$(job_state $J)" = succeeded ]'
L=$(logs "$J")
diagl "$L"
like "$L" "Operation not permitted" "unshare -U is refused in a job (EPERM)"
unlike "$L" "rc=0" "and fails"

# ---- an ordinary account's job (nobody) ----
api POST /v1/users '{"name":"nobody"}'
api POST /v1/tokens '{"user":"nobody"}'
NB=$(jget .token)
mkdir -m 1777 "$TD/nb"
: >"$TD/nb/fake-state" && chmod 666 "$TD/nb/fake-state" # nobody's processes and the root shim share it
NBENV="\"env\":{\"TESSEL_FAKE_CTX_MEM\":\"64M\",\"TESSEL_FAKE_STATE\":\"$TD/nb/fake-state\"}"
api POST /v1/jobs "{\"argv\":[\"sh\",\"-c\",\"id -u; umount /etc/ld.so.preload 2>/dev/null || echo umount refused; umount /run/tessel/job 2>/dev/null || echo umount refused; unshare -Ur true 2>/dev/null || echo unshare refused; exec $RAW $LIBCUDA 3000 $G/never\"],\"gpu\":0.5,\"gpu_mem\":\"1G\",$NBENV}" "$NB"
J=$(jget .id)
wait_for '[ "$(job_state $J "$NB")" = failed ]'; ok $? "nobody's job holding 3000 MiB of a 1 GiB slice fails"
api GET "/v1/jobs/$J/logs" "" "$NB"
L=$(cat "$TD/out")
diagl "$L"
is "$(printf '%s\n' "$L" | grep -v '^raw' | tr '\n' ' ')" "$NOBODY_UID umount refused umount refused unshare refused " \
    "it runs as nobody and can neither unmount its files nor make a user namespace"
api GET "/v1/jobs/$J/logs?stream=stderr" "" "$NB"
like "$(cat "$TD/out")" "^tessel: GPU 0: the job's processes hold 3.0 GiB, its slice allows 1.0 GiB: killed" \
    "its stderr log (written as nobody) says why"
is "$(stat -c %U "$TD/data/jobs/$J/stderr")" "nobody" "and the log is still nobody's"

# ---- the watchdog: kill ----
J=$(job "[\"$RAW\",\"$LIBCUDA\",\"3000\",\"$G/never\"]")
wait_for '[ "$(job_state $J)" = failed ]'; ok $? "a job holding 3000 MiB outside the interposer (1 GiB slice) fails"
R=$(reason "$J")
diag "$R"
is "$R" "GPU 0: the job's processes hold 3.0 GiB, its slice allows 1.0 GiB: killed by the GPU-memory watchdog" \
    "its reason names the GPU, its 3000 + 64 MiB, the 1 GiB slice and the watchdog"
api GET "/v1/jobs/$J"
is "$(jget .signal) $(jget .end_cause)" "9 gpu_mem_limit" "it was killed by SIGKILL; its end cause: GPU memory limit"
like "$(errlog "$J")" "^tessel: GPU 0: the job's processes hold 3.0 GiB" "and its stderr log says why"
like "$(logs "$J")" "raw rc=0 mib=3000" "(the driver had given it the 3000 MiB)"

# Two processes, the second after the job removed its slice file (its accounting): each stays
# under 1 GiB by the interposer's count, together they hold 1528 MiB.
J=$(job "[\"sh\",\"-c\",\"$PROBE ctx alloc:mem:700M waitfile:$G/never & sleep 1; rm -f \$TESSEL_SLICE; $PROBE ctx alloc:mem:700M waitfile:$G/never\"]")
wait_for '[ "$(job_state $J)" = failed ]'; ok $? "a job that resets its accounting and holds 1528 MiB fails"
is "$(reason "$J")" "GPU 0: the job's processes hold 1.5 GiB, its slice allows 1.0 GiB: killed by the GPU-memory watchdog" \
    "the watchdog sums the job's processes"
is "$(logs "$J" | grep -c 'alloc mem rc=0')" "2" "(the interposer had allowed both allocations)"

J=$(job "[\"$RAW\",\"$LIBCUDA\",\"500\",\"$G/within\"]")
wait_for 'logs '"$J"' | grep -q "raw rc=0"'; ok $? "a job holding 500 MiB of its 1 GiB runs"
sleep 1 # five watchdog periods
is "$(job_state "$J")" "running" "the watchdog leaves it alone"
touch "$G/within"
wait_for '[ "$(job_state $J)" = succeeded ]'; ok $? "and it succeeds"
is "$(reason "$J")" "exited with status 0" "with the ordinary reason"
td_stop; ok $? "tesseld stops cleanly"

# ---- the watchdog: suspend ----
td_start --fake-gpus 1xT4:8G --no-cgroups --gpu-mem-violation suspend || bail "tesseld did not start"
J=$(job "[\"$RAW\",\"$LIBCUDA\",\"2048\",\"$G/never\"]")
wait_for 'api GET /v1/jobs/'"$J"' && [ "$(jget .suspended_at)" != null ]'
ok $? "with --gpu-mem-violation suspend, a job holding 2048 MiB is marked suspended"
api GET "/v1/jobs/$J"
is "$(jget .state) $(jget .reason)" "suspended GPU 0: the job's processes hold 2.1 GiB, its slice allows 1.0 GiB: suspended by the GPU-memory watchdog" \
    "it shows as suspended with the watchdog's reason"
read -r _ _ PID <"$TD/data/jobs/$J/pid"
wait_for '[ "$(sed "s/.*) //" /proc/$PID/stat | cut -c1)" = T ]'; ok $? "its process is stopped (SIGSTOP)"
like "$(errlog "$J")" "suspended by the GPU-memory watchdog" "its stderr log says why"
api POST "/v1/jobs/$J/cancel"
wait_for '[ "$(job_state $J)" = cancelled ]'; ok $? "a cancel ends the suspended job"
td_stop; ok $? "tesseld stops cleanly"
done_testing
