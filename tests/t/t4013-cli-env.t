#!/bin/sh
# t4013-cli-env.t - the job's environment as with `sbatch --export=ALL`: `tessel run` sends the
# caller's (a virtualenv's PATH and VIRTUAL_ENV reach the job), --no-env and --export=NONE do
# not, --env-file (comments, --env over it, FILE:LINE on a bad line), and what Tessel sets wins:
# a caller's CUDA_VISIBLE_DEVICES or TESSEL_CUDA_MEM_LIMIT never reaches the job, an explicit
# one is refused (CLI and API), the account's HOME/USER/SHELL replace the caller's, and an
# environment too large is refused with a clear message (413 in the API).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
. "$TESSEL_SRCDIR/tests/lib/local.sh"
[ "$(id -u)" -eq 0 ] || missing "root (the account's HOME replaces the caller's)"
local_account tslenv || missing "a system account (useradd)"
cli_admin_daemon
chmod 755 "$TD"

# A virtualenv-like directory: its bin/ first on PATH, VIRTUAL_ENV set, as `activate` does.
V="$TD/venv"
mkdir -p "$V/bin"
printf '#!/bin/sh\necho "venv-python $VIRTUAL_ENV"\n' >"$V/bin/venv-python"
chmod 755 "$V/bin/venv-python"
PATH="$V/bin:$PATH" VIRTUAL_ENV="$V" CONDA_DEFAULT_ENV=torch tcli run --cwd / --shell \
    'venv-python; echo "conda=$CONDA_DEFAULT_ENV"'
is "$RC" 0 "a job in a virtualenv's environment runs"
is "$(out)" "venv-python $V
conda=torch" "... its PATH finds the venv's program, VIRTUAL_ENV and CONDA_* came along"

FOO=bar tcli run --cwd / --no-env --shell 'echo "FOO=${FOO-unset} VIRTUAL_ENV=${VIRTUAL_ENV-unset}"'
is "$(out)" "FOO=unset VIRTUAL_ENV=unset" "--no-env: nothing of the caller's environment"
FOO=bar tcli run --cwd / --no-env -e FOO -e B=2 --shell 'echo "$FOO $B"'
is "$(out)" "bar 2" "--no-env with -e FOO (copied) and -e B=2"
FOO=bar tcli run --cwd / --export=NONE --shell 'echo "FOO=${FOO-unset}"'
is "$(out)" "FOO=unset" "--export=NONE (Slurm's spelling)"
FOO=bar tcli run --cwd / --export=ALL,B=3 --shell 'echo "$FOO $B"'
is "$(out)" "bar 3" "--export=ALL,B=3"

cat >"$TD/job.env" <<'EOT'
# settings for the job
A=from-file

B=x=y
C=overridden
EOT
tcli run --cwd / --no-env --env-file "$TD/job.env" -e C=flag --shell 'echo "$A|$B|$C"'
is "$(out)" "from-file|x=y|flag" "--env-file: comments and blank lines skipped, --env wins"
printf 'A=1\nnot a line\n' >"$TD/bad.env"
tcli run --cwd / --env-file "$TD/bad.env" true
is "$RC" 2 "--env-file with a bad line: usage error"
one_line_error; ok $? "... one line: $(head -c 200 "$TD/e")"
grep -q "$TD/bad.env:2:" "$TD/e"; ok $? "... naming FILE:LINE"
tcli run --cwd / --env-file "$TD/nope.env" true
is "$RC" 2 "--env-file of a missing file: usage error"

# What Tessel sets wins.
CUDA_VISIBLE_DEVICES=7 TESSEL_CUDA_MEM_LIMIT=99999999999 NVIDIA_VISIBLE_DEVICES=all \
    tcli run --cwd / --gpu 0.5 --gpu-mem 4G --shell \
    'echo "$CUDA_VISIBLE_DEVICES $TESSEL_CUDA_MEM_LIMIT ${NVIDIA_VISIBLE_DEVICES-unset}"'
is "$(out)" "0 4294967296 unset" \
    "a caller's CUDA_VISIBLE_DEVICES / TESSEL_CUDA_MEM_LIMIT / NVIDIA_VISIBLE_DEVICES do not win"
tcli run --cwd / -e CUDA_VISIBLE_DEVICES=7 true
is "$RC" 2 "--env CUDA_VISIBLE_DEVICES=7: usage error"
grep -q "set by Tessel" "$TD/e"; ok $? "... saying Tessel sets it"
tcli run --cwd / -e TESSEL_CUDA_MEM_LIMIT=1T true
is "$RC" 2 "--env TESSEL_CUDA_MEM_LIMIT=1T: usage error"
for v in CUDA_VISIBLE_DEVICES TESSEL_CUDA_MEM_LIMIT TESSEL_DEVICE_REGISTRY TESSEL_CUDA_MEM_LIMIT_1; do
    api POST /v1/jobs "{\"argv\":[\"true\"],\"gpu\":0.5,\"env\":{\"$v\":\"x\"}}"
    is "$CODE" 400 "API: env $v is refused (400)"
done
is "$(jget .error.field)" env "... field env"

# The account's HOME, USER, LOGNAME and SHELL replace the caller's.
admin users add tslenv
tok=$(out)
TESSEL_TOKEN=$tok HOME=/caller/home USER=caller SHELL=/bin/zsh tcli run --cwd / --shell \
    'echo "$HOME $USER $LOGNAME $SHELL $(id -un)"'
is "$(out)" "/nonexistent tslenv tslenv /usr/sbin/nologin tslenv" \
    "the account's HOME, USER, LOGNAME and SHELL win over the caller's"

# Too large: refused before sending (CLI), 413 from the API.
BIG=$(head -c 50000 /dev/zero | tr '\0' x)
BIG=$BIG tcli run --cwd / true
is "$RC" 2 "an environment above 48 KiB: usage error"
grep -q -- "--no-env" "$TD/e"; ok $? "... that says what to do: $(head -c 200 "$TD/e")"
api POST /v1/jobs "{\"argv\":[\"true\"],\"env\":{\"BIG\":\"$BIG\"}}"
is "$CODE" 413 "API: env above 48 KiB is 413"
jget .error.message | grep -q "at most 49152"; ok $? "... saying the limit"
body=$(jq -cn '{argv: ["true"], env: ([range(1025)] | map({key: "V\(.)", value: "1"}) | from_entries)}')
api POST /v1/jobs "$body"
is "$CODE" 413 "API: env of 1025 variables is 413"
tcli ps -a --json
is "$(jq '[.jobs[] | select(.state != "succeeded")] | length' "$TD/o")" 0 \
    "every job that ran succeeded, and no refused one was stored"

td_stop; ok $? "tesseld stops cleanly"
done_testing
