#!/bin/sh
# t1000-sched-sim.t - tessel-sim replays the Alibaba trace under the FGD
# paper's protocol (a reduced load, so that it runs in a second under ASan),
# reads pod lists by their header, and rejects bad input with one line that
# names the file and line, and a non-zero exit.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
SIM="$TESSEL_BUILD/bin/tessel-sim"
TR="$TESSEL_SHARED/traces/alibaba-gpu-2023"
[ -x "$SIM" ] || missing "no $SIM"
[ -r "$TR/openb_pod_list_default.csv" ] || missing "no trace in $TR"
N="$TR/openb_node_list_gpu_node.csv"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# 1. CSV: the header and one row per whole percent of arrived load
"$SIM" --nodes "$N" --pods "$TR/openb_pod_list_default.csv" --policy fgd,tessel \
    --seeds 42 --load 15 --csv >"$T/out" 2>"$T/err"
ok $? "a 15 % replay of the default trace runs"
is "$(head -n 1 "$T/out")" "policy,seed,arrived_pct,alloc_pct,frag_ratio_pct" "CSV header"
is "$(grep -c '^fgd,42,' "$T/out")" 15 "fgd: a row for each percent 1..15"
is "$(grep -c '^tessel,42,' "$T/out")" 15 "tessel: a row for each percent 1..15"
# nothing fails at 15 % of the cluster: allocation tracks arrival within 1 point
bad=$(awk -F, 'NR > 1 && ($4 < $3 - 1 || $4 > $3 + 1)' "$T/out" | head -n 1)
is "$bad" "" "allocation follows arrival at low load"
is "$(grep -c '^tessel,42,15,' "$T/out")" 1 "the last row is at 15 %"

# 2. the same run twice gives the same figures (seeded, no clock)
"$SIM" --nodes "$N" --pods "$TR/openb_pod_list_default.csv" --policy fgd --seeds 42 \
    --load 15 --csv >"$T/again"
is "$(grep '^fgd' "$T/out" | md5sum)" "$(grep '^fgd' "$T/again" | md5sum)" "same seed, same rows"

# 3. the human table: means at 80/90/100/130 that the load reaches, and decisions/s
"$SIM" --nodes "$N" --pods "$TR/openb_pod_list_default.csv" --seeds 42-43 --load 10 >"$T/table"
ok $? "the table form runs with the default policy"
is "$(awk 'NR == 1 {print $1, $NF}' "$T/table")" "policy decisions/s" "table header"
is "$(awk 'NR == 2 {print $1}' "$T/table")" "tessel" "without --policy: tessel"

# 4. pod lists with only the first five columns, in another order
printf 'gpu_milli,num_gpu,memory_mib,cpu_milli,name\n' >"$T/five.csv"
tail -n +2 "$TR/openb_pod_list_default.csv" | head -n 400 |
    awk -F, '{print $5 "," $4 "," $3 "," $2 "," $1}' >>"$T/five.csv"
"$SIM" --nodes "$N" --pods "$T/five.csv" --policy bestfit --seeds 1 --load 5 --csv >"$T/five.out"
ok $? "a five-column pod list, columns reordered"
is "$(wc -l <"$T/five.out" | tr -d ' ')" 6 "header and 5 rows"

# 5. bad input: one line naming file and line, exit status non-zero
err() { # err EXPECTED-SUBSTRING DESCRIPTION -- ARGS...
    want=$1 desc=$2
    shift 3
    "$SIM" "$@" >"$T/o" 2>"$T/e"
    rc=$?
    lines=$(wc -l <"$T/e" | tr -d ' ')
    if [ $rc -ne 0 ] && [ "$lines" = 1 ] && grep -qF -- "$want" "$T/e"; then
        ok 0 "$desc"
    else
        ok 1 "$desc"
        diag "rc=$rc lines=$lines: $(cat "$T/e")"
    fi
}
err "$T/missing.csv: No such file" "a missing pod list" -- \
    --nodes "$N" --pods "$T/missing.csv"
cp "$T/five.csv" "$T/bad.csv"
printf 'x,1,2\n' >>"$T/bad.csv"
err "$T/bad.csv:402: 3 columns" "a short row names its line" -- \
    --nodes "$N" --pods "$T/bad.csv"
head -n 10 "$T/five.csv" >"$T/bad2.csv"
printf '500,1,1024,lots,p\n' >>"$T/bad2.csv"
err "$T/bad2.csv:11: cpu_milli: 'lots'" "a non-number names its column and line" -- \
    --nodes "$N" --pods "$T/bad2.csv"
head -n 10 "$T/five.csv" >"$T/bad3.csv"
printf '500,2,1024,1000,p\n' >>"$T/bad3.csv"
err "$T/bad3.csv:11: gpu_milli 500 below 1000 with num_gpu 2" "a fraction of several GPUs" -- \
    --nodes "$N" --pods "$T/bad3.csv"
printf 'name,cpu_milli,memory_mib\n' >"$T/nohdr.csv"
err "$T/nohdr.csv:1: no 'num_gpu' column" "a missing column" -- \
    --nodes "$N" --pods "$T/nohdr.csv"
err "unknown policy 'fastest'" "an unknown policy" -- \
    --nodes "$N" --pods "$T/five.csv" --policy bestfit,fastest
: >"$T/empty.csv"
err "$T/empty.csv:1: empty file" "an empty node list" -- \
    --nodes "$T/empty.csv" --pods "$T/five.csv"
done_testing
