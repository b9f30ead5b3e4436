#!/bin/sh
# t7003-console-history-fields.t - GET /v1/history?fields=: only the columns asked for (the
# console asks for those its charts draw), "t" always; each series keeps its name (and a GPU's
# index); the values are those of the full answer, column for column; without fields the answer
# is unchanged; the kept answers (histcache.h) are per set of columns, so a narrow answer never
# comes back for a full request nor the other way round; reals are written short (71.48, not
# 71.480000000000004); an unknown or empty column name is 400 invalid_value, one line naming the
# columns there are.  The store is seeded through the real write path (tessel-hist-seed).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
for t in curl jq; do
    command -v $t >/dev/null || missing "$t is needed"
done
SEED=$TESSEL_BUILD/tests/daemon/tessel-hist-seed
[ -x "$TESSEL_BUILD/bin/tesseld" ] && [ -x "$SEED" ] || missing "tesseld or tessel-hist-seed not built"

td_setup
td_start --fake-gpus 2xT4:16G --no-cgroups
UUID0=$(curl -s -H "Authorization: Bearer $TD_ADMIN" "$TD_URL/v1/gpus" | jq -r '.gpus[0].uuid')
td_stop
# GPU 0 busy 71.48 % (a real that %.17g writes as 71.480000000000004), GPU 1 idle.
printf '%s\n' "gpu $UUID0 71.48 0 1000 2000 500 1 0" "gpu GPU-seeded-idle - 1 0 0 0 0 0" \
    "queue default - 0 1000 2000 500 1 2" "user alice - 0 1000 2000 500 1 2" >"$TD/series"
"$SEED" "$TD/data/tessel.db" 10s 8d 8d <"$TD/series"
ok $? "8 days of 10 s samples seeded through the write path"
td_start --fake-gpus 2xT4:16G --no-cgroups

hist() { api GET "/v1/history?$1"; }
ALL='["busy","busy_max","idle","mem_alloc","mem_used","milli","name","pending","running","samples","t"]'
# The full answer first (kept by tesseld), then the console's narrow one, then the full again:
# each has its own columns, from its own kept entry.
hist "scope=gpu&range=1w"
is "$CODE/$(jget '[.series[] | keys - ["gpu"]] | unique | map(tojson) | join(" ")')" "200/$ALL" \
    "without fields: every column"
cp "$TD/out" "$TD/full"
GPUF=t,samples,idle,busy,mem_used,milli
hist "scope=gpu&range=1w&fields=$GPUF"
cp "$TD/out" "$TD/narrow"
is "$CODE/$(jget '[.series[] | keys - ["gpu"]] | unique | map(tojson) | join(" ")')" \
    '200/["busy","idle","mem_used","milli","name","samples","t"]' \
    "fields=$GPUF: those columns and the name"
is "$(jget ".series[] | select(.name == \"$UUID0\") | .gpu")" 0 "and a GPU's index"
# The same rows (a 10-minute boundary may fall between the two answers: then ask both again).
same() {
    jq -c --arg c "$1" '[.start, (.series[] | [.name, .gpu, .[$c]])]' "$TD/$2"
}
agree=1
for try in 1 2 3; do
    agree=0
    for c in t samples idle busy mem_used milli; do
        [ "$(same "$c" full)" = "$(same "$c" narrow)" ] || agree=1
    done
    [ $agree = 0 ] && break
    hist "scope=gpu&range=1w"
    cp "$TD/out" "$TD/full"
    hist "scope=gpu&range=1w&fields=$GPUF"
    cp "$TD/out" "$TD/narrow"
done
ok $agree "the narrow answer's columns equal the full answer's, name by name"
hist "scope=gpu&range=1w"
is "$(jget '[.series[] | keys - ["gpu"]] | unique | map(tojson) | join(" ")')" "$ALL" \
    "the full answer again after the narrow one: every column (kept answers are per column set)"
hist "scope=gpu&range=1w&fields=$GPUF"
is "$(jget '[.series[] | keys - ["gpu"]] | unique | map(tojson) | join(" ")')" \
    '["busy","idle","mem_used","milli","name","samples","t"]' "and the narrow one again: still narrow"

# t always comes; a column named twice is once; the scope's other parts as before.
hist "scope=queue&range=1d&fields=milli,milli"
is "$CODE/$(jget '.series[] | select(.name == "default") | keys | join(",")')" "200/milli,name,t" \
    "fields=milli,milli for the queues: t and milli, once each"
is "$(jget '.series[] | select(.name == "default") | [.milli[0], (.t | length > 1000)] | @csv')" \
    "500,true" "the queue's day of 1-minute milli-GPU"
hist "scope=user&range=1h&fields=pending&name=alice"
is "$(jget '.series[0] | [.name, (keys | join(","))] | @csv')" '"alice","name,pending,t"' \
    "fields with a name: alice's series, t and pending"

# Short reals: the seeded 71.48 % is written as 71.48.
hist "scope=gpu&range=1h&fields=busy&name=$UUID0"
grep -q '71\.48[],]' "$TD/out" && ! grep -qE '[0-9]\.[0-9]{6,}' "$TD/out"
ok $? "reals are written short (71.48, not 71.480000000000004)"
is "$(jget '[.series[0].busy[] | select(. == 71.48)] | length > 300')" true \
    "and read back as 71.48 ($(jget '.series[0].busy | length') points)"

# Bad input: 400 invalid_value on field "fields", one line naming the columns there are.
for q in "fields=" "fields=bogus" "fields=t,,busy" "fields=busy," "fields=Busy" "fields=busy%20" \
    "fields=t%0Abusy"; do
    hist "scope=gpu&range=1h&$q"
    is "$CODE/$(jget .error.code)/$(jget .error.field)" "400/invalid_value/fields" \
        "?$q: 400 ($(jget .error.message))"
    msg=$(jget .error.message)
    case $msg in
    *"mem_used"*"pending"*) ok 0 "?$q: the message lists the columns" ;;
    *) ok 1 "?$q: the message lists the columns ($msg)" ;;
    esac
done
hist "scope=gpu&range=1h&fields=nope"
case $(jget .error.message) in
*"'nope'"*) ok 0 "the unknown column is named" ;;
*) ok 1 "the unknown column is named ($(jget .error.message))" ;;
esac
td_stop; ok $? "tesseld stops cleanly (no sanitizer report)"
done_testing
