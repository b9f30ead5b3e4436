# tests/lib: the shell helpers of the integration tests and tests/run's own checks.
# The runner refuses skips and a daemon that does not start fails its test (run-one, daemon.sh).
TESTS += tests/t/t0010-tests-guard.t
tests/t/t0010-tests-guard.t: $(O)/bin/tesseld
