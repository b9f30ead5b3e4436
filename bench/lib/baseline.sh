#!/bin/sh
# bench/lib/baseline.sh - build an earlier version of Tessel, to run a benchmark against it side
# by side with the current build in one run.  Prints the baseline's build directory (it has
# bin/, lib/ and bench/ as build/ does) on stdout; progress goes to stderr.
#
#   bench/lib/baseline.sh [REF]          REF: a commit, tag or branch (default: $BENCH_BASE,
#                                        else 8167993, main before issue 15)
#   base=$(bench/lib/baseline.sh) && "$base/bin/tesseld" ...
#
# The tree of REF is exported with `git archive` into ${TMPDIR:-/tmp}/tessel-baseline-<commit>
# and built there once (`make all bench`); later calls reuse it.  BENCH_BASE_DIR=DIR skips all
# this and uses DIR as the baseline's build directory.
set -eu
if [ -n "${BENCH_BASE_DIR:-}" ]; then
    [ -x "$BENCH_BASE_DIR/bin/tesseld" ] || {
        echo "baseline.sh: $BENCH_BASE_DIR/bin/tesseld is missing" >&2
        exit 1
    }
    echo "$BENCH_BASE_DIR"
    exit 0
fi
REF=${1:-${BENCH_BASE:-8167993}}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
SHA=$(git -C "$SRC" rev-parse --verify --quiet "$REF^{commit}") || {
    echo "baseline.sh: $REF is not a commit of $SRC" >&2
    exit 1
}
DIR=${TMPDIR:-/tmp}/tessel-baseline-$(echo "$SHA" | cut -c1-12)
if [ ! -f "$DIR/.built" ]; then
    echo "baseline.sh: building $REF ($SHA) in $DIR" >&2
    rm -rf "$DIR"
    mkdir -p "$DIR"
    git -C "$SRC" archive "$SHA" | tar -x -C "$DIR"
    if ! nice make -C "$DIR" -j"$(nproc)" all bench >"$DIR/build.log" 2>&1; then
        echo "baseline.sh: the build of $REF failed; see $DIR/build.log" >&2
        exit 1
    fi
    touch "$DIR/.built"
fi
echo "$DIR/build"
