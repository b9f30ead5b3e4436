#!/bin/sh
# t0010-tests-guard.t - the suite cannot pass by skipping: tests/lib/run-one (prove's --exec in
# tests/run) fails a test that skips, in whole ("1..0 # SKIP") or in part ("ok N # SKIP"),
# whatever the case of the directive, and lets through only not_applicable (tests/lib/tap.sh);
# it keeps a test's own exit status and TAP, and fails a test that hangs.  A daemon test whose
# tesseld does not start (here: an unknown flag) fails at td_start, before any of its checks.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
RUN="$TESSEL_SRCDIR/tests/lib/run-one"
[ -x "$RUN" ] || missing "$RUN"
[ -x "$TESSEL_BUILD/bin/tesseld" ] || missing "$TESSEL_BUILD/bin/tesseld not built"
command -v prove >/dev/null || missing "prove (perl) is needed"
W=$(mktemp -d /tmp/tessel-t0010-XXXXXX) || missing "mktemp"
trap 'rm -rf "$W"' EXIT

# mk NAME LINE...: a test script $W/NAME.t made of the lines given.
mk() {
    _f="$W/$1.t"
    shift
    { echo '#!/bin/sh'; echo ". \"\$TESSEL_SRCDIR/tests/lib/tap.sh\""; printf '%s\n' "$@"; } >"$_f"
    chmod +x "$_f"
}
# one NAME: run $W/NAME.t through run-one; its TAP in $W/NAME.out, stderr in $W/NAME.err, $RC.
one() {
    "$RUN" "$W/$1.t" >"$W/$1.out" 2>"$W/$1.err"
    RC=$?
}

mk pass 'plan 2' 'ok 0 "one"' 'ok 0 "two"'
one pass
is "$RC $(cat "$W/pass.out")" "0 1..2
ok 1 - one
ok 2 - two" "a passing test passes, its TAP unchanged"

mk fail 'plan 1' 'ok 1 "broken"' 'exit 1'
one fail
is "$RC" 1 "a failing test keeps its exit status"

mk faildiag 'plan 2' 'ok 0 "fine"' 'is "got this" "wanted that" "the value"'
one faildiag
grep -q "faildiag.t: 1 check(s) failed" "$W/faildiag.err" &&
    grep -q "not ok 2 - the value" "$W/faildiag.err" && grep -q "wanted that" "$W/faildiag.err"
ok $? "a failed check and its diagnostics are said again on stderr (a CI log shows them)"
is "$(grep -c 'not ok' "$W/pass.err")" 0 "... and nothing for a passing test"

mk skipall 'echo "1..0 # SKIP no GPU here"' 'exit 0'
one skipall
is "$RC" 3 "a test that skips in whole fails"
grep -q "skipall.t skipped" "$W/skipall.err"
ok $? "and the runner says which test skipped"
grep -q "1..0 # SKIP no GPU here" "$W/skipall.err"
ok $? "and why"

mk skipone 'plan 2' 'ok 0 "runs"' 'echo "ok 2 # skip not root"'
one skipone
is "$RC" 3 "a test that skips one check fails"

mk skipcase 'plan 1' 'echo "ok 1 - something #SkIp cgroups"'
one skipcase
is "$RC" 3 "whatever the case and spacing of the directive"

mk skipbare 'echo "1..0"'
one skipbare
is "$RC" 3 "a test that plans nothing fails"

mk notappl 'not_applicable "counts system calls, and ASan makes its own"'
one notappl
is "$RC $(cat "$W/notappl.out")" \
    "0 1..0 # SKIP not applicable: counts system calls, and ASan makes its own" \
    "not_applicable is the one skip let through"

mk fakena 'echo "1..0 # SKIP no GPU (not applicable: says who)"'
one fakena
is "$RC" 3 "a skip that only mentions 'not applicable' later in its reason fails"

mk skipallfn 'skip_all "no cgroup v1"' 'ok 0 "not reached"'
one skipallfn
is "$RC $(cat "$W/skipallfn.out")" "1 Bail out! missing: no cgroup v1" \
    "skip_all fails the test (Bail out!), before any check"

mk hang 'plan 1' 'sleep 120' 'ok 0 "not reached"'
TEST_TIMEOUT=1 "$RUN" "$W/hang.t" >"$W/hang.out" 2>&1
is "$?" 124 "a test that hangs is stopped and fails (timeout's status)"

# A daemon test whose tesseld cannot start: td_start fails the test itself.
mk nodaemon ". \"\$TESSEL_SRCDIR/tests/lib/daemon.sh\"" 'td_setup' 'plan 2' \
    'td_start --no-such-flag' 'ok 0 "reached after td_start"' 'td_stop' 'ok $? "stops"'
one nodaemon
is "$RC" 1 "a daemon test whose tesseld does not start fails"
grep -q '^Bail out! missing: tesseld did not start (tesseld --no-such-flag)' "$W/nodaemon.out"
ok $? "with Bail out! naming the daemon's arguments"
grep -q 'reached after td_start' "$W/nodaemon.out"
is "$?" 1 "and none of its checks run"

# The whole runner: prove counts each refused skip as a failed test.
TEST_JOBS=1 TESSEL_BUILD="$TESSEL_BUILD" "$TESSEL_SRCDIR/tests/run" "$W/pass.t" "$W/notappl.t" \
    >"$W/run1.out" 2>&1
is "$?" 0 "tests/run passes a passing test and a not_applicable one"
TEST_JOBS=1 TESSEL_BUILD="$TESSEL_BUILD" "$TESSEL_SRCDIR/tests/run" "$W/pass.t" "$W/skipone.t" \
    "$W/skipall.t" >"$W/run2.out" 2>&1
RC=$?
ok $([ "$RC" -ne 0 ] && echo 0 || echo 1) "tests/run fails when a test skips"
sed -n '/^Test Summary Report/,$p' "$W/run2.out" >"$W/run2.sum"
is "$(grep -c 'skipone.t (Wstat: 768 (exited 3)' "$W/run2.sum") \
$(grep -c 'skipall.t (Wstat: 768 (exited 3)' "$W/run2.sum") $(grep -c 'pass.t' "$W/run2.sum")" \
    "1 1 0" "both skipping tests count as failed, the passing one does not"
grep -q '^Result: FAIL' "$W/run2.out"
ok $? "and the run's result is FAIL"
done_testing
