#!/bin/sh
# t1002-sched-sim-scale.t - placement through the index at 12,130 nodes (the
# trace's nodes ten times over, tessel-sim --node-copies 10): both
# fragmentation-aware policies place every pod while the cluster has room,
# and the same run twice gives the same figures.  (A reduced load, so that it
# runs in seconds under ASan; the index itself is checked against a plain
# scan in src/common/libsched/test/test_index.c.)
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
SIM="$TESSEL_BUILD/bin/tessel-sim"
TR="$TESSEL_SHARED/traces/alibaba-gpu-2023"
[ -x "$SIM" ] || missing "no $SIM"
[ -r "$TR/openb_pod_list_default.csv" ] || missing "no trace in $TR"
N="$TR/openb_node_list_gpu_node.csv"
P="$TR/openb_pod_list_default.csv"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

"$SIM" --nodes "$N" --pods "$P" --policy tessel,fgd --seeds 42 --load 4 --node-copies 10 \
    --csv >"$T/out" 2>"$T/err"
ok $? "12,130 nodes: a 4 % replay runs (tessel, fgd)"
is "$(grep -c '^tessel,42,' "$T/out")" 4 "tessel: a row for each percent 1..4"
is "$(grep -c '^fgd,42,' "$T/out")" 4 "fgd: a row for each percent 1..4"
bad=$(awk -F, 'NR > 1 && ($4 < $3 - 1 || $4 > $3 + 1)' "$T/out" | head -n 1)
is "$bad" "" "every pod placed while there is room: allocation follows arrival"

"$SIM" --nodes "$N" --pods "$P" --policy tessel,fgd --seeds 42 --load 4 --node-copies 10 \
    --csv >"$T/again" 2>/dev/null
is "$(md5sum <"$T/again")" "$(md5sum <"$T/out")" "same seed, same rows"

done_testing
