# tests/lib/cli.sh - drive the `tessel` CLI in integration tests (source after tap.sh and
# daemon.sh, then call cli_setup after td_start).
#
#   cli_setup           a private config ($TD/config), HOME=$TD/home, no TESSEL_URL/TOKEN
#   tcli ARG...         run tessel; stdout in $TD/o, stderr in $TD/e, exit status in $RC
#   out / errtext       the last run's stdout / stderr
#   one_line_error      0 when the last run printed exactly one line on stderr, starting "tessel"
#   admin ARG...        tcli with the admin's URL and token from the environment
#   cli_admin_daemon    the usual start of a CLI test: jq and tesseld there (else fail), a
#                       tesseld with one fake 24G GPU and no cgroups, cli_setup, and
#                       TESSEL_URL / TESSEL_TOKEN exported as its admin's
TCLI="$TESSEL_BUILD/bin/tessel"

cli_setup() {
    mkdir -p "$TD/home"
    HOME="$TD/home"
    TESSEL_CONFIG="$TD/config"
    export HOME TESSEL_CONFIG
    unset TESSEL_URL TESSEL_TOKEN XDG_CONFIG_HOME
}

tcli() {
    "$TCLI" "$@" >"$TD/o" 2>"$TD/e" </dev/null
    RC=$?
}

out() { cat "$TD/o"; }
errtext() { cat "$TD/e"; }

one_line_error() {
    [ "$(wc -l <"$TD/e")" -eq 1 ] && grep -q '^tessel' "$TD/e"
}

admin() {
    TESSEL_URL="$TD_URL" TESSEL_TOKEN="$TD_ADMIN" tcli "$@"
}

# state_of ID [TOKEN] -> the job's state, through the CLI (ps -a --json)
state_of() {
    TESSEL_URL="$TD_URL" TESSEL_TOKEN="${2:-$TD_ADMIN}" "$TCLI" ps -a --limit 1000000 --json 2>/dev/null |
        jq -r ".jobs[] | select(.id == $1) | .state"
}

cli_admin_daemon() {
    command -v jq >/dev/null || missing "jq is needed"
    [ -x "$TESSEL_BUILD/bin/tesseld" ] || missing "tesseld not built"
    td_setup
    td_start --fake-gpus 1xRTX4090:24G --no-cgroups || missing "tesseld did not start"
    cli_setup
    TESSEL_URL="$TD_URL"
    TESSEL_TOKEN="$TD_ADMIN"
    export TESSEL_URL TESSEL_TOKEN
}
