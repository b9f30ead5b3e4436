#!/bin/sh
# t3256-daemon-ckpt-copies-stop.t - a copy is judged stalled by the process the driver copies
# now, never by another process of its job (docs/suspend.md, "Copies per GPU"; the security
# review RV16's H1), with tesseld's default of one copy per GPU at a time, on one simulated GPU:
#
#   - job A forks a child that is no CUDA process and stops it (SIGSTOP), and has a kernel
#     queued for 30 s of the fake's time when its suspend is asked: its checkpoint copies after
#     that kernel holding the GPU's slot, and the stopped child does not make it "stalled": job
#     B's checkpoint, asked then, copies only once A's copy is over;
#   - job C, the same but no stopped child: once its copy has begun, its CUDA process itself
#     is stopped, so its copy is passed and job D's checkpoint copies while C's is under way.
#
# What copies when is read from tesseld's log (each copy's start and end, in order), never
# from a clock.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/ckpt.sh"
[ -e "$TESSEL_BUILD/tests/fake/libnvidia-ml.so.1" ] || missing "fake NVML not built"
{ [ -x /bin/sh ] && command -v sleep >/dev/null; } || missing "/bin/sh and sleep are needed"
ARGS="--fake-gpus 1xT4:4G --no-cgroups --allow-root-jobs --min-runtime 0"
ckpt_start
LOG="$TD/tesseld.log"
probe_pid() { read -r _ _ _jp <"$TD/data/jobs/$1/pid" && echo "$_jp"; }
bg_suspend() {
    curl -s -o "$TD/bg.$1" -w '%{http_code}' -X POST -H "Authorization: Bearer $TD_ADMIN" \
        "$TD_URL/v1/jobs/$1/suspend" >"$TD/bg.$1.part" && mv "$TD/bg.$1.part" "$TD/bg.$1.code" &
}
answered() { [ -s "$TD/bg.$1.code" ]; }
# submit NAME KERNEL CHILD: a quarter-GPU job holding 256 MiB with its pattern; KERNEL 1: then a
# kernel of 30 s queued once $G/NAME0 exists; CHILD 1: started by a shell that first forks
# `sleep` and stops it (its pid in $G/NAME.child); then waiting for $G/NAME, checking the pattern.
submit() {
    _steps="ctx alloc:mem:256M pattern:256M"
    [ "$2" = 1 ] && _steps="$_steps modload waitfile:$G/${1}0 launchasync:k"
    _steps="$_steps waitfile:$G/$1 check:256M"
    if [ "$3" = 1 ]; then
        # shellcheck disable=SC2016
        _argv=$(jq -cn --arg p "$PROBE" --arg s "$_steps" --arg c "$G/$1.child" \
            '["/bin/sh","-c",("sleep 100000 & echo $! >" + $c + "; kill -STOP $!; exec " + $p + " " + $s)]')
    else
        # shellcheck disable=SC2086
        _argv=$(jq -cn --arg p "$PROBE" '$ARGS.positional | [$p] + .' --args $_steps)
    fi
    _env=$(jq -cn --arg s "$TESSEL_FAKE_STATE" --arg k "$2" \
        '{TESSEL_FAKE_STATE: $s} + (if $k == "1" then {TESSEL_FAKE_KERNEL_US: "30000000"} else {} end)')
    api POST /v1/jobs "{\"argv\":$_argv,\"gpu\":0.25,\"env\":$_env}"
    jget .id
}
# line PATTERN: the number of the first line of the log with PATTERN (fixed text), or 0.
line() { grep -nF -- "$1" "$LOG" | head -n 1 | cut -d: -f1 | grep . || echo 0; }

A=$(submit a 1 1)
B=$(submit b 0 0)
wait_for "logs $A | grep -q '^pattern rc=0' && logs $B | grep -q '^pattern rc=0'"
ok $? "jobs A and B hold 256 MiB each"
wait_for "[ -s '$G/a.child' ]"; ok $? "A forked its child"
AC=$(cat "$G/a.child")
is "$(awk '{print $3}' "/proc/$AC/stat")" T "A's child ($AC, no CUDA process) is stopped"

# --- A's copy counts although a process of its job is stopped -----------------------------
touch "$G/a0"
wait_for "logs $A | grep -q '^launchasync k rc=0'"; ok $? "A has a kernel of 30 s queued"
bg_suspend "$A"
wait_for "grep -qF 'job $A: its checkpoint copies on GPU 0' '$LOG'"
ok $? "A's checkpoint takes GPU 0's copy slot (its copy waits for its kernel)"
bg_suspend "$B"
wait_for "grep -qF 'job $B: its checkpoint waits for a copy slot on GPU 0' '$LOG'"
ok $? "B's checkpoint waits for GPU 0's slot"
wait_for "answered $A && answered $B"; ok $? "A's and B's suspends answer"
is "$(cat "$TD/bg.$A.code") $(jq -r .state "$TD/bg.$A") $(cat "$TD/bg.$B.code") $(jq -r .state "$TD/bg.$B")" \
    "200 suspended 200 suspended" "A and B are suspended"
XC=$(line "job $A: its checkpoint copies on GPU 0")
XO=$(line "job $A: its checkpoint's copy on GPU 0 is over")
YC=$(line "job $B: its checkpoint copies on GPU 0")
[ "$XC" -gt 0 ] && [ "$XC" -lt "$XO" ] && [ "$XO" -lt "$YC" ]
ok $? "B's copy started after A's was over: A's stopped child did not pass it (lines $XC, $XO, $YC)"
is "$(awk '{print $3}' "/proc/$AC/stat")" T "A's child is still stopped"
is "$(line "job $A: its checkpoint's copy on GPU 0 no longer counts")" 0 "A's copy was never passed"

# --- C's copy is passed when the process it copies is stopped ------------------------------
C=$(submit c 1 0)
D=$(submit d 0 0)
wait_for "logs $C | grep -q '^pattern rc=0' && logs $D | grep -q '^pattern rc=0'"
ok $? "jobs C and D hold 256 MiB each"
touch "$G/c0"
wait_for "logs $C | grep -q '^launchasync k rc=0'"; ok $? "C has a kernel of 30 s queued"
bg_suspend "$C"
wait_for "grep -qF 'job $C: its checkpoint copies on GPU 0' '$LOG'"
ok $? "C's checkpoint takes GPU 0's copy slot"
PC=$(probe_pid "$C")
[ -n "$PC" ] && kill -STOP "$PC"; ok $? "C's CUDA process ($PC), the one its copy works on, is stopped"
bg_suspend "$D"
wait_for "grep -qF 'job $D: its checkpoint copies on GPU 0' '$LOG'"
ok $? "D's checkpoint copies"
CO=$(line "job $C: its checkpoint's copy on GPU 0 is over")
DC=$(line "job $D: its checkpoint copies on GPU 0")
[ "$CO" = 0 ] || [ "$DC" -lt "$CO" ]
ok $? "D's copy began while C's was under way: the stopped copy was passed (lines $DC, $CO)"
CP=$(line "job $C: its checkpoint's copy on GPU 0 no longer counts (the process it copies is stopped)")
[ "$CP" -gt 0 ] && [ "$CP" -lt "$DC" ]; ok $? "the log says C's copy no longer counts, before D's copy (lines $CP, $DC)"
kill -CONT "$PC"
wait_for "answered $C && answered $D"; ok $? "C's and D's suspends answer once C goes on"
is "$(cat "$TD/bg.$C.code") $(jq -r .state "$TD/bg.$C") $(cat "$TD/bg.$D.code") $(jq -r .state "$TD/bg.$D")" \
    "200 suspended 200 suspended" "C and D are suspended"

# --- every job comes back intact ------------------------------------------------------------
for j in $A $B $C $D; do
    api POST "/v1/jobs/$j/resume"
    [ "$CODE" = 200 ] || break
done
is "$CODE" 200 "the four resumes are asked"
wait_for "[ \"\$(job_state $A)\" = running ] && [ \"\$(job_state $B)\" = running ] && [ \"\$(job_state $C)\" = running ] && [ \"\$(job_state $D)\" = running ]"
ok $? "A, B, C and D are restored and running"
kill -KILL "$AC" 2>/dev/null
touch "$G/a" "$G/b" "$G/c" "$G/d"
wait_for "[ \"\$(job_state $A)\" = succeeded ] && [ \"\$(job_state $B)\" = succeeded ] && [ \"\$(job_state $C)\" = succeeded ] && [ \"\$(job_state $D)\" = succeeded ]"
ok $? "the four jobs end"
for j in $A $B $C $D; do
    logs "$j" | grep -q '^check ok' || break
done
ok $? "every byte of the four patterns is intact"

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
