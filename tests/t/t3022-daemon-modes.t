#!/bin/sh
# t3022-daemon-modes.t - system mode and personal mode.  System mode (root; --system, the
# default as root): data directory 0711 with a private store and admin token, socket 0666 in a
# 0755 directory tesseld creates, so every local user reaches it.  Personal mode (a user's own
# tesseld, the default when not root): data under ~/.local/share/tessel, socket
# $XDG_RUNTIME_DIR/tessel/tesseld.sock, 0600 in a 0700 directory: another local user cannot
# even connect, the owner is its admin.  Refused, with a one-line reason and nothing changed:
# --system when not root, a socket directory others may write (anyone could swap the socket),
# a path that is not a socket, a socket where another tesseld listens (that one keeps serving).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/local.sh"
command -v curl >/dev/null && command -v jq >/dev/null
need $? "curl and jq"
[ "$(id -u)" = 0 ]
need $? "root (system mode, and switching to local accounts)"
local_account tslsa && local_account tslsb
need $? "useradd to create the accounts tslsa and tslsb"
B="$TESSEL_BUILD/bin"

td_setup
chmod 755 "$TD"

# --- system mode --------------------------------------------------------------------------------
td_start --system --socket "$TD/run/tessel/tesseld.sock" --fake-gpus 1xT4:16G --no-cgroups
need $? "a tesseld that starts"
TD_SOCK="$TD/run/tessel/tesseld.sock" # the last --socket wins over td_start's own
is "$(stat -c %a "$TD/data") $(stat -c %a "$TD/data/jobs")" "711 711" \
    "system mode: data dir and jobs/ traversable, not listable"
is "$(stat -c %a "$TD/data/tessel.db") $(stat -c %a "$TD/data/admin.token")" "600 600" \
    "the store and the admin token are private"
is "$(stat -c '%a %U' "$TD/run/tessel") $(stat -c '%F %a %U' "$TD_SOCK")" \
    "755 root socket 666 root" "the socket's directory is created 0755, the socket is 0666"
grep -q "unix:$TD_SOCK (system mode: every local user)" "$TD/tesseld.log"
ok $? "tesseld says which mode it runs in"
sock_api tslsa GET /v1/whoami
is "$CODE $(jget .user)" "200 tslsa" "any local user reaches it: tslsa is tslsa"

# A second tesseld (another data dir) on the same socket path: refused, the first keeps it.
"$B/tesseld" --system --data-dir "$TD/data2" --listen 127.0.0.1:0 --socket "$TD_SOCK" \
    --fake-gpus 1xT4:16G --no-cgroups >"$TD/second.log" 2>&1
RC=$?
is "$RC $(cat "$TD/second.log" | grep -c 'another server is listening there')" "1 1" \
    "a second tesseld on a live socket exits 1 and says why"
sock_api tslsb GET /v1/whoami
is "$CODE $(jget .user)" "200 tslsb" "the first tesseld still serves its socket"
td_stop
ok $? "tesseld stops cleanly"

# A socket directory others may write, or something not a socket at the path: refused.
mkdir -p "$TD/open"
chmod 1777 "$TD/open"
"$B/tesseld" --data-dir "$TD/data" --listen 127.0.0.1:0 --socket "$TD/open/tesseld.sock" \
    --fake-gpus 1xT4:16G --no-cgroups >"$TD/open.log" 2>&1
RC=$?
is "$RC $(grep -c 'writable by no one else' "$TD/open.log") $(ls "$TD/open" | wc -l)" "1 1 0" \
    "a world-writable socket directory is refused (anyone could swap the socket), nothing made"
mkdir -p "$TD/dir"
chmod 755 "$TD/dir"
echo keep >"$TD/dir/tesseld.sock"
"$B/tesseld" --data-dir "$TD/data" --listen 127.0.0.1:0 --socket "$TD/dir/tesseld.sock" \
    --fake-gpus 1xT4:16G --no-cgroups >"$TD/file.log" 2>&1
RC=$?
is "$RC $(grep -c 'not a socket; not replacing it' "$TD/file.log") $(cat "$TD/dir/tesseld.sock")" \
    "1 1 keep" "a regular file at the socket path is refused and left as it was"

# --- personal mode, as an unprivileged user -------------------------------------------------------
H="$TD/home-tslsa"
mkdir -p "$H" "$TD/xdg-tslsa"
chown tslsa "$H" "$TD/xdg-tslsa"
chmod 700 "$H" "$TD/xdg-tslsa"
PERSONAL="HOME=$H XDG_RUNTIME_DIR=$TD/xdg-tslsa"
as tslsa "$PERSONAL $B/tesseld --system --no-listen" >"$TD/sys.log" 2>&1
RC=$?
is "$RC $(grep -c -- '--system needs root' "$TD/sys.log")" "2 1" "--system as a user: refused"
su -s /bin/sh tslsa -c "cd /; exec env -i PATH=/usr/bin:/bin ASAN_OPTIONS='${ASAN_OPTIONS:-}' \
    $PERSONAL $B/tesseld --no-listen --fake-gpus 1xT4:16G --no-cgroups" >"$TD/personal.log" 2>&1 &
PP=$!
TD_PIDS="$TD_PIDS $PP"
PS="$TD/xdg-tslsa/tessel/tesseld.sock"
wait_for "[ -S '$PS' ] || ! kill -0 $PP"
ok $? "tslsa starts a personal tesseld (the default when not root)"
is "$(stat -c '%a %U' "$H/.local/share/tessel") $(stat -c '%a %U' "$TD/xdg-tslsa/tessel")" \
    "700 tslsa 700 tslsa" "its data in ~/.local/share/tessel and its socket's directory: 0700, tslsa's"
is "$(stat -c '%a %U' "$PS")" "600 tslsa" "the socket is 0600"
grep -q "unix:$PS (personal mode: this user alone)" "$TD/personal.log"
ok $? "tesseld says personal mode"
CLI="XDG_RUNTIME_DIR=$TD/xdg-tslsa HOME=$H TESSEL_CONFIG=/nonexistent/c $B/tessel"
is "$(as tslsa "$CLI whoami" 2>&1)" "admin (admin) at unix:$PS" \
    "tslsa's tessel finds the socket; tslsa is its own tesseld's admin"
is "$(as tslsa "$CLI run -- id -un" 2>&1)" "tslsa" "and its jobs run as tslsa"
as tslsb "curl -s -o /dev/null -w %{http_code} --unix-socket $PS http://localhost/v1/whoami" \
    >"$TD/o" 2>&1
is "$(cat "$TD/o")" "000" "tslsb cannot even connect to tslsa's socket"
as tslsb "XDG_RUNTIME_DIR=$TD/xdg-tslsa TESSEL_CONFIG=/nonexistent/c TESSEL_URL=unix:$PS $B/tessel whoami" \
    >"$TD/o" 2>"$TD/e"
is "$? $(grep -c 'cannot reach tesseld' "$TD/e")" "1 1" "tessel as tslsb: cannot reach it, one clear line"
# SIGTERM to tesseld itself (the child of su), whose exit status su passes on.
kill -TERM "$(pgrep -P "$PP")"
wait "$PP"
ok $? "the personal tesseld stops cleanly"
grep -q -E 'Sanitizer|runtime error' "$TD/personal.log"
is "$?" "1" "no sanitizer report in the personal tesseld's log"
[ ! -e "$PS" ]
ok $? "and removes its socket"
done_testing
