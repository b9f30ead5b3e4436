#!/bin/sh
# t0530-interposer-compute-contended.t - strict compute shares hold when
# slices compete for one GPU.  The fake GPU time-slices between processes
# (2 ms slices, 25 us switches, tests/fake/README.md), so an event pair
# around a kernel spans the neighbours' timeslices too; the interposer
# charges each slice its share of that span (docs/compute-shares.md,
# "Charging under contention").  Each group of slices shares its own fake
# GPU, all groups at once: 30/70, 50/50, 25/25/50, three (20/30/50) and four
# (10/20/30/40) tenants with launch-heavy loops of 5 ms kernels, and 30/70
# and 50/50 with a launch-then-synchronize loop (20 ms kernels) beside a
# launch-heavy one.  Every slice must get its limit within 5 points of the solo rate
# (an unlimited process alone on a GPU) in each complete 1 s window (the
# steady state; the ramp and the final drain are outside them); and
# each group must keep at least 95 % of the throughput that plain
# time-slicing of the same processes without the interposer gives (run
# beside it, on GPUs of their own).  Shares are the fake's simulated device
# time over its clock, not this machine's speed.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/interposer/tcu.sh"
LOAD=$HELPERS/tcu-load
[ -x "$LOAD" ] || skip_all "tcu-load not built"
export TESSEL_FAKE_GPUS=16xT4:8G TESSEL_DEVICE_REGISTRY="$TMP"
export TESSEL_FAKE_TIMESLICE_US=2000 TESSEL_FAKE_SWITCH_US=25
MS=2300
N=0

# load NAME DEV LIMIT KIND: one tcu-load; LIMIT "-" runs it without the
# interposer; KIND heavy (5 ms kernels, at most 4 queued) or sync (20 ms).
load() {
    case $4 in
    heavy) args="--loop=heavy --us=5000 --depth=4" ;;
    solo) args="--loop=heavy --us=5000 --depth=16" ;;
    *) args="--loop=sync --us=20000" ;;
    esac
    if [ "$3" = - ]; then
        "$LOAD" --dev="$2" $args --ms=$MS --go="$TMP/go" >"$TMP/out.$1" 2>&1 &
    else
        TESSEL_SLICE="$TMP/slice.$1" TESSEL_CUDA_CORE_LIMIT=$3 LD_PRELOAD="$PRE" \
            "$LOAD" --dev="$2" $args --ms=$MS --go="$TMP/go" >"$TMP/out.$1" 2>&1 &
    fi
    N=$((N + 1))
}
# group NAME DEV_LIMITED DEV_PLAIN KIND:LIMIT...: the slices on one GPU, and
# the same processes without limits on another.
group() {
    g=$1 dl=$2 dp=$3
    shift 3
    i=0
    for s in "$@"; do
        load "$g.$i" "$dl" "${s#*:}" "${s%%:*}"
        load "$g.plain.$i" "$dp" - "${s%%:*}"
        i=$((i + 1))
    done
    echo "$*" >"$TMP/group.$g"
}
load solo 0 - solo
group a 1 2 heavy:30 heavy:70
group b 3 4 heavy:50 heavy:50
group c 5 6 heavy:25 heavy:25 heavy:50
group d 7 8 heavy:20 heavy:30 heavy:50
group e 9 10 heavy:10 heavy:20 heavy:30 heavy:40
group f 11 12 sync:30 heavy:70
group g 13 14 sync:50 heavy:50
all_ready() { [ "$(cat "$TMP"/out.* 2>/dev/null | grep -c '^ready')" -eq $N ]; }
wait_until all_ready
touch "$TMP/go"
wait

solo=$(val windows "$(grep '^load' "$TMP/out.solo")" | tr ',' '\n' |
    awk '{ s += $1; n++ } END { if (n) printf "%.1f", s / n; else print 0 }')
diag "solo rate (unlimited, alone, 16 launches queued): $solo % of the device"
ok $(awk -v s="${solo:-0}" 'BEGIN { exit !(s > 0) }' && echo 0 || echo 1) \
    "the solo run measured its rate: $solo %"
# near TARGET% FIGURE: |FIGURE - TARGET x solo / 100| <= 5
near() { awk -v t="$1" -v v="$2" -v s="$solo" 'BEGIN { d = v - t * s / 100; exit !(d >= -5 && d <= 5) }'; }
sum() { awk -v a="$1" -v b="$2" 'BEGIN { print a + b }'; }
# mean of a run's complete 1 s windows (the steady state: the first launches
# and the drain at the end lie outside them)
mean() { echo "$1" | tr ',' '\n' | awk '{ s += $1; n++ } END { if (n) printf "%.1f", s / n; else print 0 }'; }
for g in a b c d e f g; do
    set -- $(cat "$TMP/group.$g")
    i=0 total=0 plain=0 desc=$(echo "$*" | tr ' ' '/')
    for s in "$@"; do
        lim=${s#*:} kind=${s%%:*}
        out=$(grep '^load' "$TMP/out.$g.$i")
        windows=$(val windows "$out")
        pwindows=$(val windows "$(grep '^load' "$TMP/out.$g.plain.$i")")
        diag "$desc: $kind slice at $lim %: 1 s windows $windows %, overall $(val share "$out") % (plain: $pwindows %)"
        bad=0
        [ "$windows" = none ] || [ -z "$windows" ] && bad=1
        for w in $(echo "$windows" | tr ',' ' '); do
            near "$lim" "$w" || bad=1
        done
        ok $bad "$desc: the $kind slice limited to $lim % gets it within 5 points in every 1 s window ($windows %)"
        total=$(sum "$total" "$(mean "$windows")")
        plain=$(sum "$plain" "$(mean "$pwindows")")
        i=$((i + 1))
    done
    diag "$desc: sum $total % with limits, $plain % by plain time-slicing"
    # A launch-then-synchronize loop loses the host's latency between its
    # kernels (more on a loaded host), which a strict neighbour may not fill:
    # the throughput check is the launch-heavy groups'.
    case $desc in *sync*) continue ;; esac
    ok $(awk -v t="$total" -v p="$plain" 'BEGIN { exit !(p > 0 && t >= 0.95 * p) }' &&
        echo 0 || echo 1) "$desc: the slices keep >= 95 % of plain time-slicing ($total vs $plain %)"
done
done_testing
