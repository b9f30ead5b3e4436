#!/bin/sh
# t9005: a job of an unprivileged user (nobody) on a Slurm node cannot undo the slice that
# spank_tessel.so set up for it: the root-written limits file, the interposer and the
# ld.so.preload list bound read-only into its tasks, the plugin's state directory and the job's
# violation record are out of its reach (writes, unmounts, remounts, a user namespace), and a
# program that drops LD_PRELOAD and asks for more memory through the environment is still held
# to its shard's part.  The other Slurm tests submit as root, who could do all of this.
# Two SIMULATED GPUs per node (the fake NVML and driver of tests/fake, 16 GiB each, 4 shards
# each: a shard is 4 GiB).
# test-timeout: 600
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/slurm/cluster.sh"

# Under ASan the cluster's pieces come from the plain sub-build (tsc_test_pieces).
tsc_test_pieces tests/interposer/tcu-probe
PROBE=$PB/tests/interposer/tcu-probe
id nobody >/dev/null 2>&1 || missing "the account nobody"
command -v runuser >/dev/null || missing "runuser (util-linux)"

trap 'tsc_stop' EXIT
trap 'exit 1' INT TERM
GiB=1073741824
export TESSEL_FAKE_GPUS=2xFakeGPU:16G TESSEL_FAKE_CTX_MEM=0
export LD_LIBRARY_PATH=$FAKE
TSC_PLUGIN_ARGS="interposer=$PRE nvml=$FAKE/libnvidia-ml.so.1"
tsc_start "$PLUGIN" || missing "the Slurm cluster: $TSC_WHY"
diag "SIMULATED GPUs: 2 per node (fake NVML and driver, $TESSEL_FAKE_GPUS), 4 shards each"

# What nobody's job runs must be readable by nobody wherever the build lives: the probe and the
# fake driver are copied under $TSC (0755).  The fake driver's shared state (a test double's
# file, one per node) is made writable by every user, as /dev/nvidia* are.
U=$TSC/u
mkdir -m 755 "$U" "$U/lib" && mkdir -m 700 "$U/out" && chown nobody "$U/out"
cp "$PROBE" "$U/tcu-probe" && cp -P "$FAKE"/libcuda.so* "$FAKE"/libnvidia-ml.so* "$U/lib/"
chmod -R a+rX "$U/tcu-probe" "$U/lib"
for n in n1 n2; do
    tsc_on "$n" sh -c ': >>"$TESSEL_FAKE_STATE" && chmod 666 "$TESSEL_FAKE_STATE"' ||
        missing "the fake driver's state file on $n"
done

cat >"$U/job.sh" <<'SCRIPT'
#!/bin/sh
# Each attempt prints NAME=done or NAME=refused.
try() { _n=$1; shift; if "$@" >/dev/null 2>&1; then echo "$_n=done"; else echo "$_n=refused"; fi; }
echo "uid=$(id -u) job=$SLURM_JOB_ID"
J=/run/tessel/job
S=/run/tessel/slurm/$SLURM_JOB_ID
echo "limit=$(sed -n 's/^TESSEL_CUDA_MEM_LIMIT_0=//p' $J/limits)"
try limits sh -c "echo TESSEL_CUDA_MEM_LIMIT_0=15G >>$J/limits"
try limits-replace sh -c "cp $J/limits /tmp/l.$$ && mv /tmp/l.$$ $J/limits"
try preload sh -c ': >/etc/ld.so.preload'
try interposer sh -c ": >$J/libtessel-cuda.so"
try umount-job umount $J
try umount-preload umount /etc/ld.so.preload
try remount-rw mount -o remount,rw $J
try statedir touch $S/forged
try record sh -c "echo 'kill 1 forged' >$S/violation"
try slice-dir touch $S/slice.forged
# Holding its step's directory locked would keep the job's directory on the node for ever
# (a running step holds it so): the job cannot open it, through either path.
try lock-step flock -s -n $J true
try lock-step-dir flock -s -n $S/batch true
# Nor the node's lock, which would fail every GPU step of the node.
try lock-node flock -n /run/tessel/slurm/.lock true
# In a user namespace of its own the job is "root", but the mounts it inherited are locked:
# unmounting one to uncover what is beneath is refused there too.
unshare -U -r -m sh -c 'echo userns=entered; umount /etc/ld.so.preload && echo userns-umount=done' 2>/dev/null
unshare -U -r -m sh -c "umount $J && echo userns-umount-job=done" 2>/dev/null
# No LD_PRELOAD, and the environment asking for 15 GiB: the interposer comes from the bound
# ld.so.preload list, and the root-written limits file wins over the environment.
env -u LD_PRELOAD TESSEL_CUDA_MEM_LIMIT_0=15G TESSEL_CUDA_MEM_LIMIT=15G \
    @PROBE@ ctx info fill:mem:256M
echo end
SCRIPT
sed -i "s|@PROBE@|$U/tcu-probe|" "$U/job.sh" && chmod 755 "$U/job.sh"

out=$U/out/job
j=$(cd "$U" && LD_LIBRARY_PATH=$U/lib tsc runuser -u nobody -- sbatch --parsable -w n1 \
    --gres=shard:1 --chdir="$U" -o "$out" "$U/job.sh")
ok $? "nobody submits a shard:1 job (a quarter of a 16 GiB GPU: 4 GiB)"
tsc_wait_state "$j" COMPLETED FAILED CANCELLED TIMEOUT
is "$(tsc_state "$j"):$(grep -c '^end$' "$out" 2>/dev/null)" COMPLETED:1 "the job ran to its end"
[ -s "$out" ] && diag "its output: $(tr '\n' ' ' <"$out")"
is "$(sed -n 's/^uid=\([0-9]*\).*/\1/p' "$out")" "$(id -u nobody)" "as nobody"
is "$(sed -n 's/^limit=//p' "$out")" "$((4 * GiB))" "its limits file holds its shard's part, 4 GiB"
for a in limits limits-replace preload interposer umount-job umount-preload remount-rw \
         statedir record slice-dir lock-step lock-step-dir lock-node; do
    is "$(sed -n "s/^$a=//p" "$out")" refused "the job cannot: $a"
done
grep -q 'userns-umount' "$out"
ok $((!$?)) "nor unmount the bound files from a user namespace of its own (locked mounts)"
is "$(sed -n 's/^info .*total=\([0-9]*\).*/\1/p' "$out" | head -n 1)" \
    "$((4 * GiB))" "without LD_PRELOAD and with 15G in its environment, CUDA still shows 4 GiB"
fb=$(sed -n 's/^fill mem n=[0-9]* bytes=\([0-9]*\).*/\1/p' "$out")
ok $([ -n "$fb" ] && [ "$fb" -le $((4 * GiB)) ] && [ "$fb" -ge $((3 * GiB)) ]; echo $?) \
    "and it is refused past its 4 GiB (it got $fb bytes in 256 MiB pieces)"
done_testing
