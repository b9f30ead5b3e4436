#!/bin/sh
# t9001: `tessel slurm-conf` prints a node's gres.conf, slurm.conf, plugstack.conf and
# tessel_gpus.lua (job_submit.lua's view of the node) lines from
# the GPUs NVML finds (the fake NVML here: SIMULATED GPUs) or --fake-gpus N, and Slurm 22.05's
# slurmd accepts them (slurmd -G prints the GRES it parsed).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
TESSEL=$TESSEL_BUILD/bin/tessel
FAKE=$TESSEL_BUILD/tests/fake
[ -x "$TESSEL" ] || missing "$TESSEL is not built"
[ -e "$FAKE/libnvidia-ml.so.1" ] || missing "the fake NVML is not built"
command -v slurmd >/dev/null || missing "slurmd (scripts/install-deps.sh)"
T=$(mktemp -d /tmp/tessel-t9001.XXXXXX)
trap 'rm -rf "$T"' EXIT

diag "SIMULATED GPUs: the fake NVML (tests/fake), 2xT4:16G"
out=$(LD_LIBRARY_PATH=$FAKE TESSEL_FAKE_GPUS=2xT4:16G "$TESSEL" slurm-conf --node n7 --shards-per-gpu 8)
ok $? "slurm-conf with NVML's GPUs exits 0"
printf '%s\n' "$out" >"$T/nvml"
grep -qx 'AutoDetect=off' "$T/nvml" && grep -qx 'Name=gpu File=/dev/nvidia\[0-1\]' "$T/nvml"
ok $? "gres.conf: AutoDetect=off and the two GPUs' device files"
is "$(grep -c '^Name=shard Count=8 File=/dev/nvidia[01] .*16.0 GiB, a shard 2.00 GiB' "$T/nvml")" 2 \
    "gres.conf: 8 shards per GPU, each GPU's memory and a shard's part in a comment"
grep -qx 'GresTypes=gpu,shard' "$T/nvml" &&
    grep -q '^NodeName=n7 CPUs=[0-9]* RealMemory=[0-9]* Gres=gpu:2,shard:16$' "$T/nvml"
ok $? "slurm.conf: GresTypes and the NodeName line with Gres=gpu:2,shard:16"
grep -qx 'required /usr/lib/x86_64-linux-gnu/slurm/spank_tessel.so' "$T/nvml"
ok $? "plugstack.conf: the plugin, required"
is "$(grep -c '^gpu("n7", [01], 17179869184, 8)$' "$T/nvml")" 2 \
    "tessel_gpus.lua (for job_submit.lua): each GPU's NVML index, memory in bytes and shards"

out=$("$TESSEL" slurm-conf --fake-gpus 3 --node n9)
printf '%s\n' "$out" >"$T/fake"
grep -q '3 SIMULATED GPUs, 4 shards each' "$T/fake" && grep -qx 'Name=gpu File=/dev/nvidia\[0-2\]' "$T/fake" &&
    grep -q 'Gres=gpu:3,shard:12$' "$T/fake"
ok $? "--fake-gpus 3: three SIMULATED GPUs, 4 shards each by default"

j=$("$TESSEL" slurm-conf --fake-gpus 2 --node n9 --json)
is "$(printf '%s' "$j" | jq -r '.slurm_conf')" "$(sed -n '/^GresTypes/p; /^NodeName/p' "$T/fake" | sed 's/gpu:3,shard:12/gpu:2,shard:8/')" \
    "--json: the same lines as strings (slurm_conf)"
is "$(printf '%s' "$j" | jq -r '.gres_conf' | grep -c '^Name=shard Count=4 File=/dev/nvidia[01] ')" 2 \
    "--json: gres_conf"
is "$(printf '%s' "$j" | jq -r '.tessel_gpus_lua' | grep -c '^-- GPU [01] of n9: memory unknown')" 2 \
    "--json: tessel_gpus_lua (SIMULATED GPUs without a memory: no gpu() line)"

# Slurm accepts the pasted lines (device files made here stand for /dev/nvidia*).
mknod "$T/d0" c 1 3 && mknod "$T/d1" c 1 3 || missing "mknod"
sed -n '/^AutoDetect/,/^$/p' "$T/nvml" |
    sed "s|/dev/nvidia\[0-1\]|$T/d[0-1]|; s|/dev/nvidia\([01]\)|$T/d\1|" >"$T/gres.conf"
{
    printf 'ClusterName=t9001\nSlurmctldHost=localhost\nProctrackType=proctrack/linuxproc\n'
    printf 'TaskPlugin=task/none\nSlurmdSpoolDir=%s\nSlurmdParameters=config_overrides\n' "$T"
    printf 'PartitionName=p Nodes=n7\n'
    sed -n '/^GresTypes/p; /^NodeName/p' "$T/nvml"
} >"$T/slurm.conf"
parsed=$(SLURM_CONF=$T/slurm.conf timeout 60 slurmd -G -N n7 2>&1)
is "$(printf '%s\n' "$parsed" | grep -c 'Gres Name=shard Type=(null) Count=8 Index=[01]')" 2 \
    "slurmd -G reads 8 shards on each GPU from the printed gres.conf"
is "$(printf '%s\n' "$parsed" | grep -c 'Gres Name=gpu Type=(null) Count=1 Index=[01]')" 2 \
    "slurmd -G reads the two GPUs"

# Bad input: one line, exit status 2 (usage) or 1 (no GPU), nothing on stdout.
for bad in "--fake-gpus 0" "--fake-gpus x" "--fake-gpus 17" "--shards-per-gpu 0" \
           "--node a/b" "--bogus" "extra"; do
    o=$("$TESSEL" slurm-conf $bad 2>"$T/err")
    rc=$?
    is "$rc:$(printf '%s' "$o" | wc -c):$(wc -l <"$T/err")" "2:0:1" "slurm-conf $bad: usage error, one line: $(cat "$T/err")"
done
o=$(LD_LIBRARY_PATH=$T "$TESSEL" slurm-conf 2>"$T/err")
is "$?:$(printf '%s' "$o" | wc -c)" "1:0" "no NVML: exit 1, nothing printed"
grep -q "no GPUs found: NVML" "$T/err"
ok $? "no NVML: says so ($(cat "$T/err"))"
done_testing
