#!/bin/sh
# t9011: the web console's overview of a Slurm cluster (tesseld --slurm; docs/slurm-backend.md,
# "The cluster's GPUs") in a real browser: Debian's Chromium (headless) driven by playwright-core
# (web/test/cluster.mjs), in the controller's network namespace of the test cluster of
# tests/slurm/cluster.sh (two nodes, two SIMULATED GPUs each, a tessel-node-exporter on each).
# A half-GPU job through tesseld on one node, one sbatch'd directly on the other: the overview
# shows the four GPUs node by node with both slices and the memory they hold; then the other
# node's exporter is stopped and its cards say it is unreachable, with the time of its figures.
# Screenshots go to $TESSEL_BUILD/screenshots/cluster/ (docs/screenshots/console-cluster-*.png
# are copies of them).
# test-timeout: 600
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/local.sh"
. "$TESSEL_SRCDIR/tests/slurm/cluster.sh"

tsc_test_pieces tests/interposer/tcu-probe
PROBE=$PB/tests/interposer/tcu-probe
EXPORTER=$TESSEL_BUILD/bin/tessel-node-exporter
CHROMIUM=${TESSEL_CHROMIUM:-/usr/bin/chromium}
WEBSRC=$TESSEL_SRCDIR/web
[ -x "$EXPORTER" ] || missing "$EXPORTER is not built"
command -v node >/dev/null || missing "node"
[ -x "$CHROMIUM" ] || missing "no Chromium at $CHROMIUM (scripts/install-deps.sh --browser)"
[ -f "$WEBSRC/node_modules/playwright-core/package.json" ] ||
    missing "web/node_modules is missing: (cd web && npm ci)"
[ -f "$TESSEL_BUILD/share/tessel/web/index.html" ] || missing "console not installed (run make)"
tsc_test_setup tslra tslrb
tsc_start_sim
tsc_exporter n1
tsc_exporter n2

tsc_tesseld --fake-gpus 2xFakeGPU:8G --slurm-shards 4 --slurm-node-poll 1
ADMIN=$(cat "$TD/data/admin.token")
adm() { curl -s -o "$TD/out" --unix-socket "$TD_SOCK" "http://localhost$1"; }

# The jobs: tslra's through tesseld, tslrb's sbatch'd directly on the other node.
GO=$TSC/out/go
as tslra "$CLIENV $TESSEL_BUILD/bin/tessel run -d --gpu 0.5 -- $PROBE ctx alloc:mem:768M waitfile:$GO" \
    >"$TD/ja" 2>&1
JA=$(grep -o '[0-9][0-9]*' "$TD/ja" | head -n 1)
adm "/v1/jobs/$JA"
SA=$(jq -r .slurm_id "$TD/out")
tsc_wait_state "$SA" RUNNING
NA=$(tsc squeue -h -j "$SA" -o %N)
OTHER=n1
[ "$NA" = n1 ] && OTHER=n2
SB=$(tsc su -s /bin/sh tslrb -c "cd /tmp && env LD_LIBRARY_PATH=$FAKE TESSEL_FAKE_GPUS=$TESSEL_FAKE_GPUS \
    TESSEL_FAKE_CTX_MEM=0 TESSEL_FAKE_STATE=$TSC/node/fake-state SLURM_CONF=$SLURM_CONF \
    sbatch --parsable -o $TSC/out/%j.out -w $OTHER --gres=shard:2 \
    --wrap='$PROBE ctx alloc:mem:512M waitfile:$GO'")
tsc_wait_state "$SB" RUNNING
# used SLURM_ID: the slice's used bytes in GET /v1/gpus (0 when absent).
used() {
    adm /v1/gpus
    jq -r "[.gpus[].slices[] | select(.slurm_id == $1) | .mem_used][0] // 0" "$TD/out"
}
wait_for "[ \$(used $SA) -ge $((768 << 20)) ] && [ \$(used $SB) -ge $((512 << 20)) ]"
ok $? "the scene: job $JA (Slurm $SA) on $NA and Slurm job $SB on $OTHER hold their memory"

SHOTS=$TESSEL_BUILD/screenshots/cluster
rm -rf "$SHOTS"
mkdir -p "$SHOTS"
# browse PHASE: run web/test/cluster.mjs in the controller's namespace (tesseld's 127.0.0.1).
browse() {
    nsenter --net=/run/netns/$tsc_ns-ctl env TESSEL_URL="http://$(cat "$TD/data/tesseld.addr")" \
        TESSEL_ADMIN="$ADMIN" SHOTS="$SHOTS" PHASE="$1" JOB="$JA" SLURM_ONLY="$SB" \
        NODE_DOWN="$OTHER" CHROMIUM="$CHROMIUM" HOME="$TD" \
        timeout 300 node "$WEBSRC/test/cluster.mjs" >"$TD/browser-$1.out" 2>&1
    st=$?
    while IFS= read -r line; do
        case $line in
        "PASS "*) ok 0 "${line#PASS }" ;;
        "FAIL "*) ok 1 "${line#FAIL }" ;;
        *) diag "$line" ;;
        esac
    done <"$TD/browser-$1.out"
    is "$st" 0 "the browser session ($1) ran to its end"
}
browse up

eval "kill \$EXP_$OTHER"
adm /v1/gpus
wait_for "adm /v1/gpus; [ \"\$(jq -r '.nodes[] | select(.name == \"$OTHER\") | .state' $TD/out)\" = unreachable ]"
ok $? "$OTHER's exporter stopped: tesseld shows $OTHER unreachable"
browse down
[ -s "$SHOTS/console-cluster-overview.png" ] && [ -s "$SHOTS/console-cluster-node-down.png" ]
ok $? "screenshots saved in $SHOTS"

touch "$GO"
tsc_wait_state "$SA" COMPLETED FAILED
tsc_wait_state "$SB" COMPLETED FAILED
kill -TERM "$TD_PID"
wait "$TD_PID"
ok $? "tesseld stops cleanly"
done_testing
