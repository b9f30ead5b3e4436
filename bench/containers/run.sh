#!/bin/bash
# bench/containers/run.sh - a container job's start against a process job's (issue 19: "a
# container job starts within 300 ms of a process job, median of 50, side by side").
#
#   bench/containers/run.sh [BUILD_DIR]      (as root, after `make build-all`; crun installed)
#
# One tesseld (root, one SIMULATED GPU, cgroups as the machine has them), the test image of
# tests/lib/mkimage.sh in its store; BENCH_N (50) pairs of foreground `tessel run -- true` and
# `tessel run --image testimg:1 -- true`, interleaved (P C P C: the load of a shared machine
# hits both alike), each timed from the shell (bash's EPOCHREALTIME); and the daemon's share
# of each job (submitted_at to finished_at).  Prints medians, p90s and the difference, with the
# date, nproc and the load average.
set -eu
B=$(cd "${1:-build}" && pwd)
SRC=$(cd "$(dirname "$0")/../.." && pwd)
N=${BENCH_N:-50}
[ "$(id -u)" = 0 ] || { echo "run.sh: run as root (container jobs need tesseld as root)" >&2; exit 1; }
command -v crun >/dev/null || { echo "run.sh: crun is needed" >&2; exit 1; }
T=$(mktemp -d /tmp/tessel-bench-ctr-XXXXXX)
chmod 755 "$T"
cleanup() { [ -n "${PID:-}" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"; }
[ -n "${BENCH_KEEP:-}" ] || trap cleanup EXIT
mkdir -p "$T/data"
"$B/bin/tesseld" --data-dir "$T/data" --listen 127.0.0.1:0 --socket "$T/sock" --fake-gpus 1xT4:8G \
    --submit-rate 0 >"$T/log" 2>&1 &
PID=$!
for _ in $(seq 100); do [ -s "$T/data/tesseld.addr" ] && break; sleep 0.1; done
export TESSEL_URL="http://$(cat "$T/data/tesseld.addr")" TESSEL_TOKEN=$(cat "$T/data/admin.token")
mkdir -p "$T/data/images/testimg" && chmod 700 "$T/data/images" && chmod 755 "$T/data/images/testimg"
TESSEL_BUILD=$B sh "$SRC/tests/lib/mkimage.sh" "$T/data/images/testimg/1/rootfs" >/dev/null
one() { # one [--image X] -> wall ms of `tessel run ... -- true`
    local t0=$EPOCHREALTIME
    "$B/bin/tessel" run --quiet "$@" --cwd "$T" -- true >/dev/null 2>&1 || echo "run.sh: a job failed" >&2
    local t1=$EPOCHREALTIME
    echo "$(((${t1/./} - ${t0/./}) / 1000))"
}
: >"$T/p" && : >"$T/c"
for _ in $(seq "$N"); do
    one >>"$T/p"
    one --image testimg:1 >>"$T/c"
done
stat() { sort -n "$1" | awk '{a[NR]=$1} END {printf "%d %d", a[int((NR+1)/2)], a[int(NR*0.9+0.5)]}'; }
read -r PM P9 <<<"$(stat "$T/p")"
read -r CM C9 <<<"$(stat "$T/c")"
# The daemon's share: submitted_at to finished_at of the jobs, by kind.
"$B/bin/tessel" ps -a --json --limit 10000 |
    python3 -c '
import json, sys, datetime
def ms(s): return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp() * 1000
d = {"p": [], "c": []}
for j in json.load(sys.stdin)["jobs"]:
    d["c" if j.get("image") else "p"].append(ms(j["finished_at"]) - ms(j["submitted_at"]))
for k in "pc":
    v = sorted(d[k]); print(k, round(v[len(v) // 2]), round(v[int(len(v) * 0.9)]))
' >"$T/share"
read -r _ SP SP9 < <(grep '^p' "$T/share")
read -r _ SC SC9 < <(grep '^c' "$T/share")
echo "$(date -u '+%Y-%m-%d %H:%M UTC'), nproc $(nproc), load $(cut -d' ' -f1-3 /proc/loadavg), N=$N"
printf '%-34s %10s %10s %10s\n' "" process container difference
printf '%-34s %8d ms %8d ms %8d ms\n' "tessel run -- true, median" "$PM" "$CM" $((CM - PM))
printf '%-34s %8d ms %8d ms %8d ms\n' "tessel run -- true, p90" "$P9" "$C9" $((C9 - P9))
printf '%-34s %8d ms %8d ms %8d ms\n' "daemon's share, median" "$SP" "$SC" $((SC - SP))
printf '%-34s %8d ms %8d ms %8d ms\n' "daemon's share, p90" "$SP9" "$SC9" $((SC9 - SP9))
