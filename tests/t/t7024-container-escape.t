#!/bin/sh
# t7024-container-escape.t - a user cannot leave a container job's limits (docs/security.md,
# "Containers"), as nobody, with tesseld as root:
#   - through the environment: LD_PRELOAD of its own, LD_PRELOAD unset and
#     TESSEL_CUDA_MEM_LIMIT=39G: the interposer is still loaded (/etc/ld.so.preload) and holds
#     the 1 GiB slice; variables named like an engine's options are only variables;
#   - through its command line: "--privileged", "-v /:/host" are the program's arguments, never
#     the engine's;
#   - inside: no mount, no user namespace (EPERM), /etc/ld.so.preload cannot be unmounted, no
#     GPU device or disk of the host in its /dev;
#   - around the interposer: a program that finds the driver's entry points itself (tcu-raw)
#     and holds 3000 MiB of its 1 GiB slice is killed by the shim's watchdog, outside the
#     container, with the reason;
#   - through its cwd: a link it points at a directory it may not reach is followed as the user,
#     not as root: the job fails to start rather than seeing what is behind it, also when the
#     link is swapped in after the submission's check;
#   - through its cwd's mount: a cwd on a read-only (or noexec) bind mount stays read-only
#     (noexec) inside, also when the cwd is moved onto such a mount after tesseld prepared the
#     container (review of 2026-11-27: crun's remount of the bind had dropped both).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
. "$TESSEL_SRCDIR/tests/lib/container.sh"
like() { printf '%s\n' "$1" | grep -q -E -- "$2"; _r=$?; ok $_r "$3"; [ $_r -eq 0 ] || diag "got: $1"; }
unlike() { printf '%s\n' "$1" | grep -q -E -- "$2"; ok $((!$?)) "$3"; }
ctr_daemon
for p in unshare mount umount; do command -v $p >/dev/null || missing "$p is needed (util-linux)"; done
RAW=$TESSEL_BUILD/tests/interposer/tcu-raw
[ -x "$RAW" ] || missing "$RAW not built"
TESSEL_BUILD="$TESSEL_BUILD" sh "$TESSEL_SRCDIR/tests/lib/mkimage.sh" "$IMG" "$(command -v unshare)" \
    "$(command -v mount)" "$(command -v umount)" "$RAW" >/dev/null || missing "the test image's extras"
INTERPOSER=$(realpath "$TESSEL_BUILD/lib/libtessel-cuda.so")
ENV='"TESSEL_FAKE_CTX_MEM":"64M"'
run_nb() { # run_nb ARGV_JSON [ENV_JSON_MEMBERS] -> the job's output once it has ended
    _j=$(nbjob "{\"argv\":$1,\"image\":\"testimg:1\",\"cwd\":\"$W\",\"gpu\":0.5,\"gpu_mem\":\"1G\",\"env\":{$ENV${2:+,$2}}}")
    [ -n "$_j" ] || { diag "refused: $(cat "$TD/out")"; return; }
    wait_for "s=\$(job_state $_j); [ \$s != pending ] && [ \$s != running ]"
    nblogs "$_j"
    nblogs "$_j" stderr | sed 's/^/stderr: /'
}

# ---- the environment ----
cp "$TESSEL_BUILD/tests/agent/libtessel-envprobe.so" "$W/evil.so" 2>/dev/null || : >"$W/evil.so"
L=$(run_nb '["sh","-c","echo LD_PRELOAD=$LD_PRELOAD; tcu-probe ctx fill:mem:100M"]' "\"LD_PRELOAD\":\"$W/evil.so\"")
like "$L" "^LD_PRELOAD=$INTERPOSER:$W/evil.so\$" "a job's own LD_PRELOAD comes after the interposer"
F=$(printf '%s\n' "$L" | grep '^fill')
is "$(val n "$F") $(val rc "$F")" "9 2" "and its slice holds (9 allocations of 100 MiB)"
L=$(run_nb '["env","-u","LD_PRELOAD","TESSEL_CUDA_MEM_LIMIT=39G","TESSEL_CUDA_MEM_LIMIT_0=39G","tcu-probe","ctx","info","fill:mem:100M"]')
F=$(printf '%s\n' "$L" | grep '^fill')
I=$(printf '%s\n' "$L" | grep '^info')
is "$(val total "$I") $(val n "$F") $(val rc "$F")" "1073741824 9 2" \
    "without LD_PRELOAD, asking 39G, the interposer (from /etc/ld.so.preload) holds it at 1 GiB"
api POST /v1/jobs "{\"argv\":[\"true\"],\"image\":\"testimg:1\",\"cwd\":\"$W\",\"env\":{\"TESSEL_SLICE\":\"/tmp/x\"}}" "$NB"
is "$CODE" 400 "Tessel's own variables are refused, as for any job"
L=$(run_nb '["sh","-c","grep -a -o -e --privileged=true -e --volume=/:/host /proc/$$/environ | grep -c .; grep ^CapEff /proc/self/status"]' '"--privileged":"true","--volume":"/:/host"')
like "$L" "^2\$" "variables named --privileged and --volume are two variables of the job"
like "$L" "^CapEff:[[:space:]]+0+\$" "that give it nothing (no capability)"

# ---- the command line ----
L=$(run_nb '["sh","-c","echo 0=$0 args=$#; ls -d /host 2>&1; grep ^CapEff /proc/self/status","--privileged","-v","/:/host","--device=/dev/sda"]')
like "$L" "^0=--privileged args=3\$" "--privileged, -v /:/host, --device=... are the program's arguments"
like "$L" "No such file" "no /host in the container"
like "$L" "^CapEff:[[:space:]]+0+\$" "and no capability"

# ---- inside ----
L=$(run_nb '["sh","-c","unshare -U -r true; echo unshare=$?; mount -t tmpfs none /tmp; echo mount=$?; umount /etc/ld.so.preload; echo umount=$?; ls /dev"]')
like "$L" "^unshare=[1-9]" "unshare -U fails in a container job"
like "$L" "Operation not permitted" "refused (EPERM)"
like "$L" "^mount=[1-9]" "mount fails (no CAP_SYS_ADMIN)"
like "$L" "^umount=[1-9]" "/etc/ld.so.preload cannot be unmounted"
unlike "$L" "^(nvidia|sd|vd|nvme|mem$|kmsg$)" "its /dev has no device of the host's (nvidia*, disks, mem, kmsg)"

# ---- around the interposer: the watchdog ----
# The fake NVML's state (a test double's shared file: SIMULATED GPUs) in the job's cwd, which
# the container sees at the same path; the watchdog (root's shim, outside) opens it as nobody.
: >"$W/fake-state"
chown nobody "$W/fake-state"
LIBCUDA=$(realpath "$TESSEL_BUILD/tests/fake/libcuda.so.1")
J=$(nbjob "{\"argv\":[\"tcu-raw\",\"$LIBCUDA\",\"3000\",\"$W/never\"],\"image\":\"testimg:1\",\"cwd\":\"$W\",\"gpu\":0.5,\"gpu_mem\":\"1G\",\"env\":{$ENV,\"TESSEL_FAKE_STATE\":\"$W/fake-state\"}}")
wait_for '[ "$(job_state $J)" != running ] && [ "$(job_state $J)" != pending ]'
api GET "/v1/jobs/$J" "" "$NB"
is "$(jget .state) $(jget .signal) $(jget .end_cause)" "failed 9 gpu_mem_limit" \
    "a container job holding 3000 MiB past the interposer is killed by the watchdog"
is "$(jget .reason)" "GPU 0: the job's processes hold 3.0 GiB, its slice allows 1.0 GiB: killed by the GPU-memory watchdog" \
    "with the reason"
like "$(nblogs "$J")" "raw rc=0 mib=3000" "(the fake driver had given it the 3000 MiB)"

# ---- the cwd: links are followed as the user ----
SEC="$TD/secret"
mkdir -p "$SEC/pub"
chmod 700 "$SEC"
chmod 755 "$SEC/pub"
echo "behind a 0700 directory" >"$SEC/pub/file"
ln -s "$SEC/pub" "$W/link"
api POST /v1/jobs "{\"argv\":[\"cat\",\"file\"],\"image\":\"testimg:1\",\"cwd\":\"$W/link\"}" "$NB"
is "$CODE $(jget .error.field)" "400 cwd" "a cwd linked to a directory nobody cannot reach is refused"
# The swap after the check: the job waits for the GPU, its cwd is made a link meanwhile.
api POST /v1/jobs '{"argv":["sleep","3"],"gpus":1}'
H=$(jget .id)
wait_for '[ "$(job_state $H)" = running ]'
mkdir "$W/d"
chown nobody "$W/d"
J=$(nbjob "{\"argv\":[\"cat\",\"file\"],\"image\":\"testimg:1\",\"cwd\":\"$W/d\",\"gpus\":1}")
is "$(job_state "$J")" pending "a job with cwd $W/d (nobody's) waits for the GPU"
rmdir "$W/d"
ln -s "$SEC/pub" "$W/d"
wait_for '[ "$(job_state $J)" = failed ]'; ok $? "its cwd swapped for a link, it fails at its start"
L=$(nblogs "$J")
unlike "$L" "behind" "without seeing what is behind the link"
api GET "/v1/jobs/$J" "" "$NB"
like "$(jget .reason)" "chdir" "the reason is the cwd ($(jget .reason))"
# ---- the cwd's mount: read-only and noexec kept ----
RO="$TD/ro" NX="$TD/nx"
mkdir -p "$TD/rosrc" "$TD/nxsrc" "$RO" "$NX"
echo original >"$TD/rosrc/f"
cp /bin/true "$TD/nxsrc/mytrue"
chown -R nobody "$TD/rosrc" "$TD/nxsrc"
mount --bind "$TD/rosrc" "$RO" && mount -o remount,bind,ro "$RO" &&
    mount --bind "$TD/nxsrc" "$NX" && mount -o remount,bind,noexec "$NX" ||
    missing "bind mounts for the test"
# The mounts go first, then td_cleanup (daemon.sh's EXIT trap, which this one replaces: without
# it the test left its tesseld running).
cleanup_mounts() {
    umount "$RO" "$NX" 2>/dev/null
    td_cleanup
}
trap cleanup_mounts EXIT
runuser -u nobody -- sh -c "echo changed >$RO/f" 2>/dev/null
is "$(cat "$TD/rosrc/f")" original "on the host nobody cannot write the read-only mount"
J=$(nbjob "{\"argv\":[\"sh\",\"-c\",\"echo changed >f; echo rc=\$?\"],\"image\":\"testimg:1\",\"cwd\":\"$RO\"}")
wait_for "s=\$(job_state $J); [ \$s != pending ] && [ \$s != running ]"
like "$(nblogs "$J")" "^rc=[1-9]" "a container job with that cwd cannot write it either"
is "$(cat "$TD/rosrc/f")" original "the file is as it was"
J=$(nbjob "{\"argv\":[\"sh\",\"-c\",\"./mytrue; echo rc=\$?\"],\"image\":\"testimg:1\",\"cwd\":\"$NX\"}")
wait_for "s=\$(job_state $J); [ \$s != pending ] && [ \$s != running ]"
runuser -u nobody -- "$NX/mytrue" 2>/dev/null
ok $((!$?)) "on the host nobody cannot run a program of the noexec mount"
like "$(nblogs "$J")" "^rc=126" "a program on a noexec cwd does not run in a container job either"
# The cwd moved onto the read-only mount after the submission (a directory swapped for a link):
# tesseld prepares the container at the start (it then binds the cwd read-only), and the job's
# process checks the mount of what it opens against that (ctrrun.h; test_ctrrun for the race
# between the two, which a test cannot time).
api POST /v1/jobs '{"argv":["sleep","3"],"gpus":1}'
H=$(jget .id)
wait_for '[ "$(job_state $H)" = running ]'
mkdir "$W/e"
chown nobody "$W/e"
J=$(nbjob "{\"argv\":[\"sh\",\"-c\",\"echo changed >f\"],\"image\":\"testimg:1\",\"cwd\":\"$W/e\",\"gpus\":1}")
is "$(job_state "$J")" pending "a job with a writable cwd waits for the GPU"
rmdir "$W/e"
ln -s "$RO" "$W/e"
wait_for '[ "$(job_state $J)" = failed ]'; ok $? "its cwd moved onto a read-only mount, it fails"
is "$(cat "$TD/rosrc/f")" original "and nothing was written"
done_testing
