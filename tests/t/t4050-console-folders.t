#!/bin/sh
# t4050-console-folders.t - the console's folder pages in a real browser (Debian's Chromium,
# playwright-core: web/test/folders.mjs): the owner lists her folders, opens one, uploads by
# drag and drop and with the file picker (here and in a subdirectory), downloads a file; a
# reader (ro) sees and is refused an upload with tesseld's reason; an outsider is told the
# folder does not exist.  The uploads are then checked on disk: the owner's account's files.
# Screenshots: $TESSEL_BUILD/screenshots/folders/console-folders*.png (docs/screenshots/,
# docs/console.md).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/local.sh"
CHROMIUM=${TESSEL_CHROMIUM:-/usr/bin/chromium}
WEBSRC=$TESSEL_SRCDIR/web
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
[ -x "$CHROMIUM" ] || missing "no Chromium at $CHROMIUM (scripts/install-deps.sh --browser)"
command -v node >/dev/null || missing "no node (scripts/install-deps.sh --browser)"
[ -f "$WEBSRC/node_modules/playwright-core/package.json" ] ||
    missing "web/node_modules is missing: (cd web && npm ci) (make does it when npm is present)"
[ -f "$TESSEL_BUILD/share/tessel/web/app/folders.js" ] || missing "console not installed (run make)"
[ "$(id -u)" = 0 ] || missing "root (tesseld makes folders as root, for local accounts)"
for u in tslfa tslfb tslfc; do local_account $u || missing "useradd to create the account $u"; done

td_setup
chmod 711 "$TD"
td_start --fake-gpus 1xT4:16G --no-cgroups
ROOT="$TD/data/folders"
A=$(token_of tslfa)
B=$(token_of tslfb)
C=$(token_of tslfc)
api POST /v1/folders '{"name":"data"}' "$A"
api POST /v1/folders '{"name":"scratch"}' "$A"
api POST /v1/folders/data/shares '{"user":"tslfb","mode":"ro"}' "$A"
is "$CODE" 200 "folder data of tslfa, shared ro with tslfb"
printf 'read me\n' >"$ROOT/data/readme.txt"
mkdir "$ROOT/data/sub" && printf 'inner\n' >"$ROOT/data/sub/inner.txt"
chown -R tslfa "$ROOT/data/readme.txt" "$ROOT/data/sub"

SHOTS=$TESSEL_BUILD/screenshots/folders
rm -rf "$SHOTS"
TESSEL_URL=$TD_URL OWNER=$A READER=$B OUTSIDER=$C SHOTS=$SHOTS \
    CHROMIUM=$CHROMIUM HOME=$TD timeout 300 node "$WEBSRC/test/folders.mjs" >"$TD/browser.out" 2>&1
st=$?
while IFS= read -r line; do
    case $line in
    "PASS "*) ok 0 "${line#PASS }" ;;
    "FAIL "*) ok 1 "${line#FAIL }" ;;
    *) diag "$line" ;;
    esac
done <"$TD/browser.out"
is "$st" "0" "the browser session ran to its end"
is "$(cat "$ROOT/data/dropped.txt") $(stat -c %U "$ROOT/data/dropped.txt")" "dropped by tslfa tslfa" \
    "on disk: the dropped file's bytes, tslfa's file"
is "$(cat "$ROOT/data/picked.txt") $(cat "$ROOT/data/sub/deep.txt")" "picked by tslfa in sub" \
    "... the picked file, and the one dropped in sub/"
[ ! -e "$ROOT/data/nope.txt" ]; ok $? "the reader's drop wrote nothing"
[ -s "$SHOTS/console-folders.png" ] && [ -s "$SHOTS/console-folders-list.png" ]
ok $? "screenshots saved: $SHOTS/console-folders.png, console-folders-list.png"
td_stop; ok $? "tesseld stops cleanly (no sanitizer report)"
done_testing
