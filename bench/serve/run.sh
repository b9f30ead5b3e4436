#!/bin/sh
# bench/serve/run.sh - the inference services' benchmark (issue 22; docs/serving.md,
# "Benchmark"), side by side in one run:
#
#   bench/serve/run.sh [BUILD_DIR] [--seconds 15] [--rounds 2] [--load 0.9]
#
# A tesseld with two simulated GPUs (a T4 and an A100) runs two services of the same two
# replicas (tests/lib/standin.py: 15 ms per request on the T4, 5 ms on the A100, one request
# at a time, each replica queueing what it gets: concurrency 0), one split by capacity (the
# weights tesseld sets from the measured rates), one split evenly.  After a warm-up, the
# replicas' total capacity is measured (below); each round then
# offers --load of it (Poisson arrivals, bench-serve-load, open loop) to the capacity-aware
# service, then to the even one, for --seconds each.  (The capacity: each replica saturated
# straight with wrk, one connection, and the rates added.)  Printed per run and as medians over the
# rounds: throughput and p50/p90/p99 latency, and the ratio of the even split's p99 to the
# capacity-aware one's.
#
# Then the proxy's cost: a service of one replica that answers at once (0 ms), requests at 50/s
# straight to the replica (from inside its network namespace, nsenter), through its forwarder
# alone (its Unix socket), and through the proxy (HAProxy, then the forwarder), alternately
# (--rounds times, 10 s each): the medians and the differences.  A replica's port exists in its
# own network namespace only (docs/serving.md, "How a replica is reached"): the capacity is
# measured there too.
set -eu
SRC=$(cd "$(dirname "$0")/../.." && pwd)
B=build
case "${1:-}" in --* | "") ;; *) B=$1; shift ;; esac
SECS=15 ROUNDS=2 LOAD=0.9
while [ $# -gt 0 ]; do
    [ $# -ge 2 ] || { echo "run.sh: $1 needs a value" >&2; exit 2; }
    case "$1" in
    --seconds) SECS=$2 ;;
    --rounds) ROUNDS=$2 ;;
    --load) LOAD=$2 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift 2
done
B=$(cd "$B" && pwd)
GEN="$B/bench/bench-serve-load"
for f in "$B/bin/tesseld" "$GEN"; do [ -x "$f" ] || { echo "run.sh: $f not built" >&2; exit 1; }; done
command -v jq >/dev/null && command -v wrk >/dev/null && [ -x /usr/sbin/haproxy ] &&
    command -v nsenter >/dev/null ||
    { echo "run.sh: jq, wrk, nsenter and haproxy are needed" >&2; exit 1; }
W=$(mktemp -d "${TMPDIR:-/tmp}/tessel-bench-serve-XXXXXX")
# HAProxy (as haproxy) reaches the replicas' sockets below the data directory (docs/serving.md).
chmod 711 "$W"
PID=""
cleanup() {
    [ -n "$PID" ] && kill -9 "$PID" 2>/dev/null
    [ -s "$W/data/serve/haproxy.pid" ] && kill -9 "$(cat "$W/data/serve/haproxy.pid")" 2>/dev/null
    for f in "$W"/data/jobs/*/pid; do
        [ -f "$f" ] || continue
        read -r shim _ job <"$f"
        kill -9 "-$job" "$shim" 2>/dev/null
    done
    rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP
mkdir -p "$W/data"
"$B/bin/tesseld" --data-dir "$W/data" --listen 127.0.0.1:0 --socket "$W/sock" \
    --fake-gpus 1xT4:16G,1xA100:40G --no-cgroups --allow-root-jobs >"$W/log" 2>&1 &
PID=$!
i=0
while [ ! -s "$W/data/tesseld.addr" ]; do
    i=$((i + 1)); [ $i -lt 300 ] || { cat "$W/log"; exit 1; }; sleep 0.1
done
URL="http://$(cat "$W/data/tesseld.addr")"
TOK="$W/data/admin.token"
api() { curl -s -H "Authorization: Bearer $(cat "$TOK")" -H 'Content-Type: application/json' \
    -X "$1" ${3:+--data-binary "$3"} "$URL$2"; }
SRV="$SRC/tests/lib/standin.py"
mk() { # mk NAME SPLIT ARG REPLICAS CONCURRENCY
    api POST /v1/services "{\"name\":\"$1\",\"split\":\"$2\",\"replicas\":$4,\"gpu\":0.25,
        \"gpu_mem\":\"1G\",\"concurrency\":$5,\"argv\":[\"python3\",\"$SRV\",\"$3\"]}" >"$W/$1.json"
    i=0
    while [ "$(api GET "/v1/services/$1" | jq '[.replica_jobs[] | select(.health == "UP")] | length')" != "$4" ]; do
        i=$((i + 1)); [ $i -lt 300 ] || { echo "run.sh: service $1 did not come up" >&2; exit 1; }
        sleep 0.2
    done
    api GET "/v1/services/$1" >"$W/$1.json"
    models=$(jq -r '[.replica_jobs[].gpus[0].model] | sort | join(",")' "$W/$1.json")
    echo "service $1 ($2): replicas on $models, endpoint $(jq -r .endpoint "$W/$1.json")"
}
mk cap capacity "A100=5,T4=15" 2 0
mk even even "A100=5,T4=15" 2 0
mk zero capacity 0 1 1
ep() { jq -r .endpoint "$W/$1.json"; }
load() { # load NAME RATE SECONDS
    "$GEN" --url "$(ep "$1")/infer" --rate "$2" --seconds "$3" --token-file "$TOK" --seed 7
}
get() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
# innet JOB CMD...: CMD in the network namespace of replica JOB (where its port is).
innet() {
    _j=$1
    shift
    read -r _ _ _pid <"$W/data/jobs/$_j/pid"
    nsenter --net="/proc/$_pid/ns/net" "$@"
}

echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) CPUs; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "warm-up: 10 s at 120/s on each service (the rates measured, the weights set)"
load cap 120 10 >/dev/null
load even 120 10 >/dev/null
sleep 3
api GET /v1/services/cap >"$W/cap.json"
jq -r '.replica_jobs[] | "  cap replica \(.job) on \(.gpus[0].model): \(.service_rate // 0 | floor)/s measured by tesseld, weight \(.weight)"' "$W/cap.json"
# The replicas' capacity: each one saturated straight (wrk, one connection, 4 s): what it
# answers per second.  The even service's replicas are the same programs on the same GPUs.
CAP=0
for rj in $(jq -r '.replica_jobs[] | "\(.job):\(.port)"' "$W/cap.json"); do
    port=${rj#*:}
    c=$(innet "${rj%%:*}" wrk -t1 -c1 -d4s "http://127.0.0.1:$port/x" |
        awk '/^Requests\/sec/ { print $2 }')
    echo "  replica on port $port saturated: $c/s"
    CAP=$(echo "$CAP $c" | awk '{ print $1 + $2 }')
done
RATE=$(echo "$CAP $LOAD" | awk '{ printf "%.0f", $1 * $2 }')
echo "capacity measured: $(printf '%.0f' "$CAP")/s; offered load: $RATE/s ($LOAD of it), $SECS s per run"
printf '%-6s %-9s %8s %8s %9s %9s %9s %6s\n' round split sent thr/s p50_ms p90_ms p99_ms errors
for r in $(seq 1 "$ROUNDS"); do
    for s in cap even; do
        o=$(load "$s" "$RATE" "$SECS")
        printf '%-6s %-9s %8s %8s %9s %9s %9s %6s\n' "$r" "$s" "$(get "$o" sent)" \
            "$(get "$o" throughput)" "$(get "$o" p50_ms)" "$(get "$o" p90_ms)" \
            "$(get "$o" p99_ms)" "$(get "$o" errors)"
        echo "$s $(get "$o" throughput) $(get "$o" p99_ms)" >>"$W/split"
    done
done
med() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
CT=$(awk '$1 == "cap" { print $2 }' "$W/split" | med)
ET=$(awk '$1 == "even" { print $2 }' "$W/split" | med)
CP=$(awk '$1 == "cap" { print $3 }' "$W/split" | med)
EP=$(awk '$1 == "even" { print $3 }' "$W/split" | med)
echo "median: capacity-aware throughput $CT/s p99 $CP ms; even throughput $ET/s p99 $EP ms"
echo "ratios: p99 even / capacity-aware = $(echo "$EP $CP" | awk '{ printf "%.1f", $1 / $2 }'); throughput capacity-aware / even = $(echo "$CT $ET" | awk '{ printf "%.2f", $1 / $2 }')"

# The proxy's cost on loopback.
RPORT=$(jq -r '.replica_jobs[0].port' "$W/zero.json")
RJOB=$(jq -r '.replica_jobs[0].job' "$W/zero.json")
printf '%-6s %-8s %9s %9s\n' round path p50_ms p99_ms
for r in $(seq 1 "$ROUNDS"); do
    o=$(innet "$RJOB" "$GEN" --url "http://127.0.0.1:$RPORT/x" --rate 50 --seconds 10 --seed 3)
    printf '%-6s %-8s %9s %9s\n' "$r" direct "$(get "$o" p50_ms)" "$(get "$o" p99_ms)"
    echo "direct $(get "$o" p50_ms)" >>"$W/proxy"
    o=$("$GEN" --url "http://replica/x" --unix-socket "$W/data/replicas/r$RJOB.sock" --rate 50 \
        --seconds 10 --seed 3)
    printf '%-6s %-8s %9s %9s\n' "$r" socket "$(get "$o" p50_ms)" "$(get "$o" p99_ms)"
    echo "socket $(get "$o" p50_ms)" >>"$W/proxy"
    o=$(load zero 50 10)
    printf '%-6s %-8s %9s %9s\n' "$r" proxy "$(get "$o" p50_ms)" "$(get "$o" p99_ms)"
    echo "proxy $(get "$o" p50_ms)" >>"$W/proxy"
done
D=$(awk '$1 == "direct" { print $2 }' "$W/proxy" | med)
P=$(awk '$1 == "proxy" { print $2 }' "$W/proxy" | med)
F=$(awk '$1 == "socket" { print $2 }' "$W/proxy" | med)
echo "median p50: direct $D ms, through the forwarder $F ms, through the proxy $P ms"
echo "the forwarder adds $(echo "$F $D" | awk '{ printf "%.0f", ($1 - $2) * 1000 }') us; the proxy (HAProxy and the forwarder) adds $(echo "$P $D" | awk '{ printf "%.0f", ($1 - $2) * 1000 }') us"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
