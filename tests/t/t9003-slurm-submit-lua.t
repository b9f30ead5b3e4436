#!/bin/sh
# t9003: contrib/slurm/job_submit.lua's logic, without Slurm: the unit tests of
# tests/slurm/job_submit_spec.lua (busted), under Lua 5.1 as slurmctld's job_submit/lua runs it.
# t9002 runs the same script in a real slurmctld.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
command -v lua5.1 >/dev/null || missing "lua5.1 (scripts/install-deps.sh)"
command -v busted >/dev/null || missing "busted (lua-busted, scripts/install-deps.sh)"
# busted prints the TAP plan and results itself.
exec lua5.1 "$(command -v busted)" -o TAP "$TESSEL_SRCDIR/tests/slurm/job_submit_spec.lua"
