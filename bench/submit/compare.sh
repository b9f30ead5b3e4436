#!/bin/sh
# bench/submit/compare.sh - the submission benchmark against the baseline and the current build,
# side by side in one run (issue 15, items 4 and 5; docs/bench-submit.md).
#
#   bench/submit/compare.sh [BUILD_DIR] [--rounds 2] [--preload 60000] [--rate 2000]
#                           [--seconds 8] [--scrape-hz 20] [--threads 4]
#
# The baseline is bench/lib/baseline.sh's build (main before issue 15).  Each round runs, for
# the baseline then the current build (A B A B: load on the shared machine hits both alike),
# three configurations, each on a fresh tesseld (bench/submit/run.sh) whose store is first
# filled with --preload finished jobs:
#   metrics  1 client at 1 submission/s, /metrics scraped at --scrape-hz: the time of /metrics
#   paced    --threads clients at --rate submissions/s, no scrape
#   scraped  the same with /metrics scraped at --scrape-hz
#   floor    (once a round, after both builds) --threads clients at --rate against
#            bench-null-server (run.sh's BENCH_NULL=1): tesseld's HTTP layer with no work behind
#            it, no preload; what this machine, the client and HTTP cost by themselves
# The group column: submissions a group commit held on average ("-": a tesseld without it).
# Both builds are driven by BUILD_DIR's bench-submit (the baseline's has no --preload); only
# tesseld differs.  Prints every run, then per build the median over the rounds and the ratios.
# BENCH_NICE, TMPDIR: as for run.sh.
set -eu
SRC=$(cd "$(dirname "$0")/../.." && pwd)
B=build
case "${1:-}" in --* | "") ;; *) B=$1; shift ;; esac
ROUNDS=2 PRELOAD=60000 RATE=2000 SECS=8 HZ=20 THREADS=4
while [ $# -gt 0 ]; do
    [ $# -ge 2 ] || { echo "compare.sh: $1 needs a value" >&2; exit 2; }
    case "$1" in
    --rounds) ROUNDS=$2 ;;
    --preload) PRELOAD=$2 ;;
    --rate) RATE=$2 ;;
    --seconds) SECS=$2 ;;
    --scrape-hz) HZ=$2 ;;
    --threads) THREADS=$2 ;;
    *) echo "compare.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift 2
done
NEW=$(cd "$B" && pwd)
BASE=$("$SRC/bench/lib/baseline.sh")
CLIENT=$NEW/bench/bench-submit
[ -x "$CLIENT" ] || { echo "compare.sh: $CLIENT is missing (make bench)" >&2; exit 1; }
RES=$(mktemp "${TMPDIR:-/tmp}/tessel-compare-XXXXXX")
trap 'rm -f "$RES"' EXIT INT TERM
echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs, baseline $BASE, new $NEW"
echo "# --rounds $ROUNDS --preload $PRELOAD --rate $RATE --seconds $SECS --scrape-hz $HZ --threads $THREADS"
printf '%-5s %-8s %-8s %5s %9s %9s %9s %9s %9s %8s %6s\n' round build config load rate/s p50_ms p99_ms \
    max_ms metrics_p50 wal_MiB group
one() { # ROUND NAME DIR CONFIG ARGS...
    r=$1 name=$2 dir=$3 cfg=$4
    shift 4
    if [ "$name" = null ]; then
        out=$(BENCH_NULL=1 BENCH_CLIENT=$CLIENT "$SRC/bench/submit/run.sh" "$dir" \
            --seconds "$SECS" "$@" 2>&1) || { echo "$out" >&2; exit 1; }
    else
        out=$(BENCH_CLIENT=$CLIENT "$SRC/bench/submit/run.sh" "$dir" --preload "$PRELOAD" \
            --seconds "$SECS" "$@" 2>&1) || { echo "$out" >&2; exit 1; }
    fi
    echo "$out" | awk -v r="$r" -v n="$name" -v c="$cfg" '
        /^# / { for (i = 1; i <= NF; i++) if ($i == "load") { l = $(i + 1); sub(",", "", l) } }
        /^submitted/ { rate = $4; p50 = $8; p99 = $11; mx = $14 }
        /^metrics:/ { mp50 = $11 }
        /^wal:/ { wal = sprintf("%.1f", $2 / 1048576) }
        END { if (wal == "") wal = "-"; if (g == "") g = "-" }
        /^group:/ { g = $2 == "-" ? "-" : substr($7, 2) }
        END { printf "%-5s %-8s %-8s %5s %9s %9s %9s %9s %9s %8s %6s\n", r, n, c, l, rate, p50, p99,
              mx, mp50 == "" ? "-" : mp50, wal, g }' | tee -a "$RES"
}
r=1
while [ $r -le "$ROUNDS" ]; do
    for b in baseline new; do
        dir=$BASE
        [ $b = new ] && dir=$NEW
        one $r $b "$dir" metrics --threads 1 --rate 1 --scrape-hz "$HZ"
        one $r $b "$dir" paced --threads "$THREADS" --rate "$RATE"
        one $r $b "$dir" scraped --threads "$THREADS" --rate "$RATE" --scrape-hz "$HZ"
    done
    one $r null "$NEW" floor --threads "$THREADS" --rate "$RATE"
    r=$((r + 1))
done
# Medians per (build, config), then the figures of issue 15 and their ratios.
awk '
    function med(k,   n, i, j, t, a) {
        n = split(v[k], a, " ")
        for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) {
            t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    { v[$2 "," $3 ",p99"] = v[$2 "," $3 ",p99"] " " $7
      v[$2 "," $3 ",wal"] = v[$2 "," $3 ",wal"] " " $10
      if ($9 != "-") v[$2 "," $3 ",m"] = v[$2 "," $3 ",m"] " " $9 }
    END {
        mb = med("baseline,metrics,m"); mn = med("new,metrics,m")
        pb = med("baseline,paced,p99"); pn = med("new,paced,p99")
        sb = med("baseline,scraped,p99"); sn = med("new,scraped,p99")
        printf "\nmedians over the rounds     baseline        new   new/baseline\n"
        printf "/metrics p50 (ms)        %11.2f %10.2f %10.3f   (target <= 0.100)\n", mb, mn, mn / mb
        printf "submit p99, no scrape    %11.2f %10.2f %10.3f   (target new <= 2 ms)\n", pb, pn, pn / pb
        printf "submit p99, scraped      %11.2f %10.2f %10.3f\n", sb, sn, sn / sb
        printf "scraped / no scrape      %11.3f %10.3f              (target new <= 1.10)\n", sb / pb, sn / pn
        fl = med("null,floor,p99")
        printf "submit p99, no tesseld   %11s %10.2f %10.3f   (bench-null-server: the floor; new/floor)\n", "", fl, pn / fl
        wb = med("baseline,paced,wal"); wn = med("new,paced,wal")
        printf "WAL file, paced (MiB)    %11.1f %10.1f %10.3f   (the most the WAL held)\n", wb, wn, wn / wb
    }' "$RES"
