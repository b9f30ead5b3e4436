#!/bin/sh
# t4041-cli-man.t - the man pages (make man: docs/man/*.md through go-md2man into $O/man):
# each renders with man -l without a warning; tessel(1) has every command of `tessel --help`
# and, in that command's section, every option of `tessel COMMAND --help`; tesseld(8) every
# option of `tesseld --help`; libtessel-cuda(7) every variable of docs/interposer.md's
# configuration table.  A page with an option taken out is caught (the check can fail).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
command -v man >/dev/null || missing "man (man-db) is needed"
command -v go-md2man >/dev/null || missing "go-md2man is needed (scripts/install-deps.sh)"
MAN="$TESSEL_BUILD/man"
for p in tessel.1 tesseld.8 libtessel-cuda.7; do
    [ -s "$MAN/$p" ] || missing "$MAN/$p not built (make man)"
done
TD=$(mktemp -d /tmp/tessel-t4041-XXXXXX)
trap 'rm -rf "$TD"' EXIT

# render PAGE OUT: man's text, one paragraph a line (wide enough never to wrap an option).
render() { MANWIDTH=1000 man --warnings -l "$1" 2>"$2.err" | col -bx >"$2"; }

for p in tessel.1 tesseld.8 libtessel-cuda.7; do
    render "$MAN/$p" "$TD/$p.txt"
    st=$?
    is "$st $(wc -c <"$TD/$p.txt.err")" "0 0" "man -l $p renders, without a warning"
    name=${p%.*}
    grep -q "^ *$name - " "$TD/$p.txt"; ok $? "$p: NAME says '$name - ...'"
done

# options FILE: the options a --help text documents: long ones anywhere, short ones where an
# option line starts with them ("  -e, --env").
options() {
    { grep -o -E -- '--[a-z][a-z0-9-]*' "$1"; grep -o -E -- '^ +-[a-zA-Z],' "$1" | tr -d ' ,'; } |
        grep -v -E -- '^--(help)$' | sort -u
}
# section TXT CMD: the lines of CMD's section of a rendered tessel(1) (from its heading, a line
# starting with CMD at column 0, to the next such heading).
section() {
    awk -v c="$2" '/^[^ ]/ { on = ($1 == c) } on' "$1"
}
# check_cli TXT: 0 when every command of tessel --help has its section with all its options;
# else prints what is missing.
check_cli() {
    _bad=0
    for c in $CMDS; do
        section "$1" "$c" >"$TD/sec"
        if [ ! -s "$TD/sec" ]; then echo "no section for $c"; _bad=1; continue; fi
        "$TESSEL_BUILD/bin/tessel" "$c" --help >"$TD/help" 2>&1
        for o in $(options "$TD/help"); do
            grep -q -F -e "$o" "$TD/sec" || { echo "$c: $o missing"; _bad=1; }
        done
    done
    return $_bad
}
"$TESSEL_BUILD/bin/tessel" --help >"$TD/help" 2>&1
CMDS=$(sed -n '/^Commands:/,/^$/p' "$TD/help" | awk 'NF > 1 { print $1 }')
is "$(echo $CMDS | wc -w)" "26" "tessel --help lists 26 commands"
check_cli "$TD/tessel.1.txt" >"$TD/miss"; ok $? "tessel(1) documents every command and, in its section, each of its options"
sed 's/^/# /' "$TD/miss"
for o in --url --json --help --version; do
    grep -q -F -e "$o" "$TD/tessel.1.txt" || break
done
ok $? "tessel(1): the global options (--url, --json, --help, --version)"
grep -q -E '^ *TESSEL_URL$' "$TD/tessel.1.txt" && grep -q -E '^ *TESSEL_TOKEN$' "$TD/tessel.1.txt"
ok $? "tessel(1): ENVIRONMENT has TESSEL_URL and TESSEL_TOKEN"
for s in "EXIT STATUS" ENVIRONMENT FILES "SEE ALSO"; do
    grep -q "^$s\$" "$TD/tessel.1.txt"; ok $? "tessel(1) has the section $s"
done

# The check fails on a page without one option of one command (--gpus of run) ...
grep -v -F -e '**--gpus** *N*' "$TESSEL_SRCDIR/docs/man/tessel.1.md" >"$TD/cut.1.md"
go-md2man -in "$TD/cut.1.md" -out "$TD/cut.1" && render "$TD/cut.1" "$TD/cut.txt"
check_cli "$TD/cut.txt" >"$TD/miss"
is "$?:$(cat "$TD/miss")" "1:run: --gpus missing" "a page without run's --gpus is caught, naming it"
# ... and on one where an option is in another command's section only (logs' --follow under
# kill).
grep -v -F -e '**-f**, **--follow**' "$TESSEL_SRCDIR/docs/man/tessel.1.md" |
    sed 's/^Cancel jobs: /Cancel jobs (no --follow): /' >"$TD/cut.1.md"
go-md2man -in "$TD/cut.1.md" -out "$TD/cut.1" && render "$TD/cut.1" "$TD/cut.txt"
grep -q -F -e 'no --follow' "$TD/cut.txt"; ok $? "(the copy has --follow in kill's section)"
check_cli "$TD/cut.txt" >"$TD/miss"
is "$?:$(cat "$TD/miss")" "1:logs: --follow missing" "logs' --follow documented only under kill is caught"

"$TESSEL_BUILD/bin/tesseld" --help >"$TD/dhelp" 2>&1
n=0 miss=""
for o in $(options "$TD/dhelp"); do
    n=$((n + 1))
    grep -q -F -e "$o" "$TD/tesseld.8.txt" || miss="$miss $o"
done
[ "$n" -gt 30 ]; ok $? "tesseld --help lists its options ($n)"
is "$miss" "" "tesseld(8) documents every option of tesseld --help"

vars=$(sed -n '/^## Configuration/,/^## /p' "$TESSEL_SRCDIR/docs/interposer.md" |
    grep -o -E 'TESSEL_[A-Z_]+[A-Z]' | sort -u)
miss=""
for v in $vars; do
    grep -q -F -e "$v" "$TD/libtessel-cuda.7.txt" || miss="$miss $v"
done
[ "$(echo $vars | wc -w)" -ge 6 ]; ok $? "docs/interposer.md's configuration names its variables ($(echo $vars | wc -w))"
is "$miss" "" "libtessel-cuda(7) documents each of them"
done_testing
