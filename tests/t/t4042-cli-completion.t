#!/bin/sh
# t4042-cli-completion.t - shell completion of tessel (contrib/completion): bash's, driven the
# way bash drives it (COMP_WORDS, COMP_CWORD, then COMPREPLY), completes every command of
# `tessel --help`, each command's options, option values, and job ids, queue and user names
# from a running tesseld, and stays quiet when tesseld is unreachable; zsh's passes zsh -n,
# is registered by compinit for tessel, and completes commands, options, values and names in
# an interactive zsh (tests/lib/zcomplete.zsh, Tab in a pseudo-terminal).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
command -v bash >/dev/null || missing "bash is needed"
command -v zsh >/dev/null || missing "zsh is needed (scripts/install-deps.sh)"
BASHC="$TESSEL_SRCDIR/contrib/completion/tessel.bash"
ZDIR="$TESSEL_SRCDIR/contrib/completion"

# comp WORD...: bash's completions of the last WORD of `tessel WORD...`, on one line.
comp() {
    bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _tessel
             [ ${#COMPREPLY[@]} -eq 0 ] || printf "%s\n" "${COMPREPLY[@]}"' _ "$BASHC" "$TCLI" "$@" 2>"$TD/ce" | sort | tr '\n' ' '
}
# zcomp LINE: the line zsh makes of LINE after one Tab.
zcomp() {
    zsh -f "$TESSEL_SRCDIR/tests/lib/zcomplete.zsh" "$ZDIR" "$TESSEL_BUILD/bin" "$1" | sed "s/ *$//"
}

cli_admin_daemon
bash -n "$BASHC"; ok $? "tessel.bash is valid bash"

# --- bash: commands and options -------------------------------------------------------------
"$TCLI" --help >"$TD/help"
CMDS=$(sed -n '/^Commands:/,/^$/p' "$TD/help" | awk 'NF > 1 { print $1 }' | sort | tr '\n' ' ')
is "$(comp "" | tr ' ' '\n' | grep -v -x -e help -e version | grep . | tr '\n' ' ')" "$CMDS" \
    "tessel <Tab>: every command of tessel --help"
is "$(comp ru)" "run " "tessel ru<Tab>: run"
is "$(comp --url http://x:1 sho)" "show " "after --url URL, the command still completes"
is "$(comp --)" "--help --json --url --version " "tessel --<Tab>: the global options"
bad=""
for c in $CMDS; do
    "$TCLI" "$c" --help >"$TD/h" 2>&1
    got=$(comp "$c" -)
    for o in $(grep -o -E -- '--[a-z][a-z0-9-]*' "$TD/h" | sort -u); do
        case " $got " in *" $o "*) ;; *) bad="$bad $c:$o" ;; esac
    done
    case " $got " in *" --help "*) ;; *) bad="$bad $c:--help" ;; esac
done
is "$bad" "" "tessel CMD -<Tab>: every option of tessel CMD --help, for every command"
is "$(comp run --gp)" "--gpu --gpu-mem --gpu-mem-oversubscribe --gpus " \
    "tessel run --gp<Tab>: --gpu --gpu-mem --gpu-mem-oversubscribe --gpus"
is "$(comp run --class "")" "inference interactive training " "tessel run --class <Tab>: the classes"
is "$(comp ps --state su)" "succeeded suspended " "tessel ps --state su<Tab>: the states"
is "$(comp queues add q --placement "")" "inherit pack spread " "--placement <Tab>: its values"
is "$(comp queues "")" "add list rm set " "tessel queues <Tab>: its subcommands"
is "$(comp run --gpu "")" "" "--gpu <Tab>: nothing (an amount)"

# --- bash: names from tesseld -------------------------------------------------------------------
admin queues add research; admin queues add vision --parent research
admin users add alice
admin run -d -- sleep 3000; J1=$(out)
admin run -d -- true; J2=$(out)
wait_for '[ "$(state_of '"$J2"')" = succeeded ]'
is "$(comp run --queue "")" "default research vision " "--queue <Tab>: the queues, nested ones too"
is "$(comp queues rm v)" "vision " "tessel queues rm v<Tab>: vision"
is "$(comp users rm "")" "admin alice " "tessel users rm <Tab>: the users"
is "$(comp kill "")" "$J1 " "tessel kill <Tab>: the active job"
is "$(comp logs "")" "$J1 $J2 " "tessel logs <Tab>: finished jobs too"
TESSEL_URL=http://127.0.0.1:1 comp kill "" >"$TD/o"
is "$(cat "$TD/o")|$(cat "$TD/ce")" "|" "tesseld unreachable: no ids, and nothing on the terminal"

# --- zsh ----------------------------------------------------------------------------------------
zsh -n "$ZDIR/_tessel"; ok $? "_tessel is valid zsh (zsh -n)"
reg=$(zsh -f -c 'fpath=("$1" $fpath); autoload -Uz compinit; compinit -u -D; print -r -- $_comps[tessel]' _ "$ZDIR")
is "$reg" "_tessel" "compinit registers _tessel for tessel"
is "$(zcomp 'tessel wh')" "tessel whoami" "zsh: tessel wh<Tab>: whoami"
is "$(zcomp 'tessel run --cl')" "tessel run --class" "zsh: tessel run --cl<Tab>: --class"
is "$(zcomp 'tessel run --class tr')" "tessel run --class training" "zsh: --class tr<Tab>: training"
is "$(zcomp 'tessel ps --state susp')" "tessel ps --state suspended" "zsh: ps --state susp<Tab>: suspended"
is "$(zcomp 'tessel queues rm v')" "tessel queues rm vision" "zsh: tessel queues rm v<Tab>: vision (from tesseld)"
is "$(zcomp 'tessel kill ')" "tessel kill $J1" "zsh: tessel kill <Tab>: the active job's id"

admin kill "$J1" >/dev/null
td_stop; ok $? "tesseld stops cleanly (no sanitizer report)"
done_testing
