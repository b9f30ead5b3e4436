# tests/lib/cli.sh - drive the `tessel` CLI in integration tests (source after tap.sh and
# daemon.sh, then call cli_setup after td_start).
#
#   cli_setup           a private config ($TD/config), HOME=$TD/home, no TESSEL_URL/TOKEN
#   tcli ARG...         run tessel; stdout in $TD/o, stderr in $TD/e, exit status in $RC
#   out / errtext       the last run's stdout / stderr
#   one_line_error      0 when the last run printed exactly one line on stderr, starting "tessel"
#   admin ARG...        tcli with the admin's URL and token from the environment
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
