#!/bin/sh
# t0013-tests-registered.t - every numbered test under tests/t is one the suite runs: `make
# list-tests` (the TESTS that `make test` passes to tests/run, from every module.mk) names each
# tests/t/*.t.  A test written but not registered would never run in CI, and its behaviour
# would go unchecked while looking covered (twelve such tests were found on 2026-11-28).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
command -v make >/dev/null || missing "make is needed"
T=$(mktemp -d /tmp/tessel-t0013.XXXXXX)
trap 'rm -rf "$T"' EXIT
make -s -C "$TESSEL_SRCDIR" list-tests >"$T/listed" 2>"$T/err"
is "$?" 0 "make list-tests answers"
n=$(grep -c '^tests/t/' "$T/listed")
[ "$n" -gt 200 ]; ok $? "it names the numbered tests ($n)"
(cd "$TESSEL_SRCDIR" && ls tests/t/*.t) >"$T/all"
grep '^tests/t/' "$T/listed" | sort -u >"$T/reg"
sort -u "$T/all" >"$T/have"
comm -23 "$T/have" "$T/reg" >"$T/missing"
[ ! -s "$T/missing" ]; ok $? "every tests/t/*.t is registered$( [ -s "$T/missing" ] && printf ' (missing: %s)' "$(tr '\n' ' ' <"$T/missing")")"
comm -13 "$T/have" "$T/reg" >"$T/ghost"
[ ! -s "$T/ghost" ]; ok $? "every registered test exists$( [ -s "$T/ghost" ] && printf ' (absent: %s)' "$(tr '\n' ' ' <"$T/ghost")")"
done_testing
