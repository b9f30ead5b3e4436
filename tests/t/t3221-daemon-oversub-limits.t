#!/bin/sh
# t3221-daemon-oversub-limits.t - what bounds a job's oversubscription (security review F2,
# F3): when tesseld runs with cgroups, a job with gpu_mem_oversubscribe must have mem (its
# memory cgroup is the hard bound of what its processes spill; the slice file's count is the
# job's to rewrite), and gpu_mem_oversubscribe is per GPU: times the job's GPUs it must fit
# its mem and the node's memory.  Needs root and cgroup controllers (the first part).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
[ "$(id -u)" = 0 ] || missing "not root: tesseld cannot create cgroups"

td_setup
td_start --fake-gpus 2xT4:8G || missing "tesseld did not start"
api GET /v1/nodes
[ "$(jget '.nodes[0].cgroups')" = none ] &&
    missing "no usable cgroup controllers (neither v2 nor v1 memory+cpu+freezer)"
NODE_MEM=$(jget '.nodes[0].mem')
api GET /v1/jobs
before=$(jget '.jobs | length')
api POST /v1/jobs '{"argv":["true"],"gpu":0.5,"gpu_mem":"1G","gpu_mem_oversubscribe":"512M"}'
is "$CODE $(jget .error.field)" "400 mem" "with cgroups, gpu_mem_oversubscribe without mem: 400 (field mem)"
ok $(jget .error.message | grep -q 'needs mem' && echo 0 || echo 1) "the message says it needs mem"
api GET /v1/jobs
is "$(jget '.jobs | length')" "$before" "nothing was stored"
api POST /v1/jobs '{"argv":["true"],"gpu":0.5,"gpu_mem":"1G","mem":"1G","gpu_mem_oversubscribe":"512M"}'
is "$CODE $(jget .gpu_mem_oversubscribe) $(jget .mem)" "201 536870912 1073741824" \
    "with mem: accepted"
api POST /v1/jobs '{"argv":["true"],"gpus":2,"mem":"1G","gpu_mem_oversubscribe":"512M"}'
is "$CODE" 201 "2 GPUs x 512M within 1G of mem: accepted"
api POST /v1/jobs '{"argv":["true"],"gpus":2,"mem":"1G","gpu_mem_oversubscribe":"513M"}'
is "$CODE $(jget .error.field)" "400 gpu_mem_oversubscribe" "2 GPUs x 513M above 1G of mem: 400"
api POST /v1/jobs '{"argv":["true"],"gpu":0.5}'
is "$CODE" 201 "a job without oversubscription needs no mem"
td_stop; ok $? "tesseld stops cleanly"

# Without cgroups no mem is needed (docs/security.md: nothing but each process's own count
# bounds the spill then), but the node's memory is: per GPU, times the GPUs.
td_start --fake-gpus 2xT4:8G --no-cgroups || missing "tesseld did not start"
HALF=$((NODE_MEM / 2 / 1048576 + 1))
api POST /v1/jobs "{\"argv\":[\"true\"],\"gpu\":0.5,\"gpu_mem_oversubscribe\":\"${HALF}M\"}"
is "$CODE" 201 "--no-cgroups: no mem needed; one GPU x ${HALF} MiB fits the node"
api POST /v1/jobs "{\"argv\":[\"true\"],\"gpus\":2,\"gpu_mem_oversubscribe\":\"${HALF}M\"}"
is "$CODE $(jget .error.field)" "422 gpu_mem_oversubscribe" \
    "2 GPUs x ${HALF} MiB is past the node's memory: 422"
td_stop; ok $? "tesseld stops cleanly"
done_testing
