#!/bin/sh
# tests/gpu/compute.sh - the compute rows of the real-GPU proof (throughput
# ratios, CUDA graphs); kept for its old command line.  tests/gpu/run.sh
# runs every row.
#   tests/gpu/compute.sh [--seconds 6] [--build DIR] [run.sh options]
exec "$(dirname "$0")/run.sh" --rows compute,graphs "$@"
