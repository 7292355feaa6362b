#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job: the perplexity-vs-length table
# of every position scheme, trained at length 64 and evaluated up to 16x (a few minutes).
# Finished runs under checkpoints/extrapolation_quick are reused; extra arguments go to rpb
# (e.g. --set sweep.seeds=[0,1,2]).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh
exec "${RPB_BUILD_DIR:-build}"/rpb extrapolate configs/extrapolation_quick.toml "$@"
