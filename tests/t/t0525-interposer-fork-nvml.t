#!/bin/sh
# t0525-interposer-fork-nvml.t - fork-safety: a process that asks NVML for
# memory and then forks (vLLM, multiprocessing pools, DataLoader workers
# started after a memory check) leaves a child that can use CUDA, in a slice
# exactly as outside it, because no NVML call initialises CUDA.  The fake
# driver models the real rule (a child of a process that called cuInit gets
# CUDA_ERROR_NOT_INITIALIZED = 3 from every call, cuInit included), so a
# hook that initialises CUDA behind the program's back fails here.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/interposer/tcu.sh"
tcu_need_nvml
G=1073741824
export TESSEL_CUDA_MEM_LIMIT=1G TESSEL_SLICE="$TMP/slice"

# forkhold: the child runs cuInit, retains and sets the primary context,
# allocates 100 MiB ("forkhold rc=R": R is the allocation's CUresult).
bare=$(probe_bare nvml calls:cuInit forkhold:100M reap </dev/null 2>&1)
in=$(probe nvml calls:cuInit forkhold:100M reap </dev/null 2>&1)
is "$(val rc "$(printf '%s\n' "$bare" | grep '^forkhold')")" 0 \
    "without the interposer: NVML query, fork, the child's cuInit + context + 100 MiB succeed"
is "$(val rc "$(printf '%s\n' "$in" | grep '^forkhold')")" 0 \
    "in a slice: the same child succeeds too"
is "$(printf '%s\n' "$in" | grep '^ctx')" "ctx rc=0" "in a slice: the child's cuInit and context succeed"
is "$(printf '%s\n' "$in" | grep '^calls cuInit')" "calls cuInit 0" \
    "the NVML query made no cuInit in the parent"
is "$(val total "$(printf '%s\n' "$in" | grep '^nvml')")" $G \
    "the parent's NVML view, without CUDA, still shows the 1 GiB slice"
is "$(printf '%s\n' "$in" | grep '^reap')" "reap status=0" "the child exits cleanly"

# The rule itself, modelled by the fake: after the parent's own cuInit, a
# fork child cannot use CUDA, with or without the interposer (same codes).
bare=$(probe_bare ctx forkhold:100M reap </dev/null 2>&1)
in=$(probe ctx forkhold:100M reap </dev/null 2>&1)
is "$(printf '%s\n' "$bare" | grep '^ctx' | tr '\n' ' ')" "ctx rc=0 ctx rc=3 " \
    "without the interposer: the parent initialised, the child's cuInit fails with 3"
is "$(printf '%s\n' "$in" | grep '^ctx' | tr '\n' ' ')" "ctx rc=0 ctx rc=3 " \
    "in a slice: the same codes"
is "$(val rc "$(printf '%s\n' "$in" | grep '^forkhold')")" \
    "$(val rc "$(printf '%s\n' "$bare" | grep '^forkhold')")" \
    "in a slice: the child's allocation fails with the driver's code ($(val rc "$(printf '%s\n' "$bare" | grep '^forkhold')"))"

# multiprocessing "spawn" (fork + exec) after NVML and CUDA in the parent:
# the new image initialises CUDA afresh and allocates within the slice.
bare=$(probe_bare nvml ctx spawn:100M 2>&1)
in=$(probe nvml ctx spawn:100M 2>&1)
is "$(printf '%s\n' "$bare" | grep -E '^(alloc|spawn)' | tr '\n' ' ')" "alloc mem rc=0 spawn status=0 " \
    "without the interposer: the spawned child allocates"
is "$(printf '%s\n' "$in" | grep -E '^(alloc|spawn)' | tr '\n' ' ')" "alloc mem rc=0 spawn status=0 " \
    "in a slice: the spawned child allocates too"

# Per-ordinal limits and a device whose ordinal NVML cannot tell without
# CUDA: the lowest limit (conservative); named by UUID: its own limit.
out=$(TESSEL_FAKE_GPUS=2xT4:8G TESSEL_FAKE_STATE="$TMP/two" TESSEL_SLICE="$TMP/slice2" \
    TESSEL_CUDA_MEM_LIMIT_1=512M probe nvml:0 nvml:1 calls:cuInit)
is "$(printf '%s\n' "$out" | grep '^nvml' | tr ' ' '\n' | grep '^total=' | tr '\n' ' ')" \
    "total=$((512 * MiB)) total=$((512 * MiB)) " \
    "limits 1 GiB / 512 MiB, ordinals unknown to NVML: both devices show the lower, 512 MiB"
is "$(printf '%s\n' "$out" | grep '^calls cuInit')" "calls cuInit 0" "still no cuInit"
u1=$(TESSEL_FAKE_GPUS=2xT4:8G TESSEL_FAKE_STATE="$TMP/two" probe_bare ctx uuid:1 | sed -n "s/^uuid \([^ ]*\) .*/\1/p")
out=$(TESSEL_FAKE_GPUS=2xT4:8G TESSEL_FAKE_STATE="$TMP/two" TESSEL_SLICE="$TMP/slice3" \
    CUDA_VISIBLE_DEVICES="$u1" TESSEL_CUDA_MEM_LIMIT_0=512M probe nvml:0 nvml:1)
is "$(printf '%s\n' "$out" | grep '^nvml' | tr ' ' '\n' | grep '^total=' | tr '\n' ' ')" \
    "total=$((8 * G)) total=$((512 * MiB)) " \
    "CUDA_VISIBLE_DEVICES=<uuid of GPU 1>: GPU 1 is ordinal 0 (512 MiB), GPU 0 is not the slice's"
done_testing
