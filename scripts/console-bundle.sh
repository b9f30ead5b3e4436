#!/bin/sh
# console-bundle.sh - the web console's served first page, built by `make` (src/console/module.mk):
# SRC_WEB/app's ES modules bundled by esbuild (Debian's package, a build tool only: nothing is
# added at run time) into OUT_WEB/app/b-*.js, and OUT_WEB/index.html written from
# SRC_WEB/index.html with the bundle in place of the modules.
#
#   scripts/console-bundle.sh SRC_WEB OUT_WEB
#
# What is bundled: main.js and every page it imports when first shown (import('./x.js')), each
# an entry point, code shared by several of them split into chunks (esbuild --splitting); so a
# fresh load of the first page reads b-main.js (the shell, the overview, its charts and the
# history) and the chunk of what other pages share with it: 2 module files instead of 6, each
# compiled once (docs/console.md, "Usage history: figures", the twelfth session).  The sources
# are installed beside it, unchanged (the unit tests and `tesseld --web-root web` load them);
# the bundle is the same code, not minified, each part headed by its source's name
# ("// app/overview.js").
#
# Without esbuild (scripts/install-deps.sh installs it) the page loads the modules as before:
# index.html is copied as it is and a warning says so; t7000 and t4051 fail then.
set -eu
[ $# -eq 2 ] || { echo "usage: $0 SRC_WEB OUT_WEB" >&2; exit 2; }
SRC=$1
OUT=$2
mkdir -p "$OUT/app"
OUTAPP=$(cd "$OUT/app" && pwd)
# The previous build's bundle (its chunks' names change with their content).
rm -f "$OUT"/app/b-*.js "$OUT/index.html.tmp"
if ! command -v esbuild >/dev/null 2>&1; then
    echo "console: no esbuild (scripts/install-deps.sh): index.html loads the unbundled modules" >&2
    cp "$SRC/index.html" "$OUT/index.html"
    exit 0
fi
# The pages main.js imports when first shown: import('./x.js'), each once.
pages=$(sed -n "s/.*[^a-zA-Z_.]import('\.\/\([a-z0-9_-]*\.js\)').*/app\/\1/p" "$SRC/app/main.js" | sort -u)
# Run from SRC so that each part of the bundle is headed by "// app/NAME.js".
# shellcheck disable=SC2086 # the pages are words
(cd "$SRC" && esbuild app/main.js $pages --bundle --format=esm --splitting --charset=utf8 \
    --outdir="$OUTAPP" --outbase=app \
    --entry-names='b-[name]' --chunk-names='b-[name]-[hash]' --log-level=warning)
[ -s "$OUT/app/b-main.js" ] || { echo "$0: esbuild wrote no b-main.js" >&2; exit 1; }
# b-main.js's static imports (esbuild writes each as 'import {...} from "./b-chunk-X.js";' at the
# top): the page preloads them beside b-main.js, one round trip for both.
chunks=$(sed -n 's/^} from "\.\/\(b-[A-Za-z0-9_-]*\.js\)";$/\1/p; s/^import .* from "\.\/\(b-[A-Za-z0-9_-]*\.js\)";$/\1/p' \
    "$OUT/app/b-main.js" | sort -u)
# index.html: the module script points at the bundle; the modulepreload lines (the sources of
# the first page) give way, at the first one's place, to the chunks'.
awk -v chunks="$chunks" '
    /<script type="module" src="app\/main\.js"><\/script>/ {
        sub(/app\/main\.js/, "app/b-main.js"); print; next
    }
    /<link rel="modulepreload" href="app\/[a-z0-9_-]*\.js">/ {
        if (!done) {
            n = split(chunks, c, "\n")
            for (i = 1; i <= n; i++) if (c[i] != "") printf "  <link rel=\"modulepreload\" href=\"app/%s\">\n", c[i]
            done = 1
        }
        next
    }
    { print }' "$SRC/index.html" >"$OUT/index.html.tmp"
grep -q '<script type="module" src="app/b-main.js"></script>' "$OUT/index.html.tmp" ||
    { echo "$0: $SRC/index.html has no module script app/main.js to replace" >&2; exit 1; }
mv "$OUT/index.html.tmp" "$OUT/index.html"
