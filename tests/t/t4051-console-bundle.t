#!/bin/sh
# t4051-console-bundle.t - the console's first page as make serves it: a bundle of the same
# modules (scripts/console-bundle.sh, esbuild at build time; docs/console.md, "Load order").
# The bundle holds every module of web/app, is what the script builds from the committed sources
# now (the same bytes), and the served index.html loads it; the script refuses bad usage and,
# without esbuild, leaves the page on the modules.  In Chromium (web/test/bundle.mjs): a fresh
# load of the built console reads two module files (the bundle and its chunk) and a page shown
# later reads its own bundle; the sources (--web-root web) still load and run as modules.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
CHROMIUM=${TESSEL_CHROMIUM:-/usr/bin/chromium}
WEB=$TESSEL_BUILD/share/tessel/web
WEBSRC=$TESSEL_SRCDIR/web
BUNDLE=$TESSEL_SRCDIR/scripts/console-bundle.sh
command -v esbuild >/dev/null || missing "no esbuild (scripts/install-deps.sh)"
[ -x "$CHROMIUM" ] || missing "no Chromium at $CHROMIUM (scripts/install-deps.sh --browser)"
command -v node >/dev/null || missing "no node (scripts/install-deps.sh --browser)"
[ -f "$WEBSRC/node_modules/playwright-core/package.json" ] ||
    missing "web/node_modules is missing: (cd web && npm ci) (make does it when npm is present)"
[ -f "$WEB/app/b-main.js" ] || missing "no bundle in $WEB/app (make, with esbuild installed)"

td_setup
# Every module of web/app is in the bundle, each part headed by its source's name.
n=0 all=0
for f in "$WEBSRC"/app/*.js; do
    all=$((all + 1))
    if grep -q "^// app/${f##*/}$" "$WEB"/app/b-*.js; then n=$((n + 1)); else diag "not bundled: ${f##*/}"; fi
done
[ "$all" -ge 10 ] && [ "$n" -eq "$all" ]; ok $? "every module of web/app ($n of $all) is in the bundle"
# Built again now from the committed sources: the same files, byte for byte (make's bundle is
# current and comes from these sources, not from anything else).
"$BUNDLE" "$WEBSRC" "$TD/again" 2>"$TD/err"; ok $? "scripts/console-bundle.sh web DIR builds"
same=0
for f in "$TD"/again/app/b-*.js "$TD/again/index.html"; do
    cmp -s "$f" "$WEB/${f#"$TD"/again/}" || { same=1; diag "differs: ${f#"$TD"/again/}"; }
done
[ "$(ls "$TD"/again/app/b-*.js | wc -l)" -eq "$(ls "$WEB"/app/b-*.js | wc -l)" ] || same=1
ok $same "the installed bundle and index.html are what the sources build now ($(ls "$WEB"/app/b-*.js | wc -l) files)"
# Each page that main.js imports when first shown has its own entry, imported the same way.
pages=$(sed -n "s/.*[^a-zA-Z_.]import('\.\/\([a-z0-9_-]*\)\.js').*/\1/p" "$WEBSRC/app/main.js" | sort -u)
bad=0
for p in $pages; do
    [ -s "$WEB/app/b-$p.js" ] && grep -q "import(\"./b-$p.js\")" "$WEB/app/b-main.js" || { bad=1; diag "page $p"; }
done
ok $bad "each page imported when shown ($(echo $pages)) is a bundle of its own, imported when shown"
grep -q '<script type="module" src="app/b-main.js"></script>' "$WEB/index.html"
ok $? "the installed index.html loads app/b-main.js"
# A stale bundle (a chunk of an earlier build) is removed by the next build.
: >"$TD/again/app/b-chunk-STALE.js"
"$BUNDLE" "$WEBSRC" "$TD/again" 2>"$TD/err" && [ ! -e "$TD/again/app/b-chunk-STALE.js" ]
ok $? "an earlier build's chunk is removed by the next build"
# Bad usage: refused with the usage line, nothing written.
"$BUNDLE" "$WEBSRC" 2>"$TD/err"; st=$?
[ "$st" -eq 2 ] && grep -q "usage:" "$TD/err"; ok $? "one argument: refused with its usage (exit $st)"
# Without esbuild on the PATH: index.html copied as it is (the page loads the modules), a
# warning, no bundle left behind.
mkdir -p "$TD/bin"
for t in sh sed awk rm cp mkdir grep sort mv cat; do ln -s "$(command -v $t)" "$TD/bin/$t"; done
PATH=$TD/bin "$TD/bin/sh" "$BUNDLE" "$WEBSRC" "$TD/again" 2>"$TD/err"; st=$?
[ "$st" -eq 0 ] && cmp -s "$TD/again/index.html" "$WEBSRC/index.html" && ! ls "$TD"/again/app/b-*.js >/dev/null 2>&1 &&
    grep -q "no esbuild" "$TD/err"
ok $? "without esbuild: index.html as committed (the modules), a warning, no bundle (exit $st)"

# In Chromium: the built console, then the sources.
for what in built sources; do
    if [ $what = built ]; then td_start --fake-gpus 2xRTX4090:24G --no-cgroups
    else td_start --fake-gpus 2xRTX4090:24G --no-cgroups --web-root "$WEBSRC"; fi
    TESSEL_URL=$TD_URL TESSEL_ADMIN=$TD_ADMIN WHAT=$what GPUS=2 CHROMIUM=$CHROMIUM HOME=$TD \
        timeout 300 node "$WEBSRC/test/bundle.mjs" >"$TD/browser.out" 2>&1
    st=$?
    while IFS= read -r line; do
        case $line in
        "PASS "*) ok 0 "${line#PASS }" ;;
        "FAIL "*) ok 1 "${line#FAIL }" ;;
        *) diag "$line" ;;
        esac
    done <"$TD/browser.out"
    is "$st" "0" "$what: the browser session ran to its end"
    td_stop; ok $? "$what: tesseld stops cleanly (no sanitizer report)"
done
done_testing
