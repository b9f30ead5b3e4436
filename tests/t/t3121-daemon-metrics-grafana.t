#!/bin/sh
# t3121-daemon-metrics-grafana.t - contrib/grafana/tessel-dashboard.json is valid JSON, and every
# PromQL expression in it names only series a real tesseld exports: each metric selector (the
# dashboard writes every one with braces, which this test enforces) is the name of a sample in a
# scrape of a tesseld with a running slice, a pending job and ended jobs; and a real Prometheus
# that scrapes that tesseld evaluates every expression (Grafana's $instance and
# $__rate_interval filled in) without error and with a non-empty answer.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
for t in curl jq prometheus ss; do
    command -v $t >/dev/null || missing "$t is needed (scripts/install-deps.sh)"
done
DASH="$TESSEL_SRCDIR/contrib/grafana/tessel-dashboard.json"
PROBE=$TESSEL_BUILD/tests/interposer/tcu-probe
[ -x "$TESSEL_BUILD/bin/tesseld" ] || missing "tesseld not built"
[ -x "$PROBE" ] || missing "tcu-probe not built"
[ -f "$DASH" ] || missing "$DASH is missing"

td_setup
jq -e '.title and (.panels | length > 0)' "$DASH" >/dev/null
ok $? "the dashboard is valid JSON with a title and panels"
# Every query text: panel targets, and the template variable's definition.
jq -r '.. | objects | (.expr? // empty), (.definition? // empty)' "$DASH" >"$TD/exprs"
N=$(wc -l <"$TD/exprs")
[ "$N" -ge 20 ]; ok $? "it has $N queries"
bare=$(grep -oE 'tessel_[a-z0-9_]*[^a-z0-9_{]|tessel_[a-z0-9_]*$' "$TD/exprs" | sort -u)
is "$bare" "" "every tessel_ selector is written with braces (so the check below sees it)"
grep -oE '[a-zA-Z_:][a-zA-Z0-9_:]*\{' "$TD/exprs" | tr -d '{' | sort -u >"$TD/names"
is "$(grep -cv '^tessel_' "$TD/names")" 0 "it names only tessel_ series"

# --- a tesseld with something to show ----------------------------------------------------------
G="$TD/go"
mkdir -p "$G"
td_start --fake-gpus 1xT4:8G --no-cgroups
api POST /v1/queues '{"name":"hold","max_gpu_milli":0}'
api POST /v1/jobs '{"argv":["true"],"gpu":0.5,"queue":"hold"}'
api POST /v1/jobs '{"argv":["true"]}'
T=$(jget .id)
api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:100M\",\"waitfile:$G/a\"],\"gpu\":0.5,\"gpu_mem\":\"1G\",\"env\":{\"TESSEL_FAKE_CTX_MEM\":\"64M\"}}"
A=$(jget .id)
wait_for '[ "$(job_state $T)" = succeeded ] && api GET /v1/gpus &&
          [ "$(jget ".gpus[0].slices[0].mem_used")" -gt 0 ] 2>/dev/null'
ok $? "a job ended, a slice holds memory"
curl -s -o "$TD/m" "$TD_URL/metrics"
missing_names=""
while read -r n; do
    grep -qE "^$n[{ ]" "$TD/m" || missing_names="$missing_names $n"
done <"$TD/names"
is "$missing_names" "" "each of the $(wc -l <"$TD/names") series the dashboard names is in the scrape"

# --- a real Prometheus scraping it -------------------------------------------------------------
HOSTPORT=${TD_URL#http://}
cat >"$TD/prom.yml" <<EOT
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: tesseld
    static_configs:
      - targets: ['$HOSTPORT']
EOT
PROM=""
for try in 1 2 3 4 5; do
    port=$(( 20000 + ($$ * 7 + try * 7919) % 40000 ))
    [ -n "$(ss -Hltn "sport = :$port")" ] && continue
    prometheus --config.file="$TD/prom.yml" --storage.tsdb.path="$TD/tsdb" \
        --web.listen-address="127.0.0.1:$port" >"$TD/prom.log" 2>&1 &
    PROM_PID=$!
    TD_PIDS="$TD_PIDS $PROM_PID"
    if wait_for 'curl -sf "http://127.0.0.1:'"$port"'/-/ready" >/dev/null || ! kill -0 '"$PROM_PID"' 2>/dev/null' &&
        kill -0 "$PROM_PID" 2>/dev/null; then
        PROM="http://127.0.0.1:$port"
        break
    fi
done
[ -n "$PROM" ]; ok $? "Prometheus runs on loopback"
[ -n "$PROM" ] || sed 's/^/#   /' "$TD/prom.log" | tail -20
q() { curl -s -o "$TD/q" --data-urlencode "query=$1" "$PROM/api/v1/query"; }
# Rates need two samples in their window: wait for a few scrapes.
wait_for 'q "count_over_time(tessel_build_info[30s])" &&
          [ "$(jq -r ".data.result[0].value[1] // 0" "$TD/q")" -ge 4 ]'
ok $? "Prometheus scraped tesseld (up: $(q 'up{job="tesseld"}'; jq -r '.data.result[0].value[1]' "$TD/q"))"
bad=0
while read -r e; do
    case "$e" in
    label_values\(*) e=$(printf '%s' "$e" | sed -E 's/^label_values\((.*), *[a-z_]+\)$/\1/') ;;
    esac
    e=$(printf '%s' "$e" | sed -e 's/\$instance/.*/g' -e 's/\$__rate_interval/30s/g')
    q "$e"
    st=$(jq -r .status "$TD/q")
    n=$(jq -r '.data.result | length' "$TD/q")
    if [ "$st" != success ] || [ "$n" = 0 ]; then
        diag "$e: $st, $n results: $(cut -c1-200 "$TD/q")"
        bad=$((bad + 1))
    fi
done <"$TD/exprs"
is "$bad" 0 "Prometheus answers every one of the $N queries, each with data"

touch "$G/a"
wait_for '[ "$(job_state $A)" = succeeded ]'; ok $? "the slice job ends"
kill -TERM "$PROM_PID" 2>/dev/null
wait "$PROM_PID" 2>/dev/null
td_stop; ok $? "tesseld stops cleanly"
done_testing
