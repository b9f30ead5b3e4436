#!/bin/sh
# t3248-daemon-ckpt-copies.t - a cap per GPU on the copies of checkpoint steps (docs/suspend.md,
# "Copies per GPU"; the security review RV15a's M1), with tesseld's default of one copy per GPU
# at a time, on two simulated GPUs:
#
#   - job W's process is stopped (SIGSTOP) and its suspend asked: its step waits in the lock
#     phase, which holds no copy slot, so the checkpoints below copy on W's GPU meanwhile;
#   - job X (W's GPU) has a kernel queued for 30 s of the fake's time when its suspend is
#     asked: its checkpoint copies after that kernel, holding the GPU's slot meanwhile;
#   - job Y (the same GPU), suspended then, locks its process and waits for the slot (the log
#     says so): its copy starts only once X's is over;
#   - job Z (the other GPU), suspended then, copies while X still copies;
#   - the four restores asked together run one at a time on W's GPU.
#
# What copies when is read from tesseld's log (each copy's start and end, in order), never
# from a clock: on W's GPU no two copies are under way at once, whatever the machine's speed.
# That Z's copy falls inside X's relies on X's copy lasting longer than Z's whole suspend (30 s
# of queued kernel against a step of well under a second).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/ckpt.sh"
[ -e "$TESSEL_BUILD/tests/fake/libnvidia-ml.so.1" ] || missing "fake NVML not built"
ARGS="--fake-gpus 2xT4:4G --no-cgroups --allow-root-jobs --min-runtime 0"
ckpt_start
LOG="$TD/tesseld.log"
step() { api GET "/v1/jobs/$1" && jget .checkpoint; }
probe_pid() { read -r _ _ _jp <"$TD/data/jobs/$1/pid" && echo "$_jp"; }
gpu_of() { api GET "/v1/jobs/$1" && jget '.placement[0].gpu'; }
bg_suspend() {
    curl -s -o "$TD/bg.$1" -w '%{http_code}' -X POST -H "Authorization: Bearer $TD_ADMIN" \
        "$TD_URL/v1/jobs/$1/suspend" >"$TD/bg.$1.part" && mv "$TD/bg.$1.part" "$TD/bg.$1.code" &
}
answered() { [ -s "$TD/bg.$1.code" ]; }
# submit NAME GPU [STEPS] [ENV]: a job holding 256 MiB with its pattern, then STEPS, then
# waiting for $G/NAME and checking the pattern.
submit() {
    api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:256M\",\"pattern:256M\",$3\"waitfile:$G/$1\",\"check:256M\"],\"gpu\":$2,\"env\":{\"TESSEL_FAKE_STATE\":\"$TESSEL_FAKE_STATE\"$4}}"
    jget .id
}
# line PATTERN: the number of the first line of the log with PATTERN (fixed text), or 0.
line() { grep -nF -- "$1" "$LOG" | head -n 1 | cut -d: -f1 | grep . || echo 0; }
# most GPU: the most copies under way at once on GPU in the log so far.
most() {
    awk -v g="$1" '
        / its (checkpoint|restore) copies on GPU [0-9,]+$/ {
            n = split($NF, l, ","); for (i = 1; i <= n; i++) if (l[i] == g) { c++; if (c > m) m = c } }
        / its (checkpoint|restore)'"'"'s copy on GPU [0-9,]+ is over$/ {
            n = split($(NF - 2), l, ","); for (i = 1; i <= n; i++) if (l[i] == g) c-- }
        END { print m + 0 }' "$LOG"
}

Z=$(submit z 1)
wait_for "logs $Z | grep -q '^pattern rc=0'"; ok $? "job Z (a whole GPU) holds 256 MiB (first: the others then share the other GPU)"
W=$(submit w 0.25)
wait_for "logs $W | grep -q '^pattern rc=0'"; ok $? "job W (a quarter GPU) holds 256 MiB with its pattern"
X=$(submit x 0.25 "\"modload\",\"waitfile:$G/x0\",\"launchasync:k\"," ',"TESSEL_FAKE_KERNEL_US":"30000000"')
Y=$(submit y 0.25)
wait_for "logs $X | grep -q '^pattern rc=0' && logs $Y | grep -q '^pattern rc=0'"
ok $? "jobs X and Y (a quarter GPU each) hold 256 MiB each"
GA=$(gpu_of "$W")
is "$(gpu_of "$X") $(gpu_of "$Y")" "$GA $GA" "X and Y share W's GPU ($GA)"
GB=$(gpu_of "$Z")
[ "$GB" != "$GA" ]; ok $? "Z is on the other GPU ($GB)"

# --- W's lock waits for its stopped process, holding no slot -------------------------------
PW=$(probe_pid "$W")
[ -n "$PW" ] && kill -STOP "$PW"; ok $? "W's process ($PW) is stopped: its lock will wait"
bg_suspend "$W"
wait_for '[ "$(step $W)" = suspend ]'; ok $? "W's suspend is under way (its lock waits for W)"

# --- X copies, Y waits for the slot, Z copies on the other GPU meanwhile -------------------
touch "$G/x0"
wait_for "logs $X | grep -q '^launchasync k rc=0'"; ok $? "X has a kernel of 30 s queued"
bg_suspend "$X"
wait_for "grep -qF 'job $X: its checkpoint copies on GPU $GA' '$LOG'"
ok $? "X's checkpoint takes GPU $GA's copy slot (its copy waits for its kernel)"
bg_suspend "$Y"
wait_for "grep -qF 'job $Y: its checkpoint waits for a copy slot on GPU $GA' '$LOG'"
ok $? "Y's checkpoint, its process locked, waits for GPU $GA's slot"
bg_suspend "$Z"
wait_for "answered $Z"; ok $? "Z's suspend answers"
is "$(cat "$TD/bg.$Z.code") $(jq -r .state "$TD/bg.$Z")" "200 suspended" "Z is suspended"
[ "$(jq -r .gpu_released "$TD/bg.$Z")" -ge $((256 * MiB)) ]; ok $? "Z gave back its memory"
wait_for "answered $X && answered $Y"; ok $? "X's and Y's suspends answer"
is "$(cat "$TD/bg.$X.code") $(jq -r .state "$TD/bg.$X") $(cat "$TD/bg.$Y.code") $(jq -r .state "$TD/bg.$Y")" \
    "200 suspended 200 suspended" "X and Y are suspended"
[ "$(jq -r .gpu_released "$TD/bg.$X")" -ge $((256 * MiB)) ] &&
    [ "$(jq -r .gpu_released "$TD/bg.$Y")" -ge $((256 * MiB)) ]
ok $? "X and Y gave back their memory"
XC=$(line "job $X: its checkpoint copies on GPU $GA")
XO=$(line "job $X: its checkpoint's copy on GPU $GA is over")
YC=$(line "job $Y: its checkpoint copies on GPU $GA")
ZC=$(line "job $Z: its checkpoint copies on GPU $GB")
ZO=$(line "job $Z: its checkpoint's copy on GPU $GB is over")
[ "$XC" -gt 0 ] && [ "$XC" -lt "$XO" ] && [ "$XO" -lt "$YC" ]
ok $? "Y's copy started after X's was over (log lines $XC, $XO, $YC)"
[ "$XC" -lt "$ZC" ] && [ "$ZO" -lt "$XO" ]
ok $? "Z's copy on GPU $GB ran inside X's on GPU $GA (log lines $XC < $ZC, $ZO < $XO)"
is "$(step "$W")" suspend "W's step still waits in its lock"
is "$(line "job $W: its checkpoint copies")" 0 "W has not copied"

# --- W goes on; the four restores take GPU $GA one at a time ------------------------------
kill -CONT "$PW"
wait_for "answered $W"; ok $? "once W's process goes on, its suspend answers"
is "$(cat "$TD/bg.$W.code") $(jq -r .state "$TD/bg.$W")" "200 suspended" "W is suspended"
for j in $W $X $Y $Z; do
    api POST "/v1/jobs/$j/resume"
    [ "$CODE" = 200 ] || break
done
is "$CODE" 200 "the four resumes are asked"
wait_for "[ \"\$(job_state $W)\" = running ] && [ \"\$(job_state $X)\" = running ] && [ \"\$(job_state $Y)\" = running ] && [ \"\$(job_state $Z)\" = running ]"
ok $? "W, X, Y and Z are restored and running"
is "$(grep -cF "its restore copies on GPU $GA" "$LOG")" 3 "three restores copied on GPU $GA"
is "$(most "$GA")" 1 "never two copies (checkpoints or restores) at once on GPU $GA"
touch "$G/w" "$G/x" "$G/y" "$G/z"
wait_for "[ \"\$(job_state $W)\" = succeeded ] && [ \"\$(job_state $X)\" = succeeded ] && [ \"\$(job_state $Y)\" = succeeded ] && [ \"\$(job_state $Z)\" = succeeded ]"
ok $? "the four jobs end"
for j in $W $X $Y $Z; do
    logs "$j" | grep -q '^check ok' || break
done
ok $? "every byte of the four patterns is intact"

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
