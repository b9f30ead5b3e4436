#!/bin/sh
# t0531-interposer-compute-conserving.t - TESSEL_CUDA_CORE_MODE=shared is
# work-conserving on a time-sliced GPU: a slice's unused share goes to the
# others.  A light slice (a launch-then-synchronize loop of 5 ms kernels with
# 15 ms of host work between launches: it uses about a fifth of the GPU)
# beside busy shared slices (launch-heavy, 5 ms kernels), each group on a
# fake GPU of its own, all at once:
#   a: light shared 50 % + busy shared 50 %: the busy one gets the rest;
#   b: light shared 50 % + two busy shared 25 %: they split the rest;
#   c: light strict 50 % + busy shared 20 %: the strict one's unused share
#      goes to the shared one too.
# "The rest" is the solo rate (an unlimited process alone on a GPU) less
# what the light slice uses, within 5 points (means of the complete 1 s
# windows); every group keeps >= 95 % of what plain time-slicing of the same
# processes without the interposer gives.  Simulated device time.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/interposer/tcu.sh"
LOAD=$HELPERS/tcu-load
[ -x "$LOAD" ] || skip_all "tcu-load not built"
export TESSEL_FAKE_GPUS=8xT4:8G TESSEL_DEVICE_REGISTRY="$TMP"
export TESSEL_FAKE_TIMESLICE_US=2000 TESSEL_FAKE_SWITCH_US=25
N=0

# load NAME DEV LIMIT MODE KIND: LIMIT "-" runs it without the interposer;
# KIND light or busy.
load() {
    case $5 in
    light) args="--loop=sync --us=5000 --gap=15000" ;;
    solo) args="--loop=heavy --us=5000 --depth=16" ;;
    *) args="--loop=heavy --us=5000 --depth=4" ;;
    esac
    if [ "$3" = - ]; then
        "$LOAD" --dev="$2" $args --ms=2300 --go="$TMP/go" >"$TMP/out.$1" 2>&1 &
    else
        TESSEL_SLICE="$TMP/slice.$1" TESSEL_CUDA_CORE_LIMIT=$3 TESSEL_CUDA_CORE_MODE=$4 \
            LD_PRELOAD="$PRE" "$LOAD" --dev="$2" $args --ms=2300 --go="$TMP/go" \
            >"$TMP/out.$1" 2>&1 &
    fi
    N=$((N + 1))
}
load solo 0 - - solo
load a.light 1 50 shared light
load a.busy 1 50 shared busy
load b.light 2 50 shared light
load b.busy1 2 25 shared busy
load b.busy2 2 25 shared busy
load c.light 3 50 strict light
load c.busy 3 20 shared busy
load pa.light 4 - - light
load pa.busy 4 - - busy
load pb.light 5 - - light
load pb.busy1 5 - - busy
load pb.busy2 5 - - busy
all_ready() { [ "$(cat "$TMP"/out.* 2>/dev/null | grep -c '^ready')" -eq $N ]; }
wait_until all_ready
touch "$TMP/go"
wait

mean() {
    val windows "$(grep '^load' "$TMP/out.$1")" | tr ',' '\n' |
        awk '{ s += $1; n++ } END { if (n) printf "%.1f", s / n; else print 0 }'
}
calc() { awk "BEGIN { printf \"%.1f\", $1 }"; }
near() { awk -v t="$1" -v v="$2" 'BEGIN { d = v - t; exit !(d >= -5 && d <= 5) }'; }
for r in solo a.light a.busy b.light b.busy1 b.busy2 c.light c.busy pa.light pa.busy pb.light \
    pb.busy1 pb.busy2; do
    diag "$r: $(grep '^load' "$TMP/out.$r" | tr ' ' '\n' | grep -E '^(share|windows)=' | paste -sd' ')"
done
solo=$(mean solo)
ok $(awk -v s="$solo" 'BEGIN { exit !(s > 0) }' && echo 0 || echo 1) \
    "the solo run measured its rate: $solo %"

al=$(mean a.light) ab=$(mean a.busy)
ok $(awk -v l="$al" 'BEGIN { exit !(l >= 10 && l <= 35) }' && echo 0 || echo 1) \
    "a: the light slice uses less than its 50 %: $al %"
want=$(calc "$solo - $al")
ok $(near "$want" "$ab" && echo 0 || echo 1) \
    "a: the busy shared 50 % slice gets the rest, $want %: $ab %"
pa=$(calc "$(mean pa.light) + $(mean pa.busy)")
ta=$(calc "$al + $ab")
ok $(awk -v t="$ta" -v p="$pa" 'BEGIN { exit !(t >= 0.95 * p) }' && echo 0 || echo 1) \
    "a: together $ta %, >= 95 % of plain time-slicing ($pa %)"

bl=$(mean b.light) b1=$(mean b.busy1) b2=$(mean b.busy2)
want=$(calc "($solo - $bl) / 2")
ok $(near "$want" "$b1" && near "$want" "$b2" && echo 0 || echo 1) \
    "b: two busy shared 25 % slices split the rest, $want % each: $b1 and $b2 %"
pb=$(calc "$(mean pb.light) + $(mean pb.busy1) + $(mean pb.busy2)")
tb=$(calc "$bl + $b1 + $b2")
ok $(awk -v t="$tb" -v p="$pb" 'BEGIN { exit !(t >= 0.95 * p) }' && echo 0 || echo 1) \
    "b: together $tb %, >= 95 % of plain time-slicing ($pb %)"

cl=$(mean c.light) cb=$(mean c.busy)
want=$(calc "$solo - $cl")
ok $(near "$want" "$cb" && echo 0 || echo 1) \
    "c: a strict 50 % slice using $cl % leaves the rest to a shared 20 % one, $want %: $cb %"
done_testing
