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
for _c in curl jq su node; do
    command -v $_c >/dev/null || missing "$_c"
done
[ -x "$CHROMIUM" ] || missing "no Chromium at $CHROMIUM (scripts/install-deps.sh --browser)"
[ -f "$WEBSRC/node_modules/playwright-core/package.json" ] ||
    missing "web/node_modules is missing: (cd web && npm ci)"
[ -f "$TESSEL_BUILD/share/tessel/web/index.html" ] || missing "console not installed (run make)"
local_account tslra && local_account tslrb || missing "useradd for the accounts tslra, tslrb"

td_setup
chmod 755 "$TD"
EXP_PIDS=
trap 'td_cleanup; for p in $EXP_PIDS; do kill $p 2>/dev/null; done; tsc_stop' EXIT
export TESSEL_FAKE_GPUS=2xFakeGPU:8G TESSEL_FAKE_CTX_MEM=0
export LD_LIBRARY_PATH=$FAKE
TSC_PLUGIN_ARGS="interposer=$PRE nvml=$FAKE/libnvidia-ml.so.1 nvml_timeout=5"
tsc_start "$PLUGIN" || missing "the Slurm cluster: $TSC_WHY"
diag "SIMULATED GPUs: 2 per node (fake NVML and driver, $TESSEL_FAKE_GPUS), 4 shards each"
for n in n1 n2; do
    tsc_on "$n" sh -c ': >>"$TESSEL_FAKE_STATE" && chmod 666 "$TESSEL_FAKE_STATE"' ||
        missing "the fake driver's state file on $n"
    nsenter --target "$(cat "$TSC/slurmd-$n.pid")" --net --uts --mount \
        "$EXPORTER" --nvml "$FAKE/libnvidia-ml.so.1" >>"$TD/exporter-$n.log" 2>&1 &
    eval "EXP_$n=\$!"
    EXP_PIDS="$EXP_PIDS $!"
done

TD_SOCK=$TD/tesseld.sock
nsenter --net=/run/netns/$tsc_ns-ctl "$TESSEL_BUILD/bin/tesseld" --data-dir "$TD/data" \
    --listen 127.0.0.1:0 --socket "$TD_SOCK" --fake-gpus 2xFakeGPU:8G --no-cgroups --slurm \
    --slurm-conf "$TSC/etc/slurm.conf" --slurm-shards 4 --slurm-timeout 15 \
    --slurm-node-poll 1 >>"$TD/tesseld.log" 2>&1 &
TD_PID=$!
TD_PIDS="$TD_PIDS $TD_PID"
wait_for "[ -s '$TD/data/tesseld.addr' ] || ! kill -0 $TD_PID 2>/dev/null"
[ -s "$TD/data/tesseld.addr" ] || {
    sed 's/^/#   /' "$TD/tesseld.log"
    missing "tesseld --slurm did not start"
}
ADMIN=$(cat "$TD/data/admin.token")
adm() { curl -s -o "$TD/out" --unix-socket "$TD_SOCK" "http://localhost$1"; }
CLIENV="TESSEL_URL=unix:$TD_SOCK XDG_RUNTIME_DIR=/nonexistent HOME=/nonexistent \
TESSEL_CONFIG=/nonexistent/c LD_LIBRARY_PATH=$FAKE TESSEL_FAKE_CTX_MEM=0 \
TESSEL_FAKE_STATE=$TSC/node/fake-state"

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
