#!/bin/sh
# t7000-console-static.t - tesseld serves the web console's static files at / (from where `make`
# installs them, or --web-root DIR): index.html at /, the right Content-Type per file, the cache
# policy, the same bytes as web/, and nothing outside the web root (.., hidden files, symbolic
# links, unknown types: all 404 with the API's JSON error).  The API beside it is unchanged.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
WEB=$TESSEL_BUILD/share/tessel/web
[ -f "$WEB/index.html" ] || missing "console not installed in $WEB (run make)"
[ -f "$WEB/vendor/xterm-6.0.0/xterm.mjs" ] || missing "xterm.js not staged in $WEB/vendor (npm ci in web/, then make)"

td_setup
td_start --fake-gpus 1xRTX4090:24G --no-cgroups || { ok 1 "tesseld starts"; done_testing; exit 1; }

# get PATH -> $CODE, $TYPE, $CACHE; body in $TD/out (no path normalisation by curl)
get() {
    curl -s --path-as-is -D "$TD/hdr" -o "$TD/out" "$TD_URL$1" >/dev/null
    CODE=$(sed -n '1s/^HTTP[^ ]* \([0-9]*\).*/\1/p' "$TD/hdr")
    TYPE=$(sed -n 's/^[Cc]ontent-[Tt]ype: *//p' "$TD/hdr" | tr -d '\r')
    CACHE=$(sed -n 's/^[Cc]ache-[Cc]ontrol: *//p' "$TD/hdr" | tr -d '\r')
}

get /
is "$CODE $TYPE" "200 text/html; charset=utf-8" "GET / answers index.html as HTML (no token needed)"
# The served index.html is make's (scripts/console-bundle.sh): web/index.html with the first
# page's bundle (app/b-main.js, its chunks preloaded) in place of its modules (t4051 checks the
# bundle itself); every other line as committed.
cmp -s "$TD/out" "$WEB/index.html"; ok $? "GET / is the installed index.html byte for byte"
unbundled() { grep -v '<link rel="modulepreload"\|<script type="module"' "$1"; }
unbundled "$TD/out" >"$TD/served.rest"
unbundled "$TESSEL_SRCDIR/web/index.html" >"$TD/src.rest"
cmp -s "$TD/served.rest" "$TD/src.rest"; ok $? "... web/index.html but for its module script and preloads"
is "$CACHE" "no-cache" "index.html is revalidated (a new tesseld's console is picked up at once)"
grep -q '<script type="module" src="app/b-main.js">' "$TD/out"; ok $? "the page loads app/b-main.js (the bundle) as a module"
grep -q '<script type="module" src="app/main.js">' "$TESSEL_SRCDIR/web/index.html"
ok $? "web/index.html loads app/main.js (the sources, as tesseld --web-root web serves them)"
# Every module of the first page (main.js and what it imports, statically, level by level) is
# preloaded by web/index.html (one round trip for all of them, not one per level of imports:
# docs/console.md, "Load order"), and the bundle's chunks by the served one; the other pages'
# modules, imported when first shown (import('./x.js')), are not, and every module is served.
static_deps() { sed -n "s/^import .* from '\.\/\([^']*\)';.*/\1/p" "$TESSEL_SRCDIR/web/app/$1"; }
seen=" main.js "; todo=$(static_deps main.js)
while set -- $todo && [ $# -gt 0 ]; do
    f=$1; shift; todo=$*
    case $seen in *" $f "*) continue ;; esac
    seen="$seen$f "; todo="$todo $(static_deps "$f")"
done
first=$(for f in $seen; do [ "$f" = main.js ] || echo "app/$f"; done | sort -u)
lazy=$(cd "$TESSEL_SRCDIR/web/app" && sed -n "s/.*[^a-zA-Z_.]import('\.\/\([^']*\)').*/app\/\1/p" ./*.js | sort -u)
preloads=$(sed -n 's/.*<link rel="modulepreload" href="\([^"]*\)">.*/\1/p' "$TESSEL_SRCDIR/web/index.html" | sort -u)
[ -n "$first" ] && [ "$first" = "$preloads" ]
ok $? "web/index.html preloads exactly the first page's modules ($(echo $first | wc -w) of them: $(echo $first))"
chunks=$(sed -n 's/^} from "\.\/\(b-[A-Za-z0-9_-]*\.js\)";$/app\/\1/p; s/^import .* from "\.\/\(b-[A-Za-z0-9_-]*\.js\)";$/app\/\1/p' \
    "$WEB/app/b-main.js" | sort -u)
bpreloads=$(sed -n 's/.*<link rel="modulepreload" href="\([^"]*\)">.*/\1/p' "$TD/out" | sort -u)
[ -n "$chunks" ] && [ "$chunks" = "$bpreloads" ]
ok $? "the served index.html preloads exactly app/b-main.js's static imports ($(echo $chunks))"
preloads="$preloads $bpreloads app/b-main.js"
n=0
for m in $lazy; do
    case " $(echo $first) " in *" $m "*) continue ;; esac
    get "/$m"
    [ "$CODE" = 200 ] && n=$((n + 1))
done
[ "$n" -ge 5 ] && [ "$n" -eq "$(echo $lazy | wc -w)" ]
ok $? "the other pages' modules ($n: $(echo $lazy)) are imported when shown, not preloaded, and served"
bad=0
for m in $preloads; do
    get "/$m"
    [ "$CODE" = 200 ] || bad=1
done
ok $bad "every preloaded module is served"

get /app/main.js
is "$CODE $TYPE" "200 text/javascript; charset=utf-8" "app/main.js is JavaScript"
# Revalidation: a validator, and 304 with no body when the browser's copy is current (its
# compiled code stays cached too); another validator gets the file.
ETAG=$(sed -n 's/^[Ee][Tt]ag: *//p' "$TD/hdr" | tr -d '\r')
case $ETAG in W/\"*\") ok 0 "app/main.js has a weak ETag ($ETAG)" ;; *) ok 1 "app/main.js has a weak ETag ('$ETAG')" ;; esac
curl -s -D "$TD/hdr" -o "$TD/out304" -H "If-None-Match: $ETAG" "$TD_URL/app/main.js" >/dev/null
code=$(sed -n '1s/^HTTP[^ ]* \([0-9]*\).*/\1/p' "$TD/hdr")
[ "$code" = 304 ] && [ ! -s "$TD/out304" ]; ok $? "If-None-Match with it: 304, no body ($code)"
curl -s -D "$TD/hdr" -o "$TD/out" -H 'If-None-Match: W/"0-0.0-0"' "$TD_URL/app/main.js" >/dev/null
code=$(sed -n '1s/^HTTP[^ ]* \([0-9]*\).*/\1/p' "$TD/hdr")
[ "$code" = 200 ] && cmp -s "$TD/out" "$TESSEL_SRCDIR/web/app/main.js"; ok $? "another validator: 200 and the file ($code)"
cmp -s "$TD/out" "$TESSEL_SRCDIR/web/app/main.js"; ok $? "app/main.js is web/app/main.js byte for byte"
get /app/console.css
is "$CODE $TYPE" "200 text/css; charset=utf-8" "app/console.css is CSS"
get /app/icon.svg
is "$CODE $TYPE" "200 image/svg+xml" "app/icon.svg is SVG"
get /app/chart.js
is "$CODE $TYPE" "200 text/javascript; charset=utf-8" "app/chart.js (the charts, no third-party library) is JavaScript"
cmp -s "$TD/out" "$TESSEL_SRCDIR/web/app/chart.js"; ok $? "app/chart.js is served as committed"
# The console's one vendored library is xterm.js, for the terminal page only (docs/terminal.md):
# nothing else names vendor/, the shell's first page does not, and what the page imports is
# served, as JavaScript and CSS, cached for good (npm's files, staged by make).
is "$(grep -ohi 'vendor/[A-Za-z0-9._-]*' "$WEB/index.html" "$WEB"/app/*.js | sort -u | tr '\n' ' ')" \
    "vendor/xterm-6.0.0 " "the only vendored library the console names is xterm.js 6.0.0"
! grep -qi 'vendor/' "$WEB/index.html" "$WEB/app/main.js" "$WEB/app/b-main.js"
ok $? "... not on the first page's path (index.html, main.js, b-main.js)"
get /vendor/xterm-6.0.0/xterm.mjs
is "$CODE $TYPE $CACHE" "200 text/javascript; charset=utf-8 public, max-age=31536000, immutable" \
    "/vendor/xterm-6.0.0/xterm.mjs: JavaScript, cached for good"
cmp -s "$TD/out" "$TESSEL_SRCDIR/web/node_modules/@xterm/xterm/lib/xterm.mjs"
ok $? "... npm's file (web/node_modules/@xterm/xterm) byte for byte"
get /vendor/xterm-6.0.0/xterm.css
is "$CODE $TYPE" "200 text/css; charset=utf-8" "/vendor/xterm-6.0.0/xterm.css: CSS"
get /vendor/xterm-6.0.0/addon-fit.mjs
is "$CODE" 200 "/vendor/xterm-6.0.0/addon-fit.mjs served"
get /vendor/xterm-6.0.0/.staged
is "$CODE" 404 "make's stamp (.staged) is not served"

n=0
for p in /app/.. /app/. /app/.hidden.js "/app/..%2f..%2fMakefile" "/app/%2e%2e" \
         "/vendor/lib-1/..%2F..%2Findex.html" "/vendor/../app/main.js" "/vendor/..%2f..%2f..%2fetc/passwd" \
         /app/nope.js "/vendor/lib-1/LICENSE" /index.html/x /app/main.js/ /app /vendor/x; do
    get "$p"
    if [ "$CODE" = 404 ] && [ "$(jget .error.code)" = not_found ]; then n=$((n + 1)); else
        diag "$p -> $CODE"; fi
done
is "$n" "14" "14 paths outside the web root, hidden, unknown or of unknown type: 404 not_found (JSON)"

api GET /v1/whoami "" ""
is "$CODE $(jget .error.code)" "401 unauthorized" "the API beside the console still wants a token"
api GET /v1/nope
is "$CODE $(jget .error.code)" "404 not_found" "an unknown API route is still 404"
td_stop; ok $? "tesseld stops cleanly (no sanitizer report)"

# --web-root: another directory; symbolic links inside it are not followed.
mkdir -p "$TD/web/app" "$TD/web/vendor/lib-1"
printf '<!doctype html><title>mine</title>\n' >"$TD/web/index.html"
printf 'export const x = 1;\n' >"$TD/web/app/ok.js"
printf 'secret\n' >"$TD/secret.txt"
ln -s "$TD/secret.txt" "$TD/web/app/link.txt"
ln -s "$TD" "$TD/web/vendor/up"
printf 'x' >"$TD/web/app/data.bin"
printf 'export default 1;\n' >"$TD/web/vendor/lib-1/lib.js"
rm -rf "$TD/data"
td_start --fake-gpus 1xRTX4090:24G --no-cgroups --web-root "$TD/web" || { ok 1 "tesseld --web-root starts"; done_testing; exit 1; }
get /
grep -q mine "$TD/out"; ok $? "--web-root DIR: / is DIR/index.html"
get /app/ok.js
is "$CODE $TYPE" "200 text/javascript; charset=utf-8" "--web-root DIR: DIR/app/ok.js is served"
get /vendor/lib-1/lib.js
is "$CODE $TYPE" "200 text/javascript; charset=utf-8" "--web-root DIR: DIR/vendor/lib-1/lib.js is served"
is "$CACHE" "public, max-age=31536000, immutable" "vendored files (versioned paths) are cached for good"
get /app/link.txt
is "$CODE" "404" "a symbolic link to a file outside the web root is not followed"
get /vendor/up/secret.txt
is "$CODE" "404" "a symbolic link to a directory outside the web root is not followed"
get /app/data.bin
is "$CODE" "404" "a file of unknown type is not served"
td_stop; ok $? "tesseld --web-root stops cleanly"

"$TESSEL_BUILD/bin/tesseld" --data-dir "$TD/data2" --listen 127.0.0.1:0 --fake-gpus 1xT4:8G \
    --no-cgroups --web-root "$TD/nowhere" >"$TD/bad.log" 2>&1
st=$?
[ "$st" -ne 0 ] && grep -q "web-root.*nowhere" "$TD/bad.log"
ok $? "--web-root of a missing directory: tesseld refuses to start and says why (exit $st)"
done_testing
