# tessel.bash - bash completion for tessel(1).
#
# Install as /usr/share/bash-completion/completions/tessel (or source it).  Commands and
# options come from the tessel being completed (`tessel --help`, `tessel CMD --help`: no
# network), so they follow the binary; job ids, queue, user and token names come from tesseld
# through tessel itself (`tessel ps`, `tessel queues`, ...), and are left out when it cannot be
# reached.  Nothing is written anywhere.

# The first column of a tessel table (after its header line, or after the line starting with
# HEADER when one is given).
_tessel_column()
{
    local header=$1
    shift
    "$@" 2>/dev/null </dev/null | awk -v h="$header" '
        !started { if (h == "" || $1 == h) started = 1; next }
        NF { print $1 }'
}

_tessel_commands()
{
    "$1" --help 2>/dev/null </dev/null |
        sed -n '/^Commands:/,/^$/s/^  \([a-z][a-z-]*\)  .*/\1/p'
}

_tessel_options()
{
    {
        "$1" "$2" --help 2>/dev/null </dev/null |
            grep -o -E -- '(^| |\[)--?[a-zA-Z][a-zA-Z0-9-]*' | sed 's/^[ []*//'
        echo --help
    } | sort -u
}

_tessel()
{
    local cur prev tessel=${COMP_WORDS[0]} cmd="" cmdi=0 i w
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=""
    [ "$COMP_CWORD" -gt 0 ] && prev=${COMP_WORDS[COMP_CWORD - 1]}
    # The command: the first word that is not a global option (--url takes a value).
    for ((i = 1; i < COMP_CWORD; i++)); do
        w=${COMP_WORDS[i]}
        case $w in
        --url) ((i++)) ;;
        -*) ;;
        *) cmd=$w cmdi=$i; break ;;
        esac
    done
    if [ -z "$cmd" ]; then
        case $prev in
        --url) return 0 ;;
        esac
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "--url --json --help --version" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$(_tessel_commands "$tessel") help version" -- "$cur"))
        fi
        return 0
    fi
    # Values of options.
    case $prev in
    --queue | --parent)
        COMPREPLY=($(compgen -W "$(_tessel_column QUEUE "$tessel" queues)" -- "$cur"))
        return 0 ;;
    --user | --owner)
        COMPREPLY=($(compgen -W "$(_tessel_column "" "$tessel" users)" -- "$cur"))
        return 0 ;;
    --project)
        COMPREPLY=($(compgen -W "$(_tessel_column "" "$tessel" projects)" -- "$cur"))
        return 0 ;;
    --role)
        COMPREPLY=($(compgen -W "owner member viewer" -- "$cur"))
        return 0 ;;
    --image)
        COMPREPLY=($(compgen -W "$(_tessel_column IMAGE "$tessel" images)" -- "$cur"))
        return 0 ;;
    --class)
        COMPREPLY=($(compgen -W "interactive training inference" -- "$cur"))
        return 0 ;;
    --state)
        COMPREPLY=($(compgen -W "pending running suspended succeeded failed cancelled preempted active finished" -- "$cur"))
        return 0 ;;
    --placement)
        COMPREPLY=($(compgen -W "spread pack inherit" -- "$cur"))
        return 0 ;;
    --allow-roles)
        COMPREPLY=($(compgen -W "admin user none" -- "$cur"))
        return 0 ;;
    --env-file | --token-file)
        COMPREPLY=($(compgen -f -- "$cur"))
        return 0 ;;
    --cwd | --data-dir)
        COMPREPLY=($(compgen -d -- "$cur"))
        return 0 ;;
    --gpu | --gpus | --gpu-mem | --cpu | --mem | --priority | --name | -e | --env | --time | -t | \
        --after | --dependency | --array | --limit | -n | --tail | --since | --timeout | \
        --guarantee | --weight | --max-gpu | --allow-users | --allow-groups | --reserve-after | \
        --token | --url | --shards-per-gpu | --fake-gpus | --node | --description | --service)
        return 0 ;;
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(_tessel_options "$tessel" "$cmd")" -- "$cur"))
        return 0
    fi
    # Arguments: the word after the command, then what each command takes.
    local sub=""
    [ $((cmdi + 1)) -lt "$COMP_CWORD" ] && sub=${COMP_WORDS[cmdi + 1]}
    case $cmd in
    help)
        COMPREPLY=($(compgen -W "$(_tessel_commands "$tessel")" -- "$cur")) ;;
    kill | suspend | resume | open)
        COMPREPLY=($(compgen -W "$(_tessel_column ID "$tessel" ps)" -- "$cur")) ;;
    logs | show)
        COMPREPLY=($(compgen -W "$(_tessel_column ID "$tessel" ps -a)" -- "$cur")) ;;
    queues)
        if [ -z "$sub" ]; then
            COMPREPLY=($(compgen -W "list add set rm" -- "$cur"))
        elif [ "$sub" = set ] || [ "$sub" = rm ]; then
            COMPREPLY=($(compgen -W "$(_tessel_column QUEUE "$tessel" queues)" -- "$cur"))
        fi ;;
    users)
        if [ -z "$sub" ]; then
            COMPREPLY=($(compgen -W "list add rm" -- "$cur"))
        elif [ "$sub" = rm ]; then
            COMPREPLY=($(compgen -W "$(_tessel_column "" "$tessel" users)" -- "$cur"))
        fi ;;
    tokens)
        if [ -z "$sub" ]; then
            COMPREPLY=($(compgen -W "list add rm" -- "$cur"))
        elif [ "$sub" = rm ]; then
            COMPREPLY=($(compgen -W "$(_tessel_column "" "$tessel" tokens)" -- "$cur"))
        fi ;;
    projects)
        if [ -z "$sub" ]; then
            COMPREPLY=($(compgen -W "ls show create rm add-member rm-member set-role default" -- "$cur"))
        elif [ "$sub" != create ] && [ $((cmdi + 2)) -eq "$COMP_CWORD" ]; then
            COMPREPLY=($(compgen -W "$(_tessel_column "" "$tessel" projects)" -- "$cur"))
        elif [ "$sub" = set-role ] && [ $((cmdi + 4)) -eq "$COMP_CWORD" ]; then
            COMPREPLY=($(compgen -W "owner member viewer" -- "$cur"))
        fi ;;
    folders | folder)
        if [ -z "$sub" ]; then
            COMPREPLY=($(compgen -W "ls show create share unshare du rm quota" -- "$cur"))
        elif [ "$sub" != create ] && [ $((cmdi + 2)) -eq "$COMP_CWORD" ]; then
            COMPREPLY=($(compgen -W "$(_tessel_column "" "$tessel" folders)" -- "$cur"))
        elif { [ "$sub" = share ] || [ "$sub" = unshare ]; } && [ $((cmdi + 3)) -eq "$COMP_CWORD" ]; then
            COMPREPLY=($(compgen -W "$(_tessel_column "" "$tessel" users)" -- "$cur"))
        fi ;;
    run | notebook)
        # The job's command: programs, then files.
        COMPREPLY=($(compgen -c -- "$cur") $(compgen -f -- "$cur")) ;;
    esac
    return 0
}
complete -F _tessel tessel
