# tests/lib: the shell helpers of the integration tests, and the checks of the test set-up.
# The runner refuses skips and a daemon that does not start fails its test (run-one, daemon.sh).
TESTS += tests/t/t0010-tests-guard.t
tests/t/t0010-tests-guard.t: $(O)/bin/tesseld
TESTS += tests/t/t0012-public-headers.t
# Every tests/t/*.t is in TESTS (make list-tests).
TESTS += tests/t/t0013-tests-registered.t
