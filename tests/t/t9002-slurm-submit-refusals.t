#!/bin/sh
# t9002: bad --gpu-mem/--gpu-share input is refused at submission, by sbatch, srun and salloc
# alike, with one line that says why, and nothing is queued: the syntax by spank_tessel.so where
# the job is submitted, what needs the cluster's GPUs (their memory, the shards' part) by
# contrib/slurm/job_submit.lua in slurmctld, fed by `tessel slurm-conf` of each node; and its
# whole_gpus_as_shards() rule: a whole-GPU job waits for a GPU without shard jobs.  The
# cluster of tests/slurm/cluster.sh: a controller and two nodes in network namespaces, two
# SIMULATED GPUs of 8 GiB per node, 4 shards each.
# test-timeout: 400
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/slurm/cluster.sh"

command -v jq >/dev/null || missing "jq (scripts/install-deps.sh)"
[ -e /usr/lib/x86_64-linux-gnu/slurm-wlm/job_submit_lua.so ] ||
    missing "slurmctld's job_submit/lua (Debian's slurmctld)"
# What slurmd and the jobs load comes from the plain sub-build under ASan (tsc_test_pieces).
TESSEL=$TESSEL_BUILD/bin/tessel
tsc_test_pieces "$TESSEL" "$TESSEL_BUILD/tests/fake/libnvidia-ml.so.1" tests/interposer/tcu-probe
PROBE=$PB/tests/interposer/tcu-probe

trap 'tsc_stop' EXIT
trap 'exit 1' INT TERM
export TESSEL_FAKE_GPUS=2xFakeGPU:8G TESSEL_FAKE_CTX_MEM=0
# What an admin pastes: each node's tessel_gpus.lua lines, from its NVML (SIMULATED here).
TSC_GPUS_LUA=
for n in n1 n2; do
    l=$(LD_LIBRARY_PATH=$TESSEL_BUILD/tests/fake "$TESSEL" slurm-conf --node $n --json |
        jq -r .tessel_gpus_lua) || missing "tessel slurm-conf --json"
    TSC_GPUS_LUA="$TSC_GPUS_LUA$l
"
done
is "$(printf '%s' "$TSC_GPUS_LUA" | grep -c '^gpu("n[12]", [01], 8589934592, 4)$')" 4 \
    "tessel slurm-conf prints each node's GPUs for job_submit.lua (8 GiB, 4 shards each)"
TSC_JOB_SUBMIT=$TESSEL_SRCDIR/contrib/slurm/job_submit.lua
TSC_PLUGIN_ARGS="interposer=$PRE nvml=$FAKE/libnvidia-ml.so.1"
export LD_LIBRARY_PATH=$FAKE
tsc_start "$PLUGIN" || missing "the Slurm cluster: $TSC_WHY"
diag "SIMULATED GPUs: 2 per node (fake NVML and driver, $TESSEL_FAKE_GPUS), 4 shards each"
O=$TSC/out

# submit CMD ARGS...: CMD (sbatch, srun, salloc) with ARGS and a job that does nothing.
submit() {
    _c=$1
    shift
    case $_c in
    sbatch) tsc sbatch "$@" -o /dev/null --wrap true ;;
    *) tsc "$_c" "$@" true ;;
    esac
}

j0=$(tsc sbatch --parsable -o /dev/null --wrap true)
tsc_wait_state "$j0" COMPLETED || missing "a plain sbatch job does not complete"
# Each bad input: "OPTIONS|what the line says".
while IFS='|' read -r opts says; do
    [ -n "$opts" ] || continue
    for cmd in sbatch srun salloc; do
        before=$(tsc squeue -h -o %i | wc -l)
        # shellcheck disable=SC2086
        out=$(submit $cmd $opts </dev/null 2>&1)
        rc=$?
        lines=$(printf '%s\n' "$out" | grep -c 'tessel: ')
        said=$(printf '%s\n' "$out" | grep -m1 'tessel: ')
        queued=$(tsc squeue -h -o %i | wc -l)
        [ "$cmd$opts" = "sbatch--gpu-mem=1G" ] && printf "%s\n" "$out" | sed "s/^/# sbatch $opts says: /"
        ok $([ $rc -ne 0 ] && [ "$lines" = 1 ] && printf '%s' "$said" | grep -qF -- "$says" &&
            [ "$queued" = "$before" ]; echo $?) \
            "$cmd $opts: refused at submission (exit $rc), nothing queued ($queued), one line: $said"
    done
done <<'BAD'
--gres=shard:1 --gpu-mem=abc|tessel: --gpu-mem=abc:
--gres=shard:1 --gpu-mem=8|a size needs a unit
--gres=shard:1 --gpu-share=1.5|a share of one GPU must be above 0 and at most 1
--gres=gpu:1 --gpu-share=0|a share of one GPU must be above 0 and at most 1
--gpu-mem=1G|tessel: --gpu-mem needs GPUs or shards (--gres=gpu:N or --gres=shard:N)
--gpu-share=0.5|tessel: --gpu-share needs GPUs or shards
--gres=gpu:1 --gpu-mem=9G|tessel: --gpu-mem 9.00 GiB is above the memory of every GPU of the cluster (at most 8.00 GiB)
--gres=shard:2 --gpu-mem=5G|tessel: --gpu-mem 5.00 GiB is above the part of 2 shards of every GPU of the cluster (at most 4.00 GiB)
--gres=shard:1 --gpu-share=0.5|tessel: --gpu-share 0.5 is above the part of 1 shard of every GPU of the cluster (at most 0.25)
BAD
is "$(tsc squeue -h -o %i | wc -l)" 0 "squeue shows no job after every refusal"
is "$(tsc sbatch --parsable -o /dev/null --wrap true)" "$((j0 + 1))" \
    "no refused submission took a job id"

# What holds on some GPU is accepted, and runs.
for cmd in srun salloc; do
    submit $cmd --gres=shard:2 --gpu-mem=4G >/dev/null 2>&1
    ok $? "$cmd --gres=shard:2 --gpu-mem=4G (the shards' part exactly): accepted and run"
done
j=$(tsc sbatch --parsable --gres=shard:4 --gpu-mem=8G --gpu-share=1 -o "$O/ok" --wrap 'echo ran')
tsc_wait_state "$j" COMPLETED
ok $? "sbatch --gres=shard:4 --gpu-mem=8G --gpu-share=1 (a whole GPU's shards): accepted, completes"
is "$(cat "$O/ok")" ran "its job ran"
out=$(submit srun --gres=shard:4 --gpu-share=100% 2>&1)
ok $? "srun --gres=shard:4 --gpu-share=100% (all of a GPU's shards): accepted ($out)"
# ---- a whole-GPU job waits for the GPU to empty (whole_gpus_as_shards) -------------------
# Slurm 22.05 counts gpu and shard apart: without the rule a gpu:1 job may be given a GPU whose
# shards are in use.  With it, gpu:1 asks for all 4 shards of one GPU.
GO=$O/go
ja=$(tsc sbatch --parsable -w n1 --gres=shard:2 -o "$O/ja" --wrap "$PROBE waitfile:$GO")
jb=$(tsc sbatch --parsable -w n1 --gres=shard:2 -o "$O/jb" --wrap "$PROBE waitfile:$GO")
jf=$(tsc sbatch --parsable -w n1 --gres=shard:4 -o /dev/null --wrap "$PROBE waitfile:$GO")
tsc_wait_state "$ja" RUNNING && tsc_wait_state "$jb" RUNNING && tsc_wait_state "$jf" RUNNING
ok $? "two half-GPU jobs and a job of a GPU's 4 shards run on n1: every shard of its GPUs in use"
j0=$(tsc sbatch --parsable -w n1 --gres=gpu:1 -o "$O/j0" --wrap "echo CVD=\$CUDA_VISIBLE_DEVICES")
tsc_wait_state "$j0" FAILED COMPLETED
# Slurm 22.05 starts it at once on a GPU whose shards are in use; the node refuses it.
is "$(tsc_state "$j0"):$(grep -c '^CVD=' "$O/j0"):$(grep -c "tessel: .*GPU [01] has 4 shards in gres.conf .*a whole-GPU job cannot run on it" "$O/j0")" \
    "FAILED:0:1" \
    "without the rule, a gpu:1 job that Slurm starts on a GPU whose shards are in use is refused by the node, with the reason"
tsc scancel "$jf"
tsc_wait_state "$jf" CANCELLED
echo 'whole_gpus_as_shards()' >>"$TSC/etc/tessel_gpus.lua"
jw=$(tsc sbatch --parsable -w n1 --gres=gpu:1 -o "$O/jw" --wrap "echo CVD=\$CUDA_VISIBLE_DEVICES; $PROBE waitfile:$GO")
tsc_wait_state "$jw" RUNNING
ok $? "a whole-GPU job (--gres=gpu:1) runs on n1's empty GPU"
is "$(tsc scontrol show job "$jw" | grep -o 'TresPerNode=[^ ]*')" "TresPerNode=gres:shard:4" \
    "job_submit.lua asked for it as all 4 shards of one GPU"
jw2=$(tsc sbatch --parsable -w n1 --gres=gpu:1 -o "$O/jw2" --wrap "echo CVD=\$CUDA_VISIBLE_DEVICES; $PROBE ctx info")
tsc_wait_reason "$jw2" Resources
is "$(tsc_state "$jw2") $(tsc squeue -h -j "$jw2" -o %r)" "PENDING Resources" \
    "a second whole-GPU job waits: the other GPU still has shard jobs (Slurm alone would run it there)"
touch "$GO"
tsc_wait_state "$jw2" COMPLETED
ok $? "once the shard jobs end, it runs and completes"
is "$(sed -n 's/^CVD=//p' "$O/jw2") $(sed -n 's/^info .*total=\([0-9]*\).*/\1/p' "$O/jw2")" "0 8589934592" \
    "on GPU 0, the GPU the shard jobs had, all of its 8 GiB its own"

# With the rule, a whole-GPU request it cannot turn into shards is refused at submission.
for opts in "--gpus=1" "--gres=gpu:2" "--gres=gpu:tesla:1"; do
    # shellcheck disable=SC2086
    out=$(tsc sbatch $opts -o /dev/null --wrap true </dev/null 2>&1)
    ok $([ $? -ne 0 ] && printf '%s' "$out" | grep -q "tessel: whole GPUs are given as all the shards of one GPU on this cluster.*nothing was queued"; echo $?) \
        "sbatch $opts: refused at submission: $(printf '%s\n' "$out" | grep -m1 tessel)"
done
# The owner of a pending shard job changes it to a whole GPU (scontrol update): the same rule.
jh=$(tsc sbatch --parsable -H -w n1 --gres=shard:1 -o /dev/null --wrap true)
tsc scontrol update JobId="$jh" TresPerNode=gres:gpu:1 >/dev/null 2>&1
is "$(tsc scontrol show job "$jh" | grep -o 'TresPerNode=[^ ]*')" "TresPerNode=gres:shard:4" \
    "scontrol update TresPerNode=gres:gpu:1 of a pending shard job: asked as all 4 shards of one GPU"
out=$(tsc scontrol update JobId="$jh" TresPerNode=gres:gpu:2 2>&1)
ok $([ $? -ne 0 ] && [ "$(tsc scontrol show job "$jh" | grep -o 'TresPerNode=[^ ]*')" = "TresPerNode=gres:shard:4" ]; echo $?) \
    "scontrol update TresPerNode=gres:gpu:2: refused, the job unchanged ($out)"
tsc scancel "$jh"
# tessel_gpus.lua that does not load: whole-GPU jobs are refused (the rule is not silently off).
cp "$TSC/etc/tessel_gpus.lua" "$TSC/etc/tessel_gpus.lua.good"
echo 'gpu(' >>"$TSC/etc/tessel_gpus.lua"
out=$(tsc sbatch --gres=gpu:1 -o /dev/null --wrap true </dev/null 2>&1)
ok $([ $? -ne 0 ] && printf '%s' "$out" | grep -q "tessel: tessel_gpus.lua could not be loaded"; echo $?) \
    "tessel_gpus.lua broken: a whole-GPU job is refused: $(printf '%s\n' "$out" | grep -m1 tessel)"
mv "$TSC/etc/tessel_gpus.lua.good" "$TSC/etc/tessel_gpus.lua"

# ---- --gpu-mem / --gpu-share without GRES as shards (options_as_shards) --------------------
# Every shard here stands for 2 GiB (8 GiB, 4 shards).
echo 'options_as_shards()' >>"$TSC/etc/tessel_gpus.lua"
jm=$(tsc sbatch --parsable -w n2 --gpu-mem=3G -o "$O/jm" --wrap "$PROBE ctx info")
tsc_wait_state "$jm" COMPLETED
is "$(tsc scontrol show job "$jm" | grep -o 'TresPerNode=[^ ]*') $(sed -n 's/^info .*total=\([0-9]*\).*/\1/p' "$O/jm")" \
    "TresPerNode=gres:shard:2 $((3 * 1073741824))" \
    "sbatch --gpu-mem=3G alone: asked as 2 shards of 2 GiB, the job sees 3 GiB"
out=$(tsc srun -w n2 --gpu-share=0.5 $PROBE ctx info </dev/null 2>&1)
is "$(printf '%s\n' "$out" | sed -n 's/^info .*total=\([0-9]*\).*/\1/p')" "$((4 * 1073741824))" \
    "srun --gpu-share=0.5 alone: 2 of 4 shards, the job sees half of the GPU"
out=$(tsc sbatch --gpu-mem=9G -o /dev/null --wrap true </dev/null 2>&1)
ok $([ $? -ne 0 ] && printf '%s' "$out" | grep -q "tessel: --gpu-mem 9.00 GiB is above the memory of every GPU of the cluster (at most 8.00 GiB): nothing was queued"; echo $?) \
    "sbatch --gpu-mem=9G alone: more than a GPU, refused: $(printf '%s\n' "$out" | grep -m1 tessel)"
done_testing
