#!/bin/sh
# tests/gpu/conformance.sh - the memory and behaviour rows of the real-GPU
# proof; kept for its old command line.  tests/gpu/run.sh runs every row.
#   tests/gpu/conformance.sh [--limit 4G] [--build DIR] [run.sh options]
exec "$(dirname "$0")/run.sh" --rows memory,train,fork,exec,kill,view,multigpu "$@"
