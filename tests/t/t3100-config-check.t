#!/bin/sh
# t3100-config-check.t - tesseld's configuration file and --check-config: the shipped
# etc/tesseld.conf lists every option of the table (and every option of --help is in the
# table), passes --check-config commented and uncommented, and its commented values are the
# real defaults; a bad file (bad value, unknown key, key given twice, a section) is refused
# with exit 1 and one line naming file, line and key; flags win over the file; as root a file
# others can write is refused, and in system mode a --shim others can write; the personal
# default file is read; nothing is created.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
TD_BIN="$TESSEL_BUILD/bin/tesseld"
[ -x "$TD_BIN" ] || missing "tesseld not built"
[ "$(id -u)" -eq 0 ] || missing "root (the owner checks of the file are root's)"

T=$(mktemp -d /tmp/tessel-t3100-XXXXXX) || missing "mktemp"
trap 'rm -rf "$T"' EXIT
CONF="$TESSEL_SRCDIR/etc/tesseld.conf"
cp "$CONF" "$T/shipped.conf" # a root-owned copy: the work tree's directory may be anyone's

# check [ARG...]: tesseld --check-config --data-dir $T/data ARG...; status in $RC, stdout in
# $T/out, stderr in $T/err.
check() {
    "$TD_BIN" --check-config --data-dir "$T/data" "$@" >"$T/out" 2>"$T/err"
    RC=$?
}

check --config "$T/shipped.conf"
is "$RC" 0 "the shipped etc/tesseld.conf passes --check-config"
[ -e "$T/data" ]
ok $((!$?)) "--check-config creates no data directory"
grep -v '^#' "$T/out" | sed 's/ = .*//' >"$T/keys"
[ "$(wc -l <"$T/keys")" -ge 35 ]
ok $? "--check-config prints every key ($(wc -l <"$T/keys") keys)"

# Every key of the table in the shipped file, commented out at its default.
absent=""
while read -r k; do
    grep -q "^#$k = \|^#$k =\$" "$CONF" || absent="$absent $k"
done <"$T/keys"
is "$absent" "" "every key of the table is in etc/tesseld.conf"
# Every option of --help is a key (or a flag of its own: tests, aliases, the file itself).
"$TD_BIN" --help | grep -o '^  --[a-z-]*' | sed 's/^  --//' | sort -u >"$T/help"
notkey=""
while read -r o; do
    case $o in config | check-config | system | personal | no-root-jobs | test-*) continue ;; esac
    grep -qx "$o" "$T/keys" || notkey="$notkey $o"
done <"$T/help"
is "$notkey" "" "every option of tesseld --help is a key of the file"

# Uncommented, the file passes too and says the same as no file at all: its values are the
# defaults.
sed -n 's/^#\([a-z][a-z-]* =.*\)$/\1/p' "$CONF" >"$T/open.conf"
check --config "$T/open.conf"
is "$RC" 0 "etc/tesseld.conf with every key uncommented passes"
grep -v '^#' "$T/out" >"$T/open.out"
printf '' >"$T/empty.conf"
check --config "$T/empty.conf"
grep -v '^#' "$T/out" >"$T/empty.out"
diff "$T/open.out" "$T/empty.out" >"$T/diff"
ok $? "the values written in etc/tesseld.conf are the defaults"
[ -s "$T/diff" ] && sed 's/^/#   /' "$T/diff"

# refused NAME FILE-TEXT WANT: a file with that text is refused, exit 1, WANT on stderr (one
# line), nothing on stdout.
refused() {
    printf '%b' "$2" >"$T/bad.conf"
    check --config "$T/bad.conf"
    _ok=0
    [ "$RC" -eq 1 ] || _ok=1
    grep -qF -- "$3" "$T/err" || _ok=1
    [ "$(wc -l <"$T/err")" -eq 1 ] || _ok=1
    [ -s "$T/out" ] && _ok=1
    ok $_ok "$1: exit 1 ($RC), says '$3'"
    [ $_ok -eq 0 ] || sed 's/^/#   /' "$T/err"
}
refused "a bad size" '# x\nlog-limit = lots\n' "$T/bad.conf:2: log-limit: "
refused "a bad duration" 'kill-wait = 30s\n\njob-log-retention = forever\n' \
    "$T/bad.conf:3: job-log-retention: "
refused "a bad level" 'log-level = verbose\n' \
    "$T/bad.conf:1: log-level: expected error, warning, info or debug"
refused "a bad address" 'listen = example.org:80\n' \
    "$T/bad.conf:1: listen: HOST must be a numeric IPv4 address"
refused "a relative path" 'shim = ./tessel-shim\n' "$T/bad.conf:1: shim: expected an absolute path"
refused "an unknown key" 'kill-wait = 30s\nkillwait = 30s\n' "$T/bad.conf:2: killwait: unknown key"
refused "a key given twice" 'kill-wait = 30s\nlog-level = info\nkill-wait = 1m\n' \
    "$T/bad.conf:3: kill-wait: given twice"
refused "a section" '[tesseld]\nkill-wait = 30s\n' "$T/bad.conf:1: [tesseld]: the file has no sections"
refused "a line without =" 'kill-wait 30s\n' "$T/bad.conf:1: expected KEY = VALUE"
refused "a test-only option" 'test-tick-ms = 5\n' "$T/bad.conf:1: test-tick-ms: unknown key"
refused "contradicting keys" 'no-socket = yes\nno-listen = yes\n' "leave no way to reach tesseld"
check --config "$T/nonexistent.conf"
is "$RC $(head -1 "$T/err")" "1 tesseld: $T/nonexistent.conf: No such file or directory" \
    "a missing --config FILE is refused"

# Flags win over the file.
printf 'kill-wait = 10s\nsubmit-burst = 7\n' >"$T/f.conf"
check --config "$T/f.conf" --kill-wait 20s
is "$RC $(grep -E '^(kill-wait|submit-burst) ' "$T/out" | tr '\n' ' ')" \
    "0 kill-wait = 20s submit-burst = 7 " "a flag wins over the file; the file's other keys stay"
check --config "$T/f.conf" --kill-wait nope
is "$RC $(grep -c 'tesseld: --kill-wait nope: ' "$T/err")" "1 1" "a bad flag over a good file: exit 1"

# As root, a file (or directory) that others can write is refused: it names what root runs.
chmod 0666 "$T/f.conf"
check --config "$T/f.conf"
ok $(($RC != 1)) "a file others can write is refused as root"
grep -q "must be owned by root and writable by no one else" "$T/err"
ok $? "... and says why"
chmod 0644 "$T/f.conf"
mkdir -m 0777 "$T/open"
cp "$T/f.conf" "$T/open/f.conf"
check --config "$T/open/f.conf"
ok $(($RC != 1)) "a file in a directory others can write is refused as root"

# In system mode a --shim (or --interposer) given explicitly must be root's too.
cp "$TESSEL_BUILD/bin/tessel-shim" "$T/shim"
chmod 0777 "$T/shim"
check --system --shim "$T/shim"
ok $(($RC != 1)) "--system: a --shim others can write is refused"
grep -q -- "$T/shim: --shim must be owned by root and writable by no one else" "$T/err"
ok $? "... and says why"
chmod 0755 "$T/shim"
check --system --shim "$T/shim"
is "$RC" 0 "a root-owned --shim that only root can write is taken"

# The personal default: ~/.config/tessel/tesseld.conf when present.
mkdir -p "$T/home/.config/tessel"
printf 'log-level = debug\n' >"$T/home/.config/tessel/tesseld.conf"
HOME="$T/home" XDG_CONFIG_HOME="" check --personal
is "$RC $(grep '^log-level ' "$T/out")" "0 log-level = debug" \
    "--personal reads ~/.config/tessel/tesseld.conf"
grep -q "^# .*$T/home/.config/tessel/tesseld.conf is valid" "$T/out"
ok $? "... and names it"

done_testing
