# tests/lib/term.sh - the set-up of the terminal tests (t7030-t7032, docs/terminal.md); source
# after tap.sh, daemon.sh and cli.sh.
#
#   term_daemon         what they need is there, else the test fails (root, expect, jq, curl);
#                       tesseld as root with one simulated GPU and no cgroups, the CLI set up as
#                       the admin's; the account nobody as a Tessel user ($NB: its token), bob
#                       a Tessel user with no job ($BOB: his token); $W: a directory nobody may
#                       use as its cwd
#   nbjob JSON          POST /v1/jobs as nobody: the job's id, or "" ($TD/out: the answer)
#   nbtessel ARG...     the CLI as nobody, in $W
#   texpect SCRIPT      run expect on SCRIPT (a file), its output in $TD/expect.log, status $RC
term_daemon() {
    [ "$(id -u)" = 0 ] || missing "not root: a job's terminal needs tesseld as root"
    command -v expect >/dev/null || missing "expect is needed (scripts/install-deps.sh)"
    command -v jq >/dev/null || missing "jq is needed"
    command -v curl >/dev/null || missing "curl is needed"
    [ -x "$TESSEL_BUILD/bin/tessel" ] || missing "tessel not built"
    getent passwd nobody >/dev/null || missing "no 'nobody' account"
    td_setup
    chmod 755 "$TD" # nobody's jobs reach their cwd below it
    td_start --fake-gpus 1xT4:8G --no-cgroups "$@"
    cli_setup
    TESSEL_URL="$TD_URL"
    TESSEL_TOKEN="$TD_ADMIN"
    export TESSEL_URL TESSEL_TOKEN
    api POST /v1/users '{"name":"nobody"}'
    api POST /v1/tokens '{"user":"nobody"}'
    NB=$(jget .token)
    [ -n "$NB" ] && [ "$NB" != null ] || missing "no token for nobody"
    api POST /v1/users '{"name":"bob"}'
    api POST /v1/tokens '{"user":"bob"}'
    BOB=$(jget .token)
    W="$TD/work"
    mkdir -p "$W"
    chown nobody "$W"
}
nbjob() {
    api POST /v1/jobs "$1" "$NB"
    _id=$(jget .id)
    [ "$_id" != null ] && echo "$_id"
}
nbtessel() {
    (cd "$W" && TESSEL_TOKEN="$NB" "$TCLI" "$@")
}
texpect() {
    expect -f "$1" >"$TD/expect.log" 2>&1
    RC=$?
}
