# tests/lib/tap.sh - minimal TAP producer for shell integration tests.
# Source it, call plan N (or done_testing at the end), then ok/is/skip.
# Paths: $TESSEL_BUILD (build dir), $TESSEL_SRCDIR (source tree).
: "${TESSEL_BUILD:=build}"
: "${TESSEL_SRCDIR:=$(pwd)}"
_tap_n=0
_tap_fail=0
plan() { echo "1..$1"; }
ok() { # ok COND-EXIT-STATUS DESCRIPTION
    _tap_n=$((_tap_n + 1))
    if [ "$1" -eq 0 ]; then echo "ok $_tap_n - $2"; else
        echo "not ok $_tap_n - $2"; _tap_fail=$((_tap_fail + 1)); fi
}
is() { # is GOT EXPECTED DESCRIPTION
    _tap_n=$((_tap_n + 1))
    if [ "$1" = "$2" ]; then echo "ok $_tap_n - $3"; else
        echo "not ok $_tap_n - $3"; echo "#   got: '$1'"; echo "#   expected: '$2'"
        _tap_fail=$((_tap_fail + 1)); fi
}
# A test fails, never skips, when something it needs is missing on a machine where it should
# exist (a tool, root, a build product, a daemon that does not start): "Bail out!" makes prove
# count the test as failed.  skip_all is the same failure (kept for older tests' wording).
missing() { echo "Bail out! missing: $1"; exit 1; }
skip_all() { missing "$1"; }
# Only for a test that cannot apply to this configuration by its nature (e.g. counting system
# calls under ASan, which makes its own): a real skip, the only one tests/lib/run-one lets through.
not_applicable() { echo "1..0 # SKIP not applicable: $1"; exit 0; }
diag() { echo "# $*"; }
done_testing() { echo "1..$_tap_n"; [ "$_tap_fail" -eq 0 ]; }
