#!/bin/sh
# t0012-public-headers.t - the public headers (include/tessel/*.h) stand alone: each compiles
# by itself, twice in a row (include guard), with only include/ on the path (plus the system's
# headers), from a directory outside the tree, with the project's warnings; and each quoted
# #include names a public header.  The check itself is shown to catch a header that includes
# an internal one (libutil/...).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
CC=${CC:-cc}
command -v "$CC" >/dev/null || missing "a C compiler ($CC)"
W=$(mktemp -d /tmp/tessel-t0012-XXXXXX) || missing "mktemp"
trap 'rm -rf "$W"' EXIT
FLAGS="-std=c11 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes"

# check_header INCDIR NAME: 0 when INCDIR/NAME compiles alone and quotes only public headers.
check_header() {
    printf '#include "%s"\n#include "%s"\n' "$2" "$2" >"$W/one.c"
    (cd "$W" && $CC $FLAGS -fsyntax-only -I"$1" one.c) >"$W/cc.err" 2>&1 || return 1
    for q in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' \
        "$1/$2"); do
        case $q in tessel/*) [ -f "$1/$q" ] || return 1 ;; *) return 1 ;; esac
    done
    return 0
}

N=0
for h in "$TESSEL_SRCDIR"/include/tessel/*.h; do
    name=tessel/${h##*/}
    check_header "$TESSEL_SRCDIR/include" "$name"
    ok $? "$name stands alone with only include/ on the path"
    [ -s "$W/cc.err" ] && sed 's/^/#   /' "$W/cc.err"
    N=$((N + 1))
done
ok $([ "$N" -ge 3 ] && echo 0 || echo 1) "the public headers were found ($N)"

# The check catches an internal include, whether or not the compiler finds the file.
mkdir -p "$W/inc/tessel" "$W/inc/libutil"
printf '#ifndef B_H\n#define B_H\n#include "libutil/error.h"\n#endif\n' >"$W/inc/tessel/bad.h"
printf 'typedef int tsl_x;\n' >"$W/inc/libutil/error.h"
check_header "$W/inc" tessel/bad.h
is "$?" 1 "a public header that includes an internal one fails the check"
printf '#include <stdint.h>\nuint32_t f(void)\n' >"$W/inc/tessel/broken.h"
check_header "$W/inc" tessel/broken.h
is "$?" 1 "a public header that does not compile fails the check"
done_testing
