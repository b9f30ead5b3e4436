#!/bin/sh
# t7020-container-run.t - a job run in a container (tessel run --image, docs/containers.md), as
# the user nobody, with tesseld as root, crun, one SIMULATED GPU (the fake driver and NVML of
# tests/fake stand for the host's NVIDIA driver) and the job's cgroup (v1 or v2):
#   - it runs in the image (its file is there) as nobody's uid and gid, never root, with no
#     capability and no_new_privs, in the cwd it asked for (bound from the host, its files
#     shared both ways), with its environment;
#   - the slice holds inside: the interposer preloaded (LD_PRELOAD and /etc/ld.so.preload), the
#     limits file read-only at /run/tessel/job/limits, the fake driver's CUDA view through the
#     interposer (total = the 1 GiB slice, 9 allocations of 100 MiB, the 10th refused);
#   - its processes are in the job's cgroup, with the job's memory limit;
#   - `tessel run --image` streams its output and exits with its status (7); the job's record
#     says image, exit 7, failed; the host keeps no mount of it.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
. "$TESSEL_SRCDIR/tests/lib/container.sh"
like() { printf '%s\n' "$1" | grep -q -E -- "$2"; _r=$?; ok $_r "$3"; [ $_r -eq 0 ] || diag "got: $1"; }
ctr_daemon
INTERPOSER=$(realpath "$TESSEL_BUILD/lib/libtessel-cuda.so")
echo "from the host" >"$W/hostfile"
chown nobody "$W/hostfile"

CMD='id -u; id -g; pwd; cat /etc/tessel-test-image; cat hostfile; echo made-inside >madefile; echo "MYVAR=$MYVAR"; echo "LD_PRELOAD=$LD_PRELOAD"; cat /etc/ld.so.preload; grep -E "^(CapEff|CapBnd|NoNewPrivs)" /proc/self/status; stat -c "%U %a" /run/tessel/job/limits; grep ^TESSEL_CUDA_MEM_LIMIT= /run/tessel/job/limits; echo x >/run/tessel/job/limits 2>/dev/null && echo limits-written; echo x >/etc/ld.so.preload 2>/dev/null && echo preload-written; echo "cgroups=$(grep -c "/job-$TESSEL_JOB_ID\$" /proc/self/cgroup)"; tcu-probe ctx info fill:mem:100M'
J=$(nbjob "{\"argv\":[\"sh\",\"-c\",$(printf '%s' "$CMD" | jq -Rs .)],\"image\":\"testimg:1\",\"cwd\":\"$W\",\"gpu\":0.5,\"gpu_mem\":\"1G\",\"mem\":\"256M\",\"env\":{\"MYVAR\":\"a b'c\",\"TESSEL_FAKE_CTX_MEM\":\"64M\"}}")
is "$CODE" 201 "a job naming image testimg:1 is accepted"
is "$(jget .image)" "testimg:1" "its record names the image"
wait_for '[ "$(job_state $J)" = succeeded ] || [ "$(job_state $J)" = failed ]'
is "$(job_state $J)" succeeded "it runs and succeeds"
L=$(nblogs "$J")
diag "$(printf '%s\n' "$L" | sed 's/^/  /')"
NBUID=$(id -u nobody)
NBGID=$(id -g nobody)
is "$(printf '%s\n' "$L" | sed -n 1,3p | tr '\n' ' ')" "$NBUID $NBGID $W " \
    "in the container it is nobody's uid and gid, in the cwd it asked for"
is "$(printf '%s\n' "$L" | sed -n 4,5p | tr '\n' ' ')" "tessel test image from the host " \
    "it sees the image's files and its cwd's (bound from the host)"
is "$(cat "$W/madefile" 2>/dev/null) $(stat -c %U "$W/madefile" 2>/dev/null)" "made-inside nobody" \
    "what it writes in its cwd is on the host, nobody's"
like "$L" "^MYVAR=a b'c\$" "it has its environment"
like "$L" "^LD_PRELOAD=$INTERPOSER(:|\$)" "LD_PRELOAD names the interposer first"
like "$L" "^$INTERPOSER\$" "/etc/ld.so.preload names the interposer"
like "$L" "^CapEff:[[:space:]]+0+\$" "no effective capability"
like "$L" "^CapBnd:[[:space:]]+0+\$" "an empty bounding set"
like "$L" "^NoNewPrivs:[[:space:]]+1\$" "no_new_privs"
like "$L" "^root 644\$" "the limits file is root's, 0644"
like "$L" "^TESSEL_CUDA_MEM_LIMIT=1073741824\$" "it holds the 1 GiB limit"
unlike_() { printf '%s\n' "$1" | grep -q -E -- "$2"; ok $((!$?)) "$3"; }
unlike_ "$L" "written" "neither the limits file nor /etc/ld.so.preload can be written"
like "$L" "^cgroups=[1-9]\$" "its process is in the job's cgroups"
I=$(printf '%s\n' "$L" | grep '^info')
F=$(printf '%s\n' "$L" | grep '^fill')
is "$(val total "$I")" 1073741824 "through the interposer the GPU's total is the slice (1 GiB)"
# (1024 - 64 MiB of context) / 100 = 9, as in t3004.
is "$(val n "$F") $(val rc "$F")" "9 2" \
    "9 allocations of 100 MiB fit, the 10th is CUDA_ERROR_OUT_OF_MEMORY"

# The memory limit: the job's own cgroup, which the container's processes are in.
api POST /v1/jobs "{\"argv\":[\"sleep\",\"30\"],\"image\":\"testimg:1\",\"cwd\":\"$W\",\"mem\":\"256M\"}" "$NB"
M=$(jget .id)
wait_for '[ -s "$TD/data/jobs/$M/pid" ]'
JP=$(awk '{print $3}' "$TD/data/jobs/$M/pid")
CG=$(job_cgroup "$JP" memory)
like "$CG" "/job-$M\$" "a container's process is in its job's memory cgroup ($CG)"
LIM=$(cat "$CG/memory.limit_in_bytes" 2>/dev/null || cat "$CG/memory.max" 2>/dev/null)
is "$LIM" 268435456 "which holds the job's 256M limit"
is "$(awk '{print $4}' "/proc/$JP/stat")" "$(awk '{print $1}' "$TD/data/jobs/$M/pid")" \
    "the container's process is tessel-shim's child (its supervisor)"
api POST "/v1/jobs/$M/cancel" "" "$NB"
wait_for '[ "$(job_state $M)" = cancelled ]'; ok $? "cancelled"

# The CLI: tessel run --image streams the output and exits with the container's status.
TESSEL_TOKEN=$NB tcli run --image testimg:1 --cwd "$W" -- sh -c 'echo out-of-container; exit 7'
is "$RC $(out)" "7 out-of-container" "tessel run --image prints the output and exits 7, as the job"
R=$(TESSEL_TOKEN=$NB "$TCLI" ps -a --json | jq -r '.jobs | max_by(.id) | "\(.image) \(.state) \(.exit_code)"')
is "$R" "testimg:1 failed 7" "the job is failed with exit code 7"
is "$(grep -c "$TD/data/run" /proc/self/mountinfo)" 0 "the host keeps no mount of the containers"
is "$(ls -A "$TD/data/run" | tr '\n' ' ')" "ld.so.preload " "nor their state directories: run/ holds the shared preload list alone"
done_testing
